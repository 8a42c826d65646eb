"""What of a page a job's options have its Markdown hold: the default without building one."""

from __future__ import annotations

from taskcrawler.domain.scrape_options import ScrapeOptions
from taskcrawler.extract.page import WHOLE_CONTENT
from taskcrawler.extract.stored import content_choice


def test_default_options_are_the_default_choice_itself() -> None:
    assert content_choice(ScrapeOptions()) is WHOLE_CONTENT
    # options that do not bear on the content still give the default
    assert content_choice(ScrapeOptions.create(block_ads=True, delay=1.0)) is WHOLE_CONTENT


def test_each_content_option_makes_its_own_choice() -> None:
    whole = content_choice(ScrapeOptions.create(only_main_content=False))
    assert not whole.only_main_content and not whole.include and not whole.exclude
    assert content_choice(ScrapeOptions.create(keep_base64_images=True)).keep_data_images
    included = content_choice(ScrapeOptions.create(include_tags=["article", ".post"]))
    assert [s.css for s in included.include] == ["article", ".post"]
    assert included.only_main_content and not included.exclude
    excluded = content_choice(ScrapeOptions.create(exclude_tags=["nav"]))
    assert [s.css for s in excluded.exclude] == ["nav"] and not excluded.include
