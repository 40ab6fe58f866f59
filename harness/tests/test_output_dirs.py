"""Every directory under reports/ that a command writes by default is one git ignores: a user's runs never show
as changes to the checkout (`itchbench selftest` once left reports/selftest/ untracked). The directories are
found in the harness's own code, so one added later is held to it too."""

from __future__ import annotations

import re
import subprocess

from itchbench import paths

# `"reports" / "NAME"` (from the repository's root) and `default_root().parent / "NAME"` (beside reports/runs).
_DEFAULT_DIR = re.compile(r'"reports" / "([\w-]+)"|default_root\(\)\.parent / "([\w-]+)"')


def test_every_default_output_directory_under_reports_is_ignored_by_git():
    root = paths.repo_root()
    names = {a or b for source in (root / "harness" / "src" / "itchbench").rglob("*.py")
             for a, b in _DEFAULT_DIR.findall(source.read_text())}
    assert {"runs", "cache", "selftest", "compare", "bisect"} <= names, names  # the scan finds what it must
    for name in sorted(names):
        probe = f"reports/{name}/a-run"
        ignored = subprocess.run(["git", "-C", str(root), "check-ignore", "-q", probe]).returncode == 0
        assert ignored, f"{probe} is not ignored by .gitignore"
