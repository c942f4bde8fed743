"""Derive benchmark cases from an NL2API split's verified gold chains: the shared ground floor
(reading the split, seeded randomness, candidate tools, the report, swapping a folder in) and
:func:`derive_all`. Each benchmark's deriver lives in its folder (``eval/<benchmark>/_derive.py``)
and is named by the run task whose cases it derives (``Task.deriver``); :data:`DERIVERS` is a
view over them.

Every function is pure in the sense that matters here: it reads ``<split>/samples.jsonl``,
writes its benchmark's own layout plus ``derive_report.json`` to ``out_dir`` and returns the
report; the same split and seed give the same bytes. They stream (docs/eval/derive.md): the
split is read one sample at a time (:class:`SplitSamples`) and records are appended to
temporary files renamed in at the end (:class:`Outputs`), so memory does not grow with the split. Randomness comes only from
``random.Random`` seeded with a string made of the seed, the sample id and a purpose.

>>> {"acebench_special", "gta", "teval", "toolassess"} <= set(DERIVERS)  # plug-ins may add more
True
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from array import array
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Callable, Iterable

from pydantic import BaseModel

from benchsmith.schemas import (
    JsonlError,
    RowError,
    Sample,
    Split,
    Tool,
    UserError,
    dumps_json,
    json_default,
    progress_bar,
    scan_jsonl,
    swap_folder,
    write_json,
    writer_alive,
)

REPORT = "derive_report.json"
MAX_TOOLS = 12  # candidate tools per derived record: every gold-chain tool + seeded distractors


# ---- the split ---------------------------------------------------------------------------------


def _usable(sample: Sample) -> bool:
    from benchsmith.construction.variants import visible_steps  # construction loads on use: scoring never needs it

    return (sample.verification is None or sample.verification.status == "verified") and bool(visible_steps(sample))


class SplitSamples:
    """The samples of a split, read from ``samples.jsonl`` one line at a time: each iteration is a
    new pass over the file and holds one sample at a time. With ``usable`` (the derivers) only the
    verified samples with at least one visible gold call are given, and a split without any is a
    :class:`UserError` (raised when a pass ends). Bad rows are a :class:`JsonlError` listing all of
    them, as :func:`~benchsmith.schemas.read_jsonl` gives: nothing is yielded after the first bad
    row, the rest of the file is read to list the others. ``count`` is the number of samples the
    last complete pass gave. The split's ``manifest.json`` (optional) is read here, by the one
    manifest reader, so every deriver and exporter refuses a bad one before writing anything."""

    def __init__(self, split_dir: str | Path, usable: bool = True) -> None:
        from benchsmith.construction.nl2api import read_manifest

        split = Split.open(split_dir)
        self.root, self.path, self.usable = split.root, split.samples_path, usable
        self.manifest = read_manifest(split.manifest_path) if split.has(Split.MANIFEST) else None
        self.count: int | None = None

    def __iter__(self) -> Iterator[Sample]:
        bad: list[RowError] = []
        rows = given = 0
        for _, item in scan_jsonl(self.path, Sample):
            rows += 1
            if isinstance(item, RowError):
                bad.append(item)
            elif not bad and (not self.usable or _usable(item)):
                given += 1
                yield item
        if bad:
            raise JsonlError(self.path, bad, rows)
        if self.usable and not given:
            raise UserError(f"{self.path} has no verified sample with gold calls", fix="build the split first")
        self.count = given

    def check(self) -> None:
        """Fail on a missing or useless split without a whole pass: stops at the first usable sample
        (bad rows further on surface when the split is read)."""
        for _ in self:
            return


def load_split(split_dir: str | Path) -> tuple[Path, list[Sample]]:
    """The verified samples with at least one visible gold call, in file order (all in memory: the
    derivers stream them with :class:`SplitSamples` instead)."""
    samples = SplitSamples(split_dir)
    return samples.root, list(samples)


def _source(split: Path, samples: list[Sample] | int, seed: int | None) -> dict[str, Any]:
    source: dict[str, Any] = {"split": str(split), "samples": samples if isinstance(samples, int) else len(samples)}
    if seed is not None:
        source["seed"] = seed
    if Split(split).has(Split.MANIFEST):
        from benchsmith.construction.nl2api import read_manifest

        m = read_manifest(Split(split).manifest_path)
        source.update(name=m.name, content_hash=m.content_hash)
    return source


def seeded_rng(seed: int, *parts: Any) -> random.Random:
    return random.Random(":".join(str(p) for p in (seed, *parts)))  # str seeds hash with SHA-512: stable


def chain_tools(sample: Sample) -> list[str]:
    from benchsmith.construction.variants import visible_steps

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
    chain = set(chain_tools(sample))
    others = [t.name for t in sample.tools if t.name not in chain]
    keep = chain | set(
        seeded_rng(seed, sample.id, purpose, "tools").sample(others, max(0, min(len(others), limit - len(chain))))
    )
    return [t for t in sample.tools if t.name in keep]


def tool_entry(tool: Tool) -> dict[str, Any]:
    return tool.to_openai()["function"]


def note_skip(skipped: list[dict[str, Any]], sample: Sample, category: str, reason: str) -> None:
    skipped.append({"sample": sample.id, "category": category, "reason": reason})


def skip_summary(skipped: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for s in skipped:
        out.setdefault(s["category"], Counter())[s["reason"]] += 1
    return {c: dict(sorted(v.items())) for c, v in sorted(out.items())}


def derive_report(
    benchmark: str,
    split: Path,
    samples: list[Sample] | int,
    seed: int | None,
    files: list[str],
    counts: dict[str, Any],
    skipped: list[dict[str, Any]],
    **extra: Any,
) -> dict[str, Any]:
    return {
        "benchmark": benchmark,
        "source": _source(split, samples, seed),
        "files": sorted(files),
        "counts": counts,
        "skipped_by_reason": skip_summary(skipped),
        "skipped": skipped,
        **extra,
    }


# ---- writing files one record at a time --------------------------------------------------------
def jsonl_line(item: Mapping[str, Any] | BaseModel) -> str:
    """The line :func:`~benchsmith.schemas.write_jsonl` writes for ``item``."""
    plain = item.model_dump(mode="json", exclude_none=False) if isinstance(item, BaseModel) else dict(item)
    return dumps_json(plain, allow_nan=False, default=json_default) + "\n"


def json_text(obj: Any) -> str:
    """The text :func:`~benchsmith.schemas.write_json` writes for ``obj``."""
    plain = obj.model_dump(mode="json", exclude_none=False) if isinstance(obj, BaseModel) else obj
    return dumps_json(plain, indent=2, allow_nan=False, default=json_default) + "\n"


def _ascii_escape(text: str) -> str:
    """``text`` (JSON written with ``ensure_ascii=False``) as ``ensure_ascii=True`` writes it: every
    character outside space..``~`` left unescaped (those above ``~``: JSON's encoder escapes the
    others in both modes) becomes ``\\uXXXX`` (a surrogate pair above U+FFFF)."""
    out = []
    for ch in text:
        n = ord(ch)
        if n <= 0x7E:
            out.append(ch)
        elif n < 0x10000:
            out.append(f"\\u{n:04x}")
        else:
            n -= 0x10000
            out.append(f"\\u{0xD800 | (n >> 10):04x}\\u{0xDC00 | (n & 0x3FF):04x}")
    return "".join(out)


class _TmpFile:
    """A file written beside its target (``.<name>.<pid>.tmp``), renamed onto it by :meth:`commit`."""

    errors = "strict"

    def __init__(self, target: Path) -> None:
        self.target = target
        target.parent.mkdir(parents=True, exist_ok=True)
        for old in target.parent.glob(f".{target.name}.*.tmp"):  # what a killed writer left
            pid = old.name[len(target.name) + 2 : -4]
            if pid.isdigit() and not writer_alive(int(pid)):
                old.unlink(missing_ok=True)
        self.tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        self.fh: IO[str] = self.tmp.open("w", encoding="utf-8", errors=self.errors, newline="\n")

    def write(self, text: str) -> None:
        self.fh.write(text)

    def close(self) -> None:
        if not self.fh.closed:
            self.fh.flush()
            os.fsync(self.fh.fileno())
            self.fh.close()

    def commit(self) -> None:
        self.close()
        os.replace(self.tmp, self.target)

    def abort(self) -> None:
        if not self.fh.closed:
            self.fh.close()
        self.tmp.unlink(missing_ok=True)


class _ObjectFile(_TmpFile):
    """A JSON object written one entry at a time, byte for byte what ``write_json`` writes for the
    whole dict (``indent=2``; if any entry holds a lone surrogate the whole file is ASCII-escaped,
    as ``write_json`` does). ``f[key] = value`` adds an entry (keys must be new)."""

    errors = "surrogatepass"  # a lone surrogate is written as is, and the file escaped when it closes

    def __init__(self, target: Path) -> None:
        super().__init__(target)
        self.entries = 0
        self.ascii = False

    def __setitem__(self, key: str, value: Any) -> None:
        text = json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False, default=json_default)
        head = json.dumps(key, ensure_ascii=False)
        if not self.ascii:
            try:
                (head + text).encode("utf-8")
            except UnicodeEncodeError:
                self.ascii = True
        self.write(("{" if not self.entries else ",") + "\n  " + head + ": " + text.replace("\n", "\n  "))
        self.entries += 1

    def __len__(self) -> int:
        return self.entries

    def close(self) -> None:
        if not self.fh.closed:
            self.write("\n}\n" if self.entries else "{}\n")
            super().close()
            if self.ascii:
                escaped = self.tmp.with_name(self.tmp.name + ".ascii")
                with (
                    self.tmp.open(encoding="utf-8", errors="surrogatepass", newline="") as src,
                    escaped.open("w", encoding="ascii", newline="") as dst,
                ):
                    for chunk in iter(lambda: src.read(1 << 16), ""):
                        dst.write(_ascii_escape(chunk))
                os.replace(escaped, self.tmp)


class Outputs:
    """The files of one output folder, each written to a temporary file beside its target and
    renamed in by :meth:`commit` (after everything is written); on an exception inside ``with``
    every temporary file is removed and the folder keeps what it held. A kill leaves the old files
    (plus ``.<name>.<pid>.tmp`` leftovers, removed by the next writer of that file).

    ``lines(name)`` is a JSON Lines file (``.write(text)``, ``.add(item)`` as ``write_jsonl``),
    ``object(name)`` a JSON object written entry by entry (:class:`_ObjectFile`), ``json(name,
    obj)`` a whole document as ``write_json`` writes it, ``spool()`` an anonymous scratch file."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.files: dict[str, _TmpFile] = {}
        self._spools: list[IO[bytes]] = []

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if kind is not None:
            self.abort()
        self._close_spools()

    def _new(self, name: str, cls: type[_TmpFile]) -> Any:
        if name in self.files:
            raise ValueError(f"{name} is already being written")
        self.files[name] = f = cls(self.folder / name)
        return f

    def lines(self, name: str) -> _Lines:
        """The JSON Lines file ``name`` (opened on first use)."""
        f = self.files.get(name)
        return f if isinstance(f, _Lines) else self._new(name, _Lines)

    def object(self, name: str) -> _ObjectFile:
        return self._new(name, _ObjectFile)

    def json(self, name: str, obj: Any) -> None:
        self._new(name, _TmpFile).write(json_text(obj))

    def spool(self) -> Spool:
        self.folder.mkdir(parents=True, exist_ok=True)
        fh = tempfile.TemporaryFile(dir=self.folder)  # unlinked at once: nothing is left behind
        self._spools.append(fh)
        return Spool(fh)

    def commit(self) -> list[str]:
        """Rename every file in (in the order they were opened); returns their names."""
        for f in self.files.values():
            f.close()
        for f in self.files.values():
            f.commit()
        self._close_spools()
        return list(self.files)

    def abort(self) -> None:
        for f in self.files.values():
            f.abort()
        self._close_spools()

    def _close_spools(self) -> None:
        for fh in self._spools:
            fh.close()
        self._spools.clear()


class _Lines(_TmpFile):
    def add(self, item: Mapping[str, Any] | BaseModel) -> None:
        self.write(jsonl_line(item))


class Spool:
    """Records kept on disk instead of in memory: ``put(record) -> n`` appends one (as JSON),
    ``get(n)`` reads it back."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh = fh
        self.offsets = array("q")
        self._end = 0
        self._reading = False

    def put(self, record: Any) -> int:
        if self._reading:
            self.fh.seek(0, os.SEEK_END)
            self._reading = False
        data = (dumps_json(record, allow_nan=False, default=json_default) + "\n").encode("utf-8")
        self.offsets.append(self._end)
        self.fh.write(data)
        self._end += len(data)
        return len(self.offsets) - 1

    def get(self, n: int) -> Any:
        if not self._reading:
            self.fh.flush()
            self._reading = True
        self.fh.seek(self.offsets[n])
        return json.loads(self.fh.readline())

    def __len__(self) -> int:
        return len(self.offsets)


# ---- the derivers: a view over the run tasks ---------------------------------------------------
Deriver = Callable[..., dict[str, Any]]


class BenchmarkView(Mapping[str, Any]):
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
    from .runner import TASKS

    return dict(sorted((name, t.deriver) for name, t in TASKS.items() if t.deriver is not None))


def _derived_benchmark() -> dict[str, str]:
    from .runner import TASKS

    return dict(sorted((name, t.benchmark) for name, t in TASKS.items() if t.deriver is not None))


#: deriver name (its run task's) -> ``derive(split_dir, out_dir, seed=0) -> report``, from every task's ``deriver``
DERIVERS: Mapping[str, Deriver] = BenchmarkView(_derivers)
#: the benchmark each deriver's output loads with (``get_benchmark(DERIVED_BENCHMARK[k]).load(out)``)
DERIVED_BENCHMARK: Mapping[str, str] = BenchmarkView(_derived_benchmark)


def derive_all(
    split_dir: str | Path, out_dir: str | Path, benchmarks: Iterable[str] | None = None, seed: int = 0
) -> dict[str, Any]:
    """Run every deriver in :data:`DERIVERS` (or the named ones) into ``out_dir/<name>/`` and write
    ``out_dir/derive_report.json`` listing each deriver's folder, benchmark and record counts.

    Unknown names are a :class:`UserError` raised before anything is written. ``out_dir`` is
    replaced as a whole (:func:`~benchsmith.schemas.swap_folder`): a kill leaves the old folder or the new one."""
    names = list(DERIVERS) if benchmarks is None else list(dict.fromkeys(benchmarks))
    unknown = [n for n in names if n not in DERIVERS]
    if unknown or not names:
        raise UserError(
            f"unknown deriver(s): {', '.join(unknown) or '(none given)'}", fix=f"choose from {', '.join(DERIVERS)}"
        )
    SplitSamples(split_dir).check()  # fail on a missing or useless split before any folder is made
    out = Path(out_dir)
    summary: dict[str, Any] = {"split": str(Path(split_dir)), "seed": seed, "derived": {}}

    def build(fresh: Path) -> None:
        with progress_bar("deriving", total=len(names)) as bar:
            for name in names:
                report = DERIVERS[name](split_dir, fresh / name, seed=seed)
                bar.advance()
                summary["derived"][name] = {
                    "folder": name,
                    "benchmark": DERIVED_BENCHMARK[name],
                    "records": report.get("counts", report.get("records")),
                }
        write_json(fresh / REPORT, summary)

    swap_folder(out, build, owned=set(DERIVERS) | {REPORT}, what="`benchsmith eval derive`")
    return summary
