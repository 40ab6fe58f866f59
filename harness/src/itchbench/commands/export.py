"""itchbench export RUN_DIR: per-message latency or the BBO events as Parquet or CSV."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import rundir, vocabulary
from .common import UserError, given_path, logs_not_whole, partial_output


def register(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser("export", help="a run's per-message latency (or BBO events) as Parquet or CSV",
                       description="Write a run's per-message latency — every stamp, sender to book, with type, "
                       "symbol and flags — or with --bbo its BBO events, as Parquet (zstd) or CSV, with named, "
                       "typed columns (schema: gateway/log/FORMAT.md), in chunks of a million rows: pandas, "
                       "Polars, DuckDB and Spark read it as it is.")
    e.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    e.add_argument("--format", choices=vocabulary.EXPORT_FORMATS,
                   help="(default: the --out file's suffix, .csv or .parquet; otherwise parquet)")
    e.add_argument("--out", type=given_path, help="output file (default: RUN_DIR/latency.FORMAT or RUN_DIR/bbo.FORMAT)")
    e.add_argument("--bbo", action="store_true", help="the BBO events instead of the per-message latency")
    e.set_defaults(func=run)


def output_format(fmt: str | None, out: Path | None) -> str:
    """The format asked for, or the one --out's suffix names; a suffix naming the other format is refused: a CSV
    called x.parquet is a file every reader of Parquet fails on."""
    named = out.suffix.lstrip(".").lower() if out is not None else ""
    if named not in vocabulary.EXPORT_FORMATS:
        return fmt or "parquet"
    if fmt is not None and fmt != named:
        raise UserError(f"--format {fmt} with --out {out}: the name says {named}; name the file .{fmt}, or drop "
                        "--format")
    return named


def run(args: argparse.Namespace) -> int:
    from ..analysis import export, logs
    args.format = output_format(args.format, args.out)
    out = args.out or args.run_dir / f"{'bbo' if args.bbo else 'latency'}.{args.format}"
    # Written through a temporary file and renamed, an export onto one of the run's own files (its logs, its JSON)
    # would replace what it is made from.
    rundir.require_regular_output(out)
    if out.is_file() and (logs.is_log(out) or (out.resolve().parent == args.run_dir.resolve()
                                           and out.suffix not in (".parquet", ".csv"))):
        raise UserError(f"{out} is one of the run's own files: an export there would replace it; write elsewhere")
    # Its folder made, as every --out's is: missing, the error named the temporary file the export writes first.
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError as e:
        raise UserError(f"{out}: its folder cannot be made (a file lies at {out.parent} or above it)") from e
    except OSError as e:
        raise UserError(f"{out}: its folder cannot be made ({e.strerror or e})") from e
    try:
        with logs_not_whole() as cut:
            rows, written = export.export(args.run_dir, out, fmt=args.format, bbo=args.bbo,
                                          say=lambda line: print(line, file=sys.stderr, flush=True))
    except export.ExportError as e:
        raise UserError(str(e)) from e
    print(f"{rows:,} rows -> {written}" + (f" (not {out}: the name says it is partial)" if written != out else ""),
          file=sys.stderr)
    print(written)
    return partial_output(cut, str(written), args.run_dir, "bbo" if args.bbo else "")
