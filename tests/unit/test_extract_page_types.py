"""Main content beyond articles: what a reader would call the content of a product, a
collection, a forum thread or a service page, each rule on a small page of its own."""

from __future__ import annotations

from taskcrawler.extract import extract
from taskcrawler.extract.content import names_boilerplate

URL = "https://example.com/page"
_PROSE = (
    "<p>We repair treadmills, bikes and strength machines at flat rates, and every repair "
    "is warrantied for ninety days, on top of the maker's own parts warranty.</p>"
)


def _text(body: str) -> str:
    page = f"<html><head><title>Example</title></head><body>{body}</body></html>"
    result = extract(page.encode(), url=URL, formats=["text"])
    assert result.text is not None
    return result.text


def test_a_name_that_says_what_a_block_is_not_does_not_flag_it() -> None:
    assert not names_boilerplate("site-elements site-not-footer")
    assert names_boilerplate("site-footer")


def test_a_boilerplate_name_on_the_wrapper_of_all_the_content_does_not_empty_it() -> None:
    menu = "".join(f"<li><a href='/s{n}'>Service area number {n}</a></li>" for n in range(40))
    text = _text(
        f"<div class='menu-holder'><ul>{menu}</ul></div>"
        f"<div class='main-wrap'><div class='theme-promo'>{_PROSE * 4}</div></div>"
    )
    assert "warrantied for ninety days" in text
    assert "Service area number" not in text


def test_a_categorys_description_is_content_of_its_page() -> None:
    # a collection's own introduction; its category links are link lists, left out as such
    assert not names_boilerplate("category-description-seo_content")
    products = "".join(
        f"<li><a href='/p{n}'>Terracotta pot number {n}</a> <span>$24.50</span></li>"
        for n in range(12)
    )
    description = (
        "<section class='category-intro'><div class='category-text'><p>Indoor pots bring "
        "colour, life and warmth to rooms in every season, and ours are glazed inside, so "
        "that they hold water.</p></div><div class='category-text'><p>Each is made by hand, "
        "fired twice, and shipped with a saucer that matches it, ready for the plant you "
        "choose for it.</p></div></section>"
    )
    text = _text(f"<main><h1>Indoor pots</h1>{description}<ul>{products}</ul></main>")
    assert "glazed inside" in text and "fired twice" in text
