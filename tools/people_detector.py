#!/usr/bin/env python3
"""A people detector in another process, plugged into Sightline: subscribes to a source's
downscaled frames, finds people with OpenCV's built-in HOG people detector (no model to
download), and sends them back as `humanBody` objects, which the source tracks, announces,
records, and the console and exports draw.

  python3 tools/people_detector.py [--frames tcp://127.0.0.1:5560]
                                   [--objects tcp://127.0.0.1:5561] [--source-id cam1]
                                   [--detector people] [--every-frame] [--log FILE]

Needs `sightline run --frames gray8 --metadata-in ENDPOINT`, numpy and OpenCV 4. Each
analysed frame gives one `objects` group timed at the frame (an empty one when nobody is in
view). HOG can take longer than a frame's interval on a small machine: the detector works on
the newest frame and skips those that came while it worked, unless --every-frame. With --log,
every group sent is written to FILE as a line of JSON. Wire format: docs/protocol.md. Exits at the source's final status.
"""
import argparse
import json
import sys
import time

import cv2
import numpy as np
import zmq

from sightline_frames import PROTOCOL_VERSION, gray_frames


def people(hog, image):
    """People in a gray image as normalised boxes with a confidence from the SVM's weight."""
    height, width = image.shape
    boxes, weights = hog.detectMultiScale(image, winStride=(8, 8), padding=(8, 8), scale=1.05)
    found = []
    for (x, y, w, h), weight in zip(boxes, np.ravel(weights)):
        if weight < 0.3:  # the weakest hits are mostly clutter
            continue
        found.append({
            "type": "humanBody", "label": "person",
            "confidence": round(float(min(1.0, weight / 2)), 3),
            "bounds": {"x": round(x / width, 5), "y": round(y / height, 5),
                       "width": round(w / width, 5), "height": round(h / height, 5)},
        })
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", default="tcp://127.0.0.1:5560", help="the source's publisher")
    parser.add_argument("--objects", default="tcp://127.0.0.1:5561", help="the source's --metadata-in")
    parser.add_argument("--source-id", default="cam1")
    parser.add_argument("--detector", default="people", help="the detector's name in messages and recordings")
    parser.add_argument("--timeout", type=float, default=60, help="seconds to wait for each message")
    parser.add_argument("--every-frame", action="store_true",
                        help="analyse every frame, however far behind the source it falls (default: the newest)")
    parser.add_argument("--log", help="write every group sent here, a line of JSON each")
    args = parser.parse_args()

    hog = cv2.HOGDescriptor()
    hog.setSVMDetector(cv2.HOGDescriptor_getDefaultPeopleDetector())
    out = zmq.Context.instance().socket(zmq.PUB)
    out.connect(args.objects)
    topic = f"objects/{args.source_id}/".encode()
    log = open(args.log, "w") if args.log else None

    groups, with_people = 0, 0
    try:
        for message, image in gray_frames(args.frames, args.source_id, args.timeout, latest=not args.every_frame):
            items = people(hog, image)
            group = {
                "v": PROTOCOL_VERSION, "kind": "objects", "source": args.source_id, "time": message["time"],
                "objects": {"detector": args.detector, "items": items},
            }
            out.send_multipart([topic, json.dumps(group).encode()])
            if log:
                log.write(json.dumps(group) + "\n")
            groups += 1
            with_people += 1 if items else 0
    except TimeoutError as error:
        print(f"people_detector: {error}", file=sys.stderr)
        return 1
    print(json.dumps({"groups": groups, "withPeople": with_people}), flush=True)
    time.sleep(0.5)
    out.close(linger=1000)
    return 0


if __name__ == "__main__":
    sys.exit(main())
