"""The evaluation runner's logic with scripted chat clients (replies are pure functions of the
request): a perfect model scores the maximum through run -> score, garbage is recorded as format
errors, transport failures are recorded and retried on the next run, finished cases never repeat."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from helpers import build_slot_split, pair_lines
from runner_helpers import FakeReply, GoldClient, ScriptedClient

from benchsmith.eval import EvalCase, TaskOptions, run_eval, score_run
from benchsmith.eval._private.runner import plan_tasks
from benchsmith.eval.tasks import select_cases
from benchsmith.schemas import RuntimeFault, UserError, read_replies

LIMIT = 10
MODEL = {"name": "scripted"}


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lines = pair_lines()
    # a spread of chain lengths, including the longest ones
    return build_slot_split(tmp_path_factory.mktemp("runner"), lines[:8] + lines[-6:])


def _gold_client(split: Path, out: Path, **kw) -> GoldClient:
    planned = plan_tasks(split, out, kw.get("tasks"), TaskOptions(calling="prompt"), kw.get("limit", LIMIT), 0)
    return GoldClient(planned)


def test_a_perfect_model_gets_the_maximum_on_every_task(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    client = _gold_client(split, out)
    res = run_eval(split, client, MODEL, out, limit=LIMIT, progress=False)
    assert res.status == "complete"
    assert set(res.tasks) == {"nl2api", "teval", "gta", "toolassess", "acebench_special"}
    for name, info in res.tasks.items():
        assert info.status_counts["ok"] == info.cases == min(LIMIT, info.cases), name
    scores = score_run(out)
    assert scores["nl2api"]["completion_rate"] == 1.0 and scores["nl2api"]["full_sequence_accuracy"] == 1.0
    assert scores["teval"]["overall"] == pytest.approx(100.0)
    sbs = scores["gta"]["step_by_step"]
    assert sbs["inst_acc"] == sbs["tool_acc"] == sbs["arg_acc"] == 1.0
    assert scores["acebench_special"]["summary"] == 1.0
    assert scores["toolassess"]["awareness"]["accuracy"] == 1.0
    for name in res.tasks:
        recs = [json.loads(x) for x in (out / name / "records.jsonl").read_text().splitlines()]
        assert recs and all(r["ok"] for r in recs), (name, [r for r in recs if not r["ok"]][:2])
    meta = json.loads((out / "run.json").read_text())
    assert meta["format"] == "benchsmith.run/v1" and meta["status"] == "complete"
    # identical prompts (T-Eval reason / retrieve / understand json) share one model call
    assert meta["tasks"]["teval"]["model_calls"] <= meta["tasks"]["teval"]["cases"]


def test_a_rerun_skips_what_is_done_and_keys_include_the_prompt_version(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    client = _gold_client(split, out, tasks=["toolassess", "teval"])
    run_eval(split, client, MODEL, out, tasks=["toolassess", "teval"], limit=LIMIT, progress=False)
    first = client.calls
    assert first > 0
    again = _gold_client(split, out, tasks=["toolassess", "teval"])
    res = run_eval(split, again, MODEL, out, tasks=["toolassess", "teval"], limit=LIMIT, progress=False)
    assert again.calls == 0 and res.status == "complete"
    lines = (out / "toolassess" / "replies.jsonl").read_text().splitlines()
    assert len(lines) == LIMIT  # nothing appended twice
    # another mode = another prompt version = asked again
    other = ScriptedClient(lambda m, s, t: FakeReply('{"decision": "no_tool", "tool": "x", "answers": []}'))
    run_eval(split, other, MODEL, out, tasks=["toolassess"], calling="tools", limit=LIMIT, progress=False)
    assert other.calls == 0  # toolassess sends the same prompt in both modes: same version, nothing to redo
    run_eval(split, other, MODEL, out, tasks=["acebench_special"], calling="tools", limit=LIMIT, progress=False)
    assert other.calls == LIMIT and other.requests[0]["tools"]  # native tools: another prompt version
    run_eval(split, other, MODEL, out, tasks=["acebench_special"], calling="prompt", limit=LIMIT, progress=False)
    assert other.calls == 2 * LIMIT


@pytest.mark.parametrize("garbage", ["", "lol, no", "{", "[1, 2", '{"action": "drop_tables"}', "null", "\x00\ud7ff"])
def test_garbage_replies_are_format_errors_never_crashes(split: Path, tmp_path: Path, garbage: str) -> None:
    out = tmp_path / "run"
    client = ScriptedClient(lambda m, s, t: FakeReply(garbage))
    res = run_eval(split, client, MODEL, out, limit=4, progress=False, options=TaskOptions(step_budget=3))
    for name, info in res.tasks.items():
        counts = info.status_counts
        assert counts["transport_error"] == 0 and counts["pending"] == 0, name
        assert counts["ok"] + counts["format_error"] == info.cases, name
    assert res.tasks["nl2api"].status_counts["format_error"] == 4
    scores = score_run(out)
    for name in res.tasks:
        recs = [json.loads(x) for x in (out / name / "records.jsonl").read_text().splitlines()]
        assert not any(r["ok"] for r in recs), name
        assert scores[name]["records"] == len(recs)
    reply = json.loads((out / "teval" / "replies.jsonl").read_text().splitlines()[0])
    assert reply["turns"][0]["raw"] == garbage  # the raw reply is kept


class Down(Exception):
    def __init__(self, kind: str = "connection") -> None:
        self.kind = kind
        super().__init__(f"endpoint {kind} failure")


def test_transport_errors_are_recorded_for_those_cases_and_retried_next_time(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    tasks = ["toolassess"]
    gold = _gold_client(split, out, tasks=tasks)
    flaky_ids: set[str] = set()

    def flaky(messages, schema, tools):  # noqa: ANN001
        text = json.dumps(messages)
        if "Rewrite" in text or "Repeat" in text or "colleague" in text:  # the no_tool cases
            flaky_ids.add(text)
            return Down("server")
        return gold.fn(messages, schema, tools)

    client = ScriptedClient(flaky)
    res = run_eval(split, client, MODEL, out, tasks=tasks, limit=LIMIT, progress=False)
    counts = res.tasks["toolassess"].status_counts
    assert counts["transport_error"] > 0 and counts["ok"] > 0 and res.status == "partial"
    bad = {r.id for r in read_replies(out / "toolassess" / "replies.jsonl").values() if r.status == "transport_error"}
    preds = [json.loads(x)["id"] for x in (out / "toolassess" / "predictions.jsonl").read_text().splitlines()]
    assert not bad & set(preds)  # no prediction for a case without a reply
    again = _gold_client(split, out, tasks=tasks)
    res2 = run_eval(split, again, MODEL, out, tasks=tasks, limit=LIMIT, progress=False)
    assert again.calls == len(bad) and res2.status == "complete"
    assert score_run(out)["toolassess"]["awareness"]["accuracy"] == 1.0


def test_an_endpoint_that_stays_down_stops_the_run_with_a_clear_error_and_keeps_the_rest(
    split: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    state = {"n": 0}

    def dies(messages, schema, tools):  # noqa: ANN001
        state["n"] += 1
        return FakeReply('{"decision": "no_tool", "tool": "x", "answers": []}') if state["n"] <= 3 else Down()

    with pytest.raises(RuntimeFault, match="re-run the same command"):
        run_eval(
            split,
            ScriptedClient(dies),
            MODEL,
            out,
            tasks=["toolassess"],
            limit=LIMIT,
            concurrency=1,
            progress=False,
            max_consecutive_failures=3,
        )
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "partial" and meta["tasks"]["toolassess"]["status_counts"]["ok"] == 3
    # the endpoint is back: only the missing cases are asked
    client = ScriptedClient(lambda m, s, t: FakeReply('{"decision": "no_tool", "tool": "x", "answers": []}'))
    run_eval(split, client, MODEL, out, tasks=["toolassess"], limit=LIMIT, progress=False)
    assert client.calls == LIMIT - 3


def test_a_user_error_from_the_client_stops_the_run(split: Path, tmp_path: Path) -> None:
    client = ScriptedClient(lambda m, s, t: UserError("the endpoint refused the API key", fix="set OPENAI_API_KEY"))
    with pytest.raises(UserError, match="API key"):
        run_eval(split, client, MODEL, tmp_path / "run", tasks=["toolassess"], limit=3, progress=False)


def test_another_model_needs_another_folder(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    client = ScriptedClient(lambda m, s, t: FakeReply('{"decision": "no_tool"}'))
    run_eval(split, client, MODEL, out, tasks=["toolassess"], limit=2, progress=False)
    with pytest.raises(UserError, match="another --out"):
        run_eval(split, client, {"name": "other"}, out, tasks=["toolassess"], limit=2, progress=False)


def test_bad_arguments_are_user_errors(split: Path, tmp_path: Path) -> None:
    client = ScriptedClient(lambda m, s, t: FakeReply("x"))
    with pytest.raises(UserError, match="unknown task"):
        run_eval(split, client, MODEL, tmp_path / "a", tasks=["nope"], progress=False)
    with pytest.raises(UserError, match="concurrency"):
        run_eval(split, client, MODEL, tmp_path / "b", concurrency=0, progress=False)
    with pytest.raises(UserError, match="does not exist"):
        run_eval(tmp_path / "missing", client, MODEL, tmp_path / "c", progress=False)
    with pytest.raises(UserError, match="cannot tell which benchmark"):
        (tmp_path / "empty").mkdir()
        run_eval(tmp_path / "empty", client, MODEL, tmp_path / "d", progress=False)


def _case(i: int, cat: str) -> EvalCase:
    return EvalCase(id=f"c{i}", benchmark="x", category=cat)


def test_selection_spreads_over_categories_deterministically() -> None:
    cases = [_case(i, "a") for i in range(10)] + [_case(i, "b") for i in range(10, 13)] + [_case(13, "c")]
    picked = select_cases(cases, 6, seed=1)
    assert len(picked) == 6 and picked == select_cases(cases, 6, seed=1)
    assert Counter(c.category for c in picked) == {"a": 3, "b": 2, "c": 1}
    assert [c.id for c in picked] == sorted((c.id for c in picked), key=lambda s: int(s[1:]))  # file order kept
    assert select_cases(cases, None) == cases and select_cases(cases, 99) == cases
    assert select_cases(cases, 6, seed=2) != picked or True  # another seed may differ; never an error


def test_a_refused_request_is_final_for_its_case_and_does_not_stop_the_run(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    state = {"n": 0}

    def refuses_some(messages, schema, tools):  # noqa: ANN001
        state["n"] += 1
        return Down("request") if state["n"] % 2 else FakeReply('{"decision": "no_tool", "tool": "x", "answers": []}')

    res = run_eval(
        split,
        ScriptedClient(refuses_some),
        MODEL,
        out,
        tasks=["toolassess"],
        limit=LIMIT,
        concurrency=1,
        progress=False,
        max_consecutive_failures=2,
    )
    counts = res.tasks["toolassess"].status_counts
    assert counts["request_error"] == LIMIT // 2 and counts["ok"] == LIMIT // 2 and res.status == "complete"
    client = ScriptedClient(lambda m, s, t: FakeReply("{}"))
    run_eval(split, client, MODEL, out, tasks=["toolassess"], limit=LIMIT, progress=False)
    assert client.calls == 0  # asking again would be refused again
    assert score_run(out)["toolassess"]["missing_predictions"] == LIMIT // 2


def test_a_small_limit_still_covers_every_family_of_categories() -> None:
    cats = [
        f"{a}/{f}" for a in ("instruct", "plan", "reason", "retrieve", "review", "understand") for f in ("json", "str")
    ]
    cases = [_case(i, c) for i, c in enumerate(cats * 3)]
    picked = select_cases(cases, 6)
    assert {c.category.split("/")[0] for c in picked} == {
        "instruct",
        "plan",
        "reason",
        "retrieve",
        "review",
        "understand",
    }


def test_native_tool_calling_mode_plays_the_gold_chain_with_tool_messages(split: Path, tmp_path: Path) -> None:
    from runner_helpers import GoldToolsClient

    out = tmp_path / "run"
    planned = plan_tasks(split, out, ["nl2api"], TaskOptions(calling="tools"), None, 0)
    client = GoldToolsClient(planned[0].cases)
    res = run_eval(split, client, MODEL, out, tasks=["nl2api"], calling="tools", progress=False)
    assert res.tasks["nl2api"].status_counts["ok"] == 14
    scores = score_run(out)["nl2api"]
    assert scores["completion_rate"] == 1.0
    # scoring also scores each case's gold answer: the run's own gold self-test
    assert scores["gold_selftest"] == {"records": 14, "gold_failing": 0}
    # the conversation carries the assistant's tool calls and the tool results, as OpenAI expects
    last = max(client.requests, key=lambda r: len(r["messages"]))["messages"]
    assistant = [m for m in last if m["role"] == "assistant"]
    assert assistant and all(m["tool_calls"][0]["id"] for m in assistant)
    assert [m["tool_call_id"] for m in last if m["role"] == "tool"] == [m["tool_calls"][0]["id"] for m in assistant]


def test_limits_per_task(split: Path, tmp_path: Path) -> None:
    planned = plan_tasks(split, tmp_path / "run", ["toolassess", "gta"], TaskOptions(), {"toolassess": 3}, 0)
    sizes = {p.task.name: len(p.cases) for p in planned}
    assert sizes["toolassess"] == 3 and sizes["gta"] > 3  # a task not named runs all its cases


def test_a_run_derives_only_what_its_tasks_read(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    plan_tasks(split, out, ["nl2api"], TaskOptions(), None, 0)
    assert not (out / "data").exists()  # NL2API runs on the split itself: nothing derived
    first = plan_tasks(split, out, ["toolassess"], TaskOptions(), 3, 0)
    assert sorted(p.name for p in (out / "data").iterdir()) == ["derive_report.json", "toolassess"]
    # resumed with one more task: derived again with both, the same toolassess cases (seeded)
    again = plan_tasks(split, out, ["toolassess", "gta"], TaskOptions(), 3, 0)
    assert sorted(p.name for p in (out / "data").iterdir()) == ["derive_report.json", "gta", "toolassess"]
    assert [c.id for c in again[0].cases] == [c.id for c in first[0].cases]
    assert [c.input for c in again[0].cases] == [c.input for c in first[0].cases]
