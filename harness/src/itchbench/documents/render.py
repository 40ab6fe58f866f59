"""Templates to files: Jinja2 renders the Markdown; markdown-it-py turns it
into HTML, which goes into one self-contained page (style inline, figures
as data: URIs) that opens offline and prints."""

from __future__ import annotations

import base64
import math
import os
from pathlib import Path
from typing import Any

import jinja2
from markdown_it import MarkdownIt

from .. import atomic, markdown_table
from .aggregate import Factor, Spread, times

TEMPLATES = Path(__file__).parent / "templates"


def _num(v: Any, digits: int = 0) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:,.{digits}f}"


def _spread(s: Spread | None, digits: int = 0) -> str:
    """median [min–max] of the runs (just the value for one run)."""
    if s is None:
        return "—"
    if s.n == 1 or s.lo == s.hi:
        return _num(s.median, digits)
    return f"{_num(s.median, digits)} [{_num(s.lo, digits)}–{_num(s.hi, digits)}]"


def _factor(f: Factor | None) -> str:
    return "—" if f is None else f.cell()


def _quote(text: Any) -> str:
    """A Markdown block quote of the text, line by line (a commit message's body under its subject)."""
    return "\n".join(f"> {line}".rstrip() for line in str(text).splitlines())


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env.filters.update(num=_num, spread=_spread, factor=_factor, cell=markdown_table.cell, quote=_quote,
                       factor_only=lambda v: times(v) if v >= 1 else f"{times(1 / v)} slower",
                       med=lambda s: s.median if s is not None else None)
    return env


def relative_link(target: Path, out_dir: Path) -> str:
    return Path(os.path.relpath(Path(target).resolve(), Path(out_dir).resolve())).as_posix()


def markdown(template: str, context: dict[str, Any]) -> str:
    text = environment().get_template(template).render(**context)
    lines = [line.rstrip() for line in text.splitlines()]
    out: list[str] = []
    for line in lines:  # at most one blank line in a row: templates stay readable, output stays tidy
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip() + "\n"


def _md() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "typographer": False}).enable("table")


def html(markdown_text: str, title: str, out_dir: Path) -> str:
    """The Markdown as one page; figures under out_dir embedded as data: URIs."""
    md = _md()
    default_image = md.renderer.rules["image"]

    def image(renderer, tokens, idx, options, env):  # type: ignore[no-untyped-def]
        token = tokens[idx]
        src = str(token.attrGet("src"))
        path = out_dir / src
        if not src.startswith(("http:", "https:", "data:")) and path.is_file():
            token.attrSet("src", "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode())
        return default_image(tokens, idx, options, env)

    md.add_render_rule("image", image)
    body = _fold(md.render(markdown_text))
    style = (TEMPLATES / "style.css").read_text()
    return environment().get_template("page.html.j2").render(title=title, style=style, body=body)


# Sections the page folds away (still whole in report.md and the printed page): detail a reader opens on purpose.
FOLDED = ("Appendix: each configuration in full",)


def _fold(body: str) -> str:
    """Each FOLDED section, from its <h2> to the next, inside <details> with the heading as its summary."""
    for heading in FOLDED:
        start = body.find(f"<h2>{heading}</h2>")
        if start < 0:
            continue
        end = body.find("<h2>", start + 4)
        end = len(body) if end < 0 else end
        inner = body[start + len(f"<h2>{heading}</h2>"):end]
        body = (body[:start] + f"<details><summary><h2>{heading}</h2></summary>{inner}</details>\n" + body[end:])
    return body


def write(out_dir: Path, template: str, context: dict[str, Any], title: str) -> tuple[Path, Path]:
    """report.md and report.html in out_dir, each written whole; both are written before either is renamed into
    place, so a failure while writing (a full disk) leaves the pair as it was, never one new and one old."""
    text = markdown(template, context)
    page = html(text, title, out_dir)
    md, html_page = out_dir / "report.md", out_dir / "report.html"
    with atomic.replaced_when_whole(html_page) as html_partial, atomic.replaced_when_whole(md) as md_partial:
        md_partial.write_text(text)
        html_partial.write_text(page)
    return md, html_page
