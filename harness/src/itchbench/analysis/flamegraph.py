"""A flame graph (Brendan Gregg's layout) as one self-contained SVG from folded stacks: a box a function on a
stack, its width its share of the samples, the root at the bottom. Hovering a box shows its function, samples
and share (its <title>); a click on a box zooms to it and a click on the background zooms out (a few lines of
script inside the SVG). Deterministic: the same stacks give the same bytes."""

from __future__ import annotations

import hashlib
from collections import Counter
from html import escape
from pathlib import Path

WIDTH = 1200
ROW = 16
FONT = 11
MIN_WIDTH_PX = 0.3  # boxes narrower than this are not drawn (they cannot be seen)

_SCRIPT = """<script type="text/ecmascript"><![CDATA[
function zoom(g){var x=+g.getAttribute('data-x'),w=+g.getAttribute('data-w');
 for(var b of document.querySelectorAll('g.f')){var bx=+b.getAttribute('data-x'),bw=+b.getAttribute('data-w');
  var r=b.querySelector('rect'),t=b.querySelector('text');
  if(bx+bw<=x||bx>=x+w){b.style.display='none';continue;}
  b.style.display='';var nx=(bx-x)/w*%(W)d,nw=bw/w*%(W)d;r.setAttribute('x',nx);r.setAttribute('width',Math.max(nw,0));
  t.setAttribute('x',nx+3);t.textContent=nw>40?t.getAttribute('data-n').slice(0,Math.floor(nw/7)):'';}}
function reset(){var all=document.querySelector('g.f[data-root]');if(all)zoom(all);}
]]></script>"""


def _color(name: str) -> str:
    """A warm colour from the function's name: the same function, the same colour, in every graph."""
    h = hashlib.sha1(name.encode()).digest()
    return f"rgb({205 + h[0] % 50},{80 + h[1] % 130},{h[2] % 60})"


def _moved_color(moved: float) -> str:
    """Red for a share grown, blue for one shrunk, saturated at 10 points of the samples."""
    k = min(abs(moved) / 0.10, 1.0)
    fade = int(255 - 180 * k)
    return f"rgb(255,{fade},{fade})" if moved > 0 else f"rgb({fade},{fade},255)"


def _moved_words(moved: float | None) -> str:
    return "" if moved is None else f" ({100 * moved:+.2f} points against the base)"


def _tree(stacks: Counter[str]) -> dict:
    root: dict = {"n": 0, "c": {}}
    for stack, count in sorted(stacks.items()):
        node = root
        node["n"] += count
        for frame in stack.split(";"):
            node = node["c"].setdefault(frame, {"n": 0, "c": {}})
            node["n"] += count
    return root


def write(path: Path, stacks: Counter[str], title: str, base: Counter[str] | None = None) -> bool:
    """The flame graph of the stacks to path; False (nothing written) when there are no samples. With base, a
    differential one: the boxes are the stacks', coloured by how each box's share of the samples moved from
    base (red: grew, blue: shrank, white: the same), its title saying by how much."""
    total = sum(stacks.values())
    if not total:
        return False
    root = _tree(stacks)
    before = _tree(base) if base else None
    before_total = sum(base.values()) if base else 0
    boxes: list[tuple[int, float, float, str, int, float | None]] = []  # depth, x, width, name, samples, moved

    def walk(node: dict, was: dict | None, name: str, depth: int, x: float) -> int:
        moved = None
        if before is not None:
            moved = node["n"] / total - ((was or {"n": 0})["n"] / before_total if before_total else 0.0)
        boxes.append((depth, x, node["n"], name, node["n"], moved))
        at = x
        deepest = depth
        for child_name in sorted(node["c"]):
            child = node["c"][child_name]
            then = was["c"].get(child_name) if was else None
            deepest = max(deepest, walk(child, then, child_name, depth + 1, at))
            at += child["n"]
        return deepest
    depth = walk(root, before, "all", 0, 0.0)
    height = (depth + 3) * ROW
    scale = WIDTH / total
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'font-family="DejaVu Sans, Verdana, sans-serif" font-size="{FONT}">',
           _SCRIPT % {"W": WIDTH},
           f'<rect width="{WIDTH}" height="{height}" fill="#fdfdf5" onclick="reset()"/>',
           f'<text x="{WIDTH / 2}" y="{ROW}" text-anchor="middle" font-size="{FONT + 2}">{escape(title)}</text>']
    for d, x, w, name, n, moved in boxes:
        if w * scale < MIN_WIDTH_PX:
            continue
        y = height - (d + 1) * ROW
        px, pw = x * scale, w * scale
        label = escape(name[: int(pw / 7)]) if pw > 40 else ""
        root_mark = ' data-root="1"' if d == 0 else ""
        out.append(f'<g class="f" data-x="{px:.3f}" data-w="{pw:.3f}"{root_mark} onclick="zoom(this)">'
                   f'<title>{escape(name)}: {n:,} samples, {100 * n / total:.2f} %{_moved_words(moved)}</title>'
                   f'<rect x="{px:.3f}" y="{y}" width="{pw:.3f}" height="{ROW - 1}" '
                   f'fill="{_color(name) if moved is None else _moved_color(moved)}" rx="2"/>'
                   f'<text x="{px + 3:.3f}" y="{y + ROW - 4}" data-n="{escape(name)}">{label}</text></g>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")
    return True
