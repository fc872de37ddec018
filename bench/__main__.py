"""`python -m bench [--size tiny] [--only P1,P3] [--out FILE]`: run the benchmarks, print the table, write JSON.

A full run of every figure writes bench/results/latest.json (committed); other runs write
bench/results/run-<size>.json (ignored by git) unless --out says otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bench import p1_ack, p2_failover, p3_ledger, p4_tick, p5_memory, p6_replay, p7_statements
from bench.figures import Figure, machine, table, write_json
from gpubot.terminal_progress import interactive, progress_bar

BENCHMARKS = {"P1": p1_ack.run, "P2": p2_failover.run, "P3": p3_ledger.run, "P4": p4_tick.run, "P5": p5_memory.run,
              "P6": p6_replay.run, "P7": p7_statements.run}
RESULTS = Path(__file__).with_name("results")


def _args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description="gpubot benchmarks against their floors")
    parser.add_argument("--size", choices=("full", "tiny"), default="full", help="tiny: a smoke run, seconds")
    parser.add_argument("--only", default="", help="comma-separated figures to run, e.g. P1,P3 (default: all)")
    parser.add_argument("--out", type=Path, help="where to write the JSON")
    args = parser.parse_args(argv)
    wanted = [name.strip().upper() for name in args.only.split(",") if name.strip()] or list(BENCHMARKS)
    if unknown := [name for name in wanted if name not in BENCHMARKS]:
        parser.error(f"unknown figure {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    args.wanted = wanted
    return args


def _measure(wanted: list[str], size: str) -> list[Figure]:
    """Run each benchmark; on a terminal, a progress bar over them and each figure's row as it is measured."""
    figures: list[Figure] = []
    with progress_bar(None) as progress:
        task = progress.add_task("benchmarks", total=len(wanted))
        if interactive():
            progress.console.print("\n".join(table([]).splitlines()[:2]), markup=False, highlight=False)
        for name in wanted:
            progress.update(task, description=f"{name} ({size})")
            started = time.perf_counter()
            measured = BENCHMARKS[name](size)
            figures += measured
            if interactive():
                rows = "\n".join(table(measured).splitlines()[2:])
                progress.console.print(f"{rows}   ({name}: {time.perf_counter() - started:.0f} s)", markup=False,
                                       highlight=False)
            progress.advance(task)
    return figures


def main(argv: list[str] | None = None) -> int:
    """Run, print, write."""
    args = _args(sys.argv[1:] if argv is None else argv)
    figures = _measure(args.wanted, args.size)
    full = args.size == "full" and args.wanted == list(BENCHMARKS)
    out = args.out or RESULTS / ("latest.json" if full else f"run-{args.size}.json")
    write_json(figures, out, args.size)
    info = machine()
    print(table(figures))
    print(f"\n{info['nproc']} CPUs, {info['cpu']}, Python {info['python']}; written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
