"""The multi-stage review workflow over a workspace: load items, push a stage to Label Studio,
pull annotations, advance items by the protocol, and freeze the accepted ones into a split."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from benchsmith.schemas import Sample, Split, UserError, read_jsonl

from .protocol import CorrectionError, apply_correction, decide_adjudication, decide_review
from .store import Store

STAGES = ("review", "adjudicate")
BATCH = 2000


@dataclass
class PushReport:
    stage: str
    projects: dict[str, int]
    pushed: int
    already_there: int


@dataclass
class Duplicates:
    """Tasks of one of the workspace's projects that share a key (item, stage, round)."""

    project: str  # "stage/rN/kind"
    project_id: int
    items: int  # keys held by more than one task
    extra_tasks: int  # tasks beyond one per key


@dataclass
class RepairReport:
    removed: int  # duplicate tasks deleted
    carried: int  # annotations copied onto the task that was kept
    rerecorded: int  # items whose recorded task is now another copy
    projects: dict[str, int]  # "stage/rN/kind" -> tasks removed there


def step_corrections(sample: dict[str, Any], corrections: dict[Any, str]) -> str:
    """A whole-chain correction (JSON ``{"gold": [...]}``) from per-step corrected calls
    (``{step index: '{"name", "arguments"}'}``); a step's correction that is not JSON is left out."""
    import json

    gold = []
    for i, step in enumerate(sample.get("gold") or []):
        call = dict(step.get("call") or {})
        fixed = corrections.get(i, corrections.get(str(i)))
        if fixed:
            try:
                value = json.loads(fixed)
            except ValueError:
                value = None
            if isinstance(value, dict) and isinstance(value.get("name"), str):
                call = {"name": value["name"], "arguments": value.get("arguments") or {}, "label": call.get("label")}
        if call:
            gold.append(call)
    return json.dumps({"gold": gold}, ensure_ascii=False)


class Workspace:
    """``Workspace(folder)``: ``folder/annotation.sqlite`` holds the state; ``folder/source.json``
    names the split the items came from."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.store = Store(self.folder / "annotation.sqlite")

    def close(self) -> None:
        self.store.close()

    # -- loading ------------------------------------------------------------------------------------
    def load(self, source: str | Path, limit: int | None = None) -> int:
        """Register the samples of a split folder / samples JSONL (once; re-loading adds only new ones).
        A workspace may review several sources (an NL2API split and what construction built from it,
        sandbox dialogues, ...): each load adds one; the first split folder loaded is the workspace's
        split (its tools and database go with the finalized split)."""
        from .payloads import sample_kind

        if limit is not None and limit < 1:  # [:0] or [:-1] would quietly load less than asked
            raise UserError(f"limit {limit} is out of range: it must be at least 1", fix="pass --limit 1 or more")
        path = Path(source)
        split = path if path.is_dir() else None
        samples_path = Split.samples_file(path, fix="pass a split folder or a samples JSONL file")
        samples = read_jsonl(samples_path, Sample)[:limit]
        entry = {"samples": str(samples_path.resolve()), "split": str(split.resolve()) if split else None}
        sources = self.sources()
        if entry not in sources:
            self.store.set_meta("sources", [*sources, entry])
        primary = self.store.get_meta("source")
        if not primary or (not primary.get("split") and entry["split"]):
            self.store.set_meta("source", entry)
        return self.store.add_items([(s.id, sample_kind(s), s.model_dump(mode="json")) for s in samples])

    def sources(self) -> list[dict[str, Any]]:
        """Every source loaded, in order (``{"samples": file, "split": folder or None}``)."""
        sources = self.store.get_meta("sources")
        if sources:
            return list(sources)
        primary = self.store.get_meta("source")
        return [primary] if primary else []

    def split_dir(self) -> Path | None:
        src = self.store.get_meta("source") or {}
        return Path(src["split"]) if src.get("split") else None

    # -- model pre-screen -------------------------------------------------------------------------------
    def prescreen(self, models: Any, *, concurrency: int = 4) -> dict[str, Any]:
        """Let the voter models vote on the items waiting for review that have no votes yet (the
        ``vote`` construction graph, resumable, in ``<workspace>/prescreen``); the votes go into the
        items' ``metadata.votes`` and from there into the tasks' pre-annotations."""
        from benchsmith.construction import run_graph
        from benchsmith.schemas import write_jsonl

        waiting = [it for it in self.store.items("review") if not it["sample"].get("metadata", {}).get("votes")]
        if not waiting:
            return {"voted": 0, "model_calls": 0}
        folder = self.folder / "prescreen"
        folder.mkdir(parents=True, exist_ok=True)
        write_jsonl(folder / "items.jsonl", [it["sample"] for it in waiting])
        summary = run_graph("vote", folder / "items.jsonl", folder / "run", models=models, concurrency=concurrency)
        votes = {}
        for s in read_jsonl(folder / "run" / "samples.jsonl", Sample):
            votes[s.id] = s.metadata.get("votes") or []
        for it in waiting:
            if it["sample_id"] in votes:
                sample = dict(it["sample"])
                sample["metadata"] = {**(sample.get("metadata") or {}), "votes": votes[it["sample_id"]]}
                self.store.update_item(
                    it["sample_id"],
                    status=it["status"],
                    round=it["round"],
                    sample=sample,
                    event={
                        "stage": "prescreen",
                        "round": it["round"],
                        "outcome": "voted",
                        "votes": votes[it["sample_id"]],
                    },
                )
        return {"voted": len(votes), "model_calls": summary.model_calls}

    # -- push ---------------------------------------------------------------------------------------
    def push(
        self, ls: Any, stage: str, *, max_rounds: int = 3, progress: Callable[[int], None] | None = None
    ) -> PushReport:
        """Create the stage's projects (one per sample kind and round) and import the items that are
        waiting in ``stage`` and not yet there. Idempotent: tasks already in Label Studio (by their
        key: ``bs_id``, stage, ``bs_round``) are recorded, never imported twice; an import whose reply
        is lost is reconciled by ``ls.import_tasks`` before it is retried, and a project by its title
        (:meth:`project_title`) in ``ls.create_project``."""
        from .configs import label_config
        from .payloads import item_key, task_payload

        if stage not in STAGES:
            raise UserError(f"unknown stage {stage!r}", fix="use review or adjudicate")
        waiting = [it for it in self.store.items(stage)]
        projects: dict[str, int] = {}
        pushed = already = 0
        groups: dict[tuple[int, str], list[dict[str, Any]]] = {}
        for it in waiting:
            groups.setdefault((it["round"], it["kind"]), []).append(it)
        for (rnd, kind), items in sorted(groups.items()):
            config = label_config(kind, stage)
            digest = hashlib.sha256(config.encode()).hexdigest()[:12]
            known = self.store.project(stage, rnd, kind)
            if known is not None and not ls.project_exists(known[0]):
                known = None  # deleted on the server: make it again
            if known is None:
                pid = ls.create_project(
                    self.project_title(stage, rnd, kind),
                    config,
                    maximum_annotations=2 if stage == "review" else 1,
                    description=f"benchsmith {stage} round {rnd} ({kind})",
                )
                self.store.add_project(stage, rnd, kind, pid, digest)
            else:
                pid = known[0]
            projects[f"{stage}/r{rnd}/{kind}"] = pid
            recorded = self.store.task_ids(pid)
            todo = [it for it in items if it["sample_id"] not in recorded]
            if not todo:
                continue
            remote = ls.task_keys(pid, stage, rnd)  # a push interrupted after the import but before we recorded it
            found = {
                it["sample_id"]: remote[key][0]
                for it in todo
                if (key := item_key(it["sample_id"], stage, rnd)) in remote
            }
            if found:
                self.store.add_tasks(stage, rnd, pid, found)
                already += len(found)
            todo = [it for it in todo if it["sample_id"] not in found]
            for i in range(0, len(todo), BATCH):
                batch = todo[i : i + BATCH]
                payloads = [self._payload(it, stage, task_payload) for it in batch]
                ids = ls.import_tasks(pid, payloads, stage=stage, round=rnd)
                self.store.add_tasks(stage, rnd, pid, {it["sample_id"]: tid for it, tid in zip(batch, ids)})
                pushed += len(batch)
                if progress:
                    progress(pushed)
        return PushReport(stage, projects, pushed, already)

    def project_title(self, stage: str, rnd: int, kind: str) -> str:
        """The title of the workspace's project for a stage, round and kind, e.g. ``benchsmith review r1
        query ws-1f0c9a2e``: unique per workspace (a random id made once and kept in the workspace), so
        ``ls.create_project`` can look a project up by its title when the reply that named it was lost.
        At most 50 characters (Label Studio's limit): the name is shortened, never the rest."""
        import secrets

        from .lsclient import TITLE_MAX

        tail = f" {stage} r{rnd} {kind} ws-{self.store.meta_once('workspace_id', secrets.token_hex(4))}"
        return self.store.get_meta("name", "benchsmith")[: max(0, TITLE_MAX - len(tail))] + tail

    def _payload(self, it: dict[str, Any], stage: str, task_payload: Callable[..., dict[str, Any]]) -> dict[str, Any]:
        from benchsmith.construction.checks import DEFAULT_CHECKS, run_checks

        sample = Sample.model_validate(it["sample"])
        report = run_checks(sample, [c for c in DEFAULT_CHECKS if c != "model_vote"], self.check_context(None))
        payload = task_payload(
            sample,
            it["kind"],
            checks=report,
            prescreen=None,
            stage=stage,
            reviews=self._round_reviews(it) if stage == "adjudicate" else (),
        )
        payload["data"]["bs_id"] = it["sample_id"]
        payload["data"]["bs_stage"] = stage  # with bs_id and bs_round: the task's key (payloads.task_key)
        payload["data"]["bs_round"] = it["round"]
        return payload

    def _round_reviews(self, it: dict[str, Any]) -> list[dict[str, Any]]:
        events = [e for e in it["history"] if e.get("stage") == "review" and e.get("round") == it["round"]]
        return events[-1].get("reviews", []) if events else []

    # -- pull + advance -----------------------------------------------------------------------------
    def pull(self, ls: Any, context: Any = None) -> dict[str, Any]:
        """Fetch the annotations of the tasks still open (only those: incremental), store them, and
        advance every item whose stage is complete. Returns counts."""
        from .configs import parse_result

        new = changed = 0
        open_items = {it["sample_id"]: it for it in self.store.items() if it["status"] in STAGES}
        by_project: dict[int, list[int]] = {}
        task_of: dict[int, str] = {}
        for p in self.store.projects():
            for sid, tid in self.store.task_ids(p["project_id"]).items():
                it = open_items.get(sid)
                if it is not None and it["status"] == p["stage"] and it["round"] == p["round"]:
                    by_project.setdefault(p["project_id"], []).append(tid)
                    task_of[tid] = sid
        for pid, tids in by_project.items():
            tasks = ls.annotated_tasks(pid, tids)
            rows = [{**a, "project": pid, "task": t["id"]} for t in tasks for a in t.get("annotations") or []]
            n, c = self.store.upsert_annotations(rows)
            new, changed = new + n, changed + c
        moved = Counter()
        for tid, sid in task_of.items():
            it = open_items[sid]
            anns = [a for a in self.store.annotations_for(tid) if not a["cancelled"]]
            reviews = []
            for a in anns:
                r = parse_result(it["kind"], a["result"])
                reviews.append(
                    {
                        "user": a["user"],
                        "decision": r.decision,
                        "reasons": list(r.reasons),
                        "correction": r.correction,
                        "comment": r.comment,
                        "annotation": a["id"],
                        "step_verdicts": dict(r.step_verdicts),
                        "corrections": dict(r.corrections),
                    }
                )
            moved[self._advance(it, reviews, context)] += 1
        return {"new_annotations": new, "changed_annotations": changed, "moved": dict(moved)}

    def _advance(self, it: dict[str, Any], reviews: list[dict[str, Any]], context: Any) -> str:
        sid, rnd, stage = it["sample_id"], it["round"], it["status"]
        max_rounds = int(self.store.get_meta("max_rounds", 3))
        if stage == "review":
            d = decide_review(reviews)
            if d.outcome == "pending":
                return "pending"
            event = {"stage": "review", "round": rnd, "outcome": d.outcome, "reasons": d.reasons, "reviews": reviews}
            self.store.update_item(
                sid, status=d.outcome if d.outcome != "accepted" else "accepted", round=rnd, event=event
            )
            return d.outcome
        final = dict(reviews[-1]) if reviews else None
        if (
            final
            and final.get("decision") == "fix"
            and not (final.get("correction") or "").strip()
            and final.get("corrections")
        ):
            final["correction"] = step_corrections(it["sample"], final["corrections"])
        d = decide_adjudication(final)
        if d.outcome == "pending":
            return "pending"
        event = {"stage": "adjudicate", "round": rnd, "outcome": d.outcome, "reasons": d.reasons, "reviews": reviews}
        if d.outcome != "revise":
            self.store.update_item(sid, status=d.outcome, round=rnd, event=event)
            return d.outcome
        from .recheck import reexecute

        try:
            revised = apply_correction(it["sample"], d.correction)
        except CorrectionError as exc:
            event.update(outcome="rejected", reasons=[f"bad_correction: {exc}"])
            self.store.update_item(sid, status="rejected", round=rnd, event=event)
            return "rejected"
        fixed, reasons = reexecute(revised, self.check_context(context))
        if fixed is None:
            event.update(outcome="rejected", reasons=reasons)
            self.store.update_item(sid, status="rejected", round=rnd, event=event)
            return "rejected"
        if rnd >= max_rounds:
            event.update(outcome="rejected", reasons=["unresolved_after_max_rounds"])
            self.store.update_item(sid, status="rejected", round=rnd, event=event)
            return "rejected"
        event["revised_id"] = fixed["id"]
        self.store.update_item(sid, status="review", round=rnd + 1, sample=fixed, event=event)
        return "revised"

    def check_context(self, context: Any = None) -> Any:
        """The checks' context for this workspace's items (``context`` when given, else one on the
        split the items came from)."""
        if context is not None:
            return context
        from benchsmith.construction import EnvContext
        from benchsmith.construction.checks import CheckContext

        return CheckContext(env=EnvContext(split=self.split_dir()))

    # -- duplicates on the server ----------------------------------------------------------------------
    def _duplicate_groups(self, ls: Any) -> Iterator[tuple[dict[str, Any], list[list[Any]]]]:
        """Per project of the workspace that still exists: the groups of its tasks sharing a key."""
        for p in self.store.projects():
            if not ls.project_exists(p["project_id"]):
                continue
            groups: dict[str, list[Any]] = {}
            for t in ls.tasks(p["project_id"], p["stage"], p["round"]):
                if t.key is not None:
                    groups.setdefault(t.key, []).append(t)
            dups = [sorted(g, key=lambda t: t.id) for g in groups.values() if len(g) > 1]
            if dups:
                yield p, dups

    def duplicates(self, ls: Any) -> list[Duplicates]:
        """The workspace's projects in which Label Studio holds more than one task for an item."""
        return [
            Duplicates(
                f"{p['stage']}/r{p['round']}/{p['kind']}", p["project_id"], len(dups), sum(len(g) - 1 for g in dups)
            )
            for p, dups in self._duplicate_groups(ls)
        ]

    def repair(self, ls: Any) -> RepairReport:
        """Remove duplicate tasks, keeping every annotation. Per item the kept task is one with
        annotations (the recorded one among them if it has any, else the one with the most), else the
        recorded one; annotations of the other copies are copied onto it (an identical annotation by
        the same user already there is not copied again); then the copies are deleted. The workspace
        records the kept task before anything is deleted, so a repair that dies half-way is finished
        by running it again."""
        report = RepairReport(0, 0, 0, {})
        for p, groups in self._duplicate_groups(ls):
            pid, name = p["project_id"], f"{p['stage']}/r{p['round']}/{p['kind']}"
            recorded = self.store.task_ids(pid)
            for group in groups:
                sample_id = str(group[0].data["bs_id"])
                mine = recorded.get(sample_id)
                pool = [t for t in group if t.annotations] or group
                keep = max(pool, key=lambda t: (t.id == mine, t.annotations, -t.id))
                others = [t for t in group if t.id != keep.id]
                if mine is not None and mine != keep.id:
                    self.store.add_tasks(p["stage"], p["round"], pid, {sample_id: keep.id})
                    report.rerecorded += 1
                if any(t.annotations for t in others):
                    held = ls.task_annotations(keep.id)
                    seen = {_same(a) for a in held}
                    copied = {a.get("import_id") for a in held}
                    for t in others:
                        for a in ls.task_annotations(t.id) if t.annotations else []:
                            if a["id"] in copied or _same(a) in seen:
                                continue
                            ls.copy_annotation(a, keep.id)
                            seen.add(_same(a))
                            report.carried += 1
                for t in others:
                    ls.delete_task(t.id)
                self.store.forget_annotations([t.id for t in others])
                report.removed += len(others)
                report.projects[name] = report.projects.get(name, 0) + len(others)
        return report

    # -- status --------------------------------------------------------------------------------------------
    def status(self, ls: Any = None) -> dict[str, Any]:
        """Items per status and round, and the projects; with ``ls`` also the duplicate tasks found on
        the server (:meth:`duplicates`)."""
        items = self.store.items()
        by = Counter((it["status"], it["round"]) for it in items)
        out = {
            "items": len(items),
            "by_status": dict(Counter(it["status"] for it in items)),
            "by_status_round": {f"{s}/r{r}": n for (s, r), n in sorted(by.items())},
            "projects": self.store.projects(),
        }
        if ls is not None:
            out["duplicates"] = [asdict(d) for d in self.duplicates(ls)]
        return out


def _same(annotation: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two annotations the same answer: the user, the result and whether it was cancelled."""
    import json

    return (
        annotation.get("completed_by"),
        json.dumps(annotation.get("result") or [], sort_keys=True),
        bool(annotation.get("was_cancelled")),
    )
