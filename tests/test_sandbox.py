"""Sandbox scenarios: domains, tool schemas, argument checks, preconditions, metrics, scenarios.

Most cases are data in ``fixtures/sandbox/*.jsonl`` (one parametrized test per file):
``calls_ok`` / ``preconditions`` / ``arguments`` run calls on a sandbox built from ``config`` and
expect an ``observation`` or an ``error`` code per call, then a (partial) end ``state``;
``end_state`` and ``process`` pin the metrics; ``config_errors`` the messages of bad configs;
``scenarios_broken`` scenarios that must fail verification with the listed checks and codes.
"""

from __future__ import annotations

import copy
import importlib.resources
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from benchsmith.construction._private.envs import open_environment
from benchsmith.construction.checks import CHECKS, run_checks
from benchsmith.construction.nl2api import ToolError as NL2APIToolError
from benchsmith.construction.sandbox import (
    DOMAINS,
    CallRecord,
    Domain,
    Sandbox,
    Scenario,
    ToolError,
    call_signature,
    domain,
    end_state_accuracy,
    load_scenarios,
    process_accuracy,
    scenario_to_sample,
    state_mismatches,
    tool,
    verify_scenario,
)
from benchsmith.schemas import JsonlError, Sample, StrictModel, UserError

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sandbox"


def _rows(name: str) -> list[dict]:
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _params(name: str) -> list:
    return [pytest.param(row, id=row["name"]) for row in _rows(name)]


def _run_case(case: dict) -> None:
    sb = Sandbox(copy.deepcopy(case["config"]))
    for i, call in enumerate(case["calls"], 1):
        before = sb.state()
        where = f"call {i} ({call['name']})"
        if "error" in call:
            with pytest.raises(ToolError) as info:
                sb.call(call["name"], call["arguments"], call.get("label"))
            assert info.value.code == call["error"], f"{where}: {info.value}"
            assert sb.state() == before, f"{where}: a failed call changed the state"
            assert sb.log[-1].ok is False and sb.log[-1].error_code == call["error"]
        else:
            try:
                obs = sb.call(call["name"], call["arguments"], call.get("label"))
            except ToolError as exc:
                pytest.fail(f"{where} failed with {exc.code}: {exc}")
            json.dumps(obs)  # JSON-able
            if "observation" in call:
                assert obs == call["observation"], where
            assert sb.log[-1].ok is True and sb.log[-1].observation == obs
    assert len(sb.log) == len(case["calls"])
    if "state" in case:
        problems = state_mismatches(sb.state(), case["state"])
        assert not problems, problems


# ----------------------------------------------------------------------------- data-driven


@pytest.mark.parametrize("case", _params("calls_ok.jsonl"))
def test_calls_ok(case):
    _run_case(case)


@pytest.mark.parametrize("case", _params("preconditions.jsonl"))
def test_preconditions(case):
    assert any("error" in c for c in case["calls"])
    _run_case(case)


@pytest.mark.parametrize("case", _params("arguments.jsonl"))
def test_arguments(case):
    _run_case(case)


@pytest.mark.parametrize("case", _params("end_state.jsonl"))
def test_end_state(case):
    assert end_state_accuracy(case["final"], case["expected"]) is case["match"]
    problems = state_mismatches(case["final"], case["expected"])
    assert bool(problems) is not case["match"]
    for fragment in case.get("where", []):
        assert any(p.startswith(fragment) for p in problems), problems


@pytest.mark.parametrize("case", _params("process.jsonl"))
def test_process(case):
    executed = [
        CallRecord(**{k: v for k, v in c.items() if k != "record"}) if c.get("record") else c for c in case["executed"]
    ]
    assert process_accuracy(executed, case["milestones"]) == pytest.approx(case["score"])


@pytest.mark.parametrize("case", _params("config_errors.jsonl"))
def test_config_errors(case):
    with pytest.raises(UserError) as info:
        Sandbox(case["config"])
    for fragment in case["message"]:
        assert fragment in str(info.value)


@pytest.mark.parametrize("case", _params("scenarios_broken.jsonl"))
def test_scenarios_broken(case):
    report = verify_scenario(case["scenario"])
    assert not report.ok
    failed = {c.name: c.code for c in report.checks if not c.ok}
    assert failed == case["failed"], report.reasons
    assert len(report.reasons) == len(failed)
    with pytest.raises(UserError, match="does not verify"):
        scenario_to_sample(case["scenario"])


# ----------------------------------------------------------------------------- packaged scenarios


SCENARIOS = load_scenarios()


def test_packaged_scenarios_cover_the_domains():
    assert len(SCENARIOS) >= 12
    assert len({s.id for s in SCENARIOS}) == len(SCENARIOS)
    used = {d for s in SCENARIOS for d in s.domains}
    assert {"device", "messaging", "reminders", "food"} <= used
    apps = [set(s.domains) - {"device"} for s in SCENARIOS]
    assert sum(len(a) >= 2 for a in apps) >= 3
    assert any(len(s.gold) == 1 for s in SCENARIOS) and any(len(s.gold) >= 3 for s in SCENARIOS)


@pytest.mark.parametrize("scenario", [pytest.param(s, id=s.id) for s in SCENARIOS])
def test_packaged_scenario_verifies(scenario):
    report = verify_scenario(scenario)
    assert report.ok, report.reasons
    assert end_state_accuracy(report.final_state, scenario.expected_state)
    assert process_accuracy(report.log, [[m.model_dump() for m in alt] for alt in scenario.milestone_lists()]) == 1.0


@pytest.mark.parametrize("scenario", [pytest.param(s, id=s.id) for s in SCENARIOS])
def test_packaged_scenario_sample(scenario):
    created = datetime(2025, 1, 1, tzinfo=timezone.utc)
    sample = scenario_to_sample(scenario, created_at=created)
    again = Sample.model_validate_json(sample.model_dump_json())
    assert again == sample
    wanted = [n for n in ("tool_docs", "gold_signature", "gold_references", "executability") if n in CHECKS]
    report = run_checks(sample, wanted)
    assert report.accepted, report.results
    assert all(r.code != "skipped" for r in report.results), report.results  # replayed in its sandbox
    assert sample.query == scenario.query
    assert sample.categories[0] == "agent" and set(scenario.domains) <= set(sample.categories)
    assert sample.provenance.method == "sandbox" and sample.provenance.source_id == scenario.id
    assert sample.verification.status == "verified"
    assert sample.answer.kind == "none"
    env = sample.metadata["environment"]
    assert env == {"kind": "sandbox", "config": scenario.domains}
    assert sample.metadata["expected_state"] == scenario.expected_state
    assert len(sample.gold) == len(scenario.gold) and all(st.verdict == "success" for st in sample.gold)
    # replaying the sample's gold in the environment it names reaches the expected state
    sb = open_environment(env)
    for step in sample.gold:
        assert sb.call(step.call.name, step.call.arguments, step.call.label) == step.observation
    assert end_state_accuracy(sb.state(), sample.metadata["expected_state"])
    assert process_accuracy(sb.log, sample.metadata["milestones"]) == 1.0
    assert {t.name for t in sample.tools} == {t.name for t in sb.tools()}


def test_sample_with_state_answer():
    s = SCENARIOS[0]
    sample = scenario_to_sample(s, answer="state")
    assert sample.answer.kind == "exact"
    assert sample.answer.value == verify_scenario(s).final_state


def test_scenario_without_milestones_uses_gold():
    row = json.loads(json.dumps(SCENARIOS[0].model_dump(mode="json", exclude_none=True)))
    row["milestones"] = []
    s = Scenario.model_validate(row)
    assert s.milestone_lists() == [s.gold]
    assert verify_scenario(s).ok


def test_packaged_data_is_a_package_resource():
    res = importlib.resources.files("benchsmith.construction.sandbox") / "data" / "scenarios.jsonl"
    assert res.is_file()
    assert len([line for line in res.read_text(encoding="utf-8").splitlines() if line.strip()]) == len(SCENARIOS)


# ----------------------------------------------------------------------------- loading scenarios


def _write(tmp_path: Path, rows: list) -> Path:
    path = tmp_path / "scenarios.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def test_load_scenarios_reports_bad_rows_with_lines(tmp_path):
    good = SCENARIOS[0].model_dump(mode="json", exclude_none=True)
    unknown_domain = {**good, "id": "x1", "domains": {"weather": {}}}
    bad_config = {**good, "id": "x2", "domains": {"device": {}, "messaging": {"owner": ""}}}
    bad_tool = {**good, "id": "x3", "gold": [{"name": "fly_drone", "arguments": {}}]}
    stray_expected = {**good, "id": "x4", "expected_state": {"food": {}}}
    path = _write(tmp_path, [good, "{oops", unknown_domain, bad_config, bad_tool, stray_expected, good])
    with pytest.raises(JsonlError) as info:
        load_scenarios(path)
    lines = {e.line: e.message for e in info.value.errors}
    assert sorted(lines) == [2, 3, 4, 5, 6, 7]
    assert "weather" in lines[3]
    assert "messaging.owner" in lines[4]
    assert "fly_drone" in lines[5]
    assert "food" in lines[6]
    assert "repeats line 1" in lines[7]
    assert f"{path}:3:" in str(info.value) and "fix:" in str(info.value)


def test_load_scenarios_missing_file(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        load_scenarios(tmp_path / "none.jsonl")


def test_load_scenarios_round_trip(tmp_path):
    path = _write(tmp_path, [s.model_dump(mode="json", exclude_none=True) for s in SCENARIOS[:3]])
    assert load_scenarios(path) == SCENARIOS[:3]


# ----------------------------------------------------------------------------- engine and schemas


CONFIG = {
    "device": {},
    "messaging": {"owner": "Mina", "contacts": ["Leo"]},
    "reminders": {"now": "2025-03-10 08:00"},
    "food": {"accounts": {"Mina": {"password": "pw", "balance": 10}}, "restaurants": {"Wok": {"menu": {"Rice": 4}}}},
}


def test_tools_are_unique_documented_and_typed():
    sb = Sandbox(CONFIG)
    tools = sb.tools()
    names = [t.name for t in tools]
    assert len(names) == len(set(names)) >= 25
    for t in tools:
        assert t.domain in CONFIG and t.category == "sandbox"
        assert len(t.description.split()) >= 3
        for prop in t.parameters.properties.values():
            assert prop["description"].strip() and "type" in prop
    by_name = {t.name: t for t in tools}
    order = by_name["place_order"].parameters
    assert order.required == ["restaurant", "items"]
    items = order.properties["items"]
    assert items["type"] == "array"
    assert items["items"]["type"] == "object" and items["items"]["required"] == ["dish"]
    assert items["items"]["properties"]["quantity"] == {
        "type": "integer",
        "description": "How many portions (at least 1).",
        "default": 1,
    }
    rem = by_name["add_reminder"].parameters
    assert rem.required == ["title", "time"] and rem.properties["note"]["type"] == "string"
    assert by_name["list_reminders"].parameters.properties["include_done"]["type"] == "boolean"
    assert by_name["delete_message"].parameters.properties["message_id"]["type"] == "integer"
    assert by_name["unlock_device"].parameters.required == []


def test_tools_follow_config():
    assert {t.domain for t in Sandbox({"reminders": {"now": "2025-03-10 08:00"}}).tools()} == {"reminders"}


def test_tool_error_is_the_environment_tool_error():
    assert ToolError is NL2APIToolError


def test_state_is_json_and_detached():
    sb = Sandbox(CONFIG)
    snap = sb.state()
    assert json.loads(json.dumps(snap)) == snap
    snap["messaging"]["contacts"].append("Zed")
    assert sb.state()["messaging"]["contacts"] == ["Leo"]
    obs = sb.call("list_messages", {})
    obs["messages"].append("x")
    assert sb.log[-1].observation == {"messages": [], "stored": 0, "capacity": 20}


def test_config_is_not_mutated_and_sandboxes_are_independent():
    config = copy.deepcopy(CONFIG)
    a, b = Sandbox(config), Sandbox(config)
    a.call("send_message", {"recipient": "Leo", "text": "hi"})
    assert config == CONFIG
    assert b.state()["messaging"]["messages"] == []


def test_deterministic_runs():
    calls = [
        ("food_login", {"username": "Mina", "password": "pw"}),
        ("place_order", {"restaurant": "Wok", "items": [{"dish": "Rice", "quantity": 2}]}),
        ("add_reminder", {"title": "Eat", "time": "2025-03-10 12:00"}),
        ("send_message", {"recipient": "Leo", "text": "lunch"}),
    ]
    runs = []
    for _ in range(2):
        sb = Sandbox(CONFIG)
        runs.append(([sb.call(n, a) for n, a in calls], sb.state(), [r.model_dump() for r in sb.log]))
    assert runs[0] == runs[1]


def test_labels_store_outputs_for_references():
    sb = Sandbox(CONFIG)
    sb.call("add_reminder", {"title": "A", "time": "2025-03-11 10:00"}, label="a")
    assert sb.outputs["a"]["reminder_id"] == 1
    sb.call("complete_reminder", {"reminder_id": "$a.reminder_id$"})
    assert sb.log[-1].arguments == {"reminder_id": 1}  # the log holds resolved arguments
    assert sb.state()["reminders"]["reminders"][0]["done"] is True


def test_guard_order_device_before_arguments_are_used():
    sb = Sandbox({"device": {"unlocked": False}, "food": {}})
    with pytest.raises(ToolError) as info:
        sb.call("get_menu", {"restaurant": "Nowhere"})
    assert info.value.code == "device_locked"


def test_duplicate_tool_names_across_domains_are_a_user_error():
    class _State(StrictModel):
        pass

    @domain("_test_clash")
    class Clash(Domain):
        State = _State

        @tool
        def send_message(self) -> dict:
            """Send something else entirely."""
            return {}

    try:
        with pytest.raises(UserError, match="both define tool send_message"):
            Sandbox({"messaging": {"owner": "M"}, "_test_clash": {}})
        assert Sandbox({"_test_clash": {}}).call("send_message", {}) == {}
    finally:
        DOMAINS.pop("_test_clash")


def test_failed_call_rolls_back_a_half_done_change():
    class _State(StrictModel):
        items: list[int] = []

    @domain("_test_half")
    class Half(Domain):
        State = _State

        @tool
        def add_two(self, first: int, second: int) -> dict:
            """Append two numbers to the list, the second must be positive.

            Args:
                first: The first number.
                second: The second number (positive).
            """
            self.state.items.append(first)
            if second <= 0:
                raise ToolError("add_two: second must be positive", code="not_positive")
            self.state.items.append(second)
            return {"items": list(self.state.items)}

    try:
        sb = Sandbox({"_test_half": {"items": [1]}})
        assert sb.call("add_two", {"first": 2, "second": 3}) == {"items": [1, 2, 3]}
        with pytest.raises(ToolError, match="positive"):
            sb.call("add_two", {"first": 4, "second": 0})
        assert sb.state() == {"_test_half": {"items": [1, 2, 3]}}
    finally:
        DOMAINS.pop("_test_half")


def test_domain_registration_rejects_bad_domains():
    class _State(StrictModel):
        x: int = 0

    with pytest.raises(ValueError, match="registered twice"):
        domain("messaging")(type("Again", (Domain,), {"State": _State}))
    with pytest.raises(TypeError, match="not described under Args"):

        @domain("_test_undocumented")
        class Undocumented(Domain):
            State = _State

            @tool
            def poke(self, times: int) -> dict:
                """Poke the thing a number of times."""
                return {}

    with pytest.raises(TypeError, match="unsupported sandbox parameter type"):

        @domain("_test_untyped")
        class Untyped(Domain):
            State = _State

            @tool
            def poke(self, what: dict) -> dict:
                """Poke the thing.

                Args:
                    what: What to poke.
                """
                return {}

    with pytest.raises(TypeError, match="no @tool methods"):
        domain("_test_empty")(type("Empty", (Domain,), {"State": _State}))
    assert not {"_test_undocumented", "_test_untyped", "_test_empty"} & set(DOMAINS)


def test_environment_descriptor_errors():
    with pytest.raises(UserError, match="no config"):
        open_environment({"kind": "sandbox"})
    with pytest.raises(UserError, match="unknown key"):
        open_environment({"kind": "sandbox", "config": CONFIG, "seed": 1})
    with pytest.raises(UserError, match="unknown sandbox domain"):
        open_environment({"kind": "sandbox", "config": {"bank": {}}})
    env = open_environment({"kind": "sandbox", "config": CONFIG})
    assert isinstance(env, Sandbox)


def test_call_signature_is_canonical():
    a = call_signature({"name": "f", "arguments": {"b": [1.0, {"y": 2, "x": "é"}], "a": True}})
    assert a == 'f(a=true, b=[1,{"x":"é","y":2}])'
    assert call_signature({"name": "f"}) == "f()"
    with pytest.raises(TypeError, match="not a call"):
        call_signature(["f"])


# ----------------------------------------------------------------------------- ACEBench-flavoured domains
def test_acebench_domains_are_documented_and_typed():
    from benchsmith.construction.sandbox import ACEBENCH_CLASSES

    sb = Sandbox({name: {} for name in ACEBENCH_CLASSES.values()})
    tools = {t.name: t for t in sb.tools()}
    assert len(tools) == 28 and {t.domain for t in tools.values()} == set(ACEBENCH_CLASSES.values())
    for t in tools.values():
        assert len(t.description.split()) >= 3
        for prop in t.parameters.properties.values():
            assert prop["description"].strip() and "type" in prop
    items = tools["add_food_delivery_order"].parameters.properties["items"]
    assert items["type"] == "array" and items["items"] == {"type": "object"}
    assert tools["modify_flight"].parameters.required == ["user_id", "reservation_id"]


def test_acebench_calls_keep_a_half_done_change_as_acebench_does():
    sb = Sandbox({"acebench_travel": {}})
    with pytest.raises(ToolError) as info:  # the cabin changes and is paid for, then the bag count is no number
        sb.call(
            "modify_flight",
            {"user_id": "user1", "reservation_id": "res_1", "new_cabin": "Business Class", "add_baggage": "2"},
        )
    assert info.value.code == "tool_failed" and str(info.value) == "modify_flight: TypeError"
    state = sb.state()["acebench_travel"]
    assert state["reservations"][0]["cabin"] == "Business Class"
    assert state["users"]["user1"]["bank_balance"] == 50000.0 - 1800
    assert sb.log[-1].ok is False and sb.log[-1].arguments["add_baggage"] == "2"


def test_acebench_arguments_are_passed_as_given():
    sb = Sandbox({"acebench_phone": {"wifi": True}, "acebench_message": {}})
    # no schema check: a string id is looked up as it is (and not found), a null is kept
    assert sb.call("delete_message", {"message_id": "1"}) == {"status": False, "message": "no such message id"}
    assert sb.call("search_messages", {"user_name": "Eve", "keyword": None})["status"] is False
    assert sb.call("search_messages", {"user_name": "Eve", "keyword": "$x$"})["status"] is False  # no references
    with pytest.raises(ToolError, match="^send_message: TypeError$"):
        sb.call("send_message", {"sender_name": "Eve", "receiver_name": "Frank", "text": "hi"})


def test_acebench_sandbox_reads_acebench_records():
    from benchsmith.construction.sandbox import AceBenchSandbox

    # each class loads its own config, then BaseApi's, which wins (wifi off by default, logged in)
    box = AceBenchSandbox(
        ["MessageApi", "Nope", "FoodPlatform", "MessageApi"],
        {"MessageApi": {"wifi": True}, "BaseApi": {"logged_in_users": ["Eve"]}},
    )
    assert box.classes == ["MessageApi", "FoodPlatform"]
    assert box.sandbox.state()["acebench_phone"] == {"wifi": False, "logged_in": True}
    state = box.state()
    assert [next(iter(s)) for s in state] == ["MessageApi", "FoodPlatform"]  # BaseApi is not involved
    assert set(state[0]["MessageApi"]) == {"inbox"} and set(state[0]["MessageApi"]["inbox"]) == {
        "1",
        "2",
        "3",
        "4",
        "5",
        "6",
    }
    assert state[1]["FoodPlatform"]["logged_in_users"] == ["Eve"]
    assert set(state[1]["FoodPlatform"]) == {"users", "logged_in_users", "orders"}
    assert box.call("turn_on_wifi", {})["status"] is True
    with pytest.raises(ToolError, match="^no such function reserve_flight$"):
        box.call("reserve_flight", {})
    empty = AceBenchSandbox(["Nope"], {})
    assert empty.sandbox is None and empty.state() == []
    with pytest.raises(ToolError, match="^no such function turn_on_wifi$") as info:
        empty.call("turn_on_wifi", {})
    assert info.value.code == "unknown_tool"
    travel = AceBenchSandbox(["Travel"], {"BaseApi": {"wifi": True}})
    assert [next(iter(s)) for s in travel.state()] == ["Travel"]
    with pytest.raises(ToolError, match="no such function turn_on_wifi"):
        travel.call("turn_on_wifi", {})
