#!/usr/bin/env python3
"""Minimal safetensors reader/writer (no dependency on the `safetensors` package).

File layout: u64 little-endian header length N, N bytes of JSON header
({name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}}),
then the raw little-endian tensor data.

load(path)  -> (dict name -> torch.Tensor, metadata dict); float tensors
               (F32/F16/BF16/F64) come back as float32, integer tensors keep their type.
save(path, tensors, metadata) writes every tensor as F32, keys sorted, header
               padded with spaces to a multiple of 8 bytes.
"""
import json
import struct

import numpy as np
import torch

_INT_DTYPES = {
    "I8": "<i1", "U8": "<u1", "I16": "<i2", "I32": "<i4", "I64": "<i8", "BOOL": "<u1",
}


def _decode(dtype, raw, shape):
    """Turn the raw bytes of one tensor into a torch tensor."""
    count = int(np.prod(shape)) if shape else 1
    if dtype == "F32":
        arr = np.frombuffer(raw, dtype="<f4", count=count)
    elif dtype == "F16":
        arr = np.frombuffer(raw, dtype="<f2", count=count).astype(np.float32)
    elif dtype == "F64":
        arr = np.frombuffer(raw, dtype="<f8", count=count).astype(np.float32)
    elif dtype == "BF16":
        bits = np.frombuffer(raw, dtype="<u2", count=count).astype(np.uint32) << 16
        arr = bits.view(np.float32)
    elif dtype in _INT_DTYPES:
        arr = np.frombuffer(raw, dtype=_INT_DTYPES[dtype], count=count)
        if dtype == "BOOL":
            arr = arr.astype(np.bool_)
    else:
        raise ValueError("unsupported safetensors dtype %r" % dtype)
    return torch.from_numpy(np.array(arr, copy=True).reshape(shape))


def load(path):
    """Read a safetensors file; returns (tensors, metadata)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError("%s: too short for a safetensors file" % path)
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise ValueError("%s: header length %d exceeds file size" % (path, n))
    header = json.loads(data[8:8 + n].decode("utf-8"))
    metadata = dict(header.pop("__metadata__", None) or {})
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        if base + end > len(data) or begin > end:
            raise ValueError("%s: tensor %r has bad data_offsets" % (path, name))
        tensors[name] = _decode(info["dtype"], data[base + begin:base + end],
                                [int(s) for s in info["shape"]])
    return tensors, metadata


def save(path, tensors, metadata=None):
    """Write tensors (any float dtype) as F32 safetensors; metadata values become strings."""
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name]
        if not torch.is_tensor(t):
            t = torch.as_tensor(t)
        arr = t.detach().to("cpu", torch.float32).contiguous().numpy().astype("<f4", copy=False)
        raw = arr.tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header = dict(__metadata__={str(k): str(v) for k, v in metadata.items()}, **header)
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    head += b" " * ((-len(head)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for raw in blobs:
            f.write(raw)
