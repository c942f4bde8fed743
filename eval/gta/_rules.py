"""How GTA scores in each mode: the named choices where official and strict differ."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from benchsmith.eval import Rules


@dataclass(frozen=True, kw_only=True)
class GTARules(Rules):
    # ---- reading a turn
    #: a step is one ReAct action: GTA reads only the first call of a turn (or of a trajectory
    #: message) and takes a gold turn's first call as its gold call; strict reads every call
    first_call_only: bool
    #: a reply GTA's ReAct parser cannot read counts as a failed call (``NoAction``); strict: no call
    unreadable_is_failed_call: bool
    #: ToolAcc/ArgAcc compare what GTA's step record keeps (no tool when it is unknown, no
    #: arguments when they could not be read, a failing call's ``inputs``); strict the call as given
    match_recorded_step: bool
    # ---- answers
    #: GTA matches whitelist aliases between ``\b`` (``$24`` never matches after a space); strict
    #: needs no word character around them
    word_boundaries: bool
    #: GTA keeps empty aliases and groups (they match at any word boundary); strict drops them
    empty_aliases_match: bool
    #: GTA passes every answer on an empty whitelist (0 of 0 groups matched); strict passes none
    empty_whitelist_passes: bool
    #: GTA reads gt_answer by type: a non-empty dict is objective, a non-empty list subjective
    #: (every string a reference, blank ones too), any other value counted but never scored;
    #: strict by content (a whitelist, non-blank references; a string is one reference)
    gt_answer_by_type: bool
    #: GTA embeds every step answer, even an empty one, and end to end skips only the empty
    #: answer; strict scores a blank answer 0
    embeds_blank_answers: bool
    #: GTA scores every gold answer turn against the sample's gt_answer; strict the final one only
    scores_every_answer_turn: bool
    # ---- end to end
    #: GTA leaves calls to a tool outside the case's tools (its ``InvalidAction``) out of the
    #: category counts; strict counts them
    skips_unknown_tool_calls: bool
    #: GTA scores image-generation samples by the cosine of the image tools' arguments
    #: (``answer_acc_w_imggen``; the ``ans_acc_w_imggen`` figure); strict by their tool-name F1
    imggen_by_arguments: bool
    # ---- figures
    #: GTA's InstAcc total counts answered samples, not answer turns (it can exceed 1); strict
    #: counts every turn
    inst_total_per_answered_sample: bool
    #: a category's TP is every gold call whose tool was predicted at all (GTA compares sets of
    #: names); strict counts matched pairs (multiset intersection)
    tool_counts_as_sets: bool
    #: P/R/F1 as GTA prints them (``+ 1e-5`` in P's and F1's denominators, 0 without gold calls);
    #: strict exact, None for an empty category
    f1_as_printed: bool
    #: GTA's evaluator crashes on some data (a division by zero, ``KeyError: 'none'``): say so in
    #: ``official_crash``; strict has no such crash
    notes_gta_crashes: bool


STRICT = GTARules(
    mode="strict",
    first_call_only=False,
    unreadable_is_failed_call=False,
    match_recorded_step=False,
    word_boundaries=False,
    empty_aliases_match=False,
    empty_whitelist_passes=False,
    gt_answer_by_type=False,
    embeds_blank_answers=False,
    scores_every_answer_turn=False,
    skips_unknown_tool_calls=False,
    imggen_by_arguments=False,
    inst_total_per_answered_sample=False,
    tool_counts_as_sets=False,
    f1_as_printed=False,
    notes_gta_crashes=False,
)
OFFICIAL = GTARules(
    mode="official",
    first_call_only=True,
    unreadable_is_failed_call=True,
    match_recorded_step=True,
    word_boundaries=True,
    empty_aliases_match=True,
    empty_whitelist_passes=True,
    gt_answer_by_type=True,
    embeds_blank_answers=True,
    scores_every_answer_turn=True,
    skips_unknown_tool_calls=True,
    imggen_by_arguments=True,
    inst_total_per_answered_sample=True,
    tool_counts_as_sets=True,
    f1_as_printed=True,
    notes_gta_crashes=True,
)
#: the rules of each mode (``GTA.rules``)
RULES = MappingProxyType({"strict": STRICT, "official": OFFICIAL})
