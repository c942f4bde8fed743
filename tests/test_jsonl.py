"""Tests of the JSON / JSONL readers and atomic writers in benchsmith.schemas."""

from __future__ import annotations

import json
import math
import os
import stat
from datetime import datetime, timezone
from pathlib import Path

import pytest

from benchsmith.schemas import (
    CheckResult,
    JsonlError,
    Provenance,
    RowError,
    Sample,
    UserError,
    append_jsonl,
    iter_jsonl_lenient,
    loads_json,
    read_json,
    read_jsonl,
    write_json,
    write_jsonl,
)

FIXTURES = Path(__file__).parent / "fixtures" / "schemas"
GOOD = '{"name": "c%d", "ok": true}'


def write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_read_jsonl_reads_all_rows_and_skips_blank_lines(tmp_path):
    path = write_lines(tmp_path / "a.jsonl", [GOOD % 1, "", "   ", GOOD % 2])
    rows = read_jsonl(path, CheckResult)
    assert [r.name for r in rows] == ["c1", "c2"]


def test_read_jsonl_reports_every_bad_row_with_line_numbers(tmp_path):
    path = write_lines(
        tmp_path / "five.jsonl",
        [GOOD % 1, '{"name": "c2", "ok": tru', GOOD % 3, '{"name": "c4", "ok": true, "extra": 1}', GOOD % 5],
    )
    with pytest.raises(JsonlError) as info:
        read_jsonl(path, CheckResult)
    err = info.value
    assert isinstance(err, UserError)
    assert [e.line for e in err.errors] == [2, 4]
    assert all(isinstance(e, RowError) for e in err.errors)
    message = str(err)
    assert str(path) in message
    assert f"{path}:2: invalid JSON" in message
    assert f"{path}:4: invalid row: extra: Extra inputs are not permitted" in message
    assert "2 bad row(s) out of 5" in message
    assert "fix:" in message


def test_line_numbers_count_blank_lines(tmp_path):
    path = write_lines(tmp_path / "b.jsonl", ["", GOOD % 1, "", "not json", "[1, 2]", "null"])
    with pytest.raises(JsonlError) as info:
        read_jsonl(path, CheckResult)
    assert [(e.line, e.message.split(":")[0]) for e in info.value.errors] == [
        (4, "invalid JSON"),
        (5, "expected a JSON object, got array"),
        (6, "expected a JSON object, got null"),
    ]


def test_many_bad_rows_are_summarised(tmp_path):
    path = write_lines(tmp_path / "many.jsonl", ["{bad"] * 25)
    with pytest.raises(JsonlError) as info:
        read_jsonl(path, CheckResult)
    assert len(info.value.errors) == 25
    message = str(info.value)
    assert f"{path}:20:" in message
    assert f"{path}:21:" not in message
    assert "... and 5 more" in message


def test_iter_jsonl_lenient_keeps_good_rows(tmp_path):
    path = write_lines(tmp_path / "mixed.jsonl", [GOOD % 1, "{oops", GOOD % 3, '{"ok": true}'])
    good, bad = iter_jsonl_lenient(path, CheckResult)
    assert [(line, row.name) for line, row in good] == [(1, "c1"), (3, "c3")]
    assert [e.line for e in bad] == [2, 4]
    assert "name: Field required" in bad[1].message


def test_sample_validation_error_is_short(tmp_path):
    row = {
        "query": "q",
        "dialogue": [{"role": "user", "content": "q"}],
        "provenance": {"source": "s", "method": "m", "created_at": "2024-01-01T00:00:00Z"},
    }
    path = write_lines(tmp_path / "s.jsonl", [json.dumps(row)])
    _, bad = iter_jsonl_lenient(path, Sample)
    assert len(bad) == 1
    assert "exactly one of query and dialogue" in bad[0].message
    assert "\n" not in bad[0].message and len(bad[0].message) <= 300


@pytest.mark.parametrize("reader", [lambda p: read_jsonl(p, CheckResult), read_json])
def test_missing_file_and_directory_are_user_errors(tmp_path, reader):
    with pytest.raises(UserError, match="no such file") as info:
        reader(tmp_path / "nope.jsonl")
    assert "nope.jsonl" in str(info.value)
    with pytest.raises(UserError, match="is a directory"):
        reader(tmp_path)


def test_unreadable_file_is_user_error(tmp_path, monkeypatch):
    path = write_lines(tmp_path / "locked.jsonl", [GOOD % 1])
    real_open = type(path).open

    def deny(self, *args, **kwargs):
        if self == path:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(type(path), "open", deny)
    with pytest.raises(UserError, match=r"locked\.jsonl: cannot read: Permission denied"):
        read_jsonl(path, CheckResult)
    with pytest.raises(UserError, match="cannot read"):
        read_json(path)


def test_non_utf8_is_user_error_with_line(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes((GOOD % 1).encode() + b"\n" + '{"name": "café", "ok": true}'.encode("latin-1") + b"\n")
    with pytest.raises(UserError, match=r"latin1\.jsonl:2: not UTF-8"):
        read_jsonl(path, CheckResult)
    with pytest.raises(UserError, match=r"latin1\.jsonl:2: not UTF-8"):
        read_json(path)


def test_utf8_bom_and_crlf_are_accepted(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + (GOOD % 1).encode() + b"\r\n" + (GOOD % 2).encode() + b"\r\n")
    assert [r.name for r in read_jsonl(path, CheckResult)] == ["c1", "c2"]


def test_write_then_read_round_trip(tmp_path):
    created = datetime(2024, 1, 1, tzinfo=timezone.utc)
    samples = [
        Sample(query="Ünïcode question?", provenance=Provenance(source="s", method="m", created_at=created)),
        Sample(query="second", provenance=Provenance(source="s", method="m", created_at=created)),
    ]
    path = tmp_path / "samples.jsonl"
    assert write_jsonl(path, samples) == 2
    text = path.read_text(encoding="utf-8")
    assert "Ünïcode" in text  # ensure_ascii=False
    assert text.count("\n") == 2
    assert '"verification": null' in text  # exclude_none=False
    assert read_jsonl(path, Sample) == samples


def test_write_jsonl_accepts_dicts_and_generators(tmp_path):
    path = tmp_path / "d.jsonl"
    write_jsonl(path, ({"name": f"c{i}", "ok": i % 2 == 0} for i in range(3)))
    assert [r.ok for r in read_jsonl(path, CheckResult)] == [True, False, True]


def test_write_jsonl_is_atomic_and_leaves_no_temp_files(tmp_path):
    path = tmp_path / "out.jsonl"
    write_jsonl(path, [CheckResult(name="old", ok=True)])
    write_jsonl(path, [CheckResult(name="new", ok=True)])
    assert os.listdir(tmp_path) == ["out.jsonl"]
    assert [r.name for r in read_jsonl(path, CheckResult)] == ["new"]

    def failing():
        yield CheckResult(name="partial", ok=True)
        raise RuntimeError("generator broke")

    with pytest.raises(RuntimeError, match="generator broke"):
        write_jsonl(path, failing())
    assert os.listdir(tmp_path) == ["out.jsonl"]
    assert [r.name for r in read_jsonl(path, CheckResult)] == ["new"]  # old content intact

    with pytest.raises(TypeError):
        write_jsonl(path, [{"when": object()}])
    with pytest.raises(TypeError):
        write_jsonl(path, ["not a row"])
    assert os.listdir(tmp_path) == ["out.jsonl"]


def test_written_file_has_normal_permissions(tmp_path):
    path = tmp_path / "perm.jsonl"
    write_jsonl(path, [])
    mode = stat.S_IMODE(path.stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask
    path.chmod(0o640)
    write_jsonl(path, [])
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_write_creates_parent_directories(tmp_path):
    path = tmp_path / "a" / "b" / "x.json"
    write_json(path, {"k": 1})
    assert read_json(path) == {"k": 1}


def test_append_jsonl(tmp_path):
    path = tmp_path / "log.jsonl"
    append_jsonl(path, CheckResult(name="a", ok=True))
    append_jsonl(path, {"name": "b", "ok": False}, fsync=False)
    assert [r.name for r in read_jsonl(path, CheckResult)] == ["a", "b"]
    # an interrupted earlier write left no trailing newline: the new row still gets its own line
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"name": "torn"')
    append_jsonl(path, CheckResult(name="c", ok=True))
    good, bad = iter_jsonl_lenient(path, CheckResult)
    assert [row.name for _, row in good] == ["a", "b", "c"]
    assert [e.line for e in bad] == [3]


def test_write_json_is_pretty_utf8_and_atomic(tmp_path):
    path = tmp_path / "m.json"
    write_json(path, {"name": "café", "n": [1]})
    assert path.read_text(encoding="utf-8") == '{\n  "name": "café",\n  "n": [\n    1\n  ]\n}\n'
    write_json(path, CheckResult(name="x", ok=True))
    assert read_json(path) == {"name": "x", "ok": True, "reason": "", "code": None}
    with pytest.raises(ValueError):
        write_json(path, {"bad": float("nan")})
    assert os.listdir(tmp_path) == ["m.json"]


def test_read_json_reports_line_and_column(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{\n  "a": 1,\n  "b": ]\n}\n', encoding="utf-8")
    with pytest.raises(UserError, match=r"bad\.json:3:8: invalid JSON"):
        read_json(path)


JSON_TEXTS = [json.loads(line) for line in open(FIXTURES / "json_texts.jsonl", encoding="utf-8")]


def _same(a, b):
    """Equal values of equal types, float signs and NaNs included (``==`` says 1 == 1.0 and -0.0 == 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    return a == b


@pytest.mark.parametrize("case", JSON_TEXTS, ids=[c["why"] for c in JSON_TEXTS])
def test_loads_json_reads_what_json_loads_reads(case):
    """loads_json parses with pydantic-core first: every text gives json.loads's value, or, where
    json.loads refuses it, a JSONDecodeError."""
    text = case["text"]
    try:
        expected = json.loads(text)
    except (ValueError, RecursionError):
        with pytest.raises(json.JSONDecodeError):
            loads_json(text)
        return
    for given in (text, text.encode("utf-8", "surrogatepass")):
        assert _same(loads_json(given), expected), case["why"]
