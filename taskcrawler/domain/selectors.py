"""Ignore selectors: CSS selectors naming the parts of a page that change on every load (a date,
a visit counter, a rotating ad), which change detection leaves out of the page. Pure: this module
parses and checks them; ``taskcrawler.extract.ignore`` removes what they match from a parsed page.

A selector list is user input evaluated against hostile pages, so only a subset of CSS is accepted:
the subset whose matching costs time linear in the page. lexbor matches a selector right to left
and backtracks over the ancestors for every descendant combinator, so a few of them cost time
polynomial in the page's depth. Measured here with selectolax 1.0.2 (``python -m
bench.monitor_bounds``, two runs on a shared 2-core machine): ``p div div div`` against 300 nested
``div`` elements took 1.3-1.6 s, each further descendant combinator multiplying the time by 50 to
80; ``p ~ div`` and ``div:nth-of-type(3)`` against 20,000 sibling ``div`` elements 0.7-0.8 s and
1.0-2.0 s; a case-insensitive ``[class*=… i]`` with a 64-character value against one 5 MB
attribute 0.3 s.

Accepted, per selector:

* compound selectors: a type (``span``) or ``*``, then any of ``#id``, ``.class``, ``[attr]`` and
  ``[attr OP value]`` with ``OP`` one of ``= ~= |= ^= $= *=`` and the value an identifier or a
  quoted string of at most :data:`MAX_VALUE_LENGTH` characters;
* the combinators ``>`` (child) and ``+`` (next sibling): each step has one candidate, so lexbor
  matches a chain of them in time linear in its length;
* the descendant combinator (whitespace): the selector is split there into groups that lexbor
  matches one by one, and one walk of the page joins them (linear in the page times the number of
  groups; see ``taskcrawler.extract.ignore``);
* comma-separated lists.

Refused, with a message saying so: pseudo-classes and pseudo-elements (``:nth-child``, ``:has``,
``::before``), the ``~`` combinator, attribute flags (``i``, ``s``), namespaces and escapes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

#: How many selectors a list may hold, each part of a comma-separated one counted.
MAX_IGNORE_SELECTORS = 20
#: Characters in one item of the list.
MAX_SELECTOR_LENGTH = 200
#: Compound selectors in one complex selector (``main .ad > span`` holds three).
MAX_COMPOUNDS = 8
#: Characters in an attribute value: a substring test costs the attribute's length times this.
MAX_VALUE_LENGTH = 64

_WHITESPACE = " \t\n\r\f"
# CSS identifiers without escapes. Non-ASCII characters are those CSS Syntax (and lexbor) takes
# as name characters: letters of every script, not punctuation, spaces or private use.
_NON_ASCII = (
    "\u00b7\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u037d\u037f-\u1fff\u200c\u200d\u203f\u2040"
    "\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U0010ffff"
)
_NAME_START = f"[_a-zA-Z{_NON_ASCII}]"
_NAME_CHAR = f"[_a-zA-Z0-9\\-{_NON_ASCII}]"
_IDENT = re.compile(rf"(?:--|-?{_NAME_START}){_NAME_CHAR}*")
_ATTRIBUTE_OPERATORS = ("~=", "|=", "^=", "$=", "*=", "=")
_QUOTES = "\"'"


class InvalidSelector(ValueError):
    """A selector list that is refused; ``field`` names the item (``ignore_selectors[2]``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class _Refused(Exception):
    """Raised inside the parser, turned into :class:`InvalidSelector` naming the item."""


@dataclass(frozen=True, slots=True)
class SelectorGroup:
    """Compound selectors joined by ``>`` and ``+`` only, which lexbor matches in linear time.

    ``parent_steps``: how many ``>`` it holds, so how many levels above the matched element its
    leftmost element sits (``+`` stays on the same level).
    """

    css: str
    parent_steps: int


@dataclass(frozen=True, slots=True)
class IgnoreSelector:
    """One complex selector, checked and written out again in a canonical form.

    ``groups``: the selector split at its descendant combinators, left to right; an element
    matches when it matches the last group and, for every earlier group, an element matching it
    is an ancestor of the leftmost element of the group after it.
    """

    groups: tuple[SelectorGroup, ...]

    @property
    def css(self) -> str:
        return " ".join(group.css for group in self.groups)

    def __str__(self) -> str:
        return self.css


def parse_ignore_selectors(
    values: object, field: str = "ignore_selectors"
) -> tuple[IgnoreSelector, ...]:
    """The selectors of a user's list, deduplicated, in order; :class:`InvalidSelector` names
    the first bad item (``ignore_selectors[1]``) or the list itself when it is too long."""
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise InvalidSelector(field, "must be a list of CSS selectors")
    if len(values) > MAX_IGNORE_SELECTORS:
        raise InvalidSelector(field, f"at most {MAX_IGNORE_SELECTORS} selectors")
    parsed: dict[str, IgnoreSelector] = {}
    for index, value in enumerate(values):
        item = f"{field}[{index}]"
        if not isinstance(value, str) or not value.strip():
            raise InvalidSelector(item, "must be a non-empty CSS selector")
        if len(value) > MAX_SELECTOR_LENGTH:
            raise InvalidSelector(item, f"at most {MAX_SELECTOR_LENGTH} characters")
        try:
            selectors = _Parser(value).selector_list()
        except _Refused as exc:
            raise InvalidSelector(item, str(exc)) from None
        for selector in selectors:
            parsed.setdefault(selector.css, selector)
    if len(parsed) > MAX_IGNORE_SELECTORS:
        raise InvalidSelector(
            field,
            f"at most {MAX_IGNORE_SELECTORS} selectors, each part of a comma-separated one counted",
        )
    return tuple(parsed.values())


class _Parser:
    """A recursive-descent reader of the accepted subset; every refusal says where and why."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    # --- reading ----------------------------------------------------------------------------

    def _peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def _skip_whitespace(self) -> bool:
        start = self.pos
        while self._peek() and self._peek() in _WHITESPACE:
            self.pos += 1
        return self.pos > start

    def _ident(self, what: str) -> str:
        found = _IDENT.match(self.text, self.pos)
        if found is None:
            raise self._refused(f"expected {what}")
        self.pos = found.end()
        return found.group()

    def _refused(self, message: str) -> _Refused:
        return _Refused(f"{message} (at character {self.pos + 1} of {self.text!r})")

    # --- grammar ----------------------------------------------------------------------------

    def selector_list(self) -> list[IgnoreSelector]:
        selectors = []
        while True:
            self._skip_whitespace()
            selectors.append(self._complex())
            if not self._peek():
                return selectors
            self.pos += 1  # the comma that ended the selector

    def _complex(self) -> IgnoreSelector:
        groups: list[SelectorGroup] = []
        parts = [self._compound()]
        steps = 0
        compounds = 1
        while True:
            spaced = self._skip_whitespace()
            char = self._peek()
            if not char or char == ",":
                break
            if char in ">+":
                self.pos += 1
                self._skip_whitespace()
                parts.append(char)
                if char == ">":
                    steps += 1
            elif char == "~":
                raise self._refused(
                    "the ~ combinator is not supported: it makes matching quadratic; + is supported"
                )
            elif spaced:
                groups.append(SelectorGroup(" ".join(parts), steps))
                parts, steps = [], 0
            else:
                raise self._refused(f"unexpected {char!r}")
            parts.append(self._compound())
            compounds += 1
            if compounds > MAX_COMPOUNDS:
                raise self._refused(f"more than {MAX_COMPOUNDS} compound selectors")
        groups.append(SelectorGroup(" ".join(parts), steps))
        return IgnoreSelector(tuple(groups))

    def _compound(self) -> str:
        out = []
        if self._peek() == "*":
            self.pos += 1
            out.append("*")
        elif _IDENT.match(self.text, self.pos):
            out.append(self._ident("an element name"))
        while True:
            char = self._peek()
            if char == "#":
                self.pos += 1
                out.append("#" + self._ident("an id after #"))
            elif char == ".":
                self.pos += 1
                out.append("." + self._ident("a class name after ."))
            elif char == "[":
                out.append(self._attribute())
            elif not char or char in _WHITESPACE or char in ",>+~":
                break
            else:
                raise self._refused(self._unsupported(char))
        if not out:
            raise self._refused("expected a selector")
        return "".join(out)

    def _unsupported(self, char: str) -> str:
        if char == ":":
            return "pseudo-classes and pseudo-elements (:…) are not supported"
        if char == "\\":
            return "escapes are not supported"
        if char == "|":
            return "namespaces are not supported"
        return f"unexpected {char!r}"

    def _attribute(self) -> str:
        self.pos += 1  # [
        self._skip_whitespace()
        if self._peek() == "|":
            raise self._refused("namespaces are not supported")
        name = self._ident("an attribute name after [")
        self._skip_whitespace()
        if self._peek() == "]":
            self.pos += 1
            return f"[{name}]"
        operator = next(
            (op for op in _ATTRIBUTE_OPERATORS if self.text.startswith(op, self.pos)), ""
        )
        if not operator:
            raise self._refused("expected ] or one of = ~= |= ^= $= *= after the attribute name")
        self.pos += len(operator)
        self._skip_whitespace()
        value = self._attribute_value()
        self._skip_whitespace()
        if _IDENT.match(self.text, self.pos):
            raise self._refused("attribute flags (i, s) are not supported")
        if self._peek() != "]":
            raise self._refused("expected ] after the attribute value")
        self.pos += 1
        return f'[{name}{operator}"{value}"]'

    def _attribute_value(self) -> str:
        quote = self._peek()
        if not quote or quote not in _QUOTES:
            return self._checked_value(self._ident("a value (an identifier or a quoted string)"))
        end = self.text.find(quote, self.pos + 1)
        if end < 0:
            raise self._refused("unterminated string")
        value = self.text[self.pos + 1 : end]
        if any(char in value for char in "\\\"'\n\r\f"):
            raise self._refused("quotes, backslashes and line breaks inside a value are refused")
        self.pos = end + 1
        return self._checked_value(value)

    def _checked_value(self, value: str) -> str:
        if len(value) > MAX_VALUE_LENGTH:
            raise self._refused(f"an attribute value may be at most {MAX_VALUE_LENGTH} characters")
        return value


__all__ = [
    "MAX_COMPOUNDS",
    "MAX_IGNORE_SELECTORS",
    "MAX_SELECTOR_LENGTH",
    "MAX_VALUE_LENGTH",
    "IgnoreSelector",
    "InvalidSelector",
    "SelectorGroup",
    "parse_ignore_selectors",
]
