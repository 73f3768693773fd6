#!/usr/bin/env python3
"""PyTorch reference of the LaCT novel-view-synthesis model (inference and training paths).

Written from shared/research/lact_nvs_spec.md (the project's shared folder, ../shared beside the checkout). The module tree and parameter names
match the official `lact_nvs` state_dict exactly, so official checkpoints load with
strict=True. Runs on torch 1.13 and torch 2.x, in float32 or float64 (`model.double()`),
and autograd works through every path (for a trainer).

Entry points:
  LaCTModel(config)                  config dict as in the official YAML
  LaCTModel.from_safetensors(path)   config from metadata['config'] (JSON)
  model(input_images, input_fxfycxcy, input_c2w, target_fxfycxcy, target_c2w) -> [b,vt,3,H,W]
  model.encode(input_images, input_fxfycxcy, input_c2w, trace=None) -> states
  model.render(states, target_fxfycxcy, target_c2w, H, W) -> [b,vt,3,H,W]
  load_config(path)                  official YAML (or JSON) config file
"""
import json
import math
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from tools.reference import safetensors_io

# nn.RMSNorm(eps=None) uses finfo(dtype).eps; the official model runs fp32. We use the fp32
# value in every dtype (also float64) so a float64 run reproduces the fp32 model.
QK_NORM_EPS = float(torch.finfo(torch.float32).eps)  # 1.1920929e-07
NS_COEFFS = (3.4445, -4.7750, 2.0315)

ATTN_TYPES = ("model.SelfAttention", "SelfAttention")
TTT_TYPES = ("lact_ttt.FastWeightGluMLPMultihead", "FastWeightGluMLPMultihead")
MLP_TYPES = ("model.MLP", "MLP")
GLOBAL_TYPES = ("lact.GlobalAttention", "GlobalAttention")

# The TTT variants of "Test-Time Training with KV Binding Is Secretly Linear Attention" (Liu et al. 2026), keyed
# by the authors' params.ttt_loss_type (JunchenLiu77/LaCT, branch ablation, lact_nvs/_lact_ttt/<key>.py):
# (only_w1, straight_qk, lr1, weight_norm, muon) -- which weights update, phi = SwiGLU hidden or identity,
# the per-token rate or 1, weight norm after the update, Newton-Schulz on it.
TTT_VARIANTS = {
    "dot_product": (False, False, True, True, True),
    "only_w1": (True, False, True, True, True),
    "only_w1_no_wn": (True, False, True, False, True),
    "only_w1_straight_qk": (True, True, True, True, True),
    "only_w1_straight_qk_no_wn": (True, True, True, False, True),
    "only_w1_straight_qk_no_lr1": (True, True, False, True, True),
    "only_w1_straight_qk_no_lr1_no_wn": (True, True, False, False, True),
    "only_w1_straight_qk_no_lr1_no_muon": (True, True, False, True, False),
    "only_w1_straight_qk_no_lr1_no_wn_muon": (True, True, False, False, False),
}
# The paper's names for them (V5 is V4 for NVS, which has no momentum).
VARIANT_PRESETS = {"baseline": "dot_product", "v1": "only_w1", "v2": "only_w1_no_wn",
                   "v3": "only_w1_straight_qk_no_wn", "v4": "only_w1_straight_qk_no_lr1_no_wn",
                   "v6": "only_w1_straight_qk_no_lr1_no_wn_muon"}


def variant_key(name):
    """The authors' ttt_loss_type for a preset (baseline, v1..v4, v6) or a key."""
    key = VARIANT_PRESETS.get(name, name)
    if key not in TTT_VARIANTS:
        raise ValueError("unknown TTT variant %r (presets %s; keys %s)" % (
            name, ", ".join(VARIANT_PRESETS), ", ".join(TTT_VARIANTS)))
    return key


def with_variant(config, name):
    """A copy of config with every TTT module switched to a variant (straight_qk ones get inter_multi 1,
    as the authors' code needs: their W1 is [D, D])."""
    key = variant_key(name)
    config = json.loads(json.dumps(config))
    for spec in config["block_config"]:
        if spec["type"] in TTT_TYPES:
            spec.setdefault("params", {})["ttt_loss_type"] = key
            if TTT_VARIANTS[key][1]:
                spec["params"]["inter_multi"] = 1
    return config


def load_config(path):
    """Read an official LaCT NVS config (YAML; JSON is accepted too)."""
    with open(path, "r") as f:
        text = f.read()
    try:
        import yaml
        cfg = yaml.safe_load(text)
    except ImportError:
        cfg = json.loads(text)
    if not isinstance(cfg, dict):
        raise ValueError("%s: config is not a mapping" % path)
    if "block_config" not in cfg and isinstance(cfg.get("model"), dict):
        cfg = cfg["model"]
    for key in ("patch_size", "dim", "layers", "block_config"):
        if key not in cfg:
            raise ValueError("%s: config lacks %r" % (path, key))
    return cfg


def inv_softplus(x):
    """Inverse of softplus for a python float: x + log(-expm1(-x))."""
    return x + math.log(-math.expm1(-x))


# ----------------------------------------------------------------------------- norms
class LayerNorm(nn.Module):
    """LayerNorm with a learnable weight and no bias (eps 1e-5)."""

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.layer_norm(x, (self.dim,), self.weight, None, self.eps)


class RMSNorm(nn.Module):
    """x * rsqrt(mean(x^2) + eps) * weight over the last dim."""

    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


# ----------------------------------------------------------------------------- sub-layers
class SelfAttention(nn.Module):
    """Multi-head bidirectional attention (to_qkv -> QK RMSNorm -> SDPA -> c_proj)."""

    def __init__(self, dim, head_dim=64, use_qk_norm=False, **unused):
        super().__init__()
        if unused:
            warnings.warn("SelfAttention: ignoring params %s" % sorted(unused))
        assert dim % head_dim == 0, "dim must be a multiple of head_dim"
        self.dim, self.head_dim, self.heads = dim, head_dim, dim // head_dim
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.c_proj = nn.Linear(dim, dim, bias=False)
        self.use_qk_norm = use_qk_norm
        if use_qk_norm:
            self.q_norm = RMSNorm(head_dim, eps=QK_NORM_EPS)
            self.k_norm = RMSNorm(head_dim, eps=QK_NORM_EPS)

    def forward(self, x):
        b, n, _ = x.shape
        qkv = self.to_qkv(x).view(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # [b, heads, n, head_dim]
        if self.use_qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        sdpa = getattr(F, "scaled_dot_product_attention", None)
        if sdpa is not None:
            o = sdpa(q, k, v)  # default scale 1/sqrt(head_dim)
        else:
            att = torch.softmax((q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim), dim=-1)
            o = att @ v
        o = o.permute(0, 2, 1, 3).reshape(b, n, self.dim)
        return self.c_proj(o)


def _attend(q, k, v):
    """softmax(q k^T / sqrt(d)) v over the last two dims."""
    att = torch.softmax((q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1]), dim=-1)
    return att @ v


class GlobalAttention(SelfAttention):
    """The paper's full-attention baseline in place of the TTT layer (lact_nvs_spec.md 10.1).

    Input tokens attend to every input token (bidirectional); each target view's tokens attend to every input
    token and to their own view. The input tokens' keys and values (after QK-norm) are the scene state.
    forward(x, n_inputs, per_view, cache) -> (out, (k_in, v_in)) with k_in, v_in [b*heads, n_in, head_dim];
    with a cache every token of x is a target token.
    """

    def forward(self, x, n_inputs=0, per_view=None, cache=None):
        b, n, _ = x.shape
        qkv = self.to_qkv(x).view(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # [b, heads, n, head_dim]
        if self.use_qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        if cache is None:
            k_in, v_in = k[:, :, :n_inputs], v[:, :, :n_inputs]
        else:
            k_in, v_in = (t.reshape(b, self.heads, -1, self.head_dim) for t in cache)
            n_inputs = 0
        outs = [_attend(q[:, :, :n_inputs], k_in, v_in)] if n_inputs else []
        for s in range(n_inputs, n, per_view):
            e = s + per_view
            outs.append(_attend(q[:, :, s:e], torch.cat([k_in, k[:, :, s:e]], dim=2),
                                torch.cat([v_in, v[:, :, s:e]], dim=2)))
        o = torch.cat(outs, dim=2).permute(0, 2, 1, 3).reshape(b, n, self.dim)
        flat = (k_in.reshape(b * self.heads, -1, self.head_dim), v_in.reshape(b * self.heads, -1, self.head_dim))
        return self.c_proj(o), flat


class MLP(nn.Module):
    """c_fc -> exact GELU -> c_proj, no biases."""

    def __init__(self, dim, inter_multi=4, **unused):
        super().__init__()
        if unused:
            warnings.warn("MLP: ignoring params %s" % sorted(unused))
        hidden = int(dim * inter_multi)
        self.c_fc = nn.Linear(dim, hidden, bias=False)
        self.c_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


def newton_schulz5(g, steps, dtype=None):
    """Muon orthogonalisation of a batch [B, m, n] with the fixed NVS coefficients.

    dtype=None computes in g's dtype; torch.bfloat16 mimics the official code (result stays
    in that dtype). Works on the smaller Gram side; Frobenius-normalises first.
    """
    a, b, c = NS_COEFFS
    x = g if dtype is None else g.to(dtype)
    transpose = x.shape[-2] > x.shape[-1]
    if transpose:
        x = x.transpose(-1, -2)
    x = x / (x.norm(dim=(-2, -1), keepdim=True) + 1e-7)
    for _ in range(steps):
        gram = _matmul(x, x.transpose(-1, -2))
        poly = b * gram + c * _matmul(gram, gram)
        x = a * x + _matmul(poly, x)
    if transpose:
        x = x.transpose(-1, -2)
    return x


def _matmul(p, q):
    """p @ q. In bf16 on the CPU as the official code's GPU computes it (bf16 operands, float32 sums, the result
    rounded to bf16), not with the CPU's own bf16 product, whose sums differ by machine and thread count (on an
    AVX2 CPU they moved the fixture's bf16 render from the official one by 3.1e-2 to 3.4e-2 with 1 and 2
    threads; this way 1.7e-2 to 1.8e-2, closer than the float32 reference's 2.1e-2). On a GPU: its own product."""
    if p.dtype == torch.bfloat16 and p.device.type == "cpu":
        return (p.float() @ q.float()).to(torch.bfloat16)
    return p @ q


def _ns_torch_dtype(ns_dtype):
    if ns_dtype in (None, "none", "compute"):
        return None
    if ns_dtype in ("bf16", "bfloat16", torch.bfloat16):
        return torch.bfloat16
    if ns_dtype in ("fp32", "f32", "float32", torch.float32):
        return torch.float32
    if ns_dtype in ("fp64", "f64", "float64", torch.float64):
        return torch.float64
    raise ValueError("unknown ns_dtype %r" % (ns_dtype,))


class FastWeightGluMLPMultihead(nn.Module):
    """Large-chunk TTT layer: SwiGLU fast weights per head, Muon update, L2 weight norm.

    forward(x, n_update, weights) -> (out, weights_after_update)
      x        [b, L, dim]   (already layer-normed)
      n_update update the fast weights with tokens [0, n_update) (0/None: no update)
      weights  None (start from the learned w0/w1/w2) or (w0, w1, w2) each [b*H, ...]
    The output applies the (updated) weights to all L tokens.
    """

    def __init__(self, dim, head_dim, inter_multi=1, base_lr=0.01, muon_update_steps=0,
                 ttt_loss_type="dot_product", grad_calc_method="mannual", no_query=False, use_fused=False,
                 **unused):
        super().__init__()
        if unused:
            warnings.warn("FastWeightGluMLPMultihead: ignoring params %s" % sorted(unused))
        assert dim % head_dim == 0, "dim must be a multiple of head_dim"
        if ttt_loss_type not in TTT_VARIANTS:
            raise NotImplementedError("ttt_loss_type %r (known: %s)" % (ttt_loss_type, ", ".join(TTT_VARIANTS)))
        if grad_calc_method != "mannual":
            raise NotImplementedError("grad_calc_method %r (only the authors' 'mannual')" % (grad_calc_method,))
        if no_query:
            raise NotImplementedError("no_query (keys in place of queries)")
        if use_fused and ttt_loss_type != "dot_product":  # the fused path weight-norms W1 even for *_no_wn
            raise NotImplementedError("use_fused with ttt_loss_type %r" % (ttt_loss_type,))
        self.ttt_loss_type = ttt_loss_type
        self.only_w1, self.straight_qk, self.lr1, self.weight_norm, self.muon = TTT_VARIANTS[ttt_loss_type]
        if self.straight_qk and inter_multi != 1:
            raise ValueError("%s needs inter_multi 1 (q [.., D] times W1 [d_h, D])" % ttt_loss_type)
        self.dim, self.head_dim, self.heads = dim, head_dim, dim // head_dim
        self.hidden = int(head_dim * inter_multi)
        h, d, dh = self.heads, head_dim, self.hidden
        self.w0 = nn.Parameter(torch.randn(h, d, dh) / math.sqrt(d))
        self.w1 = nn.Parameter(torch.randn(h, dh, d) / math.sqrt(dh))
        self.w2 = nn.Parameter(torch.randn(h, d, dh) / math.sqrt(d))
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.c_proj = nn.Linear(dim, dim, bias=False)
        self.lr_fc = nn.Linear(dim, 3 * h)
        self.o_norm = RMSNorm(head_dim, eps=1e-5)
        self.base_lr_inv = inv_softplus(base_lr)
        self.muon_update_steps = int(muon_update_steps)
        self.ns_dtype = None

    def initial_weights(self, b):
        """The learned fast weights repeated over the batch: [b*H, ...] each."""
        return tuple(w.unsqueeze(0).expand(b, *w.shape).reshape(b * w.shape[0], *w.shape[1:])
                     for w in (self.w0, self.w1, self.w2))

    def _split_heads(self, t, b, n):
        # [b, n, h*d] -> [b*h, n, d]
        return t.view(b, n, self.heads, self.head_dim).transpose(1, 2).reshape(
            b * self.heads, n, self.head_dim)

    def phi(self, x, weights):
        """The kernel of the linear-attention form: silu(x W0) * (x W2), or x for straight_qk."""
        w0, _, w2 = weights
        return x if self.straight_qk else F.silu(x @ w0) * (x @ w2)

    def update_w1(self, weights, k, v, lr):
        """A variant's update, the linear-attention form: W1' = [wn](W1 + [NS](phi(K)^T diag(eta) V))."""
        w0, w1, w2 = weights
        features = self.phi(k, weights)
        if self.lr1:
            features = features * lr[1]
        dw1 = features.transpose(-1, -2) @ v
        if self.muon:
            dw1 = newton_schulz5(dw1, self.muon_update_steps, _ns_torch_dtype(self.ns_dtype))
        w1_new = w1 + dw1
        if self.weight_norm:
            w1_new = w1_new / (w1_new.norm(dim=1, keepdim=True) + 1e-5) * w1.detach().norm(dim=1, keepdim=True)
        return w0, w1_new, w2

    def update(self, weights, k, v, lr):
        """One TTT step on keys k, values v [B, n, D] with lr [3, B, n, 1]."""
        if self.only_w1:
            return self.update_w1(weights, k, v, lr)
        w0, w1, w2 = weights
        gate = k @ w0
        hb = k @ w2
        sig = torch.sigmoid(gate)
        silu_gate = gate * sig
        hid = silu_gate * hb
        dhid = v @ w1.transpose(-1, -2)
        dhb = dhid * silu_gate
        dgate = dhid * hb * sig * (1 + gate * (1 - sig))
        dw1 = (hid * lr[1]).transpose(-1, -2) @ v
        dw0 = (k * lr[0]).transpose(-1, -2) @ dgate
        dw2 = (k * lr[2]).transpose(-1, -2) @ dhb
        ns = _ns_torch_dtype(self.ns_dtype)
        new = []
        for w, dw in ((w0, dw0), (w1, dw1), (w2, dw2)):
            dw = newton_schulz5(dw, self.muon_update_steps, ns)
            target_norm = w.detach().norm(dim=1, keepdim=True)
            w_new = w + dw
            w_new = w_new / (w_new.norm(dim=1, keepdim=True) + 1e-5) * target_norm
            new.append(w_new)
        return tuple(new)

    def apply_weights(self, weights, q):
        return self.phi(q, weights) @ weights[1]

    def forward(self, x, n_update=None, weights=None):
        b, n, _ = x.shape
        if weights is None:
            weights = self.initial_weights(b)
        qkv = F.silu(self.to_qkv(x))
        q, k, v = qkv.split(self.dim, dim=-1)
        q = self._split_heads(q, b, n)
        q = q / (q.norm(dim=-1, keepdim=True) + 1e-5)
        if n_update:
            m = n_update
            k = self._split_heads(k[:, :m], b, m)
            k = k / (k.norm(dim=-1, keepdim=True) + 1e-5)
            v = self._split_heads(v[:, :m], b, m)
            lr = F.softplus(self.lr_fc(x[:, :m]) + self.base_lr_inv)  # [b, m, 3*h], '(lrs h d)'
            lr = lr.view(b, m, 3, self.heads).permute(2, 0, 3, 1).reshape(3, b * self.heads, m, 1)
            weights = self.update(weights, k, v, lr)
        o = self.o_norm(self.apply_weights(weights, q))  # [b*h, n, d]
        o = o.view(b, self.heads, n, self.head_dim).transpose(1, 2).reshape(b, n, self.dim)
        return self.c_proj(o), weights


# ----------------------------------------------------------------------------- model
class PreNormResidual(nn.Module):
    """x + f(ln(x)); holds the official `ln` / `f` children."""

    def __init__(self, dim, f, kind, length_dim):
        super().__init__()
        self.ln = LayerNorm(dim)
        self.f = f
        self.kind = kind
        self.length_dim = length_dim


class Block(nn.Module):
    def __init__(self, dim, block_config):
        super().__init__()
        units = []
        for spec in block_config:
            typ, params = spec["type"], dict(spec.get("params") or {})
            length_dim = spec.get("length_dim", "vl")
            if typ in ATTN_TYPES:
                units.append(PreNormResidual(dim, SelfAttention(dim, **params), "attn", length_dim))
            elif typ in TTT_TYPES:
                if length_dim != "vl":
                    raise NotImplementedError("TTT layer with length_dim %r" % length_dim)
                units.append(PreNormResidual(dim, FastWeightGluMLPMultihead(dim, **params),
                                             "ttt", length_dim))
            elif typ in GLOBAL_TYPES:
                units.append(PreNormResidual(dim, GlobalAttention(dim, **params), "global", length_dim))
            elif typ in MLP_TYPES:
                units.append(PreNormResidual(dim, MLP(dim, **params), "mlp", length_dim))
            else:
                raise ValueError("unknown block type %r" % typ)
            if length_dim not in ("l", "vl"):
                raise ValueError("unknown length_dim %r" % length_dim)
        self.module_list = nn.ModuleList(units)


def compute_rays(fxfycxcy, c2w, h, w):
    """Per-pixel rays, OpenCV camera, pixel centres. Returns o, d, o x d each [b, v, 3, H, W]."""
    dtype, dev = c2w.dtype, c2w.device
    ys, xs = torch.meshgrid(torch.arange(h, dtype=dtype, device=dev),
                            torch.arange(w, dtype=dtype, device=dev), indexing="ij")
    fx, fy, cx, cy = [fxfycxcy[..., i, None, None] for i in range(4)]  # [b, v, 1, 1]
    x = (xs + 0.5 - cx) / fx
    y = (ys + 0.5 - cy) / fy
    d_cam = torch.stack([x, y, torch.ones_like(x)], dim=-1)  # [b, v, H, W, 3]
    rot = c2w[..., :3, :3]
    d = torch.einsum("bvij,bvhwj->bvhwi", rot, d_cam)
    d = d / d.norm(dim=-1, keepdim=True)
    o = c2w[..., None, None, :3, 3].expand_as(d)
    m = torch.cross(o, d, dim=-1)
    perm = (0, 1, 4, 2, 3)
    return o.permute(perm), d.permute(perm), m.permute(perm)


class LaCTModel(nn.Module):
    """LaCT NVS model; see the module docstring for the entry points."""

    def __init__(self, config, ns_dtype=None):
        super().__init__()
        self.config = config
        self.patch_size = p = int(config["patch_size"])
        self.dim = dim = int(config["dim"])
        self.input_linear = nn.Linear(p * p * 12, dim, bias=False)
        self.input_layernorm = LayerNorm(dim)
        self.blocks = nn.ModuleList([Block(dim, config["block_config"])
                                     for _ in range(int(config["layers"]))])
        self.image_token_decoder = nn.Sequential(LayerNorm(dim), nn.Linear(dim, p * p * 3, bias=False),
                                                 nn.Sigmoid())
        self.ns_dtype = ns_dtype

    @property
    def ns_dtype(self):
        return self._ns_dtype

    @ns_dtype.setter
    def ns_dtype(self, value):
        _ns_torch_dtype(value)  # validate
        self._ns_dtype = value
        for unit in self._units("ttt"):
            unit.f.ns_dtype = value

    def _units(self, kind=None):
        for block in self.blocks:
            for unit in block.module_list:
                if kind is None or unit.kind == kind:
                    yield unit

    @classmethod
    def from_safetensors(cls, path, ns_dtype=None):
        tensors, meta = safetensors_io.load(path)
        if "config" not in meta:
            raise ValueError("%s: no 'config' in safetensors metadata" % path)
        model = cls(json.loads(meta["config"]), ns_dtype=ns_dtype)
        model.load_state_dict(tensors, strict=True)
        return model

    # -- tokenizer / head
    def _param_dtype(self):
        return self.input_linear.weight.dtype

    def tokenize(self, images, fxfycxcy, c2w, h, w):
        """Patch tokens [b, v*(H/p)*(W/p), p*p*12]; images None means target views (zero rgb)."""
        p = self.patch_size
        if h % p or w % p:
            raise ValueError("H and W must be divisible by the patch size %d" % p)
        dtype = self._param_dtype()
        fxfycxcy, c2w = fxfycxcy.to(dtype), c2w.to(dtype)
        # Rays in the parameters' dtype even under autocast (the official code computes them in fp32).
        with torch.autocast(device_type=c2w.device.type, enabled=False):
            o, d, m = compute_rays(fxfycxcy, c2w, h, w)
        if images is None:
            rgb = torch.zeros_like(o)
        else:
            rgb = images.to(dtype) * 2 - 1
        x = torch.cat([o, d, m, rgb], dim=2)  # [b, v, 12, H, W]
        b, v, c = x.shape[:3]
        x = x.reshape(b, v, c, h // p, p, w // p, p).permute(0, 1, 3, 5, 4, 6, 2)
        return x.reshape(b, v * (h // p) * (w // p), p * p * c)

    def decode_tokens(self, x, v, h, w):
        """Head: LN -> Linear -> sigmoid, then unpatchify to [b, v, 3, H, W]."""
        p = self.patch_size
        y = self.image_token_decoder(x)
        b = y.shape[0]
        y = y.reshape(b, v, h // p, w // p, p, p, 3).permute(0, 1, 6, 2, 4, 3, 5)
        return y.reshape(b, v, 3, h, w)

    # -- trunk
    def _run_blocks(self, x, n_views, n_update, states=None, trace=None):
        """Run every block; returns (x, new_states). states: list per TTT unit of [b*H,...] triples."""
        b, n, dim = x.shape
        per_view = n // n_views
        new_states = []
        ti = 0
        for bi, block in enumerate(self.blocks):
            tj = 0
            for unit in block.module_list:
                hdn = unit.ln(x)
                if unit.kind == "ttt":
                    weights = None if states is None else states[ti]
                    y, weights = unit.f(hdn, n_update=n_update, weights=weights)
                    new_states.append(weights)
                    if trace is not None:
                        heads = unit.f.heads
                        suffix = "" if tj == 0 else "_m%d" % tj
                        for name, wt in zip(("w0", "w1", "w2"), weights):
                            if name == "w1" or not unit.f.only_w1:  # a variant's state is W1 alone
                                trace["encode_block%d%s_%s" % (bi, suffix, name)] = wt[:heads].detach().clone()
                    ti += 1
                    tj += 1
                elif unit.kind == "global":
                    cache = None if states is None else states[ti]
                    y, cache = unit.f(hdn, n_inputs=n_update or 0, per_view=per_view, cache=cache)
                    new_states.append(cache)
                    ti += 1
                elif unit.length_dim == "l":
                    y = unit.f(hdn.reshape(b * n_views, per_view, dim)).reshape(b, n, dim)
                else:
                    y = unit.f(hdn)
                x = x + y
            if trace is not None:
                trace["encode_block%d_out" % bi] = x[0].detach().clone()
        return x, new_states

    def forward(self, input_images, input_fxfycxcy, input_c2w, target_fxfycxcy, target_c2w):
        """Training path: update with input tokens, apply to inputs and targets. -> [b, vt, 3, H, W]."""
        b, vi, _, h, w = input_images.shape
        vt = target_c2w.shape[1]
        tok_in = self.tokenize(input_images, input_fxfycxcy, input_c2w, h, w)
        tok_tgt = self.tokenize(None, target_fxfycxcy, target_c2w, h, w)
        n_in = tok_in.shape[1]
        x = self.input_layernorm(self.input_linear(torch.cat([tok_in, tok_tgt], dim=1)))
        x, _ = self._run_blocks(x, vi + vt, n_update=n_in)
        return self.decode_tokens(x[:, n_in:], vt, h, w)

    def encode(self, input_images, input_fxfycxcy, input_c2w, trace=None):
        """Prefill: update+apply on the input tokens. Returns a list (one per TTT unit, in order)
        of (w0, w1, w2) with shapes [b, H_f, D, d_h], [b, H_f, d_h, D], [b, H_f, D, d_h].
        If trace is a dict it receives batch-0 intermediates named as in the parity fixture."""
        b, vi, _, h, w = input_images.shape
        tok = self.tokenize(input_images, input_fxfycxcy, input_c2w, h, w)
        x = self.input_layernorm(self.input_linear(tok))
        if trace is not None:
            trace["encode_tokens_after_input_layernorm"] = x[0].detach().clone()
        _, states = self._run_blocks(x, vi, n_update=x.shape[1], trace=trace)
        return [tuple(wt.reshape(b, wt.shape[0] // b, *wt.shape[1:]) for wt in s) for s in states]

    def render(self, states, target_fxfycxcy, target_c2w, h, w, views_per_chunk=None):
        """Decode: apply the stored fast weights to target views. -> [b, vt, 3, H, W].
        views_per_chunk renders that many views at a time (exact: views never interact)."""
        for unit in self._units():
            if unit.kind == "attn" and unit.length_dim != "l":
                raise NotImplementedError("render needs per-view (length_dim 'l') attention")
        vt = target_c2w.shape[1]
        flat = [tuple(wt.reshape(-1, *wt.shape[2:]) for wt in s) for s in states]
        step = views_per_chunk or vt
        outs = []
        for s in range(0, vt, step):
            e = min(vt, s + step)
            tok = self.tokenize(None, target_fxfycxcy[:, s:e], target_c2w[:, s:e], h, w)
            x = self.input_layernorm(self.input_linear(tok))
            x, _ = self._run_blocks(x, e - s, n_update=0, states=flat)
            outs.append(self.decode_tokens(x, e - s, h, w))
        return torch.cat(outs, dim=1)
