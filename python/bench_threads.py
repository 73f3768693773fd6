#!/usr/bin/env python3
"""Parallel renders on one model (a benchmark, not a test): the same render calls made one after another from one
Python thread, then shared out over --workers threads, on a model whose renders each use --threads CPU threads.
Prints the wall time of each way and the speed-up (median of --repeat rounds), and checks the images are equal.

Usage: PYTHONPATH=build/python /usr/bin/python3 python/bench_threads.py [--workers 2] [--threads 1] [--calls 40]"""
import argparse
import statistics
import threading
import time

import numpy as np

import lact

MODEL, DATA, INPUTS = "models/lact_tiny_obj64.safetensors", "examples/gso_toy_64", "16,20,24,28,34,38,42,46"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--calls", type=int, default=40, help="render calls of one 64x64 camera per round")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    model = lact.Model(MODEL, threads=args.threads)
    scene = lact.read_scene(DATA, inputs=INPUTS, targets="rest")
    i, t = scene.inputs, scene.targets
    state = model.encode(scene.images[i], scene.intrinsics[i], scene.c2w[i])
    views = [t[k % len(t)] for k in range(args.calls)]
    out = np.empty((args.calls, 64, 64, 3), np.float32)

    def render(calls):
        for k in calls:
            model.render(state, scene.intrinsics[views[k]], scene.c2w[views[k]], out=out[k])

    render(range(min(4, args.calls)))  # warm-up
    serial_s, parallel_s = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        render(range(args.calls))
        serial_s.append(time.perf_counter() - start)
        reference = out.copy()
        workers = [threading.Thread(target=render, args=(range(w, args.calls, args.workers),))
                   for w in range(args.workers)]
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        parallel_s.append(time.perf_counter() - start)
        assert np.array_equal(out, reference), "threads rendered other images"
    serial, parallel = statistics.median(serial_s), statistics.median(parallel_s)
    print("%d renders of one 64x64 camera, %d CPU thread(s) per render, median of %d rounds:"
          % (args.calls, args.threads, args.repeat))
    print("  1 Python thread %.3f s, %d Python threads %.3f s: speed-up %.2fx (most renders at once: %d)"
          % (serial, args.workers, parallel, serial / parallel, model._most_renders_at_once))


if __name__ == "__main__":
    main()
