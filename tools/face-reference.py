#!/usr/bin/env python3
"""What the Python dlib binding says about the faces in an image: the reference that
Sightline's landmark and descriptor tests compare with, and the baseline of
`sightline bench faces`.

Reads the image as raw planes (so both sides see the same bytes): an 8-bit gray plane for
detection and landmarks, and packed RGB for descriptors. For each face that
get_frontal_face_detector() finds at UPSAMPLE, prints one JSON line with its box, the
shape_predictor's points and compute_face_descriptor(rgb, shape, JITTERS).
With --bench N, prints instead the mean milliseconds per face of landmarks (over 10N
repetitions) and of descriptors (over N).

  python3 -m pip install dlib-bin numpy
  tools/face-reference.py GRAY RGB WIDTH HEIGHT [--upsample 0] [--jitters 0] [--models DIR]
"""
import argparse, json, os, time

import dlib
import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("gray")
parser.add_argument("rgb")
parser.add_argument("width", type=int)
parser.add_argument("height", type=int)
parser.add_argument("--upsample", type=int, default=0)
parser.add_argument("--jitters", type=int, default=0)
parser.add_argument("--models", default=os.path.join(os.path.dirname(__file__), "..", "models"))
parser.add_argument("--bench", type=int, default=0)
args = parser.parse_args()

w, h = args.width, args.height
gray = np.fromfile(args.gray, np.uint8, w * h).reshape(h, w)
rgb = np.fromfile(args.rgb, np.uint8, w * h * 3).reshape(h, w, 3)
detector = dlib.get_frontal_face_detector()
predictor = dlib.shape_predictor(os.path.join(args.models, "shape_predictor_5_face_landmarks.dat"))
network = dlib.face_recognition_model_v1(os.path.join(args.models, "dlib_face_recognition_resnet_model_v1.dat"))
rects, scores, subs = detector.run(gray, args.upsample, 0.0)

if args.bench:
    shapes = [predictor(gray, r) for r in rects]
    network.compute_face_descriptor(rgb, shapes[0], args.jitters)  # warm-up
    start = time.perf_counter()
    for _ in range(10 * args.bench):  # well under a millisecond each
        for r in rects:
            predictor(gray, r)
    landmarks_ms = (time.perf_counter() - start) * 1000 / (10 * args.bench * len(rects))
    start = time.perf_counter()
    for _ in range(args.bench):
        for s in shapes:
            network.compute_face_descriptor(rgb, s, args.jitters)
    descriptor_ms = (time.perf_counter() - start) * 1000 / (args.bench * len(rects))
    print(json.dumps({"faces": len(rects), "landmarks_ms": landmarks_ms, "descriptor_ms": descriptor_ms}))
else:
    for rect in rects:
        shape = predictor(gray, rect)
        descriptor = network.compute_face_descriptor(rgb, shape, args.jitters)
        print(json.dumps({
            "box": [rect.left(), rect.top(), rect.right(), rect.bottom()],
            "landmarks": [[p.x, p.y] for p in shape.parts()],
            "descriptor": list(descriptor),
        }))
