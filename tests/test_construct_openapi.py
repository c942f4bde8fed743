"""OpenAPI services as tool sources (issue 29): documents become tools (cases in
``fixtures/construct/openapi_documents.jsonl``), tool calls become requests
(``openapi_requests.jsonl``) and responses observations (``openapi_responses.jsonl``); then real
services on 127.0.0.1: a FastAPI service with ``$ref``s and an API-key scheme, imported from its
URL by the console script and called for real, and a REST split served by ``benchsmith nl2api
serve``, imported back from its own OpenAPI document, whose gold calls give the gold answers."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from helpers import clean_env, console_script, nesting_depth, one_error_line

from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db, default_pairs_path
from benchsmith.construction.openapi import (
    OpenApiSession,
    add_auth,
    check_openapi_document,
    is_loopback,
    observation_of_response,
    request_of,
    tools_from_openapi,
)
from benchsmith.models.procs import free_port, terminate, wait_until_up
from benchsmith.schemas import (
    EnvironmentFault,
    OpenApiAuth,
    OpenApiOperation,
    Sample,
    ToolError,
    UserError,
    read_json,
    read_jsonl,
    read_openapi_service,
)

FIXTURES = Path(__file__).parent / "fixtures" / "construct"


def _cases(name: str) -> list[dict]:
    return [json.loads(line) for line in open(FIXTURES / name, encoding="utf-8")]


DOCUMENTS = _cases("openapi_documents.jsonl")
REQUESTS = _cases("openapi_requests.jsonl")
RESPONSES = _cases("openapi_responses.jsonl")


@pytest.mark.parametrize("case", DOCUMENTS, ids=[c["why"] for c in DOCUMENTS])
def test_tools_from_openapi(case):
    def convert():
        if case.get("check"):
            check_openapi_document(case["input"], "doc.yaml")
        return tools_from_openapi(
            case["input"], name="svc", base_url="http://127.0.0.1:9", auth_env=case.get("auth_env")
        )

    if "error" in case:
        with pytest.raises(UserError, match=case["error"]):
            convert()
        return
    tools, service = convert()
    if case.get("depth_cut"):  # a recursive schema is inlined to a bounded depth, never forever
        assert 10 < nesting_depth(tools[0].parameters.properties) < 200
        return
    dumped = {t.name: t.model_dump(mode="json", exclude_none=True) for t in tools}
    for name, expected in case["expected"].get("tools", {}).items():
        for key, value in expected.items():
            assert dumped[name].get(key) == value, (name, key)
    operations = {op.tool: op.model_dump(mode="json") for op in service.operations}
    for name, expected in case["expected"].get("operations", {}).items():
        for key, value in expected.items():
            assert operations[name][key] == value, (name, key)
    if "auth" in case["expected"]:
        assert [a.model_dump(mode="json") for a in service.auth] == case["expected"]["auth"]


@pytest.mark.parametrize("case", REQUESTS, ids=[c["why"] for c in REQUESTS])
def test_request_of(case):
    operation = OpenApiOperation.model_validate(case["input"]["operation"])
    if "error" in case:
        with pytest.raises(ToolError) as caught:
            request_of(operation, case["input"]["arguments"])
        assert caught.value.code == case["error"]
        return
    request = request_of(operation, case["input"]["arguments"])
    if "auth" in case["input"]:
        auth, secret = case["input"]["auth"]
        add_auth(request, OpenApiAuth.model_validate(auth), secret)
    assert request._asdict() == case["expected"]


@pytest.mark.parametrize("case", RESPONSES, ids=[c["why"] for c in RESPONSES])
def test_observation_of_response(case):
    given = case["input"]
    args = (given["status"], given["content_type"], given["text"], "t", given.get("max_chars", 1000))
    if "error" in case:
        with pytest.raises(ToolError) as caught:
            observation_of_response(*args)
        assert caught.value.code == case["error"][0] and case["error"][1] in str(caught.value)
        return
    assert observation_of_response(*args) == case["expected"]


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:8000/openapi.json", True),
        ("http://localhost/x", True),
        ("http://[::1]:80/", True),
        ("http://127.8.9.1/", True),
        ("http://10.0.0.1/", False),
        ("https://example.com/openapi.json", False),
        ("http://127.0.0.1.example.com/", False),
    ],
)
def test_documents_are_fetched_from_this_machine_only(url, loopback):
    assert is_loopback(url) is loopback


def test_bad_documents_are_one_line_naming_the_file(tmp_path):
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("openapi: 3.1.0\ninfo: [unclosed\n", "utf-8")
    for source, words in (
        (str(bad_yaml), "not YAML or JSON at line"),
        (str(tmp_path / "missing.yaml"), "no such file"),
        ("https://example.com/openapi.json", "from files or from this machine only"),
    ):
        proc = subprocess.run(
            [console_script(), "tools", "import", "openapi", source, "--out", str(tmp_path / "out")],
            capture_output=True,
            text=True,
            env=clean_env(),
        )
        assert proc.returncode == 2, proc.stderr
        line = one_error_line(proc.stderr)
        assert words in line and source in line, line


# ---------------------------------------------------------------- real services ----
@contextlib.contextmanager
def _serving(argv: list[str], url: str, log: Path, env: dict[str, str]):
    """A service started in the background, up when ``url`` answers 200; stopped after."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)

    def ready() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False

    try:
        wait_until_up(proc.pid, ready, what=argv[1], wait=60, log_path=log)
        yield proc
    finally:
        terminate(proc.pid, 5, argv[1])
        proc.wait(timeout=10)


KEY_VAR = "PETS_KEY_FOR_TESTS"


@pytest.fixture(scope="module")
def pets(tmp_path_factory):
    """The pets service running, and its catalog imported by the console script from its URL."""
    root = tmp_path_factory.mktemp("pets")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = [sys.executable, str(FIXTURES / "openapi_pets_server.py"), "--port", str(port)]
    with _serving(server, f"{base}/health", root / "server.log", clean_env(PETS_API_KEY="k-123-secret")):
        out = root / "catalog"
        proc = subprocess.run(
            [console_script(), "tools", "import", "openapi", f"{base}/openapi.json", "--base-url", base]
            + ["--out", str(out), "--name", "pets", "--auth", f"APIKeyHeader={KEY_VAR}", "--timeout", "2"],
            capture_output=True,
            text=True,
            env=clean_env(),
        )
        assert proc.returncode == 0, proc.stderr
        yield out, proc.stdout


def test_import_writes_tools_and_service_without_secrets(pets, monkeypatch):
    out, stdout = pets
    assert "7 tools from" in stdout
    tools = {t["name"]: t for t in read_json(out / "tools.json", list)}
    assert sorted(tools) == ["add_pet", "broken", "delete_pet", "get_pet", "list_pets", "reset", "slow"]
    owner = tools["add_pet"]["parameters"]["properties"]["owner"]
    assert "$ref" not in json.dumps(owner) and "phone" in json.dumps(owner)  # FastAPI's $ref inlined
    assert tools["add_pet"]["parameters"]["required"] == ["name", "species"]
    assert tools["get_pet"]["parameters"]["required"] == ["pet_id"]
    service = read_openapi_service(out / "service.json")
    assert [a.model_dump() for a in service.auth] == [
        {"scheme": "APIKeyHeader", "kind": "api_key", "location": "header", "key": "X-API-Key", "env": KEY_VAR}
    ]
    for name in ("tools.json", "service.json"):
        assert "k-123-secret" not in (out / name).read_text("utf-8")


def test_calls_run_against_the_service(pets, monkeypatch):
    out, _ = pets
    service = read_openapi_service(out / "service.json")
    monkeypatch.setenv(KEY_VAR, "k-123-secret")
    with OpenApiSession(service) as session:
        assert session.call("list_pets", {"species": "cat"}) == [
            {"name": "Tom", "species": "cat", "owner": None, "id": 2}
        ]
        added = session.call("add_pet", {"name": "Bo", "species": "dog", "owner": {"name": "Ann"}})
        assert added["owner"] == {"name": "Ann", "phone": None}
        got = session.call("get_pet", {"pet_id": added["id"], "x-request-id": "r1"})
        assert (got["name"], got["request"]) == ("Bo", "r1")
        assert session.call("delete_pet", {"pet_id": added["id"]}) == {"deleted": added["id"]}
        with pytest.raises(ToolError) as gone:
            session.call("get_pet", {"pet_id": added["id"]})
        assert gone.value.code == "tool_error" and "HTTP 404" in str(gone.value)
        with pytest.raises(ToolError) as broken:
            session.call("broken", {})
        assert broken.value.code == "server_error" and "it broke" in str(broken.value)
        with pytest.raises(EnvironmentFault, match="pets: slow got no reply within 2 s"):
            session.call("slow", {})  # the import's --timeout 2 against a 5 s answer: the service hangs


def test_a_wrong_key_is_refused_and_a_missing_one_named(pets, monkeypatch):
    out, _ = pets
    service = read_openapi_service(out / "service.json")
    monkeypatch.setenv(KEY_VAR, "wrong")
    with OpenApiSession(service) as session, pytest.raises(ToolError) as refused:
        session.call("list_pets", {})
    assert "HTTP 401" in str(refused.value) and "wrong" not in str(refused.value).replace("a wrong", "")
    monkeypatch.delenv(KEY_VAR)
    with pytest.raises(UserError, match=f"reads \\${KEY_VAR}, which is not set"):
        OpenApiSession(service).__enter__()


def test_a_service_that_is_down_is_an_environment_fault(pets, monkeypatch):
    out, _ = pets
    service = read_openapi_service(out / "service.json")
    down = service.model_copy(update={"base_url": f"http://127.0.0.1:{free_port()}"})
    monkeypatch.setenv(KEY_VAR, "k-123-secret")
    with OpenApiSession(down) as session, pytest.raises(EnvironmentFault, match="OpenAPI service pets at http://127"):
        session.call("list_pets", {})


def test_a_rest_split_round_trips_through_its_openapi_document(tmp_path):
    """A REST split served by ``nl2api serve``, imported back from /openapi.json: the same tools, and
    every sample's gold call gives the sample's answer."""
    split = tmp_path / "rest"
    report = build_split(chinook_db(), default_pairs_path(), split, BuildOptions(style="rest", name="roundtrip"))
    assert report["verified"] == report["total"] > 10
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    serve = [console_script(), "nl2api", "serve", str(split), "--port", str(port)]
    with _serving(serve, f"{base}/", tmp_path / "serve.log", clean_env()):
        out = tmp_path / "catalog"
        proc = subprocess.run(
            [console_script(), "tools", "import", "openapi", f"{base}/openapi.json", "--out", str(out)]
            + ["--base-url", base],
            capture_output=True,
            text=True,
            env=clean_env(),
        )
        assert proc.returncode == 0, proc.stderr
        imported = {t["name"]: t for t in read_json(out / "tools.json", list)}
        original = {t["name"]: t for t in read_json(split / "tools.json", list)}
        assert sorted(imported) == sorted(original)
        for name, tool in original.items():
            assert sorted(imported[name]["parameters"]["properties"]) == sorted(tool["parameters"]["properties"])
            assert imported[name]["rest"] == tool["rest"]
        samples = list(read_jsonl(split / "samples.jsonl", Sample))
        assert len(samples) >= 10
        with OpenApiSession(read_openapi_service(out / "service.json")) as session:
            for sample in samples:
                call = sample.gold[0].call
                rows = session.call(call.name, dict(call.arguments))["rows"]
                expected = json.loads(json.dumps(sample.answer.value))
                if not sample.answer.ordered:
                    rows, expected = (sorted(r, key=json.dumps) for r in (rows, expected))
                assert rows == expected, sample.provenance.source_id


def test_secrets_never_reach_the_environment_of_this_test():
    assert KEY_VAR not in os.environ  # monkeypatch undid every setenv: no test leaks the key


def test_the_service_as_a_tool_environment_resets_and_replays(pets, monkeypatch):
    """The ``openapi`` environment: every opening runs the declared reset first, probes read the
    state, and the executability check replays a gold chain that writes."""
    from benchsmith.construction import EnvContext, close_environment, open_environment
    from benchsmith.construction.checks import CheckContext, run_checks
    from benchsmith.schemas import OpenApiEnvironment, ServiceCall, read_openapi_environment, write_openapi_environment

    out, _ = pets
    assert read_openapi_environment(out / "environment.json") == OpenApiEnvironment()  # written by the import
    spec = OpenApiEnvironment(
        reset=[ServiceCall(name="reset")], probes=[ServiceCall(name="list_pets", arguments={"limit": 50})]
    )
    write_openapi_environment(out / "environment.json", spec)
    monkeypatch.setenv(KEY_VAR, "k-123-secret")
    descriptor = {"kind": "openapi", "file": str(out / "environment.json")}
    env = open_environment(descriptor, EnvContext())
    try:
        start = env.state()
        assert [p["name"] for p in start["probes"][0]] == ["Rex", "Tom"]
        added = env.call("add_pet", {"name": "Bo", "species": "dog"}, "new")
        assert env.call("get_pet", {"pet_id": "$new.id$"}, "got")["name"] == "Bo"  # a reference, filled in
        assert len(env.state()["probes"][0]) == 3
    finally:
        close_environment(env)
    again = open_environment(descriptor, EnvContext())
    try:
        assert again.state() == start  # the reset put the service back
    finally:
        close_environment(again)
    sample = Sample.model_validate(
        {
            "query": "Add Bo the dog, then look him up.",
            "tools": read_json(out / "tools.json", list),
            "gold": [
                {
                    "call": {"name": "add_pet", "arguments": {"name": "Bo", "species": "dog"}, "label": "new"},
                    "observation": added,
                },
                {"call": {"name": "get_pet", "arguments": {"pet_id": "$new.id$"}, "label": "got"}},
            ],
            "metadata": {"environment": descriptor},
            "provenance": {"source": "test", "method": "hand", "created_at": "2026-11-29T00:00:00Z"},
        }
    )
    replay = run_checks(sample, ["executability"], CheckContext(require_environment=True)).results[0]
    assert replay.ok and replay.code != "skipped", replay
    wrong = sample.model_copy(deep=True)
    wrong.gold[0].observation = {**added, "id": added["id"] + 7}
    bad = run_checks(wrong, ["executability"], CheckContext(require_environment=True)).results[0]
    assert not bad.ok and bad.code == "nondeterministic_replay", bad


def test_agent_episodes_on_the_service_are_scored_by_its_end_state(pets, monkeypatch, tmp_path):
    """``eval run`` plays agent episodes on the service, scored by the end state their calls leave
    (probe equality). Every opening resets the service, so the episodes of one service are played
    one at a time even at concurrency 2: here the assistant adds its pet only when the service holds
    the two pets it starts with, and Mia's assistant looks later than Bo's adds; played side by
    side, Mia's episode would see Bo and give up."""
    import asyncio

    from episode_helpers import Reply, Scripted, call, say

    from benchsmith.construction import EnvContext, close_environment, open_environment, shared_service, state_of
    from benchsmith.eval import TaskOptions, run_eval, score_run
    from benchsmith.schemas import OpenApiEnvironment, ServiceCall, write_openapi_environment

    out, _ = pets
    env_file = tmp_path / "environment.json"
    (tmp_path / "service.json").write_text((out / "service.json").read_text())
    write_openapi_environment(
        env_file,
        OpenApiEnvironment(
            reset=[ServiceCall(name="reset")], probes=[ServiceCall(name="list_pets", arguments={"limit": 50})]
        ),
    )
    monkeypatch.setenv(KEY_VAR, "k-123-secret")
    descriptor = {"kind": "openapi", "file": str(env_file)}
    assert shared_service(descriptor, EnvContext()) == f"openapi:{read_openapi_service(out / 'service.json').base_url}"
    tools = [t for t in read_json(out / "tools.json", list) if t["name"] in ("add_pet", "list_pets")]
    rows = []
    for name, species in (("Bo", "dog"), ("Mia", "cat")):
        env = open_environment(descriptor, EnvContext())
        try:
            env.call("add_pet", {"name": name, "species": species}, "new")
            expected = state_of(env)
        finally:
            close_environment(env)
        rows.append(
            {
                "query": f"Add {name} the {species}.",
                "tools": tools,
                "gold": [{"call": {"name": "add_pet", "arguments": {"name": name, "species": species}}}],
                "provenance": {"source": "test", "method": "hand", "created_at": "2026-11-29T00:00:00Z"},
                "metadata": {
                    "scenario_id": f"pets-{name.lower()}",
                    "goal": f"Add {name} the {species}.",
                    "environment": descriptor,
                    "expected_state": expected,
                },
            }
        )
    split = tmp_path / "split"
    split.mkdir()
    (split / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    def user(messages: list[dict], kw: dict) -> Reply:
        if any(m["role"] == "assistant" for m in messages):  # the user sees its own turns as the assistant's
            return say("Thanks. finish conversation")
        return say("Please add " + messages[0]["content"].split("Add ", 1)[1].split(".")[0] + ".")

    def assistant(messages: list[dict], kw: dict) -> Reply:
        asked = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        name, _, species = asked.removeprefix("Please add ").rstrip(".").partition(" the ")
        seen = [m["content"] for m in messages if m["role"] == "tool"]
        if not seen:
            return call(("list_pets", {"limit": 50}))
        if len(seen) == 1:
            if seen[0].count('"name"') != 2:
                return say("The service holds pets I did not expect; I stop here.")
            return call(("add_pet", {"name": name, "species": species}))
        return say("Done.")

    class LateForMia(Scripted):
        async def acomplete(self, messages: list[dict], **kw) -> Reply:
            if "Mia" in messages[-1]["content"] and messages[-1]["role"] == "user":
                await asyncio.sleep(1.5)  # Bo's episode adds its pet meanwhile
            return await super().acomplete(messages, **kw)

    run = tmp_path / "run"
    run_eval(
        split,
        LateForMia(assistant, 0.1),
        {"name": "scripted"},
        run,
        tasks=["agent"],
        calling="tools",
        concurrency=2,
        progress=False,
        user_client=Scripted(user, 0.1),
        user_model={"name": "scripted-user"},
        options=TaskOptions(calling="tools"),
    )
    scores = score_run(run)["agent"]
    records = [json.loads(x) for x in (run / "agent" / "records.jsonl").read_text().splitlines()]
    assert {r["id"]: r["ok"] for r in records} == {"pets-bo": True, "pets-mia": True}, records
    assert scores["episodes"] == 2 and scores["end_state_accuracy"] == 1.0, scores
