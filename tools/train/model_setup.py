"""The model a training run steps: presets and config, the fp32 tokenizer, the initial weights (random, an exported
model's or a checkpoint's config), and the device and precision it runs in."""
import json
import math
import os
import platform

import torch

from tools.reference import safetensors_io
from tools.reference.lact_reference import LaCTModel, with_variant


_COMMON = {"patch": 8, "ttt_inter_multi": 2, "ttt_base_lr": 0.01, "muon_steps": 5, "mlp_inter_multi": 4}
PRESETS = {  # parameters: tiny 1.57M, small 7.73M, medium 22.8M, base 40.4M
    "tiny": dict(_COMMON, dim=128, layers=4, attn_head_dim=32, ttt_head_dim=128),
    "small": dict(_COMMON, dim=256, layers=6, attn_head_dim=64, ttt_head_dim=128),
    "medium": dict(_COMMON, dim=384, layers=8, attn_head_dim=64, ttt_head_dim=192),
    "base": dict(_COMMON, dim=512, layers=8, attn_head_dim=64, ttt_head_dim=256),
}


def _num(x):
    x = float(x)
    return int(x) if x.is_integer() else x


def build_config(a):
    config = {
        "patch_size": a.patch,
        "dim": a.dim,
        "layers": a.layers,
        "block_config": [
            {"type": "model.SelfAttention", "length_dim": "l",
             "params": {"head_dim": a.attn_head_dim, "use_qk_norm": not a.no_qk_norm}},
            {"type": "lact_ttt.FastWeightGluMLPMultihead", "length_dim": "vl",
             "params": {"head_dim": a.ttt_head_dim, "inter_multi": _num(a.ttt_inter_multi),
                        "base_lr": a.ttt_base_lr, "muon_update_steps": a.muon_steps}},
            {"type": "model.MLP", "length_dim": "vl", "params": {"inter_multi": _num(a.mlp_inter_multi)}},
        ],
    }
    return with_variant(config, a.variant) if a.variant else config


class LaCTTrainModel(LaCTModel):
    """The reference model with its tokenizer (rays: einsum, cross, norms) kept in fp32 under
    autocast: CUDA autocast would run the einsum in bf16 and then fail in torch.cross on
    mixed dtypes, and bf16 rays lose precision. Same parameters and state-dict keys."""

    def tokenize(self, images, fxfycxcy, c2w, h, w):
        with torch.autocast(device_type=self.input_linear.weight.device.type, enabled=False):
            return super().tokenize(images, fxfycxcy, c2w, h, w)


def init_weights(model, seed):
    """GPT-style init: Linear N(0, 0.02), residual output projections scaled by
    1/sqrt(2 * residual branches), lr_fc small; fast weights keep the reference init."""
    gen = torch.Generator().manual_seed(seed)
    n_branches = sum(len(b.module_list) for b in model.blocks)
    with torch.no_grad():
        for name, p in model.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            if p.dim() == 1:
                if name.endswith("lr_fc.bias"):
                    p.zero_()
                else:
                    p.fill_(1.0)
            elif leaf in ("w0", "w2"):
                p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[1]))
            elif leaf == "w1":
                p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[1]))
            elif name.endswith("c_proj.weight"):
                p.copy_(torch.randn(p.shape, generator=gen) * (0.02 / math.sqrt(2 * n_branches)))
            elif "lr_fc" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.002)
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)


class Precision:
    """bf16 autocast or fp32; calling it gives the context the forward runs in."""

    def __init__(self, device, bf16):
        self.device, self.bf16 = device, bf16

    @property
    def name(self):
        return "bf16" if self.bf16 else "fp32"

    def __call__(self):
        if self.bf16:
            return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)
        return torch.autocast(device_type="cpu", enabled=False)


def setup_device(a):
    """-> device, deterministic, Precision; sets the thread count, deterministic algorithms and TF32."""
    if a.device == "auto":
        a.device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(a.device)
    if a.threads:
        torch.set_num_threads(a.threads)
    deterministic = a.deterministic == "yes" or (a.deterministic == "auto" and device.type == "cpu")
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True) if device.type == "cuda" else \
            torch.use_deterministic_algorithms(True)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return device, deterministic, Precision(device, a.amp == "bf16" or (a.amp == "auto" and device.type == "cuda"))


def make_model(a, resume, device, say):
    """-> model, config: a checkpoint's, an exported model's (--init, weights too), --config's or the flags'."""
    init = None
    if resume is None and a.init:  # continue from an exported model (weights only, fresh optimiser)
        init, init_meta = safetensors_io.load(a.init)
        config = json.loads(init_meta["config"])
        say("initialising from %s" % a.init)
    if resume is not None:
        config = resume["config"]
    elif init is not None and a.variant:  # e.g. a baseline model continued as V1 or V2 (same tensors)
        config = with_variant(config, a.variant)
    elif a.config:
        with open(a.config) as f:
            config = json.load(f)
        if a.variant:
            config = with_variant(config, a.variant)
    else:
        config = build_config(a)
    if resume is not None and not a.config and config != build_config(a):
        say("note: model flags differ from the checkpoint; using the checkpoint's config")
    model = LaCTTrainModel(config)
    init_weights(model, a.seed)
    if init is not None:
        model.load_state_dict(init, strict=True)
    if a.ns_dtype:
        model.ns_dtype = a.ns_dtype
    return model.to(device), config


def hardware_line(device, world):
    what = torch.cuda.get_device_name(device) if device.type == "cuda" else \
        "CPU %s x%d (torch threads %d, %d rank%s)" % (platform.processor() or platform.machine(), os.cpu_count() or 0,
                                                     torch.get_num_threads(), world, "s" if world > 1 else "")
    return "%s; torch %s" % (what, torch.__version__)
