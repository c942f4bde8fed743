"""Case derivation from a split's verified gold chains: GTA, ToolAssess, ACEBench special (and the
T-Eval wrapper). Every derived record loads with benchsmith's own loader and its gold scores the maximum."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from helpers import TESTS

from benchsmith.construction.variants import IRRELEVANT_GOLD
from benchsmith.eval import DERIVERS, get_benchmark, score_cases
from benchsmith.eval.acebench import derive_acebench_special
from benchsmith.eval.derive import DERIVED_BENCHMARK, load_split
from benchsmith.eval.gta import derive_gta
from benchsmith.eval.toolassess import derive_toolassess
from benchsmith.schemas import UserError

ROOT = TESTS.parent
PAIRS = ROOT / "construction" / "nl2api" / "data" / "chinook_pairs.jsonl"
N_PAIRS = 12


@pytest.fixture(scope="module")
def small_split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db

    root = tmp_path_factory.mktemp("derive")
    pairs = root / "pairs.jsonl"
    lines = [line for line in PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()][:N_PAIRS]
    pairs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    split = root / "split"
    report = build_split(chinook_db(), pairs, split, BuildOptions(style="slot", copy_db=False))
    assert report["verified"] == N_PAIRS
    return split


@pytest.fixture(scope="module")
def derived(small_split: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict]]:
    out = tmp_path_factory.mktemp("derived")
    reports = {
        name: DERIVERS[name](small_split, out / name, seed=0) for name in ("gta", "toolassess", "acebench_special")
    }
    return out, reports


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", ["gta", "toolassess", "acebench_special"])
@pytest.mark.parametrize("mode", ["strict", "official"])
def test_every_record_loads_and_its_gold_scores_the_maximum(derived, name: str, mode: str) -> None:
    out, _ = derived
    bench = get_benchmark(DERIVED_BENCHMARK[name])
    cases = bench.load(out / name)
    assert cases
    run = score_cases(bench, cases, {c.id: bench.gold_prediction(c) for c in cases}, mode)
    bad = [(r.id, r.error_type, r.reason) for r in run.records if not r.ok or r.score < 1.0]
    assert not bad, bad[:5]


def test_reports_account_for_every_sample(derived, small_split: Path) -> None:
    _, reports = derived
    _, samples = load_split(small_split)
    n = len(samples)
    for name, report in reports.items():
        assert report["source"]["samples"] == n
        for s in report["skipped"]:
            assert {"sample", "category", "reason"} <= set(s), (name, s)
    gta = reports["gta"]
    assert gta["counts"]["samples"] + len(gta["skipped"]) == n
    ace = reports["acebench_special"]["counts"]
    skipped = Counter(s["category"] for s in reports["acebench_special"]["skipped"])
    for cat in ("special_incomplete", "special_error_param", "special_irrelevant"):
        assert ace[cat] + skipped[cat] == n, cat
    assert ace["special_irrelevant"] == n and ace["special_incomplete"] >= 4 and ace["special_error_param"] >= 4


def test_gta_layout_and_step_prefixes(derived, small_split: Path) -> None:
    out, reports = derived
    data = json.loads((out / "gta" / "dataset.json").read_text(encoding="utf-8"))
    id_map = json.loads((out / "gta" / "id_map.json").read_text(encoding="utf-8"))
    _, samples = load_split(small_split)
    by_id = {s.id: s for s in samples}
    assert list(data) == [str(i) for i in range(len(data))] and id_map == reports["gta"]["id_map"]
    assert set(id_map) == set(data) and set(id_map.values()) <= set(by_id)
    assert reports["gta"]["files"] == ["dataset.json", "id_map.json", "toolmeta.json"]
    cases = get_benchmark("gta").load(out / "gta")
    counts = Counter(c.category for c in cases)
    assert counts["e2e"] == counts["step:answer"] == len(data) == reports["gta"]["counts"]["samples"]
    assert (
        counts["step:tool"]
        == reports["gta"]["counts"]["step:tool"]
        == sum(len([st for st in by_id[sid].gold if st.call and not st.hidden]) for sid in id_map.values())
    )
    for c in cases:
        sample = data[c.meta["sample"]]
        assert c.meta["source_id"] == id_map[c.meta["sample"]]
        assert set(sample) == {"tools", "files", "dialogs", "gt_answer"}
        assert set(sample["gt_answer"]) == {"whitelist", "blacklist"}
        if c.category.startswith("step:"):
            assert c.input["dialogs"] == sample["dialogs"][: c.meta["turn"]]
        else:
            gold = [
                {"name": st.call.name, "arguments": st.call.arguments}
                for st in by_id[c.meta["source_id"]].gold
                if st.call and not st.hidden
            ]
            assert c.gold["tool_calls"] == gold and len(c.input["dialogs"]) == 1
    first = next(iter(data.values()))
    assert "$data_1$" in first["dialogs"][0]["content"]  # the hidden set-up is named for the model
    assert all(m.get("label") for m in first["dialogs"] if m["role"] == "tool")


def test_gta_files_are_read_by_gtas_own_code(derived) -> None:
    """What GTA's loader and executor need (checked against their code in a scratch run; see
    docs/eval/derive.md): integer ids, AgentLego tool metadata with its own keys and types, a
    category GTA's end-to-end F1 knows for every tool, and gold calls that its executor runs."""
    from benchsmith.eval.gta import CATEGORIES, GTA_TYPES, check_call

    out, _ = derived
    data = json.loads((out / "gta" / "dataset.json").read_text(encoding="utf-8"))
    toolmeta = json.loads((out / "gta" / "toolmeta.json").read_text(encoding="utf-8"))
    assert all(str(int(k)) == k for k in data)
    names = {t["name"] for s in data.values() for t in s["tools"]}
    assert set(toolmeta) == names
    for meta in toolmeta.values():
        assert list(meta) == ["name", "description", "inputs", "outputs"]
        for p in meta["inputs"] + meta["outputs"]:
            assert list(p) == ["type", "name", "description", "optional", "default", "filetype"]
            assert p["type"] in GTA_TYPES
    assert {t["category"] for s in data.values() for t in s["tools"]} <= set(CATEGORIES)
    kinds = {p["type"] for m in toolmeta.values() for p in m["inputs"]}
    assert kinds == {"text", "int", "bool"}  # SLOT: strings/arrays/objects/unions as text, limits int, distinct bool
    for c in get_benchmark("gta").load(out / "gta"):
        for call in c.gold["tool_calls"]:
            assert check_call(call, c.gold["specs"]) is None, (c.id, call)


def test_toolassess_classes_selection_and_scenarios(derived, small_split: Path) -> None:
    out, reports = derived
    _, samples = load_split(small_split)
    n = len(samples)
    counts = reports["toolassess"]["counts"]
    assert counts["awareness"] == {"cannot_complete": n, "no_tool": n, "requires_tool": n}
    labels = counts["selection_labels"]
    assert labels["true_tool"] == n and 0 < labels["false_tool"] <= n  # a false-tool record needs 2 distractors
    assert counts["selection"] == labels["true_tool"] + labels["false_tool"]
    assert counts["multi"]["awareness"] >= 3 and counts["multi"]["selection"] >= 3
    assert set(counts["multi_subtasks"]) <= {"2", "3"}
    cases = get_benchmark("toolassess").load(out / "toolassess")
    cats = Counter(c.category for c in cases)
    assert cats["awareness"] == 3 * n and cats["selection"] == counts["selection"]
    assert cats["multi:awareness"] == counts["multi"]["awareness"]
    assert cats["multi:selection"] == counts["multi"]["selection"]
    queries = {s.query for s in samples}
    for c in cases:
        if c.category == "awareness":
            assert (c.gold["label"] == "requires_tool") == (
                c.input["query"] in queries or any(c.input["query"].startswith(q + "\n(Hint:") for q in queries)
            )
        if c.category == "selection":
            assert len(c.gold["answer_tools"]) in (0, 1) and 2 <= len(c.gold["candidates"]) <= 4
        if c.category.startswith("multi:"):
            assert 2 <= len(c.gold["subtasks"]) <= 3
            for sub in c.input["subtasks"]:  # nothing of the answer reaches the model
                assert not {"label", "answer_tools", "meta"} & set(sub)
    # the selection gold is the first gold tool of the source sample
    by_id = {s.id: s for s in samples}
    for line in (out / "toolassess" / "selection.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        sample = by_id[rec["meta"]["source_sample"]]
        first = next(st.call.name for st in sample.gold if st.call)
        if rec["meta"]["label"] == "true_tool":
            assert rec["answer_tools"] == [first]
        else:  # no candidate is a tool of the gold chain
            assert rec["answer_tools"] == [] and not {t["name"] for t in rec["tools"]} & {
                st.call.name for st in sample.gold if st.call
            }


def test_acebench_special_records(derived, small_split: Path) -> None:
    out, reports = derived
    folder = out / "acebench_special"
    sources = reports["acebench_special"]["sources"]
    _, samples = load_split(small_split)
    by_id = {s.id: s for s in samples}
    cases = get_benchmark("acebench").load(folder)
    assert {c.category for c in cases} == {"special_incomplete", "special_error_param", "special_irrelevant"}
    for c in cases:
        src = by_id[sources[c.id]["source_sample"]]
        question = c.input["question"]
        assert question.startswith("user: ")
        fnames = {f["name"]: f for f in c.input["function"]}
        if c.category == "special_incomplete":
            ((api, params),) = c.gold.items()
            assert api in fnames and params[0] in fnames[api]["parameters"]["properties"]
            call = next(
                st.call for st in src.gold if st.call and st.call.name == api and params[0] in st.call.arguments
            )
            value = call.arguments[params[0]]
            assert f"'{value}'" not in question and question != f"user: {src.query}"
        elif c.category == "special_error_param":
            ((param, values),) = c.gold.items()
            assert values[0] in question and values[0] not in (src.query or "")
            assert any(param in fnames[f]["parameters"]["properties"] for f in fnames)
        else:
            assert c.gold == IRRELEVANT_GOLD and src.query not in question


def test_deterministic_and_seeded(small_split: Path, tmp_path: Path) -> None:
    for name, fn in DERIVERS.items():
        if name == "teval":
            continue
        fn(small_split, tmp_path / "a" / name, seed=0)
        fn(small_split, tmp_path / "b" / name, seed=0)
        a, b = _files(tmp_path / "a" / name), _files(tmp_path / "b" / name)
        assert a == b, name
    derive_toolassess(small_split, tmp_path / "s1", seed=1)
    assert _files(tmp_path / "s1") != _files(tmp_path / "a" / "toolassess")
    bench = get_benchmark("toolassess")
    cases = bench.load(tmp_path / "s1")
    run = score_cases(bench, cases, {c.id: bench.gold_prediction(c) for c in cases}, "strict")
    assert all(r.ok for r in run.records)


def test_teval_wrapper_and_errors(small_split: Path, tmp_path: Path) -> None:
    report = DERIVERS["teval"](small_split, tmp_path / "teval", seed=3)
    assert report["records"]["plan"]["json"] == N_PAIRS
    # the split has no database copy (copy_db=False): its manifest names the one it was built from
    assert report["executed"] and set(report["review_labels"]) == {"A", "B", "C", "D", "E"}
    assert report["review_classes"]["success"] == report["review_classes"]["internal_error"] > 0
    teval = get_benchmark("teval")
    cases = teval.load(tmp_path / "teval")
    gold = {c.id: teval.gold_prediction(c) for c in cases if c.category.startswith(("review/", "instruct/"))}
    run = score_cases(teval, [c for c in cases if c.id in gold], gold, "strict")
    assert all(r.ok for r in run.records)
    for fn in (derive_gta, derive_toolassess, derive_acebench_special):
        with pytest.raises(UserError):
            fn(tmp_path / "nowhere", tmp_path / "x")
