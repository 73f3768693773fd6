"""ckpt_last.pt: the model, optimiser, schedule, counters and every RNG state, saved atomically and restored."""
import os
import random

import torch

CKPT_NAME = "ckpt_last.pt"


def torch_load(path):
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except TypeError:
        return torch.load(path, map_location="cpu")


def save_checkpoint(path, model, opt, sched, state, args, config):
    ckpt = {
        "model": model.state_dict(), "optimizer": opt.state_dict(), "schedule": sched.state_dict(),
        "config": config, "args": vars(args), "state": state,
        "rng": {"torch": torch.get_rng_state(), "numpy": state.pop("_np_rng"),
                "python": random.getstate(),
                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None},
    }
    tmp = path + ".tmp"
    torch.save(ckpt, tmp)
    os.replace(tmp, path)


def restore(resume, model, opt, sched, state, rng, device):
    """A checkpoint's weights, optimiser, schedule, counters and RNG states."""
    model.load_state_dict(resume["model"])
    opt.load_state_dict(resume["optimizer"])
    sched.load_state_dict(resume["schedule"])
    state.update(resume["state"])
    if "cpu_seconds" not in resume["state"]:  # checkpoints from before --ranks: one thread
        state["cpu_seconds"] = state["elapsed"]
    rng.bit_generator.state = resume["rng"]["numpy"]
    random.setstate(resume["rng"]["python"])
    torch.set_rng_state(resume["rng"]["torch"])
    if device.type == "cuda" and resume["rng"].get("cuda") is not None:
        try:
            torch.cuda.set_rng_state_all(resume["rng"]["cuda"])
        except RuntimeError:
            pass
