"""The ``json`` and ``summary`` formats: what a request asks (a JSON Schema, a prompt), checked;
and what is made of an answer (parsed, validated against the schema). Pure.

A ``json`` format is made one of two ways:

* by a model (any OpenAI-compatible chat endpoint the operator configures): from a ``prompt``,
  a ``schema``, or both; the model's answer must be JSON and, with a schema, valid against it;
* without a model, when the schema maps its fields to CSS selectors (``"selector"`` beside a
  property's ``type``, and ``"attribute"`` to read an attribute instead of the text): for
  users who know their pages. The selectors are the linear-time subset every user selector
  is held to (:mod:`taskcrawler.domain.selectors`).

A schema is user input evaluated by a validator in the worker: bounded in size and depth, and
without the keywords that could make validation slow or reach out (``pattern`` and
``patternProperties``, whose regular expressions may backtrack; a ``$ref`` outside the schema).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from taskcrawler.domain.errors import HOW_TO_CONFIGURE
from taskcrawler.domain.selectors import InvalidSelector, parse_ignore_selectors
from taskcrawler.domain.texts import shortened

JSON_FORMAT = "json"
SUMMARY_FORMAT = "summary"
#: The formats a model (or selectors) make after extraction, kept in the job's result.
STRUCTURED_FORMATS = frozenset({JSON_FORMAT, SUMMARY_FORMAT})
#: A schema's JSON, at most, and how deeply it nests.
MAX_SCHEMA_BYTES = 32 * 1024
MAX_SCHEMA_DEPTH = 16
MAX_PROMPT_CHARS = 10_000
#: Fields of a selector schema, at most (every nested one counted).
MAX_SELECTOR_FIELDS = 100
#: What one ``json`` or ``summary`` may hold, as JSON: bigger answers are refused.
MAX_RESULT_BYTES = 256 * 1024
#: Characters of a validation problem kept in a job's error_log (it may quote the page).
MAX_PROBLEM_CHARS = 300
_REFUSED_KEYWORDS = frozenset({"pattern", "patternProperties", "$dynamicRef", "$recursiveRef"})
_SELECTOR_KEYS = frozenset({"selector", "attribute"})
_ATTRIBUTE = re.compile(r"[A-Za-z_:][-A-Za-z0-9_:.]{0,63}")
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class InvalidJsonRequest(ValueError):
    """A ``json`` format that is refused; ``field`` names what (``schema.properties.price``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class ModelNotConfigured(ValueError):
    """A format that needs a language model, where none is configured: a 400 saying how."""


def needs_model(formats: Collection[str], json: JsonRequest | None) -> bool:
    """Whether a language model makes some of ``formats``: ``summary``, or a ``json`` that is
    not a selector schema."""
    if SUMMARY_FORMAT in formats:
        return True
    return JSON_FORMAT in formats and not (json is not None and json.by_selectors)


def check_model(formats: Collection[str], json: JsonRequest | None, *, configured: bool) -> None:
    """:class:`ModelNotConfigured` when ``formats`` need a model and none is configured."""
    if not configured and needs_model(formats, json):
        asked = "summary" if SUMMARY_FORMAT in formats else "json (without a selector schema)"
        raise ModelNotConfigured(
            f"formats: {asked} needs a language model, and none is configured: {HOW_TO_CONFIGURE}"
        )


class AnswerRejected(ValueError):
    """An answer (a model's, or what the selectors read) that is not JSON or breaks the schema;
    the message says where, briefly, never more than :data:`MAX_PROBLEM_CHARS`."""


@dataclass(frozen=True, slots=True)
class JsonRequest:
    """A checked ``json`` format. ``schema`` is kept as canonical JSON text, so that the
    request compares and stores as the other options do."""

    schema_json: str | None = None
    prompt: str | None = None

    @property
    def schema(self) -> dict[str, Any] | None:
        loaded = orjson.loads(self.schema_json) if self.schema_json else None
        return loaded if isinstance(loaded, dict) else None

    @property
    def by_selectors(self) -> bool:
        """Made without a model: the schema maps its fields to selectors."""
        schema = self.schema
        return schema is not None and any(_SELECTOR_KEYS & set(node) for node in _nodes(schema))


def json_request(schema: Any = None, prompt: Any = None, where: str = "json") -> JsonRequest:
    """The ``json`` format of a request; :class:`InvalidJsonRequest` names what is wrong."""
    if schema is None and not prompt:
        raise InvalidJsonRequest(where, "needs a schema, a prompt, or both")
    if prompt is not None:
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidJsonRequest(f"{where}.prompt", "must be a non-empty string")
        if len(prompt) > MAX_PROMPT_CHARS:
            raise InvalidJsonRequest(f"{where}.prompt", f"at most {MAX_PROMPT_CHARS:,} characters")
    if schema is None:
        return JsonRequest(None, prompt)
    checked = _checked_schema(schema, f"{where}.schema")
    request = JsonRequest(orjson.dumps(checked, option=orjson.OPT_SORT_KEYS).decode(), prompt)
    if request.by_selectors:
        _check_selector_schema(checked, f"{where}.schema")
        if prompt:
            raise InvalidJsonRequest(
                f"{where}.prompt", "a schema of selectors is read without a model: no prompt"
            )
    return request


def _checked_schema(schema: Any, where: str) -> dict[str, Any]:
    if not isinstance(schema, Mapping):
        raise InvalidJsonRequest(where, "must be a JSON Schema object")
    try:
        size = len(orjson.dumps(schema))
    except orjson.JSONEncodeError:  # an integer past 64 bits, a value JSON cannot carry
        raise InvalidJsonRequest(where, "holds a value JSON Schema cannot use") from None
    if size > MAX_SCHEMA_BYTES:
        raise InvalidJsonRequest(where, f"at most {MAX_SCHEMA_BYTES:,} bytes of JSON")
    for path, node, depth in _walk(schema, where, 0):
        if depth > MAX_SCHEMA_DEPTH:
            raise InvalidJsonRequest(path, f"nests deeper than {MAX_SCHEMA_DEPTH} levels")
        if refused := sorted(_REFUSED_KEYWORDS & set(node)):
            raise InvalidJsonRequest(
                f"{path}.{refused[0]}", "not supported (regular expressions are not run)"
            )
        ref = node.get("$ref")
        if ref is not None and not _points_inside(schema, ref):
            raise InvalidJsonRequest(
                f"{path}.$ref", "only references to a part of the schema itself (#/$defs/…)"
            )
    from jsonschema import Draft202012Validator  # here: most imports of this module never check
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise InvalidJsonRequest(where, f"not a valid JSON Schema: {_brief(exc.message)}") from None
    return dict(schema)


def _points_inside(schema: Mapping[str, Any], ref: Any) -> bool:
    """Whether ``ref`` is a JSON pointer (``#``, ``#/$defs/item``) to a part of ``schema``: a
    reference the validator can follow without looking anywhere else."""
    if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
        return False
    node: Any = schema
    for raw in ref[2:].split("/") if ref != "#" else ():
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and _is_index(key, len(node)):
            node = node[int(key)]
        else:
            return False
    return isinstance(node, Mapping | bool)


def _is_index(key: str, length: int) -> bool:
    """Whether ``key`` is an index of a list of ``length`` items. ASCII digits only, and no
    more of them than ``length`` has: "²" is a digit to ``isdigit()`` and no number to
    ``int()``, nor is a run of 5,000 digits, and their ValueError was a 500."""
    return key.isascii() and key.isdigit() and len(key) <= len(str(length)) and int(key) < length


def _walk(node: Any, path: str, depth: int) -> Iterator[tuple[str, dict[str, Any], int]]:
    """Every object in a schema, with where it is and how deep."""
    if isinstance(node, Mapping):
        yield path, dict(node), depth
        for key, value in node.items():
            yield from _walk(value, f"{path}.{key}", depth + 1)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, f"{path}[{index}]", depth + 1)


def _nodes(schema: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for _, node, _ in _walk(schema, "", 0):
        yield node


# --- selector schemas ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SelectorField:
    """One field read from a page: where (``selector``, relative to the enclosing item), what
    (its text, or ``attribute``), as ``kind`` (``string``, ``number``, ``integer``, ``boolean``,
    ``array`` of ``items``, ``object`` of ``fields``)."""

    name: str
    kind: str
    selector: str | None = None
    attribute: str | None = None
    items: SelectorField | None = None
    fields: tuple[SelectorField, ...] = ()


def selector_fields(schema: Mapping[str, Any]) -> tuple[SelectorField, ...]:
    """The fields a (checked) selector schema reads, in the order of its properties."""
    return _object_fields(schema)


def _object_fields(schema: Mapping[str, Any]) -> tuple[SelectorField, ...]:
    properties = schema.get("properties") or {}
    return tuple(_field(name, node) for name, node in properties.items())


def _field(name: str, node: Mapping[str, Any]) -> SelectorField:
    kind = _kind(node)
    items = node.get("items") if kind == "array" else None
    return SelectorField(
        name=name,
        kind=kind,
        selector=node.get("selector"),
        attribute=node.get("attribute"),
        items=_field("", items) if isinstance(items, Mapping) else None,
        fields=_object_fields(node) if kind == "object" else (),
    )


def _kind(node: Mapping[str, Any]) -> str:
    kind = node.get("type", "string")
    if isinstance(kind, list):  # ["string", "null"]: the first that is not null
        kind = next((k for k in kind if k != "null"), "string")
    return kind if isinstance(kind, str) else "string"


def _check_selector_schema(schema: Mapping[str, Any], where: str) -> None:
    """A selector schema: an object whose properties each have a selector (or are objects of
    such properties); arrays name the selector of their items."""
    if _kind(schema) != "object" or not isinstance(schema.get("properties"), Mapping):
        raise InvalidJsonRequest(where, "a schema of selectors must be an object with properties")
    count = _check_properties(schema, f"{where}.properties", top=True)
    if count > MAX_SELECTOR_FIELDS:
        raise InvalidJsonRequest(where, f"at most {MAX_SELECTOR_FIELDS} fields")


def _check_properties(schema: Mapping[str, Any], where: str, *, top: bool = False) -> int:
    count = 0
    for name, node in (schema.get("properties") or {}).items():
        path = f"{where}.{name}"
        if not isinstance(node, Mapping):
            raise InvalidJsonRequest(path, "must be a schema object")
        count += 1 + _check_field(node, path)
    return count


def _check_field(node: Mapping[str, Any], path: str) -> int:
    kind = _kind(node)
    selector, attribute = node.get("selector"), node.get("attribute")
    if selector is not None:
        try:
            parse_ignore_selectors([selector], f"{path}.selector")
        except InvalidSelector as exc:
            raise InvalidJsonRequest(exc.field, exc.message) from None
    if attribute is not None and (
        not isinstance(attribute, str) or not _ATTRIBUTE.fullmatch(attribute)
    ):
        raise InvalidJsonRequest(f"{path}.attribute", "must be an attribute name (href, src)")
    if kind == "object":
        if not isinstance(node.get("properties"), Mapping):
            raise InvalidJsonRequest(path, "an object needs properties")
        return _check_properties(node, f"{path}.properties")
    if kind == "array":
        items = node.get("items")
        if selector is None:
            raise InvalidJsonRequest(f"{path}.selector", "an array needs the selector of its items")
        if not isinstance(items, Mapping):
            raise InvalidJsonRequest(f"{path}.items", "an array needs the schema of its items")
        if _kind(items) == "object":
            return _check_properties(items, f"{path}.items.properties")
        return 0
    if selector is None:
        raise InvalidJsonRequest(f"{path}.selector", "every field needs a CSS selector")
    if kind not in ("string", "number", "integer", "boolean"):
        raise InvalidJsonRequest(f"{path}.type", f"{kind!r} cannot be read from a page")
    return 0


#: Characters of a value read at most (a selector may match the whole body).
_MAX_READ_CHARS = 10_000
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:[,\u00a0 ]\d{3})+|\d+)(?:\.\d+)?")


def read_value(kind: str, text: str | None, *, matched: bool) -> Any:
    """A field's value from the text (or attribute) its selector read: a string with its
    whitespace collapsed, the first number in it, or whether the selector matched."""
    if kind == "boolean":
        return matched
    if text is None:
        return None
    collapsed = " ".join(text[:_MAX_READ_CHARS].split())
    if kind in ("number", "integer"):
        found = _NUMBER.search(collapsed)
        if found is None:
            return None
        number = float(re.sub(r"[,\u00a0 ]", "", found.group()))
        if kind == "integer":
            return int(number) if math.isfinite(number) and number.is_integer() else None
        return int(number) if number.is_integer() else number
    return collapsed


# --- answers ---------------------------------------------------------------------------------


def parsed_answer(text: str) -> Any:
    """A model's answer as JSON: the document itself, or inside a Markdown code fence (what
    models add when the server cannot constrain them)."""
    fenced = _FENCE.match(text)
    body = fenced.group(1) if fenced else text.strip()
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        raise AnswerRejected("the answer is not JSON") from None


def validated(value: Any, schema: Mapping[str, Any] | None) -> Any:
    """``value`` when it is valid against ``schema`` (and not too big); else
    :class:`AnswerRejected` saying where it breaks it."""
    try:
        size = len(orjson.dumps(value))
    except orjson.JSONEncodeError:  # deeper than orjson writes
        raise AnswerRejected("the answer nests too deeply") from None
    if size > MAX_RESULT_BYTES:
        raise AnswerRejected(f"the answer is over {MAX_RESULT_BYTES:,} bytes of JSON")
    if schema is None:
        return value
    from jsonschema import Draft202012Validator

    try:
        error = next(iter(Draft202012Validator(schema).iter_errors(value)), None)
    except RecursionError:  # a recursive schema ($ref: #) over an answer nested very deep
        raise AnswerRejected("the answer nests too deeply to be checked") from None
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(the root)"
        raise AnswerRejected(f"the answer breaks the schema at {where}: {_brief(error.message)}")
    return value


def merged(values: list[Any]) -> Any:
    """One answer of several pages' (an extract of many URLs with one schema): objects merged
    field by field, lists joined (each item once), and for anything else the first page that
    has it, in the order of the pages."""
    present = [value for value in values if value is not None]
    if not present:
        return None
    if all(isinstance(value, dict) for value in present):
        keys = list(dict.fromkeys(key for value in present for key in value))
        return {key: merged([value.get(key) for value in present]) for key in keys}
    if all(isinstance(value, list) for value in present):
        joined: dict[bytes, Any] = {}
        for value in present:
            for item in value:
                joined.setdefault(orjson.dumps(item, option=orjson.OPT_SORT_KEYS), item)
        return list(joined.values())
    return present[0]


def _brief(message: str) -> str:
    return shortened(message, MAX_PROBLEM_CHARS)


__all__ = [
    "HOW_TO_CONFIGURE",
    "JSON_FORMAT",
    "MAX_RESULT_BYTES",
    "STRUCTURED_FORMATS",
    "SUMMARY_FORMAT",
    "AnswerRejected",
    "InvalidJsonRequest",
    "JsonRequest",
    "ModelNotConfigured",
    "SelectorField",
    "check_model",
    "json_request",
    "merged",
    "needs_model",
    "parsed_answer",
    "read_value",
    "selector_fields",
    "validated",
]
