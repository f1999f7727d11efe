#!/usr/bin/env python3
"""Crash campaign: `sightline run --record` killed with SIGKILL at random moments, some while
recording, some right as a file is rotated, some while SIGTERM is finalising. Each run's
start-up recovery finalises what the run before left, `sightline recover` the last one's.
The source has sound (AAC beside the sample's video). Then every file in the directory must
decode with ffmpeg -xerror, picture and sound, and hold every frame the recorder had synced
to disk before it died (it logs each synced fragment): a kill loses at
most the fragment in progress. A file cut off before its first fragment must be gone.

Usage: tools/test-crash.py SIGHTLINE_BINARY [KILLS]   (50 kills; tools/test.sh runs it with
SIGHTLINE_LONG_TESTS=1)
"""
import pathlib
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from serve_support import free_port, wait_for  # noqa: E402

binary = sys.argv[1]
kills = int(sys.argv[2]) if len(sys.argv) > 2 else 50
media = pathlib.Path(__file__).resolve().parent.parent / "Sources/SightlineSamples/Media/faces_640x480.mp4"
work = pathlib.Path(tempfile.mkdtemp(prefix="sightline-crash-"))
recordings = work / "recordings"
random.seed(int(time.time()))
source = work / "faces_with_sound.mp4"
subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(media), "-f", "lavfi", "-i",
                "sine=frequency=440:sample_rate=48000:duration=10", "-ac", "2", "-map", "0:v", "-map", "1:a",
                "-c:v", "copy", "-c:a", "aac", "-shortest", str(source)], check=True)
synced = {}  # file -> frames synced before the kill
modes = {"while recording": 0, "at rotation": 0, "while finalising": 0}
failures = []

for attempt in range(kills):
    log_path = work / f"run-{attempt}.log"
    with open(log_path, "w") as log:
        # Key frames every 10 frames: files rotate every second, fragments every half.
        run = subprocess.Popen(
            [binary, "run", "--source", str(source), "--realtime", "--record", str(recordings), "--segment", "1s",
             "--fragment", "0.5", "--reencode", "--gop", "10", "--publish", f"tcp://127.0.0.1:{free_port()}",
             "--log-level", "debug"], stdout=subprocess.DEVNULL, stderr=log)
        mode = ["while recording", "at rotation", "while finalising"][attempt % 3]
        modes[mode] += 1
        if mode == "while recording":
            time.sleep(random.uniform(0.2, 4.0))
        elif mode == "at rotation":
            # Just after a file is finalised, as the next one opens.
            rotations = random.randint(1, 3)
            wait_for(lambda: log_path.read_text().count("] recorded") >= rotations or run.poll() is not None, 60,
                     "a rotation")
        else:
            wait_for(lambda: "fragment synced" in log_path.read_text() or run.poll() is not None, 60,
                     "a fragment")
            time.sleep(random.uniform(0.0, 1.5))
            run.send_signal(signal.SIGTERM)
            time.sleep(random.uniform(0.0, 0.15))
        run.kill()
        run.wait()
    for line in log_path.read_text().splitlines():
        match = re.search(r"file=(\S+) frames=(\d+) \[SightlineRecorder\] fragment synced", line)
        if match:
            synced[match.group(1)] = max(synced.get(match.group(1), 0), int(match.group(2)))
        match = re.search(r"bytes=\d+ file=(\S+) frames=(\d+) \[SightlineRecorder\] recorded", line)
        if match:
            synced[match.group(1)] = max(synced.get(match.group(1), 0), int(match.group(2)))

recover = subprocess.run([binary, "recover", *map(str, sorted(recordings.glob("*.mov")))], capture_output=True,
                         text=True)
if recover.returncode != 0:
    failures.append(f"recover failed: {recover.stderr.strip()}")
removed = sum(log.read_text().count("no frame)") for log in work.glob("run-*.log")) + recover.stdout.count("no frame)")

checked = kept_frames = 0
for path, frames in sorted(synced.items()):
    if frames > 0 and not pathlib.Path(path).exists():
        failures.append(f"{pathlib.Path(path).name} had {frames} frames synced and is gone")
for movie in sorted(recordings.glob("*.mov")):
    decoded = subprocess.run(["ffmpeg", "-v", "error", "-xerror", "-i", str(movie), "-f", "null", "-"],
                             capture_output=True, text=True)
    probe = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                            "stream=nb_read_frames", "-of", "csv=p=0", str(movie)], capture_output=True, text=True)
    frames = int(probe.stdout.strip() or 0)
    sound = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_entries", "stream=codec_name",
                            "-of", "csv=p=0", str(movie)], capture_output=True, text=True).stdout.strip()
    if sound != "aac":
        failures.append(f"{movie.name} has no sound track ({sound or 'none'})")
    checked += 1
    kept_frames += frames
    if decoded.returncode != 0 or decoded.stderr.strip() or frames == 0:
        failures.append(f"{movie.name} does not play: {frames} frames, {decoded.stderr.strip()[:200]}")
    if frames < synced.get(str(movie), 0):
        failures.append(f"{movie.name}: {frames} frames kept of {synced[str(movie)]} synced before the kill")

print(f"crash campaign: {kills} kills ({', '.join(f'{n} {m}' for m, n in modes.items())}); {checked} files play, "
      f"{kept_frames} frames kept; {removed} files cut off before their first fragment removed")
for failure in failures:
    print("FAILED:", failure)
print(f"{1 if not failures else 0} passed, {1 if failures else 0} failed: crash campaign")
sys.exit(1 if failures else 0)
