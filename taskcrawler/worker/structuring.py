"""Formats ``json`` and ``summary``: after extraction, what a model (or a schema's selectors)
reads from the page, kept in the job's result (``result.json``, ``result.summary``).

A model is asked with the page's Markdown cut to ``max_input_chars``; its answer is parsed and
validated against the schema, and an answer that breaks it is sent back once with what was wrong
(``answer_attempts`` in all). The model's client bounds each call (deadline, retries, size); a
selector schema is read where pages are parsed, under the parse deadline. What fails here fails
the job with its own error code, never an exception's text: ``llm_not_configured``,
``llm_unavailable``, ``llm_invalid_answer``, ``json_schema_mismatch``.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from functools import partial
from typing import Any

import orjson

from taskcrawler.domain import ClaimedJob, ErrorCode, Outcome
from taskcrawler.domain.pages import FetchedPage
from taskcrawler.domain.structured import (
    JSON_FORMAT,
    STRUCTURED_FORMATS,
    SUMMARY_FORMAT,
    AnswerRejected,
    JsonRequest,
    parsed_answer,
    validated,
)
from taskcrawler.extract.structured import select_json
from taskcrawler.llm import ChatModel, LLMUnavailable, Message
from taskcrawler.worker.content import format_failed
from taskcrawler.worker.parsing import PageParser, ParseCrashed, ParseTimeout

log = logging.getLogger(__name__)

UNEXPECTED = "an unexpected error making the json or summary format (the worker's log has it)"
#: Characters of a summary kept at most.
MAX_SUMMARY_CHARS = 4000
#: Characters of a rejected answer sent back to the model with what was wrong with it.
MAX_ECHOED_CHARS = 2000
#: Without a schema, the ``json`` format is an object (as Firecrawl's is).
_ANY_OBJECT: dict[str, Any] = {"type": "object"}
_JSON_SYSTEM = (
    "You extract structured data from a web page. Answer with one JSON value and nothing "
    "else: no prose, no code fence. Use null where the page does not say."
)
_SUMMARY_SYSTEM = (
    "You summarize web pages. Answer with a summary of the page in a few sentences, in the "
    "page's language, and nothing else."
)


class _Failed(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class StructuringStep:
    """What makes the ``json`` and ``summary`` formats: the model (None: none configured) and
    the parser whose lanes read a selector schema."""

    model: ChatModel | None
    parser: PageParser
    max_input_chars: int = 24_000
    answer_attempts: int = 2

    async def apply(
        self, job: ClaimedJob, outcome: Outcome, page: FetchedPage, markdown: str | None
    ) -> Outcome:
        """``outcome`` with the structured formats ``job`` asks for in its result, or failed
        with the reason."""
        wanted = STRUCTURED_FORMATS & set(job.formats)
        if not wanted or not outcome.succeeded:
            return outcome
        result = dict(outcome.result or {})
        try:
            # A job keeps every format it was asked for, but a later request may have replaced
            # its options: without a schema or a prompt there is nothing to ask a model.
            request = job.options.json
            if JSON_FORMAT in wanted and request is not None:
                result[JSON_FORMAT] = await self._json(request, page, markdown or "")
            if SUMMARY_FORMAT in wanted:
                result[SUMMARY_FORMAT] = await self._summary(page, markdown or "")
        except _Failed as exc:
            return _failed(outcome, exc.code, exc.message)
        except Exception:
            # A bug must cost its own job, said in our words, not the worker's task.
            log.exception("making json/summary failed for %s", job.url)
            return _failed(outcome, ErrorCode.EXTRACTION, UNEXPECTED)
        return dataclasses.replace(outcome, result=result)

    async def _json(self, request: JsonRequest, page: FetchedPage, markdown: str) -> Any:
        schema = request.schema
        if request.by_selectors and schema is not None:
            return await self._selected(schema, page)
        prompt = request.prompt or "Extract the data the JSON Schema describes."
        messages: list[Message] = [
            {"role": "system", "content": _system_for(schema)},
            {"role": "user", "content": self._page_prompt(prompt, page, markdown)},
        ]
        problem = ""
        for _ in range(max(1, self.answer_attempts)):
            answer = await self._ask(messages, schema)
            try:
                return validated(parsed_answer(answer), schema or _ANY_OBJECT)
            except AnswerRejected as exc:
                problem = str(exc)
            messages += [
                {"role": "assistant", "content": answer[:MAX_ECHOED_CHARS]},
                {
                    "role": "user",
                    "content": f"That answer was refused: {problem}. Answer again with JSON "
                    "only, valid against the schema.",
                },
            ]
        raise _Failed(
            ErrorCode.LLM_INVALID_ANSWER, f"after {self.answer_attempts} answers, {problem}"
        )

    async def _selected(self, schema: dict[str, Any], page: FetchedPage) -> Any:
        call = partial(
            select_json, page.body, url=page.final_url, charset=page.charset, schema=schema
        )
        try:
            value = await self.parser.run(call, page.body, page.content_type)
        except ParseTimeout as exc:
            raise _Failed(ErrorCode.PARSE_TIMEOUT, str(exc)) from None
        except ParseCrashed as exc:
            raise _Failed(ErrorCode.PARSE_CRASHED, str(exc)) from None
        try:
            return validated(value, schema)
        except AnswerRejected as exc:
            raise _Failed(ErrorCode.JSON_SCHEMA_MISMATCH, str(exc)) from None

    async def _summary(self, page: FetchedPage, markdown: str) -> str:
        messages: list[Message] = [
            {"role": "system", "content": _SUMMARY_SYSTEM},
            {"role": "user", "content": self._page_prompt("Summarize this page.", page, markdown)},
        ]
        summary = (await self._ask(messages, None)).strip()
        if not summary:
            raise _Failed(ErrorCode.LLM_INVALID_ANSWER, "the model answered an empty summary")
        return summary[:MAX_SUMMARY_CHARS]

    async def _ask(self, messages: list[Message], schema: dict[str, Any] | None) -> str:
        if self.model is None:
            raise _Failed(ErrorCode.LLM_NOT_CONFIGURED, "this worker has no language model")
        try:
            return await self.model.complete(messages, schema=schema)
        except LLMUnavailable as exc:
            raise _Failed(ErrorCode.LLM_UNAVAILABLE, str(exc)) from None

    def _page_prompt(self, ask: str, page: FetchedPage, markdown: str) -> str:
        cut = markdown[: self.max_input_chars]
        note = "" if len(cut) == len(markdown) else "\n\n(The page goes on; it was cut here.)"
        return f"{ask}\n\nThe page {page.final_url}, as Markdown:\n\n{cut}{note}"


def _system_for(schema: dict[str, Any] | None) -> str:
    """The instructions, with the schema written out: a server without structured output
    sees it only here."""
    if schema is None:
        return _JSON_SYSTEM + " Answer with a JSON object."
    return (
        f"{_JSON_SYSTEM} The JSON must be valid against this JSON Schema:\n"
        + orjson.dumps(schema).decode()
    )


def _failed(outcome: Outcome, code: ErrorCode, message: str) -> Outcome:
    """The page was fetched, but a format it asked for could not be made: FAILED at once (the
    same page and model would fail again; submitting it again is the user's choice)."""
    log.info("format json/summary failed for %s: %s", outcome.job.url, code)
    return format_failed(outcome, code, message)
