"""Is this fetched HTML an app shell, whose content only a browser would build? (``render: auto``)

Three measurements of the page, as the fetcher got it:

* ``words``: the words of the body's visible text outside the page furniture (``nav``,
  ``header``, ``footer``, ``aside`` and their ARIA roles): what the page itself says. Scripts,
  styles, ``noscript``, ``template``, SVG and embedded objects are not visible text; CJK
  characters count one word each.
* ``scripts``: the ``script`` elements a browser would run (no ``type``, a JavaScript type, or
  ``module``); JSON data islands such as ``__NEXT_DATA__`` or JSON-LD do not run.
* ``mount``: the first element that is a known mount point of a client-side framework
  (``#root``, ``#app``, ``#__next``, ``#__nuxt``, ``#___gatsby``, ``app-root``,
  ``[data-reactroot]``, ``[ng-app]``, ...), and the words inside it.

The page is rendered when it has at least one script and one of:

1. **an empty mount point**: the mount holds fewer than ``MOUNT_MAX_WORDS`` words and the page
   fewer than ``SHELL_MAX_WORDS`` (a shell, whatever menus and footer surround it);
2. **no text**: the page has fewer than ``BARE_MAX_WORDS`` words (a body of scripts only);
3. **noscript asks for JavaScript**: a ``noscript`` mentions JavaScript and the page has fewer
   than ``SHELL_MAX_WORDS`` words.

Without a script nothing could build the page, so it is never rendered; a page with more text
than that (a server-rendered Next or Nuxt page, a blog with analytics scripts) is taken as it is.
Known misses: a shell that puts more than ``SHELL_MAX_WORDS`` words outside the furniture around
its empty mount (a long promotional banner in a ``div``), a page that hides server-sent text until
a script shows it, and a page with fewer than ``BARE_MAX_WORDS`` words and a script that adds
nothing (rendered for nothing: a wasted render, not a wrong page).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser, LexborNode

from taskcrawler.extract.decode import decode_html
from taskcrawler.extract.tree import PageTree

MOUNT_MAX_WORDS = 10
SHELL_MAX_WORDS = 50
BARE_MAX_WORDS = 20

MOUNT_SELECTORS = ", ".join(
    [
        "#root",
        "#app",
        "#__next",
        "#__nuxt",
        "#___gatsby",
        "#svelte",
        "#main-app",
        "#application",
        "app-root",
        "[data-reactroot]",
        "[data-v-app]",
        "[ng-app]",
        "[ng-version]",
        "[id^=single-spa]",
    ]
)
_INVISIBLE = "script, style, noscript, template, svg, canvas, iframe, object, embed"
_FURNITURE = (
    "nav, header, footer, aside, [role=navigation], [role=banner], [role=contentinfo], "
    "[role=complementary]"
)
_RUNNABLE_TYPES = frozenset(
    {
        "",
        "module",
        "text/javascript",
        "application/javascript",
        "application/ecmascript",
        "text/ecmascript",
        "text/jsx",
        "text/babel",
    }
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_JAVASCRIPT = re.compile(r"java\s*script", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ShellVerdict:
    """Whether to render, why (a sentence for the job's result), and the measurements."""

    render: bool
    reason: str
    words: int
    scripts: int
    mount: str | None = None
    mount_words: int = 0


def count_words(text: str) -> int:
    """Words separated by spaces, plus one per CJK character (those scripts use no spaces)."""
    cjk = len(_CJK.findall(text))
    return len(_CJK.sub(" ", text).split()) + cjk


def _describe(node: LexborNode) -> str:
    node_id = node.attributes.get("id")
    return f"#{node_id}" if node_id else node.tag or "?"


def _runs(script: LexborNode) -> bool:
    kind = (script.attributes.get("type") or "").strip().lower()
    return kind in _RUNNABLE_TYPES


def _noscript_asks_for_javascript(tree: LexborHTMLParser) -> bool:
    # Inside noscript lexbor keeps the markup as text (scripting is on), so search it raw.
    return any(_JAVASCRIPT.search(node.text() or "") for node in tree.css("noscript"))


def shell_verdict(html: bytes | str, charset: str | None = None) -> ShellVerdict:
    """Decide ``render: auto`` for a fetched page (``charset`` from its Content-Type)."""
    text = decode_html(html, charset).text if isinstance(html, bytes) else html
    tree = PageTree(text)
    scripts = sum(1 for node in tree.css("script") if _runs(node))
    asks_for_javascript = _noscript_asks_for_javascript(tree)
    for node in tree.css(_INVISIBLE):
        node.decompose()
    mount_node = tree.css_first(MOUNT_SELECTORS)
    mount = None if mount_node is None else _describe(mount_node)
    mount_words = 0 if mount_node is None else count_words(mount_node.text(separator=" "))
    for node in tree.css(_FURNITURE):
        node.decompose()
    body = tree.body
    words = count_words(body.text(separator=" ")) if body is not None else 0

    def verdict(render: bool, reason: str) -> ShellVerdict:
        return ShellVerdict(render, reason, words, scripts, mount, mount_words)

    if scripts == 0:
        return verdict(False, "no script could build the page")
    if mount is not None and mount_words < MOUNT_MAX_WORDS and words < SHELL_MAX_WORDS:
        return verdict(True, f"empty mount point {mount} and {words} words of text")
    if words < BARE_MAX_WORDS:
        return verdict(True, f"{words} words of text and {scripts} scripts")
    if asks_for_javascript and words < SHELL_MAX_WORDS:
        return verdict(True, f"noscript asks for JavaScript and {words} words of text")
    return verdict(False, f"{words} words of text already")
