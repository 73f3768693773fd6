#!/usr/bin/env python3
"""Plot validation PSNR of several train.py runs side by side, against steps and against training seconds.

usage: /usr/bin/python3 -m tools.train.plot_curves -o curves.png NAME=RUN/log.jsonl [NAME=RUN/log.jsonl ...]
       [--seconds-per-step NAME=S ...]   # x axis in CPU seconds from a clean timing instead of the logged ones
       [--sets val asm real]             # one row per validation set: val (--val-data), or a --val-extra /
                                         # --val-real name; the time axis is the logged CPU-hours where present
"""
import argparse

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from tools.train.curve import read_log  # noqa: E402


def read_run(path, recs, kind="val"):
    vals = [r for r in recs if r.get("type") == kind]
    if not vals:
        raise SystemExit("%s: no %r validation records" % (path, kind))
    return vals, vals[0].get("psnr_nearest"), vals[0].get("psnr_white")


def cpu_minutes(r):
    """Logged CPU time of a validation record (cores x step seconds; one thread in logs from before it)."""
    return r["cpu_hours"] * 60 if "cpu_hours" in r else r["elapsed"] / 60


def plot_set(by_step, by_time, runs, kind, per_step):
    nearest = white = None
    for name, path, recs in runs:
        vals, nearest, white = read_run(path, recs, kind)
        steps = [r["step"] for r in vals]
        psnr = [r["psnr"] for r in vals]
        by_step.plot(steps, psnr, marker="o", label=name)
        minutes = [s * per_step[name] / 60 for s in steps] if name in per_step else [cpu_minutes(r) for r in vals]
        by_time.plot(minutes, psnr, marker="o", label=name)
    for ax, xlabel in ((by_step, "training step"), (by_time, "CPU minutes")):
        ax.axhline(nearest, color="grey", linestyle="--", linewidth=1, label="nearest input view")
        ax.axhline(white, color="grey", linestyle=":", linewidth=1, label="white image")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("%s PSNR (dB)" % ("validation" if kind == "val" else kind[4:]))
        ax.grid(alpha=0.3)
    by_step.legend(fontsize=8)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="NAME=PATH/log.jsonl")
    ap.add_argument("--seconds-per-step", nargs="*", default=[], help="NAME=SECONDS (clean per-step timing)")
    ap.add_argument("--sets", nargs="+", default=["val"], help="validation sets, one row each (val, asm, real)")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    per_step = dict((k, float(v)) for k, v in (s.split("=", 1) for s in a.seconds_per_step))
    runs = [(name, path, read_log(path)) for name, path in (spec.split("=", 1) for spec in a.runs)]
    fig, axes = plt.subplots(len(a.sets), 2, figsize=(11, 4 * len(a.sets)), squeeze=False)
    for (by_step, by_time), kind in zip(axes, a.sets):
        plot_set(by_step, by_time, runs, kind if kind == "val" else "val_" + kind, per_step)
    fig.tight_layout()
    fig.savefig(a.output, dpi=90)


if __name__ == "__main__":
    main()
