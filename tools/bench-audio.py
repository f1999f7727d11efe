#!/usr/bin/env python3
"""What audio costs a recording: `sightline run --record` on the bundled 640x480 clip (every
frame analysed) with no audio, with 48 kHz stereo AAC passed through, and with 48 kHz
stereo PCM encoded to AAC; the CPU each run spent (user + system, the least of five,
alternated), the audio's share against the run without it, and the AAC encoder's cost per
second of audio from the run's own counters. The sound is pink noise, harder to encode
than speech.

Usage: tools/bench-audio.py SIGHTLINE_BINARY   (tools/bench.sh runs it on the release build)
"""
import json
import pathlib
import resource
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from serve_support import free_port  # noqa: E402

binary = sys.argv[1]
media = pathlib.Path(binary).parent / "Sightline_SightlineSamples.resources/Media/faces_640x480.mp4"
work = pathlib.Path(tempfile.mkdtemp(prefix="sightline-bench-audio-"))
noise = "anoisesrc=color=pink:sample_rate=48000:amplitude=0.3:duration=10"


def clip(name, audio):
    path = work / name
    source = ["-f", "lavfi", "-i", noise, "-ac", "2"] if audio else []
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(media), *source, "-map", "0:v",
                    *(["-map", "1:a"] if audio else []), "-c:v", "copy", *audio, "-shortest", str(path)], check=True)
    return path


clips = {
    "no audio": clip("none.mov", []),
    "AAC passed through": clip("aac.mov", ["-c:a", "aac", "-b:a", "128k"]),
    "PCM encoded to AAC": clip("pcm.mov", ["-c:a", "pcm_s16le"]),
}


def command(path, *extra):
    out = work / f"rec-{path.stem}"
    return [binary, "run", "--source", str(path), "--record", str(out), "--log-level", "error", "--publish",
            f"tcp://127.0.0.1:{free_port()}", *extra]


def cpu_seconds(path):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command(path), check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


runs = {name: [] for name in clips}
for _ in range(5):
    for name, path in clips.items():
        runs[name].append(cpu_seconds(path))
baseline = min(runs["no audio"])
print(f"run --record, 640x480 10 s every frame, no audio: {baseline:.2f} s CPU")
for name in ("AAC passed through", "PCM encoded to AAC"):
    cpu = min(runs[name])
    print(f"run --record, {name} (48 kHz stereo): {cpu:.2f} s CPU, audio adds {100 * (cpu - baseline) / baseline:+.1f}%")

printed = subprocess.run(command(clips["PCM encoded to AAC"], "--print"), check=True, capture_output=True,
                         text=True).stdout
final = [json.loads(line) for line in printed.splitlines() if '"kind":"status"' in line][-1]
audio = final["status"]["counters"]["audio"]
seconds = audio["packets"] * 1024 / 48000
timing = audio["transcoding"]
print(f"AAC encoder (libavcodec, 48 kHz stereo, 128 kbit/s, with decoding the PCM; its thread's CPU time): "
      f"{timing['totalMs'] / seconds:.1f} ms CPU per second of audio = {timing['totalMs'] / seconds / 10:.2f}% of a core, "
      f"{audio['packets']} frames, slowest {timing['maxMs']:.2f} ms")
