#!/usr/bin/env python3
"""Print the validation curve (and a coarse training-loss curve) of a train.py log.jsonl.

usage: python3 -m tools.train.curve OUT/log.jsonl [--train-points 12]
"""
import argparse
import json


def read_log(path):
    """The records of a log.jsonl (a line cut by an interruption is skipped)."""
    recs = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    recs.append(json.loads(line))
                except ValueError:
                    pass
    return recs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--train-points", type=int, default=12)
    a = ap.parse_args()
    recs = read_log(a.log)
    start = [r for r in recs if r.get("type") == "start"]
    if start:
        s = start[-1]
        print("run: %s params, %s, amp %s, %s" % (s.get("params"), s.get("device"), s.get("amp"), s.get("hardware")))
        print("data: train %s | val %s" % (s.get("train"), s.get("val")))
    train = [r for r in recs if r.get("type") == "train"]
    if train:
        n = len(train)
        k = max(1, n // a.train_points)
        print("\ntraining (mean over groups of %d log records)" % k)
        print("%8s %10s %9s %10s %8s %8s %10s %9s" % ("step", "samples", "elapsed", "loss", "psnr", "ssim", "lr",
                                                     "s/step"))
        for i in range(0, n, k):
            g = train[i:i + k]
            last = g[-1]
            print("%8d %10d %9.1f %10.5f %8.2f %8.4f %10.2e %9.4f" % (
                last["step"], last["samples"], last["elapsed"], sum(r["loss"] for r in g) / len(g),
                sum(r["psnr"] for r in g) / len(g), sum(r["ssim"] for r in g) / len(g), last["lr"],
                sum(r["step_time"] for r in g) / len(g)))
    val = [r for r in recs if r.get("type") == "val"]
    end = [r for r in recs if r.get("type") == "end"]
    if end:
        e = end[-1]
        print("\nend: %s at step %s, %s samples, %.1f s of training steps" % (
            e.get("reason"), e.get("step"), e.get("samples"), e.get("elapsed", 0)))
    kinds = ["val"] + sorted({r["type"] for r in recs if str(r.get("type", "")).startswith("val_")})
    for kind in kinds:
        rows = val if kind == "val" else [r for r in recs if r.get("type") == kind]
        title = "validation (held-out objects" if kind == "val" else kind + " ("
        print("\n%sPSNR dB of the model vs a white image vs the nearest input view)" % (
            title + "; " if kind == "val" else title))
        print("%8s %10s %9s %8s %8s %8s %8s %7s" % ("step", "samples", "elapsed", "psnr", "white", "nearest", "ssim",
                                                    "images"))
        for r in rows:
            print("%8d %10d %9.1f %8.2f %8.2f %8.2f %8.4f %7d" % (
                r["step"], r["samples"], r["elapsed"], r["psnr"], r["psnr_white"], r["psnr_nearest"], r["ssim"],
                r["images"]))


if __name__ == "__main__":
    main()
