"""Streaming NL2API builds: flat memory, kill -9 safety, resume, and exact sample lines."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from helpers import accepted_pair

from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db, default_pairs_path
from benchsmith.schemas import Sample, SampleEncoder, Tool, UserError, content_id, write_jsonl

SPLIT_FILES = ("samples.jsonl", "tools.json", "toolset.json", "report.json", "manifest.json", "database.sqlite")


def _pairs(tmp: Path, copies: int) -> Path:
    rows = [json.loads(line) for line in default_pairs_path().read_text("utf-8").splitlines() if line.strip()]
    path = tmp / f"pairs-{copies}x.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for k in range(copies):
            for r in rows:
                fh.write(json.dumps({**r, "id": f"{r['id']}-{k}"}) + "\n")
    return path


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in SPLIT_FILES}


def _no_times(text: str) -> str:
    return re.sub(r'"(created_at|verified_at)": "[^"]*"', "T", text)


_CHILD = """
import os, signal, sys
from benchsmith.construction.nl2api import BuildOptions, build_split
from benchsmith.schemas import SampleEncoder
db, pairs, out, phase, at = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
seen = [0]
def tick(n=1):
    seen[0] += n
    if seen[0] >= at:
        os.kill(os.getpid(), signal.SIGKILL)
if phase == "write":
    real = SampleEncoder.encode_bytes
    def encode_bytes(self, sample, tools):
        tick()
        return real(self, sample, tools)
    SampleEncoder.encode_bytes = encode_bytes
    build_split(db, pairs, out, BuildOptions())
else:
    build_split(db, pairs, out, BuildOptions(progress=tick))
"""


def _killed_build(db: Path, pairs: Path, out: Path, phase: str, at: int) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(db), str(pairs), str(out), phase, str(at)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -9, proc.stderr[-2000:]


def test_kill_9_mid_stream_leaves_the_previous_split_and_the_rerun_resumes(tmp_path):
    db = chinook_db()
    out = tmp_path / "split"
    build_split(db, default_pairs_path(), out, BuildOptions())
    before = _snapshot(out)
    bigger = _pairs(tmp_path, 3)

    _killed_build(db, bigger, out, "collect", 200)  # killed while converting and verifying
    assert _snapshot(out) == before
    _killed_build(db, bigger, out, "write", 150)  # killed while writing the new samples
    assert _snapshot(out) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".split.")], "the killed swap's folder is left"

    report = build_split(db, bigger, out, BuildOptions())
    assert report["resumed_pairs"] == 3 * 139 and report["verified"] == 3 * 139
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".split.")]  # cleaned up
    fresh = build_split(db, bigger, tmp_path / "clean", BuildOptions())
    assert fresh["resumed_pairs"] == 0
    assert _no_times((out / "samples.jsonl").read_text("utf-8")) == _no_times(
        (tmp_path / "clean" / "samples.jsonl").read_text("utf-8")
    )


def test_a_failed_build_leaves_the_previous_split(tmp_path, monkeypatch):
    db = chinook_db()
    out = tmp_path / "split"
    build_split(db, default_pairs_path(), out, BuildOptions())
    before = _snapshot(out)
    calls = {"n": 0}
    real = SampleEncoder.encode_bytes

    def failing(self, sample, tools):
        calls["n"] += 1
        if calls["n"] == 50:
            raise RuntimeError("disk on fire")
        return real(self, sample, tools)

    monkeypatch.setattr(SampleEncoder, "encode_bytes", failing)
    with pytest.raises(RuntimeError, match="disk on fire"):
        build_split(db, _pairs(tmp_path, 2), out, BuildOptions())
    assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pairs-2x.jsonl", "split"]


def test_a_folder_with_other_files_is_refused_before_any_work(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(UserError, match="notes.txt"):
        build_split(chinook_db(), default_pairs_path(), out, BuildOptions())
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


_MEASURE = """
import resource, sys
from benchsmith.construction.nl2api import BuildOptions, build_split
build_split(sys.argv[1], sys.argv[2], sys.argv[3], BuildOptions())
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


@pytest.mark.slow
def test_peak_memory_does_not_grow_with_the_pairs(tmp_path):
    """The old build held every sample: 1x -> 16x pairs grew its peak RSS by ~85% (89 -> 164 MB)."""
    db = chinook_db()
    peaks = {}
    for copies in (1, 16):
        proc = subprocess.run(
            [sys.executable, "-c", _MEASURE, str(db), str(_pairs(tmp_path, copies)), str(tmp_path / f"out-{copies}")],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        peaks[copies] = int(proc.stdout.split()[-1])
    assert peaks[16] < 1.15 * peaks[1], peaks


# ---- SampleEncoder: byte for byte what write_jsonl writes --------------------------------------------------
def _line(sample: Sample, tmp: Path) -> str:
    write_jsonl(tmp / "one.jsonl", [sample])
    return (tmp / "one.jsonl").read_text("utf-8")


@pytest.mark.parametrize(
    "query",
    [
        "What is 2+2?",
        "tiny 3.4e-05, e-mail 1e-6 and ':1e-6,'",
        'Ünïcødé — 東京 \u2028 "quoted" \\ back',
        "lone " + chr(0xDC80),
    ],
)
def test_the_encoder_gives_write_jsonl_bytes_and_the_content_id(tmp_path, query):
    prov = {"source": "t", "method": "m", "created_at": datetime(2024, 1, 1, tzinfo=timezone.utc)}
    tools = [
        Tool(
            name="b_tool",
            description='Zürich\n"x"',
            parameters={
                "type": "object",
                "properties": {"z": {"type": "number"}, "a": {"type": "string", "enum": ["é", "e"]}},
            },
        ),
        Tool(name="a_tool", description="A."),
    ]
    enc = SampleEncoder()
    lone = "\udc80" in query  # content_id cannot hash lone surrogates: such a sample comes with its id
    for chosen in (tools, tools[:1], [], list(reversed(tools))):
        bare = Sample(
            id="given" if lone else "",
            query=query,
            gold=[
                {
                    "call": {"name": "a_tool", "arguments": {"k": 1.5, "t": 1e-06}},
                    "observation": {"rows": [[None, "ß", 3.4e-05, 2e-7]]},
                }
            ],
            metadata={"n": float("1e300")},
            provenance=prov,
        )
        full = Sample(
            id="given" if lone else None,
            query=query,
            tools=chosen,
            gold=bare.gold,
            metadata=bare.metadata,
            provenance=prov,
        )
        line, sid = enc.encode(bare, chosen)
        assert sid == full.id == ("given" if lone else content_id(full))
        assert line == _line(full, tmp_path)
        assert enc.encode_bytes(bare, chosen) == ((tmp_path / "one.jsonl").read_bytes(), sid)
    given = Sample(id="kept-1", query="q", provenance=prov)
    assert enc.encode(given, tools)[1] == "kept-1"
    with pytest.raises(ValueError, match="unique"):
        enc.encode(Sample(id="", query="q", provenance=prov), [tools[0], tools[0]])


def test_the_encoder_with_a_tool_utf8_cannot_encode(tmp_path):
    prov = {"source": "t", "method": "m", "created_at": datetime(2024, 1, 1, tzinfo=timezone.utc)}
    odd = Tool.model_construct(name="odd", description="lone " + chr(0xD800))  # validation refuses it: built as-is
    plain = Tool(name="plain", description="fine")
    enc = SampleEncoder()
    for _ in range(2):  # the second time from the encoder's memory of the tool list
        with pytest.raises(UnicodeEncodeError):  # no content id can be hashed (Sample itself refuses it)
            enc.encode_bytes(Sample(id="", query="q", provenance=prov), [plain, odd])
        line, sid = enc.encode_bytes(Sample(id="given", query="q", provenance=prov), [plain, odd])
        write_jsonl(tmp_path / "one.jsonl", [Sample(id="given", query="q", tools=[plain, odd], provenance=prov)])
        assert (line, sid) == ((tmp_path / "one.jsonl").read_bytes(), "given")


def test_the_journal_index_reads_records_back_in_any_order(tmp_path):
    from benchsmith.construction.nl2api._private.pairwork import PairJournal
    from benchsmith.schemas import PairRejected

    journal = PairJournal(tmp_path, {"x": 1})
    for line in (5, 2, 9):
        journal.add(
            accepted_pair(line, [[line, b"\x01"]])
            if line != 2
            else PairRejected(line=2, status="rejected", code="empty_result", message="no rows")
        )
    assert journal.get(2).code == "empty_result" and journal.rejected == {2}
    journal.close()
    again = PairJournal(tmp_path, {"x": 1})
    assert sorted(again.done) == [2, 5, 9] and again.get(9).rows == [[9, b"\x01"]] and again.get(5).line == 5
    again.close()
    with open(tmp_path / ".journal.pending.jsonl", "ab") as fh:
        fh.write(b'{"line": 11, "status": "acc')  # a record cut by a kill: that pair runs again
    third = PairJournal(tmp_path, {"x": 1})
    assert 11 not in third.done
    third.add(accepted_pair(11, []))
    third.close()
    assert PairJournal(tmp_path, {"x": 1}).get(11).rows == []
    assert os.path.getsize(tmp_path / ".journal.pending.jsonl") > 0


@pytest.mark.parametrize(
    "value",
    [
        float("nan"),
        float("inf"),
        float("-inf"),
        2**64,
        -(2**63) - 1,
        2**63,
        2**200,
        "x" + chr(0xD800),
        b"\x00\xff",
        -0.0,
        1e16,
        5e-324,
        0.1,
        None,
        "null",
        "\u2028\x7f\x1f",
        True,
        [None, float("nan")],
        {"k": [1.5, None, "é"]},
    ],
)
def test_journal_records_read_back_to_the_same_values(tmp_path, value):
    """The journal writes with orjson, which turns NaN/inf into null and loses ints beyond 64
    bits on reading: every such value must still come back as it was written."""
    import math

    from benchsmith.construction.nl2api._private.pairwork import PairJournal

    def same(a, b):
        if isinstance(a, float) and isinstance(b, float):
            return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
        if isinstance(a, (list, tuple)) and isinstance(b, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        return type(a) is type(b) and a == b

    journal = PairJournal(tmp_path, {"x": 1})
    journal.add(accepted_pair(1, [[value, 1]], [{"v": value}]))
    journal.add(accepted_pair(2, [[value, None]]))  # beside a null
    journal.close()
    again = PairJournal(tmp_path, {"x": 1})
    one, two = again.get(1), again.get(2)
    again.close()
    assert same([[value, 1]], one.rows) and same([{"v": value}], one.observations)
    assert same([[value, None]], two.rows)
