"""Issue 12, the NL2API part: the database is guarded from its first statement (time limit,
read-only authorizer, bounded row counts, unreadable views left out), chained references are
materialised instead of copied (row and SQL-size limits), the hidden set-up tool is not callable
by predictions, REST parameters are literal and bounded, and broken split files or databases are
refused with one red line."""

from __future__ import annotations

import importlib
import json
import logging
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import build_slot_split, clean_env, console_script, one_error_line, pair_lines

from benchsmith.construction.nl2api import (
    BuildOptions,
    Database,
    Runtime,
    ToolError,
    build_split,
    chinook_db,
    create_app,
    result_rows,
)
from benchsmith.schemas import ToolCall, read_json

CROSS3 = {
    "source": "tracks",
    "joins": [{"table": "tracks", "alias": "b", "type": "cross"}, {"table": "tracks", "alias": "c", "type": "cross"}],
}


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in clean_env().items() if not k.startswith("OPENAI_")}
    return subprocess.run(
        [console_script(), *args], capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL
    )


def _refused(proc: subprocess.CompletedProcess[str], *names: str) -> str:
    """Exit 2 with one red line that names each of ``names``."""
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    line = one_error_line(proc.stderr)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    for name in names:
        assert name in line, line
    return line


def _call(name: str, label: str | None = None, **arguments) -> ToolCall:
    return ToolCall(name=name, arguments=arguments, label=label)


@pytest.fixture(scope="module")
def chinook() -> Path:
    return Path(chinook_db())


@pytest.fixture(scope="module")
def db(chinook) -> Database:
    database = Database(chinook)
    yield database
    database.close()


@pytest.fixture(scope="module")
def slot_split(tmp_path_factory) -> Path:
    return build_slot_split(tmp_path_factory.mktemp("nl2api-slot"), pair_lines()[:3])


REST_PAIRS = [
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
]


@pytest.fixture(scope="module")
def rest_split(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("nl2api-rest")
    (root / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in REST_PAIRS), encoding="utf-8")
    report = build_split(chinook_db(), root / "pairs.jsonl", root / "rest", BuildOptions(style="rest"))
    assert report["verified"] == len(REST_PAIRS)
    return root / "rest"


def _db_copy(chinook: Path, tmp_path: Path, *statements: str) -> Path:
    path = tmp_path / "chinook-copy.sqlite"
    shutil.copyfile(chinook, path)
    with sqlite3.connect(path) as con:
        for statement in statements:
            con.execute(statement)
    con.close()
    return path


def _pairs(tmp_path: Path, n: int = 2) -> Path:
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(pair_lines()[:n]) + "\n", encoding="utf-8")
    return path


# ---- 1. limits from the first statement; unreadable views ----------------------------------------------
def test_a_view_over_a_three_way_cross_join_does_not_hang_the_build(chinook, tmp_path):
    path = _db_copy(chinook, tmp_path, "CREATE VIEW everything AS SELECT a.track_id FROM tracks a, tracks b, tracks c")
    started = time.monotonic()
    try:
        proc = _cli(
            "nl2api",
            "build",
            "--db",
            str(path),
            "--pairs",
            str(_pairs(tmp_path)),
            "--out",
            str(tmp_path / "out"),
            "--timeout",
            "2",
            timeout=90,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("nl2api build hung on a view over a cross join (its rows were counted without a time limit)")
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 60
    assert read_json(tmp_path / "out" / "report.json")["verified"] == 2
    database = Database(path, timeout_s=2)
    try:
        assert database.table("everything").row_count is None, "a view's rows are not counted"
        assert database.table("tracks").row_count == 3503
    finally:
        database.close()


def test_a_view_over_a_cross_join_does_not_hang_loading_a_split(slot_split, tmp_path):
    split = tmp_path / "split"
    shutil.copytree(slot_split, split)
    with sqlite3.connect(split / "database.sqlite") as con:
        con.execute("CREATE VIEW everything AS SELECT a.track_id FROM tracks a, tracks b, tracks c")
    con.close()
    try:
        proc = _cli(
            "eval", "selftest", "--benchmark", "nl2api", "--data", str(split), "--out", str(tmp_path / "st"), timeout=90
        )
    except subprocess.TimeoutExpired:
        pytest.fail("loading the split hung on a view over a cross join")
    assert proc.returncode == 0, proc.stderr
    assert read_json(tmp_path / "st" / "selftest.json")["failing"] == []


def test_a_view_over_a_dropped_table_is_left_out_and_reported(chinook, tmp_path):
    path = _db_copy(
        chinook,
        tmp_path,
        "CREATE TABLE gone (x INTEGER)",
        "CREATE VIEW broken AS SELECT x FROM gone",
        "DROP TABLE gone",
    )
    proc = _cli("nl2api", "build", "--db", str(path), "--pairs", str(_pairs(tmp_path)), "--out", str(tmp_path / "out"))
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    report = read_json(tmp_path / "out" / "report.json")
    assert report["verified"] == 2
    assert list(report["skipped_views"]) == ["broken"] and "no such table" in report["skipped_views"]["broken"]


# ---- 2. the read-only guard ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "statement, named",
    [
        ("ATTACH DATABASE ':memory:' AS other", "ATTACH"),
        ("PRAGMA query_only = OFF", "PRAGMA query_only"),
        ("PRAGMA writable_schema = 1", "PRAGMA writable_schema"),
        ("BEGIN IMMEDIATE", "TRANSACTION"),
        ("SAVEPOINT s1", "SAVEPOINT"),
        ("CREATE TEMP TABLE scratch (x)", "sqlite_temp_master"),
        ("VACUUM", "ATTACH"),  # VACUUM works through an attached copy
        ("SELECT load_extension('nothing')", "load_extension"),
    ],
)
def test_only_reading_statements_run(db, statement, named):
    with pytest.raises(sqlite3.DatabaseError) as err:
        db.execute(statement)
    assert "read-only" in str(err.value) and named in str(err.value), str(err.value)
    assert db.execute("SELECT COUNT(*) FROM genres") == [(25,)]


def test_the_reads_tools_and_verification_need_still_run(db):
    assert db.execute(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3) SELECT SUM(x) FROM c"
    ) == [(6,)]
    assert db.execute(
        "SELECT COUNT(*) FROM tracks WHERE track_id IN (SELECT value FROM json_each(?))", ("[1, 2, 3]",)
    ) == [(3,)]
    assert db.execute("SELECT abs(-2), strftime('%Y', '2024-05-01'), round(2.5)") == [(2, "2024", 3.0)]
    assert [r[1] for r in db.execute("PRAGMA table_info(genres)")] == ["genre_id", "name"]


def test_the_sql_of_a_pair_the_converter_crashes_on_or_refuses_is_never_executed(chinook, tmp_path, monkeypatch):
    build = importlib.import_module("benchsmith.construction.nl2api._private.pairwork")
    crash_sql = "SELECT name FROM genres WHERE genre_id = 4"
    real_convert = build.convert

    def convert(database, sql):
        if sql == crash_sql:
            raise RuntimeError("converter bug")
        return real_convert(database, sql)

    executed: list[str] = []
    real_execute = Database.execute

    def spy(self, sql, params=(), **kwargs):
        executed.append(sql)
        return real_execute(self, sql, params, **kwargs)

    monkeypatch.setattr(build, "convert", convert)
    monkeypatch.setattr(Database, "execute", spy)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        "\n".join(
            [
                pair_lines()[0],
                json.dumps({"id": "crash", "question": "q", "sql": crash_sql}),
                json.dumps({"id": "refused", "question": "q", "sql": "DELETE FROM genres"}),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    report = build_split(chinook, pairs, tmp_path / "out", BuildOptions(copy_db=False))
    codes = {r["id"]: r["code"] for r in report["rejections"]}
    assert codes == {"crash": "unsupported_expression", "refused": codes["refused"]} and report["verified"] == 1
    assert executed, "the spy saw the good pair's queries"
    assert crash_sql not in executed and "DELETE FROM genres" not in executed


# ---- 3. chained references are materialised; row and SQL-size limits ------------------------------------
def test_forty_chained_in_calls_keep_the_sql_small_and_give_the_right_rows(db):
    rt = Runtime(db)
    rt.setup([_call("initialize_active_data", "data", source="tracks")])
    rt.call(
        _call("filter_data", "jazz", data_source="$data$", key_name="tracks.genre_id", operator="equal_to", value=2)
    )
    prev = "ids_0"
    rt.call(_call("retrieve_data", prev, data_source="$jazz$", key_names=["tracks.track_id"]))
    started = time.monotonic()
    for i in range(1, 41):
        out = rt.call(
            _call(
                "filter_data",
                f"ids_{i}",
                data_source=f"${prev}$",
                key_name="tracks.track_id",
                operator="in",
                value=f"${prev}$",
            )
        )
        assert len(out.sql) < 8_000, f"call {i}: the SQL grew to {len(out.sql):,} characters"
        prev = f"ids_{i}"
    rows = result_rows(out, db)
    assert time.monotonic() - started < 10
    assert sorted(rows) == sorted(db.execute("SELECT track_id FROM tracks WHERE genre_id = 2"))
    assert len(rows) == 130


def test_data_over_the_row_limit_is_relation_too_large(db):
    rt = Runtime(db)
    # 3503 tracks x 59 customers = 206,677 rows, over the 100,000-row limit
    rt.setup(
        [_call("initialize_active_data", "data", source="tracks", joins=[{"table": "customers", "type": "cross"}])]
    )
    ids = rt.call(_call("retrieve_data", "ids", data_source="$data$", key_names=["tracks.track_id"]))
    with pytest.raises(ToolError) as err:
        result_rows(ids, db)
    assert err.value.code == "relation_too_large"
    with pytest.raises(ToolError) as err:
        rt.call(
            _call("filter_data", None, data_source="$data$", key_name="tracks.track_id", operator="in", value="$ids$")
        )
    assert err.value.code == "relation_too_large"


def test_sql_over_the_size_limit_is_query_too_large(db):
    rt = Runtime(db)
    rt.setup([_call("initialize_active_data", "data", source="genres")])
    with pytest.raises(ToolError) as err:
        rt.call(
            _call(
                "transform_data",
                None,
                data_source="$data$",
                key_name="genres.name",
                function="upper",
                output_name="x" * 2_000_000,
            )
        )
    assert err.value.code == "query_too_large"


def test_an_integer_sqlite_cannot_hold_is_a_tool_error(db):
    rt = Runtime(db)
    rt.setup([_call("initialize_active_data", "data", source="tracks")])
    with pytest.raises(ToolError):
        out = rt.call(
            _call(
                "filter_data",
                None,
                data_source="$data$",
                key_name="tracks.bytes",
                operator="greater_than",
                value=10**30,
            )
        )
        result_rows(out, db)


# ---- 4. the hidden set-up tool ------------------------------------------------------------------------
def test_the_hidden_set_up_tool_runs_only_as_set_up(db):
    with pytest.raises(ToolError) as err:
        Runtime(db).call(_call("initialize_active_data", "data", **CROSS3))
    assert err.value.code == "unknown_tool"
    rt = Runtime(db)
    rt.setup([_call("initialize_active_data", "data", source="genres")])
    assert len(result_rows(rt.outputs["data"], db)) == 25


def test_a_prediction_calling_the_set_up_tool_is_refused_quickly_in_scoring(slot_split, tmp_path):
    from benchsmith.eval.nl2api import NL2API

    split = tmp_path / "split"
    shutil.copytree(slot_split, split)
    toolset = read_json(split / "toolset.json")
    toolset["load_data"] = {"tool": "initialize_active_data", "fixed": {}, "rename": {}}  # a visible alias
    (split / "toolset.json").write_text(json.dumps(toolset), encoding="utf-8")
    bench = NL2API()
    try:
        case = bench.load(split)[0]
        assert bench.score(case, bench.gold_prediction(case), "strict").ok
        for name in ("initialize_active_data", "load_data"):
            started = time.monotonic()
            record = bench.score(case, json.dumps([{"name": name, "arguments": CROSS3, "label": "x"}]), "strict")
            assert record.error_type == "unknown_tool", (name, record.error_type, record.reason)
            assert time.monotonic() - started < 3
    finally:
        bench.close()


def test_the_react_tools_refuse_the_set_up_tool(slot_split):
    from benchsmith.construction.nl2api import ToolEnv

    samples = [json.loads(line) for line in (slot_split / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    setup = samples[0]["setup"]
    database = Database(slot_split / "database.sqlite")
    try:
        for make in (
            lambda: ToolEnv(slot_split, database, "slot", setup),
            lambda: ToolEnv(slot_split, database, "slot", [], setup_phase=False),
        ):
            with pytest.raises(ToolError) as err:
                make().call("initialize_active_data", CROSS3, "out_1")
            assert err.value.code == "unknown_tool"
        # an environment opened without set-up (a sample replayed call by call) takes the set-up calls
        # first, and no more once another call has run
        replay = ToolEnv(slot_split, database, "slot", [])
        loaded = replay.call(setup[0]["name"], setup[0]["arguments"], setup[0]["label"])
        replay.call(
            "retrieve_data", {"data_source": f"${setup[0]['label']}$", "key_names": loaded["columns"][:1]}, "out_2"
        )
        with pytest.raises(ToolError) as err:
            replay.call("initialize_active_data", CROSS3, "out_3")
        assert err.value.code == "unknown_tool"
    finally:
        database.close()


# ---- 5. REST parameters ---------------------------------------------------------------------------------
def test_a_rest_value_that_looks_like_a_reference_is_literal_text(rest_split):
    from fastapi.testclient import TestClient

    with TestClient(create_app(str(rest_split))) as client:
        path = "/v1/list_customers_by_country"
        assert client.get(path, params={"country": "Brazil"}).json()["rows"]
        for value in ("$data_1$", "$filtered_2$"):
            resp = client.get(path, params={"country": value})
            assert resp.status_code == 200, resp.text
            assert resp.json()["rows"] == []


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_30_digit_integer_is_a_4xx_and_no_traceback_in_the_server_log(rest_split, tmp_path, caplog):
    import httpx
    from fastapi.testclient import TestClient

    path, param = "/v1/count_tracks_by_milliseconds_above", "milliseconds_above"
    caplog.set_level(logging.DEBUG)
    with TestClient(create_app(str(rest_split)), raise_server_exceptions=False) as client:
        resp = client.get(path, params={param: "1" * 30})
    assert 400 <= resp.status_code < 500, resp.text
    assert param in resp.text
    assert "Traceback" not in caplog.text and not any(r.exc_info for r in caplog.records)

    port = _free_port()
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [console_script(), "nl2api", "serve", str(rest_split), "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=clean_env(),
        )
        try:
            base, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 30
            while True:
                assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()
                try:
                    if httpx.get(base + "/openapi.json", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.2)
            resp = httpx.get(base + path, params={param: "1" * 30}, timeout=10)
            assert 400 <= resp.status_code < 500, resp.text
            literal = httpx.get(base + "/v1/list_customers_by_country", params={"country": "$data_1$"}, timeout=10)
            assert literal.status_code == 200 and literal.json()["rows"] == []
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    assert "Traceback" not in log_path.read_text(), log_path.read_text()


# ---- 6. split files and inputs of the wrong shape ---------------------------------------------------------
def test_a_descriptions_file_that_is_a_list_is_one_red_line(chinook, tmp_path):
    bad = tmp_path / "list.json"
    bad.write_text('["tracks", "albums"]', encoding="utf-8")
    proc = _cli(
        "nl2api",
        "build",
        "--db",
        str(chinook),
        "--pairs",
        str(_pairs(tmp_path)),
        "--out",
        str(tmp_path / "out"),
        "--descriptions",
        str(bad),
    )
    _refused(proc, "list.json")
    assert not (tmp_path / "out").exists()


def _broken_split(source: Path, tmp_path: Path, file: str, content: bytes | None) -> Path:
    split = tmp_path / "split"
    shutil.copytree(source, split)
    if content is None:  # truncate to half
        os.truncate(split / file, (split / file).stat().st_size // 2)
    else:
        (split / file).write_bytes(content)
    return split


def _predictions(split: Path, tmp_path: Path) -> Path:
    first = json.loads((split / "samples.jsonl").read_text(encoding="utf-8").splitlines()[0])
    path = tmp_path / "predictions.jsonl"
    path.write_text(json.dumps({"id": first["id"], "result": "[]"}) + "\n", encoding="utf-8")
    return path


BROKEN = [
    ("toolset.json", b'["filter_data"]'),
    ("toolset.json", b'{"f": {"tool": "no_such_tool"}}'),
    ("manifest.json", b"[1, 2]"),
    ("database.sqlite.descriptions.json", b'{"tracks": ["not", "an", "object"]}'),
    ("database.sqlite", b"\x13 not sqlite " * 5000),
    ("database.sqlite", None),
]


@pytest.mark.parametrize("file, content", BROKEN, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BROKEN)])
def test_score_refuses_a_broken_slot_split(slot_split, tmp_path, file, content):
    split = _broken_split(slot_split, tmp_path, file, content)
    proc = _cli(
        "eval",
        "score",
        "--benchmark",
        "nl2api",
        "--data",
        str(split),
        "--predictions",
        str(_predictions(split, tmp_path)),
        "--out",
        str(tmp_path / "scores"),
    )
    _refused(proc, file)


@pytest.mark.parametrize(
    "file, content",
    [("database.sqlite", b"garbage" * 5000), ("database.sqlite", None), ("database.sqlite.descriptions.json", b"[]")],
)
def test_selftest_refuses_a_broken_database(slot_split, tmp_path, file, content):
    split = _broken_split(slot_split, tmp_path, file, content)
    proc = _cli("eval", "selftest", "--benchmark", "nl2api", "--data", str(split), "--out", str(tmp_path / "st"))
    _refused(proc, file)


def test_a_rest_split_with_endpoints_of_the_wrong_shape_is_refused(rest_split, tmp_path):
    split = _broken_split(
        rest_split,
        tmp_path,
        "endpoints.json",
        b'{"list_customers_by_country": {"setup": [], "calls": "none", "parameters": {}}}',
    )
    proc = _cli(
        "eval",
        "score",
        "--benchmark",
        "nl2api",
        "--data",
        str(split),
        "--predictions",
        str(_predictions(split, tmp_path)),
        "--out",
        str(tmp_path / "scores"),
    )
    _refused(proc, "endpoints.json")
    _refused(_cli("nl2api", "serve", str(split), "--port", str(_free_port())), "endpoints.json")


def test_a_damaged_database_in_the_middle_is_found_at_load(slot_split, tmp_path):
    split = tmp_path / "split"
    shutil.copytree(slot_split, split)
    data = bytearray((split / "database.sqlite").read_bytes())
    start = len(data) // 3
    data[start : start + 8192] = b"\xab" * 8192
    (split / "database.sqlite").write_bytes(bytes(data))
    from benchsmith.eval.nl2api import NL2API
    from benchsmith.schemas import UserError

    with pytest.raises(UserError, match="database.sqlite"):
        NL2API().load(split)


SHARED_DB_THREADS = """
import sys, threading
from benchsmith.construction.nl2api import Database
db = Database(sys.argv[1])
def work():
    for _ in range(200):
        db.execute("SELECT track_id, name, milliseconds FROM tracks WHERE milliseconds % 7 = 3")
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
print("done")
"""


def test_one_database_shared_by_threads_never_deadlocks(chinook: Path) -> None:
    # construct chains runs items on 4 threads over one Database. Unserialised, a thread inside the
    # progress handler (holding SQLite's mutex, waiting for the GIL) and one reading a row (holding
    # the GIL, waiting for the mutex) froze the whole process. A subprocess, so a freeze fails the
    # test instead of hanging the suite.
    proc = subprocess.run(
        [sys.executable, "-c", SHARED_DB_THREADS, str(chinook)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "done", proc.stderr
