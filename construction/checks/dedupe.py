"""Near-duplicate removal over a set of samples (not a per-sample check): a later sample whose
task text (the query, or the dialogue's user turns joined) means the same as an earlier kept one is
dropped; the first occurrence is kept.

Texts equal after folding case and whitespace are duplicates without embedding them (cosine 1.0);
the rest are embedded with real sentence embeddings (:func:`benchsmith.models.get_embedder`,
offline, cached) and compared in blocks against the samples kept so far. Samples with no task text
are never duplicates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from benchsmith.schemas import Sample

from .clarity import task_text

BLOCK = 512


@dataclass(frozen=True)
class Duplicate:
    """Sample ``index`` (0-based, in the given order) means the same as the kept sample ``duplicate_of``."""

    index: int
    duplicate_of: int
    cosine: float


def _fold(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def near_duplicates(samples: Sequence[Sample | str], threshold: float = 0.92, embedder: Any = None) -> list[Duplicate]:
    """The later near-duplicates in ``samples`` (Samples or plain texts), in index order.

    ``embedder`` has ``encode(texts) -> unit vectors`` (default: the shared sentence-embedding
    model). A sample is a duplicate when its cosine with an earlier *kept* sample is at least
    ``threshold``; it points at the most similar such sample.

    >>> class Letters:  # a stand-in embedder: one axis per first letter
    ...     def encode(self, texts):
    ...         import numpy as np
    ...         return np.array([[1.0 if t.strip()[0].lower() == c else 0.0 for c in "ab"] for t in texts])
    >>> near_duplicates(["apples", "Apples ", "avocado", "bananas"], embedder=Letters())
    [Duplicate(index=1, duplicate_of=0, cosine=1.0), Duplicate(index=2, duplicate_of=0, cosine=1.0)]
    """
    import numpy as np

    texts = [s if isinstance(s, str) else task_text(s) for s in samples]
    first_of: dict[str, int] = {}
    exact: dict[int, int] = {}  # index -> index of the first sample with the same folded text
    unique: list[int] = []  # indices whose folded text is new, in order
    for i, t in enumerate(texts):
        key = _fold(t)
        if not key:
            continue
        if key in first_of:
            exact[i] = first_of[key]
        else:
            first_of[key] = i
            unique.append(i)
    near: dict[int, tuple[int, float]] = {}  # unique index -> (kept index, cosine)
    if len(unique) > 1:
        if embedder is None:
            from benchsmith.models import get_embedder

            embedder = get_embedder()
        vecs = np.asarray(embedder.encode([texts[i] for i in unique]), dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        vecs = vecs / np.where(norms == 0, 1.0, norms)
        kept = np.zeros_like(vecs)
        kept_index: list[int] = []  # positions in ``unique`` of the kept rows of ``kept``
        for start in range(0, len(unique), BLOCK):
            block = vecs[start : start + BLOCK]
            prev = block @ kept[: len(kept_index)].T if kept_index else np.zeros((len(block), 0), np.float32)
            inner = block @ block.T
            kept_in_block: list[int] = []
            for r in range(len(block)):
                best_pos, best = -1, -2.0
                if prev.shape[1]:
                    j = int(np.argmax(prev[r]))
                    best_pos, best = kept_index[j], float(prev[r, j])
                if kept_in_block:
                    row = inner[r, kept_in_block]
                    j = int(np.argmax(row))
                    if float(row[j]) > best:
                        best_pos, best = start + kept_in_block[j], float(row[j])
                if best_pos >= 0 and best >= threshold:
                    near[unique[start + r]] = (unique[best_pos], min(best, 1.0))
                else:
                    kept_in_block.append(r)
            for r in kept_in_block:
                kept[len(kept_index)] = block[r]
                kept_index.append(start + r)
    out: list[Duplicate] = []
    for i in range(len(texts)):
        if i in near:
            j, cos = near[i]
            out.append(Duplicate(i, j, round(cos, 6)))
        elif i in exact:
            j = exact[i]
            if j in near:  # the first copy is itself a near-duplicate: point at what it duplicates
                out.append(Duplicate(i, near[j][0], round(near[j][1], 6)))
            else:
                out.append(Duplicate(i, j, 1.0))
    return out
