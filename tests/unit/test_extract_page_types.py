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


_SECTIONS = (
    "We design packaging for cosmetics brands, from the first sketch of a jar to the print "
    "files a factory needs, in six weeks.",
    "Our studio has worked with small makers and with brands sold in every airport, and each "
    "gets the same two designers from start to finish.",
    "Every project begins with a workshop, where we learn who buys your products, where, and "
    "what they compare them with on the shelf.",
)


def _section(title: str, prose: str, links: int = 0) -> str:
    cards = "".join(f"<li><a href='/w{n}'>Case study {n}</a></li>" for n in range(links))
    return (
        f"<section class='blade'><div class='blade-inner'><h2>{title}</h2>"
        f"<div class='copy'><p>{prose}</p></div><ul>{cards}</ul></div></section>"
    )


def test_a_page_of_short_sections_is_taken_whole() -> None:
    # the scoring finds some of the sections' prose; the headings and short lines between
    # them are the page's content too
    body = "".join(
        _section(title, prose)
        for title, prose in zip(("Design", "Studio", "Workshop"), _SECTIONS, strict=True)
    )
    text = _text(
        "<nav><a href='/'>Home</a></nav>"
        f"<div class='page'><div class='hero'><h1>Cosmetic packaging</h1>"
        f"<div class='tagline'>Jars, tubes, boxes</div></div>{body}"
        "<div class='strip'><h3>Ready to start?</h3><div>Tell us about your range</div></div>"
        "</div><footer>© Studio</footer>"
    )
    assert "six weeks" in text and "airport" in text and "on the shelf" in text
    assert {"Design", "Studio", "Workshop", "Jars, tubes, boxes"} <= set(text.split("\n"))
    assert "© Studio" not in text and "Home" not in text


def test_a_section_with_many_links_keeps_its_prose_when_the_page_is_taken_whole() -> None:
    # its case-study links are more of its text than its paragraph: still the section the
    # scoring found, and only its link list goes
    body = _section("Design", _SECTIONS[0]) + _section("Studio", _SECTIONS[1], links=30)
    text = _text(f"<div class='page'><h1>Cosmetic packaging</h1>{body}</div>")
    assert "six weeks" in text and "airport" in text
    assert "Case study 3" not in text


def test_an_articles_long_body_is_not_widened_by_a_box_beside_it() -> None:
    # the box scores well enough to be taken as a part of its own, but the article's body is
    # one long run of prose: what lies between them is not taken with them
    box = "".join(f"<p>{prose}</p>" for prose in _SECTIONS * 3)
    text = _text(
        f"<div class='page'><div class='main-col'><h1>Repairs</h1>"
        f"<div class='post-content'>{_PROSE * 14}</div></div>"
        f"<div class='side-col'><div class='hours'>Open Monday to Friday</div>"
        f"<div class='box'>{box}</div></div></div>"
    )
    assert "warrantied for ninety days" in text and "on the shelf" in text
    assert "Open Monday to Friday" not in text


def test_a_block_drawn_twice_for_two_screens_is_said_once() -> None:
    description = (
        "<div class='description'><p>A wheel thrown mug in a matte white speckle glaze, clear "
        "glazed inside, that holds a large cup of tea.</p><p>Handmade stoneware, safe in the "
        "dishwasher and the microwave; avoid sudden changes of heat.</p></div>"
    )
    text = _text(
        f"<main><h1>White speckle mug</h1><div class='mobile-only'>{description}</div>"
        f"<div class='desktop-only'>{description}</div></main>"
    )
    assert text.count("wheel thrown mug") == 1 and text.count("Handmade stoneware") == 1


def test_a_line_every_item_repeats_and_repeated_code_stay() -> None:
    note = "Each of these plans is billed yearly, and can be cancelled within the first month."
    plans = "".join(f"<div class='plan'><h2>Plan {n}</h2><p>{note}</p></div>" for n in range(3))
    code = "<pre>export TWILIO_ACCOUNT_SID=your_account_sid_here_and_the_token_beside_it</pre>"
    text = _text(
        f"<main><h1>Plans</h1>{_PROSE * 3}{plans}<p>Set the keys first:</p>{code}"
        f"<p>Then set them again for the worker:</p>{code}</main>"
    )
    assert text.count("billed yearly") == 3
    assert text.count("export TWILIO_ACCOUNT_SID") == 2


def test_a_closed_accordion_panel_is_content_and_a_hidden_menu_is_not() -> None:
    faq = (
        "<h3><button aria-expanded='false' aria-controls='a1'>Can I use my own vet?</button>"
        "</h3><div id='a1' aria-hidden='true'><p>Yes: any licensed vet in the country, and "
        "the claim is paid to you within ten days of the bill.</p></div>"
        "<h3 id='h2'>Is there a waiting period?</h3><div role='region' aria-labelledby='h2' "
        "hidden><p>Fourteen days for illness and two for accidents, counted from the day the "
        "policy starts.</p></div>"
    )
    menu = (
        "<div id='m' hidden><p>Sign in to your account to see your policies, your claims and "
        "the vets near you.</p></div>"
    )
    text = _text(f"<main><h1>Pet insurance</h1>{_PROSE * 2}{faq}{menu}</main>")
    assert "within ten days of the bill" in text and "Fourteen days for illness" in text
    assert "Sign in to your account" not in text


def test_a_header_inside_main_heads_a_section_and_the_sites_header_goes() -> None:
    sections = "".join(
        f"<section><header><h2>{title}</h2><p>{lead}</p></header><p>{prose}</p></section>"
        for title, lead, prose in (
            ("Record", "Lightning fast screen recording", _SECTIONS[0]),
            ("Share", "Send a link, not a file", _SECTIONS[1]),
        )
    )
    text = _text(
        "<header class='site'><a href='/'>Loomish</a><span>Sign up free today</span></header>"
        f"<main><h1>The screen recorder</h1>{sections}</main>"
    )
    assert "Lightning fast screen recording" in text and "Send a link, not a file" in text
    assert "Sign up free today" not in text
