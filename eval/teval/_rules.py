"""How T-Eval scores in each mode: the named choices where official and strict differ."""

from __future__ import annotations

from dataclasses import dataclass

from benchsmith.eval import Rules


@dataclass(frozen=True, kw_only=True)
class TEvalRules(Rules):
    # ---- instruct
    #: action and argument values compare by typed equality (bools are not numbers, 1 == 1.0);
    #: T-Eval uses Python ``==`` (``True == 1``)
    instruct_typed_equality: bool
    #: string format: T-Eval fills its template with ``(.*)`` and uses the literal text as a regular
    #: expression unescaped (``(`` shifts the fields, ``{{args}}`` loses its field, a template that is
    #: no regex or format string crashes its evaluator); strict takes the markers literally
    template_as_regex: bool
    #: string-format arguments: T-Eval reads a Python literal only (``true`` / ``null`` -> ``{}``);
    #: strict also JSON, and JSON with ``'`` turned into ``"``
    args_literal_only: bool
    # ---- plan
    #: T-Eval's LIS DP starts every prediction at 1, unmatched ones included (any non-empty plan
    #: gets >= 1 correct step); strict starts unmatched steps at 0
    lis_starts_at_one: bool
    #: among equal-weight matchings, the one networkx's ``max_weight_matching`` picks on the graph
    #: T-Eval builds (weights rebuilt bit for bit); strict takes any optimal assignment
    networkx_tie_pick: bool
    #: a plan with nothing left once the final FinishAction is dropped crashes T-Eval's evaluator
    #: (scored 0, ``official_crash``); strict scores it 0 (1 when the gold is empty too)
    empty_plan_crashes: bool
    #: str plans: at the earliest position the longest API name wins; T-Eval takes the first of the list
    plan_ties_to_longest_name: bool
    #: str plans: a step's args are the text after the API name; T-Eval takes the whole fragment
    plan_args_after_name: bool
    # ---- reason / understand
    #: a reason cosine >= 1 - 1e-6 (identical texts: 0.99999994 in float32) counts as 1.0; T-Eval
    #: keeps the float32 value
    near_one_cosine_is_one: bool
    #: understand json: T-Eval divides the hits by n + 1e-5 (a perfect record scores 0.99999 for
    #: n = 1); strict by n
    understand_adds_eps: bool
    #: understand json: T-Eval compares the values as ``str()`` (``"3"`` = ``3``); strict by typed equality
    understand_compares_str: bool
    #: understand str: also whitespace stripped, and a response that parses to the gold dict passes
    #: (JSON quoting); T-Eval strips quotes only and compares with ``str(gold args)``
    understand_str_lenient: bool
    # ---- review
    #: review str: the letter after the first ``:`` or ``：``; T-Eval looks for ASCII ``:`` only
    review_fullwidth_colon: bool
    #: review json: T-Eval needs a boolean ``is_finished``, then compares ``{'review': bool}`` with
    #: the gold letter (never a match); strict reads ``{"answer": "<letter>"}``
    review_json_compares_dict: bool
    # ---- aggregation (scores.json)
    #: T-Eval rounds instruct's format / args_em and review's score to 4 places; strict does not
    round_to_4_places: bool
    #: instruct records tagged ``str`` count as ``string``; T-Eval's aggregator does not read them
    #: (it reads only the formats of ``_OFFICIAL_FORMATS``; the rest is under not_in_overall)
    instruct_str_counts: bool
    #: an ability's figure needs every format T-Eval's aggregator reads, and Overall all six
    #: abilities (else None), as T-Eval; strict averages those present
    figures_need_every_part: bool


STRICT = TEvalRules(
    mode="strict",
    instruct_typed_equality=True,
    template_as_regex=False,
    args_literal_only=False,
    lis_starts_at_one=False,
    networkx_tie_pick=False,
    empty_plan_crashes=False,
    plan_ties_to_longest_name=True,
    plan_args_after_name=True,
    near_one_cosine_is_one=True,
    understand_adds_eps=False,
    understand_compares_str=False,
    understand_str_lenient=True,
    review_fullwidth_colon=True,
    review_json_compares_dict=False,
    round_to_4_places=False,
    instruct_str_counts=True,
    figures_need_every_part=False,
)
OFFICIAL = TEvalRules(
    mode="official",
    instruct_typed_equality=False,
    template_as_regex=True,
    args_literal_only=True,
    lis_starts_at_one=True,
    networkx_tie_pick=True,
    empty_plan_crashes=True,
    plan_ties_to_longest_name=False,
    plan_args_after_name=False,
    near_one_cosine_is_one=False,
    understand_adds_eps=True,
    understand_compares_str=True,
    understand_str_lenient=False,
    review_fullwidth_colon=False,
    review_json_compares_dict=True,
    round_to_4_places=True,
    instruct_str_counts=False,
    figures_need_every_part=True,
)
RULES = {"strict": STRICT, "official": OFFICIAL}
