"""The Markdown report: machine, targets at a glance, then one section per benchmark."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import platform
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from .density import CENSUS_HEADER
from .stats import Spread


@dataclass(frozen=True)
class Target:
    """One target of the issue and whether this run met it (None: not measured)."""

    label: str
    value: str
    goal: str
    met: bool | None


@dataclass
class Section:
    number: str
    title: str
    method: str  # how it was measured, in a paragraph
    blocks: list[str] = field(default_factory=list)  # Markdown: tables, notes
    targets: list[Target] = field(default_factory=list)

    def add(self, block: str) -> None:
        self.blocks.append(block)


# ---------------------------------------------------------------- formatting


def table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def num(value: float) -> str:
    """Three significant figures, thousands separated."""
    if value != value or value in (float("inf"), float("-inf")):
        return "n/a"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def ms(spread: Spread) -> str:
    """Seconds as milliseconds: median (min-max)."""
    s = spread.scaled(1000)
    return f"{num(s.median)} ms ({num(s.min)}-{num(s.max)})"


def per_s(spread: Spread, unit: str) -> str:
    return f"{num(spread.median)} {unit}/s ({num(spread.min)}-{num(spread.max)})"


def ratio(value: float) -> str:
    return f"{value:.2f}x"


def verdict(met: bool | None) -> str:
    return {True: "met", False: "**MISSED**", None: "not measured"}[met]


# ---------------------------------------------------------------- the machine


def machine(tmp: Path) -> dict[str, str]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f"{int(line.split()[1]) / 1024**2:.1f} GiB"
                break
    except OSError:
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    fs = _filesystem(tmp)
    return {
        "CPU": f"{os.cpu_count()} cores" + (f", {model}" if model else ""),
        "RAM": ram or "unknown",
        "OS": platform.platform(),
        "Python": platform.python_version(),
        "Django": importlib.metadata.version("django"),
        "SQLite": sqlite3.sqlite_version,
        "Load average at start (1, 5, 15 min)": ", ".join(f"{v:.2f}" for v in load),
        "Data folders": f"{tmp} (fresh per benchmark), on {fs}"
        + (
            " **(tmpfs: fsync does nothing, so commits cost less than on a disk)**"
            if fs == "tmpfs"
            else ""
        ),
    }


def _filesystem(path: Path) -> str:
    """The type of the filesystem holding ``path`` (the longest mount point above it)."""
    best, kind = "", "unknown filesystem"
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            fields = line.split()
            mount = fields[1]
            inside = str(path) == mount or str(path).startswith(mount.rstrip("/") + "/")
            if inside and len(mount) > len(best):
                best, kind = mount, fields[2]
    except OSError:
        pass
    return kind


# ---------------------------------------------------------------- the document


def write(
    path: Path,
    *,
    mode: str,
    command: str,
    machine_info: dict[str, str],
    postgres: str,
    sections: list[Section],
    started: dt.datetime,
    seconds: float,
    reused: str = "",
    census: list[list[str]] | None = None,
    density: str = "",
) -> None:
    out = [
        "# Conduit Console benchmarks",
        "",
        f"{mode} run of `{command}`, {started:%Y-%m-%d %H:%M} UTC, {seconds / 60:.1f} min. "
        "Benchmarks, not tests: a target missed here fails nothing; every figure is "
        "the median of its repetitions with the spread (min-max) beside it, and every "
        "baseline was measured in the same run on the same machine."
        + (f" {reused}" if reused else ""),
        "",
        "## Machine",
        "",
        table(["", ""], [[k, v] for k, v in machine_info.items()]),
        "",
        f"PostgreSQL: {postgres}",
        "",
    ]
    if census:
        out += [
            "## Histories",
            "",
            f"The page benchmarks' histories at {density or 'seed'} density "
            "(`bench/density.py`); a census of each, counted in SQL when the report was "
            "written: the live share, attempts and Events per Work (mean, 99th "
            "percentile over every Work, max), Work created and ended in each "
            "dashboard window before the wall clock, the distinct values of the "
            "facets, the run records and the routed workflows.",
            "",
            table(CENSUS_HEADER, census),
            "",
        ]
    out += [
        "## Targets",
        "",
    ]
    rows = [
        [f"{s.number}. {t.label}", t.value, t.goal, verdict(t.met)]
        for s in sections
        for t in s.targets
    ]
    out += [table(["Target", "Measured", "Goal", "Result"], rows), ""]
    for s in sections:
        out += [f"## {s.number}. {s.title}", "", s.method, ""]
        for block in s.blocks:
            out += [block, ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out).rstrip() + "\n")
