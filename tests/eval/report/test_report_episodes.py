"""``benchsmith report`` on episodic tasks: the "Agent episodes" part (user simulator, end state vs
process, error types, pass^k chart and table) and the episode viewer of failing episodes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchsmith.eval.report import load_run, write_report

USER_MODEL = "sim-user-7b"

TRANSCRIPT = [
    {"who": "user", "text": "Tell Leo thanks, please.", "stop": False},
    {
        "who": "assistant",
        "calls": [
            {"id": "c1", "name": "send_message", "arguments": {"recipient": "room", "text": "thanks"}},
            {"id": "c2", "name": "delete_message", "arguments": {"id": 1}},
        ],
    },
    {
        "who": "tool",
        "observations": [
            {
                "id": "c1",
                "name": "send_message",
                "arguments": {"recipient": "room", "text": "thanks"},
                "status": "error",
                "code": "unknown_contact",
                "message": "'room' is not a contact",
            },
            {"id": "c2", "name": "delete_message", "arguments": {"id": 1}, "status": "not_run"},
        ],
    },
    {"who": "assistant", "calls": [{"id": "c3", "name": "add_contact", "arguments": {"name": "Leo <b>"}}]},
    {
        "who": "tool",
        "observations": [
            {
                "id": "c3",
                "name": "add_contact",
                "arguments": {"name": "Leo <b>"},
                "status": "ok",
                "observation": {"added": "Leo"},
            }
        ],
        "state_diff": ["messaging.contacts.3: (none) -> 'Leo'", "messaging.next_id: 4 -> 5"],
    },
    {"who": "assistant", "text": "Done, I added <script>Leo</script>."},
    {"who": "user", "text": "Thanks, bye.", "stop": True},
    {"who": "end", "reason": "user_stop"},
]


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def _agent_run(
    root: Path, model: str, *, trials: int = 3, user_model: dict | None = None, pass_hat: dict | None = None
) -> Path:
    """A scored `agent` run of two scenarios x ``trials`` trials; case ``a~t0`` fails with the transcript above."""
    run = root / model
    (run / "agent").mkdir(parents=True)
    ids = [f"{base}~t{n}" for base in ("a", "b") for n in range(trials)]
    meta = {
        "format": "benchsmith.run/v1",
        "run_id": f"run-{model}",
        "model": {"name": model, "local": True},
        "mode": "prompt",
        "split": "sandbox",
        "status": "complete",
        "created_at": "2026-11-24T12:00:00Z",
        "tasks": {"agent": {"benchmark": "agent", "cases": len(ids), "prompt_version": "agent/v1"}},
    }
    if user_model is not None:
        meta["user_model"] = user_model
    (run / "run.json").write_text(json.dumps(meta), encoding="utf-8")
    _write_jsonl(
        run / "agent" / "cases.jsonl",
        [
            {
                "id": i,
                "benchmark": "agent",
                "category": "scenario",
                "input": {"instruction": "x"},
                "gold": {},
                "meta": {"trial": int(i[-1]), "base_id": i[0]},
            }
            for i in ids
        ],
    )
    replies = []
    for i in ids:
        transcript = (
            TRANSCRIPT
            if i == "a~t0"
            else [{"who": "user", "text": "hi", "stop": True}, {"who": "end", "reason": "user_stop"}]
        )
        result = json.dumps(
            {"calls": [], "final_state": {}, "episode": {"end": transcript[-1]["reason"]}, "transcript": transcript}
        )
        replies.append(
            {
                "id": i,
                "key": i,
                "model": model,
                "prompt_version": "agent/v1",
                "status": "ok",
                "result": result,
                "error": None,
                "turns": [
                    {
                        "messages": [{"role": "user", "content": "hi"}],
                        "raw": "{}",
                        "tool_calls": [],
                        "parsed": None,
                        "latency_s": 0.5,
                        "usage": {"prompt_tokens": 10, "completion_tokens": 2},
                    }
                ],
            }
        )
    _write_jsonl(run / "agent" / "replies.jsonl", replies)
    _write_jsonl(run / "agent" / "predictions.jsonl", [{"id": r["id"], "result": r["result"]} for r in replies])
    records = []
    for i in ids:
        ok = i != "a~t0"
        episode = {
            "end": "user_stop",
            "user_turns": 2,
            "tool_calls": 2,
            "failed_calls": 1,
            "format_errors": 0,
            "error_type": None if ok else "wrong_argument",
        }
        records.append(
            {
                "id": i,
                "category": "scenario",
                "ok": ok,
                "score": 1.0 if ok else 0.0,
                "error_type": None if ok else "wrong_argument",
                "reason": "" if ok else "messaging.messages: expected 4 item(s), got 3",
                "details": {"process": 1.0 if ok else 0.25, "end_state": ok, "episode": episode},
            }
        )
    _write_jsonl(run / "agent" / "records.jsonl", records)
    pass_hat = pass_hat or {"1": 0.8333, "2": 0.6667, "3": 0.5}
    scores = {
        "benchmark": "agent",
        "mode": "strict",
        "records": len(ids),
        "end_state_accuracy": 0.8333,
        "process_accuracy": 0.875,
        "episodes": len(ids),
        "counted_episodes": len(ids),
        "user_simulator_failures": 0,
        "error_types": {"wrong_argument": 1},
        "end_reasons": {"user_stop": len(ids)},
        "categories": {
            "scenario": {
                "n": len(ids),
                "correct": len(ids) - 1,
                "end_state_accuracy": 0.8333,
                "process_accuracy": 0.875,
            }
        },
    }
    if trials > 1:
        scores["reliability"] = {
            "trials": trials,
            "tasks": 2,
            "pass^k": pass_hat,
            "pass@k": {k: 1.0 for k in pass_hat},
            "tasks_per_k": {k: 2 for k in pass_hat},
            "user_simulator_failures": 0,
        }
    (run / "agent" / "scores.json").write_text(json.dumps(scores), encoding="utf-8")
    return run


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("episodes")
    a = _agent_run(root, "model-a", user_model={"name": USER_MODEL, "local": True})
    b = _agent_run(root, "model-b", user_model="other-sim", pass_hat={"1": 0.75, "2": 0.4, "3": 0.125})
    out = root / "out"
    write_report([a, b], out)
    return (out / "report.html").read_text(encoding="utf-8"), (out / "report.md").read_text(encoding="utf-8")


def _part(html: str) -> str:
    start = html.index("<h3>Agent episodes</h3>")
    return html[start : html.index("<h3>Errors</h3>", start)]


def test_run_exposes_the_user_model(tmp_path):
    assert load_run(_agent_run(tmp_path, "m", user_model={"name": USER_MODEL})).user_model == USER_MODEL
    assert load_run(_agent_run(tmp_path, "n", user_model="plain-name")).user_model == "plain-name"
    assert load_run(_agent_run(tmp_path, "o")).user_model is None


def test_html_says_which_model_played_the_user(report):
    part = _part(report[0])
    assert f"user simulator: {USER_MODEL}" in part and "user simulator: other-sim" in part


def test_html_has_end_state_process_and_error_types(report):
    part = _part(report[0])
    rows = dict(re.findall(r"<tr><td>(all|scenario)</td>(.*?)</tr>", part))
    assert re.findall(r">([\d.]+%)<", rows["all"]) == ["83.3%", "87.5%", "83.3%", "87.5%"]
    assert re.findall(r">([\d.]+%)<", rows["scenario"]) == ["83.3%", "87.5%", "83.3%", "87.5%"]
    assert "episode error type" in part
    assert re.search(r"<td>wrong_argument</td><td class=\"num\">1 \(16\.7%\)</td>", part)


def test_html_has_the_pass_k_chart_and_table(report):
    part = _part(report[0])
    assert part.count("<svg") == 1 and 'class="chart"' in part
    assert "pass^k" in part and "pass@k" in part
    rows = {int(k): cells for k, cells in re.findall(r'<tr><td class="num">(\d)</td>(.*?)</tr>', part)}
    assert sorted(rows) == [1, 2, 3]
    assert re.findall(r">([\d.]+%)<", rows[2]) == ["66.7%", "100.0%", "40.0%", "100.0%"]
    assert re.findall(r">([\d.]+%)<", rows[3]) == ["50.0%", "100.0%", "12.5%", "100.0%"]
    assert "3 trials per task over 2 tasks" in part


def test_html_episode_viewer_shows_the_failing_episode(report):
    html = report[0]
    viewer = html[html.index('<table class="episode">') :]
    viewer = viewer[: viewer.index("</table>")]
    assert viewer.count('<tr class="who-') == len(TRANSCRIPT)
    assert "send_message(recipient=&#34;room&#34;, text=&#34;thanks&#34;)" in viewer
    assert "unknown_contact: &#39;room&#39; is not a contact" in viewer
    assert "delete_message · not run" in viewer
    assert "messaging.contacts.3: (none) -&gt; &#39;Leo&#39;" in viewer and "messaging.next_id: 4 -&gt; 5" in viewer
    assert "end: <b>user_stop</b>" in viewer
    assert "&lt;script&gt;Leo&lt;/script&gt;" in viewer and "<script>Leo" not in html
    assert "end: user_stop · user turns: 2 · tool calls: 2 · failed calls: 1" in html
    assert "<th>user simulator</th>" in html  # the Runs table


def test_markdown_has_the_episode_figures_and_viewer(report):
    md = report[1]
    lines = md.splitlines()
    assert "### agent: Agent episodes" in lines
    assert f"- model-a: user simulator: {USER_MODEL} (6 episodes)" in lines
    assert "| all | 83.3% | 87.5% | 83.3% | 87.5% |" in lines
    assert "| wrong_argument | 1 (16.7%) | 1 (16.7%) |" in lines
    assert "| 2 | 66.7% | 100.0% | 40.0% | 100.0% |" in lines
    assert "- **tool**: send_message: error unknown_contact: 'room' is not a contact · delete_message: not run" in lines
    assert any(line.startswith('- **assistant**: call send_message(recipient="room", text="thanks")') for line in lines)
    assert (
        '- **tool**: add_contact: ok {"added": "Leo"} · diff messaging.contacts.3: (none) -&gt; \'Leo\''
        " · diff messaging.next_id: 4 -&gt; 5"
    ) in lines
    assert "- **end**: user_stop" in lines


def test_long_episodes_are_cut(tmp_path):
    run = _agent_run(tmp_path, "m", user_model={"name": USER_MODEL})
    path = run / "agent" / "replies.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    long = (
        [{"who": "user", "text": "x" * 5000}]
        + [{"who": "assistant", "text": f"step {n}"} for n in range(200)]
        + [{"who": "end", "reason": "step_budget"}]
    )
    rows[0]["result"] = json.dumps({"transcript": long})
    _write_jsonl(path, rows)
    write_report([run], tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    viewer = html[html.index('<table class="episode">') :]
    viewer = viewer[: viewer.index("</table>")]
    assert "x" * 600 + "…" in viewer and "x" * 601 not in viewer
    assert "122 more events not shown" in viewer
    assert "end: <b>step_budget</b>" in viewer and "step 199" not in viewer


def test_a_run_without_episodes_has_no_agent_episodes_part(tmp_path):
    run = _agent_run(tmp_path, "m", user_model={"name": USER_MODEL})
    scores = json.loads((run / "agent" / "scores.json").read_text(encoding="utf-8"))
    meta = json.loads((run / "run.json").read_text(encoding="utf-8"))
    meta["tasks"]["agent"]["benchmark"] = "gta"  # the same files read as a benchmark without episodes
    (run / "run.json").write_text(json.dumps(meta), encoding="utf-8")
    (run / "agent" / "scores.json").write_text(json.dumps({**scores, "benchmark": "gta"}), encoding="utf-8")
    write_report([run], tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "Agent episodes" not in html and "Agent episodes" not in md
    assert "pass^k" not in html.replace("pass^1", "").replace("pass^2", "").replace("pass^3", "")


def test_acebench_view_reads_only_its_agent_categories():
    from benchsmith.eval.report._private.metrics import episodes

    assert (
        episodes("acebench", {"categories": {"normal_single_turn_single_function": {"n": 3, "accuracy": 0.5}}}) is None
    )
    scores = {
        "mode": "strict",
        "categories": {
            "normal_single_turn_single_function": {"n": 3, "accuracy": 0.1},
            "agent_multi_turn": {
                "n": 3,
                "accuracy": 1 / 3,
                "end_accuracy": 1 / 3,
                "process_accuracy": 0.5,
                "user_simulator_failures": 1,
                "episode_error_types": {"user_simulator_failure": 1, "gave_up": 2},
            },
            "agent_multi_step": {
                "n": 1,
                "accuracy": 1.0,
                "end_accuracy": 1.0,
                "process_accuracy": 1.0,
                "user_simulator_failures": 0,
            },
        },
        "reliability": {"trials": 2, "tasks": 2, "pass^k": {"1": 0.5, "2": 0.25}, "pass@k": {"1": 0.5, "2": 0.75}},
    }
    e = episodes("acebench", scores)
    assert set(e["per_category"]) == {"agent_multi_turn", "agent_multi_step"}
    assert e["end_state"] == pytest.approx(0.5) and e["process"] == pytest.approx(0.625)
    assert e["error_types"] == {"gave_up": 2, "user_simulator_failure": 1}
    assert e["episodes"] == 5 and e["user_simulator_failures"] == 1
    assert e["reliability"]["pass^k"] == {1: 0.5, 2: 0.25}


def test_pass_k_chart_is_byte_stable_and_escaped():
    from benchsmith.eval.report._private.charts import pass_k_chart

    svg = pass_k_chart(["<m> $x$", "b"], [{1: 0.5, 2: 0.25}, {1: 1.0, 2: 0.8, 3: 0.6}])
    assert svg == pass_k_chart(["<m> $x$", "b"], [{1: 0.5, 2: 0.25}, {1: 1.0, 2: 0.8, 3: 0.6}])
    assert svg.startswith("<svg") and "&lt;m&gt; $x$" in svg and "100%" in svg


def test_report_with_episodes_is_byte_stable(tmp_path):
    run = _agent_run(tmp_path, "m", user_model={"name": USER_MODEL})
    write_report([run], tmp_path / "one")
    write_report([run], tmp_path / "two")
    for name in ("report.html", "report.md"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name


def test_an_acebench_agent_category_without_scored_episodes_is_no_data_not_zero():
    from benchsmith.eval.report import episodes

    scores = {
        "mode": "strict",
        "categories": {
            "agent_multi_turn": {
                "n": 0,
                "accuracy": 0.0,
                "end_accuracy": 0.0,
                "process_accuracy": 0.0,
                "user_simulator_failures": 2,
            },
            "agent_multi_step": {"n": 2, "accuracy": 0.5, "end_accuracy": 0.5, "process_accuracy": 0.75},
        },
    }
    e = episodes("acebench", scores)
    assert e["per_category"]["agent_multi_turn"] == {"end_state": None, "process": None}
    assert e["per_category"]["agent_multi_step"] == {"end_state": 0.5, "process": 0.75}
    assert (e["end_state"], e["process"], e["episodes"]) == (0.5, 0.75, 4)
