#!/usr/bin/env python3
"""A camera with a microphone, as a user runs it: `sightline run --source /dev/video0
--audio-device …` against the kernel's vivid camera and snd-aloop loopback sound card (run
inside vivid-run with VIVID_EXTRA_MODULES=snd-aloop by tools/test.sh). A 1 kHz tone is
played into one side of the loopback and recorded from the other. Checks: `devices` lists
the capture PCMs; a missing and a busy device each give one line naming what exists (a
missing one even when the bus's port is taken); the
recording holds AAC at 48 kHz stereo with the tone, as long as the video; unbinding the
sound card is published as `interrupted` naming the device, the video goes on, binding it
again (after over ten seconds away) is `resumed` and the sound comes back, still in step
with the video; meanwhile `/health` is 503 naming the microphone while the camera's own
state stays `running`. Elsewhere it reports itself skipped.

Usage: tools/test-microphone.py SIGHTLINE_BINARY
"""
import array
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from serve_support import Checks, free_port, wait_for  # noqa: E402

binary = sys.argv[1]
if not pathlib.Path("/proc/asound/Loopback").exists() or not pathlib.Path("/dev/video0").exists():
    print("microphone tests: skipped (no /dev/video0 and snd-aloop Loopback card here)")
    sys.exit(0)

# /tmp in the VM is a small tmpfs: hence --min-free 1M below.
work = pathlib.Path(tempfile.mkdtemp(prefix="sightline-microphone-"))
CARD_DRIVER = pathlib.Path("/sys/bus/platform/drivers/snd_aloop")
PLAY, CAPTURE = "hw:Loopback,0,0", "hw:Loopback,1,0"

check = Checks()


def sightline(*arguments):
    return subprocess.run([binary, *arguments], capture_output=True, text=True, timeout=300)


def play_tone():
    """A 1 kHz tone, 48 kHz stereo, into the loopback's playback side, in real time."""
    return subprocess.Popen(
        ["ffmpeg", "-nostdin", "-v", "error", "-re", "-f", "lavfi", "-i",
         "sine=frequency=1000:sample_rate=48000:duration=600", "-ac", "2", "-f", "alsa", PLAY])


def one_line_error(result, expected):
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    return result.returncode != 0 and len(lines) == 1 and expected in lines[0]


# devices: the loopback's two capture PCMs, by the names --audio-device takes.
listing = json.loads(sightline("devices", "--json").stdout)
names = [(m["name"], m["card"]) for m in listing["microphones"]]
check("devices lists the loopback's capture PCMs", ("hw:0,0", "Loopback") in names and ("hw:0,1", "Loopback") in names,
      names)
check("devices prints the microphones", "hw:0,1: Loopback: Loopback PCM (microphone" in sightline("devices").stdout)
missing = sightline("run", "--source", "/dev/video0", "--audio-device", "hw:9,0")
check("a missing device is one line naming what exists", one_line_error(
    missing, "cannot open audio device hw:9,0: no such capture device; capture devices: hw:0,0 (Loopback: Loopback PCM)"),
    missing.stderr)
# The microphone opens with the camera, before the bus is bound: with the bus's port taken,
# the missing device is still what is said.
with socket.socket() as taken:
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    missing = sightline("run", "--source", "/dev/video0", "--audio-device", "hw:9,0", "--publish",
                        f"tcp://127.0.0.1:{taken.getsockname()[1]}")
check("a missing device is said before a busy port", one_line_error(
    missing, "cannot open audio device hw:9,0: no such capture device"), missing.stderr)

player = play_tone()
out = work / "recordings"
statuses = work / "statuses.jsonl"
metrics_port = free_port()
with open(statuses, "w") as status_file:
    run = subprocess.Popen(
        [binary, "run", "--source", "/dev/video0", "--size", "640x360", "--fps", "30", "--audio-device", CAPTURE,
         "--detect", "barcodes", "--record", str(out), "--min-free", "1M", "--print", "--status-interval", "1", "--publish",
         "tcp://127.0.0.1:5599", "--metrics", f"127.0.0.1:{metrics_port}"], stdout=status_file, stderr=subprocess.PIPE, text=True)


def messages():
    result = []
    for line in statuses.read_text().splitlines():
        try:
            result.append(json.loads(line))
        except json.JSONDecodeError:
            pass  # a line being written
    return [m for m in result if m["kind"] == "status"]


def audio_packets():
    counters = [m["status"].get("counters", {}) for m in messages()]
    return max([c.get("audio", {}).get("packets", 0) for c in counters] + [0])


def health():
    """/health's HTTP status and report."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/health", timeout=10) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def frames_in():
    return max([m["status"].get("counters", {}).get("framesIn", 0) for m in messages()] + [0])


wait_for(lambda: audio_packets() > 100, 120, "100 AAC frames from the microphone")
started = [m for m in messages() if m["status"]["state"] == "started"]
audio = started[0]["status"]["input"].get("audio", {}) if started else {}
check("the status describes the microphone", audio.get("codec") == "pcm_s16le" and audio.get("sampleRate") == 48000
      and audio.get("channels") == 2 and audio.get("handling") == "aac", audio)

busy = sightline("run", "--source", "/dev/video0", "--audio-device", CAPTURE)
check("a busy device is one line", one_line_error(busy, f"{CAPTURE}: busy") or one_line_error(busy, "busy"),
      busy.stderr)

# Unplug the sound card: the video goes on, the status says which device went.
(CARD_DRIVER / "unbind").write_text("snd_aloop.0")
unplugged_at = time.monotonic()
player.wait(timeout=30)  # its device went too


def interrupted():
    """The microphone's interruptions: under load the emulated camera may stall too."""
    return [m for m in messages() if m["status"]["state"] == "interrupted"
            and m["status"].get("reason", "").startswith("audio device ")]


wait_for(lambda: interrupted(), 60, "the interrupted status")
reason = interrupted()[0]["status"].get("reason", "") if interrupted() else ""
check("interrupted names the device", reason.startswith(f"audio device {CAPTURE}: "), reason)
check("interrupted says it is the microphone",
      [m["status"].get("device") for m in interrupted()][:1] == ["microphone"], interrupted()[:1])
code, report = health()
source = report["sources"][0] if report.get("sources") else {}
check("/health is 503 naming the microphone", code == 503 and report.get("problems", [""])[0].startswith(
    f"cam1: microphone interrupted: audio device {CAPTURE}: "), (code, report))
check("/health keeps the camera running", source.get("state") == "running"
      and source.get("microphone") == "interrupted", source)
frames_at_unplug = frames_in()
wait_for(lambda: frames_in() > frames_at_unplug + 10, 60, "frames while the microphone is away")
check("the video goes on without the microphone", frames_in() > frames_at_unplug + 10)

# Away for over ten seconds: the sound after it must still be timed on the video's clock.
time.sleep(max(0.0, 12 - (time.monotonic() - unplugged_at)))
(CARD_DRIVER / "bind").write_text("snd_aloop.0")
wait_for(lambda: pathlib.Path("/proc/asound/Loopback").exists(), 30, "the card back")
player = play_tone()
wait_for(lambda: any(m["status"]["state"] == "resumed" for m in messages()), 60, "the resumed status")
check("resumed after the card came back", any(m["status"]["state"] == "resumed" for m in messages()))
packets_at_resume = audio_packets()
wait_for(lambda: audio_packets() > packets_at_resume + 50, 60, "sound after the resume")
check("the sound comes back", audio_packets() > packets_at_resume + 50)
code, report = health()
check("/health is 200 again", code == 200 and report["sources"][0].get("microphone") == "running", (code, report))

run.send_signal(signal.SIGINT)
_, stderr = run.communicate(timeout=120)
player.kill()
check("run exits cleanly", run.returncode == 0, stderr[-1500:])
final = messages()[-1]["status"]
check("the final status counts the interruption", final.get("counters", {}).get("audio", {}).get("interruptions") == 1,
      final.get("counters", {}).get("audio"))

movies = sorted(out.glob("*.mov"))
check("one recording", len(movies) == 1, f"{list(out.rglob('*'))} {stderr[-1500:]}")
if movies:
    movie = str(movies[0])
    probe = json.loads(subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", "stream=codec_type,codec_name,sample_rate,channels,duration",
         "-of", "json", movie], capture_output=True, text=True).stdout)
    streams = {s["codec_type"]: s for s in probe["streams"] if s["codec_type"] in ("video", "audio")}
    sound = streams.get("audio", {})
    check("the recording has AAC 48 kHz stereo", sound.get("codec_name") == "aac"
          and sound.get("sample_rate") == "48000" and sound.get("channels") == 2, sound)
    video_seconds = float(streams.get("video", {}).get("duration", 0))
    sound_seconds = float(sound.get("duration", 0))
    summary = [line for line in stderr.splitlines() if "stopped" in line]
    check("the sound lasts as long as the video", abs(video_seconds - sound_seconds) < 1.0,
          f"video {video_seconds} s, sound {sound_seconds} s; {summary}")
    print(f"recorded: video {video_seconds:.2f} s, sound {sound_seconds:.2f} s, "
          f"audio counters {final.get('counters', {}).get('audio')}")
    decoded = subprocess.run(["ffmpeg", "-v", "error", "-xerror", "-i", movie, "-map", "0:a:0", "-ac", "1", "-f",
                              "s16le", "-"], capture_output=True)
    check("the sound decodes", decoded.returncode == 0, decoded.stderr[-500:])
    samples = array.array("h")
    samples.frombytes(decoded.stdout[: len(decoded.stdout) // 2 * 2])
    # The tone's frequency from its zero crossings over the first two seconds.
    window = samples[:96000]
    crossings = sum(1 for a, b in zip(window, window[1:]) if (a < 0) != (b < 0))
    check("the recording holds the 1 kHz tone", abs(crossings / 2 / 2 - 1000) < 30, f"{crossings / 4:.0f} Hz")

check.finish("microphone")
