"""Exporters: a benchsmith split written as BFCL / ACEBench / GTA (/ T-Eval), read back by the
benchmark's own loader, and the gold passing the strict self-test on every exported record."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from helpers import TESTS

from benchsmith.eval import EXPORTERS, get_benchmark, score_cases
from benchsmith.eval._private.export import REASONS
from benchsmith.eval.acebench import acebench_answer, export_acebench
from benchsmith.eval.bfcl import bfcl_answer, bfcl_function, export_bfcl
from benchsmith.eval.gta import export_gta, gta_aliases, gta_answer
from benchsmith.schemas import ExactAnswer, Sample, Tool, ToolCall, UserError, write_jsonl

ROOT = TESTS.parent
PAIRS = ROOT / "construction" / "nl2api" / "data" / "chinook_pairs.jsonl"
# 8 chains and the 2 single-call questions (average invoice, distinct composers)
PAIR_IDS = [f"chinook-{n:03d}" for n in (1, 2, 3, 4, 5, 6, 7, 8, 20, 23)]
FORMATS = ("bfcl", "acebench", "gta")


@pytest.fixture(scope="module")
def splits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db

    root = tmp_path_factory.mktemp("export")
    rows = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if r["id"] in PAIR_IDS]
    assert len(rows) == len(PAIR_IDS)
    pairs = root / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = {}
    for style in ("slot", "rest"):
        report = build_split(chinook_db(), pairs, root / style, BuildOptions(style=style, copy_db=False))
        assert report["verified"] == len(PAIR_IDS), report
        out[style] = root / style
    return out


# ---- a hand-made split covering the categories and skip reasons Chinook does not -------------------
PROV = {"source": "test", "method": "manual", "created_at": datetime(2024, 1, 1, tzinfo=UTC)}
WEATHER = Tool(
    name="get_weather",
    description="Weather of a city.",
    parameters={
        "properties": {
            "city": {"type": "string", "description": "City name."},
            "unit": {"type": "string", "enum": ["C", "F"], "default": "C", "description": "Unit."},
            "days": {"type": ["integer", "null"], "description": "Days ahead."},
        },
        "required": ["city"],
    },
)
TIME = Tool(
    name="get_time",
    description="Local time of a city.",
    parameters={
        "properties": {
            "city": {"type": "string"},
            "where": {
                "type": "object",
                "description": "Place.",
                "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}, "name": {"type": "string"}},
                "required": ["lat", "lon"],
            },
        },
        "required": ["city"],
    },
)
PING = Tool(name="ping", description="Ping.")


def _step(name: str, args: dict[str, Any], label: str | None = None, obs: Any = "ok") -> dict[str, Any]:
    return {"call": {"name": name, "arguments": args, "label": label}, "observation": obs}


def _sample(sid: str, tools: list[Tool], gold: list[dict[str, Any]], answer: Any = None, **kw: Any) -> Sample:
    verification = kw.pop("verification", {"status": "verified", "method": "test"})
    answer = answer if answer is not None else {"kind": "exact", "value": [["sunny"]]}
    q = {} if "dialogue" in kw else {"query": f"question {sid}"}
    return Sample(id=sid, tools=tools, gold=gold, answer=answer, provenance=PROV, verification=verification, **q, **kw)


@pytest.fixture(scope="module")
def handmade(tmp_path_factory: pytest.TempPathFactory) -> Path:
    split = tmp_path_factory.mktemp("handmade")
    samples = [
        _sample("one_tool", [WEATHER], [_step("get_weather", {"city": "Oslo"})]),
        _sample(
            "par",
            [WEATHER],
            [
                _step("get_weather", {"city": "Oslo", "unit": "F"}, "a"),
                _step("get_weather", {"city": "Rome", "days": 2}, "b"),
            ],
        ),
        _sample(
            "par_multi",
            [WEATHER, TIME, PING],
            [
                _step("get_weather", {"city": "Oslo"}),
                _step("get_time", {"city": "Oslo", "where": {"lat": 59.9, "lon": 10.7}}),
                _step("ping", {}),
            ],
            answer={"kind": "whitelist", "whitelist": [["sunny", "clear"]]},
        ),
        _sample(
            "chain",
            [WEATHER, TIME],
            [_step("get_time", {"city": "Oslo"}, "t"), _step("get_weather", {"city": "$t.city$"}, "w")],
            context="Oslo is in Norway.",
        ),
        _sample(
            "dup",
            [WEATHER],
            [_step("get_weather", {"city": "Oslo"}, "x"), _step("get_weather", {"city": "$x$"}, "y")],
            answer={"kind": "reference", "references": ["It is sunny."]},
        ),
        _sample("empty_str", [WEATHER], [_step("get_weather", {"city": ""})]),
        _sample("no_answer", [WEATHER], [_step("get_weather", {"city": "Oslo"})], answer={"kind": "none"}),
        _sample(
            "rejected",
            [WEATHER],
            [_step("get_weather", {"city": "Oslo"})],
            verification={"status": "rejected", "method": "test"},
        ),
        _sample("no_calls", [WEATHER], []),
        _sample(
            "chat",
            [WEATHER],
            [_step("get_weather", {"city": "Oslo"})],
            dialogue=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        ),
    ]
    write_jsonl(split / "samples.jsonl", samples)
    return split


# ---- helpers ------------------------------------------------------------------------------------------
def _selftest(fmt: str, data: Path, mode: str = "strict"):
    bench = get_benchmark(fmt)
    cases = bench.load(data)
    run = score_cases(bench, cases, {c.id: bench.gold_prediction(c) for c in cases}, mode)
    return cases, run


def _check_files(out: Path, report: dict[str, Any]) -> None:
    for name in report["written"]:
        path = out / name
        assert path.is_file(), name
        text = path.read_text(encoding="utf-8")
        if name.startswith(("BFCL_v4_", "data_", "possible_answer/")):
            rows = [json.loads(line) for line in text.splitlines()]
            assert rows and all(isinstance(r, dict) and isinstance(r["id"], str) for r in rows)
        else:
            assert isinstance(json.loads(text), dict)
    assert json.loads((out / "export_report.json").read_text(encoding="utf-8")) == report


def _check_report(report: dict[str, Any]) -> None:
    assert report["total"] == sum(report["records"].values())
    assert report["total"] + len(report["skipped"]) == report["samples"]
    for s in report["skipped"]:
        assert s["reason"] in REASONS and s["sample"] and s["message"]


# ---- round trips on Chinook splits ----------------------------------------------------------------------
@pytest.mark.parametrize("style", ["slot", "rest"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_gold_passes_strict(splits: dict[str, Path], tmp_path: Path, fmt: str, style: str) -> None:
    out = tmp_path / fmt
    report = EXPORTERS[fmt](splits[style], out)
    _check_report(report)
    _check_files(out, report)
    cases, run = _selftest(fmt, out)
    failures = [(r.id, r.error_type, r.reason) for r in run.records if not r.ok]
    assert not failures
    id_map = json.loads((out / "id_map.json").read_text(encoding="utf-8"))
    exported = {c.id for c in cases} if fmt != "gta" else {c.meta["sample"] for c in cases}
    assert exported == set(id_map) and len(id_map) == report["total"]


def test_bfcl_skips_chains_and_keeps_single_calls(splits: dict[str, Path], tmp_path: Path) -> None:
    report = export_bfcl(splits["slot"], tmp_path / "b")
    assert report["records"] == {"multiple": 2}  # the two single-call questions
    assert report["skipped_by_reason"] == {"multi_step_chain": 8}
    assert all(s["reason"] == "multi_step_chain" for s in report["skipped"])
    rest = export_bfcl(splits["rest"], tmp_path / "r")
    assert rest["records"] == {"multiple": 10} and not rest["skipped"]


def test_acebench_chains_are_parallel_records_with_positional_labels(splits: dict[str, Path], tmp_path: Path) -> None:
    report = export_acebench(splits["slot"], tmp_path / "a")
    assert report["records"] == {"normal_single_turn_parallel_function": 8, "normal_single_turn_single_function": 2}
    cases, _ = _selftest("acebench", tmp_path / "a")
    chained = [c for c in cases if c.category.endswith("parallel_function")]
    assert all("$call_1$" in json.dumps(c.gold) for c in chained)
    assert all("$call_K$" in c.input["question"] and c.input["question"].startswith("user: ") for c in cases)
    assert all("$data_1$ = the output of initialize_active_data" in c.input["question"] for c in cases)


def test_gta_dialogs_and_whitelist(splits: dict[str, Path], tmp_path: Path) -> None:
    report = export_gta(splits["slot"], tmp_path / "g")
    data = json.loads((tmp_path / "g" / "dataset.json").read_text(encoding="utf-8"))
    ids = {v: k for k, v in report["id_map"].items()}  # GTA's loader reads integer ids: "0", "1", ...
    assert list(data) == [str(i) for i in range(len(data))]
    samples = [json.loads(line) for line in (splits["slot"] / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    for s in samples:
        d = data[ids[s["id"]]]
        roles = [m["role"] for m in d["dialogs"]]
        n = len(s["gold"])
        assert roles == ["user"] + ["assistant", "tool"] * n + ["assistant"]
        assert [m["content"]["content"] for m in d["dialogs"][2::2][:n]] == [
            json.dumps(st["observation"], ensure_ascii=False) for st in s["gold"]
        ]
        assert all(m["thought"] for m in d["dialogs"][1:-1:2])
        cells = {str(c) for row in s["answer"]["value"] for c in row if c is not None}
        assert {g[0] for g in d["gt_answer"]["whitelist"]} == cells
        assert {t["name"] for t in d["tools"]} == {t["name"] for t in s["tools"]}


@pytest.mark.parametrize("style", ["slot", "rest"])
def test_gta_files_are_read_by_gtas_own_code(splits: dict[str, Path], tmp_path: Path, style: str) -> None:
    """Integer ids with the mapping kept, AgentLego tool metadata (its keys, its types), a category
    GTA's end-to-end F1 knows, and gold calls GTA's executor runs (checked against GTA's code in a
    scratch run, see docs/eval/export.md)."""
    from benchsmith.eval.gta import CATEGORIES, GTA_TYPES, check_call

    report = export_gta(splits[style], tmp_path / "g")
    data = json.loads((tmp_path / "g" / "dataset.json").read_text(encoding="utf-8"))
    toolmeta = json.loads((tmp_path / "g" / "toolmeta.json").read_text(encoding="utf-8"))
    assert json.loads((tmp_path / "g" / "id_map.json").read_text(encoding="utf-8")) == report["id_map"]
    assert sorted(report["id_map"], key=int) == list(data) and "toolmeta.json" in report["written"]
    assert set(toolmeta) == {t["name"] for s in data.values() for t in s["tools"]}
    for meta in toolmeta.values():
        assert list(meta) == ["name", "description", "inputs", "outputs"]
        assert all(
            list(p) == ["type", "name", "description", "optional", "default", "filetype"] and p["type"] in GTA_TYPES
            for p in meta["inputs"] + meta["outputs"]
        )
    assert {t["category"] for s in data.values() for t in s["tools"]} <= set(CATEGORIES)
    cases = get_benchmark("gta").load(tmp_path / "g")
    assert {c.meta["source_id"] for c in cases} == set(report["id_map"].values())
    for c in cases:
        for call in c.gold["tool_calls"]:
            assert check_call(call, c.gold["specs"]) is None, (c.id, call)


# ---- the hand-made split: categories and skip reasons -----------------------------------------------------
def test_handmade_bfcl(handmade: Path, tmp_path: Path) -> None:
    report = export_bfcl(handmade, tmp_path / "b")
    _check_report(report)
    assert report["records"] == {"parallel": 1, "parallel_multiple": 1, "simple_python": 2}
    assert {s["sample"]: s["reason"] for s in report["skipped"]} == {
        "chain": "multi_step_chain",
        "dup": "multi_step_chain",
        "empty_str": "empty_string_value",
        "rejected": "not_verified",
        "no_calls": "no_gold_calls",
        "chat": "unsupported_dialogue",
    }
    for mode in ("strict", "official"):
        _, run = _selftest("bfcl", tmp_path / "b", mode)
        assert all(r.ok for r in run.records), [(r.id, r.reason) for r in run.records if not r.ok]


def test_handmade_acebench_and_gta(handmade: Path, tmp_path: Path) -> None:
    ace = export_acebench(handmade, tmp_path / "a")
    _check_report(ace)
    assert ace["records"] == {"normal_single_turn_parallel_function": 4, "normal_single_turn_single_function": 3}
    cases, run = _selftest("acebench", tmp_path / "a")
    assert all(r.ok for r in run.records)
    ids = json.loads((tmp_path / "a" / "id_map.json").read_text(encoding="utf-8"))
    dup = next(c for c in cases if ids[c.id] == "dup")
    assert dup.gold == {"get_weather_1": {"city": "Oslo"}, "get_weather_2": {"city": "$call_1$"}}
    chain = next(c for c in cases if ids[c.id] == "chain")
    assert list(chain.gold.values())[1] == {"city": "$call_1.city$"}
    assert "(Hint: Oslo is in Norway.)" in chain.input["question"]
    ping = next(f for f in next(c for c in cases if ids[c.id] == "par_multi").input["function"] if f["name"] == "ping")
    assert ping["parameters"] == {}

    gta = export_gta(handmade, tmp_path / "g")
    _check_report(gta)
    assert gta["records"] == {"gta": 6} and gta["skipped_by_reason"] == {
        "no_answer": 1,
        "no_gold_calls": 1,
        "not_verified": 1,
        "unsupported_dialogue": 1,
    }
    _, run = _selftest("gta", tmp_path / "g")
    assert all(r.ok for r in run.records)
    data = json.loads((tmp_path / "g" / "dataset.json").read_text(encoding="utf-8"))
    gta_ids = {v: k for k, v in gta["id_map"].items()}
    assert data[gta_ids["par_multi"]]["gt_answer"] == {"whitelist": [["sunny", "clear"]], "blacklist": None}
    assert data[gta_ids["dup"]]["gt_answer"] == ["It is sunny."]
    weather = json.loads((tmp_path / "g" / "toolmeta.json").read_text(encoding="utf-8"))["get_weather"]
    assert [(p["name"], p["type"], p["optional"]) for p in weather["inputs"]] == [
        ("city", "text", False),
        ("unit", "text", True),
        ("days", "text", True),
    ]  # integer|null: any value runs


# ---- mappings -------------------------------------------------------------------------------------------
def test_bfcl_function_and_answer_mapping() -> None:
    fn = bfcl_function(TIME)
    assert fn["parameters"]["type"] == "dict" and fn["parameters"]["required"] == ["city"]
    where = fn["parameters"]["properties"]["where"]
    assert where["type"] == "dict" and where["properties"]["lat"] == {"type": "float"}
    assert where["required"] == ["lat", "lon"] and where["description"] == "Place."
    w = bfcl_function(WEATHER)["parameters"]["properties"]
    assert w["unit"] == {"type": "string", "enum": ["C", "F"], "default": "C", "description": "Unit."}
    assert w["days"]["type"] == "any" and w["days"]["description"] == "Days ahead. (accepts: integer | null)"
    answer = bfcl_answer(ToolCall(name="get_time", arguments={"city": "Oslo", "where": {"lat": 1.0, "lon": 2.0}}), fn)
    assert answer == {"get_time": {"city": ["Oslo"], "where": [{"lat": [1.0], "lon": [2.0], "name": [""]}]}}
    assert bfcl_answer(ToolCall(name="get_weather", arguments={"city": "Oslo"}), bfcl_function(WEATHER)) == {
        "get_weather": {"city": ["Oslo"], "unit": ["", "C"], "days": [""]}
    }


def test_acebench_duplicate_key_collision() -> None:
    from benchsmith.eval.export import SkipSample

    calls = [ToolCall(name="f", arguments={}), ToolCall(name="f", arguments={})]
    assert list(acebench_answer(calls, {"f"})) == ["f_1", "f_2"]
    with pytest.raises(SkipSample) as exc:
        acebench_answer(calls, {"f", "f_1"})
    assert exc.value.reason == "ambiguous_duplicate_name"


def test_gta_answer_aliases() -> None:
    gt, text = gta_answer(ExactAnswer(value=[["Google Inc.", 3.0], [1234, None], ["google inc.", 0.123456]]))
    assert gt == {
        "whitelist": [["Google Inc.", "Google Inc"], ["3.0", "3"], ["1234", "1,234"], ["0.123456", "0.12"]],
        "blacklist": None,
    }
    assert text == "The answer is: Google Inc.; 3.0; 1234; 0.123456."
    assert gta_aliases(True) == ["True"] and gta_aliases("") == [] and gta_aliases([1]) == []


# ---- files ----------------------------------------------------------------------------------------------
def test_deterministic_and_stale_files(handmade: Path, tmp_path: Path) -> None:
    for fmt in FORMATS:
        a, b = EXPORTERS[fmt](handmade, tmp_path / f"{fmt}1"), EXPORTERS[fmt](handmade, tmp_path / f"{fmt}2")
        for name in a["written"]:
            if name != "export_report.json":
                assert (tmp_path / f"{fmt}1" / name).read_bytes() == (tmp_path / f"{fmt}2" / name).read_bytes()
        assert a["records"] == b["records"]
    stale = tmp_path / "stale"
    (stale / "possible_answer").mkdir(parents=True)
    (stale / "BFCL_v4_live_simple.json").write_text("", encoding="utf-8")
    with pytest.raises(UserError, match="BFCL_v4_live_simple"):
        export_bfcl(handmade, stale)
    with pytest.raises(UserError, match="samples.jsonl"):
        export_gta(tmp_path / "nowhere", tmp_path / "x")


def test_teval_wrapper(splits: dict[str, Path], tmp_path: Path) -> None:
    report = EXPORTERS["teval"](splits["slot"], tmp_path / "t")
    assert set(EXPORTERS) == {"bfcl", "acebench", "gta", "teval"}
    assert report["format"] == "teval" and report["skipped"] == [] and report["total"] > 0
    assert "derive_report.json" in report["written"] and report["records"]["plan/json"] == len(PAIR_IDS)
    assert all((tmp_path / "t" / name).is_file() for name in report["written"])
    assert get_benchmark("teval").load(tmp_path / "t")


def test_cli_export(splits: dict[str, Path], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from benchsmith.cli import app

    split = next(iter(splits.values()))
    ok = CliRunner().invoke(
        app,
        ["eval", "export", "--split", str(split), "--out", str(tmp_path / "gta")],
        env={"BENCHSMITH_EXPORT_TO": "gta"},
    )
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output.strip().splitlines()[-1])["format"] == "gta"
    assert (tmp_path / "gta" / "dataset.json").is_file()
    bad = CliRunner().invoke(
        app, ["eval", "export", "--split", str(split), "--to", "xml", "--out", str(tmp_path / "x")]
    )
    assert bad.exit_code == 2 and "unknown --to 'xml'" in bad.output and not (tmp_path / "x").exists()
    old = CliRunner().invoke(  # the old spelling works for one release, with one warning line
        app, ["eval", "export", "--split", str(split), "--format", "gta", "--out", str(tmp_path / "old")]
    )
    assert old.exit_code == 0 and "--format is renamed --to" in old.output, old.output
    assert (tmp_path / "old" / "dataset.json").is_file()
