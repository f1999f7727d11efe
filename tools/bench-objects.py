#!/usr/bin/env python3
"""What a flood of objects from a detector in another process costs a source that records:
`sightline run --realtime --loop --record` on the 1280x720 sample for the same time with
no detector (the baseline), with one sending 200 groups/s of 50 objects each (the most the
input takes by default), and with one sending 1,000 groups/s (a flood past the limit).
Prints, for each run and as a ratio of the baseline: frames in per second, frames the face
detector dropped as late, the process's CPU seconds, and what the input took and dropped.

  python3 tools/bench-objects.py .build/release/sightline [--seconds 20]
"""
import argparse
import json
import os
import resource
import signal
import socket
import subprocess
import tempfile
import threading
import time

import zmq

here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
clip = os.path.join(here, "Sources/SightlineSamples/Media/faces_1280x720.mp4")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def flood(endpoint, rate, stop):
    """Sends `rate` groups a second of 50 objects each until `stop` is set."""
    context = zmq.Context.instance()
    out = context.socket(zmq.PUB)
    out.setsockopt(zmq.SNDHWM, 100_000)
    out.connect(endpoint)
    items = [{"type": "humanBody", "label": "person", "confidence": 0.5,
              "bounds": {"x": (i % 10) / 10, "y": (i // 10) / 5, "width": 0.08, "height": 0.18}} for i in range(50)]
    body = json.dumps({"v": 1, "kind": "objects", "source": "cam1",
                       "objects": {"detector": "flood", "items": items}}).encode()
    sent, start = 0, time.monotonic()
    while not stop.is_set():
        due = start + sent / rate
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        out.send_multipart([b"objects/cam1/", body])
        sent += 1
    out.close(linger=0)
    return sent


def measure(binary, seconds, rate):
    publish, objects_in = free_port(), free_port()
    work = tempfile.mkdtemp(prefix="sightline-bench-objects-")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # The final status, read off the bus as a client would (printing every message would
    # cost the source more than the objects do).
    statuses = zmq.Context.instance().socket(zmq.SUB)
    statuses.setsockopt(zmq.SUBSCRIBE, b"status/")
    statuses.connect(f"tcp://127.0.0.1:{publish}")
    run = subprocess.Popen([binary, "run", "--source", clip, "--realtime", "--loop", "--drop-late",
                            "--publish", f"tcp://127.0.0.1:{publish}", "--metadata-in", f"tcp://127.0.0.1:{objects_in}",
                            "--wait-for-subscriber", "30", "--record", work, "--log-level", "error"])
    stop = threading.Event()
    result = {}
    sender = threading.Thread(target=lambda: result.update(sent=flood(f"tcp://127.0.0.1:{objects_in}", rate, stop)))
    if rate:
        sender.start()
    time.sleep(seconds)
    stop.set()
    if rate:
        sender.join()
    run.send_signal(signal.SIGINT)
    run.wait(timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    final = None
    while statuses.poll(5000):
        message = json.loads(statuses.recv_multipart()[1])
        if message["status"]["state"] == "stopped":
            final = message
            break
    statuses.close(linger=0)
    counters = final["status"]["counters"]
    detect = counters["outputs"].get("detect", {})
    taken = counters.get("objectsIn", {}).get("flood", {})
    return {
        "fps": counters["framesIn"] / seconds,
        "late": detect.get("dropped", {}).get("late", 0),
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "sent": result.get("sent", 0), "taken": taken.get("groups", 0),
        "flood": taken.get("rejected", {}).get("flood", 0),
        "files": len([f for f in os.listdir(work) if f.endswith(".mov")]),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    base = measure(args.binary, args.seconds, 0)
    print(f"baseline     {base['fps']:.1f} frames/s, {base['late']} late, {base['cpu']:.1f} s CPU")
    for rate in (200, 1000):
        r = measure(args.binary, args.seconds, rate)
        print(f"{rate:>4} groups/s  {r['fps']:.1f} frames/s ({r['fps'] / base['fps']:.2f}x), {r['late']} late, "
              f"{r['cpu']:.1f} s CPU ({r['cpu'] / base['cpu']:.2f}x); sent {r['sent']}, taken {r['taken']}, "
              f"dropped as flood {r['flood']}; {r['files']} file(s)")


if __name__ == "__main__":
    main()
