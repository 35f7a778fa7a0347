#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The lateness plot of docs/BENCHMARKS.md: for the most sessions of a `tether-bench --out`
run, steady pattern, idle and loaded, the CDF of how late the INTERRUPTED callbacks ran as
seen from outside, for Tether and the two libev designs, beside the kernel's own wake-up
lateness measured in the same run.

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
    "kernel": ("kernel clock_nanosleep (same run)", "#444444", "-."),
}


def read(path):
    with open(path) as f:
        # Below 1 us is "on time" at this scale (and the clocks of two processes).
        return sorted(max(float(line), 1.0) for line in f if line.strip())


def main(results, png):
    files = glob.glob(os.path.join(results, "samples-*-steady-*-outside.txt"))
    counts = sorted({int(re.search(r"samples-(\d+)-", f).group(1)) for f in files})
    if not counts:
        sys.exit("bench-plot: no samples in " + results)
    n = counts[-1]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, load in zip(axes, ["idle", "busy"]):
        for design in ["tether", "previous", "naive", "kernel"]:
            source = "tether" if design == "kernel" else design
            kind = "kernel" if design == "kernel" else "outside"
            path = os.path.join(results, f"samples-{n}-{load}-steady-{source}-{kind}.txt")
            if not os.path.exists(path):
                continue
            values = read(path)
            if not values:
                continue
            label, color, dash = STYLE[design]
            ys = [(i + 1) / len(values) for i in range(len(values))]
            ax.step(values, ys, where="post", color=color, linestyle=dash, label=label)
        ax.set_xscale("log")
        ax.set_xlabel("late by (microseconds, log scale; 1 = on time)")
        ax.set_title(f"{n} sessions, {'both cores busy' if load == 'busy' else 'idle'}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("fraction of INTERRUPTED callbacks (kernel: wake-ups)")
    axes[0].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print("bench-plot: wrote " + png)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
