"""Where a TOML text goes wrong when tomllib cannot say: nesting too deep (tomllib recurses and fails with
no position) and strings left open (tomllib reports the line's end, or the end of the file)."""

from __future__ import annotations

DEEP = 100  # arrays or inline tables nested deeper than this are refused with their position


def skip_string(text: str, i: int) -> tuple[int, bool]:
    """From the quote at `i`: the index after the string and whether it was closed. One-quote strings end
    at their line; a backslash escapes in basic ("...") strings only; a triple-quoted string
    followed by one or two more quotes ends after them, as tomllib reads it (they are content)."""
    ch, n = text[i], len(text)
    quote = ch * 3 if text.startswith(ch * 3, i) else ch
    end = i + len(quote)
    while end < n and not text.startswith(quote, end) and not (len(quote) == 1 and text[end] == "\n"):
        end += 2 if ch == '"' and text[end] == "\\" else 1
    closed = text.startswith(quote, end)
    if not closed:
        return end, False
    end += len(quote)
    if len(quote) == 3:  # up to two more quotes belong to the content (tomllib's parse_multiline_str)
        end += 1 if text.startswith(ch, end) else 0
        end += 1 if text.startswith(ch, end) else 0
    return end, True


def outside_strings(text: str):
    """(index, char) of every character outside strings and comments; (index, None) for a string that is
    never closed."""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "#":
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
            continue
        if ch in "\"'":
            end, closed = skip_string(text, i)
            if not closed:
                yield i, None
            i = end
            continue
        yield i, ch
        i += 1


def deep_at(text: str, limit: int = DEEP) -> int | None:
    """Where brackets and braces first nest deeper than `limit`."""
    depth = 0
    for i, ch in outside_strings(text):
        if ch is not None and ch in "[{":
            depth += 1
            if depth > limit:
                return i
        elif ch is not None and ch in "]}":
            depth -= 1
    return None


def open_triple_at(text: str) -> int | None:
    """Where a multi-line string that is never closed opens."""
    for i, ch in outside_strings(text):
        if ch is None and text.startswith(text[i] * 3, i):
            return i
    return None


def unclosed_quote(line: str) -> int | None:
    """Index of the quote opening a one-line string left open at the end of `line`, else None."""
    for i, ch in outside_strings(line):
        if ch is None and not line.startswith(line[i] * 3, i):
            return i
    return None
