"""What a PDF page is made of, as the PDF reader hands it to layout and table analysis.

Coordinates are PDF points with the origin at the bottom left of the page's media box and y
growing upwards (pdfminer's convention), so a line higher on the page has the larger ``y0``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Char:
    """One character as drawn: its text (a ligature may be several letters), its box from the
    font's ascent to its descent (every character of a line is as tall as the font, whatever its
    glyph), and the font size in points as a reader compares sizes (the box height)."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    size: float
    upright: bool = True  # drawn horizontally, left to right


@dataclass(slots=True)
class Edge:
    """A ruling line drawn on the page (a line, or a side of a rectangle), horizontal or vertical."""

    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def horizontal(self) -> bool:
        return self.y1 - self.y0 <= self.x1 - self.x0


@dataclass(slots=True)
class PageContent:
    """A page's characters in the order the page draws them, and its ruling lines."""

    width: float
    height: float
    chars: list[Char] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
