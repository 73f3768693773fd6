#!/usr/bin/env python3
"""The shipped model's whole training campaign as one curve: validation PSNR of chained train.py runs (each
continuing from the previous one's weights) against cumulative CPU-hours and samples.

usage: /usr/bin/python3 -m tools.train.campaign_curve [NAME=RUN/log.jsonl ...]
       [--history models/campaign_history.jsonl]   # the campaign so far (its logs do not outlive a machine)
       [--start-hours H --start-samples N]         # or: training before the first log
       [--write-history FILE] [--extra asm real] [-o curve.png]

Prints one row per validation (run, step, cumulative CPU-hours and samples, PSNR, SSIM, nearest-input baseline,
and the extra validation sets' PSNR where logged: val_asm, val_real, ...). CPU-hours are a log's `cpu_hours`
(steps' seconds times the cores they used, train.py --ranks) or, in logs from before it, `elapsed` (one thread).
--write-history writes the history and the runs' points as one file in the same format (one JSON object per
validation: run, step, cpu_hours, samples, psnr, ssim, psnr_nearest, val_NAME...), for the next session's
--history. A run's validations after the point where the next run took its weights are still printed.
"""
import argparse
import json
import sys

from tools.train.curve import read_log


def run_points(name, path, hours, samples, extras):
    """The validations of one log as history rows, offset by the campaign's hours and samples before it."""
    recs = read_log(path)
    by_step = {e: {r["step"]: r for r in recs if r.get("type") == "val_" + e} for e in extras}
    rows = []
    for r in (r for r in recs if r.get("type") == "val"):
        row = {"run": name, "step": r["step"], "cpu_hours": round(hours + r.get("cpu_hours", r["elapsed"] / 3600), 4),
               "samples": samples + r["samples"], "psnr": r["psnr"], "ssim": r["ssim"],
               "psnr_nearest": r["psnr_nearest"]}
        for e in extras:
            if r["step"] in by_step[e]:
                row["val_" + e] = by_step[e][r["step"]]["psnr"]
                row["val_%s_nearest" % e] = by_step[e][r["step"]]["psnr_nearest"]
        rows.append(row)
    return rows


def cell(x, fmt):
    return fmt % x if x is not None else "-"


def print_table(rows, extras):
    print("| run | step | CPU-hours | samples | val PSNR | SSIM | nearest | %s |" % " | ".join(
        "val_%s PSNR (nearest)" % e for e in extras))
    print("|" + " --- |" * (7 + len(extras)))
    for r in rows:
        cells = ["%s (%s)" % (cell(r.get("val_" + e), "%.2f"), cell(r.get("val_%s_nearest" % e), "%.2f"))
                 if r.get("val_" + e) is not None else "-" for e in extras]
        print("| %s | %s | %.2f | %s | %.2f | %s | %s | %s |" % (
            r["run"], cell(r.get("step"), "%d"), r["cpu_hours"], cell(r.get("samples"), "%d"), r["psnr"],
            cell(r.get("ssim"), "%.3f"), cell(r.get("psnr_nearest"), "%.2f"), " | ".join(cells)))


def plot(rows, extras, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot([r["cpu_hours"] for r in rows], [r["psnr"] for r in rows], "o-", ms=3, label="held-out procedural (val12)")
    for e in extras:
        pts = [r for r in rows if r.get("val_" + e) is not None]
        if pts:
            ax.plot([r["cpu_hours"] for r in pts], [r["val_" + e] for r in pts], "s-", ms=3, label="val_" + e)
    for name in dict.fromkeys(r["run"] for r in rows):
        first = next(r for r in rows if r["run"] == name)
        ax.axvline(first["cpu_hours"], color="0.85", lw=0.8)
        ax.text(first["cpu_hours"], ax.get_ylim()[0], " " + name, fontsize=7, rotation=90, va="bottom", color="0.4")
    ax.set_xlabel("training CPU-hours (cumulative)")
    ax.set_ylabel("PSNR (dB)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")  # the run labels sit along the bottom
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*", help="NAME=PATH/log.jsonl, in training order")
    ap.add_argument("--history", help="earlier points (a --write-history file); the runs continue from its last")
    ap.add_argument("--start-hours", type=float, default=0.0)
    ap.add_argument("--start-samples", type=int, default=0)
    ap.add_argument("--write-history", help="write the history and the runs' points to this file")
    ap.add_argument("--extra", nargs="*", default=["asm", "real"], help="extra validation sets to print")
    ap.add_argument("-o", "--output", default=None, help="also plot to this PNG")
    a = ap.parse_args()
    rows = read_log(a.history) if a.history else []
    hours, samples = a.start_hours, a.start_samples
    if rows:
        hours, samples = rows[-1]["cpu_hours"], rows[-1]["samples"]
    for spec in a.runs:
        name, _, path = spec.partition("=")
        if any(r["run"] == name for r in rows):
            sys.exit("campaign_curve.py: run %s is already in the history (extend it once per run)" % name)
        new = run_points(name, path, hours, samples, a.extra)
        rows += new
        if new:
            hours, samples = new[-1]["cpu_hours"], new[-1]["samples"]
    if not rows:
        sys.exit("campaign_curve.py: no validation points (give runs or --history)")
    print_table(rows, a.extra)
    print("\ntotal: %.2f CPU-hours of training steps, %d samples" % (hours, samples))
    if a.write_history:
        with open(a.write_history, "w") as f:
            for r in rows:
                f.write(json.dumps(r, sort_keys=True) + "\n")
    if a.output:
        plot(rows, a.extra, a.output)


if __name__ == "__main__":
    main()
