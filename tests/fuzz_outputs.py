"""Hostile model outputs for every benchmark's scorer, shared by tests/test_fuzz_scorers.py and
perf/fuzz_scoring.py.

:func:`scorer_cases` builds a few cases of every registered benchmark from the test fixtures
(tests/fixtures/eval/*) and, for NL2API, from three embedded question/SQL pairs built into
SLOT, SEL and REST splits. :data:`KINDS` are the output generators: each takes a
``random.Random`` and a seed output (the case's gold prediction or a fixture's prediction) and
returns a model output: mutations of the seed, lone surrogates, numbers of 5,000 digits, nesting
up to 100,000 deep (as the whole output, and as an argument of the seed's calls: 100 - 5,000 levels
of JSON or Python lists, objects, tuples and calls), long operator chains, huge plans and call
lists, huge strings (also a 50,000-character argument), random bytes decoded and JSON values of the
wrong types. Deep text is made by string repetition and deep values level by level
(:func:`nested_text`, :func:`nested_value`): ``json.dumps`` of a 5,000-deep list would itself
overflow.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchsmith.eval import BENCHMARKS, Benchmark, EvalCase, get_benchmark

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "eval"


def _rows(name: str) -> list[dict[str, Any]]:
    text = (FIXTURES / f"{name}_cases.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass
class Group:
    """The cases of one scorer of a benchmark (e.g. ``bfcl`` ``ast/prompt``) and seed outputs."""

    benchmark: str
    scorer: str
    bench: Benchmark
    cases: list[EvalCase]
    seeds: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.benchmark}:{self.scorer}"


def _group(
    groups: dict[str, Group], benchmark: str, scorer: str, bench: Benchmark, case: EvalCase, *seeds: Any
) -> None:
    g = groups.setdefault(f"{benchmark}:{scorer}", Group(benchmark, scorer, bench, []))
    if len(g.cases) < 4:
        g.cases.append(case)
    for s in seeds:
        text = _text(s)
        if text not in g.seeds and len(g.seeds) < 12:
            g.seeds.append(text)


def _bfcl(groups: dict[str, Group]) -> None:
    from benchsmith.eval.bfcl import AST_CATEGORIES

    for fmt in ("prompt", "fc"):
        bench = get_benchmark("bfcl", format=fmt)
        for r in _rows("bfcl"):
            case = EvalCase(
                id=r["name"],
                benchmark="bfcl",
                category=r["category"],
                input={"question": [[{"role": "user", "content": "question"}]], "functions": r["functions"]},
                gold=r["gold"],
            )
            kind = "ast" if r["category"] in AST_CATEGORIES else "relevance"
            _group(groups, "bfcl", f"{kind}/{fmt}", bench, case, bench.gold_prediction(case), r["prediction"])


def _teval(groups: dict[str, Group]) -> None:
    from benchsmith.eval.teval._scorers import scorer_name

    bench = get_benchmark("teval")
    for r in _rows("teval"):
        inputs = {k: r[k] for k in ("template", "api_list") if k in r}
        case = EvalCase(
            id=r["name"],
            benchmark="teval",
            category=f"{r['ability']}/{r['format']}",
            input=inputs,
            gold=r["gold"],
            meta={"ability": r["ability"], "format": r["format"], "scorer": scorer_name(r["ability"], r["format"])},
        )
        _group(groups, "teval", case.category, bench, case, bench.gold_prediction(case), r["prediction"])


def _gta(groups: dict[str, Group]) -> None:
    from benchsmith.eval.gta import GTA

    bench = GTA()
    preds: dict[str, list[Any]] = {}
    for r in _rows("gta"):
        if r.get("id") and "prediction" in r:
            preds.setdefault(r["id"], []).append(r["prediction"])
    for case in bench.load(FIXTURES / "gta_data"):
        _group(groups, "gta", case.category, bench, case, bench.gold_prediction(case), *preds.get(case.id, []))


def _toolassess(groups: dict[str, Group], tmp: Path) -> None:
    bench = get_benchmark("toolassess")
    records: dict[str, dict[str, Any]] = {}
    preds: dict[str, list[Any]] = {}
    for r in _rows("toolassess"):
        records.setdefault(r["record"]["id"], r["record"])
        preds.setdefault(r["record"]["id"], []).append(r["prediction"])
    path = tmp / "toolassess.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records.values()), encoding="utf-8")
    for case in bench.load(path):
        _group(
            groups,
            "toolassess",
            case.category.split(":")[0],
            bench,
            case,
            bench.gold_prediction(case),
            *preds.get(case.id, []),
        )


def _acebench(groups: dict[str, Group]) -> None:
    from benchsmith.eval.acebench._plugin import family_of

    bench = get_benchmark("acebench")
    for r in _rows("acebench"):
        case = EvalCase(id=r["name"], benchmark="acebench", category=r["category"], input=r["input"], gold=r["gold"])
        _group(groups, "acebench", family_of(r["category"]), bench, case, bench.gold_prediction(case), r["prediction"])


def _agent(groups: dict[str, Group]) -> None:
    bench = get_benchmark("agent")
    cases = {c.id: c for c in bench.load("sandbox")}
    for r in _rows("agent"):
        case = cases[r["scenario"]]
        seeds = [bench.gold_prediction(case)] + ([r["prediction"]] if r["prediction"] is not None else [])
        _group(groups, "agent", "episode", bench, case, *seeds)


NL2API_PAIRS = 3


def _nl2api(groups: dict[str, Group], tmp: Path) -> None:
    from helpers import pair_lines

    from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db

    bench = get_benchmark("nl2api")
    (tmp / "pairs.jsonl").write_text("\n".join(pair_lines()[:NL2API_PAIRS]) + "\n", encoding="utf-8")
    for style in ("slot", "sel", "rest"):
        report = build_split(chinook_db(), tmp / "pairs.jsonl", tmp / style, BuildOptions(style=style))
        assert report["verified"] == NL2API_PAIRS, report
        for case in bench.load(tmp / style):
            _group(groups, "nl2api", style, bench, case, bench.gold_prediction(case))
    nestful = [r for r in _rows("nl2api") if r["split"] == "nestful"]
    path = tmp / "nestful.json"
    path.write_text(json.dumps([nestful[0]["record"]]), encoding="utf-8")
    for case in bench.load(path):
        _group(
            groups, "nl2api", "nestful", bench, case, bench.gold_prediction(case), *(r["prediction"] for r in nestful)
        )


def benchmark_names() -> list[str]:
    """Every registered benchmark (getting one registers the built-in ones)."""
    get_benchmark("bfcl")
    return sorted(BENCHMARKS)


def scorer_groups(tmp: Path) -> dict[str, Group]:
    """A :class:`Group` per scorer of every registered benchmark (``tmp``: a scratch folder)."""
    groups: dict[str, Group] = {}
    _bfcl(groups)
    _teval(groups)
    _gta(groups)
    _toolassess(groups, tmp)
    _acebench(groups)
    _agent(groups)
    _nl2api(groups, tmp)
    missing = set(BENCHMARKS) - {g.benchmark for g in groups.values()}
    assert not missing, f"no fuzz cases for {sorted(missing)}: add them to tests/fuzz_outputs.py"
    return groups


# ---- generators -------------------------------------------------------------------------------
SURROGATES = ("\ud800", "\udfff", "\udc80")
PIECES = list("[](){}\"',:=.+-*/%\\ \n\t0123456789abcxyz_") + [
    "\u00e9",
    "\u4e2d",
    "\U0001f600",
    "\x00",
    "\u2028",
    "null",
    "true",
    "None",
    "...",
    "**",
    "$1$",
    "\\u",
]


def _spot(rnd: random.Random, text: str) -> int:
    return rnd.randint(0, len(text))


def mutate(rnd: random.Random, seed: str) -> str:
    """1-6 random edits: delete, insert, duplicate or swap spans; change a number or a quote."""
    text = seed
    for _ in range(rnd.randint(1, 6)):
        op = rnd.randrange(6)
        i = _spot(rnd, text)
        j = min(len(text), i + rnd.randint(1, 12))
        if op == 0:
            text = text[:i] + text[j:]
        elif op == 1:
            text = text[:i] + rnd.choice(PIECES) + text[i:]
        elif op == 2:
            text = text[:j] + text[i:j] * rnd.randint(1, 4) + text[j:]
        elif op == 3 and len(text) > 1:
            k = _spot(rnd, text)
            a, b = sorted((i, k))
            text = text[:a] + text[b : b + 3] + text[a + 3 : b] + text[a : a + 3] + text[b + 3 :]
        elif op == 4:
            digits = [n for n, ch in enumerate(text) if ch.isdigit()]
            if digits:
                n = rnd.choice(digits)
                text = text[:n] + rnd.choice(["-1", "0", "1e400", "NaN", "Infinity", "1.5", "10**9"]) + text[n + 1 :]
        else:
            text = text.replace(rnd.choice("'\""), rnd.choice(["'", '"', "`", ""]), rnd.randint(1, 3))
    return text


def surrogate(rnd: random.Random, seed: str) -> str:
    """A lone surrogate, raw or JSON-escaped, inside or around the seed."""
    s = rnd.choice(SURROGATES)
    escaped = "\\u" + format(ord(s), "04x")
    choice = rnd.randrange(4)
    if choice == 0:
        i = _spot(rnd, seed)
        return seed[:i] + s + seed[i:]
    if choice == 1 and '"' in seed:
        quotes = [n for n, ch in enumerate(seed) if ch == '"']
        n = rnd.choice(quotes) + 1
        return seed[:n] + escaped + seed[n:]
    if choice == 2:
        return json.dumps({"thought": s, "name": s, "args": {s: s}, "tool_calls": [{"name": s, "arguments": {}}]})
    return seed.replace("a", s, 1) + escaped


def big_number(rnd: random.Random, seed: str) -> str:
    """A number of 5,000 digits (decimal, hexadecimal, exponent) in place of one of the seed's."""
    digits = "".join(rnd.choice(string.digits[1:]) for _ in range(5000))
    number = rnd.choice([digits, "-" + digits, "0x" + digits, digits + ".5", "1e" + digits[:6], "0." + digits])
    spots = [n for n, ch in enumerate(seed) if ch.isdigit()]
    if spots and rnd.random() < 0.7:
        n = rnd.choice(spots)
        return seed[:n] + number + seed[n + 1 :]
    return rnd.choice(
        [
            number,
            f"[f(a={number})]",
            json.dumps({"x": 1}).replace("1", number),
            f'[{{"name": "f", "arguments": {{"a": {number}}}}}]',
        ]
    )


def deep_nesting(rnd: random.Random, seed: str) -> str:
    """Brackets, objects, parentheses, calls or unary operators nested up to 100,000 deep (the whole
    output, a call's argument, a reply object's field, or inside the seed)."""
    n = rnd.choice([99, 101, 150, 200, 700, 950, 999, 1000, 5000, 100_000])
    form = rnd.randrange(11)
    if form == 8:
        return nested_text(rnd.choice(list(NESTINGS)), n)
    if form == 9:  # a JSON call whose arguments object holds the nesting
        inner = nested_text(rnd.choice(["json_list", "json_object"]), n)
        return '[{"name": "' + _call_name(seed) + '", "arguments": {"a": ' + inner + "}}]"
    if form == 10:  # a reply object (a turn, an answer, a plan step) with a deep field
        inner = nested_text(rnd.choice(["json_list", "json_object"]), n)
        key = rnd.choice(["content", "answer", "thought", "args", "result", "subtasks", "label", "tools"])
        return '{"' + key + '": ' + inner + ', "name": "' + _call_name(seed) + '"}'

    if form == 0:
        return "[" * n + "]" * n
    if form == 1:
        return '{"a": ' * n + "1" + "}" * n
    if form == 2:
        return "[" * n
    if form == 3:
        return "-" * n + "1"
    if form == 4:
        return "[f(a=" + "[" * n + "]" * n + ")]"
    if form == 5:
        return "(" * n + ")" * n
    if form == 6:
        inner = "[" * n + "]" * n
        return json.dumps([{"name": "f", "arguments": inner}])
    i = _spot(rnd, seed)
    return seed[:i] + "[" * n + "]" * n + seed[i:]


# ---- deep values, built without recursion --------------------------------------------------------
#: shape -> (opening, closing) of one level; "json_*" are JSON, the rest Python syntax
NESTINGS = {
    "json_list": ("[", "]"),
    "json_object": ('{"a": ', "}"),
    "py_list": ("[", "]"),
    "py_dict": ("{'a': ", "}"),
    "py_tuple": ("(", ",)"),
    "py_call": ("g(a=", ")"),
}
DEPTHS = (100, 101, 150, 199, 500, 700, 950, 999, 1000, 5000)


def nested_text(shape: str, depth: int, leaf: str = "1") -> str:
    """``leaf`` inside ``depth`` levels of a :data:`NESTINGS` shape, as text (string repetition).

    >>> nested_text("json_object", 2), nested_text("py_call", 2, "'x'")
    ('{"a": {"a": 1}}', "g(a=g(a='x'))")
    """
    opening, closing = NESTINGS[shape]
    return opening * depth + leaf + closing * depth


def nested_value(depth: int, kind: str = "list", leaf: Any = 1) -> Any:
    """``leaf`` inside ``depth`` levels of lists (or ``{"a": ...}`` objects), built level by level.

    >>> nested_value(3), nested_value(2, "dict")
    ([[[1]]], {'a': {'a': 1}})
    """
    value = leaf
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


# an argument's value in a seed: after `"key": ` (JSON) or `key=` (Python call syntax): a string,
# a number, an empty list or object, a literal
_ARGUMENT = re.compile(
    r"""(?:"[\w.$-]+":\s*|\b\w+=)("(?:[^"\\]|\\.)*"|'[^']*'|-?\d+(?:\.\d+)?|\[\]|\{\}|true|false|null|None|True|False)"""
)


def _argument_spans(seed: str) -> list[tuple[int, int]]:
    return [m.span(1) for m in _ARGUMENT.finditer(seed)]


def _syntax(seed: str, at: int) -> str:
    """ "json" where the value at ``at`` sits in JSON (after a colon), else "py" (after ``=``)."""
    before = seed[:at].rstrip()
    return "json" if before.endswith(":") else "py"


def deep_argument(rnd: random.Random, seed: str) -> str:
    """One argument of the seed's calls (or the value inside a JSON-text argument) nested 100 - 5,000
    levels deep, in the seed's own syntax; a seed without arguments gets a call that has one."""
    depth = rnd.choice(DEPTHS)
    spans = _argument_spans(seed)
    if not spans:
        shape = rnd.choice(list(NESTINGS))
        inner = nested_text(shape, depth)
        if shape.startswith("json"):
            return json.dumps([{"name": _call_name(seed), "arguments": {"a": 0}}]).replace("0}", inner + "}", 1)
        return f"[{_call_name(seed)}(a={inner})]"
    i, j = rnd.choice(spans)
    kind = _syntax(seed, i)
    if kind == "json" and seed.startswith('"{', i):  # arguments as JSON text: nest inside that text
        return seed[:i] + '"{\\"a\\": ' + nested_text("json_list", depth) + '}"' + seed[j:]
    shape = rnd.choice([s for s in NESTINGS if s.startswith(kind)])
    leaf = seed[i:j] if rnd.random() < 0.5 else "1"
    return seed[:i] + nested_text(shape, depth, leaf) + seed[j:]


def long_argument(rnd: random.Random, seed: str) -> str:
    """One argument of the seed's calls (a seed without: a new call) holding a 50,000-character string."""
    unit = rnd.choice(["x", "ab ", "\u4e2d", " ", "$out_1$", "\\n"])
    text = (unit * (50_000 // len(unit) + 1))[:50_000]
    spans = _argument_spans(seed)
    if not spans:
        return json.dumps([{"name": _call_name(seed), "arguments": {"a": text}}], ensure_ascii=False)
    i, j = rnd.choice(spans)
    quoted = json.dumps(text, ensure_ascii=False) if _syntax(seed, i) == "json" else repr(text)
    return seed[:i] + quoted + seed[j:]


def _call_name(seed: str) -> str:
    import re

    m = re.search(r"([A-Za-z_][\w.]*)\(", seed) or re.search(r'"name": "([^"]+)"', seed)
    return m.group(1) if m else "f"


def operator_chain(rnd: random.Random, seed: str) -> str:
    """Long chains of operators inside a call: string concatenation, repetition, powers, shifts."""
    name = _call_name(seed)
    n = rnd.choice([100, 500, 950, 2000, 10_000])
    term = rnd.choice(
        [
            '"x"*99999',
            '"x"',
            "1",
            "[1]*9999",
            "'ab'*5000",
            "2**4000",
            "[[1]*10000]*10",
            '"%99999999d" % 1',
            "1<<4096",
            "0x" + "f" * 999,
            "-1",
            "not True",
        ]
    )
    op = rnd.choice(["+", "*", "-", "**", "<<", "%"])
    chain = op.join([term] * n)
    return rnd.choice(
        [
            f"[{name}(a={chain})]",
            f"[{name}(a={chain}, b={chain})]",
            chain,
            f"[{name}(" + ", ".join(f"a{i}={term}" for i in range(min(n, 2000))) + ")]",
            json.dumps([{"name": name, "arguments": {"a": chain}}]),
        ]
    )


def huge_plan(rnd: random.Random, seed: str) -> str:
    """Thousands of plan steps, calls, messages or lines."""
    name = _call_name(seed)
    n = rnd.choice([101, 999, 1001, 2000, 20_000])
    form = rnd.randrange(6)
    if form == 0:
        return json.dumps([{"id": i, "name": name, "args": {"q": f"value {i}"}} for i in range(n)])
    if form == 1:
        return "\n".join(f"Use {name} with {{'q': {i}}}" for i in range(n))
    if form == 2:
        return "[" + ", ".join(f"{name}(a={i})" for i in range(n)) + "]"
    if form == 3:
        return json.dumps([{"name": name, "arguments": {"a": i}, "label": f"l{i}"} for i in range(n)])
    if form == 4:
        return json.dumps({"tool_calls": [{"name": name, "arguments": {}} for _ in range(n)], "answer": "x"})
    return json.dumps([{"role": "assistant", "content": None, "tool_calls": [{"name": name, "arguments": "{}"}]}] * n)


def huge_string(rnd: random.Random, seed: str) -> str:
    """A seed string stretched to 10 kB - 5 MB, or a long text of punctuation, words or spaces."""
    n = rnd.choice([10_000, 50_000, 99_999, 100_001, 150_000, 5_000_000])
    unit = rnd.choice(["!", "a", "x ", "word ", "\u4e2d", " ", "a.b ", "{", "\\"])
    filler = (unit * (n // len(unit) + 1))[:n]
    if '"' in seed and rnd.random() < 0.5:
        n_at = seed.index('"') + 1
        return seed[:n_at] + filler[: max(0, n - len(seed))] + seed[n_at:]
    return filler


def random_bytes(rnd: random.Random, seed: str) -> str:
    """Random bytes (or the seed's bytes with some flipped) decoded the ways a reader might."""
    if rnd.random() < 0.5:
        raw = bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 400)))
    else:
        raw = bytearray(seed.encode("utf-8", "surrogatepass"))
        for _ in range(rnd.randint(1, 5)):
            if raw:
                raw[rnd.randrange(len(raw))] = rnd.randrange(256)
        raw = bytes(raw)
    return raw.decode(
        rnd.choice(["utf-8", "latin-1"]) if rnd.random() < 0.3 else "utf-8",
        rnd.choice(["replace", "surrogateescape", "ignore"]),
    )


def _json_value(rnd: random.Random, depth: int = 0) -> Any:
    kind = rnd.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rnd.choice([True, False])
    if kind == 2:
        return rnd.choice([0, -1, 2**63, 1.5, -0.0, 1e308])
    if kind == 3:
        return rnd.choice(["", "x", "None", "[]", "{}", "\u2028", "$prev$", "A", "requires_tool"])
    if kind == 4:
        return rnd.choice([[], {}, [None], {"": None}])
    if kind == 5:
        return rnd.choice(["name", "arguments", "tool_calls", "content", "result", "answer"])
    if kind in (6, 7):
        return [_json_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
    keys = [
        "name",
        "arguments",
        "args",
        "id",
        "tool_calls",
        "content",
        "answer",
        "thought",
        "label",
        "result",
        "process",
        "subtasks",
        "function",
        "tools",
        "is_finished",
        "role",
        "x",
    ]
    return {rnd.choice(keys): _json_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))}


def _replace_node(rnd: random.Random, value: Any) -> Any:
    if isinstance(value, dict) and value and rnd.random() < 0.7:
        key = rnd.choice(list(value))
        return {**value, key: _replace_node(rnd, value[key])}
    if isinstance(value, list) and value and rnd.random() < 0.7:
        i = rnd.randrange(len(value))
        return value[:i] + [_replace_node(rnd, value[i])] + value[i + 1 :]
    return _json_value(rnd, 2)


def wrong_json(rnd: random.Random, seed: str) -> str:
    """A random JSON value, or the seed's JSON with one node replaced by a value of another type."""
    try:
        value = json.loads(seed)
    except ValueError:
        value = None
    if value is not None and rnd.random() < 0.6:
        out = _replace_node(rnd, value)
    else:
        out = _json_value(rnd)
    text = json.dumps(out, allow_nan=True)
    return json.dumps(text) if rnd.random() < 0.1 else text  # sometimes the JSON as a JSON string


def unchanged(rnd: random.Random, seed: str) -> str:
    """The seed itself (a gold or fixture prediction): must score as usual, within budget."""
    return seed


KINDS: dict[str, Callable[[random.Random, str], str]] = {
    "unchanged": unchanged,
    "mutate": mutate,
    "surrogate": surrogate,
    "big_number": big_number,
    "deep_nesting": deep_nesting,
    "deep_argument": deep_argument,
    "operator_chain": operator_chain,
    "huge_plan": huge_plan,
    "huge_string": huge_string,
    "long_argument": long_argument,
    "random_bytes": random_bytes,
    "wrong_json": wrong_json,
}
#: the kinds that nest deeply: also scored by a direct ``Benchmark.score`` call (no budget applies)
DEEP_KINDS = ("deep_nesting", "deep_argument")


def fuzz_output(rnd: random.Random, group: Group, kind: str | None = None) -> tuple[EvalCase, str, str]:
    """``(case, output, kind)``: a case of the group and a hostile output for it."""
    case = rnd.choice(group.cases)
    seed = rnd.choice(group.seeds) if group.seeds else ""
    kind = kind or rnd.choice(list(KINDS))
    return case, KINDS[kind](rnd, seed), kind
