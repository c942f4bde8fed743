"""The whole verification protocol against a real Label Studio server (session fixture), with
reviewers simulated by API annotations from distinct users: round 1 with two reviewers,
adjudication, a fix that is re-executed and re-reviewed in round 2, and a finalized split with a
datasheet. Also: pushing twice never duplicates tasks; a server that is down gives one clear
error and a later re-run finishes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from helpers import build_slot_split, pair_lines

from benchsmith.annotation._private.finalize import finalize
from benchsmith.annotation._private.lsclient import LabelStudio, LabelStudioDown
from benchsmith.annotation._private.simulate import simulate
from benchsmith.annotation._private.workflow import Workspace
from benchsmith.schemas import Sample, SplitManifest, read_json, read_jsonl


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_slot_split(tmp_path_factory.mktemp("annot"), pair_lines()[:6])


# what each item's reviewers say, by position in the split: (reviewer 1, reviewer 2, adjudicator)
PLAN = {
    0: ("accept", "accept", None),  # accepted in round 1
    1: ("reject", "reject", None),  # rejected in round 1
    2: ("accept", "reject", "accept"),  # disagreement -> adjudicated -> accepted
    3: ("fix", "accept", "fix-good"),  # a fix -> re-executed -> round 2 -> accepted
    4: ("accept", "fix", "fix-bad"),  # a fix that does not execute -> rejected
    5: ("reject", "accept", "reject"),  # adjudicator rejects
}


def make_policy(order: list[str], split: Path):
    samples = {s.id: s for s in read_jsonl(split / "samples.jsonl", Sample)}

    def policy(stage: str, reviewer: int, item: dict) -> dict:
        pos = order.index(item["sample_id"])
        if item["round"] > 1:
            return {"decision": "accept"}
        plan = PLAN[pos]
        if stage == "review":
            d = plan[reviewer - 1]
            return {
                "decision": d,
                "reasons": ["wrong_call"] if d == "reject" else [],
                "correction": "see adjudication" if d == "fix" else "",
            }
        if plan[2] == "fix-good":
            s = samples[item["sample_id"]]
            calls = [{"name": g.call.name, "arguments": g.call.arguments, "label": g.call.label} for g in s.gold]
            return {
                "decision": "fix",
                "correction": json.dumps({"query": s.query.rstrip("?") + ", please?", "gold": calls}),
            }
        if plan[2] == "fix-bad":
            return {
                "decision": "fix",
                "correction": json.dumps(
                    {
                        "gold": [
                            {
                                "name": "aggregate_data",
                                "arguments": {"data_source": "$data_1$", "aggregation": "median"},
                            }
                        ]
                    }
                ),
            }
        return {"decision": plan[2], "reasons": ["wrong_answer"] if plan[2] == "reject" else []}

    return policy


def test_the_full_protocol_runs_to_a_finalized_split(label_studio, split: Path, tmp_path: Path) -> None:
    ls = LabelStudio(label_studio.base_url, label_studio.token)
    ws = Workspace(tmp_path / "ws")
    assert ws.load(split) == 6 and ws.load(split) == 0  # loading twice adds nothing
    order = [it["sample_id"] for it in ws.store.items()]
    policy = make_policy(order, split)

    first = ws.push(ls, "review")
    again = ws.push(ls, "review")
    assert first.pushed == 6 and again.pushed == 0 and again.already_there == 0
    (pid,) = first.projects.values()
    assert sorted(Counter(t.data["bs_id"] for t in ls.tasks(pid)).values()) == [1] * 6  # no duplicates on the server

    assert simulate(ws, ls, policy) == {"review": 12, "adjudicate": 0}
    assert simulate(ws, ls, policy) == {"review": 0, "adjudicate": 0}  # idempotent
    pulled = ws.pull(ls)
    assert pulled["new_annotations"] == 12
    assert pulled["moved"] == {"accepted": 1, "rejected": 1, "adjudicate": 4}
    assert ws.pull(ls)["new_annotations"] == 0  # decided items are not pulled again

    ws.push(ls, "adjudicate")
    assert simulate(ws, ls, policy)["adjudicate"] == 4
    moved = ws.pull(ls)["moved"]
    assert moved == {"accepted": 1, "revised": 1, "rejected": 2}
    status = {it["sample_id"]: it for it in ws.store.items()}
    revised = status[order[3]]
    assert revised["status"] == "review" and revised["round"] == 2
    assert revised["sample"]["query"].endswith(", please?") and revised["sample"]["gold"][0]["observation"] is not None
    bad = status[order[4]]
    assert bad["status"] == "rejected" and "not_executable" in bad["history"][-1]["reasons"][0]

    r2 = ws.push(ls, "review")
    assert r2.pushed == 1 and any("/r2/" in k for k in r2.projects)
    simulate(ws, ls, policy)
    assert ws.pull(ls)["moved"] == {"accepted": 1}

    result = finalize(ws, tmp_path / "final")
    out = tmp_path / "final"
    final = read_jsonl(out / "samples.jsonl", Sample)
    assert {s.verification.details["original_id"] for s in final} == {order[0], order[2], order[3]}
    assert all(s.verification.status == "verified" and s.verification.method == "expert-review" for s in final)
    manifest = SplitManifest.model_validate(read_json(out / "manifest.json"))
    assert manifest.sample_count == 3 and manifest.version == "1.0.0" and "database.sqlite" in manifest.files
    sheet = result["datasheet"]
    # round 1 decisions: (a,a) (r,r) (a,r) (fix,a) (a,fix) (r,a): observed 2/6
    assert sheet["agreement"]["1"]["items"] == 6 and abs(sheet["agreement"]["1"]["percent_agreement"] - 2 / 6) < 1e-9
    assert sheet["agreement"]["1"]["cohen_kappa"] is not None and sheet["agreement"]["2"]["items"] == 1
    assert sheet["verdicts_supplied_automatically"] is True
    assert "supplied automatically" in (out / "datasheet.md").read_text()
    assert set(sheet["reviewers"]) == {"auto-reviewer-1", "auto-reviewer-2", "auto-adjudicator"}
    # the finalized split is evaluable: the nl2api self-test passes on it
    from benchsmith.eval import run_selftest

    scores = run_selftest("nl2api", out, tmp_path / "selftest")
    assert scores["records"] == 3 and scores["gold_failing"] == 0


def test_a_server_that_is_down_gives_one_clear_error_and_a_rerun_finishes(
    label_studio,
    split: Path,
    tmp_path: Path,
) -> None:
    ws = Workspace(tmp_path / "ws")
    ws.load(split)
    dead = LabelStudio("http://127.0.0.1:9", label_studio.token, retries=1, backoff=0.01)
    with pytest.raises(LabelStudioDown, match="not answering.*re-run"):
        ws.push(dead, "review")
    assert ws.store.projects() == []  # nothing half-recorded
    ls = LabelStudio(label_studio.base_url, label_studio.token)
    assert ws.push(ls, "review").pushed == 6


@pytest.mark.parametrize("reply_lost", [False, True], ids=["killed-after-a-batch", "killed-before-the-reply"])
def test_server_killed_mid_push_then_restarted_loses_and_duplicates_nothing(tmp_path: Path, reply_lost: bool) -> None:
    """A real server (our own, not the shared one) is killed during a push: after a batch was imported
    and recorded, or after the server imported a batch but before its reply arrived (so the tasks
    are on the server and not in the workspace: the re-run must find them, not import them again)."""
    import os
    import signal

    from benchsmith.annotation import label_studio_status, resolve_label_studio, start_label_studio, stop_label_studio
    from benchsmith.annotation._private import workflow
    from benchsmith.schemas import write_jsonl

    now = "2026-01-01T00:00:00Z"
    samples = [
        Sample(query=f"What is the weather in town {i}?", provenance={"source": "t", "method": "t", "created_at": now})
        for i in range(25)
    ]
    write_jsonl(tmp_path / "samples.jsonl", samples)
    data_dir = tmp_path / "ls"
    start_label_studio(data_dir=data_dir)
    try:
        access = resolve_label_studio(data_dir)

        class KilledAfterFirstBatch(LabelStudio):
            batches = 0

            def import_tasks(self, project_id, tasks, **kw):  # noqa: ANN001, ANN003, ANN201
                ids = super().import_tasks(project_id, tasks, **kw)
                KilledAfterFirstBatch.batches += 1
                if KilledAfterFirstBatch.batches == 1:
                    os.kill(label_studio_status(data_dir).pid, signal.SIGKILL)  # the server dies mid-sync
                    if reply_lost:
                        raise LabelStudioDown(
                            "the connection dropped before the reply; re-run the command when it is back"
                        )
                return ids

        ws = Workspace(tmp_path / "ws")
        ws.load(tmp_path / "samples.jsonl")
        old_batch, workflow.BATCH = workflow.BATCH, 10
        try:
            with pytest.raises(LabelStudioDown, match="re-run the command when it is back"):
                ws.push(KilledAfterFirstBatch(access.url, access.token, retries=1, backoff=0.01), "review")
            recorded = sum(len(ws.store.task_ids(p["project_id"])) for p in ws.store.projects())
            assert recorded == (0 if reply_lost else 10)  # a batch is recorded the moment its reply arrives
            start_label_studio(data_dir=data_dir)  # back (the same data dir: the same projects and tasks)
            access = resolve_label_studio(data_dir)
            ls = LabelStudio(access.url, access.token)
            report = ws.push(ls, "review")
        finally:
            workflow.BATCH = old_batch
        assert (report.pushed, report.already_there) == ((15, 10) if reply_lost else (15, 0))
        (pid,) = report.projects.values()
        assert sorted(t.data["bs_id"] for t in ls.tasks(pid)) == sorted(s.id for s in samples)  # once each, none twice
    finally:
        stop_label_studio(data_dir)


def test_a_model_prescreen_puts_votes_into_the_pre_annotations(split: Path, tmp_path: Path) -> None:
    from scripted_chat import ScriptedChat

    from benchsmith.annotation import task_payload
    from benchsmith.construction import ChatModelRole, RoleModels

    voters = [
        ChatModelRole(ScriptedChat(script=lambda m: '{"vote": "reject", "reason": "unclear"}'), name="v1"),
        ChatModelRole(ScriptedChat(script=lambda m: '{"vote": "reject", "reason": "vague"}'), name="v2"),
    ]
    ws = Workspace(tmp_path / "ws")
    ws.load(split)
    assert ws.prescreen(RoleModels(default=voters[0], voters=voters)) == {"voted": 6, "model_calls": 12}
    assert ws.prescreen(RoleModels(default=voters[0], voters=voters))["voted"] == 0  # only once
    item = ws.store.items()[0]
    assert [v["model"] for v in item["sample"]["metadata"]["votes"]] == ["v1", "v2"]
    payload = task_payload(Sample.model_validate(item["sample"]), "chain")
    (prediction,) = payload["predictions"]
    decision = next(r for r in prediction["result"] if r["from_name"] == "decision")
    assert decision["value"]["choices"] == ["reject"] and prediction["score"] == 0.0
    assert "v1" in payload["data"]["check_summary"] or "reject" in payload["data"]["check_summary"]
