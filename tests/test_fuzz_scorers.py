"""Fuzz suite (issue 12): hostile model outputs through every benchmark's scorer in both modes,
and random bytes through the JSONL readers and the reply parser.

Every scored record must come back as a record (never an exception, never ``scorer_error``),
with a score in [0, 1], writable to records.jsonl, and within the per-record budget (a record
over a size limit is ``over_budget``; none may hit the time limit). Deeply nested outputs (issue
26: whole outputs and single arguments nested 100 - 100,000 levels) are also scored by a direct
``Benchmark.score`` call, where no budget applies: it must return a record too, and no record may
come from the last resort (a ``RecursionError`` or ``MemoryError`` caught: ``details.caught``),
only from the bounded-depth checks. The generators live in ``tests/fuzz_outputs.py`` (shared with
``perf/fuzz_scoring.py``). Hypothesis runs derandomized, so CI sees the same examples every time.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Iterator

import pytest
from fuzz_outputs import DEEP_KINDS, KINDS, Group, benchmark_names, fuzz_output, nested_text, scorer_groups
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchsmith.eval import BENCHMARKS, RecordResult, score_cases
from benchsmith.eval.budget import DEFAULT_BUDGET
from benchsmith.eval.scoring import Predictions, read_json_lines
from benchsmith.models import ParseError, read_json_reply
from benchsmith.schemas import CheckResult, JsonlError, UserError, dumps_json, iter_jsonl_lenient, read_jsonl

FUZZ = settings(derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
MODES = ("strict", "official")
# a record, model loading excluded (warmed up below), must take well under the time limit
SLOWEST = DEFAULT_BUDGET.seconds / 2


# Failures found in scorers owned elsewhere, reported to the lead; tolerated here until fixed.
@pytest.fixture(scope="module")
def groups(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Group]]:
    """Every scorer's cases; an empty embedding cache (fuzzed text must not fill the user's)."""
    old = os.environ.get("BENCHSMITH_CACHE")
    os.environ["BENCHSMITH_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    try:
        found = scorer_groups(tmp_path_factory.mktemp("fuzz"))
        for g in found.values():  # load the embedding model and the libraries once, outside any record
            for case in g.cases[:1]:
                for mode in MODES:
                    score_cases(g.bench, [case], {case.id: g.bench.gold_prediction(case)}, mode)
        yield found
    finally:
        if old is None:
            os.environ.pop("BENCHSMITH_CACHE", None)
        else:
            os.environ["BENCHSMITH_CACHE"] = old


def check_scored(group: Group, case, output: str, kind: str) -> None:
    for mode in MODES:
        if kind in DEEP_KINDS:  # Benchmark.score itself never raises (no budget applies here)
            direct = group.bench.score(case, output, mode)
            where = f"{group.name} {mode} {kind} direct ({len(output):,} chars): {direct.error_type}: {direct.reason}"
            assert isinstance(direct, RecordResult) and 0.0 <= direct.score <= 1.0, where
            assert "caught" not in direct.details, where
        start = time.perf_counter()
        run = score_cases(group.bench, [case], {case.id: output}, mode)
        spent = time.perf_counter() - start
        (r,) = run.records
        where = f"{group.name} {mode} {kind} ({len(output):,} chars): {r.error_type}: {r.reason}"
        assert isinstance(r, RecordResult) and 0.0 <= r.score <= 1.0, where
        assert r.error_type != "scorer_error", where
        assert "caught" not in r.details, where  # bounded, not the last resort
        assert not (r.error_type == "over_budget" and r.details.get("budget") == "seconds"), where
        assert spent < SLOWEST, f"{where}: {spent:.2f} s"
        if r.error_type == "over_budget":
            assert r.details["budget"] in (
                "prediction_chars",
                "calls",
                "depth",
                "string_chars",
                "plan_steps",
                "embed_chars",
            ), where
        json.loads(dumps_json(r.model_dump()))  # a records.jsonl line, whatever text the reason holds
        assert isinstance(run.scores, dict)


def test_every_benchmark_is_fuzzed(groups: dict[str, Group]) -> None:
    assert {g.benchmark for g in groups.values()} == set(BENCHMARKS) == set(benchmark_names())
    assert all(g.cases and g.seeds for g in groups.values())


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_on_every_scorer(groups: dict[str, Group], kind: str) -> None:
    for name, group in sorted(groups.items()):
        for seed in range(3):
            case, output, _ = fuzz_output(random.Random(f"{name}/{kind}/{seed}"), group, kind)
            check_scored(group, case, output, kind)


@pytest.mark.parametrize("benchmark", benchmark_names())
@settings(FUZZ, max_examples=150)
@given(rnd=st.randoms(use_true_random=False), kind=st.sampled_from(sorted(KINDS)), pick=st.integers(0, 1000))
def test_fuzzed_outputs_never_raise(
    groups: dict[str, Group], benchmark: str, rnd: random.Random, kind: str, pick: int
) -> None:
    mine = [g for name, g in sorted(groups.items()) if g.benchmark == benchmark]
    group = mine[pick % len(mine)]
    case, output, _ = fuzz_output(rnd, group, kind)
    check_scored(group, case, output, kind)


# ---- readers ------------------------------------------------------------------------------------
_LINE = st.one_of(
    st.binary(max_size=60),
    st.builds(
        lambda v: json.dumps(v).encode(),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
            lambda inner: (
                st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["id", "result", "x"]), inner, max_size=3)
            ),
            max_leaves=8,
        ),
    ),
    st.sampled_from(
        [
            b'{"id": "a", "result": "\\ud800"}',
            b'{"id": 1, "result": [1, 2]}',
            b"\xef\xbb\xbf{}",
            b'{"id": "n", "result": ' + b"9" * 5000 + b"}",
            b"[" * 5000,
            b'{"id": "a"',
            b"\xff\xfe",
            b'{"id": "d", "result": ' + b"[" * 900 + b"]" * 900 + b"}",
            b'{"id": "\xc3"}',
            b"\r",
            b"",
        ]
    ),
)


@settings(FUZZ, max_examples=300)
@given(lines=st.lists(_LINE, max_size=6), newline=st.sampled_from([b"\n", b"\r\n"]), torn=st.booleans())
def test_jsonl_readers_never_crash(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], newline: bytes, torn: bool
) -> None:
    path = tmp_path_factory.mktemp("jsonl") / "f.jsonl"
    body = newline.join(lines)
    path.write_bytes(body[: len(body) // 2] if torn else body)
    with Predictions(path) as preds:  # model output: bad lines are reported, never fatal
        assert all(isinstance(preds.get(rid), str) for rid in preds.offsets)
        assert all(isinstance(n, int) and isinstance(why, str) for n, why in preds.bad_lines)
    for read in (
        lambda: read_json_lines(path, fix="fix it"),
        lambda: read_jsonl(path, CheckResult),
        lambda: iter_jsonl_lenient(path, CheckResult),
    ):
        try:
            read()
        except UserError as exc:  # data files: one error naming the file
            assert str(path) in str(exc) or isinstance(exc, JsonlError)


_REPLY = st.one_of(
    st.text(max_size=200),
    st.builds(
        lambda rnd, kind: KINDS[kind](rnd, '{"tool_calls": [{"name": "f", "arguments": {"a": 1}}]}'),
        st.randoms(use_true_random=False),
        st.sampled_from(sorted(set(KINDS) - {"huge_string", "deep_nesting"})),
    ),
    st.sampled_from(
        [
            "[" * 3000,
            '{"a": ' * 2000,
            "x" + "{" * 3000,
            '{"a": 1}' * 3,
            "\ud800",
            '"\\ud800"',
            "9" * 5000,
            '{"n": ' + "9" * 5000 + "}",
            '```json\n{"a": 1}\n```',
            "null",
            "",
        ]
        # balanced and deep: a reply the reader returns (950) or refuses (5,000)
        + [nested_text(shape, n) for shape in ("json_list", "json_object") for n in (101, 950, 5000)]
        + ['{"tool_calls": [{"name": "f", "arguments": {"a": ' + nested_text("json_list", 950) + "}}]}"]
    ),
)


@settings(FUZZ, max_examples=300)
@given(text=_REPLY)
def test_reply_parser_never_crashes(text: str) -> None:
    start = time.perf_counter()
    try:
        read_json_reply(text)
    except ParseError:
        pass
    assert time.perf_counter() - start < SLOWEST
