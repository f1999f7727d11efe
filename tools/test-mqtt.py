#!/usr/bin/env python3
"""The MQTT output against a real broker: Debian's mosquitto, started here on a free loopback
port, and mosquitto_sub as the independent reader.

Checks that the bundled clip's face events reach MQTT as Frigate-shaped `new`, `update`
(when the gallery names a face, or a better snapshot is taken) and `end` events agreeing
with the ZeroMQ events; that the retained snapshot is a JPEG with the box an event gives
drawn in (ffmpeg decodes it); that the retained counts, people and status, and Home
Assistant's discovery (a sensor for everyone enrolled, from the start, removed when they
leave the gallery) are there for a subscriber that comes late; that a
`kill -9` shows as `offline` (the broker's last will); that events wait while the broker is
down and arrive when it is back, and that a full queue drops and counts; that two
processes share one broker; that TLS with our own authority and a password file works and
a wrong password or authority is reported; and that bad options are one line.

  python3 tools/test-mqtt.py .build/debug/sightline
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from sightline_testkit import Broker, Checks, StandInDetector, free_port, http, wait_for

here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
check = Checks("MQTT output")


def payload_of(hex_payload):
    """A payload as mosquitto_sub's `%x` gives it: text when it is UTF-8, else bytes (a JPEG)."""
    raw = bytes.fromhex(hex_payload)
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw


class Subscription:
    """mosquitto_sub on `topics`, each message as (retained, topic, payload) as it arrives."""

    def __init__(self, port, topics=("sightline/#",), extra=()):
        topics = [topics] if isinstance(topics, str) else topics
        self.process = subprocess.Popen(
            ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), *[a for t in topics for a in ("-t", t)], "-q", "1",
             "-F", "%r\t%t\t%x", *extra], stdout=subprocess.PIPE, text=True)
        self.messages = []
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.process.stdout:
            retained, topic, payload = line.rstrip("\n").split("\t", 2)
            self.messages.append((retained == "1", topic, payload_of(payload)))

    def payloads(self, topic):
        return [p for _, t, p in self.messages if t == topic]

    def wait(self, condition, what, timeout=120):
        return wait_for(lambda: condition(self), timeout=timeout, what=what)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


def retained_now(port, topic="sightline/#", extra=()):
    """What a subscriber that comes now gets: the retained messages, by topic."""
    out = subprocess.run(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-t", topic, "--retained-only",
                          "-W", "3", "-F", "%t\t%x", *extra], capture_output=True, text=True)
    return {t: payload_of(p) for t, p in (line.split("\t", 1) for line in out.stdout.splitlines() if "\t" in line)}


def events_of(subscription):
    return [json.loads(p) for p in subscription.payloads("sightline/events")]


def main():
    binary = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="sightline-mqtt-")
    gallery = os.path.join(work, "faces.json")
    subprocess.run([binary, "faces", "enroll", "Obama", os.path.join(here, "Tests/SightlineDetectionTests/Faces/obama2.jpg"),
                    "--gallery", gallery], check=True, stdout=subprocess.DEVNULL)
    # Someone the clip never shows: a descriptor far from every face's.
    with open(gallery) as f:
        enrolled = json.load(f)
    enrolled["people"].append({"name": "Nobody", "enrolments": [
        dict(enrolled["people"][0]["enrolments"][0], descriptor=[0.3] * 128, image="none.jpg")]})
    with open(gallery, "w") as f:
        json.dump(enrolled, f)
    broker = Broker(work)
    mqtt = f"mqtt://127.0.0.1:{broker.port}"

    # 1. The clip, every frame: MQTT's events agree with the bus's.
    sub = Subscription(broker.port, ("sightline/#", "homeassistant/#"))
    time.sleep(0.2)  # mosquitto_sub has subscribed once it has connected; the broker answers at once
    run = subprocess.run([binary, "run", *own_bus(), "--gallery", gallery, "--print", "--mqtt", mqtt, "--log-level", "warning"],
                         capture_output=True, text=True, timeout=600)
    check("run with --mqtt exits 0", run.returncode == 0, run.stderr[-2000:])
    bus = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    bus_events = [m["event"] for m in bus if m["kind"] == "events"]
    sub.wait(lambda s: "offline" in s.payloads("sightline/available"), "offline after the run")
    events = events_of(sub)
    kinds = {"enter": "new", "identified": "update", "leave": "end"}
    expected = [(kinds[e["change"]], e["id"]) for e in bus_events]
    # A snapshot's update comes between the events of the bus: the others are the bus's, in order.
    snapshot_updates = [e for e in events if e["type"] == "update" and e["after"]["has_snapshot"]
                        and e["before"]["sub_label"] == e["after"]["sub_label"]]
    got = [(e["type"], e["after"]["object_id"]) for e in events if e not in snapshot_updates]
    check("an MQTT event for each bus event, in order (new, update on naming, end)", got == expected and got,
          (got, expected))
    snapshots = [p for _, t, p in sub.messages if t == "sightline/cam1/face/snapshot"]
    check("a snapshot of each face as it enters, and a few better ones: never one a frame",
          len(snapshots) >= len(news_of(events)) and len(snapshot_updates) <= 4 * len(bus) / 30 + len(news_of(events)),
          (len(snapshots), len(snapshot_updates), len(news_of(events))))
    check("has_snapshot: the events after a snapshot say so, ends included",
          snapshot_updates and all(e["after"]["has_snapshot"] for e in events if e["type"] == "end"))
    check_snapshot(work, snapshots[-1], snapshot_updates)
    # Named as it enters (new), or later while tracked (update, before without the name).
    named = [e for e in events if (e["after"]["sub_label"] or [None])[0] == "Obama" and (
        e["type"] == "new" or e["type"] == "update" and e["before"]["sub_label"] is None)]
    check("a gallery's name is the sub_label, with its distance, as Frigate's", named and all(
        0 < e["after"]["sub_label"][1] < 0.6 for e in named), [e for e in events if e["after"]["sub_label"]][:2])
    news = news_of(events)
    ends = {e["after"]["id"]: e for e in events if e["type"] == "end"}
    check("every new event ends, with the same id", news.keys() == ends.keys() and news, (news.keys(), ends.keys()))
    check("end events have end_time after start_time, and the box of the last sighting", all(
        e["after"]["end_time"] >= e["after"]["start_time"] and len(e["after"]["box"]) == 4 for e in ends.values()))
    check("events carry Frigate's fields", all(
        {"id", "camera", "label", "sub_label", "score", "top_score", "box", "start_time", "end_time", "frame_time",
         "has_snapshot"} <= e["after"].keys() and e["after"]["camera"] == "cam1" and e["after"]["label"] == "face"
        for e in events))
    counts = [int(p) for p in sub.payloads("sightline/cam1/face")]
    in_view, most = 0, 0
    for e in bus_events:
        in_view += {"enter": 1, "leave": -1}.get(e["change"], 0)
        most = max(most, in_view)
    check("the count topic follows faces in view, and ends at 0", counts and counts[-1] == 0 and max(counts) == most,
          (counts, most))
    # Offline last, and nothing else after the last online. Under load a second offline once
    # came after the clean stop's own (most likely the broker's last will, the DISCONNECT not
    # read before the socket closed): the same retained word, so it may come twice.
    availability = sub.payloads("sightline/available")
    check("availability: online, then offline on a clean stop",
          "online" in availability and availability[-1] == "offline"
          and set(availability[len(availability) - availability[::-1].index("online"):]) == {"offline"},
          availability)
    sub.stop()

    # Home Assistant knew Nobody before any face was seen: enrolled, not sighted.
    order = [t for _, t, _ in sub.messages]
    nobody = "homeassistant/sensor/sightline_sightline/person_Nobody/config"
    check("discovery: a sensor for everyone enrolled, before the first event", nobody in order
          and order.index(nobody) < order.index("sightline/events"), order[:12])

    # 2. Retained for a subscriber that comes late.
    retained = retained_now(broker.port)
    check("the newest face's snapshot is retained", isinstance(retained.get("sightline/cam1/face/snapshot"), bytes)
          and retained["sightline/cam1/face/snapshot"][:2] == b"\xff\xd8")
    check("retained: available, counts, status, the person", retained.get("sightline/available") == "offline"
          and retained.get("sightline/cam1/face") == "0" and json.loads(retained.get("sightline/cam1/status", "{}")).get(
              "state") == "stopped" and json.loads(retained.get("sightline/people/Obama", "{}")).get("camera") == "cam1",
          retained)

    # Home Assistant's discovery: a device for the source (face in view, counts, state) and a
    # sensor for the person, every field Home Assistant requires, pointing at the topics above.
    configs = {t: json.loads(p) for t, p in retained_now(broker.port, "homeassistant/#").items()}
    required = {"name", "unique_id", "availability_topic", "device"}
    check("discovery: every config has what Home Assistant requires", configs and all(
        required <= c.keys() and ("state_topic" in c or "topic" in c) and c["device"]["identifiers"]
        and c["availability_topic"] == "sightline/available" for c in configs.values()), list(configs.values())[:1])
    by_state = {(t.split("/")[1], c.get("state_topic") or c["topic"]): (t, c) for t, c in configs.items()}
    camera = by_state.get(("camera", "sightline/cam1/face/snapshot"))
    check("discovery: an MQTT camera shows the snapshots, on the source's device",
          camera and camera[1]["device"] == face_device(configs), camera)
    face = by_state.get(("binary_sensor", "sightline/cam1/face"))
    check("discovery: a binary sensor says a face is in view, a sensor how many",
          face and face[1]["device_class"] == "occupancy" and ("sensor", "sightline/cam1/face") in by_state, configs.keys())
    person = by_state.get(("sensor", "sightline/people/Obama"))
    check("discovery: a sensor says when Obama was last seen, with the camera as an attribute",
          person and person[1]["device_class"] == "timestamp" and person[1]["json_attributes_topic"]
          == "sightline/people/Obama" and "last_seen" in json.loads(retained["sightline/people/Obama"]), person)
    check("discovery: unique IDs are unique", len({c["unique_id"] for c in configs.values()}) == len(configs))
    check("discovery: the source's entities share its device, apart from the people's", len(
        {json.dumps(c["device"], sort_keys=True) for c in configs.values()}) == 2)
    check("discovery: Nobody and unknown have sensors too", all(
        ("sensor", f"sightline/people/{n}") in by_state for n in ("Nobody", "unknown")), by_state.keys())

    # Nobody leaves the gallery: the next run removes their entity and last sighting.
    subprocess.run([binary, "faces", "remove", "Nobody", "--gallery", gallery], check=True, stdout=subprocess.DEVNULL)
    again = subprocess.run([binary, "run", *own_bus(), "--gallery", gallery, "--mqtt", mqtt, "--log-level", "warning"],
                           capture_output=True, text=True, timeout=600)
    after = retained_now(broker.port, "homeassistant/#")
    check("a person removed from the gallery: their entity is gone (an empty retained config)",
          again.returncode == 0 and nobody not in after and "homeassistant/sensor/sightline_sightline/person_Obama/config"
          in after, sorted(after))

    # Another detector's objects: snapshots drawn into the frames it analysed.
    people_snapshots(binary, broker, mqtt, work)

    # 3. kill -9: the broker says offline (the last will).
    sub = Subscription(broker.port, "sightline/available")
    source = subprocess.Popen([binary, "run", *own_bus(), "--realtime", "--loop", "--mqtt", mqtt, "--log-level", "warning"])
    sub.wait(lambda s: "online" in s.payloads("sightline/available"), "online")
    source.send_signal(signal.SIGKILL)
    source.wait()
    sub.wait(lambda s: s.payloads("sightline/available")[-1] == "offline", "offline from the will")
    check("kill -9 shows as offline (the broker's last will)", True)
    sub.stop()

    # 4. The broker goes down mid-run: events wait, then arrive; /health says so.
    metrics = free_port()
    source = subprocess.Popen([binary, "run", *own_bus(), "--realtime", "--loop", "--mqtt", mqtt, "--metrics",
                               f"127.0.0.1:{metrics}", "--log-level", "error"])
    health = lambda: health_of(metrics)
    try:
        wait_for(lambda: health().get("mqtt") == "connected", what="connected")
        broker.stop()
        down = wait_for(lambda: (lambda h: h if h.get("mqtt") == "unreachable" else None)(health()), what="unreachable")
        check("/health says the broker is unreachable, and the source runs on",
              down["status"] == "unhealthy" and down["sources"][0]["state"] == "running", down)
        queued = wait_for(lambda: metric(metrics, "sightline_mqtt_messages_queued") >= 2, timeout=120,
                          what="events queued while the broker is down")
        check("events wait while the broker is down", queued)
        waiting = metric(metrics, "sightline_mqtt_messages_queued")
        broker.start()
        sub = Subscription(broker.port)
        wait_for(lambda: health().get("mqtt") == "connected", timeout=90, what="connected again")
        check("the output reconnects on its own", metric(metrics, "sightline_mqtt_reconnects_total") >= 1)
        sub.wait(lambda s: len(events_of(s)) >= 1 and s.payloads("sightline/available"), "events after the restart")
        check("queued events are delivered after the restart", metric(metrics, "sightline_mqtt_messages_queued") == 0
              and waiting >= 2, waiting)
        sub.stop()
    finally:
        source.send_signal(signal.SIGINT)
        source.wait(timeout=60)

    # A queue of 2 while the broker is down: the oldest are dropped and counted.
    source = subprocess.Popen([binary, "run", *own_bus(), "--realtime", "--loop", "--mqtt", mqtt, "--mqtt-queue", "2",
                               "--metrics", f"127.0.0.1:{metrics}", "--log-level", "error"])
    try:
        wait_for(lambda: health().get("mqtt") == "connected", what="connected")
        broker.stop()
        dropped = wait_for(lambda: metric(metrics, "sightline_mqtt_messages_dropped_total") >= 1, timeout=120,
                           what="drops with a full queue")
        check("a full queue drops the oldest and counts them",
              dropped and metric(metrics, "sightline_mqtt_messages_queued") <= 2)
        broker.start()
    finally:
        source.send_signal(signal.SIGINT)
        source.wait(timeout=60)

    # 5. Two processes (two hosts) into one broker.
    sub = Subscription(broker.port, "sightline/+/status")
    runs = [subprocess.Popen([binary, "run", *own_bus(), "--source-id", name, "--mqtt", mqtt, "--mqtt-client-id", name,
                              "--log-level", "error"])
            for name in ("door", "yard")]
    for r in runs:
        r.wait(timeout=600)
    sub.wait(lambda s: all(any(json.loads(p)["state"] == "stopped" for p in s.payloads(f"sightline/{n}/status"))
                           for n in ("door", "yard")), "both sources' statuses")
    check("two processes publish into one broker", all(r.returncode == 0 for r in runs))
    sub.stop()

    # ... and `serve`'s sources, through its shared bus, with its `mqtt:` section.
    config = os.path.join(work, "serve.yml")
    sample = os.path.join(here, "Sources/SightlineSamples/Media/faces_640x480.mp4")
    with open(config, "w") as f:
        f.write(f"publish: tcp://127.0.0.1:{free_port()}\nsources:\n")
        for name in ("hall", "gate"):
            f.write(f"  - source-id: {name}\n    source: {sample}\n")
        f.write(f"mqtt:\n  url: {mqtt}\n  prefix: site/cams\n  client-id: serve-test\n")
    check("serve --check takes the mqtt section", subprocess.run([binary, "serve", "--config", config, "--check"],
                                                                  capture_output=True).returncode == 0)
    sub = Subscription(broker.port, "site/cams/#")
    serve = subprocess.Popen([binary, "serve", "--config", config, "--log-level", "error"])
    try:
        sub.wait(lambda s: all(any(json.loads(p)["state"] == "stopped" for p in s.payloads(f"site/cams/{n}/status"))
                               for n in ("hall", "gate")), "serve's sources' statuses")
        cameras = {json.loads(p)["after"]["camera"] for p in sub.payloads("site/cams/events")}
        check("serve publishes every source's events under its prefix", cameras == {"hall", "gate"}, cameras)
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=60)
    check("serve's availability goes offline when it stops",
          retained_now(broker.port, "site/cams/available").get("site/cams/available") == "offline")
    sub.stop()

    # 6. TLS with our own authority, and a password file.
    tls_checks(binary, work)

    # 7. Bad options: one line, exit 1, before anything runs.
    for args, words in [(["--mqtt", "http://x"], "mqtt://"), (["--mqtt", mqtt, "--mqtt-prefix", "a/#"], "prefix"),
                        (["--mqtt", mqtt, "--mqtt-prefix", "a/+/b"], "prefix"), (["--mqtt", mqtt, "--mqtt-prefix", ""], "prefix"),
                        (["--mqtt", "mqtt://host:99999"], "port"), (["--mqtt", mqtt, "--mqtt-qos", "3"], "QoS"),
                        (["--mqtt", mqtt, "--mqtt-password-file", "/nonexistent"], "password"),
                        (["--mqtt", mqtt, "--mqtt-ca-file", "/etc/hostname"], "mqtts")]:
        bad = subprocess.run([binary, "run", *own_bus(), *args], capture_output=True, text=True, timeout=60)
        lines = [line for line in bad.stderr.splitlines() if line.strip()]
        check(f"{' '.join(args)}: one line naming the problem", bad.returncode == 1 and len(lines) == 1
              and words in lines[0], (bad.returncode, bad.stderr))
    # An unreachable broker at start is no reason to stop: the source runs, /health reports it.
    source = subprocess.Popen([binary, "run", *own_bus(), "--realtime", "--mqtt", f"mqtt://127.0.0.1:{free_port()}", "--metrics",
                               f"127.0.0.1:{metrics}", "--log-level", "error"])
    try:
        report = wait_for(lambda: (lambda h: h if h.get("mqtt") == "unreachable" and h["sources"][0]["state"] ==
                                   "running" else None)(health()), what="running, broker unreachable")
        check("an unreachable broker: the source runs and /health names the problem",
              "mqtt: broker unreachable" in " ".join(report["problems"]), report)
    finally:
        source.send_signal(signal.SIGINT)
        source.wait(timeout=60)
    broker.stop()
    return check.summary()


PERSON = [0.1, 0.1, 0.3, 0.7]


def people_snapshots(binary, broker, mqtt, work):
    publish, objects_in = free_port(), free_port()
    sub = Subscription(broker.port, ("sightline/events", "sightline/cam1/person/snapshot"))
    # A detector in another process: for each frame the frames output publishes, one person at
    # PERSON, surer on every frame.
    stand_in = StandInDetector(
        f"tcp://127.0.0.1:{publish}", "frames/cam1/", f"tcp://127.0.0.1:{objects_in}", "people",
        lambda sent: [{"type": "humanBody", "label": "person", "confidence": min(0.95, 0.3 + 0.05 * sent),
                       "bounds": dict(zip(("x", "y", "width", "height"), PERSON))}])
    stand_in.start()
    source = subprocess.Popen([binary, "run", "--publish", f"tcp://127.0.0.1:{publish}", "--realtime", "--loop",
                               "--metadata-in", f"tcp://127.0.0.1:{objects_in}", "--frames", "jpeg", "--frames-rate", "5",
                               "--mqtt", mqtt, "--log-level", "warning"])
    try:
        sub.wait(lambda s: len(s.payloads("sightline/cam1/person/snapshot")) >= 2, "two snapshots of the person")
    finally:
        source.send_signal(signal.SIGINT)
        source.wait(timeout=60)
        stand_in.running = False
    people = [e for e in events_of(sub) if e["after"]["label"] == "person"]
    updates = [e for e in people if e["type"] == "update" and e["after"]["has_snapshot"]]
    check("another detector's person: update events with has_snapshot, the box it sent",
          updates and all(close_box(e["after"]["box"], PERSON) for e in updates), updates[:1])
    check("... whose score grew by a tenth at least between snapshots", all(
        b["after"]["score"] > a["after"]["score"] * 1.1 for a, b in zip(updates, updates[1:])),
          [e["after"]["score"] for e in updates])
    jpeg = sub.payloads("sightline/cam1/person/snapshot")[-1]
    width, height, rgb = decoded(work, jpeg)
    x0, y0, x1 = (round(PERSON[0] * width), round(PERSON[1] * height), round((PERSON[0] + PERSON[2]) * width))
    blue = [rgb[3 * (y0 * width + x) + i] for x in range(x0 + 4, x1 - 4) for i in range(3)]
    pixels = [blue[i:i + 3] for i in range(0, len(blue), 3)]
    # humanBody's colour, #30a0ff, after JPEG.
    check("the person's snapshot: the frame with its box in humanBody's blue where the detector put it",
          (width, height) == (640, 480) and sum(r < 110 and 110 < g < 210 and b > 200 for r, g, b in pixels)
          > 0.8 * len(pixels), (width, height, pixels[:3]))
    configs = retained_now(broker.port, "homeassistant/camera/#")
    check("discovery: a camera for the person snapshots",
          "homeassistant/camera/sightline_sightline/snapshot_cam1_person/config" in configs, sorted(configs))
    sub.stop()


def close_box(box, bounds):
    x, y, w, h = bounds
    return all(abs(a - b) < 1e-9 for a, b in zip(box, [x, y, x + w, y + h]))


def decoded(work, jpeg):
    """ffmpeg's reading of a JPEG: width, height and RGB bytes."""
    path = os.path.join(work, "snapshot.jpg")
    with open(path, "wb") as f:
        f.write(jpeg)
    probe = json.loads(subprocess.run(["ffprobe", "-v", "error", "-show_streams", "-of", "json", path],
                                      capture_output=True, text=True).stdout)["streams"][0]
    rgb = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                         capture_output=True).stdout
    return probe["width"], probe["height"], rgb


def news_of(events):
    return {e["after"]["id"]: e for e in events if e["type"] == "new"}


def face_device(configs):
    return next(c["device"] for t, c in configs.items() if t.startswith("homeassistant/binary_sensor/"))


def check_snapshot(work, jpeg, updates):
    """ffmpeg decodes the JPEG; the face green (#00e050) outlines the box of one of the snapshot
    updates (the newest face's best), to within 3 pixels."""
    width, height, rgb = decoded(work, jpeg)
    def green(x, y):
        r, g, b = rgb[3 * (y * width + x):3 * (y * width + x) + 3]
        return r < 90 and g > 160 and b < 150
    def outlined(box):
        x0, y0, x1, y1 = (round(v * s) for v, s in zip(box, (width, height, width, height)))
        xs = range(max(0, x0 + 3), min(width, x1 - 3))
        edges = [(x, y0 + 1) for x in xs] + [(x, y1 - 2) for x in xs]
        return edges and sum(green(x, y) for x, y in edges if 0 <= y < height) > 0.8 * len(edges)
    check("the snapshot is the frame (640x480) with a face's box drawn where its update says",
          (width, height) == (640, 480) and any(outlined(e["after"]["box"]) for e in updates),
          [(e["after"]["box"]) for e in updates[-3:]])


def own_bus():
    """A bus endpoint of its own for each run, so that runs never meet on the default one."""
    return ["--publish", f"tcp://127.0.0.1:{free_port()}"]


def health_of(port):
    """What /health says; {} while the server does not answer yet."""
    try:
        return json.loads(http(f"http://127.0.0.1:{port}/health")[2])
    except OSError:
        return {}


def metric(port, name):
    status, _, body = http(f"http://127.0.0.1:{port}/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return 0


def tls_checks(binary, work):
    """A broker with a certificate from an authority made here, and a password file."""
    tls = os.path.join(work, "tls")
    os.makedirs(tls)
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=tls)
    for name in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN=Sightline test {name}",
                "-keyout", f"{name}.key", "-out", f"{name}.crt")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "server.key", "-out",
            "server.csr")
    with open(os.path.join(tls, "san.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
            "-extfile", "san.ext", "-out", "server.crt")
    passwords = os.path.join(tls, "passwords")
    subprocess.run(["mosquitto_passwd", "-b", "-c", passwords, "camera", "s3cret"], check=True, capture_output=True)
    with open(os.path.join(tls, "password"), "w") as f:
        f.write("s3cret\n")
    with open(os.path.join(tls, "wrong"), "w") as f:
        f.write("guess\n")
    broker = Broker(work, [f"cafile {tls}/ca.crt", f"certfile {tls}/server.crt", f"keyfile {tls}/server.key",
                           f"password_file {passwords}", "allow_anonymous false"])
    client = ["--cafile", f"{tls}/ca.crt", "-u", "camera", "-P", "s3cret"]
    url = f"mqtts://localhost:{broker.port}"
    metrics = free_port()

    def run_with(ca, password):
        return subprocess.Popen([binary, "run", *own_bus(), "--realtime", "--loop", "--mqtt", url, "--mqtt-ca-file", f"{tls}/{ca}",
                                 "--mqtt-username", "camera", "--mqtt-password-file", f"{tls}/{password}",
                                 "--metrics", f"127.0.0.1:{metrics}", "--log-level", "error"])

    def health():
        return health_of(metrics)

    source = run_with("ca.crt", "password")
    try:
        wait_for(lambda: health().get("mqtt") == "connected", what="connected over TLS")
        retained = retained_now(broker.port, extra=client)
        check("over TLS with a password: online and the status are on the broker",
              retained.get("sightline/available") == "online" and "sightline/cam1/status" in retained, retained)
    finally:
        source.send_signal(signal.SIGINT)
        source.wait(timeout=60)
    def refused(report, words):
        """/health says the broker refused us for `words`, with the source running all the same."""
        return (report.get("mqtt") == "unreachable" and words.lower() in (report.get("mqttReason") or "").lower()
                and (report.get("sources") or [{}])[0].get("state") == "running")

    for ca, password, words in [("ca.crt", "wrong", "not authori"), ("other-ca.crt", "password", "certificate verify failed")]:
        source = run_with(ca, password)
        try:
            try:
                # The refusal can come before the source's first frame: wait for both.
                report = wait_for(lambda: (lambda h: h if refused(h, words) else None)(health()), timeout=60,
                                  what="the refusal, with the source running")
            except TimeoutError:
                report = health()
            check(f"{ca}, {password}: refused, and /health says why", refused(report, words), report)
        finally:
            source.send_signal(signal.SIGINT)
            source.wait(timeout=60)
    broker.stop()


if __name__ == "__main__":
    sys.exit(main())
