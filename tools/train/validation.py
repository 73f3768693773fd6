"""Validation: PSNR/SSIM of the model on held-out views next to the white and nearest-input baselines, logged per set."""
import os
import time

import numpy as np
import torch

from tools.train import lact_data
from tools.train.batches import split_batch
from tools.train.ssim import ssim


def psnr_from_mse(mse):
    return -10.0 * torch.log10(mse.clamp_min(1e-10))


def view_forward(c2w):
    return c2w[..., :3, 2]


@torch.no_grad()
def validate(model, sampler, splits, n_input, batch, amp_ctx, preview_path=None):
    """Model PSNR/SSIM on held-out objects vs a white image and vs the nearest input view
    (largest cosine between camera forward axes)."""
    model.eval()
    res = {"psnr": [], "psnr_white": [], "psnr_nearest": [], "ssim": []}
    preview = []
    for s in range(0, len(splits), batch):
        chunk = splits[s:s + batch]
        obj_idx = np.arange(s, s + len(chunk))
        rgb, intr, c2w = sampler.gather(obj_idx, np.stack(chunk))
        bt = split_batch(rgb, intr, c2w, n_input)
        with amp_ctx():
            pred = model(bt["input_images"], bt["input_fxfycxcy"], bt["input_c2w"],
                         bt["target_fxfycxcy"], bt["target_c2w"])
        pred = pred.float().clamp(0, 1)
        tgt = bt["target_images"]
        b, vt = tgt.shape[:2]
        res["psnr"].append(psnr_from_mse(((pred - tgt) ** 2).flatten(2).mean(-1)).flatten())
        res["psnr_white"].append(psnr_from_mse(((1 - tgt) ** 2).flatten(2).mean(-1)).flatten())
        cos = torch.einsum("btk,bik->bti", view_forward(bt["target_c2w"]), view_forward(bt["input_c2w"]))
        near = cos.argmax(-1)  # [b, vt]
        near_img = torch.gather(bt["input_images"], 1, near[..., None, None, None].expand_as(tgt))
        res["psnr_nearest"].append(psnr_from_mse(((near_img - tgt) ** 2).flatten(2).mean(-1)).flatten())
        res["ssim"].append(ssim(pred.flatten(0, 1), tgt.flatten(0, 1), reduction="none"))
        if preview_path and len(preview) < 4:
            for i in range(min(b, 4 - len(preview))):
                k = min(vt, 4)
                row = torch.cat([torch.cat(list(tgt[i, :k]), -1), torch.cat(list(pred[i, :k]), -1)], -1)
                preview.append(row)
    model.train()
    out = {k: float(torch.cat(v).mean()) for k, v in res.items()}
    out["images"] = int(torch.cat(res["psnr"]).numel())
    out["objects"] = len(splits)
    if preview_path and preview:
        img = torch.cat(preview, -2).permute(1, 2, 0)
        with open(preview_path + ".tmp", "wb") as f:
            f.write(lact_data.encode_png((img * 255 + 0.5).clamp(0, 255).byte().cpu().numpy()))
        os.replace(preview_path + ".tmp", preview_path)
    return out


class Validation:
    """The run's validation sets, evaluated and logged together (rank 0); `last` is the main set's result."""

    def __init__(self, a, fwd_model, precision, runlog, sets):
        self.a, self.fwd_model, self.precision, self.runlog, self.sets = a, fwd_model, precision, runlog, sets
        self.last = {}
        self.cost = 0.0  # seconds the last round took (the deadline keeps room for one)

    def one(self, kind, sampler, splits, n_in, state, preview=None):
        ts = time.time()
        r = validate(self.fwd_model, sampler, splits, n_in, max(1, self.a.batch), self.precision, preview)
        r.update({"type": kind, "step": state["step"], "samples": state["samples"],
                  "elapsed": round(state["elapsed"], 2), "cpu_hours": round(state["cpu_seconds"] / 3600, 4),
                  "seconds": round(time.time() - ts, 2)})
        self.runlog.log(r)
        self.runlog.say("%s step %d: psnr %.2f (white %.2f, nearest input %.2f), ssim %.4f [%d images, %.1fs]" % (
            kind, state["step"], r["psnr"], r["psnr_white"], r["psnr_nearest"], r["ssim"], r["images"],
            r["seconds"]))
        return r

    def run(self, state):
        if not self.sets or self.sets[0][0] != "val":
            return
        ts = time.time()
        preview = None if self.a.no_preview else os.path.join(self.a.out, "preview.png")
        for kind, sampler, splits, n_in in self.sets:
            r = self.one(kind, sampler, splits, n_in, state, preview if kind == "val" else None)
            if kind == "val":
                self.last = r
        self.cost = time.time() - ts
