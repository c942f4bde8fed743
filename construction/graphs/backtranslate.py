"""SQL -> question back-translation for NL2SQL pairs that have no question yet.

Items: a JSONL file of ``{"id", "sql", "evidence"?}`` rows over a SQLite database (option
``database``, default the embedded Chinook). ``prepare`` (pure, read-only) parses the SQL (one
SELECT), runs it (``execute_sql``) and, with ``require_conversion`` (default on), converts and
verifies it the way ``benchsmith nl2api build`` will (reject codes ``sql_error``,
``empty_result``, ``unconvertible``); it collects the tables the SQL uses and the literal values
a question must mention. ``question`` (generator) writes the question from the tables' columns
(with descriptions) and the SQL; ``screen`` (pure) rejects a question that misses a literal value
(``missing_literal``: strings case-insensitively, numbers as written; the evidence counts) or
leaks SQL (``sql_leak``: keywords, identifiers with underscores, ``table.column``); ``check``
(refiner as verifier) judges whether the question asks exactly what the SQL computes
(``unfaithful``). Outputs are pair samples (``query`` = question, ``context`` = evidence,
``metadata.sql`` / ``metadata.pair_id``, category ``backtranslated``); :func:`to_pairs` writes
them as the pairs JSONL that ``benchsmith nl2api build`` reads.

>>> [(l["text"], l["string"]) for l in sql_literals("SELECT name FROM t WHERE country = 'Brazil' AND n > 300 LIMIT 1")]
[('Brazil', True), ('300', False)]
>>> sql_leak("List the first_name of every customer.", "SELECT first_name FROM customers")
"the question contains the identifier 'first_name'"
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

from pydantic import Field

from benchsmith.construction import (
    ACCEPTED,
    BaseState,
    ConstructionGraph,
    GraphOptions,
    ModelStep,
    ParseError,
    graph,
    json_object,
    model_node,
    nonempty_text,
    pipeline,
    reject,
)
from benchsmith.schemas import UserError

from ._tools import fewshot_texts, normal

QUESTION = {"type": "string", "minLength": 12, "maxLength": 300}
MIN_LEN, MAX_LEN = 12, 400
_COMPARISONS = ("EQ", "NEQ", "GT", "GTE", "LT", "LTE", "Like", "ILike", "In", "Between", "Glob")
_KEYWORDS = re.compile(r"\b(SELECT|FROM|WHERE|GROUP BY|ORDER BY|HAVING|JOIN|LIMIT|DISTINCT|IS NOT NULL|IS NULL)\b")
_KEYWORDS_ANY_CASE = re.compile(
    r"\b(?:group by|order by|select \*|(?:count|sum|avg|min|max)\s*\(\s*\*?)", re.IGNORECASE
)


# -- the SQL (pure) ------------------------------------------------------------------------------------
def parse_select(sql: str) -> Any:
    """The sqlglot tree of one read-only query, else ValueError."""
    import sqlglot
    from sqlglot import exp

    try:
        trees = [t for t in sqlglot.parse(sql, read="sqlite") if t is not None]
    except sqlglot.errors.SqlglotError as exc:
        raise ValueError(f"the SQL does not parse: {str(exc).splitlines()[0]}") from None
    if len(trees) != 1:
        raise ValueError(f"expected one statement, got {len(trees)}")
    if not isinstance(trees[0], exp.Query):
        raise ValueError(f"only a SELECT query can be back-translated, not {trees[0].key.upper()}")
    return trees[0]


def sql_literals(sql: str) -> list[dict[str, Any]]:
    """The literal values a question must mention: operands of comparisons (``=``, ``<``, ``LIKE``
    with its ``%`` stripped, ``IN``, ``BETWEEN``) and ``LIMIT`` counts above one; constants of
    arithmetic, functions, joins and ``ORDER BY`` do not count. ``[{"text", "string"}]``, unique."""
    from sqlglot import exp

    tree = parse_select(sql)
    out: list[dict[str, Any]] = []
    for lit in tree.find_all(exp.Literal):
        node = lit.parent
        if isinstance(node, exp.Neg):
            node = node.parent
        if isinstance(node, exp.Limit):
            if lit.is_string or not re.fullmatch(r"\d+", lit.this) or int(lit.this) <= 1 or tree.args.get("offset"):
                continue
        elif type(node).__name__ not in _COMPARISONS or node.find_ancestor(exp.Join) is not None:
            continue
        elif not lit.is_string and re.fullmatch(r"0+(\.0*)?", lit.this):
            continue  # "> 0", "<> 0": a question says "any", "positive", "some"
        texts = [lit.this]
        if lit.is_string and type(node).__name__ in ("Like", "ILike", "Glob"):
            texts = [p for p in re.split(r"[%*?]+", lit.this)]
        for text in texts:
            text = text.strip()
            if isinstance(lit.parent, exp.Neg) and not lit.is_string:
                text = "-" + text
            if text and not any(o["text"] == text for o in out):
                out.append({"text": text, "string": bool(lit.is_string)})
    return out


def sql_tables(sql: str) -> list[str]:
    from sqlglot import exp

    return list(dict.fromkeys(t.name for t in parse_select(sql).find_all(exp.Table) if t.name))


def _number_forms(text: str) -> list[str]:
    from benchsmith.construction import variants as v

    forms = [text]
    try:
        value: Any = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            return forms
    return list(dict.fromkeys(forms + v.value_forms(value)))


def mentions_literal(text: str, literal: dict[str, Any]) -> bool:
    """``text`` mentions the literal: a string case-insensitively as a whole token (a plural ``s``
    or ``es`` allowed), a number as written (also with thousands commas or as a small number word)."""
    from benchsmith.construction import variants as v

    if literal["string"]:
        form = literal["text"]
        pat = (
            (r"(?<!\w)" if re.match(r"\w", form) else "")
            + re.escape(form)
            + (r"(?:s|es)?(?!\w)" if re.search(r"\w$", form) else "")
        )
        return re.search(pat, text, re.IGNORECASE) is not None
    return any(v.find_form(text, f) for f in _number_forms(literal["text"]))


def sql_leak(question: str, sql: str) -> str | None:
    """Why ``question`` leaks SQL (keywords, identifiers with underscores, ``table.column``), else None."""
    from sqlglot import exp

    m = _KEYWORDS.search(question) or _KEYWORDS_ANY_CASE.search(question)
    if m:
        return f"the question contains the SQL keyword {m.group(0).strip()!r}"
    tree = parse_select(sql)
    strings = " ".join(lit.this for lit in tree.find_all(exp.Literal) if lit.is_string).lower()
    for m in re.finditer(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b", question):
        if m.group(0).lower() not in strings:
            return f"the question contains the identifier {m.group(0)!r}"
    names = {t.name.lower() for t in tree.find_all(exp.Table)} | {
        t.alias.lower() for t in tree.find_all(exp.Table) if t.alias
    }
    columns = {c.name.lower() for c in tree.find_all(exp.Column)}
    for m in re.finditer(r"\b([A-Za-z_]\w*)\.([A-Za-z_]\w*)\b", question):
        if m.group(1).lower() in names and (m.group(2).lower() in columns or "_" in m.group(2)):
            return f"the question uses table.column notation {m.group(0)!r}"
    return None


def screen_question(
    question: str, sql: str, literals: list[dict[str, Any]], evidence: str | None
) -> tuple[str, str] | None:
    """(code, reason) when the question fails a pure check, else None.

    >>> lits = [{"text": "Brazil", "string": True}]
    >>> screen_question("Which customers live in brazil?", "SELECT * FROM customers WHERE country = 'Brazil'", lits, None)
    >>> screen_question("Which customers live abroad?", "SELECT * FROM customers WHERE country = 'Brazil'", lits, None)[0]
    'missing_literal'
    """
    if re.search(r"[\x00-\x1f\x7f]", question):
        return "control_characters", "the question contains control characters"
    if not MIN_LEN <= len(question) <= MAX_LEN:
        return "bad_length", f"the question has {len(question)} characters ({MIN_LEN}-{MAX_LEN} allowed)"
    leak = sql_leak(question, sql)
    if leak:
        return "sql_leak", leak
    for lit in literals:
        if not mentions_literal(question, lit) and not (evidence and mentions_literal(evidence, lit)):
            return "missing_literal", f"neither the question nor the evidence mentions {lit['text']!r}"
    return None


# -- prepare (pure, read-only database) --------------------------------------------------------------
def _schema(db: Any, tables: list[str]) -> list[dict[str, Any]]:
    out = []
    for name in tables:
        table = db.table(name)
        if table is None:
            continue
        out.append(
            {
                "name": table.name,
                "description": table.description,
                "columns": [f"{c.name} ({c.type or 'ANY'}): {c.description}" for c in table.columns],
            }
        )
    return out


def prepare(state: dict[str, Any], runtime: Any) -> dict[str, Any]:
    """Parse, execute (and convert) the SQL; collect its tables, literals and the schema view."""
    from benchsmith.construction.nl2api import (
        Rejection,
        convert,
        execute_sql,
        run_and_check,
    )

    res = runtime.context.resources
    db, sql = res["db"], state["item"]["sql"]
    try:
        tables = sql_tables(sql)
        literals = sql_literals(sql)
    except ValueError as exc:
        return reject("prepare", "sql_error", str(exc))
    with res["lock"]:
        try:
            rows = execute_sql(db, sql)
        except Rejection as exc:
            return reject("prepare", "sql_error", str(exc))
        if not rows:
            return reject("prepare", "empty_result", "the SQL returns no rows")
        if runtime.context.options.require_conversion:
            try:
                conv = convert(db, sql)
                run_and_check(db, conv.setup, conv.calls, rows, conv.ordered, sql=sql)
            except Rejection as exc:
                return reject("prepare", "unconvertible", str(exc))
            except Exception as exc:  # noqa: BLE001 - a converter fault is this item's rejection
                return reject("prepare", "unconvertible", f"{type(exc).__name__}: {exc}")
    return {"tables": tables, "literals": literals, "schema": _schema(db, tables), "row_count": len(rows)}


# -- question (generator) and check (refiner as verifier) ----------------------------------------------
def _question_vars(state: dict[str, Any]) -> dict[str, Any]:
    return {"schema": state["schema"], "sql": state["item"]["sql"], "evidence": state["item"].get("evidence")}


def _parse_question(state: dict[str, Any], text: str) -> dict[str, Any]:
    value = json_object(text, ("question",))
    return {"question": nonempty_text(value["question"], "question", min_len=5)}


QUESTION_STEP = ModelStep(
    "question",
    "generator",
    "construction/backtranslate_question",
    _question_vars,
    _parse_question,
    schema=lambda s: {"type": "object", "properties": {"question": QUESTION}, "required": ["question"]},
    max_tokens=160,
)


def _check_vars(state: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": state["schema"],
        "sql": state["item"]["sql"],
        "evidence": state["item"].get("evidence"),
        "question": state["question"],
    }


def _parse_check(state: dict[str, Any], text: str) -> dict[str, Any]:
    value = json_object(text, ("faithful",))
    if not isinstance(value["faithful"], bool):
        raise ParseError("bad_field", "faithful must be true or false")
    problem = value.get("problem") or ""
    if not isinstance(problem, str):
        raise ParseError("bad_field", "problem must be text")
    if not value["faithful"]:
        return reject(
            "check", "unfaithful", problem.strip() or "the verifier judged the question unfaithful to the SQL"
        )
    return {"verifier_note": problem.strip()}


CHECK_STEP = ModelStep(
    "check",
    "refiner",
    "construction/backtranslate_check",
    _check_vars,
    _parse_check,
    schema=lambda s: {
        "type": "object",
        "properties": {"faithful": {"type": "boolean"}, "problem": {"type": "string", "maxLength": 200}},
        "required": ["faithful", "problem"],
    },
    max_tokens=96,
)


def screen(state: dict[str, Any]) -> dict[str, Any]:
    """Pure checks of the question before the verifier sees it."""
    item, question = state["item"], state["question"]
    failed = screen_question(question, item["sql"], state["literals"], item.get("evidence"))
    if failed is None and normal(question) in fewshot_texts(QUESTION_STEP.messages(state)):
        failed = ("copied_fewshot", "the question copies a few-shot example of the prompt")
    return reject("screen", *failed) if failed else {}


def finalize(state: dict[str, Any]) -> dict[str, Any]:
    item = state["item"]
    metadata = {
        "sql": item["sql"],
        "pair_id": state["item_id"],
        "tables": state["tables"],
        "literals": [lit["text"] for lit in state["literals"]],
        "rows": state["row_count"],
        "database": item.get("database"),
    }
    for key in ("db_id", "question"):
        if item.get(key):
            metadata["original_question" if key == "question" else key] = item[key]
    if state.get("verifier_note"):
        metadata["verifier_note"] = state["verifier_note"]
    out = {
        "query": state["question"],
        "context": item.get("evidence") or None,
        "categories": ["backtranslated"],
        "difficulty": item.get("difficulty"),
        "metadata": metadata,
    }
    return {"status": ACCEPTED, "outputs": [out]}


class BacktranslateState(BaseState, total=False):
    tables: list[str]
    literals: list[dict[str, Any]]
    schema: list[dict[str, Any]]
    row_count: int
    question: str
    verifier_note: str


class BacktranslateOptions(GraphOptions):
    database: str | None = Field(None, description="the SQLite database the SQL runs on (default: Chinook)")
    require_conversion: bool = Field(True, description="keep only SQL that converts to tool calls with the same answer")


@graph("backtranslate")
class BacktranslateGraph(ConstructionGraph):
    description = "SQL -> execute (pure) -> generator writes the question -> pure screen -> verifier judges it"
    roles = ("generator", "refiner")
    steps = (QUESTION_STEP, CHECK_STEP)
    Options = BacktranslateOptions

    def _database(self) -> Path:
        from benchsmith.construction.nl2api import chinook_db

        return Path(self.options.database) if self.options.database else chinook_db()

    def read_items(self, source: Any) -> list[tuple[str, dict[str, Any]]]:
        from benchsmith.construction import raw_rows

        path = Path(source)
        if not path.is_file():
            raise UserError(f"{path} does not exist", fix='pass a JSONL file of {"id", "sql", "evidence"} rows')
        name = self._database().name
        items = []
        for n, row in raw_rows(path):
            if not isinstance(row, dict) or not isinstance(row.get("sql"), str) or not row["sql"].strip():
                raise UserError(f'{path}:{n}: a row needs a non-empty "sql"', fix='write {"id": ..., "sql": ...} rows')
            if row.get("evidence") is not None and not isinstance(row["evidence"], str):
                raise UserError(f"{path}:{n}: evidence must be text", fix="write evidence as a string or leave it out")
            item = {k: row[k] for k in ("sql", "evidence", "difficulty", "db_id", "question") if row.get(k) is not None}
            item["database"] = name
            items.append((str(row.get("id") or f"line-{n}"), item))
        return items

    def resources(self, ctx: Any) -> dict[str, Any]:
        from benchsmith.construction.nl2api import Database

        return {"db": Database(self._database()), "lock": threading.Lock()}

    def build(self) -> Any:
        return pipeline(
            BacktranslateState,
            [
                ("prepare", prepare),
                ("question", model_node(QUESTION_STEP)),
                ("screen", screen),
                ("check", model_node(CHECK_STEP)),
                ("finalize", finalize),
            ],
        )


def to_pairs(samples_path: str | Path, out_path: str | Path) -> int:
    """Write the back-translated samples of ``samples_path`` (a JSONL file or a run folder) as
    ``{"id", "question", "sql", "evidence"}`` rows (``benchsmith nl2api build`` input); returns
    the number of rows."""
    from benchsmith.construction.nl2api import Pair
    from benchsmith.schemas import Sample, Split, read_jsonl, write_jsonl

    path = Split.samples_file(samples_path, fix="pass the samples.jsonl of a backtranslate run")
    rows = []
    for s in read_jsonl(path, Sample):
        sql = s.metadata.get("sql")
        if s.query is None or not isinstance(sql, str):
            continue
        pair = Pair(
            id=s.metadata.get("pair_id") or s.id,
            question=s.query,
            sql=sql,
            evidence=s.context,
            difficulty=s.difficulty,
            db_id=s.metadata.get("db_id"),
        )
        row = {"id": pair.id, "question": pair.question, "sql": pair.sql, "evidence": pair.evidence}
        row.update({k: v for k, v in (("difficulty", pair.difficulty), ("db_id", pair.db_id)) if v is not None})
        rows.append(row)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(out, rows)
    return len(rows)


__all__ = ["BacktranslateGraph", "screen_question", "sql_leak", "sql_literals", "sql_tables", "to_pairs"]
