"""Line/column of keys and values in a TOML source, which tomllib does not give.

A small scanner run only over text tomllib already accepted. It resolves every key to the path the
parsed document uses, with array-of-tables counted in order: `("phase", 0, "step", 2, "with", "tp")`.
It never raises: on anything it does not follow it stops and keeps what it found so far.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field

Path_ = tuple[str | int, ...]

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_NEWLINE = re.compile("\n")
_SCALAR = re.compile(r"[^,\]\}\s#]+")


@dataclass
class Positions:
    keys: dict[Path_, tuple[int, int]] = field(default_factory=dict)  # where `key` (or a header) starts
    values: dict[Path_, tuple[int, int]] = field(default_factory=dict)  # where its value starts

    def key(self, path: Path_) -> tuple[int | None, int | None]:
        """Position of the key at `path`, else of its nearest ancestor found."""
        return self._lookup(self.keys, path)

    def value(self, path: Path_) -> tuple[int | None, int | None]:
        """Position of the value at `path`, else of its key, else of the nearest ancestor."""
        if path in self.values:
            return self.values[path]
        return self._lookup(self.keys, path)

    @staticmethod
    def _lookup(table: dict[Path_, tuple[int, int]], path: Path_) -> tuple[int | None, int | None]:
        p = tuple(path)
        while p:
            if p in table:
                return table[p]
            p = p[:-1]
        return None, None


class _Scanner:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.out = Positions()
        self.counts: dict[Path_, int] = {}  # array-of-tables path -> entries seen
        self.aot: set[Path_] = set()  # paths declared with [[...]]
        # Offsets where each line starts: a position is a bisect, not a count from the top (linear load).
        self.line_starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]

    # -- positions ---------------------------------------------------------------------------------------
    def lc(self, i: int) -> tuple[int, int]:
        line = bisect_right(self.line_starts, i)
        return line, i - self.line_starts[line - 1] + 1

    def peek(self, n: int = 1) -> str:
        return self.s[self.i:self.i + n]

    def skip_ws(self, newlines: bool = False) -> None:
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in " \t" or (newlines and c in "\r\n"):
                self.i += 1
            elif newlines and c == "#":
                self.skip_comment()
            else:
                return

    def skip_comment(self) -> None:
        j = self.s.find("\n", self.i)
        self.i = len(self.s) if j < 0 else j

    # -- keys and strings --------------------------------------------------------------------------------
    def read_string(self) -> str:
        s, i = self.s, self.i
        for quote in ('"""', "'''"):
            if s.startswith(quote, i):
                j = s.find(quote, i + 3)
                while quote == '"""' and j > 0 and _escaped(s, j):
                    j = s.find(quote, j + 1)
                if j < 0:
                    raise ValueError("unterminated string")
                while s.startswith(quote[0], j + 3):  # up to two quotes may close the content
                    j += 1
                self.i = j + 3
                return s[i + 3:j]
        q = s[i]
        j = i + 1
        while j < len(s) and s[j] != q:
            j += 2 if (q == '"' and s[j] == "\\") else 1
        self.i = j + 1
        return s[i + 1:j]

    def read_key(self) -> list[str]:
        parts: list[str] = []
        while True:
            self.skip_ws()
            if self.peek() in ('"', "'"):
                basic = self.peek() == '"'
                raw = self.read_string()
                parts.append(_unescape(raw) if basic and "\\" in raw else raw)
            else:
                m = _BARE.match(self.s, self.i)
                if not m:
                    raise ValueError("bad key")
                parts.append(m.group())
                self.i = m.end()
            self.skip_ws()
            if self.peek() != ".":
                return parts
            self.i += 1

    # -- values --------------------------------------------------------------------------------------------
    def value(self, path: Path_) -> None:
        self.out.values.setdefault(path, self.lc(self.i))
        c = self.peek()
        if c in ('"', "'"):
            self.read_string()
        elif c == "[":
            self.i += 1
            n = 0
            while True:
                self.skip_ws(newlines=True)
                if self.peek() == "]":
                    self.i += 1
                    return
                self.value((*path, n))
                n += 1
                self.skip_ws(newlines=True)
                if self.peek() == ",":
                    self.i += 1
        elif c == "{":
            self.i += 1
            while True:
                self.skip_ws()
                if self.peek() == "}":
                    self.i += 1
                    return
                self.keyval(path)
                self.skip_ws()
                if self.peek() == ",":
                    self.i += 1
        else:
            m = _SCALAR.match(self.s, self.i)
            if not m:
                raise ValueError("bad value")
            self.i = m.end()

    def keyval(self, table: Path_) -> None:
        start = self.i
        parts = self.read_key()
        if self.peek() != "=":
            raise ValueError("expected =")
        self.i += 1
        self.skip_ws()
        path = (*table, *parts)
        for k in range(1, len(parts) + 1):  # dotted keys: each prefix is a table here too
            self.out.keys.setdefault((*table, *parts[:k]), self.lc(start))
        self.value(path)

    # -- document ------------------------------------------------------------------------------------------
    def header(self) -> Path_:
        start = self.i
        double = self.s.startswith("[[", self.i)
        self.i += 2 if double else 1
        parts = self.read_key()
        self.i += 2 if double else 1
        resolved: list[str | int] = []
        for k, name in enumerate(parts):
            resolved.append(name)
            here = tuple(resolved)
            last = k == len(parts) - 1
            if last and double:
                self.aot.add(here)
                n = self.counts.get(here, 0)
                self.counts[here] = n + 1
                resolved.append(n)
            elif here in self.aot:  # a parent that is an array of tables: its latest entry
                resolved.append(self.counts[here] - 1)
        path = tuple(resolved)
        self.out.keys.setdefault(path, self.lc(start))
        return path

    def document(self) -> None:
        table: Path_ = ()
        while True:
            self.skip_ws(newlines=True)
            if self.i >= len(self.s):
                return
            if self.peek() == "[":
                table = self.header()
            else:
                self.keyval(table)
            self.skip_ws()
            if self.peek() == "#":
                self.skip_comment()


_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)
_SIMPLE = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", "e": "\x1b", '"': '"', "\\": "\\"}


def _unescape(raw: str) -> str:
    """A quoted key as tomllib reads it (`"B\\u0000"` is the key B NUL), so its path matches."""
    def one(m: re.Match[str]) -> str:
        code = m.group(1) or m.group(2)
        if code:
            return chr(int(code, 16)) if int(code, 16) <= 0x10FFFF else m.group()
        return _SIMPLE.get(m.group(3), m.group())

    return _ESCAPE.sub(one, raw)


def _escaped(s: str, j: int) -> bool:
    n = 0
    while j - 1 - n >= 0 and s[j - 1 - n] == "\\":
        n += 1
    return n % 2 == 1


def find_positions(text: str) -> Positions:
    scanner = _Scanner(text)
    try:
        scanner.document()
    except (ValueError, IndexError, KeyError, RecursionError):
        pass
    return scanner.out
