#!/usr/bin/env python3
"""Writes the dlib HOG golden that SightlineDetectionTests compare against.

For every frame of a clip it hands the decoded Y (luma) plane, exactly as decoded (uint8,
limited range, no conversion), to the Python dlib binding and records what
`get_frontal_face_detector().run(img, upsample, adjust_threshold)` returns.
H.264 decoding is bit-exact, so the ffmpeg CLI's Y plane equals the one Sightline decodes
with libavcodec; `input_md5` lets the test prove it.

  python3 -m pip install dlib-bin==20.0.1.post1 numpy
  tools/make-golden.py Sources/SightlineSamples/Media/faces_640x480.mp4 > golden.jsonl
"""
import hashlib, json, subprocess, sys
import dlib, numpy as np

CONFIGS = [(0, 0.0), (1, 0.0), (0, -0.5)]

def main(path):
    probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                            "stream=width,height", "-of", "csv=p=0", path],
                           check=True, capture_output=True, text=True).stdout.strip().split(",")
    w, h = int(probe[0]), int(probe[1])
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt",
                          "yuv420p", "-"], check=True, capture_output=True).stdout
    frame_size = w * h * 3 // 2
    detector = dlib.get_frontal_face_detector()
    for n in range(len(raw) // frame_size):
        y = np.frombuffer(raw, np.uint8, w * h, n * frame_size).reshape(h, w)
        for upsample, threshold in CONFIGS:
            rects, scores, idx = detector.run(y, upsample, threshold)
            dets = [[r.left(), r.top(), r.right(), r.bottom(), s, int(i)]
                    for r, s, i in zip(rects, scores, idx)]
            print(json.dumps({"frame": n, "width": w, "height": h,
                              "input_md5": hashlib.md5(y.tobytes()).hexdigest(),
                              "upsample": upsample, "adjust_threshold": threshold,
                              "dets": dets}))

if __name__ == "__main__":
    main(sys.argv[1])
