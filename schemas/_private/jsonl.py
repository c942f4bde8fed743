"""Reading and writing JSON Lines and JSON files safely.

Readers report every bad row at once, with its line number. Writers are atomic (a temp file
in the same directory, fsync, rename), so a crash never leaves a half-written file behind.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import IO, Any, NamedTuple, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import from_json

from benchsmith.schemas._private.errors import UserError

M = TypeVar("M", bound=BaseModel)
PathLike = str | os.PathLike[str]

MAX_LISTED_ERRORS = 20
_MAX_REASON_CHARS = 300
_BOM = b"\xef\xbb\xbf"


class RowError(NamedTuple):
    """A bad row of a JSONL file: its 1-based line number and a short reason."""

    line: int
    message: str


class JsonlError(UserError):
    """A JSONL file with bad rows; ``errors`` lists all of them."""

    def __init__(self, path: PathLike, errors: list[RowError], rows: int) -> None:
        self.path = Path(path)
        self.errors = errors
        lines = [f"{path}:{e.line}: {e.message}" for e in errors[:MAX_LISTED_ERRORS]]
        if len(errors) > MAX_LISTED_ERRORS:
            lines.append(f"... and {len(errors) - MAX_LISTED_ERRORS} more")
        header = f"{path}: {len(errors)} bad row(s) out of {rows}:"
        super().__init__(
            "\n".join([header, *lines]),
            fix="correct or delete the listed lines (line numbers count from 1, blank lines included)",
        )


# ----------------------------------------------------------------------------- one JSON rule


def loads_json(text: str | bytes) -> Any:
    """``json.loads`` that fails only with ``json.JSONDecodeError``, whatever the text holds.

    Text from a model or a file may hold a number of more than 4,300 digits (``int()`` refuses
    it with a ``ValueError``), nesting deeper than the recursion limit, or bytes that are not
    UTF-8; all of them are reported as a ``JSONDecodeError`` so every caller handles one error.

    >>> loads_json('{"a": [1, "\\\\ud800"]}') == {"a": [1, chr(0xD800)]}
    True
    >>> try:
    ...     loads_json("1" * 5000)
    ... except json.JSONDecodeError as exc:
    ...     print(exc.msg)
    a number has more than 4300 digits
    """
    # pydantic-core's parser first: on every value it takes it gives what json.loads gives (ints
    # of any size, NaN and Infinity too) in about two thirds of the time; it refuses lone
    # surrogates (escaped, or raw in the text: a TypeError) and all invalid JSON, and then
    # json.loads decides, with its own messages
    with contextlib.suppress(ValueError, TypeError):
        return from_json(text)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except UnicodeDecodeError as exc:
        raise json.JSONDecodeError("not UTF-8 text", "", exc.start) from None
    except ValueError as exc:
        msg = "a number has more than 4300 digits" if "digits" in str(exc) else f"invalid JSON value ({exc})"
        raise json.JSONDecodeError(msg, text if isinstance(text, str) else "", 0) from None
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", text if isinstance(text, str) else "", 0) from None


def dumps_json(obj: Any, **kwargs: Any) -> str:
    """``json.dumps(obj, ensure_ascii=False, **kwargs)`` whose result always encodes as UTF-8.

    Text a model produced may hold lone surrogates (a JSON-escaped ``"\\\\ud800"``), which UTF-8
    cannot encode; then the value is written with ``ensure_ascii=True`` (``\\\\ud800`` escapes),
    which reads back to the same value. Writers must never fail on model output.

    >>> dumps_json({"a": "café"})
    '{"a": "café"}'
    >>> print(dumps_json({"a": "x" + chr(0xD800)}))
    {"a": "x\\ud800"}
    """
    kwargs.pop("ensure_ascii", None)
    text = json.dumps(obj, ensure_ascii=False, **kwargs)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj, ensure_ascii=True, **kwargs)
    return text


# ----------------------------------------------------------------------------- reading


def _open_for_reading(path: PathLike) -> IO[bytes]:
    p = Path(path)
    try:
        return p.open("rb")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file", fix="check the path") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, not a file", fix="give the path of a file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}", fix="check the file's permissions") from None


def _decode(path: PathLike, raw: bytes, line: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{path}:{line}: not UTF-8 text (bad byte at column {exc.start + 1})",
            fix="re-save the file as UTF-8",
        ) from None


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_REASON_CHARS else text[: _MAX_REASON_CHARS - 3] + "..."


def _validation_reason(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    parts = []
    for err in errors[:3]:
        loc = ".".join(str(p) for p in err["loc"])
        parts.append(f"{loc}: {err['msg']}" if loc else err["msg"])
    if len(errors) > 3:
        parts.append(f"and {len(errors) - 3} more error(s)")
    return _shorten("invalid row: " + "; ".join(parts))


_JSON_TYPE_NAMES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


def _parse_row(text: str, model: type[M]) -> M | str:
    """The validated row, or a short reason why it is bad."""
    try:
        obj = loads_json(text)
    except json.JSONDecodeError as exc:
        return _shorten(f"invalid JSON: {exc.msg} (column {exc.colno})")
    if not isinstance(obj, dict):
        kind = "null" if obj is None else _JSON_TYPE_NAMES.get(type(obj), type(obj).__name__)
        return f"expected a JSON object, got {kind}"
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        return _validation_reason(exc)


def scan_jsonl(path: PathLike, model: type[M]) -> Iterator[tuple[int, M | RowError]]:
    """Read a JSONL file one row at a time: ``(line, item)`` for a good row, ``(line, RowError)``
    for a bad one (blank lines skipped). Nothing but the current row is held in memory.
    Missing, unreadable or non-UTF-8 files raise ``UserError`` (a non-UTF-8 line when it is reached).

    >>> import tempfile, pathlib
    >>> from benchsmith.schemas import CheckResult, scan_jsonl
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = pathlib.Path(d, "checks.jsonl")
    ...     _ = p.write_text('{"name": "a", "ok": true}\\n{oops\\n')
    ...     [(n, type(x).__name__) for n, x in scan_jsonl(p, CheckResult)]
    [(1, 'CheckResult'), (2, 'RowError')]
    """
    with _open_for_reading(path) as fh:
        for line_no, raw in enumerate(fh, start=1):
            if line_no == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            text = _decode(path, raw, line_no)
            if not text.strip():
                continue
            result = _parse_row(text, model)
            yield line_no, (RowError(line_no, result) if isinstance(result, str) else result)


def _scan(path: PathLike, model: type[M], keep: bool = True) -> tuple[list[tuple[int, M]], list[RowError], int]:
    """(good rows with their lines, bad rows, row count); the good rows are kept only with ``keep``."""
    good: list[tuple[int, M]] = []
    bad: list[RowError] = []
    rows = 0
    for line_no, result in scan_jsonl(path, model):
        rows += 1
        if isinstance(result, RowError):
            bad.append(result)
        elif keep:
            good.append((line_no, result))
    return good, bad, rows


def check_jsonl(path: PathLike, model: type[M]) -> int:
    """Validate every row of a JSONL file without keeping the rows: the number of rows, or
    ``JsonlError`` listing every bad row (as :func:`read_jsonl` reports them).

    >>> import tempfile, pathlib
    >>> from benchsmith.schemas import CheckResult, JsonlError, check_jsonl
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = pathlib.Path(d, "checks.jsonl")
    ...     _ = p.write_text('{"name": "a", "ok": true}\\n{oops\\n')
    ...     try:
    ...         check_jsonl(p, CheckResult)
    ...     except JsonlError as e:
    ...         print(e.errors[0].line)
    2
    """
    _, bad, rows = _scan(path, model, keep=False)
    if bad:
        raise JsonlError(path, bad, rows)
    return rows


def iter_jsonl_lenient(path: PathLike, model: type[M]) -> tuple[list[tuple[int, M]], list[RowError]]:
    """Read a JSONL file keeping good rows: ``([(line, item), ...], [RowError, ...])``.

    Blank lines are skipped. Missing, unreadable or non-UTF-8 files raise ``UserError``.
    """
    good, bad, _ = _scan(path, model)
    return good, bad


def appended_line(raw: bytes, model: type[M]) -> M | None:
    """One line of an append-only file (a journal) read as ``model``; None when it cannot be: a
    write killed mid-line (even inside a multi-byte character), not JSON, another shape."""
    try:
        return model.model_validate(loads_json(raw))
    except (json.JSONDecodeError, UnicodeDecodeError, ValidationError):
        return None


def iter_appended(path: PathLike, model: type[M]) -> Iterator[tuple[int, M | None]]:
    """``(byte offset, line)`` for each non-blank line of an append-only file written with
    :func:`append_jsonl` (``replies.jsonl``, ``episodes.jsonl``): the reader of every journal. A
    line that cannot be read is None (:func:`appended_line`), never an error: the writer starts the
    next line after a torn one, so one killed write costs one line. An absent file has none."""
    target = Path(path)
    if not target.is_file():
        return
    offset = 0
    with target.open("rb") as fh:
        for raw in fh:
            start, offset = offset, offset + len(raw)
            if raw.strip():
                yield start, appended_line(raw, model)


def read_jsonl(path: PathLike, model: type[M]) -> list[M]:
    """Read and validate every row of a JSONL file (blank lines are skipped).

    If any row is bad, raises ``JsonlError`` listing all bad rows with their line numbers.

    >>> import tempfile, pathlib
    >>> from benchsmith.schemas import CheckResult, JsonlError, read_jsonl
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = pathlib.Path(d, "checks.jsonl")
    ...     _ = p.write_text('{"name": "a", "ok": true}\\n\\n{"name": "b", "ok": false}\\n')
    ...     [c.name for c in read_jsonl(p, CheckResult)]
    ['a', 'b']
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = pathlib.Path(d, "checks.jsonl")
    ...     _ = p.write_text('{"name": "a", "ok": true}\\n{oops\\n{"name": "c"}\\n')
    ...     try:
    ...         read_jsonl(p, CheckResult)
    ...     except JsonlError as e:
    ...         print([err.line for err in e.errors])
    [2, 3]
    """
    good, bad, rows = _scan(path, model)
    if bad:
        raise JsonlError(path, bad, rows)
    return [item for _, item in good]


def read_text(path: PathLike) -> str:
    """The whole text of a UTF-8 file (a BOM dropped); a missing, unreadable or non-UTF-8 file
    raises ``UserError`` naming the file (and the line of the first bad byte)."""
    with _open_for_reading(path) as fh:
        raw = fh.read()
    if raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise UserError(f"{path}:{line}: not UTF-8 text", fix="re-save the file as UTF-8") from None


def read_json(path: PathLike, shape: Any = None, *, fix: str | None = None) -> Any:
    """Read one JSON document; bad JSON raises ``UserError`` naming the file, line and column.

    With ``shape`` (a pydantic model or a type such as ``dict[str, dict[str, str]]``) the
    document is validated too, and a document of the wrong shape raises ``UserError`` naming
    the file and the place inside it; ``fix`` says how to correct it.

    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = pathlib.Path(d, "names.json")
    ...     _ = p.write_text('["a", "b"]')
    ...     try:
    ...         read_json(p, dict[str, str], fix="write an object of names")
    ...     except UserError as e:
    ...         print(str(e).replace(d, "DIR"))
    DIR/names.json: wrong shape: Input should be a valid dictionary (fix: write an object of names)

    >>> import tempfile, pathlib
    >>> from benchsmith.schemas import UserError, read_json
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = pathlib.Path(d, "bad.json")
    ...     _ = p.write_text('{\\n  "a": 1,\\n}\\n')
    ...     try:
    ...         read_json(p)
    ...     except UserError as e:
    ...         print(str(e).replace(d, "DIR").split(" (fix:")[0])
    DIR/bad.json:3:1: invalid JSON: Expecting property name enclosed in double quotes
    """
    text = read_text(path)
    try:
        data = loads_json(text)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}",
            fix="correct the JSON at that position",
        ) from None
    if shape is None:
        return data
    return validate_shape(data, shape, where=str(path), fix=fix)


def validate_shape(data: Any, shape: Any, *, where: str, fix: str | None = None, strict: bool = True) -> Any:
    """``data`` validated as ``shape`` (strictly, unless ``strict=False``: e.g. a timestamp read from
    JSON is a string); a mismatch is a ``UserError`` naming ``where``.

    >>> validate_shape({"a": 1}, dict[str, int], where="x.json")
    {'a': 1}
    >>> try:
    ...     validate_shape({"a": [1]}, dict[str, int], where="x.json")
    ... except UserError as e:
    ...     print(e)
    x.json: wrong shape at a: Input should be a valid integer
    """
    try:
        return _adapter(shape).validate_python(data, strict=strict)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = ".".join(str(p) for p in err["loc"])
        at = f" at {loc}" if loc else ""
        more = len(exc.errors()) - 1
        extra = f" (and {more} more problem(s))" if more > 0 else ""
        raise UserError(_shorten(f"{where}: wrong shape{at}: {err['msg']}{extra}"), fix=fix) from None


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def _adapter(shape: Any) -> TypeAdapter[Any]:
    try:
        return _ADAPTERS[shape]
    except (KeyError, TypeError):
        adapter: TypeAdapter[Any] = TypeAdapter(shape)
        with contextlib.suppress(TypeError):
            _ADAPTERS[shape] = adapter
        return adapter


# ----------------------------------------------------------------------------- writing


def json_default(obj: Any) -> Any:
    """What the writers write for values JSON has no type for (``default=`` of ``json.dumps``):
    pydantic models, dates and paths; anything else is a ``TypeError``."""
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json", exclude_none=False)
    if isinstance(obj, (datetime, date)):
        return obj.isoformat()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"cannot write a {type(obj).__name__} as JSON")


def _to_plain(item: Any) -> Any:
    if isinstance(item, BaseModel):
        return item.model_dump(mode="json", exclude_none=False)
    return item


def dumps_line(item: Any) -> str:
    if not isinstance(item, (BaseModel, Mapping)):
        raise TypeError(f"JSONL rows must be pydantic models or dicts, got {type(item).__name__}")
    plain = _to_plain(item)
    if isinstance(plain, Mapping) and not isinstance(plain, dict):
        plain = dict(plain)
    return dumps_json(plain, allow_nan=False, default=json_default) + "\n"


_umask: int | None = None


def _new_file_mode() -> int:
    global _umask
    if _umask is None:
        _umask = os.umask(0o022)
        os.umask(_umask)
    return 0o666 & ~_umask


def _fsync_directory(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists but belongs to someone else
        return True
    return True


def _remove_stale_temps(target: Path) -> None:
    """Delete temp files a killed writer of ``target`` left behind.

    Temp names carry the writer's pid (``.<name>.<pid>.<random>.tmp``); a temp file whose
    writer is no longer alive can never be renamed into place, so it is removed. Files of
    live writers (another process writing the same file right now) are left alone.
    """
    prefix = f".{target.name}."
    with contextlib.suppress(OSError):
        for entry in os.scandir(target.parent):
            name = entry.name
            if not (name.startswith(prefix) and name.endswith(".tmp")):
                continue
            pid_text = name[len(prefix) :].split(".", 1)[0]
            if pid_text.isdigit() and _pid_alive(int(pid_text)):
                continue
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


def _atomic_write(path: PathLike, write: Callable[[IO[str]], None]) -> None:
    target = Path(path)
    directory = target.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
        mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else _new_file_mode()
        _remove_stale_temps(target)
        fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp")
    except OSError as exc:
        raise UserError(
            f"{path}: cannot write: {exc.strerror or exc}",
            fix="check the directory and its permissions",
        ) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            write(fh)
            fh.flush()
            if hasattr(os, "fchmod"):
                os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp_name, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        if isinstance(exc, OSError):
            raise UserError(
                f"{path}: cannot write: {exc.strerror or exc}",
                fix="check the path and its permissions",
            ) from None
        raise
    _fsync_directory(directory)


def write_jsonl(path: PathLike, items: Iterable[BaseModel | Mapping[str, Any]]) -> int:
    """Atomically write ``items`` (pydantic models or dicts) as JSON Lines; returns the row count.

    >>> import tempfile, pathlib
    >>> from benchsmith.schemas import CheckResult, read_jsonl, write_jsonl
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = pathlib.Path(d, "out.jsonl")
    ...     write_jsonl(p, [CheckResult(name="a", ok=True), {"name": "b", "ok": False}])
    ...     read_jsonl(p, CheckResult)[1]
    2
    CheckResult(name='b', ok=False, reason='', code=None)
    """
    count = 0

    def write(fh: IO[str]) -> None:
        nonlocal count
        for item in items:
            fh.write(dumps_line(item))
            count += 1

    _atomic_write(path, write)
    return count


def append_jsonl(path: PathLike, item: BaseModel | Mapping[str, Any], fsync: bool = True) -> None:
    """Append one row to a JSONL file (created if missing) with a single write, then fsync.

    If the file's last line lacks its newline (an interrupted write), one is added first so
    the new row stays on its own line.
    """
    data = dumps_line(item).encode("utf-8")
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT, _new_file_mode())
    except OSError as exc:
        raise UserError(
            f"{path}: cannot append: {exc.strerror or exc}",
            fix="check the path and its permissions",
        ) from None
    try:
        size = os.fstat(fd).st_size
        if size:
            os.lseek(fd, size - 1, os.SEEK_SET)
            if os.read(fd, 1) != b"\n":
                data = b"\n" + data
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if fsync:
            os.fsync(fd)
    except OSError as exc:
        raise UserError(f"{path}: cannot append: {exc.strerror or exc}", fix="check the disk and permissions") from None
    finally:
        os.close(fd)


def write_json_streamed(
    path: PathLike, head: Mapping[str, Any], key: str, items: Callable[[], Iterable[Mapping[str, Any]]]
) -> None:
    """Atomically write ``{**head, key: [...items()]}`` byte for byte as :func:`write_json` would,
    without holding the list: ``items()`` is called twice (whether every text encodes as UTF-8, which
    decides the escapes of the whole file as in :func:`dumps_json`, then the writing).

    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     a, b = pathlib.Path(d, "a.json"), pathlib.Path(d, "b.json")
    ...     write_json_streamed(a, {"n": 1}, "xs", lambda: ({"x": i} for i in range(2)))
    ...     write_json(b, {"n": 1, "xs": [{"x": 0}, {"x": 1}]})
    ...     a.read_bytes() == b.read_bytes()
    True
    """

    def dumps(obj: Any, ascii_only: bool) -> str:
        return json.dumps(obj, ensure_ascii=ascii_only, indent=2, allow_nan=False, default=json_default)

    def utf8(text: str) -> bool:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True

    ascii_only = not utf8(dumps(dict(head), False)) or not all(utf8(dumps(dict(e), False)) for e in items())

    def write(fh: IO[str]) -> None:
        text = dumps({**head, key: []}, ascii_only)
        entries = iter(items())
        first = next(entries, None)
        if first is None:
            fh.write(text + "\n")
            return
        fh.write(text[: -len("[]\n}")] + "[\n")
        for i, entry in enumerate(itertools.chain([first], entries)):
            body = "\n".join("    " + ln for ln in dumps(dict(entry), ascii_only).split("\n"))
            fh.write((",\n" if i else "") + body)
        fh.write("\n  ]\n}\n")

    _atomic_write(path, write)


def write_json(path: PathLike, obj: Any) -> None:
    """Atomically write ``obj`` (JSON data or a pydantic model) as pretty UTF-8 JSON.

    >>> import tempfile, pathlib
    >>> from benchsmith.schemas import read_json, write_json
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = pathlib.Path(d, "x.json")
    ...     write_json(p, {"name": "café", "n": [1, 2]})
    ...     print(p.read_text(encoding="utf-8"), end="")
    {
      "name": "café",
      "n": [
        1,
        2
      ]
    }
    """
    plain = _to_plain(obj)

    def write(fh: IO[str]) -> None:
        text = dumps_json(plain, indent=2, allow_nan=False, default=json_default)
        fh.write(text)
        fh.write("\n")

    _atomic_write(path, write)
