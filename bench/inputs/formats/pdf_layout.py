"""pdfminer's layout analysis on a page's characters: lines, text boxes and their reading order.

The characters come from ``PageContent`` (any reader); each becomes a light ``LTChar`` and
pdfminer's own ``LTLayoutContainer.analyze`` groups them with the parameters bench has always used
(pdfplumber's defaults), so a two-column page still reads column by column.

One change makes it deterministic: pdfminer merges the two closest text boxes first and breaks
ties between equal distances by the boxes' memory addresses (``id()``), so two runs could order a
page's boxes differently. Here ties go to the boxes in the order they were made (a page's boxes in
pdfminer's order, then each merged group as it is formed), the same in every process.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import cast

from pdfminer.layout import (
    LAParams,
    LTChar,
    LTComponent,
    LTLayoutContainer,
    LTTextBox,
    LTTextBoxVertical,
    LTTextGroup,
    LTTextGroupLRTB,
    LTTextGroupTBRL,
)
from pdfminer.utils import Plane

from bench.inputs.formats.pdf_page import Char, PageContent

# pdfplumber's defaults, which bench read PDFs with; all_texts: text in form XObjects is grouped too
LAYOUT = LAParams(line_overlap=0.5, char_margin=2.0, line_margin=0.5, word_margin=0.1, boxes_flow=0.5, all_texts=True)


class Glyph(LTChar):
    """A character for the layout analysis, ``index`` its place in ``PageContent.chars``."""

    def __init__(self, char: Char, index: int) -> None:  # no super().__init__: it needs pdfminer's font objects
        LTComponent.__init__(self, (char.x0, char.y0, char.x1, char.y1))
        self._text = char.text
        self.size = char.size
        self.upright = char.upright
        self.index = index
        self.fontname = ""


def text_boxes(content: PageContent, leave_out: frozenset[int] = frozenset()) -> list[LTTextBox]:
    """The page's text boxes in reading order, made of every character but those in ``leave_out``."""
    page = _Page((0, 0, content.width, content.height))
    for i, char in enumerate(content.chars):
        if i not in leave_out:
            page.add(Glyph(char, i))
    page.analyze(LAYOUT)
    return [obj for obj in page if isinstance(obj, LTTextBox)]


class _Page(LTLayoutContainer):
    """pdfminer's layout container, its text boxes grouped in an order that is the same in every run."""

    def group_textboxes(self, laparams: LAParams, boxes: Sequence[LTTextBox]) -> list[LTTextGroup]:
        """pdfminer's hierarchical grouping (the closest pair first, then the pair's group against
        the rest), with ties broken by the order the boxes and groups were made instead of ``id()``."""
        Element = LTTextBox | LTTextGroup
        plane: Plane[Element] = Plane(self.bbox)
        order: dict[int, int] = {id(box): n for n, box in enumerate(boxes)}  # id() only to look up, never to order

        def rank(obj: LTComponent) -> int:
            return order[id(obj)]

        dists: list[tuple[bool, float, int, int, Element, Element]] = []
        for i, box1 in enumerate(boxes):
            for j in range(i + 1, len(boxes)):
                box2 = boxes[j]
                dists.append((False, _distance(box1, box2), i, j, box1, box2))
        heapq.heapify(dists)
        plane.extend(boxes)
        done: set[int] = set()
        while dists:
            skip_isany, d, n1, n2, obj1, obj2 = heapq.heappop(dists)
            if n1 in done or n2 in done:
                continue
            if not skip_isany and _between(plane, obj1, obj2):
                heapq.heappush(dists, (True, d, n1, n2, obj1, obj2))
                continue
            vertical = (LTTextBoxVertical, LTTextGroupTBRL)
            group: LTTextGroup
            if isinstance(obj1, vertical) or isinstance(obj2, vertical):
                group = LTTextGroupTBRL([obj1, obj2])
            else:
                group = LTTextGroupLRTB([obj1, obj2])
            plane.remove(obj1)
            plane.remove(obj2)
            done.update((n1, n2))
            n = order[id(group)] = len(order)
            for other in plane:
                heapq.heappush(dists, (False, _distance(group, other), n, rank(other), group, other))
            plane.add(group)
        return [cast(LTTextGroup, g) for g in plane]


def _distance(obj1: LTComponent, obj2: LTComponent) -> float:
    """The area of the two boxes' bounding box less their own areas (pdfminer's measure)."""
    x0, y0 = min(obj1.x0, obj2.x0), min(obj1.y0, obj2.y0)
    x1, y1 = max(obj1.x1, obj2.x1), max(obj1.y1, obj2.y1)
    return (x1 - x0) * (y1 - y0) - obj1.width * obj1.height - obj2.width * obj2.height


def _between(plane: Plane[LTTextBox | LTTextGroup], obj1: LTComponent, obj2: LTComponent) -> bool:
    """Whether any other box or group lies within the two's bounding box."""
    x0, y0 = min(obj1.x0, obj2.x0), min(obj1.y0, obj2.y0)
    x1, y1 = max(obj1.x1, obj2.x1), max(obj1.y1, obj2.y1)
    return any(obj is not obj1 and obj is not obj2 for obj in plane.find((x0, y0, x1, y1)))
