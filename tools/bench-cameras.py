#!/usr/bin/env python3
"""Cameras per box: how many real-time sources one `serve` analyses on this machine.

For each size (the bundled 1280x720 and 640x480 clips), `serve` runs N copies of the clip
paced in real time (30 fps, looped), every frame analysed for faces with the default
tracking (`--full-scan-interval 5`), nothing recorded. N grows from 1 until a source drops
a frame late or recall falls under 98%. For each N it prints the late drops, recall and
precision against full scans of the same frames (`run --full-scan-interval 1`, every box
compared: tracking must publish dlib's own boxes), the process's CPU per camera and its
memory per camera, over a window of `--seconds` after every source has started.

  python3 tools/bench-cameras.py .build/release/sightline [--seconds 15] [--interval 5]
      [--max 8] [--upsample-too] [--sizes 1280x720,640x480] [--clip FILE]

`--clip FILE` runs a clip of your own instead (10 s at 30 fps, as the bundled ones and
those of tools/make-hard-tracking-media.sh are): the bundled clips are a camera panning,
where a scan beside looks at the strip the pan uncovered; a still camera's, where people
come and go, need it only where they moved.

`--staggered` starts camera n at another of the clip's keyframes (every 2 s in the bundled
clips; the clip cut there and put back together four times over with its packets copied,
so every frame decodes to the clip's pixels): cameras watch different scenes, as real ones
do, instead of all needing their heaviest frames at the same moment.

`--upsample-too` adds `upsample: 1` at 1280x720 for N = 1 and 2. Before each N, the memory
the last N took per camera is checked against what the machine has free: N cameras that
would not fit are one line and exit status 1.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sightline_testkit import free_port, http, wait_for  # noqa: E402

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIPS = {"1280x720": "faces_1280x720.mp4", "640x480": "faces_640x480.mp4"}
FPS, CLIP_FRAMES = 30, 300


def frame_of(time):
    """The clip's frame a (looped) media time shows."""
    return round(time["value"] * FPS / time["timescale"]) % CLIP_FRAMES


def boxes(faces):
    return [tuple(round(f["bounds"][k], 6) for k in ("x", "y", "width", "height")) for f in faces]


def full_scans(binary, clip, upsample, wrap=True):
    """Every frame's faces as a full scan finds them: frame (of the clip, when `wrap`) -> boxes."""
    port = free_port()
    run = subprocess.run([binary, "run", "--source", clip, "--publish", f"tcp://127.0.0.1:{port}", "--print",
                          "--upsample", str(upsample), "--log-level", "error"],
                         capture_output=True, text=True, timeout=900, check=True)
    reference = {}
    for line in run.stdout.splitlines():
        message = json.loads(line) if line.startswith("{") else {}
        if message.get("kind") == "faces":
            time = message["time"]
            frame = frame_of(time) if wrap else round(time["value"] * FPS / time["timescale"])
            reference[frame] = boxes(message["faces"])
    return reference


def process_cpu(pid):
    """User and system CPU seconds of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def available_bytes():
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))


def late_drops(metrics):
    _, _, body = http(f"http://127.0.0.1:{metrics}/metrics")
    total = 0
    for line in body.decode().splitlines():
        if line.startswith("sightline_frames_dropped_total{") and 'output="detect"' in line and 'reason="late"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def staggered_copies(clip, work):
    """The clip four times over from each of its keyframes, packets copied: copy k starts at
    keyframe k. A copy put back together is not exactly four clips long (ffmpeg's joins add
    a frame's time here and there), so each is compared with full scans of itself, and
    lasts longer than a round, so that it never loops."""
    folder = tempfile.mkdtemp(prefix="staggered-", dir=work)
    pattern = os.path.join(folder, "part%03d.mp4")
    subprocess.run(["ffmpeg", "-v", "error", "-i", clip, "-c", "copy", "-f", "segment", "-segment_time", "1",
                    "-reset_timestamps", "1", pattern], check=True)
    parts = sorted(os.path.join(folder, name) for name in os.listdir(folder) if name.startswith("part"))
    copies = []
    for first in range(len(parts)):
        listing, copy = (os.path.join(folder, f"from{first:03d}.{ext}") for ext in ("txt", "mp4"))
        with open(listing, "w") as f:
            f.writelines(f"file '{part}'\n" for part in (parts[first:] + parts[:first]) * 4)
        subprocess.run(["ffmpeg", "-v", "error", "-f", "concat", "-safe", "0", "-i", listing, "-c", "copy", copy],
                       check=True)
        copies.append(copy)
    return copies


def serve_round(binary, clips, seconds, interval, upsample, work):
    """One `serve` with a source for each of `clips` (cam1 shows the first): what it dropped,
    published and cost."""
    cameras = len(clips)
    publish, metrics = free_port(), free_port()
    config = os.path.join(work, f"cameras-{cameras}.yml")
    with open(config, "w") as f:
        f.write(f"publish: tcp://127.0.0.1:{publish}\nmetrics: 127.0.0.1:{metrics}\n")
        f.write(f"defaults:\n  detect: faces\n  realtime: true\n  loop: true\n  full-scan-interval: {interval}\n"
                f"  upsample: {upsample}\nsources:\n")
        for n, clip in enumerate(clips, 1):
            f.write(f"  - source-id: cam{n}\n    source: {clip}\n")
    subscriber = zmq.Context.instance().socket(zmq.SUB)
    for topic in (b"faces/", b"status/"):
        subscriber.setsockopt(zmq.SUBSCRIBE, topic)
    subscriber.connect(f"tcp://127.0.0.1:{publish}")
    serve = subprocess.Popen([binary, "serve", "--config", config, "--log-level", "error"])
    try:
        started = set()
        def all_started():
            # Until every source has said so: faces messages keep coming all the while.
            while len(started) < cameras and subscriber.poll(50):
                _, body = subscriber.recv_multipart()[:2]
                message = json.loads(body)
                if message["kind"] == "status" and message["status"]["state"] in ("started", "running"):
                    started.add(message["source"])
            return len(started) == cameras
        wait_for(all_started, timeout=120, what=f"{cameras} sources started")
        time.sleep(2)  # a benchmark's warm-up: the first full scans and allocations
        while subscriber.poll(0):
            subscriber.recv_multipart()
        cpu0, drops0, t0 = process_cpu(serve.pid), late_drops(metrics), time.monotonic()
        published = {}
        while time.monotonic() - t0 < seconds:
            if subscriber.poll(100):
                _, body = subscriber.recv_multipart()[:2]
                message = json.loads(body)
                if message["kind"] == "faces":
                    published.setdefault(message["source"], []).append(
                        (message["time"]["value"] / message["time"]["timescale"], boxes(message["faces"])))
        elapsed = time.monotonic() - t0
        cpu, drops, rss = process_cpu(serve.pid) - cpu0, late_drops(metrics) - drops0, rss_bytes(serve.pid)
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=120)
        subscriber.close(0)
    return {"cpu": cpu / elapsed, "drops": drops, "rss": rss, "published": published}


def recall_precision(published, references):
    """Over every frame between each source's first and last faces message in the window: the
    full scans' boxes tracking published, and the boxes it published that full scans have.
    `references`: by source, its file's full scans and whether they are by frame of the clip
    (a looped clip) or of the file."""
    wanted = found = sent = right = 0
    for source, messages in published.items():
        by_frame = {round(t * FPS): faces for t, faces in messages}
        first, last = min(by_frame), max(by_frame)
        reference, wrap = references[source]
        for frame in range(first, last + 1):
            expected = reference.get(frame % CLIP_FRAMES if wrap else frame, [])
            got = by_frame.get(frame, [])
            wanted += len(expected)
            found += sum(1 for box in expected if box in got)
            sent += len(got)
            right += sum(1 for box in got if box in expected)
    return found / max(wanted, 1), right / max(sent, 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--interval", type=int, default=5)
    parser.add_argument("--max", type=int, default=8, help="the most cameras to try")
    parser.add_argument("--upsample-too", action="store_true")
    parser.add_argument("--sizes", default=",".join(CLIPS), help="of: " + ", ".join(CLIPS))
    parser.add_argument("--clip", help="a 10 s 30 fps clip of your own instead of the bundled ones")
    parser.add_argument("--staggered", action="store_true", help="start each camera at another keyframe")
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    work = tempfile.mkdtemp(prefix="sightline-cameras-")
    media = os.path.join(HERE, "Sources/SightlineSamples/Media")
    rounds = [(size, os.path.join(media, CLIPS[size]), 0, range(1, args.max + 1))
              for size in args.sizes.split(",") if size in CLIPS]
    if args.upsample_too:
        rounds.append(("1280x720", os.path.join(media, CLIPS["1280x720"]), 1, range(1, 3)))
    if args.clip:
        rounds = [(os.path.basename(args.clip), os.path.abspath(args.clip), 0, range(1, args.max + 1))]
    print(f"serve, faces, --full-scan-interval {args.interval}, real time, {args.seconds:g} s a round"
          f"{', cameras started at different keyframes' if args.staggered else ''}; "
          f"recall and precision against full scans of the same frames")
    for size, clip, upsample, counts in rounds:
        copies = staggered_copies(clip, work) if args.staggered else [clip]
        wrap = not args.staggered  # the clip itself loops; the copies never do
        references = {copy: (full_scans(binary, copy, upsample, wrap), wrap) for copy in copies}
        per_camera_memory, holds = None, 0
        for cameras in counts:
            if per_camera_memory and per_camera_memory * cameras > available_bytes():
                print(f"{cameras} cameras need about {per_camera_memory * cameras / 2**30:.1f} GiB; "
                      f"{available_bytes() / 2**30:.1f} GiB is free", file=sys.stderr)
                sys.exit(1)
            clips = [copies[n % len(copies)] for n in range(cameras)]
            result = serve_round(binary, clips, args.seconds, args.interval, upsample, work)
            recall, precision = recall_precision(
                result["published"], {f"cam{n}": references[clip] for n, clip in enumerate(clips, 1)})
            per_camera_memory = result["rss"] / cameras
            ok = result["drops"] == 0 and recall >= 0.98
            holds = cameras if ok else holds
            print(f"{size} upsample {upsample}  N={cameras}  late drops {result['drops']:5.0f}  recall {recall:7.2%}  "
                  f"precision {precision:7.2%}  CPU {result['cpu'] / cameras:5.2f} cores/camera  "
                  f"memory {per_camera_memory / 2**20:6.1f} MiB/camera  {'holds' if ok else 'does not hold'}",
                  flush=True)
            if not ok:
                break
        print(f"{size} upsample {upsample}: {holds} camera{'s' if holds != 1 else ''} in real time")


if __name__ == "__main__":
    main()
