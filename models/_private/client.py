"""``ModelClient``: chat completions through langchain-openai's ``ChatOpenAI`` with our own retries."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import threading
import time
import weakref
from dataclasses import asdict, dataclass, field
from typing import Any

from benchsmith.models._private import messages as msgs
from benchsmith.models._private import retry
from benchsmith.models._private.config import ModelConfig, mask_url
from benchsmith.models._private.errors import TransportError
from benchsmith.schemas import UserError

log = logging.getLogger("benchsmith.models")


@dataclass
class Reply:
    """One assistant reply. An empty or malformed answer is a Reply with ``text == ""``, not an error."""

    text: str
    """The content ("" when the server sent null or nothing usable)."""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """``[{"id", "name", "arguments"}]``; arguments parsed when they are a JSON object, else the raw string."""
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    """``{"prompt_tokens", "completion_tokens"}`` when the server reported them, with
    ``cached_tokens`` (of the prompt) and ``reasoning_tokens`` (of the completion) when it says."""
    latency_s: float = 0.0
    """Seconds of the successful attempt (backoff waits and rate limiting excluded)."""
    attempts: int = 1
    raw: dict[str, Any] = field(default_factory=dict)
    """The assistant message as an OpenAI-style dict (``content``, ``tool_calls`` with JSON-string arguments)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _usage(meta: dict[str, Any] | None) -> dict[str, int]:
    meta = meta or {}
    out = {}
    for ours, theirs in (
        ("prompt_tokens", ("prompt_tokens", "input_tokens")),
        ("completion_tokens", ("completion_tokens", "output_tokens")),
    ):
        for key in theirs:
            if isinstance(meta.get(key), int):
                out[ours] = meta[key]
                break
    # prompt tokens the server took from its cache (OpenAI's and llama.cpp's prompt_tokens_details,
    # langchain's input_token_details): what prompt-prefix reuse saved
    details = meta.get("prompt_tokens_details") or meta.get("input_token_details") or {}
    if isinstance(details, dict):
        cached = details.get("cached_tokens", details.get("cache_read"))
        if isinstance(cached, int) and cached > 0:
            out["cached_tokens"] = cached
    # completion tokens a reasoning model spent thinking (OpenAI's completion_tokens_details,
    # langchain's output_token_details): part of completion_tokens, not added to them
    details = meta.get("completion_tokens_details") or meta.get("output_token_details") or {}
    if isinstance(details, dict):
        reasoning = details.get("reasoning_tokens", details.get("reasoning"))
        if isinstance(reasoning, int) and reasoning > 0:
            out["reasoning_tokens"] = reasoning
    return out


def reply_from_message(message: Any, latency: float, attempts: int = 1) -> Reply:
    """A :class:`Reply` from a langchain ``AIMessage`` (text, tool calls, finish reason, usage)."""
    raw = msgs.ai_to_openai(message)
    meta = getattr(message, "response_metadata", None) or {}
    usage = _usage(meta.get("token_usage")) or _usage(getattr(message, "usage_metadata", None))
    return Reply(
        text=raw["content"],
        tool_calls=msgs.reply_calls(raw),
        finish_reason=meta.get("finish_reason"),
        usage=usage,
        latency_s=latency,
        attempts=attempts,
        raw=raw,
    )


def local_json_grammar(schema: dict[str, Any]) -> str:
    """An LLGuidance grammar (llama.cpp's ``grammar`` field) for JSON under ``schema`` with no free
    whitespace: ``", "`` between items and ``": "`` after keys.

    >>> local_json_grammar({"type": "integer"})
    '%llguidance {}\\nstart: %json {"type": "integer", "x-guidance": {"whitespace_flexible": false, "item_separator": ", ", "key_separator": ": "}}'
    """
    guided = {**schema, "x-guidance": {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}}
    return "%llguidance {}\nstart: %json " + json.dumps(guided, ensure_ascii=False)


class ModelClient:
    """Chat completions against an OpenAI-compatible endpoint described by a ``ModelConfig``.

    Built on langchain-openai's ``ChatOpenAI`` with an explicit per-request ``timeout`` and its
    own retries switched off: connection errors, timeouts, HTTP 429 and 5xx are retried here up
    to ``max_retries`` times with full-jitter exponential backoff (``backoff_base`` doubling up to
    ``backoff_max``; a Retry-After header is honoured, up to 120 s), then ``TransportError``.
    HTTP 401/403/404 raise ``UserError`` at once (bad key / unknown model or URL); other 4xx
    raise ``TransportError(kind="request")`` at once. The API key is read from
    ``$config.api_key_env`` when the client first talks to the server and is never logged.
    Safe to share between threads and asyncio tasks.
    """

    def __init__(self, config: ModelConfig) -> None:
        if not isinstance(config, ModelConfig):
            raise TypeError(f"ModelClient needs a ModelConfig, got {type(config).__name__}")
        self.config = config
        self._chat: Any = None
        self._loop_chats: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._kwargs: dict[str, Any] | None = None
        self._key: str | None = None
        self._build_lock = threading.Lock()
        self._rng = random.Random()
        self._limiter: Any = None
        if config.requests_per_second:
            from langchain_core.rate_limiters import InMemoryRateLimiter

            rps = config.requests_per_second
            self._limiter = InMemoryRateLimiter(
                requests_per_second=rps, check_every_n_seconds=min(0.1, 0.25 / rps), max_bucket_size=max(1.0, rps)
            )

    def __repr__(self) -> str:
        return f"ModelClient({self.config!r})"

    # -- the ChatOpenAI instance ------------------------------------------------------------
    def _base_url(self) -> str | None:
        if self.config.base_url is None and self.config.local:
            from benchsmith.models._private.server import ensure_local_server

            return ensure_local_server(self.config.name)
        return self.config.base_url

    def _settings(self) -> dict[str, Any]:
        """ChatOpenAI's arguments (the endpoint resolved and the key read once)."""
        with self._build_lock:
            if self._kwargs is None:
                cfg = self.config
                base_url = self._base_url()
                key = cfg.api_key()
                if key is None:
                    if base_url is None:
                        raise UserError(
                            f"${cfg.api_key_env} is not set, so the OpenAI API cannot be called",
                            fix=f"export {cfg.api_key_env}=... (or pass a base URL for another endpoint, "
                            "or leave both out to use the local model)",
                        )
                    key = "not-needed"  # self-hosted endpoints often need no key
                self._key = key
                self._kwargs = dict(
                    model=cfg.name,
                    base_url=base_url,
                    api_key=key,
                    timeout=cfg.timeout,
                    max_retries=0,
                    temperature=cfg.temperature,
                    max_tokens=cfg.max_tokens,
                    seed=cfg.seed,
                    use_responses_api=False,
                )
            return self._kwargs

    def _model(self, loop: asyncio.AbstractEventLoop | None = None) -> Any:
        """The ChatOpenAI for blocking calls, or the one for event loop ``loop``.

        Each event loop gets its own async HTTP client: httpx connections belong to the loop that
        opened them, and langchain's shared default client fails with "Event loop is closed" on
        the next ``asyncio.run``.
        """
        if loop is None:
            if self._chat is None:
                settings = self._settings()
                with self._build_lock:
                    if self._chat is None:
                        self._chat = _chat_class()(**settings)
            return self._chat
        chat = self._loop_chats.get(loop)
        if chat is None:
            import openai

            for old in [lp for lp in list(self._loop_chats.keys()) if lp.is_closed()]:
                self._loop_chats.pop(old, None)  # their connections died with their loop

            settings = self._settings()
            with self._build_lock:
                chat = self._loop_chats.get(loop)
                if chat is None:
                    chat = _chat_class()(**settings, http_async_client=openai.DefaultAsyncHttpxClient())
                    self._loop_chats[loop] = chat
        return chat

    def _runnable(
        self,
        tools: list[dict] | None,
        json_schema: dict | None,
        tool_choice: Any,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> Any:
        model = self._model(loop)
        runnable = model
        if tools:
            extra = {"tool_choice": tool_choice} if tool_choice is not None else {}
            runnable = model.bind_tools(tools, **extra)
        if json_schema is not None:
            if not isinstance(json_schema, dict):
                raise UserError("json_schema must be a JSON Schema object (a dict)")
            if self.config.local:
                # llama.cpp's own converter lets JSON whitespace run free, and a base model fills
                # it with tabs until max_tokens; LLGuidance with fixed separators keeps it compact
                runnable = runnable.bind(extra_body={"grammar": local_json_grammar(json_schema)})
            else:
                fmt = {"type": "json_schema", "json_schema": {"name": "reply", "schema": json_schema, "strict": True}}
                # sent as a body field: bound as ``response_format`` langchain switches to the SDK's
                # ``parse()``, which raises on a reply cut by max_tokens and rejects non-strict tools
                runnable = runnable.bind(extra_body={"response_format": fmt})
        return runnable

    @staticmethod
    def _call_kwargs(
        max_tokens: int | None, stop: list[str] | str | None, temperature: float | None = None, seed: int | None = None
    ) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        if max_tokens is not None:
            kw["max_tokens"] = max_tokens
        if stop is not None:
            kw["stop"] = [stop] if isinstance(stop, str) else list(stop)
        if temperature is not None:
            kw["temperature"] = float(temperature)
        if seed is not None:
            kw["seed"] = int(seed)
        return kw

    # -- errors ----------------------------------------------------------------------------------
    def _scrub(self, text: str) -> str:
        key = self._key or self.config.api_key()
        if key and len(key) >= 4 and key not in ("local", "not-needed"):
            text = text.replace(key, "***")
        return text

    def _where(self) -> str:
        return mask_url(self.config.base_url) or ("the local model server" if self.config.local else "the OpenAI API")

    def _fatal(self, exc: BaseException, attempts: int) -> BaseException | None:
        """The error to raise at once for a non-retried failure (None: not an HTTP error we know)."""
        import openai

        if not isinstance(exc, openai.APIStatusError):
            return None
        status = exc.status_code
        env = self.config.api_key_env
        if status in (401, 403):
            verb = "rejected the API key" if status == 401 else "refused access with this API key"
            return UserError(
                f"{self._where()} {verb} (HTTP {status}) for model {self.config.name!r}",
                fix=f"check the key in ${env} and that it may use this model",
            )
        if status == 404:
            return UserError(
                f"{self._where()} answered 404 Not Found for model {self.config.name!r}",
                fix="check the model name (BENCHSMITH_MODEL / --model) and that the base URL ends with /v1",
            )
        detail = self._scrub(str(getattr(exc, "message", "") or exc))[:500]
        return TransportError(
            f"{self._where()} rejected the request (HTTP {status}): {detail}",
            kind="request",
            status=status,
            attempts=attempts,
        )

    def _give_up(self, exc: BaseException, kind: str, attempts: int) -> TransportError:
        status = retry.status_of(exc)
        detail = self._scrub(str(getattr(exc, "message", "") or exc) or type(exc).__name__)[:300]
        what = {
            "connection": "could not connect to",
            "timeout": "timed out talking to",
            "rate_limit": "was rate-limited by",
            "server": "got server errors from",
        }[kind]
        status_txt = f" (HTTP {status})" if status else ""
        return TransportError(
            f"{self.config.name}: {what} {self._where()}{status_txt} after {attempts} attempt(s): {detail}",
            kind=kind,
            status=status,
            attempts=attempts,
        )

    def _next_delay(self, exc: BaseException, kind: str, attempt: int) -> float | None:
        """Seconds to wait before the next attempt, or None to give up."""
        if attempt > self.config.max_retries:
            return None
        after = retry.retry_after_seconds(exc)
        if after is not None:
            delay = min(after, retry.RETRY_AFTER_CAP)
        else:
            delay = retry.backoff_delay(attempt, self.config.backoff_base, self.config.backoff_max, self._rng)
        status = retry.status_of(exc)
        log.warning(
            "%s: %s%s from %s; retry %d/%d in %.2f s",
            self.config.name,
            kind,
            f" (HTTP {status})" if status else "",
            self._where(),
            attempt,
            self.config.max_retries,
            delay,
        )
        return delay

    def _malformed(self, exc: BaseException, latency: float, attempts: int) -> Reply:
        detail = f"{type(exc).__name__}: {self._scrub(str(exc))[:500]}"
        log.warning("malformed model reply treated as empty: %s", detail[:200])
        return Reply(
            text="", latency_s=latency, attempts=attempts, raw={"role": "assistant", "content": "", "error": detail}
        )

    def _on_failure(self, exc: BaseException, attempt: int, t0: float) -> Reply | float:
        """What a failed attempt leads to: a Reply (malformed answer), a delay before retrying, or an
        exception raised from here."""
        import openai

        latency = time.monotonic() - t0
        if isinstance(exc, asyncio.TimeoutError):
            kind = "timeout"
        elif isinstance(exc, openai.APIError) and retry.model_output_rejected(exc):
            return self._malformed(exc, latency, attempt)  # the model's reply was unreadable: a format error
        elif isinstance(exc, openai.APIError):
            classified = retry.classify(exc)
            if classified is None:
                fatal = self._fatal(exc, attempt)
                if fatal is not None:
                    raise fatal from None
                return self._malformed(exc, latency, attempt)  # e.g. a 200 whose body is not a completion
            kind = classified
        else:  # MalformedReply / JSONDecodeError: a 200 answer that is not a chat completion
            return self._malformed(exc, latency, attempt)
        delay = self._next_delay(exc, kind, attempt)
        if delay is None:
            raise self._give_up(exc, kind, attempt) from None
        return delay

    # -- calls -----------------------------------------------------------------------------------
    async def acomplete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict] | None = None,
        json_schema: dict | None = None,
        max_tokens: int | None = None,
        stop: list[str] | str | None = None,
        tool_choice: Any = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> Reply:
        """One chat completion (async). ``tools`` are OpenAI function schemas (``tool_choice``
        optional); ``json_schema`` constrains the reply (``response_format`` json_schema, strict);
        ``temperature`` and ``seed`` override the configuration's for this call (independent trials)."""
        import openai

        lc_messages = msgs.to_langchain(messages)
        loop = asyncio.get_running_loop()
        if self._kwargs is None:
            await asyncio.to_thread(self._settings)  # may start the local server: not on the loop
        runnable = self._runnable(tools, json_schema, tool_choice, loop)
        kwargs = self._call_kwargs(max_tokens, stop, temperature, seed)
        attempt = 0
        while True:
            attempt += 1
            if self._limiter is not None:
                await self._limiter.aacquire()
            t0 = time.monotonic()
            try:
                message = await asyncio.wait_for(runnable.ainvoke(lc_messages, **kwargs), self.config.timeout)
                return reply_from_message(message, time.monotonic() - t0, attempt)
            except (asyncio.TimeoutError, openai.OpenAIError, *_MALFORMED) as exc:
                outcome = self._on_failure(exc, attempt, t0)
            if isinstance(outcome, Reply):
                return outcome
            await asyncio.sleep(outcome)

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict] | None = None,
        json_schema: dict | None = None,
        max_tokens: int | None = None,
        stop: list[str] | str | None = None,
        tool_choice: Any = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> Reply:
        """One chat completion (blocking); see ``acomplete``."""
        import openai

        lc_messages = msgs.to_langchain(messages)
        runnable = self._runnable(tools, json_schema, tool_choice)
        kwargs = self._call_kwargs(max_tokens, stop, temperature, seed)
        attempt = 0
        while True:
            attempt += 1
            if self._limiter is not None:
                self._limiter.acquire()
            t0 = time.monotonic()
            try:
                message = runnable.invoke(lc_messages, **kwargs)
                return reply_from_message(message, time.monotonic() - t0, attempt)
            except (openai.OpenAIError, *_MALFORMED) as exc:
                outcome = self._on_failure(exc, attempt, t0)
            if isinstance(outcome, Reply):
                return outcome
            time.sleep(outcome)


class MalformedReply(Exception):
    """A 200 answer that is not a chat completion (turned into an empty Reply)."""


# a 200 body that is not JSON, not UTF-8 (UnicodeDecodeError) or holds a number of more than 4,300
# digits (ValueError from int()): all ValueErrors of reading the body, like JSONDecodeError
_MALFORMED = (MalformedReply, ValueError, RecursionError)
_CHAT_CLASS: Any = None


def _chat_class() -> Any:
    """``ChatOpenAI`` that sends "" instead of null content and reports an unusable 200 answer as
    ``MalformedReply``."""
    global _CHAT_CLASS
    if _CHAT_CLASS is None:
        from langchain_openai import ChatOpenAI

        class _ChatOpenAI(ChatOpenAI):
            def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any) -> dict:
                payload = super()._get_request_payload(input_, stop=stop, **kwargs)
                for message in payload.get("messages") or []:  # langchain sends null beside tool calls;
                    if message.get("content") is None:  # some servers crash on null content
                        message["content"] = ""
                return payload

            def _create_chat_result(self, response: Any, generation_info: dict | None = None) -> Any:
                try:
                    result = super()._create_chat_result(response, generation_info)
                except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
                    raise MalformedReply(f"{type(exc).__name__}: {exc}") from exc
                if not result.generations:
                    raise MalformedReply("the answer has no choices")
                return result

        _CHAT_CLASS = _ChatOpenAI
    return _CHAT_CLASS
