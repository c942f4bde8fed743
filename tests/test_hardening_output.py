"""Hardening (issue 12, "Crashes on model output"): a lone surrogate, a JSON number of more than
4,300 digits or a non-UTF-8 200 body coming from a model never crashes a writer, a reader, the
reply parser, scoring or a run; model output becomes a recorded format error, input files a
UserError naming file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bfcl_data import mini_bfcl
from fake_openai import FakeEndpoint, completion, config
from helpers import build_slot_split, pair_lines
from runner_helpers import FakeReply, ScriptedClient

from benchsmith.eval import TaskOptions, run_eval, run_score, score_run
from benchsmith.eval.scoring import Predictions, read_json_lines
from benchsmith.models import ModelClient, ParseError, read_json_reply
from benchsmith.schemas import (
    CheckResult,
    UserError,
    append_jsonl,
    iter_jsonl_lenient,
    read_json,
    read_jsonl,
    write_json,
    write_jsonl,
)

SURROGATE = "\ud800"
BIG = "1" * 5000
MODEL = {"name": "scripted"}

# what a model may send: a real lone surrogate (the client decoded a JSON-escaped "\ud800"),
# one JSON-escaped inside the reply, and numbers of 5,000 digits
HOSTILE_REPLIES = [
    SURROGATE,
    '{"thought": "x", "name": "a' + SURROGATE + '", "args": {"q": "' + SURROGATE + '"}}',
    '{"thought": "\\ud800", "name": "\\ud800", "args": {"q": "\\udfff"}, "answers": ["\\ud800"]}',
    '[{"name": "\\ud800", "arguments": {"x": "\\ud800"}}]',
    BIG,
    '{"thought": "x", "args": {"n": ' + BIG + '}, "answers": [' + BIG + "]}",
    'Sure: [{"name": "f", "arguments": {"n": ' + BIG + "}}]",
]


# ---- writers ------------------------------------------------------------------------------------
def test_write_jsonl_and_append_jsonl_escape_a_lone_surrogate(tmp_path: Path) -> None:
    rec = {"id": "a", "result": "x" + SURROGATE + "é", "nested": [{"k" + SURROGATE: SURROGATE}]}
    p = tmp_path / "w.jsonl"
    assert write_jsonl(p, [rec, {"id": "b", "result": "café"}]) == 2
    append_jsonl(p, rec)
    raw = p.read_bytes()
    text = raw.decode("utf-8")  # still valid UTF-8
    assert "café" in text  # lines without surrogates stay readable text
    rows = [json.loads(x) for x in text.splitlines()]
    assert rows[0] == rec and rows[2] == rec and rows[1]["result"] == "café"
    good, bad = iter_jsonl_lenient(p, CheckResult)
    assert len(good) + len(bad) == 3


def test_write_json_escapes_a_lone_surrogate(tmp_path: Path) -> None:
    p = tmp_path / "s.json"
    write_json(p, {"reason": "bad " + SURROGATE, "name": "café"})
    assert read_json(p) == {"reason": "bad " + SURROGATE, "name": "café"}
    p.read_bytes().decode("utf-8")


# ---- the reply parser ---------------------------------------------------------------------------
@pytest.mark.parametrize("text", [BIG, '{"n": ' + BIG + "}", 'ok: {"n": ' + BIG + "} bye", "[" + BIG + "]"])
def test_read_json_reply_on_a_5000_digit_number_is_a_format_error(text: str) -> None:
    with pytest.raises(ParseError):
        read_json_reply(text)


@pytest.mark.parametrize("text", ["{" * 1_000_000, "[" * 1_000_000, "x{" * 500_000])
def test_read_json_reply_gives_up_after_a_thousand_places_a_value_could_start(text: str) -> None:
    # before: every '{' was tried, each failed try costing up to the reply's length (over 60 s)
    with pytest.raises(ParseError, match="first 1,000 '{' or '\\[' starts"):
        read_json_reply(text)


def test_read_json_reply_still_finds_a_value_at_the_thousandth_place() -> None:
    assert read_json_reply("{" * 999 + '{"a": 1}') == {"a": 1}
    with pytest.raises(ParseError):
        read_json_reply("{" * 1000 + '{"a": 1}')


# ---- readers ------------------------------------------------------------------------------------
def test_read_predictions_counts_a_5000_digit_number_line_as_bad(tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    p.write_text(
        '{"id": "a", "result": "ok"}\n{"id": "b", "result": ' + BIG + '}\n{"id": "c", "result": "\\ud800"}\n',
        encoding="utf-8",
    )
    with Predictions(p) as preds:
        assert [n for n, _ in preds.bad_lines] == [2]
        assert set(preds.offsets) == {"a", "c"} and preds.get("c") == SURROGATE


def test_jsonl_readers_name_file_and_line_of_a_5000_digit_number(tmp_path: Path) -> None:
    p = tmp_path / "in.jsonl"
    p.write_text('{"name": "a", "ok": true}\n{"name": "b", "ok": true, "code": ' + BIG + "}\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"in\.jsonl:2"):
        read_jsonl(p, CheckResult)
    good, bad = iter_jsonl_lenient(p, CheckResult)
    assert len(good) == 1 and [e.line for e in bad] == [2]
    with pytest.raises(UserError, match=r"in\.jsonl:2") as exc:
        read_json_lines(p, fix="fix it")
    assert "fix" in str(exc.value)
    j = tmp_path / "in.json"
    j.write_text('{\n "n": ' + BIG + "\n}\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"in\.json"):
        read_json(j)


# ---- eval run / eval score on every benchmark, both modes ----------------------------------------
@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lines = pair_lines()
    return build_slot_split(tmp_path_factory.mktemp("hardening"), lines[:4] + lines[-2:])


@pytest.mark.parametrize("reply", HOSTILE_REPLIES, ids=[f"reply{i}" for i in range(len(HOSTILE_REPLIES))])
def test_eval_run_and_score_survive_hostile_replies(split: Path, tmp_path: Path, reply: str) -> None:
    out = tmp_path / "run"
    client = ScriptedClient(lambda m, s, t: FakeReply(reply))
    res = run_eval(split, client, MODEL, out, limit=3, progress=False, options=TaskOptions(step_budget=3))
    assert set(res.tasks) == {"nl2api", "teval", "gta", "toolassess", "acebench_special"}
    for name, info in res.tasks.items():
        counts = info.status_counts
        assert counts["transport_error"] == 0 and counts["pending"] == 0, name
        assert counts["ok"] + counts["format_error"] == info.cases, name
    for mode in ("strict", "official"):
        scores = score_run(out, mode)
        for name in res.tasks:
            text = (out / name / "records.jsonl").read_bytes().decode("utf-8")
            assert scores[name]["records"] == len(text.splitlines())
            (out / name / "replies.jsonl").read_bytes().decode("utf-8")


@pytest.mark.parametrize("fmt", ["prompt", "fc"])
def test_eval_score_bfcl_survives_surrogates_and_huge_numbers(tmp_path: Path, fmt: str) -> None:
    data = mini_bfcl(tmp_path / "data")
    preds = tmp_path / "p.jsonl"
    preds.write_text(
        "\n".join(
            [
                json.dumps({"id": "simple_python_0", "result": "[math.factorial(number=" + BIG + ")]"}),
                json.dumps(
                    {"id": "irrelevance_0", "result": [{"math_factorial" + SURROGATE: '{"number": ' + BIG + "}"}]}
                ),
                json.dumps(
                    {"id": "live_relevance_0-0-0", "result": '[{"name": "\\ud800", "arguments": {"n": "\\ud800"}}]'}
                ),
                '{"id": "x", "result": ' + BIG + "}",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    for mode in ("strict", "official"):
        scores = run_score("bfcl", data, preds, tmp_path / f"out-{mode}", mode, options={"format": fmt})
        assert scores["records"] == 3 and [b["line"] for b in scores["bad_prediction_lines"]] == [4]
        (tmp_path / f"out-{mode}" / "records.jsonl").read_bytes().decode("utf-8")


# ---- the model client -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "body",
    [
        b'{"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0, '
        b'"message": {"role": "assistant", "content": "caf\xe9 \xff"}, "finish_reason": "stop"}]}',
        b"\xff\xfe\x00garbage",
        json.dumps(completion("x")).replace('"created": 1', '"created": ' + BIG).encode(),
    ],
    ids=["latin1-body", "binary-body", "huge-number-body"],
)
def test_a_200_reply_that_is_not_utf8_json_is_an_empty_reply_not_a_crash(monkeypatch, body: bytes) -> None:
    monkeypatch.setenv("BENCHSMITH_TEST_KEY", "sk-test")
    endpoint = FakeEndpoint()
    try:
        endpoint.script = [{"status": 200, "body": body}]
        reply = ModelClient(config(endpoint.url)).complete([{"role": "user", "content": "hi"}])
        assert reply.text == "" and reply.tool_calls == [] and reply.attempts == 1
        assert len(endpoint.requests) == 1
    finally:
        endpoint.close()


def test_a_reply_with_a_lone_surrogate_from_the_endpoint_is_read(monkeypatch) -> None:
    monkeypatch.setenv("BENCHSMITH_TEST_KEY", "sk-test")
    endpoint = FakeEndpoint()
    try:
        endpoint.script = [{"status": 200, "body": completion("a\ud800b")}]
        reply = ModelClient(config(endpoint.url)).complete([{"role": "user", "content": "hi"}])
        assert reply.text == "a\ud800b"
    finally:
        endpoint.close()
