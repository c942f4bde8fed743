"""Reading the JSON files of a built NL2API split, each checked for its shape.

A file of the wrong shape is a ``UserError`` naming the file, the place inside it and the fix,
never a ``KeyError`` or ``AttributeError`` later on.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from benchsmith.schemas import SplitManifest, StrictModel, ToolCall, read_json, validate_shape

from .runtime import Binding, load_bindings

REBUILD = "rebuild the split with benchsmith nl2api build"


class ManifestHead(SplitManifest):
    """A split's ``manifest.json``: a :class:`~benchsmith.schemas.SplitManifest`, and the NL2API
    style its ``extra`` names."""

    @property
    def style(self) -> Any:
        return self.extra.get("style")


class _ItemSpec(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["integer", "number", "string", "boolean"]


class ParameterSpec(BaseModel):
    """One query parameter of a REST endpoint (a JSON-Schema fragment)."""

    model_config = ConfigDict(extra="allow")
    type: Literal["integer", "number", "string", "boolean", "array"]
    items: _ItemSpec | None = None

    @model_validator(mode="after")
    def _array_has_items(self) -> "ParameterSpec":
        if self.type == "array" and self.items is None:
            raise ValueError("an array parameter needs 'items' with a type")
        return self


class EndpointSpec(StrictModel):
    """One entry of ``endpoints.json``: set-up calls, the call template and its parameters."""

    setup: list[ToolCall]
    calls: list[ToolCall] = Field(min_length=1)
    parameters: dict[str, ParameterSpec]
    #: the database the endpoint runs on in a merged split (``databases/<db_id>.sqlite``)
    db_id: str | None = None


def read_manifest(path: str | Path) -> ManifestHead:
    """The split manifest at ``path``, the one reader of ``manifest.json``: a file that is not a JSON
    object, or not a :class:`~benchsmith.schemas.SplitManifest`, is a ``UserError`` naming the file,
    the place inside it and the fix."""
    data = read_json(path, dict[str, Any], fix=REBUILD)
    return validate_shape(data, ManifestHead, where=str(path), fix=REBUILD, strict=False)


def read_toolset(path: str | Path) -> dict[str, Binding]:
    """The bindings of a split's ``toolset.json``."""
    return load_bindings(read_json(path), where=str(path))


def read_endpoints(path: str | Path) -> dict[str, Any]:
    """A REST split's ``endpoints.json`` (as plain JSON, after checking its shape)."""
    data = read_json(path, fix=REBUILD + " --style rest")
    validate_shape(data, dict[str, EndpointSpec], where=str(path), fix=REBUILD + " --style rest")
    return data


class SplitTools:
    """A built split's executable tools: its SEL bindings (``toolset.json``, None for SLOT), its REST
    endpoints (``endpoints.json``, empty unless REST) and its database, opened read-only at once
    (``check`` runs SQLite's quick_check first), so a broken split fails before anything runs.
    ``database`` names another database file (a split built without copying its own).

    A merged split (``databases/<db_id>.sqlite``, see :class:`~benchsmith.schemas.Split`) has one
    database per db_id: :meth:`db_for` opens each once (checked like the default one), and
    :attr:`db` is a :class:`UserError` there unless the split also has ``database.sqlite``."""

    def __init__(self, root: str | Path, *, database: str | Path | None = None, check: bool = False) -> None:
        from benchsmith.schemas import Split

        from .database import Database

        split = Split(root)
        self.split = split
        self.root = split.root
        self.bindings = read_toolset(split.toolset_path) if split.has(Split.TOOLSET) else None
        self.endpoints: dict[str, Any] = read_endpoints(split.endpoints_path) if split.has(Split.ENDPOINTS) else {}
        self.database_path = Path(database) if database is not None else split.database_path
        self._check = check
        self._dbs: dict[str, Any] = {}  # db_id -> Database (merged splits)
        self._lock = threading.Lock()
        # a merged split without database.sqlite has no default database to open
        self._has_databases = split.has_databases()
        self._merged_only = database is None and not split.has(Split.DATABASE) and self._has_databases
        self._db: Any = None if self._merged_only else Database(self.database_path, check=check)

    @property
    def db(self) -> Any:
        """The split's read-only :class:`Database` (opened again after :meth:`close`)."""
        if self._db is None:
            from .database import Database

            if self._merged_only:
                from benchsmith.schemas import UserError

                raise UserError(
                    f"this split has several databases ({self.root}/{self.split.DATABASES}/: "
                    f"{', '.join(self.split.db_ids())}) and no {self.split.DATABASE}; "
                    "there is no single database to run on",
                    fix="run each sample on its own database: db_for(sample.metadata['db_id'])",
                )
            self._db = Database(self.database_path, check=self._check)
        return self._db

    def db_for(self, db_id: str | None) -> Any:
        """The read-only :class:`Database` of the samples whose ``metadata["db_id"]`` is ``db_id``
        (the default :attr:`db` for None, and for any db_id of a split without ``databases/``);
        opened once, checked like the default one. A db_id without a file is a ``UserError``."""
        if db_id is None or not self._has_databases:
            return self.db
        path = self.split.database_for(db_id)
        with self._lock:
            db = self._dbs.get(db_id)
            if db is None:
                from .database import Database

                db = self._dbs[db_id] = Database(path, check=self._check)
            return db

    def close(self) -> None:
        with self._lock:
            dbs, self._dbs = list(self._dbs.values()), {}
        for db in dbs:
            db.close()
        if self._db is not None:
            self._db.close()
            self._db = None
