"""ccache, when installed, under every build itchbench runs (reports/cache/ccache): the built-in gateway's
revisions, through CMake's compiler launcher, and a brought gateway's build commands, through the compiler links
ccache installs (a build that calls cc, gcc, g++, c++ or clang by name goes through it). Builds of one gateway
differ in a few files, so most of a build's objects are another's; a hit is the object the compiler made, so the
binary is the same. CCACHE_DISABLE=1 in the environment turns it off (ccache's own switch)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .. import cache, paths

LINKS = Path("/usr/lib/ccache")  # Debian's ccache: a link named after each compiler, ccache behind it


def installed() -> bool:
    return shutil.which("ccache") is not None


def environment(basedir: Path) -> dict[str, str]:
    """ccache's settings for a build of a tree under basedir: paths under it are taken relative to the build
    folder, and the folder is not hashed, so the same file in two copies of the tree is one entry."""
    if not installed():
        return {}
    return {"CCACHE_DIR": str(paths.cache_dir() / cache.COMPILER_CACHE), "CCACHE_BASEDIR": str(basedir),
            "CCACHE_NOHASHDIR": "1"}


def cmake_options() -> list[str]:
    """CMake's options for a build whose compiles go through ccache."""
    return ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if installed() else []


def command_environment(basedir: Path, path: str | None = None) -> dict[str, str]:
    """environment(basedir), and PATH (path, else this process's) with ccache's compiler links first: for build
    commands that are not ours (a brought gateway's make, cargo or go build). Only a compile is cached: a command
    that compiles and links in one goes to the compiler as it is."""
    if not installed() or not LINKS.is_dir():
        return {}
    return {**environment(basedir), "PATH": f"{LINKS}{os.pathsep}{path or os.environ.get('PATH', os.defpath)}"}
