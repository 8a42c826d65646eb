"""Hypothesis strategies for values from the web: every code point, PostgreSQL's refusals
(NUL, lone surrogates) well represented, numbers JSON cannot carry, nesting."""

from __future__ import annotations

from hypothesis import strategies as st

#: Any code point, the ones PostgreSQL refuses well represented.
_hostile_chars = st.one_of(
    st.characters(codec=None, exclude_categories=()),
    st.sampled_from(["\x00", "\ud800", "\udbff", "\udc80", "\udfff", "\ufffd"]),
)
hostile_text = st.text(_hostile_chars, max_size=40)
clean_text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"))
_json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    hostile_text,
)
hostile_json = st.recursive(
    _json_leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(hostile_text, inner, max_size=4),
    max_leaves=30,
)
