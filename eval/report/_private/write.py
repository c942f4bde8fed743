"""``write_report``: report.html (self-contained), report.md, leaderboard.csv and categories.csv."""

from __future__ import annotations

import csv
import html
import io
import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from benchsmith.eval.views import pct
from benchsmith.schemas import RecordResult, UserError

from . import metrics as M
from .about import about
from .load import FEW_CASES, Run, load_run, loads_run_json, task_sort_key

RAW_PREVIEW = 600  # characters of the last raw reply shown in a failure row
TURN_TEXT = 6000  # characters of each turn's raw reply / input shown in the details
EPISODE_TEXT = 600  # characters of an episode event's text
EPISODE_ITEM = 300  # characters of one call, observation or state-diff line of an episode
EPISODE_DIFF = 20  # state-diff lines shown per tool event
EPISODE_EVENTS = 80  # events shown per episode (the first ones and the end)
MD_EPISODES = 5  # failing episodes per run in the Markdown
MD_TEXT = 160  # characters of each item of an episode in the Markdown
ELLIPSIS = "…"
DEFAULT_TITLE = "Tool-use evaluation report"
NO_DATA = "no data"  # a figure with nothing under it, in tables (charts draw it as such too)


# ---- formatting ------------------------------------------------------------------------------------


def integer(v: float | int | None) -> str:
    return "—" if v is None else f"{int(v):,}"


def compact(v: float | int | None) -> str:
    """``1215869 -> '1.22M'``, ``28213 -> '28.2k'``, ``950 -> '950'``."""
    if v is None:
        return "—"
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= size * 0.9995:  # 999,999 is 1M, not 1e+03k
            return f"{v / size:.3g}{suffix}"
    return f"{int(v)}"


def seconds(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f} s"


def figure(metric: str, v: float | None) -> str:
    """Counts as integers, everything else as a percentage."""
    if v is None:
        return "—"
    if metric.split(".")[-1] in ("records", "passed", "ok", "n", "correct", "total", "dialogues"):
        return integer(v)
    return pct(v)


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + ELLIPSIS


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return _text(message)
    content = message.get("content")
    if isinstance(content, list):  # OpenAI content parts
        content = "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    text = _text(content)
    if message.get("tool_calls"):
        text += ("\n" if text else "") + "tool_calls: " + _text(message["tool_calls"])
    return text


# ---- the report model ------------------------------------------------------------------------------
def _labels(runs: Sequence[Run]) -> list[str]:
    """Unique, readable run labels: the model (``model · direct`` for a run of the direct strategy,
    run.json ``strategy``; a run without it is ReAct), then with · mode, then the run id."""
    base = [f"{r.model} · direct" if r.manifest.strategy == "direct" else r.model for r in runs]
    labels = list(base)
    if len(set(labels)) < len(labels):
        labels = [f"{b} · {r.mode}" if r.mode else b for b, r in zip(base, runs)]
    if len(set(labels)) < len(labels):
        labels = [f"{b} · {r.run_id}" for b, r in zip(base, runs)]
    seen: Counter[str] = Counter()
    out = []
    for label in labels:
        seen[label] += 1
        out.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return out


def _keys(runs: Sequence[Run]) -> list[str]:
    seen: Counter[str] = Counter()
    out = []
    for run in runs:
        seen[run.run_id] += 1
        out.append(run.run_id if seen[run.run_id] == 1 else f"{run.run_id}#{seen[run.run_id]}")
    return out


def _union(lists: Iterable[Iterable[str]]) -> list[str]:
    out: list[str] = []
    for items in lists:
        for x in items:
            if x not in out:
                out.append(x)
    return out


def _turns(reply: dict[str, Any] | None) -> list[dict[str, Any]]:
    turns = reply.get("turns") if reply else None
    return [t for t in turns if isinstance(t, dict)] if isinstance(turns, list) else []


def _transcript(reply: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """The episode events of a reply whose result is JSON with a ``transcript`` list, else None."""
    result = reply.get("result") if reply else None
    if not isinstance(result, str) or not result.lstrip().startswith("{"):
        return None
    try:
        obj = loads_run_json(result.encode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return None
    events = obj.get("transcript") if isinstance(obj, dict) else None
    return [e for e in events if isinstance(e, dict)] if isinstance(events, list) else None


def _call_text(call: Any) -> str:
    """``name(key=value, ...)``, values as JSON."""
    if not isinstance(call, dict):
        return _text(call)
    args = call.get("arguments")
    if isinstance(args, dict):
        inner = ", ".join(
            f"{k}={json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)}" for k, v in args.items()
        )
    else:
        inner = _text(args)
    return f"{call.get('name') or '?'}({inner})"


def _observation(ob: Any) -> dict[str, str]:
    if not isinstance(ob, dict):
        return {"name": "", "status": "ok", "code": "", "text": truncate(_text(ob), EPISODE_ITEM)}
    status = str(ob.get("status") or "ok")
    if status == "error":
        code = str(ob.get("code") or "tool_error")
        text = f"{code}: {_text(ob.get('message'))}"
    elif status == "not_run":
        code, text = "", "not run"
    else:
        code, text = "", _text(ob.get("observation"))
    return {"name": str(ob.get("name") or ""), "status": status, "code": code, "text": truncate(text, EPISODE_ITEM)}


def _list_at(obj: Mapping[str, Any], key: str) -> list[Any]:
    """``obj[key]`` when it is a list, else a new empty list."""
    value = obj.get(key)
    return value if isinstance(value, list) else []


def _dict_at(obj: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``obj[key]`` when it is a dict, else a new empty dict."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _event(ev: dict[str, Any]) -> dict[str, Any]:
    calls = _list_at(ev, "calls")
    obs = _list_at(ev, "observations")
    diff = _list_at(ev, "state_diff")
    given = ev.get("error")
    error = given if isinstance(given, dict) else None
    diff_lines = [truncate(_text(x), EPISODE_ITEM) for x in diff[:EPISODE_DIFF]]
    if len(diff) > EPISODE_DIFF:
        diff_lines.append(f"{ELLIPSIS} {len(diff) - EPISODE_DIFF} more")
    return {
        "who": str(ev.get("who") or "?"),
        "text": truncate(_text(ev.get("text")), EPISODE_TEXT),
        "calls": [truncate(_call_text(c), EPISODE_ITEM) for c in calls],
        "observations": [_observation(o) for o in obs],
        "state_diff": diff_lines,
        "error": truncate(f"{error.get('code') or 'error'}: {_text(error.get('message'))}", EPISODE_ITEM)
        if error
        else "",
        "end": str(ev.get("reason") or "") if ev.get("who") == "end" else "",
        "stop": ev.get("stop") is True,
        "skipped": 0,
    }


def _episode(reply: dict[str, Any] | None, record: RecordResult) -> dict[str, Any] | None:
    """The episode viewer of a failing record: its events (the first ones and the end) and a summary line."""
    events = _transcript(reply)
    if events is None:
        return None
    shown = [_event(e) for e in events[: EPISODE_EVENTS - 1]]
    if len(events) > EPISODE_EVENTS:
        shown.append({**_event({}), "who": ELLIPSIS, "skipped": len(events) - EPISODE_EVENTS})
    if len(events) >= EPISODE_EVENTS:
        shown.append(_event(events[-1]))
    details = record.details
    ep = _dict_at(details, "episode")
    parts = [f"end: {ep['end']}" if ep.get("end") else ""]
    for key, name in (
        ("user_turns", "user turns"),
        ("tool_calls", "tool calls"),
        ("failed_calls", "failed calls"),
        ("format_errors", "format errors"),
    ):
        if M.num(ep.get(key)) is not None:
            parts.append(f"{name}: {int(ep[key])}")
    if M.num(details.get("process")) is not None:
        parts.append(f"process: {pct(float(details['process']))}")
    return {"events": shown, "count": len(events), "summary": " · ".join(p for p in parts if p)}


def _failure(task, record: RecordResult) -> dict[str, Any]:  # noqa: ANN001 - a TaskResults
    reply = task.reply(record.id)
    turns = _turns(reply)
    raw = _text(turns[-1].get("raw")) if turns else ""
    shown_turns = []
    for n, t in enumerate(turns, 1):
        messages = _list_at(t, "messages")
        last = messages[-1] if messages else None
        usage = _dict_at(t, "usage")
        shown_turns.append(
            {
                "n": n,
                "shared": bool(t.get("shared")),
                "latency": seconds(M.num(t.get("latency_s"))),
                "tokens": f"{integer(M.num(usage.get('prompt_tokens')))} in / {integer(M.num(usage.get('completion_tokens')))} out"
                if usage
                else "",
                "messages": len(messages),
                "input_role": str(last.get("role", "")) if isinstance(last, dict) else "",
                "input": truncate(_message_text(last), TURN_TEXT) if last is not None else "",
                "raw": truncate(_text(t.get("raw")), TURN_TEXT),
                "tool_calls": truncate(_text(t.get("tool_calls")), TURN_TEXT) if t.get("tool_calls") else "",
                "parsed": truncate(_text(t.get("parsed")), TURN_TEXT)
                if t.get("parsed") not in (None, "", {}, [])
                else "",
            }
        )
    error = reply.get("error") if reply and isinstance(reply.get("error"), dict) else {}
    return {
        "id": record.id,
        "category": record.category,
        "error_type": record.error_type or "failed",
        "reason": record.reason,
        "status": str(reply.get("status")) if reply else "no reply recorded",
        "reply_error": truncate(
            " ".join(
                x for x in (f"({error['type']})" if error.get("type") else "", str(error.get("message") or "")) if x
            ),
            500,
        ),
        "raw_preview": truncate(raw, RAW_PREVIEW) if turns else "",
        "has_reply": reply is not None,
        "turns": shown_turns,
        "episode": _episode(reply, record),
    }


def _episodes_part(runs: Sequence[Run], task: str, bench: str, scored: Sequence[int]) -> dict[str, Any] | None:
    """The "Agent episodes" part of a task's section, from its view's :meth:`ReportView.episodes`;
    None when no run of the task has episodes."""
    blocks = {i: e for i in scored if (e := M.episodes(bench, runs[i].tasks[task].scores))}
    if not blocks:
        return None
    idx = sorted(blocks)
    scopes = [("all", None)] + [(c, c) for c in _union(blocks[i]["per_category"] for i in idx)]
    accuracy = []
    for label, cat in scopes:
        cells = []
        for i in idx:
            if cat is not None and cat not in blocks[i]["per_category"]:
                cells.append({"end_state": "—", "process": "—"})  # the run has no such category
                continue
            v = blocks[i] if cat is None else blocks[i]["per_category"][cat]
            cells.append({k: NO_DATA if v.get(k) is None else pct(v.get(k)) for k in ("end_state", "process")})
        accuracy.append({"scope": label, "cells": cells})
    kinds = sorted(
        _union(blocks[i]["error_types"] for i in idx),
        key=lambda k: (-sum(blocks[i]["error_types"].get(k, 0) for i in idx), k),
    )
    error_rows = [
        {
            "kind": k,
            "cells": [
                _count_cell(blocks[i]["error_types"].get(k, 0), blocks[i].get("episodes") or 0)["text"] for i in idx
            ],
        }
        for k in kinds
    ]
    rel_runs = [i for i in idx if blocks[i]["reliability"]]
    rels = [blocks[i]["reliability"] for i in rel_runs]
    ks = sorted({k for r in rels for k in r["pass^k"]} | {k for r in rels for k in r["pass@k"]})
    pass_rows = [
        {"k": k, "cells": [{"hat": pct(r["pass^k"].get(k)), "at": pct(r["pass@k"].get(k))} for r in rels]} for k in ks
    ]
    rel_notes = []
    for i, r in zip(rel_runs, rels):
        note = (
            f"{integer(r['trials'])} trial{'s' if r['trials'] != 1 else ''} per task over "
            f"{integer(r['tasks'])} task{'s' if r['tasks'] != 1 else ''}"
        )
        if r.get("user_simulator_failures"):
            note += f"; {integer(r['user_simulator_failures'])} trials with a user-simulator failure left out"
        rel_notes.append({"i": i, "text": note})
    return {
        "runs": idx,
        "users": [
            {
                "i": i,
                "text": f"user simulator: {runs[i].user_model or '— (not in run.json)'}",
                "counts": " · ".join(
                    x
                    for x in (
                        f"{integer(blocks[i]['episodes'])} episodes" if blocks[i].get("episodes") is not None else "",
                        f"{integer(blocks[i]['user_simulator_failures'])} user-simulator failures (not charged to the model)"
                        if blocks[i].get("user_simulator_failures")
                        else "",
                    )
                    if x
                ),
            }
            for i in idx
        ],
        "accuracy": accuracy,
        "error_rows": error_rows,
        "rel_runs": rel_runs,
        "pass_rows": pass_rows,
        "rel_notes": rel_notes,
        "curves": [r["pass^k"] for r in rels],
        "chart": any(len(r["pass^k"]) >= 2 for r in rels),
    }


def _date(runs: Sequence[Run]) -> str:
    stamps = [s for r in runs for s in (r.manifest.updated_at, r.manifest.created_at) if s]
    return max(stamps) if stamps else "—"


def build_model(runs: Sequence[Run], title: str | None, failures: int) -> dict[str, Any]:
    """Everything the HTML and Markdown show, as plain data (no markup)."""
    labels, keys = _labels(runs), _keys(runs)
    tasks = sorted(_union(r.tasks for r in runs), key=task_sort_key)
    benchmarks = {t: next(r.tasks[t].benchmark for r in runs if t in r.tasks) for t in tasks}
    summaries = [M.run_summary(r) for r in runs]
    run_rows = [
        {
            "i": i,
            "label": labels[i],
            "key": keys[i],
            "run_id": r.run_id,
            "model": r.model,
            "mode": r.mode,
            "status": r.status,
            "split": r.split,
            "created_at": r.manifest.created_at or "",
            "updated_at": r.manifest.updated_at or "",
            "path": str(r.path),
            "user_model": r.user_model,
            "colour": None,
            "usage": M.run_usage(r),
            "nondeterminism": r.manifest.nondeterminism,
            **summaries[i],
        }
        for i, r in enumerate(runs)
    ]
    from .charts import colour

    for row in run_rows:
        row["colour"] = colour(row["i"])

    # leaderboard: the primary figure of each task
    primaries: dict[str, list[tuple[str, float | None] | None]] = {}
    for t in tasks:
        cells: list[tuple[str, float | None] | None] = []
        for r in runs:
            task = r.tasks.get(t)
            cells.append(M.primary(task.benchmark, task.scores) if task is not None and task.scored else None)
        primaries[t] = cells
    columns = []
    for t in tasks:
        names = _union([[c[0]] for c in primaries[t] if c is not None]) or [M.PRIMARY.get(benchmarks[t], ("",))[0]]
        columns.append(
            {
                "task": t,
                "benchmark": benchmarks[t],
                "metric": names[0],
                "metric_label": M.SHORT_NAMES.get(names[0], names[0]),
            }
        )
    for i, row in enumerate(run_rows):
        row["primary"] = []
        for col in columns:
            task = runs[i].tasks.get(col["task"])
            cell = primaries[col["task"]][i]
            if task is None:
                row["primary"].append({"text": "—", "value": None, "metric": "", "note": "not run", "best": False})
            elif cell is None:
                row["primary"].append(
                    {"text": "not scored", "value": None, "metric": "", "note": "not scored", "best": False}
                )
            else:
                metric, value = cell
                n = task.scored_cases
                if n == 0:
                    value = None  # a figure of no scored case is no result
                notes = [
                    metric if metric != col["metric"] else "",
                    f"only {n} case{'s' if n != 1 else ''}" if task.few_cases and value is not None else "",
                ]
                ci = M.headline_intervals(task.benchmark, task.scores).get(metric) if value is not None else None
                row["primary"].append(
                    {
                        "text": NO_DATA if value is None else pct(value),
                        "value": value,
                        "metric": metric,
                        "note": "; ".join(x for x in notes if x),
                        "best": False,
                        "ci": None if ci is None else f"{pct(ci[0])}–{pct(ci[1])}",
                    }
                )

    if len(runs) > 1:
        for j in range(len(columns)):
            _mark_best([row["primary"][j] for row in run_rows])

    # per-task sections
    sections = []
    for t in tasks:
        bench = benchmarks[t]
        present = [i for i, r in enumerate(runs) if t in r.tasks]
        heads = {i: M.headline(bench, runs[i].tasks[t].scores) for i in present if runs[i].tasks[t].scored}
        head_cis = {i: M.headline_intervals(bench, runs[i].tasks[t].scores) for i in heads}
        metric_names = _union(h.keys() for h in heads.values())
        metric_rows: list[dict[str, Any]] = [
            {
                "metric": m,
                "cells": [
                    figure(m, heads[i].get(m)) if i in heads else ("not scored" if i in present else "—")
                    for i in range(len(runs))
                ],
                "values": [heads[i].get(m) if i in heads else None for i in range(len(runs))],
                "cis": [
                    f"{figure(m, ci[0])}–{figure(m, ci[1])}"
                    if i in head_cis and (ci := head_cis[i].get(m)) is not None and heads[i].get(m) is not None
                    else ""
                    for i in range(len(runs))
                ],
                "note": "",
                "detail": "; ".join(
                    dict.fromkeys(
                        said for i in heads if (said := M.metric_notes(bench, runs[i].tasks[t].scores).get(m))
                    )
                ),
            }
            for m in metric_names
        ]
        metric_rows.extend(M.view(bench).extra_rows(runs, t, heads))
        for row in metric_rows:
            row["best"] = _best_flags(row["values"], row["metric"]) if len(heads) > 1 else None
        cats = {i: M.categories(bench, runs[i].tasks[t].scores, runs[i].tasks[t].records) for i in heads}
        cat_cis = {i: M.category_intervals(bench, runs[i].tasks[t].scores, runs[i].tasks[t].records) for i in heads}
        cat_names = sorted(_union(c.keys() for c in cats.values()))
        chart_metric = M.chart_metric(bench, {k: v for c in cats.values() for k, v in c.items()})
        # None where a category has no data (no figure, or no records): drawn and printed as "no data"
        cat_values = [
            {c: M.category_figure(cats[i][c], chart_metric) for c in cats[i]} if i in cats and chart_metric else {}
            for i in range(len(runs))
        ]
        # errors
        reply_counts = {i: M.reply_status_counts(runs[i].tasks[t]) for i in present}
        scorer_counts = {i: M.scorer_error_counts(runs[i].tasks[t]) for i in present}
        kinds = sorted(
            _union(c.keys() for c in scorer_counts.values()),
            key=lambda k: (-sum(c.get(k, 0) for c in scorer_counts.values()), k),
        )
        n_records = {i: len(runs[i].tasks[t].records) for i in present}
        n_replies = {i: sum(reply_counts[i].values()) for i in present}
        error_rows = []
        for status in ("format_error", "transport_error", "environment_error"):
            if status == "environment_error" and not any(reply_counts[i].get(status) for i in present):
                continue  # only runs with tool environments can have them
            error_rows.append(
                {
                    "kind": f"reply: {status}",
                    "source": "replies",
                    "counts": [
                        _count_cell(reply_counts[i].get(status, 0), n_replies[i]) if i in present else None
                        for i in range(len(runs))
                    ],
                }
            )
        for kind in kinds:
            error_rows.append(
                {
                    "kind": kind,
                    "source": "records",
                    "counts": [
                        _count_cell(scorer_counts[i].get(kind, 0), n_records[i]) if i in heads else None
                        for i in range(len(runs))
                    ],
                }
            )
        samples = M.sample_failures(list(runs), t, failures)
        sections.append(
            {
                "task": t,
                "benchmark": bench,
                "runs": present,
                "scored": [i for i in present if runs[i].tasks[t].scored],
                "not_scored": [i for i in present if not runs[i].tasks[t].scored],
                "metric_rows": metric_rows,
                "categories": cat_names,
                "chart_metric": chart_metric,
                "cat_values": cat_values,
                "cat_table": [
                    {
                        "category": c,
                        "cells": [
                            (
                                "—"
                                if i not in cats
                                else NO_DATA
                                if cat_values[i].get(c) is None
                                else pct(cat_values[i][c])
                            )
                            for i in range(len(runs))
                        ],
                        "cis": [
                            f"{pct(ci[0])}–{pct(ci[1])}"
                            if chart_metric
                            and i in cat_cis
                            and cat_values[i].get(c) is not None
                            and (ci := cat_cis[i].get(c, {}).get(chart_metric)) is not None
                            else ""
                            for i in range(len(runs))
                        ],
                    }
                    for c in cat_names
                ],
                "error_rows": error_rows,
                "error_kinds": kinds,
                "error_counts": [dict(scorer_counts.get(i, {})) for i in range(len(runs))],
                "records": [n_records.get(i, 0) for i in range(len(runs))],
                "failures": {i: [_failure(runs[i].tasks[t], rec) for rec in recs] for i, recs in samples.items()},
                "failing": {i: sum(scorer_counts[i].values()) for i in present},
                "failure_limit": failures,
                "episodes": _episodes_part(runs, t, bench, [i for i in present if runs[i].tasks[t].scored]),
            }
        )

    radar = [M.radar_axes(r) for r in runs]
    radar_axes = _union(a.keys() for a in radar)
    splits = _union([[r.split] for r in runs if r.split])
    warnings = [w for r in runs for w in r.warnings]
    if len(splits) > 1:
        warnings.insert(0, f"the runs were made on {len(splits)} different splits: {', '.join(splits)}")
    models = _union([[r.model] for r in runs])
    return {
        "title": title or DEFAULT_TITLE,
        "about": about(runs, labels, [row["colour"] for row in run_rows]),
        "few_cases": FEW_CASES,
        "date": _date(runs),
        "runs": run_rows,
        "models": models,
        "splits": splits,
        "modes": _union([[r.mode] for r in runs if r.mode]),
        "user_models": any(r.user_model for r in runs),
        "columns": columns,
        "sections": sections,
        "radar_axes": radar_axes,
        "radar": radar,
        "warnings": warnings,
        "failures": failures,
        "primary_doc": {b: " or ".join(v) for b, v in M.PRIMARY.items()},
        "comparisons": M.comparisons(list(runs)) if len(runs) > 1 else [],
        "noise": M.noise(list(runs)),
        "labels_by_path": {str(r.path): labels[i] for i, r in enumerate(runs)},
        "priced": any(row["usage"]["currency"] for row in run_rows),
    }


def _best_flags(values: Sequence[float | None], metric: str = "") -> list[bool] | None:
    """True where a value is the highest of its row (rows of counts get none)."""
    if metric.split(".")[-1] in ("records", "passed", "ok", "n", "correct", "total", "dialogues"):
        return None
    present = [v for v in values if v is not None]
    if len(present) < 2 or max(present) == min(present):
        return None
    return [v is not None and v == max(present) for v in values]


def _mark_best(cells: list[dict[str, Any]]) -> None:
    flags = _best_flags([c["value"] for c in cells]) or [False] * len(cells)
    for cell, flag in zip(cells, flags):
        cell["best"] = flag


def _count_cell(n: int, total: int) -> dict[str, Any]:
    return {"n": n, "total": total, "text": f"{n:,}" + (f" ({n / total * 100:.1f}%)" if total and n else "")}


# ---- charts ------------------------------------------------------------------------------------------
def _charts(model: dict[str, Any]) -> dict[str, Any]:
    from . import charts

    labels = [r["label"] for r in model["runs"]]
    out: dict[str, Any] = {"radar": None, "radar_kind": None, "categories": {}, "errors": {}, "pass_k": {}}
    axes = model["radar_axes"]
    if len(axes) >= 3:
        out["radar"], out["radar_kind"] = charts.radar_chart(labels, axes, model["radar"]), "radar"
    elif axes:
        out["radar"], out["radar_kind"] = charts.bar_chart(labels, axes, model["radar"]), "bars"
    for sec in model["sections"]:
        if len(sec["categories"]) > 1 and sec["chart_metric"] and sec["scored"]:
            idx = sec["scored"]
            out["categories"][sec["task"]] = charts.category_chart(
                [labels[i] for i in idx],
                sec["categories"],
                [sec["cat_values"][i] for i in idx],
                ylabel=sec["chart_metric"].replace("_", " "),
            )
        if sec["error_kinds"] and sec["scored"]:
            idx = sec["scored"]
            out["errors"][sec["task"]] = charts.error_chart(
                [labels[i] for i in idx],
                sec["error_kinds"],
                [sec["error_counts"][i] for i in idx],
                [sec["records"][i] for i in idx],
            )
        eps = sec["episodes"]
        if eps and eps["chart"]:
            out["pass_k"][sec["task"]] = charts.pass_k_chart(
                [labels[i] for i in eps["rel_runs"]],
                eps["curves"],
                [model["runs"][i]["colour"] for i in eps["rel_runs"]],
            )
    return out


# ---- outputs -----------------------------------------------------------------------------------------
def render_html(model: dict[str, Any]) -> str:
    from importlib.resources import files

    import jinja2

    folder = files("benchsmith.eval.report") / "templates"

    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: (folder / name).read_text(encoding="utf-8")),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(pct=pct, seconds=seconds, integer=integer, compact=compact)
    css = (folder / "report.css").read_text(encoding="utf-8")
    return env.get_template("report.html.j2").render(m=model, charts=_charts(model), css=css)


def _md(value: Any) -> str:
    """A Markdown table cell: HTML-escaped, pipes escaped, on one line."""
    return html.escape(str(value), quote=False).replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _md_table(header: Sequence[str], rows: Iterable[Sequence[Any]], right: Sequence[bool]) -> list[str]:
    lines = [
        "| " + " | ".join(_md(h) for h in header) + " |",
        "|" + "|".join("---:" if r else "---" for r in right) + "|",
    ]
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return lines + [""]


def render_markdown(model: dict[str, Any]) -> str:
    runs = model["runs"]
    labels = [r["label"] for r in runs]
    out = [
        f"# {_md(model['title'])}",
        "",
        f"Date: {_md(model['date'])} · runs: {len(runs)} · models: {_md(', '.join(model['models']))}"
        f" · split: {_md(', '.join(model['splits']) or '—')}",
        "",
    ]
    if model["warnings"]:
        out += ["> **Notes**", ">"] + [f"> - {_md(w)}" for w in model["warnings"]] + [""]
    out += _md_about(model)
    out += ["## Leaderboard", ""]
    header = (
        ["run", "model", "mode", "cases"]
        + [f"{c['task']} ({c['metric']})" for c in model["columns"]]
        + ["format errors", "transport errors", "mean latency / call", "tokens in / out"]
    )
    rows = []
    for r in runs:
        rows.append(
            [r["label"], r["model"], r["mode"] or "—", integer(r["cases"])]
            + [c["text"] + (f" ({c['note']})" if c["note"] and c["value"] is not None else "") for c in r["primary"]]
            + [
                pct(r["format_error_rate"]),
                integer(r["transport_errors"]),
                seconds(r["mean_latency_s"]),
                f"{integer(r['prompt_tokens'])} / {integer(r['completion_tokens'])}",
            ]
        )
    out += _md_table(header, rows, [False, False, False] + [True] * (len(header) - 3))
    out += ["Primary figure per task: " + "; ".join(f"{b}: {v}" for b, v in model["primary_doc"].items()) + ".", ""]
    for sec in model["sections"]:
        out += [f"## {_md(sec['task'])} ({_md(sec['benchmark'])})", ""]
        if sec["metric_rows"]:
            out += _md_table(
                ["metric"] + labels,
                ([m["metric"] + (f" ({m['detail']})" if m["detail"] else "")] + m["cells"] for m in sec["metric_rows"]),
                [False] + [True] * len(labels),
            )
        for i in sec["not_scored"]:
            out += [f"*{_md(labels[i])}: not scored — run `benchsmith eval score --run {_md(runs[i]['path'])}`.*", ""]
        if sec["cat_table"]:
            out += [f"### {_md(sec['task'])}: {_md(sec['chart_metric'] or '')} by category", ""]
            out += _md_table(
                ["category"] + labels,
                ([c["category"]] + c["cells"] for c in sec["cat_table"]),
                [False] + [True] * len(labels),
            )
        if sec["episodes"]:
            out += _md_episodes(sec, labels)
        out += [f"### {_md(sec['task'])}: errors", ""]
        out += _md_table(
            ["error"] + labels,
            ([e["kind"]] + [c["text"] if c else "—" for c in e["counts"]] for e in sec["error_rows"]),
            [False] + [True] * len(labels),
        )
        if sec["episodes"]:
            out += _md_failing_episodes(sec, labels)
    return "\n".join(out).rstrip() + "\n"


def _md_about(model: dict[str, Any]) -> list[str]:
    """The "About this run" block: facts as a list (full sha256 values), each task's cases as a table."""
    blocks = model["about"]
    out = [f"## About {'this run' if len(blocks) == 1 else 'these runs'}", ""]
    for a in blocks:
        if len(blocks) > 1:
            out += [f"### {_md(a['label'])}", ""]
        out += [f"- **{_md(f['key'])}**: " + " · ".join(_md(p["full"]) for p in f["parts"]) for f in a["facts"]] + [""]
        out += _md_table(
            ["task", "cases", "answered", "scored cases", "gold passes", "note"],
            (
                [
                    t["task"],
                    t["cases"],
                    t["answered"] + (f" ({t['statuses']})" if t["statuses"] else ""),
                    t["scored_text"],
                    t["gold"],
                    ("few cases: " if t["few"] else "") + t["note"],
                ]
                for t in a["tasks"]
            ),
            [False, True, True, True, True, False],
        )
    out += [
        f"Answered: cases with a final reply; scored cases: the distinct cases of records.jsonl; gold passes: of "
        f"those, how many pass with their gold answer scored as the prediction (the run's own gold self-test). A "
        f'task scored on fewer than {model["few_cases"]} cases is marked "few cases".',
        "",
    ]
    return out


def _md_episodes(sec: dict[str, Any], labels: Sequence[str]) -> list[str]:
    eps = sec["episodes"]
    own = [labels[i] for i in eps["runs"]]
    out = [f"### {_md(sec['task'])}: Agent episodes", ""]
    out += [
        f"- {_md(labels[u['i']])}: {_md(u['text'])}" + (f" ({_md(u['counts'])})" if u["counts"] else "")
        for u in eps["users"]
    ] + [""]
    out += _md_table(
        ["scope"] + [f"{x} {m}" for x in own for m in ("end state", "process")],
        ([a["scope"]] + [v for c in a["cells"] for v in (c["end_state"], c["process"])] for a in eps["accuracy"]),
        [False] + [True] * (2 * len(own)),
    )
    if eps["error_rows"]:
        out += _md_table(
            ["episode error type"] + own,
            ([e["kind"]] + e["cells"] for e in eps["error_rows"]),
            [False] + [True] * len(own),
        )
    if eps["pass_rows"]:
        rel = [labels[i] for i in eps["rel_runs"]]
        out += _md_table(
            ["k"] + [f"{x} {m}" for x in rel for m in ("pass^k", "pass@k")],
            ([str(p["k"])] + [v for c in p["cells"] for v in (c["hat"], c["at"])] for p in eps["pass_rows"]),
            [True] * (1 + 2 * len(rel)),
        )
        out += [f"- {_md(labels[n['i']])}: {_md(n['text'])}" for n in eps["rel_notes"]] + [""]
    return out


def _md_event(ev: dict[str, Any]) -> str:
    if ev["skipped"]:
        return f"- {ELLIPSIS} {ev['skipped']} more events"
    parts = [truncate(ev["text"], MD_TEXT)] if ev["text"] else []
    parts += [f"call {truncate(c, MD_TEXT)}" for c in ev["calls"]]
    parts += [
        f"{o['name']}: " + (o["text"] if o["status"] == "not_run" else f"{o['status']} {truncate(o['text'], MD_TEXT)}")
        for o in ev["observations"]
    ]
    parts += [f"diff {d}" for d in ev["state_diff"]]
    parts += [f"error {ev['error']}"] if ev["error"] else []
    parts += [ev["end"]] if ev["end"] else []
    parts += ["(stop)"] if ev["stop"] else []
    return f"- **{_md(ev['who'])}**: " + _md(" · ".join(parts) or "—")


def _md_failing_episodes(sec: dict[str, Any], labels: Sequence[str]) -> list[str]:
    out: list[str] = []
    for i, fails in sec["failures"].items():
        shown = [f for f in fails if f["episode"]][:MD_EPISODES]
        if not shown:
            continue
        out += [f"### {_md(sec['task'])}: failing episodes of {_md(labels[i])} (up to {MD_EPISODES})", ""]
        for f in shown:
            ep = f["episode"]
            out += [
                f"**{_md(f['id'])}** ({_md(f['error_type'])}){' — ' + _md(ep['summary']) if ep['summary'] else ''}",
                "",
            ]
            out += [_md_event(ev) for ev in ep["events"]] + [""]
    return out


def _csv_value(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return v


def render_leaderboard_csv(model: dict[str, Any]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    fixed = [
        "run",
        "label",
        "model",
        "mode",
        "status",
        "split",
        "created_at",
        "cases",
        "finished",
        "format_errors",
        "format_error_rate",
        "transport_errors",
        "model_calls",
        "mean_latency_s",
        "prompt_tokens",
        "completion_tokens",
    ]
    tasks = [c["task"] for c in model["columns"]]
    w.writerow(fixed + [x for t in tasks for x in (t, f"{t}.metric")])
    for r in model["runs"]:
        row = [
            r["key"],
            r["label"],
            r["model"],
            r["mode"],
            r["status"],
            r["split"],
            r["created_at"],
            r["cases"],
            r["finished"],
            r["format_errors"],
            r["format_error_rate"],
            r["transport_errors"],
            r["model_calls"],
            r["mean_latency_s"],
            r["prompt_tokens"],
            r["completion_tokens"],
        ]
        for cell in r["primary"]:
            row += [cell["value"], cell["metric"]]
        w.writerow([_csv_value(v) for v in row])
    return buf.getvalue()


def render_categories_csv(runs: Sequence[Run], model: dict[str, Any]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["run", "task", "category", "metric", "value"])
    for r, row in zip(runs, model["runs"]):
        for name, task in r.tasks.items():
            if not task.scored:
                continue
            cats = M.categories(task.benchmark, task.scores, task.records)
            for cat in sorted(cats):
                for metric in sorted(cats[cat]):
                    w.writerow([row["key"], name, cat, metric, _csv_value(cats[cat][metric])])
    return buf.getvalue()


def _write_text(path: Path, text: str) -> None:
    """Atomically replace ``path`` with ``text`` (UTF-8, LF newlines)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise UserError(f"{path}: cannot write: {exc.strerror or exc}", fix="choose another --out folder") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_report(
    runs: Sequence[str | Path], out: str | Path, title: str | None = None, failures: int = 20
) -> dict[str, Any]:
    """Compare run folders: writes ``out/report.html`` (one self-contained file), ``out/report.md``,
    ``out/leaderboard.csv`` and ``out/categories.csv``; returns their paths and the notes
    (tasks not scored, unreadable lines). The same inputs give the same bytes."""
    if not runs:
        raise UserError("no run folder given", fix="pass one or more RUN_DIR written by `benchsmith eval run`")
    if failures < 0:
        raise UserError(f"--failures {failures} is negative", fix="pass 0 or more")
    paths = [Path(p) for p in runs]
    resolved = [p.resolve() for p in paths]
    for i, p in enumerate(resolved):
        if p in resolved[:i]:
            raise UserError(f"{paths[i]}: run folder given twice", fix="pass each run folder once")
    loaded = [load_run(p) for p in paths]
    model = build_model(loaded, title, failures)
    out = Path(out)
    files = {
        "html": out / "report.html",
        "markdown": out / "report.md",
        "leaderboard_csv": out / "leaderboard.csv",
        "categories_csv": out / "categories.csv",
    }
    _write_text(files["html"], render_html(model))
    _write_text(files["markdown"], render_markdown(model))
    _write_text(files["leaderboard_csv"], render_leaderboard_csv(model))
    _write_text(files["categories_csv"], render_categories_csv(loaded, model))
    return {
        "out": str(out),
        "files": {k: str(v) for k, v in files.items()},
        "runs": [r["key"] for r in model["runs"]],
        "tasks": [s["task"] for s in model["sections"]],
        "warnings": model["warnings"],
    }
