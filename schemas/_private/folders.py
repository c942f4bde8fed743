"""Writing a whole output folder atomically: a fresh folder beside it, then two renames."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from benchsmith.schemas._private.errors import UserError


def check_out_dir(out: str | os.PathLike[str], flag: str | None = None) -> Path:
    """``out`` as a Path if a folder can be written there; else a :class:`UserError` naming ``flag``
    (the command-line option, if any) and the fix, raised before anything is written: ``out`` is an
    existing file, a part of its path is a file, or the folder it would be made in cannot be
    written (no permission, a read-only or special file system: a probe folder is made there and
    removed at once, since root passes every permission check).

    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = pathlib.Path(d, "f").write_text("x")
    ...     try:
    ...         check_out_dir(pathlib.Path(d, "f", "sub"), "--out")
    ...     except UserError as e:
    ...         print(str(e).replace(d, "DIR"))
    --out DIR/f/sub: DIR/f is a file, so no folder can be made under it (fix: give --out a path whose parents are folders)
    """
    out = Path(out)
    name = f"{flag} {out}" if flag else str(out)
    give = f"give {flag}" if flag else "give"
    first = out
    try:
        if os.path.lexists(out) and not out.is_dir():
            raise UserError(
                f"{name} is an existing file, not a folder",
                fix=f"{give} a folder path (new or existing), or move the file away",
            )
        while not os.path.lexists(first) and first.parent != first:
            first = first.parent
        if not first.is_dir():
            raise UserError(
                f"{name}: {first} is a file, so no folder can be made under it",
                fix=f"{give} a path whose parents are folders",
            )
        if not os.access(first, os.W_OK | os.X_OK):
            raise UserError(f"{name}: {first} is not writable", fix=f"{give} a folder you can write to")
        if first != out:  # the folder will be made in ``first``: make sure one can be
            os.rmdir(tempfile.mkdtemp(prefix=".benchsmith-probe-", dir=first))
    except OSError as exc:
        raise UserError(
            f"{name}: cannot write in {first} ({exc.strerror or exc})", fix=f"{give} a folder you can write to"
        ) from None
    return out


def _sibling(out: Path, kind: str, pid: int) -> Path:
    return out.parent / f".{out.name}.{kind}.{pid}"


def _siblings(out: Path, kind: str) -> list[tuple[Path, int]]:
    """``(path, writer pid)`` of the ``new`` / ``old`` folders a writer of ``out`` left beside it."""
    prefix = f".{out.name}.{kind}."
    found = []
    if out.parent.is_dir():
        for p in out.parent.iterdir():
            if p.name.startswith(prefix) and p.name[len(prefix) :].isdigit():
                found.append((p, int(p.name[len(prefix) :])))
    return found


def writer_alive(pid: int) -> bool:
    """Whether the writer ``pid`` that left a temporary file or folder still runs. This process's own
    pid counts as gone: what carries it was left by an earlier, killed process that had the pid."""
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
        if writer_alive(pid):
            continue
        if not out.exists():
            os.rename(old, out)
        else:
            shutil.rmtree(old, ignore_errors=True)
    for new, pid in _siblings(out, "new"):
        if not writer_alive(pid):
            shutil.rmtree(new, ignore_errors=True)


def swap_folder(
    out: str | Path,
    build: Callable[[Path], None],
    *,
    owned: Iterable[str] | Callable[[str], bool],
    what: str,
    keep: Iterable[str] = (),
) -> None:
    """Write the whole folder ``out``: ``build(fresh)`` fills a fresh folder beside it, which then
    replaces ``out`` by two renames, so a kill (even ``kill -9``) leaves the old folder or the new
    one, never a mix; what a killed swap left is cleaned up first. ``out`` may only hold entries
    ``owned`` names (what this writer makes; a set of names or a predicate): anything else is a
    :class:`UserError`, so nobody's files are replaced. Entries named in ``keep`` (e.g. a journal
    of the work in progress) move from the old folder into the new one unless ``build`` wrote them.

    >>> import tempfile, pathlib
    >>> from benchsmith.schemas import swap_folder
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = pathlib.Path(d, "out")
    ...     swap_folder(out, lambda f: (f / "a.txt").write_text("1"), owned={"a.txt"}, what="the example")
    ...     def fail(f):
    ...         (f / "a.txt").write_text("2")
    ...         raise KeyboardInterrupt
    ...     try:
    ...         swap_folder(out, fail, owned={"a.txt"}, what="the example")
    ...     except KeyboardInterrupt:
    ...         pass
    ...     (out / "a.txt").read_text(), sorted(p.name for p in pathlib.Path(d).iterdir())
    ('1', ['out'])
    """
    out = Path(out)
    owns = owned if callable(owned) else set(owned).__contains__
    check_out_dir(out)
    _clean_stale(out)
    if out.is_dir():
        foreign = sorted(
            p.name
            for p in out.iterdir()
            if not owns(p.name) and not (p.name.startswith(".") and p.name.endswith(".tmp"))
        )
        if foreign:
            raise UserError(
                f"{out} holds {', '.join(foreign[:5])}, which {what} did not write; it replaces the whole folder",
                fix="write into a new or empty folder (or one it wrote before), or move those away",
            )
    fresh = _sibling(out, "new", os.getpid())
    old = _sibling(out, "old", os.getpid())
    try:
        shutil.rmtree(fresh, ignore_errors=True)
        fresh.mkdir(parents=True)
        build(fresh)
        for name in keep:
            if (out / name).exists() and not (fresh / name).exists():
                os.rename(out / name, fresh / name)
        if out.exists():
            os.rename(out, old)
        os.rename(fresh, out)
    except BaseException as exc:
        if fresh.exists():
            for name in keep:  # moved over already: back to where it was
                if (fresh / name).exists() and out.is_dir() and not (out / name).exists():
                    os.rename(fresh / name, out / name)
        shutil.rmtree(fresh, ignore_errors=True)
        if old.exists() and not out.exists():
            os.rename(old, out)
        if isinstance(exc, OSError):
            raise UserError(
                f"{out}: cannot write: {exc.strerror or exc}", fix="check the folder, its parent and their permissions"
            ) from None
        raise
    shutil.rmtree(old, ignore_errors=True)
