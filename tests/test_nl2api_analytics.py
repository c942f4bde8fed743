"""Analysts' SQL at scale: the TPC-H-shaped fixture database (tests/fixtures/nl2api/analytics) and the
hand-written BIRD / Spider examples, built through the library and the CLI.

The pairs use EXISTS / NOT EXISTS, correlated subqueries, WITH, subqueries in FROM, set
operations, NULLS FIRST/LAST, constants to fold and window functions. What does not verify must be
rejected for a construct the tools cannot express (never for a wrong sequence), and the rest must
verify by execution like every other pair.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchsmith.cli import app
from benchsmith.construction.nl2api import BuildOptions, build_split, materialize_example

ANALYTICS = Path(__file__).resolve().parent / "fixtures" / "nl2api" / "analytics"
# the only pairs the tools cannot express, and why (a construct, named in the reason)
EXPECTED_REJECTIONS = {
    "tpch-q21": ("correlated_subquery", "not an equality"),  # l3.l_suppkey <> l1.l_suppkey
    "an-12": ("unsupported_expression", "constant in a column position"),  # SELECT 'supplier' AS kind
}
CONSTRUCT_CODES = {
    "correlated_subquery",
    "unsupported_expression",
    "set_operation",
    "cte",
    "window_function",
    "subquery_in_from",
    "exists_subquery",
    "unsupported_join_condition",
    "condition_too_complex",
    "bare_column",
    "unsupported_aggregate",
}


@pytest.fixture(scope="module")
def tpch(tmp_path_factory) -> tuple[Path, Path, list[dict]]:
    root = tmp_path_factory.mktemp("tpch")
    db = root / "tpch.sqlite"
    con = sqlite3.connect(db)
    con.executescript((ANALYTICS / "tpch.sql").read_text("utf-8"))
    con.commit()
    con.close()
    rows = [json.loads(x) for x in (ANALYTICS / "tpch_pairs.jsonl").read_text("utf-8").splitlines() if x.strip()]
    pairs = root / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({k: r[k] for k in ("id", "question", "sql")}) + "\n" for r in rows), "utf-8")
    return db, pairs, rows


def test_analytics_pairs_verify_and_rejections_name_a_construct(tpch, tmp_path):
    db, pairs, rows = tpch
    report = build_split(db, pairs, tmp_path / "split", BuildOptions())
    assert report["total"] == len(rows) >= 55
    got = {r["id"]: r for r in report["rejections"]}
    assert set(got) == set(EXPECTED_REJECTIONS)
    for pid, (code, words) in EXPECTED_REJECTIONS.items():
        assert got[pid]["code"] == code and words in got[pid]["message"], got[pid]
    assert all(r["code"] in CONSTRUCT_CODES for r in report["rejections"])
    assert report["verified"] / report["total"] >= 0.9
    # every construct the pairs use is verified at least once
    verified_ids = {
        json.loads(x)["provenance"]["source_id"]
        for x in (tmp_path / "split" / "samples.jsonl").read_text("utf-8").splitlines()
    }
    by_construct = Counter(c for r in rows if r["id"] in verified_ids for c in r["constructs"])
    for construct in (
        "exists",
        "not_exists",
        "correlated_subquery",
        "cte",
        "subquery_in_from",
        "union",
        "union_all",
        "intersect",
        "except",
        "nulls_order",
        "constant_folding",
        "window",
        "float_order",
    ):
        assert by_construct[construct] >= 1, construct


def test_analytics_splits_use_the_extended_tools_split_wide(tpch, tmp_path):
    db, pairs, _ = tpch
    build_split(db, pairs, tmp_path / "split", BuildOptions())
    samples = [json.loads(x) for x in (tmp_path / "split" / "samples.jsonl").read_text("utf-8").splitlines()]
    names = [{t["name"] for t in s["tools"]} for s in samples]
    assert all({"join_data", "alias_data", "combine_data", "rank_rows"} <= n for n in names)
    used = Counter(g["call"]["name"] for s in samples for g in s["gold"])
    assert used["join_data"] and used["combine_data"] and used["rank_rows"] and used["alias_data"]


@pytest.mark.parametrize("style", ["slot", "sel", "rest"])
@pytest.mark.parametrize(
    "kind, per_db",
    [("bird", {"school_funding": 20, "retail_loans": 20}), ("spider", {"music_festival": 11, "pet_clinic": 7})],
)
def test_example_datasets_import_in_every_style_through_the_cli(kind, per_db, style, tmp_path):
    root = materialize_example(kind, tmp_path / kind)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["nl2api", "import", kind, str(root), "--out", str(out), "--style", style], prog_name="benchsmith"
    )
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text("utf-8"))
    assert {k: v["verified"] for k, v in report["databases"].items()} == per_db
    if kind == "bird":  # the entry naming a database the dataset lacks
        assert [r["code"] for r in report["dataset_rejections"]] == ["unknown_database"]
    merged = out / "merged"
    manifest = json.loads((merged / "manifest.json").read_text("utf-8"))
    assert manifest["extra"]["databases"] == list(per_db) and manifest["sample_count"] == sum(per_db.values())
    samples = [json.loads(x) for x in (merged / "samples.jsonl").read_text("utf-8").splitlines()]
    assert Counter(s["metadata"]["db_id"] for s in samples) == per_db
    for db_id in per_db:
        assert (merged / "databases" / f"{db_id}.sqlite").is_file() and (merged / "tools" / f"{db_id}.json").is_file()
        assert json.loads((out / db_id / "report.json").read_text("utf-8"))["verified"] == per_db[db_id]
    if kind == "bird":
        assert {s["difficulty"] for s in samples} == {"simple", "moderate", "challenging"}
    names = [g["call"]["name"] for s in samples for g in s["gold"]]
    if style == "rest":
        assert len(set(names)) == len(samples)  # one endpoint per sample, names unique across databases


def test_import_rejects_an_unknown_kind_with_one_line(tmp_path):
    result = CliRunner().invoke(
        app, ["nl2api", "import", "wikisql", str(tmp_path), "--out", str(tmp_path / "o")], prog_name="benchsmith"
    )
    assert result.exit_code == 2 and "unknown dataset kind 'wikisql'" in result.output


def test_dataset_rejections_name_the_dataset_file_and_entry(tmp_path):
    from benchsmith.construction.nl2api import build_dataset

    root = materialize_example("spider", tmp_path / "spider")
    report = build_dataset(root, "spider", tmp_path / "out", BuildOptions())
    assert [(r["id"], r["entry"], r["code"]) for r in report["rejections"]] == [
        ("spider-dev-8", 8, "bare_column"),
        ("spider-dev-13", 13, "bare_column"),
    ]
    assert all(r["file"] == str(root / "dev.json") for r in report["rejections"])


def test_a_query_that_times_out_is_rejected_and_the_rest_is_built(tmp_path):
    from benchsmith.construction.nl2api import build_dataset

    root = tmp_path / "dir"
    root.mkdir()
    con = sqlite3.connect(root / "big.sqlite")
    con.execute("CREATE TABLE n (i INTEGER PRIMARY KEY)")
    con.executemany("INSERT INTO n VALUES (?)", [(i,) for i in range(2000)])
    con.commit()
    con.close()
    rows = [
        {"id": "fast", "question": "How many numbers?", "sql": "SELECT COUNT(*) FROM n"},
        {
            "id": "slow",
            "question": "How many triples?",
            "sql": "SELECT COUNT(*) FROM n a, n b, n c WHERE a.i + b.i > c.i",
        },
    ]
    (root / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    report = build_dataset(root, "sqlite-dir", tmp_path / "out", BuildOptions(timeout_s=0.3))
    assert report["verified"] == 1
    assert [(r["id"], r["code"]) for r in report["rejections"]] == [("slow", "sql_timeout")]


def test_bird_difficulty_splits_the_eval_scores(tmp_path):
    from benchsmith.construction.nl2api import build_dataset
    from benchsmith.eval import run_selftest

    root = materialize_example("bird", tmp_path / "bird")
    build_dataset(root, "bird", tmp_path / "out", BuildOptions())
    scores = run_selftest("nl2api", tmp_path / "out" / "merged", tmp_path / "selftest")
    assert scores["records"] == 40 and scores["gold_failing"] == 0
    cases = [json.loads(x) for x in (tmp_path / "out" / "merged" / "samples.jsonl").read_text("utf-8").splitlines()]
    levels = Counter(next(c for c in s["categories"] if c.startswith("difficulty:")).split(":")[1] for s in cases)
    assert {c: b["records"] for c, b in scores["by_category"].items()} == {f"slot/{k}": v for k, v in levels.items()}
    assert set(levels) == {"simple", "moderate", "challenging"} and scores["completion_rate"] == 1.0
