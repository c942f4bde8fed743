"""Automated quality checks: the verified default splits pass every default check, and each
check rejects the sample it exists for, naming itself, a code and a reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchsmith.construction.checks import CHECKS, DEFAULT_CHECKS, check, passed, run_checks
from benchsmith.schemas import Sample, UserError
from helpers import build_slot_split, pair_lines


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> list[Sample]:
    from benchsmith.schemas import read_jsonl

    split = build_slot_split(tmp_path_factory.mktemp("checks"), pair_lines()[:30])
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
    ("undocumented parameter",
     lambda d: d["tools"][0]["parameters"]["properties"]["data_source"].pop("description"), "tool_docs",
     "undocumented_parameter"),
    ("unknown tool", lambda d: _gold(d)[0].update(name="no_such_tool"), "gold_signature", "unknown_tool"),
    ("missing required argument", lambda d: _gold(d)[0]["arguments"].pop("data_source"), "gold_signature",
     "missing_argument"),
    ("unknown argument", lambda d: _gold(d)[0]["arguments"].update(colour="red"), "gold_signature", "unknown_argument"),
    ("value outside the enum", lambda d: _gold(d)[0]["arguments"].update(key_name="tracks.nope"), "gold_signature",
     "not_in_enum"),
    ("dangling reference", lambda d: _gold(d)[0]["arguments"].update(data_source="$never_made$"), "gold_references",
     "dangling_reference"),
]


@pytest.mark.parametrize("what,mutate,name,code", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_each_check_rejects_what_it_is_for(samples: list[Sample], what: str, mutate, name: str, code: str) -> None:  # noqa: ANN001
    # the first sample whose first gold call is filter_data keeps the mutations meaningful
    base = next(s for s in samples if _gold(s.model_dump(mode="json"))[0]["name"] == "filter_data"
                and "tracks" in str(s.setup))
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
