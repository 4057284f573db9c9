"""Figures as ratios against a baseline measured in the same run.

A figure times `ours` and `baseline` alternately (the order swapped every repetition, so
neither always runs on a warmer machine), takes the median of each, and reports their
ratio, with the spread of the per-repetition ratios so a noisy machine shows.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """One line of the table."""

    name: str
    ours: float
    baseline: float
    unit: str
    target: str
    met: bool | None
    spread: tuple[float, float] | None = None
    repetitions: int = 0
    # For figures that are not a ratio (connections): the text to show instead.
    text: str | None = None
    higher_is_better: bool = False

    @property
    def ratio(self) -> float:
        return self.ours / self.baseline if self.baseline else float("inf")


def interleaved(
    ours: Callable[[], float], baseline: Callable[[], float], repetitions: int
) -> tuple[list[float], list[float]]:
    """Run both `repetitions` times, alternating which goes first; each returns a time."""
    mine: list[float] = []
    theirs: list[float] = []
    for index in range(repetitions):
        if index % 2 == 0:
            mine.append(ours())
            theirs.append(baseline())
        else:
            theirs.append(baseline())
            mine.append(ours())
    return mine, theirs


def ratio_figure(
    name: str,
    mine: list[float],
    theirs: list[float],
    *,
    unit: str,
    limit: float,
    higher_is_better: bool = False,
) -> Figure:
    """The figure for paired samples: ratio of medians, spread of the paired ratios.

    `limit` is the target: the ratio must be at most it, or at least it when
    `higher_is_better` (a throughput).
    """
    pairs = [a / b for a, b in zip(mine, theirs, strict=True)]
    target = f">= {limit:g}x" if higher_is_better else f"<= {limit:g}x"
    figure = Figure(
        name,
        statistics.median(mine),
        statistics.median(theirs),
        unit,
        target,
        None,
        (min(pairs), max(pairs)),
        len(mine),
        higher_is_better=higher_is_better,
    )
    met = figure.ratio >= limit if higher_is_better else figure.ratio <= limit
    return Figure(**{**figure.__dict__, "met": met})


def render(figures: list[Figure]) -> str:
    """The figures as a Markdown table."""
    lines = [
        "| figure | ours | baseline | ratio (spread) | target | met |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for figure in figures:
        met = {True: "yes", False: "NO", None: "-"}[figure.met]
        if figure.text is not None:
            lines.append(f"| {figure.name} | {figure.text} | | | {figure.target} | {met} |")
            continue
        spread = f" ({figure.spread[0]:.2f}-{figure.spread[1]:.2f})" if figure.spread else ""
        lines.append(
            f"| {figure.name} | {_amount(figure.ours, figure.unit)} | "
            f"{_amount(figure.baseline, figure.unit)} | {figure.ratio:.2f}x{spread} | "
            f"{figure.target} | {met} |"
        )
    return "\n".join(lines)


def _amount(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value * 1000:.2f} ms" if value < 1 else f"{value:.2f} s"
    if unit == "MiB":
        return f"{value:.1f} MiB"
    if unit == "msg/s":
        return f"{value:,.0f} msg/s"
    return f"{value:g} {unit}"
