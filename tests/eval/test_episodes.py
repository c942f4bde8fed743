"""The episode loop with scripted models (replies are pure functions of the messages): every end
condition, faults, journaling and resume (in process and after kill -9), trials and pass^k."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from episode_helpers import Scripted, call, play, say
from helpers import TESTS

from benchsmith.eval import Row, TaskOptions, get_benchmark, get_task, score_run
from benchsmith.eval.episodes import Budgets, Journal, run_episode
from benchsmith.eval.scoring import reliability
from benchsmith.eval.tasks import CallContext
from benchsmith.models import TransportError
from benchsmith.schemas import iter_journal

HELPERS = TESTS / "episode_helpers.py"
BENCH = get_benchmark("agent")
CASES = {c.id: c for c in BENCH.load("sandbox")}
TEXT = "The slides are in your inbox."


def spec_of(case_id: str, **kw):
    task = get_task("agent")("sandbox", TaskOptions(calling="tools"))
    spec = task.episode_spec(CASES[case_id])
    for k, v in kw.items():
        setattr(spec, k, v)
    return spec


def play_one(spec, assistant, user, *, budgets=None, native=True, journal=None, key="k"):
    a = assistant if isinstance(assistant, Scripted) else Scripted(assistant)
    u = user if isinstance(user, Scripted) else Scripted(user)
    ctx = CallContext(a, "tools" if native else "prompt", {}, Counter(), user_client=u, journal=journal, key=key)
    ep = asyncio.run(run_episode(spec, ctx, native=native, budgets=budgets or Budgets()))
    return ep, a, u


def own_turns(messages):
    return sum(1 for m in messages if m["role"] == "assistant")


def gold_wifi(messages, kw):
    """msg-wifi-off done right: Wi-Fi on, then the message, then a reply."""
    n = sum(1 for m in messages if m["role"] == "tool")
    if n == 0:
        return call(("enable_wifi", {}))
    if n == 1:
        return call(("send_message", {"recipient": "Priya", "text": TEXT}))
    return say("Sent it to Priya.")


def polite_user(messages, kw):
    return say(f'Please send Priya "{TEXT}"' if own_turns(messages) == 0 else "Thanks! finish conversation")


def who(ep):
    return [e["who"] for e in ep.events]


def score(case_id, ep):
    from benchsmith.eval.agent._task import AgentTask

    task = AgentTask("sandbox", TaskOptions(calling="tools"))
    return BENCH.score(CASES[case_id], task.prediction(CASES[case_id], ep), "strict")


# ---- end conditions --------------------------------------------------------------------------------
def test_user_stop_after_gold_calls_reaches_the_expected_state():
    ep, a, u = play_one(spec_of("msg-wifi-off"), gold_wifi, polite_user)
    assert ep.end == "user_stop"
    assert who(ep) == ["user", "assistant", "tool", "assistant", "tool", "assistant", "user", "end"]
    assert ep.final_state["messaging"]["messages"][-1]["text"] == TEXT
    assert ep.events[2]["state_diff"] == ["device.wifi_on: false -> true"]
    assert a.calls == 3 and u.calls == 2
    rec = score("msg-wifi-off", ep)
    assert rec.ok and rec.details["process"] == 1.0


def test_precondition_failure_is_an_observation_and_an_error_type():
    def hasty(messages, kw):
        if not any(m["role"] == "tool" for m in messages):
            return call(("send_message", {"recipient": "Priya", "text": TEXT}))
        return say("I could not send it.")

    ep, _, _ = play_one(spec_of("msg-wifi-off"), hasty, polite_user)
    tool = ep.events[2]
    assert tool["observations"][0]["status"] == "error" and tool["observations"][0]["code"] == "offline"
    rec = score("msg-wifi-off", ep)
    assert not rec.ok and rec.error_type == "precondition_violated"


def test_bad_arguments_are_an_observation_not_a_crash():
    def wrong(messages, kw):
        if not any(m["role"] == "tool" for m in messages):
            return call(("send_message", {"recipient": 5, "txt": TEXT}), ("enable_wifi", {}))
        return say("Hm.")

    ep, _, _ = play_one(spec_of("msg-wifi-off"), wrong, polite_user)
    obs = ep.events[2]["observations"]
    assert obs[0]["status"] == "error" and obs[1]["status"] == "not_run"  # a failed call stops the rest
    assert score("msg-wifi-off", ep).error_type == "wrong_argument"


def test_unknown_tool_is_a_wrong_call():
    def inventor(messages, kw):
        if not any(m["role"] == "tool" for m in messages):
            return call(("teleport", {}))
        return say("Hm.")

    ep, _, _ = play_one(spec_of("msg-wifi-off"), inventor, polite_user)
    assert ep.events[2]["observations"][0]["code"] == "unknown_tool"
    assert score("msg-wifi-off", ep).error_type == "wrong_call"


def test_solo_episode_ends_when_the_assistant_answers_and_never_asks_the_user():
    ep, a, u = play_one(spec_of("msg-wifi-off", solo=True), gold_wifi, polite_user)
    assert ep.end == "assistant_done" and u.calls == 0
    assert ep.events[0] == {"who": "user", "text": CASES["msg-wifi-off"].input["instruction"], "elapsed_s": 0.0}
    assert score("msg-wifi-off", ep).ok


@pytest.mark.parametrize(
    "reply,code",
    [
        ("", "empty_user_message"),
        ("assistant: How can I help?", "user_broke_role"),
        ("send_message(recipient='Priya')", "user_broke_role"),
    ],
)
def test_user_simulator_failure_is_recorded_and_never_charged(reply, code):
    ep, a, _ = play_one(spec_of("msg-wifi-off"), gold_wifi, lambda m, k: say(reply))
    assert ep.end == "user_failure" and ep.events[0]["error"]["code"] == code and a.calls == 0
    rec = score("msg-wifi-off", ep)
    assert rec.error_type == "user_simulator_failure"
    scores = BENCH.metrics([BENCH.row(CASES["msg-wifi-off"], rec, "strict")], "strict")
    assert scores["counted_episodes"] == 0 and scores["user_simulator_failures"] == 1


def test_a_user_who_never_stops_is_cut_by_the_turn_budget():
    ep, _, u = play_one(
        spec_of("msg-wifi-off"),
        lambda m, k: say("Sure."),
        lambda m, k: say("Tell me more."),
        budgets=Budgets(max_turns=3),
    )
    # three messages played; asked a fourth time it still does not stop, and that message is not played
    assert ep.end == "user_turn_budget" and u.calls == 4 and ep.summary()["user_turns"] == 3
    # the task is undone and the user keeps asking: the model's budget, not the simulator's fault
    assert score("msg-wifi-off", ep).error_type == "budget_exhausted"


def test_a_user_who_stops_when_asked_after_its_last_turn_ends_normally():
    replies = iter(["Tell me more.", "And more.", "Thanks, finish conversation"])
    ep, _, u = play_one(
        spec_of("msg-wifi-off"),
        lambda m, k: say("Sure."),
        lambda m, k: say(next(replies)),
        budgets=Budgets(max_turns=2),
    )
    assert ep.end == "user_stop" and u.calls == 3 and ep.summary()["user_turns"] == 3


def test_a_user_who_never_stops_after_the_goal_is_reached_does_not_fail_the_episode():
    ep, _, _ = play_one(spec_of("msg-wifi-off"), gold_wifi, lambda m, k: say("And then?"), budgets=Budgets(max_turns=2))
    assert ep.end == "user_turn_budget"
    rec = score("msg-wifi-off", ep)
    assert rec.ok and rec.details["episode"]["end"] == "user_turn_budget"


def test_a_user_who_stops_before_asking_anything_is_a_simulator_failure():
    ep, a, _ = play_one(spec_of("msg-wifi-off"), gold_wifi, lambda m, k: say("finish conversation"))
    assert ep.end == "user_failure" and ep.events[0]["error"]["code"] == "user_stopped_at_once" and a.calls == 0


def test_step_budget_cuts_an_assistant_that_only_calls_tools():
    ep, a, _ = play_one(
        spec_of("msg-wifi-off"), lambda m, k: call(("device_status", {})), polite_user, budgets=Budgets(max_steps=3)
    )
    assert ep.end == "step_budget" and a.calls == 3
    assert who(ep) == ["user"] + ["assistant", "tool"] * 3 + ["end"]
    assert score("msg-wifi-off", ep).error_type == "budget_exhausted"


def test_call_budget_runs_calls_up_to_the_limit():
    ep, _, _ = play_one(
        spec_of("msg-wifi-off"),
        lambda m, k: call(("device_status", {}), ("device_status", {})),
        polite_user,
        budgets=Budgets(max_tool_calls=3),
    )
    assert ep.end == "call_budget"
    assert [o["status"] for o in ep.events[4]["observations"]] == ["ok", "not_run"]
    assert ep.summary()["tool_calls"] == 3


def test_token_budget():
    ep, a, _ = play_one(
        spec_of("msg-wifi-off"),
        lambda m, k: call(("device_status", {}), prompt_tokens=1000),
        polite_user,
        budgets=Budgets(max_tokens=1500),
    )
    assert ep.end == "token_budget" and a.calls == 2


def test_wall_budget():
    slow = Scripted(gold_wifi, delay=0.05)
    ep, a, _ = play_one(spec_of("msg-wifi-off"), slow, polite_user, budgets=Budgets(wall_s=0.03))
    assert ep.end == "wall_budget" and a.calls == 1


def test_unreadable_reply_is_a_format_error_for_that_turn_only():
    def sloppy(messages, kw):
        if any(m["content"].startswith("Error: your reply could not be used") for m in messages):
            return say(json.dumps({"message": "Which message should I send?"}))
        return say("I will do it now!")  # prompt mode wants JSON

    ep, a, _ = play_one(spec_of("msg-wifi-off"), sloppy, polite_user, native=False)
    assert ep.events[1]["error"]["code"] and ep.events[2]["text"] == "Which message should I send?"
    assert ep.summary()["format_errors"] == 1 and ep.end == "user_stop"
    schema = a.requests[0]["json_schema"]
    assert {
        b["properties"]["name"]["const"] for b in schema["anyOf"][0]["properties"]["tool_calls"]["items"]["anyOf"]
    } >= {"enable_wifi", "send_message"}


def test_prompt_mode_plays_the_same_gold_episode():
    def gold_prompt(messages, kw):
        n = sum(1 for m in messages if m["content"].startswith("Results:")) - 2  # the worked example holds two
        if n == 0:
            return say(json.dumps({"tool_calls": [{"name": "enable_wifi", "arguments": {}}]}))
        if n == 1:
            return say(
                json.dumps(
                    {"tool_calls": [{"name": "send_message", "arguments": {"recipient": "Priya", "text": TEXT}}]}
                )
            )
        return say(json.dumps({"message": "Sent."}))

    ep, _, _ = play_one(spec_of("msg-wifi-off"), gold_prompt, polite_user, native=False)
    assert ep.end == "user_stop" and score("msg-wifi-off", ep).ok


def test_the_user_sees_only_text_never_calls_or_results():
    _, _, u = play_one(spec_of("msg-wifi-off"), gold_wifi, polite_user)
    last = u.requests[-1]["messages"]
    assert [m["role"] for m in last[1:]] == ["user", "assistant", "user"]
    assert last[-1]["content"] == "Sent it to Priya."
    assert CASES["msg-wifi-off"].input["instruction"] in last[0]["content"]


# ---- journal and resume ----------------------------------------------------------------------------
def test_transport_failure_mid_episode_resumes_from_the_last_completed_turn(tmp_path):
    journal = Journal(tmp_path / "episodes.jsonl")
    broken = Scripted(gold_wifi, fail_on={2})
    with pytest.raises(TransportError):
        play_one(spec_of("msg-wifi-off"), broken, polite_user, journal=journal)
    kept = Journal(tmp_path / "episodes.jsonl").load("k")
    assert [e["who"] for e in kept] == ["user", "assistant", "tool"]
    ep, a, u = play_one(spec_of("msg-wifi-off"), gold_wifi, polite_user, journal=Journal(tmp_path / "episodes.jsonl"))
    assert ep.resumed_at == 3 and ep.end == "user_stop"
    assert a.calls == 2 and u.calls == 1  # nothing finished is asked again
    assert len(ep.final_state["messaging"]["messages"]) == 5  # wifi replayed, the message sent once
    lines = [json.loads(x) for x in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert [x["n"] for x in lines] == list(range(len(ep.events)))


def test_a_torn_journal_line_is_ignored(tmp_path):
    j = Journal(tmp_path / "e.jsonl")
    j.append("k", 0, {"who": "user", "text": "hi"})
    with (tmp_path / "e.jsonl").open("ab") as fh:
        fh.write(b'{"key": "k", "n": 1, "event": {"who": "assis')
    assert Journal(tmp_path / "e.jsonl").load("k") == [{"who": "user", "text": "hi"}]


def test_episodes_do_not_share_state_and_run_concurrently(tmp_path):
    res = play(tmp_path / "run", 4, 0.0)
    assert res.tasks["agent"].done == 4
    preds = [
        json.loads(json.loads(x)["result"]) for x in (tmp_path / "run/agent/predictions.jsonl").read_text().splitlines()
    ]
    for p in preds:  # each episode called device_status-like tools on its own fresh environment
        assert p["episode"]["end"] == "user_stop"
        assert p["episode"]["user_turns"] == 3
    run = json.loads((tmp_path / "run/run.json").read_text())
    assert run["user_model"] == {"name": "scripted-user"}
    assert run["tasks"]["agent"]["user_model_calls"] == 4 * 3


def test_kill_9_mid_episode_then_resume_finishes_every_episode_exactly_once(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, str(HELPERS), str(out), "4", "0.15"],
        env={**os.environ, "PYTHONPATH": str(HELPERS.parent)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    journal = out / "agent" / "episodes.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if journal.is_file() and len(journal.read_text().splitlines()) >= 12:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    replies_before = (
        (out / "agent" / "replies.jsonl").read_text().splitlines()
        if (out / "agent" / "replies.jsonl").is_file()
        else []
    )
    assert len(replies_before) < 4, "the kill came too late to test anything"
    kept = Journal(journal)
    keys = {line.key for line in iter_journal(journal)}
    kept_model_turns = sum(1 for k in keys for e in kept.load(k) if e["who"] in ("user", "assistant"))
    log = tmp_path / "calls.log"
    play(out, 4, 0.0, log=log)
    replies = [json.loads(x) for x in (out / "agent" / "replies.jsonl").read_text().splitlines()]
    assert sorted(Counter(r["id"] for r in replies).values()) == [1, 1, 1, 1]  # every episode exactly once
    lines = [json.loads(x) for x in journal.read_text().splitlines() if x.strip().endswith("}")]
    per_key: dict[str, list[int]] = {}
    for x in lines:
        per_key.setdefault(x["key"], []).append(x["n"])
    assert all(ns == list(range(len(ns))) for ns in per_key.values()), "a journaled turn was written twice"
    total_model_turns = sum(1 for x in lines if x["event"]["who"] in ("user", "assistant"))
    asked_after = len(log.read_text().splitlines())
    assert asked_after == total_model_turns - kept_model_turns  # no finished turn was asked again
    for r in replies:
        ep = json.loads(r["result"])["episode"]
        assert ep["end"] == "user_stop" and ep["user_turns"] == 3 and ep["tool_calls"] == 4


# ---- trials ------------------------------------------------------------------------------------------
def test_trials_run_with_their_own_seed_and_give_pass_hat_k(tmp_path):
    from benchsmith.eval import run_eval

    seeds = []

    def assistant(messages, kw):
        seeds.append((kw.get("seed"), kw.get("temperature")))
        return gold_wifi(messages, kw)

    res = run_eval(
        "sandbox",
        Scripted(assistant),
        {"name": "scripted"},
        tmp_path / "run",
        tasks=["agent"],
        calling="tools",
        concurrency=2,
        limit=2,
        progress=False,
        options=TaskOptions(calling="tools", trials=3),
        user_client=Scripted(polite_user),
        user_model={"name": "u"},
    )
    assert res.tasks["agent"].cases == 6
    assert {s for s, _ in seeds} == {0, 1, 2} and {t for _, t in seeds} == {0.7}
    scores = score_run(tmp_path / "run")["agent"]
    rel = scores["reliability"]
    assert rel["trials"] == 3 and rel["tasks"] == 2 and set(rel["pass^k"]) == {"1", "2", "3"}
    # the scripted assistant plays msg-wifi-off's gold everywhere: right for that scenario only
    per = {}
    for line in (tmp_path / "run/agent/records.jsonl").read_text().splitlines():
        r = json.loads(line)
        per.setdefault(r["id"].split("~")[0], []).append(r["ok"])
    expected = sum(all(v) for v in per.values()) / len(per)
    assert rel["pass^k"]["3"] == pytest.approx(expected)


def test_reliability_matches_tau_bench_definitions():
    oks = {"a": [1, 1, 0, 1], "b": [0, 0, 0, 1]}
    rows = [
        Row(id=f"{t}~t{i}", category="c", ok=bool(oks[t][i]), score=0.0, error_type=None, task=t, trial=True)
        for t in "ab"
        for i in range(4)
    ]
    rel = reliability(rows)
    from math import comb

    for k in range(1, 5):
        hat = (comb(3, k) / comb(4, k) + comb(1, k) / comb(4, k)) / 2
        at = (1 - comb(1, k) / comb(4, k) + 1 - comb(3, k) / comb(4, k)) / 2
        assert rel["pass^k"][str(k)] == pytest.approx(hat) and rel["pass@k"][str(k)] == pytest.approx(at)


def test_concurrent_trials_each_start_from_their_own_copy_of_the_state(tmp_path):
    from benchsmith.construction.sandbox import load_scenarios
    from benchsmith.eval import run_eval

    path = tmp_path / "one.jsonl"
    path.write_text(next(s for s in load_scenarios() if s.id == "msg-wifi-off").model_dump_json() + "\n")
    slow = Scripted(gold_wifi, delay=0.01)  # episodes interleave at every call
    res = run_eval(
        path,
        slow,
        {"name": "s"},
        tmp_path / "run",
        tasks=["agent"],
        calling="tools",
        concurrency=4,
        progress=False,
        options=TaskOptions(calling="tools", trials=4),
        user_client=Scripted(polite_user),
        user_model={"name": "u"},
    )
    assert res.tasks["agent"].done == 4
    for line in (tmp_path / "run/agent/predictions.jsonl").read_text().splitlines():
        pred = json.loads(json.loads(line)["result"])
        assert len(pred["final_state"]["messaging"]["messages"]) == 5  # one sent message each, none from the others
    assert score_run(tmp_path / "run")["agent"]["reliability"]["pass^k"]["4"] == 1.0


@pytest.mark.skipif(not os.environ.get("BENCHSMITH_SHARED_DATA"), reason="BENCHSMITH_SHARED_DATA is not set")
def test_acebench_gold_milestones_played_as_episodes_reach_the_gold_end_state():
    """ACEBench's own agent records: an assistant that plays the gold milestones through the episode
    loop passes exactly the records whose gold replays consistently (the self-test lists the rest)."""
    from benchsmith.eval.acebench._decode import DecodeError, decode_strict

    data = Path(os.environ["BENCHSMITH_SHARED_DATA"]) / "acebench_en"
    bench = get_benchmark("acebench")
    task = get_task("acebench")(data, TaskOptions(calling="tools"))
    cases = [c for c in bench.load(data) if c.category.startswith("agent")]
    consistent = {c.id for c in cases if bench.score(c, bench.gold_prediction(c), "strict").ok}
    passed = set()
    for case in cases:
        stones = case.gold["milestones"]
        stones = stones[0] if stones and isinstance(stones[0], list) else stones

        def gold(messages, kw, stones=stones):
            done = sum(1 for m in messages if m["role"] == "assistant" and m.get("tool_calls"))
            while done < len(stones):
                try:
                    calls = decode_strict(stones[done])
                    return call(*[(next(iter(c)), c[next(iter(c))]) for c in calls])
                except DecodeError:  # a milestone that is not Python: the gold cannot be played
                    return say("I cannot do this step.")
            return say("All done.")

        user = Scripted(
            lambda m, k: say("Please do what my instruction says." if own_turns(m) == 0 else "finish conversation")
        )
        ctx = CallContext(Scripted(gold), "tools", {}, Counter(), user_client=user)
        out = asyncio.run(task.solve(case, ctx))
        if all(bench.score(case, out.result, mode).ok for mode in ("official", "strict")):
            passed.add(case.id)
    assert len(cases) == 50 and passed == consistent and len(consistent) == 31
