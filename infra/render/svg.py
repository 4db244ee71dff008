"""The busiest burst as an SVG picture (pure): `python -m infra simulate --timeline-out FILE.svg`.

Plain SVG text, no library: the picture is rectangles and labels on a time axis, a hundred lines of SVG, and
every name in it is escaped here with the standard library (`xml.sax.saxutils`: `&`, `<`, `>` in text, and
quotes in attributes), so a job name cannot open an element or an attribute. (The small SVG libraries on PyPI
would add a dependency to the Pulumi program's requirements for no gain: `svg.py` writes text and attribute
values as given, unescaped; `drawsvg` escapes but is a drawing and animation toolkit many times this size.)
The layout follows the terminal timeline (`infra.render.timeline`): per pool, its warm windows, its nodes
booting, and per job attempt its slot wait, node wait and run.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final
from xml.sax.saxutils import escape, quoteattr

from infra.sim.burst import BurstJob, BurstTimeline
from infra.untrusted import printable

ROW: Final = 18
LABEL_WIDTH: Final = 300
CHART_WIDTH: Final = 720
COLOURS: Final = {
    "slot": "#f2c14e",
    "node": "#e4572e",
    "run": "#4c9f70",
    "failed": "#a4243b",
    "boot": "#e4572e",
    "warm": "#9ecae1",
}
LEGEND: Final = (
    ("slot", "waits for a slot"),
    ("node", "waits for a node"),
    ("run", "runs"),
    ("failed", "fails"),
    ("warm", "warm window"),
)


def render_svg(burst: BurstTimeline, title: str) -> str:
    """The burst as an SVG document (see the module docstring)."""
    scale = max(burst.minutes, Fraction(1))
    body: list[str] = []
    y = 3 * ROW
    for pool in burst.pools:
        body.append(_text(8, y + ROW - 5, pool, weight="bold"))
        y += ROW
        for warm in (w for w in burst.warm if w.pool == pool):
            body += [
                _text(20, y + ROW - 5, f"warm, {warm.nodes} node(s)"),
                _rect(warm.start, warm.end, y, "warm", scale),
            ]
            y += ROW
        for cold in (c for c in burst.cold_starts if c.pool == pool):
            body += [_text(20, y + ROW - 5, f"boot {cold.node}"), _rect(cold.boot, cold.ready, y, "boot", scale)]
            y += ROW
        for index, job in enumerate(burst.jobs, start=1):
            if job.pool != pool:
                continue
            body.append(_text(20, y + ROW - 5, f"j{index} {_name(job)}"))
            body += [_rect(start, end, y, kind, scale) for start, end, kind in job.phases()]
            y += ROW
    legend = [
        part
        for index, (kind, text) in enumerate(LEGEND)
        for part in (
            f'<rect x="{LABEL_WIDTH + index * 140}" y="{y + 8}" width="12" height="12" fill="{COLOURS[kind]}"/>',
            _text(LABEL_WIDTH + index * 140 + 16, y + 18, text),
        )
    ]
    height = y + 2 * ROW
    width = LABEL_WIDTH + CHART_WIDTH + 20
    heading = f"{burst.pipeline} queued {burst.clock}: {float(burst.minutes):.1f} min to its last job's end"
    return (
        "\n".join(
            [
                '<?xml version="1.0" encoding="UTF-8"?>',
                f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
                f"<title>{escape(''.join(c if _xml_char(c) else '?' for c in printable(title, None)))}</title>",
                '<rect width="100%" height="100%" fill="white"/>',
                _text(8, ROW, title, weight="bold"),
                _text(8, 2 * ROW, heading),
                _text(LABEL_WIDTH, 2 * ROW + 12, "0 min"),
                _text(LABEL_WIDTH + CHART_WIDTH - 60, 2 * ROW + 12, f"{float(burst.minutes):.0f} min"),
                *body,
                *legend,
                "</svg>",
            ]
        )
        + "\n"
    )


def _name(job: BurstJob) -> str:
    return job.name + (f" (retry {job.attempt})" if job.attempt else "") + ("" if job.own else " (other)")


def _rect(start: Fraction, end: Fraction, y: int, kind: str, scale: Fraction) -> str:
    if end <= start:
        return ""
    x = LABEL_WIDTH + float(start / scale) * CHART_WIDTH
    width = max(1.0, float((end - start) / scale) * CHART_WIDTH)
    return f'<rect x="{x:.1f}" y="{y + 3}" width="{width:.1f}" height="{ROW - 6}" fill="{COLOURS[kind]}"/>'


def _text(x: float, y: float, text: str, *, weight: str = "normal") -> str:
    shown = "".join(char if _xml_char(char) else "?" for char in printable(text, None))
    shown = shown if len(shown) <= 60 else shown[:59] + "…"
    return (
        f"<text x={quoteattr(f'{x:g}')} y={quoteattr(f'{y:g}')} font-weight={quoteattr(weight)}>{escape(shown)}</text>"
    )


def _xml_char(char: str) -> bool:
    """A character XML 1.0 allows (`printable` has already written every control character as an escape)."""
    code = ord(char)
    return code in (0x9, 0xA, 0xD) or 0x20 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD or 0x10000 <= code <= 0x10FFFF
