"""Screenshot the Label Studio labeling page of a real chain sample, to look at the chain review config.

    python perf/label_studio_screenshot.py [--out /tmp/ls_chain_review.png] [--adjudicate-out PNG]
                                                 [--split SPLIT_DIR] [--data-dir DIR] [--pairs N]

What it does, end to end through benchsmith's own code:

1. starts a local Label Studio (``start_label_studio``) on ``--data-dir`` (default: a new temp dir),
   or reuses the one already running there; a server this script started is stopped at the end;
2. builds a SLOT split of the first ``--pairs`` Chinook pairs (``tests/helpers.py build_slot_split``),
   or uses ``--split``; picks the sample with the longest gold chain (at least 2 steps);
3. loads the split into a temp ``Workspace`` and pushes the ``review`` stage (``Workspace.push``), so the
   project has the real ``label_config("chain", "review")`` and the tasks the real ``task_payload``;
4. logs in as the data dir's admin (credentials read from ``<data dir>/benchsmith-admin.json``, never
   printed) in headless Chromium, opens ``/projects/<pid>/data?task=<tid>``, waits until the request
   text and the per-step verdict choices are visible, and saves a full-page PNG (``--out``);
5. unless ``--no-adjudicate``: two simulated reviewers disagree on that task (accept vs fix, through the
   API), ``Workspace.pull`` moves the item to ``adjudicate``, ``Workspace.push(..., "adjudicate")``
   creates the adjudication project, and its labeling page is saved too (``--adjudicate-out``).

The labeling area of Label Studio scrolls inside its own panel, so after rendering the browser window is
grown until nothing scrolls any more, and the PNG is the whole window.

Needs Playwright's Python package only (NOT its browsers; the system Chromium is used):

    /tmp/v1/bin/pip install playwright        # not a benchsmith dependency
    apt-get install -y chromium               # or pass --chromium PATH
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def build_split(root: Path, pairs: int) -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    from helpers import build_slot_split, pair_lines

    root.mkdir(parents=True, exist_ok=True)
    return build_slot_split(root, pair_lines()[:pairs])


def pick_sample(split: Path) -> tuple[str, int]:
    """The id of the first sample with the longest gold chain (>= 2 steps with a call) and its step count."""
    best: tuple[str, int] | None = None
    for line in (split / "samples.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        s = json.loads(line)
        n = sum(1 for step in s.get("gold") or [] if step.get("call"))
        if n >= 2 and (best is None or n > best[1]):
            best = (s["id"], n)
    if best is None:
        raise SystemExit(f"no sample with a gold chain of 2+ steps in {split}")
    return best


MAX_HEIGHT = 12000
# how far the most overflowing scroll container (the labeling panel) scrolls beyond its visible height
OVERFLOW_JS = """() => Math.max(0, ...[...document.querySelectorAll('*')]
  .filter(e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowY))
  .map(e => e.scrollHeight - e.clientHeight))"""


def screenshot(
    url: str,
    creds: dict[str, str],
    pages: list[tuple[str, Path, list[str]]],
    chromium: str,
    width: int,
    height: int,
    timeout: float,
) -> None:
    """Log in once, then for each ``(path, png, texts)`` open ``url + path``, wait until every text is visible,
    and save the window as ``png``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        )
        try:
            ctx = browser.new_context(viewport={"width": width, "height": height})
            page = ctx.new_page()
            page.set_default_timeout(timeout * 1000)
            page.goto(f"{url}/user/login/")
            page.fill("input[name=email]", creds["username"])
            page.fill("input[name=password]", creds["password"])
            page.click("button[type=submit], input[type=submit]")
            page.wait_for_url(lambda u: "/user/login" not in u)
            for path, png, texts in pages:
                page.goto(url + path)
                for text in texts:
                    page.get_by_text(text, exact=False).first.wait_for(state="visible")
                page.wait_for_load_state("networkidle")
                time.sleep(1.0)  # let fonts and the last layout pass settle
                # the labeling panel scrolls inside the page: grow the window until nothing overflows
                for _ in range(3):
                    extra = page.evaluate(OVERFLOW_JS)
                    if extra <= 0:
                        break
                    size = page.viewport_size or {"width": width, "height": height}
                    page.set_viewport_size(
                        {"width": size["width"], "height": min(size["height"] + extra + 40, MAX_HEIGHT)}
                    )
                    time.sleep(0.5)
                png.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(png), full_page=True)
                _log(f"wrote {png} ({png.stat().st_size // 1024} KB) from {path}")
        finally:
            browser.close()


def disagree(ls: Any, ws: Any, sample_id: str, task_id: int, n_steps: int) -> None:
    """Two simulated reviewers answer the review task differently (accept vs fix), then pull: -> adjudicate."""
    from benchsmith.annotation import Review, result_for

    one = Review(decision="accept", step_verdicts={i: "success" for i in range(n_steps)})
    two = Review(
        decision="fix",
        step_verdicts={0: "success", n_steps - 1: "input_error"},
        corrections={n_steps - 1: '{"name": "retrieve_data", "arguments": {"columns": ["Email"]}}'},
        comment="the last step should return the e-mail column only",
    )
    for name, review in (("screenshot-reviewer-1", one), ("screenshot-reviewer-2", two)):
        ls.annotate(task_id, result_for("chain", review), ls.ensure_user(name))
    moved = ws.pull(ls)
    item = next(it for it in ws.store.items() if it["sample_id"] == sample_id)
    if item["status"] != "adjudicate":
        raise SystemExit(f"expected {sample_id} in adjudicate after the pull, got {item['status']} ({moved})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/ls_chain_review.png"))
    ap.add_argument("--adjudicate-out", type=Path, default=Path("/tmp/ls_chain_adjudicate.png"))
    ap.add_argument("--no-adjudicate", action="store_true", help="only the review stage")
    ap.add_argument("--split", type=Path, help="a SLOT split folder (default: build one from --pairs pairs)")
    ap.add_argument("--pairs", type=int, default=6, help="Chinook pairs in the built split (default 6)")
    ap.add_argument("--data-dir", type=Path, help="Label Studio data dir (default: a new temp dir)")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument(
        "--height",
        type=int,
        default=2000,
        help="initial window height in px; it grows until the labeling panel no longer scrolls",
    )
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for the page to render")
    ap.add_argument("--keep", action="store_true", help="leave the server running and the temp dirs in place")
    args = ap.parse_args(argv)

    from benchsmith.annotation import LabelStudio, Workspace, label_studio_status, start_label_studio, stop_label_studio
    from benchsmith.annotation._private.server import CREDENTIALS_FILE

    tmp = Path(tempfile.mkdtemp(prefix="bs-ls-shot-"))
    data_dir = (args.data_dir or tmp / "label-studio").absolute()
    started = label_studio_status(data_dir) is None
    info = start_label_studio(data_dir=data_dir)
    _log(f"Label Studio {info.version} at {info.url} (data dir {data_dir}{', started here' if started else ''})")
    ws = None
    try:
        split = args.split.absolute() if args.split else build_split(tmp / "split", args.pairs)
        sample_id, n_steps = pick_sample(split)
        _log(f"split {split}; sample {sample_id} ({n_steps} gold steps)")

        ws = Workspace(tmp / "workspace")
        ws.store.set_meta("name", "screenshot")
        ws.load(split)
        ls = LabelStudio(info.url, info.token())
        report = ws.push(ls, "review")
        pid = report.projects["review/r1/chain"]
        tid = ws.store.task_ids(pid)[sample_id]
        _log(f"pushed {report.pushed} tasks; review project {pid}, task {tid}")

        sample = next(it["sample"] for it in ws.store.items() if it["sample_id"] == sample_id)
        query = sample["query"].splitlines()[0][:40]
        creds = json.loads((data_dir / CREDENTIALS_FILE).read_text(encoding="utf-8"))
        shot = dict(chromium=args.chromium, width=args.width, height=args.height, timeout=args.timeout)
        review_texts = [query, f"Step {n_steps} ·", "unable_to_accomplish", "Rejection reasons"]
        # the review page first, before any annotation exists: what a reviewer sees when opening the task
        screenshot(info.url, creds, [(f"/projects/{pid}/data?task={tid}", args.out.absolute(), review_texts)], **shot)
        if not args.no_adjudicate:
            disagree(ls, ws, sample_id, tid, n_steps)
            adj = ws.push(ls, "adjudicate")
            apid = adj.projects["adjudicate/r1/chain"]
            atid = ws.store.task_ids(apid)[sample_id]
            _log(f"adjudicate project {apid}, task {atid}")
            screenshot(
                info.url,
                creds,
                [
                    (
                        f"/projects/{apid}/data?task={atid}",
                        args.adjudicate_out.absolute(),
                        [query, "Reviewer 2", "Final Decision"],
                    )
                ],
                **shot,
            )
    finally:
        if ws is not None:
            ws.close()
        if started and not args.keep:
            stop_label_studio(data_dir)
            _log("stopped the Label Studio this script started")
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    for png in [args.out] + ([] if args.no_adjudicate else [args.adjudicate_out]):
        print(png.absolute())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
