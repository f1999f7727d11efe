#!/usr/bin/env python3
"""End to end, a detector in another process as good as a built-in one: OpenCV's people
detector (tools/people_detector.py) on real pedestrian footage (Debian's vtest.avi) reads
a `sightline run`'s frames and sends `humanBody` objects back. Checks that the source
publishes every group it took at its frame's time with Sightline's IDs, that people enter
and leave, that the recording's track holds the same objects at the same times (read by
`sightline inspect` and by exiftool), that /metrics counts them, that the console's player in Chromium draws them where
the file has them and lists them on its timeline, and that its snapshots and a burned-in
export draw their boxes.

  python3 tools/test-people.py .build/debug/sightline
"""
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from sightline_testkit import Checks, browser, free_port, http, player_at, screenshot, serving, wait_for

here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
check = Checks("plugged-in people detector")


def boxes(items):
    """(objectID or None, x, y, width, height) of each item, in order."""
    return [(i.get("objectID"), *(i["bounds"][k] for k in ("x", "y", "width", "height"))) for i in items]


def close(a, b):
    return len(a) == len(b) and all(abs(p - q) < 1e-6 for x, y in zip(a, b) for p, q in zip(x[1:], y[1:]))


def recorded_groups(binary, path):
    """The detector's groups in a recording, as `inspect --metadata` reads them: (seconds,
    [(objectID, x, y, w, h)]), each object's fields following its ID."""
    groups = []
    tracks = recorded_tracks(binary, path)
    lines = subprocess.check_output([binary, "inspect", path, "--metadata"], text=True).splitlines()
    for line in lines:
        sample = json.loads(line)
        if sample.get("track") not in tracks:
            continue
        objects = []
        for item in sample["items"]:
            if item["identifier"].endswith(".object-id"):
                objects.append([item["value"]])
            elif item["identifier"].endswith(".bounds"):
                objects[-1] += item["value"]
        groups.append((sample["time"], [tuple(o) for o in objects]))
    return groups


def recorded_tracks(binary, path):
    """The ids of a recording's detected-object tracks."""
    tracks = json.loads(subprocess.check_output([binary, "inspect", "--json", path]))["tracks"]
    return [t["id"] for t in tracks
            if any(k["identifier"] == "mdta/com.sightline.detected-object.detector" for k in t.get("keys", []))]


def scrape(url, process, scrapes):
    """Scrapes `url` every half second until `process` ends, keeping each answer."""
    while process.poll() is None:
        try:
            status, _, body = http(url)
            if status == 200:
                scrapes.append(body.decode())
        except OSError:
            pass  # not listening yet, or already gone
        time.sleep(0.5)


def metric(text, name, labels):
    """The value of the sample of `name` whose labels include `labels`; 0 when there is none."""
    for line in text.splitlines():
        if line.startswith(name + "{") and labels in line:
            return float(line.rsplit(" ", 1)[1])
    return 0


PERSON_BLUE = (48, 160, 255)  # humanBody's colour


def is_blue(pixel):
    return all(abs(p - q) <= 60 for p, q in zip(pixel, PERSON_BLUE))


def top_edge_is_blue(image, left, top, width):
    """Most of a box's top edge, in pixels of `image`, is drawn in the person colour."""
    columns = range(int(left) + 4, int(left + width) - 4)
    blue = sum(1 for c in columns if any(is_blue(image.getpixel((c, round(top) + d))) for d in (-1, 0, 1, 2)))
    return blue >= len(columns) * 0.6, (blue, len(columns))


def check_player(binary, work, path, groups):
    """The console's player in Chromium draws the file's people at the time it shows, each
    as an SVG rect with its ID, type and bounds, in the person colour; its timeline has a lane
    for each person; a snapshot draws them too."""
    from PIL import Image
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    console = subprocess.Popen([binary, "console", "--recordings", os.path.dirname(path), "--listen",
                                f"127.0.0.1:{port}", "--log-level", "warning"])
    driver = None
    try:
        wait_for(lambda: serving(base, console), what="the console")
        driver = browser()
        name = os.path.basename(path)
        # A moment with people wholly inside the picture, past the file's first second.
        inside = [(t, objects) for t, objects in groups if objects and t > 1 and all(
            0.01 <= x and x + w <= 0.99 and 0.01 <= y and y + h <= 0.99 for _, x, y, w, h in objects)]
        t, _ = inside[len(inside) // 2]
        player_at(driver, base, name, t + 0.01)
        shown_at = float(driver.execute_script("return document.getElementById('overlay').dataset.mediaTime"))
        expected = next((objects for start, objects in reversed(groups) if start <= shown_at + 1e-6), [])
        drawn = driver.execute_script(
            "return [...document.querySelectorAll('#overlay rect')].map(r => [Number(r.dataset.objectId), "
            "r.dataset.objectType, r.dataset.bounds.split(' ').map(Number), getComputedStyle(r).stroke, "
            "(b => [b.left, b.top, b.width, b.height])(r.getBoundingClientRect())])")
        check("the player draws the file's people at the time it shows",
              [d[0] for d in drawn] == [o[0] for o in expected] and all(
                  d[1] == "humanBody" and all(abs(p - q) < 1e-4 for p, q in zip(d[2], o[1:]))
                  for d, o in zip(drawn, expected)) and drawn, (shown_at, drawn, expected))
        check("in the person colour", all(d[3] == "rgb(48, 160, 255)" for d in drawn), [d[3] for d in drawn])
        image = screenshot(driver)
        edges = [top_edge_is_blue(image, *d[4][:3]) for d in drawn]
        check("a screenshot shows each box's top edge", edges and all(e[0] for e in edges), edges)
        lanes = driver.execute_script(
            "return [...document.querySelectorAll('#timeline .lane[data-object-type=humanBody]')]"
            ".map(l => l.querySelector('.label').textContent)")
        ids = sorted({o[0] for _, objects in groups for o in objects})
        check("the timeline has a lane for each person", sorted(int(l.split()[1]) for l in lanes) == ids
              and all(l.startswith("humanBody ") and l.endswith(" person") for l in lanes), (lanes, ids))
        status, _, jpeg = http(f"{base}/api/recordings/{name}/snapshot?t={t + 0.01:.3f}")
        snap = Image.open(io.BytesIO(jpeg)).convert("RGB") if status == 200 else None
        width, height = snap.size if snap else (0, 0)
        shown = next((objects for start, objects in reversed(groups) if start <= t + 0.01), [])
        edges = [top_edge_is_blue(snap, x * width, y * height, w * width) for _, x, y, w, h in shown] if snap else []
        check("a snapshot draws each person's box", status == 200 and edges and all(e[0] for e in edges),
              (status, edges))
    finally:
        if driver:
            driver.quit()
        console.send_signal(signal.SIGTERM)
        console.wait(timeout=30)


def main():
    binary = os.path.abspath(sys.argv[1])
    vtest = subprocess.check_output([os.path.join(here, "tools/fetch-pedestrians.sh")], text=True).strip()
    work = tempfile.mkdtemp(prefix="sightline-people-")
    clip = os.path.join(work, "square.mp4")
    subprocess.check_call(["ffmpeg", "-v", "error", "-y", "-t", "20", "-i", vtest, "-c:v", "libx264", "-preset",
                           "veryfast", "-g", "20", "-pix_fmt", "yuv420p", clip])
    publish, objects_in = free_port(), free_port()
    sent_log = os.path.join(work, "sent.jsonl")
    detector = subprocess.Popen([sys.executable, os.path.join(here, "tools/people_detector.py"),
                                 "--frames", f"tcp://127.0.0.1:{publish}", "--objects", f"tcp://127.0.0.1:{objects_in}",
                                 "--log", sent_log], stdout=subprocess.PIPE, text=True)
    metrics_port = free_port()
    source = subprocess.Popen([binary, "run", "--source", clip, "--realtime", "--detect", "barcodes",
                               "--publish", f"tcp://127.0.0.1:{publish}", "--wait-for-subscriber", "30",
                               "--metadata-in", f"tcp://127.0.0.1:{objects_in}",
                               # The detector is HOG in Python: on a loaded machine its answers
                               # came over the default second after their frames, and were
                               # dropped as late, as they should be (a test of its own).
                               "--objects-hold", "10",
                               "--frames", "gray8", "--frames-size", "768x576", "--frames-rate", "3",
                               "--metrics", f"127.0.0.1:{metrics_port}",
                               "--record", os.path.join(work, "rec"), "--print", "--log-level", "warning"],
                              stdout=subprocess.PIPE, text=True)
    # /metrics while it runs: the last scrape before it stops.
    scrapes = []
    scraper = threading.Thread(target=scrape, args=(f"http://127.0.0.1:{metrics_port}/metrics", source, scrapes))
    scraper.start()
    stdout, _ = source.communicate(timeout=600)
    scraper.join()
    run = subprocess.CompletedProcess(source.args, source.returncode, stdout)
    detector_out, _ = detector.communicate(timeout=120)
    print("people_detector:", detector_out.strip())
    check("run exits 0", run.returncode == 0, run.returncode)
    messages = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    sent = [json.loads(line) for line in open(sent_log)]
    sent_by_time = {json.dumps(g["time"], sort_keys=True): g for g in sent}
    published = [m for m in messages if m["kind"] == "objects"]
    with_people = [m for m in published if m["objects"]["items"]]
    check("the detector found people", sum(1 for g in sent if g["objects"]["items"]) >= 10, len(sent))

    # Every group taken is published at its frame's time, with the detector's boxes and IDs.
    unmatched = [m for m in with_people if not close(
        boxes(m["objects"]["items"]),
        boxes(sent_by_time.get(json.dumps(m["time"], sort_keys=True), {"objects": {"items": []}})["objects"]["items"]))]
    check("published groups are the detector's, at its frames' times", not unmatched, unmatched[:1])
    check("every object has Sightline's ID", all(
        isinstance(i.get("objectID"), int) and i["objectID"] > 0 for m in with_people for i in m["objects"]["items"]))
    final = [m for m in messages if m["kind"] == "status" and m["status"]["state"] == "stopped"][-1]
    counted = final["status"]["counters"].get("objectsIn", {}).get("people", {})
    check("groups counted", counted.get("groups", 0) >= len(sent) - 5 and not counted.get("rejected"), counted)
    check("every group published", len(published) >= counted.get("groups", 0), (len(published), counted))

    # /metrics counts the detector's groups and objects, as promtool reads them.
    text = scrapes[-1] if scrapes else ""
    promtool = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    check("promtool reads /metrics", text and promtool.returncode == 0, promtool.stdout + promtool.stderr)
    groups_metric = metric(text, "sightline_detector_groups_total", 'detector="people"')
    objects_metric = metric(text, "sightline_objects_published_total", 'detector="people"')
    check("/metrics counts the detector's groups and objects", 10 <= groups_metric <= counted.get("groups", 0)
          and groups_metric <= objects_metric, (groups_metric, objects_metric, counted))

    # People enter and leave, named by type and detector.
    events = [m["event"] for m in messages if m["kind"] == "events" and m["event"].get("detector") == "people"]
    entered = {e["id"] for e in events if e["change"] == "enter"}
    left = {e["id"] for e in events if e["change"] == "leave"}
    check("people enter", len(entered) >= 3, entered)
    check("everyone who entered leaves", entered == left, (entered, left))
    check("events name the type", all(e["object"] == "humanBody" and e["item"]["label"] == "person" for e in events))

    # The recording: the same groups at the same times, read by inspect and by exiftool.
    files = sorted(os.path.join(work, "rec", f) for f in os.listdir(os.path.join(work, "rec")) if f.endswith(".mov"))
    recorded = [(path, recorded_groups(binary, path)) for path in files]
    recorded = [(path, groups) for path, groups in recorded if any(objects for _, objects in groups)]
    check("a recording has the detector's track", recorded, files)
    times = {round(m["time"]["value"] / m["time"]["timescale"], 6): boxes(m["objects"]["items"]) for m in published}
    matched = total = 0
    for path, groups in recorded:
        # The file's time 0 is a source time: the offset at which most of its groups with
        # people are published ones. (Its first group may restate, at the file's start, one
        # published earlier: with a detector that skips frames, that is often so.)
        def lined_up(offset):
            return sum(1 for t, objects in groups
                       if objects and (there := times.get(round(t + offset, 6))) is not None and close(there, objects))
        offsets = sorted({round(s - t, 6) for t, objects in groups if objects
                          for s, b in times.items() if close(b, objects)}, key=lined_up, reverse=True)
        check("the recorded groups were published", offsets, groups[:2])
        if not offsets:
            continue
        previous = None
        for t, objects in groups:
            published_there = times.get(round(t + offsets[0], 6))
            if published_there is None:
                # A fragment of the file restates the group that holds at its start.
                check("a sample between groups restates the last", previous is None or close(previous, objects),
                      (t, objects, previous))
            elif objects:
                total += 1
                matched += close(published_there, objects)
            previous = objects
        exif = subprocess.check_output(["exiftool", "-ee", "-a", "-s3", "-MdtacomSightlineDetectedObjectType", path],
                                       text=True).split()
        check("exiftool reads the types", len(exif) >= sum(len(o) for _, o in groups) and set(exif) == {"humanBody"},
              exif[:5])
    check("recorded groups are the published ones at their times", total >= 10 and matched == total, (matched, total))

    # A trimmed copy keeps the track, with the objects of its span.
    if recorded:
        path, groups = recorded[0]
        trimmed = os.path.join(work, "trimmed.mov")
        subprocess.check_call([binary, "export", path, "--output", trimmed, "--from", "1", "--to", "6", "--quiet"])
        kept = recorded_groups(binary, trimmed)
        check("a trim keeps the track", sum(1 for _, objects in kept if objects) >= 3, len(kept))

    # A burned-in export draws them in the detectors' colour.
    path, groups = recorded[0] if recorded else (None, [])
    shown = next(((t, o) for t, o in groups if o and t > 1), None)
    if path and shown:
        out = os.path.join(work, "burned.mp4")
        start = shown[0] - 0.5
        subprocess.check_call([binary, "export", path, "--output", out, "--burn-in", "--from", str(start), "--to",
                               str(start + 1), "--quiet"])
        frame = subprocess.check_output(["ffmpeg", "-v", "error", "-ss", "0.5", "-i", out, "-frames:v", "1", "-f",
                                         "rawvideo", "-pix_fmt", "rgb24", "-"])
        width, height = 768, 576
        _, x, y, w, h = shown[1][0]
        row = int(round(y * height)) + 1
        pixels = [frame[(row * width + c) * 3:(row * width + c) * 3 + 3]
                  for c in range(int(x * width) + 4, int((x + w) * width) - 4)]
        blue = sum(1 for r, g, b in pixels if b > 180 and r < 140)
        check("the export draws the box's top edge in blue", blue >= len(pixels) * 0.6, (blue, len(pixels)))
    if recorded:
        check_player(binary, work, *recorded[0])
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
