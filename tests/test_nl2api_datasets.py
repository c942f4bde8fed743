"""The NL2SQL dataset readers (BIRD, Spider, a folder of SQLite files) and the packaged examples."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from benchsmith.construction.nl2api._private.build import Pair
from benchsmith.construction.nl2api._private.converter import REASONS
from benchsmith.construction.nl2api._private.datasets import (
    Dataset,
    DatasetDB,
    example_names,
    materialize_example,
    read_dataset,
    write_pairs,
)
from benchsmith.schemas import UserError, iter_jsonl_lenient

REJECTION_KEYS = {"id", "line", "code", "message", "file"}


@pytest.fixture(scope="module")
def bird_example(tmp_path_factory) -> Path:
    return materialize_example("bird", tmp_path_factory.mktemp("bird"))


@pytest.fixture(scope="module")
def spider_example(tmp_path_factory) -> Path:
    return materialize_example("spider", tmp_path_factory.mktemp("spider"))


@pytest.fixture
def bird_copy(bird_example, tmp_path) -> Path:
    """A private copy of the BIRD example that a test may break."""
    return Path(shutil.copytree(bird_example, tmp_path / "bird"))


@pytest.fixture
def spider_copy(spider_example, tmp_path) -> Path:
    return Path(shutil.copytree(spider_example, tmp_path / "spider"))


def _entries(root: Path, name: str = "dev.json") -> list[dict]:
    return json.loads((root / name).read_text(encoding="utf-8"))


def _write_entries(root: Path, entries: list[dict], name: str = "dev.json") -> None:
    (root / name).write_text(json.dumps(entries, indent=4, ensure_ascii=False), encoding="utf-8")


def _check_rejections(ds: Dataset) -> None:
    for r in ds.rejections:
        assert set(r) == REJECTION_KEYS, r
        assert r["code"] in REASONS
        assert r["file"] == str(ds.question_file)


# ------------------------------------------------------------------------------- examples ----


def test_example_names():
    assert example_names() == ["bird", "spider"]


def test_unknown_example_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no example dataset 'wikisql'.*bird, spider"):
        materialize_example("wikisql", tmp_path)


def test_materialized_bird_layout(bird_example):
    files = sorted(str(p.relative_to(bird_example)) for p in bird_example.rglob("*") if p.is_file())
    assert files == [
        "dev.json",
        "dev_databases/retail_loans/database_description/account.csv",
        "dev_databases/retail_loans/database_description/branch.csv",
        "dev_databases/retail_loans/database_description/card.csv",
        "dev_databases/retail_loans/database_description/client.csv",
        "dev_databases/retail_loans/database_description/loan.csv",
        "dev_databases/retail_loans/database_description/trans.csv",
        "dev_databases/retail_loans/retail_loans.sqlite",
        "dev_databases/school_funding/database_description/districts.csv",
        "dev_databases/school_funding/database_description/enrollment.csv",
        "dev_databases/school_funding/database_description/schools.csv",
        "dev_databases/school_funding/database_description/test_scores.csv",
        "dev_databases/school_funding/school_funding.sqlite",
    ]
    raw = (bird_example / "dev_databases/school_funding/database_description/districts.csv").read_bytes()
    assert "José Ramírez".encode("cp1252") in raw and b"\xef\xbb\xbf" not in raw
    assert (bird_example / "dev_databases/school_funding/database_description/schools.csv").read_bytes()[
        :3
    ] == b"\xef\xbb\xbf"


def test_materialize_twice_replaces_the_files(tmp_path):
    root = materialize_example("spider", tmp_path)
    db = root / "database" / "pet_clinic" / "pet_clinic.sqlite"
    con = sqlite3.connect(db)
    con.execute('DELETE FROM "Visits"')
    con.commit()
    con.close()
    materialize_example("spider", tmp_path)
    con = sqlite3.connect(db)
    assert con.execute('SELECT COUNT(*) FROM "Visits"').fetchone() == (12,)
    con.close()
    assert not [p for p in root.rglob("*.tmp")]


@pytest.mark.parametrize(
    "kind, sizes",
    [
        (
            "bird",
            {
                "school_funding": {"districts": 18, "schools": 85, "enrollment": 77, "test_scores": 48, "funding": 104},
                "retail_loans": {"branch": 11, "client": 82, "account": 98, "loan": 62, "trans": 193, "card": 41},
            },
        ),
        (
            "spider",
            {
                "music_festival": {"venue": 6, "performer": 12, "festival": 9, "performance": 22},
                "pet_clinic": {"Owners": 7, "Pets": 11, "Vets": 4, "Visits": 12},
            },
        ),
    ],
)
def test_example_databases_are_whole(kind, sizes, bird_example, spider_example):
    root = bird_example if kind == "bird" else spider_example
    ds = read_dataset(root, kind)
    assert {name: db.path.name for name, db in ds.databases.items()} == {n: f"{n}.sqlite" for n in sizes}
    for name, tables in sizes.items():
        con = sqlite3.connect(ds.databases[name].path)
        try:
            found = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
            assert found == list(tables)
            assert {t: con.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in found} == tables
            assert con.execute("PRAGMA foreign_key_check").fetchall() == []
            assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        finally:
            con.close()


def test_bird_example(bird_example):
    ds = read_dataset(bird_example, "bird")
    assert ds.kind == "bird" and ds.root == bird_example and ds.question_file == bird_example / "dev.json"
    assert ds.total == 41 and ds.n_pairs == 40
    assert list(ds.databases) == ["school_funding", "retail_loans"]
    school, loans = ds.databases["school_funding"], ds.databases["retail_loans"]
    assert [p["id"] for p in school.pairs] == [str(i) for i in range(20)]
    assert [p["id"] for p in loans.pairs] == [str(i) for i in range(20, 40)]
    assert school.indexes == list(range(20)) and loans.indexes == list(range(20, 40))
    assert school.path == bird_example / "dev_databases" / "school_funding" / "school_funding.sqlite"
    assert school.pairs[0] == {
        "id": "0",
        "question": "How many charter schools are there in Fresno County?",
        "sql": "SELECT COUNT(T1.CDSCode) FROM schools AS T1 INNER JOIN districts AS T2 ON "
        "T1.`District Code` = T2.`District Code` WHERE T2.`County Name` = 'Fresno' AND T1.Charter = 1",
        "evidence": "charter schools refers to Charter = 1; Fresno County refers to `County Name` = 'Fresno'",
        "difficulty": "simple",
        "db_id": "school_funding",
    }
    by_id = {p["id"]: p for db in ds.databases.values() for p in db.pairs}
    assert by_id["36"]["evidence"] is None  # BIRD's empty evidence
    assert by_id["36"]["question"] == "What is the email address of the owner of account 1009?"
    assert Counter(p["difficulty"] for p in by_id.values()) == {"simple": 15, "moderate": 16, "challenging": 9}
    for db in ds.databases.values():
        for pair in db.pairs:
            assert Pair(**pair).db_id == db.db_id
    _check_rejections(ds)
    assert [(r["id"], r["code"], r["line"]) for r in ds.rejections] == [("40", "unknown_database", 322)]
    message = ds.rejections[0]["message"]
    assert "entry 40" in message and "'movie_platform'" in message
    assert str(bird_example / "dev_databases" / "movie_platform" / "movie_platform.sqlite") in message
    assert ds.warnings == []


def test_bird_descriptions(bird_example):
    ds = read_dataset(bird_example, "bird")
    docs = ds.databases["school_funding"].descriptions
    assert sorted(docs) == ["districts", "enrollment", "schools", "test_scores"]  # funding has no CSV
    # cp1252
    assert docs["districts"]["Superintendent"] == (
        "name of the district superintendent (null means the post was vacant when the data was collected; "
        "e.g. José Ramírez)"
    )
    assert docs["districts"]["District Name"] == "name of the school district (e.g. Peña Valley Elementary)"
    # UTF-8 with a BOM: the first column name is not spoiled
    assert list(docs["schools"])[0] == "CDSCode"
    assert docs["schools"]["CDSCode"] == "14-digit County-District-School code that identifies the school"
    assert docs["schools"]["Longitude"] == "longitude of the school"  # "not useful" is dropped
    assert docs["schools"]["Charter"] == (
        "whether the school is a charter school (0: not a charter school; 1: charter school)"
    )
    # a multi-line value description; the expanded column name stands in for an empty description
    assert docs["enrollment"]["FRPM Count (K-12)"] == (
        "Free or Reduced Price Meal Count (K-12) (commonsense evidence: eligible FRPM rate = "
        "FRPM Count (K-12) / Enrollment (K-12))"
    )
    # a header in odd case with spaces
    assert (
        docs["test_scores"]["AvgScrRead"] == "average score in Reading (null when fewer than 15 students took the test)"
    )
    assert len(docs["test_scores"]) == 7
    loans = ds.databases["retail_loans"].descriptions
    assert sorted(loans) == ["account", "branch", "card", "client", "loan", "trans"]
    assert loans["loan"]["status"] == (  # CRLF line ends
        "repayment status of the loan (A: contract finished, no problems; B: contract finished, loan not paid; "
        "C: running contract, OK so far; D: running contract, client in debt)"
    )
    assert loans["trans"]["amount"] == "amount of the transaction"  # a value description repeating it is dropped


def test_spider_example(spider_example):
    ds = read_dataset(spider_example, "spider")
    assert ds.total == 20 and ds.rejections == [] and ds.warnings == []
    assert list(ds.databases) == ["music_festival", "pet_clinic"]
    festival, clinic = ds.databases["music_festival"], ds.databases["pet_clinic"]
    assert [p["id"] for p in festival.pairs] == [f"spider-dev-{i}" for i in range(12)]
    assert clinic.indexes == list(range(12, 20))
    assert clinic.pairs[0] == {
        "id": "spider-dev-12",
        "question": "How many dogs are there?",
        "sql": "select count(*) from pets where species = 'dog'",
        "evidence": None,
        "difficulty": None,
        "db_id": "pet_clinic",
    }
    assert clinic.path == spider_example / "database" / "pet_clinic" / "pet_clinic.sqlite"
    assert festival.descriptions["venue"] == {
        "__table__": "venue",
        "Venue_ID": "venue id",
        "Name": "name",
        "City": "city",
        "Capacity": "capacity",
        "Opened_Year": "opened year",
    }
    assert clinic.descriptions["Pets"]["weight_kg"] == "weight kg"
    assert sorted(clinic.descriptions) == ["Owners", "Pets", "Vets", "Visits"]


# ----------------------------------------------------------------- the example SQL itself ----


def _limit_probes(sql: str) -> list[tuple[str, int, int]]:
    """For every ORDER BY ... LIMIT n in ``sql``: a query listing its rows' order keys in order
    (the LIMIT removed, the keys appended as the last columns), n (plus any offset) and the
    number of keys."""
    probes = []
    for node in sqlglot.parse_one(sql, read="sqlite").find_all(exp.Select, exp.Union, exp.Intersect, exp.Except):
        if node.args.get("limit") is None:
            continue
        assert node.args.get("order") is not None, f"LIMIT without ORDER BY in {sql}"
        n = int(node.args["limit"].expression.name)
        if node.args.get("offset") is not None:
            n += int(node.args["offset"].expression.name)
        body = node.copy()
        body.set("limit", None)
        body.set("offset", None)
        order = body.args["order"]
        if isinstance(body, exp.Select):
            aliases = {p.alias: p.this for p in body.expressions if isinstance(p, exp.Alias)}
            keys = []
            for o in order.expressions:
                key = o.this
                if isinstance(key, exp.Column) and not key.table and key.name in aliases:
                    key = aliases[key.name]
                elif isinstance(key, exp.Literal) and key.is_int:
                    key = body.expressions[int(key.name) - 1]
                    key = key.this if isinstance(key, exp.Alias) else key
                keys.append(exp.alias_(key.copy(), f"__key{len(keys)}"))
            body.set("expressions", [*body.expressions, *keys])
            probes.append((body.sql("sqlite"), n, len(keys)))
        else:
            keys = ", ".join(o.this.sql("sqlite") for o in order.expressions)
            body.set("order", None)
            probes.append(
                (f"SELECT {keys} FROM ({body.sql('sqlite')}) {order.sql('sqlite')}", n, len(order.expressions))
            )
    return probes


def test_limit_probe_finds_a_tie():
    con = sqlite3.connect(":memory:")
    con.executescript("CREATE TABLE t (a TEXT, b INT); INSERT INTO t VALUES ('x', 2), ('y', 2), ('z', 1);")
    ((probe, n, k),) = _limit_probes("SELECT a FROM t ORDER BY b DESC LIMIT 1")
    keys = [r[-k:] for r in con.execute(probe)]
    assert n == 1 and keys[0] == keys[1] == (2,)
    ((probe, n, k),) = _limit_probes("SELECT a, b + 1 AS c FROM t ORDER BY c, a LIMIT 2")
    assert [r[-k:] for r in con.execute(probe)] == [(2, "z"), (3, "x"), (3, "y")]


@pytest.mark.parametrize("kind, expected", [("bird", 40), ("spider", 20)])
def test_every_example_sql_runs_returns_rows_and_has_no_tie_at_its_limit(kind, expected, bird_example, spider_example):
    ds = read_dataset(bird_example if kind == "bird" else spider_example, kind)
    checked = 0
    for db in ds.databases.values():
        con = sqlite3.connect(f"{db.path.as_uri()}?mode=ro", uri=True)
        try:
            for pair in db.pairs:
                rows = con.execute(pair["sql"]).fetchall()
                assert rows, f"{pair['id']} returns no rows"
                for probe, n, k in _limit_probes(pair["sql"]):
                    keys = [tuple(r[-k:]) for r in con.execute(probe)]
                    assert len(keys) <= n or keys[n - 1] != keys[n], f"{pair['id']}: a tie across LIMIT {n}"
                checked += 1
        finally:
            con.close()
    assert checked == expected


def test_bird_example_uses_the_advanced_constructs(bird_example):
    sql = {str(e["question_id"]): e["SQL"] for e in _entries(bird_example)}
    wanted = {
        "NOT EXISTS (": "11",
        "WITH county_totals AS": "13",
        ") AS T": "14",
        " INTERSECT ": "15",
        "DESC NULLS LAST": "16",
        "RANK() OVER (PARTITION BY": "17",
        "DATE('2021-01-01')": "18",
        "CASE WHEN": "19",
        " EXCEPT ": "29",
        " UNION ": "30",
        "ROW_NUMBER() OVER (PARTITION BY": "31",
        "WITH running AS": "32",
        "EXISTS (": "33",
        "WHERE T2.duration = T1.duration": "34",
        "IIF(": "4",
        "SUBSTR(Zip": "8",
        "CAST(": "1",
        "strftime('%Y'": "2",
    }
    for construct, qid in wanted.items():
        assert construct in sql[qid], (construct, qid)
    assert sum("ORDER BY" in s and s.endswith("LIMIT 1") for s in sql.values()) >= 8
    assert sum("`" in s for s in sql.values()) >= 15


# ---------------------------------------------------------------------------- bad inputs ----


def test_unknown_kind_and_missing_folder(tmp_path):
    with pytest.raises(UserError, match="unknown dataset kind 'wikisql'"):
        read_dataset(tmp_path, "wikisql")
    with pytest.raises(UserError, match=f"{tmp_path / 'nope'} does not exist"):
        read_dataset(tmp_path / "nope", "bird")


def test_missing_question_file_names_the_paths(bird_copy):
    (bird_copy / "dev.json").unlink()
    with pytest.raises(UserError) as err:
        read_dataset(bird_copy, "bird")
    assert f"looked for {bird_copy / 'dev.json'}, {bird_copy / 'train.json'}" in str(err.value)
    with pytest.raises(UserError, match=f"looked for {bird_copy / 'mini_dev.json'}.*split file name"):
        read_dataset(bird_copy, "bird", split_file="mini_dev.json")


def test_split_file(bird_copy):
    (bird_copy / "dev.json").rename(bird_copy / "mini_dev.json")
    ds = read_dataset(bird_copy, "bird", split_file="mini_dev.json")
    assert ds.question_file == bird_copy / "mini_dev.json" and ds.n_pairs == 40


def test_broken_json_names_file_line_and_column(bird_copy):
    (bird_copy / "dev.json").write_text('[\n  {"db_id": "school_funding",}\n]\n', encoding="utf-8")
    with pytest.raises(UserError, match=f"^{bird_copy / 'dev.json'}:2:30: invalid JSON"):
        read_dataset(bird_copy, "bird")
    (bird_copy / "dev.json").write_text('{"questions": []}', encoding="utf-8")
    with pytest.raises(UserError, match="expected a JSON array of question entries, found a dict"):
        read_dataset(bird_copy, "bird")


def test_no_database_folder(bird_copy):
    shutil.rmtree(bird_copy / "dev_databases")
    with pytest.raises(UserError, match="no database folder: looked for dev_databases/, train_databases/, databases/"):
        read_dataset(bird_copy, "bird")


def test_entry_lacking_a_field_is_rejected_and_the_rest_comes_through(bird_copy):
    entries = _entries(bird_copy)
    del entries[1]["SQL"]
    entries[2]["question"] = 7
    entries[3] = ["not", "an", "object"]
    entries[4]["db_id"] = "../school_funding"
    entries[5]["question"] = "   "
    _write_entries(bird_copy, entries)
    ds = read_dataset(bird_copy, "bird")
    _check_rejections(ds)
    got = [(r["id"], r["code"]) for r in ds.rejections]
    assert got == [
        ("1", "invalid_row"),
        ("2", "invalid_row"),
        ("bird-dev-3", "invalid_row"),
        ("4", "invalid_row"),
        ("5", "invalid_row"),
        ("40", "unknown_database"),
    ]
    messages = [r["message"] for r in ds.rejections]
    assert messages[0] == "dev.json entry 1 (question_id 1, line 10) lacks the field 'SQL'"
    assert messages[1] == "dev.json entry 2 (question_id 2, line 17): field 'question' must be a string, not int"
    assert messages[2].startswith("dev.json entry 3 (line 25) is a list, not an object")
    assert "is not a plain database name" in messages[3]
    assert messages[4].endswith("field 'question' is empty")
    assert ds.total == 41 and ds.n_pairs == 35
    assert ds.databases["school_funding"].indexes == [0, *range(6, 20)]


def test_duplicate_ids_are_kept_with_a_suffix(bird_copy):
    entries = _entries(bird_copy)
    entries[3]["question_id"] = 2
    entries[4]["question_id"] = 2
    entries[5]["question_id"] = "2-2"
    _write_entries(bird_copy, entries)
    ds = read_dataset(bird_copy, "bird")
    assert [p["id"] for p in ds.databases["school_funding"].pairs[2:6]] == ["2", "2-2", "2-3", "2-2-2"]


def test_database_folder_without_its_sqlite(bird_copy):
    (bird_copy / "dev_databases" / "retail_loans" / "retail_loans.sqlite").unlink()
    ds = read_dataset(bird_copy, "bird")
    assert list(ds.databases) == ["school_funding"] and ds.n_pairs == 20
    _check_rejections(ds)
    assert Counter(r["code"] for r in ds.rejections) == {"unknown_database": 21}
    expected = bird_copy / "dev_databases" / "retail_loans" / "retail_loans.sqlite"
    assert ds.rejections[0]["message"] == (
        f"dev.json entry 20 (question_id 20, line 162): db_id 'retail_loans' has no database: expected {expected} "
        "(the folder exists without it)"
    )


def test_a_file_that_is_not_sqlite(bird_copy):
    path = bird_copy / "dev_databases" / "retail_loans" / "retail_loans.sqlite"
    path.write_bytes(b"version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 1\n")
    ds = read_dataset(bird_copy, "bird")
    assert [r["id"] for r in ds.rejections] == [str(i) for i in range(20, 41)]
    assert f"{path} is not a readable SQLite database (file is not a database)" in ds.rejections[0]["message"]
    path.write_bytes(b"")  # an empty file opens as a database without tables
    ds = read_dataset(bird_copy, "bird")
    assert f"{path} is a SQLite database without tables" in ds.rejections[0]["message"]


def test_train_layout_without_ids_or_difficulty(bird_copy):
    entries = [{k: v for k, v in e.items() if k not in ("question_id", "difficulty")} for e in _entries(bird_copy)]
    _write_entries(bird_copy, entries, "train.json")
    (bird_copy / "dev.json").unlink()
    (bird_copy / "dev_databases").rename(bird_copy / "train_databases")
    ds = read_dataset(bird_copy, "bird")
    assert ds.question_file.name == "train.json"
    assert ds.databases["school_funding"].pairs[1]["id"] == "bird-train-1"
    assert ds.databases["school_funding"].pairs[1]["difficulty"] is None
    assert ds.databases["retail_loans"].path.parent.parent.name == "train_databases"


@pytest.mark.parametrize(
    "content, problem",
    [
        (
            b"original_column_name,column_description\nCharter,\x81\x8d \xff\n",
            "is neither UTF-8 nor cp1252 text (byte 0x81",
        ),
        (b"\x00\x01\x02PK\x03\x04", "holds NUL bytes"),
        (
            b"name,description\nCharter,whether it is a charter\n",
            "has no original_column_name header (found: name, description)",
        ),
        (b"", "is empty"),
    ],
)
def test_an_unreadable_description_csv_is_a_warning(bird_copy, content, problem):
    csv_path = bird_copy / "dev_databases" / "school_funding" / "database_description" / "schools.csv"
    csv_path.write_bytes(content)
    ds = read_dataset(bird_copy, "bird")
    assert ds.warnings == [f"{csv_path}: {problem}" + ds.warnings[0].split(problem, 1)[1]]
    assert ds.warnings[0].endswith("; table 'schools' has no descriptions")
    docs = ds.databases["school_funding"].descriptions
    assert sorted(docs) == ["districts", "enrollment", "test_scores"]
    assert ds.n_pairs == 40


def test_description_csv_for_no_table_and_rows_for_no_column(bird_copy):
    folder = bird_copy / "dev_databases" / "school_funding" / "database_description"
    (folder / "grants.csv").write_text("original_column_name,column_description\nAmount,amount\n", encoding="utf-8")
    (folder / "FUNDING.csv").write_text(
        "original_column_name,column_description\n amount ,amount of the grant in dollars\nGrantee,who\n",
        encoding="latin-1",
    )
    ds = read_dataset(bird_copy, "bird")
    assert ds.warnings == [
        f"{folder / 'FUNDING.csv'}: 1 row(s) name no column of table 'funding': Grantee",
        f"{folder / 'grants.csv'}: no table 'grants' in school_funding.sqlite; file ignored",
    ]
    assert ds.databases["school_funding"].descriptions["funding"] == {"Amount": "amount of the grant in dollars"}


def test_spider_entries(spider_copy):
    entries = _entries(spider_copy)
    entries[0]["sql"] = {"select": [False, [[3, [0, [0, 0, False], None]]]]}  # Spider's parsed form is ignored
    del entries[1]["query"]
    entries[2]["db_id"] = "concert_singer"
    _write_entries(spider_copy, entries)
    ds = read_dataset(spider_copy, "spider")
    assert ds.databases["music_festival"].pairs[0]["sql"] == "select count(*) from performer"
    _check_rejections(ds)
    assert [(r["id"], r["code"]) for r in ds.rejections] == [
        ("spider-dev-1", "invalid_row"),
        ("spider-dev-2", "unknown_database"),
    ]
    assert ds.rejections[0]["message"] == "dev.json entry 1 (line 26) lacks the field 'query'"
    assert str(spider_copy / "database" / "concert_singer" / "concert_singer.sqlite") in ds.rejections[1]["message"]


def test_spider_without_or_with_a_broken_tables_json(spider_copy):
    tables = _entries(spider_copy, "tables.json")
    tables[1]["column_names_original"] = "oops"
    _write_entries(spider_copy, tables, "tables.json")
    ds = read_dataset(spider_copy, "spider")
    assert ds.databases["pet_clinic"].descriptions is None
    assert ds.databases["music_festival"].descriptions["performer"]["Genre"] == "genre"
    assert len(ds.warnings) == 1
    assert ds.warnings[0].startswith("tables.json entry for db_id 'pet_clinic': malformed (")
    (spider_copy / "tables.json").unlink()
    ds = read_dataset(spider_copy, "spider")
    assert ds.warnings == [f"{spider_copy / 'tables.json'}: not found; the databases have no descriptions"]
    assert all(db.descriptions is None for db in ds.databases.values()) and ds.n_pairs == 20


# ---------------------------------------------------------------------------- sqlite-dir ----


def _sqlite_dir(spider_example: Path, root: Path, dbs=("music_festival", "pet_clinic")) -> Path:
    root.mkdir()
    for db in dbs:
        shutil.copy(spider_example / "database" / db / f"{db}.sqlite", root / f"{db}.sqlite")
    return root


def test_sqlite_dir_with_two_databases(spider_example, tmp_path):
    root = _sqlite_dir(spider_example, tmp_path / "dir")
    (root / "pet_clinic.descriptions.json").write_text(json.dumps({"Pets": {"pet_name": "the pet's name"}}))
    rows = [
        {"id": "p1", "question": "How many pets?", "sql": "SELECT COUNT(*) FROM Pets", "db_id": "pet_clinic"},
        {
            "question": "How many venues?",
            "sql": "SELECT COUNT(*) FROM venue",
            "db_id": "music_festival",
            "evidence": "",
            "difficulty": "simple",
        },
        {"question": "Which db?", "sql": "SELECT 1"},
        "{not json",
        {"question": "How many?", "sql": "SELECT 1", "db_id": "pet_clinic", "answer": 1},
        {"id": 7, "question": "How many vets?", "sql": "SELECT COUNT(*) FROM Vets", "db_id": "pet_clinic"},
        {"question": "How many cars?", "sql": "SELECT COUNT(*) FROM cars", "db_id": "car_dealer"},
    ]
    text = (
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows[:3])
        + "\n\n"
        + "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows[3:])
        + "\n"
    )
    (root / "pairs.jsonl").write_text(text, encoding="utf-8")
    ds = read_dataset(root, "sqlite-dir")
    assert ds.total == 7 and list(ds.databases) == ["pet_clinic", "music_festival"]
    clinic, festival = ds.databases["pet_clinic"], ds.databases["music_festival"]
    assert [p["id"] for p in clinic.pairs] == ["p1", "7"] and clinic.indexes == [0, 5]
    assert festival.pairs == [
        {
            "id": "line-2",
            "question": "How many venues?",
            "sql": "SELECT COUNT(*) FROM venue",
            "evidence": None,
            "difficulty": "simple",
            "db_id": "music_festival",
        }
    ]
    assert clinic.descriptions == {"Pets": {"pet_name": "the pet's name"}} and festival.descriptions is None
    _check_rejections(ds)
    assert [(r["id"], r["line"], r["code"]) for r in ds.rejections] == [
        ("line-3", 3, "invalid_row"),
        ("line-5", 5, "invalid_row"),
        ("line-6", 6, "invalid_row"),
        ("line-8", 8, "unknown_database"),
    ]
    assert (
        ds.rejections[0]["message"] == f"pairs.jsonl line 3 lacks the field 'db_id' (needed: {root} holds 2 databases)"
    )
    assert ds.rejections[1]["message"].startswith("pairs.jsonl line 5: invalid JSON at column 2")
    assert "unknown field(s) 'answer'" in ds.rejections[2]["message"]
    assert ds.rejections[3]["message"] == (
        f"pairs.jsonl line 8: db_id 'car_dealer' has no database: expected {root / 'car_dealer.sqlite'}"
    )


def test_sqlite_dir_with_one_database(spider_example, tmp_path):
    root = _sqlite_dir(spider_example, tmp_path / "dir", dbs=("pet_clinic",))
    rows = [
        {"question": "How many pets?", "sql": "SELECT COUNT(*) FROM Pets"},
        {"question": "How many\u2028owners?", "sql": "SELECT COUNT(*) FROM Owners"},
    ]  # a line separator inside
    (root / "pairs.jsonl").write_text("\r\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    ds = read_dataset(root, "sqlite-dir")
    assert ds.rejections == [] and ds.total == 2
    pairs = ds.databases["pet_clinic"].pairs
    assert [(p["id"], p["db_id"]) for p in pairs] == [("line-1", "pet_clinic"), ("line-2", "pet_clinic")]
    assert pairs[1]["question"] == "How many\u2028owners?"


def test_sqlite_dir_without_databases_or_pairs(tmp_path):
    (tmp_path / "pairs.jsonl").write_text("")
    with pytest.raises(UserError, match=r"no \*\.sqlite database"):
        read_dataset(tmp_path, "sqlite-dir")
    (tmp_path / "pairs.jsonl").unlink()
    with pytest.raises(UserError, match=f"looked for {tmp_path / 'pairs.jsonl'}"):
        read_dataset(tmp_path, "sqlite-dir")


# ------------------------------------------------------------------------------- writing ----


def test_write_pairs_writes_pair_rows_atomically(bird_example, tmp_path):
    ds = read_dataset(bird_example, "bird")
    out = write_pairs(ds.databases["retail_loans"], tmp_path / "pairs" / "retail_loans.jsonl")
    assert out == tmp_path / "pairs" / "retail_loans.jsonl"
    good, bad = iter_jsonl_lenient(out, Pair)
    assert bad == [] and [p.id for _, p in good] == [str(i) for i in range(20, 40)]
    assert json.loads(out.read_text(encoding="utf-8").splitlines()[0]) == ds.databases["retail_loans"].pairs[0]
    assert sorted(p.name for p in out.parent.iterdir()) == ["retail_loans.jsonl"]
    db = DatasetDB("x", tmp_path / "x.sqlite", pairs=[{**ds.databases["retail_loans"].pairs[0], "index": 3}])
    assert set(json.loads(write_pairs(db, tmp_path / "x.jsonl").read_text())) == set(Pair.model_fields)
