"""Versioned prompt templates: Jinja2 files that render to chat messages.

A template lives at ``templates/<family>/<name>.v<N>.j2``; its id is ``<family>/<name>`` and its
version string ``<family>/<name>@v<N>-<hash8>``, where the hash covers the template text, so a
changed template is a new version even if its number was not bumped (runs key their cached
predictions by this string). Lines of the form ``### system``, ``### user`` and ``### assistant``
start a message; everything up to the next marker is its content (surrounding blank lines
stripped). Rendering is strict: an undefined variable is an error, not an empty string.

>>> p = get_prompt("toolassess/awareness")
>>> p.id, p.number
('toolassess/awareness', 1)
>>> msgs = p.render(query="Say hello back.", tools=[{"name": "filter_data", "description": "Keep rows."}])
>>> [m["role"] for m in msgs][0], msgs[-1]["role"]
('system', 'user')
>>> "Say hello back." in msgs[-1]["content"]
True
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from benchsmith.schemas import UserError

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
_FILE = re.compile(r"^(?P<name>[a-z0-9_]+)\.v(?P<number>[0-9]+)\.j2$")
_ROLE = re.compile(r"^### (system|user|assistant)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class PromptTemplate:
    """One version of one prompt template."""

    id: str
    number: int
    path: Path
    text: str = field(repr=False)

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:8]

    @property
    def version(self) -> str:
        """``family/name@vN-hash8``: what runs and provenance record."""
        return f"{self.id}@v{self.number}-{self.digest}"

    def render(self, **variables: Any) -> list[dict[str, str]]:
        """The chat messages of this template for ``variables``."""
        text = _compiled(self.text).render(**variables)
        return split_messages(text, where=str(self.path))


def split_messages(text: str, where: str = "<template>") -> list[dict[str, str]]:
    """``### role`` sections -> ``[{"role", "content"}]``; text before the first marker is an error.

    >>> split_messages("### system\\nBe brief.\\n\\n### user\\nHi\\n")
    [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'Hi'}]
    """
    marks = list(_ROLE.finditer(text))
    if not marks or text[: marks[0].start()].strip():
        raise UserError(
            f"{where}: a prompt template must start with a '### system|user|assistant' line",
            fix="put '### user' (or another role) on the first line",
        )
    out = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        out.append({"role": m.group(1), "content": text[m.end() : end].strip("\n").strip()})
    return out


@lru_cache(maxsize=1)
def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["tojson_compact"] = _tojson_compact
    return env


@lru_cache(maxsize=256)
def _compiled(text: str) -> Any:
    """A template compiled once per text (compiling costs more than rendering)."""
    return _environment().from_string(text)


def _tojson_compact(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


@lru_cache(maxsize=1)
def _catalog() -> dict[str, dict[int, PromptTemplate]]:
    found: dict[str, dict[int, PromptTemplate]] = {}
    for path in sorted(TEMPLATES.glob("*/*.j2")):
        m = _FILE.match(path.name)
        if not m:
            raise UserError(f"{path}: a template file must be named <name>.v<N>.j2", fix="rename it")
        pid = f"{path.parent.name}/{m.group('name')}"
        number = int(m.group("number"))
        found.setdefault(pid, {})[number] = PromptTemplate(pid, number, path, path.read_text(encoding="utf-8"))
    return found


def list_prompts() -> dict[str, list[int]]:
    """Every template id with its version numbers.

    >>> "acebench/standard" in list_prompts()
    True
    """
    return {pid: sorted(versions) for pid, versions in sorted(_catalog().items())}


def get_prompt(prompt_id: str, number: int | None = None) -> PromptTemplate:
    """A template by id (``family/name``), the newest version unless ``number`` is given."""
    versions = _catalog().get(prompt_id)
    if not versions:
        raise UserError(f"unknown prompt template {prompt_id!r}", fix=f"choose one of {', '.join(list_prompts())}")
    if number is None:
        return versions[max(versions)]
    if number not in versions:
        raise UserError(
            f"prompt template {prompt_id!r} has no version {number}",
            fix=f"versions: {', '.join(map(str, sorted(versions)))}",
        )
    return versions[number]
