import os

from taskcrawler.extract import extract
from taskcrawler.worker.parsing import PageParser

PAGE = b"<html><head><title>Big one</title></head><body>" + b"<p>words here</p>" * 40_000


def _pid_title(body: bytes, **kwargs: object) -> object:
    """An extractor that reports which process ran it (module-level: it must pickle)."""
    extraction = extract(body, **kwargs)  # type: ignore[arg-type]
    extraction.title = f"{extraction.title}|{os.getpid()}"
    return extraction


async def test_big_pages_are_parsed_in_a_child_process_with_the_same_result() -> None:
    parser = PageParser(inline_limit=1024, thread_limit=2048)
    try:
        child = await parser.extract(PAGE, url="http://x.test/", charset=None, formats=["metadata"])
    finally:
        parser.close()
    inline = extract(PAGE, url="http://x.test/", charset=None, formats=["metadata"])
    assert child.title == inline.title == "Big one"
    assert child.metadata == inline.metadata


async def test_where_each_page_is_parsed() -> None:
    parser = PageParser(_pid_title, inline_limit=1024)  # type: ignore[arg-type]
    try:
        small = await parser.extract(
            b"<title>s</title>", url="http://x.test/", charset=None, formats=()
        )
        big = await parser.extract(PAGE, url="http://x.test/", charset=None, formats=())
    finally:
        parser.close()
    assert small.title == f"s|{os.getpid()}"
    assert big.title is not None
    assert big.title.startswith("Big one|")
    assert big.title != f"Big one|{os.getpid()}"
