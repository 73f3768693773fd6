#!/usr/bin/env python3
"""The commands a user runs, timed as whole processes beside lact bench's in-process numbers for the same work, so
that time spent outside the engine (loading and checking the model, guard rails, estimates, writing the state)
shows at once (issue 49). Standard library only; prints a markdown table.

    python3 bench/one_shot.py --lact build/app/lact [--threads 2] [--precision fp32,bf16] [--repeat 3]

The model: the paper config (lact_l24_d768_ttt2x shapes, random weights, tools/random_model.py, written once to
--work); the work: 2 input views of 128x128 from examples/gso_toy_64, encoded to a state, then one 128x128 view
rendered from it. Each command runs --repeat times; the table gives medians. `lact bench --model` times the same
file in one process: its open s (reading the model), encode s and first frame s (the first render of one view
after an encode, as render --state's only render is).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(argv, env=None):
    """(whole-process seconds, stdout) of one run; exits with its stderr when it fails."""
    start = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - start
    if p.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(argv), p.stderr))
    return seconds, p.stdout


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:4])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lact", default=os.path.join(ROOT, "build", "app", "lact"))
    parser.add_argument("--work", default="/tmp/lact_one_shot", help="where the model, states and outputs go")
    parser.add_argument("--threads", default="0", help="--threads for every command (0: lact's default)")
    parser.add_argument("--precision", default="fp32", help="comma-separated: fp32,bf16")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    model = os.path.join(args.work, "lact_l24_d768_ttt2x_random.safetensors")
    if not os.path.exists(model):
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "random_model.py"), model, "--layers", "24"],
                       check=True, stdout=subprocess.DEVNULL)
    lact, threads = os.path.abspath(args.lact), ["--threads", args.threads]
    data = ["--data", os.path.join(ROOT, "examples", "gso_toy_64"), "--inputs", "16,32", "--size", "128x128"]
    print("load before: %s" % loadavg())
    print("\n| precision | command | whole process s | its engine s | lact bench in-process s | outside the engine s |")
    print("|---|---|---|---|---|---|")
    for precision in args.precision.split(","):
        common = threads + ["--precision", precision, "--warnings", "off"]
        bench_json = os.path.join(args.work, "bench_%s.json" % precision)
        timed([lact, "bench", "--model", model, "--views", "2", "--size", "128", "--models", "lact", "--targets", "1",
               "--repeat", str(args.repeat), "--json", bench_json, "--force", "--no-fp32-baseline"] + threads +
              ["--precision", precision])
        with open(bench_json) as f:
            row = [r for r in json.load(f)["rows"] if r.get("precision") == precision][0]
        state = os.path.join(args.work, "state_%s.safetensors" % precision)
        encode_whole, encode_in, render_whole, render_in = [], [], [], []
        for _ in range(args.repeat):
            seconds, out = timed([lact, "encode", "--model", model] + data + common + ["-o", state, "--force"])
            encode_whole.append(seconds)
            encode_in.append(float(re.search(r" in ([\d.]+) s", out).group(1)))
            out_dir = os.path.join(args.work, "render_%s" % precision)
            seconds, _ = timed([lact, "render", "--state", state, "--targets", "0", "--out", out_dir, "--quiet"] +
                               common)
            render_whole.append(seconds)
            with open(os.path.join(out_dir, "report.json")) as f:
                render_in.append(json.load(f)["render_ms_per_view"] / 1000)
        med = statistics.median
        print("| %s | encode, 2 views 128x128 | %.2f | %.2f (\"encoded in\") | %.2f encode, %.2f open | %.2f |" %
              (precision, med(encode_whole), med(encode_in), row["encode_s"], row.get("open_s", -1),
               med(encode_whole) - med(encode_in)))
        print("| %s | render --state, 1 view 128x128 | %.2f | %.2f (report's render) | %.2f first frame "
              "| %.2f |" % (precision, med(render_whole), med(render_in), row.get("first_frame_s", -1),
                                    med(render_whole) - med(render_in)))
    print("\nload after: %s" % loadavg())


if __name__ == "__main__":
    main()
