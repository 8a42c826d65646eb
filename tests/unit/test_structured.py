"""The json format's requests, checked; a selector schema read from a page; answers parsed,
validated and merged."""

from __future__ import annotations

from typing import Any

import pytest

from taskcrawler.domain.structured import (
    AnswerRejected,
    InvalidJsonRequest,
    ModelNotConfigured,
    check_model,
    json_request,
    merged,
    parsed_answer,
    validated,
)
from taskcrawler.extract.structured import select_json

PRODUCTS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "shop": {"type": "string", "selector": "h1"},
        "open": {"type": "boolean", "selector": ".open"},
        "closed": {"type": "boolean", "selector": ".closed"},
        "contact": {"type": "string", "selector": "a.mail", "attribute": "href"},
        "products": {
            "type": "array",
            "selector": "main .product",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "selector": "h2"},
                    "price": {"type": "number", "selector": ".price"},
                    "stock": {"type": ["integer", "null"], "selector": ".stock"},
                    "link": {"type": "string", "selector": "a", "attribute": "href"},
                },
                "required": ["name", "price"],
            },
        },
        "tags": {"type": "array", "selector": "ul.tags > li", "items": {"type": "string"}},
    },
    "required": ["shop", "products"],
}
PAGE = b"""<html><body><h1> The   Shop </h1><span class="open">yes</span>
<a class="mail" href="/contact">mail us</a>
<main>
 <div class="product"><h2>Tea</h2><span class="price">$1,299.50</span>
   <span class="stock">12 left</span><a href="tea">more</a></div>
 <div class="product"><h2>Coffee</h2><span class="price">3</span><a href="/coffee">more</a></div>
</main>
<ul class="tags"><li>hot</li><li> drinks </li></ul>
<div class="product"><h2>Outside main</h2><span class="price">9</span></div>
</body></html>"""


def test_a_selector_schema_reads_the_page() -> None:
    request = json_request(PRODUCTS)
    assert request.by_selectors and request.schema == PRODUCTS
    value = select_json(PAGE, url="http://shop.test/p/", charset=None, schema=PRODUCTS)
    assert value == {
        "shop": "The Shop",
        "open": True,
        "closed": False,
        "contact": "http://shop.test/contact",
        "products": [
            {"name": "Tea", "price": 1299.5, "stock": 12, "link": "http://shop.test/p/tea"},
            {"name": "Coffee", "price": 3, "stock": None, "link": "http://shop.test/coffee"},
        ],
        "tags": ["hot", "drinks"],
    }
    assert validated(value, PRODUCTS) == value


def test_what_the_selectors_miss_breaks_the_schema_where_it_is_required() -> None:
    value = select_json(b"<p>nothing here</p>", url="http://s.test/", charset=None, schema=PRODUCTS)
    assert value["shop"] is None and value["products"] == []
    with pytest.raises(AnswerRejected, match="at shop: None is not of type 'string'"):
        validated(value, PRODUCTS)


@pytest.mark.parametrize(
    ("schema", "prompt", "field"),
    [
        (None, None, "json"),
        (
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "(a+)+$"}}},
            None,
            "json.schema.properties.a.pattern",
        ),
        (
            {"type": "object", "properties": {"a": {"$ref": "https://evil.test/s.json"}}},
            None,
            "json.schema.properties.a.$ref",
        ),
        ({"type": "nonsense"}, None, "json.schema"),
        (
            {"type": "object", "properties": {"a": {"type": "string", "selector": "a:has(b)"}}},
            None,
            "json.schema.properties.a.selector[0]",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "array", "selector": "li"}}},
            None,
            "json.schema.properties.a.items",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string", "selector": "h1"}}},
            "also ask a model",
            "json.prompt",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string", "selector": "a", "attribute": "on click"}},
            },
            None,
            "json.schema.properties.a.attribute",
        ),
        ({"$ref": "#/$defs/missing"}, None, "json.schema.$ref"),
        # Digits to str.isdigit() but not to int(): their ValueError was Firecrawl's 500.
        ({"allOf": [{}], "$ref": "#/allOf/\u00b2"}, None, "json.schema.$ref"),
        ({"allOf": [{}], "$ref": "#/allOf/" + "0" * 5_000}, None, "json.schema.$ref"),
        ({"type": "integer", "maximum": 10**30}, None, "json.schema"),
        (
            {
                "type": "object",
                "properties": {"x": {"type": "object"}} | {},
                "description": "y" * 40_000,
            },
            None,
            "json.schema",
        ),
    ],
)
def test_a_request_that_is_refused_names_where(schema: Any, prompt: Any, field: str) -> None:
    with pytest.raises(InvalidJsonRequest) as refused:
        json_request(schema, prompt)
    assert refused.value.field == field


def test_a_model_is_needed_for_summaries_and_prompts_only() -> None:
    selectors = json_request(PRODUCTS)
    check_model(["json"], selectors, configured=False)  # read without a model
    with pytest.raises(ModelNotConfigured, match="TASKCRAWLER_LLM_URL"):
        check_model(["json"], json_request(None, "the prices"), configured=False)
    with pytest.raises(ModelNotConfigured, match="summary"):
        check_model(["markdown", "summary"], None, configured=False)
    check_model(["summary"], None, configured=True)


def test_answers_are_parsed_from_fences_and_refused_when_not_json() -> None:
    assert parsed_answer('```json\n{"a": 1}\n```') == {"a": 1}
    assert parsed_answer(' {"a": [1, 2]} ') == {"a": [1, 2]}
    with pytest.raises(AnswerRejected, match="not JSON"):
        parsed_answer("Sure! Here it is: a = 1")
    with pytest.raises(AnswerRejected, match="over 262,144 bytes"):
        validated({"a": "x" * 300_000}, None)


def test_references_inside_the_schema_and_answers_too_deep_for_it() -> None:
    defs = {"$defs": {"name": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/name"}}}
    assert validated({"a": "x"}, json_request(defs).schema) == {"a": "x"}
    listed = {"allOf": [{"type": "object"}], "properties": {"a": {"$ref": "#/allOf/0"}}}
    assert json_request(listed).schema == listed
    recursive = json_request({"items": {"$ref": "#"}}).schema
    with pytest.raises(AnswerRejected, match="nests too deeply"):
        validated(parsed_answer("[" * 500 + "]" * 500), recursive)


def test_pages_answers_merge_field_by_field() -> None:
    pages = [
        {"company": "Acme", "people": ["Ann", "Bob"], "address": None, "meta": {"a": 1}},
        None,
        {"company": "ACME Inc", "people": ["Bob", "Cy"], "address": "Main St", "meta": {"b": 2}},
    ]
    assert merged(pages) == {
        "company": "Acme",
        "people": ["Ann", "Bob", "Cy"],
        "address": "Main St",
        "meta": {"a": 1, "b": 2},
    }
    assert merged([None, None]) is None
