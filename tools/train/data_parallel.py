"""Data parallelism over CPU processes for train.py (--ranks N; torch.distributed with gloo on loopback).

Why processes and not threads: at this model size one torch process with 2 threads is slower per step than
with 1 (its small ops spend the time in OpenMP synchronisation), while two one-thread processes run side by
side at almost full speed each.

The split keeps the training identical to one process: every rank draws the whole step (objects, views,
backgrounds, the number of targets) from the same seeded generator, renders only its slice of the batch, and
the ranks average their gradients and losses. Equal slices make that average the gradient of the whole
batch's mean loss, so N ranks take the same steps as one process with --batch (up to float rounding), sooner.
Rank 0 alone validates, logs and checkpoints, and decides each step's learning rate and whether to stop.
"""
import datetime
import os
import socket
import subprocess
import sys

import torch
import torch.distributed as dist

RANK_ENV, WORLD_ENV, PORT_ENV = "LACT_TRAIN_RANK", "LACT_TRAIN_WORLD", "LACT_TRAIN_PORT"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_workers(ranks, argv):
    """Called by the process the user started: it becomes rank 0 and starts ranks 1..N-1 as copies of
    itself (same arguments). Returns the worker processes (their output is discarded: rank 0 reports)."""
    port = free_port()
    os.environ.update({RANK_ENV: "0", WORLD_ENV: str(ranks), PORT_ENV: str(port)})
    workers = []
    for r in range(1, ranks):
        env = dict(os.environ, **{RANK_ENV: str(r)})
        workers.append(subprocess.Popen([sys.executable] + argv, env=env, stdout=subprocess.DEVNULL))
    return workers


def stop_workers(workers):
    for w in workers:
        if w.poll() is None:
            try:
                w.wait(timeout=60)  # after the last step they only exit
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()


class DataParallel:
    """This process's place among the ranks (world 1: no process group, every call is a no-op)."""

    def __init__(self):
        self.world = int(os.environ.get(WORLD_ENV, "1"))
        self.rank = int(os.environ.get(RANK_ENV, "0"))
        if self.world > 1:
            # validation and checkpoints on rank 0 keep the others waiting in the next collective
            dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%s" % os.environ[PORT_ENV],
                                    rank=self.rank, world_size=self.world,
                                    timeout=datetime.timedelta(hours=2))

    @property
    def is_main(self):
        return self.rank == 0

    def part(self, batch):
        """This rank's slice [start, stop) of a batch of `batch` objects."""
        if batch % self.world:
            raise ValueError("--batch %d does not split over --ranks %d" % (batch, self.world))
        n = batch // self.world
        return self.rank * n, (self.rank + 1) * n

    def broadcast_parameters(self, model):
        """Rank 0's weights everywhere (at the start, and at each checkpoint against any drift)."""
        if self.world > 1:
            for p in model.parameters():
                dist.broadcast(p.data, 0)

    def decide(self, lr, stop):
        """Rank 0's learning rate and stop flag for this step, on every rank."""
        if self.world == 1:
            return lr, stop
        t = torch.tensor([lr, 1.0 if stop else 0.0], dtype=torch.float64)
        dist.broadcast(t, 0)
        return float(t[0]), bool(t[1] > 0.5)

    def average(self, params, scalars):
        """Averages the gradients of `params` and the float tensors `scalars` over the ranks in one
        collective; returns the averaged scalars."""
        if self.world == 1:
            return scalars
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flat = torch.cat([g.reshape(-1) for g in grads] + [s.detach().reshape(1).to(grads[0]) for s in scalars])
        dist.all_reduce(flat)
        flat /= self.world
        offset = 0
        for p, g in zip(params, grads):
            n = g.numel()
            if p.grad is None:
                p.grad = g
            p.grad.copy_(flat[offset:offset + n].view_as(g))
            offset += n
        return [flat[offset + i] for i in range(len(scalars))]

    def close(self):
        if self.world > 1:
            dist.destroy_process_group()
