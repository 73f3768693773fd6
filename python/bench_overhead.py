#!/usr/bin/env python3
"""Python's overhead per Model.render call (a benchmark, not a test): the wall time of the call minus the time the
engine itself spent in it (Model._last_engine_seconds, measured in C++ around Model::render), and the CLI's
in-process render time per view for the same views (report.json render_ms_per_view) as the scale.

Usage: PYTHONPATH=build/python /usr/bin/python3 python/bench_overhead.py [--lact build/app/lact] [--threads 2]"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import lact

MODEL, DATA, INPUTS = "models/lact_tiny_obj64.safetensors", "examples/gso_toy_64", "16,20,24,28,34,38,42,46"


def python_overhead(threads, calls):
    model = lact.Model(MODEL, threads=threads)
    scene = lact.read_scene(DATA, inputs=INPUTS, targets="rest")
    i, t = scene.inputs, scene.targets
    state = model.encode(scene.images[i], scene.intrinsics[i], scene.c2w[i])
    walls, engines = [], []
    for k in range(calls):
        v = t[k % len(t)]
        start = time.perf_counter()
        model.render(state, scene.intrinsics[v], scene.c2w[v])  # one 64x64 camera per call
        walls.append(time.perf_counter() - start)
        engines.append(model._last_engine_seconds)
    return statistics.median(walls), statistics.median(engines), statistics.median(w - e for w, e in zip(walls, engines))


def cli_ms_per_view(lact_cli, threads):
    with tempfile.TemporaryDirectory(prefix="lact_bench_") as out:
        subprocess.run([lact_cli, "render", "--model", MODEL, "--data", DATA, "--inputs", INPUTS, "--targets", "rest",
                        "--threads", str(threads), "--out", out, "--quiet"], check=True, capture_output=True)
        report = json.load(open(os.path.join(out, "report.json")))
    return report["scenes"][0]["render_ms_per_view"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lact", default="build/app/lact")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    wall, engine, overhead = python_overhead(args.threads, args.calls)
    print("render, one 64x64 camera per call, %d threads, median of %d calls:" % (args.threads, args.calls))
    print("  call %.3f ms, in the engine %.3f ms, Python overhead %.4f ms (%.2f%% of the call)"
          % (wall * 1e3, engine * 1e3, overhead * 1e3, 100 * overhead / wall))
    if os.path.exists(args.lact):
        print("  the CLI's in-process render time per view (56 views in one call): %.3f ms"
              % cli_ms_per_view(args.lact, args.threads))


if __name__ == "__main__":
    main()
