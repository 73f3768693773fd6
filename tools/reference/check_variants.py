#!/usr/bin/env python3
"""The reference's TTT updates against autograd, in float64, for the baseline and every variant.

The reference writes each update by hand: the baseline's inner backward, the variants' linear-attention form
W1' = [wn](W1 + [NS](phi(K)^T diag(eta) V)). Here the same updates are taken as the authors' code defines
them, by differentiating the inner loss L = -sum_i eta_i <f(k_i), v_i> with torch.autograd (one loss per
weight, each with its own per-token rate) and stepping W - NS(dL/dW). That the two agree to float64 rounding
is Theorem 5.1 of Liu et al. 2026 (the update is a linear attention), checked in an independent way. Also
checks that the reduction over two halves of the tokens is exact for the variants whose state is a plain sum.

usage: /usr/bin/python3 -m tools.reference.check_variants
"""
import argparse
import sys

import torch

from tools.reference.lact_reference import TTT_VARIANTS, FastWeightGluMLPMultihead, newton_schulz5


def autograd_step(unit, weights, k, v, lr):
    """The inner loss's gradient step through autograd: W - NS(dL/dW), weight norm where the variant has it."""
    updated = []
    names = ("w1",) if unit.only_w1 else ("w0", "w1", "w2")
    for index, name in enumerate(("w0", "w1", "w2")):
        w = weights[index]
        if name not in names:
            updated.append(w)
            continue
        leaves = [x.detach().clone().requires_grad_(i == index) for i, x in enumerate(weights)]
        f = unit.apply_weights(tuple(leaves), k)  # f(k) = phi(k) W1
        eta = lr[index] if (unit.lr1 or not unit.only_w1) else torch.ones_like(lr[index])
        loss = -(eta * (f * v).sum(-1, keepdim=True)).sum()
        (grad,) = torch.autograd.grad(loss, [leaves[index]])
        if unit.muon:
            grad = newton_schulz5(grad, unit.muon_update_steps)
        w_new = w - grad
        if unit.weight_norm:
            w_new = w_new / (w_new.norm(dim=1, keepdim=True) + 1e-5) * w.norm(dim=1, keepdim=True)
        updated.append(w_new)
    return tuple(updated)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.parse_args()
    torch.manual_seed(0)
    failures = []
    for key, flags in TTT_VARIANTS.items():
        straight = flags[1]
        unit = FastWeightGluMLPMultihead(48, 24, inter_multi=1 if straight else 2, muon_update_steps=5,
                                         ttt_loss_type=key).double()
        b, n = 2, 37
        k = torch.nn.functional.normalize(torch.randn(b * unit.heads, n, 24, dtype=torch.float64), dim=-1)
        v = torch.randn(b * unit.heads, n, 24, dtype=torch.float64)
        lr = torch.rand(3, b * unit.heads, n, 1, dtype=torch.float64) * 0.1
        weights = unit.initial_weights(b)
        with torch.no_grad():
            by_hand = unit.update(weights, k, v, lr)
        by_autograd = autograd_step(unit, weights, k, v, lr)
        err = max(((x - y).norm() / y.norm()).item() for x, y in zip(by_hand, by_autograd))
        changed = min((x - w).norm().item() for x, w, keep in zip(by_hand, weights, (not unit.only_w1, True, not unit.only_w1)) if keep)
        ok = err < 1e-10 and changed > 1e-3
        print("%-40s by hand vs autograd: rel err %.2e (update size %.3g)%s" % (key, err, changed, "" if ok else "  FAIL"))
        if not ok:
            failures.append(key)
        if flags[0] and not flags[3]:  # a plain sum: the reduction over two halves of the tokens is exact
            with torch.no_grad():
                features = unit.phi(k, weights) * (lr[1] if unit.lr1 else 1)
                half = n // 2
                partial = features[:, :half].transpose(-1, -2) @ v[:, :half] + \
                    features[:, half:].transpose(-1, -2) @ v[:, half:]
                if unit.muon:
                    partial = newton_schulz5(partial, unit.muon_update_steps)
                split = ((weights[1] + partial - by_hand[1]).norm() / by_hand[1].norm()).item()
            print("%-40s split reduction vs one pass: rel err %.2e" % ("", split))
            if split > 1e-12:
                failures.append(key + " split")
    if failures:
        print("FAILED: " + ", ".join(failures))
        sys.exit(1)
    print("OK: every update equals the inner loss's autograd gradient step")


if __name__ == "__main__":
    main()
