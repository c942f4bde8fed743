"""Speed of NL2API convert+verify on the embedded default pairs, measured side by side.

Prints, in one run: plain SQL execution time per pair, convert+verify time per pair (parse,
convert, execute the SQL, execute the tool sequence, compare), their ratio; then whole builds
(``build_split``: convert, verify, observations, journal, write) of the default pairs repeated to
at least 5,000 in one process, in N worker processes and as Ray tasks in Ray local mode, with
pairs/s, pairs/s per core, whether the samples are identical, and Ray's time against the pool's; then
the floor of one process's build: every SQL statement the build ran, run again alone in the same
process, and the pairs' SQL parsed alone, with the rate a build could reach if nothing else cost
any time.

    python perf/nl2api_speed.py [--rounds 20] [--pairs 5000] [--workers 2] [--no-ray] [--no-floor]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from benchsmith.construction.nl2api import (
    Database,
    Rejection,
    chinook_db,
    convert,
    default_pairs_path,
    execute_sql,
    run_and_check,
)


def load_pairs() -> list[str]:
    return [
        json.loads(line)["sql"] for line in Path(default_pairs_path()).read_text("utf-8").splitlines() if line.strip()
    ]


def plain(db: Database, sqls: list[str]) -> None:
    for sql in sqls:
        try:
            execute_sql(db, sql)
        except Rejection:
            pass


def convert_verify(db: Database, sqls: list[str]) -> int:
    ok = 0
    for sql in sqls:
        try:
            conv = convert(db, sql)
            rows = execute_sql(db, sql)
            run_and_check(db, conv.setup, conv.calls, rows, conv.ordered, sql=sql)
            ok += 1
        except Rejection:
            pass
    return ok


def _duplicated_pairs(target: int, path: Path) -> int:
    """The default pairs repeated (fresh ids) until there are at least ``target``; returns the count."""
    rows = [json.loads(line) for line in Path(default_pairs_path()).read_text("utf-8").splitlines() if line.strip()]
    out, k = [], 0
    while len(out) < target:
        for row in rows:
            out.append({**row, "id": f"{row.get('id') or 'pair'}-copy{k}"})
        k += 1
    path.write_text("".join(json.dumps(r) + "\n" for r in out), "utf-8")
    return len(out)


def _content(out: Path) -> list:
    rows = []
    for line in (out / "samples.jsonl").read_text("utf-8").splitlines():
        s = json.loads(line)
        rows.append((s["id"], s["gold"], s["answer"]))
    return rows


def builds(n_target: int, workers: int, ray: bool) -> None:
    """Whole builds (convert, verify, observations, write) of >= n_target pairs: 1 process,
    ``workers`` processes and Ray local mode with ``workers`` CPUs, side by side."""
    from benchsmith.construction.nl2api import BuildOptions, build_split

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pairs = root / "pairs.jsonl"
        n = _duplicated_pairs(n_target, pairs)
        db = chinook_db()
        results = {}
        for label, opts in (
            ("1 process", BuildOptions(workers=1)),
            (f"{workers} processes", BuildOptions(workers=workers)),
        ):
            t0 = time.perf_counter()
            report = build_split(db, pairs, root / label.replace(" ", "_"), opts)
            results[label] = (time.perf_counter() - t0, report, root / label.replace(" ", "_"))
        if ray:
            try:
                import ray as ray_mod
            except ImportError:
                print("Ray local: skipped (pip install 'benchsmith[ray]')")
                ray_mod = None
            if ray_mod is not None:
                t0 = time.perf_counter()
                ray_mod.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
                start_s = time.perf_counter() - t0
                t0 = time.perf_counter()
                report = build_split(db, pairs, root / "ray", BuildOptions(workers=workers, ray="auto"))
                results[f"Ray local ({workers} CPUs)"] = (time.perf_counter() - t0, report, root / "ray")
                ray_mod.shutdown()
                print(f"Ray local start-up: {start_s:.1f} s (not counted below)")
        base = _content(results["1 process"][2])
        print(f"whole builds of {n} pairs (the {len(load_pairs())} default pairs repeated), cores: {os.cpu_count()}:")
        for label, (secs, report, out) in results.items():
            same = "identical" if _content(out) == base else "DIFFERENT"
            cores = 1 if label == "1 process" else workers
            print(
                f"  {label:22s} {secs:7.2f} s  {n / secs:8.1f} pairs/s  {n / secs / cores:8.1f} pairs/s/core  "
                f"verified {report['verified']}  samples {same} to 1 process"
            )
        pool = results[f"{workers} processes"][0]
        for label, (secs, _, _) in results.items():
            if label.startswith("Ray"):
                print(f"  Ray local / process pool time: {secs / pool:.2f}x")


def floor(n_target: int) -> None:
    """One process's build with its SQL statements recorded; then those statements alone and the
    pairs' parsing alone (the work no faster Python around them can remove), in the same process."""
    import sqlglot

    from benchsmith.construction.nl2api import BuildOptions, build_split

    statements: list[tuple[str, tuple, int | None]] = []
    run = Database._run  # every statement of a Database passes through it

    def recording(self, sql, params=(), limit=None, max_rows=None):  # noqa: ANN001, ANN202
        statements.append((sql, tuple(params), max_rows))
        return run(self, sql, params, limit, max_rows)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pairs = root / "pairs.jsonl"
        n = _duplicated_pairs(n_target, pairs)
        db_path = chinook_db()
        Database._run = recording
        try:
            t0 = time.perf_counter()
            report = build_split(db_path, pairs, root / "out", BuildOptions(workers=1))
            build_s = time.perf_counter() - t0
        finally:
            Database._run = run
        db = Database(db_path)
        t0 = time.perf_counter()
        for sql, params, max_rows in statements:
            db.execute(sql, params, max_rows=max_rows)
        sql_s = time.perf_counter() - t0
        sqls = [json.loads(line)["sql"] for line in pairs.read_text("utf-8").splitlines()]
        t0 = time.perf_counter()
        for sql in sqls:  # what the converter's parse_query does before its checks
            sqlglot.parse(sql, read="sqlite")
        parse_s = time.perf_counter() - t0
    per = 1e3 / n
    print(
        f"where one process's build of {n} pairs goes ({report['verified']} verified, {len(statements):,} "
        f"SQL statements, {len(statements) / n:.1f} per pair):"
    )
    print(f"  whole build            {build_s:7.2f} s  {build_s * per:6.3f} ms/pair  {n / build_s:8.1f} pairs/s")
    print(f"  its SQL statements     {sql_s:7.2f} s  {sql_s * per:6.3f} ms/pair  ({sql_s / build_s:.0%} of the build)")
    print(f"  parsing the pairs' SQL {parse_s:7.2f} s  {parse_s * per:6.3f} ms/pair  ({parse_s / build_s:.0%})")
    print(
        f"  everything else        {build_s - sql_s - parse_s:7.2f} s  {(build_s - sql_s - parse_s) * per:6.3f} ms/pair"
    )
    print(f"  floor: statements + parsing alone would run at {n / (sql_s + parse_s):.1f} pairs/s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--pairs", type=int, default=5000, help="pairs in the whole-build comparison")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--no-floor", action="store_true", help="skip the floor of one process's build")
    args = ap.parse_args()
    path = str(chinook_db())
    db = Database(path)
    sqls = load_pairs()
    verified = convert_verify(db, sqls)  # warm-up (page cache, sqlglot)
    plain(db, sqls)
    t_plain = t_conv = 0.0
    for _ in range(args.rounds):  # interleaved so both see the same machine state
        t0 = time.perf_counter()
        plain(db, sqls)
        t1 = time.perf_counter()
        convert_verify(db, sqls)
        t2 = time.perf_counter()
        t_plain += t1 - t0
        t_conv += t2 - t1
    n = len(sqls) * args.rounds
    print(f"pairs: {len(sqls)} ({verified} verify), rounds: {args.rounds}, cores: {os.cpu_count()}")
    print(f"plain SQL execution:   {t_plain / n * 1e3:8.3f} ms/pair  {n / t_plain:8.1f} pairs/s")
    print(f"convert + verify:      {t_conv / n * 1e3:8.3f} ms/pair  {n / t_conv:8.1f} pairs/s (1 process)")
    print(f"cost ratio (convert+verify / plain SQL): {t_conv / t_plain:.2f}x")
    builds(args.pairs, args.workers, not args.no_ray)
    if not args.no_floor:
        floor(args.pairs)


if __name__ == "__main__":
    main()
