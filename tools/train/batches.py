"""The training and validation sets (--data, --val-data, --val-extra, --val-real) and the batches drawn from them."""
import time

import numpy as np
import torch

from tools.train import lact_data


def load_sources(specs, size, device, log):
    objs = lact_data.ObjectSet()
    for spec in specs:
        if spec.startswith("synthetic:"):
            from tools.train import synthetic_data
            kv = dict(item.split("=", 1) for item in spec[len("synthetic:"):].split(",") if item)
            n = int(kv.get("objects", 64))
            views = int(kv.get("views", 32))
            seed = int(kv.get("seed", 1))
            start = int(kv.get("start", 0))
            t0 = time.time()
            gen_dev = device if device.type == "cuda" else "cpu"
            images, cameras = synthetic_data.generate(seed, n, views, size[0], kv.get("layout", "random"),
                                                      ss=int(kv.get("ss", 2)), device=gen_dev, start=start)
            log("generated %s in %.1f s" % (spec, time.time() - t0))
            for i in range(n):
                objs.add(images[i], cameras[i], "synthetic_s%d_%06d" % (seed, start + i), spec)
        else:
            part = lact_data.load_objects([spec], size)
            for i in range(len(part)):
                objs.add(part.images[i], part.cameras[i], part.names[i], part.sources[i])
    return objs


class Sampler:
    """Draws training batches; keeps the whole set on the device when shapes agree and
    --data-on-device is set (CUDA default), else gathers from (memory-mapped) numpy."""

    def __init__(self, objs, size, device, on_device):
        self.objs, self.size, self.device = objs, size, device
        shapes = {im.shape for im in objs.images}
        self.bank = None
        if on_device and len(shapes) == 1:
            shape = next(iter(shapes))
            self.bank = torch.empty((len(objs),) + shape, dtype=torch.uint8, device=device)
            for i, im in enumerate(objs.images):
                self.bank[i].copy_(torch.from_numpy(np.ascontiguousarray(im)))
            self.bank_cams = torch.from_numpy(np.stack(objs.cameras)).to(device)

    def gather(self, obj_idx, view_idx, background=None):
        """-> rgb [B,N,3,h,w] float on device (white background, or background [B,3]),
        fxfycxcy [B,N,4], c2w [B,N,4,4]."""
        if self.bank is not None:
            oi = torch.as_tensor(np.asarray(obj_idx), device=self.device)[:, None]
            vi = torch.as_tensor(np.asarray(view_idx), device=self.device)
            raw, cam = self.bank[oi, vi], self.bank_cams[oi, vi]
        else:
            raws, cams = [], []
            for o, vids in zip(obj_idx, view_idx):
                vids = np.asarray(vids)
                order = np.argsort(vids, kind="stable")
                r = np.asarray(self.objs.images[o][vids[order]])
                raws.append(r[np.argsort(order, kind="stable")])
                cams.append(self.objs.cameras[o][vids])
            raw = torch.from_numpy(np.stack(raws)).to(self.device)
            cam = torch.from_numpy(np.stack(cams)).to(self.device)
        bg = None
        if background is not None:
            bg = torch.as_tensor(np.asarray(background, dtype=np.float32), device=self.device)[:, None, None, None, :]
        rgb = lact_data.composite_white(raw, bg)
        b, n = rgb.shape[:2]
        if self.size is not None and tuple(rgb.shape[-2:]) != tuple(self.size):
            r, c = lact_data.resize_cover(rgb.flatten(0, 1), cam.flatten(0, 1), *self.size)
            rgb, cam = r.view(b, n, *r.shape[1:]), c.view(b, n, 20)
        return rgb, cam[..., :4].contiguous(), cam[..., 4:].reshape(b, n, 4, 4).contiguous()

    def sample(self, rng, batch, n_input, n_target, bg_random=0.0, part=None):
        """A batch of `batch` objects; with part=(start, stop) only those objects are gathered, but the
        generator advances as for the whole batch (data_parallel.py: each rank renders its slice)."""
        objs = self.objs
        obj_idx = rng.choice(len(objs), size=batch, replace=len(objs) < batch)
        view_idx = []
        for o in obj_idx:
            nv = objs.images[o].shape[0]
            if nv < n_input + n_target:
                raise ValueError("object %s has %d views < %d + %d" % (objs.names[o], nv, n_input, n_target))
            view_idx.append(rng.permutation(nv)[:n_input + n_target])
        background = None
        if bg_random > 0:  # per object: a random background colour (inputs and targets alike)
            pick = rng.random(batch) < bg_random
            colours = rng.random((batch, 3))
            background = np.where(pick[:, None], colours, 1.0)
        view_idx = np.stack(view_idx)
        if part is not None:
            obj_idx, view_idx = obj_idx[part[0]:part[1]], view_idx[part[0]:part[1]]
            background = None if background is None else background[part[0]:part[1]]
        rgb, intr, c2w = self.gather(obj_idx, view_idx, background)
        return split_batch(rgb, intr, c2w, n_input)


def split_batch(rgb, intr, c2w, ni):
    return {"input_images": rgb[:, :ni], "input_fxfycxcy": intr[:, :ni], "input_c2w": c2w[:, :ni],
            "target_images": rgb[:, ni:], "target_fxfycxcy": intr[:, ni:], "target_c2w": c2w[:, ni:]}


def validation_splits(objs, a, what):
    """Fixed --n-input + --val-targets view splits, one per object; exits when an object has too few views."""
    need = a.n_input + a.val_targets
    splits = [s for s in lact_data.fixed_splits(objs, a.n_input, a.val_targets) if len(s) == need]
    if len(splits) != len(objs):
        raise SystemExit("%s: validation objects need >= %d views" % (what, need))
    return splits


def load_extra_validation(a, size, device, on_device, say):
    """[(name, sampler, splits, n_input)] for --val-extra and --val-real."""
    out = []
    for spec in a.val_extra:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise SystemExit("--val-extra: expected NAME=PATH, got '%s'" % spec)
        objs = load_sources([path], size, device, say)
        splits = validation_splits(objs, a, path)
        say("val_%s: %s" % (name, objs.describe()))
        out.append((name, Sampler(objs, size, device, on_device), splits, a.n_input))
    if a.val_real:
        objs = load_sources([a.val_real], size, device, say)
        try:
            inputs = [int(v) for v in a.val_real_inputs.split(",")]
            targets = [int(v) for v in a.val_real_targets.split(",")]
        except ValueError:
            raise SystemExit("--val-real-inputs/--val-real-targets: expected comma-separated view numbers")
        views = objs.images[0].shape[0]
        if len(objs) != 1 or max(inputs + targets) >= views or min(inputs + targets) < 0:
            raise SystemExit("%s: --val-real needs one object with views 0..%d" % (a.val_real, max(inputs + targets)))
        say("val_real: %s, inputs %s, targets %s" % (objs.describe(), a.val_real_inputs, a.val_real_targets))
        out.append(("real", Sampler(objs, size, device, on_device), [np.array(inputs + targets)], len(inputs)))
    return out


def load_data(a, device, is_main, say):
    """-> train_objs, val_objs, Sampler of the training set, validation sets [(kind, sampler, splits, n_input)]
    (empty on the ranks that do not validate)."""
    size = (a.size, a.size)
    on_device = a.data_on_device == "yes" or (a.data_on_device == "auto" and device.type == "cuda")
    train_objs = load_sources(a.data, size, device, say)
    if a.val_data:
        val_objs = load_sources(a.val_data, size, device, say)
    elif a.val_objects > 0:
        k = min(a.val_objects, len(train_objs) - 1)
        val_objs = train_objs.subset(range(len(train_objs) - k, len(train_objs)))
        train_objs = train_objs.subset(range(len(train_objs) - k))
    else:
        val_objs = lact_data.ObjectSet()
    say("train: %s" % train_objs.describe())
    say("val:   %s" % val_objs.describe())
    val_splits = validation_splits(val_objs, a, "validation")
    val_sets = []
    if is_main and len(val_objs):
        val_sets.append(("val", Sampler(val_objs, size, device, on_device), val_splits, a.n_input))
    if is_main:
        val_sets += [("val_" + name, smp, splits, n_in)
                     for name, smp, splits, n_in in load_extra_validation(a, size, device, on_device, say)]
    return train_objs, val_objs, Sampler(train_objs, size, device, on_device), val_sets
