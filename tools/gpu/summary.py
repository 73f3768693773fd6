#!/usr/bin/env python3
"""The last thing tools/gpu_check.sh prints: every check's status line, then one table of encode s, render FPS and
attention TFLOP/s for each lact attention path and the official code, with the ratios against the official code.

usage: python3 tools/gpu/summary.py LOG_DIR --layers 24 --dim 768 [STATUS_LINE ...]
Reads LOG_DIR/device.txt, status.txt (one line a step, as gpu_check.sh wrote them), bench_attn_<path>.json (lact
bench --json, with --profile), bench_<tag>.json (gpu_check.sh's bench_extra rows: bf16_activations_off,
split_k_off, tf32) and official.json (tools/gpu/official_bench.py). gpu_check.sh runs it after every step, so a
file may be half written or hold garbage: such a file gives a row saying so, never a crash.
"""
import argparse
import json
import os


def read(path):
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read().strip()


def load(path):
    """(the JSON object, None) or (None, why it cannot be read)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            value = json.load(f)
    except (OSError, ValueError) as e:
        return None, f"unreadable {os.path.basename(path)}: {str(e)[:100]}"
    if not isinstance(value, dict):
        return None, f"unreadable {os.path.basename(path)}: not a JSON object"
    return value, None


def bench_files(out):
    """(file name, the table's label for it): the attention paths' benches first, then the extra rows."""
    names = sorted(n for n in os.listdir(out) if n.startswith("bench_") and n.endswith(".json"))
    paths = [(n, "LACT_ATTENTION=" + n[len("bench_attn_"):-len(".json")]) for n in names if n.startswith("bench_attn_")]
    extras = [(n, n[len("bench_"):-len(".json")]) for n in names if not n.startswith("bench_attn_")]
    return paths + extras


def lact_row(r, label, layers, dim):
    """The table's row for one lact row of a bench JSON; the attention's rate where it was profiled."""
    if r.get("skipped"):
        return {"code": f"lact, {label}", "failed": f"skipped: {r['skipped']}"}
    # Per view and layer the attention multiplies [tokens, dim] by [dim, tokens] and back: 4 t^2 d FLOP.
    tokens = (r["height"] // 8) * (r["width"] // 8)
    flop = 4.0 * tokens * tokens * dim * r["views"] * layers
    attention_ms = sum(p["ms"] for p in r.get("encode_profile", []) if p["op"] == "attention")
    attention = str(r.get("attention", "?")) + (f"; {r['activations']} activations" if r.get("activations") else "")
    return {"code": f"lact, {label}", "attention": attention, "precision": r["precision"], "encode_s": r["encode_s"],
            "render_fps": r["render_fps"],
            "attention_tflops": flop / (attention_ms / 1e3) / 1e12 if attention_ms > 0 else None,
            "views": r["views"], "size": r["height"]}


def lact_rows(out, layers, dim):
    """One row per bench JSON: its lact row's medians, or what is wrong with the file."""
    rows = []
    for name, label in bench_files(out):
        bench, why = load(os.path.join(out, name))
        if why:
            rows.append({"code": f"lact, {label}", "failed": why})
            continue
        for r in bench.get("rows", []):
            if not isinstance(r, dict) or r.get("model") != "lact":
                continue
            try:
                rows.append(lact_row(r, label, layers, dim))
            except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
                rows.append({"code": f"lact, {label}", "failed": f"incomplete row in {name}: {e!r}"[:120]})
    return rows


def official_row(out):
    path = os.path.join(out, "official.json")
    if not os.path.exists(path):
        return None
    o, why = load(path)
    if why:
        return {"code": "official lact_nvs", "failed": why}
    rates = o.get("sdpa_tflops") if isinstance(o.get("sdpa_tflops"), dict) else {}
    others = ", ".join(f"{k} {v:.3g}" if isinstance(v, (int, float)) else f"{k} {v}"
                       for k, v in rates.items() if k != "default")
    stage = f", {o['stage']}" if o.get("stage") and o.get("stage") != "done" else ""
    return {"code": f"official lact_nvs (torch {o.get('torch', '?')}{', shims' if o.get('shims') else ''}{stage})",
            "attention": "torch SDPA" + (f" ({others})" if others else ""), "precision": o.get("precision", "?"),
            "encode_s": o.get("encode_s"), "render_fps": o.get("render_fps"), "attention_tflops": rates.get("default"),
            "views": o.get("views", "?"), "size": o.get("size", "?"), "first_encode_s": o.get("first_encode_s")}


def number(v, fmt):
    return format(v, fmt) if isinstance(v, (int, float)) and not isinstance(v, bool) else "-"


def ratio(a, b):
    """a / b where both are positive numbers, else None."""
    ok = all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in (a, b))
    return a / b if ok else None


def print_table(rows, official):
    print("\n| code | attention | precision | views x size | encode s | render FPS | attention TFLOP/s "
          "| encode: official / this | render: this / official |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    reference = official if official and not official.get("failed") else {}
    for r in rows + ([official] if official else []):
        if r.get("failed"):
            print(f"| {r['code']} | FAILED: {r['failed']} |")
            continue
        enc = ratio(reference.get("encode_s"), r["encode_s"])
        fps = ratio(r["render_fps"], reference.get("render_fps"))
        print(f"| {r['code']} | {r['attention']} | {r['precision']} | {r['views']} x {r['size']}^2 "
              f"| {number(r['encode_s'], '.3f')} | {number(r['render_fps'], '.1f')} "
              f"| {number(r['attention_tflops'], '.3g')} | {number(enc, '.2f')}x | {number(fps, '.2f')}x |")
    if isinstance(reference.get("first_encode_s"), (int, float)):
        print(f"official: first encode (torch.compile's compilation included) {reference['first_encode_s']:.1f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("status", nargs="*")
    a = ap.parse_intermixed_args()  # the status lines come after the options
    print("\n== lact gpu_check ==")
    print(read(os.path.join(a.out, "device.txt")))
    for s in a.status:
        print(s)
    print(read(os.path.join(a.out, "status.txt")))
    print_table(lact_rows(a.out, a.layers, a.dim), official_row(a.out))
    print("targets (issue 51, H200, 48 x 512^2 bf16): encode <= 0.7 s, render >= 60 FPS, >= 2x the official code; "
          "attention >= 350 TFLOP/s through cuDNN, >= 250 through our own kernel")


if __name__ == "__main__":
    main()
