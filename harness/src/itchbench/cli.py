"""The itchbench command line: one module per subcommand in commands/."""

from __future__ import annotations

import argparse
import codecs
import errno
import gc
import locale
import os
import signal
import sys
import warnings
from typing import Callable, Sequence

from . import __version__
from .commands import (bisect, cache, check_host, compare, demo, doc, dump, export, faults, fixtures, history,
                       inspect, merge, performance, report, run, selftest, sim, stats)

COMMANDS = [demo, fixtures, sim, run, merge, faults, compare, bisect, doc, history, performance, report, stats, dump,
            export, inspect, cache, check_host, selftest]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="itchbench",
        description="Deterministic ITCH 5.0 replay testbench: replay captures into a gateway, "
        "record latency and BBO output, and report.",
    )
    p.add_argument("--version", action="version", version=f"itchbench {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return p


def _terminate(signum: int, frame: object) -> None:
    from .runs.failure import Interrupted

    raise Interrupted()


_python_warning_format = warnings.formatwarning


def _format_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                    line: str | None = None) -> str:
    """itchbench's own warnings (a log read to its last whole record, an index set aside) said as its errors are:
    one line, without the Python file and source line a user has no use for. Others keep Python's form."""
    if category.__module__.startswith("itchbench."):
        return f"itchbench: warning: {message}\n"
    return _python_warning_format(message, category, filename, lineno, line)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    warnings.formatwarning = _format_warning
    args = parser.parse_args(argv)
    # Only once the arguments parse: --help and usage errors load none of the analysis stack (numpy, pandas).
    from . import paths
    from .analysis.drawing import DrawingError
    from .analysis.logs import LogFormatError
    from .analysis.stats import StatsError
    from .captures.inspect import CaptureError
    from .commands.common import UserError
    from .gateways.contract import ContractError
    from .gateways.revisions import RevisionError
    from .rundir import RunDirError
    from .runs.failure import Interrupted
    from .runs.scenario import ScenarioError
    from .tools import ToolError

    func: Callable[[argparse.Namespace], int] = args.func
    # SIGTERM tears a run down like Ctrl-C: children stopped, logs flushed,
    # summary written and marked interrupted.
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return func(args)
    except (UserError, CaptureError, RunDirError, LogFormatError, ScenarioError, StatsError, ContractError) as e:
        print(f"itchbench: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    # A path that is not there, or is in the way (an --out that is a file: NotADirectoryError, FileExistsError), or
    # is not the user's to write: said on one line, as for the tools'.
    except (ToolError, paths.ToolMissing, FileNotFoundError, FileExistsError, NotADirectoryError, IsADirectoryError,
            PermissionError, RevisionError, DrawingError) as e:
        print(f"itchbench: {e}", file=sys.stderr)
        # A tool that refused an argument passed on to it refused the user's input: a usage error here too.
        return 2 if isinstance(e, ToolError) and e.returncode == 2 else 1
    except OSError as e:
        # The machine's state, not a defect of ours: a disk or quota full, a file system read-only. Other errors
        # keep their traceback.
        if e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
            raise
        print(f"itchbench: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:
        print(f"itchbench: interrupted by {'SIGTERM' if isinstance(e, Interrupted) else 'SIGINT'}", file=sys.stderr)
        return 130 if not isinstance(e, Interrupted) else 143


def _in_utf8_mode() -> None:
    """Started again in Python's UTF-8 mode (PEP 540) when the locale's encoding is another: its files, pipes and
    console are then read and written as UTF-8, as the harness's are everywhere else. Under en_US.ISO-8859-1 every
    report had failed ("REPORT NOT WRITTEN (UnicodeEncodeError: 'latin-1' codec can't encode character '\\u2014'")
    and so every run, and compare refused them. The Pythons it starts get the mode from PYTHONUTF8 (__init__.py)."""
    if sys.flags.utf8_mode or codecs.lookup(locale.getpreferredencoding(False)).name == "utf-8":
        return
    os.execv(sys.executable, [sys.executable, "-X", "utf8", "-m", "itchbench.cli", *sys.argv[1:]])


def entry() -> None:
    """The `itchbench` command: main(), then the exit. The interpreter's last act is a full collection that walks
    every object left (pandas and matplotlib make that 0.2 s); frozen first, they are skipped and freed as their
    references go, as they would be anyway."""
    _in_utf8_mode()
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    entry()
