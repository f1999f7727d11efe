"""Gray frames from a running Sightline source, for detectors in other processes
(tools/haar_detector.py, tools/people_detector.py): subscribes to the source's `frames`
(run with `--frames gray8`) and `status`, and yields each frame until the source's final
status. Wire format: docs/protocol.md.
"""
import json

import numpy as np
import zmq

PROTOCOL_VERSION = 1


def gray_frames(endpoint, source_id, timeout):
    """Yields (message, image) for each gray8 frame, the image a numpy array of its rows;
    returns at the source's final status, raises TimeoutError after `timeout` seconds
    without a message."""
    frames = zmq.Context.instance().socket(zmq.SUB)
    frames.connect(endpoint)
    for kind in ("frames", "status"):
        frames.setsockopt_string(zmq.SUBSCRIBE, f"{kind}/{source_id}/")
    frames.setsockopt(zmq.RCVTIMEO, int(timeout * 1000))
    try:
        while True:
            try:
                parts = frames.recv_multipart()
            except zmq.Again:
                raise TimeoutError(f"no message within {timeout} s") from None
            message = json.loads(parts[1])
            if message.get("v") != PROTOCOL_VERSION:
                continue
            if message["kind"] == "status":
                if message["status"]["state"] in ("stopped", "failed"):
                    return
                continue
            info = message["frame"]
            if info["format"] != "gray8" or len(parts) < 3:
                continue
            yield message, np.frombuffer(parts[2], dtype=np.uint8).reshape(info["height"], info["width"])
    finally:
        frames.close(linger=0)
