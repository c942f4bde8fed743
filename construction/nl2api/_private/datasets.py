"""Readers for NL2SQL datasets as they are distributed: BIRD, Spider and a folder of SQLite files.

:func:`read_dataset` turns one of these layouts into a :class:`Dataset`: per database, its
``.sqlite`` path, column descriptions and question/SQL pairs (dicts valid for ``Pair``).

* ``bird``: ``<root>/dev.json`` (or ``train.json``): a JSON array of ``{question_id, db_id,
  question, evidence, SQL, difficulty}``; databases at ``<root>/dev_databases/<db>/<db>.sqlite``
  (or ``train_databases/``, ``databases/``); column descriptions in
  ``<db dir>/database_description/<table>.csv`` (UTF-8, UTF-8 with a BOM or cp1252).
* ``spider``: ``<root>/dev.json`` (or ``train_spider.json``) of ``{db_id, question, query}``;
  databases at ``<root>/database/<db>/<db>.sqlite``; ``<root>/tables.json`` gives the natural
  names of tables and columns, used as their descriptions.
* ``sqlite-dir``: ``<root>/*.sqlite`` (the db_id is the file stem) and ``<root>/pairs.jsonl`` of
  ``Pair`` rows; optional descriptions ``<db>.descriptions.json`` next to each database.

A problem with the dataset as a whole (no question file, a question file that is not JSON) is a
``UserError``; a problem with one entry is a rejection record ``{"id", "line", "code",
"message", "file"}`` (codes ``invalid_row`` and ``unknown_database``) and the rest of the
dataset still comes through; a description file that cannot be read is a warning.

:func:`materialize_example` writes the small hand-written example datasets packaged with
benchsmith (``data/examples/``) in the real layouts, building their ``.sqlite`` files from SQL
scripts.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import os
import re
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from benchsmith.schemas import UserError, loads_json, read_json, read_text, write_jsonl

from .database import DESCRIPTIONS_FIX, DESCRIPTIONS_SHAPE

KINDS = ("bird", "spider", "sqlite-dir")
PAIR_FIELDS = ("id", "question", "sql", "evidence", "difficulty", "db_id")
EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "data" / "examples"

# question files looked for, in order, when no split_file is given
_QUESTION_FILES = {
    "bird": ("dev.json", "train.json"),
    "spider": ("dev.json", "train_spider.json"),
    "sqlite-dir": ("pairs.jsonl",),
}
# value descriptions BIRD uses to say there is nothing to say
_USELESS = frozenset({"", "not useful", "useless", "none", "nan", "null", "-", "n/a", "na"})
_WS = re.compile(r"[ \t\n\r]*")

Descriptions = dict[str, dict[str, str]]


@dataclass
class DatasetDB:
    """One database of a dataset and its pairs, in question-file order.

    ``pairs`` are dicts with exactly the ``Pair`` fields (``id, question, sql, evidence,
    difficulty, db_id``); ``indexes[i]`` is the 0-based position of ``pairs[i]`` in the question
    file. ``descriptions`` is ``{table: {column: text, "__table__": text}}`` or None.
    """

    db_id: str
    path: Path
    descriptions: Descriptions | None = None
    pairs: list[dict[str, Any]] = field(default_factory=list)
    indexes: list[int] = field(default_factory=list)


@dataclass
class Dataset:
    """What :func:`read_dataset` found: the databases in order of first appearance in the
    question file, the entries that cannot be used (``rejections``), warnings about description
    files, and ``total``, the number of entries read from the question file."""

    kind: str
    root: Path
    question_file: Path
    databases: dict[str, DatasetDB] = field(default_factory=dict)
    rejections: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    total: int = 0

    @property
    def n_pairs(self) -> int:
        """The number of usable pairs over all databases."""
        return sum(len(db.pairs) for db in self.databases.values())


class _Bad(Exception):
    """One entry that cannot be used: ``code`` from REASONS and a message."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


# ------------------------------------------------------------------------------- entry point ----


def read_dataset(root: str | Path, kind: str, *, split_file: str | None = None) -> Dataset:
    """Read the NL2SQL dataset at ``root`` laid out as ``kind`` ("bird", "spider", "sqlite-dir").

    ``split_file`` names the question file (relative to ``root``, or absolute) instead of the
    defaults (BIRD: ``dev.json``, ``train.json``; Spider: ``dev.json``, ``train_spider.json``;
    sqlite-dir: ``pairs.jsonl``).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     ds = read_dataset(materialize_example("bird", d), "bird")
    ...     db = ds.databases["school_funding"]
    ...     print(ds.total, list(ds.databases), [r["code"] for r in ds.rejections])
    ...     print(db.pairs[0]["id"], db.pairs[0]["difficulty"], db.path.name)
    41 ['school_funding', 'retail_loans'] ['unknown_database']
    0 simple school_funding.sqlite
    """
    if kind not in KINDS:
        raise UserError(f"unknown dataset kind {kind!r}", fix=f"use one of {', '.join(KINDS)}")
    base = Path(root)
    if not base.is_dir():
        raise UserError(
            f"dataset folder {base} does not exist or is not a folder",
            fix=f"pass the folder that holds the {kind} question file",
        )
    qfile = _question_file(base, kind, split_file)
    ds = Dataset(kind=kind, root=base, question_file=qfile)
    if kind == "sqlite-dir":
        _read_sqlite_dir(ds)
    else:
        _read_json_layout(ds)
    return ds


def _question_file(root: Path, kind: str, split_file: str | None) -> Path:
    names = (split_file,) if split_file else _QUESTION_FILES[kind]
    for name in names:
        path = root / name
        if path.is_file():
            return path
    looked = ", ".join(str(root / n) for n in names)
    if split_file:
        fix = "check the split file name; it is taken relative to the dataset folder"
    else:
        fix = f"pass the folder holding {' or '.join(names)}, or name the question file with split_file"
    raise UserError(f"no {kind} question file: looked for {looked}", fix=fix)


def _reject(ds: Dataset, pid: str | None, line: int, code: str, message: str) -> None:
    ds.rejections.append({"id": pid, "line": line, "code": code, "message": message, "file": str(ds.question_file)})


def _unique_id(pid: str, seen: set[str]) -> str:
    """``pid``, or ``pid-2``, ``pid-3``, ... when an earlier entry already has it."""
    out, n = pid, 1
    while out in seen:
        n += 1
        out = f"{pid}-{n}"
    seen.add(out)
    return out


# ------------------------------------------------------------------------ BIRD and Spider ----


def _read_json_array(path: Path) -> list[tuple[int, Any]]:
    """``[(line, entry), ...]`` of a JSON array file; the line is where the entry starts."""
    text = read_text(path)
    try:
        data = loads_json(text)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}",
            fix="correct the JSON at that position (the file must be one JSON array)",
        ) from None
    if not isinstance(data, list):
        raise UserError(
            f"{path}: expected a JSON array of question entries, found a {type(data).__name__}",
            fix="pass the question file itself (a list of objects)",
        )
    return list(zip(_entry_lines(text, len(data)), data))


def _entry_lines(text: str, count: int) -> list[int]:
    """The line on which each element of the (valid) JSON array ``text`` starts."""
    decoder = json.JSONDecoder()
    lines: list[int] = []
    try:
        i = _WS.match(text, 0).end() + 1  # past "["
        line, last = 1, 0
        for _ in range(count):
            i = _WS.match(text, i).end()
            line += text.count("\n", last, i)
            last = i
            lines.append(line)
            _, i = decoder.raw_decode(text, i)
            i = _WS.match(text, i).end() + 1  # past "," (or the closing "]")
    except (ValueError, AttributeError, RecursionError):  # the strict parse already succeeded; be safe
        return [0] * count
    return lines


def _field(entry: dict[str, Any], key: str, where: str, *, required: bool) -> str | None:
    value = entry.get(key)
    if value is None:
        if required:
            raise _Bad("invalid_row", f"{where} lacks the field {key!r}")
        return None
    if not isinstance(value, str):
        raise _Bad("invalid_row", f"{where}: field {key!r} must be a string, not {type(value).__name__}")
    if required and not value.strip():
        raise _Bad("invalid_row", f"{where}: field {key!r} is empty")
    return value


def _plain_db_id(db_id: str, where: str) -> str:
    if db_id in (".", "..") or any(c in db_id for c in "/\\\0") or db_id != db_id.strip():
        raise _Bad("invalid_row", f"{where}: db_id {db_id!r} is not a plain database name")
    return db_id


def _db_folders(ds: Dataset) -> list[Path]:
    if ds.kind == "bird":
        names = ["dev_databases", "train_databases", "databases"]
        if ds.question_file.stem.lower().startswith("train"):
            names = ["train_databases", "dev_databases", "databases"]
    else:
        names = ["database", "test_database"]
    found = [ds.root / n for n in names if (ds.root / n).is_dir()]
    if not found:
        raise UserError(
            f"{ds.root}: no database folder: looked for {', '.join(n + '/' for n in names)}",
            fix=f"unpack the {ds.kind} databases into {ds.root / names[0]}",
        )
    return found


def _read_json_layout(ds: Dataset) -> None:
    entries = _read_json_array(ds.question_file)
    folders = _db_folders(ds)
    tables_json = _spider_tables(ds) if ds.kind == "spider" else None
    split = ds.question_file.stem
    fname = ds.question_file.name
    sql_key = "SQL" if ds.kind == "bird" else "query"
    probed: dict[str, Path | str] = {}  # db_id -> .sqlite path, or why it cannot be used
    seen: set[str] = set()
    ds.total = len(entries)
    for index, (line, entry) in enumerate(entries):
        where = f"{fname} entry {index} (line {line})"
        pid = f"{ds.kind}-{split}-{index}"
        try:
            if not isinstance(entry, dict):
                raise _Bad("invalid_row", f"{where} is a {type(entry).__name__}, not an object")
            given = _given_id(entry.get("question_id")) if ds.kind == "bird" else None
            if given:
                pid = given
                where = f"{fname} entry {index} (question_id {pid}, line {line})"
            db_id = _plain_db_id(_field(entry, "db_id", where, required=True), where)
            question = _field(entry, "question", where, required=True)
            sql = _field(entry, sql_key, where, required=True)
            evidence = _field(entry, "evidence", where, required=False) if ds.kind == "bird" else None
            difficulty = _field(entry, "difficulty", where, required=False) if ds.kind == "bird" else None
            pid = _unique_id(pid, seen)
            if db_id not in probed:
                probed[db_id] = _locate(db_id, folders)
            found = probed[db_id]
            if isinstance(found, str):
                raise _Bad("unknown_database", f"{where}: {found}")
        except _Bad as bad:
            _reject(ds, pid, line, bad.code, str(bad))
            continue
        db = ds.databases.get(db_id)
        if db is None:
            descriptions = (
                _bird_descriptions(found, ds.warnings)
                if ds.kind == "bird"
                else _spider_descriptions(db_id, found, tables_json, ds.warnings)
            )
            db = ds.databases[db_id] = DatasetDB(db_id=db_id, path=found, descriptions=descriptions)
        _add(db, index, pid, question, sql, evidence, difficulty)


def _given_id(value: Any) -> str | None:
    """An id given in the file (a string or an integer), or None."""
    if isinstance(value, (int, str)) and not isinstance(value, bool) and str(value).strip():
        return str(value).strip()
    return None


def _add(
    db: DatasetDB, index: int, pid: str, question: str, sql: str, evidence: str | None, difficulty: str | None
) -> None:
    db.pairs.append(
        {
            "id": pid,
            "question": question,
            "sql": sql,
            "evidence": evidence if evidence and evidence.strip() else None,
            "difficulty": difficulty if difficulty and difficulty.strip() else None,
            "db_id": db.db_id,
        }
    )
    db.indexes.append(index)


def _usable(db_id: str, path: Path | None, expected: Path, note: str = "") -> Path | str:
    """``path`` when it is a readable SQLite database with tables, else why it cannot be used."""
    if path is None:
        return f"db_id {db_id!r} has no database: expected {expected}{note}"
    problem = _probe(path)
    return path if problem is None else f"db_id {db_id!r}: {path} {problem}"


def _locate(db_id: str, folders: list[Path]) -> Path | str:
    """The readable ``<folder>/<db>/<db>.sqlite`` for ``db_id``, or why there is none."""
    for folder in folders:
        path = folder / db_id / f"{db_id}.sqlite"
        if path.is_file():
            return _usable(db_id, path, path)
    note = " (the folder exists without it)" if (folders[0] / db_id).is_dir() else ""
    return _usable(db_id, None, folders[0] / db_id / f"{db_id}.sqlite", note)


def _connect_ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)


def _probe(path: Path) -> str | None:
    """None when ``path`` is a readable SQLite database with tables, else what is wrong."""
    try:
        tables = _schema(path)
    except sqlite3.Error as exc:
        return f"is not a readable SQLite database ({exc})"
    return None if tables else "is a SQLite database without tables"


def _schema(path: Path) -> dict[str, list[str]]:
    """``{table or view: [column, ...]}`` read from the database (read-only)."""
    con = _connect_ro(path)
    try:
        names = [
            r[0]
            for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        out: dict[str, list[str]] = {}
        for name in names:
            try:
                out[name] = [r[1] for r in con.execute('PRAGMA table_info("' + name.replace('"', '""') + '")')]
            except sqlite3.OperationalError:  # a view over something dropped
                continue
        return out
    finally:
        con.close()


def _norm(name: str) -> str:
    return " ".join(name.split()).lower()


# -------------------------------------------------------------------------- BIRD descriptions ----


def _decode_csv(raw: bytes) -> tuple[str | None, str | None]:
    """The text of a description CSV and None, or None and what is wrong with it."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return raw.decode("utf-16"), None
        except UnicodeDecodeError:
            return None, "is not valid UTF-16 text despite its byte-order mark"
    if b"\0" in raw:
        return None, "holds NUL bytes (not a text file)"
    try:
        return raw.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        pass
    try:
        return raw.decode("cp1252"), None
    except UnicodeDecodeError as exc:
        return None, f"is neither UTF-8 nor cp1252 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})"


def _clean(text: str | None) -> str:
    return " ".join((text or "").split())


def _column_text(desc: str, natural: str, original: str, value: str) -> str:
    text = desc or (natural if _norm(natural) != _norm(original) else "")
    if value.lower().rstrip(".") in _USELESS or _norm(value) == _norm(text):
        return text
    return f"{text} ({value})" if text else value


def _parse_csv(text: str) -> tuple[dict[str, str], str | None]:
    """``{original column name: text}`` of one BIRD description CSV, or what is malformed."""
    try:
        rows = [r for r in csv.reader(io.StringIO(text, newline="")) if any(c.strip() for c in r)]
    except csv.Error as exc:
        return {}, f"is not a well-formed CSV ({exc})"
    if not rows:
        return {}, "is empty"
    header = [re.sub(r"[\s_]+", "_", h.strip().lower()) for h in rows[0]]
    if "original_column_name" not in header:
        return {}, f"has no original_column_name header (found: {', '.join(rows[0]) or 'nothing'})"
    at = {h: i for i, h in reversed(list(enumerate(header)))}

    def cell(row: list[str], name: str) -> str:
        i = at.get(name)
        return _clean(row[i]) if i is not None and i < len(row) else ""

    out: dict[str, str] = {}
    for row in rows[1:]:
        original = cell(row, "original_column_name")
        if not original:
            continue
        text = _column_text(
            cell(row, "column_description"), cell(row, "column_name"), original, cell(row, "value_description")
        )
        if text:
            out.setdefault(original, text)
    return out, None


def _bird_descriptions(path: Path, warnings: list[str]) -> Descriptions | None:
    folder = path.parent / "database_description"
    if not folder.is_dir():
        return None
    schema = _schema(path)
    tables = {_norm(t): t for t in schema}
    out: Descriptions = {}
    for csv_path in sorted(p for p in folder.iterdir() if p.suffix.lower() == ".csv" and p.is_file()):
        table = tables.get(_norm(csv_path.stem))
        if table is None:
            warnings.append(f"{csv_path}: no table {csv_path.stem!r} in {path.name}; file ignored")
            continue
        if table in out:
            warnings.append(f"{csv_path}: a second description file for table {table!r}; file ignored")
            continue
        try:
            raw = csv_path.read_bytes()
        except OSError as exc:
            warnings.append(f"{csv_path}: cannot be read ({exc.strerror or exc}); table {table!r} has no descriptions")
            continue
        text, problem = _decode_csv(raw)
        found: dict[str, str] = {}
        if text is not None:
            found, problem = _parse_csv(text)
        if problem:
            warnings.append(f"{csv_path}: {problem}; table {table!r} has no descriptions")
            continue
        columns = {_norm(c): c for c in schema[table]}
        docs: dict[str, str] = {}
        unmatched: list[str] = []
        for name, text in found.items():
            column = columns.get(_norm(name))
            if column is None:
                unmatched.append(name)
            else:
                docs.setdefault(column, text)
        if unmatched:
            warnings.append(
                f"{csv_path}: {len(unmatched)} row(s) name no column of table {table!r}: {', '.join(unmatched)}"
            )
        if docs:
            out[table] = docs
    return out or None


# ------------------------------------------------------------------------ Spider descriptions ----


def _spider_tables(ds: Dataset) -> dict[str, Any] | None:
    path = ds.root / "tables.json"
    if not path.is_file():
        ds.warnings.append(f"{path}: not found; the databases have no descriptions")
        return None
    data = read_json(path)
    if not isinstance(data, list):
        raise UserError(
            f"{path}: expected a JSON array of database schemas, found a {type(data).__name__}",
            fix="pass Spider's tables.json (a list with one object per db_id)",
        )
    return {e["db_id"]: e for e in data if isinstance(e, dict) and isinstance(e.get("db_id"), str)}


def _spider_descriptions(
    db_id: str, path: Path, tables_json: dict[str, Any] | None, warnings: list[str]
) -> Descriptions | None:
    if tables_json is None:
        return None
    entry = tables_json.get(db_id)
    where = f"tables.json entry for db_id {db_id!r}"
    if entry is None:
        warnings.append(f"{where}: not found; database {db_id} has no descriptions")
        return None
    schema = _schema(path)
    tables = {_norm(t): t for t in schema}
    out: Descriptions = {}
    try:
        originals = entry["table_names_original"]
        naturals = entry.get("table_names") or originals
        real: dict[int, str] = {}
        for i, name in enumerate(originals):
            table = tables.get(_norm(name))
            if table is None:
                warnings.append(f"{where}: table {name!r} is not in {path.name}")
                continue
            real[i] = table
            out[table] = {"__table__": _clean(naturals[i])} if _clean(naturals[i]) else {}
        col_naturals = entry.get("column_names") or entry["column_names_original"]
        for (t_index, name), (_, natural) in zip(entry["column_names_original"], col_naturals, strict=True):
            if t_index < 0 or t_index not in real:
                continue
            table = real[t_index]
            columns = {_norm(c): c for c in schema[table]}
            column = columns.get(_norm(name))
            if column is None:
                warnings.append(f"{where}: column {name!r} is not in table {table!r} of {path.name}")
            elif _clean(natural):
                out[table][column] = _clean(natural)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        warnings.append(f"{where}: malformed ({type(exc).__name__}: {exc}); database {db_id} has no descriptions")
        return None
    out = {t: d for t, d in out.items() if d}
    return out or None


# ---------------------------------------------------------------------------------- sqlite-dir ----


def _read_sqlite_dir(ds: Dataset) -> None:
    files = {p.stem: p for p in sorted(ds.root.glob("*.sqlite")) if p.is_file()}
    if not files:
        raise UserError(
            f"{ds.root}: no *.sqlite database next to {ds.question_file.name}",
            fix="put the SQLite databases (<db_id>.sqlite) in the dataset folder",
        )
    text = read_text(ds.question_file)
    fname = ds.question_file.name
    probed: dict[str, Path | str] = {}  # db_id -> .sqlite path, or why it cannot be used
    seen: set[str] = set()
    index = -1
    for line, raw in enumerate(text.split("\n"), start=1):  # not splitlines(): U+2028 may sit inside a string
        if not raw.strip():
            continue
        index += 1
        where = f"{fname} line {line}"
        pid = f"line-{line}"
        try:
            try:
                entry = loads_json(raw)
            except json.JSONDecodeError as exc:
                raise _Bad("invalid_row", f"{where}: invalid JSON at column {exc.colno}: {exc.msg}") from None
            if not isinstance(entry, dict):
                raise _Bad("invalid_row", f"{where} is a {type(entry).__name__}, not an object")
            given = _given_id(entry.get("id"))
            if given:
                pid = given
            elif entry.get("id") is not None:
                raise _Bad("invalid_row", f"{where}: field 'id' must be a string, not {type(entry['id']).__name__}")
            extra = sorted(set(entry) - set(PAIR_FIELDS))
            if extra:
                raise _Bad(
                    "invalid_row",
                    f"{where}: unknown field(s) {', '.join(map(repr, extra))} (a pair has {', '.join(PAIR_FIELDS)})",
                )
            question = _field(entry, "question", where, required=True)
            sql = _field(entry, "sql", where, required=True)
            evidence = _field(entry, "evidence", where, required=False)
            difficulty = _field(entry, "difficulty", where, required=False)
            db_id = _field(entry, "db_id", where, required=False)
            if db_id is None:
                if len(files) != 1:
                    raise _Bad(
                        "invalid_row",
                        f"{where} lacks the field 'db_id' (needed: {ds.root} holds {len(files)} databases)",
                    )
                db_id = next(iter(files))
            db_id = _plain_db_id(db_id, where)
            pid = _unique_id(pid, seen)
            if db_id not in probed:
                probed[db_id] = _usable(db_id, files.get(db_id), ds.root / f"{db_id}.sqlite")
            if isinstance(probed[db_id], str):
                raise _Bad("unknown_database", f"{where}: {probed[db_id]}")
        except _Bad as bad:
            _reject(ds, pid, line, bad.code, str(bad))
            continue
        db = ds.databases.get(db_id)
        if db is None:
            path = files[db_id]
            db = ds.databases[db_id] = DatasetDB(db_id=db_id, path=path, descriptions=_sidecar(path))
        _add(db, index, pid, question, sql, evidence, difficulty)
    ds.total = index + 1
    for stem, path in files.items():
        if stem not in probed:
            ds.warnings.append(f"{path}: no pair of {fname} names db_id {stem!r}")


def _sidecar(path: Path) -> Descriptions | None:
    """``<db>.descriptions.json`` (or ``<db>.sqlite.descriptions.json``) next to the database."""
    for side in (path.with_name(path.stem + ".descriptions.json"), path.with_name(path.name + ".descriptions.json")):
        if side.is_file():
            return read_json(side, DESCRIPTIONS_SHAPE, fix=DESCRIPTIONS_FIX)
    return None


# ---------------------------------------------------------------------------------- writing ----


def write_pairs(db: DatasetDB, path: str | Path) -> Path:
    """Write ``db``'s pairs as JSONL (the ``Pair`` fields only), atomically; returns the path.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     db = DatasetDB("shop", Path(d, "shop.sqlite"), pairs=[
    ...         {"id": "7", "question": "How many?", "sql": "SELECT 1", "evidence": None,
    ...          "difficulty": None, "db_id": "shop"}], indexes=[0])
    ...     print(write_pairs(db, Path(d, "out", "shop.jsonl")).read_text(encoding="utf-8"), end="")
    {"id": "7", "question": "How many?", "sql": "SELECT 1", "evidence": null, "difficulty": null, "db_id": "shop"}
    """
    target = Path(path)
    write_jsonl(target, ({k: p.get(k) for k in PAIR_FIELDS} for p in db.pairs))
    return target


# ---------------------------------------------------------------------------------- examples ----


def example_names() -> list[str]:
    """The packaged example datasets, each named by its layout.

    >>> example_names()
    ['bird', 'spider']
    """
    if not EXAMPLES_DIR.is_dir():
        return []
    return sorted(p.name for p in EXAMPLES_DIR.iterdir() if p.is_dir() and (p / "dev.json").is_file())


def materialize_example(kind: str, dest: str | Path) -> Path:
    """Write the packaged example dataset ``kind`` ("bird" or "spider") into ``dest`` in the real
    layout, building each ``.sqlite`` from its SQL script; returns ``dest``.

    Files already in ``dest`` with the same names are replaced; other files are left alone.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     root = materialize_example("spider", d)
    ...     print(sorted(p.name for p in root.iterdir()))
    ...     print((root / "database" / "music_festival" / "music_festival.sqlite").is_file())
    ['database', 'dev.json', 'tables.json']
    True
    """
    names = example_names()
    if kind not in names:
        raise UserError(f"no example dataset {kind!r}", fix=f"use one of {', '.join(names)}")
    src = EXAMPLES_DIR / kind
    out = Path(dest)
    try:
        for path in sorted(src.rglob("*")):
            rel = path.relative_to(src)
            if not path.is_file() or "__pycache__" in rel.parts:
                continue
            target = out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if path.suffix == ".sql":
                _build_sqlite(path, target.with_suffix(".sqlite"))
            else:
                _copy_file(path, target)
    except OSError as exc:
        raise UserError(
            f"cannot write the {kind} example into {out}: {exc.strerror or exc}", fix="pass a writable folder"
        ) from None
    return out


def _copy_file(src: Path, target: Path) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _build_sqlite(script: Path, target: Path) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        con = sqlite3.connect(tmp)
        try:
            con.executescript(script.read_text(encoding="utf-8"))
            con.commit()
        finally:
            con.close()
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
