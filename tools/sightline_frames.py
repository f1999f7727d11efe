"""Gray frames from a running Sightline source, for detectors in other processes
(tools/haar_detector.py, tools/people_detector.py): subscribes to the source's `frames`
(run with `--frames gray8`) and `status`, and yields each frame until the source's final
status. Wire format: docs/protocol.md.
"""
import json

import numpy as np
import zmq

PROTOCOL_VERSION = 1


def gray_frames(endpoint, source_id, timeout, latest=False):
    """Yields (message, image) for each gray8 frame, the image a numpy array of its rows;
    returns at the source's final status, raises TimeoutError after `timeout` seconds
    without a message. With `latest`, a frame that waited while the caller worked on the
    last is skipped for the newest one, as a source discards late frames: a detector slower
    than the frame rate then answers at most one detection behind instead of falling ever
    further behind, and its answers still reach a source that is about to end."""
    frames = zmq.Context.instance().socket(zmq.SUB)
    frames.connect(endpoint)
    for kind in ("frames", "status"):
        frames.setsockopt_string(zmq.SUBSCRIBE, f"{kind}/{source_id}/")
    frames.setsockopt(zmq.RCVTIMEO, int(timeout * 1000))

    def receive(block):
        """The next message and its parts, or None when `block` is false and none waits."""
        try:
            parts = frames.recv_multipart(0 if block else zmq.NOBLOCK)
        except zmq.Again:
            if block:
                raise TimeoutError(f"no message within {timeout} s") from None
            return None
        message = json.loads(parts[1])
        return (message, parts) if message.get("v") == PROTOCOL_VERSION else receive(block)

    def gray(message, parts):
        info = message.get("frame", {})
        if message["kind"] != "frames" or info.get("format") != "gray8" or len(parts) < 3:
            return None
        return message, np.frombuffer(parts[2], dtype=np.uint8).reshape(info["height"], info["width"])

    def final(message):
        return message["kind"] == "status" and message["status"]["state"] in ("stopped", "failed")

    try:
        while True:
            message, parts = receive(block=True)
            if final(message):
                return
            newest = gray(message, parts)
            ended = False
            while latest and not ended and (waiting := receive(block=False)) is not None:
                ended = final(waiting[0])
                newest = gray(*waiting) or newest
            if newest:
                yield newest
            if ended:
                return
    finally:
        frames.close(linger=0)
