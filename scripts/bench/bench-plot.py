#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The lateness plot of docs/BENCHMARKS.md: for the most sessions of a `tether-bench --out`
run, steady churn, a panel for each priority the loop ran at (a row of panels) and each
load (idle, busy), the CDF of how late the INTERRUPTED callbacks ran as seen from outside,
for Tether and the two libev designs (every run's samples together), beside the kernel's
clock_nanosleep and the bare timer loop, each measured alone at that priority and load.

Usage: scripts/bench/bench-plot.py RESULTS_DIR OUT.png
"""
import glob
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {
    "tether": ("Tether", "#1b7837", "-"),
    "previous": ("libev, one timer per session (method 3)", "#d95f02", "--"),
    "naive": ("libev, a timer per deadline (method 1)", "#7570b3", ":"),
    "kernel": ("kernel clock_nanosleep, alone", "#444444", "-."),
    "bare": ("bare timerfd heap, alone (same deadline rate)", "#999999", (0, (1, 3))),
}
# samples-SESSIONS-LOAD-PATTERN-KIND-WHAT-PRIORITY-rRUN.txt (tether-bench's write_samples)
NAME = re.compile(r"samples-(\d+)-(\w+)-(\w+)-(\w+)-(\w+)-([\w-]+)-r(\d+)\.txt$")


def read(paths):
    values = []
    for path in paths:
        with open(path) as f:
            # Below 1 us is "on time" at this scale (and the clocks of two processes).
            values += [max(float(line), 1.0) for line in f if line.strip()]
    return sorted(values)


def main(results, png):
    found = [m for m in (NAME.search(f) for f in glob.glob(os.path.join(results, "samples-*.txt"))) if m]
    counts = sorted({int(m.group(1)) for m in found if m.group(5) == "outside"})
    if not counts:
        sys.exit("bench-plot: no samples in " + results)
    n = counts[-1]
    priorities = []
    for m in sorted(found, key=lambda m: m.string):
        if m.group(6) not in priorities:
            priorities.append(m.group(6))
    # The default first, as tether-bench's rows are usually asked.
    priorities.sort(key=lambda p: (p != "default", p))
    fig, axes = plt.subplots(len(priorities), 2, figsize=(11, 4.2 * len(priorities)), sharey=True, squeeze=False)
    for row, priority in enumerate(priorities):
        for ax, load in zip(axes[row], ["idle", "busy"]):
            for design in ["tether", "previous", "naive", "kernel", "bare"]:
                alone = design in ("kernel", "bare")
                pattern, what = ("none", "late") if alone else ("steady", "outside")
                paths = glob.glob(os.path.join(
                    results, f"samples-{n}-{load}-{pattern}-{design}-{what}-{priority}-r*.txt"))
                values = read(paths)
                if not values:
                    continue
                label, color, dash = STYLE[design]
                ys = [(i + 1) / len(values) for i in range(len(values))]
                ax.step(values, ys, where="post", color=color, linestyle=dash, label=label)
            ax.set_xscale("log")
            ax.set_xlabel("late by (microseconds, log scale; 1 = on time)")
            loaded = "both cores busy" if load == "busy" else "idle"
            ax.set_title(f"{n} sessions, {loaded}, loop at {priority.replace('_', ':')}")
            ax.grid(True, which="both", alpha=0.3)
        axes[row][0].set_ylabel("fraction of INTERRUPTED callbacks (baselines: wake-ups)")
    axes[0][0].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print("bench-plot: wrote " + png)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
