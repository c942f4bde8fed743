"""Versioned prompt templates shared by construction and evaluation.

Templates are Jinja2 files under ``templates/<family>/<name>.v<N>.j2`` that render to chat
messages; a template's version string (``family/name@vN-hash8``) goes into every prediction and
sample made with it.
"""

from ._private.templates import PromptTemplate, get_prompt, list_prompts, split_messages

__all__ = ["PromptTemplate", "get_prompt", "list_prompts", "split_messages"]
