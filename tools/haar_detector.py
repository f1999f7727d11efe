#!/usr/bin/env python3
"""A face detector in another language, plugged into Sightline: subscribes to a source's
downscaled frames, finds faces with OpenCV's Haar cascade, and publishes them back as
timed metadata, which the recorder writes as a track of its own.

  python3 tools/haar_detector.py [--frames tcp://127.0.0.1:5560]
                                 [--metadata tcp://127.0.0.1:5561] [--source-id cam1]

Needs `sightline run --frames gray8 --metadata-in ENDPOINT`, numpy and OpenCV 4
(opencv-python-headless, which carries the cascades). Each analysed frame with faces gives
one group with `mdta/com.example.haar-faces`: a JSON array of [x, y, width, height]
boxes, normalised to the frame, timed at the frame; an empty group ends them when the faces
go. Wire format: docs/protocol.md. Exits at the source's final status.
"""
import argparse
import json
import sys
import time

import cv2
import zmq

from sightline_frames import PROTOCOL_VERSION, gray_frames
IDENTIFIER = "mdta/com.example.haar-faces"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", default="tcp://127.0.0.1:5560", help="the source's publisher")
    parser.add_argument("--metadata", default="tcp://127.0.0.1:5561", help="the source's --metadata-in")
    parser.add_argument("--source-id", default="cam1")
    parser.add_argument("--timeout", type=float, default=60, help="seconds to wait for each message")
    args = parser.parse_args()

    cascade = cv2.CascadeClassifier(cv2.data.haarcascades + "haarcascade_frontalface_default.xml")
    out = zmq.Context.instance().socket(zmq.PUB)
    out.connect(args.metadata)
    topic = f"metadata/{args.source_id}/".encode()

    seq, analysed, with_faces, had_faces = 0, 0, 0, False
    try:
        for message, image in gray_frames(args.frames, args.source_id, args.timeout):
            faces = cascade.detectMultiScale(image, scaleFactor=1.1, minNeighbors=5, minSize=(20, 20))
            analysed += 1
            if len(faces) == 0 and not had_faces:
                continue
            h, w = image.shape
            boxes = [[round(x / w, 4), round(y / h, 4), round(bw / w, 4), round(bh / h, 4)] for x, y, bw, bh in faces]
            items = [{"identifier": IDENTIFIER, "dataType": "utf8", "value": json.dumps(boxes)}] if boxes else []
            group = {
                "v": PROTOCOL_VERSION, "kind": "metadata", "source": args.source_id, "seq": seq,
                "time": message["time"], "wallTimeNs": message["wallTimeNs"],
                "metadata": {"input": "haar", "items": items},
            }
            out.send_multipart([topic, json.dumps(group).encode()])
            seq += 1
            with_faces += 1 if boxes else 0
            had_faces = bool(boxes)
    except TimeoutError as error:
        print(f"haar_detector: {error}", file=sys.stderr)
        return 1
    print(json.dumps({"analysed": analysed, "withFaces": with_faces, "groups": seq}), flush=True)
    time.sleep(0.5)
    out.close(linger=1000)
    return 0


if __name__ == "__main__":
    sys.exit(main())
