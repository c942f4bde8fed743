"""How ACEBench scores in each mode: the named choices where official and strict differ."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchsmith.eval import Rules

from . import _agent, _normal, _special
from ._decode import Call, decode_official, decode_strict, official_agent_turn


@dataclass(frozen=True, kw_only=True)
class AceRules(Rules):
    #: normal outputs: ACEBench deletes every whitespace character, then reads a list of calls (bare
    #: names as strings, positional arguments dropped); strict reads them as written, literals only
    output_decoder: Callable[[Any], list[Call]]
    #: normal calls against the possible answers: ACEBench's checker, its bugs kept (standardised
    #: strings with superset strings passing, numbers unchecked, crashes); strict: typed equality of
    #: every argument, parallel calls in any order
    call_check: Callable[..., _normal.Verdict]
    #: special answers: ACEBench looks for the phrase and each name or value as a verbatim substring;
    #: strict matches them case-insensitively, names and values as whole tokens
    special_check: Callable[[str, str, Any], _special.Verdict]
    #: agent end state: ACEBench grades the one the inference record reports (it executes nothing);
    #: strict always grades the replay of the calls
    trust_reported_state: bool
    #: agent turns: read as ACEBench's executor reads them (brackets added, non-calls dropped); strict
    #: decodes a turn like a normal output
    turn_decoder: Callable[[Any], list[Call]]
    #: agent end state against the gold: ACEBench pairs classes by exact name (skipping the others)
    #: and checks only the gold's keys of dict attributes; strict wants every exported attribute equal
    end_state_check: Callable[..., tuple[bool, str]]
    #: agent process: ACEBench gives 1.0 whenever the end state is right; strict always measures it
    full_process_when_end_ok: bool
    #: agent milestones: ACEBench matches turns as stripped strings; strict as decoded calls
    milestones_as_text: bool
    #: ACEBench rounds accuracies, process scores, families and the Summary to 3 places; strict does not
    round_to_3_places: bool
    #: agent episodes whose simulated user failed: counted by ACEBench (it has no such notion); strict
    #: leaves them out, never charging them to the model
    skip_user_simulator_failures: bool
    #: families: ACEBench averages over all its sub-categories, a missing one counted as 0; strict over
    #: the sub-categories present
    missing_category_is_zero: bool
    #: Summary: ACEBench weighs the families by sqrt of its fixed sizes 700/150/50 (weights to 4 places,
    #: a missing family as 0); strict by sqrt of the data's own family sizes, families present only
    fixed_summary_weights: bool


STRICT = AceRules(
    mode="strict",
    output_decoder=decode_strict,
    call_check=_normal.check_strict,
    special_check=_special.check_strict,
    trust_reported_state=False,
    turn_decoder=decode_strict,
    end_state_check=_agent.compare_strict,
    full_process_when_end_ok=False,
    milestones_as_text=False,
    round_to_3_places=False,
    skip_user_simulator_failures=True,
    missing_category_is_zero=False,
    fixed_summary_weights=False,
)
OFFICIAL = AceRules(
    mode="official",
    output_decoder=decode_official,
    call_check=_normal.check_official,
    special_check=_special.check_official,
    trust_reported_state=True,
    turn_decoder=official_agent_turn,
    end_state_check=_agent.compare_official,
    full_process_when_end_ok=True,
    milestones_as_text=True,
    round_to_3_places=True,
    skip_user_simulator_failures=False,
    missing_category_is_zero=True,
    fixed_summary_weights=True,
)
RULES = {"strict": STRICT, "official": OFFICIAL}
