"""The evaluation runner's throughput side by side with the server's own maximum, in one run.

On the same N ToolAssess awareness cases (short prompts, ~10-token JSON replies) this measures:

* server max  N raw HTTP requests (httpx, ``--concurrency`` in flight) with exactly the body that
              ``ModelClient`` sends; run before AND after the runner, the better figure counts
* runner      ``run_eval`` with a real ``ModelClient`` at the same concurrency (fresh run folder)
* sequential  a plain loop of ``ModelClient.complete`` calls, one at a time

and, against a zero-delay fake OpenAI endpoint (tests/fake_openai.py in a child process), the
runner's own overhead per request: (run_eval wall - raw httpx wall) / N, split into the client
library (ModelClient alone) and the runner's bookkeeping (plan, fsync'd replies, predictions).

Targets (issue): runner >= 0.9 x server max; runner overhead < 5 ms per request.

    python perf/runner_speed.py [--base-url URL] [--model NAME] [--cases 32] [--concurrency N]
                                      [--split DIR] [--overhead-cases 200] [--overhead-repeats 3]

Without ``--base-url`` the local model is used: a running local server is reused (and left
running); otherwise one is started (``--threads``) and stopped at the end. Measure on an idle
machine: llama.cpp's threads collapse when the cores are busy with anything else.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from benchsmith.eval import TaskOptions, derive_all, run_eval
from benchsmith.eval._private.runner import plan_tasks
from benchsmith.eval.tasks import Request
from benchsmith.models import (
    DEFAULT_LOCAL_MODEL,
    ModelClient,
    ModelConfig,
    concurrency_for,
    local_server_status,
    mask_url,
    resolve_model,
    start_local_server,
    stop_local_server,
)
from benchsmith.models._private.client import local_json_grammar
from benchsmith.schemas import RuntimeFault, UserError, append_jsonl

TESTS_DIR = Path(__file__).resolve().parents[1] / "tests"
FAKE_REPLY = '{"decision": "requires_tool"}'
TARGET_RATIO = 0.9
TARGET_OVERHEAD_MS = 5.0

# The fake endpoint runs in its own process so that its request handling does not share our GIL.
# TCP_NODELAY: http.server writes the headers and the body in two sends, and without it Nagle's
# algorithm holds the body until the client's delayed ACK (~40 ms), which would hide the client's
# own costs behind a fixed wait.
FAKE_SERVER = r"""
import socketserver
import sys
socketserver.StreamRequestHandler.disable_nagle_algorithm = True
sys.path.insert(0, sys.argv[1])
from fake_openai import FakeOpenAI
reply = sys.argv[2]
with FakeOpenAI(lambda body: reply) as ep:
    print(ep.base_url, flush=True)
    sys.stdin.read()
"""


# ---- cases ----------------------------------------------------------------------------------------
def toolassess_folder(split: Path | None, tmp: Path) -> Path:
    """The ToolAssess data folder: derived from a split (the default SLOT split when none is given),
    taken from a ``benchsmith eval derive`` folder, or the given folder itself."""
    if split is None:
        from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db, default_pairs_path

        split = tmp / "split"
        build_split(chinook_db(), default_pairs_path(), split, BuildOptions(style="slot"))
    if not split.is_dir():
        raise UserError(f"{split} is not a folder", fix="pass a split folder (benchsmith nl2api build) to --split")
    if (split / "samples.jsonl").is_file():
        derive_all(split, tmp / "derived", benchmarks=["toolassess"])
        return tmp / "derived" / "toolassess"
    if (split / "derive_report.json").is_file():
        info = (json.loads((split / "derive_report.json").read_text("utf-8")).get("derived") or {}).get("toolassess")
        if not info:
            raise UserError(
                f"{split}/derive_report.json lists no toolassess cases",
                fix="derive them with `benchsmith eval derive` or pass the split itself",
            )
        return split / info.get("folder", "toolassess")
    if any(split.glob("*.jsonl")):
        return split
    raise UserError(
        f"{split} is neither a split nor a derived/ToolAssess folder",
        fix="pass a split folder (benchsmith nl2api build) to --split",
    )


def write_cases(source: Path, n: int, seed: int, dest: Path, skip: int = 0) -> list[Request]:
    """Write ``n`` awareness records (seeded pick, distinct requests; after the first ``skip`` of the
    same order) to ``dest/awareness.jsonl`` and return their requests in the order the runner runs
    them. Replicas with a marked query (so they stay distinct requests: the runner shares the model
    call of identical requests) fill up when the data has fewer than ``skip + n``."""
    planned = plan_tasks(source, dest.parent / "_plan", ["toolassess"], TaskOptions(calling="prompt"), None, seed)
    task = planned[0].task
    cases = [c for c in planned[0].cases if c.category == "awareness"]
    if not cases:
        raise UserError(
            f"{source} has no ToolAssess awareness case", fix="pass a split or ToolAssess folder that has them"
        )
    random.Random(seed).shuffle(cases)
    lines: dict[str, list[str]] = {}
    records, seen = [], set()
    for c in cases:
        key = task.request(c).key()
        if key in seen:
            continue
        seen.add(key)
        f = str(c.meta["file"])
        if f not in lines:
            lines[f] = Path(f).read_text("utf-8").splitlines()
        records.append(json.loads(lines[f][int(c.meta["line"]) - 1]))
    base = records[skip % len(records) :] + records[: skip % len(records)]
    chosen = []
    for i in range(n):
        rec = dict(base[i % len(base)])
        if i >= len(base):
            copy = i // len(base)
            rec["id"] = f"{rec.get('id')}~{copy}"
            rec["query"] = f"{rec.get('query')} (copy {copy})"
        chosen.append(rec)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "awareness.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in chosen), "utf-8")
    planned = plan_tasks(dest, dest.parent / "_plan", ["toolassess"], TaskOptions(calling="prompt"), None, seed)
    reqs = [planned[0].task.request(c) for c in planned[0].cases]
    if len({r.key() for r in reqs}) != n:
        raise RuntimeFault(f"expected {n} distinct requests in {dest}, got {len({r.key() for r in reqs})}")
    return reqs


# ---- the HTTP body ModelClient sends ------------------------------------------------------------
def raw_body(cfg: ModelConfig, req: Request) -> dict[str, Any]:
    """The chat-completions body ``ModelClient`` sends for ``req`` (see models/_private/client.py)."""
    body: dict[str, Any] = {
        "model": cfg.name,
        "stream": False,
        "messages": req.messages,
        "max_completion_tokens": req.max_tokens if req.max_tokens is not None else cfg.max_tokens,
        "seed": cfg.seed,
        "temperature": cfg.temperature,
    }
    if req.stop:
        body["stop"] = list(req.stop)
    if req.json_schema is not None:
        if cfg.local:
            body["grammar"] = local_json_grammar(req.json_schema)
        else:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": req.json_schema, "strict": True},
            }
    return body


def check_body(cfg: ModelConfig, req: Request) -> list[str]:
    """Fields where our raw body differs from what ModelClient sends (captured by a fake endpoint)."""
    sys.path.insert(0, str(TESTS_DIR))
    try:
        from fake_openai import FakeOpenAI
    finally:
        sys.path.remove(str(TESTS_DIR))
    seen: list[dict[str, Any]] = []

    def reply(body: dict[str, Any]) -> str:
        seen.append(body)
        return FAKE_REPLY

    with FakeOpenAI(reply) as ep:
        fake = fake_config(cfg, ep.base_url)
        ModelClient(fake).complete(req.messages, json_schema=req.json_schema, max_tokens=req.max_tokens, stop=req.stop)
    ours, theirs = raw_body(fake, req), seen[0]
    return sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))


def fake_config(cfg: ModelConfig, base_url: str) -> ModelConfig:
    return ModelConfig(
        name="fake",
        base_url=base_url,
        local=cfg.local,
        timeout=cfg.timeout,
        seed=cfg.seed,
        temperature=cfg.temperature,
        max_tokens=cfg.max_tokens,
    )


def auth_headers(cfg: ModelConfig) -> dict[str, str]:
    return {"Authorization": f"Bearer {cfg.api_key() or 'not-needed'}"}


# ---- phases ---------------------------------------------------------------------------------------
class Phase:
    def __init__(
        self,
        name: str,
        wall: float,
        latencies: list[float],
        completion_tokens: list[int],
        replies: list[str],
        note: str = "",
        inner_wall: float | None = None,
    ) -> None:
        self.name, self.wall, self.latencies = name, wall, latencies
        self.completion_tokens, self.replies, self.note = completion_tokens, replies, note
        self.inner_wall = inner_wall  # the runner's own wall_s: first case started to last case written

    @property
    def n(self) -> int:
        return len(self.latencies)

    @property
    def rps(self) -> float:
        return self.n / self.wall if self.wall > 0 else float("inf")


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * len(s) + 0.5) - 1))] if s else float("nan")


async def _raw(
    base_url: str, headers: dict[str, str], bodies: list[dict[str, Any]], concurrency: int, timeout: float
) -> tuple[float, list[tuple[float, int, str]]]:
    sem = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=timeout, limits=limits, headers=headers) as http:
        url = base_url.rstrip("/") + "/chat/completions"

        async def one(body: dict[str, Any]) -> tuple[float, int, str]:
            async with sem:
                t0 = time.perf_counter()
                resp = await http.post(url, json=body)
                lat = time.perf_counter() - t0
            if resp.status_code != 200:
                raise RuntimeFault(
                    f"{mask_url(base_url)} answered HTTP {resp.status_code} to a raw request: {resp.text[:300]}"
                )
            data = resp.json()
            text = ((data.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
            return lat, int((data.get("usage") or {}).get("completion_tokens") or 0), text

        t0 = time.perf_counter()
        results = await asyncio.gather(*(one(b) for b in bodies))
        return time.perf_counter() - t0, list(results)


def raw_phase(name: str, cfg: ModelConfig, reqs: list[Request], concurrency: int) -> Phase:
    bodies = [raw_body(cfg, r) for r in reqs]
    wall, res = asyncio.run(_raw(str(cfg.base_url), auth_headers(cfg), bodies, concurrency, cfg.timeout))
    return Phase(name, wall, [r[0] for r in res], [r[1] for r in res], [r[2] for r in res])


def runner_phase(name: str, cfg: ModelConfig, data: Path, out: Path, concurrency: int, n: int) -> Phase:
    desc = {
        "name": cfg.name,
        "base_url": mask_url(cfg.base_url),
        "local": cfg.local,
        "temperature": cfg.temperature,
        "max_tokens": cfg.max_tokens,
        "seed": cfg.seed,
        "timeout": cfg.timeout,
    }
    client = ModelClient(cfg)
    t0 = time.perf_counter()
    result = run_eval(
        data, client, desc, out, tasks=["toolassess"], calling="prompt", concurrency=concurrency, progress=False
    )
    wall = time.perf_counter() - t0
    info = result.tasks["toolassess"]
    if info["model_calls"] != n:
        raise RuntimeFault(
            f"the runner made {info['model_calls']} model calls for {n} cases (expected exactly {n}); "
            f"status counts {info['status_counts']}"
        )
    by_id = {}
    for line in (out / "toolassess" / "replies.jsonl").read_text("utf-8").splitlines():
        rec = json.loads(line)
        by_id[rec["id"]] = rec
    ids = [json.loads(line)["id"] for line in (out / "toolassess" / "cases.jsonl").read_text("utf-8").splitlines()]
    turns = [(by_id[i]["turns"] or [{}])[0] for i in ids]
    counts = {k: v for k, v in info["status_counts"].items() if v}
    note = f"statuses {counts}; in-loop wall {info['wall_s']:.2f} s (the rest: planning + predictions)"
    return Phase(
        name,
        wall,
        [float(t.get("latency_s") or 0.0) for t in turns],
        [int((t.get("usage") or {}).get("completion_tokens") or 0) for t in turns],
        [str(t.get("raw") or "") for t in turns],
        note,
        float(info["wall_s"]),
    )


def client_phase(name: str, cfg: ModelConfig, reqs: list[Request], concurrency: int) -> Phase:
    """ModelClient.acomplete alone (no runner), ``concurrency`` in flight."""
    client = ModelClient(cfg)

    async def go() -> tuple[float, list[Any]]:
        sem = asyncio.Semaphore(concurrency)

        async def one(r: Request) -> Any:
            async with sem:
                return await client.acomplete(
                    r.messages, json_schema=r.json_schema, max_tokens=r.max_tokens, stop=r.stop
                )

        t0 = time.perf_counter()
        replies = await asyncio.gather(*(one(r) for r in reqs))
        return time.perf_counter() - t0, list(replies)

    wall, replies = asyncio.run(go())
    return Phase(
        name,
        wall,
        [r.latency_s for r in replies],
        [int(r.usage.get("completion_tokens") or 0) for r in replies],
        [r.text for r in replies],
    )


def sequential_phase(name: str, cfg: ModelConfig, reqs: list[Request]) -> Phase:
    client = ModelClient(cfg)
    lats, toks, texts = [], [], []
    t0 = time.perf_counter()
    for r in reqs:
        t1 = time.perf_counter()
        reply = client.complete(r.messages, json_schema=r.json_schema, max_tokens=r.max_tokens, stop=r.stop)
        lats.append(time.perf_counter() - t1)
        toks.append(int(reply.usage.get("completion_tokens") or 0))
        texts.append(reply.text)
    return Phase(name, time.perf_counter() - t0, lats, toks, texts)


def fsync_cost(folder: Path, n: int) -> float:
    """Seconds per fsync'd reply append (the runner writes one per case, inside its concurrency slot)."""
    rec = {
        "id": "x" * 40,
        "key": "k" * 64,
        "status": "ok",
        "result": '"requires_tool"',
        "turns": [{"messages": [{"role": "user", "content": "y" * 3000}], "raw": FAKE_REPLY}],
    }
    path = folder / "fsync_probe.jsonl"
    t0 = time.perf_counter()
    for _ in range(n):
        append_jsonl(path, rec)
    return (time.perf_counter() - t0) / n


# ---- the endpoint ---------------------------------------------------------------------------------
class FakeEndpoint:
    """tests/fake_openai.py's FakeOpenAI (zero delay) in a child process."""

    def __enter__(self) -> str:
        if not (TESTS_DIR / "fake_openai.py").is_file():
            raise UserError(
                f"{TESTS_DIR / 'fake_openai.py'} is missing", fix="run the script from a benchsmith checkout"
            )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", FAKE_SERVER, str(TESTS_DIR), FAKE_REPLY],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        url = self.proc.stdout.readline().strip() if self.proc.stdout else ""
        if not url:
            self.__exit__()
            raise RuntimeFault(
                f"the fake endpoint did not start: {self.proc.stderr.read() if self.proc.stderr else ''}"
            )
        return url

    def __exit__(self, *exc: Any) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def check_endpoint(base_url: str, cfg: ModelConfig | None = None) -> None:
    headers = auth_headers(cfg) if cfg is not None else {}
    try:
        resp = httpx.get(base_url.rstrip("/") + "/models", headers=headers, timeout=10.0)
    except httpx.HTTPError as exc:
        raise UserError(
            f"cannot reach the model endpoint {mask_url(base_url)} ({type(exc).__name__}: {exc})",
            fix="start the server or fix --base-url (it should end with /v1)",
        ) from None
    if resp.status_code >= 500:
        raise UserError(f"{mask_url(base_url)}/models answered HTTP {resp.status_code}", fix="check the server")


def server_facts(cfg: ModelConfig) -> dict[str, Any]:
    host = urlsplit(str(cfg.base_url)).hostname or ""
    facts: dict[str, Any] = {
        "url": mask_url(cfg.base_url),
        "model": cfg.name,
        "local": cfg.local or host in ("127.0.0.1", "localhost", "::1"),
    }
    info = local_server_status()
    if info is not None and cfg.base_url and cfg.base_url.rstrip("/") == info.base_url:
        facts.update(
            local_model_server=True,
            pid=info.pid,
            slots=info.parallel,
            threads=info.threads,
            ctx_per_slot=info.ctx_per_slot,
        )
    else:
        root = str(cfg.base_url).rstrip("/").removesuffix("/v1")
        try:  # llama.cpp's server reports its slots here
            props = httpx.get(root + "/props", headers=auth_headers(cfg), timeout=5.0).json()
            if isinstance(props, dict) and "total_slots" in props:
                facts["slots"] = props["total_slots"]
        except (httpx.HTTPError, ValueError):
            pass
    return facts


# ---- report ---------------------------------------------------------------------------------------
def table(phases: list[Phase], unit: str) -> None:
    scale = 1000.0 if unit == "ms" else 1.0
    print(
        f"  {'phase':<22}{'requests':>9}{'wall s':>9}{'req/s':>9}{'mean ' + unit:>10}{'p50 ' + unit:>10}"
        f"{'p95 ' + unit:>10}{'tok/req':>9}"
    )
    for p in phases:
        mean = sum(p.latencies) / p.n if p.n else float("nan")
        tok = sum(p.completion_tokens) / p.n if p.n else float("nan")
        print(
            f"  {p.name:<22}{p.n:>9}{p.wall:>9.3f}{p.rps:>9.2f}{mean * scale:>10.3f}{pct(p.latencies, 0.5) * scale:>10.3f}"
            f"{pct(p.latencies, 0.95) * scale:>10.3f}{tok:>9.1f}"
        )
    for p in phases:
        if p.note:
            print(f"    {p.name}: {p.note}")


def same_replies(a: Phase, b: Phase) -> str:
    return f"{sum(x == y for x, y in zip(a.replies, b.replies))}/{min(a.n, b.n)}"


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


# ---- main -----------------------------------------------------------------------------------------
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", default=None, help="an OpenAI-compatible /v1 URL (default: the local model)")
    ap.add_argument("--model", default=None, help="model name at --base-url (default: the one it lists)")
    ap.add_argument("--cases", type=int, default=32, help="cases timed against the model (default 32)")
    ap.add_argument(
        "--concurrency", type=int, default=None, help="requests in flight (default: the local server's slots, else 4)"
    )
    ap.add_argument(
        "--split",
        type=Path,
        default=None,
        help="a split folder (default: build the default SLOT split into a temp folder)",
    )
    ap.add_argument("--overhead-cases", type=int, default=200, help="cases for the fake-endpoint overhead phase")
    ap.add_argument("--overhead-repeats", type=int, default=3, help="repeats of the overhead phase (the best counts)")
    ap.add_argument("--threads", type=int, default=None, help="threads of a local server this script starts")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per request (default 120)")
    ap.add_argument("--skip-sequential", action="store_true", help="leave out the sequential loop")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    for flag in ("cases", "concurrency", "overhead_cases", "overhead_repeats"):
        if getattr(args, flag) is not None and getattr(args, flag) < 1:
            ap.error(f"--{flag.replace('_', '-')} must be at least 1")
    try:
        return run(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    started_pid: int | None = None
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="benchsmith-runner-speed-") as tmp_name:
        tmp = Path(tmp_name)
        try:
            # ---- endpoint
            if args.base_url:
                check_endpoint(args.base_url)
                cfg = resolve_model(args.model, args.base_url, timeout=args.timeout)
            else:
                if local_server_status() is None:
                    print("starting the local model server ...", flush=True)
                    started_pid = start_local_server(threads=args.threads).pid
                cfg = resolve_model(DEFAULT_LOCAL_MODEL, None, timeout=args.timeout)
                check_endpoint(str(cfg.base_url))
            facts = server_facts(cfg)

            # ---- cases
            t0 = time.perf_counter()
            source = toolassess_folder(args.split, tmp)
            n, c = args.cases, args.concurrency or concurrency_for(cfg)
            reqs = write_cases(source, n, args.seed, tmp / "cases" / "model")
            warm = write_cases(source, c, args.seed, tmp / "cases" / "warm", skip=n)
            over_reqs = write_cases(source, args.overhead_cases, args.seed, tmp / "cases" / "overhead")
            prep_s = time.perf_counter() - t0
            diff = check_body(cfg, reqs[0])

            print("== runner speed: the evaluation runner vs the server's own maximum ==")
            print(
                f"machine: {os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} usable), {platform.python_implementation()} "
                f"{platform.python_version()}, load average {load_before[0]:.2f} / {load_before[1]:.2f} (1/5 min) at start"
            )
            print(
                "server: "
                + ", ".join(f"{k}={v}" for k, v in facts.items())
                + (
                    "  [started by this script]"
                    if started_pid
                    else ("  [already running, left running]" if not args.base_url else "")
                )
            )
            if facts.get("slots") and facts["slots"] != c:
                print(f"note: concurrency {c} differs from the server's {facts['slots']} slots")
            print(
                f"cases: {n} ToolAssess awareness cases (distinct requests, seed {args.seed}), "
                f"{args.overhead_cases} for the overhead phase; data ready in {prep_s:.1f} s"
            )
            print("raw body == ModelClient body: " + ("yes" if not diff else f"NO, differs in {', '.join(diff)}"))

            # ---- warm-up: two rounds of one request per slot, on cases outside the timed set (prompt
            # cache, grammar, connections), and the client libraries
            for _ in range(2):
                raw_phase("warm-up", cfg, warm, c)
            asyncio.run(
                ModelClient(cfg).acomplete(
                    warm[0].messages, json_schema=warm[0].json_schema, max_tokens=warm[0].max_tokens
                )
            )

            # ---- model phases: server max, runner, server max again, sequential
            print(f"\nagainst the model ({n} requests, concurrency {c}) ...", flush=True)
            s1 = raw_phase("server max (1st)", cfg, reqs, c)
            rn = runner_phase("runner (run_eval)", cfg, tmp / "cases" / "model", tmp / "runs" / "model", c, n)
            s2 = raw_phase("server max (2nd)", cfg, reqs, c)
            phases = [s1, rn, s2]
            sq = None
            if not args.skip_sequential:
                sq = sequential_phase("sequential loop", cfg, reqs)
                phases.append(sq)
            best = max(s1, s2, key=lambda p: p.rps)
            table(phases, "s")
            ratio = rn.rps / best.rps
            print(f"  server max = the better of its two runs: {best.name} ({s1.rps:.2f} and {s2.rps:.2f} req/s)")
            print(
                f"  same reply text as server max (1st): runner {same_replies(s1, rn)}, server max (2nd) "
                f"{same_replies(s1, s2)}" + (f", sequential {same_replies(s1, sq)}" if sq else "")
            )

            # ---- overhead against a zero-delay endpoint
            m = args.overhead_cases
            print(
                f"\nagainst a zero-delay fake endpoint ({m} requests, concurrency {c}, best of "
                f"{args.overhead_repeats}) ...",
                flush=True,
            )
            runs: dict[str, list[Phase]] = {"raw httpx": [], "ModelClient only": [], "runner (run_eval)": []}
            with FakeEndpoint() as fake_url:
                fcfg = fake_config(cfg, fake_url)
                raw_phase("warm-up", fcfg, over_reqs[:c], c)
                for i in range(args.overhead_repeats):
                    runs["raw httpx"].append(raw_phase("raw httpx", fcfg, over_reqs, c))
                    runs["ModelClient only"].append(client_phase("ModelClient only", fcfg, over_reqs, c))
                    runs["runner (run_eval)"].append(
                        runner_phase(
                            "runner (run_eval)", fcfg, tmp / "cases" / "overhead", tmp / "runs" / f"overhead-{i}", c, m
                        )
                    )
            fast = {k: min(v, key=lambda p: p.wall) for k, v in runs.items()}
            table(list(fast.values()), "ms")
            raw_w, cli_w, run_w = (fast[k].wall for k in ("raw httpx", "ModelClient only", "runner (run_eval)"))
            overhead_ms = (run_w - raw_w) / m * 1000
            fs = fsync_cost(tmp, 50) * 1000
            print(
                f"  runner overhead: ({run_w:.3f} - {raw_w:.3f}) s / {m} = {overhead_ms:.2f} ms/request, of which "
                f"client library (ModelClient/langchain/openai vs raw httpx) {(cli_w - raw_w) / m * 1000:.2f} ms, "
                f"runner bookkeeping {(run_w - cli_w) / m * 1000:.2f} ms (one fsync'd reply append alone: {fs:.2f} ms)"
            )
            inner = fast["runner (run_eval)"].inner_wall
            if inner is not None:
                print(
                    f"  without the runner's fixed costs (planning, run.json, the predictions rebuild): "
                    f"({inner:.2f} - {raw_w:.3f}) s / {m} = {(inner - raw_w) / m * 1000:.2f} ms/request"
                )

            # ---- summary
            load_after = os.getloadavg()
            print("\n== summary ==")
            print(
                f"  runner / server max     = {rn.rps:.2f} / {best.rps:.2f} = {ratio:.3f}   "
                f"target >= {TARGET_RATIO}: {verdict(ratio >= TARGET_RATIO)}"
            )
            if sq is not None:
                print(f"  sequential / server max = {sq.rps:.2f} / {best.rps:.2f} = {sq.rps / best.rps:.3f}")
            print(
                f"  runner overhead         = {overhead_ms:.2f} ms/request   "
                f"target < {TARGET_OVERHEAD_MS:g} ms: {verdict(overhead_ms < TARGET_OVERHEAD_MS)}"
            )
            busy = "  -- the machine was already busy at the start: figures are noisy" if load_before[0] > 0.5 else ""
            print(f"  load average {load_before[0]:.2f} at the start, {load_after[0]:.2f} at the end (1 min){busy}")
            return 0
        finally:
            if started_pid is not None:
                info = local_server_status()
                if info is not None and info.pid == started_pid:
                    stop_local_server()
                    print("stopped the local model server this script started")


if __name__ == "__main__":
    sys.exit(main())
