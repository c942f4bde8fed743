"""Speed of NL2API convert+verify on the embedded default pairs, measured side by side.

Prints, in one run: plain SQL execution time per pair, convert+verify time per pair (parse,
convert, execute the SQL, execute the tool sequence, compare), their ratio, and
pairs/second for convert+verify in one process and in two worker processes.

    python perf/nl2api_speed.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import time
from pathlib import Path

from benchsmith.construction.nl2api import Database, Rejection, chinook_db, convert, execute_sql, run_and_check
from benchsmith.construction.nl2api import default_pairs_path


def load_pairs() -> list[str]:
    return [json.loads(line)["sql"] for line in Path(default_pairs_path()).read_text("utf-8").splitlines() if line.strip()]


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


def _worker(args: tuple[str, list[str], int]) -> int:
    path, sqls, rounds = args
    db = Database(path)
    done = 0
    for _ in range(rounds):
        convert_verify(db, sqls)
        done += len(sqls)
    return done


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
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
    workers = 2
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(workers) as pool:
        done = sum(pool.map(_worker, [(path, sqls, args.rounds)] * workers))
    elapsed = time.perf_counter() - t0
    print(f"convert + verify:      {done / elapsed:8.1f} pairs/s ({workers} processes, incl. start-up)")


if __name__ == "__main__":
    main()
