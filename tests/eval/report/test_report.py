"""``benchsmith report``: the HTML is self-contained and escaped, the Markdown and CSVs carry the
scores.json figures, the output is byte-stable, and bad run folders are one red line."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import clean_env, console_script
from report_helpers import LONG, SCRIPT, make_run, make_two_runs
from typer.testing import CliRunner

from benchsmith.eval.report import categories, headline, load_run, primary, write_report
from benchsmith.schemas import RecordResult, UserError

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return make_two_runs(tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def report(runs, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    _, a, b = runs
    out = tmp_path_factory.mktemp("out")
    return out, write_report([a, b], out, title="A <vs> B", failures=20)


def _scores(run: Path, task: str) -> dict:
    return json.loads((run / task / "scores.json").read_text(encoding="utf-8"))


def _records(run: Path, task: str) -> list[dict]:
    return [
        json.loads(line) for line in (run / task / "records.jsonl").read_text(encoding="utf-8").splitlines() if line
    ]


def _pct(v: float) -> str:
    return f"{v * 100:.1f}%"


def _html(report) -> str:
    return (report[0] / "report.html").read_text(encoding="utf-8")


# ------------------------------------------------------------------------ files ----
def test_writes_the_four_files(report):
    out, result = report
    for name in ("report.html", "report.md", "leaderboard.csv", "categories.csv"):
        assert (out / name).is_file(), name
    assert result["files"]["html"] == str(out / "report.html")
    assert result["tasks"] == ["nl2api", "teval", "gta", "toolassess", "acebench_special"]
    assert result["warnings"] == []


def test_html_is_self_contained(report):
    html = _html(report)
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html, re.I)
    assert "<script" not in html.lower()
    assert "<link" not in html.lower() and "@import" not in html
    assert not re.search(r"url\(\s*['\"]?(?!#)", html)  # only in-document references (SVG clip paths)
    assert html.count("<style>") == 1


def test_html_leaderboard_has_a_row_per_run_with_the_primary_figures(runs, report):
    _, a, b = runs
    html = _html(report)
    board = html[html.index('<table class="leaderboard">') :]
    board = board[: board.index("</table>")]
    rows = re.findall(r"<tr>\s*<td class=\"run\">(.*?)</tr>", board, re.S)
    assert len(rows) == 2 and "model-a" in rows[0] and "model-b" in rows[1]
    for run, row in zip((a, b), rows):
        assert _pct(_scores(run, "teval")["overall"] / 100) in row
        assert _pct(_scores(run, "nl2api")["completion_rate"]) in row
        assert _pct(_scores(run, "acebench_special")["summary"]) in row
        assert _pct(_scores(run, "gta")["end_to_end"]["ans_acc"]) in row
    assert "A &lt;vs&gt; B" in html and "A <vs> B" not in html


def test_acebench_summary_says_which_weights_it_used(report):
    """The acebench_special runs are scored in strict mode on a derived split: the Summary row says
    its weights come from the data's own family sizes (HTML and Markdown)."""
    html = _html(report)
    section = html[html.index('<section id="task-5">') :]
    section = section[: section.index("</section>")]
    assert "weights sqrt(n) of this data&#39;s family sizes (special " in section
    md = (report[0] / "report.md").read_text(encoding="utf-8")
    assert "summary (weights sqrt(n) of this data's family sizes (special " in md


def test_html_has_the_radar_and_category_charts(report):
    html = _html(report)
    overview = html[html.index('<section id="overview">') :]
    overview = overview[: overview.index("</section>")]
    assert overview.count("<svg") == 1
    for axis in (
        "T-Eval instruct",
        "T-Eval review",
        "NL2API completion",
        "ToolAssess awareness",
        "GTA answer acc.",
        "ACEBench special",
    ):
        assert axis in overview, axis
    assert "model-a" in overview and "model-b" in overview  # the legend
    # one per-category chart per task with several categories, one error chart per task with errors
    for n, task in enumerate(["teval", "gta", "toolassess", "acebench_special"], 2):
        section = html[html.index(f'<section id="task-{n}">') :]
        section = section[: section.index("</section>")]
        assert section.count("<svg") == 2, task
    assert "<?xml" not in html and "<!DOCTYPE svg" not in html


def test_failures_are_escaped_and_truncated(report):
    html = _html(report)
    assert SCRIPT not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in html
    assert LONG[:600] + "…" in html  # the preview is cut with a marker
    assert LONG in html  # the turn in <details> keeps it
    assert re.search(r"<details>\s*<summary class=\"small\">all turns \(2\)</summary>", html)


def test_failure_sample_respects_the_limit(runs, tmp_path):
    _, a, b = runs
    write_report([a, b], tmp_path, failures=3)
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    for block in re.findall(
        r'<details class="run-failures">(.*?)</details>\s*(?=<details class="run-failures">|</section>|<p)', html, re.S
    ):
        assert block.count('<div class="fail">') <= 3
    assert "3 of " in html
    write_report([a], tmp_path / "none", failures=0)
    assert '<div class="fail">' not in (tmp_path / "none" / "report.html").read_text(encoding="utf-8")


# ------------------------------------------------------------------------ markdown / csv ----
def test_markdown_has_the_leaderboard_metrics_and_errors(runs, report):
    _, a, b = runs
    md = (report[0] / "report.md").read_text(encoding="utf-8")
    assert md.startswith("# A &lt;vs&gt; B\n")
    lines = md.splitlines()
    board = [line for line in lines if line.startswith("| model-")]
    assert board[0].startswith("| model-a | model-a | prompt |") and board[1].startswith(
        "| model-b | model-b | prompt |"
    )
    ta, tb = _scores(a, "teval"), _scores(b, "teval")
    assert f"| overall | {_pct(ta['overall'] / 100)} | {_pct(tb['overall'] / 100)} |" in lines
    for ability in ("plan", "review"):
        assert (
            f"| {ability} | {_pct(ta['abilities'][ability] / 100)} | {_pct(tb['abilities'][ability] / 100)} |" in lines
        )
    na, nb = _scores(a, "nl2api"), _scores(b, "nl2api")
    assert f"| slot_f1 | {_pct(na['slot']['f1'])} | {_pct(nb['slot']['f1'])} |" in lines
    assert "### teval: errors" in md
    parse_a = sum(1 for r in _records(a, "teval") if r["error_type"] == "parse_error")
    assert any(line.startswith(f"| parse_error | {parse_a:,} (") for line in lines)
    assert "| reply: format_error |" in md and "| reply: transport_error |" in md
    assert re.search(r"^\|---\|---\|---\|---:\|", md, re.M)


def test_leaderboard_csv(runs, report):
    _, a, b = runs
    with open(report[0] / "leaderboard.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["model"] for r in rows] == ["model-a", "model-b"]
    for run, row in zip((a, b), rows):
        meta = json.loads((run / "run.json").read_text(encoding="utf-8"))
        assert row["run"] == meta["run_id"]
        assert float(row["teval"]) == pytest.approx(_scores(run, "teval")["overall"] / 100)
        assert row["teval.metric"] == "overall"
        assert float(row["nl2api"]) == pytest.approx(_scores(run, "nl2api")["completion_rate"])
        assert float(row["toolassess"]) == pytest.approx(_scores(run, "toolassess")["awareness"]["accuracy"])
        assert int(row["cases"]) == sum(t["cases"] for t in meta["tasks"].values())
        statuses = [
            json.loads(line)["status"]
            for t in meta["tasks"]
            for line in (run / t / "replies.jsonl").read_text(encoding="utf-8").splitlines()
            if line
        ]
        assert float(row["format_error_rate"]) == pytest.approx(statuses.count("format_error") / len(statuses))
        assert int(row["transport_errors"]) == statuses.count("transport_error")
        assert int(row["prompt_tokens"]) == sum(t["prompt_tokens"] for t in meta["tasks"].values())
        assert float(row["mean_latency_s"]) > 0


def test_categories_csv(runs, report):
    _, a, b = runs
    with open(report[0] / "categories.csv", newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        assert next(reader) == ["run", "task", "category", "metric", "value"]
        rows = {(r[0], r[1], r[2], r[3]): float(r[4]) for r in reader}
    for run in (a, b):
        rid = json.loads((run / "run.json").read_text(encoding="utf-8"))["run_id"]
        for cat, v in _scores(run, "teval")["categories"].items():
            assert rows[(rid, "teval", cat, "score")] == pytest.approx(v["score"])
            assert rows[(rid, "teval", cat, "records")] == v["records"]
        for cat, v in _scores(run, "acebench_special")["categories"].items():
            assert rows[(rid, "acebench_special", cat, "accuracy")] == pytest.approx(v["accuracy"])
        assert rows[(rid, "nl2api", "slot", "intent.f1")] == pytest.approx(
            _scores(run, "nl2api")["by_category"]["slot"]["intent"]["f1"]
        )
        gta = _records(run, "gta")
        for cat in {r["category"] for r in gta}:
            recs = [r for r in gta if r["category"] == cat]
            assert rows[(rid, "gta", cat, "pass_rate")] == pytest.approx(sum(r["ok"] for r in recs) / len(recs))


def test_output_is_byte_stable(runs, report, tmp_path):
    _, a, b = runs
    write_report([a, b], tmp_path, title="A <vs> B", failures=20)
    for name in ("report.html", "report.md", "leaderboard.csv", "categories.csv"):
        assert (tmp_path / name).read_bytes() == (report[0] / name).read_bytes(), name


# ------------------------------------------------------------------------ tolerance ----
def test_a_task_without_scores_is_shown_as_not_scored(runs, tmp_path):
    _, a, _ = runs
    run = tmp_path / "run"
    shutil.copytree(a, run)
    (run / "gta" / "scores.json").unlink()
    with open(run / "teval" / "replies.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"id": "cut-off mid-wri')  # an interrupted append
    loaded = load_run(run)
    assert not loaded.tasks["gta"].scored and loaded.tasks["teval"].scored
    result = write_report([run], tmp_path / "out")
    assert any("gta is not scored" in w and "benchsmith eval score --run" in w for w in result["warnings"])
    assert any("unreadable line" in w for w in result["warnings"])
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "not scored" in html and f"benchsmith eval score --run {run}" in html


def test_the_last_reply_of_a_case_wins(runs, tmp_path):
    _, a, _ = runs
    run = tmp_path / "run"
    shutil.copytree(a, run)
    lines = (run / "nl2api" / "replies.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    retry = {**first, "status": "transport_error", "error": {"type": "transport_error", "message": "x"}, "turns": []}
    with open(run / "nl2api" / "replies.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(retry) + "\n")
    task = load_run(run).tasks["nl2api"]
    assert task.replies[first["id"]].status == "transport_error"
    assert task.reply(first["id"])["turns"] == []
    assert len(task.replies) == len(lines)
    # a line of another prompt version (a re-run after the prompt changed) is not this run's
    with open(run / "nl2api" / "replies.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({**first, "prompt_version": "nl2api/v0-old"}) + "\n")
    assert load_run(run).tasks["nl2api"].replies[first["id"]].status == "transport_error"


def test_shared_turns_are_not_model_calls(runs, tmp_path):
    _, a, _ = runs
    run = tmp_path / "run"
    shutil.copytree(a, run)
    path = run / "teval" / "replies.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    row = next(r for r in rows if r["turns"])
    shared = {**row["turns"][0], "shared": True, "latency_s": 0.0, "usage": {}}
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({**row, "turns": [shared]}) + "\n")
    info = load_run(run).tasks["teval"].replies[row["id"]]
    assert info.calls == 0 and info.latency_s is None and info.prompt_tokens == 0


def test_missing_or_garbled_run_json_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="run.json: missing"):
        load_run(tmp_path)
    (tmp_path / "run.json").write_text('{"format": "benchsmith.run/v1", "tasks": ', encoding="utf-8")
    with pytest.raises(UserError, match=r"run\.json:1: not valid JSON"):
        load_run(tmp_path)
    (tmp_path / "run.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(UserError, match="no 'tasks' object"):
        load_run(tmp_path)
    with pytest.raises(UserError, match="no such run folder"):
        load_run(tmp_path / "nope")


# ------------------------------------------------------------------------ headline ----
def test_headline_and_primary_per_benchmark():
    assert primary("teval", {"overall": 50.0}) == ("overall", 0.5)
    gta = {
        "step_by_step": {"inst_acc": 0.5, "tool_acc": 0.25, "arg_acc": 0.2, "summ_acc": 0.1},
        "end_to_end": {
            "answered_samples": 4,
            "ans_acc": 0.75,
            "tool_f1": {
                "perception": {"f1": 0.5, "tp": 1, "pred": 2, "gold": 2},
                "logic": {"f1": None, "tp": 0, "pred": 0, "gold": 0},
            },
        },
    }
    h = headline("gta", gta)
    assert h["ans_acc"] == 0.75 and h["tool_f1"] == 0.5 and h["tool_f1.perception"] == 0.5 and "tool_f1.logic" not in h
    assert primary("gta", gta) == ("ans_acc", 0.75)
    assert primary("gta", {**gta, "end_to_end": None}) == ("inst_acc", 0.5)
    ta = {
        "awareness": {"accuracy": 0.6, "f1": 0.5},
        "selection": {"accuracy": 0.7, "f1": 0.4},
        "multi": {"asa": 0.3, "psa": 0.2},
    }
    assert primary("toolassess", ta) == ("awareness.accuracy", 0.6)
    assert primary("toolassess", {**ta, "tas": 0.55}) == ("tas", 0.55)
    assert headline("toolassess", ta)["multi.psa"] == 0.2
    ace = {"summary": 0.8, "accuracy": 0.7, "families": {"normal": 0.9, "special": 0.6}}
    assert primary("acebench", ace) == ("summary", 0.8) and headline("acebench", ace)["family.special"] == 0.6
    bfcl = {"summary": {"overall": 0.6, "non_live_ast": 0.7, "live_ast": None, "irrelevance": 0.9}}
    assert headline("bfcl", bfcl) == {"overall": 0.6, "non_live_ast": 0.7, "irrelevance": 0.9}
    assert primary("bfcl", bfcl) == ("overall", 0.6)
    assert primary("nl2api", {"completion_rate": 0.25}) == ("completion_rate", 0.25)
    assert primary("teval", None) == ("overall", None)
    assert categories(
        "acebench", {"categories": {"special_incomplete": {"n": 4, "accuracy": 0.5, "error_types": {"x": 2}}}}
    ) == {"special_incomplete": {"accuracy": 0.5, "n": 4.0}}
    assert categories(
        "gta",
        {},
        [
            RecordResult(id="1", category="e2e", ok=True, score=1.0),
            RecordResult(id="2", category="e2e", ok=False, score=0.0),
        ],
    ) == {"e2e": {"mean_score": 0.5, "pass_rate": 0.5, "passed": 1.0, "records": 2.0}}


def test_tas_across_runs_and_distinct_labels(runs, tmp_path):
    ws, a, _ = runs
    again = make_run(ws, tmp_path / "again", "model-a", quality=0.5, seed=7, mode="tools", tasks=("toolassess",))
    result = write_report([a, again], tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "| model-a · prompt | model-a | prompt |" in md and "| model-a · tools | model-a | tools |" in md
    assert "| TAS (across these runs) |" in md
    assert result["tasks"][0] == "nl2api"  # the union of the runs' tasks
    tools_row = next(line for line in md.splitlines() if line.startswith("| model-a · tools |"))
    assert tools_row.split(" | ")[4] == "—"  # nl2api was not part of that run


# ------------------------------------------------------------------------ CLI ----
def test_cli_writes_the_report_and_prints_its_path(runs, tmp_path, monkeypatch):
    _, a, b = runs
    for key in ("BENCHSMITH_REPORT_OUT", "BENCHSMITH_REPORT_TITLE", "BENCHSMITH_REPORT_FAILURES"):
        monkeypatch.delenv(key, raising=False)
    from benchsmith.cli import app

    res = CliRunner().invoke(
        app,
        ["report", str(a), str(b), "--out", str(tmp_path / "o"), "--failures", "2", "--title", "T"],
        prog_name="benchsmith",
    )
    assert res.exit_code == 0, res.output
    assert res.output.strip().splitlines()[-1] == str(tmp_path / "o" / "report.html")
    assert "<title>T</title>" in (tmp_path / "o" / "report.html").read_text(encoding="utf-8")
    monkeypatch.setenv("BENCHSMITH_REPORT_OUT", str(tmp_path / "env"))
    res = CliRunner().invoke(app, ["report", str(a)], prog_name="benchsmith")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "env" / "report.html").is_file()


def test_cli_default_out_is_inside_the_first_run(runs, tmp_path, monkeypatch):
    _, a, _ = runs
    monkeypatch.delenv("BENCHSMITH_REPORT_OUT", raising=False)
    run = tmp_path / "run"
    shutil.copytree(a, run)
    from benchsmith.cli import app

    res = CliRunner().invoke(app, ["report", str(run)], prog_name="benchsmith")
    assert res.exit_code == 0, res.output
    assert (run / "report" / "report.html").is_file() and (run / "report" / "leaderboard.csv").is_file()


def test_cli_missing_run_json_is_one_red_line(runs, tmp_path):
    _, a, _ = runs
    proc = subprocess.run(
        [console_script(), "report", str(a), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2, proc.stderr
    lines = _ANSI.sub("", proc.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    assert str(tmp_path / "run.json") in lines[0] and "benchsmith eval run" in lines[0]
    assert "Traceback" not in proc.stderr


def test_chart_text_is_escaped_and_literal():
    from benchsmith.eval.report._private.charts import category_chart, radar_chart

    svg = category_chart([f"{SCRIPT} $x$"], ["<b>c</b>", "d"], [{"<b>c</b>": 0.5, "d": 0.2}])
    assert SCRIPT not in svg and "&lt;script&gt;" in svg and "$x$" in svg  # no mathtext either
    svg = radar_chart([SCRIPT], ["a<", "b", "c"], [{"a<": 0.5}])
    assert SCRIPT not in svg and "a&lt;" in svg


# ------------------------------------------------------------------------ about the run / no data ----
def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "kind", "size"),
    [
        ("gemma3-270m", "base model (not instruction-tuned)", "253 MB"),
        ("qwen2.5-coder-1.5b", "instruction-tuned", "1.12 GB"),
    ],
)
def test_about_names_a_registered_local_model_with_its_sha_and_case_counts(runs, tmp_path, name, kind, size):
    from benchsmith.models import LOCAL_MODELS

    ws, _, _ = runs
    entry = LOCAL_MODELS[name]
    run = make_run(ws, tmp_path / name, name, quality=0.6, seed=5, tasks=("nl2api", "toolassess"))
    _edit_json(run / "run.json", lambda m: m["model"].update(file_sha256=entry.sha256))
    result = write_report([run], tmp_path / "out")
    md = Path(result["files"]["markdown"]).read_text(encoding="utf-8")
    html = Path(result["files"]["html"]).read_text(encoding="utf-8")
    sha = entry.sha256
    assert "## About this run" in md and md.index("## About this run") < md.index("## Leaderboard")
    assert f"- **Model**: {name} — {entry.title} · local · {kind} · weights file {size} · sha256 {sha}" in md
    about = html[html.index('<section id="about">') :]
    about = about[: about.index("</section>")]
    assert (
        entry.title in about
        and kind in about
        and f'<span title="{sha}"><code>sha256 {sha[:12]}…</code></span>' in about
    )
    assert sha not in about.replace(f'title="{sha}"', "")  # the full value only in the tooltip
    assert html.index('<section id="about">') < html.index('<section id="leaderboard">')
    meta = json.loads((run / "run.json").read_text(encoding="utf-8"))
    for task in ("nl2api", "toolassess"):
        info = meta["tasks"][task]
        scored = len({r["id"] for r in _records(run, task)})
        row = next(
            line for line in md.splitlines() if line.startswith(f"| {task} | {info['cases']} | {info['done']} (")
        )
        assert row.split(" | ")[3] == str(scored)
        assert ("few cases" in row) == (scored < 10), row
    assert "| nl2api | 5 | 5 (" in md and "(only 5 cases)" in md  # the leaderboard figure says so too
    assert '<td>nl2api</td><td class="num">5</td>' in about and '<span class="badge few">few cases</span>' in about


def test_about_shows_the_runs_own_gold_self_test_per_task(runs, tmp_path):
    ws, _, _ = runs
    run = make_run(ws, tmp_path / "g", "gemma3-270m", quality=0.6, seed=5, tasks=("nl2api", "toolassess"))
    _edit_json(run / "nl2api" / "scores.json", lambda s: s.update(gold_selftest={"records": 5, "gold_failing": 1}))
    result = write_report([run], tmp_path / "out")
    md = Path(result["files"]["markdown"]).read_text(encoding="utf-8")
    html = Path(result["files"]["html"]).read_text(encoding="utf-8")
    rows = {
        line.split(" | ")[0][2:]: line.split(" | ")
        for line in md.splitlines()
        if line.startswith("| nl2api |") or line.startswith("| toolassess |")
    }
    assert rows["nl2api"][4] == "4/5" and rows["toolassess"][4] == "—"  # recorded / not recorded
    assert '<td class="num">4/5</td>' in html and "gold passes" in html


def test_about_a_model_the_registry_does_not_know_shows_its_name_only(runs, tmp_path):
    _, a, _ = runs
    run = tmp_path / "run"
    shutil.copytree(a, run)
    _edit_json(run / "run.json", lambda m: m.update(model={"name": "gpt-4o-mini", "local": False}))
    md = Path(write_report([run], tmp_path / "out")["files"]["markdown"]).read_text(encoding="utf-8")
    assert "- **Model**: gpt-4o-mini · remote endpoint\n" in md


def test_about_says_when_the_split_reviewers_were_simulated(runs, tmp_path):
    from benchsmith.models import LOCAL_MODELS

    ws, a, _ = runs
    split = tmp_path / "reviewed"
    shutil.copytree(ws / "split", split)
    sha = LOCAL_MODELS["gemma3-270m"].sha256
    sheet = {
        "items": 5,
        "final": {"accepted": 5},
        "verdicts_supplied_automatically": True,
        "models": [
            {"model": "gemma3-270m", "file_sha256": sha, "samples": 3},
            {"model": "gpt-4o-mini", "file_sha256": None, "samples": 1},
        ],
    }
    (split / "datasheet.json").write_text(json.dumps(sheet), encoding="utf-8")
    run = tmp_path / "run"
    shutil.copytree(a, run)
    _edit_json(run / "run.json", lambda m: m.update(split=str(split)))
    result = write_report([run], tmp_path / "out")
    md = Path(result["files"]["markdown"]).read_text(encoding="utf-8")
    html = Path(result["files"]["html"]).read_text(encoding="utf-8")
    assert f"- **Split**: chinook-slot 1.0.0 · {split}\n" in md
    assert "- **Review**: the reviewers' verdicts were supplied automatically (simulated reviewers, not people)\n" in md
    assert f"- **Accepted items made by**: gemma3-270m (sha256 {sha}, 3 items) · gpt-4o-mini (remote, 1 item)\n" in md
    assert "supplied automatically (simulated reviewers, not people)" in html
    # people, then an unreadable datasheet and manifest: the line goes, the report is still written
    (split / "datasheet.json").write_text(
        json.dumps({**sheet, "verdicts_supplied_automatically": False}), encoding="utf-8"
    )
    md = Path(write_report([run], tmp_path / "out")["files"]["markdown"]).read_text(encoding="utf-8")
    assert "- **Review**: the reviewers' verdicts were given by people (no simulated reviewer)\n" in md
    (split / "datasheet.json").write_text('{"verdicts_supplied_automatically": tru', encoding="utf-8")
    (split / "manifest.json").write_text("[]", encoding="utf-8")
    md = Path(write_report([run], tmp_path / "out")["files"]["markdown"]).read_text(encoding="utf-8")
    assert "**Review**" not in md and "**Accepted items made by**" not in md
    assert f"- **Split**: {split}\n" in md


@pytest.fixture(scope="module")
def no_data_report(runs, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A run whose acebench_special category special_incomplete scored no case (n 0, accuracy 0.0, as
    the scorer writes it) and whose special_error_param scored 4 cases, all wrong (a real 0.0)."""
    _, a, _ = runs
    root = tmp_path_factory.mktemp("nodata")
    run = root / "run"
    shutil.copytree(a, run)

    def edit(scores: dict) -> None:
        cats = scores["categories"]
        cats["special_incomplete"].update(n=0, correct=0, accuracy=0.0, error_types={})
        cats["special_error_param"].update(n=4, correct=0, accuracy=0.0, error_types={"wrong": 4})

    _edit_json(run / "acebench_special" / "scores.json", edit)
    result = write_report([run], root / "out")
    html = Path(result["files"]["html"]).read_text(encoding="utf-8")
    section = html[html.index('<section id="task-5">') :]
    return section[: section.index("</section>")], Path(result["files"]["markdown"]).read_text(encoding="utf-8")


def _chart_texts(section: str) -> list[str]:
    svg = section[section.index("<svg") : section.index("</svg>")]
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def test_a_category_without_data_is_labelled_no_data_not_drawn_as_zero(no_data_report):
    section, md = no_data_report
    assert "| special_incomplete | no data |" in md.splitlines()
    assert '<tr><td>special_incomplete</td><td class="num">no data</td>' in section
    texts = _chart_texts(section)
    assert texts.count("no data") == 1
    # the value labels over the bars: special_error_param's real 0 and special_irrelevant's figure, no second 0
    assert [t for t in texts if t.isdigit()] == ["0", "100"]


def test_a_real_zero_with_records_is_still_drawn_as_zero(no_data_report):
    section, md = no_data_report
    assert "| special_error_param | 0.0% |" in md.splitlines()
    # a real 0.0%, with its interval when the category has one
    assert re.search(
        r'<tr><td>special_error_param</td><td class="num">0\.0%( <span class="ci">[^<]*</span>)?</td>', section
    )
    assert "0" in _chart_texts(section)


def test_charts_draw_missing_figures_as_no_data():
    from benchsmith.eval.report._private.charts import category_chart, error_chart, radar_chart

    texts = lambda svg: re.findall(r"<text[^>]*>([^<]*)</text>", svg)  # noqa: E731
    svg = category_chart(["a", "b"], ["x", "y"], [{"x": 0.0, "y": float("nan")}, {"x": 0.5}])
    assert texts(svg).count("no data") == 2 and "0" in texts(svg)
    svg = radar_chart(["a", "b"], ["p", "q", "r"], [{"p": 0.5, "q": 0.5, "r": 0.5}, {"p": 0.2, "r": 0.2}])
    assert "(no data: b)" in svg
    assert "no data" in texts(error_chart(["a", "b"], ["x"], [{"x": 1}, {}], [4, 0]))


# ------------------------------------------------------------- issue 30: trust ----
def test_figures_carry_their_intervals(runs, report):
    _, a, _ = runs
    html = _html(report)
    spread = _scores(a, "teval")["intervals"]["figures"]["overall"]
    low, high = (v / 100 for v in spread)  # T-Eval's figures are x100; the report shows fractions
    assert f'<span class="ci" title="95% bootstrap interval">{_pct(low)}–{_pct(high)}</span>' in html


def test_several_runs_are_compared_on_shared_cases(runs, report):
    html = _html(report)
    part = html[html.index('<section id="comparison">') : html.index('<section id="cost">')]
    assert "B: model-b against A: model-a" in part
    rows = re.findall(r"<tr><td>(\w+)</td><td>all</td>.*?<td class=\"(noise|diff)\">", part)
    assert {task for task, _ in rows} == {"nl2api", "teval", "gta", "toolassess", "acebench_special"}
    # the good model (0.8) against the weak one (0.35) on T-Eval's cases: flagged, not noise
    assert ("teval", "diff") in rows


def test_cost_and_usage_per_role(runs, tmp_path):
    import shutil

    from benchsmith.eval import score_run
    from benchsmith.schemas import PriceTable

    run = tmp_path / "model-a"
    shutil.copytree(runs[1], run)
    prices = PriceTable(per_million_tokens={"model-a": {"prompt": 1.0, "completion": 2.0}})
    scores = score_run(run, prices=prices)
    total = sum(s["cost"]["total"] for s in scores.values())
    correct = sum(s["cost"]["successes"] for s in scores.values())
    write_report([run], tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    part = html[html.index('<section id="cost">') : html.index('<section id="runs">')]
    assert part.count("model under test") == len(scores) == 5
    assert f"Total {total:.4g} USD; {total / correct:.4g} USD per correct case ({correct} correct)" in part
