"""Review sync against a real Label Studio (session fixture) when replies get lost: a reverse proxy
(tests/ls_proxy.py) lets the server import the tasks and then drops the reply, answers 502, or
stalls past the client's timeout; the push must leave exactly one task per item, and a lost reply
to a project, user or annotation creation must not make a second one. Duplicates that exist
anyway (made here with the SDK) are reported by `annotate status` and removed by
`annotate push --repair` without losing an annotation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest
from ls_proxy import FaultyProxy, annotation_create, first_of_each, import_request, project_create, user_create

from benchsmith.annotation import LabelStudio, Review, Workspace, result_for, simulate
from benchsmith.annotation._private import workflow
from benchsmith.schemas import Sample, write_jsonl

CREATES = {"projects": project_create, "users": user_create, "annotations": annotation_create}


def _samples(folder: Path, n: int) -> list[Sample]:
    now = "2026-01-01T00:00:00Z"
    samples = [
        Sample(
            query=f"How warm is it in harbour town {i} today?",
            provenance={"source": "t", "method": "t", "created_at": now},
        )
        for i in range(n)
    ]
    write_jsonl(folder / "samples.jsonl", samples)
    return samples


def _on_server(server, project_id: int) -> Counter:  # noqa: ANN001
    """Tasks per bs_id in the project, counted on the server with the SDK (not through benchsmith)."""
    return Counter(t.data["bs_id"] for t in server.client().tasks.list(project=project_id, page_size=100))


def _project_ids(server) -> set[int]:  # noqa: ANN001
    return {int(p.id) for p in server.client().projects.list(page_size=100)}


def _annotators(server, task_id: int) -> Counter:  # noqa: ANN001
    """Annotations per user on the task, counted on the server with the SDK."""
    return Counter(a.completed_by for a in server.client().annotations.list(id=task_id))


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchsmith.cli", "annotate", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _env(url: str, token: str, workspace: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHSMITH_", "LABEL_STUDIO_"))}
    env.update(LABEL_STUDIO_URL=url, LABEL_STUDIO_API_KEY=token, BENCHSMITH_ANNOTATION_WORKSPACE=str(workspace))
    return env


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["drop", "502", "stall"])
def test_an_import_whose_reply_is_lost_leaves_one_task_per_item(
    label_studio,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fault: str,
) -> None:
    samples = _samples(tmp_path, 25)
    ws = Workspace(tmp_path / "ws")
    ws.load(tmp_path / "samples.jsonl")
    monkeypatch.setattr(workflow, "BATCH", 10)  # three imports; the first one's reply is lost
    with FaultyProxy(label_studio.base_url, match=import_request, fault=fault, stall=8.0) as proxy:
        report = ws.push(LabelStudio(proxy.url, label_studio.token, timeout=3.0, backoff=0.05), "review")
    assert len(proxy.faults) == 1  # the server imported the batch and its reply was lost
    (pid,) = report.projects.values()
    assert _on_server(label_studio, pid) == {s.id: 1 for s in samples}  # every item once, none twice
    assert (report.pushed, report.already_there) == (25, 0)
    ls = LabelStudio(label_studio.base_url, label_studio.token)
    held = {t.id for t in ls.tasks(pid)}
    assert set(ws.store.task_ids(pid).values()) == held and len(held) == 25  # the recorded ids are the server's
    assert (lambda r: (r.pushed, r.already_there))(ws.push(ls, "review")) == (0, 0)
    assert ws.duplicates(ls) == []


@pytest.mark.slow
def test_the_cli_push_through_a_proxy_that_drops_the_import_reply(label_studio, tmp_path: Path) -> None:
    samples = _samples(tmp_path, 12)
    with FaultyProxy(label_studio.base_url, match=import_request, fault="drop") as proxy:
        env = _env(proxy.url, label_studio.token, tmp_path / "ws")
        r = _run(["push", "--split", str(tmp_path / "samples.jsonl")], env)
    assert r.returncode == 0, r.stderr
    assert len(proxy.faults) == 1 and "12 tasks pushed" in r.stdout
    pid = int(r.stdout.strip().rsplit("=", 1)[1])  # "... projects review/r1/query=PID"
    assert _on_server(label_studio, pid) == {s.id: 1 for s in samples}
    status = _run(["status"], _env(label_studio.base_url, label_studio.token, tmp_path / "ws"))
    assert status.returncode == 0 and status.stderr == ""
    assert json.loads(status.stdout)["duplicates"] == []


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["drop", "502"])
@pytest.mark.parametrize("what", list(CREATES))
def test_a_create_whose_reply_is_lost_is_not_made_twice(
    label_studio,
    tmp_path: Path,
    what: str,
    fault: str,
) -> None:
    """Both stages through the proxy, the first two creations of a kind lose their reply: one project per
    stage/round/kind, one user per simulated reviewer and one annotation per reviewer per task remain."""
    samples = _samples(tmp_path, 3)
    ws = Workspace(tmp_path / "ws")
    ws.load(tmp_path / "samples.jsonl")
    tag = uuid.uuid4().hex[:8]  # users are the server's, shared by every test: names of this test's own
    reviewers, adjudicator = (f"lost-{tag}-1", f"lost-{tag}-2"), f"lost-{tag}-adj"
    split = samples[0].id  # the reviewers disagree on it: it goes to adjudication

    def policy(stage: str, reviewer: int, item: dict) -> dict:
        if stage == "review" and reviewer == 2 and item["sample_id"] == split:
            return {"decision": "reject", "reasons": ["other"]}
        return {"decision": "accept"}

    before = _project_ids(label_studio)
    with FaultyProxy(label_studio.base_url, match=CREATES[what], fault=fault, times=2) as proxy:
        ls = LabelStudio(proxy.url, label_studio.token, timeout=5.0, backoff=0.05)
        review = ws.push(ls, "review")
        assert simulate(ws, ls, policy, reviewers=reviewers, adjudicator=adjudicator) == {"review": 6, "adjudicate": 0}
        assert ws.pull(ls)["moved"] == {"accepted": 2, "adjudicate": 1}
        adjudicate = ws.push(ls, "adjudicate")
        assert simulate(ws, ls, policy, reviewers=reviewers, adjudicator=adjudicator) == {"review": 0, "adjudicate": 1}
        assert ws.pull(ls)["moved"] == {"accepted": 1}
    assert len(proxy.faults) == 2  # the server made both, and both replies were lost

    made = _project_ids(label_studio) - before
    assert made == {*review.projects.values(), *adjudicate.projects.values()} and len(made) == 2
    users = Counter(u.username for u in label_studio.client().users.list())
    assert {name: users[name] for name in (*reviewers, adjudicator)} == dict.fromkeys((*reviewers, adjudicator), 1)
    uid = {ws.store.users()[u]["username"]: u for u in ws.store.users()}
    (rp,), (ap,) = review.projects.values(), adjudicate.projects.values()
    for sid, tid in ws.store.task_ids(rp).items():
        assert _annotators(label_studio, tid) == {uid[reviewers[0]]: 1, uid[reviewers[1]]: 1}, sid
    assert {sid: _annotators(label_studio, tid) for sid, tid in ws.store.task_ids(ap).items()} == {
        split: {uid[adjudicator]: 1}
    }
    assert {it["status"] for it in ws.store.items()} == {"accepted"}


@pytest.mark.slow
def test_the_cli_push_and_simulate_through_a_proxy_that_drops_creation_replies(
    label_studio,
    tmp_path: Path,
) -> None:
    samples = _samples(tmp_path, 3)
    before = _project_ids(label_studio)
    with FaultyProxy(label_studio.base_url, match=first_of_each(project_create, annotation_create), times=2) as proxy:
        env = _env(proxy.url, label_studio.token, tmp_path / "ws")
        r = _run(["push", "--split", str(tmp_path / "samples.jsonl")], env)
        assert r.returncode == 0, r.stderr
        r = _run(["simulate"], env)
        assert r.returncode == 0, r.stderr
    assert [path.split("/")[2] for _, path in proxy.faults] == ["projects", "tasks"]
    assert "simulated annotations posted: 6 review, 0 adjudicate" in r.stdout, r.stdout
    (pid,) = _project_ids(label_studio) - before
    ws = Workspace(tmp_path / "ws")
    assert set(ws.store.task_ids(pid)) == {s.id for s in samples}
    for tid in ws.store.task_ids(pid).values():
        assert sorted(_annotators(label_studio, tid).values()) == [1, 1]  # two reviewers, one annotation each


@pytest.mark.slow
def test_status_reports_duplicates_and_repair_removes_them_keeping_annotations(
    label_studio,
    tmp_path: Path,
) -> None:
    samples = _samples(tmp_path, 4)
    ws = Workspace(tmp_path / "ws")
    ws.load(tmp_path / "samples.jsonl")
    ls = LabelStudio(label_studio.base_url, label_studio.token)
    (pid,) = ws.push(ls, "review").projects.values()
    a, b, c, d = (s.id for s in samples)
    recorded = ws.store.task_ids(pid)
    client = label_studio.client()

    def copy(sample_id: str) -> int:  # a second task for the item, as a blind retry made them
        data = client.tasks.get(id=recorded[sample_id]).data
        return int(client.projects.import_tasks(id=pid, request=[{"data": data}], return_task_ids=True).task_ids[0])

    a2, b2 = copy(a), copy(b)
    copy(c), copy(c)  # two copies of c, neither annotated
    u1, u2 = ls.ensure_user("dup-reviewer-1"), ls.ensure_user("dup-reviewer-2")
    accept = result_for("query", Review(decision="accept"))
    client.annotations.create(id=a2, result=accept, completed_by=u1)  # only the copy is annotated
    client.annotations.create(id=recorded[b], result=accept, completed_by=u1)  # both copies are annotated
    client.annotations.create(id=b2, result=accept, completed_by=u2)
    client.annotations.create(id=b2, result=accept, completed_by=u1)  # the same answer again: not carried twice
    assert _on_server(label_studio, pid) == {a: 2, b: 2, c: 3, d: 1}

    env = _env(label_studio.base_url, label_studio.token, tmp_path / "ws")
    r = _run(["status"], env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["duplicates"] == [
        {"project": "review/r1/query", "project_id": pid, "items": 3, "extra_tasks": 4}
    ]
    (line,) = r.stderr.strip().splitlines()
    assert f"review/r1/query (project {pid}): 4 extra for 3 items" in line and "push --repair" in line

    r = _run(["push", "--repair"], env)
    assert r.returncode == 0, r.stderr
    assert "repair: 4 duplicate tasks removed (review/r1/query: 4); 1 annotations carried" in r.stdout
    assert "1 items now recorded with another task" in r.stdout and "0 tasks pushed" in r.stdout
    assert _on_server(label_studio, pid) == {a: 1, b: 1, c: 1, d: 1}
    now = ws.store.task_ids(pid)
    assert now == {**recorded, a: a2}  # the annotated copy of a is kept; b, c, d keep the recorded task
    assert [x.completed_by for x in client.annotations.list(id=a2)] == [u1]
    assert sorted(x.completed_by for x in client.annotations.list(id=now[b])) == sorted([u1, u2])

    r = _run(["status"], env)
    assert r.returncode == 0 and json.loads(r.stdout)["duplicates"] == [] and r.stderr == ""
    assert ws.repair(ls).removed == 0  # nothing left to do
    pulled = ws.pull(ls)  # the workspace pulls the annotations from the kept tasks
    assert pulled["new_annotations"] == 3 and pulled["moved"] == {"accepted": 1, "pending": 3}
    assert {it["sample_id"]: it["status"] for it in ws.store.items()}[b] == "accepted"
    assert [x["user"] for x in ws.store.annotations_for(a2)] == [u1]


def test_status_without_a_server_still_answers_and_says_duplicates_were_not_checked(tmp_path: Path) -> None:
    _samples(tmp_path, 3)
    ws = Workspace(tmp_path / "ws")
    ws.load(tmp_path / "samples.jsonl")
    ws.store.add_project("review", 1, "query", 7, "cfg")
    ws.close()
    r = _run(["status"], _env("http://127.0.0.1:9", "not-the-token-42", tmp_path / "ws"))
    assert r.returncode == 0, r.stderr
    status = json.loads(r.stdout)
    assert status["items"] == 3 and status["duplicates"] is None
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("duplicate tasks not checked:") and "127.0.0.1:9" in line and "not-the-token-42" not in line
