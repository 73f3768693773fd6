#!/usr/bin/env python3
"""The shipped model's whole training campaign as one curve: validation PSNR of chained train.py runs (each
continuing from the previous one's weights) against cumulative training hours and samples.

usage: /usr/bin/python3 tools/train/campaign_curve.py NAME=RUN/log.jsonl [NAME=RUN/log.jsonl ...]
       [--start-hours H --start-samples N]   # training before the first log (e.g. the first model's 29 minutes)
       [--extra asm real] [-o curve.png]

Prints one row per validation (run, step, cumulative hours and samples, PSNR, SSIM, nearest-input baseline, and
the extra validation sets' PSNR where logged: val_asm, val_real, ...). A run's validations after the point where
the next run took its weights are still printed; the cumulative axis follows each run's own elapsed time.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from curve import read_log  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="NAME=PATH/log.jsonl, in training order")
    ap.add_argument("--start-hours", type=float, default=0.0)
    ap.add_argument("--start-samples", type=int, default=0)
    ap.add_argument("--extra", nargs="*", default=["asm", "real"], help="extra validation sets to print")
    ap.add_argument("-o", "--output", default=None, help="also plot to this PNG")
    a = ap.parse_args()
    hours, samples = a.start_hours, a.start_samples
    points = []
    print("| run | step | hours | samples | val PSNR | SSIM | nearest | %s |" % " | ".join(
        "val_%s PSNR (nearest)" % e for e in a.extra))
    print("|" + " --- |" * (7 + len(a.extra)))
    for spec in a.runs:
        name, _, path = spec.partition("=")
        recs = read_log(path)
        extra = {e: {r["step"]: r for r in recs if r.get("type") == "val_" + e} for e in a.extra}
        vals = [r for r in recs if r.get("type") == "val"]
        for r in vals:
            h = hours + r["elapsed"] / 3600.0
            n = samples + r["samples"]
            cells = []
            for e in a.extra:
                x = extra[e].get(r["step"])
                cells.append("%.2f (%.2f)" % (x["psnr"], x["psnr_nearest"]) if x else "-")
            print("| %s | %d | %.2f | %d | %.2f | %.3f | %.2f | %s |" % (
                name, r["step"], h, n, r["psnr"], r["ssim"], r["psnr_nearest"], " | ".join(cells)))
            points.append((name, h, r["psnr"], {e: extra[e][r["step"]]["psnr"] for e in a.extra if r["step"] in extra[e]}))
        if vals:
            hours += vals[-1]["elapsed"] / 3600.0
            samples += vals[-1]["samples"]
    print("\ntotal: %.2f hours of training steps, %d samples" % (hours, samples))
    if a.output:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8, 4))
        ax.plot([p[1] for p in points], [p[2] for p in points], "o-", ms=3, label="held-out procedural (val12)")
        for e in a.extra:
            xs = [p[1] for p in points if e in p[3]]
            if xs:
                ax.plot(xs, [p[3][e] for p in points if e in p[3]], "s-", ms=3, label="val_" + e)
        for name in dict.fromkeys(p[0] for p in points):
            first = next(p for p in points if p[0] == name)
            ax.axvline(first[1], color="0.85", lw=0.8)
            ax.text(first[1], ax.get_ylim()[0], " " + name, fontsize=7, rotation=90, va="bottom", color="0.4")
        ax.set_xlabel("training hours (one CPU thread, cumulative)")
        ax.set_ylabel("PSNR (dB)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(a.output, dpi=110)


if __name__ == "__main__":
    main()
