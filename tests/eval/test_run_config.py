"""``eval run``'s options are one typed RunConfig: every field has its flag, every flag its field,
and a wrong key or value is refused by the model, not by checks in the CLI."""

from __future__ import annotations

import dataclasses

import pytest
import typer
from pydantic import ValidationError

from benchsmith.cli import eval_app
from benchsmith.eval import RUN_FLAGS, RunConfig, TaskOptions


def _fields() -> set[str]:
    top = {name for name in RunConfig.model_fields if name != "options"}
    nested = {f"options.{f.name}" for f in dataclasses.fields(TaskOptions) if f.name != "calling"}
    return top | nested


def test_every_option_has_a_flag_and_every_flag_an_option() -> None:
    assert set(RUN_FLAGS) == _fields()


def test_every_flag_is_an_option_of_eval_run() -> None:
    command = typer.main.get_command(eval_app).commands["run"]  # type: ignore[attr-defined]
    declared = {opt for param in command.params for opt in param.opts}
    assert set(RUN_FLAGS.values()) <= declared


def test_a_misspelled_option_is_refused() -> None:
    with pytest.raises(ValidationError, match="step_budjet"):
        RunConfig(split="s", out="o", options={"step_budjet": 8})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="concurency"):
        RunConfig(split="s", out="o", concurency=2)  # type: ignore[call-arg]


def test_defaults_are_the_documented_ones() -> None:
    config = RunConfig(split="s", out="o")  # type: ignore[arg-type]
    assert (config.calling, config.options.strategy, config.options.max_tokens, config.timeout) == (
        "auto",
        "react",
        384,
        120.0,
    )
