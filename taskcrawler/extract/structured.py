"""The ``json`` format without a model: the fields of a selector schema read from a page
(:mod:`taskcrawler.domain.structured` says what such a schema is).

Each field's selector is matched under its enclosing item (the page for top-level fields) in
time linear in that item, as every user selector is (:func:`matched_within`): a field takes its
first match, an array every match. Links and image sources read as attributes are made
absolute. Runs where pages are parsed (a lane of the worker's parser, under its deadline).
"""

from __future__ import annotations

from typing import Any

from selectolax.lexbor import LexborNode

from taskcrawler.domain.selectors import parse_ignore_selectors
from taskcrawler.domain.structured import SelectorField, read_value, selector_fields
from taskcrawler.extract.decode import decode_html
from taskcrawler.extract.ignore import matched_within
from taskcrawler.extract.nesting import limit_nesting
from taskcrawler.extract.tree import PageTree
from taskcrawler.extract.urls import Resolver

#: Items an array holds at most, and characters of one value read (a selector matching the
#: whole body must not copy megabytes into a result).
MAX_ITEMS = 1000
MAX_VALUE_CHARS = 10_000
_URL_ATTRIBUTES = frozenset({"href", "src", "action", "poster", "data-src"})


def select_json(body: bytes, *, url: str, charset: str | None, schema: dict[str, Any]) -> Any:
    """The object a selector schema reads from the page in ``body``."""
    tree = PageTree(limit_nesting(decode_html(body, charset).text))
    root = tree.root
    if root is None:
        return {}
    resolver = Resolver(url)
    return _object(root, selector_fields(schema), resolver)


def _object(node: LexborNode, fields: tuple[SelectorField, ...], resolver: Resolver) -> Any:
    return {field.name: _value(node, field, resolver) for field in fields}


def _value(scope: LexborNode, field: SelectorField, resolver: Resolver) -> Any:
    matches = _matches(scope, field.selector) if field.selector else [scope]
    if field.kind == "array":
        items = field.items or SelectorField("", "string")
        return [_item(match, items, resolver) for match in matches[:MAX_ITEMS]]
    if field.kind == "object":
        return _object(matches[0], field.fields, resolver) if matches else None
    first = matches[0] if matches else None
    return read_value(field.kind, _read(first, field.attribute, resolver), matched=bool(matches))


def _item(node: LexborNode, items: SelectorField, resolver: Resolver) -> Any:
    """An array's item: an object read under the matched element, or the element's own value
    (or that of the item's selector under it)."""
    if items.kind == "object":
        return _object(node, items.fields, resolver)
    return (
        _value(node, items, resolver)
        if items.selector
        else read_value(items.kind, _read(node, items.attribute, resolver), matched=True)
    )


def _matches(scope: LexborNode, selector: str) -> list[LexborNode]:
    return matched_within(scope, parse_ignore_selectors([selector], "selector"))


def _read(node: LexborNode | None, attribute: str | None, resolver: Resolver) -> str | None:
    if node is None:
        return None
    if attribute is None:
        return (node.text(separator=" ") or "")[:MAX_VALUE_CHARS]
    value = node.attributes.get(attribute)
    if value is None:
        return None
    if attribute in _URL_ATTRIBUTES:
        return resolver.resolve(value) or value[:MAX_VALUE_CHARS]
    return value[:MAX_VALUE_CHARS]
