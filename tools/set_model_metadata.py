#!/usr/bin/env python3
"""Set metadata entries of a safetensors model, leaving every tensor byte as it was.

usage: python3 -m tools.set_model_metadata MODEL.safetensors KEY=VALUE [KEY=VALUE ...] [-o OUT.safetensors]

Only the JSON header changes (its __metadata__ entries; the tensors' entries and offsets are kept, the header
padded with spaces to a multiple of 8 bytes); the data after it is copied unchanged, and the command checks that
it is. Without -o the file is replaced atomically. `kind` must be object or scene (what lact's guard rails read:
docs/guide/evaluation.md); `image_size` HxW; `input_views` a count. Needs no package beyond Python's own.
"""
import argparse
import json
import os
import re
import struct
import sys

CHECKS = {
    "kind": (lambda v: v in ("object", "scene"), "object or scene"),
    "image_size": (lambda v: re.fullmatch(r"[1-9]\d*x[1-9]\d*", v) is not None, "HxW"),
    "input_views": (lambda v: re.fullmatch(r"[1-9]\d{0,3}", v) is not None, "a count in 1..9999"),
}


def split_file(blob, path):
    """(header dict, data bytes) of a safetensors file's contents."""
    if len(blob) < 8:
        raise ValueError("%s: too short for a safetensors file" % path)
    (length,) = struct.unpack("<Q", blob[:8])
    if 8 + length > len(blob):
        raise ValueError("%s: header length %d exceeds the file" % (path, length))
    header = json.loads(blob[8:8 + length].decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError("%s: the header is not a JSON object" % path)
    return header, blob[8 + length:]


def join_file(header, data):
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    head += b" " * ((-len(head)) % 8)
    return struct.pack("<Q", len(head)) + head + data


def parse_entries(texts):
    entries = {}
    for text in texts:
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise ValueError("%r is not KEY=VALUE" % text)
        check = CHECKS.get(key)
        if check and not check[0](value):
            raise ValueError("%s=%r: %s must be %s" % (key, value, key, check[1]))
        entries[key] = value
    return entries


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="safetensors model")
    ap.add_argument("entries", nargs="+", help="KEY=VALUE metadata entries to set")
    ap.add_argument("-o", "--output", help="write here instead of replacing MODEL")
    a = ap.parse_args()
    try:
        entries = parse_entries(a.entries)
        with open(a.model, "rb") as f:
            blob = f.read()
        header, data = split_file(blob, a.model)
        metadata = dict(header.get("__metadata__") or {})
        metadata.update(entries)
        header["__metadata__"] = metadata
        out = join_file(header, data)
        back_header, back_data = split_file(out, "the rewritten file")
        if back_data != data or {k: v for k, v in back_header.items() if k != "__metadata__"} != \
                {k: v for k, v in header.items() if k != "__metadata__"}:
            raise ValueError("the rewritten file's tensors differ (not written)")
        target = a.output or a.model
        tmp = target + ".tmp"
        with open(tmp, "wb") as f:
            f.write(out)
        os.replace(tmp, target)
    except (OSError, ValueError) as exc:
        print("set_model_metadata: %s" % exc, file=sys.stderr)
        return 2
    print("set_model_metadata: %s: %s; %d tensor bytes unchanged" %
          (target, ", ".join("%s=%s" % kv for kv in entries.items()), len(data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
