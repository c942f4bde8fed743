"""NL2API end to end with the direct strategy: one model request per case holds the whole call
sequence (outputs named $out_1$, $out_2$, ... in call order), scored like a ReAct run; the CLI's
--strategy / --mode direct, run.json's strategy and the report's labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import build_slot_split, drop_benchsmith_env, one_error_line, pair_lines
from pydantic import ValidationError
from runner_helpers import FakeReply, GoldClient, ScriptedClient, _remap
from typer.testing import CliRunner

from benchsmith.cli import app
from benchsmith.eval import EvalCase, TaskOptions, run_eval, score_run
from benchsmith.eval._private.runner import plan_tasks
from benchsmith.eval.nl2api import NL2APITask
from benchsmith.schemas import read_replies

MODEL = {"name": "scripted"}
DIRECT = TaskOptions(calling="prompt", strategy="direct")


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lines = pair_lines()
    return build_slot_split(tmp_path_factory.mktemp("direct"), lines[:4] + lines[-2:])  # short and long chains


@pytest.fixture(scope="module")
def cases(split: Path, tmp_path_factory: pytest.TempPathFactory) -> list[EvalCase]:
    return plan_tasks(split, tmp_path_factory.mktemp("plan"), ["nl2api"], DIRECT, None, 0)[0].cases


def _gold_calls(case: EvalCase) -> list[dict[str, Any]]:
    """The case's gold calls, their outputs referred to as $out_N$ in call order."""
    calls = case.gold["calls"]
    labels = {c.get("label"): f"out_{i + 1}" for i, c in enumerate(calls) if c.get("label")}
    return [{"name": c["name"], "arguments": _remap(c["arguments"], labels)} for c in calls]


def _case_of(messages: list[dict[str, Any]], by_question: dict[str, EvalCase]) -> EvalCase:
    question = [
        m["content"].split("\n")[0] for m in messages if m["role"] == "user" and m["content"].startswith("Question:")
    ][-1]
    return by_question[question]


class DirectClient(ScriptedClient):
    """Answers a direct request with ``pick(case)``'s calls: ``{"calls": [...]}`` in prompt mode, all
    of them as native tool calls of the one reply in tools mode."""

    def __init__(self, cases: list[EvalCase], pick=_gold_calls) -> None:
        self.by_question = {f"Question: {c.input['query']}": c for c in cases}
        self.pick = pick
        super().__init__(self._answer)

    def _answer(self, messages, json_schema, tools):
        calls = self.pick(_case_of(messages, self.by_question))
        if tools:
            assert json_schema is None
            return FakeReply(
                "",
                tool_calls=[
                    {"id": f"call_{i}", "name": c["name"], "arguments": json.dumps(c["arguments"])}
                    for i, c in enumerate(calls)
                ],
            )
        return json.dumps({"calls": calls})


def _replies(out: Path) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in read_replies(out / "nl2api" / "replies.jsonl").values()]


def test_the_gold_sequence_in_one_reply_scores_full_marks(split: Path, cases: list[EvalCase], tmp_path: Path) -> None:
    out = tmp_path / "run"
    client = DirectClient(cases)
    res = run_eval(split, client, MODEL, out, tasks=["nl2api"], options=DIRECT, progress=False)
    info = res.tasks["nl2api"]
    assert info.status_counts["ok"] == info.cases == len(cases)
    assert client.calls == len(cases)  # one request per case, nothing fed back
    scores = score_run(out)["nl2api"]
    assert scores["completion_rate"] == 1.0 and scores["full_sequence_accuracy"] == 1.0
    assert scores["intent"]["f1"] == 1.0 and scores["slot"]["f1"] == 1.0
    assert json.loads((out / "run.json").read_text())["strategy"] == "direct"
    # the request: the tools, the $out_N$ convention, a schema of whole sequences with one branch per tool
    req = client.requests[0]
    text = "\n".join(m["content"] for m in req["messages"])
    assert "$out_1$" in text and "$out_2$" in text and '{"calls": [' in text
    case = _case_of(req["messages"], client.by_question)
    assert all(f"- {t['name']}:" in text for t in case.input["tools"])
    calls = req["json_schema"]["properties"]["calls"]
    assert calls["type"] == "array" and calls["minItems"] == 1 and calls["maxItems"] == DIRECT.step_budget
    names = [b["properties"]["name"]["const"] for b in calls["items"]["anyOf"]]
    assert names == [t["name"] for t in case.input["tools"]] and "finish" not in names
    # the prediction has ReAct's shape; the trace records every call as run
    for rec in _replies(out):
        pred = json.loads(rec["result"])
        assert [c["label"] for c in pred] == [f"out_{i}" for i in range(1, len(pred) + 1)]
        assert len(rec["turns"]) == 1
        parsed = rec["turns"][0]["parsed"]
        assert parsed["strategy"] == "direct" and all(c["ok"] for c in parsed["calls"])
        assert [c["name"] for c in parsed["calls"]] == [c["name"] for c in pred]
    # a re-run asks nothing again
    again = DirectClient(cases)
    run_eval(split, again, MODEL, out, tasks=["nl2api"], options=DIRECT, progress=False)
    assert again.calls == 0


def test_a_wrong_sequence_scores_lower_and_a_failing_call_does_not_stop_the_trace(
    split: Path, cases: list[EvalCase], tmp_path: Path
) -> None:
    order = [c.id for c in cases]
    by_id = {c.id: c for c in cases}

    def other(case: EvalCase) -> list[dict[str, Any]]:  # the next case's gold: runs, wrong answer
        return _gold_calls(by_id[order[(order.index(case.id) + 1) % len(order)]])

    out = tmp_path / "wrong"
    run_eval(split, DirectClient(cases, other), MODEL, out, tasks=["nl2api"], options=DIRECT, progress=False)
    wrong = score_run(out)["nl2api"]
    assert wrong["completion_rate"] < 1.0 and wrong["full_sequence_accuracy"] < 1.0

    def bogus_first(case: EvalCase) -> list[dict[str, Any]]:  # a call to no tool, then the gold calls
        return [{"name": "no_such_tool", "arguments": {}}] + _gold_calls(case)

    out = tmp_path / "bogus"
    res = run_eval(
        split, DirectClient(cases, bogus_first), MODEL, out, tasks=["nl2api"], options=DIRECT, progress=False
    )
    assert res.tasks["nl2api"].status_counts["ok"] == len(cases)
    bogus = score_run(out)["nl2api"]
    assert bogus["completion_rate"] < 1.0 and bogus["intent"]["f1"] < 1.0
    for rec in _replies(out):
        trace = rec["turns"][0]["parsed"]["calls"]
        assert trace[0]["ok"] is False and trace[0]["error"] == "unknown_tool"
        assert len(trace) == len(json.loads(rec["result"])) == len(by_id[rec["id"]].gold["calls"]) + 1


@pytest.mark.parametrize(
    "garbage",
    [
        "I would filter the tracks first.",
        "",
        "{",
        '{"calls": []}',
        '{"calls": [{"arguments": {}}]}',
        '{"calls": [{"name": "filter_data", "arguments": [1]}]}',
        "null",
    ],
)
def test_an_unreadable_reply_is_a_format_error_with_the_raw_reply_kept(
    split: Path, cases: list[EvalCase], tmp_path: Path, garbage: str
) -> None:
    out = tmp_path / "run"
    client = ScriptedClient(lambda m, s, t: FakeReply(garbage))
    res = run_eval(split, client, MODEL, out, tasks=["nl2api"], options=DIRECT, progress=False)
    assert res.tasks["nl2api"].status_counts["format_error"] == len(cases)
    assert client.calls <= len(cases)  # one shot: no retry (identical requests may share a call)
    for rec in _replies(out):
        assert rec["status"] == "format_error" and rec["result"] == garbage
        assert len(rec["turns"]) == 1 and rec["turns"][0]["raw"] == garbage and rec["error"]["type"]
    recs = (
        [json.loads(x) for x in (out / "nl2api" / "records.jsonl").read_text().splitlines()] if score_run(out) else []
    )
    assert recs and not any(r["ok"] for r in recs)


def test_tools_mode_takes_every_native_call_of_the_one_reply_in_order(
    split: Path, cases: list[EvalCase], tmp_path: Path
) -> None:
    out = tmp_path / "run"
    client = DirectClient(cases)
    opts = TaskOptions(calling="tools", strategy="direct")
    res = run_eval(split, client, MODEL, out, tasks=["nl2api"], calling="tools", options=opts, progress=False)
    assert res.tasks["nl2api"].status_counts["ok"] == len(cases) == client.calls
    assert all(r["tools"] and r["json_schema"] is None for r in client.requests)
    assert any(len(c.gold["calls"]) >= 3 for c in cases)  # several tool calls in one reply
    scores = score_run(out)["nl2api"]
    assert scores["completion_rate"] == 1.0 and scores["full_sequence_accuracy"] == 1.0
    # a reply without any tool call is not a sequence
    out2 = tmp_path / "none"
    res = run_eval(
        split,
        ScriptedClient(lambda m, s, t: FakeReply("The answer is 42.")),
        MODEL,
        out2,
        tasks=["nl2api"],
        calling="tools",
        options=opts,
        progress=False,
    )
    assert res.tasks["nl2api"].status_counts["format_error"] == len(cases)
    assert {r["error"]["type"] for r in _replies(out2)} == {"no_calls"}


def test_the_prompt_version_differs_between_strategies(split: Path) -> None:
    react = NL2APITask(split, TaskOptions(calling="prompt")).prompt_version()
    direct = NL2APITask(split, DIRECT).prompt_version()
    assert react != direct and react.startswith("nl2api/react@") and direct.startswith("nl2api/direct@")
    assert NL2APITask(split, TaskOptions(calling="tools", strategy="direct")).prompt_version() != direct
    with pytest.raises(ValidationError, match="strategy"):
        TaskOptions(strategy="bogus")


def test_react_and_direct_runs_side_by_side_in_the_report(split: Path, cases: list[EvalCase], tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from benchsmith.eval.report import write_report

    react_out, direct_out = tmp_path / "react", tmp_path / "direct"
    planned = plan_tasks(split, react_out, ["nl2api"], TaskOptions(calling="prompt"), None, 0)
    run_eval(split, GoldClient(planned), MODEL, react_out, tasks=["nl2api"], progress=False)
    run_eval(split, DirectClient(cases), MODEL, direct_out, tasks=["nl2api"], options=DIRECT, progress=False)
    meta = json.loads((react_out / "run.json").read_text())
    assert meta["strategy"] == "react"
    # a run folder written before strategies existed reads as ReAct
    del meta["strategy"]
    (react_out / "run.json").write_text(json.dumps(meta))
    score_run(react_out)
    score_run(direct_out)
    result = write_report([react_out, direct_out], tmp_path / "rep")
    md = Path(result["files"]["markdown"]).read_text(encoding="utf-8")
    rows = [line for line in md.splitlines() if line.startswith("| scripted")]
    assert any(r.startswith("| scripted · direct |") for r in rows) and any(r.startswith("| scripted |") for r in rows)
    assert "scripted · direct" in Path(result["files"]["html"]).read_text(encoding="utf-8")


# ---- the command line ----------------------------------------------------------------------------
@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch, cases: list[EvalCase]):
    from fake_openai import FakeOpenAI

    drop_benchsmith_env(monkeypatch)
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    by_question = {f"Question: {c.input['query']}": c for c in cases}
    with FakeOpenAI(lambda body: json.dumps({"calls": _gold_calls(_case_of(body["messages"], by_question))})) as ep:
        monkeypatch.setenv("BENCHSMITH_BASE_URL", ep.base_url)
        yield ep


def _run_cli(split: Path, out: Path, *extra: str):
    return CliRunner().invoke(
        app,
        [
            "eval",
            "run",
            "--split",
            str(split),
            "--tasks",
            "nl2api",
            "--model",
            "fake",
            "--out",
            str(out),
            "--limit",
            "2",
            "--concurrency",
            "2",
            *extra,
        ],
        prog_name="benchsmith",
    )


def test_the_cli_takes_strategy_direct_and_mode_direct(split: Path, endpoint, tmp_path: Path) -> None:
    res = _run_cli(split, tmp_path / "s", "--strategy", "direct", "--calling", "prompt")
    assert res.exit_code == 0, res.output
    assert "direct strategy" in res.output
    meta = json.loads((tmp_path / "s" / "run.json").read_text())
    assert meta["strategy"] == "direct" and meta["mode"] == "prompt"
    assert meta["tasks"]["nl2api"]["prompt_version"].startswith("nl2api/direct@")
    assert score_run(tmp_path / "s")["nl2api"]["completion_rate"] == 1.0
    # --mode direct, the old spelling of --strategy direct (auto calling: a remote endpoint, native tools)
    res = _run_cli(split, tmp_path / "m", "--mode", "direct")
    assert res.exit_code == 0, res.output
    assert res.stderr.splitlines() == [
        "warning: --mode direct is renamed --strategy direct; the old spelling goes in the next release"
    ], res.stderr
    meta = json.loads((tmp_path / "m" / "run.json").read_text())
    assert meta["strategy"] == "direct" and meta["mode"] == "tools"
    assert meta["tasks"]["nl2api"]["prompt_version"].startswith("nl2api/direct@")


@pytest.mark.parametrize(
    "args, word",
    [
        (("--strategy", "bogus"), "bogus"),
        (("--calling", "oneshot"), "oneshot"),
        (("--mode", "prompt", "--calling", "tools"), "both given"),
    ],
)
def test_the_cli_refuses_a_bad_strategy_in_one_line(
    split: Path, endpoint, tmp_path: Path, args: tuple[str, ...], word: str
) -> None:
    res = _run_cli(split, tmp_path / "bad", *args)
    assert res.exit_code == 2, res.output
    line = one_error_line(res.stderr)
    assert word in line and "fix" in line
    assert not (tmp_path / "bad" / "run.json").exists() and endpoint.requests == 0
