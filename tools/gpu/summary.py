#!/usr/bin/env python3
"""The last thing tools/gpu_check.sh prints: every check's status line, then one table of encode s, render FPS and
attention TFLOP/s for each lact attention path and the official code, with the ratios against the official code.

usage: python3 tools/gpu/summary.py OUT_DIR --layers 24 --dim 768 [STATUS_LINE ...]
Reads OUT_DIR/device.txt, ceilings.txt, bench_status.txt, bench_attn_<path>.json (lact bench --json, with
--profile), bench_<tag>.json (gpu_check.sh's bench_extra rows: bf16_activations_off, split_k_off, tf32) and
official.json (tools/gpu/official_bench.py).
"""
import argparse
import json
import os


def read(path):
    return open(path).read().strip() if os.path.exists(path) else ""


def bench_files(out):
    """(file name, the table's label for it): the attention paths' benches first, then the extra rows."""
    names = sorted(n for n in os.listdir(out) if n.startswith("bench_") and n.endswith(".json"))
    paths = [(n, "LACT_ATTENTION=" + n[len("bench_attn_"):-len(".json")]) for n in names if n.startswith("bench_attn_")]
    extras = [(n, n[len("bench_"):-len(".json")]) for n in names if not n.startswith("bench_attn_")]
    return paths + extras


def lact_rows(out, layers, dim):
    """One row per bench JSON: its lact row's medians and, with a profile, the attention's rate."""
    rows = []
    for name, label in bench_files(out):
        for r in json.load(open(os.path.join(out, name))).get("rows", []):
            if r.get("model") != "lact":
                continue
            if r.get("skipped"):
                rows.append({"code": f"lact, {label}", "skipped": r["skipped"]})
                continue
            # Per view and layer the attention multiplies [tokens, dim] by [dim, tokens] and back: 4 t^2 d FLOP.
            tokens = (r["height"] // 8) * (r["width"] // 8)
            flop = 4.0 * tokens * tokens * dim * r["views"] * layers
            attention_ms = sum(p["ms"] for p in r.get("encode_profile", []) if p["op"] == "attention")
            attention = r.get("attention", "?") + (f"; {r['activations']} activations" if r.get("activations") else "")
            rows.append({"code": f"lact, {label}", "attention": attention,
                         "precision": r["precision"], "encode_s": r["encode_s"], "render_fps": r["render_fps"],
                         "attention_tflops": flop / (attention_ms / 1e3) / 1e12 if attention_ms > 0 else None,
                         "views": r["views"], "size": r["height"]})
    return rows


def official_row(out):
    path = os.path.join(out, "official.json")
    if not os.path.exists(path):
        return None
    o = json.load(open(path))
    rates = o.get("sdpa_tflops", {})
    others = ", ".join(f"{k} {v:.3g}" if isinstance(v, (int, float)) else f"{k} {v}"
                       for k, v in rates.items() if k != "default")
    return {"code": f"official lact_nvs (torch {o['torch']}{', shims' if o.get('shims') else ''})",
            "attention": "torch SDPA" + (f" ({others})" if others else ""), "precision": o["precision"],
            "encode_s": o["encode_s"], "render_fps": o["render_fps"], "attention_tflops": rates.get("default"),
            "views": o["views"], "size": o["size"], "first_encode_s": o.get("first_encode_s")}


def number(v, fmt):
    return format(v, fmt) if isinstance(v, (int, float)) else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("status", nargs="*")
    a = ap.parse_intermixed_args()  # the status lines come after the options
    print("\n== lact gpu_check ==")
    print(read(os.path.join(a.out, "device.txt")))
    if read(os.path.join(a.out, "ceilings.txt")):
        print("ceilings:", " ".join(read(os.path.join(a.out, "ceilings.txt")).split()))
    for s in a.status:
        print("check", s)
    print(read(os.path.join(a.out, "bench_status.txt")))
    rows = lact_rows(a.out, a.layers, a.dim)
    official = official_row(a.out)
    print("\n| code | attention | precision | views x size | encode s | render FPS | attention TFLOP/s "
          "| encode: official / this | render: this / official |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows + ([official] if official else []):
        if r.get("skipped"):
            print(f"| {r['code']} | skipped: {r['skipped']} |")
            continue
        enc = official["encode_s"] / r["encode_s"] if official and r["encode_s"] else None
        fps = r["render_fps"] / official["render_fps"] if official and official["render_fps"] else None
        print(f"| {r['code']} | {r['attention']} | {r['precision']} | {r['views']} x {r['size']}^2 "
              f"| {number(r['encode_s'], '.3f')} | {number(r['render_fps'], '.1f')} "
              f"| {number(r['attention_tflops'], '.3g')} | {number(enc, '.2f')}x | {number(fps, '.2f')}x |")
    if official and official.get("first_encode_s") is not None:
        print(f"official: first encode (torch.compile's compilation included) {official['first_encode_s']:.1f} s")
    print("targets (issue 51, H200, 48 x 512^2 bf16): encode <= 0.7 s, render >= 60 FPS, >= 2x the official code; "
          "attention >= 350 TFLOP/s through cuDNN, >= 250 through our own kernel")


if __name__ == "__main__":
    main()
