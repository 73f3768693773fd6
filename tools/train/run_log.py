"""A run's console lines and log.jsonl records (rank 0 only), and the record of a window of training steps."""
import json
import os
import time

import numpy as np


class RunLog:
    """The run's console lines and log.jsonl records; only rank 0 writes (the other ranks stay silent)."""

    def __init__(self, out, fresh, enabled):
        self.t_start = time.time()
        path = os.path.join(out, "log.jsonl")
        self.f = None
        if enabled:
            if fresh and os.path.exists(path):  # a fresh run starts a fresh log (the old one is kept aside)
                os.replace(path, path + ".old")
            self.f = open(path, "a")

    def say(self, msg):
        if self.f is not None:
            print("[train %7.1fs] %s" % (time.time() - self.t_start, msg), flush=True)

    def log(self, rec):
        if self.f is not None:
            self.f.write(json.dumps(rec, sort_keys=True) + "\n")
            self.f.flush()

    def close(self):
        if self.f is not None:
            self.f.close()


def train_record(window, state, lr, n_target):
    """The log record of the steps in `window`: (loss, mse, ssim, grad norm, step s, data s, skipped) each."""
    w = np.array(window, dtype=np.float64)
    return {"type": "train", "step": state["step"], "loss": float(w[:, 0].mean()),
            "mse": float(w[:, 1].mean()), "ssim": float(w[:, 2].mean()),
            "psnr": float(np.mean(-10 * np.log10(np.maximum(w[:, 1], 1e-10)))),
            "grad_norm": float(w[:, 3].mean()), "lr": lr, "samples": state["samples"],
            "elapsed": round(state["elapsed"], 3), "step_time": float(w[:, 4].mean()),
            "data_time": float(w[:, 5].mean()), "skipped": int(w[:, 6].sum()), "n_target": n_target}
