"""How BFCL scores in each mode: the named choices where official and strict differ."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from benchsmith.eval import Rules

from ._checker import Verdict, official_check, strict_check


@dataclass(frozen=True, kw_only=True)
class BFCLRules(Rules):
    #: decode with BFCL's decoder of the declared output format only (official); else JSON call
    #: shapes are read as FC and anything else as the prompt format, whatever the format says
    declared_decoder_only: bool
    #: a decoding problem the prompt decoder lets through (a unary operator, a repeated keyword, ...)
    #: fails the record before the check
    decoder_problems_fail: bool
    #: the AST check: BFCL's checker (its bugs kept) or the strict one (types and values by meaning)
    ast_check: Callable[..., Verdict]
    #: the checker raising on a record is that record's verdict, ``official_checker_crash`` (BFCL's
    #: whole run stops there); the strict check never raises
    checker_crash_is_verdict: bool
    #: a relevance record needs a sound call (a known function with its required arguments), not
    #: just any decoded call
    relevance_needs_sound_call: bool


STRICT = BFCLRules(
    mode="strict",
    declared_decoder_only=False,
    decoder_problems_fail=True,
    ast_check=strict_check,
    checker_crash_is_verdict=False,
    relevance_needs_sound_call=True,
)
OFFICIAL = BFCLRules(
    mode="official",
    declared_decoder_only=True,
    decoder_problems_fail=False,
    ast_check=official_check,
    checker_crash_is_verdict=True,
    relevance_needs_sound_call=False,
)
RULES = {"strict": STRICT, "official": OFFICIAL}
