#!/usr/bin/env python3
"""Soak: `sightline serve` with two looped sources recording (segments, retention), for
SIGHTLINE_SOAK_MINUTES (30 by default). Resident memory and open file descriptors are
sampled every minute and printed as a table; both must stay flat once warmed up, /health
must stay 200 and /metrics must keep counting. SIGTERM then finalises every file, and each
decodes with ffmpeg -xerror.

Usage: tools/test-soak.py SIGHTLINE_BINARY   (run by tools/test.sh with SIGHTLINE_LONG_TESTS=1)
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from serve_support import free_port, metric_values, wait_for  # noqa: E402

binary = sys.argv[1]
minutes = int(os.environ.get("SIGHTLINE_SOAK_MINUTES", "30"))
media = pathlib.Path(__file__).resolve().parent.parent / "Sources/SightlineSamples/Media"
work = pathlib.Path(tempfile.mkdtemp(prefix="sightline-soak-"))
metrics_port, bus_port = free_port(), free_port()
config = work / "sightline.yml"
config.write_text(f"""
publish: tcp://127.0.0.1:{bus_port}
metrics: 127.0.0.1:{metrics_port}
defaults:
  realtime: true
  loop: true
  record: {work}/recordings
  segment: 30s
  keep: 3m
sources:
  - source-id: lobby
    source: {media}/faces_640x480.mp4
  - source-id: shelf
    source: {media}/barcodes_640x480.mp4
    detect: barcodes
""")
log = open(work / "serve.log", "w")
serve = subprocess.Popen([binary, "serve", "--config", str(config)], stderr=log, stdout=log)
base = f"http://127.0.0.1:{metrics_port}"


def get(path):
    try:
        with urllib.request.urlopen(base + path, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def sample():
    rss = next(int(line.split()[1]) for line in open(f"/proc/{serve.pid}/status") if line.startswith("VmRSS:"))
    fds = len(os.listdir(f"/proc/{serve.pid}/fd"))
    return rss // 1024, fds


failures = []
try:
    wait_for(lambda: get("/health")[0] == 200, 60, "serve to be healthy")
    rows = []
    for minute in range(minutes + 1):
        if minute:
            time.sleep(60)
        status, body = get("/health")
        frames = int(sum(metric_values(get("/metrics")[1], "sightline_frames_total").values()))
        rss, fds = sample()
        files = len(list((work / "recordings").glob("*.mov")))
        rows.append((minute, rss, fds, frames, files, status))
        print(f"minute {minute:3d}: rss {rss:4d} MiB, fds {fds:3d}, frames {frames:7d}, "
              f"files {files:3d}, health {status}", flush=True)
        if status != 200:
            failures.append(f"minute {minute}: /health {status}: {body}")
    warm = [row for row in rows if row[0] >= min(5, minutes // 2)]
    rss_growth = warm[-1][1] - warm[0][1]
    fd_growth = warm[-1][2] - warm[0][2]
    print(f"after warm-up (minute {warm[0][0]} to {warm[-1][0]}): rss {warm[0][1]} -> {warm[-1][1]} MiB "
          f"({rss_growth:+d}), fds {warm[0][2]} -> {warm[-1][2]} ({fd_growth:+d}); "
          f"rss range {min(r[1] for r in warm)}..{max(r[1] for r in warm)} MiB")
    if rss_growth > 32:
        failures.append(f"resident memory grew by {rss_growth} MiB after warm-up")
    if fd_growth > 4:
        failures.append(f"open file descriptors grew by {fd_growth} after warm-up")
    if rows[-1][3] <= rows[0][3]:
        failures.append("frames stopped counting")
    if minutes >= 4 and rows[-1][4] > 2 * (3 * 60 // 30 + 2):
        failures.append(f"retention kept {rows[-1][4]} files (keep 3m of 30 s segments, two sources)")
finally:
    serve.send_signal(signal.SIGTERM)
    serve.wait(timeout=120)
    log.close()

for movie in sorted((work / "recordings").glob("*.mov")):
    decoded = subprocess.run(["ffmpeg", "-v", "error", "-xerror", "-i", str(movie), "-f", "null", "-"],
                             capture_output=True, text=True)
    if decoded.returncode != 0 or decoded.stderr.strip():
        failures.append(f"{movie.name} does not decode: {decoded.stderr.strip()[:200]}")
if serve.returncode != 0:
    failures.append(f"serve exited with {serve.returncode}")
for failure in failures:
    print("FAILED:", failure)
print(f"{1 if not failures else 0} passed, {1 if failures else 0} failed: soak ({minutes} minutes)")
sys.exit(1 if failures else 0)
