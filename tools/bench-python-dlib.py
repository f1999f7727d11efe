#!/usr/bin/env python3
"""Baseline for `sightline bench`: what a user would otherwise write, the Python dlib
binding's HOG detector on the same luma planes, one core, upsample 0.

  python3 -m pip install dlib-bin numpy; tools/bench-python-dlib.py CLIP...
"""
import subprocess, sys, time

import dlib
import numpy as np

for path in sys.argv[1:]:
    w, h = map(int, subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                                    "stream=width,height", "-of", "csv=p=0", path],
                                   check=True, capture_output=True, text=True).stdout.split(","))
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"],
                         check=True, capture_output=True).stdout
    size = w * h * 3 // 2
    frames = [np.frombuffer(raw, np.uint8, w * h, n * size).reshape(h, w) for n in range(len(raw) // size)]
    detector = dlib.get_frontal_face_detector()
    detector.run(frames[0], 0, 0)
    start = time.perf_counter()
    for frame in frames:
        detector.run(frame, 0, 0)
    ms = (time.perf_counter() - start) / len(frames) * 1000
    print(f"{w}x{h} python-dlib {ms:6.2f} ms/frame  {1000 / ms:6.1f} frames/s  ({len(frames)} frames)")
