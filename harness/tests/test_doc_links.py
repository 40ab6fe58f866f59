"""Every relative link in the repository's Markdown names a file that is there, from the linking file's own
folder, as a Markdown renderer resolves it (links inside docs/ once named docs/… again and broke)."""

from __future__ import annotations

import re
import subprocess

from itchbench import paths

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_relative_links_in_markdown_name_files_that_are_there():
    root = paths.repo_root()
    files = subprocess.run(["git", "-C", str(root), "ls-files", "*.md"], capture_output=True, text=True,
                           check=True).stdout.split()
    assert "README.md" in files and "docs/commands.md" in files
    broken = [f"{name}: {target}" for name in files for target in LINK.findall((root / name).read_text())
              if not target.startswith(("http://", "https://", "mailto:")) and not (root / name).parent.joinpath(
                  target).exists()]
    assert not broken, broken
