"""Pure parts of the protocol: decisions, corrections, agreement, the datasheet."""

from __future__ import annotations

import json

import pytest

from benchsmith.annotation import (
    apply_correction,
    cohen_kappa,
    datasheet,
    datasheet_markdown,
    decide_adjudication,
    decide_review,
)
from benchsmith.annotation._private.protocol import CorrectionError
from benchsmith.annotation._private.workflow import step_corrections


@pytest.mark.parametrize(
    "decisions, outcome",
    [
        (["accept", "accept"], "accepted"),
        (["reject", "reject"], "rejected"),
        (["accept", "reject"], "adjudicate"),
        (["fix", "accept"], "adjudicate"),
        (["fix", "fix"], "adjudicate"),
        (["accept"], "pending"),
    ],
)
def test_review_decisions(decisions: list[str], outcome: str) -> None:
    reviews = [{"user": i, "decision": d} for i, d in enumerate(decisions)]
    assert decide_review(reviews).outcome == outcome


def test_a_reviewer_counts_once_with_the_latest_answer() -> None:
    reviews = [{"user": 1, "decision": "reject"}, {"user": 1, "decision": "accept"}]
    assert decide_review(reviews).outcome == "pending"
    assert decide_review([*reviews, {"user": 2, "decision": "accept"}]).outcome == "accepted"


def test_adjudication() -> None:
    assert decide_adjudication({"decision": "fix", "correction": " "}).reasons == ["fix_without_correction"]
    assert decide_adjudication({"decision": "reject", "reasons": ["wrong_answer"]}).reasons == ["wrong_answer"]
    assert decide_adjudication(None).outcome == "pending"


def test_corrections() -> None:
    sample = {"query": "q", "gold": [{"call": {"name": "a", "arguments": {}, "label": "out_1"}, "observation": 3}]}
    fixed = apply_correction(sample, json.dumps({"gold": [{"name": "b", "arguments": {"x": 1}}]}))
    assert fixed["gold"][0]["call"] == {"name": "b", "arguments": {"x": 1}, "label": "out_1"}
    assert fixed["gold"][0]["observation"] is None  # re-executed before use
    with pytest.raises(CorrectionError, match="not \\['tools'\\]"):
        apply_correction(sample, json.dumps({"tools": []}))
    with pytest.raises(CorrectionError, match="no tool name"):
        apply_correction(sample, json.dumps({"gold": [{"arguments": {}}]}))
    with pytest.raises(CorrectionError, match="dialogue"):
        apply_correction({"dialogue": [{"role": "user", "content": "hi"}]}, "plain text")
    # per-step corrections become a whole-chain correction; a step correction that is not JSON is ignored
    two = {
        "gold": [
            {"call": {"name": "a", "arguments": {}, "label": "out_1"}},
            {"call": {"name": "b", "arguments": {}, "label": "out_2"}},
        ]
    }
    made = json.loads(step_corrections(two, {"1": '{"name": "c", "arguments": {"k": 2}}', "0": "nonsense"}))
    assert made["gold"] == [
        {"name": "a", "arguments": {}, "label": "out_1"},
        {"name": "c", "arguments": {"k": 2}, "label": "out_2"},
    ]


def test_kappa_matches_hand_computation() -> None:
    # 10 items: 4 (a,a), 3 (r,r), 2 (a,r), 1 (r,a): po = .7; pa = .6*.5 + .4*.5 = .5 -> kappa .4
    pairs = [("a", "a")] * 4 + [("r", "r")] * 3 + [("a", "r")] * 2 + [("r", "a")]
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert cohen_kappa([("a", "r"), ("r", "a")]) == pytest.approx(-1.0)
    assert cohen_kappa([]) is None


def test_datasheet_counts_reasons_and_reviewers() -> None:
    items = [
        {
            "sample_id": "s1",
            "status": "accepted",
            "history": [
                {
                    "stage": "review",
                    "round": 1,
                    "outcome": "accepted",
                    "reasons": [],
                    "reviews": [{"user": 1, "decision": "accept"}, {"user": 2, "decision": "accept"}],
                }
            ],
        },
        {
            "sample_id": "s2",
            "status": "rejected",
            "history": [
                {
                    "stage": "review",
                    "round": 1,
                    "outcome": "adjudicate",
                    "reasons": [],
                    "reviews": [{"user": 1, "decision": "accept"}, {"user": 2, "decision": "reject"}],
                },
                {
                    "stage": "adjudicate",
                    "round": 1,
                    "outcome": "rejected",
                    "reasons": ["not_executable: step 1"],
                    "reviews": [{"user": 3, "decision": "reject"}],
                },
            ],
        },
    ]
    sheet = datasheet(
        items,
        {
            1: {"username": "ann", "simulated": False},
            2: {"username": "bob", "simulated": False},
            3: {"username": "cy", "simulated": True},
        },
    )
    assert sheet["final"] == {"accepted": 1, "rejected": 1}
    assert sheet["stages"] == {"adjudicate r1: rejected": 1, "review r1: accepted": 1, "review r1: adjudicate": 1}
    assert sheet["rejection_reasons"] == {"not_executable": 1}
    assert sheet["agreement"]["1"]["percent_agreement"] == 0.5
    assert (
        sheet["reviewers"]["bob"]["agreement_with_final"] == 1.0
        and sheet["reviewers"]["ann"]["agreement_with_final"] == 0.5
    )
    assert sheet["verdicts_supplied_automatically"] is True
    assert sheet["models"] == []  # no item says a model made it


def test_datasheet_names_the_models_and_weights_that_made_the_accepted_items() -> None:
    def item(sid: str, status: str, versions: dict) -> dict:
        return {"sample_id": sid, "status": status, "history": [], "sample": {"provenance": {"versions": versions}}}

    local = {"model.plan": "qwen", "model_file.plan": "cd" * 32, "model.act": "qwen", "model_file.act": "cd" * 32}
    items = [
        item("s1", "accepted", local),
        item("s2", "accepted", local),
        item("s3", "rejected", {"model.plan": "x"}),
        item("s4", "accepted", {"model.generate": "gpt-4o-mini"}),
        item("s5", "accepted", {}),
    ]
    sheet = datasheet(items, {})
    assert sheet["models"] == [
        {"model": "gpt-4o-mini", "file_sha256": None, "samples": 1},
        {"model": "qwen", "file_sha256": "cd" * 32, "samples": 2},
    ]
    md = datasheet_markdown(sheet, "1.0.0")
    assert f"| qwen | {'cd' * 32} | 2 |" in md and "| gpt-4o-mini | (remote model) | 1 |" in md


def test_project_titles_name_the_workspace_and_fit_label_studio(tmp_path) -> None:  # noqa: ANN001
    from benchsmith.annotation import Workspace

    a, b = Workspace(tmp_path / "a"), Workspace(tmp_path / "b")
    title = a.project_title("review", 1, "query")
    assert title.startswith("benchsmith review r1 query ws-") and title == a.project_title("review", 1, "query")
    assert title != b.project_title("review", 1, "query")  # another workspace: another title
    a.close()
    assert Workspace(tmp_path / "a").project_title("review", 1, "query") == title  # the id is kept
    b.store.set_meta("name", "a very long review campaign name " * 3)
    long = b.project_title("adjudicate", 12, "dialogue")
    assert len(long) == 50 and long.startswith("a very long re ")
    assert long.endswith(f" adjudicate r12 dialogue ws-{b.store.get_meta('workspace_id')}")  # shortened: the name


@pytest.mark.parametrize("bad", ["list-manifest", "under-a-file"])
def test_finalize_refuses_a_bad_out_before_writing(bad: str, tmp_path) -> None:  # noqa: ANN001
    """``finalize`` reads the previous split's manifest with the one manifest reader and checks the
    folder before it writes: a manifest that is a JSON list, or an --out under a file, is one
    UserError and leaves everything as it was."""
    from helpers import build_slot_split, pair_lines

    from benchsmith.annotation import Workspace
    from benchsmith.annotation._private.finalize import finalize
    from benchsmith.schemas import UserError

    (tmp_path / "src").mkdir()
    split = build_slot_split(tmp_path / "src", pair_lines()[:3])
    ws = Workspace(tmp_path / "ws")
    ws.load(split)
    for it in ws.store.items():
        ws.store.update_item(
            it["sample_id"],
            status="accepted",
            round=1,
            event={"stage": "review", "round": 1, "outcome": "accepted", "reviews": []},
        )
    if bad == "list-manifest":
        out = tmp_path / "final"
        out.mkdir()
        (out / "manifest.json").write_text("[1, 2]\n", "utf-8")
        message = "manifest.json"
    else:
        (tmp_path / "file.txt").write_text("keep\n", "utf-8")
        out = tmp_path / "file.txt" / "final"
        message = "is a file"
    before = sorted(
        (p.relative_to(tmp_path), p.read_bytes() if p.is_file() else None)
        for p in tmp_path.rglob("*")
        if "ws" not in p.parts
    )
    with pytest.raises(UserError, match=message):
        finalize(ws, out)
    after = sorted(
        (p.relative_to(tmp_path), p.read_bytes() if p.is_file() else None)
        for p in tmp_path.rglob("*")
        if "ws" not in p.parts
    )
    assert after == before
    ws.close()
