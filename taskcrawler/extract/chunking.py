"""Markdown in, chunks out: split along the document's structure, sized in tokens.

A chunk starts at every heading, and is otherwise filled with whole blocks (paragraphs, lists,
fenced code, tables) up to ``target_tokens``. A block bigger than that is cut at line breaks,
then sentence ends, then between words, and a word longer than a chunk between its characters,
so that no chunk is over its size whatever the page. Each chunk after the first of its section
begins with the last ``overlap_tokens`` of the one before it.

Tokens are counted the way subword tokenizers roughly do, without a vocabulary: each run of up to
12 word characters, and each other non-space character, is one. That keeps chunking pure and
fast; a model's own tokenizer counts within a small factor of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from taskcrawler.domain.chunks import Chunk, chunk_context

TOKEN = re.compile(r"\w{1,12}|[^\w\s]")
#: A heading's title is what follows its hashes, less its closing ones (stripped, not matched:
#: a lazy title before ``[ \t#]*$`` scanned the line's rest again at each of its positions).
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*)$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s+")
#: Headings kept per chunk, and characters of each: a page's structure is bounded like its text.
MAX_HEADING_DEPTH = 6
MAX_HEADING_CHARS = 200


@dataclass(frozen=True, slots=True)
class ChunkingConfig:
    target_tokens: int = 400
    overlap_tokens: int = 50

    def __post_init__(self) -> None:
        if self.target_tokens < 8:
            raise ValueError("target_tokens must be at least 8")
        if not 0 <= self.overlap_tokens < self.target_tokens:
            raise ValueError("overlap_tokens must be at least 0 and less than target_tokens")


def count_tokens(text: str) -> int:
    return sum(1 for _ in TOKEN.finditer(text))


@dataclass(frozen=True, slots=True)
class _Block:
    text: str
    heading_path: tuple[str, ...]
    starts_section: bool


def _blocks(markdown: str) -> Iterator[_Block]:
    """Paragraphs, lists, tables and fenced code as blocks (blank lines end them, but not inside
    a fence), each under the headings in force where it is."""
    path: list[tuple[int, str]] = []
    lines: list[str] = []
    fence: str | None = None
    new_section = True

    def flush() -> Iterator[_Block]:
        nonlocal new_section
        text = "\n".join(lines).strip("\n")
        lines.clear()
        if text.strip():
            yield _Block(text, tuple(title for _, title in path), new_section)
            new_section = False

    for line in markdown.splitlines():
        if fence is not None:
            lines.append(line)
            if line.strip().startswith(fence):
                fence = None
                yield from flush()
            continue
        if (opening := _FENCE.match(line)) is not None:
            yield from flush()
            fence = opening.group(1)[0] * 3
            lines.append(line)
            continue
        if (heading := _HEADING.match(line)) is not None:
            yield from flush()
            level = len(heading.group(1))
            while path and path[-1][0] >= level:
                path.pop()
            title = heading.group(2).rstrip(" \t#").strip()[:MAX_HEADING_CHARS]
            if len(path) < MAX_HEADING_DEPTH:
                path.append((level, title))
            new_section = True
            lines.append(line)
            continue
        if not line.strip():
            if lines and _HEADING.match(lines[-1]) is None:
                yield from flush()
            continue
        lines.append(line)
    yield from flush()


def _cut(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` tokens, cut at the coarsest boundary that works:
    lines, sentences, spaces, and last between the tokens themselves."""
    if count_tokens(text) <= limit:
        return [text]
    for boundary in (re.compile(r"\n"), _SENTENCE_END, re.compile(r"\s+")):
        parts = [part for part in boundary.split(text) if part.strip()]
        if len(parts) > 1:
            return _pack([piece for part in parts for piece in _cut(part, limit)], limit, " ")
    # One "word" longer than a chunk (a data URL, a hash run): cut between its tokens.
    starts = [match.start() for match in TOKEN.finditer(text)]
    return [
        text[starts[i] : starts[i + limit] if i + limit < len(starts) else len(text)]
        for i in range(0, len(starts), limit)
    ]


def _pack(pieces: list[str], limit: int, joiner: str) -> list[str]:
    """Consecutive pieces joined while they fit in ``limit`` tokens."""
    packed: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        tokens = count_tokens(piece)
        if current and size + tokens > limit:
            packed.append(joiner.join(current))
            current, size = [], 0
        current.append(piece)
        size += tokens
    if current:
        packed.append(joiner.join(current))
    return packed


def _tail(text: str, tokens: int) -> str:
    """The last ``tokens`` tokens of ``text``, from the start of the first of them."""
    if tokens <= 0:
        return ""
    starts = [match.start() for match in TOKEN.finditer(text)]
    if not starts:
        return ""
    return text[starts[max(0, len(starts) - tokens)] :]


def chunk_markdown(markdown: str, config: ChunkingConfig | None = None) -> list[Chunk]:
    """The chunks of ``markdown``, in document order, indexed from 0.

    Every chunk has at most ``target_tokens`` tokens of its own plus ``overlap_tokens`` repeated
    from the chunk before; the chunks' own parts, in order, hold every token of the document.
    """
    config = config or ChunkingConfig()
    body_limit = config.target_tokens - config.overlap_tokens
    sections: list[tuple[tuple[str, ...], list[str]]] = []
    for block in _blocks(markdown):
        if block.starts_section or not sections:
            sections.append((block.heading_path, []))
        sections[-1][1].append(block.text)

    chunks: list[Chunk] = []
    for path, texts in sections:
        pieces = [piece for text in texts for piece in _cut(text, body_limit)]
        previous = ""
        for body in _pack(pieces, body_limit, "\n\n"):
            overlap = _tail(previous, config.overlap_tokens)
            text = f"{overlap}\n\n{body}" if overlap else body
            offset = len(overlap) + 2 if overlap else 0
            chunks.append(Chunk(len(chunks), text, path, count_tokens(text), offset))
            previous = body
    return _located(chunks, markdown)


def _located(chunks: list[Chunk], markdown: str) -> list[Chunk]:
    """``chunks`` with the characters of ``markdown`` each spans: the chunks' own parts hold the
    document's tokens in order, so the n-th token of the chunks is the n-th of the document."""
    spans = [match.span() for match in TOKEN.finditer(markdown)]
    if not spans:
        return chunks
    located = []
    at = 0
    for chunk in chunks:
        own = count_tokens(chunk.text[chunk.overlap :])
        first = min(max(0, at - count_tokens(chunk.text[: chunk.overlap])), len(spans) - 1)
        last = min(max(first, at + own - 1), len(spans) - 1)
        located.append(replace(chunk, start=spans[first][0], end=spans[last][1]))
        at += own
    return located


#: Chunks kept of one page at most (about 400,000 tokens, a long book, at the default size):
#: a hostile page must not hold the embedder for minutes.
MAX_CHUNKS_PER_PAGE = 1000


def chunk_page(markdown: str, title: str | None, config: ChunkingConfig) -> list[Chunk]:
    """A page's chunks, each with its context (the page's title and its headings), at most
    :data:`MAX_CHUNKS_PER_PAGE`: what the worker stores, and a re-extraction makes again."""
    return [
        replace(chunk, context=chunk_context(title, chunk.heading_path))
        for chunk in chunk_markdown(markdown, config)[:MAX_CHUNKS_PER_PAGE]
    ]
