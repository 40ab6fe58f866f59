"""Benchmark documents and optimisation journeys, generated from stored runs:
collect (run directories -> configurations), aggregate (the numbers),
figures (matplotlib, one style), render (Jinja2 templates, Markdown -> one
self-contained HTML file), benchmark and journey (the two documents)."""
