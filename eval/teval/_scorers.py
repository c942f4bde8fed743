"""The six T-Eval abilities, each in a json and a str response format, as pure scorers.

Each scorer is registered as ``teval.<ability>.<format>`` and takes ``(case, prediction, mode)``.
``case.gold`` is the record's ``ground_truth``; ``case.input`` holds the instruct ``template``
and the plan ``api_list``. A response that cannot be parsed scores 0 (error type
``parse_error``). Each scorer reads the mode's ``TEvalRules`` (``_rules.py``), one named choice per
official/strict difference (docs/eval/teval.md lists them).
"""

from __future__ import annotations

import bisect
import math
import operator
from collections.abc import Callable
from typing import Any

from benchsmith.eval import EvalCase, Mode, RecordResult, failed, passed, scorer
from benchsmith.eval.budget import budget_paused, check_limit, embedding_text

from ._parse import (
    FINISH,
    ResponseError,
    TemplateError,
    drop_finish,
    literal_args,
    load_response,
    other_api_names,
    parse_markers,
    parse_template,
    plan_from_json,
    plan_from_text,
    review_letter,
    rru_from_json,
    string_template,
)
from ._rules import RULES, TEvalRules

NAME_WEIGHT, ARGS_WEIGHT, MATCH_THRESHOLD = 0.75, 0.25, 0.8
UNDERSTAND_EPS = 1e-5
FULL = 1.0 - 1e-6  # a continuous score at or above this counts as a full match


def _encode(texts: list[str]) -> Any:
    """Unit vectors of ``texts`` (each cut to what the model reads, :func:`embedding_text`); the
    call that loads the model does not count against the record's time limit."""
    from benchsmith.models import get_embedder

    emb = get_embedder()
    texts = [embedding_text(t) for t in texts]
    if not emb.loaded:
        with budget_paused():
            return emb.encode(texts)
    return emb.encode(texts)


def _clamp(x: float) -> float:
    if not isinstance(x, (int, float)) or math.isnan(x):
        return 0.0
    return float(min(1.0, max(0.0, x)))


def _result(
    case: EvalCase, score: float, ok: bool, error_type: str | None, reason: str = "", **details: Any
) -> RecordResult:
    score = _clamp(score)
    if ok:
        return passed(case, score, **details)
    return failed(case, error_type or "mismatch", reason, score=score, **details)


def _parse_failed(case: EvalCase, exc: Exception, **details: Any) -> RecordResult:
    return failed(case, "parse_error", str(exc), score=0.0, **details)


def same_value(a: Any, b: Any) -> bool:
    """Typed equality: bools are not numbers, 1 == 1.0, containers compared element-wise."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


# ---- instruct --------------------------------------------------------------------------------
def _args_em(gold: dict[str, Any], action: Any, args: dict[str, Any], eq: Callable[[Any, Any], bool]) -> float:
    gold_args = gold.get("args") or {}
    if not isinstance(gold_args, dict):
        gold_args = {}
    hits = 1.0 if eq(gold.get("action"), action) else 0.0
    for key, value in gold_args.items():
        if eq(args.get(key, ""), value):
            hits += 1.0
    return hits / (len(gold_args) + 1)


def _instruct(case: EvalCase, prediction: str, rules: TEvalRules, fmt: str) -> RecordResult:
    template = case.input.get("template") or {}
    gold = case.gold if isinstance(case.gold, dict) else {}
    if fmt == "json":
        try:
            data = load_response(prediction)
            if not isinstance(data, dict):
                raise ResponseError("the response is not an object")
            keys = [template.get("thought", "thought"), template.get("action", "action"), template.get("args", "args")]
            missing = [k for k in keys if k not in data]
            if missing:
                raise ResponseError(f"the response lacks the template keys {missing}")
        except ResponseError as exc:
            return _parse_failed(case, exc, format=0.0, args_em=0.0)
        action, args = data[keys[1]], data[keys[2]]
        args = args if isinstance(args, dict) else {}
    else:
        if not rules.template_as_regex:
            fields = parse_markers(template, prediction)
        else:
            try:
                fields = parse_template(string_template(template), prediction, as_regex=True)
            except TemplateError as exc:
                return failed(case, "official_crash", str(exc), score=0.0, format=0.0, args_em=0.0)
        if fields is None:
            return _parse_failed(
                case, ResponseError("the response does not follow the string template"), format=0.0, args_em=0.0
            )
        action = fields.get("action", "")
        action = action.strip() if isinstance(action, str) else action
        raw_args = fields.get("args", "")
        args = literal_args(raw_args, rules.args_literal_only) if isinstance(raw_args, str) else {}
    eq: Callable[[Any, Any], bool] = same_value if rules.instruct_typed_equality else operator.eq
    em = _args_em(gold, action, args, eq)
    action_ok = eq(gold.get("action"), action)
    ok = em >= 1.0
    return _result(
        case,
        (1.0 + em) / 2,
        ok,
        "wrong_args" if action_ok else "wrong_action",
        "wrong arguments" if action_ok else f"expected action {gold.get('action')!r}",
        format=1.0,
        args_em=em,
    )


@scorer("teval.instruct.json")
def instruct_json(case: EvalCase, prediction: str, mode: Mode = "strict") -> RecordResult:
    return _instruct(case, prediction, RULES[mode], "json")


@scorer("teval.instruct.string")
def instruct_string(case: EvalCase, prediction: str, mode: Mode = "strict") -> RecordResult:
    return _instruct(case, prediction, RULES[mode], "string")


# ---- plan ------------------------------------------------------------------------------------
def max_weight_assignment(weights: Any) -> list[tuple[int, int]]:
    """Pairs (row, col) of a maximum-weight matching of a non-negative weight matrix (lists or a
    numpy array); zero-weight pairs (non-edges) are left out. scipy if installed, else networkx,
    else a small Hungarian."""
    n = len(weights)
    m = len(weights[0]) if n else 0
    if n == 0 or m == 0:
        return []
    try:
        import numpy as np
        from scipy.optimize import linear_sum_assignment

        rows, cols = linear_sum_assignment(np.asarray(weights, dtype=float), maximize=True)
        pairs = list(zip(rows.tolist(), cols.tolist()))
    except ImportError:
        try:
            import networkx as nx

            g = nx.Graph()
            for i in range(n):
                for j in range(m):
                    if weights[i][j] > 0:
                        g.add_edge(("p", i), ("g", j), weight=weights[i][j])
            pairs = []
            for a, b in nx.max_weight_matching(g):
                (_, i), (_, j) = (a, b) if a[0] == "p" else (b, a)
                pairs.append((i, j))
        except ImportError:
            pairs = _hungarian_max(weights)
    return sorted((i, j) for i, j in pairs if weights[i][j] > 0)


def _hungarian_max(weights: list[list[float]]) -> list[tuple[int, int]]:
    """Maximum-weight assignment on a rectangular matrix (O(n^2 m), potentials method)."""
    transpose = len(weights) > len(weights[0])
    w = [list(r) for r in zip(*weights)] if transpose else weights
    n, m = len(w), len(w[0])
    top = max((x for r in w for x in r), default=0.0)
    cost = [[top - x for x in r] for r in w]
    inf = float("inf")
    u, v, p, way = [0.0] * (n + 1), [0.0] * (m + 1), [0] * (m + 1), [0] * (m + 1)
    for i in range(1, n + 1):
        p[0], j0 = i, 0
        minv, used = [inf] * (m + 1), [False] * (m + 1)
        while True:
            used[j0] = True
            i0, delta, j1 = p[j0], inf, 0
            for j in range(1, m + 1):
                if not used[j]:
                    cur = cost[i0 - 1][j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j], way[j] = cur, j0
                    if minv[j] < delta:
                        delta, j1 = minv[j], j
            for j in range(m + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while True:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
            if j0 == 0:
                break
    pairs = [(p[j] - 1, j - 1) for j in range(1, m + 1) if p[j] != 0]
    return [(j, i) for i, j in pairs] if transpose else pairs


def longest_increasing(mapped: list[int], lis_starts_at_one: bool) -> int:
    """Length of the longest strictly increasing run of matched gold indices (-1 = unmatched)
    in prediction order. ``lis_starts_at_one`` reproduces T-Eval's DP, which starts every position
    at 1, unmatched ones included (so any non-empty plan gets at least 1).

    >>> longest_increasing([0, -1, 2, 1], lis_starts_at_one=False)
    2
    >>> longest_increasing([-1, -1], lis_starts_at_one=False), longest_increasing([-1, -1], lis_starts_at_one=True)
    (0, 1)
    """
    if not mapped:
        return 0
    # the longest strictly increasing subsequence of the matched indices (patience sorting,
    # O(n log n)); T-Eval's quadratic DP gives the same length, and 1 when nothing matched
    tails: list[int] = []
    for g in mapped:
        if g == -1:
            continue
        at = bisect.bisect_left(tails, g)
        if at == len(tails):
            tails.append(g)
        else:
            tails[at] = g
    return max(len(tails), 1) if lis_starts_at_one else len(tails)


def official_matching(weights: Any) -> list[tuple[int, int]]:
    """T-Eval's matching: a networkx graph with prediction nodes ``i`` (int) and gold nodes ``str(j)``,
    an edge per pair above the threshold added row by row, then ``networkx.max_weight_matching``.
    Among matchings of equal weight networkx's choice depends on exactly this graph (node names,
    edge insertion order, weights to the last bit), so it is rebuilt the same way."""
    import networkx as nx

    g = nx.Graph()
    for i, row in enumerate(weights):
        for j, w in enumerate(row):
            if w > MATCH_THRESHOLD:
                g.add_edge(i, str(j), weight=w)
    pairs = []
    for a, b in nx.max_weight_matching(g):
        i, j = (a, b) if isinstance(a, int) else (b, a)
        pairs.append((i, int(j)))
    return sorted(pairs)


TIE_MARGIN = 1e-4  # weights closer than this (to each other or to the threshold) may be ordered by float noise


def official_weights(pred: list[dict[str, Any]], gold: list[dict[str, Any]]) -> Any:
    """The official similarity matrix to the last bit: each list of names / args strings encoded
    in one batch, sentence-transformers' ``cos_sim`` (float32), clipped at 0 and weighted in
    float32, stored as float64 (see ``_batches``)."""
    import numpy as np

    from ._batches import official_cosines

    def texts(steps: list[dict[str, Any]], key: str) -> list[str]:
        return [embedding_text(str(s[key])) for s in steps]

    names = official_cosines(texts(pred, "name"), texts(gold, "name"))
    args = official_cosines(texts(pred, "args"), texts(gold, "args"))
    return (names * np.float32(NAME_WEIGHT) + args * np.float32(ARGS_WEIGHT)).astype(np.float64).tolist()


def _unique_optimum(sims: list[list[float]], pairs: list[tuple[int, int]]) -> bool:
    """True when float noise of the size of the official code's (about 1e-7) cannot change the
    maximum-weight matching ``pairs`` of the similarity matrix ``sims``: no similarity is within
    :data:`TIE_MARGIN` of the threshold, and every other matching weighs at least that much less.

    Fast sufficient test first: every matched pair beats the rest of its row and column by the
    margin and no row or column left unmatched has an edge (then each alternative loses at least
    the margin). Otherwise the runner-up is the best matching without one of the matched pairs."""
    t, margin = MATCH_THRESHOLD, TIE_MARGIN
    for row in sims:
        for x in row:
            if -margin < x - t < margin:
                return False
    weights = [[x if x > t else 0.0 for x in row] for row in sims]
    row_of = {j: i for i, j in pairs}
    col_of = dict(pairs)
    fast = True
    for i, row in enumerate(weights):
        j = col_of.get(i)
        for k, x in enumerate(row):
            if not x or k == j:
                continue
            if j is None or k not in row_of or row[j] - x < margin or weights[row_of[k]][k] - x < margin:
                fast = False
                break
        if not fast:
            break
    if fast:
        return True
    best = sum(weights[i][j] for i, j in pairs)
    for i, j in pairs:
        saved, weights[i][j] = weights[i][j], 0.0
        alt = sum(weights[a][b] for a, b in max_weight_assignment(weights))
        weights[i][j] = saved
        if best - alt < margin:
            return False
    return True


def _groups(texts: list[tuple[str, str]]) -> list[list[int]]:
    """Indices with identical (name, args) text, in order; identical steps have identical rows."""
    seen: dict[tuple[str, str], list[int]] = {}
    for i, t in enumerate(texts):
        seen.setdefault(t, []).append(i)
    return list(seen.values())


def _same_run_length(
    sims: list[list[float]], pairs: list[tuple[int, int]], pred: list[dict[str, Any]], gold: list[dict[str, Any]]
) -> bool:
    """True when every maximum-weight matching (up to float noise) gives the same increasing run
    as ``pairs``, although several weigh the same because steps repeat: each group of identical
    steps has at most one matched member and lies in consecutive positions (so moving the match
    inside the group keeps the order of the matched gold indices), and every matching that is not
    such a move weighs at least :data:`TIE_MARGIN` less (the best one without any pair of a
    matched group pair is the runner-up)."""
    t, margin = MATCH_THRESHOLD, TIE_MARGIN
    if any(-margin < x - t < margin for row in sims for x in row):
        return False
    row_groups = _groups([(s["name"], str(s["args"])) for s in pred])
    col_groups = _groups([(s["name"], str(s["args"])) for s in gold])
    matched_rows = {i for i, _ in pairs}
    matched_cols = {j for _, j in pairs}
    row_of_group: dict[int, list[int]] = {}
    col_of_group: dict[int, list[int]] = {}
    for groups, matched, index in ((row_groups, matched_rows, row_of_group), (col_groups, matched_cols, col_of_group)):
        for g in groups:
            hit = [i for i in g if i in matched]
            if len(hit) > 1 or (hit and g[-1] - g[0] != len(g) - 1):
                return False
            for i in g:
                index[i] = g
    weights = [[x if x > t else 0.0 for x in row] for row in sims]
    best = sum(weights[i][j] for i, j in pairs)
    for i, j in pairs:
        rows, cols = row_of_group[i], col_of_group[j]
        saved = [(a, b, weights[a][b]) for a in rows for b in cols]
        for a, b, _ in saved:
            weights[a][b] = 0.0
        alt = sum(weights[a][b] for a, b in max_weight_assignment(weights))
        for a, b, w in saved:
            weights[a][b] = w
        if best - alt < margin:
            return False
    return True


def plan_f1(pred: list[dict[str, Any]], gold: list[dict[str, Any]], rules: TEvalRules) -> dict[str, Any]:
    """Precision, recall and F1 of a predicted plan against the gold plan (FinishAction dropped).

    Both modes find a maximum-weight matching of the pairs above the threshold, the optimal
    assignment of :func:`max_weight_assignment`. With ``rules.networkx_tie_pick`` it must be the
    matching T-Eval's networkx call picks when several weigh the same (duplicated or
    interchangeable steps): when the optimum is unique by a margin, or all optimal matchings give
    the same increasing run (:func:`_same_run_length`), the assignment's run is the official one;
    otherwise the official weights are rebuilt bit for bit (:func:`official_weights`) and matched
    by :func:`official_matching`. The run is counted by :func:`longest_increasing`
    (``rules.lis_starts_at_one``); an empty plan raises :class:`ResponseError` with
    ``rules.empty_plan_crashes``."""
    import numpy as np

    pred, gold = drop_finish(pred), drop_finish(gold)
    if not pred or not gold:
        if not rules.empty_plan_crashes:
            both = not pred and not gold
            return {"precision": float(both), "recall": float(both), "f1": float(both), "correct": 0, "matched": []}
        # the official evaluator embeds an empty list of step names and crashes in cos_sim (torch.mm
        # of a 1x0 and a dxN matrix), which stops the whole evaluation; the record counts as 0
        raise ResponseError(
            "the official evaluator crashes on this plan (nothing is left to compare once the "
            "final FinishAction is dropped): RuntimeError in sentence-transformers' cos_sim; scored 0"
        )
    n, m = len(pred), len(gold)
    vecs = _encode(
        [s["name"] for s in pred]
        + [s["name"] for s in gold]
        + [str(s["args"]) for s in pred]
        + [str(s["args"]) for s in gold]
    )
    names = (vecs[:n] @ vecs[n : n + m].T).astype(np.float64)
    args = (vecs[n + m : 2 * n + m] @ vecs[2 * n + m :].T).astype(np.float64)
    sims = NAME_WEIGHT * np.maximum(names, 0.0) + ARGS_WEIGHT * np.maximum(args, 0.0)
    pairs = max_weight_assignment(np.where(sims > MATCH_THRESHOLD, sims, 0.0))
    if rules.networkx_tie_pick:
        listed = sims.tolist()
        if not _unique_optimum(listed, pairs) and not _same_run_length(listed, pairs, pred, gold):
            pairs = official_matching(official_weights(pred, gold))
    mapped = [-1] * len(pred)
    for i, j in pairs:
        mapped[i] = j
    correct = longest_increasing(mapped, rules.lis_starts_at_one)
    precision, recall = correct / len(pred), correct / len(gold)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "correct": correct, "matched": pairs}


def gold_plan(gold: Any) -> list[dict[str, Any]]:
    return plan_from_json(gold)


def _plan(case: EvalCase, prediction: str, rules: TEvalRules, fmt: str) -> RecordResult:
    try:
        gold = gold_plan(case.gold)
    except ResponseError as exc:
        return failed(case, "bad_gold", f"gold plan unreadable: {exc}")
    try:
        if fmt == "json":
            pred = plan_from_json(prediction)
        else:
            pred = plan_from_text(prediction, case.input.get("api_list") or [], rules)
    except ResponseError as exc:
        return _parse_failed(case, exc, precision=0.0, recall=0.0)
    steps = drop_finish(pred)
    check_limit("plan_steps", len(steps))  # every step is embedded: a huge plan is over budget, not scored
    check_limit("embed_chars", sum(len(s["name"]) + len(s["args"]) for s in steps))
    try:
        res = plan_f1(pred, gold, rules)
    except ResponseError as exc:
        return failed(case, "official_crash", str(exc), precision=0.0, recall=0.0)
    ok = res["f1"] >= FULL
    return _result(
        case,
        res["f1"],
        ok,
        "plan_mismatch",
        f"{res['correct']} of {len(drop_finish(gold))} gold steps in order",
        precision=res["precision"],
        recall=res["recall"],
        correct=res["correct"],
        predicted_steps=len(drop_finish(pred)),
    )


@scorer("teval.plan.json")
def plan_json(case: EvalCase, prediction: str, mode: Mode = "strict") -> RecordResult:
    return _plan(case, prediction, RULES[mode], "json")


@scorer("teval.plan.str")
def plan_str(case: EvalCase, prediction: str, mode: Mode = "strict") -> RecordResult:
    return _plan(case, prediction, RULES[mode], "str")


# ---- reason / retrieve / understand ----------------------------------------------------------
def gold_step(gold: Any) -> dict[str, Any]:
    return rru_from_json(gold)


def _gold_or_fail(case: EvalCase) -> dict[str, Any] | RecordResult:
    try:
        return gold_step(case.gold)
    except ResponseError as exc:
        return failed(case, "bad_gold", f"gold step unreadable: {exc}")


def _pred_json(case: EvalCase, prediction: str) -> dict[str, Any] | RecordResult:
    try:
        return rru_from_json(prediction)
    except ResponseError as exc:
        return _parse_failed(case, exc)


def _reason(case: EvalCase, thought: str, gold_thought: str, near_one_cosine_is_one: bool) -> RecordResult:
    sim = float((_encode([thought]) @ _encode([gold_thought]).T)[0][0])  # as Embedder.similarity
    score = max(0.0, sim)
    if score >= FULL and near_one_cosine_is_one:
        score = 1.0  # float32 rounding of identical texts (0.99999994) is a full match
    return _result(case, score, score >= 0.999, "low_similarity", f"cosine {score:.3f}", cosine=score)


@scorer("teval.reason.json")
def reason_json(case: EvalCase, prediction: str, mode: Mode = "strict") -> RecordResult:
    gold = _gold_or_fail(case)
    if isinstance(gold, RecordResult):
        return gold
    pred = _pred_json(case, prediction)
    if isinstance(pred, RecordResult):
        return pred
    return _reason(case, pred["thought"], gold["thought"], RULES[mode].near_one_cosine_is_one)


@scorer("teval.reason.str")
def reason_str(case: EvalCase, prediction: str, mode: Mode = "strict") -> RecordResult:
    gold = _gold_or_fail(case)
    if isinstance(gold, RecordResult):
        return gold
    return _reason(case, prediction, gold["thought"], RULES[mode].near_one_cosine_is_one)


@scorer("teval.retrieve.json")
def retrieve_json(case: EvalCase, prediction: str, mode: Mode = "strict") -> RecordResult:
    gold = _gold_or_fail(case)
    if isinstance(gold, RecordResult):
        return gold
    pred = _pred_json(case, prediction)
    if isinstance(pred, RecordResult):
        return pred
    ok = pred["name"] == gold["name"]
    return _result(case, float(ok), ok, "wrong_name", f"expected {gold['name']!r}, got {pred['name']!r}")


@scorer("teval.retrieve.str")
def retrieve_str(case: EvalCase, prediction: str, mode: Mode = "strict") -> RecordResult:
    gold = _gold_or_fail(case)
    if isinstance(gold, RecordResult):
        return gold
    name = gold["name"]
    if name not in prediction:
        return failed(case, "wrong_name", f"{name!r} is not named in the response")
    others = sorted({n for n in other_api_names(prediction) if n != name})
    if others:
        return failed(case, "wrong_name", f"the response also names {others[:5]}")
    return passed(case, 1.0)


def _same_str(a: Any, b: Any) -> bool:
    return str(a) == str(b)


def _understand_args(pred: dict[str, Any], gold: dict[str, Any], rules: TEvalRules) -> tuple[float, int]:
    if not gold:
        return (1.0 if not pred else 0.0), 0
    eq: Callable[[Any, Any], bool] = _same_str if rules.understand_compares_str else same_value
    hits = sum(1 for k, v in gold.items() if k in pred and eq(pred[k], v))
    if rules.understand_adds_eps:
        return hits / (len(gold) + UNDERSTAND_EPS), hits
    return hits / len(gold), hits


@scorer("teval.understand.json")
def understand_json(case: EvalCase, prediction: str, mode: Mode = "strict") -> RecordResult:
    gold = _gold_or_fail(case)
    if isinstance(gold, RecordResult):
        return gold
    pred = _pred_json(case, prediction)
    if isinstance(pred, RecordResult):
        return pred
    score, hits = _understand_args(pred["args"], gold["args"], RULES[mode])
    ok = hits == len(gold["args"]) and (bool(gold["args"]) or not pred["args"])
    return _result(case, score, ok, "wrong_args", f"{hits} of {len(gold['args'])} arguments right", matched_args=hits)


def _gold_args_text(gold: Any) -> tuple[str, Any]:
    """``str()`` of the gold arguments as the official str reader sees them, and their value."""
    if isinstance(gold, str):
        try:
            gold = load_response(gold, "{", "}")
        except ResponseError:
            return "", None
    args = gold.get("args", "") if isinstance(gold, dict) else ""
    return str(args), args


@scorer("teval.understand.str")
def understand_str(case: EvalCase, prediction: str, mode: Mode = "strict") -> RecordResult:
    text, value = _gold_args_text(case.gold)
    if isinstance(case.gold, str) and value is None:
        return failed(case, "bad_gold", "gold step unreadable")
    if RULES[mode].understand_str_lenient:
        pred = prediction.strip().strip("'\"").strip()
        ok = pred == text
        if not ok and isinstance(value, dict):
            try:
                parsed = load_response(pred, "{", "}")
            except ResponseError:
                parsed = None
            ok = isinstance(parsed, dict) and same_value(parsed, value)
    else:
        ok = prediction.strip("'").strip('"') == text
    return _result(case, float(ok), ok, "wrong_args", f"expected {text[:200]}")


# ---- review ----------------------------------------------------------------------------------
def gold_letter(gold: Any) -> str:
    answer = gold.get("answer") if isinstance(gold, dict) else gold
    return str(answer).strip()[:1] if answer is not None else ""


@scorer("teval.review.str")
def review_str(case: EvalCase, prediction: str, mode: Mode = "strict") -> RecordResult:
    try:
        letter = review_letter(prediction, RULES[mode].review_fullwidth_colon)
    except ResponseError as exc:
        return _parse_failed(case, exc)
    gold = gold_letter(case.gold)
    ok = letter == gold
    return _result(case, float(ok), ok, "wrong_answer", f"expected {gold}, got {letter}", answer=letter)


@scorer("teval.review.json")
def review_json(case: EvalCase, prediction: str, mode: Mode = "strict") -> RecordResult:
    rules = RULES[mode]
    gold = gold_letter(case.gold)
    if rules.review_json_compares_dict:
        # as T-Eval: needs a boolean 'is_finished', then compares {'review': bool} with the gold letter
        try:
            data = load_response(prediction)
        except ResponseError as exc:
            return _parse_failed(case, exc)
        if (
            not isinstance(data, dict)
            or data.get("is_finished", None) not in (True, False)
            or "is_finished" not in data
        ):
            return _parse_failed(case, ResponseError("no boolean 'is_finished'"))
        ok = {"review": data["is_finished"]} == gold
        return _result(
            case,
            float(ok),
            ok,
            "official_unreachable",
            "the official json review compares a dict with the gold letter and never matches",
        )
    try:
        data = load_response(prediction, "{", "}")
        if not isinstance(data, dict) or not isinstance(data.get("answer"), str):
            raise ResponseError("no string 'answer'")
        letter = review_letter(":" + data["answer"], rules.review_fullwidth_colon)
    except ResponseError as exc:
        return _parse_failed(case, exc)
    ok = letter == gold
    return _result(case, float(ok), ok, "wrong_answer", f"expected {gold}, got {letter}", answer=letter)


ABILITIES = ("instruct", "plan", "reason", "retrieve", "understand", "review")
FORMATS = {
    "instruct": ("json", "string"),
    "plan": ("json", "str"),
    "reason": ("json", "str"),
    "retrieve": ("json", "str"),
    "understand": ("json", "str"),
    "review": ("json", "str"),
}


def scorer_name(ability: str, fmt: str) -> str:
    return f"teval.{ability}.{fmt}"


__all__ = [
    "ABILITIES",
    "FINISH",
    "FORMATS",
    "gold_letter",
    "gold_plan",
    "gold_step",
    "longest_increasing",
    "max_weight_assignment",
    "official_matching",
    "official_weights",
    "plan_f1",
    "same_value",
    "scorer_name",
]
