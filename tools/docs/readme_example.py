#!/usr/bin/env python3
"""Draws docs/images/readme_example.png, the README's picture: for a few target views of the example scene, the photo,
lact's render and the nearest input view (the trivial baseline), each with its PSNR from report.json.

usage: /usr/bin/python3 tools/docs/readme_example.py OUT_DIR [docs/images/readme_example.png]
OUT_DIR is the --out of the README's first command (a render of examples/gso_toy_64 with --save-images).
"""
import json
import os
import sys

from PIL import Image, ImageDraw

VIEWS = (2, 10, 18, 32, 50, 58)  # acceptance targets of the model card, spread around the object
SCALE, LABEL_W, CAPTION_H = 2, 112, 14


def on_white(path):
    img = Image.open(path).convert("RGBA")
    white = Image.new("RGBA", img.size, (255, 255, 255, 255))
    return Image.alpha_composite(white, img).convert("RGB")


def main():
    out_dir = sys.argv[1]
    dest = sys.argv[2] if len(sys.argv) > 2 else "docs/images/readme_example.png"
    report = json.load(open(os.path.join(out_dir, "report.json")))
    scene = report["scenes"][0]
    views = {v["index"]: v for v in scene["views"]}
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "gso_toy_64")
    size = 64 * SCALE
    rows = ("photo (not seen)", "lact render", "nearest input")
    sheet = Image.new("RGB", (LABEL_W + size * len(VIEWS), (size + CAPTION_H) * len(rows)), "white")
    draw = ImageDraw.Draw(sheet)
    for col, index in enumerate(VIEWS):
        view = views[index]
        tiles = (on_white(os.path.join(out_dir, scene["folder"], "%d_gt.png" % index)),
                 on_white(os.path.join(out_dir, scene["folder"], "%d.png" % index)),
                 on_white(os.path.join(data, "%03d.png" % view["nearest_input"])))
        captions = ("view %d" % index, "%.1f dB" % view["psnr"], "%.1f dB" % view["psnr_nearest_input"])
        for row, (tile, caption) in enumerate(zip(tiles, captions)):
            x, y = LABEL_W + col * size, row * (size + CAPTION_H)
            sheet.paste(tile.resize((size, size), Image.NEAREST), (x, y))
            draw.text((x + 4, y + size + 1), caption, fill="black")
    for row, label in enumerate(rows):
        draw.text((4, row * (size + CAPTION_H) + size // 2), label, fill="black")
    sheet.save(dest, optimize=True)
    print("wrote %s (%d bytes)" % (dest, os.path.getsize(dest)))


if __name__ == "__main__":
    main()
