#!/usr/bin/env python3
"""Convert an official LaCT NVS checkpoint (.pt) to safetensors for the C++ engine.

usage: /usr/bin/python3 -m tools.convert_checkpoint CKPT.pt [--config CONFIG] -o OUT.safetensors [--dtype f32]
       /usr/bin/python3 -m tools.convert_checkpoint --lpips BACKBONE.pth LINEAR.pth -o lpips.safetensors

CONFIG is a YAML/JSON file or a built-in name (lact_l24_d768_ttt2x, lact_l24_d768_ttt4x, lact_l14_d768_ttt2x).
Without --config, an official checkpoint of the airsplay/lact_nvs Hugging Face repository is recognised by its
file name (obj_res256.pt, scene_res536x960.pt, ...), and its training size, input view count (scene models) and
kind are recorded in the metadata too (see OFFICIAL_CHECKPOINTS).

Takes ckpt['model'] (or the dict itself), strips the wrapper prefixes 'module.',
'_orig_mod.' and '_checkpoint_wrapped_module.' wherever they occur, keeps tensors only,
checks every key and shape against the model built from the config (exit 2 on mismatch),
and writes F32 safetensors with metadata {'config', 'format', 'source'}.

With --lpips, converts the LPIPS metric's two published files instead (torchvision's alexnet-owt-7be5be79.pth
and the lpips package's weights/v0.1/alex.pth, or vgg16-397923af.pth and vgg.pth; the backbone is told from the
first file) into the one file `lact render --lpips` reads: see tools/lpips_weights.py.
"""
import argparse
import json
import os
import sys

if __package__ in (None, ""):  # run as a script (lact model convert runs it so, from any folder): find tools/
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch

from tools.checkpoint_names import BUILTIN_CONFIGS, builtin_config, official_checkpoint
from tools.lpips_weights import LpipsWeightsError, convert_lpips
from tools.reference import safetensors_io
from tools.reference.lact_reference import LaCTModel, load_config

WRAPPER_PARTS = {"module", "_orig_mod", "_checkpoint_wrapped_module"}
FORMAT = "official LaCT NVS state_dict, fp32"


def strip_key(key):
    """Drop wrapper components (DDP, torch.compile, activation checkpointing) from a key."""
    return ".".join(p for p in key.split(".") if p not in WRAPPER_PARTS)


def load_checkpoint(path):
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except TypeError:  # very old torch without weights_only
        return torch.load(path, map_location="cpu")
    except Exception as exc:  # pickles with non-tensor objects (optimizer state, ...)
        print("note: %s: weights-only load failed (%s); loading the full pickle" %
              (os.path.basename(path), str(exc).splitlines()[0][:120]), file=sys.stderr)
        return torch.load(path, map_location="cpu", weights_only=False)


def extract_state_dict(ckpt):
    sd = ckpt["model"] if isinstance(ckpt, dict) and isinstance(ckpt.get("model"), dict) else ckpt
    if not isinstance(sd, dict):
        raise ValueError("checkpoint holds no state dict")
    out = {}
    for key, val in sd.items():
        if torch.is_tensor(val):
            name = strip_key(key)
            if name in out:
                raise ValueError("key %r appears twice after stripping wrapper prefixes" % name)
            out[name] = val
    return out


def check_against_config(sd, config):
    """Return a list of problems (missing/unexpected keys, wrong shapes)."""
    ref = {k: tuple(v.shape) for k, v in LaCTModel(config).state_dict().items()}
    problems = ["missing key %s (expected shape %s)" % (k, list(ref[k])) for k in ref if k not in sd]
    problems += ["unexpected key %s (shape %s)" % (k, list(sd[k].shape)) for k in sd if k not in ref]
    problems += ["wrong shape for %s: %s, expected %s" % (k, list(sd[k].shape), list(ref[k]))
                 for k in ref if k in sd and tuple(sd[k].shape) != ref[k]]
    return problems


def matching_builtin(sd):
    """The built-in config whose keys and shapes the checkpoint has, or None."""
    for candidate in BUILTIN_CONFIGS:
        if not check_against_config(sd, builtin_config(candidate)):
            return candidate
    return None


def mismatch_summary(name, config_name, problems, sd):
    """One line for a checkpoint that does not fit the config: how many keys are missing, unexpected or of
    another shape, the first problem, and a built-in config it does fit (the usual cause: the wrong --config)."""
    counts = [(sum(p.startswith(kind) for p in problems), label) for kind, label in
              (("missing", "missing"), ("unexpected", "unexpected"), ("wrong shape", "of another shape"))]
    text = "%s does not match config %s: %s key(s); first: %s" % (
        name, config_name, ", ".join("%d %s" % c for c in counts if c[0]), problems[0])
    fits = matching_builtin(sd)
    if fits and fits != config_name:
        text += "; it fits %s (give --config %s)" % (fits, fits)
    else:
        text += "; give the config it was trained with (--config CONFIG.yaml)"
    return text


def resolve_config(ckpt_path, config_arg):
    """(config dict, its name, extra metadata) from --config or, without it, the checkpoint's file name."""
    name = os.path.basename(ckpt_path)
    official = official_checkpoint(name)
    extra = {}
    if official:
        extra = {"kind": official["kind"], "image_size": official["image_size"]}
        if official.get("input_views"):
            extra["input_views"] = str(official["input_views"])
    if config_arg is None:
        if not official:
            raise ValueError("%s is not an official checkpoint name (obj_res256.pt, scene_res536x960.pt, ...): "
                             "give --config CONFIG.yaml or a built-in name (%s)" % (name, ", ".join(BUILTIN_CONFIGS)))
        config_arg = official["config"]
    if config_arg in BUILTIN_CONFIGS:
        return builtin_config(config_arg), config_arg, extra
    return load_config(config_arg), os.path.basename(config_arg), extra


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ckpt", nargs="?", help="official checkpoint (.pt)")
    ap.add_argument("--lpips", nargs=2, metavar=("BACKBONE.pth", "LINEAR.pth"),
                    help="convert LPIPS's weights instead: torchvision's alexnet-owt-7be5be79.pth and the lpips "
                    "package's weights/v0.1/alex.pth, or vgg16-397923af.pth and vgg.pth")
    ap.add_argument("--config", help="official config (.yaml or .json) or a built-in name; default: known from "
                    "an official checkpoint's file name")
    ap.add_argument("-o", "--output", required=True, help="output .safetensors")
    ap.add_argument("--dtype", default="f32", choices=["f32"], help="output dtype (only f32)")
    a = ap.parse_args()
    if a.lpips:
        if a.ckpt or a.config:
            ap.error("--lpips converts the LPIPS weights alone (no checkpoint, no --config)")
        try:
            print(convert_lpips(a.lpips[0], a.lpips[1], a.output))
        except (LpipsWeightsError, OSError) as exc:
            print("convert_checkpoint: %s" % exc, file=sys.stderr)
            return 2
        return 0
    if not a.ckpt:
        ap.error("give a checkpoint (CKPT.pt), or --lpips BACKBONE.pth LINEAR.pth")

    name = os.path.basename(a.ckpt)
    try:
        config, config_name, extra = resolve_config(a.ckpt, a.config)
    except (OSError, ValueError) as exc:
        print("convert_checkpoint: %s" % exc, file=sys.stderr)
        return 2
    try:
        sd = extract_state_dict(load_checkpoint(a.ckpt))
    except Exception as exc:
        print("convert_checkpoint: %s: cannot read checkpoint: %s" % (name, exc), file=sys.stderr)
        return 2
    try:
        problems = check_against_config(sd, config)
    except (ValueError, NotImplementedError, AssertionError, KeyError, TypeError) as exc:
        # The model the config describes cannot be built (an option lact does not implement): one line, no traceback.
        print("convert_checkpoint: config %s: %s" % (config_name, exc), file=sys.stderr)
        return 2
    if problems:
        print("convert_checkpoint: %s" % mismatch_summary(name, config_name, problems, sd), file=sys.stderr)
        return 2
    tensors = {k: v.detach().to(torch.float32) for k, v in sd.items()}
    metadata = {"config": json.dumps(config), "format": FORMAT, "source": name}
    metadata.update(extra)
    safetensors_io.save(a.output, tensors, metadata)
    n = sum(v.numel() for v in tensors.values())
    print("wrote %s: %d tensors, %d parameters (%.1f MB), config %s" % (a.output, len(tensors), n, n * 4 / 1e6,
                                                                       config_name))
    return 0

if __name__ == "__main__":
    sys.exit(main())
