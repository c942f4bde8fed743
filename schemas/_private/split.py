"""Split manifests: what a released benchmark split contains, with checksums."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from pydantic import Field, field_validator

from benchsmith.schemas._private.errors import UserError
from benchsmith.schemas._private.sample import Provenance
from benchsmith.schemas._private.tool import StrictModel

SHA256_PATTERN = r"^sha256:[0-9a-f]{64}$"
Sha256 = Annotated[str, Field(pattern=SHA256_PATTERN)]


class SplitManifest(StrictModel):
    """The manifest of one split: its files with checksums and a hash of its sample ids."""

    name: str = Field(min_length=1)
    version: str = Field(pattern=r"^\d+\.\d+\.\d+([-+].*)?$")
    created_at: datetime
    description: str = ""
    sample_count: int = Field(ge=0)
    files: dict[str, Sha256] = Field(default_factory=dict)
    content_hash: Sha256
    provenance: Provenance
    parent: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("files")
    @classmethod
    def _file_names_are_relative(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            path = PurePosixPath(name)
            if not name or "\\" in name or path.is_absolute() or ".." in path.parts:
                raise ValueError(f"file name {name!r} must be a relative path (with '/') inside the split directory")
        return value


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes as ``"sha256:<hex>"``.

    >>> import tempfile, pathlib
    >>> from benchsmith.schemas import file_sha256
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = pathlib.Path(d, "x.txt")
    ...     _ = p.write_bytes(b"abc")
    ...     file_sha256(p)
    'sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'
    """
    p = Path(path)
    digest = hashlib.sha256()
    try:
        with p.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except FileNotFoundError:
        raise UserError(f"{p}: no such file", fix="check the path") from None
    except IsADirectoryError:
        raise UserError(f"{p}: is a directory, not a file", fix="give the path of a file") from None
    except OSError as exc:
        raise UserError(f"{p}: cannot read: {exc.strerror or exc}", fix="check the file's permissions") from None
    return "sha256:" + digest.hexdigest()


def samples_content_hash(ids: Iterable[str]) -> str:
    """The SHA-256 of the sorted sample ids joined by newlines, as ``"sha256:<hex>"``.

    The order of ``ids`` does not matter.

    >>> from benchsmith.schemas import samples_content_hash
    >>> samples_content_hash(["b", "a"]) == samples_content_hash(["a", "b"])
    True
    >>> samples_content_hash([])
    'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'
    """
    joined = "\n".join(sorted(ids))
    return "sha256:" + hashlib.sha256(joined.encode("utf-8")).hexdigest()


class Split:
    """A split folder and the files in it: ``samples.jsonl`` (always), ``manifest.json``,
    ``tools.json``, ``toolset.json`` (SEL), ``endpoints.json`` (REST), ``database.sqlite`` with its
    ``.descriptions.json`` sidecar. Everything that reads a split finds its files here.

    A *merged* split (built from a dataset with several databases) holds ``databases/<db_id>.sqlite``
    (each with an optional ``.descriptions.json`` sidecar) instead of, or next to, ``database.sqlite``;
    each sample names its database in ``metadata["db_id"]`` and :meth:`database_for` finds its file
    (``database.sqlite`` stays the default for samples without one).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (Path(d) / Split.SAMPLES).write_text("", encoding="utf-8")
    ...     split = Split.open(d)
    ...     split.samples(), split.database_path.name, split.has(Split.TOOLSET)
    ([], 'database.sqlite', False)
    """

    SAMPLES = "samples.jsonl"
    MANIFEST = "manifest.json"
    TOOLS = "tools.json"
    TOOLSET = "toolset.json"
    ENDPOINTS = "endpoints.json"
    DATABASE = "database.sqlite"
    DESCRIPTIONS = "database.sqlite.descriptions.json"
    #: the folder of a merged split's databases: ``databases/<db_id>.sqlite``
    DATABASES = "databases"
    DATABASE_SUFFIX = ".sqlite"
    #: the files a split carries besides its samples and manifest
    DATA_FILES = (TOOLS, TOOLSET, ENDPOINTS, DATABASE, DESCRIPTIONS)

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @classmethod
    def open(
        cls, root: str | os.PathLike[str], fix: str = "pass a split folder written by `benchsmith nl2api build`"
    ) -> Split:
        """The split in folder ``root``; a folder without ``samples.jsonl`` is a :class:`UserError`."""
        split = cls(root)
        if not split.samples_path.is_file():
            raise UserError(f"{split.root} has no {cls.SAMPLES}", fix=fix)
        return split

    @classmethod
    def samples_file(
        cls, source: str | os.PathLike[str], fix: str = "pass a samples JSONL file or a split folder"
    ) -> Path:
        """The samples file ``source`` names: a JSONL file, or a folder's ``samples.jsonl`` (a split,
        a construction run); one that does not exist is a :class:`UserError`."""
        path = Path(source)
        if path.is_dir():
            path = path / cls.SAMPLES
        if not path.is_file():
            raise UserError(f"{path} does not exist", fix=fix)
        return path

    def path(self, name: str) -> Path:
        return self.root / name

    def has(self, name: str) -> bool:
        return (self.root / name).is_file()

    @property
    def samples_path(self) -> Path:
        return self.root / self.SAMPLES

    @property
    def manifest_path(self) -> Path:
        return self.root / self.MANIFEST

    @property
    def toolset_path(self) -> Path:
        return self.root / self.TOOLSET

    @property
    def endpoints_path(self) -> Path:
        return self.root / self.ENDPOINTS

    @property
    def database_path(self) -> Path:
        return self.root / self.DATABASE

    @property
    def databases_path(self) -> Path:
        return self.root / self.DATABASES

    def db_ids(self) -> list[str]:
        """The db_ids of the databases in ``databases/`` (sorted; empty when there is no such folder).

        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     (Path(d) / "databases").mkdir()
        ...     for name in ("b.sqlite", "a.sqlite", "a.sqlite.descriptions.json"):
        ...         _ = (Path(d) / "databases" / name).write_bytes(b"")
        ...     Split(d).db_ids(), Split(d).has_databases(), Split(d).database_for("a").name
        (['a', 'b'], True, 'a.sqlite')
        """
        folder = self.databases_path
        if not folder.is_dir():
            return []
        return sorted(
            p.name[: -len(self.DATABASE_SUFFIX)]
            for p in folder.iterdir()
            if p.name.endswith(self.DATABASE_SUFFIX)
            and len(p.name) > len(self.DATABASE_SUFFIX)
            and not p.name.startswith(".")
            and p.is_file()
        )

    def has_databases(self) -> bool:
        """Whether this is a merged split: ``databases/`` holds at least one ``<db_id>.sqlite``."""
        return bool(self.db_ids())

    @staticmethod
    def check_db_id(db_id: Any, where: str = "") -> str:
        """``db_id`` if it can name a file of ``databases/`` (a non-empty string without path
        separators, not starting with "."), else a :class:`UserError`."""
        ok = (
            isinstance(db_id, str)
            and db_id.strip() == db_id
            and bool(db_id)
            and not db_id.startswith(".")
            and not any(c in db_id for c in ("/", "\\", "\0", os.sep))
        )
        if not ok:
            raise UserError(
                f"{where + ': ' if where else ''}db_id {db_id!r} cannot name a database file",
                fix="use the database's name: no path separators, not starting with '.'",
            )
        return db_id

    def database_for(self, db_id: str | None) -> Path:
        """The database file of a sample whose ``metadata["db_id"]`` is ``db_id``:
        ``databases/<db_id>.sqlite``, or ``database.sqlite`` when ``db_id`` is None.

        A split without ``databases/`` holds one database, which every db_id names (a split built
        from one database of a multi-database dataset keeps the db_id in its samples). A db_id
        whose file is missing is a :class:`UserError` naming the split, the db_id and the fix."""
        if db_id is None:
            return self.database_path
        self.check_db_id(db_id, where=f"split {self.root}")
        path = self.databases_path / f"{db_id}{self.DATABASE_SUFFIX}"
        if path.is_file():
            return path
        held = self.db_ids()
        if not held and self.database_path.is_file():
            return self.database_path
        if held:
            raise UserError(
                f"split {self.root} has no database for db_id {db_id!r}: {path} does not exist "
                f"(its {self.DATABASES}/ holds {', '.join(held)})",
                fix=f"copy the database to {self.DATABASES}/{db_id}{self.DATABASE_SUFFIX} or rebuild the split",
            )
        raise UserError(
            f"split {self.root} has no database for db_id {db_id!r}: neither {path} nor {self.database_path} exists",
            fix=f"copy the database to {self.DATABASES}/{db_id}{self.DATABASE_SUFFIX} "
            "or rebuild the split (its databases are copied in)",
        )

    def samples(self) -> list[Any]:
        """Every sample of ``samples.jsonl`` (a bad row is a :class:`UserError` naming it)."""
        from benchsmith.schemas._private.jsonl import read_jsonl
        from benchsmith.schemas._private.sample import Sample

        return read_jsonl(self.samples_path, Sample)

    def __repr__(self) -> str:
        return f"Split({str(self.root)!r})"
