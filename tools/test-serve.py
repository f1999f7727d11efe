#!/usr/bin/env python3
"""`sightline serve` as an operator runs it: the config check, three sources in one process
(a file looped in real time, a file read whole, an unreachable stream, a stream that takes
the connection and never answers), recording with
retention by age and by size, /metrics checked by promtool and against the final status
counters, /health, the metrics token, and SIGTERM finalising every file.

Usage: tools/test-serve.py SIGHTLINE_BINARY   (run by tools/test.sh)
"""
import json
import os
import re
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import zmq

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from serve_support import Checks, free_port, metric, metric_values, wait_for  # noqa: E402

binary = sys.argv[1]
media = pathlib.Path(__file__).resolve().parent.parent / "Sources/SightlineSamples/Media"
work = pathlib.Path(tempfile.mkdtemp(prefix="sightline-serve-"))

check = Checks()


def run(*arguments):
    return subprocess.run([binary, *arguments], capture_output=True, text=True, timeout=120)


def get(port, path, token=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def still(port, path, token):
    """A JPEG from the operations server: (width, height, pixels of the faces' box green)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        jpeg = response.read()
    probe = json.loads(subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=width,height", "-of", "json",
                                       "-"], input=jpeg, capture_output=True).stdout)["streams"][0]
    rgb = subprocess.run(["ffmpeg", "-v", "error", "-i", "-", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], input=jpeg,
                         capture_output=True).stdout
    green = sum(1 for i in range(0, len(rgb) - 2, 3)
                if rgb[i] < 70 and rgb[i + 1] > 180 and rgb[i + 2] < 130)  # (0, 224, 80), after JPEG
    return probe["width"], probe["height"], green


def frames_in(movie):
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
         "stream=nb_read_frames", "-of", "csv=p=0", str(movie)], capture_output=True, text=True)
    return int(probe.stdout.strip() or 0)


# 1. The check: every problem on a line of its own, with its line number.
bad = work / "bad.yml"
bad.write_text(f"""publish: tcp://127.0.0.1:{free_port()}
colour: blue
sources:
  - source-id: a
    source: {media}/faces_640x480.mp4
    fps: fast
  - source-id: b
    source: {media}/faces_640x480.mp4
    record: /proc/sightline-cannot
  - source-id: b
    source: {media}/barcodes_640x480.mp4
  - source-id: cam
    source: /dev/video0
  - source-id: cam2
    source: /dev/video0
    frobnicate: 3
  - source-id: cam3
    source: /dev/video0
  - source-id: c
    source: {media}/faces_640x480.mp4
    upsample: [1, 2]
""")
result = run("serve", "--check", "--config", str(bad))
lines = result.stderr.strip().splitlines()
# Each problem names its line and column (LINE:COLUMN, as compilers do).
expected = [
    f"Error: {bad}:2:COL: unknown key 'colour'",
    f"Error: {bad}:6:COL: source 'a': The value 'fast' is invalid for 'fps'",
    f"Error: {bad}:16:COL: source 'cam2': Unknown option 'frobnicate'",
    f"Error: {bad}:21:COL: source 'c': 'upsample' takes one value, not a list",
    f"Error: {bad}:10:COL: source ID 'b' is already used at 7:COL",
    f"Error: {bad}:15:COL: source 'cam2' uses /dev/video0, which source 'cam' already uses",
    f"Error: {bad}:18:COL: source 'cam3' uses /dev/video0, which source 'cam' already uses",
    f"Error: {bad}:9:COL: source 'b': cannot record to /proc/sightline-cannot: ",
]
check("a bad config exits 1", result.returncode == 1, result.stderr)
check("one line per problem", len(lines) == len(expected), "\n".join(lines))
for want in expected:
    pattern = re.compile(re.escape(want).replace("COL", r"\d+"))
    check(f"problem reported: {want}", any(pattern.match(line) for line in lines), "\n".join(lines))
missing = run("serve", "--check", "--config", str(work / "none.yml"))
check("a missing file is one line", missing.returncode == 1 and missing.stderr.count("Error:") == 1, missing.stderr)

# A problem only opening finds (an endpoint another process holds) ends serve with its one
# line, after a graceful stop of what had started.
holder = socket.create_server(("127.0.0.1", 0))
held_port = holder.getsockname()[1]
taken = work / "taken.yml"
taken.write_text(f"""
publish: tcp://127.0.0.1:{free_port()}
sources:
  - source-id: lobby
    source: {media}/faces_640x480.mp4
    metadata-in: tcp://127.0.0.1:{held_port}
""")
result = run("serve", "--config", str(taken))
holder.close()
check("an endpoint in use ends serve with 1 and one line",
      result.returncode == 1 and result.stderr.count("Error:") == 1 and " error " not in result.stderr
      and f"Error: endpoint tcp://127.0.0.1:{held_port} is already in use by another process" in result.stderr,
      result.stderr[-2000:])

# 2. Three sources in one process.
bus, metrics_port, console_port = free_port(), free_port(), free_port()
# A camera where there is one (inside vivid-run): a fifth source, codes only.
camera = """
  - source-id: webcam
    source: /dev/video0
    detect: barcodes
    size: 640x360
""" if os.path.exists("/dev/video0") else ""


def silent_server():
    """A loopback port whose server takes each connection and never says a word (a camera's
    hung RTSP server); returns the port."""
    listener = socket.create_server(("127.0.0.1", 0))
    held = []

    def take():
        while True:
            held.append(listener.accept()[0])
    threading.Thread(target=take, daemon=True).start()
    return listener.getsockname()[1]


recordings = work / "recordings"
config = work / "sightline.yml"
config.write_text(f"""
publish: tcp://127.0.0.1:{bus}
metrics: 127.0.0.1:{metrics_port}
defaults:
  record: {recordings}
  segment: 2s
  fragment: 1
  status-interval: 1
sources:
  - source-id: lobby            # looped in real time, kept 4 s
    source: {media}/faces_640x480.mp4
    realtime: true
    loop: true
    keep: 4s
  - source-id: shelf            # read whole, then ended
    source: {media}/barcodes_640x480.mp4
    detect: barcodes
  - source-id: yard             # looped in real time, kept to 400K
    source: {media}/barcodes_640x480.mp4
    detect: barcodes
    realtime: true
    loop: true
    max-total: 400K
  - source-id: door             # unreachable: retried, and unhealthy meanwhile
    source: rtsp://127.0.0.1:{free_port()}/stream
  - source-id: gate             # never answers: holds up no other source
    source: rtsp://127.0.0.1:{silent_server()}/stream
    network-timeout: 1.5
{camera}
console:
  listen: 127.0.0.1:{console_port}
""")
result = run("serve", "--check", "--config", str(config))
sources = 6 if camera else 5
check("the good config checks", result.returncode == 0 and f"{sources} sources, {sources} recorded: ok" in result.stdout,
      result.stdout + result.stderr)

context = zmq.Context()
statuses = context.socket(zmq.SUB)
statuses.setsockopt(zmq.SUBSCRIBE, b"status/shelf/")
statuses.connect(f"tcp://127.0.0.1:{bus}")
log_path = work / "serve.log"
log = open(log_path, "w")
serve = subprocess.Popen([binary, "serve", "--config", str(config)], stdout=log, stderr=log)
try:
    final = None
    deadline = time.monotonic() + 120
    while final is None and time.monotonic() < deadline:
        if statuses.poll(200):
            frames = statuses.recv_multipart()
            message = json.loads(frames[1])
            if message["status"]["state"] in ("stopped", "failed"):
                final = message["status"]
    check("shelf ends with a final status", final is not None and final["state"] == "stopped", str(final))
    wait_for(lambda: "retention: deleted" in log_path.read_text() and "source=yard" in
             "".join(line for line in log_path.read_text().splitlines() if "retention: deleted" in line),
             120, "retention to delete lobby and yard files")
    wait_for(lambda: sum(1 for line in log_path.read_text().splitlines()
                         if "retention: deleted" in line and "source=lobby" in line) >= 2, 120,
             "two lobby files past their age")

    def gate_given_up():
        return any(problem.startswith("gate: failed: cannot open rtsp://")
                   and problem.endswith(": no answer within 1.5 seconds")
                   for problem in json.loads(get(metrics_port, "/health")[1])["problems"])
    wait_for(gate_given_up, 60, "/health to say that gate does not answer")
    status, body = get(metrics_port, "/health")
    health = json.loads(body)
    check("/health is 503 while door cannot be opened", status == 503 and health["status"] == "unhealthy", body)
    check("/health names door's problem",
          any(p.startswith("door: failed: cannot open rtsp://") for p in health["problems"]), body)
    states = {source["id"]: source["state"] for source in health["sources"]}
    expected_states = {"lobby": "running", "shelf": "ended", "yard": "running", "door": "failed", "gate": "failed"}
    if camera:
        expected_states["webcam"] = "running"
    check("/health: lobby and yard running, shelf ended, door and gate failed", states == expected_states, body)
    entered = [line for line in log_path.read_text().splitlines() if "face entered" in line]
    check("serve's log lines name their source", entered and all("source=lobby" in line or "source=yard" in line
                                                                  for line in entered), entered[:3])
    opened = [line for line in log_path.read_text().splitlines() if "source=door" in line and "rtsp://" in line]
    check("a source that cannot be opened is logged once, then at each retry",
          sum("cannot be opened yet" in line for line in opened) == 1
          and not any("trying again in 1" in line for line in opened), opened[:4])
    recorders = {source["id"]: source.get("recorder") for source in health["sources"]}
    check("/health: door's recorder has not started, lobby's records",
          recorders.get("door") == "notStarted" and recorders.get("lobby") == "recording", recorders)
    status, body = get(console_port, "/api/sources")
    listed = {source["id"] for source in json.loads(body)} if status == 200 else set()
    check("the console lists the running sources", {"lobby", "yard"} <= listed, body[:500])
    status, body = get(console_port, "/api/sources/lobby/controls")
    check("the console says a file has no controls", status == 409 and "is not a camera" in body, (status, body))
    status, body = get(console_port, "/api/sources/door/latest.jpg")
    check("the console says a failed source has no picture", status == 503 and "is not running now" in body,
          (status, body))
    with urllib.request.urlopen(f"http://127.0.0.1:{console_port}/api/sources/lobby/latest.jpg?h=240") as answer:
        jpeg = answer.read()
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", "-"],
                           input=jpeg, capture_output=True, text=False).stdout.decode().strip()
    check("the console serves the latest picture, scaled", probe == "320,240", probe)
    status, body = get(console_port, "/api/recordings")
    check("the console lists the recordings", status == 200 and "shelf-" in body, body[:300])

    status, text = get(metrics_port, "/metrics")
    (work / "metrics.txt").write_text(text)
    promtool = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    check("promtool check metrics passes", promtool.returncode == 0 and not promtool.stdout.strip(),
          promtool.stdout + promtool.stderr)
    counters = final["counters"]
    check("frames_total equals shelf's final framesIn",
          metric(text, "sightline_frames_total", source="shelf") == counters["framesIn"] == 240,
          f'{metric(text, "sightline_frames_total", source="shelf")} vs {counters["framesIn"]}')
    for output, values in counters["outputs"].items():
        for reason, count in values.get("dropped", {}).items():
            check(f"dropped {output}/{reason} equals the status",
                  metric(text, "sightline_frames_dropped_total", source="shelf", output=output,
                         reason=reason) == count)
    check("messages published: the status's, and the final status itself",
          metric(text, "sightline_messages_published_total", source="shelf") == counters["messagesPublished"] + 1)
    check("source_up: lobby 1, shelf 0, door 0, gate 0",
          [metric(text, "sightline_source_up", source=source) for source in ("lobby", "shelf", "door", "gate")]
          == [1, 0, 0, 0])
    detections = metric(text, "sightline_detection_seconds_count", source="shelf", detector="code")
    check("detection histogram counts every analysed frame", detections == 240, str(detections))

    # The shelf's recording is finished once its source ended: frames written equal the file's.
    shelf_files = sorted(recordings.glob("shelf-*.mov"))
    written = metric(text, "sightline_recorder_frames_written_total", source="shelf")
    on_disk = sum(frames_in(movie) for movie in shelf_files)
    check("recorder frames written equal the frames in shelf's files", written == on_disk and written > 200,
          f"{written} vs {on_disk}")
    check("files finished equal shelf's files",
          metric(text, "sightline_recorder_files_finished_total", source="shelf") == len(shelf_files))
    # Retention goes on deleting: compare a scrape with the log lines written before and after
    # it, when no deletion came in between (a scrape waits for a retention pass to finish).
    def deleted_logged(source):
        return sum(1 for line in log_path.read_text().splitlines()
                   if "retention: deleted" in line and f"source={source}" in line)

    for source in ("lobby", "yard"):
        compared = []

        def steady():
            before = deleted_logged(source)
            counted = metric(get(metrics_port, "/metrics")[1], "sightline_retention_deleted_files_total", source=source)
            compared[:] = [before, counted]
            return deleted_logged(source) == before
        wait_for(steady, 60, f"a scrape between two of {source}'s deletions")
        check(f"retention_deleted_files_total for {source} equals its log lines",
              compared[1] == compared[0] >= 1, f"{compared[1]} vs {compared[0]}")
    check("disk free is reported for the recordings directory",
          metric(text, "sightline_disk_free_bytes", directory=str(recordings)) > 0)
finally:
    serve.send_signal(signal.SIGTERM)
    try:
        serve.wait(timeout=60)
    except subprocess.TimeoutExpired:
        serve.kill()
    log.close()
check("SIGTERM ends serve with 0", serve.returncode == 0, f"exit {serve.returncode}")

# Retention held: lobby's files are recent, yard's take about the limit, shelf's are all there.
movies = sorted(recordings.glob("*.mov"))
now = time.time()
lobby = [movie for movie in movies if movie.name.startswith("lobby-")]
yard = [movie for movie in movies if movie.name.startswith("yard-")]
check("lobby keeps only recent files", lobby and all(now - movie.stat().st_mtime < 4 + 15 for movie in lobby),
      str([(movie.name, round(now - movie.stat().st_mtime)) for movie in lobby]))
yard_sizes = sorted(movie.stat().st_size for movie in yard)
check("yard keeps about 400K (the limit plus the file being written at the end)",
      sum(yard_sizes[:-1]) <= 400 * 1024 and yard_sizes, str(yard_sizes))
for movie in movies:
    decoded = subprocess.run(["ffmpeg", "-v", "error", "-xerror", "-i", str(movie), "-f", "null", "-"],
                             capture_output=True, text=True)
    check(f"{movie.name} decodes", decoded.returncode == 0 and not decoded.stderr.strip(), decoded.stderr[:300])

# 3. The metrics endpoint beyond loopback needs a token; with one, scrapes must present it.
refused = run("run", "--metrics", "0.0.0.0:9", "--source", str(media / "faces_640x480.mp4"))
check("metrics beyond loopback without a token is one line, exit 1",
      refused.returncode == 1 and refused.stderr.count("Error:") == 1 and "token" in refused.stderr,
      refused.stderr)
token = "0123456789abcdef0123"
(work / "metrics.token").write_text(token + "\n")
port = free_port()
guarded = subprocess.Popen(
    [binary, "run", "--source", str(media / "faces_640x480.mp4"), "--realtime", "--loop", "--publish",
     f"tcp://127.0.0.1:{free_port()}", "--metrics", f"127.0.0.1:{port}", "--metrics-token-file",
     str(work / "metrics.token")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    wait_for(lambda: get(port, "/health")[0] == 200, 60, "the guarded run's health")
    check("/metrics without the token is 401", get(port, "/metrics")[0] == 401)
    check("/metrics with a wrong token is 401", get(port, "/metrics", "x" * 20)[0] == 401)
    status, text = get(port, "/metrics", token)
    check("/metrics with the token is 200", status == 200 and "sightline_frames_total" in text)
    # The source's endpoints follow the same token rules.
    check("latest.jpg without the token is 401", get(port, "/api/sources/cam1/latest.jpg")[0] == 401)
    status, body = get(port, "/api/sources/cam1/controls", token)
    check("a file's controls are 409, one line", status == 409 and "is not a camera" in body, (status, body))
    plain, boxed = (still(port, "/api/sources/cam1/latest.jpg" + query, token) for query in ("", "?boxes=1"))
    check("latest.jpg is the frame's size", plain[:2] == (640, 480), plain[:2])
    check("latest.jpg?boxes=1 has the faces' green boxes, the plain one none",
          boxed[:2] == (640, 480) and boxed[2] > 200 and plain[2] < 20, (plain[2], boxed[2]))
finally:
    guarded.send_signal(signal.SIGTERM)
    guarded.wait(timeout=60)

# 4. Keys: serve's own endpoint with CURVE (an allowed subscriber gets events, a stranger
# nothing), and serve publishing to a CURVE broker as one source would.
keys = work / "keys"
(keys / "clients").mkdir(parents=True)
for name in ("broker", "serve", "me", "stranger"):
    run("keys", "generate", "--name", name, "--out", str(keys))
for name in ("serve", "me"):
    (keys / "clients" / f"{name}.pub").write_text((keys / f"{name}.pub").read_text())


def events_seen(endpoint, key, server_key):
    """Face events a subscriber with `key` gets within 30 s (it stops at the first three)."""
    events = subprocess.Popen(
        [binary, "events", "--connect", endpoint, "--curve-key", str(keys / f"{key}.key"), "--server-key",
         str(keys / f"{server_key}.pub"), "--kind", "events"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True)
    lines = []
    deadline = time.monotonic() + 30
    os.set_blocking(events.stdout.fileno(), False)
    while time.monotonic() < deadline and len(lines) < 3:
        lines += [line for line in (events.stdout.readline(),) if line]
        time.sleep(0.05)
    events.kill()
    events.wait()
    return len(lines)


def serve_with(bus_keys, subscribe):
    keyed = work / "keyed.yml"
    keyed.write_text(bus_keys + f"""
sources:
  - source-id: lobby
    source: {media}/faces_640x480.mp4
    realtime: true
    loop: true
""")
    log = open(work / "keyed.log", "w")
    process = subprocess.Popen([binary, "serve", "--config", str(keyed)], stdout=log, stderr=log)
    try:
        return subscribe()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        log.close()


endpoint = f"tcp://127.0.0.1:{free_port()}"
allowed, stranger = serve_with(
    f"publish: {endpoint}\ncurve-key: {keys}/serve.key\nallow: {keys}/clients\n",
    lambda: (events_seen(endpoint, "me", "serve"), events_seen(endpoint, "stranger", "serve")))
check("an allowed key gets serve's events over CURVE", allowed >= 1, str(allowed))
check("a key not on the allow-list gets nothing", stranger == 0, str(stranger))
check("the refused key is logged", "not on the allow-list" in (work / "keyed.log").read_text())
frontend, backend = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"
broker = subprocess.Popen(
    [binary, "broker", "--frontend", frontend, "--backend", backend, "--curve-key", str(keys / "broker.key"),
     "--allow", str(keys / "clients")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    through_broker = serve_with(
        f"publish-to: {frontend}\ncurve-key: {keys}/serve.key\nserver-key: {keys}/broker.pub\n",
        lambda: events_seen(backend, "me", "broker"))
finally:
    broker.send_signal(signal.SIGTERM)
    broker.wait(timeout=30)
check("serve publishes to a CURVE broker (publish-to)", through_broker >= 1, str(through_broker))

# 5. The systemd unit is one systemd accepts (where systemd-analyze is installed).
analyze = subprocess.run(["which", "systemd-analyze"], capture_output=True, text=True).stdout.strip()
if analyze:
    unit = work / "sightline.service"
    unit.write_text((pathlib.Path(__file__).resolve().parent / "sightline.service").read_text()
                    .replace("/usr/local/bin/sightline", os.path.abspath(binary)))
    verified = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True)
    check("systemd-analyze verify accepts tools/sightline.service", verified.returncode == 0 and not verified.stderr,
          verified.stderr)
else:
    print("systemd unit: skipped (no systemd-analyze)")

check.finish("serve")
