#!/usr/bin/env python3
"""Subscribes to Sightline and prints face events: an example client in another language.

  python3 tools/face_events.py [--connect tcp://127.0.0.1:5560] [--source-id cam1]
                               [--until-stopped] [--summary]

Wire format (docs/protocol.md): multipart [topic][JSON message][optional payload].
Topics are "<kind>/<source>/", so the prefix "events/cam1/" matches cam1 exactly.
"""
import argparse
import json
import sys

import zmq

PROTOCOL_VERSION = 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connect", default="tcp://127.0.0.1:5560")
    parser.add_argument("--source-id", default="", help="only this source (default: all)")
    parser.add_argument("--until-stopped", action="store_true", help="exit at the source's final status")
    parser.add_argument("--summary", action="store_true", help="print a JSON summary at the end")
    parser.add_argument("--timeout", type=float, default=60, help="seconds to wait for each message")
    args = parser.parse_args()

    source = f"{args.source_id}/" if args.source_id else ""
    socket = zmq.Context.instance().socket(zmq.SUB)
    socket.connect(args.connect)
    for kind in ("events", "status"):
        socket.setsockopt_string(zmq.SUBSCRIBE, f"{kind}/{source}")
    socket.setsockopt(zmq.RCVTIMEO, int(args.timeout * 1000))

    entered, left, last_seq = [], [], {}
    while True:
        try:
            frames = socket.recv_multipart()
        except zmq.Again:
            print("face_events: no message within the timeout", file=sys.stderr)
            return 1
        topic = frames[0].decode()
        message = json.loads(frames[1])
        if message.get("v") != PROTOCOL_VERSION:
            print(f"face_events: skipping protocol version {message.get('v')}", file=sys.stderr)
            continue
        expected = last_seq.get(topic, -1) + 1
        if message["seq"] != expected:
            print(f"face_events: {topic} lost {message['seq'] - expected} messages", file=sys.stderr)
        last_seq[topic] = message["seq"]

        if message["kind"] == "events":
            event = message["event"]
            face = event["face"]
            t = message["time"]["value"] / message["time"]["timescale"]
            b = face["bounds"]
            # With `run --gallery`, named faces carry who they are; `identified` says when a
            # tracked face becomes known.
            who = f" {face['identity']['name']}" if face.get("identity") else ""
            print(f"{message['source']} {t:7.3f}s face {event['id']} {event['change']:5} "
                  f"box x={b['x']:.3f} y={b['y']:.3f} w={b['width']:.3f} h={b['height']:.3f} "
                  f"score={face['score']:.2f}{who}", flush=True)
            if event["change"] in ("enter", "leave"):
                (entered if event["change"] == "enter" else left).append(event["id"])
        elif message["status"]["state"] in ("stopped", "failed"):
            print(f"{message['source']} {message['status']['state']}: {message['status'].get('reason', '')}", flush=True)
            if args.until_stopped:
                break
    if args.summary:
        print(json.dumps({"entered": entered, "left": left}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
