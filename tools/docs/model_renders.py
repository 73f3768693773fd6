#!/usr/bin/env python3
"""A picture of what a model renders: for a few held-out targets of each evaluation set, the ground truth, the
model's render and the nearest input view (the baseline), with each image's PSNR, from `lact render` reports.

usage: /usr/bin/python3 tools/docs/model_renders.py MODEL.safetensors -o docs/images/model_renders.png
       [--eval-dir data/eval] [--lact build/app/lact] [--scale 2]
The held-out sets are those of tools/train/eval_sets.sh (run it first to make them); the real object is
examples/gso_toy_64 with issue 15's acceptance views.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image, ImageDraw

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HELD_OUT = ("uniform:8", "1,4,7,10,13,16,19,22")
TOY = os.path.join(ROOT, "examples", "gso_toy_64")
# (label, data, inputs, targets, how many (scene, view) rows)
SETS = [("real: gso_toy_64", TOY, "16,20,24,28,34,38,42,46", "2,18,32,50", 4),
        ("held-out assembly", "assembly/index.json") + HELD_OUT + (2,),
        ("held-out glTF", "gltf/index.json") + HELD_OUT + (2,),
        ("held-out procedural", "procedural/index.json") + HELD_OUT + (2,)]


def on_white(path):
    img = np.asarray(Image.open(path).convert("RGBA"), dtype=np.float64) / 255.0
    rgb = img[..., :3] * img[..., 3:] + (1.0 - img[..., 3:])
    return (rgb * 255.0 + 0.5).astype(np.uint8)


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) / 255.0 - b.astype(np.float64) / 255.0) ** 2)
    return 10.0 * np.log10(1.0 / max(mse, 1e-12))


def scene_frames(data, scene):
    """view index -> image path of one scene of a LaCT layout (a folder with opencv_cameras.json or an index)."""
    folder = data if os.path.isdir(data) else os.path.join(os.path.dirname(data), scene)
    frames = json.load(open(os.path.join(folder, "opencv_cameras.json")))
    return [os.path.join(folder, f["file_path"]) for f in frames]


def rows_of_set(lact, model, label, data, inputs, targets, count, work):
    out = os.path.join(work, str(abs(hash(label))))
    subprocess.run([lact, "render", "--model", model, "--data", data, "--inputs", inputs, "--targets", targets,
                    "--out", out, "--quiet", "--threads", "2"], check=True, stdout=subprocess.DEVNULL)
    rows, seen = [], []
    for r in csv.DictReader(open(os.path.join(out, "report.csv"))):
        if r["scene"] not in seen:
            seen.append(r["scene"])
        # The real object: every listed view; the held-out sets: the first target of the first scenes.
        if data != TOY and (r["view"] != targets.split(",")[0] or len(seen) > count):
            continue
        frames = scene_frames(data, r["scene"])
        truth = on_white(frames[int(r["view"])])
        render = on_white(os.path.join(out, r["scene"], r["view"] + ".png"))
        nearest = on_white(frames[int(r["nearest_input"])])
        where = "view %s" % r["view"] if data == TOY else "%s/%s" % (r["scene"], r["view"])
        rows.append(("%s\n%s" % (label, where), truth, render, nearest))
        if len(rows) == count:
            break
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--eval-dir", default=os.path.join(ROOT, "data", "eval"))
    ap.add_argument("--lact", default=os.path.join(ROOT, "build", "app", "lact"))
    ap.add_argument("--scale", type=int, default=2)
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for label, data, inputs, targets, count in SETS:
            path = data if os.path.isabs(data) else os.path.join(a.eval_dir, data)
            if not os.path.exists(path):
                print("model_renders: %s: %s missing (run tools/train/eval_sets.sh first); skipped" % (label, path),
                      file=sys.stderr)
                continue
            rows += rows_of_set(a.lact, a.model, label, path, inputs, targets, count, work)
    if not rows:
        sys.exit("model_renders: nothing to show")
    s, pad, text_w = a.scale, 4, 250
    size = rows[0][1].shape[0] * s
    sheet = Image.new("RGB", (text_w + 3 * (size + pad), 16 + len(rows) * (size + pad)), "white")
    draw = ImageDraw.Draw(sheet)
    for c, head in enumerate(("ground truth", "model", "nearest input")):
        draw.text((text_w + c * (size + pad), 2), head, fill="black")
    for i, (label, truth, render, nearest) in enumerate(rows):
        y = 16 + i * (size + pad)
        draw.text((4, y + size // 2 - 12), label, fill="black")
        for c, img in enumerate((truth, render, nearest)):
            sheet.paste(Image.fromarray(img).resize((size, size), Image.NEAREST), (text_w + c * (size + pad), y))
            if c:
                draw.text((text_w + c * (size + pad) + 2, y + size - 12), "%.1f dB" % psnr(img, truth), fill="black")
    sheet.save(a.output, optimize=True)
    print("model_renders: %d rows -> %s" % (len(rows), a.output))


if __name__ == "__main__":
    main()
