"""How NL2API scores in each mode: the named choices where official and strict differ."""

from __future__ import annotations

from dataclasses import dataclass

from benchsmith.eval import Rules


@dataclass(frozen=True, kw_only=True)
class NL2APIRules(Rules):
    #: $label$ references of the prediction renamed to the gold's before comparing (official compares
    #: the labels as written, so a chain with other label names fails)
    align_labels: bool
    #: slot strings and the sequence match compare numbers by value (2 == 2.0); official compares
    #: the JSON the model wrote
    numbers_by_value: bool
    #: answers: every number rounded to the decimals its gold column is written with, then compared
    #: exactly (official); else the split's answer spec, numbers within its tolerance
    round_to_gold_decimals: bool
    #: an ordered answer whose rows differ only in the order of tied rows (equal ORDER BY keys) passes
    ties_in_any_order: bool


STRICT = NL2APIRules(
    mode="strict", align_labels=True, numbers_by_value=True, round_to_gold_decimals=False, ties_in_any_order=True
)
OFFICIAL = NL2APIRules(
    mode="official", align_labels=False, numbers_by_value=False, round_to_gold_decimals=True, ties_in_any_order=False
)
RULES = {"strict": STRICT, "official": OFFICIAL}
