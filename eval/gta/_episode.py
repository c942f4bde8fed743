"""GTA end to end on cases derived from a benchsmith split: a solo episode (the query is the one
user message) whose calls really execute with the split's tools on its read-only database, from
the source sample's set-up. GTA's own data has no executable tools here; only derived cases (their
``derive_report.json`` names the source split, ``id_map.json`` the source sample) run end to end.

The prediction is GTA's end-to-end form, ``{"answer": the final reply, "tool_calls": [...]}``
(every call made, in order).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from benchsmith.construction import EnvContext, open_environment
from benchsmith.eval import EvalCase
from benchsmith.eval.episodes import Episode, EpisodeSpec, LabelledEnv
from benchsmith.schemas import Sample, Split, UserError, read_json

STYLES = ("slot", "sel", "rest")


@lru_cache(maxsize=16)
def source_split(root: str) -> Path | None:
    """The split a derived GTA folder came from (None: not derived, or the split is gone)."""
    report = Path(root) / "derive_report.json"
    if not report.is_file():
        return None
    data = read_json(report)
    split = (data.get("source") or {}).get("split") if isinstance(data, dict) else None
    if not isinstance(split, str) or not (Path(split) / "samples.jsonl").is_file():
        return None
    return Path(split).resolve()


@lru_cache(maxsize=16)
def _samples(split: Path) -> dict[str, Sample]:
    return {str(s.id): s for s in Split.open(split).samples()}


def runnable(case: EvalCase) -> bool:
    root, sid = case.meta.get("root"), case.meta.get("source_id")
    split = source_split(str(root)) if root else None
    return split is not None and sid is not None and str(sid) in _samples(split)


def _style(sample: Sample) -> str:
    return next((c for c in STYLES if c in sample.categories), "slot")


def _open_env(split: Path, sample: Sample) -> LabelledEnv:
    env = sample.metadata.get("environment")  # a dialogue on the sandbox keeps its own environment
    descriptor = (
        env
        if isinstance(env, dict) and env.get("kind")
        else {
            "kind": "nl2api",
            "style": _style(sample),
            "split": str(split),
            "setup": [c.model_dump(mode="json", exclude_none=True) for c in sample.setup],
            **({"db_id": sample.metadata["db_id"]} if sample.metadata.get("db_id") else {}),
        }
    )
    return LabelledEnv(open_environment(descriptor, EnvContext(split=split)))


def episode_spec(case: EvalCase, parameters: Any) -> EpisodeSpec:
    split = source_split(str(case.meta.get("root")))
    if split is None:
        raise UserError(
            f"GTA case {case.id}: its source split is gone", fix="derive the GTA cases again from the split"
        )
    sample = _samples(split)[str(case.meta["source_id"])]
    first = next((m.get("content") for m in case.input.get("dialogs") or [] if m.get("role") == "user"), "") or ""
    tools = [
        {"name": t.get("name"), "description": t.get("description") or "", "parameters": parameters(t)}
        for t in case.input.get("tools") or []
        if isinstance(t, dict) and t.get("name")
    ]
    return EpisodeSpec(instruction=str(first), tools=tools, open_env=lambda: _open_env(split, sample), solo=True)


def prediction(case: EvalCase, episode: Episode) -> str:
    answer = ""
    for ev in episode.events:
        if ev["who"] == "assistant" and not ev.get("error") and not ev.get("calls"):
            answer = ev.get("text") or ""
    calls = [{"name": c["name"], "arguments": c["arguments"]} for c in episode.calls]
    return json.dumps(
        {"answer": answer, "tool_calls": calls, "episode": episode.summary()}, ensure_ascii=False, default=str
    )
