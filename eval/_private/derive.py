"""Derive benchmark cases from an NL2API split's verified gold chains: the shared ground floor
(reading the split, seeded randomness, candidate tools, the report, swapping a folder in) and
:func:`derive_all`. Each benchmark's deriver lives in its folder (``eval/<benchmark>/_derive.py``)
and is named by its :class:`~benchsmith.eval.Benchmark` (``derivers``); :data:`DERIVERS` is a
view over them.

Every function is pure in the sense that matters here: it reads ``<split>/samples.jsonl``,
writes its benchmark's own layout plus ``derive_report.json`` to ``out_dir`` and returns the
report; the same split and seed give the same bytes. Randomness comes only from
``random.Random`` seeded with a string made of the seed, the sample id and a purpose.

>>> sorted(DERIVERS)
['acebench_special', 'gta', 'teval', 'toolassess']
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections import Counter
from pathlib import Path
from collections.abc import Iterator, Mapping
from typing import Any, Callable, Iterable

from benchsmith.construction.variants import (
    visible_steps,
)
from benchsmith.schemas import (
    Sample, Split, Tool, UserError, write_json,
)

REPORT = "derive_report.json"
MAX_TOOLS = 12            # candidate tools per derived record: every gold-chain tool + seeded distractors


# ---- the split ---------------------------------------------------------------------------------


def load_split(split_dir: str | Path) -> tuple[Path, list[Sample]]:
    """The verified samples with at least one visible gold call, in file order."""
    split = Split.open(split_dir)
    samples = [s for s in split.samples()
               if (s.verification is None or s.verification.status == "verified") and visible_steps(s)]
    if not samples:
        raise UserError(f"{split.samples_path} has no verified sample with gold calls", fix="build the split first")
    return split.root, samples


def _source(split: Path, samples: list[Sample], seed: int | None) -> dict[str, Any]:
    source: dict[str, Any] = {"split": str(split), "samples": len(samples)}
    if seed is not None:
        source["seed"] = seed
    manifest = split / "manifest.json"
    if manifest.is_file():
        try:
            m = json.loads(manifest.read_text(encoding="utf-8"))
            source.update(name=m.get("name"), content_hash=m.get("content_hash"))
        except (OSError, json.JSONDecodeError, AttributeError):
            pass
    return source


def _rng(seed: int, *parts: Any) -> random.Random:
    return random.Random(":".join(str(p) for p in (seed, *parts)))  # str seeds hash with SHA-512: stable


def _chain_tools(sample: Sample) -> list[str]:
    out: list[str] = []
    for st in visible_steps(sample):
        if st.call is not None and st.call.name not in out:
            out.append(st.call.name)
    return out


def candidate_tools(sample: Sample, seed: int, purpose: str, limit: int = MAX_TOOLS) -> list[Tool]:
    """The sample's tools when there are at most ``limit``; else every gold-chain tool plus seeded
    distractors up to ``limit``, in the sample's tool order."""
    if len(sample.tools) <= limit:
        return list(sample.tools)
    chain = set(_chain_tools(sample))
    others = [t.name for t in sample.tools if t.name not in chain]
    keep = chain | set(_rng(seed, sample.id, purpose, "tools").sample(others, max(0, min(len(others),
                                                                                           limit - len(chain)))))
    return [t for t in sample.tools if t.name in keep]


def _tool_entry(tool: Tool) -> dict[str, Any]:
    return tool.to_openai()["function"]


def _skip(skipped: list[dict[str, Any]], sample: Sample, category: str, reason: str) -> None:
    skipped.append({"sample": sample.id, "category": category, "reason": reason})


def _skip_summary(skipped: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for s in skipped:
        out.setdefault(s["category"], Counter())[s["reason"]] += 1  # type: ignore[index]
    return {c: dict(sorted(v.items())) for c, v in sorted(out.items())}


def _report(benchmark: str, split: Path, samples: list[Sample], seed: int | None, files: list[str],
            counts: dict[str, Any], skipped: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"benchmark": benchmark, "source": _source(split, samples, seed), "files": sorted(files),
            "counts": counts, "skipped_by_reason": _skip_summary(skipped), "skipped": skipped, **extra}


# ---- the derivers: a view over the benchmarks -------------------------------------------------
Deriver = Callable[..., dict[str, Any]]


class _BenchmarkView(Mapping[str, Any]):
    """A read-only mapping computed from the benchmark registry on every access (sorted by name)."""

    def __init__(self, build: Callable[[], dict[str, Any]]) -> None:
        self._build = build

    def __getitem__(self, key: str) -> Any:
        return self._build()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._build())

    def __len__(self) -> int:
        return len(self._build())

    def __repr__(self) -> str:
        return repr(self._build())


def _derivers() -> dict[str, Deriver]:
    from .core import BENCHMARKS

    return dict(sorted((name, fn) for cls in BENCHMARKS.values() for name, fn in cls.derivers.items()))


def _derived_benchmark() -> dict[str, str]:
    from .core import BENCHMARKS

    return dict(sorted((name, cls.name) for cls in BENCHMARKS.values() for name in cls.derivers))


#: deriver name -> ``derive(split_dir, out_dir, seed=0) -> report``, from every benchmark's ``derivers``
DERIVERS: Mapping[str, Deriver] = _BenchmarkView(_derivers)
#: the benchmark each deriver's output loads with (``get_benchmark(DERIVED_BENCHMARK[k]).load(out)``)
DERIVED_BENCHMARK: Mapping[str, str] = _BenchmarkView(_derived_benchmark)


def derive_all(split_dir: str | Path, out_dir: str | Path, benchmarks: Iterable[str] | None = None,
               seed: int = 0) -> dict[str, Any]:
    """Run every deriver in :data:`DERIVERS` (or the named ones) into ``out_dir/<name>/`` and write
    ``out_dir/derive_report.json`` listing each deriver's folder, benchmark and record counts.

    Unknown names are a :class:`UserError` raised before anything is written. ``out_dir`` is
    replaced as a whole (:func:`swap_in`): a kill leaves the old folder or the new one."""
    names = list(DERIVERS) if benchmarks is None else list(dict.fromkeys(benchmarks))
    unknown = [n for n in names if n not in DERIVERS]
    if unknown or not names:
        raise UserError(f"unknown deriver(s): {', '.join(unknown) or '(none given)'}",
                        fix=f"choose from {', '.join(DERIVERS)}")
    load_split(split_dir)  # fail on a bad split before any folder is made
    out = Path(out_dir)
    summary: dict[str, Any] = {"split": str(Path(split_dir)), "seed": seed, "derived": {}}

    def build(fresh: Path) -> None:
        for name in names:
            report = DERIVERS[name](split_dir, fresh / name, seed=seed)
            summary["derived"][name] = {"folder": name, "benchmark": DERIVED_BENCHMARK[name],
                                        "records": report.get("counts", report.get("records"))}
        write_json(fresh / REPORT, summary)

    swap_in(out, build, owned=set(DERIVERS) | {REPORT}, what="`benchsmith eval derive`")
    return summary


# ---- writing a whole folder --------------------------------------------------------------------
def _sibling(out: Path, kind: str, pid: int) -> Path:
    return out.parent / f".{out.name}.{kind}.{pid}"


def _siblings(out: Path, kind: str) -> list[tuple[Path, int]]:
    """``(path, writer pid)`` of the ``new`` / ``old`` folders derives into ``out`` left beside it."""
    prefix = f".{out.name}.{kind}."
    found = []
    if out.parent.is_dir():
        for p in out.parent.iterdir():
            if p.name.startswith(prefix) and p.name[len(prefix):].isdigit():
                found.append((p, int(p.name[len(prefix):])))
    return found


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # a folder of this process's pid is left from an earlier, killed process that had it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _clean_stale(out: Path) -> None:
    """Undo what a killed swap left: if ``out`` is gone but the old folder survives (killed between
    the two renames), the old folder comes back; leftover new and old folders are removed."""
    for old, pid in _siblings(out, "old"):
        if _alive(pid):
            continue
        if not out.exists():
            os.rename(old, out)
        else:
            shutil.rmtree(old, ignore_errors=True)
    for new, pid in _siblings(out, "new"):
        if not _alive(pid):
            shutil.rmtree(new, ignore_errors=True)


def swap_in(out: Path, build: Callable[[Path], None], *, owned: set[str], what: str) -> None:
    """Write a whole output folder: ``build(fresh)`` fills a fresh folder beside ``out``, which then
    replaces ``out`` by two renames, so a kill leaves the old folder or the new one, never a mix;
    what a killed swap left is cleaned up here first. ``out`` may only hold entries named in ``owned``
    (what this writer makes): anything else is a :class:`UserError`, so nobody's files are replaced."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is an existing file, not a folder", fix="give a folder path (new or existing)")
    _clean_stale(out)
    if out.is_dir():
        foreign = sorted(p.name for p in out.iterdir()
                         if p.name not in owned and not (p.name.startswith(".") and p.name.endswith(".tmp")))
        if foreign:
            raise UserError(f"{out} holds {', '.join(foreign[:5])}, which {what} did not write; it replaces the whole "
                            "folder", fix="write into a new or empty folder (or one it wrote before), or move those away")
    fresh = _sibling(out, "new", os.getpid())
    old = _sibling(out, "old", os.getpid())
    try:
        shutil.rmtree(fresh, ignore_errors=True)
        fresh.mkdir(parents=True)
        build(fresh)
        if out.exists():
            os.rename(out, old)
        os.rename(fresh, out)
    except BaseException as exc:
        shutil.rmtree(fresh, ignore_errors=True)
        if old.exists() and not out.exists():
            os.rename(old, out)
        if isinstance(exc, OSError):
            raise UserError(f"{out}: cannot write: {exc.strerror or exc}",
                            fix="check the folder, its parent and their permissions") from None
        raise
    shutil.rmtree(old, ignore_errors=True)

