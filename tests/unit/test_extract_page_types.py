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


_QUESTION = (
    "<p>My first saw horse wobbles on the balcony floor, what should I change?</p>"
    "<p>It is made from the cheapest construction spruce, roughly 85 cm high and about one "
    "metre long, with the legs housed in the top rail, glued, and no stretchers yet.</p>"
)
_ANSWER = (
    "<p>Check that the legs are splayed the same way, then plane the feet until all four "
    "touch the floor, and add a stretcher low between the legs, glued and pinned.</p>"
)


def _thread(replies: int) -> str:
    answers = "".join(
        f"<li class='comment'><div class='comment-meta'>Reply {n}</div>"
        f"<div class='comment-content'>{_ANSWER}</div></li>"
        for n in range(replies)
    )
    return _text(
        f"<main><h1>Saw horse</h1><div class='post-content'>{_QUESTION}</div></main>"
        f"<ol class='comment-list'>{answers}</ol>"
    )


def test_a_threads_replies_are_its_content() -> None:
    text = _thread(replies=4)
    assert "saw horse wobbles" in text and text.count("plane the feet") == 4
    assert "Reply 1" not in text  # the replies' furniture still goes


def test_an_articles_few_comments_are_not_its_content() -> None:
    article = _PROSE * 8
    text = _text(
        f"<main><h1>Repairs</h1><div class='post-content'>{article}</div></main>"
        f"<ol class='comment-list'><li class='comment'>{_ANSWER}</li></ol>"
    )
    assert "warrantied for ninety days" in text and "plane the feet" not in text


def test_a_forums_posts_named_as_replies_are_the_thread() -> None:
    posts = "".join(
        f"<div class='forum-post forum-post-reply'><div class='forum-post-content'>{_ANSWER}"
        "</div></div>"
        for _ in range(4)
    )
    text = _text(
        "<div class='forum-thread'><div class='forum-post forum-post-original'>"
        f"<div class='forum-post-content'>{_QUESTION}</div></div>{posts}</div>"
    )
    assert "saw horse wobbles" in text and text.count("plane the feet") == 4


def test_a_closed_tab_panel_is_content_and_a_hidden_block_is_not() -> None:
    panels = (
        f"<div role='tabpanel' id='p1'>{_PROSE}</div>"
        "<div role='tabpanel' id='p2' hidden><p>Our second plan covers the bikes and rowers "
        "of a whole gym, serviced every quarter at one flat fee a machine.</p></div>"
        "<div hidden><p>Sign in to see the prices agreed for your gym, and your invoices "
        "of the last twelve months.</p></div>"
    )
    text = _text(f"<main><h1>Plans</h1>{_PROSE * 2}{panels}</main>")
    assert "whole gym, serviced every quarter" in text
    assert "Sign in to see" not in text
