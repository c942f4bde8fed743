"""Derive T-Eval records (all six abilities, json and str) from an NL2API split's verified chains.

The output folder uses T-Eval's own layout (one JSON object per file mapping id -> record with
``origin_prompt``, ``ground_truth`` and ``meta_data`` / plan ``meta``), so T-Eval's evaluator can
read it too, plus ``derive_report.json``. Everything is deterministic: the same split gives the
same files byte for byte.

Gold thoughts (reason records, the assistant turns of every history, the review goals) say what
each step is for, in terms of the request and the data it works on (``_intent``). Review
responses come from real executions on the split's own tools and database (``_execute``): the
gold call (A, Success), the gold call on a failed database connection (B, Internal Error), a
realistic input mistake the tool rejects (C, Input Error), another request's real response (D,
Irrelevant Response) and a request for something the data does not have, answered with nothing
(E, Unable to Accomplish).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from benchsmith.construction.variants import dump_text, visible_steps
from benchsmith.eval.derive import Outputs, SplitSamples, Spool
from benchsmith.schemas import Sample, Split, Tool, ToolCall, UserError

FINISH = "FinishAction"
_REF = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)(?:\.[^$]*)?\$")

JSON_TEMPLATES = [
    {"thought": "thought", "action": "name", "args": "args"},
    {"thought": "reasoning", "action": "tool", "args": "arguments"},
    {"thought": "Thought", "action": "Action", "args": "ActionInput"},
]
STRING_TEMPLATES = [
    {
        "thought_start": "Thought: ",
        "thought_end": "\n",
        "action_start": "Action: ",
        "action_end": "\n",
        "args_start": "Action Input: ",
        "args_end": "\n",
    },
    {
        "thought_start": "<thought>",
        "thought_end": "</thought>\n",
        "action_start": "<name>",
        "action_end": "</name>\n",
        "args_start": "<args>",
        "args_end": "</args>",
    },
    {
        "thought_start": "THINK: ",
        "thought_end": "\n",
        "action_start": "CALL: ",
        "action_end": "\n",
        "args_start": "INPUT: ",
        "args_end": "\nEND",
    },
]

REVIEW_SYSTEM = (
    "You review one tool call. You get:\n"
    "Goal: what the call was meant to achieve\nName: the tool that was called\n"
    "Args: the arguments it was given\nResponse: what the tool returned\n\n"
    "Pick the option that describes the outcome:\n"
    "A: Success -- the response achieves the goal.\n"
    "B: Internal Error -- the tool itself failed (a crash, a database or connection problem), not its input.\n"
    "C: Input Error -- the tool rejected the call: its arguments are wrong or incomplete.\n"
    "D: Irrelevant Response -- the response does not belong to this call or this goal.\n"
    "E: Unable to Accomplish -- the call ran, but the response says the goal cannot be reached, or it is empty.\n\n"
    "Answer in this format:\n```\nAnswer: [one letter, A to E]\n```\n"
)
REVIEW_CLASSES = {"success": "A", "internal_error": "B", "input_error": "C", "irrelevant": "D", "unable": "E"}
_REVIEW_JSON_NOTE = (
    'Answer with a JSON object {"answer": "<one letter, A to E>", "is_finished": <true when the answer is A>}.\n'
)


# ---- rendering helpers -------------------------------------------------------------------------
def _type_name(prop: dict[str, Any]) -> str:
    t = prop.get("type")
    if isinstance(t, list):
        return "|".join(str(x).upper() for x in t)
    if isinstance(t, str):
        return t.upper()
    return "STRING" if "enum" in prop else "ANY"


def api_description(tool: Tool) -> dict[str, Any]:
    """A tool in T-Eval's API description format."""
    props = tool.parameters.properties
    required = set(tool.parameters.required)

    def param(name: str) -> dict[str, Any]:
        p = props[name]
        out = {"name": name, "type": _type_name(p), "description": str(p.get("description", ""))}
        if "enum" in p:
            out["enum"] = p["enum"]
        return out

    return {
        "name": tool.name,
        "description": tool.description,
        "required_parameters": [param(n) for n in props if n in required],
        "optional_parameters": [param(n) for n in props if n not in required],
        "return_data": [{"name": "result", "description": "the output, kept under the call's label"}],
    }


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    cut = text.find(". ")
    sentence = text if cut == -1 else text[:cut]
    return sentence.rstrip(".")


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else dump_text(value)


def step_thought(call: ToolCall, tool: Tool | None, index: int) -> str:
    """A deterministic thought for a gold step, from the tool description and the arguments (used by
    the GTA derivation; T-Eval records state the step's intent instead, see ``_intent``)."""
    what = _first_sentence(tool.description) if tool is not None else f"Use {call.name}"
    args = "; ".join(f"{k} = {_value_text(v)}" for k, v in call.arguments.items())
    lead = "First" if index == 0 else "Next"
    sentence = what[:1].lower() + what[1:]
    text = f"{lead}, {sentence} with {call.name}"
    return f"{text}: {args}." if args else f"{text}."


def _setup_note(sample: Sample) -> str:
    labels = [f"${c.label}$" for c in sample.setup if c.label]
    if not labels:
        return ""
    return f"Data already loaded for you: {', '.join(labels)} (pass it as data_source).\n"


def _user_query(sample: Sample) -> str:
    query = sample.query or "\n".join(m.content for m in (sample.dialogue or []) if m.role == "user")
    return f"{query}\n(Hint: {sample.context})" if sample.context else query


def _api_block(api: list[dict[str, Any]]) -> str:
    """The APIs, then the column list their column parameters share, said once (``hoist_columns``):
    the API text is then the same for every sample of a split, a prefix a server reuses."""
    from benchsmith.construction.nl2api import hoist_columns

    columns, shown = hoist_columns(api)
    block = "You have access to the following APIs:\n" + dump_text(shown) + "\n"
    return block + f"Columns (what a column parameter takes): {columns}\n" if columns else block


def _history(calls: list[tuple[str, ToolCall, Any]], as_json: bool) -> list[dict[str, str]]:
    messages = []
    for thought, call, obs in calls:
        if as_json:
            content = dump_text({"thought": thought, "name": call.name, "args": call.arguments})
        else:
            content = f"Thought: {thought}\nAction: {call.name}\nAction Input: {dump_text(call.arguments)}"
        messages.append({"role": "assistant", "content": content})
        messages.append({"role": "function", "content": dump_text(obs)})
    return messages


def _deps(call: ToolCall, label_index: dict[str, int]) -> list[int]:
    found = sorted(
        {label_index[m.group(1)] for m in _REF.finditer(dump_text(call.arguments)) if m.group(1) in label_index}
    )
    return found


# ---- derivation --------------------------------------------------------------------------------
def _split_style(split: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(bindings, REST endpoints) of the split, to read its calls as NL2API tools."""
    from benchsmith.construction.nl2api import load_bindings
    from benchsmith.schemas import read_json

    toolset, endpoints = split / "toolset.json", split / "endpoints.json"
    bindings = load_bindings(read_json(toolset)) if toolset.is_file() else {}
    return bindings, (read_json(endpoints) if endpoints.is_file() else {})


def _runner(split: Path) -> tuple[Any, str | None]:
    """The split's executable tools, or (None, why not) when it has none (a hand-made split)."""
    from ._execute import SplitRunner

    try:
        return SplitRunner(split), None
    except UserError as exc:
        return None, str(exc)


def _is_empty(response: Any) -> bool:
    return response is None or (isinstance(response, dict) and response.get("rows") == [])


def _review_reason(tag: str, detail: str = "") -> str:
    return {
        "success": "The call fits the goal, its arguments are valid and the response holds the data the goal asks for.",
        "internal_error": f"The call is right, but the tool failed on its own side ({detail}); the input is not to blame.",
        "input_error": f"The tool rejected the call because {detail}.",
        "irrelevant": "The response comes from a different request: it does not match this call's arguments or goal.",
        "unable": (
            "The call fits the goal and ran, but no row of the data meets it: the response is empty, so the "
            "goal cannot be reached with this data."
        ),
    }[tag]


FILES = (
    "instruct_v2",
    "plan_json_v2",
    "plan_str_v2",
    "reason_str_v2",
    "retrieve_str_v2",
    "understand_str_v2",
    "reason_retrieve_understand_json_v2",
    "review_str_v2",
    "review_json_v2",
)


class _Observations:
    """Every visible step's observation of the split (as text), in file order, to pair steps with
    responses that belong elsewhere: the texts wait in a scratch file on disk; in memory are only
    each step's sample id, position in the file and a digest."""

    def __init__(self, spool: Spool) -> None:
        self.spool = spool
        self.sids: list[Any] = []
        self.digests = bytearray()

    @staticmethod
    def digest(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def add(self, sid: Any, text: str) -> None:
        self.sids.append(sid)
        self.digests += self.digest(text)
        self.spool.put(text)

    def __len__(self) -> int:
        return len(self.sids)

    def differs(self, n: int, text: str, digest: bytes) -> bool:
        """Whether observation ``n`` is not ``text`` (read back only when the digests agree)."""
        return self.digests[16 * n : 16 * n + 16] != digest or self.text(n) != text

    def text(self, n: int) -> str:
        return str(self.spool.get(n))


def derive_teval(split_dir: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Write T-Eval files for every verified sample of an NL2API split; returns the report.

    Streams in two passes over the split: the first puts every observation in a scratch file
    (a review's irrelevant response is another sample's), the second writes each sample's records
    to the nine files as it makes them; the report's figures are running counts. Sample ids key
    the records, so a split with one id twice is a :class:`UserError`."""
    samples = SplitSamples(split_dir)
    split = samples.root
    with Outputs(out_dir) as files:
        observations = _Observations(files.spool())
        seen: set[Any] = set()
        for sample in samples:
            if sample.id in seen:
                raise UserError(
                    f"{samples.path}: sample id {sample.id} appears more than once (T-Eval records "
                    "are keyed by sample id)",
                    fix="give every sample its own id",
                )
            seen.add(sample.id)
            for st in visible_steps(sample):
                observations.add(sample.id, dump_text(st.observation))
        del seen
        report = _derive_files(samples, split, files, observations)
        files.json("derive_report.json", report)
        files.commit()
    return report


def _derive_files(samples: SplitSamples, split: Path, files: Outputs, observations: _Observations) -> dict[str, Any]:
    bindings, endpoints = _split_style(split)
    runner, no_runner = _runner(split)
    # a merged split (databases/<db_id>.sqlite): each record names the database its sample runs on
    merged = Split(split).has_databases()
    writers = {name: files.object(f"{name}.json") for name in FILES}
    tally: dict[str, dict[str, int]] = {"instruct": {}, "labels": {}, "classes": {}}
    missed: dict[str, int] = {}
    here = 0
    try:
        for sn, sample in enumerate(samples):
            here = _derive_sample(
                sn,
                sample,
                _Tally(writers, tally),
                bindings,
                endpoints,
                runner,
                observations,
                here,
                missed,
                carry_db_id=merged,
            )
    finally:
        if runner is not None:
            runner.close()
    if here != len(observations):
        raise UserError(f"{samples.path} changed while it was read", fix="derive again")

    instruct = tally["instruct"]
    counts = {
        "instruct": {"json": instruct.get("json", 0), "string": instruct.get("string", 0)},
        "plan": {"json": len(writers["plan_json_v2"]), "str": len(writers["plan_str_v2"])},
        "reason": {"json": len(writers["reason_retrieve_understand_json_v2"]), "str": len(writers["reason_str_v2"])},
        "retrieve": {
            "json": len(writers["reason_retrieve_understand_json_v2"]),
            "str": len(writers["retrieve_str_v2"]),
        },
        "understand": {
            "json": len(writers["reason_retrieve_understand_json_v2"]),
            "str": len(writers["understand_str_v2"]),
        },
        "review": {"json": len(writers["review_json_v2"]), "str": len(writers["review_str_v2"])},
    }
    labels, classes = tally["labels"], tally["classes"]
    source: dict[str, Any] = {"split": str(split), "samples": samples.count or 0}
    if samples.manifest is not None:  # read (and checked) with the split
        source.update(name=samples.manifest.name, content_hash=samples.manifest.content_hash)
    report = {
        "source": source,
        "records": counts,
        "review_labels": dict(sorted(labels.items())),
        "review_classes": {tag: classes.get(tag, 0) for tag in REVIEW_CLASSES},
        "review_not_made": dict(sorted(missed.items())),
        "executed": no_runner is None,
        "files": sorted(f"{n}.json" for n in FILES),
    }
    if no_runner is not None:
        report["not_executed"] = no_runner
    return report


class _Tally:
    """The nine files as ``files[name][key] = record``: each record goes to its file at once, and
    the report's figures (instruct formats, review labels and classes) are counted on the way."""

    def __init__(self, writers: dict[str, Any], tally: dict[str, dict[str, int]]) -> None:
        self.writers, self.tally = writers, tally

    def __getitem__(self, name: str) -> _Tally._File:
        return _Tally._File(self, name)

    class _File:
        def __init__(self, owner: _Tally, name: str) -> None:
            self.owner, self.name = owner, name

        def __setitem__(self, key: str, record: dict[str, Any]) -> None:
            tally = self.owner.tally
            if self.name == "instruct_v2":
                fmt = record["meta_data"]["response_format"]
                tally["instruct"][fmt] = tally["instruct"].get(fmt, 0) + 1
            elif self.name == "review_str_v2":
                label, tag = record["ground_truth"]["answer"], record["meta_data"]["review"]
                tally["labels"][label] = tally["labels"].get(label, 0) + 1
                tally["classes"][tag] = tally["classes"].get(tag, 0) + 1
            self.owner.writers[self.name][key] = record


def _derive_sample(
    sn: int,
    sample: Sample,
    files: Any,
    bindings: dict[str, Any],
    endpoints: dict[str, Any],
    runner: Any,
    observations: _Observations,
    here: int,
    missed: dict[str, int],
    *,
    carry_db_id: bool = False,
) -> int:
    """Write one sample's records (``files[name][key] = record``); ``here`` is the position of its
    first step among the split's observations. Returns the position after its last step."""
    from ._intent import Describer

    api = [api_description(t) for t in sample.tools]
    api_block = _api_block(api)
    api_names = [t.name for t in sample.tools]
    steps = visible_steps(sample)
    query = _user_query(sample)
    note = _setup_note(sample)
    sid = sample.id or f"sample{sn}"
    src: dict[str, Any] = {"source_sample": sid}
    if carry_db_id and sample.metadata.get("db_id") is not None:
        src["db_id"] = sample.metadata["db_id"]
    describer = Describer(bindings, endpoints)
    describer.setup([(c.name, c.arguments, c.label) for c in sample.setup])
    thoughts, goals = [], []
    before: list[tuple[dict[str, Any], str | None]] = []  # what the describer knew before each step
    for i, st in enumerate(steps):
        call = st.call
        assert call is not None
        before.append((dict(describer.labels), describer.last))
        thoughts.append(describer.step(call.name, call.arguments, call.label, i, len(steps), sample.query or query))
        goals.append(describer.what)

    # plan: the gold call sequence + FinishAction
    label_index = {st.call.label: i for i, st in enumerate(steps) if st.call and st.call.label}
    plan = [
        {
            "id": i,
            "prev": _deps(st.call, label_index) if st.call else [],
            "name": st.call.name,
            "args": st.call.arguments,
        }
        for i, st in enumerate(steps)
        if st.call
    ]
    plan.append({"id": len(plan), "prev": [len(plan) - 1], "name": FINISH, "args": {}})
    plan_json_sys = (
        api_block + note + "Write the WHOLE plan that answers the query with these APIs, and nothing else. Answer "
        'with a JSON list of steps {"id": <int>, "name": <api name>, "args": <arguments object>} '
        f"in execution order; earlier outputs are written as $label$; finish with {FINISH}.\n"
    )
    plan_str_sys = (
        api_block + note + "Write the WHOLE plan that answers the query with these APIs, and nothing else. One step "
        "per line, in execution order: Use [api name] with [arguments].\n"
    )
    meta_base = {"API_list": api_names, **src}
    files["plan_json_v2"][sid] = {
        "origin_prompt": [{"role": "system", "content": plan_json_sys}, {"role": "user", "content": query}],
        "ground_truth": plan,
        "meta": {"prompt_type": "json", **meta_base},
    }
    files["plan_str_v2"][sid] = {
        "origin_prompt": [{"role": "system", "content": plan_str_sys}, {"role": "user", "content": query}],
        "ground_truth": plan,
        "meta": {"prompt_type": "str", **meta_base},
    }

    outputs: dict[str, Any] = {}
    if runner is not None:
        try:
            outputs = runner.start(sample)
        except Exception:  # noqa: BLE001 - set-up calls this split's tools cannot run: nothing is executed
            runner = None
            missed["sample:setup_not_executable"] = missed.get("sample:setup_not_executable", 0) + 1
    done: list[tuple[str, ToolCall, Any]] = []
    for i, st in enumerate(steps):
        call = st.call
        assert call is not None
        key = f"{sid}_{i}"
        gold = {"thought": thoughts[i], "name": call.name, "args": call.arguments}
        # instruct: the call is given; the answer must follow the format
        tj = JSON_TEMPLATES[(sn + i) % len(JSON_TEMPLATES)]
        ts = STRING_TEMPLATES[(sn + i) % len(STRING_TEMPLATES)]
        ask = f"Call {call.name} with these arguments: {dump_text(call.arguments)}"
        files["instruct_v2"][f"{key}_json"] = {
            "origin_prompt": [
                {
                    "role": "system",
                    "content": api_block + note + "Answer with one JSON object with the "
                    f"keys {tj['thought']!r} (your thought), {tj['action']!r} (the API name) and {tj['args']!r} "
                    "(the arguments object), and nothing else.\n",
                },
                {"role": "user", "content": ask},
            ],
            "template": tj,
            "ground_truth": {"action": call.name, "args": call.arguments},
            "meta_data": {"response_format": "json", **src, "step": i},
        }
        layout = (
            f"{ts['thought_start']}<your thought>{ts['thought_end']}{ts['action_start']}<the API name>"
            f"{ts['action_end']}{ts['args_start']}<the arguments as a Python dict>{ts['args_end']}"
        )
        files["instruct_v2"][f"{key}_string"] = {
            "origin_prompt": [
                {
                    "role": "system",
                    "content": api_block + note + f"Answer exactly in this layout, and nothing else:\n{layout}\n",
                },
                {"role": "user", "content": ask},
            ],
            "template": ts,
            "ground_truth": {"action": call.name, "args": call.arguments},
            "meta_data": {"response_format": "string", **src, "step": i},
        }

        # reason / retrieve / understand: the history so far, then the next step
        hist_json, hist_str = _history(done, True), _history(done, False)
        base_sys = api_block + note + "Solve the query step by step, one API call at a time.\n"
        asks = {
            "reason_str_v2": "Give only your thought for the next step: what it does and why, in one or two sentences.",
            "retrieve_str_v2": "Give only the name of the API to call next.",
            "understand_str_v2": "Give only the arguments of the next call, as a Python dict.",
        }
        for fname, instruction in asks.items():
            files[fname][key] = {
                "origin_prompt": [
                    {"role": "system", "content": base_sys + instruction + "\n"},
                    {"role": "user", "content": query},
                    *hist_str,
                ],
                "ground_truth": gold,
                "meta_data": {"response_format": "str", **src, "step": i},
            }
        files["reason_retrieve_understand_json_v2"][key] = {
            "origin_prompt": [
                {
                    "role": "system",
                    "content": base_sys
                    + 'Answer with one JSON object {"thought": <your thought>, "name": <the API to call '
                    'next>, "args": <its arguments object>}, and nothing else.\n',
                },
                {"role": "user", "content": query},
                *hist_json,
            ],
            "ground_truth": gold,
            "meta_data": {"response_format": "json", **src, "step": i},
        }

        # review: five outcomes of this step, each a real execution
        reviews: list[tuple[str, str, ToolCall, Any, str]] = []
        real = runner.run(outputs, call) if runner is not None else None
        if real is not None and real.kind != "ok":  # the split's tools cannot run this gold call
            missed["step:gold_call_not_executable"] = missed.get("step:gold_call_not_executable", 0) + 1
        executable = real is not None and real.kind == "ok"
        own_response = real.response if real is not None and executable else st.observation
        if not _is_empty(own_response):
            reviews.append(("success", goals[i], call, own_response, _review_reason("success")))
        else:
            missed["success:empty_response"] = missed.get("success:empty_response", 0) + 1
        if executable:
            broken = runner.internal_error(outputs, call)
            if broken is not None:
                err = str(broken.response.get("error", ""))
                detail = err.split("inside the service: ", 1)[-1]
                reviews.append(
                    ("internal_error", goals[i], call, broken.response, _review_reason("internal_error", detail))
                )
            else:
                missed["internal_error:no_failure"] = missed.get("internal_error:no_failure", 0) + 1
            wrong = runner.input_error(outputs, call, key)
            if wrong is not None:
                why, wrong_call, rejected = wrong
                reviews.append(
                    ("input_error", goals[i], wrong_call, rejected.response, _review_reason("input_error", why))
                )
            else:
                missed["input_error:no_rejected_mistake"] = missed.get("input_error:no_rejected_mistake", 0) + 1
        own = dump_text(st.observation)
        own_digest, at, n_obs = observations.digest(own), here + i, len(observations)
        if n_obs > 1:
            for shift in range(1, n_obs):
                other = (at + shift * 7919) % n_obs
                if observations.sids[other] != sid and observations.differs(other, own, own_digest):
                    reviews.append(
                        (
                            "irrelevant",
                            goals[i],
                            call,
                            json.loads(observations.text(other)),
                            _review_reason("irrelevant"),
                        )
                    )
                    break
        if executable:
            asked = runner.unable(outputs, call, key)
            if asked is not None:
                asked_call, empty = asked
                probe = Describer(bindings, endpoints)
                probe.labels, probe.last = dict(before[i][0]), before[i][1]
                probe.step(asked_call.name, asked_call.arguments, None, i, len(steps), sample.query or query)
                reviews.append(("unable", probe.what, asked_call, empty.response, _review_reason("unable")))
            else:
                missed["unable:no_filter_value"] = missed.get("unable:no_filter_value", 0) + 1
        for tag, goal, shown, response, why in reviews:
            user = (
                f"Goal: {goal}\nName: {shown.name}\nArgs: {dump_text(shown.arguments)}\nResponse: {dump_text(response)}"
            )
            for fmt, fname, system in (
                ("str", "review_str_v2", REVIEW_SYSTEM),
                ("json", "review_json_v2", REVIEW_SYSTEM + _REVIEW_JSON_NOTE),
            ):
                files[fname][f"{key}_{tag}"] = {
                    "template": "",
                    "origin_prompt": [{"role": "system", "content": system}, {"role": "user", "content": user}],
                    "ground_truth": {"answer": REVIEW_CLASSES[tag], "thought": why},
                    "meta_data": {"response_format": fmt, **src, "step": i, "review": tag},
                }
        if executable:
            runner.advance(outputs, call)
        done.append((thoughts[i], call, st.observation))
    return here + len(steps)


def derive_teval_seeded(split_dir: str | Path, out_dir: str | Path, seed: int = 0) -> dict[str, Any]:
    """:func:`derive_teval` as a deriver hook (T-Eval's derivation is deterministic: no seed)."""
    return derive_teval(split_dir, out_dir)
