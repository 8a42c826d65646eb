"""What a page says about itself in its ``<head>``: title, description, Open Graph, JSON-LD, …

One CSS query collects every ``<title>``, ``<meta>``, ``<link>`` and ``<base>`` (in the head or,
as happens in the wild, in the body); the rest is dictionary work in Python.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import orjson
from selectolax.lexbor import LexborHTMLParser, LexborNode

from taskcrawler.extract.links import rel_tokens
from taskcrawler.extract.tree import tag_id
from taskcrawler.extract.urls import Resolver

JSON = Any
_HEAD_SELECTOR = "title, meta, link[href], base[href]"
_JSON_LD_TYPE = "application/ld+json"
_META, _LINK, _TITLE, _BASE, _SVG = map(tag_id, ("meta", "link", "title", "base", "svg"))
_OG_URL_KEYS = frozenset(
    {"url", "image", "image:url", "image:secure_url", "video", "video:url", "video:secure_url"}
    | {"audio", "audio:url", "audio:secure_url"}
)
_TWITTER_URL_KEYS = frozenset({"image", "image:src", "player"})
_ICON_RANKS = {"icon": 0, "apple-touch-icon": 1, "apple-touch-icon-precomposed": 2, "mask-icon": 3}
_JSON_LD_WRAPPERS = re.compile(
    r"^\s*(?:<!--|//\s*<!\[CDATA\[|<!\[CDATA\[)|(?:-->|//\s*\]\]>|\]\]>)\s*$"
)
#: What each alternative of the pattern above contains: without any, it matches nothing.
_JSON_LD_MARKERS = ("<!--", "<![CDATA[", "-->", "]]>")
_MAX_INT = 2**63 - 1
# What one page may put in its metadata: a hostile page gets its first few of each, and a row
# of bounded size, instead of megabytes stored and served with every read of its job.
MAX_HEADINGS = 100
MAX_FIELD_CHARS = 2_048  # a title, a description, a heading, one Open Graph value
MAX_PROPERTIES = 100  # Open Graph and Twitter properties, each
MAX_HREFLANG = 300  # alternate languages (large multilingual sites have a hundred or two)
MAX_ICONS = 50
MAX_JSON_LD_ITEMS = 100
MAX_JSON_LD_CHARS = 256 * 1024  # of JSON-LD text, all blocks together
MAX_JSON_LD_ERRORS = 20
MAX_NAMED_META = 300


def collapse(text: str | None) -> str:
    """Whitespace runs to one space, trimmed, cut to :data:`MAX_FIELD_CHARS`."""
    return " ".join(text.split())[:MAX_FIELD_CHARS] if text else ""


def _add(values: dict[str, str], key: str, value: str, limit: int) -> None:
    """``values.setdefault(key, value)``, while ``values`` holds fewer than ``limit`` keys."""
    if key not in values and len(values) < limit:
        values[key[:MAX_FIELD_CHARS]] = value[:MAX_FIELD_CHARS]


@dataclass(slots=True)
class HeadInfo:
    """Raw declarations, before URLs are resolved (the resolver needs ``base_href`` first)."""

    title: str = ""
    base_href: str | None = None
    description: str = ""
    content_language: str = ""
    robots: str = ""
    canonical: str | None = None
    open_graph: dict[str, str] = field(default_factory=dict)
    twitter: dict[str, str] = field(default_factory=dict)
    hreflang: dict[str, str] = field(default_factory=dict)
    icons: list[tuple[int, str]] = field(default_factory=list)
    named_meta: dict[str, str] = field(default_factory=dict)  # name/property -> content


def _read_meta(info: HeadInfo, attrs: dict[str, str | None]) -> None:
    content = attrs.get("content")
    if content is None:
        return
    key = (
        (attrs.get("property") or attrs.get("name") or attrs.get("itemprop") or "").strip().lower()
    )
    content = content.strip()
    if key and content and len(info.named_meta) < MAX_NAMED_META:
        info.named_meta.setdefault(key, content)
    if key.startswith("og:"):
        _add(info.open_graph, key[3:], content, MAX_PROPERTIES)
    elif key.startswith("twitter:"):
        _add(info.twitter, key[8:], content, MAX_PROPERTIES)
    elif key == "description":
        info.description = info.description or collapse(content)
    elif key in ("robots", "googlebot"):
        info.robots += " " + content.lower()
    elif (attrs.get("http-equiv") or "").strip().lower() == "content-language":
        info.content_language = info.content_language or content[:MAX_FIELD_CHARS]


def _read_link(info: HeadInfo, attrs: dict[str, str | None]) -> None:
    href = attrs.get("href")
    if not href:
        return
    rel = rel_tokens(attrs.get("rel"))
    if "canonical" in rel and info.canonical is None:
        info.canonical = href[:MAX_FIELD_CHARS]
    if "alternate" in rel:
        lang = (attrs.get("hreflang") or "").strip()
        if lang:
            _add(info.hreflang, lang, href, MAX_HREFLANG)
    ranks = [_ICON_RANKS[token] for token in rel if token in _ICON_RANKS]
    if ranks and len(info.icons) < MAX_ICONS:
        info.icons.append((min(ranks), href[:MAX_FIELD_CHARS]))


def _read_node(info: HeadInfo, node: LexborNode) -> None:
    tag = node.tag_id  # an int: cheaper than the name (see tree.tag_id)
    if tag == _META:
        _read_meta(info, node.attributes)
    elif tag == _LINK:
        _read_link(info, node.attributes)
    elif tag == _TITLE:
        parent = node.parent
        if not info.title and (parent is None or parent.tag_id != _SVG):
            info.title = collapse(node.text())
    elif tag == _BASE and info.base_href is None:
        href = node.attributes.get("href")
        info.base_href = href[:MAX_FIELD_CHARS] if href is not None else None


def read_head(tree: LexborHTMLParser) -> HeadInfo:
    info = HeadInfo()
    for node in tree.css(_HEAD_SELECTOR):
        _read_node(info, node)
    return info


def language(tree: LexborHTMLParser, info: HeadInfo) -> str | None:
    root = tree.root
    attrs = root.attributes if root is not None else {}
    for value in (
        attrs.get("lang"),
        attrs.get("xml:lang"),
        info.content_language.split(",")[0],
        info.open_graph.get("locale", "").replace("_", "-"),
    ):
        if value and value.strip():
            return value.strip()[:MAX_FIELD_CHARS]
    return None


def _resolve_values(
    values: dict[str, str], keys: frozenset[str], resolver: Resolver
) -> dict[str, str]:
    return {k: (resolver.resolve(v) or v) if k in keys else v for k, v in values.items()}


def _favicon(info: HeadInfo, resolver: Resolver) -> str | None:
    for _rank, href in sorted(info.icons, key=lambda icon: icon[0]):
        url = resolver.resolve(href)
        if url is not None:
            return url
    return None


def head_metadata(tree: LexborHTMLParser, info: HeadInfo, resolver: Resolver) -> dict[str, JSON]:
    """The head-derived part of the metadata schema."""
    open_graph = _resolve_values(info.open_graph, _OG_URL_KEYS, resolver)
    twitter = _resolve_values(info.twitter, _TWITTER_URL_KEYS, resolver)
    hreflang = {}
    for lang, href in info.hreflang.items():
        url = resolver.resolve(href)
        if url is not None:
            hreflang[lang] = url
    return {
        "title": info.title or collapse(open_graph.get("title")) or None,
        "description": info.description
        or collapse(open_graph.get("description") or twitter.get("description"))
        or None,
        "canonical_url": resolver.resolve(info.canonical),
        "language": language(tree, info),
        "open_graph": open_graph,
        "twitter": twitter,
        "hreflang": hreflang,
        "favicon": _favicon(info, resolver),
    }


def _safe_int(text: str) -> int | float:
    value = int(text)
    return value if -_MAX_INT - 1 <= value <= _MAX_INT else float(value)


def _parse_json(raw: str) -> JSON:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        # Lenient second chance: raw control characters in strings, numbers beyond 64 bits.
        # NaN and Infinity become null so that the result stays valid JSON.
        return json.loads(raw, strict=False, parse_int=_safe_int, parse_constant=lambda _name: None)


def _json_ld_scripts(tree: LexborHTMLParser) -> list[LexborNode]:
    # What `script[type="application/ld+json" i]` selects, from a walk that is about twice as
    # fast as the CSS query.
    return [
        node
        for node in tree.tags("script")
        if (node.attributes.get("type") or "").lower() == _JSON_LD_TYPE
    ]


def _unwrapped(text: str) -> str:
    """``text`` without the comment or CDATA markers old pages wrap scripts in. The regular
    expression tries its end alternatives at every position of a long block, so it runs only
    when a marker is there at all."""
    if any(marker in text for marker in _JSON_LD_MARKERS):
        return _JSON_LD_WRAPPERS.sub("", text)
    return text


def read_json_ld(tree: LexborHTMLParser) -> tuple[list[JSON], list[dict[str, JSON]]]:
    """Every JSON-LD block, parsed (a top-level array is flattened); broken blocks reported.

    The first :data:`MAX_JSON_LD_ITEMS` items of the first :data:`MAX_JSON_LD_CHARS` of JSON-LD
    are kept; the blocks past either limit are reported as skipped, and the first
    :data:`MAX_JSON_LD_ERRORS` errors at most.
    """
    items: list[JSON] = []
    errors: list[dict[str, JSON]] = []
    budget = MAX_JSON_LD_CHARS
    for index, node in enumerate(_json_ld_scripts(tree)):
        raw = _unwrapped(node.text()).strip().rstrip(";")
        if not raw:
            continue
        if len(raw) > budget or len(items) >= MAX_JSON_LD_ITEMS:
            budget = 0  # the blocks after a skipped one are skipped too: a prefix is kept
            _report(errors, index, "skipped: over the limit of JSON-LD kept per page")
            continue
        budget -= len(raw)
        try:
            value = _parse_json(raw)
            orjson.dumps(value)  # what we keep must be storable: depth, surrogates, big numbers
        except (ValueError, TypeError, RecursionError) as exc:
            _report(errors, index, f"{type(exc).__name__}: {exc}"[:300])
            continue
        found = value if isinstance(value, list) else [value]
        items.extend(found[: MAX_JSON_LD_ITEMS - len(items)])
    return items, errors


def _report(errors: list[dict[str, JSON]], index: int, error: str) -> None:
    if len(errors) < MAX_JSON_LD_ERRORS:
        errors.append({"index": index, "error": error})


def headings(tree: LexborHTMLParser) -> dict[str, list[str]]:
    return {tag: _heading_texts(tree, tag) for tag in ("h1", "h2")}


def _heading_texts(tree: LexborHTMLParser, tag: str) -> list[str]:
    texts: list[str] = []
    for node in tree.tags(tag):
        text = collapse(node.text(deep=True))
        if text:
            texts.append(text)
            if len(texts) == MAX_HEADINGS:
                break
    return texts
