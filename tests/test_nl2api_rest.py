"""The REST style end to end: build a split, call every endpoint in-process and over a real server;
endpoint descriptions (``fixtures/nl2api/rest_descriptions.jsonl``); the argument caps and SQLite's
refusals as ToolErrors when the same tools run as tools. (Serving under load: test_nl2api_serve.py.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import clean_env, console_script

from benchsmith.construction.nl2api import (
    MAX_LIST_ITEMS,
    MAX_TEXT_CHARS,
    SLOT_TOOLS,
    BuildOptions,
    Database,
    Runtime,
    ToolError,
    build_split,
    chinook_db,
    create_app,
    read_endpoints,
    result_rows,
    run_endpoint,
)
from benchsmith.construction.nl2api._private.describe import PHRASES
from benchsmith.schemas import Sample, ToolCall, UserError, read_json, read_jsonl

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "nl2api"
DESCRIPTIONS = [
    json.loads(line) for line in (FIXTURES / "rest_descriptions.jsonl").read_text("utf-8").splitlines() if line.strip()
]

# ~10 varied pairs: numeric and string filters, IN lists (-> array query parameters), BETWEEN,
# GROUP BY, aggregates, a join and a LIKE prefix.
PAIRS = [
    {
        "id": "gt-count",
        "question": "How many tracks run longer than five minutes?",
        "sql": "SELECT COUNT(*) FROM tracks WHERE milliseconds > 300000",
    },
    {
        "id": "eq-string",
        "question": "First and last names of the customers in Brazil?",
        "sql": "SELECT first_name, last_name FROM customers WHERE country = 'Brazil'",
    },
    {
        "id": "in-strings",
        "question": "Customers in Canada, France or Norway?",
        "sql": "SELECT first_name, last_name, country FROM customers WHERE country IN ('Canada', 'France', 'Norway')",
    },
    {
        "id": "in-ints",
        "question": "Tracks of albums 1, 2 or 3 that last at least four minutes?",
        "sql": "SELECT name FROM tracks WHERE album_id IN (1, 2, 3) AND milliseconds >= 240000",
    },
    {
        "id": "between",
        "question": "Invoices with a total between 10 and 15?",
        "sql": "SELECT invoice_id, total FROM invoices WHERE total BETWEEN 10 AND 15",
    },
    {
        "id": "group-by",
        "question": "How many tracks does each of the genres 1 to 5 have?",
        "sql": "SELECT genre_id, COUNT(*) FROM tracks WHERE genre_id <= 5 GROUP BY genre_id",
    },
    {
        "id": "avg",
        "question": "Average unit price of the tracks on album 1?",
        "sql": "SELECT AVG(unit_price) FROM tracks WHERE album_id = 1",
    },
    {
        "id": "sum",
        "question": "Total billed to Germany?",
        "sql": "SELECT SUM(total) FROM invoices WHERE billing_country = 'Germany'",
    },
    {
        "id": "float-eq",
        "question": "How many tracks cost $1.99?",
        "sql": "SELECT COUNT(*) FROM tracks WHERE unit_price = 1.99",
    },
    {
        "id": "join-like",
        "question": "Jazz tracks whose name starts with 'Blue'?",
        "sql": "SELECT t.name FROM tracks t JOIN genres g ON t.genre_id = g.genre_id "
        "WHERE g.name = 'Jazz' AND t.name LIKE 'Blue%'",
    },
]


def _canonical(rows):
    """JSON-normalised rows (tuples -> lists, as an HTTP client sees them)."""
    return json.loads(json.dumps(rows))


def _same_rows(got, expected, ordered: bool) -> bool:
    got, expected = _canonical(got), _canonical(expected)
    if ordered:
        return got == expected
    key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
    return sorted(got, key=key) == sorted(expected, key=key)


def _gold(sample: Sample):
    assert len(sample.gold) == 1, "a REST sample is one call"
    call = sample.gold[0].call
    tool = next(t for t in sample.tools if t.name == call.name)
    assert tool.rest is not None and tool.rest.method == "GET"
    return call, tool


@pytest.fixture(scope="module")
def rest_split(tmp_path_factory):
    root = tmp_path_factory.mktemp("rest")
    pairs = root / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(p) + "\n" for p in PAIRS), encoding="utf-8")
    out = root / "split"
    report = build_split(chinook_db(), pairs, out, BuildOptions(style="rest", name="test-rest"))
    samples = read_jsonl(out / "samples.jsonl", Sample)
    return out, report, samples


@pytest.fixture(scope="module")
def slot_split(tmp_path_factory):
    root = tmp_path_factory.mktemp("slot")
    pairs = root / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(p) + "\n" for p in PAIRS[:2]), encoding="utf-8")
    out = root / "split"
    build_split(chinook_db(), pairs, out, BuildOptions(style="slot"))
    return out


def test_rest_split_is_complete(rest_split):
    out, report, samples = rest_split
    assert report["style"] == "rest"
    assert report["total"] == len(PAIRS)
    assert report["verified"] == len(PAIRS), report["rejections"]
    assert len(samples) == len(PAIRS)
    for name in ("samples.jsonl", "tools.json", "endpoints.json", "report.json", "manifest.json", "database.sqlite"):
        assert (out / name).is_file(), name
    endpoints = read_json(out / "endpoints.json")
    tools = read_json(out / "tools.json")
    assert {t["name"] for t in tools} == set(endpoints)
    assert len({t["rest"]["path"] for t in tools}) == len(tools), "paths are unique"
    assert read_json(out / "manifest.json")["extra"]["style"] == "rest"
    # every sample sees the whole REST universe and its gold call names one of its tools
    for s in samples:
        call, tool = _gold(s)
        assert {t.name for t in s.tools} == set(endpoints)
        assert set(call.arguments) == set(tool.parameters.model_dump()["properties"])


def test_in_list_becomes_an_array_query_parameter(rest_split):
    _, _, samples = rest_split
    by_source = {s.provenance.source_id: s for s in samples}
    for pid, item_type in (("in-strings", "string"), ("in-ints", "integer")):
        call, tool = _gold(by_source[pid])
        props = tool.parameters.model_dump()["properties"]
        arrays = {k: v for k, v in props.items() if v.get("type") == "array"}
        assert len(arrays) == 1, props
        ((pname, spec),) = arrays.items()
        assert spec["items"]["type"] == item_type
        assert isinstance(call.arguments[pname], list) and len(call.arguments[pname]) == 3
    call, tool = _gold(by_source["between"])
    assert sorted(call.arguments.values()) == [10, 15]


def test_every_gold_call_answers_over_testclient(rest_split):
    from fastapi.testclient import TestClient

    out, _, samples = rest_split
    with TestClient(create_app(str(out))) as client:
        for s in samples:
            call, tool = _gold(s)
            resp = client.get(tool.rest.path, params=call.arguments)
            assert resp.status_code == 200, (s.provenance.source_id, resp.text)
            body = resp.json()
            assert set(body) == {"columns", "rows"}
            assert all(len(r) == len(body["columns"]) for r in body["rows"])
            assert _same_rows(body["rows"], s.answer.value, s.answer.ordered), s.provenance.source_id
            # the OpenAPI document declares the endpoint with its typed query parameters
        spec = client.get("/openapi.json").json()
        for s in samples:
            call, tool = _gold(s)
            op = spec["paths"][tool.rest.path]["get"]
            assert {p["name"] for p in op["parameters"] if p["in"] == "query"} == set(call.arguments)


def test_wrong_typed_and_missing_parameters_give_422(rest_split):
    from fastapi.testclient import TestClient

    out, _, samples = rest_split
    by_source = {s.provenance.source_id: s for s in samples}
    call, tool = _gold(by_source["gt-count"])
    ((pname, value),) = call.arguments.items()
    assert isinstance(value, int) and tool.parameters.model_dump()["properties"][pname]["type"] == "integer"
    with TestClient(create_app(str(out))) as client:
        resp = client.get(tool.rest.path, params={pname: "three hundred thousand"})
        assert resp.status_code == 422
        assert any(pname in err["loc"] for err in resp.json()["detail"])
        assert client.get(tool.rest.path, params={pname: "1.5"}).status_code == 422
        assert client.get(tool.rest.path).status_code == 422  # required
        # a bad item inside an integer array
        call, tool = _gold(by_source["in-ints"])
        args = dict(call.arguments)
        arr = next(k for k, v in args.items() if isinstance(v, list))
        args[arr] = ["1", "two"]
        assert client.get(tool.rest.path, params=args).status_code == 422
        # the right value as a string is parsed, not rejected
        call, tool = _gold(by_source["gt-count"])
        resp = client.get(tool.rest.path, params={pname: str(value)})
        assert resp.status_code == 200 and _same_rows(resp.json()["rows"], by_source["gt-count"].answer.value, False)


def test_create_app_refuses_a_non_rest_split(slot_split):
    with pytest.raises(UserError, match="not a REST split"):
        create_app(str(slot_split))


# ---------------------------------------------------------------- the real server ----


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _proc_addr(hexaddr: str) -> str:
    """An address of /proc/net/tcp{,6}: 32-bit words in host byte order."""
    raw = bytes.fromhex(hexaddr)
    if sys.byteorder == "little":
        raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)


def _listen_addresses(port: int, pid: int) -> tuple[str, set[str]] | None:
    """(how, addresses) the process ``pid`` listens on at ``port``, or None if it cannot be told."""
    try:
        import psutil  # type: ignore[import-not-found]
    except ImportError:
        psutil = None
    if psutil is not None:
        proc = psutil.Process(pid)
        conns = proc.net_connections(kind="inet") if hasattr(proc, "net_connections") else proc.connections(kind="inet")
        return "psutil", {c.laddr.ip for c in conns if c.status == psutil.CONN_LISTEN and c.laddr.port == port}
    tables = [Path("/proc/net/tcp"), Path("/proc/net/tcp6")]
    if tables[0].exists():
        try:
            inodes = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        except OSError:
            inodes = None
        found: set[str] = set()
        for table in tables:
            if not table.exists():
                continue
            for line in table.read_text().splitlines()[1:]:
                fields = line.split()
                addr, hexport = fields[1].rsplit(":", 1)
                if fields[3] != "0A" or int(hexport, 16) != port:  # 0A = LISTEN
                    continue
                # any listener on the port counts (a stricter check than the server's own sockets only)
                found.add(_proc_addr(addr))
                if inodes is not None:
                    assert f"socket:[{fields[9]}]" in inodes, f"port {port} is held by another process"
        return "/proc/net/tcp", found
    if shutil.which("ss"):
        out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
        found = set()
        for line in out.splitlines():
            local = line.split()[3]
            found.add(local.rsplit(":", 1)[0].strip("[]"))
        return "ss", found
    return None


def test_serve_listens_on_loopback_only_and_answers(rest_split, tmp_path):
    import httpx

    out, _, samples = rest_split
    sample = next(s for s in samples if s.provenance.source_id == "in-strings")
    call, tool = _gold(sample)
    port = _free_port()
    log = (tmp_path / "server.log").open("wb")
    proc = subprocess.Popen(
        [console_script(), "nl2api", "serve", str(out), "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=clean_env(),
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        ready = False
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                ready = httpx.get(base + "/openapi.json", timeout=1).status_code == 200
            except httpx.TransportError:
                ready = False
            if ready:
                break
            time.sleep(0.2)
        assert ready, f"server did not come up (exit {proc.poll()}):\n{(tmp_path / 'server.log').read_text()}"

        resp = httpx.get(base + tool.rest.path, params=call.arguments, timeout=10)
        assert resp.status_code == 200, resp.text
        assert _same_rows(resp.json()["rows"], sample.answer.value, sample.answer.ordered)
        bad = httpx.get(base + tool.rest.path, params={}, timeout=10)
        assert bad.status_code == 422

        seen = _listen_addresses(port, proc.pid)
        if seen is None:
            # Deliberately no probe of the machine's non-loopback address: this workplace forbids
            # traffic to any address but loopback.
            pytest.skip("neither psutil, /proc/net/tcp nor ss can tell the listening address")
        how, addresses = seen
        assert addresses, f"{how}: no listening socket found on port {port}"
        assert addresses == {"127.0.0.1"}, f"{how}: listening on {addresses}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_serving_a_non_rest_split_is_a_user_error(slot_split):
    res = subprocess.run(
        [console_script(), "nl2api", "serve", str(slot_split), "--port", str(_free_port())],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
    )
    assert res.returncode == 2
    lines = _ANSI.sub("", res.stderr).strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error:") and "not a REST split" in lines[0]
    assert "Traceback" not in res.stderr


def test_serving_a_non_rest_split_with_clirunner(slot_split):
    from typer.testing import CliRunner

    from benchsmith.cli import app

    result = CliRunner().invoke(app, ["nl2api", "serve", str(slot_split)], prog_name="benchsmith")
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr


# ---------------------------------------------------------------- endpoint descriptions ----
@pytest.fixture(scope="module")
def described(tmp_path_factory) -> dict[str, str]:
    """The fixture's questions built as one REST split: pair id -> its endpoint's description."""
    root = tmp_path_factory.mktemp("described")
    pairs = root / "pairs.jsonl"
    pairs.write_text(
        "".join(
            json.dumps({"id": f"case-{i}", "question": c["question"], "sql": c["sql"]}) + "\n"
            for i, c in enumerate(DESCRIPTIONS)
        ),
        encoding="utf-8",
    )
    report = build_split(chinook_db(), pairs, root / "split", BuildOptions(style="rest"))
    assert report["verified"] == len(DESCRIPTIONS), report["rejections"]
    out = {}
    for sample in read_jsonl(root / "split" / "samples.jsonl", Sample):
        call, tool = _gold(sample)
        out[sample.provenance.source_id] = tool.description
    return out


@pytest.mark.parametrize("i", range(len(DESCRIPTIONS)), ids=[c["question"][:40] for c in DESCRIPTIONS])
def test_an_endpoint_description_states_every_step(described, i):
    """Every filter, sort, limit, grouping, aggregate, distinct and computed column is in the words."""
    assert described[f"case-{i}"] == DESCRIPTIONS[i]["description"], DESCRIPTIONS[i]["sql"]


def test_every_visible_slot_tool_has_a_phrase():
    visible = {name for name, tool in SLOT_TOOLS.items() if not tool.hidden}
    assert visible <= set(PHRASES), sorted(visible - set(PHRASES))


# ---------------------------------------------------------------- the caps, as tools ----
@pytest.fixture
def db():
    database = Database(chinook_db())
    yield database
    database.close()


def _run_on_playlists(db: Database, *calls: ToolCall):
    rt = Runtime(db)
    out = rt.setup([ToolCall(name="initialize_active_data", arguments={"source": "playlists"}, label="data_1")])
    for call in calls:
        out = rt.call(call)
    return result_rows(out, db)


def _filter(operator: str, value, key: str = "playlists.name") -> ToolCall:
    return ToolCall(
        name="filter_data",
        label="filtered_2",
        arguments={"data_source": "$data_1$", "key_name": key, "operator": operator, "value": value},
    )


@pytest.mark.parametrize(
    "operator",
    ["contains", "not_contains", "starts_with", "not_starts_with", "ends_with", "not_ends_with", "like", "not_like"],
)
def test_a_pattern_over_the_cap_is_a_tool_error_before_any_sql(db, operator):
    with pytest.raises(ToolError, match=f"50,001 characters long; the limit is {MAX_TEXT_CHARS:,}"):
        _run_on_playlists(db, _filter(operator, "x" * 50_001))
    with pytest.raises(ToolError, match="NUL"):
        _run_on_playlists(db, _filter(operator, "Clas\x00sical"))
    # at the cap, wildcards and escape characters are matched literally
    assert _run_on_playlists(db, _filter(operator.replace("like", "contains"), "%_\\" * (MAX_TEXT_CHARS // 3))) == (
        [] if not operator.startswith("not_") else _run_on_playlists(db)
    )


def test_an_in_list_over_the_cap_is_a_tool_error(db):
    key = "playlists.playlist_id"
    assert len(_run_on_playlists(db, _filter("in", list(range(MAX_LIST_ITEMS)), key))) == 18
    for op in ("in", "not_in"):
        with pytest.raises(ToolError, match=f"lists {MAX_LIST_ITEMS + 1:,} values; the limit is {MAX_LIST_ITEMS:,}"):
            _run_on_playlists(db, _filter(op, list(range(MAX_LIST_ITEMS + 1)), key))


def test_a_query_sqlite_refuses_is_a_tool_error_naming_why(db):
    """SQLite's own limits, lowered on this connection so that it refuses queries the caps let
    through: the refusal reaches the caller as a ToolError (code sql_error), never an sqlite3 error,
    whether the query runs inside a tool (aggregate_data) or when the answer is read."""
    db.con.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 10)
    with pytest.raises(ToolError, match="too long or too complex for the database's LIKE") as err:
        _run_on_playlists(db, _filter("contains", "Classical music"))
    assert err.value.code == "sql_error"
    db.con.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 5)
    count = ToolCall(name="aggregate_data", arguments={"data_source": "$filtered_2$", "aggregation": "count"})
    with pytest.raises(ToolError, match="too many values for one query") as err:
        _run_on_playlists(db, _filter("in", list(range(10)), "playlists.playlist_id"), count)
    assert err.value.code == "sql_error"


def test_a_rest_endpoint_called_as_a_tool_keeps_the_caps(rest_split):
    """run_endpoint (what ToolEnv and the evaluator call) refuses arguments over the caps before SQL."""
    out, _, samples = rest_split
    endpoints = read_endpoints(out / "endpoints.json")
    by_source = {s.provenance.source_id: s for s in samples}
    db = Database(out / "database.sqlite")
    try:
        call, _ = _gold(by_source["join-like"])
        with pytest.raises(ToolError, match="parameter name_prefix is 50,001 characters long"):
            run_endpoint(db, endpoints[call.name], {**call.arguments, "name_prefix": "x" * 50_001})
        call, _ = _gold(by_source["in-strings"])
        ((pname, _value),) = call.arguments.items()
        with pytest.raises(ToolError, match=f"parameter {pname} lists {MAX_LIST_ITEMS + 1:,} values"):
            run_endpoint(db, endpoints[call.name], {pname: ["Canada"] * (MAX_LIST_ITEMS + 1)})
    finally:
        db.close()


def test_a_gold_value_over_the_caps_rejects_its_pair_not_the_build(tmp_path):
    """A REST endpoint could not be called with its own gold value: the pair is rejected (tool_error)
    and the others are built."""
    long_name = "x" * (MAX_TEXT_CHARS + 1)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        json.dumps(
            {
                "id": "long",
                "question": "How many artists are not named x...x?",
                "sql": f"SELECT COUNT(*) FROM artists WHERE name != '{long_name}'",
            }
        )
        + "\n"
        + json.dumps(PAIRS[0])
        + "\n",
        encoding="utf-8",
    )
    report = build_split(chinook_db(), pairs, tmp_path / "split", BuildOptions(style="rest"))
    assert report["verified"] == 1 and report["rejected"] == {"tool_error": 1}, report
    (rejection,) = report["rejections"]
    assert rejection["id"] == "long" and f"the limit is {MAX_TEXT_CHARS:,}" in rejection["message"], rejection
