#!/usr/bin/env python3
"""Differentiable SSIM (Wang et al. 2004): 11x11 Gaussian window, sigma 1.5, 'valid' borders,
K1 0.01, K2 0.03, data range 1. Separable convolution; deterministic on the CPU."""
import torch
import torch.nn.functional as F

_WINDOWS = {}


def _window(size, sigma, channels, dtype, device):
    key = (size, sigma, channels, dtype, str(device))
    if key not in _WINDOWS:
        x = torch.arange(size, dtype=torch.float64) - (size - 1) / 2
        g = torch.exp(-x * x / (2 * sigma * sigma))
        g = (g / g.sum()).to(dtype=dtype, device=device)
        _WINDOWS[key] = (g.view(1, 1, 1, size).repeat(channels, 1, 1, 1),
                         g.view(1, 1, size, 1).repeat(channels, 1, 1, 1))
    return _WINDOWS[key]


def _blur(x, wins):
    c = x.shape[1]
    return F.conv2d(F.conv2d(x, wins[0], groups=c), wins[1], groups=c)


def ssim(x, y, size=11, sigma=1.5, data_range=1.0, reduction="mean"):
    """x, y [N, C, H, W] (H, W >= size). reduction 'mean' -> scalar, 'none' -> [N]."""
    if x.shape != y.shape or x.dim() != 4:
        raise ValueError("ssim wants two [N,C,H,W] tensors of the same shape")
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    wins = _window(size, sigma, x.shape[1], x.dtype, x.device)
    mu_x, mu_y = _blur(x, wins), _blur(y, wins)
    sxx = _blur(x * x, wins) - mu_x * mu_x
    syy = _blur(y * y, wins) - mu_y * mu_y
    sxy = _blur(x * y, wins) - mu_x * mu_y
    num = (2 * mu_x * mu_y + c1) * (2 * sxy + c2)
    den = (mu_x * mu_x + mu_y * mu_y + c1) * (sxx + syy + c2)
    smap = num / den
    if reduction == "none":
        return smap.flatten(1).mean(1)
    return smap.mean()
