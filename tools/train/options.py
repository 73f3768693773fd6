"""train.py's command line: data, model (a preset and overrides), optimisation and run flags."""
import argparse

from tools.reference.lact_reference import TTT_VARIANTS, VARIANT_PRESETS
from tools.train.model_setup import PRESETS


def add_run_args(g):
    """The "run" flags: output, device, processes, limits, checkpoints, validation cadence."""
    g.add_argument("--out", required=True)
    g.add_argument("--device", default="auto", help="auto / cpu / cuda")
    g.add_argument("--amp", choices=("auto", "bf16", "none"), default="auto", help="auto: bf16 on CUDA")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--ranks", type=int, default=1,
                   help="CPU data parallelism: split each step's --batch over this many processes of --threads "
                        "threads each (gloo on loopback; the same steps as one process, sooner). Rank 0 "
                        "validates, logs and checkpoints; resuming with another --ranks continues the same run")
    g.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default). More threads than idle cores "
                   "is very slow (OpenMP spin-waits): on a shared machine keep 1")
    g.add_argument("--deterministic", choices=("auto", "yes", "no"), default="auto", help="auto: yes on CPU")
    g.add_argument("--max-minutes", type=float, default=0,
                   help="wall limit of this process (from its start, data loading included): "
                        "stop in time to validate and save, then exit 0")
    g.add_argument("--ckpt-every", type=int, default=200, help="steps (0: off)")
    g.add_argument("--ckpt-every-minutes", type=float, default=0, help="also save every this many minutes")
    g.add_argument("--val-every", type=int, default=200, help="steps (0: off)")
    g.add_argument("--val-every-minutes", type=float, default=0, help="also validate every this many minutes")
    g.add_argument("--log-every", type=int, default=1)
    g.add_argument("--fresh", action="store_true", help="ignore an existing checkpoint in --out")
    g.add_argument("--no-preview", action="store_true")
    g.add_argument("--compile", action="store_true", help="torch.compile the model (torch 2.x)")


def parse_args(description, argv=None):
    """-> the parsed flags, the --preset filling the model flags not given; `description` heads --help."""
    ap = argparse.ArgumentParser(description=description,
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    g = ap.add_argument_group("data")
    g.add_argument("--data", nargs="+", required=True, help="shards / LaCT layouts / synthetic:...")
    g.add_argument("--val-data", nargs="*", default=None)
    g.add_argument("--val-objects", type=int, default=8, help="held out from --data when no --val-data")
    g.add_argument("--val-extra", nargs="*", default=[], metavar="NAME=PATH",
                   help="extra validation sets, logged as val_NAME")
    g.add_argument("--val-real", default=None, help="a real object (LaCT layout) validated on fixed views")
    g.add_argument("--val-real-inputs", default="16,20,24,28,34,38,42,46")
    g.add_argument("--val-real-targets", default="2,10,18,26,32,40,50,58")
    g.add_argument("--size", type=int, default=64, help="working image size (H = W)")
    g.add_argument("--n-input", type=int, default=8)
    g.add_argument("--n-target-min", type=int, default=4)
    g.add_argument("--n-target-max", type=int, default=8)
    g.add_argument("--val-targets", type=int, default=4, help="target views per validation object")
    g.add_argument("--data-on-device", choices=("auto", "yes", "no"), default="auto")
    g.add_argument("--bg-random", type=float, default=0.5,
                   help="fraction of training objects composited onto a random colour instead of white "
                        "(same colour for an object's inputs and targets; validation is always on white). "
                        "Keeps the model from settling on a constant near-white image early on")
    g = ap.add_argument_group("model (a --preset, then any flag given overrides it)")
    g.add_argument("--preset", choices=sorted(PRESETS), default="small")
    g.add_argument("--init", help="start from this exported model (.safetensors; its config wins) instead of "
                                  "random weights; a checkpoint in --out still takes precedence")
    g.add_argument("--config", help="model config JSON (overrides the preset and size flags)")
    g.add_argument("--variant", choices=sorted(VARIANT_PRESETS) + sorted(TTT_VARIANTS),
                   help="TTT variant (Liu et al. 2026): baseline, v1..v4, v6 or the authors' ttt_loss_type; "
                        "the straight_qk ones (v3-v6) use inter_multi 1")
    g.add_argument("--dim", type=int)
    g.add_argument("--layers", type=int)
    g.add_argument("--patch", type=int)
    g.add_argument("--attn-head-dim", type=int)
    g.add_argument("--ttt-head-dim", type=int)
    g.add_argument("--ttt-inter-multi", type=float)
    g.add_argument("--ttt-base-lr", type=float)
    g.add_argument("--muon-steps", type=int)
    g.add_argument("--mlp-inter-multi", type=float)
    g.add_argument("--no-qk-norm", action="store_true")
    g.add_argument("--ns-dtype", default=None, help="Newton-Schulz dtype (bf16/fp32); default: model default")
    g = ap.add_argument_group("optimisation")
    g.add_argument("--batch", type=int, default=2)
    g.add_argument("--lr", type=float, default=4e-4)
    g.add_argument("--min-lr-ratio", type=float, default=0.1)
    g.add_argument("--warmup", type=int, default=100)
    g.add_argument("--steps", type=int, default=20000, help="total steps (cosine horizon unless --time-schedule)")
    g.add_argument("--weight-decay", type=float, default=0.05)
    g.add_argument("--beta1", type=float, default=0.9)
    g.add_argument("--beta2", type=float, default=0.95)
    g.add_argument("--clip", type=float, default=1.0)
    g.add_argument("--skip-grad-norm", type=float, default=0.0,
                   help="skip the update when the grad norm exceeds this (0: never; paper: 4 after step 1000)")
    g.add_argument("--skip-after", type=int, default=1000)
    g.add_argument("--ssim-weight", type=float, default=0.1)
    g.add_argument("--time-schedule", action="store_true", help="cosine over --max-minutes of wall time")
    add_run_args(ap.add_argument_group("run"))
    a = ap.parse_args(argv)
    for k, v in PRESETS[a.preset].items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    return a
