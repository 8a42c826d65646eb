"""A listing page's items (repeated blocks of a linked title and a snippet) are its content."""

from __future__ import annotations

from taskcrawler.extract import extract

URL = "https://example.com/news/"
_TITLES = [
    "Harbour boats counted again this spring by volunteers",
    "New lighthouse keeper appointed after a long search",
    "Ferry timetable changes for the winter season ahead",
    "Fishing quotas debated at the regional council meeting",
    "Storm damage to the pier repaired ahead of schedule",
    "Sailing school opens a second site on the estuary",
]


def _item(title: str) -> str:
    return (
        f"<li class='story'><h3><a href='/news/{abs(hash(title))}'>{title}</a></h3>"
        "<p>What happened, in one line of a teaser.</p></li>"
    )


def _text(main: str) -> str:
    page = (
        "<html><body><header><a href='/'>Example News</a></header>"
        f"<main><h1>Latest news</h1>{main}</main>"
        "<footer><a href='/about'>About us</a> <a href='/contact'>Contact</a></footer>"
        "</body></html>"
    )
    result = extract(page.encode(), url=URL, formats=["text"])
    assert result.text is not None
    return result.text


def test_a_listings_linked_items_are_its_content() -> None:
    text = _text(f"<ul class='stories'>{''.join(_item(title) for title in _TITLES)}</ul>")
    assert all(title in text for title in _TITLES), text


def test_a_link_list_inside_a_text_is_still_left_out() -> None:
    prose = "<p>" + "The harbour was busy all spring, and the volunteers counted every boat. " * 4
    menu = "<ul><li><a href='/a'>Sports</a></li><li><a href='/b'>Weather</a></li></ul>"
    text = _text(prose + "</p>" + menu + prose + "</p>")
    assert "volunteers counted" in text
    assert "Sports" not in text and "Weather" not in text
