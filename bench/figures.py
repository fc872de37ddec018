"""A measured figure against its floor, the table they make, and the machine they ran on."""

from __future__ import annotations

import json
import os
import platform
import statistics
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["Figure", "machine", "percentile", "table", "write_json"]


@dataclass(frozen=True)
class Figure:
    """One benchmark figure: ours against the floor (same unit), and the ratio it should stay under."""

    figure: str
    ours: float
    floor: float
    unit: str
    target: float | None = None  # the ratio ours/floor should stay at or under; None = reported only
    note: str = ""

    @property
    def ratio(self) -> float:
        """ours / floor."""
        return self.ours / self.floor if self.floor else float("inf")

    @property
    def meets(self) -> bool | None:
        """Whether the ratio is within the target (None without a target)."""
        return None if self.target is None else self.ratio <= self.target

    def row(self) -> dict:
        """The figure as a JSON-ready dict."""
        return {**asdict(self), "ratio": round(self.ratio, 3), "meets": self.meets}


def percentile(values: list[float], pct: float) -> float:
    """The `pct` percentile (0-100) of `values`, interpolated."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[max(0, min(98, round(pct) - 1))]


def machine() -> dict:
    """Where the numbers come from: CPUs, CPU model, Python."""
    model = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        model = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                      if line.startswith("model name")), model)
    return {"nproc": os.cpu_count(), "cpu": model, "python": platform.python_version(),
            "system": f"{platform.system()} {platform.release()}"}


def _fmt(value: float) -> str:
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def table(figures: list[Figure]) -> str:
    """A Markdown table: figure, ours, floor, ratio, target."""
    lines = ["| figure | ours | floor | ratio | target |", "|---|---:|---:|---:|---:|"]
    for f in figures:
        target = "—" if f.target is None else f"≤ {f.target:g}×" + ("" if f.meets else " (missed)")
        lines.append(f"| {f.figure} | {_fmt(f.ours)} {f.unit} | {_fmt(f.floor)} {f.unit} | {f.ratio:.2f}× | "
                     f"{target} |")
    return "\n".join(lines)


def write_json(figures: list[Figure], path: Path, size: str) -> None:
    """Write the figures and the machine to `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"ran_at": datetime.now(UTC).isoformat(timespec="seconds"), "size": size, "machine": machine(),
            "figures": [f.row() for f in figures]}
    path.write_text(json.dumps(data, indent=2) + "\n")
