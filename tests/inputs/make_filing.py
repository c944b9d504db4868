"""A generated company filing (reportlab): statements of figures, running headers and footers.

``write_filing`` writes five pages. Every page has the running header ``RUNNING_HEADER`` at the
top and the footer ``Page N of 5`` at the bottom. Page 1 is prose (``INTRO``); page 2 the income
statement ``INCOME`` drawn as filings draw it: no column rules, figures flush right, a lone ``$``
at the left of its column, negatives in parentheses, ``—`` for nothing, the header ``Year Ended
December 31,`` centred over three columns of years; page 3 the balance sheet ``BALANCE``, its
rows on shaded bands (rectangles the width of the table, which are not its columns); page 4 prose
in two columns; page 5 a closing sentence. Deterministic (reportlab's invariant mode).
"""

from __future__ import annotations

from pathlib import Path

RUNNING_HEADER = "ACME Corporation — Annual Report 2022"
INTRO = "ACME makes widgets and sells them in forty countries."
YEARS = ("2022", "2021", "2020")
SPANNING = "Year Ended December 31,"
# (label, value per year); a value of None leaves the row a section label
INCOME: tuple[tuple[str, tuple[str, str, str] | None], ...] = (
    ("Net sales", ("$ 34,229", "$ 35,355", "$ 32,184")),
    ("Operating expenses:", None),
    ("Cost of sales", ("19,232", "18,795", "16,605")),
    ("Restructuring", ("(2,724)", "—", "(44)")),
    ("Operating income", ("6,539", "7,369", "6,772")),
    ("Net income", ("$ 5,777", "$ 5,921", "$ 5,384")),
)
BALANCE_YEARS = ("2022", "2021")
BALANCE: tuple[tuple[str, tuple[str, str] | None], ...] = (
    ("Current assets:", None),
    ("Cash and cash equivalents", ("$ 3,655", "$ 4,564")),
    ("Accounts receivable, net", ("4,532", "4,660")),
    ("Total current assets", ("14,688", "15,403")),
    ("Total assets", ("$ 46,455", "$ 47,072")),
)
LEFT = ("The left column tells of the year", "and of the markets ACME serves.")
RIGHT = ("The right column looks ahead", "to the products of next year.")
CLOSING = "The board thanks every shareholder."
PAGES = 5

_COLUMNS = (380.0, 460.0, 540.0)  # right edges of the columns of figures


def write_filing(path: Path) -> Path:
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.pdfgen import canvas

    for name, file in (("Vera", "Vera.ttf"), ("Vera-Bold", "VeraBd.ttf")):
        if name not in pdfmetrics.getRegisteredFontNames():
            pdfmetrics.registerFont(TTFont(name, file))
    c = canvas.Canvas(str(path), pagesize=letter, invariant=1)

    def frame(page: int) -> None:
        c.setFont("Vera", 8)
        c.drawString(72, 760, RUNNING_HEADER)
        c.drawCentredString(306, 30, f"Page {page} of {PAGES}")

    def figures(y: float, values: tuple[str, ...]) -> None:
        c.setFont("Vera", 9)
        for right, value in zip(_COLUMNS, values, strict=False):
            if value.startswith("$ "):
                c.drawString(right - 62, y, "$")
                value = value[2:]
            c.drawRightString(right, y, value)

    def statement(y: float, rows: tuple[tuple[str, tuple[str, ...] | None], ...], *, shaded: bool) -> None:
        """Rows of a statement from baseline ``y`` down; ``shaded`` puts every other row on a grey
        band the width of the table."""
        for k, (label, values) in enumerate(rows):
            if shaded and k % 2 == 0:
                c.setFillGray(0.9)
                c.rect(66, y - 3, _COLUMNS[1] + 6 - 66, 12, stroke=0, fill=1)
                c.setFillGray(0)
            c.setFont("Vera", 9)
            c.drawString(72, y, label)
            if values:
                figures(y, values)
            y -= 13

    frame(1)
    c.setFont("Vera-Bold", 16)
    c.drawString(72, 700, "Business")
    c.setFont("Vera", 11)
    c.drawString(72, 676, INTRO)
    c.showPage()

    frame(2)
    c.setFont("Vera-Bold", 11)
    c.drawCentredString(306, 700, "CONSOLIDATED STATEMENTS OF INCOME")
    c.setFont("Vera", 9)
    c.drawCentredString(306, 686, "(in millions)")
    c.drawCentredString((_COLUMNS[0] - 40 + _COLUMNS[-1]) / 2, 660, SPANNING)
    for right, year in zip(_COLUMNS, YEARS, strict=True):
        c.drawRightString(right - 6, 648, year)
    statement(634.0, INCOME, shaded=False)
    c.showPage()

    frame(3)
    c.setFont("Vera-Bold", 11)
    c.drawCentredString(306, 700, "CONSOLIDATED BALANCE SHEETS")
    c.setFont("Vera", 9)
    for right, year in zip(_COLUMNS, BALANCE_YEARS, strict=False):
        c.drawRightString(right - 6, 676, year)
    statement(660.0, BALANCE, shaded=True)
    c.showPage()

    frame(4)
    c.setFont("Vera", 11)
    for k, line in enumerate(LEFT):
        c.drawString(72, 700 - 14 * k, line)
    for k, line in enumerate(RIGHT):
        c.drawString(320, 680 - 14 * k, line)
    c.showPage()

    frame(5)
    c.setFont("Vera", 11)
    c.drawString(72, 700, CLOSING)
    c.showPage()
    c.save()
    return path
