#!/usr/bin/env python3
"""Camera controls, hot-plug and stills as a user meets them, against the kernel's vivid
camera (run inside vivid-run by tools/test.sh), with v4l2-ctl as the independent reader:

- `devices --json` lists the same controls, types, ranges, defaults, values and flags as
  `v4l2-ctl --list-ctrls`;
- `run --control` sets controls (by number, menu item, on/off) before frames flow, the
  started status reports them, and v4l2-ctl reads them back;
- `GET`/`PUT /api/sources/cam1/controls` list and change them while running; the change is
  published as a status; bad requests (unknown control, out of range, a menu item the
  device lacks, read-only, not JSON, too big) are one line each and change nothing, and
  frames go on;
- `GET /api/sources/cam1/latest.jpg` decodes at the frame's size, scaled with `?h=`;
- unbinding and binding the driver while running: `devices --watch --json` prints both
  changes, the camera reopens as soon as it appears (said in the log) and the controls are
  set again;
- `serve` with `controls:` in its configuration sets them, and opens a camera gone past
  its reconnect timeout as soon as it comes back;
- `--control` with a file: one line, exit 1.

Usage: tools/test-camera-controls.py SIGHTLINE_BINARY
"""
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from serve_support import Checks, free_port, wait_for  # noqa: E402

binary = sys.argv[1]
DEVICE = "/dev/video0"
if not pathlib.Path(DEVICE).exists():
    print("camera control tests: skipped (no /dev/video0)")
    sys.exit(0)

work = pathlib.Path(tempfile.mkdtemp(prefix="sightline-controls-"))
DRIVER = pathlib.Path("/sys/bus/platform/drivers/vivid")
check = Checks()


def sightline(*arguments):
    return subprocess.run([binary, *arguments], capture_output=True, text=True, timeout=300)


def v4l2_ctl(*arguments):
    return subprocess.run(["v4l2-ctl", "-d", DEVICE, *arguments], capture_output=True, text=True, timeout=60).stdout


def control_values(*names):
    """v4l2-ctl --get-ctrl: {name: int}."""
    values = {}
    for line in v4l2_ctl(f"--get-ctrl={','.join(names)}").splitlines():
        name, _, value = line.partition(":")
        values[name.strip()] = int(value.split()[0], 0)  # a menu adds its item: "4 (100% Color Squares)"
    return values


def listed_by_v4l2_ctl():
    """v4l2-ctl --list-ctrls, parsed: {name: {id, type, fields..., flags}} (arrays aside)."""
    controls = {}
    for line in v4l2_ctl("--list-ctrls").splitlines():
        match = re.match(r"^\s*(\S+) 0x([0-9a-f]{8}) \((\w+)\)\s*: (.*)$", line)
        if not match:
            continue
        name, ident, kind, rest = match.groups()
        rest, _, flags = rest.partition("flags=")
        fields = dict(re.findall(r"(\w+)=(\S+)", rest))
        controls[name] = {"id": int(ident, 16), "type": kind, "fields": fields,
                          "flags": {f.strip() for f in flags.split(",") if f.strip()}}
    return controls


def one_line_error(result, expected):
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    return result.returncode != 0 and len(lines) == 1 and expected in lines[0]


def http(port, path, method="GET", body=None):
    """(status, body bytes, content type)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                                     headers={"Content-Type": "application/json"} if body is not None else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read(), answer.headers.get("Content-Type")
    except urllib.error.HTTPError as error:
        return error.code, error.read(), error.headers.get("Content-Type")


def put(port, controls):
    status, body, _ = http(port, "/api/sources/cam1/controls", "PUT", json.dumps(controls).encode())
    return status, json.loads(body)


# 1. The listing against v4l2-ctl's.
ours = {c["name"]: c for c in json.loads(sightline("devices", "--json").stdout)["cameras"][0]["controls"]}
theirs = listed_by_v4l2_ctl()
plain = {name: c for name, c in theirs.items() if "has-payload" not in c["flags"]}
check("devices lists every control v4l2-ctl lists (arrays and strings aside)", set(plain) <= set(ours),
      set(plain) - set(ours))
mismatches = []
for name, expected in plain.items():
    control = ours.get(name, {})
    fields = expected["fields"]
    seen = {"id": control.get("id"), "type": control.get("type"), "flags": set(control.get("flags", [])) - {"disabled"}}
    wanted = {"id": expected["id"], "type": expected["type"], "flags": expected["flags"]}
    for key, ours_key in [("min", "minimum"), ("max", "maximum"), ("step", "step"), ("default", "defaultValue")]:
        if key in fields:
            seen[key] = control.get(ours_key)
            wanted[key] = int(fields[key], 0)
    if "value" in fields and "volatile" not in expected["flags"] and expected["type"] != "button":
        seen["value"] = control.get("value")
        value = int(fields["value"], 0)
        wanted["value"] = value & 0xFFFFFFFF if expected["type"] == "bitmask" else value
    if seen != wanted:
        mismatches.append((name, seen, wanted))
check("each control's type, range, default, value and flags equal v4l2-ctl's", not mismatches, mismatches[:3])
menu = ours.get("test_pattern", {}).get("menu", [])
check("menus list their items", {"index": 4, "name": "100% Color Squares"} in menu, menu[:6])
text = sightline("devices").stdout
check("devices prints the controls", "    brightness (int) 0-255 default 128 = " in text, text[-800:])

# 2. Bad requests at the command line.
sample = str(pathlib.Path(binary).parent / "Sightline_SightlineSamples.resources" / "Media" / "faces_640x480.mp4")
result = sightline("run", "--source", sample, "--control", "brightness=1")
check("--control with a file is one line", one_line_error(result, "--control goes with a camera"), result.stderr)
result = sightline("run", "--source", DEVICE, "--control", "brightness")
check("--control without a value is one line", one_line_error(result, "is not NAME=VALUE"), result.stderr)

# 3. run --control, then the HTTP endpoint while it runs.
port = free_port()
statuses = work / "statuses.jsonl"
log = work / "run.log"
watch_log = work / "watch.jsonl"
watch = subprocess.Popen([binary, "devices", "--watch", "--json"], stdout=open(watch_log, "w"),
                         stderr=subprocess.STDOUT)
run = subprocess.Popen(
    [binary, "run", "--source", DEVICE, "--size", "640x360", "--fps", "30", "--detect", "barcodes",
     "--control", "brightness=200", "--control", "test_pattern=100% Color Squares", "--control", "mute=on",
     "--print", "--status-interval", "1", "--publish", f"tcp://127.0.0.1:{free_port()}",
     "--metrics", f"127.0.0.1:{port}"], stdout=open(statuses, "w"), stderr=open(log, "w"))


def messages():
    result = []
    for line in statuses.read_text().splitlines():
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line being written
        if message.get("kind") == "status":
            result.append(message["status"])
    return result


def frames_in():
    return max([s.get("counters", {}).get("framesIn", 0) for s in messages()] + [0])


wait_for(lambda: any(s["state"] == "started" for s in messages()), 180, "the started status")
started = [s for s in messages() if s["state"] == "started"][0]
check("the started status reports the controls set",
      started.get("controls") == {"brightness": 200, "test_pattern": 4, "mute": 1}, started.get("controls"))
check("v4l2-ctl reads back what --control set",
      control_values("brightness", "test_pattern", "mute") == {"brightness": 200, "test_pattern": 4, "mute": 1},
      control_values("brightness", "test_pattern", "mute"))
wait_for(lambda: http(port, "/api/sources/cam1/controls")[0] == 200, 60, "the controls endpoint")
status, body, kind = http(port, "/api/sources/cam1/controls")
listing = json.loads(body)
check("GET controls lists the device's controls with their values", status == 200 and kind == "application/json"
      and listing.get("device") == DEVICE
      and {"name": "brightness", "value": 200} in [{"name": c["name"], "value": c.get("value")}
                                                     for c in listing.get("controls", [])], listing)

status, answer = put(port, {"contrast": 50, "hue": -20, "horizontal_flip": True})
check("PUT controls is 200 with the new values", status == 200 and
      {c["name"]: c.get("value") for c in answer.get("controls", [])}.get("contrast") == 50, (status, answer))
check("v4l2-ctl reads back the PUT", control_values("contrast", "hue", "horizontal_flip")
      == {"contrast": 50, "hue": -20, "horizontal_flip": 1}, control_values("contrast", "hue", "horizontal_flip"))
wait_for(lambda: any("controls set by PUT" in (s.get("reason") or "") for s in messages()), 60,
         "the status of the change")
change = [s for s in messages() if "controls set by PUT" in (s.get("reason") or "")][0]
check("the change is published as a status with every control set", change["state"] == "running"
      and change.get("controls", {}).get("contrast") == 50 and change["controls"].get("brightness") == 200, change)

refusals = [
    ({"shutter": 1}, 400, "has no control 'shutter'; it has brightness, contrast"),
    ({"brightness": 300}, 400, "brightness=300 is out of range on /dev/video0: 0 to 255"),
    ({"menu": 2}, 400, "menu=2: /dev/video0 has no such item; items 1 (Menu Item 1), 3 (Menu Item 3)"),
    ({"read_only_integer_32_bits": 1}, 400, "read_only_integer_32_bits is read-only on /dev/video0"),
    ({"brightness": 1.5}, 400, "the body must be a JSON object"),
    ({"string": "abc"}, 400, "string is a text control"),
    # vivid grabs its crop controls while streaming: the driver answers EBUSY, and the
    # brightness asked for with it is not set either.
    ({"brightness": 10, "enable_capture_cropping": False}, 400,
     "/dev/video0 refused enable_capture_cropping=0 when it was set: the device is busy (EBUSY); nothing was changed"),
]
for body, expected_status, expected in refusals:
    status, answer = put(port, body)
    check(f"PUT {body} is {expected_status}: {expected}",
          status == expected_status and expected in answer.get("error", ""), (status, answer))
status, body, _ = http(port, "/api/sources/cam1/controls", "PUT", b"not json")
check("a body that is not JSON is 400", status == 400 and b"JSON object" in body, (status, body[:200]))
status, body, _ = http(port, "/api/sources/cam1/controls", "PUT", b"{" + b" " * 20000 + b"}")
check("a body over 16 KiB is 413", status == 413, status)
status, body, _ = http(port, "/api/sources/cam9/controls")
check("an unknown source is 404", status == 404 and b"no source 'cam9'" in body, (status, body))
check("a refused PUT changes nothing", control_values("brightness", "contrast") == {"brightness": 200, "contrast": 50},
      control_values("brightness", "contrast"))
before = frames_in()
wait_for(lambda: frames_in() > before + 5, 60, "frames after the refusals")
check("frames go on after refused changes", frames_in() > before + 5)

# Stills.
probe = ["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "json", "-"]
for query, size in [("", (640, 360)), ("?h=180", (320, 180)), ("?boxes=1", (640, 360))]:
    status, jpeg, kind = http(port, f"/api/sources/cam1/latest.jpg{query}")
    stream = json.loads(subprocess.run(probe, input=jpeg, capture_output=True).stdout or b"{}").get("streams", [{}])[0]
    check(f"latest.jpg{query} decodes at {size[0]}x{size[1]}", status == 200 and kind == "image/jpeg"
          and stream.get("codec_name") == "mjpeg" and (stream.get("width"), stream.get("height")) == size,
          (status, kind, stream))
status, body, _ = http(port, "/api/sources/cam1/latest.jpg?h=abc")
check("latest.jpg?h=abc is 400", status == 400 and b"h must be a height" in body, (status, body))

# 4. Unplug and plug in again: the watch sees both, the camera opens at once, the controls come back.
# Under load the emulated camera may have paused and resumed before: only what follows the
# unbind counts.
def states(state):
    return [s for s in messages() if s["state"] == state]


interrupted_before, resumed_before = len(states("interrupted")), len(states("resumed"))
(DRIVER / "unbind").write_text("vivid.0")
wait_for(lambda: len(states("interrupted")) > interrupted_before, 60, "the interrupted status")
# Bound once the retries are seconds apart, so that the camera's arrival, not a retry that
# happens to come first, opens it.
wait_for(lambda: "still waiting for the camera to come back" in log.read_text(), 60, "the waiting notice")
(DRIVER / "bind").write_text("vivid.0")
wait_for(lambda: len(states("resumed")) > resumed_before, 60, "the resumed status")
check("the camera reopened as soon as it appeared", "the camera appeared; opened at once" in log.read_text(),
      log.read_text()[-1500:])
wait_for(lambda: control_values("brightness").get("brightness") == 200, 30, "the controls set again")
check("the controls are set again after the reconnect, the PUT's too",
      control_values("brightness", "contrast", "test_pattern") == {"brightness": 200, "contrast": 50, "test_pattern": 4},
      control_values("brightness", "contrast", "test_pattern"))
resumed = states("resumed")[resumed_before]
check("the resumed status reports the controls", resumed.get("controls", {}).get("contrast") == 50, resumed)
changes = [json.loads(line) for line in watch_log.read_text().splitlines() if line.startswith("{")]
check("devices --watch prints the camera removed and added",
      {"change": "removed", "kind": "camera", "device": DEVICE} in changes
      and {"change": "added", "kind": "camera", "device": DEVICE} in changes, changes)
watch.terminate()
run.send_signal(signal.SIGINT)
run.wait(timeout=120)
check("run exits cleanly", run.returncode == 0, log.read_text()[-1500:])

# 5. serve: controls from the configuration, and a camera back after its reconnect timeout.
port, console_port = free_port(), free_port()
config = work / "sightline.yml"
config.write_text(f"""
metrics: 127.0.0.1:{port}
console:
  listen: 127.0.0.1:{console_port}
publish: tcp://127.0.0.1:{free_port()}
sources:
  - source: {DEVICE}
    source-id: cam1
    size: 640x360
    detect: barcodes
    reconnect-timeout: 1
    controls:
      brightness: 90
      saturation: 10
""")
checked = sightline("serve", "--check", "--config", str(config))
check("the configuration with controls: checks", checked.returncode == 0, checked.stderr)
serve_log = work / "serve.log"
serve = subprocess.Popen([binary, "serve", "--config", str(config)], stdout=open(serve_log, "w"),
                         stderr=subprocess.STDOUT)


def health():
    status, body, _ = http(port, "/health")
    return status, json.loads(body or b"{}")


try:
    wait_for(lambda: health()[1].get("sources", [{}])[0].get("state") == "running", 180, "serve running")
except AssertionError:
    print(serve_log.read_text()[-3000:])
    raise
check("serve sets controls: from its configuration", control_values("brightness", "saturation")
      == {"brightness": 90, "saturation": 10}, control_values("brightness", "saturation"))

# The console's control panel, in Chromium, changing the camera through serve.
status, body, _ = http(console_port, "/api/sources/cam1/controls")
check("the console lists the camera's controls", status == 200 and
      {c["name"]: c.get("value") for c in json.loads(body).get("controls", [])}.get("brightness") == 90, (status, body[:300]))
from sightline_testkit import browser  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

driver = browser()
try:
    driver.get(f"http://127.0.0.1:{console_port}/live/cam1")

    def field(name):
        return driver.find_element(By.CSS_SELECTOR, f"#camera-controls [name='{name}']")

    wait_for(lambda: driver.find_element(By.ID, "camera").is_displayed() and field("brightness").get_attribute("value")
             == "90", 120, "the control panel")
    check("the panel dims inactive controls", "inactive" in driver.find_element(
        By.CSS_SELECTOR, "#camera-controls [data-name='gain']").get_attribute("class"))
    field("brightness").send_keys(Keys.CONTROL, "a", Keys.NULL, "120", Keys.TAB)  # typed over, as a person does
    wait_for(lambda: control_values("brightness")["brightness"] == 120, 60, "brightness from the panel")
    check("the panel sets a number", control_values("brightness") == {"brightness": 120})
    flipped = 1 - control_values("horizontal_flip")["horizontal_flip"]  # run's PUT left it set
    field("horizontal_flip").click()
    wait_for(lambda: control_values("horizontal_flip")["horizontal_flip"] == flipped, 60, "the flip from the panel")
    Select(field("test_pattern")).select_by_visible_text("100% Red")
    wait_for(lambda: control_values("test_pattern")["test_pattern"] == 7, 60, "the pattern from the panel")
    check("the panel sets a switch and a menu", control_values("horizontal_flip", "test_pattern")
          == {"horizontal_flip": flipped, "test_pattern": 7})
    field("brightness").send_keys(Keys.CONTROL, "a", Keys.NULL, "300", Keys.TAB)
    wait_for(lambda: "out of range" in driver.find_element(By.ID, "camera-error").text, 60, "the panel's error")
    check("the panel shows a refusal in one line, and the value kept",
          driver.find_element(By.ID, "camera-error").text.startswith("brightness=300 is out of range on /dev/video0")
          and control_values("brightness") == {"brightness": 120}, driver.find_element(By.ID, "camera-error").text)
    wait_for(lambda: field("brightness").get_attribute("value") == "120", 60, "the panel to show the value kept")
finally:
    driver.quit()

(DRIVER / "unbind").write_text("vivid.0")
wait_for(lambda: "source failed; trying again" in serve_log.read_text(), 60, "the source to give up the camera")
(DRIVER / "bind").write_text("vivid.0")
wait_for(lambda: "a camera appeared; opening it now" in serve_log.read_text(), 60, "serve to see the camera")
wait_for(lambda: health()[1].get("sources", [{}])[0].get("state") == "running", 120, "serve running again")
check("serve opens the camera again with its controls, the panel's too", control_values("brightness", "saturation")
      == {"brightness": 120, "saturation": 10}, control_values("brightness", "saturation"))
serve.send_signal(signal.SIGTERM)
serve.wait(timeout=120)
check("serve exits cleanly", serve.returncode == 0, serve_log.read_text()[-1500:])

check.finish("camera controls")
