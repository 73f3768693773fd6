"""The learning rate over a run (warmup, then cosine by step or by wall time) and the optimiser it drives."""
import math

import torch


class Schedule:
    """Linear warmup over `warmup` steps, then cosine from 1 to min_ratio; progress by step
    (steps) or, when time_budget is set, by training wall time."""

    def __init__(self, base_lr, warmup, steps, min_ratio, time_budget=None):
        self.base_lr, self.warmup, self.steps = base_lr, warmup, steps
        self.min_ratio, self.time_budget = min_ratio, time_budget
        self.warmup_end_time = None

    def factor(self, step, elapsed):
        if step < self.warmup:
            return (step + 1) / self.warmup
        if self.time_budget:
            if self.warmup_end_time is None:
                self.warmup_end_time = elapsed
            span = max(1e-6, self.time_budget - self.warmup_end_time)
            p = (elapsed - self.warmup_end_time) / span
        else:
            p = (step - self.warmup) / max(1, self.steps - self.warmup)
        p = min(1.0, max(0.0, p))
        return self.min_ratio + (1 - self.min_ratio) * 0.5 * (1 + math.cos(math.pi * p))

    def lr(self, step, elapsed):
        return self.base_lr * self.factor(step, elapsed)

    def state_dict(self):
        return dict(self.__dict__)

    def load_state_dict(self, d):
        self.warmup_end_time = d.get("warmup_end_time")


def make_optimizer(model, a, device):
    """AdamW, weight decay on the >= 2-D parameters only (fused on CUDA where torch has it)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": a.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    opt_kw = dict(lr=a.lr, betas=(a.beta1, a.beta2), eps=1e-8)
    if device.type == "cuda":
        try:
            return torch.optim.AdamW(groups, fused=True, **opt_kw)
        except (TypeError, RuntimeError):
            pass
    return torch.optim.AdamW(groups, **opt_kw)
