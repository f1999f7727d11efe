#!/usr/bin/env python3
"""Benchmarks the browser console in one run, against baselines measured in the same run:

- live delay, capture to the browser's paint (p50/p99), against the frames output alone
  (a pyzmq subscriber's receive time less the same frames' capture time);
- the console process's CPU per live source at 5 and 15 frames/s;
- a 10-minute recording with faces on every frame: the player's metadata JSON (size, time
  cold and cached) and the player page's time to its first frame.

  tools/bench-console.py [PATH/TO/sightline] [--seconds 20]

Needs what tools/setup.sh installs (chromium, chromium-driver, selenium). Prints figures;
judges nothing.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib import import_module

console_test = import_module("test-console")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))] if ordered else float("nan")


class FramesDelay(threading.Thread):
    """Receive time less capture time of every `frames` message: the frames output alone."""

    def __init__(self, endpoint):
        super().__init__(daemon=True)
        self.socket = zmq.Context.instance().socket(zmq.SUB)
        self.socket.setsockopt(zmq.SUBSCRIBE, b"frames/")
        self.socket.connect(endpoint)
        self.delays, self.running = [], True

    def run(self):
        while self.running:
            if self.socket.poll(100):
                frames = self.socket.recv_multipart()
                self.delays.append((time.time_ns() - json.loads(frames[1])["wallTimeNs"]) / 1e6)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def live(binary, rate, seconds):
    publish, port = console_test.free_port(), console_test.free_port()
    base = f"http://127.0.0.1:{port}"
    source = subprocess.Popen([binary, "run", "--realtime", "--loop", "--frames", "jpeg", "--frames-rate", str(rate),
                               "--publish", f"tcp://127.0.0.1:{publish}", "--log-level", "error"])
    console = subprocess.Popen([binary, "console", "--connect", f"tcp://127.0.0.1:{publish}", "--listen",
                                f"127.0.0.1:{port}", "--log-level", "error"])
    baseline = FramesDelay(f"tcp://127.0.0.1:{publish}")
    baseline.start()
    driver = console_test.browser()
    try:
        console_test.wait_for(lambda: console_test.serving(base, console), what="the console")
        driver.get(base + "/live/cam1")
        console_test.wait_for(lambda: driver.execute_script("return sightline.liveDelays.length") >= 5, timeout=120,
                              what="live frames")
        # Measure from here: the same window for the browser, the baseline and the CPU.
        driver.execute_script("sightline.liveDelays.length = 0")
        baseline.delays.clear()
        cpu_before, wall_before = cpu_seconds(console.pid), time.monotonic()
        time.sleep(seconds)
        cpu = (cpu_seconds(console.pid) - cpu_before) / (time.monotonic() - wall_before)
        delays = driver.execute_script("return sightline.liveDelays.slice()")
        frames_alone = list(baseline.delays)
    finally:
        baseline.running = False
        driver.quit()
        for process in (console, source):
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
    return delays, frames_alone, cpu


def recording(binary, work):
    directory = os.path.join(work, "long")
    os.makedirs(directory)
    path = os.path.join(directory, "cam1-20261124T000000Z.mov")
    subprocess.check_call([binary, "bench", "movie", "--write-long-recording", path])
    port = console_test.free_port()
    base = f"http://127.0.0.1:{port}"
    console = subprocess.Popen([binary, "console", "--recordings", directory, "--listen", f"127.0.0.1:{port}",
                                "--log-level", "error"])
    driver = console_test.browser()
    try:
        console_test.wait_for(lambda: console_test.serving(base, console), what="the console")
        url = f"{base}/api/recordings/{os.path.basename(path)}/metadata"

        def first_frame():
            driver.get(f"{base}/recordings/{os.path.basename(path)}")
            return console_test.wait_for(
                lambda: driver.execute_script("return sightline.player && sightline.player.firstFrameMs"),
                timeout=120, what="the first frame") / 1000

        cold_page = first_frame()  # the console reads the file's metadata for this one
        timings = []
        for attempt in range(4):
            if attempt == 0:
                os.utime(path)  # a new version of the file: read again
            started = time.monotonic()
            body = urllib.request.urlopen(url, timeout=120).read()
            timings.append(time.monotonic() - started)
        metadata = json.loads(body)
        warm_pages = [first_frame() for _ in range(3)]
    finally:
        driver.quit()
        console.send_signal(signal.SIGTERM)
        console.wait(timeout=60)
    return len(body), len(metadata["faces"]), timings[0], statistics.median(timings[1:]), cold_page, warm_pages


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary", nargs="?", default=os.path.join(ROOT, ".build/release/sightline"))
    parser.add_argument("--seconds", type=float, default=20)
    options = parser.parse_args()
    work = tempfile.mkdtemp(prefix="sightline-bench-console-")
    try:
        for rate in (5, 15):
            delays, alone, cpu = live(options.binary, rate, options.seconds)
            print(f"live {rate:>2} fps   capture to paint   p50 {percentile(delays, 50):6.1f} ms  p99 "
                  f"{percentile(delays, 99):6.1f} ms  ({len(delays)} frames painted)")
            print(f"live {rate:>2} fps   frames output alone p50 {percentile(alone, 50):6.1f} ms  p99 "
                  f"{percentile(alone, 99):6.1f} ms  -> the console and browser add "
                  f"{percentile(delays, 50) - percentile(alone, 50):.1f} ms at p50")
            print(f"live {rate:>2} fps   console CPU        {100 * cpu:5.1f} % of a core for one source")
        size, groups, cold, cached, cold_page, warm_pages = recording(options.binary, work)
        print(f"10-minute recording: metadata JSON {size / 1e6:.2f} MB for {groups} face groups, "
              f"{cold:.3f} s read from the file, {cached:.3f} s cached")
        print(f"10-minute recording: player's first frame {cold_page:.3f} s on first opening, "
              f"{statistics.median(warm_pages):.3f} s after (median of {len(warm_pages)})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
