"""A benchsmith split written in GTA's own layout (``benchsmith eval export --to gta``;
docs/eval/export.md).

>>> gta_aliases(2.0), gta_aliases(1234), gta_aliases(0.333333)
(['2.0', '2'], ['1234', '1,234'], ['0.333333', '0.33'])
"""

from __future__ import annotations

import copy
import math
import re
import string
from pathlib import Path
from typing import Any

from benchsmith.construction.variants import dump_text
from benchsmith.eval.derive import Outputs
from benchsmith.eval.export import (
    ID_MAP_FILE,
    MAX_ANSWER_CELLS,
    REPORT_FILE,
    ExportReport,
    SkipSample,
    messages_with_notes,
    prepare_sample,
    sample_id,
    split_samples,
)
from benchsmith.schemas import (
    ExactAnswer,
    NoAnswer,
    ReferenceAnswer,
    Sample,
    Tool,
    WhitelistAnswer,
)

_GTA_TYPES = {"string": "text", "integer": "int", "number": "float", "boolean": "bool"}


def gta_tool(tool: Tool) -> dict[str, Any]:
    """A tool in GTA's (AgentLego's) layout; each input keeps its full JSON Schema under ``schema``;
    ``category`` is the one GTA's end-to-end F1 counts it under (GTA's own for its 14 tools)."""
    params = tool.parameters
    inputs = []
    for name, prop in params.properties.items():
        t = prop.get("type")
        entry: dict[str, Any] = {
            "type": _GTA_TYPES.get(t, "text") if isinstance(t, str) else "text",
            "name": name,
            "description": prop.get("description"),
            "optional": name not in params.required,
            "default": prop.get("default"),
            "filetype": None,
        }
        if "enum" in prop:
            entry["enum"] = copy.deepcopy(prop["enum"])
        entry["schema"] = copy.deepcopy(prop)
        inputs.append(entry)
    returns = tool.returns or {}
    outputs = [
        {
            "type": "text",
            "name": None,
            "description": returns.get("description") if isinstance(returns, dict) else None,
            "optional": False,
            "default": None,
            "filetype": None,
        }
    ]
    from ._scorers import suggest_category

    return {
        "name": tool.name,
        "description": tool.description,
        "category": suggest_category(tool.name),
        "inputs": inputs,
        "outputs": outputs,
    }


def gta_aliases(value: Any) -> list[str]:
    """The phrasings of one answer cell: its text; integral floats also without ``.0``; other
    floats also rounded to 2 decimals; integers of 4+ digits also with thousands separators;
    strings also without leading/trailing punctuation."""
    if value is None or isinstance(value, (dict, list)):
        return []
    if isinstance(value, bool):
        return [str(value)]
    if isinstance(value, int):
        out = [str(value)]
        if abs(value) >= 1000:
            out.append(f"{value:,}")
        return out
    if isinstance(value, float):
        if not math.isfinite(value):
            return []
        out = [repr(value)]
        if value.is_integer():
            out.append(str(int(value)))
        else:
            short = f"{value:.2f}"
            if short != out[0] and float(short) != 0.0:
                out.append(short)
        return out
    text = str(value).strip()
    if not text:
        return []
    out = [text]
    bare = text.strip(string.punctuation + " ")
    if bare != text and re.search(r"\w", bare):
        out.append(bare)  # "Google Inc." -> also "Google Inc" (a \b-bounded match needs it)
    return out


def _cells(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [c for v in value for c in _cells(v)]
    if isinstance(value, dict):
        return [c for v in value.values() for c in _cells(v)]
    return [value]


def gta_answer(answer: Any) -> tuple[Any, str]:
    """``(gt_answer, gold answer text)`` for a sample's answer spec (raises ``SkipSample``)."""
    if isinstance(answer, NoAnswer):
        raise SkipSample("no_answer")
    if isinstance(answer, WhitelistAnswer):
        gt = {
            "whitelist": [list(g) for g in answer.whitelist],
            "blacklist": [list(g) for g in answer.blacklist] or None,
        }
        return gt, "; ".join(g[0] for g in answer.whitelist)
    if isinstance(answer, ReferenceAnswer):
        return list(answer.references), answer.references[0]
    assert isinstance(answer, ExactAnswer)
    groups: list[list[str]] = []
    seen: set[str] = set()
    for cell in _cells(answer.value):
        aliases = gta_aliases(cell)
        if not aliases or aliases[0].casefold() in seen:
            continue
        seen.add(aliases[0].casefold())
        groups.append(aliases)
    if not groups:
        raise SkipSample("empty_answer")
    if len(groups) > MAX_ANSWER_CELLS:
        raise SkipSample("answer_too_long", f"{len(groups)} distinct cells")
    return {"whitelist": groups, "blacklist": None}, "The answer is: " + "; ".join(g[0] for g in groups) + "."


def export_gta(split_dir: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Write GTA's ``dataset.json`` (one sample per exported split sample, keyed ``"0"``, ``"1"``,
    ... as GTA's loader needs; ``id_map.json`` gives the sample id of each) and ``toolmeta.json``
    (the tools as GTA's executor reads them). Streams: each sample's entry is appended to
    ``dataset.json`` as it is made."""
    from ._derive import GtaDataset

    samples = split_samples(split_dir)
    rep = ExportReport("gta", samples.root)
    with Outputs(out_dir) as files:
        dataset = GtaDataset(files)
        for i, sample in enumerate(samples):
            _export_sample(i, sample, dataset, rep)
        rep.n_samples = samples.count or 0
        written = dataset.finish()
        rep.id_map = written["id_map"]
        report = rep.report([f for f in written["files"] if f != ID_MAP_FILE])
        report["id_map"] = rep.id_map  # GTA id -> sample id, also in id_map.json
        files.json(REPORT_FILE, report)
        files.commit()
    return report


def _export_sample(i: int, sample: Sample, dataset: Any, rep: ExportReport) -> None:
    try:
        p = prepare_sample(sample, i)
        gt, text = gta_answer(p.sample.answer)
        dialogs: list[dict[str, Any]] = list(messages_with_notes(p, positional=True))
        for k, (call, obs, thought) in enumerate(zip(p.calls, p.observations, p.thoughts), 1):
            tool = p.tools[call.name]
            what = tool.description.split(". ")[0].rstrip(".")
            dialogs.append(
                {
                    "role": "assistant",
                    "thought": thought or f"Step {k}: {call.name} ({what[:1].lower() + what[1:]}).",
                    "tool_calls": [{"type": "function", "function": {"name": call.name, "arguments": call.arguments}}],
                }
            )
            dialogs.append(
                {
                    "role": "tool",
                    "name": call.name,
                    "content": {"type": "text", "content": obs if isinstance(obs, str) else dump_text(obs)},
                }
            )
        final: dict[str, Any] = {"role": "assistant", "content": text}
        if p.final_thought:
            final = {"role": "assistant", "thought": p.final_thought, "content": text}
        dialogs.append(final)
        dataset.add(
            p.sid, {"tools": [gta_tool(t) for t in p.sample.tools], "files": [], "dialogs": dialogs, "gt_answer": gt}
        )
        rep.records["gta"] += 1
    except SkipSample as exc:
        rep.skip(sample_id(sample, i), exc)
