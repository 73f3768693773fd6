#!/usr/bin/env python3
"""The time estimate against the encode it precedes: `lact encode` with LACT_TIME_ESTIMATE=1 at a few sizes,
the estimate's seconds beside the encode's own (its "encoded ... in S s" line), medians of --repeat runs. A
benchmark, not a test: the estimate is a prediction from quiet rates (a busy machine's timings less their waits
for a CPU) scaled by the load it reads, so say the load: the table prints it, and the estimate's load factor.
Standard library only; prints a markdown table.

    python3 bench/time_estimate.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny \
        [--sizes 256x256,512x512] [--threads 1] [--repeat 3]

The rates are kept in a cache folder of this run's own (--work), timed at the first run of each size and read
from the file after, as a user's second command reads them.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile


def encode_once(args, scene, size, env, state):
    """(estimated s, encode s, load factor, shapes timed) of one `lact encode`; exits with its stderr when it fails
    or prints no estimate or encode time. The load factor is the estimate's "Nx as long" (1 when it says none); the
    shapes it timed before the encode count in the encode's seconds (on a busy machine every run times them)."""
    argv = [args.lact, "encode", *scene, "--size", size, "-o", state, "--force"]
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(argv), p.stderr))
    estimate = re.search(r"time estimate: encoding \d+ views at %s: ([\d.]+) s" % re.escape(size), p.stderr)
    took = re.search(r"^encoded \d+ views .* in ([\d.]+) s", p.stdout, re.M)
    if not estimate or not took:
        sys.exit("no estimate or encode time in the output of %s:\n%s%s" % (" ".join(argv), p.stdout, p.stderr))
    slower = re.search(r"([\d.]+)x as long beside", p.stderr)
    timed = re.search(r"(\d+) shapes? timed now", p.stderr)
    return (float(estimate.group(1)), float(took.group(1)), float(slower.group(1)) if slower else 1.0,
            int(timed.group(1)) if timed else 0)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lact", required=True)
    ap.add_argument("--fixture", required=True, help="a folder with model.safetensors and index.json")
    ap.add_argument("--inputs", default="0,1,2")
    ap.add_argument("--sizes", default="256x256,512x512")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", help="a folder for the rate cache and the state (default: a temporary one)")
    args = ap.parse_args()
    if args.repeat < 1 or args.threads < 1:
        sys.exit("--repeat and --threads must be at least 1")
    work = args.work or tempfile.mkdtemp(prefix="lact_time_estimate_")
    os.makedirs(work, exist_ok=True)
    fx = os.path.abspath(args.fixture)
    scene = ["--model", os.path.join(fx, "model.safetensors"), "--data", os.path.join(fx, "index.json"),
             "--inputs", args.inputs, "--threads", str(args.threads), "--warnings", "off"]
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"), LACT_TIME_ESTIMATE="1")
    state = os.path.join(work, "state.safetensors")
    print("load average before: %s; --threads %d, medians of %d" % (loadavg(), args.threads, args.repeat))
    print("\n| size | estimate s | encode s | estimate / encode | load factor | shapes timed |")
    print("| --- | --- | --- | --- | --- | --- |")
    for size in args.sizes.split(","):
        runs = [encode_once(args, scene, size, env, state) for _ in range(args.repeat)]
        estimate = statistics.median(r[0] for r in runs)
        took = statistics.median(r[1] for r in runs)
        factors = "-".join("%g" % f for f in sorted({min(r[2] for r in runs), max(r[2] for r in runs)}))
        timed = "-".join(str(t) for t in sorted({min(r[3] for r in runs), max(r[3] for r in runs)}))
        print("| %s | %.3f | %.3f | %.2f | %s | %s |" % (size, estimate, took, estimate / took if took > 0 else
                                                         float("nan"), factors, timed))
    print("\nload average after: %s" % loadavg())


if __name__ == "__main__":
    main()
