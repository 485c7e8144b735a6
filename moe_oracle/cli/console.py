"""The rich console every command prints to: as wide as the terminal, no trailing spaces, no broken words."""

from __future__ import annotations

import re
from typing import IO, TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


class _NoTrailingSpaces:
    """A text stream that drops the spaces rich pads table rows with at the end of each line."""

    _TAIL = re.compile(r"[ ]+((?:\x1b\[[0-9;]*m)*)$")

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.pending = ""

    def write(self, text: str) -> int:
        lines = (self.pending + text).split("\n")
        self.pending = lines.pop()
        if lines:
            self.inner.write("".join(self._TAIL.sub(r"\1", line) + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self.pending:
            self.inner.write(self._TAIL.sub(r"\1", self.pending))
            self.pending = ""
        self.inner.flush()

    def isatty(self) -> bool:
        return bool(getattr(self.inner, "isatty", lambda: False)())

    def fileno(self) -> int:
        return int(self.inner.fileno())


def console(file: Any = None) -> Any:
    """A rich console as wide as the terminal (see :func:`output_width`), without trailing spaces, closing
    quietly under ``| head``; ``NO_COLOR`` is honoured by rich itself."""
    import sys

    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:  # rich's own handler exits with 1
            raise BrokenPipeError

        def print(self, *objects: Any, **kwargs: Any) -> None:
            """A line that starts with spaces keeps that indent on every line it wraps to."""
            if len(objects) == 1 and isinstance(objects[0], str) and not kwargs:
                text = objects[0]
                indent = len(text) - len(text.lstrip(" "))
                if indent and len(text) > self.width:
                    from rich.text import Text

                    body = Text.from_markup(text[indent:])
                    for line in body.wrap(self, max(self.width - indent, 20), overflow="fold"):
                        super().print(Text(" " * indent) + line, soft_wrap=True)
                    return
            super().print(*objects, **kwargs)

        def _render_buffer(self, buffer: Any) -> str:
            """Text segments with control or bidi characters escaped (a model directory named with ESC must not
            drive the terminal); rich's own styling is in the segments' styles and control segments, kept."""
            from rich.segment import Segment

            from moe_oracle.terminal_text import escape_for_terminal

            safe = (s if s.control else Segment(escape_for_terminal(s.text), s.style, s.control) for s in buffer)
            return str(super()._render_buffer(safe))

    target = file if file is not None else sys.stdout
    # streams.TerminalText escapes every ESC; rich's styling must reach the terminal, its text is escaped above
    stream = _NoTrailingSpaces(getattr(target, "terminal_raw", target))
    # rich calls only write/flush/isatty/fileno on its file, which _NoTrailingSpaces has
    con = _Console(file=cast("IO[str]", stream), width=output_width(), highlight=False, soft_wrap=False)
    return con


def print_table(con: Console, table: Table) -> None:
    """Print a rich table within the terminal's width without breaking a word: each column is at least as wide
    as its longest word (identifiers, commands, codes). A table that then cannot fit is transposed: one block
    per row, its first cell as the heading and each other cell as an indented ``column  value`` line wrapped
    at word boundaries with its indent kept (:func:`print_records`), never cut."""
    from rich.measure import Measurement
    from rich.text import Text

    for column in table.columns:
        words = [str(column.header)] + [
            (cell.plain if isinstance(cell, Text) else Text.from_markup(str(cell)).plain) for cell in column.cells
        ]
        longest = max((len(word) for text in words for word in text.split()), default=1)
        column.min_width = max(column.min_width or 0, longest)
        if column.max_width is not None and column.max_width < longest:
            column.max_width = longest
    # rich pads every column by one cell each side, and sums a little above its own Measurement
    needed = max(Measurement.get(con, con.options.update(max_width=1 << 16), table).minimum, 0)
    needed = max(needed, sum((c.min_width or 0) + 2 for c in table.columns)) + 2
    if needed <= con.width:
        con.print(table)
        return
    print_records(con, table)


def _plain(cell: Any) -> str:
    from rich.text import Text

    return cell.plain if isinstance(cell, Text) else Text.from_markup(str(cell)).plain


def print_records(con: Console, table: Table) -> None:
    """``table`` transposed for a narrow terminal: per row, the first cell alone, then ``  header  value``
    lines (headers padded to one width), values wrapped at spaces to the terminal with their indent kept."""
    import textwrap

    from rich.markup import escape

    headers = [_plain(c.header) for c in table.columns]
    cells = [[_plain(cell) for cell in column.cells] for column in table.columns]
    pad = max((len(h) for h in headers[1:]), default=0)
    indent = 2 + pad + 2
    width = max(con.width, indent + 20)
    for row in range(table.row_count):
        con.print(escape(cells[0][row]) if cells else "", soft_wrap=True)
        for header, column in zip(headers[1:], cells[1:], strict=True):
            value = " ".join(column[row].split())
            if not value:
                continue
            lines = textwrap.wrap(value, width - indent, break_long_words=False, break_on_hyphens=False) or [""]
            con.print(escape(f"  {header:<{pad}}  {lines[0]}"), soft_wrap=True)
            for line in lines[1:]:
                con.print(escape(" " * indent + line), soft_wrap=True)


def terminal_width() -> int | None:
    """The width to wrap prose to: ``COLUMNS`` when set, else the terminal's when stdout is one; None for a pipe
    or file without ``COLUMNS`` (left unwrapped there: grep-able, one statement a line)."""
    import os
    import sys

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return max(60, int(columns))
    try:
        if sys.stdout.isatty():
            return output_width()
    except (AttributeError, ValueError, OSError):
        pass
    return None


def output_width(default: int = 120) -> int:
    """``COLUMNS`` when set, else the terminal's width when stdout is a terminal, else ``default``
    (a pipe or file has no width; 120 keeps documented outputs stable). At least 60."""
    import os
    import shutil
    import sys

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return max(60, int(columns))
    try:
        if sys.stdout.isatty():
            return max(60, shutil.get_terminal_size((default, 24)).columns)
    except (AttributeError, ValueError, OSError):
        pass
    return default
