"""The chat template the local server applies: Gemma's turn format, written for llama.cpp's Jinja engine.

The gguf carries no chat template, so llama.cpp would fall back to ChatML. ``chat_template =
"gemma"`` only selects llama.cpp's built-in Gemma format with Jinja switched off, and without
Jinja the server answers every request that carries ``tools`` with HTTP 500 ("tools param
requires --jinja flag"); with Jinja on, the string "gemma" is taken as a template and the prompt
becomes the word "gemma". Hence this template, in Gemma's format:

* system messages are prepended to the next user turn (Gemma has no system role), or make a
  user turn of their own when no user message follows;
* ``assistant`` becomes ``model``; tool results are ``tool`` turns;
* an assistant message's earlier tool calls are written as JSON lines
  ``{"name": ..., "arguments": {...}}`` after its content, so multi-turn histories stay visible.

It deliberately does not render the request's ``tools`` list: a template that does makes
llama.cpp parse replies for tool calls, and this base model's free text then fails that
parser with HTTP 500 on some requests. Put tool descriptions into the prompt instead.
"""

from __future__ import annotations

GEMMA_CHAT_TEMPLATE = (
    "{%- set ns = namespace(prefix='') -%}\n"
    "{%- for message in messages -%}\n"
    "{%- if message['role'] == 'system' -%}\n"
    "{%- set ns.prefix = ns.prefix + message['content'] + '\\n\\n' -%}\n"
    "{%- else -%}\n"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}\n"
    "{{- '<start_of_turn>' + role + '\\n' + (ns.prefix if role == 'user' else '') + (message['content'] or '') -}}\n"
    "{%- if message['tool_calls'] -%}{%- for tc in message['tool_calls'] -%}"
    "{{- ('\\n' if message['content'] or not loop.first else '')"
    " + ({'name': tc['function']['name'], 'arguments': tc['function']['arguments']} | tojson) -}}"
    "{%- endfor -%}{%- endif -%}\n"
    "{{- '<end_of_turn>\\n' -}}\n"
    "{%- if role == 'user' -%}{%- set ns.prefix = '' -%}{%- endif -%}\n"
    "{%- endif -%}\n"
    "{%- endfor -%}\n"
    "{%- if ns.prefix -%}{{- '<start_of_turn>user\\n' + (ns.prefix | trim) + '<end_of_turn>\\n' -}}{%- endif -%}\n"
    "{%- if add_generation_prompt -%}{{- '<start_of_turn>model\\n' -}}{%- endif -%}\n"
)
