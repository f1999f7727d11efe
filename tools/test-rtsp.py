#!/usr/bin/env python3
"""Network cameras as they behave in the field, against a real RTSP server (Debian's
GStreamer RTSP server, tools/rtsp_server.py): one `sightline serve` over seven sources while
the test reboots, freezes and re-keys the servers behind them.

- cam1 (TCP, password from ${CAM_PASSWORD}): its server restarts after 5 s with a 320x240
  stream instead of 640x480;
- cam2 (UDP): its server is away for 60 s, longer than the reconnect grace;
- cam3 (password from `password-file`): its server refuses the password (401), then takes it;
- cam4 (`network-timeout: 2`): its server freezes without closing (SIGSTOP), then thaws;
- cam5: an H.265 camera, recorded as it comes, whose server restarts after 5 s in H.264;
- fifo: a FIFO nobody writes, whose open never returns;
- jump: a file paced in real time whose timestamps jump forward by 4,984 s.

Checked: /health at each moment (reconnecting, a problem only after the grace; failed with
the 401; stalled), the metrics counting every outage, a new file at each outage in the
stream's new size or codec, H.265 recorded without re-encoding (FFmpeg decodes the served
file's very pictures from it), every file decoding with `ffmpeg -xerror`, no refused message, SIGTERM
ending serve while an open hangs, and no password in anything the test collected: serve's
log, /health, /metrics, the console's API, every bus message and every MQTT payload.

Usage: tools/test-rtsp.py SIGHTLINE_BINARY   (run by tools/test.sh)
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import threading
import time

import zmq

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from serve_support import metric_values  # noqa: E402
from sightline_testkit import Broker, Checks, free_port, http, wait_for  # noqa: E402

tools = pathlib.Path(__file__).resolve().parent
media = tools.parent / "Sources/SightlineSamples/Media"
# The RTSP server's GObject bindings import in Debian's own Python only.
GST_PYTHON = "/usr/bin/python3"
PASSWORD, DOOR_PASSWORD, OTHER_PASSWORD = "Cam-Pw-4q7Zx", "Door-Pw-9kR2m", "Other-Pw-3vT8s"
SECRETS = (PASSWORD, DOOR_PASSWORD, OTHER_PASSWORD)

check = Checks("test-rtsp")


def ffmpeg(*arguments):
    subprocess.run(["ffmpeg", "-v", "error", "-y", *arguments], check=True)


def make_media(work):
    """A 640x480 H.264 main stream, the same in H.265 (libx265, B-frames) and a 320x240 one,
    all with AAC sound and 4-5 minutes long (a stream ends with its file, as a rebooting
    camera's does), and a 10 s file whose timestamps jump forward by 4,984 s after its 150th
    packet. Returns them and the H.265 clip the second is looped from."""
    main, hevc, small, jump = work / "main.mp4", work / "main-hevc.mp4", work / "small.mp4", work / "jump.ts"
    hevc_clip = work / "faces-hevc.mp4"
    ffmpeg("-i", str(media / "faces_640x480.mp4"), "-an", "-c:v", "libx265", "-preset", "ultrafast", "-x265-params",
           "log-level=error:keyint=30:bframes=2", "-tag:v", "hvc1", str(hevc_clip))
    for video, movie in ((media / "faces_640x480.mp4", main), (hevc_clip, hevc)):
        ffmpeg("-stream_loop", "29", "-i", str(video), "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
               "-map", "0:v", "-map", "1:a", "-c:v", "copy", "-c:a", "aac", "-b:a", "64k", "-shortest", str(movie))
    ffmpeg("-i", str(main), "-vf", "scale=320:240", "-c:v", "libx264", "-preset", "ultrafast", "-g", "30",
           "-c:a", "copy", str(small))
    # The MPEG-TS muxer's time base, 1/90000, is the filter's.
    shift = r"if(gte(N\,150)\,4984*90000\,0)"
    ffmpeg("-i", str(media / "faces_640x480.mp4"), "-an", "-c:v", "copy", "-bsf:v",
           f"setts=pts=PTS+{shift}:dts=DTS+{shift}", "-f", "mpegts", str(jump))
    return main, hevc, hevc_clip, small, jump


class RtspServer:
    """tools/rtsp_server.py on one port; stopped, frozen and started again on that port."""

    def __init__(self, work, name, mounts, user=None, password=None):
        self.port, self.work, self.name, self.mounts = free_port(), work, name, mounts
        self.process = None
        self.start(user, password)

    def start(self, user=None, password=None):
        arguments = [GST_PYTHON, str(tools / "rtsp_server.py"), "--port", str(self.port)]
        for mount in self.mounts:
            arguments += ["--mount", mount]
        if user:
            arguments += ["--user", user, "--password", password]
        with open(self.work / f"rtsp-{self.name}.log", "a") as log:
            self.process = subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=log, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("ready"):
            raise RuntimeError(f"the RTSP server {self.name} did not start: {line!r}")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            self.process.wait(timeout=30)

    def freeze(self):
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self):
        self.process.send_signal(signal.SIGCONT)


class BusListener(threading.Thread):
    """Every message on the bus, scanned for the secrets as it comes; none is kept."""

    def __init__(self, endpoint):
        super().__init__(daemon=True)
        self.socket = zmq.Context.instance().socket(zmq.SUB)
        self.socket.setsockopt(zmq.SUBSCRIBE, b"")
        self.socket.setsockopt(zmq.RCVHWM, 100000)
        self.socket.connect(endpoint)
        self.messages, self.statuses, self.leaks, self.running = 0, 0, [], True

    def run(self):
        while self.running:
            if self.socket.poll(100):
                parts = self.socket.recv_multipart()
                self.messages += 1
                self.statuses += parts[0].startswith(b"status/")
                for secret in SECRETS:
                    if any(secret.encode() in part for part in parts):
                        self.leaks.append(parts[0].decode(errors="replace"))


class Observer:
    """/health, /metrics and the console's API, fetched on demand; every body kept for the
    secrets' search."""

    def __init__(self, metrics_port, console_port):
        self.metrics, self.console = f"http://127.0.0.1:{metrics_port}", f"http://127.0.0.1:{console_port}"
        self.bodies = []

    def fetch(self, url):
        body = http(url)[2].decode()
        self.bodies.append(body)
        return body

    def health(self):
        return json.loads(self.fetch(self.metrics + "/health"))

    def source(self, source_id):
        """(state, reason, is a problem) of one source in /health."""
        report = self.health()
        entry = next(s for s in report["sources"] if s["id"] == source_id)
        is_problem = any(p.startswith(f"{source_id}: ") for p in report.get("problems", []))
        return entry["state"], entry.get("reason", ""), is_problem

    def metric(self, name, source_id):
        values = metric_values(self.fetch(self.metrics + "/metrics"), name)
        return sum(v for labels, v in values.items() if ("source", source_id) in labels)

    def console_pages(self):
        for path in ("/api/sources", "/"):
            self.fetch(self.console + path)


def waited(name, condition, timeout, detail=lambda: ""):
    """Checks that `condition` comes true within `timeout` s; the time it took, or None."""
    start = time.monotonic()
    try:
        wait_for(condition, timeout=timeout, step=0.1, what=name)
    except TimeoutError:
        check(name, False, detail())
        return None
    check(name, True)
    return time.monotonic() - start


def video_width(movie):
    probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width",
                            "-of", "csv=p=0", str(movie)], capture_output=True, text=True)
    return int(probe.stdout.strip() or 0)


def main():
    binary = sys.argv[1]
    probe = subprocess.run([GST_PYTHON, "-c", "import gi; gi.require_version('GstRtspServer', '1.0')"],
                           capture_output=True)
    if probe.returncode != 0:
        print("test-rtsp: skipped (no GStreamer RTSP server for /usr/bin/python3: tools/setup.sh installs it)")
        return 0
    work = pathlib.Path(tempfile.mkdtemp(prefix="sightline-rtsp-"))
    main_movie, hevc_movie, hevc_clip, small_movie, jump = make_media(work)
    recordings = work / "recordings"
    fifo = work / "never-written.ts"
    os.mkfifo(fifo)
    (work / "door.password").write_text(DOOR_PASSWORD + "\n")

    servers = {
        "a": RtspServer(work, "a", [f"/main=h264+aac:{main_movie}"], "admin", PASSWORD),
        "b": RtspServer(work, "b", [f"/sub=h264:{small_movie}"]),
        "c": RtspServer(work, "c", [f"/main=h264+aac:{main_movie}"], "admin", OTHER_PASSWORD),
        "d": RtspServer(work, "d", [f"/sub=h264:{small_movie}"]),
        "e": RtspServer(work, "e", [f"/main=h265+aac:{hevc_movie}"]),
    }
    broker = Broker(work)
    bus_port, metrics_port, console_port = free_port(), free_port(), free_port()
    config = work / "sightline.yml"
    config.write_text(f"""publish: tcp://127.0.0.1:{bus_port}
metrics: 127.0.0.1:{metrics_port}
console:
  listen: 127.0.0.1:{console_port}
mqtt:
  url: mqtt://127.0.0.1:{broker.port}
defaults:
  detect: barcodes
  record: {recordings}
  status-interval: 1
sources:
  - source-id: cam1
    source: rtsp://admin:${{CAM_PASSWORD}}@127.0.0.1:{servers["a"].port}/main
    rtsp-transport: tcp
  - source-id: cam2
    source: rtsp://127.0.0.1:{servers["b"].port}/sub
    rtsp-transport: udp
  - source-id: cam3
    source: rtsp://admin@127.0.0.1:{servers["c"].port}/main
    password-file: {work / "door.password"}
  - source-id: cam4
    source: rtsp://127.0.0.1:{servers["d"].port}/sub
    network-timeout: 2
  - source-id: cam5
    source: rtsp://127.0.0.1:{servers["e"].port}/main
  - source-id: fifo
    source: {fifo}
  - source-id: jump
    source: {jump}
    realtime: true
""")
    environment = dict(os.environ, CAM_PASSWORD=PASSWORD)
    mqtt_log = open(work / "mqtt.log", "wb")
    mqtt = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(broker.port), "-t", "#", "-v"],
                            stdout=mqtt_log, stderr=subprocess.STDOUT)
    bus = BusListener(f"tcp://127.0.0.1:{bus_port}")
    bus.start()
    serve_log = open(work / "serve.log", "wb")
    serve = subprocess.Popen([binary, "serve", "--config", str(config)], stdout=serve_log,
                             stderr=subprocess.STDOUT, env=environment)
    observer = Observer(metrics_port, console_port)
    try:
        scenario(serve, servers, observer, recordings, hevc_clip)
    finally:
        for server in servers.values():
            server.stop()
        if serve.poll() is None:
            serve.kill()
        serve.wait()
        broker.stop()
        mqtt.terminate()
        mqtt.wait()
        bus.running = False
        bus.join()
        serve_log.close()
        mqtt_log.close()

    log = (work / "serve.log").read_text(errors="replace")
    payloads = (work / "mqtt.log").read_text(errors="replace")
    check("serve refused none of its own messages", "was rejected" not in log,
          "\n".join(line for line in log.splitlines() if "was rejected" in line))
    check("the log shows cam1's URL with its password hidden", "rtsp://admin:***@127.0.0.1" in log)
    check("the bus carried statuses", bus.statuses > 20, str(bus.statuses))
    check("MQTT carried statuses", payloads.count("/status") > 5, payloads[:500])
    for secret in SECRETS:
        for what, text in (("serve's log", log), ("/health, /metrics or the console", "\n".join(observer.bodies)),
                           ("an MQTT payload", payloads)):
            check(f"no password in {what}", secret not in text,
                  next((line for line in text.splitlines() if secret in line), ""))
    check(f"no password in any of {bus.messages} bus messages", not bus.leaks, ", ".join(bus.leaks[:5]))
    for server in servers.values():
        server_log = (work / f"rtsp-{server.name}.log").read_text(errors="replace")
        if "Traceback" in server_log:
            print(f"RTSP server {server.name}'s log:\n{server_log[-2000:]}")
    return check.summary()


def picture_hashes(movie):
    """Each video frame's MD5 as FFmpeg decodes it."""
    out = subprocess.run(["ffmpeg", "-v", "error", "-i", str(movie), "-map", "0:v:0", "-f", "framemd5", "-"],
                         capture_output=True, text=True).stdout
    return [line.rsplit(",", 1)[1].strip() for line in out.splitlines() if line and not line.startswith("#")]


def video_codec_tag(movie):
    return subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_tag_string",
                           "-of", "csv=p=0", str(movie)], capture_output=True, text=True).stdout.strip()


def scenario(serve, servers, observer, recordings, hevc_clip):
    def state(source_id):
        if serve.poll() is not None:
            raise RuntimeError(f"serve exited with {serve.returncode}")
        try:
            return observer.source(source_id)
        except OSError:
            return ("unanswered", "", True)

    def report():
        return json.dumps(observer.health())

    # Opening: the three cameras run, the refused password is a problem with its reason,
    # the FIFO's open is a stall, and the file with the jump plays through to its end.
    for source_id in ("cam1", "cam2", "cam4", "cam5"):
        waited(f"{source_id} runs", lambda s=source_id: state(s)[0] == "running", 180, report)
    waited("cam3's refused password is a problem with its reason",
           lambda: state("cam3")[0] == "failed" and state("cam3")[2], 120, report)
    reason = state("cam3")[1]
    check("cam3's reason says the server refused the credentials",
          any(word in reason for word in ("401", "nauthorized", "authoriz")), reason)
    waited("the FIFO nobody writes is stalled, a problem",
           lambda: state("fifo")[0] == "stalled" and state("fifo")[2], 120, report)
    waited("the file whose timestamps jump 4,984 s ends", lambda: state("jump")[0] == "ended", 180, report)
    check("every frame of the file with the jump was read", observer.metric("sightline_frames_total", "jump") == 300,
          str(observer.metric("sightline_frames_total", "jump")))
    for source_id in ("cam1", "cam5"):
        waited(f"{source_id} has recorded",
               lambda s=source_id: observer.metric("sightline_recorder_frames_written_total", s) > 60, 120, report)
    observer.console_pages()

    # The outages: cam1's, cam2's and cam5's servers go, cam4's freezes, cam3's takes the
    # password.
    servers["a"].stop()
    servers["b"].stop()
    servers["e"].stop()
    servers["d"].freeze()
    gone = time.monotonic()
    servers["c"].stop()
    servers["c"].start("admin", DOOR_PASSWORD)
    waited("cam1 is reconnecting, not yet a problem", lambda: state("cam1")[:3:2] == ("reconnecting", False), 60,
           report)
    waited("cam2 is reconnecting", lambda: state("cam2")[0] == "reconnecting", 60, report)
    check("cam2 away is not a problem within its grace", not state("cam2")[2], report())
    cam2_seen = time.monotonic()
    waited("cam4 frozen is reconnecting or stalled", lambda: state("cam4")[0] in ("reconnecting", "stalled"), 60,
           report)
    observer.console_pages()

    # A camera back after 5 s with another size: frames again, and a new file in that size.
    time.sleep(max(0.0, gone + 5 - time.monotonic()))
    frames = observer.metric("sightline_frames_total", "cam1")
    servers["a"].mounts = [f"/main=h264+aac:{servers['a'].work / 'small.mp4'}"]
    servers["a"].start("admin", PASSWORD)
    # The H.265 camera comes back in H.264.
    servers["e"].mounts = [f"/main=h264+aac:{servers['e'].work / 'main.mp4'}"]
    servers["e"].start()
    back = waited("cam1's frames flow again after its server's return",
                  lambda: observer.metric("sightline_frames_total", "cam1") > frames, 120, report)
    if back is not None:
        print(f"cam1: frames again {back:.2f} s after its server's return (target 2 s)")
    waited("cam1 runs again", lambda: state("cam1")[0] == "running", 60, report)
    waited("cam5 runs again, in H.264", lambda: state("cam5")[0] == "running", 60, report)

    time.sleep(max(0.0, gone + 8 - time.monotonic()))
    servers["d"].thaw()
    waited("cam4 runs again once its server thaws", lambda: state("cam4")[0] == "running", 120, report)
    waited("cam3 runs once the server takes its password", lambda: state("cam3")[0] == "running", 150, report)

    # cam2, away beyond the 30 s grace, becomes a problem, and comes back.
    if waited("cam2 away beyond its grace is a problem",
              lambda: state("cam2")[:3:2] == ("reconnecting", True), 120, report) is not None:
        after = time.monotonic() - cam2_seen
        check("cam2 became a problem only after the grace", after > 20, f"{after:.1f} s")
    observer.console_pages()
    time.sleep(max(0.0, gone + 60 - time.monotonic()))
    servers["b"].start()
    waited("cam2 runs again after 60 s away", lambda: state("cam2")[0] == "running", 120, report)
    waited("every camera is fine again",
           lambda: not [p for p in observer.health().get("problems", []) if p.startswith("cam")], 120, report)
    for source_id in ("cam1", "cam5"):
        waited(f"{source_id} records its new stream",
               lambda s=source_id: observer.metric("sightline_recorder_frames_written_total", s) > 200, 120, report)

    # What was counted.
    counted = {s: {name: observer.metric(f"sightline_{name}", s)
                   for name in ("source_reconnects_total", "source_disconnected_seconds_total",
                                "recorder_source_outages_total")} for s in ("cam1", "cam2", "cam4", "cam5")}
    print(f"counted: {counted}")
    for source_id in ("cam1", "cam2", "cam4", "cam5"):
        check(f"{source_id}'s reconnect is counted", counted[source_id]["source_reconnects_total"] >= 1,
              str(counted[source_id]))
        check(f"{source_id}'s outage is counted by its recorder",
              counted[source_id]["recorder_source_outages_total"] >= 1, str(counted[source_id]))
    check("cam2's 60 s away are counted", counted["cam2"]["source_disconnected_seconds_total"] > 50,
          str(counted["cam2"]))
    check("cam1's 5 s away are counted", 4 < counted["cam1"]["source_disconnected_seconds_total"] < 60,
          str(counted["cam1"]))
    observer.console_pages()

    # SIGTERM while the FIFO's open still hangs.
    stopping = time.monotonic()
    serve.send_signal(signal.SIGTERM)
    try:
        status = serve.wait(timeout=30)
    except subprocess.TimeoutExpired:
        status = None
    took = time.monotonic() - stopping
    print(f"serve ended {took:.2f} s after SIGTERM (target 2 s)")
    check("SIGTERM ends serve while an open hangs", status == 0, f"status {status} after {took:.1f} s")

    # The files: one more than the outages, each decoding whole, cam1's in each size.
    for source_id in ("cam1", "cam2", "cam4", "cam5"):
        files = sorted(recordings.glob(f"{source_id}-*.mov"))
        outages = counted[source_id]["recorder_source_outages_total"]
        check(f"{source_id}: a new file after each outage", len(files) == outages + 1,
              f"{len(files)} files, {outages} outages")
    widths = [video_width(f) for f in sorted(recordings.glob("cam1-*.mov"))]
    check("cam1's files: first 640 wide, the last 320", widths[:1] == [640] and widths[-1:] == [320], str(widths))
    # H.265 recorded as it came: hvc1, and FFmpeg decodes the served clip's own pictures from
    # it (a re-encoding would change every one); after the restart, H.264.
    cam5 = sorted(recordings.glob("cam5-*.mov"))
    tags = [video_codec_tag(f) for f in cam5]
    check("cam5's files: first H.265 (hvc1), the last H.264 (avc1)", tags[:1] == ["hvc1"] and tags[-1:] == ["avc1"],
          str(tags))
    served, recorded = set(picture_hashes(hevc_clip)), picture_hashes(cam5[0]) if cam5 else []
    check("cam5's H.265 file holds the camera's own pictures, not re-encoded ones",
          len(recorded) > 60 and all(h in served for h in recorded),
          f"{sum(h in served for h in recorded)} of {len(recorded)} pictures are the served ones")
    # The jump taken out of the timeline: ten seconds recorded, not an hour and a half.
    jumped = sorted(recordings.glob("jump-*.mov"))
    lasted = [float(subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0",
                                    str(f)], capture_output=True, text=True).stdout or 0) for f in jumped]
    check("the file with the jump is recorded as the 10 s it lasted", len(lasted) == 1 and 9 < lasted[0] < 11,
          str(lasted))
    for movie in sorted(recordings.glob("*.mov")):
        decoded = subprocess.run(["ffmpeg", "-v", "error", "-xerror", "-i", str(movie), "-f", "null", "-"],
                                 capture_output=True, text=True)
        check(f"{movie.name} decodes without an error", decoded.returncode == 0 and not decoded.stderr.strip(),
              decoded.stderr[-500:])


if __name__ == "__main__":
    sys.exit(main())
