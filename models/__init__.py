"""Models: OpenAI-compatible chat endpoints (langchain-openai) with timeouts, retries and rate limits,
and the real local default model (Gemma 3 270M served by xllamacpp on 127.0.0.1)."""
