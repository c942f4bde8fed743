"""Sentence vectors of whole lists, encoded the way T-Eval's plan scorer encodes them, and the
official plan similarity matrices built from them.

T-Eval embeds a plan's step names (and argument strings) with one ``encode`` call per list and
compares the lists with sentence-transformers' ``cos_sim``; the last bits of each vector depend
on the batch it was encoded in (padding to the longest text), and networkx's choice among
equal-weight matchings depends on those bits. Official-mode plan scoring therefore needs, for
the few plans whose matching is ambiguous, the vectors of exactly those lists. Vectors and
matrices are kept in memory and on disk next to the per-text embedding cache
(``<cache>/embeddings/<model>.teval-batches.sqlite``), keyed by the SHA-256 of their inputs, so
that scoring the same plans again needs neither the model nor torch.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

from benchsmith.eval.budget import budget_paused

_MEMORY: dict[str, Any] = {}
_LOCK = threading.RLock()
_DBS: dict[str, sqlite3.Connection | None] = {}
MAX_MEMORY = 20000


def _db(emb: Any) -> sqlite3.Connection | None:
    if not emb.use_disk_cache:
        return None
    path = emb.cache_dir / f"{emb.key}.teval-batches.sqlite"
    key = str(path)
    if key not in _DBS:
        try:
            emb.cache_dir.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(path, check_same_thread=False, timeout=30)
            con.execute("CREATE TABLE IF NOT EXISTS batch (k TEXT PRIMARY KEY, n INTEGER, dim INTEGER, v BLOB)")
            con.commit()
            _DBS[key] = con
        except (OSError, sqlite3.Error):
            _DBS[key] = None  # an unwritable cache must not stop scoring
    return _DBS[key]


def _cached(emb: Any, parts: Any, compute: Callable[[], Any], dtype: str) -> Any:
    """A float array (2-D) from memory, the disk cache or ``compute()`` (then stored)."""
    import numpy as np

    key = hashlib.sha256(json.dumps([emb.key, parts], ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()
    with _LOCK:
        value = _MEMORY.get(key)
        if value is not None:
            return value
        db = _db(emb)
        row = None
        if db is not None:
            try:
                row = db.execute("SELECT n, dim, v FROM batch WHERE k = ?", (key,)).fetchone()
            except sqlite3.Error:
                row = None
        if row is not None:
            n, dim, blob = row
            value = np.frombuffer(blob, dtype=dtype).reshape(n, dim).copy()
        else:
            value = np.ascontiguousarray(compute(), dtype=dtype)
            if db is not None:
                try:
                    db.execute(
                        "INSERT OR REPLACE INTO batch (k, n, dim, v) VALUES (?, ?, ?, ?)",
                        (key, int(value.shape[0]), int(value.shape[1]), value.tobytes()),
                    )
                    db.commit()
                except sqlite3.Error:
                    pass
        if len(_MEMORY) >= MAX_MEMORY:
            _MEMORY.clear()
        _MEMORY[key] = value
        return value


def batch_vectors(texts: list[str]) -> Any:
    """float32 vectors, one row per text, from one ``encode`` call on the whole list (not
    normalised), as sentence-transformers returns them with ``convert_to_tensor=True``."""
    from benchsmith.models import get_embedder

    emb = get_embedder()

    def compute() -> Any:
        with budget_paused():  # loading the model is not the record's time
            model = emb._load()
        return model.encode(list(texts), convert_to_tensor=True, show_progress_bar=False).cpu().numpy()

    return _cached(emb, ["batch", list(texts)], compute, "float32")


def official_cosines(a: list[str], b: list[str]) -> Any:
    """``max(cos_sim(encode(a), encode(b)), 0)`` as a float32 matrix, computed with torch exactly as
    T-Eval's plan scorer computes it (its thread count included)."""
    from benchsmith.models import get_embedder

    emb = get_embedder()

    def compute() -> Any:
        import numpy as np
        import torch
        from sentence_transformers import util

        va, vb = torch.from_numpy(batch_vectors(a)), torch.from_numpy(batch_vectors(b))
        return np.maximum(util.cos_sim(va, vb).cpu().numpy(), 0)

    return _cached(emb, ["cos", list(a), list(b)], compute, "float32")
