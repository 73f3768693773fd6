#!/usr/bin/env python3
"""Check the PyTorch reference against the official-code parity fixture (lact_tiny).

Runs the reference in float64 and float32 on the fixture inputs and prints, per tensor,
the max-abs error (rendered images) or relative Frobenius error (tokens, fast weights).
Exit status 1 if any fp32/fp64 error exceeds 1e-4, or the bf16-Newton-Schulz render
differs from the official one by more than 3e-2.

usage: /usr/bin/python3 -m tools.reference.check_fixture [--fixture DIR]
"""
import argparse
import os
import sys

import torch

from tools.reference import safetensors_io
from tools.reference.lact_reference import LaCTModel

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TOL = 1e-4
TOL_BF16 = 3e-2


def max_abs(a, b):
    return (a.double() - b.double()).abs().max().item()


def rel_fro(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30)).item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fixture", default=os.path.join(REPO, "..", "shared", "fixtures", "lact_tiny"))
    args = ap.parse_args()
    torch.manual_seed(0)

    exp, meta = safetensors_io.load(os.path.join(args.fixture, "expected.safetensors"))
    h, w = int(meta.get("h", exp["input_images"].shape[-2])), int(meta.get("w", exp["input_images"].shape[-1]))
    base = LaCTModel.from_safetensors(os.path.join(args.fixture, "model.safetensors"))
    inputs = {k: exp[k].unsqueeze(0) for k in
              ("input_images", "input_fxfycxcy", "input_c2w", "target_fxfycxcy", "target_c2w")}
    failures = []

    def report(name, err, tol):
        ok = err <= tol
        print("%-8s %-44s %.3e  (tol %.0e)%s" % (tag, name, err, tol, "" if ok else "  FAIL"))
        if not ok:
            failures.append("%s %s" % (tag, name))

    for tag, dtype in (("fp64", torch.float64), ("fp32", torch.float32)):
        model = base.to(dtype)
        inp = {k: v.to(dtype) for k, v in inputs.items()}
        with torch.no_grad():
            trace = {}
            states = model.encode(inp["input_images"], inp["input_fxfycxcy"], inp["input_c2w"], trace=trace)
            rend = model.render(states, inp["target_fxfycxcy"], inp["target_c2w"], h, w)[0]
            fwd = model(**inp)[0]
        report("target_render_rendering (max abs)", max_abs(rend, exp["target_render_rendering"]), TOL)
        if "target_render_forward" in exp:
            report("target_render_forward (max abs)", max_abs(fwd, exp["target_render_forward"]), TOL)
        names = ["encode_tokens_after_input_layernorm"] + sorted(
            k for k in exp if k.startswith("encode_block"))
        for name in names:
            if name not in trace:
                report(name + " (missing in trace)", float("inf"), TOL)
                continue
            report(name + " (rel fro)", rel_fro(trace[name], exp[name]), TOL)

    if "target_render_official_bf16_ns" in exp:
        tag = "bf16-ns"
        model = base.to(torch.float32)
        model.ns_dtype = "bf16"
        with torch.no_grad():
            fwd = model(**{k: v.float() for k, v in inputs.items()})[0]
        report("target_render_official_bf16_ns (max abs)", max_abs(fwd, exp["target_render_official_bf16_ns"]),
               TOL_BF16)
        model.ns_dtype = None

    if failures:
        print("FAILED: %d check(s): %s" % (len(failures), ", ".join(failures)))
        return 1
    print("OK: reference matches the fixture")
    return 0


if __name__ == "__main__":
    sys.exit(main())
