"""Issue 16, streaming ``eval derive`` and the exporters: files written one record at a time are
byte for byte what the list-based writers give, the seeded orders match the list-based algorithm,
an exception or a kill -9 mid-stream leaves the previous output intact, and peak memory stays flat
from a 1x to a 16x split (measured in a subprocess, VmHWM)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import build_slot_split, endpoint_env, pair_lines

from benchsmith.construction.variants import dump_text, visible_steps
from benchsmith.eval import EXPORTERS, derive_all
from benchsmith.eval.derive import Outputs, SplitSamples, load_split, seeded_rng
from benchsmith.schemas import JsonlError, UserError, write_json, write_jsonl

N_PAIRS = 24


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_slot_split(tmp_path_factory.mktemp("stream"), pair_lines()[:N_PAIRS])


@pytest.fixture(scope="module")
def outputs(split: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every deriver's folder (``derived/``) and every exporter's (``export_<format>/``)."""
    root = tmp_path_factory.mktemp("outputs")
    derive_all(split, root / "derived")
    for fmt, export in EXPORTERS.items():
        export(split, root / f"export_{fmt}")
    return root


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones too) and its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8").split("\n")[:-1]  # not splitlines: U+2028 may stand inside a JSON string


def replicate(src: Path, dst: Path, times: int) -> Path:
    """A valid split holding every sample of ``src`` ``times`` times (copies get their own ids; the
    manifest's sample count, samples hash and content hash follow)."""
    import shutil

    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("samples.jsonl", ".*"))
    lines = [ln for ln in (src / "samples.jsonl").read_text(encoding="utf-8").splitlines() if ln.strip()]
    ids = []
    with (dst / "samples.jsonl").open("w", encoding="utf-8") as fh:
        for copy in range(times):
            for line in lines:
                row = json.loads(line)
                if copy:
                    row["id"] = f"{row['id']}-x{copy}"
                ids.append(row["id"])
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    manifest = json.loads((dst / "manifest.json").read_text(encoding="utf-8"))
    manifest["sample_count"] = len(ids)
    manifest["files"]["samples.jsonl"] = "sha256:" + hashlib.sha256((dst / "samples.jsonl").read_bytes()).hexdigest()
    manifest["content_hash"] = "sha256:" + hashlib.sha256("\n".join(sorted(ids)).encode("utf-8")).hexdigest()
    write_json(dst / "manifest.json", manifest)
    return dst


# ---- the writers -------------------------------------------------------------------------------
TRICKY = {
    "plain": {"a": [1, 2.5, None, True], "e": {}, "l": [], "n": -0.0, "big": 1e300},
    "text": 'café \u007f\n\t"quoted" 😀',
    "kéy": [[], {}],
    "surrogate": "x\ud800y",
}


@pytest.mark.parametrize("entries", [{}, {"one": 1}, {k: v for k, v in TRICKY.items() if k != "surrogate"}, TRICKY])
def test_an_object_written_entry_by_entry_is_what_write_json_writes(entries: dict, tmp_path: Path) -> None:
    write_json(tmp_path / "ref.json", entries)
    with Outputs(tmp_path) as files:
        obj = files.object("new.json")
        for k, v in entries.items():
            obj[k] = v
        files.commit()
    assert (tmp_path / "new.json").read_bytes() == (tmp_path / "ref.json").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.json", "ref.json"]


def test_streamed_files_are_what_the_list_writers_write(outputs: Path, tmp_path: Path) -> None:
    """Each derived or exported file, read whole and written again by the list-based writer of
    its kind (``write_json``, ``write_jsonl``, the exporters' JSON Lines), has the same bytes."""
    checked = 0
    for path in sorted(p for p in outputs.rglob("*") if p.is_file()):
        data = path.read_bytes()
        ref = tmp_path / "ref"
        if path.suffix == ".jsonl":
            write_jsonl(ref, [json.loads(line) for line in _lines(data)])
        elif data.startswith(b"{\n") or data == b"{}\n":
            write_json(ref, json.loads(data))
        else:  # the exporters' and ACEBench-special's JSON Lines under a .json name
            rows = [json.loads(line) for line in _lines(data)]
            if "derived" in path.parts:
                write_jsonl(ref, rows)
            else:
                ref.write_text(
                    "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in rows), encoding="utf-8"
                )
        assert ref.read_bytes() == data, path
        checked += 1
    assert checked > 40
    assert not [p for p in outputs.rglob(".*")]  # no temporary file is left


def test_toolassess_orders_match_the_list_based_algorithm(split: Path, outputs: Path) -> None:
    """Awareness records are shuffled as a list of indices and the multi scenarios drawn from
    positions on disk: the same order as shuffling the list of records (the old code)."""
    _, samples = load_split(split)
    folder = outputs / "derived" / "toolassess"
    awareness = [json.loads(x) for x in (folder / "awareness.jsonl").read_text("utf-8").splitlines()]
    # the list the old code shuffled: per sample its requires_tool, no_tool, cannot_complete records
    rank = {"requires_tool": 0, "no_tool": 1, "cannot_complete": 2}
    position = {s.id: n for n, s in enumerate(samples)}
    unshuffled = sorted(
        ({k: v for k, v in r.items() if k != "id"} for r in awareness),
        key=lambda r: (position[r["meta"]["source_sample"]], rank[r["label"]]),
    )
    rng = seeded_rng(0, "toolassess")
    for kinds in (("answer_given", "rephrase", "general"), ("missing_column", "write_action", "missing_table")):
        rng.shuffle([kinds[i % 3] for i in range(len(samples))])  # _balanced: the draws of the variant kinds
    expected = list(unshuffled)
    rng.shuffle(expected)
    assert [{k: v for k, v in r.items() if k != "id"} for r in awareness] == expected
    assert [r["id"] for r in awareness] == [f"awareness-{i:04d}" for i in range(1, len(awareness) + 1)]
    order = [s.id for s in samples]
    rng.shuffle(order)
    multi = [json.loads(x) for x in (folder / "multi.jsonl").read_text("utf-8").splitlines()]
    groups = [m["meta"]["source_samples"] for m in multi if m["kind"] == "awareness"]
    assert [sid for g in groups for sid in g] == order


def test_teval_irrelevant_responses_match_the_list_based_pairing(split: Path, outputs: Path) -> None:
    """The D review pairs a step with another sample's observation (read back from disk by
    position): the one the old in-memory list gives."""
    _, samples = load_split(split)
    all_obs = [(s.id, i, dump_text(st.observation)) for s in samples for i, st in enumerate(visible_steps(s))]
    n = len(all_obs)
    reviews = json.loads((outputs / "derived" / "teval" / "review_str_v2.json").read_text("utf-8"))
    made = 0
    for here, (sid, i, own) in enumerate(all_obs):
        expected = next(
            (
                other
                for shift in range(1, n)
                for other_sid, _, other in [all_obs[(here + shift * 7919) % n]]
                if other_sid != sid and other != own
            ),
            None,
        )
        rec = reviews.get(f"{sid}_{i}_irrelevant")
        assert (rec is None) == (expected is None)
        if rec is not None:
            response = rec["origin_prompt"][1]["content"].split("\nResponse: ", 1)[1]
            assert response == dump_text(json.loads(expected))
            made += 1
    assert made == n


# ---- errors mid-stream -------------------------------------------------------------------------
def _raise_at(k: int, real):
    calls = {"n": 0}

    def fn(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == k:
            raise RuntimeError("boom mid-stream")
        return real(*args, **kwargs)

    return fn


def test_an_exception_mid_stream_leaves_the_previous_derived_folder(
    split: Path, outputs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import benchsmith.eval.gta._derive as gta_derive
    import benchsmith.eval.toolassess._derive as ta_derive

    out = tmp_path / "derived"
    derive_all(split, out)
    before = _tree(out)
    assert before == _tree(outputs / "derived")
    # the last deriver fails at its 5th sample: the others have finished by then
    monkeypatch.setattr(ta_derive, "tools_text", _raise_at(5, ta_derive.tools_text))
    with pytest.raises(RuntimeError, match="boom"):
        derive_all(split, out)
    assert _tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["derived"]
    # a deriver called on its own: its old files stay, no temporary file is left
    monkeypatch.setattr(gta_derive, "_gta_sample", _raise_at(5, gta_derive._gta_sample))
    gta_before = _tree(out / "gta")
    with pytest.raises(RuntimeError, match="boom"):
        gta_derive.derive_gta(split, out / "gta")
    assert _tree(out / "gta") == gta_before and not list((out / "gta").glob(".*"))


@pytest.mark.parametrize("fmt", ["acebench", "bfcl", "gta"])
def test_an_exception_mid_stream_leaves_the_previous_export(
    fmt: str, split: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    module = importlib.import_module(f"benchsmith.eval.{fmt}._export")
    out = tmp_path / "export"
    EXPORTERS[fmt](split, out)
    before = _tree(out)
    monkeypatch.setattr(module, "_export_sample", _raise_at(5, module._export_sample))
    with pytest.raises(RuntimeError, match="boom"):
        EXPORTERS[fmt](split, out)
    assert _tree(out) == before and not [p for p in out.rglob(".*")]


def test_bad_rows_are_listed_as_before_and_nothing_is_replaced(split: Path, tmp_path: Path) -> None:
    bad = replicate(split, tmp_path / "bad", 1)
    lines = (bad / "samples.jsonl").read_text("utf-8").splitlines()
    lines[3], lines[10] = "{oops", '{"id": "x"}'
    (bad / "samples.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "derived"
    derive_all(split, out)
    before = _tree(out)
    with pytest.raises(JsonlError) as err:
        derive_all(bad, out)
    assert [e.line for e in err.value.errors] == [4, 11]
    assert _tree(out) == before
    with pytest.raises(JsonlError):
        list(SplitSamples(bad))
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "samples.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(UserError, match="no verified sample"):
        derive_all(empty, tmp_path / "nothing")
    assert not (tmp_path / "nothing").exists()


def test_teval_refuses_a_sample_id_twice(split: Path, tmp_path: Path) -> None:
    from benchsmith.eval.teval import derive_teval

    twice = replicate(split, tmp_path / "twice", 1)
    first = (twice / "samples.jsonl").read_text("utf-8").splitlines()[0]
    with (twice / "samples.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(first + "\n")
    with pytest.raises(UserError, match="more than once"):
        derive_teval(twice, tmp_path / "t")
    assert not (tmp_path / "t").exists() or not list((tmp_path / "t").iterdir())


KILLED = """
import os, signal, sys
from benchsmith.eval import EXPORTERS, derive_all
import benchsmith.eval.gta._derive as gta_derive

real, seen = gta_derive.GtaDataset.add, [0]
def add(self, *args):  # a kill -9 after the 5th entry of dataset.json is on its way to disk
    real(self, *args)
    seen[0] += 1
    if seen[0] == 5:
        os.kill(os.getpid(), signal.SIGKILL)
gta_derive.GtaDataset.add = add
if sys.argv[1] == "derive":
    derive_all(sys.argv[2], sys.argv[3])
else:
    EXPORTERS["gta"](sys.argv[2], sys.argv[3])
"""


@pytest.mark.parametrize("what", ["derive", "export"])
def test_a_kill_mid_stream_leaves_the_previous_output(what: str, split: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    derive_all(split, out) if what == "derive" else EXPORTERS["gta"](split, out)
    before = _tree(out)
    other = replicate(split, tmp_path / "other", 2)
    proc = subprocess.run(
        [sys.executable, "-c", KILLED, what, str(other), str(out)],
        env=endpoint_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    left = {name for name in _tree(out) if Path(name).name.startswith(".")}  # the killed export's temporary files
    assert {k: v for k, v in _tree(out).items() if k not in left} == before
    assert all(re.fullmatch(r"\..+\.\d+\.tmp", Path(name).name) for name in left), left
    assert bool(left) == (what == "export")  # derive writes into a fresh folder beside ``out``
    again = derive_all(other, out) if what == "derive" else EXPORTERS["gta"](other, out)
    assert again
    assert not [p for p in tmp_path.rglob(".*") if "other" not in p.parts]  # the next run cleaned up


# ---- memory ------------------------------------------------------------------------------------
PEAK = """
import sys
from benchsmith.eval import EXPORTERS, derive_all
split, out = sys.argv[1], sys.argv[2]
derive_all(split, out + "/derived")
for fmt, export in EXPORTERS.items():
    export(split, f"{out}/export_{fmt}")
status = open("/proc/self/status").read()
print(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
def test_peak_memory_stays_flat_from_1x_to_16x(split: Path, tmp_path: Path) -> None:
    """Derive (every deriver) and export (every format) a 1x and a 16x split in a fresh process
    each. The list-based code held every sample and record: its peak grew about 2.5 MB per
    SLOT sample (211 MB at 139 samples, 1,978 MB at 2,224); 16x of this split (384 samples) would
    add several hundred MB."""
    peaks = {}
    for times in (1, 16):
        data = replicate(split, tmp_path / f"x{times}", times)
        proc = subprocess.run(
            [sys.executable, "-c", PEAK, str(data), str(tmp_path / f"out{times}")],
            env=endpoint_env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr
        peaks[times] = int(proc.stdout.split()[-1])  # kB
    assert peaks[16] < peaks[1] * 1.35 + 10_000, peaks
    reports = json.loads((tmp_path / "out16" / "derived" / "derive_report.json").read_text("utf-8"))
    assert reports["derived"]["gta"]["records"]["e2e"] > 300
    assert os.path.getsize(tmp_path / "out16" / "derived" / "teval" / "instruct_v2.json") > 10 * os.path.getsize(
        tmp_path / "out1" / "derived" / "teval" / "instruct_v2.json"
    )


def test_random_shuffle_of_indices_is_the_shuffle_of_the_list() -> None:
    """What the awareness order rests on: ``shuffle`` permutes by length and draws alone."""
    items = [{"n": n} for n in range(50)]
    a, b = random.Random("s"), random.Random("s")
    shuffled = list(items)
    a.shuffle(shuffled)
    idx = list(range(len(items)))
    b.shuffle(idx)
    assert shuffled == [items[i] for i in idx]
