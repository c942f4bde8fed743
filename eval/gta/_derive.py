"""GTA cases derived from an NL2API split's verified gold chains (``benchsmith eval derive``): the
query, the gold tool chain in GTA's dialogue layout, and the answer as a whitelist of accepted
forms (docs/eval/derive.md).

>>> _string_aliases("Embraer S.A."), _number_aliases(1069), _number_aliases(2.5)
(['Embraer S.A'], ['1069', '1,069'], ['2.5', '2.50'])
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from benchsmith.construction.variants import (
    answer_text,
    dump_text,
    flatten,
    number_text,
    sample_query,
    sample_setup_note,
    visible_steps,
    with_hint,
)
from benchsmith.eval.derive import REPORT, Outputs, SplitSamples, candidate_tools, derive_report, note_skip
from benchsmith.schemas import (
    ExactAnswer,
    ReferenceAnswer,
    Sample,
    Tool,
    WhitelistAnswer,
)

MAX_ANSWER_VALUES = 30  # answers with more distinct values are skipped (answer_too_long)


# ---- answers -----------------------------------------------------------------------------------


def _string_aliases(s: str) -> list[str]:
    """The string without non-word characters at its ends (so whole-word matching works in both
    GTA modes: ``\\b`` never matches next to a trailing ``.``)."""
    core = re.sub(r"^\W+|\W+$", "", s.strip())
    return [core] if core else []


def _number_aliases(v: int | float) -> list[str]:
    out = [number_text(v)]
    if isinstance(v, float):
        out += [repr(v)] + ([str(int(v))] if v.is_integer() else [f"{v:.2f}"])
    elif abs(v) >= 1000:
        out.append(f"{v:,}")
    return list(dict.fromkeys(out))


def _whitelist(value: Any) -> list[list[str]] | None:
    groups: dict[str, list[str]] = {}
    for cell in flatten(value):
        if cell is None or isinstance(cell, bool):
            continue
        aliases = _number_aliases(cell) if isinstance(cell, (int, float)) else _string_aliases(str(cell))
        if aliases:
            groups.setdefault(aliases[0].casefold(), aliases)
    return list(groups.values()) or None


# ---- GTA ---------------------------------------------------------------------------------------
class GtaDataset:
    """:func:`~benchsmith.eval.gta.write_gta_dataset` one sample at a time (derive and export):
    ``add(sample_id, sample)`` appends the next ``dataset.json`` entry (keys ``"0"``, ``"1"``, ...);
    :meth:`finish` writes ``toolmeta.json`` (first entry of a tool name wins, by name) and
    ``id_map.json`` and returns ``{"files", "id_map"}``. Only the tool metadata (one entry per
    distinct tool name) and the id map stay in memory."""

    def __init__(self, files: Outputs) -> None:
        from ._layout import DATASET

        self.files = files
        self.dataset = files.object(DATASET)
        self.id_map: dict[str, str] = {}
        self.toolmeta: dict[str, Any] = {}

    def add(self, sid: str, sample: dict[str, Any]) -> None:
        from ._layout import toolmeta_entry

        key = str(len(self.id_map))
        self.dataset[key] = sample
        self.id_map[key] = sid
        for tool in sample.get("tools") or []:
            if tool["name"] not in self.toolmeta:
                self.toolmeta[tool["name"]] = toolmeta_entry(tool)

    def __len__(self) -> int:
        return len(self.id_map)

    def finish(self) -> dict[str, Any]:
        from ._layout import DATASET, ID_MAP, TOOLMETA

        self.files.json(TOOLMETA, dict(sorted(self.toolmeta.items())))
        self.files.json(ID_MAP, self.id_map)
        return {"files": [DATASET, ID_MAP, TOOLMETA], "id_map": self.id_map}


def _gta_tool(tool: Tool) -> dict[str, Any]:
    """A tool in GTA's layout: inputs typed as AgentLego types (``gta_input_type``), the category
    the end-to-end F1 counts it under, and the JSON Schema under ``parameters`` (benchsmith's
    prompt uses it; GTA's loader reads only the name, its executor reads ``toolmeta.json``)."""
    from benchsmith.eval.gta import gta_input_type, suggest_category

    props, required = tool.parameters.properties, set(tool.parameters.required)
    inputs = [
        {
            "type": gta_input_type(p),
            "name": n,
            "description": p.get("description"),
            "optional": n not in required,
            "default": p.get("default"),
            "filetype": None,
            **({"enum": p["enum"]} if "enum" in p else {}),
        }
        for n, p in props.items()
    ]
    return {
        "name": tool.name,
        "description": tool.description,
        "category": suggest_category(tool.name),
        "inputs": inputs,
        "outputs": [
            {
                "type": "text",
                "name": None,
                "description": "the result (JSON), kept under the call's label",
                "optional": False,
                "default": None,
                "filetype": None,
            }
        ],
        "parameters": tool.parameters.model_dump(mode="json", exclude_none=True),
    }


def _gta_answer(sample: Sample) -> tuple[Any, str] | str:
    """(gt_answer, gold answer text) or a skip reason."""
    ans = sample.answer
    if isinstance(ans, ExactAnswer):
        wl = _whitelist(ans.value)
        if wl is None:
            return "answer_has_no_matchable_value"
        if len(wl) > MAX_ANSWER_VALUES:
            return "answer_too_long"
        return {"whitelist": wl, "blacklist": None}, f"The answer is: {answer_text(ans.value)}."
    if isinstance(ans, WhitelistAnswer):
        return (
            {"whitelist": ans.whitelist, "blacklist": ans.blacklist or None},
            "The answer is: " + "; ".join(g[0] for g in ans.whitelist) + ".",
        )
    if isinstance(ans, ReferenceAnswer):
        return list(ans.references), ans.references[0]
    return "no_answer"


def derive_gta(split_dir: str | Path, out_dir: str | Path, seed: int = 0) -> dict[str, Any]:
    """Write GTA's ``dataset.json`` (id -> tools, files, dialogs, gt_answer) for every verified
    sample: the user turn (query, hint, the set-up labels), one assistant turn per gold call
    (thought + one tool call) followed by its tool return (labelled), and the final answer turn.
    Ids are ``"0"``, ``"1"``, ... (GTA's loader reads them as integers); ``id_map.json`` and the
    report's ``id_map`` give the sample id of each; ``toolmeta.json`` holds the tools as GTA's
    executor reads them. The gta plug-in then gives a step case per assistant turn (the prefix
    ``dialogs[:i]``) and an end-to-end case per sample. Exact answers become objective whitelists
    (one group per distinct value). Returns the report (also written as ``derive_report.json``).
    Streams: each sample's entry is appended to ``dataset.json`` as it is made."""
    samples = SplitSamples(split_dir)
    skipped: list[dict[str, Any]] = []
    totals = {"steps": 0, "official_ok": 0}
    with Outputs(out_dir) as files:
        dataset = GtaDataset(files)
        for sample in samples:
            _gta_sample(sample, seed, dataset, skipped, totals)
        written = dataset.finish()
        n = len(dataset)
        counts = {"samples": n, "step:tool": totals["steps"], "step:answer": n, "e2e": n}
        report = derive_report(
            "gta",
            samples.root,
            samples.count or 0,
            seed,
            written["files"],
            counts,
            skipped,
            official_whitelist_pass=totals["official_ok"],
            id_map=written["id_map"],
        )
        files.json(REPORT, report)
        files.commit()
    return report


def _gta_sample(
    sample: Sample, seed: int, dataset: GtaDataset, skipped: list[dict[str, Any]], totals: dict[str, int]
) -> None:
    """One sample's ``dataset.json`` entry (or its skip)."""
    from benchsmith.eval.gta import GTA_OFFICIAL, GTA_STRICT, whitelist_pass
    from benchsmith.eval.teval import step_thought

    got = _gta_answer(sample)
    if isinstance(got, str):
        note_skip(skipped, sample, "gta", got)
        return
    gt, content = got
    if isinstance(gt, dict) and not whitelist_pass(content, gt["whitelist"], gt["blacklist"], GTA_STRICT):
        note_skip(skipped, sample, "gta", "answer_not_matchable")
        return
    if not isinstance(gt, dict) or whitelist_pass(content, gt["whitelist"], gt["blacklist"], GTA_OFFICIAL):
        totals["official_ok"] += 1
    tools = {t.name: t for t in sample.tools}
    user = with_hint(sample_query(sample), sample.context)
    note = sample_setup_note(sample)
    dialogs: list[dict[str, Any]] = [{"role": "user", "content": f"{user}\n{note}" if note else user}]
    for i, st in enumerate(visible_steps(sample)):
        call = st.call
        assert call is not None
        dialogs.append(
            {
                "role": "assistant",
                "thought": st.thought or step_thought(call, tools.get(call.name), i),
                "tool_calls": [{"type": "function", "function": {"name": call.name, "arguments": call.arguments}}],
            }
        )
        ret: dict[str, Any] = {
            "role": "tool",
            "name": call.name,
            "content": {"type": "text", "content": dump_text(st.observation)},
        }
        if call.label:
            ret["label"] = call.label
        dialogs.append(ret)
        totals["steps"] += 1
    dialogs.append({"role": "assistant", "thought": "I have the result and can answer now.", "content": content})
    assert sample.id is not None
    dataset.add(
        sample.id,
        {
            "tools": [_gta_tool(t) for t in candidate_tools(sample, seed, "gta")],
            "files": [],
            "dialogs": dialogs,
            "gt_answer": gt,
        },
    )
