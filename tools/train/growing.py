"""What the grow_*.py tools share: read a model, and write the grown one only if it renders what the old one did.

A grown model is a starting point for a capacity test (docs/history/model_campaigns.md): training continues from exactly the
function the old model computed, so any gain is the added capacity's, not a restart's.
"""
import json
import sys

import torch

from tools.reference import safetensors_io
from tools.reference.lact_reference import LaCTModel
from tools.reference.make_case import random_cameras, random_images


def load_model(path):
    """-> (tensors, metadata, config); exits with one line naming the file when it cannot be read."""
    try:
        tensors, meta = safetensors_io.load(path)
        return tensors, meta, json.loads(meta["config"])
    except (OSError, ValueError, KeyError) as e:
        sys.exit("%s: cannot read the model: %s" % (path, e))


def max_render_difference(config_a, tensors_a, config_b, tensors_b, seed=0):
    """Both models (the reference, fp32) on one random scene: 4 inputs, 2 targets -> max abs difference."""
    models = []
    for config, tensors in ((config_a, tensors_a), (config_b, tensors_b)):
        m = LaCTModel(config)
        m.load_state_dict(tensors, strict=True)
        models.append(m.eval())
    gen, size, n_in = torch.Generator().manual_seed(seed), 4 * int(config_a["patch_size"]), 4
    intr, c2w = (t.float()[None] for t in random_cameras(n_in + 2, size, size, gen))
    images = random_images(n_in, size, size, gen).float()[None]
    with torch.no_grad():
        a, b = (m(images, intr[:, :n_in], c2w[:, :n_in], intr[:, n_in:], c2w[:, n_in:]) for m in models)
    return float((a - b).abs().max())


def save_if_same(source, path, old, new, what, grown_from, tol):
    """old/new = (tensors, meta, config), old read from source. Prints WHAT with the parameter counts and the
    render difference, and writes new to path (its metadata gains `grown_from`) only if that is within tol."""
    diff = max_render_difference(old[2], old[0], new[2], new[0])
    print("%s; params %d -> %d; max render difference %.3g" % (
        what, sum(t.numel() for t in old[0].values()), sum(t.numel() for t in new[0].values()), diff))
    if not diff <= tol:
        sys.exit("%s: the grown model renders differently (%.3g > %.3g)" % (source, diff, tol))
    meta = dict(new[1], config=json.dumps(new[2]), grown_from=grown_from)
    safetensors_io.save(path, new[0], meta)
