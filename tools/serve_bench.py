#!/usr/bin/env python3
"""How fast `lact serve` streams (issue 38's benchmark; not a test): 1, 4 and 8 loopback clients each asking
N frames (a turntable at 64x64, JPEG while moving), frames per second and p50/p99 latency (camera sent to frame
received) per client, against `lact view --print-stats`' render-only rate at the same size (1000 / orbit.render_ms
of a scripted orbit under xvfb-run); then the JPEG encoding's share of a 512x512 frame's time.

  python3 tools/serve_bench.py --lact build/app/lact [--frames 200] [--clients 1,4,8]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "common"))
from serve_common import Server, shipped  # noqa: E402
from ws_client import WebSocket, frame_parts  # noqa: E402


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def turntable(lact, frames, size, folder):
    import json
    path = os.path.join(folder, "turntable_%d.json" % size)
    subprocess.run([lact, "path", "turntable", "--frames", str(frames), "--size", "%dx%d" % (size, size), "-o", path,
                    "--force"], check=True, capture_output=True)
    with open(path) as f:
        return json.load(f)["frames"]


def next_frame(ws):
    while True:
        message = ws.recv()
        if isinstance(message, bytes):
            return frame_parts(message)[0]


def client(server, cameras, result):
    """Sends each camera (moving) and waits for its frame: the latencies and the wall time."""
    ws = WebSocket(server.stream_url(), timeout=300)
    latencies, render_ms, encode_ms = [], [], []
    start = time.perf_counter()
    for camera in cameras:
        sent = time.perf_counter()
        ws.send_json({"type": "camera", "camera": camera, "moving": True})
        header = next_frame(ws)
        latencies.append(time.perf_counter() - sent)
        render_ms.append(header["render_ms"])
        encode_ms.append(header["encode_ms"])
    result.update(seconds=time.perf_counter() - start, latencies=latencies, render_ms=render_ms, encode_ms=encode_ms)
    ws.close()


def run_clients(server, cameras, count):
    results = [dict() for _ in range(count)]
    threads = [threading.Thread(target=client, args=(server, cameras, r)) for r in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def desktop_rate(lact, model, data, inputs, frames):
    """1000 / orbit.render_ms of `lact view`'s scripted orbit (render-only views per second), or None."""
    if not shutil.which("xvfb-run"):
        return None, "no xvfb-run"
    p = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1600x1000x24", lact, "view", "--model", model, "--data",
                        data, "--inputs", inputs, "--orbit-frames", str(frames), "--no-vsync", "--exit",
                        "--print-stats"], capture_output=True, text=True, timeout=900)
    stats = dict(line.split(" ", 1) for line in p.stdout.splitlines() if " " in line)
    if p.returncode or "orbit.render_ms" not in stats:
        return None, p.stderr.strip()[-300:]
    return 1000 / float(stats["orbit.render_ms"]), "orbit.novel_views_per_s %s" % stats.get("orbit.novel_views_per_s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lact", default=os.path.join(ROOT, "build", "app", "lact"))
    parser.add_argument("--frames", type=int, default=200)
    parser.add_argument("--clients", default="1,4,8", help="client counts ('' for none)")
    parser.add_argument("--big-frames", type=int, default=10, help="frames of the 512x512 encoding measurement")
    parser.add_argument("--no-desktop", action="store_true", help="skip lact view's rate")
    args = parser.parse_args()
    model, data, inputs = shipped(ROOT)
    folder = tempfile.mkdtemp(prefix="lact_serve_bench_")
    try:
        rate, note = (None, "skipped") if args.no_desktop else desktop_rate(args.lact, model, data, inputs, args.frames)
        print("lact view render-only at 64x64: %s views/s (%s)" % ("%.1f" % rate if rate else "-", note))
        server = Server(args.lact, "--model", model, "--data", data, "--inputs", inputs, "--max-rate", 100000)
        server.ready()
        cameras = turntable(args.lact, args.frames, 64, folder)
        print("clients  frames/s per client (mean)  total frames/s  p50 ms  p99 ms  render ms  vs view")
        for count in [int(c) for c in args.clients.split(",") if c]:
            results = run_clients(server, cameras, count)
            fps = [len(r["latencies"]) / r["seconds"] for r in results]
            latencies = [x * 1000 for r in results for x in r["latencies"]]
            render = statistics.mean(x for r in results for x in r["render_ms"])
            print("%7d  %27.1f  %14.1f  %6.2f  %6.2f  %9.2f  %s" % (
                count, statistics.mean(fps), sum(fps), percentile(latencies, 0.5), percentile(latencies, 0.99), render,
                "%.0f%%" % (100 * sum(fps) / rate) if rate else "-"))
        big = run_clients(server, turntable(args.lact, args.big_frames, 512, folder), 1)[0]
        render, encode = statistics.median(big["render_ms"]), statistics.median(big["encode_ms"])
        print("512x512: render %.1f ms, JPEG encoding %.2f ms (%.1f%% of the frame)" % (
            render, encode, 100 * encode / (render + encode)))
        server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
