"""The 422 echoes what it refuses, and what it refuses may be anything JSON can smuggle in."""

import math

import orjson

from taskcrawler.api.errors import renderable
from taskcrawler.contract.base import unstorable


def test_anything_becomes_strict_json() -> None:
    hostile = {
        "nan": math.nan,
        "inf": math.inf,
        "-inf": -math.inf,
        "huge": 10**400,
        "negative huge": -(2**64),
        "64 bits": 2**63,
        "lone": "a\ud800b",
        "pair": "\ud83d\ude00",  # two escapes that make one character
        "error": ValueError("boom"),
        "bytes": b"\xff",
        "nested": [("\udfff", {"\x00": math.nan})],
        "\ud800 key": 1,
    }
    rendered = renderable(hostile)
    assert orjson.loads(orjson.dumps(rendered)) == {
        "nan": "NaN",
        "inf": "Infinity",
        "-inf": "-Infinity",
        "huge": "1" + "0" * 400,
        "negative huge": str(-(2**64)),
        "64 bits": 2**63,
        "lone": "a\ufffdb",
        "pair": "\U0001f600",
        "error": "boom",
        "bytes": "\ufffd",
        "nested": [["\ufffd", {"\x00": "NaN"}]],
        "\ufffd key": 1,
    }


def test_what_cannot_be_stored_is_named() -> None:
    assert unstorable("plain é 😀") is None
    assert unstorable("a\x00") == "a NUL character (U+0000)"
    assert unstorable("é\udc80") == "a lone surrogate (U+DC80)"
