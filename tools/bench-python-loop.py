#!/usr/bin/env python3
"""Baseline for tools/bench.sh: the loop a Python user writes instead of Sightline.
PyAV decodes the clip, the Python dlib binding's HOG detector runs on each frame's luma
plane (upsample 0), and each frame's faces go out as a JSON message on a pyzmq PUB socket.
Prints the frames and faces it saw; time it as a whole process.

  python3 -m pip install av dlib-bin numpy pyzmq
  tools/bench-python-loop.py CLIP tcp://127.0.0.1:5599
"""
import json, sys

import av
import dlib
import numpy as np
import zmq

path, endpoint = sys.argv[1], sys.argv[2]
socket = zmq.Context().socket(zmq.PUB)
socket.bind(endpoint)
detector = dlib.get_frontal_face_detector()
frames = faces = 0
with av.open(path) as container:
    for frame in container.decode(video=0):
        # The Y plane as decoded (what Sightline reads), rows cut to the picture's width.
        plane = frame.planes[0]
        luma = np.frombuffer(plane, np.uint8).reshape(frame.height, plane.line_size)[:, :frame.width]
        rects, scores, subs = detector.run(np.ascontiguousarray(luma), 0, 0.0)
        socket.send_multipart([b"faces/cam1/", json.dumps({
            "time": float(frame.time), "faces": [[r.left(), r.top(), r.right(), r.bottom(), s, int(i)]
                                                 for r, s, i in zip(rects, scores, subs)]}).encode()])
        frames += 1
        faces += len(rects)
print(json.dumps({"frames": frames, "faces": faces}))
