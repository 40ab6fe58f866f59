"""Whether a drawn figure's tick labels can be read: none overlapping another on its axis, none in scientific
notation or longer than a short number (the fan-out curve once had six overlapping "4.18489×10²" on its x axis)."""

from __future__ import annotations

import re

from matplotlib.figure import Figure

LONGEST = 10  # characters: "1,280,000" fits
DECADE = re.compile(r"^\$\\mathdefault\{10\^\{[−-]?\d+\}\}\$$")  # a log axis' "10²": a power of ten, read as one
MANTISSA = re.compile(r"\\times|×|e[+-]\d")  # "4.18489×10²", "1e+05": a number to decode, not to read


NUMBER = re.compile(r"^[−\-\d.,]+$")


def unreadable(text: str) -> bool:
    """A number in scientific notation, or too long a plain one (a category's name may be long: it is a word)."""
    return not DECADE.match(text) and (bool(MANTISSA.search(text)) or bool(NUMBER.match(text)) and len(text) > LONGEST)


def tick_label_problems(fig: Figure) -> list[str]:
    """What is wrong with the tick labels of every axes of fig, in words; [] when all read."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    problems = []
    for ax in fig.axes:
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            labels = [t for t in axis.get_ticklabels(minor=False) + axis.get_ticklabels(minor=True)
                      if t.get_visible() and t.get_text().strip()]
            boxes = sorted(((t.get_window_extent(renderer), t.get_text()) for t in labels),
                           key=lambda b: b[0].x0 if name == "x" else b[0].y0)
            for (a, ta), (b, tb) in zip(boxes, boxes[1:]):
                if a.overlaps(b):
                    problems.append(f"{ax.get_title() or ax.get_xlabel()!r}: {name} tick labels {ta!r} and {tb!r} "
                                    "overlap")
            for _, text in boxes:
                if unreadable(text):
                    problems.append(f"{ax.get_title() or ax.get_xlabel()!r}: {name} tick label {text!r} is not a "
                                    "short plain number")
    return problems
