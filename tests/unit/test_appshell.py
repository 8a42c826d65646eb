"""The ``render: auto`` decision on hand-written pages (tests/corpus/appshell/), and its rules one
by one. tests/browser/test_appshell_pages.py checks the pages' labels with chromium."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from taskcrawler.extract.appshell import (
    BARE_MAX_WORDS,
    MOUNT_MAX_WORDS,
    SHELL_MAX_WORDS,
    count_words,
    shell_verdict,
)

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "appshell"


def manifest() -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = json.loads((CORPUS / "manifest.json").read_text())["pages"]
    return pages


def test_every_page_of_the_corpus_is_in_the_manifest() -> None:
    assert {page["file"] for page in manifest()} == {p.name for p in CORPUS.glob("*.html")}


@pytest.mark.parametrize("page", manifest(), ids=lambda page: page["file"])
def test_auto_decides_each_page_as_labelled(page: dict[str, Any]) -> None:
    verdict = shell_verdict((CORPUS / page["file"]).read_bytes())
    right = verdict.render == page["builds_in_js"]
    # A known miss is a documented limit of the rules: it must stay the miss it says it is.
    assert right != ("known_miss" in page), (page["file"], verdict)


def _page(body: str, head: str = "") -> str:
    return f"<!doctype html><html><head>{head}</head><body>{body}</body></html>"


WORDS = " ".join(["word"] * 200)


@pytest.mark.parametrize(
    ("html", "render", "reason"),
    [
        (
            _page('<div id="root"></div><script src="/a.js"></script>'),
            True,
            "empty mount point #root",
        ),
        (_page('<div id="__next"></div><script>x()</script>'), True, "empty mount point #__next"),
        (_page("<app-root></app-root><script type=module>x()</script>"), True, "app-root"),
        (
            _page(
                f'<nav>{WORDS}</nav><div id="app"></div><footer>{WORDS}</footer>'
                "<script>x()</script>"
            ),
            True,
            "#app",
        ),
        (_page("<script>document.write('hi')</script>"), True, "0 words of text and 1 scripts"),
        (
            _page(
                "<noscript>Please enable JavaScript.</noscript><div class=c>"
                + " ".join(["w"] * 30)
                + "</div><script>x()</script>"
            ),
            True,
            "noscript asks for JavaScript",
        ),
        (_page('<div id="root"></div>'), False, "no script could build the page"),
        (
            _page('<div id="root"></div><script type="application/ld+json">{}</script>'),
            False,
            "no script",
        ),
        (
            _page(
                '<div id="root"></div>'
                '<script type="application/json" id="__NEXT_DATA__">{}</script>'
            ),
            False,
            "no script",
        ),
        (
            _page(f'<div id="root"><p>{WORDS}</p></div><script>hydrate()</script>'),
            False,
            "200 words of text already",
        ),
        (_page(f"<p>{WORDS}</p><div id=root></div><script>comments()</script>"), False, "already"),
        (_page(f"<p>{WORDS}</p>" + "<script src=x.js></script>" * 20), False, "already"),
    ],
)
def test_the_rules(html: str, render: bool, reason: str) -> None:
    verdict = shell_verdict(html)
    assert verdict.render is render
    assert reason in verdict.reason


def test_the_thresholds_are_the_documented_ones() -> None:
    def verdict(words: int, mount_words: int) -> bool:
        mount = " ".join(["m"] * mount_words)
        text = " ".join(["w"] * words)
        return shell_verdict(
            _page(f"<p>{text}</p><div id=root>{mount}</div><script>x()</script>")
        ).render

    assert verdict(SHELL_MAX_WORDS - 1 - (MOUNT_MAX_WORDS - 1), MOUNT_MAX_WORDS - 1)
    assert not verdict(SHELL_MAX_WORDS, 0)
    assert not verdict(BARE_MAX_WORDS, MOUNT_MAX_WORDS)  # a mount with text is not empty
    assert verdict(BARE_MAX_WORDS - 1 - MOUNT_MAX_WORDS, MOUNT_MAX_WORDS)


def test_words_count_cjk_characters_and_ignore_scripts_and_styles() -> None:
    assert count_words("一二三 four five") == 5
    html = _page("<style>p { color: red }</style><p>two words</p><template>not shown</template>")
    assert shell_verdict(html + "<script>x()</script>").words == 2


def test_bytes_are_decoded_with_the_declared_charset() -> None:
    body = _page("<p>café crème</p><div id=root></div><script>x()</script>").encode("cp1252")
    assert shell_verdict(body, "windows-1252").words == 2
