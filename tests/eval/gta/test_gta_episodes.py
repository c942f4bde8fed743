"""GTA end to end on cases derived from a split: solo episodes whose calls really run with the
split's tools on its database; a scripted assistant that replays the gold calls (passing outputs
on by the labels the environment reports) and answers with the gold answer passes every case."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from pathlib import Path

from episode_helpers import Reply
from helpers import build_slot_split, pair_lines

from benchsmith.eval import TaskOptions, derive_all, get_benchmark, get_task
from benchsmith.eval.tasks import CallContext


def test_gta_end_to_end_runs_the_splits_tools(tmp_path: Path) -> None:
    split = build_slot_split(tmp_path, pair_lines()[:12])
    derive_all(split, tmp_path / "derived")
    root = tmp_path / "derived" / "gta"
    dataset = json.loads((root / "dataset.json").read_text())
    task = get_task("gta")(root, TaskOptions(calling="tools"))
    cases = [c for c in task.load() if c.category == "e2e"]
    assert cases and all(task.is_episode(c) for c in cases)
    bench = get_benchmark("gta")
    verdicts = Counter()
    for case in cases:
        dialogs = dataset[case.meta["sample"]]["dialogs"]
        gold_labels = [m["label"] for m in dialogs if m.get("role") == "tool" and m.get("label")]
        gold = case.gold["tool_calls"]
        gt = case.gold["gt_answer"]
        answer = " ".join(group[0] for group in gt["whitelist"]) if isinstance(gt, dict) and gt.get("whitelist") else ""

        class Gold:
            async def acomplete(self, messages, gold=gold, gold_labels=gold_labels, answer=answer, **kw):
                results = [m["content"] for m in messages if m["role"] == "tool"]
                kept = [re.match(r"\(kept as \$(\w+)\$\)", r).group(1) for r in results if r.startswith("(kept")]
                if len(results) < len(gold):
                    args = json.dumps(gold[len(results)]["arguments"])
                    for g, k in zip(gold_labels, kept):
                        args = args.replace(f"${g}", f"${k}")
                    return Reply(
                        tool_calls=[
                            {
                                "id": f"x{len(results)}",
                                "name": gold[len(results)]["name"],
                                "arguments": json.loads(args),
                            }
                        ]
                    )
                return Reply(text=answer)

        out = asyncio.run(task.solve(case, CallContext(Gold(), "tools", {}, Counter())))
        pred = json.loads(out.result)
        assert pred["episode"]["failed_calls"] == 0, (case.id, pred["episode"])
        assert pred["episode"]["end"] == "assistant_done" and len(pred["tool_calls"]) == len(gold)
        verdicts[bench.score(case, out.result, "strict").ok] += 1
    assert verdicts == {True: len(cases)}


def test_gtas_own_data_has_no_executable_tools_so_e2e_is_not_run(tmp_path: Path) -> None:
    split = build_slot_split(tmp_path, pair_lines()[:4])
    derive_all(split, tmp_path / "derived")
    (tmp_path / "derived" / "gta" / "derive_report.json").unlink()  # as GTA's own dataset.json: no source split
    cases = get_task("gta")(tmp_path / "derived" / "gta", TaskOptions()).load()
    assert cases and not any(c.category == "e2e" for c in cases)
