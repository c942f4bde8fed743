"""A scripted langchain chat model for unit tests of graph logic: its reply is a pure function of
the messages (no network, no randomness)."""

from __future__ import annotations

import json
from typing import Any, Callable

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class ScriptedChat(BaseChatModel):
    """``ScriptedChat(script=fn)`` where ``fn(messages: list[dict(role, content)]) -> str``."""

    script: Callable[[list[dict[str, str]]], str]
    model_name: str = "scripted"

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        plain = [
            {"role": m.type, "content": m.content if isinstance(m.content, str) else json.dumps(m.content)}
            for m in messages
        ]
        text = self.script(plain)
        return ChatResult(
            generations=[
                ChatGeneration(
                    message=AIMessage(
                        content=text,
                        response_metadata={
                            "finish_reason": "stop",
                            "token_usage": {"prompt_tokens": 10, "completion_tokens": 5},
                        },
                    )
                )
            ]
        )


def by_task(**replies: Callable[[str, list[dict[str, str]]], str] | str) -> Callable[[list[dict[str, str]]], str]:
    """A script routing on the system prompt's first words: ``by_task(query_generate=..., ...)`` keys
    are matched against markers below; a value is a reply string or ``fn(last_user_text, messages)``."""
    markers = {
        "generate": "You write realistic requests",
        "refine": "You improve a draft user request",
        "plan": "You plan how to solve",
        "act": "You turn one planned step",
        "simulate": "You play a tool",
        "review": "You review one step",
    }

    def script(messages: list[dict[str, str]]) -> str:
        system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
        last = messages[-1]["content"]
        for key, reply in replies.items():
            marker = markers.get(key, key)
            if system.startswith(marker) or marker in system[:200]:
                return reply(last, messages) if callable(reply) else reply
        raise AssertionError(f"no scripted reply for system prompt {system[:60]!r}")

    return script
