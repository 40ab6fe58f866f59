"""Every directory under reports/ that a command writes by default is one git ignores: a user's runs never show
as changes to the checkout (`itchbench selftest` once left reports/selftest/ untracked). The directories are
found in the harness's own code, so one added later is held to it too."""

from __future__ import annotations

import argparse
import re
import subprocess

import pytest

from itchbench import cli, paths
from itchbench.commands.common import folder_path

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


def test_every_commands_out_refuses_an_empty_path(capsys):
    """`--out "$OUT"` with OUT unset: Path("") is the current folder, and `sim` took it for no --out at all and wrote
    into the checkout's reports/. Every command's --out, found in the parser, refuses it before anything runs."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    with_out = [name for name, p in sub.choices.items() if any("--out" in a.option_strings for a in p._actions)]
    assert {"sim", "run", "compare", "bisect", "doc", "export", "selftest"} <= set(with_out), with_out
    for name in with_out:
        with pytest.raises(SystemExit) as e:
            parser.parse_args([name, "--out", "", "x", "y"])
        assert e.value.code == 2
        assert "argument --out: '': an empty path" in capsys.readouterr().err, name


def test_every_commands_out_folder_refuses_a_file_in_its_place(tmp_path, capsys):
    """A file where an output folder is named: compare, doc, history and performance (--work) had ended in "[Errno
    17] File exists", run and selftest only once their first run was under way. Each option naming a folder to write
    into (sim's --out is the run directory it makes, refused then as taken) refuses it before anything runs."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    folders = sorted((name, a.option_strings[0]) for name, p in sub.choices.items() for a in p._actions
                     if a.type is folder_path)
    assert folders == [("compare", "--out"), ("doc", "--out"), ("history", "--out"), ("performance", "--work"),
                       ("run", "--out"), ("selftest", "--out")], folders
    taken = tmp_path / "a-file"
    taken.write_text("mine")
    for name, option in folders:
        with pytest.raises(SystemExit) as e:
            parser.parse_args([name, option, str(taken), "x", "y"])
        assert e.value.code == 2
        assert f"argument {option}: {taken}: not a folder (a file is there)" in capsys.readouterr().err, name
    assert taken.read_text() == "mine"
