"""Normal-family checks: decoded calls against the possible answers, in both modes.

``check_official`` re-implements the official checker's behaviour rule by rule (bugs included);
``check_strict`` is the same metric with those bugs fixed (see docs/eval/acebench.md).
Both return ``(ok, error_type, reason, raw_type)`` where ``error_type`` is one of
:data:`ERROR_TYPES` and ``raw_type`` is the finer label (the official one in official mode).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from itertools import permutations
from typing import Any

ERROR_TYPES = (
    "wrong_output_format",
    "function_mismatch",
    "wrong functions number",
    "lack_args",
    "addition_args",
    "type_error",
    "value_error",
)

Verdict = tuple[bool, str | None, str, str | None]
OK: Verdict = (True, None, "", None)

_SUFFIX = re.compile(r"_\d+$")


class OfficialCrash(Exception):
    """The official evaluator would raise here (its whole run would stop)."""


# =============================================================================================
# official
# =============================================================================================
_OFF_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
    "list": list,
    "object": dict,
    "objectArray": list,
    "list(string)": list,
    "list(enum)": list,
    "int": int,
    "enum": enumerate,
    "number": int,
}
_OFF_NESTED = ("array", "tuple", "list(string)", "list(enum)", "object", "objectArray")
_STD = re.compile(r"[ ,./\-_*^]")


def official_standardize(s: str) -> str:
    return _STD.sub("", s).lower().replace("'", '"')


def _family(raw: str) -> str:
    if raw.startswith("value_error") or raw.startswith("dict_checker") or raw.startswith("list_dict_checker"):
        return "value_error"
    if raw in ("wrong_function_name", "simple_function_checker:unclear"):
        return "function_mismatch"
    return raw


def _off_answer_type(ans: Any) -> Any:
    return None if ans == "" else type(ans)


def _off_type_checker(value: Any, ans: Any, expected: Any, nested: Any) -> dict[str, Any]:
    res: dict[str, Any] = {"valid": True, "is_variable": False, "error_type": "type_error", "error": ""}
    is_variable = False
    at = _off_answer_type(ans)
    if at is not None and at != expected:
        is_variable = True
    if isinstance(value, str) and value == "true":
        value = True
    if isinstance(value, str) and value == "false":
        value = False
    if type(value) == expected:  # noqa: E721 - exact type, as the official checker does
        if nested is None:
            res["is_variable"] = is_variable
            return res
        try:
            items = iter(ans)
        except TypeError:
            raise OfficialCrash("iterating a non-iterable possible answer") from None
        for item in items:
            flag = True
            if type(item) == list:  # noqa: E721
                try:
                    inner = iter(value)
                except TypeError:
                    raise OfficialCrash("iterating a non-iterable value") from None
                for v in inner:
                    if not _off_type_checker(v, item, nested, None)["valid"]:
                        flag = False
                        break
            if flag:
                return {"valid": True, "is_variable": is_variable, "error_type": "", "error": ""}
        res["valid"] = False
        res["error"] = "nested type check failed"
    at = _off_answer_type(ans)
    if at is not None:
        try:
            same = ans == value
        except Exception:  # noqa: BLE001
            same = False
        if type(value) == at or same:  # noqa: E721
            res["is_variable"] = True
            return res
    res["valid"] = False
    res["error"] = f"wrong type: expected {getattr(expected, '__name__', expected)}, got {type(value).__name__}"
    res["error_type"] = "type_error"
    return res


def _off_string(value: str, ans: Any, agent: bool) -> dict[str, Any]:
    if not isinstance(ans, str):
        raise OfficialCrash("standardising a non-string answer")
    sv, sa = official_standardize(value), official_standardize(ans)
    if (sv != sa) if agent else (sa not in sv):
        return {"valid": False, "error_type": "value_error:string", "error": f"expected {ans!r}, got {value!r}"}
    return {"valid": True}


def _off_list(value: Any, ans: Any) -> dict[str, Any]:
    try:
        mv = [official_standardize(v) if type(v) == str else v for v in list(value)]  # noqa: E721
        av = [official_standardize(v) if type(v) == str else v for v in ans]  # noqa: E721
    except TypeError:
        raise OfficialCrash("list check on a non-list") from None
    if mv != av:
        return {"valid": False, "error_type": "value_error:list/tuple", "error": f"expected {ans!r}, got {value!r}"}
    return {"valid": True}


def _off_dict(value: Any, ans: Any) -> dict[str, Any]:
    res: dict[str, Any] = {"valid": True, "error_type": "dict_checker:unclear", "error": ""}
    bad = {"valid": False, "error_type": "value_error", "error": f"expected {ans!r}, got {value!r}"}
    if not isinstance(value, dict):
        return bad
    if not isinstance(ans, dict):
        raise OfficialCrash("dict check against a non-dict answer")
    if len(value) != len(ans):
        return bad
    for key, val in value.items():
        if isinstance(val, str) and val == "true":
            val = True
        if isinstance(val, str) and val == "false":
            val = False
        if key not in ans:
            return bad
        exp = ans[key]
        if isinstance(exp, dict):
            res = _off_dict(val, exp)
            if not res["valid"]:
                return res
        else:
            sv = official_standardize(val) if type(val) == str else val  # noqa: E721
            sa = official_standardize(exp) if type(exp) == str else exp  # noqa: E721
            if str(sa) not in str(sv):
                return bad
    return res


def _off_list_dict(value: Any, ans: Any) -> dict[str, Any]:
    res: dict[str, Any] = {"valid": True, "error_type": "list_dict_checker:unclear", "error": ""}
    try:
        n_val, n_ans = len(value), len(ans)
    except TypeError:
        raise OfficialCrash("len() of a scalar") from None
    if n_val != n_ans:
        return {"valid": False, "error_type": "value_error:list_dict_count", "error": "wrong number of items"}
    for i in range(n_val):
        res = _off_dict(value[i], ans[i])
        if not res["valid"]:
            return res
    return res


def _off_simple(desc: dict[str, Any] | None, out: dict[str, Any], gold: dict[str, Any], agent: bool) -> dict[str, Any]:
    if desc is None or "parameters" not in desc:
        raise OfficialCrash("function description missing or without 'parameters'")
    params = desc["parameters"]
    ans = list(gold.values())[0]
    margs = list(out.values())[0]
    if margs == {} and params == {}:
        return {"valid": True}
    if margs == {} or params == {}:
        return {
            "valid": False,
            "error_type": "wrong_param",
            "error": "call without arguments (or function without parameters)",
        }
    if not isinstance(params, dict) or "properties" not in params:
        raise OfficialCrash("parameters without 'properties'")
    if ans == params["properties"]:
        return {"valid": True}
    if ans == {}:
        return {"valid": False, "error_type": "wrong_param", "error": "empty possible answer"}
    fname = desc.get("name")
    if fname not in out:
        return {"valid": False, "error_type": "wrong_function_name", "error": f"expected {fname}"}
    margs = out[fname]
    details = params["properties"]
    if "required" not in params:
        raise OfficialCrash("parameters without 'required'")
    for p in params["required"]:
        if p not in margs:
            return {"valid": False, "error_type": "lack_args", "error": f"missing required parameter {p}"}
    if not isinstance(ans, dict):
        raise OfficialCrash("possible answer of a call is not a dict")
    for p, value in margs.items():
        if p not in details or p not in ans:
            return {"valid": False, "error_type": "addition_args", "error": f"unexpected parameter {p}"}
        pd = details[p]
        if not isinstance(pd, dict) or pd.get("type") not in _OFF_TYPES:
            raise OfficialCrash(f"unknown parameter type {pd.get('type') if isinstance(pd, dict) else pd!r}")
        tdesc = pd["type"]
        expected = _OFF_TYPES[tdesc]
        nested = None
        if tdesc in _OFF_NESTED:
            items = pd.get("items")
            if isinstance(items, dict) and "type" in items:
                ntype = items["type"]
            elif "string" in tdesc:
                ntype = "string"
            elif "enum" in tdesc:
                ntype = "enum"
            else:
                ntype = "dict"
            if ntype not in _OFF_TYPES:
                raise OfficialCrash(f"unknown item type {ntype!r}")
            nested = _OFF_TYPES[ntype]
        if tdesc == "tuple" and type(value) == tuple:  # noqa: E721
            value = list(value)
        if tdesc == "float" and type(value) == int:  # noqa: E721
            value = float(value)
        tc = _off_type_checker(value, ans[p], expected, nested)
        if not tc["valid"]:
            return {"valid": False, "error_type": tc["error_type"], "error": f"{p}: {tc['error']}"}
        if tc["is_variable"]:
            continue
        if expected is dict:
            r = _off_dict(value, ans[p])
        elif expected is list and nested is dict:
            if tdesc == "objectArray":
                raise OfficialCrash("objectArray branch calls dict_checker with a wrong signature")
            r = _off_list_dict(value, ans[p])
        elif expected is str:
            r = _off_string(value, ans[p], agent)
        elif expected is list:
            r = _off_list(value, ans[p])
        else:
            continue  # ints, floats, booleans: never value-checked
        if not r["valid"]:
            return {"valid": False, "error_type": r["error_type"], "error": f"{p}: {r.get('error', '')}"}
    return {"valid": True}


def _off_find_description(functions: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    for fd in functions:
        if isinstance(fd, dict) and isinstance(fd.get("name"), str) and fd["name"] in name:
            return fd
    return None


def _off_normal(
    functions: list[dict[str, Any]], output: list[dict[str, Any]], answer: dict[str, Any], agent: bool
) -> dict[str, Any]:
    if len(output) != len(answer):
        return {"valid": False, "error_type": "wrong functions number", "error": "the number of calls differs"}
    names = list(answer.keys())
    items = []
    for k, v in answer.items():
        items.append({_SUFFIX.sub("", k): v})
    out_count = Counter(k for o in output for k in o)
    ans_count = Counter(k for a in items for k in a)
    for n in out_count:
        if n not in ans_count:
            return {"valid": False, "error_type": "function_mismatch", "error": f"{n} is not in the answer"}
    for n in ans_count:
        if n not in out_count:
            return {"valid": False, "error_type": "function_mismatch", "error": f"{n} is missing"}
    for n, c in out_count.items():
        if c != ans_count.get(n, 0):
            return {"valid": False, "error_type": "function_mismatch", "error": f"{n} called {c} times"}
    result: dict[str, Any] = {"valid": True}
    for i, item in enumerate(items):
        desc = _off_find_description(functions, names[i])
        for out in output:
            if list(out.keys())[0] == list(item.keys())[0]:
                result = _off_simple(desc, out, item, agent)
                if result["valid"]:
                    break
            else:
                result = {"valid": False, "error_type": "simple_function_checker:unclear", "error": "wrong_function"}
        if not result["valid"]:
            return result
    return result


def check_official(
    functions: list[dict[str, Any]], output: list[dict[str, Any]], answers: Any, category: str = ""
) -> Verdict:
    """The official verdict for a decoded output against one record's possible answer(s)."""
    alts = answers if isinstance(answers, list) else [answers]
    first: dict[str, Any] | None = None
    for alt in alts:
        if not isinstance(alt, dict):
            raise OfficialCrash("possible answer is not a dict")
        r = _off_normal(functions, output, alt, "agent" in category)
        if r["valid"]:
            return OK
        if first is None:
            first = r
    if first is None:
        raise OfficialCrash("empty list of possible answers")
    raw = first["error_type"]
    fam = _family(raw)
    if fam == "wrong_param":
        empty = any(list(o.values())[0] == {} for o in output)
        fam = "lack_args" if empty else "addition_args"
    return (False, fam, str(first.get("error", ""))[:300], raw)


# =============================================================================================
# strict
# =============================================================================================
def strict_text(s: str) -> str:
    """Unicode-normalise, casefold and collapse whitespace (no punctuation is deleted)."""
    return " ".join(unicodedata.normalize("NFKC", s).casefold().split())


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def values_equal(a: Any, b: Any) -> bool:
    """Typed, recursive equality: strings by :func:`strict_text`, numbers numerically."""
    if isinstance(a, str) and isinstance(b, str):
        return strict_text(a) == strict_text(b)
    if _is_num(a) and _is_num(b):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return type(a) is type(b) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(values_equal(a[k], b[k]) for k in a)
    return False


_STRICT_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "str": (str,),
    "integer": (int,),
    "int": (int,),
    "number": (int, float),
    "float": (int, float),
    "boolean": (bool,),
    "bool": (bool,),
    "array": (list, tuple),
    "list": (list, tuple),
    "tuple": (list, tuple),
    "object": (dict,),
    "dict": (dict,),
}


def type_problem(value: Any, schema: Any, path: str) -> str | None:
    """Why ``value`` does not fit the JSON-schema-like ``schema`` (None when it fits)."""
    if not isinstance(schema, dict):
        return None
    t = schema.get("type")
    if isinstance(t, str) and t in _STRICT_TYPES:
        allowed = _STRICT_TYPES[t]
        if isinstance(value, bool) and bool not in allowed:
            return f"{path}: expected {t}, got boolean"
        if not isinstance(value, allowed):
            return f"{path}: expected {t}, got {type(value).__name__}"
        # a value that fits ``allowed`` is a list or tuple just when t is an array type, a dict just when
        # t is an object type: testing the value lets the type checker see what it is
        if isinstance(value, (list, tuple)) and isinstance(schema.get("items"), dict):
            for i, v in enumerate(value):
                why = type_problem(v, schema["items"], f"{path}[{i}]")
                if why:
                    return why
        if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
            for k, v in value.items():
                if k in schema["properties"]:
                    why = type_problem(v, schema["properties"][k], f"{path}.{k}")
                    if why:
                        return why
    return None


def resolve_name(key: str, function_names: set[str]) -> str:
    """A gold key's function name: ``_<digits>`` is a duplicate marker only when the key itself is no function."""
    if key in function_names:
        return key
    base = _SUFFIX.sub("", key)
    return base if base in function_names else key


def _strict_call(desc: dict[str, Any] | None, args: dict[str, Any], gold: dict[str, Any]) -> Verdict:
    if not isinstance(gold, dict):
        return (False, "value_error", "possible answer of the call is not an object", "bad_gold")
    params = desc.get("parameters") if isinstance(desc, dict) else None
    props = params.get("properties", {}) if isinstance(params, dict) else {}
    required = params.get("required", []) if isinstance(params, dict) else []
    props = props if isinstance(props, dict) else {}
    required = required if isinstance(required, list) else []
    for p in required:
        if p not in args:
            return (False, "lack_args", f"missing required parameter {p}", "lack_args")
    for p in gold:
        if p not in args:
            return (False, "lack_args", f"missing parameter {p} given in the answer", "lack_args")
    for p in args:
        if p not in gold or (props and p not in props):
            return (False, "addition_args", f"unexpected parameter {p}", "addition_args")
    for p, v in args.items():
        if p in props:
            why = type_problem(v, props[p], p)
            if why:
                return (False, "type_error", why, "type_error")
        if not values_equal(v, gold[p]):
            return (False, "value_error", f"{p}: expected {gold[p]!r}, got {v!r}"[:300], "value_error")
    return OK


def _strict_alt(functions: list[dict[str, Any]], output: list[dict[str, Any]], answer: dict[str, Any]) -> Verdict:
    by_name = {fd["name"]: fd for fd in functions if isinstance(fd, dict) and isinstance(fd.get("name"), str)}
    gold = [(resolve_name(k, set(by_name)), v) for k, v in answer.items()]
    calls = [(next(iter(o)), o[next(iter(o))]) for o in output]
    if len(calls) != len(gold):
        return (False, "wrong functions number", f"{len(calls)} calls, expected {len(gold)}", "wrong functions number")
    if Counter(n for n, _ in calls) != Counter(n for n, _ in gold):
        missing = sorted((Counter(n for n, _ in gold) - Counter(n for n, _ in calls)).keys())
        extra = sorted((Counter(n for n, _ in calls) - Counter(n for n, _ in gold)).keys())
        return (False, "function_mismatch", f"missing {missing}, unexpected {extra}", "function_mismatch")
    if len(calls) > 7:  # permutations would explode; match in order instead
        orders: Any = [tuple(range(len(calls)))]
    else:
        orders = permutations(range(len(calls)))
    first: Verdict | None = None
    for order in orders:
        verdict = OK
        for gi, ci in enumerate(order):
            gname, gargs = gold[gi]
            cname, cargs = calls[ci]
            if gname != cname:
                verdict = (False, "function_mismatch", "call order does not pair names", "function_mismatch")
                break
            verdict = _strict_call(by_name.get(gname), cargs, gargs)
            if not verdict[0]:
                break
        if verdict[0]:
            return OK
        if first is None or (first[1] == "function_mismatch" and verdict[1] != "function_mismatch"):
            first = verdict
    return first or OK


def check_strict(
    functions: list[dict[str, Any]], output: list[dict[str, Any]], answers: Any, category: str = ""
) -> Verdict:
    """Strict verdict: any possible answer that matches (order-free for parallel calls). ``category``
    is not read (it is :func:`check_official`'s: every category is checked alike here)."""
    alts = answers if isinstance(answers, list) else [answers]
    first: Verdict | None = None
    for alt in alts:
        if not isinstance(alt, dict):
            v: Verdict = (False, "value_error", "possible answer is not an object", "bad_gold")
        else:
            v = _strict_alt(functions, output, alt)
        if v[0]:
            return OK
        first = first or v
    return first or (False, "value_error", "no possible answer", "bad_gold")
