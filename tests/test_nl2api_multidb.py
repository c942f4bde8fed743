"""Merged splits (several databases): every consumer runs a sample's calls on that sample's own
database (``databases/<db_id>.sqlite``), and single-database splits behave as before.

Two single-database splits are built (a slice of the embedded Chinook pairs, and a tiny ``library``
database made here), then merged by hand into one split the way a multi-database build writes it."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from benchsmith.construction import EnvContext, open_environment
from benchsmith.construction.nl2api import (
    BuildOptions,
    SplitTools,
    build_split,
    chinook_db,
    create_app,
    default_pairs_path,
)
from benchsmith.eval.nl2api import NL2API
from benchsmith.schemas import (
    Provenance,
    Sample,
    Split,
    SplitManifest,
    UserError,
    file_sha256,
    read_json,
    read_jsonl,
    samples_content_hash,
    write_json,
    write_jsonl,
)

CHINOOK_PAIRS = 5
LIBRARY_PAIRS = [
    {
        "id": "lib-1",
        "question": "How many books were published after 1950?",
        "sql": "SELECT COUNT(*) FROM books WHERE year > 1950",
    },
    {
        "id": "lib-2",
        "question": "Titles of the books with at least 300 pages?",
        "sql": "SELECT title FROM books WHERE pages >= 300",
    },
    {
        "id": "lib-3",
        "question": "Which authors come from the UK?",
        "sql": "SELECT name FROM authors WHERE country = 'UK'",
    },
    {
        "id": "lib-4",
        "question": "Books written by Jane Austen?",
        "sql": "SELECT b.title FROM books b JOIN authors a ON b.author_id = a.author_id WHERE a.name = 'Jane Austen'",
    },
    {
        "id": "lib-5",
        "question": "Average page count of the books by author 2?",
        "sql": "SELECT AVG(pages) FROM books WHERE author_id = 2",
    },
]


def _library_db(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE authors (author_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT);
        CREATE TABLE books (book_id INTEGER PRIMARY KEY, title TEXT NOT NULL, pages INTEGER, year INTEGER,
                            author_id INTEGER REFERENCES authors(author_id));
        INSERT INTO authors VALUES (1, 'Jane Austen', 'UK'), (2, 'Leo Tolstoy', 'Russia'),
                                   (3, 'Toni Morrison', 'USA'), (4, 'Kazuo Ishiguro', 'UK');
        INSERT INTO books VALUES (1, 'Pride and Prejudice', 279, 1813, 1), (2, 'Emma', 474, 1815, 1),
                                 (3, 'War and Peace', 1225, 1869, 2), (4, 'Anna Karenina', 864, 1878, 2),
                                 (5, 'Beloved', 324, 1987, 3), (6, 'Sula', 174, 1973, 3),
                                 (7, 'The Remains of the Day', 258, 1989, 4), (8, 'Never Let Me Go', 288, 2005, 4);
    """)
    con.commit()
    con.close()
    return path


def _build_parts(root: Path, style: str) -> dict[str, Path]:
    """{db_id: single-database split} for Chinook and the library database."""
    chinook_pairs = root / "chinook_pairs.jsonl"
    lines = [line for line in default_pairs_path().read_text(encoding="utf-8").splitlines() if line.strip()]
    chinook_pairs.write_text("\n".join(lines[:CHINOOK_PAIRS]) + "\n", encoding="utf-8")
    library_pairs = root / "library_pairs.jsonl"
    library_pairs.write_text("".join(json.dumps(p) + "\n" for p in LIBRARY_PAIRS), encoding="utf-8")
    db = root / "library.sqlite"
    if not db.is_file():
        _library_db(db)
    parts = {}
    for db_id, db_path, pairs, n in (
        ("chinook", chinook_db(), chinook_pairs, CHINOOK_PAIRS),
        ("library", db, library_pairs, len(LIBRARY_PAIRS)),
    ):
        out = root / f"{db_id}-{style}"
        report = build_split(db_path, pairs, out, BuildOptions(style=style, name=f"{db_id}-{style}"))
        assert report["verified"] == n, report["rejections"]
        parts[db_id] = out
    return parts


def merge_splits(parts: dict[str, Path], out: Path, *, style: str) -> Path:
    """One merged split from single-database splits: samples with ``metadata.db_id``, the union of
    the tools, the merged toolset / endpoints (each endpoint naming its db_id), ``databases/<db_id>.sqlite``
    and a manifest with ``extra.databases``."""
    out.mkdir(parents=True)
    (out / Split.DATABASES).mkdir()
    (out / "tools").mkdir()  # each database's own tool set, as the dataset builder writes it
    samples: list[Sample] = []
    tools: dict[str, dict[str, Any]] = {}
    toolset: dict[str, Any] = {}
    endpoints: dict[str, Any] = {}
    for db_id, part in parts.items():
        for s in read_jsonl(part / Split.SAMPLES, Sample):
            samples.append(s.model_copy(update={"metadata": {**s.metadata, "db_id": db_id}}))
        for tool in read_json(part / Split.TOOLS):
            tools.setdefault(tool["name"], tool)
        shutil.copyfile(part / Split.TOOLS, out / "tools" / f"{db_id}.json")
        if (part / Split.TOOLSET).is_file():
            for name, binding in read_json(part / Split.TOOLSET).items():
                assert toolset.setdefault(name, binding) == binding, f"binding {name} differs between databases"
        if (part / Split.ENDPOINTS).is_file():
            for name, endpoint in read_json(part / Split.ENDPOINTS).items():
                assert name not in endpoints, f"endpoint {name} in two databases"
                endpoints[name] = {**endpoint, "db_id": db_id}
        shutil.copyfile(part / Split.DATABASE, out / Split.DATABASES / f"{db_id}.sqlite")
        if (part / Split.DESCRIPTIONS).is_file():
            shutil.copyfile(part / Split.DESCRIPTIONS, out / Split.DATABASES / f"{db_id}.sqlite.descriptions.json")
    write_jsonl(out / Split.SAMPLES, samples)
    write_json(out / Split.TOOLS, list(tools.values()))
    if toolset:
        write_json(out / Split.TOOLSET, toolset)
    if endpoints:
        write_json(out / Split.ENDPOINTS, endpoints)
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    now = datetime.now(timezone.utc)
    manifest = SplitManifest(
        name=f"merged-{style}",
        version="1.0.0",
        created_at=now,
        sample_count=len(samples),
        files={f: file_sha256(out / f) for f in files},
        content_hash=samples_content_hash(s.id for s in samples),
        provenance=Provenance(source="+".join(parts), method=f"nl2api.{style}", created_at=now),
        extra={"style": style, "obfuscated": False, "tool_universe": None, "databases": sorted(parts)},
    )
    write_json(out / Split.MANIFEST, manifest.model_dump(mode="json"))
    return out


@pytest.fixture(scope="module")
def merged(tmp_path_factory) -> dict[str, Path]:
    """{"slot": merged SLOT split, "rest": merged REST split, "slot-single": the Chinook part, ...}."""
    root = tmp_path_factory.mktemp("multidb")
    out = {}
    for style in ("slot", "rest"):
        parts = _build_parts(root, style)
        out[style] = merge_splits(parts, root / f"merged-{style}", style=style)
        out[f"{style}-single"] = parts["chinook"]
    return out


def _gold(case) -> str:
    return NL2API().gold_prediction(case)


# ---- Split ------------------------------------------------------------------------------------
def test_split_knows_its_databases(merged):
    split = Split(merged["slot"])
    assert split.has_databases() and split.db_ids() == ["chinook", "library"]
    assert not split.has(Split.DATABASE)
    assert split.database_for("library") == merged["slot"] / "databases" / "library.sqlite"
    assert split.database_for(None) == split.database_path
    manifest = SplitManifest.model_validate(read_json(split.manifest_path))
    assert manifest.extra["databases"] == ["chinook", "library"]
    assert "databases/library.sqlite" in manifest.files
    with pytest.raises(UserError, match="has no database for db_id 'nowhere'") as err:
        split.database_for("nowhere")
    assert str(merged["slot"]) in str(err.value) and "databases/nowhere.sqlite" in str(err.value)
    assert "chinook, library" in str(err.value)
    for bad in ("../chinook", "a/b", ".hidden", "", "a\\b"):
        with pytest.raises(UserError, match="cannot name a database file"):
            split.database_for(bad)


def test_a_single_database_split_is_not_merged(merged):
    split = Split(merged["slot-single"])
    assert not split.has_databases() and split.db_ids() == []
    # a db_id names the one database of a split without databases/ (e.g. one BIRD database)
    assert split.database_for("chinook") == split.database_path


# ---- SplitTools -------------------------------------------------------------------------------
def test_split_tools_open_each_database(merged):
    tools = SplitTools(merged["slot"], check=True)
    try:
        chinook, library = tools.db_for("chinook"), tools.db_for("library")
        assert "tracks" in chinook.tables and "books" in library.tables and "books" not in chinook.tables
        assert tools.db_for("library") is library  # cached
        with pytest.raises(UserError, match="this split has several databases") as err:
            tools.db  # noqa: B018
        assert "chinook, library" in str(err.value) and "db_for" in str(err.value)
        with pytest.raises(UserError, match="db_id 'ghost'"):
            tools.db_for("ghost")
        with pytest.raises(UserError, match="several databases"):
            tools.db_for(None)
    finally:
        tools.close()
    assert tools.db_for("library") is not library  # opened again after close
    tools.close()


def test_split_tools_on_a_single_database_split_as_before(merged):
    tools = SplitTools(merged["slot-single"], check=True)
    try:
        db = tools.db
        assert db.path == Split(merged["slot-single"]).database_path
        assert tools.db_for(None) is db and tools.db_for("chinook") is db and tools.db_for("anything") is db
    finally:
        tools.close()
    assert tools._db is None


def test_split_tools_check_refuses_a_damaged_member_database(merged, tmp_path):
    copy = tmp_path / "split"
    shutil.copytree(merged["slot"], copy)
    (copy / "databases" / "library.sqlite").write_bytes(b"not a database at all" * 100)
    tools = SplitTools(copy, check=True)
    try:
        assert "tracks" in tools.db_for("chinook").tables
        with pytest.raises(UserError, match="library.sqlite"):
            tools.db_for("library")
    finally:
        tools.close()


# ---- the nl2api benchmark ---------------------------------------------------------------------
@pytest.mark.parametrize("style", ["slot", "rest"])
def test_gold_predictions_complete_on_both_databases(merged, style):
    bench = NL2API()
    try:
        cases = bench.load(merged[style])
        assert {c.meta["db_id"] for c in cases} == {"chinook", "library"}
        assert len(cases) == CHINOOK_PAIRS + len(LIBRARY_PAIRS)
        for case in cases:
            r = bench.score(case, _gold(case), "strict")
            assert r.ok and r.details["completion"] is True, (case.meta["db_id"], case.meta["source_id"], r.error)
        # a library question answered with a Chinook sequence fails
        chinook = next(c for c in cases if c.meta["db_id"] == "chinook")
        library = next(c for c in cases if c.meta["db_id"] == "library")
        r = bench.score(library, _gold(chinook), "strict")
        assert not r.ok and r.details["completion"] is False
    finally:
        bench.close()


def test_a_case_runs_on_its_own_database_only(merged):
    bench = NL2API()
    try:
        cases = bench.load(merged["slot"])
        library = next(c for c in cases if c.meta["db_id"] == "library")
        wrong_db = library.model_copy(update={"meta": {**library.meta, "db_id": "chinook"}})
        r = bench.score(wrong_db, _gold(library), "strict")
        assert not r.ok and r.details["completion"] is False  # the books table is not in Chinook
    finally:
        bench.close()


def test_load_refuses_a_sample_whose_database_is_missing(merged, tmp_path):
    copy = tmp_path / "split"
    shutil.copytree(merged["slot"], copy)
    samples = read_jsonl(copy / Split.SAMPLES, Sample)
    samples[0] = samples[0].model_copy(update={"metadata": {**samples[0].metadata, "db_id": "ghost"}})
    write_jsonl(copy / Split.SAMPLES, samples)
    bench = NL2API()
    try:
        with pytest.raises(UserError, match="db_id 'ghost'"):
            bench.load(copy)
    finally:
        bench.close()
    # a sample without db_id on a merged split without database.sqlite: named at load
    samples[0] = samples[0].model_copy(
        update={"metadata": {k: v for k, v in samples[0].metadata.items() if k != "db_id"}}
    )
    write_jsonl(copy / Split.SAMPLES, samples)
    bench = NL2API()
    try:
        with pytest.raises(UserError, match="line 1 has no metadata.db_id"):
            bench.load(copy)
    finally:
        bench.close()


def test_database_sqlite_is_the_default_next_to_databases(merged, tmp_path):
    """A split with both: samples without db_id run on database.sqlite."""
    copy = tmp_path / "split"
    shutil.copytree(merged["slot"], copy)
    shutil.copyfile(copy / "databases" / "chinook.sqlite", copy / Split.DATABASE)
    samples = [
        s.model_copy(
            update={"metadata": {k: v for k, v in s.metadata.items() if not (k == "db_id" and v == "chinook")}}
        )
        for s in read_jsonl(copy / Split.SAMPLES, Sample)
    ]
    write_jsonl(copy / Split.SAMPLES, samples)
    tools = SplitTools(copy)
    try:
        assert "tracks" in tools.db.tables and "books" in tools.db_for("library").tables
    finally:
        tools.close()
    bench = NL2API()
    try:
        cases = bench.load(copy)
        assert sum(1 for c in cases if "db_id" not in c.meta) == CHINOOK_PAIRS
        for case in cases:
            r = bench.score(case, _gold(case), "strict")
            assert r.details["completion"] is True, (case.meta.get("db_id"), r.error)
    finally:
        bench.close()


# ---- the ReAct task's environment --------------------------------------------------------------
@pytest.mark.parametrize("style", ["slot", "rest"])
def test_task_env_runs_on_the_case_database(merged, style):
    from benchsmith.eval.nl2api._task import NL2APITask

    bench = NL2API()
    try:
        cases = bench.load(merged[style])
    finally:
        bench.close()
    task = NL2APITask(merged[style], SimpleNamespace(strategy="react", mode="prompt", step_budget=4, max_tokens=64))
    for case in cases:
        env = task._env(case)
        call = case.gold["calls"][-1] if style == "rest" else None
        calls = case.gold["calls"] if call is None else [call]
        for n, c in enumerate(calls, 1):
            env.call(c["name"], c["arguments"], c.get("label") or f"out_{n}")
    assert {k[1] for k in task._dbs} == {"chinook", "library"}
    for db in task._dbs.values():
        db.close()


# ---- construction environments -----------------------------------------------------------------
def test_nl2api_environment_picks_the_descriptor_database(merged):
    split = merged["slot"]
    sample = next(s for s in Split(split).samples() if s.metadata["db_id"] == "library")
    setup = [c.model_dump(mode="json", exclude_none=True) for c in sample.setup]
    ctx = EnvContext(split=split)
    env = open_environment({"kind": "nl2api", "style": "slot", "setup": setup, "db_id": "library"}, ctx)
    for step in sample.gold:
        env.call(step.call.name, step.call.arguments, step.call.label)
    assert env.answer(sample.gold[-1].call.label) == sample.answer.value or sorted(
        map(json.dumps, env.answer(sample.gold[-1].call.label))
    ) == sorted(map(json.dumps, sample.answer.value))
    with pytest.raises(UserError, match="several databases"):
        open_environment({"kind": "nl2api", "style": "slot", "setup": setup}, EnvContext(split=split))
    with pytest.raises(UserError, match="db_id 'ghost'"):
        open_environment({"kind": "nl2api", "style": "slot", "setup": setup, "db_id": "ghost"}, ctx)
    for db in ctx.extra["_dbs"].values():
        db.close()


def test_rest_environment_runs_each_endpoint_on_its_database(merged):
    split = merged["rest"]
    ctx = EnvContext(split=split)
    # opened on Chinook's database, a library endpoint still answers from the library database
    env = open_environment({"kind": "nl2api", "style": "rest", "db_id": "chinook"}, ctx)
    for s in Split(split).samples():
        call = s.gold[0].call
        env.call(call.name, call.arguments, call.label)
    for db in ctx.extra["_dbs"].values():
        db.close()


# ---- REST serving -----------------------------------------------------------------------------
def test_create_app_serves_a_merged_rest_split(merged):
    from fastapi.testclient import TestClient

    split = merged["rest"]
    endpoints = read_json(split / Split.ENDPOINTS)
    assert {e["db_id"] for e in endpoints.values()} == {"chinook", "library"}
    tools = {t["name"]: t for t in read_json(split / Split.TOOLS)}
    seen = set()
    with TestClient(create_app(str(split))) as client:
        for s in Split(split).samples():
            call = s.gold[0].call
            resp = client.get(tools[call.name]["rest"]["path"], params=call.arguments)
            assert resp.status_code == 200, (s.metadata["db_id"], resp.text)
            got = json.loads(json.dumps(resp.json()["rows"]))
            want = json.loads(json.dumps(s.answer.value))
            assert got == want if s.answer.ordered else sorted(map(json.dumps, got)) == sorted(map(json.dumps, want))
            seen.add(s.metadata["db_id"])
    assert seen == {"chinook", "library"}


def test_create_app_refuses_a_merged_endpoint_without_its_database(merged, tmp_path):
    copy = tmp_path / "split"
    shutil.copytree(merged["rest"], copy)
    (copy / "databases" / "library.sqlite").unlink()
    with pytest.raises(UserError, match="db_id 'library'"):
        create_app(str(copy))
    endpoints = read_json(copy / Split.ENDPOINTS)
    for e in endpoints.values():
        e.pop("db_id")
    write_json(copy / Split.ENDPOINTS, endpoints)
    with pytest.raises(UserError, match="names no db_id"):
        create_app(str(copy))


# ---- T-Eval derived from a merged split --------------------------------------------------------
def test_teval_derive_executes_each_sample_on_its_database(merged, tmp_path):
    from benchsmith.eval.teval import derive_teval

    report = derive_teval(merged["slot"], tmp_path / "teval")
    assert report["executed"] is True
    assert "sample:setup_not_executable" not in report["review_not_made"]
    assert "step:gold_call_not_executable" not in report["review_not_made"]
    assert report["review_classes"]["success"] > 0 and report["review_classes"]["internal_error"] > 0
    reviews = read_json(tmp_path / "teval" / "review_str_v2.json")
    assert {r["meta_data"].get("db_id") for r in reviews.values()} == {"chinook", "library"}


# ---- annotation finalize ------------------------------------------------------------------------
class _Store:
    def __init__(self, samples: list[Sample]) -> None:
        self._items = [
            {"sample_id": s.id, "status": "accepted", "round": 1, "history": [], "sample": s.model_dump(mode="json")}
            for s in samples
        ]

    def items(self):
        return self._items

    def users(self):
        return {}

    def get_meta(self, key):
        return None


def test_finalize_copies_the_databases_folder(merged, tmp_path):
    from benchsmith.annotation._private.finalize import copy_split_files, finalize

    split = merged["slot"]
    workspace = SimpleNamespace(
        store=_Store(Split(split).samples()), split_dir=lambda: split, folder=tmp_path / "ws", sources=lambda: []
    )
    result = finalize(workspace, tmp_path / "final")
    final = Split(tmp_path / "final")
    assert result["accepted"] == CHINOOK_PAIRS + len(LIBRARY_PAIRS)
    assert final.db_ids() == ["chinook", "library"]
    for name in ("chinook.sqlite", "library.sqlite"):
        assert (final.databases_path / name).read_bytes() == (split / "databases" / name).read_bytes()
    manifest = read_json(final.manifest_path)
    assert manifest["extra"]["databases"] == ["chinook", "library"]
    assert manifest["files"]["databases/library.sqlite"] == file_sha256(final.databases_path / "library.sqlite")
    assert (final.root / "tools" / "library.json").read_bytes() == (split / "tools" / "library.json").read_bytes()
    # the finalized split is evaluable: each sample on its own database
    bench = NL2API()
    try:
        cases = bench.load(final.root)
        assert all(bench.score(c, _gold(c), "strict").details["completion"] for c in cases)
    finally:
        bench.close()
    # a single-database split: the same files as before, no databases/ folder
    out = tmp_path / "single"
    out.mkdir()
    single = merged["slot-single"]
    written = copy_split_files(single, out)
    assert written == [
        f
        for f in (
            "tools.json",
            "toolset.json",
            "endpoints.json",
            "database.sqlite",
            "database.sqlite.descriptions.json",
        )
        if (single / f).is_file()
    ]
    assert "database.sqlite" in written and not (out / "databases").exists()
    assert (out / "database.sqlite").read_bytes() == (single / "database.sqlite").read_bytes()
