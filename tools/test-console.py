#!/usr/bin/env python3
"""The browser console against real processes, in headless Chromium driven by selenium.

A real `sightline run` (recording, publishing JPEG frames, GPS positions from the example
feeder and a badge for every analysed frame from a stand-in detector in another process) and
a real `sightline console`; what the pages draw is compared with what
the source published (its `faces` messages, read here with pyzmq) and with what the movie
holds (`sightline inspect --metadata`). Screenshots are checked by their pixels.

  tools/test-console.py [PATH/TO/sightline]

Ends with "N passed, M failed"; exit status 1 when anything failed.
"""
import glob
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import zmq
from PIL import Image

from sightline_testkit import (Checks, StandInDetector, browser, free_port, http, player_at, screenshot, serving,
                               wait_for)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build/debug/sightline")
FIXTURE = os.path.join(ROOT, "Tests/SightlineMovieTests/Fixtures/iphone-layout.mov")
FACE_GREEN = (0, 224, 80)  # --face in console.css

check = Checks("console in a browser")


class FacesCollector(threading.Thread):
    """Every `faces` message of the source, by media time (seconds)."""

    def __init__(self, endpoint, source="cam1"):
        super().__init__(daemon=True)
        self.socket = zmq.Context.instance().socket(zmq.SUB)
        self.socket.setsockopt(zmq.SUBSCRIBE, f"faces/{source}/".encode())
        self.socket.connect(endpoint)
        self.by_time = {}
        self.running = True

    def run(self):
        while self.running:
            if self.socket.poll(100):
                frames = self.socket.recv_multipart()
                message = json.loads(frames[1])
                t = message["time"]["value"] / message["time"]["timescale"]
                self.by_time[round(t, 6)] = [
                    (f["faceID"], [f["bounds"][k] for k in ("x", "y", "width", "height")]) for f in message["faces"]]


BADGE, BADGE_TYPE = [0.02, 0.04, 0.1, 0.08], "org.example.badge"
BADGE_ITEM = {"type": BADGE_TYPE, "label": "badge", "bounds": dict(zip(("x", "y", "width", "height"), BADGE))}


def type_colour(type_name):
    """What docs/console.md says a type that is not Apple's is drawn in: one of six colours,
    by the FNV-1a hash of its name."""
    palette = ["#ff4d8d", "#00d4c8", "#a0c850", "#8c96ff", "#ffa0c8", "#e6e6e6"]
    h = 2166136261
    for byte in type_name.encode():
        h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
    return palette[h % len(palette)]


def rects(driver, selector="#overlay rect.face"):
    return driver.execute_script(
        f"return [...document.querySelectorAll('{selector}')].map(r => [Number(r.dataset.faceId), "
        "r.dataset.bounds.split(' ').map(Number), (r => [r.left, r.top, r.width, r.height])(r.getBoundingClientRect())])")


def inspect_faces(path):
    """(start, end, faces) of every group of the faces track, as `sightline inspect` reads them."""
    tracks = json.loads(subprocess.check_output([BIN, "inspect", "--json", path]))["tracks"]
    faces_track = next(t["id"] for t in tracks if any(
        k["identifier"] == "mdta/com.apple.quicktime.detected-face" for k in t["keys"]))
    groups = []
    for line in subprocess.check_output([BIN, "inspect", path, "--metadata", "--track", str(faces_track)]).splitlines():
        group = json.loads(line)
        faces = []
        for item in group["items"]:
            for record in item["value"]:
                fields = {f["identifier"].rsplit(".", 1)[-1]: f["value"] for f in record}
                c = fields["bounds"]
                xs, ys = c[0::2], c[1::2]
                faces.append((fields["face-id"], [min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)]))
        groups.append((group["time"], group["time"] + group["duration"], sorted(faces)))
    return groups


def location_at(path, t):
    """The ISO 6709 position the file's location track holds at `t`, as `sightline inspect` reads it."""
    tracks = json.loads(subprocess.check_output([BIN, "inspect", "--json", path]))["tracks"]
    track = next(t["id"] for t in tracks if any(
        k["identifier"] == "mdta/com.apple.quicktime.location.ISO6709" for k in t["keys"]))
    for line in subprocess.check_output([BIN, "inspect", path, "--metadata", "--track", str(track)]).splitlines():
        group = json.loads(line)
        if group["time"] <= t + 1e-6 < group["time"] + group["duration"] and group["items"]:
            return group["items"][0]["value"]
    return None


def faces_at(groups, t):
    for start, end, faces in groups:
        if start <= t + 1e-6 < end:
            return faces
    return []


def player_matches_file(driver, groups):
    """The boxes the player draws now equal the file's faces at the media time it shows."""
    shown_at = float(driver.execute_script("return document.getElementById('overlay').dataset.mediaTime"))
    drawn = sorted((r[0], r[1]) for r in rects(driver))
    expected = faces_at(groups, shown_at)
    same = [d[0] for d in drawn] == [e[0] for e in expected] and all(close(d[1], e[1]) for d, e in zip(drawn, expected))
    return same and bool(drawn), f"at {shown_at}: {drawn} vs {expected}"


def close(a, b, tolerance=1e-4):
    return len(a) == len(b) and all(abs(x - y) <= tolerance for x, y in zip(a, b))


def is_green(pixel):
    return all(abs(p - q) <= 60 for p, q in zip(pixel, FACE_GREEN))


def edge_is_drawn(image, box):
    """The box's top and left edges carry the face colour; its middle does not."""
    left, top, width, height = box
    # The 3-pixel stroke is centred on the edge: one of the pixels across it is solid.
    top_edge = [any(is_green(image.getpixel((int(left + width * f), round(top) + d))) for d in (-1, 0, 1))
                for f in (0.25, 0.5, 0.75)]
    left_edge = [any(is_green(image.getpixel((round(left) + d, int(top + height * f)))) for d in (-1, 0, 1))
                 for f in (0.25, 0.5, 0.75)]
    middle = image.getpixel((int(left + width / 2), int(top + height / 2)))
    return all(top_edge + left_edge) and not is_green(middle)


def stop(driver, processes):
    """Closes the browser and ends the processes: SIGTERM, then SIGKILL after 30 s."""
    if driver:
        driver.quit()
    processes = list(processes)
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def hevc_clip(work):
    """The 640x480 sample in H.265 (libx265, B-frames), 4 s: made once per run."""
    clip = os.path.join(work, "faces-hevc.mp4")
    if not os.path.exists(clip):
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", os.path.join(ROOT, "Sources/SightlineSamples/Media/faces_640x480.mp4"),
                        "-t", "4", "-c:v", "libx265", "-x265-params", "log-level=error:keyint=30", "-tag:v", "hvc1", "-an",
                        clip], check=True)
    return clip


def tile_state(driver, source):
    return driver.execute_script(
        f"const t = document.querySelector('.tile[data-source={source}]'); return t && Object.assign({{}}, t.dataset)")


def grid_checks(work):
    """The grid at /: two sources' own H.264 played through Media Source Extensions at their
    frame rate, each presented frame with the faces the source published for its media time;
    a source that goes away says so, and plays again when it is back."""
    clips = {"cam1": os.path.join(ROOT, "Sources/SightlineSamples/Media/faces_640x480.mp4"),
             "cam2": os.path.join(ROOT, "Sources/SightlineSamples/Media/faces_1280x720.mp4")}
    ports = {source: free_port() for source in list(clips) + ["cam3", "cam4"]}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    processes = {}

    def start_source(source):
        processes[source] = subprocess.Popen([
            BIN, "run", "--source", clips[source], "--source-id", source, "--realtime", "--loop",
            "--publish", f"tcp://127.0.0.1:{ports[source]}", "--log-level", "warning"])
    driver = None
    try:
        collectors = {source: FacesCollector(f"tcp://127.0.0.1:{ports[source]}", source) for source in clips}
        for source, collector in collectors.items():
            collector.start()
            start_source(source)
        # A source with no video on the bus: its tile shows the JPEG frames it publishes.
        processes["cam3"] = subprocess.Popen([
            BIN, "run", "--source-id", "cam3", "--realtime", "--loop", "--video", "off", "--frames", "jpeg",
            "--publish", f"tcp://127.0.0.1:{ports['cam3']}", "--log-level", "warning"])
        # An H.265 camera, its video passed on as it comes, which this Chromium does not play.
        processes["cam4"] = subprocess.Popen([
            BIN, "run", "--source", hevc_clip(work), "--source-id", "cam4", "--realtime", "--loop", "--frames", "jpeg",
            "--publish", f"tcp://127.0.0.1:{ports['cam4']}", "--log-level", "warning"])
        processes["console"] = subprocess.Popen(
            [BIN, "console", "--listen", f"127.0.0.1:{port}", "--stale-after", "3", "--log-level", "warning"]
            + [argument for p in ports.values() for argument in ("--connect", f"tcp://127.0.0.1:{p}")])
        wait_for(lambda: serving(base, processes["console"]), what="the console")
        driver = browser()
        driver.get(base + "/")
        for source in clips:
            wait_for(lambda: (tile_state(driver, source) or {}).get("mode") == "video", timeout=90,
                     what=f"{source}'s video in the grid")
        wait_for(lambda: (tile_state(driver, "cam3") or {}).get("mode") == "jpeg" and driver.execute_script(
            "const i = document.querySelector('.tile[data-source=cam3] img'); return !i.hidden && i.naturalWidth > 0"),
            timeout=90, what="cam3's JPEG frames in the grid")
        check("a source without video on the bus shows its JPEG frames in its tile", True)
        hevc = wait_for(lambda: (lambda state: state if state.get("mode") == "jpeg" and "codec" in state else None)(
            tile_state(driver, "cam4") or {}), timeout=90, what="cam4's H.265 tile")
        says = driver.execute_script("return document.querySelector('.tile[data-source=cam4] .info').textContent")
        check("an H.265 source this browser does not play: its tile names the codec and shows its JPEG frames",
              hevc["codec"].startswith("hvc1.1.6.L") and "does not play hvc1" in says, f"{hevc} {says!r}")
        for source, picture in (("cam1", "video"), ("cam2", "video"), ("cam3", "img")):
            places = driver.execute_script(
                f"const t = document.querySelector('.tile[data-source={source}]'); const box = (s) => "
                "{ const r = t.querySelector(s).getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; }; "
                f"return [box('{picture}'), box('svg'), box('.stage')]")
            check(f"{source}: the boxes lie over the picture, and the tile shows nothing else",
                  close(places[0], places[1], 1.5) and close(places[0], places[2], 1.5), str(places))

        for source, collector in collectors.items():
            # Frames per second of media: every frame reaches the player (not one in three, as
            # JPEG frames would), and how many of them it presented (a busy machine drops some).
            first = tile_state(driver, source)
            last = wait_for(lambda: (lambda now: now if float(now["mediaTime"]) - float(first["mediaTime"]) >= 6
                                     else None)(tile_state(driver, source)), timeout=180, what=f"{source} playing 6 s")
            media = float(last["mediaTime"]) - float(first["mediaTime"])
            received = (int(last["totalFrames"]) - int(first["totalFrames"])) / media
            presented = (int(last["presented"]) - int(first["presented"])) / media
            frame_rate = json.loads(http(f"{base}/api/sources")[2])
            frame_rate = next(s["input"]["frameRate"] for s in frame_rate if s["id"] == source)
            check(f"{source}: the grid plays every frame of the source ({received:.1f} of {frame_rate:.1f} a second, "
                  f"{presented:.1f} presented)", abs(received - frame_rate) <= 0.15 * frame_rate, f"{first} {last}")
            compared, matched, with_faces, last_time = 0, 0, 0, None
            while compared < 12:
                shown = wait_for(lambda: driver.execute_script(
                    f"const t = document.querySelector('.tile[data-source={source}]'); "
                    f"if (t.dataset.mediaTime === '{last_time}') return null; "
                    "return [Number(t.dataset.mediaTime), t.dataset.facesHeld, Number(t.dataset.facesTime), "
                    "[...t.querySelectorAll('svg rect.face')].map(r => [Number(r.dataset.faceId), r.dataset.bounds.split(' ').map(Number)])]"),
                    what=f"a new frame of {source}")
                media_time, held, faces_time, boxes = shown
                last_time = driver.execute_script(
                    f"return document.querySelector('.tile[data-source={source}]').dataset.mediaTime")
                if held != "false":
                    continue
                compared += 1
                drawn = sorted((b[0], b[1]) for b in boxes)
                expected = sorted(collector.by_time.get(round(faces_time, 6)) or [])
                with_faces += bool(drawn)
                same = abs(faces_time - media_time) < 1e-4 and [d[0] for d in drawn] == [e[0] for e in expected] \
                    and all(close(d[1], e[1], 1e-9) for d, e in zip(drawn, expected))
                matched += same
                if not same:
                    print(f"{source} frame {media_time}: drawn {drawn}, published {expected}", file=sys.stderr)
            check(f"{source}: each presented frame's boxes are the faces published for its media time",
                  matched == compared and with_faces > 0, f"{matched}/{compared}, {with_faces} with faces")
            delays = driver.execute_script(f"return sightline.tiles.get('{source}').delays")
            check(f"{source}: capture to paint is measured ({sorted(delays)[len(delays) // 2]:.0f} ms median)",
                  len(delays) >= 10 and all(0 <= d < 10000 for d in delays), str(delays[-5:]))

        # A source that goes away: its tile says so; back, it plays again.
        processes["cam2"].send_signal(signal.SIGKILL)
        processes["cam2"].wait()
        wait_for(lambda: (tile_state(driver, "cam2") or {}).get("state") == "stopped", what="cam2 shown as stopped")
        check("a source that disappears: its tile says so", True)
        before = int(tile_state(driver, "cam2")["presented"])
        start_source("cam2")
        try:
            wait_for(lambda: tile_state(driver, "cam2")["state"] == "running"
                     and int(tile_state(driver, "cam2")["presented"]) > before + 30, timeout=120, what="cam2 playing again")
        except TimeoutError:
            print("cam2 tile:", tile_state(driver, "cam2"), driver.execute_script(
                "const v = document.querySelector('.tile[data-source=cam2] video'); return [v.currentTime, v.readyState, v.paused, v.error && v.error.message, [...Array(v.buffered.length).keys()].map(i => [v.buffered.start(i), v.buffered.end(i)])]"), file=sys.stderr)
            raise
        check("a source that comes back plays again in its tile", True)

        shots = os.path.join(os.environ.get("SIGHTLINE_TEST_OUTPUT") or work, "console-screenshots")
        os.makedirs(shots, exist_ok=True)
        for width in (1280, 390):
            driver.set_window_size(width, 900)
            wide = driver.execute_script("return document.documentElement.scrollWidth")
            driver.save_screenshot(os.path.join(shots, f"grid-{width}.png"))
            check(f"grid at {width} px: nothing wider than the screen",
                  wide <= driver.execute_script("return window.innerWidth"), str(wide))
    finally:
        stop(driver, processes.values())


def history_checks(work):
    """A camera's segments as one history: the timeline spans three files, seeks land in the
    right file at the right time over both boundaries with that file's boxes, and playing
    runs on from one file into the next."""
    recordings = os.path.join(work, "segments")
    publish, port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    source = subprocess.Popen([BIN, "run", "--realtime", "--loop", "--publish", f"tcp://127.0.0.1:{publish}",
                               "--log-level", "warning"])
    recorder = subprocess.Popen([BIN, "record", "--connect", f"tcp://127.0.0.1:{publish}", "--out", recordings,
                                 "--segment", "4s", "--log-level", "warning"])
    processes, driver = [source, recorder], None
    try:
        # Three finished files and the fourth begun.
        wait_for(lambda: os.path.isdir(recordings) and len(os.listdir(recordings)) >= 4, timeout=180,
                 what="four segments")
        recorder.send_signal(signal.SIGINT)
        recorder.wait(timeout=60)
        source.send_signal(signal.SIGINT)
        source.wait(timeout=60)
        console = subprocess.Popen([BIN, "console", "--recordings", recordings, "--listen", f"127.0.0.1:{port}",
                                    "--log-level", "warning"])
        processes.append(console)
        wait_for(lambda: serving(base, console), what="the console")
        names = sorted(n for n in os.listdir(recordings) if n.endswith(".mov"))
        segments = wait_for(lambda: (lambda s: s if len(s) == len(names) else None)(
            json.loads(http(f"{base}/api/history/cam1?limit=1000")[2])), what="the segments in the index")
        check("the history lists every segment in order",
              [s["name"] for s in segments] == names and all(a["start"] <= b["start"] for a, b in zip(segments, segments[1:])),
              str([(s["name"], s["start"], s["duration"]) for s in segments]))
        driver = browser()
        driver.get(f"{base}/history/cam1?at={segments[0]['start']}")
        wait_for(lambda: driver.execute_script("return document.getElementById('overlay').dataset.recording"),
                 what="the history page")
        check("the timeline spans every file", driver.execute_script(
            "return document.querySelectorAll('#history .segment').length") == len(segments))

        def shown_at(segment, offset):
            wall = segment["start"] + offset
            driver.execute_script(f"sightline.history.seek({wall}, false)")
            wait_for(lambda: driver.execute_script(
                "const o = document.getElementById('overlay').dataset; "
                f"return o.recording === '{segment['name']}' && Math.abs(Number(o.mediaTime) - {offset}) < 0.05"),
                what=f"{segment['name']} at {offset}")
            return player_matches_file(driver, inspect_faces(os.path.join(recordings, segment["name"])))

        for before, after in zip(segments[:2], segments[1:3]):
            end = before["duration"]
            faces = [start for start, _, f in inspect_faces(os.path.join(recordings, after["name"])) if f]
            into = (faces[0] if faces else 0) + 0.01
            check(f"a seek over the boundary into {after['name']} shows it at its time, with its boxes",
                  *shown_at(after, into))
            faces = [start for start, _, f in inspect_faces(os.path.join(recordings, before["name"])) if f]
            back = (faces[-1] if faces else end - 0.5) + 0.01
            check(f"a seek back into {before['name']} shows it at its time, with its boxes", *shown_at(before, back))
        # Playing runs on from the end of one file into the next.
        first, second = segments[0], segments[1]
        driver.execute_script(f"sightline.history.seek({first['start'] + first['duration'] - 0.3}, true)")
        wait_for(lambda: driver.execute_script(
            "const o = document.getElementById('overlay').dataset; "
            f"return o.recording === '{second['name']}' && Number(o.mediaTime) > 0.2"), timeout=60,
            what="playing on into the next file")
        check("playing runs on into the next file", True)
        driver.execute_script("document.getElementById('video').pause()")

        # A clip across the cut, marked on the page: the two files' seconds joined, each
        # with its own faces.
        shown_at(first, first["duration"] - 1.0)
        driver.find_element("id", "clipHereFrom").click()
        shown_at(second, 1.0)
        driver.find_element("id", "clipHereTo").click()
        driver.find_element("id", "clipMake").click()
        link = wait_for(lambda: driver.execute_script(
            "const a = document.getElementById('clipLink'); return a && [a.getAttribute('href'), a.textContent]"),
            timeout=180, what="the clip across the cut")
        status, headers, body = http(base + link[0])
        clip = os.path.join(work, link[1])
        with open(clip, "wb") as f:
            f.write(body)
        probe = json.loads(subprocess.check_output(
            ["ffprobe", "-v", "error", "-show_entries", "stream=codec_tag_string:format=duration", "-of", "json", clip]))
        duration = float(probe["format"]["duration"])
        check(f"the clip across the cut is both files' seconds ({duration:.3f} s), named for its camera and time",
              status == 200 and abs(duration - 2.0) < 0.1 and re.fullmatch(r"cam1-\d{8}T\d{6}Z.*\.mov", link[1])
              and {"avc1", "mebx"} <= {s["codec_tag_string"] for s in probe["streams"]}, f"{link} {probe}")
        joined = inspect_faces(clip)
        ids = lambda groups, t: [f[0] for f in faces_at(groups, t)]
        before_cut = ids(inspect_faces(os.path.join(recordings, first["name"])), first["duration"] - 0.5)
        after_cut = ids(inspect_faces(os.path.join(recordings, second["name"])), 0.5)
        check("its faces are each file's own on either side of the join",
              ids(joined, 0.5) == before_cut and ids(joined, 1.5) == after_cut,
              f"{ids(joined, 0.5)} vs {before_cut}, {ids(joined, 1.5)} vs {after_cut}")
        shots = os.path.join(os.environ.get("SIGHTLINE_TEST_OUTPUT") or work, "console-screenshots")
        os.makedirs(shots, exist_ok=True)
        for width in (1280, 390):
            driver.set_window_size(width, 900)
            driver.save_screenshot(os.path.join(shots, f"history-{width}.png"))
            check(f"history at {width} px: nothing wider than the screen",
                  driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth"))
    finally:
        stop(driver, processes)


def clip_checks(driver, base, event):
    """A clip of an event from the page: its range set from the event, progress shown while it
    is made, a file named after camera, time and person that ffprobe and inspect read, trimmed
    with its metadata or with the boxes burned in."""
    driver.get(base + "/events?name=Obama")
    href = wait_for(lambda: driver.execute_script(
        f"const a = document.querySelector('#events tbody tr[data-id=\"{event['id']}\"] a.clip'); return a && a.getAttribute('href')"),
        what="the event's clip link")
    driver.get(base + href)
    wait_for(lambda: driver.execute_script("return document.getElementById('video').readyState >= 2"), what="the player")
    span = [float(driver.find_element("id", i).get_attribute("value")) for i in ("clipFrom", "clipTo")]
    length = event["end"] - event["start"]
    # In tenths of a second, outwards, so the clip holds all of it (the link gives milliseconds).
    wanted = [max(0, event["t"] - 2), event["t"] + length + 2]
    check("the clip's range is the event's, two seconds either side",
          wanted[0] - 0.1 < span[0] <= wanted[0] + 0.001 and wanted[1] - 0.001 <= span[1] < wanted[1] + 0.1,
          f"{span} for {event}")
    expected = min(span[1], driver.execute_script("return sightline.player.meta.duration")) - span[0]
    for mode, kind in (("trim", ".mov"), ("burn-in", ".mp4")):
        driver.find_element("css selector", f"#clipMode option[value='{mode}']").click()
        driver.find_element("id", "clipMake").click()
        link = wait_for(lambda: driver.execute_script(
            "const a = document.getElementById('clipLink'); return a && a.href.endsWith('/file') && "
            f"a.textContent.endsWith('{kind}') && [a.getAttribute('href'), a.textContent]"), timeout=180,
            what=f"the {mode} clip")
        status, headers, body = http(base + link[0])
        check(f"{mode}: named after camera, time and person",
              re.fullmatch(r"cam1-\d{8}T\d{6}Z-Obama" + re.escape(kind), link[1]) is not None
              and f'filename="{link[1]}"' in headers.get("Content-Disposition", ""), f"{link} {headers}")
        path = os.path.join(tempfile.mkdtemp(prefix="sightline-clip-"), link[1])
        with open(path, "wb") as f:
            f.write(body)
        probe = json.loads(subprocess.check_output(
            ["ffprobe", "-v", "error", "-show_entries", "stream=codec_type,codec_tag_string,nb_frames:format=duration",
             "-of", "json", path]))
        tags = [s["codec_tag_string"] for s in probe["streams"]]
        duration = float(probe["format"]["duration"])
        if mode == "trim":
            tracks = json.loads(subprocess.check_output([BIN, "inspect", "--json", path]))["tracks"]
            faces = any(any(k["identifier"] == "mdta/com.apple.quicktime.detected-face" for k in t["keys"])
                        for t in tracks)
            check("trim: ffprobe reads its video and metadata, inspect its faces track",
                  status == 200 and "avc1" in tags and "mebx" in tags and faces, f"{tags}")
        else:
            check("burn-in: ffprobe reads one H.264 stream", status == 200 and tags == ["avc1"], f"{tags}")
        check(f"{mode}: as long as the range ({duration:.2f} s of {expected:.2f})",
              abs(duration - expected) < 0.2, str(probe["format"]))
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def event_checks(driver, base, recordings, ours):
    """The event index, filled from the recordings' own tracks: the enrolled person's events
    found by name open their recording at their time with the face boxed; filters round-trip
    through the page's address; hostile names are data."""
    names = {r["name"] for r in ours}
    sizes = {(r["name"], r["size"]) for r in json.loads(http(base + "/api/recordings")[2]) if r["name"] in names}

    def obama():
        # Once both finished files are read at their final size (the index reads new and grown
        # files every 5 s, and may have read one while it was being finished).
        indexed = {(r["name"], r["size"]) for r in json.loads(http(base + "/api/history/cam1?limit=1000")[2])}
        events = json.loads(http(base + "/api/events?name=Obama&limit=1000")[2])
        return events if sizes <= indexed and events and all(e.get("recording") in names for e in events) else None
    events = wait_for(obama, timeout=60, what="the recordings' events in the index")
    check("events by name: all the enrolled person's, newest first, in our recordings",
          all(e["name"] == "Obama" and e["camera"] == "cam1" and e["label"] == "face" for e in events)
          and [e["start"] for e in events] == sorted((e["start"] for e in events), reverse=True),
          str(events[:3]))
    for event in events:
        groups = inspect_faces(os.path.join(recordings, event["recording"]))
        inside = event["t"] + 0.01, event["t"] + (event["end"] - event["start"]) - 0.01
        check(f"event {event['objectID']} in {event['recording']}: the file has that face from t to its end",
              all(event["objectID"] in [f[0] for f in faces_at(groups, at)] for at in inside),
              f"{event} {[faces_at(groups, at) for at in inside]}")
        # Its best frame: the largest of its boxes the picture does not cut.
        end = event["t"] + event["end"] - event["start"]
        boxes = [b for start, _, faces in groups if event["t"] - 1e-6 <= start < end
                 for i, b in faces if i == event["objectID"]]
        whole = [w * h for x, y, w, h in boxes if x >= 0 and y >= 0 and x + w <= 1 and y + h <= 1]
        at_best = [b for i, b in faces_at(groups, event["best"]) if i == event["objectID"]]
        check(f"event {event['objectID']}: its snapshot is its largest uncut box",
              at_best and (not whole or abs(at_best[0][2] * at_best[0][3] - max(whole)) < 1e-9),
              f"{at_best} vs {max(whole) if whole else None}")
    check("a bad filter is refused with its reason",
          http(base + "/api/events?limit=0")[0] == 400 and b"limit must be" in http(base + "/api/events?limit=0")[2])

    # The page: a search by name, then its first event played where it starts, face boxed.
    driver.get(base + "/events?name=Obama")
    rows = wait_for(lambda: driver.execute_script(
        "const rows = [...document.querySelectorAll('#events tbody tr[data-id]')]; return rows.length && "
        "rows.map(r => [r.dataset.name, r.querySelector('a.play').getAttribute('href')])"), what="the events page")
    check("the page lists the person's events", len(rows) == len(events) and all(n == "Obama" for n, _ in rows),
          str(rows[:3]))
    check("each event's snapshot loads", wait_for(lambda: driver.execute_script(
        "const img = document.querySelector('#events tbody img'); return img && img.complete && img.naturalWidth > 0"),
        what="a snapshot"))
    first = events[0]
    driver.find_element("css selector", "#events tbody tr[data-id] a.play").click()
    wait_for(lambda: driver.execute_script(
        "return document.getElementById('video').readyState >= 2 && "
        f"Math.abs(Number(document.getElementById('overlay').dataset.mediaTime) - {first['t']}) < 0.05"),
        what="the event's recording at its time")
    groups = inspect_faces(os.path.join(recordings, first["recording"]))
    check("the event opens its recording at its time, the boxes the file's", *player_matches_file(driver, groups))
    check("the person's face is boxed there", first["objectID"] in [r[0] for r in rects(driver)])
    clip_checks(driver, base, first)

    # The filters: the form writes them into the address; any case of a name matches.
    driver.get(base + "/events")
    wait_for(lambda: driver.execute_script("return document.querySelectorAll('#filters select[name=camera] option').length > 1"),
             what="the filters")
    driver.find_element("css selector", "#filters input[name=name]").send_keys("obama")
    driver.find_element("css selector", "#filters select[name=camera] option[value=cam1]").click()
    driver.find_element("css selector", "#filters button[type=submit]").click()
    wait_for(lambda: "name=obama" in driver.current_url and driver.execute_script(
        "return document.querySelectorAll('#events tbody tr[data-id]').length") == len(events),
        what="the search from the form")
    check("the form's search is in the address and finds the same events", "camera=cam1" in driver.current_url)

    # A name with HTML and SQL in it is data: shown as typed, matching nothing, running nothing.
    hostile = "<img src=x onerror=\"document.title='pwned'\">' OR '1'='1"
    driver.get(base + "/events?name=" + urllib.parse.quote(hostile))
    wait_for(lambda: "No events match" in driver.find_element("id", "events").text, what="the hostile search")
    check("a hostile name is shown as typed and runs nothing",
          driver.find_element("css selector", "#filters input[name=name]").get_attribute("value") == hostile
          and driver.title != "pwned" and not driver.find_elements("css selector", "#events img[src=x]"))


def phone_checks(driver, base, name, t, work):
    """Each page at 1280 and 390 CSS pixels wide (screenshots kept in SIGHTLINE_TEST_OUTPUT, or
    the test's directory): at 390 nothing is wider than the screen, and the player's face
    boxes sit where their bounds say on the picture, as at full width."""
    shots = os.path.join(os.environ.get("SIGHTLINE_TEST_OUTPUT") or work, "console-screenshots")
    os.makedirs(shots, exist_ok=True)
    # The source has stopped by now: the live page says so.
    pages = {"sources": "/", "recordings": "/recordings", "events": "/events?name=Obama", "live": "/live/cam1",
             "player": None}
    for width in (1280, 390):
        driver.set_window_size(width, 900)
        inner = driver.execute_script("return window.innerWidth")
        for page, path in pages.items():
            if path is None:
                player_at(driver, base, name, t)
            else:
                driver.get(base + path)
                wait_for(lambda: driver.execute_script("return document.readyState") == "complete", what=page)
            driver.save_screenshot(os.path.join(shots, f"{page}-{width}.png"))
            wide = driver.execute_script("return document.documentElement.scrollWidth")
            check(f"{page} at {inner} px: nothing wider than the screen", wide <= inner, (wide, driver.execute_script(
                "return [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > "
                "window.innerWidth).slice(-3).map(e => e.tagName + '#' + e.id + '.' + e.className.baseVal + "
                "e.className + ' ' + Math.round(e.getBoundingClientRect().right))")))
        frame = driver.execute_script(
            "const r = document.getElementById('frame').getBoundingClientRect(); return [r.left, r.top, r.width, r.height]")
        boxes = rects(driver)
        expected = [[frame[0] + x * frame[2], frame[1] + y * frame[3], w * frame[2], h * frame[3]]
                    for _, (x, y, w, h), _ in boxes]
        check(f"player at {inner} px: the picture fits and each face box sits on its bounds",
              boxes and frame[2] <= inner and all(close(c, e, 1.5) for (_, _, c), e in zip(boxes, expected)),
              f"{frame} {boxes} {expected}")
    print(f"console screenshots at 1280 and 390 px: {shots}")
    driver.set_window_size(1200, 1100)


def main():
    work = tempfile.mkdtemp(prefix="sightline-console-test-")
    grid_checks(work)
    history_checks(work)
    recordings = os.path.join(work, "rec")
    others = os.path.join(work, "others")
    os.makedirs(others)
    shutil.copy(FIXTURE, os.path.join(others, "iphone-layout.mov"))
    with open(os.path.join(others, "corrupt.mov"), "wb") as f:
        f.write(b"\x00\x00\x00\x18ftypqt  " + os.urandom(4000))
    os.symlink("/etc/hostname", os.path.join(others, "escape.mov"))
    # An H.265 camera's recording, recorded as it came.
    subprocess.run([BIN, "run", "--source", hevc_clip(work), "--record", os.path.join(work, "hevc"), "--log-level",
                    "warning"], check=True, stdout=subprocess.DEVNULL)
    shutil.move(glob.glob(os.path.join(work, "hevc", "*.mov"))[0], os.path.join(others, "hevc.mov"))
    publish, metadata_in, port = free_port(), free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    processes = []

    def start(*args, **kwargs):
        process = subprocess.Popen(list(args), **kwargs)
        processes.append(process)
        return process

    # Obama, enrolled from a portrait that is not in the clip, is named wherever he is.
    gallery = os.path.join(work, "faces.json")
    subprocess.run([BIN, "faces", "enroll", "Obama", os.path.join(ROOT, "Tests/SightlineDetectionTests/Faces/obama2.jpg"),
                    "--gallery", gallery], check=True, stdout=subprocess.DEVNULL)

    def start_source():
        return start(BIN, "run", "--realtime", "--loop", "--frames", "jpeg", "--frames-rate", "10", "--gallery", gallery,
                     "--publish", f"tcp://127.0.0.1:{publish}", "--metadata-in", f"tcp://127.0.0.1:{metadata_in}",
                     "--record", recordings, "--fragment", "1", "--log-level", "warning",
                     "--metadata-track", "mdta/com.apple.quicktime.location.ISO6709=com.apple.quicktime.location.ISO6709")

    driver = None
    try:
        collector = FacesCollector(f"tcp://127.0.0.1:{publish}")
        collector.start()
        # A detector in another process: a badge (a type of its own, so drawn in a colour of its
        # own) at BADGE for every frame the source analysed for faces.
        StandInDetector(f"tcp://127.0.0.1:{publish}", "faces/cam1/", f"tcp://127.0.0.1:{metadata_in}", "badges",
                        lambda sent: [BADGE_ITEM]).start()
        source = start_source()
        feeder = start(sys.executable, os.path.join(ROOT, "tools/gps_feeder.py"), "--connect",
                       f"tcp://127.0.0.1:{metadata_in}", "--rate", "4", "--duration", "600", stdout=subprocess.DEVNULL)
        console = start(BIN, "console", "--connect", f"tcp://127.0.0.1:{publish}", "--recordings", recordings,
                        "--recordings", others, "--listen", f"127.0.0.1:{port}", "--stale-after", "3",
                        "--log-level", "warning")
        wait_for(lambda: serving(base, console), what="the console")
        driver = browser()

        # Live: every frame shown carries the faces the source published for that same frame.
        driver.get(base + "/live/cam1")
        wait_for(lambda: int(driver.execute_script("return document.getElementById('stage').dataset.shown || 0")) >= 3,
                 timeout=90, what="live frames")
        compared, matched, with_faces = 0, 0, 0
        last_seq = None
        for _ in range(12):
            last_seq = wait_for(lambda: (lambda seq: seq if seq != last_seq else None)(
                driver.execute_script("return document.getElementById('stage').dataset.seq")), what="a new live frame")
            # One script reads the frame's time and its boxes, so a newer frame cannot come between.
            shown, held, faces_time, boxes = driver.execute_script(
                "const s = document.getElementById('stage').dataset; return [Number(s.time), s.facesHeld, "
                "Number(s.facesTime), [...document.querySelectorAll('#overlay rect.face')].map(r => "
                "[Number(r.dataset.faceId), r.dataset.bounds.split(' ').map(Number)])]")
            drawn = sorted((b[0], b[1]) for b in boxes)
            if drawn:
                expected = sorted(wait_for(lambda: collector.by_time.get(round(faces_time, 6)), timeout=10,
                                           what="the published faces"))
            else:
                expected = sorted(collector.by_time.get(round(faces_time, 6)) or [])
            compared += 1
            with_faces += bool(drawn)
            if [d[0] for d in drawn] == [e[0] for e in expected] and all(
                    close(d[1], e[1], 1e-9) for d, e in zip(drawn, expected)):
                matched += 1
            else:
                print(f"live frame {shown}: drawn {drawn}, published {expected}", file=sys.stderr)
            if held == "false" and drawn:
                check(f"live frame {shown:.3f}: boxes are that frame's own", abs(faces_time - shown) < 1e-9)
        check("live boxes equal the published faces of their frame", matched == compared and with_faces > 0,
              f"{matched}/{compared} matched, {with_faces} with faces")
        label = wait_for(lambda: driver.execute_script(
            "const r = document.querySelector('#overlay rect[data-name=Obama]'); if (!r) return null; "
            "return [...document.querySelectorAll('#overlay text')].map(t => t.textContent)"
            ".find(t => t.endsWith('#' + r.dataset.faceId))"), timeout=60, what="a named face in the live view")
        check("the live view names the enrolled person", label.startswith("Obama #"), label)
        # Another detector's objects are drawn as they come, in their type's colour.
        badge = wait_for(lambda: driver.execute_script(
            f"const r = document.querySelector('#overlay rect[data-object-type=\"{BADGE_TYPE}\"]'); "
            "return r && [Number(r.dataset.objectId), r.dataset.bounds.split(' ').map(Number), "
            "getComputedStyle(r).stroke, [...document.querySelectorAll('#overlay text.object')].map(t => t.textContent)]"),
            timeout=60, what="another detector's object in the live view")
        colour = type_colour(BADGE_TYPE)
        rgb = "rgb(" + ", ".join(str(int(colour[i:i + 2], 16)) for i in (1, 3, 5)) + ")"
        check("the live view draws another detector's object where it was sent, with its ID, in its type's colour",
              badge[0] > 0 and close(badge[1], BADGE, 1e-9) and badge[2] == rgb and f"badge #{badge[0]}" in badge[3],
              f"{badge} vs {rgb}")
        delays = driver.execute_script("return sightline.liveDelays")
        check("capture-to-paint delays are measured", len(delays) >= 3 and all(0 <= d < 5000 for d in delays),
              str(delays[-5:]))

        # The sources page, then a source that goes quiet shows as stopped and comes back.
        driver.get(base + "/")
        wait_for(lambda: driver.execute_script(
            "const c = document.querySelector('[data-source=cam1]'); return c && c.dataset.state === 'running'"),
            what="cam1 running on /")
        in_progress = wait_for(lambda: [r for r in json.loads(http(base + "/api/recordings")[2]) if r["inProgress"]],
                               timeout=30, what="a recording in progress")
        check("the file being written is listed", len(in_progress) == 1)
        driver.get(base + "/recordings/" + in_progress[0]["name"])
        wait_for(lambda: driver.execute_script("return document.getElementById('video').readyState >= 2"),
                 timeout=60, what="the file being written to play")
        check("the file being written plays", True)
        # Let the first file hold a few seconds with faces (on a loaded machine the detector
        # drops frames and the recorder writes a second behind), then kill the source.
        wait_for(lambda: [r for r in json.loads(http(base + "/api/recordings")[2])
                          if r["inProgress"] and r["duration"] >= 4 and r["faces"] >= 1],
                 timeout=120, step=0.5, what="four seconds recorded with faces")
        source.send_signal(signal.SIGKILL)
        source.wait()
        driver.get(base + "/")
        wait_for(lambda: driver.execute_script(
            "const c = document.querySelector('[data-source=cam1]'); return c && c.dataset.state === 'stopped'"),
            what="cam1 shown as stopped")
        check("a source that disappears shows as stopped", True)
        source = start_source()
        wait_for(lambda: driver.execute_script(
            "const c = document.querySelector('[data-source=cam1]'); return c && c.dataset.state === 'running'"),
            timeout=90, what="cam1 running again")
        check("a source that comes back resumes", True)
        source.send_signal(signal.SIGINT)
        source.wait(timeout=120)

        # Recordings: listed newest first, with their tracks and counts.
        listed = json.loads(http(base + "/api/recordings")[2])
        ours = [r for r in listed if r["directory"].endswith("/rec")]
        check("both recordings are listed, newest first", len(ours) == 2 and ours[0]["start"] >= ours[1]["start"],
              str([(r["name"], r["start"]) for r in ours]))
        check("the corrupt file is listed with its error",
              any(r["name"] == "corrupt.mov" and r["error"] for r in listed))
        check("a symlink out of the directory is not listed", not any(r["name"] == "escape.mov" for r in listed))
        # The file with the most faces (the GPS feeder ran through both).
        recording = max(ours, key=lambda r: (r["faces"], -r["start"]))
        path = os.path.join(recordings, recording["name"])
        groups = inspect_faces(path)
        check("the list counts the recording's faces",
              recording["faces"] == len({f[0] for _, _, faces in groups for f in faces}) and recording["faces"] > 0)
        check("the list names its tracks", "video" in recording["tracks"] and "faces" in recording["tracks"]
              and "location" in recording["tracks"], str(recording["tracks"]))

        # The player at ?t= shows exactly the faces the file has then, after a seek too.
        face_times = [start for start, end, faces in groups if faces]
        # For the screenshot, a moment when every box lies wholly inside the picture (a face
        # entering or leaving at an edge has a box the picture cuts off).
        inside = [start for start, end, faces in groups if faces and all(
            0.02 <= x and x + w <= 0.98 and 0.02 <= y and y + h <= 0.98 for _, (x, y, w, h) in faces)]
        t = (inside or face_times)[len(inside or face_times) // 2] + 0.01
        player_at(driver, base, recording['name'], t)
        check(f"player at ?t={t:.3f} shows the file's faces", *player_matches_file(driver, groups))
        check("the player opens paused", driver.execute_script("return document.getElementById('video').paused"))
        boxes = [r[2] for r in rects(driver)]
        check("screenshot: each box's edge is drawn where the face is", boxes and wait_for(
            lambda: all(edge_is_drawn(screenshot(driver), b) for b in boxes), timeout=30, step=0.5,
            what="the boxes in a screenshot"))

        later = face_times[(len(face_times) * 3) // 4] + 0.01
        driver.execute_script(f"document.getElementById('video').currentTime = {later}")
        wait_for(lambda: driver.execute_script(
            f"return Math.abs(Number(document.getElementById('overlay').dataset.mediaTime) - {later}) < 0.05"),
            what="the seek")
        check(f"after a seek to {later:.3f} the player shows the file's faces", *player_matches_file(driver, groups))
        shown_at = float(driver.execute_script("return document.getElementById('overlay').dataset.mediaTime"))
        position = location_at(path, shown_at)
        text = driver.find_element("id", "location").text
        check("the location track is shown as text, as inspect reads it",
              position is not None and position in text and "° N" in text, f"{text!r} vs {position!r}")
        lanes = driver.execute_script(
            "return [...document.querySelectorAll('#timeline .lane')].map(l => l.dataset.object).filter(l => l.startsWith('face '))")
        check("the timeline has a lane per face", sorted(lanes) == sorted(
            f"face {i}" for i in {f[0] for _, _, faces in groups for f in faces}), str(lanes))
        labels = driver.execute_script("return [...document.querySelectorAll('#timeline .lane .label')].map(l => l.textContent)")
        check("the timeline lists another detector's object by its type and label",
              any(l.startswith(BADGE_TYPE + " ") and l.endswith(" badge") for l in labels), str(labels))
        check("the timeline names the recorded person", any(l.endswith(" Obama") for l in labels), str(labels))
        first_span = driver.execute_script(
            "const s = document.querySelector('#timeline .span'); s.click(); return Number(s.dataset.start)")
        wait_for(lambda: abs(driver.execute_script("return document.getElementById('video').currentTime") - first_span) < 0.05,
                 what="a click on the timeline to seek")
        check("a click on the timeline seeks there", True)

        # Snapshot: a JPEG with the boxes drawn in.
        status, headers, jpeg = http(f"{base}/api/recordings/{recording['name']}/snapshot?t={t:.3f}")
        snap = Image.open(io.BytesIO(jpeg)).convert("RGB")
        face = faces_at(groups, t)[0][1]
        x0, y0 = int(face[0] * snap.width), int(face[1] * snap.height)
        x1 = int((face[0] + face[2]) * snap.width)
        edge = snap.getpixel(((x0 + x1) // 2, y0 + 1))
        centre = snap.getpixel(((x0 + x1) // 2, int((face[1] + face[3] / 2) * snap.height)))
        check("snapshot: a JPEG with the face's box drawn",
              status == 200 and headers.get("Content-Type") == "image/jpeg" and edge[1] > 180 and edge[0] < 90
              and not (centre[1] > 180 and centre[0] < 90), f"{status} {edge} {centre}")

        # The iPhone-shaped movie: turned a quarter by its orientation track, boxes with it.
        driver.get(base + "/recordings/iphone-layout.mov?t=1")
        wait_for(lambda: driver.execute_script(
            "return document.getElementById('video').readyState >= 2 && "
            "Math.abs(Number(document.getElementById('overlay').dataset.mediaTime) - 1) < 0.05"), what="the fixture")
        orientation = driver.execute_script("return document.getElementById('box').dataset.orientation")
        box = driver.execute_script("const r = document.getElementById('box').getBoundingClientRect(); return [r.left, r.top, r.width, r.height]")
        (face_id, bounds, client), = rects(driver)
        x, y, w, h = bounds
        expected = [box[0] + (1 - y - h) * box[2], box[1] + x * box[3], h * box[2], w * box[3]]
        check("the rotated recording is shown turned (orientation 6, taller than wide)",
              orientation == "6" and box[3] > box[2], f"{orientation} {box}")
        check("its box turns with the picture", close(client, expected, 1.5), f"{client} vs {expected}")
        check("screenshot: the turned box is drawn there", wait_for(
            lambda: edge_is_drawn(screenshot(driver), client), timeout=30, step=0.5, what="the turned box"))

        # The H.265 recording: this Chromium does not play it; the page says so and offers
        # an H.264 clip with the boxes burned in. Its timeline and snapshots work as they are.
        driver.get(base + "/recordings/hevc.mov")
        notice = wait_for(lambda: driver.execute_script(
            "const n = document.getElementById('unplayable'); return !n.hidden && n.textContent"), what="the notice")
        mode = driver.execute_script("return document.getElementById('clipMode').value")
        check("an H.265 recording the browser does not play: the page says so and offers a burned-in clip",
              "does not play H.265 (hvc1.1.6.L" in notice and mode == "burn-in", f"{notice!r} {mode}")
        lanes = driver.execute_script("return document.querySelectorAll('#timeline .lane').length")
        status, headers, jpeg = http(base + "/api/recordings/hevc.mov/snapshot?t=2")
        check("its timeline has its faces and a snapshot decodes its H.265",
              lanes >= 1 and status == 200 and headers.get("Content-Type") == "image/jpeg" and len(jpeg) > 1000,
              f"{lanes} lanes, {status}")

        # Events: found by name, played at their time; then the page at phone width too.
        event_checks(driver, base, recordings, ours)

        # Phones: at 390 px no page scrolls sideways, and the player's boxes stay on its faces.
        phone_checks(driver, base, recording["name"], t, work)

        # Bad recordings show an error on their page; the server stays up.
        driver.get(base + "/recordings/corrupt.mov")
        error = wait_for(lambda: driver.find_element("id", "error").text, what="the error text")
        check("a corrupt recording shows an error on its page", "cannot" in error, error)
        check("the console is still up", http(base + "/health")[0] == 200)

        # Paths never leave the recordings directories.
        for url in ["/media/..%2F..%2Fetc%2Fpasswd", "/media/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/media/escape.mov",
                     "/api/recordings/..%2Fetc%2Fpasswd/metadata", "/api/recordings/escape.mov/metadata",
                     "/media/%2Fetc%2Fhostname", "/media/rec%2F..%2F..%2Fetc%2Fhostname"]:
            status = http(base + url)[0]
            check(f"{url} is refused", status in (400, 404), str(status))
        status, headers, body = http(f"{base}/media/{recording['name']}", {"Range": "bytes=100-199"})
        with open(path, "rb") as f:
            f.seek(100)
            expected_bytes = f.read(100)
        check("range requests are answered with the file's bytes",
              status == 206 and body == expected_bytes and headers.get("Content-Range", "").startswith("bytes 100-199/"))

        # A recording that goes (retention, a person) takes its events with it.
        gone = ours[-1]["name"]
        os.remove(os.path.join(recordings, gone))
        check("a deleted recording's events leave the index", wait_for(lambda: not any(
            e.get("recording") == gone for e in json.loads(http(base + "/api/events?limit=1000")[2])),
            timeout=60, what="the deleted recording's events to go"))
    finally:
        stop(driver, processes)
        shutil.rmtree(work, ignore_errors=True)

    # A token guards a console; the login form sets the cookie.
    token = "%032x" % random.getrandbits(128)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    index = tempfile.mkdtemp(prefix="sightline-console-index-")
    console = subprocess.Popen([BIN, "console", "--recordings", os.path.dirname(FIXTURE), "--listen",
                                f"127.0.0.1:{port}", "--token", token, "--event-index", index + "/events.sqlite",
                                "--log-level", "warning"])
    driver = None
    try:
        wait_for(lambda: serving(base, console), what="the console")
        check("without the token the API is refused", http(base + "/api/recordings")[0] == 401)
        check("with the bearer token it answers",
              http(base + "/api/recordings", {"Authorization": f"Bearer {token}"})[0] == 200)
        status, headers, _ = http(base + "/recordings", {"Accept": "text/html"})
        check("a page without the token leads to the login form",
              status == 302 and headers.get("Location", "").startswith("/login"))
        driver = browser()
        driver.get(base + "/recordings")
        driver.find_element("name", "token").send_keys(token)
        driver.find_element("css selector", "button[type=submit]").click()
        wait_for(lambda: driver.execute_script("return document.querySelector('tr[data-name]') !== null"),
                 what="the recordings after login")
        check("after the login form the pages open", "/recordings" in driver.current_url)
    finally:
        if driver:
            driver.quit()
        console.send_signal(signal.SIGTERM)
        console.wait(timeout=30)
        shutil.rmtree(index, ignore_errors=True)
    code = subprocess.run([BIN, "console", "--recordings", ROOT, "--listen", "0.0.0.0:0"],
                          capture_output=True, text=True)
    check("listening beyond loopback without a token is refused with one line",
          code.returncode == 1 and code.stderr.count("\n") == 1 and "--token" in code.stderr, code.stderr)

    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
