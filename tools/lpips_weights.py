"""LPIPS v0.1 weights for lact (AlexNet or VGG16 backbone): the two published files converted into one safetensors file.

The published files:
  - the backbone, torchvision's `alexnet-owt-7be5be79.pth` or `vgg16-397923af.pth`: a state dict whose
    `features.N.{weight,bias}` are the convolutions LPIPS runs (AlexNet: N = 0, 3, 6, 8, 10; VGG16: the thirteen
    of N = 0, 2, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28); its `classifier.*` tensors are not used;
  - the lpips package's linear layers, `weights/v0.1/alex.pth` or `vgg.pth`: `lin{0..4}.model.1.weight`, shapes
    [1, C, 1, 1] (1x1 convolutions without bias over the five taps' channels: AlexNet's 64, 192, 384, 256, 256,
    VGG16's 64, 128, 256, 512, 512).
The backbone is told from the first file (its first convolution: 11x11 is AlexNet's, 3x3 VGG16's); the linear
layers must be that backbone's. The output (what `lact render --lpips FILE` and `lact.lpips(..., weights=FILE)`
read, core/lpips.h): float32 `conv{0..N-1}.weight` [O, C, K, K], `conv{0..N-1}.bias` [O] (the convolutions in
order) and `lin{0..4}.weight` [C], metadata {"format": "lpips v0.1 alexnet" or "lpips v0.1 vgg16", "source": both
file names}.

convert_lpips(backbone_path, linear_path, output) is the conversion (tools.convert_checkpoint --lpips runs it);
it raises LpipsWeightsError with one line naming the file and the problem.
"""
import os

import torch

from tools.reference import safetensors_io

FORMAT = "lpips v0.1 alexnet"  # kept for the AlexNet files written before VGG16 was added
# Per backbone: the metadata format, torchvision's features index of each convolution LPIPS runs with its
# (output channels, input channels, kernel), the indices of the five tapped ones, and the published files' names.
BACKBONES = {
    "alexnet": {"format": FORMAT, "name": "AlexNet",
                "convolutions": ((0, 64, 3, 11), (3, 192, 64, 5), (6, 384, 192, 3), (8, 256, 384, 3),
                                 (10, 256, 256, 3)),
                "taps": (0, 1, 2, 3, 4),
                "backbone_file": "torchvision's alexnet-owt-7be5be79.pth",
                "linear_file": "the lpips package's weights/v0.1/alex.pth"},
    "vgg16": {"format": "lpips v0.1 vgg16", "name": "VGG16",
              "convolutions": ((0, 64, 3, 3), (2, 64, 64, 3), (5, 128, 64, 3), (7, 128, 128, 3),
                               (10, 256, 128, 3), (12, 256, 256, 3), (14, 256, 256, 3), (17, 512, 256, 3),
                               (19, 512, 512, 3), (21, 512, 512, 3), (24, 512, 512, 3), (26, 512, 512, 3),
                               (28, 512, 512, 3)),
              "taps": (1, 3, 6, 9, 12),
              "backbone_file": "torchvision's vgg16-397923af.pth",
              "linear_file": "the lpips package's weights/v0.1/vgg.pth"},
}


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


def backbone_of(state, path):
    """The BACKBONES key of a torchvision state dict, by its first convolution's kernel."""
    first = state.get("features.0.weight")
    if torch.is_tensor(first) and first.dim() == 4 and tuple(first.shape[:2]) == (64, 3):
        for key, backbone in BACKBONES.items():
            if first.shape[2] == first.shape[3] == backbone["convolutions"][0][3]:
                return key
    raise LpipsWeightsError("%s: not torchvision's alexnet-owt-7be5be79.pth or vgg16-397923af.pth (its "
                            "'features.0.weight' is %s, expected [64, 3, 11, 11] or [64, 3, 3, 3])" %
                            (path, list(first.shape) if torch.is_tensor(first) else "missing"))


def convert_lpips(backbone_path, linear_path, output):
    """Writes `output`; returns a one-line summary. LpipsWeightsError for any problem with the inputs."""
    features, linear = _state_dict(backbone_path), _state_dict(linear_path)
    backbone = BACKBONES[backbone_of(features, backbone_path)]
    linear_kind = backbone["linear_file"] + " (the linear layers of the backbone " + backbone["name"] + ")"
    tensors = {}
    for number, (index, outputs, inputs, kernel) in enumerate(backbone["convolutions"]):
        prefix = "features.%d." % index
        tensors["conv%d.weight" % number] = _tensor(features, prefix + "weight", (outputs, inputs, kernel, kernel),
                                                    backbone_path, backbone["backbone_file"])
        tensors["conv%d.bias" % number] = _tensor(features, prefix + "bias", (outputs,), backbone_path,
                                                  backbone["backbone_file"])
    for tap, number in enumerate(backbone["taps"]):
        outputs = backbone["convolutions"][number][1]
        tensors["lin%d.weight" % tap] = _tensor(linear, "lin%d.model.1.weight" % tap, (1, outputs, 1, 1),
                                                linear_path, linear_kind).reshape(outputs)
    metadata = {"format": backbone["format"],
                "source": "%s: %s; linear layers: %s" % (backbone["name"].lower(), os.path.basename(backbone_path),
                                                         os.path.basename(linear_path))}
    safetensors_io.save(output, tensors, metadata)
    parameters = sum(t.numel() for t in tensors.values())
    return "wrote %s: LPIPS v0.1 %s, %d tensors, %d parameters (%.1f MB)" % (
        output, backbone["name"], len(tensors), parameters, parameters * 4 / 1e6)
