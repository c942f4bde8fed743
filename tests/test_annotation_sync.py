"""Review sync against a real Label Studio (session fixture) when replies get lost: a reverse proxy
(tests/ls_proxy.py) lets the server import the tasks and then drops the reply, answers 502, or
stalls past the client's timeout; the push must leave exactly one task per item. Duplicates that
exist anyway (made here with the SDK) are reported by `annotate status` and removed by
`annotate push --repair` without losing an annotation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from ls_fixture import label_studio  # noqa: F401 - the session fixture
from ls_proxy import FaultyProxy, import_request

from benchsmith.annotation import LabelStudio, Review, Workspace, result_for
from benchsmith.annotation._private import workflow
from benchsmith.schemas import Sample, write_jsonl

def _samples(folder: Path, n: int) -> list[Sample]:
    now = "2026-01-01T00:00:00Z"
    samples = [Sample(query=f"How warm is it in harbour town {i} today?",
                      provenance={"source": "t", "method": "t", "created_at": now}) for i in range(n)]
    write_jsonl(folder / "samples.jsonl", samples)
    return samples


def _on_server(server, project_id: int) -> Counter:  # noqa: ANN001
    """Tasks per bs_id in the project, counted on the server with the SDK (not through benchsmith)."""
    return Counter(t.data["bs_id"] for t in server.client().tasks.list(project=project_id, page_size=100))


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchsmith.cli", "annotate", *args], env=env, capture_output=True,
                          text=True, timeout=300)


def _env(url: str, token: str, workspace: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHSMITH_", "LABEL_STUDIO_"))}
    env.update(LABEL_STUDIO_URL=url, LABEL_STUDIO_API_KEY=token, BENCHSMITH_ANNOTATION_WORKSPACE=str(workspace))
    return env


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["drop", "502", "stall"])
def test_an_import_whose_reply_is_lost_leaves_one_task_per_item(label_studio, tmp_path: Path,  # noqa: F811
                                                                 monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
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
def test_the_cli_push_through_a_proxy_that_drops_the_import_reply(label_studio, tmp_path: Path) -> None:  # noqa: F811
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
def test_status_reports_duplicates_and_repair_removes_them_keeping_annotations(label_studio,  # noqa: F811
                                                                              tmp_path: Path) -> None:
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

    a2, b2, c2, c3 = copy(a), copy(b), copy(c), copy(c)
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
    assert json.loads(r.stdout)["duplicates"] == [{"project": "review/r1/query", "project_id": pid, "items": 3,
                                                  "extra_tasks": 4}]
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
