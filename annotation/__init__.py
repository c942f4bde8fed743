"""Expert verification in Label Studio: a real local server, label configs generated from the sample
type, the multi-stage protocol (two independent reviews, adjudication, re-executed fixes,
re-review rounds), idempotent sync, agreement, and finalized versioned splits with a datasheet.

>>> from benchsmith.annotation import cohen_kappa, decide_review
>>> cohen_kappa([("accept", "accept"), ("reject", "reject")])
1.0
>>> decide_review([{"user": 1, "decision": "accept"}, {"user": 2, "decision": "fix"}]).outcome
'adjudicate'
"""

from ._private.agreement import cohen_kappa, percent_agreement
from ._private.auto import review_automatically
from ._private.configs import Review, label_config, parse_result, result_for
from ._private.finalize import (
    agreement_text,
    counts_text,
    datasheet,
    datasheet_markdown,
    finalize,
    producing_models,
)
from ._private.lsclient import LabelStudio, LabelStudioDown
from ._private.payloads import sample_kind, task_payload
from ._private.protocol import Decision, apply_correction, decide_adjudication, decide_review
from ._private.server import (
    ENV_API_KEY,
    ENV_URL,
    LabelStudioInfo,
    data_dir_path,
    label_studio_status,
    resolve_label_studio,
    start_label_studio,
    state_path,
    stop_label_studio,
)
from ._private.simulate import checks_policy, simulate
from ._private.workflow import Duplicates, PushReport, RepairReport, Workspace

__all__ = [
    "agreement_text",
    "counts_text",
    "ENV_API_KEY",
    "ENV_URL",
    "data_dir_path",
    "state_path",
    "Decision",
    "Duplicates",
    "LabelStudio",
    "LabelStudioDown",
    "LabelStudioInfo",
    "PushReport",
    "RepairReport",
    "Review",
    "Workspace",
    "apply_correction",
    "checks_policy",
    "cohen_kappa",
    "datasheet",
    "datasheet_markdown",
    "decide_adjudication",
    "decide_review",
    "finalize",
    "label_config",
    "producing_models",
    "label_studio_status",
    "parse_result",
    "percent_agreement",
    "resolve_label_studio",
    "result_for",
    "review_automatically",
    "sample_kind",
    "simulate",
    "start_label_studio",
    "stop_label_studio",
    "task_payload",
]
