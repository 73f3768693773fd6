"""LPIPS v0.1 (AlexNet) weights for lact: the two published files converted into one safetensors file.

The published files:
  - torchvision's AlexNet, `alexnet-owt-7be5be79.pth`: a state dict whose `features.{0,3,6,8,10}.{weight,bias}`
    are the five convolutions LPIPS taps (its `classifier.*` tensors are not used);
  - the lpips package's linear layers, `weights/v0.1/alex.pth`: `lin{0..4}.model.1.weight`, shapes [1, C, 1, 1]
    (1x1 convolutions without bias over the taps' 64, 192, 384, 256 and 256 channels).
The output (what `lact render --lpips FILE` and `lact.lpips(..., weights=FILE)` read, core/lpips.h): float32
`conv{0..4}.weight` [O, C, K, K], `conv{0..4}.bias` [O] and `lin{0..4}.weight` [C], metadata
{"format": "lpips v0.1 alexnet", "source": both file names}.

convert_lpips(alexnet_path, linear_path, output) is the conversion (tools.convert_checkpoint --lpips runs it);
it raises LpipsWeightsError with one line naming the file and the problem.
"""
import os

import torch

from tools.reference import safetensors_io

FORMAT = "lpips v0.1 alexnet"
# torchvision's alexnet().features index of each convolution LPIPS taps: (output channels, input channels, kernel).
ALEXNET_CONVOLUTIONS = ((0, 64, 3, 11), (3, 192, 64, 5), (6, 384, 192, 3), (8, 256, 384, 3), (10, 256, 256, 3))


class LpipsWeightsError(ValueError):
    """One line: the file and what is wrong with it."""


def _state_dict(path):
    try:
        try:
            loaded = torch.load(path, map_location="cpu", weights_only=True)
        except TypeError:  # torch without weights_only
            loaded = torch.load(path, map_location="cpu")
    except Exception as exc:  # not a torch file, truncated, a pickle of other objects
        raise LpipsWeightsError("%s: cannot read it as a PyTorch state dict: %s" %
                                (path, str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__))
    if not isinstance(loaded, dict) or not any(torch.is_tensor(v) for v in loaded.values()):
        raise LpipsWeightsError("%s: holds no state dict of tensors" % path)
    return loaded


def _tensor(state, name, shape, path, which):
    if name not in state or not torch.is_tensor(state[name]):
        raise LpipsWeightsError("%s: no tensor '%s': not %s" % (path, name, which))
    value = state[name]
    if tuple(value.shape) != tuple(shape):
        raise LpipsWeightsError("%s: '%s' has shape %s, expected %s (%s)" %
                                (path, name, list(value.shape), list(shape), which))
    value = value.detach().to(torch.float32).contiguous()
    if not bool(torch.isfinite(value).all()):
        raise LpipsWeightsError("%s: '%s' holds NaN or infinite values" % (path, name))
    return value


def convert_lpips(alexnet_path, linear_path, output):
    """Writes `output`; returns a one-line summary. LpipsWeightsError for any problem with the inputs."""
    alexnet, linear = _state_dict(alexnet_path), _state_dict(linear_path)
    alexnet_kind = "torchvision's alexnet-owt-7be5be79.pth"
    linear_kind = "the lpips package's weights/v0.1/alex.pth"
    tensors = {}
    for tap, (index, outputs, inputs, kernel) in enumerate(ALEXNET_CONVOLUTIONS):
        prefix = "features.%d." % index
        tensors["conv%d.weight" % tap] = _tensor(alexnet, prefix + "weight", (outputs, inputs, kernel, kernel),
                                                 alexnet_path, alexnet_kind)
        tensors["conv%d.bias" % tap] = _tensor(alexnet, prefix + "bias", (outputs,), alexnet_path, alexnet_kind)
        tensors["lin%d.weight" % tap] = _tensor(linear, "lin%d.model.1.weight" % tap, (1, outputs, 1, 1),
                                                linear_path, linear_kind).reshape(outputs)
    metadata = {"format": FORMAT,
                "source": "alexnet: %s; linear layers: %s" % (os.path.basename(alexnet_path),
                                                             os.path.basename(linear_path))}
    safetensors_io.save(output, tensors, metadata)
    parameters = sum(t.numel() for t in tensors.values())
    return "wrote %s: LPIPS v0.1 AlexNet, %d tensors, %d parameters (%.1f MB)" % (
        output, len(tensors), parameters, parameters * 4 / 1e6)
