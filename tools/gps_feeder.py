#!/usr/bin/env python3
"""Feeds GPS positions to a Sightline source as timed metadata: an example client that
plays the part of AVCaptureMetadataInput, in another language.

  python3 tools/gps_feeder.py [--connect tcp://127.0.0.1:5561] [--source-id cam1]
                              [--rate 1] [--duration 10]

It connects a PUB socket to the endpoint `sightline run --metadata-in` binds and publishes
one `metadata/<source>/` group per fix, holding Apple's ISO 6709 location
(`mdta/com.apple.quicktime.location.ISO6709`), then an empty group, which ends the value.
A recording shows it as GPS coordinates (exiftool -ee). The fixes here walk a short
route; a real feeder would read gpsd. Wire format: docs/protocol.md.
"""
import argparse
import json
import time

import zmq

PROTOCOL_VERSION = 1
LOCATION = "mdta/com.apple.quicktime.location.ISO6709"


def iso6709(latitude, longitude, altitude):
    return f"{latitude:+08.4f}{longitude:+09.4f}{altitude:+08.3f}/"


def group(source, seq, items):
    return {
        "v": PROTOCOL_VERSION, "kind": "metadata", "source": source, "seq": seq,
        # No "time": the source places the group on its timeline by this wall-clock time.
        "wallTimeNs": time.time_ns(),
        "metadata": {"input": "gps", "items": items},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connect", default="tcp://127.0.0.1:5561")
    parser.add_argument("--source-id", default="cam1")
    parser.add_argument("--rate", type=float, default=1, help="fixes per second")
    parser.add_argument("--duration", type=float, default=10, help="seconds to feed")
    parser.add_argument("--start", default="48.8584,2.2945", help="latitude,longitude of the first fix")
    args = parser.parse_args()

    socket = zmq.Context.instance().socket(zmq.PUB)
    socket.connect(args.connect)
    topic = f"metadata/{args.source_id}/".encode()
    time.sleep(0.5)  # a PUB socket drops what it sends before the connection is up

    latitude, longitude = (float(x) for x in args.start.split(","))
    seq, end = 0, time.monotonic() + args.duration
    while time.monotonic() < end:
        fix = iso6709(latitude + seq * 0.0001, longitude + seq * 0.0001, 35.0)
        item = {"identifier": LOCATION, "dataType": "com.apple.quicktime.location.ISO6709", "value": fix}
        socket.send_multipart([topic, json.dumps(group(args.source_id, seq, [item])).encode()])
        print(f"gps_feeder: {fix}", flush=True)
        seq += 1
        time.sleep(1 / args.rate)
    socket.send_multipart([topic, json.dumps(group(args.source_id, seq, [])).encode()])
    time.sleep(0.5)  # let it leave before the socket closes
    socket.close(linger=1000)


if __name__ == "__main__":
    main()
