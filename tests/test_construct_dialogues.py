"""The ``dialogues`` construction graph with a scripted chat model (reply = pure function of the
messages): user agent <-> assistant agent <-> tools on a real sandbox scenario and on a real NL2API
split, simulated tools, the turn and step budgets, end-state checking, review routing and resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dialogue_scripts import ASSISTANT, FOOD, USER, food_assistant, food_user, wifi_assistant
from helpers import build_slot_split, pair_lines
from scripted_chat import ScriptedChat, by_task

import benchsmith.construction.graphs.dialogues  # noqa: F401 - registers the graph
from benchsmith.construction import ChatModelRole, EnvContext, RoleModels, run_graph
from benchsmith.construction.checks import run_checks
from benchsmith.construction.sandbox import load_scenarios
from benchsmith.models import TransportError
from benchsmith.schemas import Sample, read_jsonl

SIMULATE = "simulate"


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()] if path.exists() else []


def _scenarios(tmp_path: Path, *ids: str) -> Path:
    chosen = [s for s in load_scenarios() if s.id in ids]
    assert len(chosen) == len(ids)
    path = tmp_path / "scenarios.jsonl"
    path.write_text("".join(s.model_dump_json(exclude_none=True) + "\n" for s in chosen), encoding="utf-8")
    return path


def _models(**replies) -> RoleModels:
    return RoleModels(default=ScriptedChat(script=by_task(**replies)))


def test_a_full_dialogue_on_a_sandbox_scenario_is_accepted(tmp_path: Path) -> None:
    s = run_graph("dialogues", _scenarios(tmp_path, "food-order-basic"), tmp_path / "d", models=_models(**FOOD))
    assert s.samples == 1 and s.calls_by_node == {"user_turn": 3, "assistant_turn": 4}
    (d,) = read_jsonl(tmp_path / "d" / "samples.jsonl", Sample)
    assert d.query is None
    assert [m.role for m in d.dialogue] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    login, order = d.dialogue[3].tool_calls[0], d.dialogue[5].tool_calls[0]
    assert (login.name, login.label, order.name, order.label) == ("food_login", "out_1", "place_order", "out_2")
    assert d.dialogue[4].name == "out_1" and json.loads(d.dialogue[6].content)["total"] == 19.0  # the sandbox answered
    assert [g.call for g in d.gold] == [login, order] and all(g.verdict == "success" for g in d.gold)
    assert d.gold[1].observation == json.loads(d.dialogue[6].content)
    assert d.categories == ["dialogue", "multi_turn", "multi_step"]
    meta = d.metadata
    assert meta["environment"]["kind"] == "sandbox" and meta["scenario_id"] == "food-order-basic"
    assert meta["persona"].startswith("You are Mina") and meta["goal"].startswith("Log in to the food app")
    assert meta["turns"] == 2 and meta["closing_message"] == "Thanks!" and meta["simulated_calls"] == 0
    assert (
        meta["final_state"]["food"]["session"] == "Mina"
        and meta["final_state"]["food"]["accounts"]["Mina"]["balance"] == 41.0
    )
    assert d.provenance.method == "construct.dialogues" and d.provenance.versions["graph"] == "dialogues@v2"
    assert d.provenance.versions["prompt.user_turn"].startswith("construction/dialogue_user@v1-")
    report = run_checks(d)  # well-formed dialogue, gold = its calls, and the calls replay in the sandbox
    assert report.accepted, report.results


def test_failed_real_calls_stay_in_the_dialogue_and_the_gold(tmp_path: Path) -> None:
    user = '{"message": "Tell Priya the slides are in her inbox.", "goal_met": false}'

    def said(last: str, messages: list[dict]) -> str:
        return '{"message": "Thanks.", "goal_met": true}' if last.startswith("Assistant:") else user

    s = run_graph(
        "dialogues",
        _scenarios(tmp_path, "msg-wifi-off"),
        tmp_path / "d",
        models=_models(**{USER: said, ASSISTANT: wifi_assistant}),
    )
    assert s.samples == 1, _lines(tmp_path / "d" / "error_pool.jsonl")
    (d,) = read_jsonl(tmp_path / "d" / "samples.jsonl", Sample)
    assert [g.verdict for g in d.gold] == ["input_error", "success", "success"]
    assert d.gold[0].observation["error"] == "offline"
    assert json.loads(d.dialogue[2].content)["error"] == "offline"
    assert [m.role for m in d.dialogue] == ["user", "assistant", "tool", "assistant", "tool", "tool", "assistant"]
    assert d.categories == ["dialogue", "multi_step"] and d.metadata["failed_calls"] == 1
    assert run_checks(d).accepted, run_checks(d).results

    s = run_graph(
        "dialogues",
        _scenarios(tmp_path, "msg-wifi-off"),
        tmp_path / "strict",
        models=_models(**{USER: said, ASSISTANT: wifi_assistant}),
        options={"allow_failed_calls": False},
    )
    assert s.rejected_by == {"finalize:failed_call": 1}


def test_a_wrong_end_state_is_rejected_with_the_differing_keys(tmp_path: Path) -> None:
    wrong = food_assistant

    def assistant(last: str, messages: list[dict]) -> str:
        return wrong(last, messages).replace('"quantity": 2', '"quantity": 3')

    s = run_graph(
        "dialogues",
        _scenarios(tmp_path, "food-order-basic"),
        tmp_path / "d",
        models=_models(**{USER: food_user, ASSISTANT: assistant}),
    )
    assert s.samples == 0 and s.rejected_by == {"finalize:end_state_mismatch": 1}
    (row,) = _lines(tmp_path / "d" / "error_pool.jsonl")
    reason = row["rejected_by"]["reason"]
    assert "food.accounts.Mina.balance" in reason and "food.orders.0.total" in reason
    assert row["candidate"]["state_diff"] and row["candidate"]["env_state"]["food"]["orders"][0]["total"] == 28.5


# -- budgets and unreadable replies -------------------------------------------------------------------------
def test_the_turn_budget_ends_a_dialogue_whose_goal_is_never_met(tmp_path: Path) -> None:
    m = _models(**{USER: '{"message": "That is not what I wanted.", "goal_met": false}', ASSISTANT: food_assistant})
    s = run_graph(
        "dialogues", _scenarios(tmp_path, "food-order-basic"), tmp_path / "d", models=m, options={"max_turns": 2}
    )
    assert s.rejected_by == {"budget:turn_budget": 1}
    assert s.calls_by_node == {"user_turn": 3, "assistant_turn": 2}  # the third user message is never sent
    (row,) = _lines(tmp_path / "d" / "error_pool.jsonl")
    assert sum(1 for x in row["candidate"]["dialogue"] if x["role"] == "user") == 2


def test_the_step_budget_stops_an_assistant_that_never_answers(tmp_path: Path) -> None:
    m = _models(**{USER: food_user, ASSISTANT: '{"tool_calls": [{"name": "device_status", "arguments": {}}]}'})
    s = run_graph(
        "dialogues", _scenarios(tmp_path, "food-order-basic"), tmp_path / "d", models=m, options={"max_steps": 3}
    )
    # the turn rules eval episodes play by: three replies after the user's message, no fourth is asked
    assert s.rejected_by == {"budget:step_budget": 1} and s.calls_by_node["assistant_turn"] == 3


@pytest.mark.parametrize(
    "said", ["Assistant: I placed the order.", "Please run place_order(item='pizza') for me.", "   "]
)
def test_a_user_who_breaks_its_role_goes_to_review(tmp_path: Path, said: str) -> None:
    m = _models(**{USER: json.dumps({"message": said, "goal_met": False}), ASSISTANT: food_assistant})
    s = run_graph("dialogues", _scenarios(tmp_path, "food-order-basic"), tmp_path / "d", models=m)
    assert s.review == 1 and s.samples == 0 and s.calls_by_node == {"user_turn": 1}


def test_an_unreadable_assistant_reply_goes_to_review_with_the_raw_text(tmp_path: Path) -> None:
    m = _models(**{USER: food_user, ASSISTANT: "Sure, I will order that for you right away!"})
    s = run_graph("dialogues", _scenarios(tmp_path, "food-order-basic"), tmp_path / "d", models=m)
    assert s.review == 1 and s.samples == 0 and s.calls_by_node == {"user_turn": 1, "assistant_turn": 1}
    (row,) = _lines(tmp_path / "d" / "review.jsonl")
    assert row["raw"] == {"assistant_turn": "Sure, I will order that for you right away!"}
    assert row["reasons"][0]["code"] == "not_json"


def test_an_unknown_tool_and_a_dialogue_without_calls(tmp_path: Path) -> None:
    m = _models(**{USER: food_user, ASSISTANT: '{"tool_calls": [{"name": "order_pizza", "arguments": {}}]}'})
    s = run_graph("dialogues", _scenarios(tmp_path, "food-order-basic"), tmp_path / "a", models=m)
    assert s.rejected_by == {"review:unknown_tool": 1}
    m = _models(**{USER: food_user, ASSISTANT: '{"message": "Done, enjoy your meal."}'})
    s = run_graph("dialogues", _scenarios(tmp_path, "food-order-basic"), tmp_path / "b", models=m)
    assert s.rejected_by == {"finalize:no_tool_call": 1}


# -- no environment: the tool simulator answers ------------------------------------------------------------
WEATHER = {
    "name": "get_weather",
    "description": "The weather forecast for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}},
        "required": ["city"],
    },
}


def _goal_samples(tmp_path: Path) -> Path:
    sample = Sample(
        query="Find out whether it will rain in Oslo and in Bergen tomorrow.",
        tools=[WEATHER],
        metadata={"persona": "You are Ola, a hiker."},
        provenance={"source": "test", "method": "manual", "created_at": "2025-01-01T00:00:00Z"},
    )
    path = tmp_path / "goals.jsonl"
    path.write_text(sample.model_dump_json(exclude_none=True) + "\n", encoding="utf-8")
    return path


def weather_user(last: str, messages: list[dict]) -> str:
    if last.startswith("Assistant:"):
        return '{"message": "Thanks.", "goal_met": true}'
    return '{"message": "Will it rain in Oslo or Bergen tomorrow?", "goal_met": false}'


def weather_assistant(last: str, messages: list[dict]) -> str:
    if last.startswith("User:"):
        return (
            '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}, '
            '{"name": "get_weather", "arguments": {"city": "Bergen"}}]}'
        )
    return '{"message": "Rain in both cities."}'


def test_tools_without_an_environment_are_simulated(tmp_path: Path) -> None:
    m = _models(
        **{
            USER: weather_user,
            ASSISTANT: weather_assistant,
            SIMULATE: '{"ok": true, "observation": "{\\"sky\\": \\"rain\\"}"}',
        }
    )
    s = run_graph("dialogues", _goal_samples(tmp_path), tmp_path / "d", models=m)
    assert s.samples == 1 and s.calls_by_node == {"user_turn": 2, "assistant_turn": 2, "simulate": 2}
    (d,) = read_jsonl(tmp_path / "d" / "samples.jsonl", Sample)
    assert [g.observation for g in d.gold] == [{"sky": "rain"}, {"sky": "rain"}]
    assert d.metadata["simulated_calls"] == 2 and "environment" not in d.metadata and "final_state" not in d.metadata
    assert d.metadata["persona"] == "You are Ola, a hiker." and d.categories == ["dialogue", "multi_step"]
    assert run_checks(d).accepted


def test_an_unreadable_simulation_goes_to_review(tmp_path: Path) -> None:
    m = _models(**{USER: weather_user, ASSISTANT: weather_assistant, SIMULATE: "It rains."})
    s = run_graph("dialogues", _goal_samples(tmp_path), tmp_path / "d", models=m)
    assert s.review == 1 and _lines(tmp_path / "d" / "review.jsonl")[0]["raw"] == {"simulate": "It rains."}


# -- a real NL2API split: set-up outputs and references to earlier outputs ---------------------------------------
def test_a_dialogue_on_a_real_nl2api_split(tmp_path: Path) -> None:
    split = build_slot_split(tmp_path, pair_lines()[:3])

    def user(last: str, messages: list[dict]) -> str:
        if last.startswith("Assistant:"):
            return '{"message": "Thanks.", "goal_met": true}'
        return '{"message": "How many tracks are there in total?", "goal_met": false}'

    def assistant(last: str, messages: list[dict]) -> str:
        if last.startswith("User:"):
            return '{"tool_calls": [{"name": "aggregate_data", "arguments": {"data_source": "$data_1$", "aggregation": "count"}}]}'
        return '{"message": "There are that many tracks."}'

    s = run_graph(
        "dialogues",
        split / "samples.jsonl",
        tmp_path / "d",
        models=_models(**{USER: user, ASSISTANT: assistant}),
        env_context=EnvContext(split=split),
        limit=1,
    )
    assert s.samples == 1, _lines(tmp_path / "d" / "error_pool.jsonl")
    (d,) = read_jsonl(tmp_path / "d" / "samples.jsonl", Sample)
    import sqlite3

    source = d.setup[0].arguments["source"]
    (count,) = sqlite3.connect(split / "database.sqlite").execute(f'SELECT COUNT(*) FROM "{source}"').fetchone()  # noqa: S608
    assert d.gold[0].observation == count  # the real database answered
    assert d.metadata["environment"]["kind"] == "nl2api" and d.metadata["source_sample_id"]
    assert run_checks(d).accepted, run_checks(d).results


# -- resume ----------------------------------------------------------------------------------------------------------
class Counting:
    """A role model that counts its calls; ``fail_at`` makes that call a transport error."""

    def __init__(self, replies: dict, fail_at: int | None = None) -> None:
        self.inner = ChatModelRole(ScriptedChat(script=by_task(**replies)), name="counted")
        self.name = "counted"
        self.calls = 0
        self.fail_at = fail_at

    def complete(self, messages, **kw):
        self.calls += 1
        if self.calls == self.fail_at:
            raise TransportError("connection reset", kind="connection")
        return self.inner.complete(messages, **kw)


def test_a_rerun_gives_the_same_outputs_without_new_model_calls(tmp_path: Path) -> None:
    source = _scenarios(tmp_path, "food-order-basic")
    counted = Counting(FOOD)
    first = run_graph("dialogues", source, tmp_path / "d", models=RoleModels(default=counted))
    calls = counted.calls
    out1 = (tmp_path / "d" / "samples.jsonl").read_text()
    second = run_graph("dialogues", source, tmp_path / "d", models=RoleModels(default=counted))
    assert counted.calls == calls == first.model_calls == 7 and second.skipped_done == 1
    ids = [json.loads(x)["id"] for x in out1.splitlines()]
    assert [s.id for s in read_jsonl(tmp_path / "d" / "samples.jsonl", Sample)] == ids and second.samples == 1


def test_an_interrupted_dialogue_resumes_where_it_stopped(tmp_path: Path) -> None:
    source = _scenarios(tmp_path, "food-order-basic")
    broken = Counting(FOOD, fail_at=5)  # the assistant's call after the login result
    first = run_graph("dialogues", source, tmp_path / "d", models=RoleModels(default=broken))
    assert first.samples == 0 and first.errors and first.unfinished == 1
    again = Counting(FOOD)
    second = run_graph("dialogues", source, tmp_path / "d", models=RoleModels(default=again))
    assert second.resumed == 1 and second.samples == 1 and again.calls == 3  # only the calls not yet made
    (d,) = read_jsonl(tmp_path / "d" / "samples.jsonl", Sample)
    assert d.metadata["final_state"]["food"]["accounts"]["Mina"]["balance"] == 41.0  # replay did not order twice
    assert [m.role for m in d.dialogue].count("tool") == 2


def test_the_packaged_scenarios_are_items() -> None:
    from benchsmith.construction import get_graph

    items = get_graph("dialogues")().read_items("sandbox")
    assert len(items) == len(load_scenarios()) and all(i["metadata"]["expected_state"] for _, i in items)


def test_a_dialogue_on_a_live_mcp_server(tmp_path: Path) -> None:
    """The graph on ``mcp-server-sqlite`` (a third-party MCP server) on a fresh copy of the shop's
    state template: the call runs on the server, the final state is what the probe reads, and the
    dialogue replays to the same end state on another fresh server."""
    from mcp_servers import shop_environment

    env = {"kind": "mcp", "file": str(shop_environment(tmp_path / "shop") / "environment.json")}
    insert = {"query": "INSERT INTO item (name) VALUES ('cup')"}
    item = {
        "query": "Add a cup to the shop's items.",
        "tools": [
            {
                "name": "write_query",
                "description": "Run an INSERT, UPDATE or DELETE on the shop database.",
                "parameters": {
                    "properties": {"query": {"type": "string", "description": "the SQL statement"}},
                    "required": ["query"],
                },
            }
        ],
        "metadata": {"environment": env},
        "provenance": {"source": "test", "method": "hand", "created_at": "2026-11-29T00:00:00Z"},
    }
    (tmp_path / "items.jsonl").write_text(json.dumps(item) + "\n", encoding="utf-8")

    def user(last: str, messages: list[dict]) -> str:
        if last.startswith("Assistant:"):
            return '{"message": "Thanks.", "goal_met": true}'
        return '{"message": "Please add a cup to the shop items.", "goal_met": false}'

    def assistant(last: str, messages: list[dict]) -> str:
        if last.startswith("User:"):
            return json.dumps({"tool_calls": [{"name": "write_query", "arguments": insert}]})
        return '{"message": "The cup is in."}'

    s = run_graph(
        "dialogues", tmp_path / "items.jsonl", tmp_path / "d", models=_models(**{USER: user, ASSISTANT: assistant})
    )
    assert s.samples == 1, _lines(tmp_path / "d" / "error_pool.jsonl")
    (d,) = read_jsonl(tmp_path / "d" / "samples.jsonl", Sample)
    assert d.gold[0].call.arguments == insert and d.gold[0].verdict == "success"
    assert "1" in json.dumps(d.gold[0].observation)  # the server's own answer: one row affected
    rows = d.metadata["final_state"]["probes"][0]
    assert "'cup'" in rows and "'pen'" in rows and "'ink'" in rows
    report = run_checks(d)  # the calls replay on a fresh server to the same end state
    assert report.accepted, report.results
