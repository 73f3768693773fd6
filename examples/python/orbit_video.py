#!/usr/bin/env python3
"""Encode the example scene's 8 input views, render an orbit around it and write an MP4 (ffmpeg).
Usage: PYTHONPATH=build/python /usr/bin/python3 examples/python/orbit_video.py [out.mp4]"""
import argparse
import subprocess

import lact
import numpy as np

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("video", nargs="?", default="orbit.mp4", help="the MP4 to write (default orbit.mp4)")
video = parser.parse_args().video

model = lact.Model("models/lact_tiny_obj64.safetensors")
scene = lact.read_scene("examples/gso_toy_64", inputs="16,20,24,28,34,38,42,46")
i = scene.inputs
state = model.encode(scene.images[i], scene.intrinsics[i], scene.c2w[i])
intrinsics, c2w = lact.camera_path("orbit", frames=60, size=state.size, intrinsics=scene.intrinsics, c2w=scene.c2w)
frames = model.render(state, intrinsics, c2w)  # (60, 64, 64, 3) in [0, 1]
h, w = state.size
subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{w}x{h}", "-r", "30",
                "-i", "-", "-pix_fmt", "yuv420p", video], input=(frames * 255 + 0.5).clip(0, 255).astype(np.uint8).tobytes(),
               check=True)
print(f"{video}: {len(frames)} frames at {h}x{w}")
