"""Builds in several processes and on Ray give the single-process result; a killed build resumes;
tool universes as counts, fractions and sweeps."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import accepted_pair

from benchsmith.construction.nl2api import (
    BuildOptions,
    build_split,
    build_universes,
    chinook_db,
    default_pairs_path,
    parse_universe,
    universe_size,
)
from benchsmith.schemas import UserError

VOLATILE = {"created_at", "verified_at"}


@pytest.fixture(scope="module")
def chinook(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("db") / "chinook.sqlite"
    shutil.copyfile(chinook_db(), path)
    return path


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _split(out: Path) -> dict:
    """A split's content without timestamps and timings."""
    samples = [_strip(json.loads(line)) for line in (out / "samples.jsonl").read_text("utf-8").splitlines()]
    report = json.loads((out / "report.json").read_text("utf-8"))
    for k in ("seconds", "workers", "ray", "resumed_pairs"):
        report.pop(k)
    return {
        "samples": samples,
        "report": report,
        "tools": json.loads((out / "tools.json").read_text("utf-8")),
        "toolset": (out / "toolset.json").read_text("utf-8") if (out / "toolset.json").exists() else None,
    }


@pytest.mark.parametrize("style", ["slot", "rest"])
def test_two_workers_give_the_single_process_split(style, chinook, tmp_path):
    one = build_split(chinook, default_pairs_path(), tmp_path / "one", BuildOptions(style=style))
    two = build_split(chinook, default_pairs_path(), tmp_path / "two", BuildOptions(style=style, workers=2))
    assert one["verified"] >= 130 and two["workers"] == 2
    a, b = _split(tmp_path / "one"), _split(tmp_path / "two")
    assert a == b
    lines = [s["metadata"]["pair_line"] for s in a["samples"]]
    assert lines == sorted(lines)  # input order


class _Killed(Exception):
    pass


def test_a_killed_build_resumes_from_its_journal(chinook, tmp_path):
    out = tmp_path / "split"
    done = []

    def die_after_50(n: int) -> None:
        done.append(n)
        if len(done) == 50:
            raise _Killed()

    with pytest.raises(_Killed):
        build_split(chinook, default_pairs_path(), out, BuildOptions(progress=die_after_50))
    journal = (out / ".journal.pending.jsonl").read_text("utf-8").splitlines()
    assert len(journal) == 1 + 50 and not (out / "samples.jsonl").exists()
    calls = []
    resumed = build_split(chinook, default_pairs_path(), out, BuildOptions(progress=calls.append))
    fresh = build_split(chinook, default_pairs_path(), tmp_path / "fresh", BuildOptions())
    assert resumed["resumed_pairs"] == 50 and len(calls) == fresh["total"] - 50
    assert _split(out) == _split(tmp_path / "fresh")
    # finished: a re-run converts nothing
    again = build_split(chinook, default_pairs_path(), out, BuildOptions(progress=calls.append))
    assert again["resumed_pairs"] == fresh["total"] and len(calls) == fresh["total"] - 50


def test_a_journal_of_other_inputs_is_not_reused(chinook, tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    rows = default_pairs_path().read_text("utf-8").splitlines()[:10]
    pairs.write_text("\n".join(rows) + "\n", "utf-8")
    out = tmp_path / "split"
    first = build_split(chinook, pairs, out, BuildOptions())
    pairs.write_text("\n".join(rows[:5]) + "\n", "utf-8")
    second = build_split(chinook, pairs, out, BuildOptions())
    assert first["total"] == 10 and second["total"] == 5 and second["resumed_pairs"] == 0
    assert len((out / ".journal.jsonl").read_text("utf-8").splitlines()) == 1 + 5  # the new inputs' journal
    assert not (out / ".journal.pending.jsonl").exists()


def test_universe_counts_and_fractions():
    assert universe_size(12, 40) == 12 and universe_size(0.25, 40) == 10 and universe_size(1.0, 40) == 40
    assert parse_universe("0.5") == 0.5 and parse_universe("7") == 7
    for bad in ("0", "-1", "1.5", "x", "0.0"):
        with pytest.raises(UserError):
            parse_universe(bad)


def test_a_fraction_universe_keeps_gold_tools_and_the_share_of_the_rest(chinook, tmp_path):
    full = build_split(chinook, default_pairs_path(), tmp_path / "full", BuildOptions())
    quarter = build_split(chinook, default_pairs_path(), tmp_path / "q", BuildOptions(tool_universe=0.25))
    assert full["verified"] == quarter["verified"]
    full_samples = [json.loads(x) for x in (tmp_path / "full" / "samples.jsonl").read_text("utf-8").splitlines()]
    for line in (tmp_path / "q" / "samples.jsonl").read_text("utf-8").splitlines():
        s = json.loads(line)
        gold = {g["call"]["name"] for g in s["gold"]}
        names = {t["name"] for t in s["tools"]}
        n_full = len(next(f for f in full_samples if f["metadata"]["pair_line"] == s["metadata"]["pair_line"])["tools"])
        assert gold <= names
        assert len(names) == max(len(gold), round(0.25 * n_full))


def test_a_sweep_writes_one_split_per_size_from_one_conversion(chinook, tmp_path):
    calls = []
    reports = build_universes(
        chinook, default_pairs_path(), tmp_path / "sweep", BuildOptions(progress=calls.append), [0.25, 0.5, 1.0]
    )
    assert [r["tool_universe"] for r in reports] == [0.25, 0.5, 1.0]
    sizes = []
    for label in ("universe-0.25", "universe-0.5", "universe-1"):
        first = json.loads((tmp_path / "sweep" / label / "samples.jsonl").read_text("utf-8").splitlines()[0])
        sizes.append(len(first["tools"]))
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    assert len(calls) == reports[0]["total"]  # each pair converted once for the three splits


def test_ray_build_gives_the_single_process_split(chinook, tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'benchsmith[ray]'; .ci/run installs it)")
    one = build_split(chinook, default_pairs_path(), tmp_path / "one", BuildOptions())
    on_ray = build_split(chinook, default_pairs_path(), tmp_path / "ray", BuildOptions(ray="local", workers=2))
    assert on_ray["ray"] == "local" and on_ray["verified"] == one["verified"]
    assert _split(tmp_path / "one") == _split(tmp_path / "ray")


def test_the_journal_keeps_blobs_and_non_finite_floats(tmp_path):
    from benchsmith.construction.nl2api._private.pairwork import PairJournal

    fp = {"inputs": "x"}
    journal = PairJournal(tmp_path, fp)
    record = accepted_pair(3, [[b"\x00\xff", float("inf"), 1.5, None, "t"]])
    journal.add(record)
    journal.finish()
    again = PairJournal(tmp_path, fp)
    assert list(again.done) == [3] and again.get(3).rows == record.rows
    again.close()
