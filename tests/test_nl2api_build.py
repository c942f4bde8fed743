"""build_split: styles, reports, rejected rows, and that nothing unverified is ever written."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

import benchsmith.construction.nl2api._private.pairwork as build_module  # where each pair is converted
from benchsmith.construction.nl2api import (
    REASONS,
    STYLES,
    BuildOptions,
    Database,
    build_split,
    chinook_db,
    execute_sql,
    run_and_check,
)
from benchsmith.schemas import Sample, ToolCall, UserError

# Pairs file used by most tests. Blank line 5 is counted in line numbers but is not a row.
PAIRS: list[dict | str] = [
    {
        "id": "p-or",
        "question": "Which genres are Rock or Jazz?",
        "sql": "SELECT name FROM genres WHERE name = 'Rock' OR name = 'Jazz'",
    },
    {
        "id": "p-having",
        "question": "Which countries have at least five customers, and how many?",
        "sql": "SELECT country, COUNT(*) FROM customers GROUP BY country HAVING COUNT(*) >= 5",
    },
    {
        "id": "p-top",
        "question": "What are the five longest tracks?",
        "sql": "SELECT name, milliseconds FROM tracks ORDER BY milliseconds DESC LIMIT 5",
    },
    {"id": "p-count", "question": "How many tracks are there?", "sql": "SELECT COUNT(*) FROM tracks"},
    "",
    '{"id": "p-broken", "question": "truncated',
    {"id": "p-unordered", "question": "Name some tracks.", "sql": "SELECT name FROM tracks LIMIT 5"},
    {"id": "p-nosql", "question": "A row without SQL"},
    {"id": "p-or", "question": "Same id again", "sql": "SELECT name FROM genres"},
    {"id": "p-unknown", "question": "?", "sql": "SELECT x FROM nowhere"},
    {"question": "Which genres have an id above 20?", "sql": "SELECT name FROM genres WHERE genre_id > 20"},
]
VERIFIED_IDS = {"p-or", "p-having", "p-top", "p-count", "line-11"}
EXPECTED_REJECTIONS = [  # (line, id, code)
    (6, None, "invalid_row"),
    (7, "p-unordered", "unordered_limit"),
    (8, None, "invalid_row"),
    (9, "p-or", "duplicate_id"),
    (10, "p-unknown", "unknown_table"),
]


def write_pairs(path: Path, rows: list[dict | str]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", "utf-8")
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_samples(out: Path) -> list[Sample]:
    lines = [line for line in (out / "samples.jsonl").read_text("utf-8").splitlines() if line.strip()]
    samples = [Sample.model_validate_json(line) for line in lines]
    for line, sample in zip(lines, samples):
        assert sample.id == json.loads(line)["id"]
    return samples


def gold_calls(sample: Sample) -> list[ToolCall]:
    return [step.call for step in sample.gold if step.call is not None]


@pytest.fixture(scope="module")
def chinook(tmp_path_factory) -> Path:
    """A private copy of Chinook, so no test can touch the shared cache."""
    path = tmp_path_factory.mktemp("db") / "chinook.sqlite"
    shutil.copyfile(chinook_db(), path)
    return path


@pytest.fixture(scope="module")
def db(chinook):
    database = Database(chinook)
    yield database
    database.close()


@pytest.fixture
def pairs(tmp_path) -> Path:
    return write_pairs(tmp_path / "pairs.jsonl", PAIRS)


def assert_written_samples_are_verified(out: Path, db: Database) -> list[Sample]:
    """Every written sample validates and its answer is the SQL's own result."""
    samples = read_samples(out)
    for s in samples:
        assert s.verification is not None and s.verification.status == "verified"
        rows = [list(r) for r in execute_sql(db, s.metadata["sql"])]
        assert s.answer.kind == "exact"
        if s.answer.ordered:
            assert s.answer.value == rows
        else:
            assert sorted(map(repr, s.answer.value)) == sorted(map(repr, rows))
    return samples


# ---- styles, counts, report ------------------------------------------------------------------
VARIANTS = [
    pytest.param({"style": "slot"}, id="slot"),
    pytest.param({"style": "sel"}, id="sel"),
    pytest.param({"style": "rest"}, id="rest"),
    pytest.param({"style": "slot", "obfuscate": True}, id="slot-obfuscated"),
    pytest.param({"style": "sel", "obfuscate": True}, id="sel-obfuscated"),
    pytest.param({"style": "rest", "obfuscate": True}, id="rest-obfuscated"),
    pytest.param({"style": "slot", "tool_universe": 4}, id="slot-universe4"),
    pytest.param({"style": "sel", "tool_universe": 4}, id="sel-universe4"),
    pytest.param({"style": "rest", "tool_universe": 2}, id="rest-universe2"),
]


@pytest.mark.parametrize("kwargs", VARIANTS)
def test_build_counts_report_and_samples(kwargs, chinook, db, pairs, tmp_path):
    out = tmp_path / "out"
    report = build_split(chinook, pairs, out, BuildOptions(copy_db=False, **kwargs))

    assert report["total"] == 10  # the blank line is not a row
    assert report["verified"] == len(VERIFIED_IDS)
    assert report["rejected"] == {"duplicate_id": 1, "invalid_row": 2, "unknown_table": 1, "unordered_limit": 1}
    assert report["verified_rate"] == 0.5
    assert report["style"] == kwargs["style"]
    assert report["reasons"] == {code: REASONS[code] for code in report["rejected"]}
    assert [(r["line"], r["id"], r["code"]) for r in report["rejections"]] == EXPECTED_REJECTIONS
    assert all(r["message"] for r in report["rejections"])
    assert json.loads((out / "report.json").read_text("utf-8")) == report

    samples = assert_written_samples_are_verified(out, db)
    assert {s.provenance.source_id for s in samples} == VERIFIED_IDS
    assert {s.metadata["pair_line"] for s in samples} == {1, 2, 3, 4, 11}
    for s in samples:
        assert s.categories[:2] == ["nl2api", kwargs["style"]]
        assert gold_calls(s) and s.tools
        names = {t.name for t in s.tools}
        assert {c.name for c in gold_calls(s)} <= names, "every gold call must name an offered tool"
        if kwargs["style"] == "rest":
            assert s.setup == [] and len(s.gold) == 1
        else:
            assert [c.name for c in s.setup] == ["initialize_active_data"]
    assert next(s for s in samples if s.provenance.source_id == "p-top").answer.ordered is True

    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    assert manifest["sample_count"] == len(samples)
    for name, digest in manifest["files"].items():
        assert digest == f"sha256:{sha256(out / name)}"
    assert ("obfuscation.json" in manifest["files"]) == bool(kwargs.get("obfuscate"))
    assert (out / "obfuscation.json").exists() == bool(kwargs.get("obfuscate"))
    assert ("endpoints.json" in manifest["files"]) == (kwargs["style"] == "rest")


def test_invalid_rows_are_reported_with_line_numbers(chinook, db, tmp_path):
    pairs = write_pairs(
        tmp_path / "pairs.jsonl",
        [
            {"id": "a", "question": "How many genres?", "sql": "SELECT COUNT(*) FROM genres"},
            "{not json",
            "",
            {"id": "b", "question": "A question without SQL"},
            {"id": "c", "sql": "SELECT COUNT(*) FROM genres"},
            '["a", "list"]',
            {"id": "d", "question": "How many artists?", "sql": "SELECT COUNT(*) FROM artists", "extra": 1},
            {"id": "e", "question": "How many albums?", "sql": "SELECT COUNT(*) FROM albums"},
        ],
    )
    out = tmp_path / "out"
    report = build_split(chinook, pairs, out, BuildOptions(copy_db=False))
    bad = [(r["line"], r["code"]) for r in report["rejections"]]
    assert bad == [(2, "invalid_row"), (4, "invalid_row"), (5, "invalid_row"), (6, "invalid_row"), (7, "invalid_row")]
    messages = {r["line"]: r["message"] for r in report["rejections"]}
    assert "JSON" in messages[2]
    assert "sql" in messages[4] and "question" in messages[5]
    assert report["rejected"] == {"invalid_row": 5} and report["total"] == 7
    assert {s.provenance.source_id for s in assert_written_samples_are_verified(out, db)} == {"a", "e"}


def test_duplicate_ids_are_rejected(chinook, db, tmp_path):
    pairs = write_pairs(
        tmp_path / "pairs.jsonl",
        [
            {"id": "same", "question": "How many genres?", "sql": "SELECT COUNT(*) FROM genres"},
            {"id": "same", "question": "How many artists?", "sql": "SELECT COUNT(*) FROM artists"},
            {"id": "same", "question": "Broken", "sql": "SELECT nonsense FROM"},
            {"question": "How many albums?", "sql": "SELECT COUNT(*) FROM albums"},
            {"question": "How many tracks?", "sql": "SELECT COUNT(*) FROM tracks"},
        ],
    )
    out = tmp_path / "out"
    report = build_split(chinook, pairs, out, BuildOptions(copy_db=False))
    assert [(r["line"], r["id"], r["code"]) for r in report["rejections"]] == [
        (2, "same", "duplicate_id"),
        (3, "same", "duplicate_id"),
    ]
    samples = assert_written_samples_are_verified(out, db)
    assert sorted((s.provenance.source_id, s.metadata["sql"]) for s in samples) == [
        ("line-4", "SELECT COUNT(*) FROM albums"),
        ("line-5", "SELECT COUNT(*) FROM tracks"),
        ("same", "SELECT COUNT(*) FROM genres"),
    ]


# ---- nothing unverified is written -------------------------------------------------------------
TAMPER_PAIRS = [
    {"id": "t-where", "question": "Genres with an id above 20?", "sql": "SELECT name FROM genres WHERE genre_id > 20"},
    {"id": "t-or", "question": "Rock or Jazz?", "sql": "SELECT name FROM genres WHERE name = 'Rock' OR name = 'Jazz'"},
    {
        "id": "t-having",
        "question": "Countries with 5+ customers?",
        "sql": "SELECT country, COUNT(*) FROM customers GROUP BY country HAVING COUNT(*) >= 5",
    },
    {"id": "t-plain", "question": "How many tracks?", "sql": "SELECT COUNT(*) FROM tracks"},
]
NEGATED = {"equal_to": "not_equal_to", "greater_than": "less_than_or_equal_to", "greater_than_or_equal_to": "less_than"}


def _relabel_refs(value, old: str, new: str):
    if value == f"${old}$":
        return new
    if isinstance(value, list):
        return [_relabel_refs(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _relabel_refs(v, old, new) for k, v in value.items()}
    return value


def _negate(cond: dict) -> dict:
    return {**cond, "operator": NEGATED[cond["operator"]]}


def tamper_first_filter(calls: list[ToolCall], kind: str) -> list[ToolCall]:
    """Damage the first filter call of a gold sequence (sequences without one are returned as they are)."""
    idx = next((i for i, c in enumerate(calls) if c.name in ("filter_data", "filter_data_any")), None)
    if idx is None:
        return calls
    target = calls[idx]
    rest = calls[:idx] + calls[idx + 1 :]
    if kind == "drop":  # leave the filter out and feed its input to whatever used its output
        return [
            c.model_copy(
                update={"arguments": _relabel_refs(c.arguments, target.label, target.arguments["data_source"])}
            )
            for c in rest
        ]
    if kind == "dangling":  # leave it out and let later calls refer to a label nobody produced
        return rest
    assert kind == "negate"
    args = dict(target.arguments)
    if target.name == "filter_data":
        args = _negate(args)
    else:
        args["conditions"] = [_negate(c) for c in args["conditions"]]
    return calls[:idx] + [target.model_copy(update={"arguments": args})] + calls[idx + 1 :]


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize(
    "kind,code", [("drop", "result_mismatch"), ("negate", "result_mismatch"), ("dangling", "tool_error")]
)
def test_unverified_sequence_is_never_written(kind, code, style, chinook, db, tmp_path, monkeypatch):
    real_convert = build_module.convert
    tampered: list[str] = []

    def faulty_convert(database, sql):
        conv = real_convert(database, sql)
        calls = tamper_first_filter(list(conv.calls), kind)
        if calls != conv.calls:
            tampered.append(sql)
        return dataclasses.replace(conv, calls=calls)

    monkeypatch.setattr(build_module, "convert", faulty_convert)
    pairs = write_pairs(tmp_path / "pairs.jsonl", TAMPER_PAIRS)
    out = tmp_path / "out"
    report = build_split(chinook, pairs, out, BuildOptions(style=style, copy_db=False))

    assert len(tampered) == 3
    assert [(r["id"], r["code"]) for r in report["rejections"]] == [
        ("t-where", code),
        ("t-or", code),
        ("t-having", code),
    ]
    assert report["verified"] == 1 and report["rejected"] == {code: 3}
    samples = assert_written_samples_are_verified(out, db)
    assert [s.provenance.source_id for s in samples] == ["t-plain"]
    written = (out / "samples.jsonl").read_text("utf-8")
    for pair in TAMPER_PAIRS[:3]:
        assert pair["question"] not in written
    assert all(s.metadata["sql"] not in tampered for s in samples)


def test_the_tampering_helper_really_changes_the_answer(db):
    """Guard for the test above: each tampered sequence is wrong, the untouched one is right."""
    from benchsmith.construction.nl2api import Rejection, convert

    for pair in TAMPER_PAIRS[:3]:
        conv = convert(db, pair["sql"])
        expected = execute_sql(db, pair["sql"])
        run_and_check(db, conv.setup, conv.calls, expected, conv.ordered)
        for kind in ("drop", "negate", "dangling"):
            with pytest.raises(Rejection):
                run_and_check(db, conv.setup, tamper_first_filter(list(conv.calls), kind), expected, conv.ordered)


ORDERED_PAIRS = [
    {"id": "o-genres", "question": "Genres in alphabetical order?", "sql": "SELECT name FROM genres ORDER BY name"},
    {
        "id": "o-customers",
        "question": "Customers by country, then city from Z to A?",
        "sql": "SELECT country, city FROM customers ORDER BY country, city DESC",
    },
    {"id": "o-unordered", "question": "Which genres are there?", "sql": "SELECT name FROM genres"},
]


def _build_with_sort_tampering(tamper, chinook, tmp_path, monkeypatch, style="slot"):
    real_convert = build_module.convert

    def faulty_convert(database, sql):
        conv = real_convert(database, sql)
        return dataclasses.replace(conv, calls=tamper(list(conv.calls)))

    monkeypatch.setattr(build_module, "convert", faulty_convert)
    pairs = write_pairs(tmp_path / "pairs.jsonl", ORDERED_PAIRS)
    out = tmp_path / "out"
    return build_split(chinook, pairs, out, BuildOptions(style=style, copy_db=False)), out


def _reverse_sort(calls: list[ToolCall]) -> list[ToolCall]:
    return [
        c.model_copy(update={"arguments": {**c.arguments, "ascending": [not a for a in c.arguments["ascending"]]}})
        if c.name == "sort_data"
        else c
        for c in calls
    ]


@pytest.mark.parametrize("style", ["slot", "sel"])
def test_rows_in_wrong_order_are_rejected_as_order_mismatch(style, chinook, db, tmp_path, monkeypatch):
    report, out = _build_with_sort_tampering(_reverse_sort, chinook, tmp_path, monkeypatch, style)
    assert [(r["id"], r["code"]) for r in report["rejections"]] == [
        ("o-genres", "order_mismatch"),
        ("o-customers", "order_mismatch"),
    ]
    samples = assert_written_samples_are_verified(out, db)
    assert [s.provenance.source_id for s in samples] == ["o-unordered"]


def _drop_sort(calls: list[ToolCall]) -> list[ToolCall]:
    out = []
    for i, c in enumerate(calls):
        if c.name == "sort_data":
            return out + [
                d.model_copy(update={"arguments": _relabel_refs(d.arguments, c.label, c.arguments["data_source"])})
                for d in calls[i + 1 :]
            ]
        out.append(c)
    return out


def _sort_by_first_key_only(calls: list[ToolCall]) -> list[ToolCall]:
    return [
        c.model_copy(
            update={
                "arguments": {
                    **c.arguments,
                    "key_names": c.arguments["key_names"][:1],
                    "ascending": c.arguments["ascending"][:1],
                }
            }
        )
        if c.name == "sort_data"
        else c
        for c in calls
    ]


@pytest.mark.parametrize(
    "tamper,wrong",
    [(_drop_sort, {"o-genres", "o-customers"}), (_sort_by_first_key_only, {"o-customers"})],
    ids=["no-sort", "first-key-only"],
)
def test_missing_sort_keys_are_rejected_as_order_mismatch(tamper, wrong, chinook, db, tmp_path, monkeypatch):
    report, out = _build_with_sort_tampering(tamper, chinook, tmp_path, monkeypatch)
    assert {r["id"]: r["code"] for r in report["rejections"]} == dict.fromkeys(wrong, "order_mismatch")
    assert_written_samples_are_verified(out, db)


# ---- obfuscation and reduced tool universes --------------------------------------------------------
@pytest.mark.parametrize("style", STYLES)
def test_obfuscated_split_uses_only_func_and_arg_names(style, chinook, db, pairs, tmp_path):
    out = tmp_path / "out"
    build_split(chinook, pairs, out, BuildOptions(style=style, obfuscate=True, copy_db=False))
    mapping = json.loads((out / "obfuscation.json").read_text("utf-8"))
    assert mapping["tools"] and mapping["arguments"]
    assert all(re.fullmatch(r"FUNC_\d+", v) for v in mapping["tools"].values())
    assert all(re.fullmatch(r"ARG_\d+", v) for v in mapping["arguments"].values())
    assert len(set(mapping["tools"].values())) == len(mapping["tools"])
    assert len(set(mapping["arguments"].values())) == len(mapping["arguments"])

    samples = assert_written_samples_are_verified(out, db)
    listed = json.loads((out / "tools.json").read_text("utf-8"))
    tool_specs = [t.model_dump(mode="json") for s in samples for t in s.tools] + listed
    for spec in tool_specs:
        assert re.fullmatch(r"FUNC_\d+", spec["name"]), spec["name"]
        assert spec["name"] in mapping["tools"].values()
        params = spec["parameters"]
        # a REST endpoint without filters takes no parameters at all
        assert params["properties"] or style == "rest"
        assert all(re.fullmatch(r"ARG_\d+", p) for p in params["properties"])
        assert all(re.fullmatch(r"ARG_\d+", p) for p in params.get("required", []))
    for s in samples:
        for call in gold_calls(s):
            assert re.fullmatch(r"FUNC_\d+", call.name), call.name
            assert call.arguments or style == "rest"
            assert all(re.fullmatch(r"ARG_\d+", a) for a in call.arguments), call.arguments
    originals = set(mapping["tools"]) | set(mapping["arguments"])
    assert not originals & {spec["name"] for spec in tool_specs}


def test_obfuscated_slot_sequences_still_reproduce_the_sql(chinook, db, pairs, tmp_path):
    out = tmp_path / "out"
    build_split(chinook, pairs, out, BuildOptions(style="slot", obfuscate=True, copy_db=False))
    mapping = json.loads((out / "obfuscation.json").read_text("utf-8"))
    tool_back = {v: k for k, v in mapping["tools"].items()}
    arg_back = {v: k for k, v in mapping["arguments"].items()}
    samples = read_samples(out)
    assert len(samples) == len(VERIFIED_IDS)
    for s in samples:
        calls = [
            ToolCall(name=tool_back[c.name], arguments={arg_back[k]: v for k, v in c.arguments.items()}, label=c.label)
            for c in gold_calls(s)
        ]
        run_and_check(db, s.setup, calls, execute_sql(db, s.metadata["sql"]), s.answer.ordered)


@pytest.mark.parametrize("style,size", [("slot", 1), ("slot", 4), ("sel", 4), ("sel", 10), ("rest", 2)])
def test_tool_universe_keeps_at_most_n_tools_and_always_the_gold_ones(style, size, chinook, pairs, tmp_path):
    full = read_samples(_build(chinook, pairs, tmp_path / "full", style))
    reduced = read_samples(_build(chinook, pairs, tmp_path / "reduced", style, tool_universe=size))
    full_tools = {s.provenance.source_id: {t.name for t in s.tools} for s in full}
    assert len(reduced) == len(full) == len(VERIFIED_IDS)
    saw_reduction = False
    for s in reduced:
        names = [t.name for t in s.tools]
        gold = {c.name for c in gold_calls(s)}
        assert len(names) == len(set(names))
        assert gold <= set(names), "gold tools must always be offered"
        assert set(names) <= full_tools[s.provenance.source_id]
        assert len(names) == max(len(gold), min(size, len(full_tools[s.provenance.source_id])))
        saw_reduction |= len(names) < len(full_tools[s.provenance.source_id])
    assert saw_reduction
    again = read_samples(_build(chinook, pairs, tmp_path / "again", style, tool_universe=size))
    assert [[t.name for t in s.tools] for s in again] == [[t.name for t in s.tools] for s in reduced]


def _build(chinook, pairs, out, style, **kwargs) -> Path:
    build_split(chinook, pairs, out, BuildOptions(style=style, copy_db=False, **kwargs))
    return out


# ---- bad databases, read-only access -------------------------------------------------------------
def _junk(tmp_path: Path) -> Path:
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"\x00\xffthis is not a SQLite database\n" * 64)
    return path


def _directory(tmp_path: Path) -> Path:
    path = tmp_path / "a_directory.sqlite"
    path.mkdir()
    return path


def _missing(tmp_path: Path) -> Path:
    return tmp_path / "missing.sqlite"


@pytest.mark.parametrize("make_db", [_missing, _junk, _directory], ids=["missing", "junk-bytes", "directory"])
def test_unusable_database_is_a_user_error_naming_the_path(make_db, pairs, tmp_path):
    path = make_db(tmp_path)
    out = tmp_path / "out"
    with pytest.raises(UserError) as info:
        build_split(path, pairs, out, BuildOptions(copy_db=False))
    assert str(path) in str(info.value)
    assert not out.exists(), "nothing may be written for an unusable database"
    with pytest.raises(UserError, match=re.escape(str(path))):
        Database(path)


def test_database_is_opened_read_only(chinook, tmp_path):
    before = sha256(chinook)
    database = Database(chinook)
    try:
        for statement in (
            "DELETE FROM genres",
            "INSERT INTO genres (name) VALUES ('Polka')",
            "CREATE TABLE scratch (x INTEGER)",
            "DROP TABLE genres",
            "UPDATE tracks SET name = 'x'",
        ):
            with pytest.raises(sqlite3.OperationalError, match="readonly|read-only|query_only"):
                database.execute(statement)
        assert database.execute("SELECT COUNT(*) FROM genres") == [(25,)]
    finally:
        database.close()
    assert sha256(chinook) == before
    with sqlite3.connect(chinook) as con:
        assert con.execute("SELECT COUNT(*) FROM genres").fetchone() == (25,)
        assert con.execute("SELECT name FROM sqlite_master WHERE name = 'scratch'").fetchall() == []


def test_build_leaves_the_database_unchanged_and_copies_it(chinook, pairs, tmp_path):
    before = sha256(chinook)
    out = tmp_path / "out"
    build_split(chinook, pairs, out, BuildOptions())
    assert sha256(chinook) == before
    assert sha256(out / "database.sqlite") == before
    assert "database.sqlite" in json.loads((out / "manifest.json").read_text("utf-8"))["files"]


# ---- values JSON cannot carry ------------------------------------------------------------------
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "nl2api"
JSON_VALUE_CASES = [
    json.loads(line) for line in (FIXTURES / "json_values_pairs.jsonl").read_text("utf-8").splitlines() if line.strip()
]


def json_values_db(path: Path) -> Path:
    """A database holding BLOBs that are not UTF-8 text and +/-inf (tests/fixtures/nl2api/json_values.sql)."""
    with sqlite3.connect(path) as con:
        con.executescript((FIXTURES / "json_values.sql").read_text("utf-8"))
    con.close()
    return path


@pytest.mark.parametrize("style", STYLES)
def test_answers_and_observations_json_cannot_carry_are_rejected_and_the_build_goes_on(style, tmp_path):
    """A BLOB that is not UTF-8 text or an infinite number in a gold answer or observation is the
    pair's rejection (binary_value, non_finite_value), never a traceback or a null where SQL says
    inf; UTF-8 bytes come out as their text, as before."""
    import subprocess

    from helpers import clean_env, console_script

    db_path = json_values_db(tmp_path / "db.sqlite")
    pairs_path = write_pairs(tmp_path / "pairs.jsonl", [c["pair"] for c in JSON_VALUE_CASES])
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            console_script(),
            "nl2api",
            "build",
            "--db",
            str(db_path),
            "--pairs",
            str(pairs_path),
            "--style",
            style,
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "report.json").read_text("utf-8"))
    rejected = {r["id"]: r for r in report["rejections"]}
    samples = {s.provenance.source_id: s for s in read_samples(out)}
    for case in JSON_VALUE_CASES:
        sid, expected = case["pair"]["id"], case["expected"][style]
        if expected == "verified":
            assert sid in samples and sid not in rejected, rejected.get(sid)
            assert sorted(samples[sid].answer.value) == case["answer"]
        else:
            assert sid not in samples
            assert rejected[sid]["code"] == expected and case["where"] in rejected[sid]["message"], rejected[sid]
            assert expected in REASONS
    assert report["verified"] == sum(c["expected"][style] == "verified" for c in JSON_VALUE_CASES)
    assert report["rejected"] == {
        code: n
        for code in ("binary_value", "non_finite_value")
        if (n := sum(c["expected"][style] == code for c in JSON_VALUE_CASES))
    }
