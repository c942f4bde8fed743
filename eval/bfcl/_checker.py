"""BFCL's AST check of decoded calls against a possible answer: pure functions, two modes.

A possible answer (BFCL's ``ground_truth``) is ``[{func: {param: [allowed values...]}}]``;
``""`` among a parameter's allowed values means it may be omitted. Calls are the decoder's
``[{name: {param: value}}]``.

- :func:`official_check` re-implements the official checker's rules, quirks included, so that
  its verdict (and error type) is the official one record by record. Where the official
  checker would raise (and stop its whole run), this raises too; the caller reports it.
- :func:`strict_check` is the same metric with the documented bugs fixed
  (``docs/eval/bfcl.md`` lists every difference). It never raises on any calls.

>>> fns = [{"name": "area", "parameters": {"type": "dict", "required": ["base"],
...         "properties": {"base": {"type": "float"}, "unit": {"type": "string"}}}}]
>>> gold = [{"area": {"base": [10.0], "unit": ["cm", ""]}}]
>>> official_check("simple_python", fns, gold, [{"area": {"base": 10, "unit": "CM"}}])
Verdict(ok=True, error_type=None, message='')
>>> strict_check("simple_python", fns, gold, [{"area": {"base": True}}]).error_type
'type_error:simple'
>>> standardize("April 1, 2024")
'april12024'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

_STD = re.compile(r"[ ,./\-_*^]")


def standardize(text: str) -> str:
    """BFCL's string normalisation: drop spaces and ``,./-_*^``, lowercase, ``'`` -> ``"``."""
    return _STD.sub("", text).lower().replace("'", '"')


class Verdict(NamedTuple):
    ok: bool
    error_type: str | None = None
    message: str = ""


OK = Verdict(True)


def _fail(error_type: str, message: str) -> Verdict:
    return Verdict(False, error_type, message)


def _is_parallel(category: str) -> bool:
    return "parallel" in category


def _is_multiple(category: str) -> bool:
    return "multiple" in category and "parallel" not in category


def language_of(category: str) -> str:
    if "javascript" in category:
        return "javascript"
    if "java" in category:
        return "java"
    return "python"


# =============================================================================================
# official rules
# =============================================================================================
_PY_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}


@dataclass
class _TypeResult:
    valid: bool
    is_variable: bool = False
    error_type: str = "type_error:simple"
    message: str = ""


def _answer_type(allowed: list) -> type | None:
    """The Python type of the first allowed value that is not the omission marker ``""``."""
    for a in allowed:
        if a != "":
            return type(a)
    return None


def _off_type(
    param: str, value: Any, allowed: list, type_name: str, expected: type[Any], nested: type[Any] | None
) -> _TypeResult:
    answer_type = _answer_type(allowed)
    # a gold value whose type differs from the schema's marks a "variable" (e.g. "$x")
    is_variable = answer_type is not None and answer_type is not expected
    nested_failed = False
    if type(value) is expected:
        if nested is None:
            return _TypeResult(True, is_variable)
        for candidate in allowed:
            good = True
            if type(candidate) is list:
                for item in value:
                    if not _off_type(param, item, candidate, str(nested), nested, None).valid:
                        good = False
                        break
            if good:
                return _TypeResult(True, is_variable)
        nested_failed = True
    if answer_type is not None and type(value) is answer_type:
        if nested_failed:
            return _TypeResult(
                False, True, "type_error:nested", f"nested type check failed for {param!r}: inner type {nested}"
            )
        return _TypeResult(True, True)
    return _TypeResult(
        False,
        False,
        "type_error:simple",
        f"wrong type for {param!r}: expected {type_name}, got {type(value).__name__} ({value!r})",
    )


def _off_string(param: str, value: str, allowed: list) -> Verdict:
    targets = [standardize(a) for a in allowed if type(a) is str]
    if standardize(value) not in targets:
        return _fail("value_error:string", f"{param!r}={value!r} is none of {allowed!r} (normalised)")
    return OK


def _off_list(param: str, value: list, allowed: list) -> Verdict:
    mine = [standardize(v) if type(v) is str else v for v in value]
    targets = []
    for cand in allowed:
        # indexing, not iteration: "" becomes [] (so [] matches an omissible list)
        targets.append([standardize(cand[j]) if type(cand[j]) is str else cand[j] for j in range(len(cand))])
    if mine not in targets:
        return _fail("value_error:list/tuple", f"{param!r}={value!r} is none of {allowed!r}")
    return OK


def _off_dict(param: str, value: dict, allowed: list) -> Verdict:
    result = _fail("dict_checker:unclear", f"no allowed dict for {param!r}")
    for cand in allowed:
        if cand == "":
            continue
        result = _fail("dict_checker:unclear", f"no allowed dict for {param!r}")
        good = True
        for key, v in value.items():
            if key not in cand:
                result = _fail("value_error:dict_key", f"unexpected key {key!r} in {param!r}")
                good = False
                break
            mine = standardize(v) if type(v) is str else v
            targets = [standardize(a) if type(a) is str else a for a in cand[key]]
            if mine not in targets:
                result = _fail("value_error:dict_value", f"{param!r}[{key!r}]={v!r} is none of {cand[key]!r}")
                good = False
                break
        for key, vals in cand.items():
            if key not in value and "" not in vals:
                result = _fail("value_error:dict_key", f"missing key {key!r} in {param!r}")
                good = False
                break
        if good:
            return OK
    return result


def _off_list_dict(param: str, value: list, allowed: list) -> Verdict:
    result = _fail("list_dict_checker:unclear", f"no allowed list of dicts for {param!r}")
    for cand in allowed:
        if len(value) != len(cand):
            result = _fail("value_error:list_dict_count", f"wrong number of dicts in {param!r}")
            continue
        good = True
        for j in range(len(value)):
            result = _off_dict(param, value[j], [cand[j]])
            if not result.ok:
                good = False
                break
        if good:
            return OK
    return result


def _off_lang_value(param: str, value: Any, allowed: list, language: str) -> Verdict:
    """Java/JavaScript (approximation, see the docs): values are strings in the language's syntax."""
    if type(value) is not str:
        return _fail(
            f"type_error:{'js' if language == 'javascript' else language}",
            f"{param!r} must be a string in {language} syntax, got {type(value).__name__}",
        )
    if standardize(value) not in [standardize(_as_text(a)) for a in allowed if a != ""]:
        return _fail("value_error:others", f"{param!r}={value!r} is none of {allowed!r}")
    return OK


def _as_text(v: Any) -> str:
    import json

    return v if isinstance(v, str) else json.dumps(v)


def _off_simple(fdesc: dict, call: dict, answer: dict, language: str, underscore: bool) -> Verdict:
    allowed_by_param: dict = next(iter(answer.values()))
    fname: str = fdesc["name"]
    props: dict = fdesc["parameters"]["properties"]
    required: list = fdesc["parameters"]["required"]
    if underscore and "." in fname:
        fname = fname.replace(".", "_")
    if fname not in call:
        return _fail("simple_function_checker:wrong_func_name", f"function {fname!r} not found in the output")
    params: dict = call[fname]
    for p in required:
        if p not in params:
            return _fail("simple_function_checker:missing_required", f"missing required parameter {p!r}")
    for p, value in params.items():
        if p not in props or p not in allowed_by_param:
            return _fail("simple_function_checker:unexpected_param", f"unexpected parameter {p!r}")
        allowed = allowed_by_param[p]
        if language != "python":
            verdict = _off_lang_value(p, value, allowed, language)
            if not verdict.ok:
                return verdict
            continue
        type_name = props[p]["type"]
        expected = _PY_TYPES[type_name]
        nested = _PY_TYPES[props[p]["items"]["type"]] if type_name in ("array", "tuple") else None
        if type_name == "tuple" and type(value) is tuple:
            value = list(value)
        if type_name == "float" and type(value) is int:
            value = float(value)
        tr = _off_type(p, value, allowed, type_name, expected, nested)
        if not tr.valid:
            return _fail(tr.error_type, tr.message)
        if not tr.is_variable:
            check: Callable[[str, Any, list], Verdict] | None = None
            if expected is dict:
                check = _off_dict
            elif expected is list and nested is dict:
                check = _off_list_dict
            elif expected is str:
                check = _off_string
            elif expected is list:
                check = _off_list
            if check is not None:
                verdict = check(p, value, allowed)
                if not verdict.ok:
                    return verdict
                continue
        if value not in allowed:
            return _fail("value_error:others", f"{p!r}={value!r} is none of {allowed!r}")
    for p, allowed in allowed_by_param.items():
        if p not in params and "" not in allowed:
            return _fail(
                "simple_function_checker:missing_optional", f"parameter {p!r} omitted but not marked as optional"
            )
    return OK


def _find(functions: list, name: str) -> dict | None:
    for f in functions:
        if f["name"] == name:
            return f
    return None


def official_check(category: str, functions: list, gold: list, calls: list, fmt: str = "prompt") -> Verdict:
    """The official AST verdict; raises where the official checker raises.

    ``fmt="fc"``: the checker of an FC model whose API forbids "." in names (OpenAI, Mistral,
    Google): a gold name's "." becomes "_" before it is looked for in the output.
    """
    language = language_of(category)
    underscore = fmt == "fc"
    if _is_parallel(category):
        if len(calls) != len(gold):
            return _fail(
                "parallel_function_checker_no_order:wrong_count", f"{len(calls)} call(s) for {len(gold)} expected"
            )
        matched: list[int] = []
        for i, answer in enumerate(gold):
            fdesc = _find(functions, next(iter(answer)))
            result = OK
            for idx in range(len(calls)):
                if idx in matched:
                    continue
                result = _off_simple(fdesc, calls[idx], answer, language, underscore)  # type: ignore[arg-type]
                if result.ok:
                    matched.append(idx)
                    break
            if not result.ok:
                return _fail(
                    "parallel_function_checker_no_order:cannot_find_match",
                    f"no unmatched call fits expected call #{i} ({next(iter(answer))}); "
                    f"last mismatch: {result.error_type}: {result.message}",
                )
        return OK
    if _is_multiple(category):
        if len(calls) != len(gold):
            return _fail("multiple_function_checker:wrong_count", f"{len(calls)} call(s) for {len(gold)} expected")
        fdesc = _find(functions, next(iter(gold[0])))
        return _off_simple(fdesc, calls[0], gold[0], language, underscore)  # type: ignore[arg-type]
    if len(calls) != 1:
        return _fail("simple_function_checker:wrong_count", f"{len(calls)} call(s) for 1 expected")
    return _off_simple(functions[0], calls[0], gold[0], language, underscore)


# =============================================================================================
# strict rules
# =============================================================================================
def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def strict_equal(a: Any, b: Any) -> bool:
    """Typed, recursive equality: strings normalised at every depth, ``True != 1``, ``1 == 1.0``.

    >>> strict_equal(["New York", 1], ["new-york", 1.0]), strict_equal(True, 1)
    (True, False)
    """
    if type(a) is str and type(b) is str:
        return a == b or standardize(a) == standardize(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is bool and type(b) is bool and a == b
    if _num(a) and _num(b):
        return a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False


_TYPE_OK: dict[str, Callable[[Any], bool]] = {
    "integer": lambda v: type(v) is int,
    "float": _num,
    "boolean": lambda v: type(v) is bool,
    "string": lambda v: type(v) is str,
    "dict": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "tuple": lambda v: type(v) in (list, tuple),
}


def _schema_type(schema: Any) -> str | None:
    return schema.get("type") if isinstance(schema, dict) and isinstance(schema.get("type"), str) else None


def _type_error(value: Any, schema: Any, depth: int = 0) -> str | None:
    """``None`` if ``value`` fits ``schema`` at every depth, else a description of the mismatch."""
    t = _schema_type(schema)
    ok = _TYPE_OK.get(t or "")
    if ok is None:  # "any", a missing or an unknown type: anything goes
        return None
    if not ok(value):
        return f"expected {t}, got {type(value).__name__}" + (f" (at depth {depth})" if depth else "")
    if t in ("array", "tuple") and isinstance(schema.get("items"), dict):
        for item in value:
            why = _type_error(item, schema["items"], depth + 1)
            if why:
                return why
    return None


def _variable_items(value: Any, schema: Any, allowed: list) -> bool:
    """The "variable" rule one level down (kept from the official checker): a list whose items
    have the schema's item type or the type of an allowed list's items (e.g. words where the
    schema says integers but the gold lists words)."""
    if _schema_type(schema) not in ("array", "tuple") or not isinstance(value, (list, tuple)):
        return False
    if type(value) is tuple and _schema_type(schema) == "array":
        return False
    items = schema.get("items")
    for cand in allowed:
        if type(cand) is not list:
            continue
        answer_type = _answer_type(cand)
        variable = answer_type is not None and not _gold_fits_schema(answer_type, _schema_type(items))
        if all(_type_error(v, items) is None or (variable and type(v) is answer_type) for v in value):
            return True
    return False


def _coerce(value: Any, schema: Any) -> Any:
    """Tuples become lists, ints become floats where the schema says float (any depth)."""
    t = _schema_type(schema)
    if t == "float" and _num(value):
        try:
            return float(value)
        except OverflowError:
            return value
    if t in ("array", "tuple") and isinstance(value, (list, tuple)):
        items = schema.get("items")
        return [_coerce(v, items) for v in value]
    return value


def _gold_fits_schema(answer_type: type, t: str | None) -> bool:
    if t in (None, "any") or t not in _PY_TYPES:
        return True
    if t == "float":
        return answer_type in (int, float)
    return answer_type is _PY_TYPES[t]


def _st_dict(param: str, value: Any, allowed: list) -> Verdict:
    result = _fail("dict_checker:unclear", f"no allowed dict for {param!r}")
    if type(value) is not dict:
        return _fail("type_error:nested", f"{param!r}: expected a dict, got {type(value).__name__}")
    for cand in allowed:
        if not isinstance(cand, dict):
            continue
        bad: Verdict | None = None
        for key, v in value.items():
            if key not in cand:
                bad = _fail("value_error:dict_key", f"unexpected key {key!r} in {param!r}")
                break
            vals = cand[key] if isinstance(cand[key], list) else [cand[key]]
            if not any(strict_equal(v, a) for a in vals):
                bad = _fail("value_error:dict_value", f"{param!r}[{key!r}]={v!r} is none of {vals!r}")
                break
        if bad is None:
            for key, vals in cand.items():
                if key not in value and not (isinstance(vals, list) and "" in vals):
                    bad = _fail("value_error:dict_key", f"missing key {key!r} in {param!r}")
                    break
        if bad is None:
            return OK
        result = bad
    return result


def _as_list(cand: Any) -> Any:
    return [] if cand == "" else cand


def _st_list_dict(param: str, value: list, allowed: list) -> Verdict:
    result = _fail("list_dict_checker:unclear", f"no allowed list of dicts for {param!r}")
    for cand in map(_as_list, allowed):
        if not isinstance(cand, list):
            continue
        if len(value) != len(cand):
            result = _fail("value_error:list_dict_count", f"wrong number of dicts in {param!r}")
            continue
        bad = None
        for j in range(len(value)):
            verdict = _st_dict(param, value[j], [cand[j]])
            if not verdict.ok:
                bad = verdict
                break
        if bad is None:
            return OK
        result = bad
    return result


def _st_value(p: str, value: Any, schema: dict, allowed: list, language: str) -> Verdict:
    if language != "python":
        return _off_lang_value(p, value, allowed, language)
    t = _schema_type(schema)
    answer_type = _answer_type(allowed)
    if answer_type is not None and not _gold_fits_schema(answer_type, t) and type(value) is answer_type:
        # the gold is a "variable" of another type than the schema's: compare as is
        if any(strict_equal(value, a) for a in allowed):
            return OK
        return _fail("value_error:others", f"{p!r}={value!r} is none of {allowed!r}")
    why = _type_error(value, schema)
    if why and not _variable_items(value, schema, allowed):
        return _fail("type_error:nested" if "depth" in why else "type_error:simple", f"{p!r}: {why} ({value!r})")
    value = _coerce(value, schema)
    items = _schema_type(schema.get("items")) if isinstance(schema, dict) else None
    if t == "dict":
        return _st_dict(p, value, allowed)
    if t in ("array", "tuple") and items == "dict":
        return _st_list_dict(p, value, allowed)
    if type(value) is str:
        if standardize(value) in [standardize(a) for a in allowed if type(a) is str]:
            return OK
        return _fail("value_error:string", f"{p!r}={value!r} is none of {allowed!r} (normalised)")
    if t in ("array", "tuple"):
        if any(strict_equal(value, _as_list(c)) for c in allowed):
            return OK
        return _fail("value_error:list/tuple", f"{p!r}={value!r} is none of {allowed!r}")
    if any(strict_equal(value, a) for a in allowed if not (a == "" and type(a) is str)):
        return OK
    return _fail("value_error:others", f"{p!r}={value!r} is none of {allowed!r}")


def _accepted_names(fdesc: dict, functions: list, fmt: str) -> set[str]:
    name = fdesc.get("name")
    names = {name} if isinstance(name, str) else set()
    if fmt == "fc" and isinstance(name, str) and "." in name:
        alias = name.replace(".", "_")
        if not any(isinstance(f, dict) and f.get("name") == alias for f in functions):
            names.add(alias)
    return names


def _st_simple(fdesc: dict | None, functions: list, call: Any, answer: dict, fmt: str, language: str) -> Verdict:
    gold_name, allowed_by_param = next(iter(answer.items()))
    if fdesc is None:
        return _fail(
            "simple_function_checker:gold_function_missing",
            f"the expected function {gold_name!r} is not among the provided functions",
        )
    if not isinstance(call, dict) or len(call) != 1:
        return _fail("ast_decoder:decoder_wrong_output_format", "a call is not {name: {arguments}}")
    name, params = next(iter(call.items()))
    if name not in _accepted_names(fdesc, functions, fmt):
        return _fail(
            "simple_function_checker:wrong_func_name", f"function {fdesc.get('name')!r} not found in the output"
        )
    if not isinstance(params, dict):
        return _fail("ast_decoder:decoder_wrong_output_format", "arguments are not a dict")
    raw_parameters = fdesc.get("parameters")
    parameters = raw_parameters if isinstance(raw_parameters, dict) else {}
    raw_props = parameters.get("properties")
    props = raw_props if isinstance(raw_props, dict) else {}
    raw_required = parameters.get("required")
    required = raw_required if isinstance(raw_required, list) else []
    for p in required:
        if p not in params:
            return _fail("simple_function_checker:missing_required", f"missing required parameter {p!r}")
    for p, value in params.items():
        if p not in props or p not in allowed_by_param:
            return _fail("simple_function_checker:unexpected_param", f"unexpected parameter {p!r}")
        allowed = allowed_by_param[p] if isinstance(allowed_by_param[p], list) else [allowed_by_param[p]]
        verdict = _st_value(p, value, props[p], allowed, language)
        if not verdict.ok:
            return verdict
    for p, allowed in allowed_by_param.items():
        if p not in params and not (isinstance(allowed, list) and "" in allowed):
            return _fail(
                "simple_function_checker:missing_optional", f"parameter {p!r} omitted but not marked as optional"
            )
    return OK


def _find_strict(functions: list, name: Any) -> dict | None:
    for f in functions:
        if isinstance(f, dict) and f.get("name") == name:
            return f
    return None


def _perfect_matching(ok: list[list[bool]]) -> bool:
    """Whether every row (expected call) gets its own column (model call): Kuhn's algorithm."""
    n_cols = len(ok[0]) if ok else 0
    owner = [-1] * n_cols

    def augment(row: int, seen: list[bool]) -> bool:
        for col in range(n_cols):
            if ok[row][col] and not seen[col]:
                seen[col] = True
                if owner[col] < 0 or augment(owner[col], seen):
                    owner[col] = row
                    return True
        return False

    return all(augment(r, [False] * n_cols) for r in range(len(ok)))


def strict_check(category: str, functions: list, gold: list, calls: list, fmt: str = "prompt") -> Verdict:
    """The strict AST verdict (documented bugs fixed); never raises."""
    try:
        return _strict_check(category, functions, gold, calls, fmt)
    except RecursionError:
        return _fail("ast_decoder:decoder_failed", "the output is nested too deeply")


def _strict_check(category: str, functions: list, gold: list, calls: list, fmt: str) -> Verdict:
    language = language_of(category)
    if _is_parallel(category) or (_is_multiple(category) and len(gold) != 1):
        kind = "parallel_function_checker_no_order" if _is_parallel(category) else "multiple_function_checker"
        if len(calls) != len(gold):
            return _fail(f"{kind}:wrong_count", f"{len(calls)} call(s) for {len(gold)} expected")
        grid, last = [], OK
        for answer in gold:
            fdesc = _find_strict(functions, next(iter(answer)))
            if fdesc is None:
                return _fail(
                    "simple_function_checker:gold_function_missing",
                    f"the expected function {next(iter(answer))!r} is not among the provided functions",
                )
            row = []
            for call in calls:
                v = _st_simple(fdesc, functions, call, answer, fmt, language)
                row.append(v.ok)
                last = v if not v.ok else last
            grid.append(row)
        if _perfect_matching(grid):
            return OK
        missing = [next(iter(a)) for a, row in zip(gold, grid) if not any(row)]
        return _fail(
            f"{kind}:cannot_find_match",
            f"no one-to-one match of calls to expected calls (unmatched: {missing or 'conflict'}); "
            f"last mismatch: {last.error_type}: {last.message}",
        )
    expected_count = 1 if not _is_multiple(category) else len(gold)
    if len(calls) != expected_count:
        kind = "multiple_function_checker" if _is_multiple(category) else "simple_function_checker"
        return _fail(f"{kind}:wrong_count", f"{len(calls)} call(s) for {expected_count} expected")
    fdesc = _find_strict(functions, next(iter(gold[0])))
    return _st_simple(fdesc, functions, calls[0], gold[0], fmt, language)


# =============================================================================================
# relevance (strict only: the official rule is "any decodable call", applied in the plug-in)
# =============================================================================================
def strict_relevant_call(functions: list, calls: list, fmt: str = "prompt") -> Verdict:
    """Every call names a provided function, with its required parameters and no unknown one."""
    if not calls:
        return _fail("relevance_error:decoder_failed", "no function call in the output")
    for call in calls:
        name, params = next(iter(call.items()))
        fdesc = next((f for f in functions if isinstance(f, dict) and name in _accepted_names(f, functions, fmt)), None)
        if fdesc is None:
            return _fail("relevance_error:unknown_function", f"{name!r} is not one of the provided functions")
        raw_parameters = fdesc.get("parameters")
        parameters = raw_parameters if isinstance(raw_parameters, dict) else {}
        raw_props = parameters.get("properties")
        props = raw_props if isinstance(raw_props, dict) else {}
        raw_required = parameters.get("required")
        required = raw_required if isinstance(raw_required, list) else []
        for p in required:
            if p not in params:
                return _fail("relevance_error:missing_required", f"{name}: missing required parameter {p!r}")
        for p in params:
            if p not in props:
                return _fail("relevance_error:unexpected_param", f"{name}: unexpected parameter {p!r}")
    return OK
