"""One CSS engine per thread, shared by the pages it parses: each query still sees its own page."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from taskcrawler.extract.tree import COMMENT_ID, TEXT_ID, PageTree, tag_id, tag_ids


def test_pages_of_one_thread_share_an_engine_and_keep_their_own_nodes() -> None:
    first = PageTree("<div class=a><p>one</p><p>two</p></div>")
    second = PageTree("<section><p>three</p></section>")
    assert first.selector is second.selector
    # queries alternating between the two documents, from the documents and from their nodes
    assert [p.text() for p in first.css("p")] == ["one", "two"]
    assert [p.text() for p in second.css("p")] == ["three"]
    div = first.css_first("div.a")
    assert div is not None and [p.text() for p in div.css("p")] == ["one", "two"]
    assert second.css_first("div") is None
    assert second.body is not None and second.body.css_first("section p") is not None


def test_a_removed_node_is_gone_from_the_next_query() -> None:
    tree = PageTree("<p>a</p><p>b</p>")
    tree.css("p")[0].decompose()
    assert [p.text() for p in PageTree("<p>c</p>").css("p")] == ["c"]
    assert [p.text() for p in tree.css("p")] == ["b"]


def test_each_thread_has_its_own_engine() -> None:
    def engine_and_result(html: str) -> tuple[int, list[str]]:
        tree = PageTree(html)
        return id(tree.selector), [node.text() for node in tree.css("li")]

    with ThreadPoolExecutor(max_workers=2) as pool:
        ours = engine_and_result("<ul><li>x</li></ul>")
        theirs = pool.submit(engine_and_result, "<ul><li>y</li><li>z</li></ul>").result()
    assert ours[1] == ["x"] and theirs[1] == ["y", "z"]
    assert ours[0] != theirs[0]


def test_a_tree_read_in_another_thread_answers_with_its_own_nodes() -> None:
    # The engine is looked up when the tree is made; a tree handed to another thread (not
    # what the parse lanes do, but nothing forbids it) still answers its own queries there.
    tree = PageTree("<ol><li>made here</li></ol>")
    with ThreadPoolExecutor(max_workers=1) as pool:
        there = pool.submit(lambda: [node.text() for node in tree.css("li")]).result()
        theirs = pool.submit(lambda: PageTree("<li>there</li>").css_first("li")).result()
    assert there == ["made here"]
    assert theirs is not None and theirs.text() == "there"
    assert [node.text() for node in tree.css("li")] == ["made here"]


def test_a_known_tag_has_the_id_of_its_nodes_in_any_page() -> None:
    tree = PageTree("<x-custom>a</x-custom><nav><p>b<!--c--></p></nav><svg><a>d</a></svg>")
    nodes = {node.tag: node.tag_id for node in tree.root.traverse(include_text=True)}
    for name in ("nav", "p", "svg", "a", "body", "html"):
        assert tag_id(name) == nodes[name]
    assert (nodes["-text"], nodes["-comment"]) == (TEXT_ID, COMMENT_ID)
    assert nodes["x-custom"] not in tag_ids(("nav", "p", "svg", "a", "body", "html"))


def test_a_tag_lexbor_does_not_know_has_no_fixed_id() -> None:
    with pytest.raises(ValueError, match="not a tag lexbor knows"):
        tag_id("x-custom")
