"""Who wrote a page, when it was published, and on which site: ``author``, ``published_date``,
``site_name``.

Evidence is taken in the order a publisher states it most deliberately: JSON-LD (the article's
own ``author``, ``datePublished`` and ``publisher``), then ``<meta>`` tags (Open Graph
``article:*``, Dublin Core, citation and news-site conventions), then what the page shows a
reader: ``itemprop`` microdata, ``rel=author`` links, bylines, ``<time>`` elements, and last a date
in the URL's path. The visible markup is only looked at when the declarations say nothing, so most
pages pay for no extra query. Dates come out in ISO 8601: ``YYYY-MM-DD``, or the full timestamp
with its offset when the page gives one.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from datetime import date, datetime
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

from taskcrawler.extract.metadata import HeadInfo, collapse

JSON = Any
MAX_AUTHOR_CHARS = 200
_FIRST_WEB_YEAR = 1991
MAX_SITE_NAME_CHARS = 200
_MAX_JSON_LD_NODES = 500  # a hostile @graph of a million nodes is not walked whole

_ARTICLE_TYPES = frozenset(
    {"article", "newsarticle", "blogposting", "reportagenewsarticle", "analysisnewsarticle"}
    | {"opinionnewsarticle", "reviewnewsarticle", "scholarlyarticle", "techarticle", "report"}
    | {"socialmediaposting", "discussionforumposting", "liveblogposting", "webpage", "review"}
    | {"recipe", "howto", "creativework", "backgroundnewsarticle", "medicalwebpage", "qapage"}
    | {"aboutpage", "itempage", "event", "product", "videoobject", "podcastepisode"}
)
_ORGANIZATIONS = frozenset({"organization", "newsmediaorganization", "corporation", "website"})
_AUTHOR_META = (
    "author",
    "article:author",
    "dc.creator",
    "dcterms.creator",
    "citation_author",
    "sailthru.author",
    "parsely-author",
    "byl",
)
_DATE_META = (
    "article:published_time",
    "og:published_time",
    "published_time",
    "datepublished",
    "date",
    "pubdate",
    "publishdate",
    "publish-date",
    "publish_date",
    "dc.date",
    "dc.date.issued",
    "dc.date.created",
    "dcterms.date",
    "dcterms.issued",
    "dcterms.created",
    "citation_publication_date",
    "citation_date",
    "sailthru.date",
    "parsely-pub-date",
    "article.published",
    "cxenseparse:recs:publishtime",
    "originalpublicationdate",
)
_SITE_META = ("og:site_name", "application-name", "apple-mobile-web-app-title")
_BYLINE_SELECTOR = (
    "[itemprop~=author], a[rel~=author], [class*=byline i], [class~=author i],"
    " [class*=author-name i], [class*=authorname i], [rel=author]"
)
_TIME_SELECTOR = (
    "[itemprop~=datePublished], time, [class*=date i], [class*=posted i], [class*=published i],"
    " [class~=meta i], [class*=entry-meta i], [class*=post-meta i], [id*=date i]"
)
_MAX_DATE_TEXT = 200
_MAX_CANDIDATES = 20  # bylines and dates looked at in the markup
_BY_PREFIX = re.compile(
    r"^\W*(?:(?:view all posts|all posts|posted|written|published|veröffentlicht|geschrieben"
    r"|verfasst|publié|écrit|escrito|publicado|scritto|pubblicato)\s+)?"
    r"(?:by|von|vom|par|por|door|av|af|od|автор)?\s*[:\-]?\s+",
    re.I,
)
# Where a byline goes on to say when: "lupa am 26/10/13", "Jane on 3 May".
_NAME_END = re.compile(r"\s(?:am|on|le|el|il|um|at|den|der|le)\s.*$|\s*[,|·]?\s*\d.*$", re.I)
_TAG = re.compile(r"<[^>]*>")
_HANDLE = re.compile(r"\s@\w+$")  # "Jane Doe @janedoe"
_NAME_TRIM = " ,;|\u00b7-\u2013\u2014"  # separators left around a byline: middle dot, dashes
_NOT_A_NAME = re.compile(
    r"https?://|www\.|@.*\.|\d{4}|^(?:no author|unknown|admin|anonymous)$", re.I
)
_URL_DATE = re.compile(
    r"/((?:19|20)\d{2})[/-](0?[1-9]|1[0-2])[/-](0?[1-9]|[12]\d|3[01])(?:/|$|[^\d])"
)
_ISO_DATE = re.compile(
    r"((?:19|20)\d{2})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?"
    r"\s*(Z|[+-]\d{2}:?\d{2})?)?"
)
_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            "january jan januar janvier enero gennaio januari janeiro",
            "february feb februar février fevrier febrero febbraio februari fevereiro",
            "march mar märz maerz mars marzo maart março",
            "april apr avril abril aprile",
            "may mai mayo maggio mei maio",
            "june jun juni juin junio giugno junho",
            "july jul juli juillet julio luglio julho",
            "august aug août aout agosto augustus",
            "september sep sept septembre septiembre settembre setembro",
            "october oct oktober octobre octubre ottobre outubro okt",
            "november nov novembre noviembre novembro",
            "december dec dezember décembre decembre diciembre dicembre dezembro dez",
        ),
        start=1,
    )
    for name in names.split()
}
_MONTH_NAME = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY_MONTH_YEAR = re.compile(
    rf"\b(\d{{1,2}})\.?\s*(?:de\s+)?({_MONTH_NAME})\.?\s*(?:de\s+)?,?\s*((?:19|20)\d{{2}})\b", re.I
)
_MONTH_DAY_YEAR = re.compile(
    rf"\b({_MONTH_NAME})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+((?:19|20)\d{{2}})\b", re.I
)
_SLASHED_DATE = re.compile(r"\b((?:19|20)\d{2})/(\d{1,2})/(\d{1,2})\b")
_DOTTED_DATE = re.compile(r"\b(\d{1,2})\.\s?(\d{1,2})\.\s?((?:19|20)\d{2})\b")
_COMPACT_DATE = re.compile(r"^((?:19|20)\d{2})(\d{2})(\d{2})")


def iso_date(value: str | None) -> str | None:
    """A date or timestamp as ISO 8601, from the shapes pages write: ISO itself (with or
    without time and offset), ``DD.MM.YYYY``, ``YYYYMMDD``; None for anything else or an
    impossible day."""
    if not value:
        return None
    text = value.strip()[:64]
    match = _ISO_DATE.search(text)
    if match is not None:
        year, month, day, hour, minute, second, zone = match.groups()
        day_text = _valid_day(int(year), int(month), int(day))
        if day_text is None or hour is None:
            return day_text
        stamp = f"{day_text}T{int(hour):02d}:{minute}:{second or '00'}"
        if zone:
            zone = "+00:00" if zone == "Z" else zone if ":" in zone else f"{zone[:3]}:{zone[3:]}"
            stamp += zone
        try:
            datetime.fromisoformat(stamp)
        except ValueError:
            return day_text
        return stamp
    match = _DOTTED_DATE.search(text)
    if match is not None:
        return _valid_day(int(match.group(3)), int(match.group(2)), int(match.group(1)))
    match = _COMPACT_DATE.match(text)
    if match is not None:
        return _valid_day(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    return _written_date(text)


def _written_date(text: str) -> str | None:
    """``26. Oktober 2018``, ``October 5th, 2013``, ``5 de mayo de 2019``, ``2013/10/05``."""
    match = _DAY_MONTH_YEAR.search(text)
    if match is not None:
        month = _MONTHS[match.group(2).lower()]
        return _valid_day(int(match.group(3)), month, int(match.group(1)))
    match = _MONTH_DAY_YEAR.search(text)
    if match is not None:
        month = _MONTHS[match.group(1).lower()]
        return _valid_day(int(match.group(3)), month, int(match.group(2)))
    match = _SLASHED_DATE.search(text)
    if match is not None:
        return _valid_day(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    return None


def _valid_day(year: int, month: int, day: int) -> str | None:
    if year < _FIRST_WEB_YEAR:  # 1970-01-01 is a zero timestamp, not a publication
        return None
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return None


def _typed(item: dict[str, JSON]) -> set[str]:
    kinds = item.get("@type")
    if isinstance(kinds, str):
        return {kinds.lower()}
    if isinstance(kinds, list):
        return {kind.lower() for kind in kinds if isinstance(kind, str)}
    return set()


def _json_ld_nodes(items: list[JSON]) -> Iterator[dict[str, JSON]]:
    """Top-level items and the members of their ``@graph``, breadth first, bounded."""
    queue = list(items)
    seen = 0
    while queue and seen < _MAX_JSON_LD_NODES:
        item = queue.pop(0)
        seen += 1
        if isinstance(item, list):
            queue.extend(item)
        elif isinstance(item, dict):
            graph = item.get("@graph")
            if isinstance(graph, list):
                queue.extend(graph)
            yield item


def _names(
    value: JSON, ids: dict[str, dict[str, JSON]], depth: int = 0, *, people: bool = False
) -> list[str]:
    """Names from a JSON-LD ``author``/``publisher`` value, following ``{"@id": …}``
    references into the graph (only people's names if asked: a site that names itself the
    author says nothing about who wrote the page)."""
    if depth > 3:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [n for item in value[:20] for n in _names(item, ids, depth + 1, people=people)]
    if isinstance(value, dict):
        reference = value.get("@id")
        if "name" not in value and isinstance(reference, str) and reference in ids:
            return _names(ids[reference], ids, depth + 1, people=people)
        kinds = _typed(value)
        if people and kinds & _ORGANIZATIONS and "person" not in kinds:
            return []
        name = value.get("name")
        if isinstance(name, str):
            return [name]
        if isinstance(name, list):
            return [n for n in name if isinstance(n, str)]
    return []


def _plain(text: str | None) -> str:
    """Collapsed text without markup or entities: publishers put HTML in JSON-LD strings and
    escape entities twice."""
    text = collapse(text)
    if "<" in text:
        text = collapse(_TAG.sub(" ", text))
    return collapse(html.unescape(text)) if "&" in text else text


def _clean_name(text: str | None, limit: int = MAX_AUTHOR_CHARS) -> str | None:
    name = _NAME_END.sub("", _BY_PREFIX.sub(" ", " " + _plain(text)))
    name = _HANDLE.sub("", name).strip(_NAME_TRIM)
    if not name or len(name) > limit or _NOT_A_NAME.search(name):
        return None
    return name


def _join_names(names: list[str]) -> str | None:
    cleaned = list(dict.fromkeys(n for n in map(_clean_name, names) if n))
    if not cleaned:
        return None
    return ", ".join(cleaned)[:MAX_AUTHOR_CHARS]


class _Facts:
    """The three facts, filled from the first source that states each."""

    __slots__ = ("author", "published", "site_name")

    def __init__(self) -> None:
        self.author: str | None = None
        self.published: str | None = None
        self.site_name: str | None = None

    def from_json_ld(self, items: list[JSON]) -> None:
        """The article's author and date; the site's name from its ``WebSite``, else from the
        article's publisher."""
        nodes = list(_json_ld_nodes(items))
        ids = {node["@id"]: node for node in nodes if isinstance(node.get("@id"), str)}
        publisher: str | None = None
        for item in nodes:
            kinds = _typed(item)
            if kinds & _ARTICLE_TYPES:
                if self.author is None:
                    writer = item.get("author") or item.get("creator")
                    self.author = _join_names(_names(writer, ids, people=True))
                if self.published is None:
                    published = item.get("datePublished") or item.get("dateCreated")
                    self.published = iso_date(published if isinstance(published, str) else None)
                if publisher is None:
                    publisher = _site(_names(item.get("publisher"), ids))
            elif "website" in kinds and self.site_name is None:
                self.site_name = _site(_names(item, ids))
        self.site_name = self.site_name or publisher

    def from_meta(self, meta: dict[str, str]) -> None:
        if self.author is None:
            self.author = _first_name(meta, _AUTHOR_META)
        if self.published is None:
            self.published = next(
                (found for key in _DATE_META if (found := iso_date(meta.get(key)))), None
            )
        if self.site_name is None:
            self.site_name = next(
                (found for key in _SITE_META if (found := _site([meta.get(key) or ""]))), None
            )

    def from_markup(self, tree: LexborHTMLParser) -> None:
        body = tree.body
        if body is None:
            return
        if self.author is None:
            self.author = _first_read(body, _BYLINE_SELECTOR, _byline_name)
        if self.published is None:
            self.published = _first_read(body, _TIME_SELECTOR, _shown_date)


def _byline_name(node: LexborNode) -> str | None:
    inner = node.css_first("[itemprop~=name]")
    text = node.attributes.get("content") or (inner or node).text(deep=True, separator=" ")
    name = _clean_name(text)
    return name if name is not None and len(name.split()) <= 6 else None


def _shown_date(node: LexborNode) -> str | None:
    attrs = node.attributes  # one dict: a missing name costs .attrs.get() an exception
    stated = attrs.get("datetime") or attrs.get("content")
    return iso_date(stated or node.text(deep=True, separator=" ")[:_MAX_DATE_TEXT])


def _first_read(
    body: LexborNode, selector: str, read: Callable[[LexborNode], str | None]
) -> str | None:
    """What ``read`` finds in the first of the first :data:`_MAX_CANDIDATES` elements
    ``selector`` matches that says something.

    The first match is fetched alone before all of them: the query stops there, which saves
    most of its cost on a long page, and on most pages that match is the one that says it.
    """
    first = body.css_first(selector)
    if first is None:
        return None
    found = read(first)
    if found is not None:
        return found
    for node in body.css(selector)[1:_MAX_CANDIDATES]:  # the first is that same element
        found = read(node)
        if found is not None:
            return found
    return None


def _first_name(meta: dict[str, str], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = meta.get(key)
        if value and not value.startswith("@"):  # a handle is not a name
            name = _clean_name(value)
            if name is not None:
                return name
    return None


def _site(names: list[str]) -> str | None:
    for name in names:
        text = _plain(name).lstrip("@")
        if text and len(text) <= MAX_SITE_NAME_CHARS and not text.startswith("http"):
            return text
    return None


def authorship(
    tree: LexborHTMLParser, info: HeadInfo, json_ld: list[JSON], url: str
) -> dict[str, str | None]:
    """``author``, ``published_date`` and ``site_name`` of the page (None where it says
    nothing). Reads the untouched tree: bylines are removed with the boilerplate later."""
    facts = _Facts()
    facts.from_json_ld(json_ld)
    facts.from_meta(info.named_meta)
    if facts.author is None or facts.published is None:
        facts.from_markup(tree)
    if facts.published is None:
        match = _URL_DATE.search(url)
        if match is not None:
            facts.published = _valid_day(*(int(part) for part in match.groups()))
    return {
        "author": facts.author,
        "published_date": facts.published,
        "site_name": facts.site_name,
    }
