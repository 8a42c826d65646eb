"""Language models: the ``json`` and ``summary`` formats and Firecrawl's extract ask one.

The one kind is any OpenAI-compatible chat endpoint the operator configures
(``TASKCRAWLER_LLM_URL``, ``_MODEL``, ``_API_KEY``): Ollama, vLLM, llama.cpp's server, LiteLLM,
OpenAI. Its answers are hostile input like any page: bounded in time and size, checked, and
what fails is told to clients by a named error code, never by an exception's text.
"""

from __future__ import annotations

from taskcrawler.domain.structured import HOW_TO_CONFIGURE
from taskcrawler.llm.base import (
    ChatModel,
    LLMConfig,
    LLMUnavailable,
    Message,
)


def build_chat_model(config: LLMConfig) -> ChatModel:
    from taskcrawler.llm.openai import OpenAIChat

    return OpenAIChat(config)


__all__ = [
    "HOW_TO_CONFIGURE",
    "ChatModel",
    "LLMConfig",
    "LLMUnavailable",
    "Message",
    "build_chat_model",
]
