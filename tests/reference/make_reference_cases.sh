#!/usr/bin/env bash
# Generates parity cases with the PyTorch reference (float64) for configs the fixture does not cover.
# Usage: make_reference_cases.sh PYTHON SOURCE_DIR OUT_DIR
set -euo pipefail
python=$1 src=$2 out=$3
export PYTHONPATH="$src${PYTHONPATH:+:$PYTHONPATH}"  # the tools are one package (tools/__init__.py)
mkdir -p "$out"
make_case() { local name=$1; shift; "$python" -m tools.reference.make_case --out "$out/$name" "$@" >/dev/null; }
# several fast-weight heads, the low-rank Newton-Schulz route (few tokens)
make_case heads2 --dim 64 --layers 2 --attn-head-dim 16 --ttt-head-dim 32 --ttt-inter-multi 2 --views-in 2 --views-out 2 --height 16 --width 24 --seed 1
# four heads, inter_multi 4, three layers, tall images
make_case heads4_inter4 --dim 64 --layers 3 --attn-head-dim 32 --ttt-head-dim 16 --ttt-inter-multi 4 --views-in 3 --views-out 1 --height 24 --width 8 --seed 2
# more tokens than the fast-weight side: the dense Newton-Schulz route
make_case many_tokens --dim 32 --layers 2 --attn-head-dim 8 --ttt-head-dim 32 --ttt-inter-multi 2 --mlp-inter-multi 2 --views-in 5 --views-out 3 --height 32 --width 40 --seed 3
# one input view, wide images, inter_multi 1
make_case one_view --dim 48 --layers 1 --attn-head-dim 24 --ttt-head-dim 48 --ttt-inter-multi 1 --views-in 1 --views-out 2 --height 8 --width 40 --seed 4
# Options the fixtures leave at one value, each checked against the authors' own classes (docs/design/parity.md,
# "Configs no fixture covers"): patch 4 without QK norm and Newton-Schulz with 0 steps (Frobenius scaling alone),
# the TTT layer first in the block at odd widths (d_h = int(15 * 0.5) = 7, an MLP of 75), patch 16 with V1 at
# inter_multi 1.5 and one Newton-Schulz step.
make_case patch4_no_qk_norm_ns0 --patch-size 4 --no-qk-norm --muon-steps 0 --base-lr 0.1 --dim 32 --layers 2 --attn-head-dim 16 --ttt-head-dim 16 --ttt-inter-multi 2 --views-in 2 --views-out 1 --height 12 --width 20 --seed 21
make_case ttt_first_odd_dims --order ttt,attn,mlp --dim 30 --layers 2 --attn-head-dim 10 --ttt-head-dim 15 --ttt-inter-multi 0.5 --mlp-inter-multi 2.5 --muon-steps 3 --views-in 2 --views-out 2 --height 16 --width 8 --seed 22
make_case patch16_v1_ns1 --variant v1 --patch-size 16 --dim 32 --layers 2 --attn-head-dim 8 --ttt-head-dim 16 --ttt-inter-multi 1.5 --muon-steps 1 --views-in 1 --views-out 1 --height 32 --width 16 --seed 23
make_case full_attention --full-attention --dim 64 --ttt-head-dim 64 --layers 2 --attn-head-dim 16 --views-in 3 --views-out 2 --height 16 --width 24 --seed 5
# The linear-attention variants (Liu et al. 2026), each as the authors' ttt_loss_type: V1 with weight norm
# and two heads (dense Newton-Schulz: more tokens than d_h), V2 on few tokens (the low-rank route), V3-V6 with
# phi the identity (inter_multi 1), and the authors' two other straight_qk ablations.
make_case variant_v1 --variant v1 --dim 64 --layers 2 --attn-head-dim 16 --ttt-head-dim 32 --ttt-inter-multi 2 --views-in 3 --views-out 2 --height 32 --width 24 --seed 11
make_case variant_v2 --variant v2 --dim 48 --layers 2 --attn-head-dim 16 --ttt-head-dim 48 --ttt-inter-multi 4 --views-in 2 --views-out 2 --height 16 --width 16 --seed 12
make_case variant_v3 --variant v3 --dim 64 --layers 2 --attn-head-dim 32 --ttt-head-dim 32 --views-in 3 --views-out 1 --height 24 --width 16 --seed 13
make_case variant_v4 --variant v4 --dim 32 --layers 3 --attn-head-dim 16 --ttt-head-dim 32 --views-in 2 --views-out 2 --height 16 --width 24 --seed 14
make_case variant_v6 --variant v6 --dim 64 --layers 2 --attn-head-dim 16 --ttt-head-dim 16 --views-in 4 --views-out 2 --height 16 --width 16 --seed 15
make_case variant_straight_qk_wn --variant only_w1_straight_qk --dim 48 --layers 2 --attn-head-dim 24 --ttt-head-dim 48 --views-in 2 --views-out 1 --height 16 --width 32 --seed 16
make_case variant_straight_qk_no_lr1_no_muon --variant only_w1_straight_qk_no_lr1_no_muon --dim 32 --layers 2 --attn-head-dim 16 --ttt-head-dim 16 --views-in 3 --views-out 2 --height 8 --width 16 --seed 17
