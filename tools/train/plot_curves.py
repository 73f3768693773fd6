#!/usr/bin/env python3
"""Plot validation PSNR of several train.py runs side by side, against steps and against training seconds.

usage: /usr/bin/python3 tools/train/plot_curves.py -o curves.png NAME=RUN/log.jsonl [NAME=RUN/log.jsonl ...]
       [--seconds-per-step NAME=S ...]   # x axis in CPU seconds from a clean timing instead of the logged ones
"""
import argparse
import json

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_run(path):
    recs = [json.loads(line) for line in open(path) if line.strip()]
    vals = [r for r in recs if r.get("type") == "val"]
    return vals, vals[0].get("psnr_nearest"), vals[0].get("psnr_white")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="NAME=PATH/log.jsonl")
    ap.add_argument("--seconds-per-step", nargs="*", default=[], help="NAME=SECONDS (clean per-step timing)")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    per_step = dict((k, float(v)) for k, v in (s.split("=", 1) for s in a.seconds_per_step))
    fig, (by_step, by_time) = plt.subplots(1, 2, figsize=(11, 4))
    nearest = white = None
    for spec in a.runs:
        name, path = spec.split("=", 1)
        vals, nearest, white = read_run(path)
        steps = [r["step"] for r in vals]
        psnr = [r["psnr"] for r in vals]
        by_step.plot(steps, psnr, marker="o", label=name)
        seconds = [s * per_step[name] / 60 for s in steps] if name in per_step else [r["elapsed"] / 60 for r in vals]
        by_time.plot(seconds, psnr, marker="o", label=name)
    for ax, xlabel in ((by_step, "training step"), (by_time, "CPU minutes (1 thread)")):
        ax.axhline(nearest, color="grey", linestyle="--", linewidth=1, label="nearest input view")
        ax.axhline(white, color="grey", linestyle=":", linewidth=1, label="white image")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("validation PSNR (dB)")
        ax.grid(alpha=0.3)
    by_step.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.output, dpi=90)


if __name__ == "__main__":
    main()
