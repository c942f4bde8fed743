"""``benchsmith report RUN_DIR...``: HTML, Markdown and CSV reports over evaluation runs."""
# annotations are real objects, not strings (see cli/__init__.py)

from pathlib import Path
from typing import List, Optional

import typer


def register(app) -> None:  # noqa: ANN001 - a typer.Typer
    """Add the ``report`` command to the top-level app."""
    from . import check_number, check_out_dir, user_errors

    @app.command("report")
    @user_errors
    def report(
        run_dirs: List[Path] = typer.Argument(
            ...,
            metavar="RUN_DIR",
            help="Run folders written by `benchsmith eval run` (scored with `benchsmith eval score --run`)",
        ),
        out: Optional[Path] = typer.Option(
            None,
            "--out",
            envvar="BENCHSMITH_REPORT_OUT",
            help="Where report.html, report.md, leaderboard.csv and categories.csv go "
            "(default: the first RUN_DIR/report)",
        ),
        title: Optional[str] = typer.Option(
            None, "--title", envvar="BENCHSMITH_REPORT_TITLE", help="Title of the report"
        ),
        failures: int = typer.Option(
            20,
            "--failures",
            envvar="BENCHSMITH_REPORT_FAILURES",
            help="Failing cases shown per task and run (a seeded, deterministic sample; >= 0)",
        ),
    ) -> None:
        """Compare evaluation runs: one self-contained report.html (leaderboard, radar of abilities,
        per-category charts, error breakdown, sampled failures with the model's raw replies),
        report.md, leaderboard.csv and categories.csv."""
        check_number("--failures", failures, ge=0)
        target = out if out is not None else run_dirs[0] / "report"
        check_out_dir(target)
        import matplotlib

        matplotlib.use("Agg")
        from benchsmith.eval.report import write_report

        result = write_report(run_dirs, target, title=title, failures=failures)
        if result["warnings"]:
            from rich.console import Console

            console = Console(stderr=True)
            for w in result["warnings"]:
                console.print(f"[yellow]note:[/] {w}", highlight=False, soft_wrap=True)
        typer.echo(result["files"]["html"])
