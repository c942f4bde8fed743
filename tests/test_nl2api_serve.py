"""``benchsmith nl2api serve`` (issue 26): hostile arguments get a 4xx with a JSON ``detail``, never
a 500, and the connection stays open; normal requests keep their answers; ``GET /`` lists the
endpoints, ``/docs`` and ``/redoc`` load nothing from outside; ``--help`` and the start-up lines
say where the endpoints are. The split is the embedded Chinook pairs built as REST by the project's
own build; the load test runs the real server (uvicorn on 127.0.0.1) from the console script."""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import logging
import random
import re
import socket
import sqlite3
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

import pytest
from helpers import clean_env, console_script

from benchsmith.construction.nl2api import (
    MAX_LIST_ITEMS,
    MAX_TEXT_CHARS,
    BuildOptions,
    Database,
    ToolEnv,
    build_split,
    chinook_db,
    create_app,
    default_pairs_path,
)
from benchsmith.schemas import Sample, read_jsonl

LONG = "x" * 50_001


def q(**params) -> str:
    """A query string as a client sends it (UTF-8, percent-encoded; lists as repeated keys)."""
    return urlencode(params, doseq=True)


PREFIX = "/v1/list_playlists_by_name_prefix"  # the example
CONTAINS = "/v1/count_artists_by_name_contains"
# (id, path, query string, status): each must be answered with this 4xx and a JSON "detail"
HOSTILE = [
    ("prefix-50001-chars", PREFIX, q(name_prefix=LONG), 422),
    ("suffix-50001-chars", "/v1/list_albums_by_title_suffix", q(title_suffix=LONG), 422),
    ("contains-50001-chars", CONTAINS, q(name_contains=LONG), 422),
    ("excludes-50001-chars", "/v1/list_genres_by_name_excludes", q(name_excludes=LONG), 422),
    ("30000-percent-signs", CONTAINS, q(name_contains="%" * 30_000), 422),
    ("wildcards-and-escapes", "/v1/list_tracks_by_name_prefix", q(name_prefix="%_\\" * 9_000), 422),
    ("12000-emoji", PREFIX, q(name_prefix="\N{GRINNING FACE}" * 12_000), 422),
    ("array-of-5000", "/v1/count_customers_by_country_not_in", q(country_not_in=[f"c{i}" for i in range(5_000)]), 422),
    ("array-item-50001-chars", "/v1/list_customers_by_city_in", q(city_in=["Paris", LONG]), 422),
    ("integer-5000-digits", "/v1/count_tracks_by_milliseconds_above", "milliseconds_above=" + "9" * 5_000, 422),
    ("integer-beyond-64-bits", "/v1/count_tracks_by_milliseconds_above", "milliseconds_above=" + "1" * 30, 422),
    ("number-1e999", "/v1/list_invoices_by_total_above", "total_above=1e999", 422),
    ("number-400-digits", "/v1/list_invoices_by_total_above", "total_above=" + "9" * 400, 422),
    ("number-nan", "/v1/list_invoices_by_total_above", "total_above=nan", 422),
    ("nul-byte", PREFIX, q(name_prefix="Clas\x00sical"), 422),
    ("nul-byte-in-array", "/v1/list_customers_by_city_in", q(city_in=["Paris", "Ber\x00lin"]), 422),
    ("invalid-utf8", PREFIX, "name_prefix=%FF%FEClassical", 400),
    ("utf8-surrogate", PREFIX, "name_prefix=%ED%A0%80", 400),
    ("overlong-utf8", PREFIX, "name_prefix=%C0%AF", 400),
    ("invalid-utf8-name", PREFIX, "name%FF=x&name_prefix=Classical", 400),
    ("missing-parameter", PREFIX, "", 422),
    ("unknown-path", "/v1/%FF%FE", "", 404),
]


@pytest.fixture(scope="module")
def split(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("serve") / "rest"
    report = build_split(chinook_db(), default_pairs_path(), out, BuildOptions(style="rest", name="serve-test"))
    assert report["verified"] == report["total"], report["rejections"]
    return out


def _contains_count(split: Path, text: str) -> int:
    """Artists whose name holds ``text`` literally, counted without LIKE (a second opinion)."""
    with sqlite3.connect(f"{(split / 'database.sqlite').resolve().as_uri()}?mode=ro", uri=True) as con:
        return con.execute("SELECT COUNT(*) FROM artists WHERE instr(lower(name), lower(?)) > 0", (text,)).fetchone()[0]


def _normal(split: Path) -> list[tuple[str, str, list, bool]]:
    """(id, path?query, expected rows, ordered): every sample's gold call with its answer, and
    texts with wildcards and escape characters at and under the cap, matched literally."""
    out = []
    for s in read_jsonl(split / "samples.jsonl", Sample):
        call = s.gold[0].call
        out.append(
            (
                s.provenance.source_id,
                f"/v1/{call.name}?{q(**call.arguments)}",
                json.loads(json.dumps(s.answer.value)),
                s.answer.ordered,
            )
        )
    for text in ("%", "_", "\\", "Orchestra", "%_\\" * (MAX_TEXT_CHARS // 3), "y" * MAX_TEXT_CHARS):
        out.append(
            (
                f"contains-{text[:6]!r}x{len(text)}",
                f"{CONTAINS}?{q(name_contains=text)}",
                [[_contains_count(split, text)]],
                True,
            )
        )
    out.append(("prefix-at-the-cap", f"{PREFIX}?{q(name_prefix='C' * MAX_TEXT_CHARS)}", [], True))
    return out


def _same(got, expected, ordered: bool) -> bool:
    if ordered:
        return got == expected
    key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
    return sorted(got, key=key) == sorted(expected, key=key)


# ---------------------------------------------------------------- in-process ----
@pytest.fixture(scope="module")
def client(split):
    from fastapi.testclient import TestClient

    with TestClient(create_app(str(split)), raise_server_exceptions=False) as c:
        yield c


# httpx (the test client) refuses URLs over 64 KiB; those cases go to the real server only
IN_PROCESS = [h for h in HOSTILE if len(h[1]) + len(h[2]) < 60_000]


@pytest.mark.parametrize("case", IN_PROCESS, ids=[h[0] for h in IN_PROCESS])
def test_a_hostile_request_gets_a_4xx_with_a_json_detail(client, case):
    _, path, query, status = case
    resp = client.get(path + ("?" + query if query else ""))
    assert resp.status_code == status, resp.text[:500]
    assert resp.headers["content-type"] == "application/json"
    assert resp.json()["detail"]
    assert len(resp.content) < 20_000, "a refusal quotes a long value only in part"


def test_the_caps_are_the_limits_the_server_applies(client, split):
    assert client.get(PREFIX, params={"name_prefix": "C" * MAX_TEXT_CHARS}).status_code == 200
    resp = client.get(PREFIX, params={"name_prefix": "C" * (MAX_TEXT_CHARS + 1)})
    assert resp.status_code == 422 and resp.json()["detail"][0]["ctx"]["max_length"] == MAX_TEXT_CHARS
    path = "/v1/count_customers_by_country_not_in"
    assert client.get(path, params={"country_not_in": ["USA"] * MAX_LIST_ITEMS}).json()["rows"] == [[46]]
    resp = client.get(path, params={"country_not_in": ["USA"] * (MAX_LIST_ITEMS + 1)})
    assert resp.status_code == 422 and resp.json()["detail"][0]["ctx"]["max_length"] == MAX_LIST_ITEMS


def test_get_root_lists_the_endpoints(client, split):
    resp = client.get("/")
    assert resp.status_code == 200
    index = resp.json()
    endpoints = json.loads((split / "endpoints.json").read_text("utf-8"))
    assert index["endpoints"] == [f"/v1/{name}" for name in endpoints]
    assert index["base"] == "/v1/" and index["docs"] == "/docs" and index["openapi"] == "/openapi.json"
    for path in (index["docs"], index["redoc"], index["openapi"], index["endpoints"][0] + "?milliseconds_above=1"):
        assert client.get(path).status_code == 200, path


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_docs_pages_load_nothing_from_outside(client, page):
    html = client.get(page).text
    assert not re.search(r"https?:|//[a-z]", html, re.IGNORECASE), html
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert any(a.endswith(".js") for a in assets), assets
    for asset in assets:
        assert asset.startswith("/"), asset
        resp = client.get(asset)
        assert resp.status_code == 200 and len(resp.content) > 1_000, asset
    if page == "/docs":
        assert '"validatorUrl": null' in html  # no validator badge fetched from outside


def test_help_says_where_the_endpoints_are():
    from typer.testing import CliRunner

    from benchsmith.cli import app

    result = CliRunner().invoke(app, ["nl2api", "serve", "--help"], prog_name="benchsmith", env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    for words in ("/v1/<endpoint>", "GET / lists the endpoint paths", "/docs", "/redoc", "without a CDN"):
        assert words in text, text


# ---------------------------------------------------------------- the real server ----
def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _worker(port: int, plan: list[tuple]) -> list[tuple]:
    """One keep-alive connection for every request of ``plan``: (item, status, content type, body,
    Connection header, socket, the first socket). A connection the server drops is recorded
    (status None) and opened again, so one failure does not hide the others."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.connect()
    first = conn.sock.getsockname()
    done = []
    try:
        for item in plan:
            try:
                conn.request("GET", item[1])
                resp = conn.getresponse()
                body = resp.read()
            except (OSError, http.client.HTTPException) as exc:
                done.append((item, None, None, repr(exc).encode(), "dropped", None, first))
                conn.close()
                conn.connect()
                first = conn.sock.getsockname()
                continue
            # the same socket for every request: a refused request does not cost the connection
            done.append(
                (
                    item,
                    resp.status,
                    resp.getheader("content-type"),
                    body,
                    resp.getheader("connection"),
                    conn.sock.getsockname() if conn.sock else None,
                    first,
                )
            )
    finally:
        conn.close()
    return done


def test_serve_under_load_never_answers_500(split, tmp_path):
    port = _free_port()
    database = split / "database.sqlite"
    before = _sha256(database)
    normal = [("normal", path, rows, ordered, rid) for rid, path, rows, ordered in _normal(split)]
    hostile = [
        ("hostile", path + ("?" + query if query else ""), status, None, hid) for hid, path, query, status in HOSTILE
    ]
    plan = (normal + hostile) * 2  # ~340 requests
    random.Random(26).shuffle(plan)
    threads = 4
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [console_script(), "nl2api", "serve", str(split), "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=clean_env(),
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                    conn.request("GET", "/openapi.json")
                    ready = conn.getresponse().status == 200
                    conn.close()
                    if ready:
                        break
                except OSError:
                    time.sleep(0.2)
            started = log_path.read_text()
            with ThreadPoolExecutor(threads) as pool:
                results = [
                    r for part in pool.map(lambda i: _worker(port, plan[i::threads]), range(threads)) for r in part
                ]
            # the example request the start-up lines print
            example = re.search(r"curl '(http://127\.0\.0\.1:\d+)(/v1/[^']+)'", started)
            example_status = None
            if example:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                conn.request("GET", example.group(2))
                example_status = conn.getresponse().status
                conn.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    text = log_path.read_text()

    assert len(results) == len(plan)
    failed = sorted({(r[0][4], r[1]) for r in results if r[1] is None or r[1] >= 500})
    assert not failed, f"{len(failed)} requests got a 5xx or lost their connection: {failed[:10]}"
    for (kind, _path, expected, ordered, rid), status, ctype, body, connection, sock, first in results:
        assert connection != "close" and sock == first, f"{rid}: the connection was not kept"
        if kind == "hostile":
            assert status == expected and ctype == "application/json", (rid, status, body[:300])
            assert json.loads(body)["detail"], rid
        else:
            assert status == 200, (rid, status, body[:300])
            assert _same(json.loads(body)["rows"], expected, ordered), rid
    assert _sha256(database) == before, "the database file changed"

    # the start-up lines say where the endpoints are, before uvicorn's own lines
    assert example and example_status == 200, started
    n = len(json.loads((split / "endpoints.json").read_text("utf-8")))
    base = f"http://127.0.0.1:{port}"
    assert f"Serving {n} endpoints of {split} under {base}/v1/" in started
    assert f"{base}/docs" in started and f"index: {base}/" in started
    assert started.index(f"{base}/v1/") < started.index("Uvicorn running")
    assert "Traceback" not in text and "Internal Server Error" not in text and '" 500 ' not in text, text[-3000:]


# ---------------------------------------------------------------- values JSON cannot carry ----
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "nl2api"
BY_NAME = "/v1/list_files_by_name"
# rows of the endpoint made from the "beta" pair, called with other names: a BLOB that is not UTF-8
# text is {"$bytes": base64}, one that is is its text, +/-inf is {"$float": ...}
TAGGED = [
    ("alpha", [["alpha", {"$bytes": "//4A"}, {"$float": "inf"}]]),  # X'FFFE00', 9e999
    ("beta", [["beta", "ok", 1.5]]),
    ("apple", [["apple", {"$bytes": "gA=="}, {"$float": "-inf"}]]),
]  # X'80', -9e999


@pytest.fixture(scope="module")
def odd_split(tmp_path_factory) -> Path:
    """A REST split over tests/fixtures/nl2api/json_values.sql: its verified pairs' answers are
    plain, but the endpoints reach rows holding non-UTF-8 BLOBs and infinities."""
    root = tmp_path_factory.mktemp("json-values")
    with sqlite3.connect(root / "db.sqlite") as con:
        con.executescript((FIXTURES / "json_values.sql").read_text("utf-8"))
    con.close()
    cases = (FIXTURES / "json_values_pairs.jsonl").read_text("utf-8").splitlines()
    pairs = root / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(json.loads(line)["pair"]) + "\n" for line in cases if line.strip()), "utf-8")
    report = build_split(root / "db.sqlite", pairs, root / "rest", BuildOptions(style="rest", name="json-values"))
    assert report["verified"] == 2, report["rejections"]
    return root / "rest"


def test_rows_json_cannot_carry_are_answered_tagged_never_500(odd_split, caplog):
    from fastapi.testclient import TestClient

    caplog.set_level(logging.DEBUG)
    with TestClient(create_app(str(odd_split)), raise_server_exceptions=False) as client:
        for name, rows in TAGGED:
            resp = client.get(BY_NAME, params={"name": name})
            assert resp.status_code == 200, resp.text
            assert resp.json() == {"columns": ["files.name", "files.data", "files.size"], "rows": rows}
        resp = client.get("/v1/list_files_by_size_above", params={"size_above": -1})
        assert resp.status_code == 200 and resp.json()["rows"] == [["alpha"], ["beta"]], resp.text
    assert base64.b64decode("//4A") == b"\xff\xfe\x00" and base64.b64decode("gA==") == b"\x80"
    assert "Traceback" not in caplog.text and not any(r.exc_info for r in caplog.records)


def test_tool_observations_carry_the_same_tags(odd_split):
    """The same endpoints and tools called as tools (ToolEnv: eval episodes, ReAct runs) give a
    model observations that JSON carries as they are."""
    db = Database(odd_split / "database.sqlite")
    try:
        rest = ToolEnv(odd_split, db, "rest", [])
        for i, (name, rows) in enumerate(TAGGED):
            obs = rest.call("list_files_by_name", {"name": name}, f"out_{i}")
            assert obs["rows"] == rows and json.loads(json.dumps(obs, allow_nan=False)) == obs
        setup = [{"name": "initialize_active_data", "arguments": {"source": "files"}, "label": "data_1"}]
        slot = ToolEnv(odd_split, db, "slot", setup)
        obs = slot.call(
            "filter_data",
            {"data_source": "$data_1$", "key_name": "files.size", "operator": "greater_than", "value": 0},
            "above",
        )
        assert [r[-2:] for r in obs["rows"]] == [[{"$bytes": "//4A"}, {"$float": "inf"}], ["ok", 1.5]]
        assert json.loads(json.dumps(obs, allow_nan=False)) == obs
    finally:
        db.close()
