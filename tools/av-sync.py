#!/usr/bin/env python3
"""Measures audio/video sync in a movie made by tools/make-audio-media.sh (or any movie
with white flashes on black and tone bursts on silence at the same instants), with FFmpeg
as the independent reader: ffprobe's signalstats finds the flash frames, ffmpeg decodes
the audio (edit lists applied, gaps filled with silence) and the tone onsets are found
sample by sample.

Prints one JSON object: flash times, onset times, and each onset minus its flash (seconds).
Usage: tools/av-sync.py MOVIE
"""
import array
import json
import subprocess
import sys

RATE = 48000


def flashes(path):
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-f", "lavfi", f"movie={path},signalstats",
         "-show_entries", "frame=pts_time:frame_tags=lavfi.signalstats.YAVG", "-of", "csv=p=0"],
        check=True, capture_output=True, text=True).stdout
    times, bright = [], False
    for line in out.splitlines():
        fields = line.split(",")
        if len(fields) < 2 or fields[0] in ("", "N/A"):
            continue
        time, luma = float(fields[0]), float(fields[1])
        if luma > 128 and not bright:
            times.append(round(time, 4))
        bright = luma > 128
    return times


def onsets(path):
    pcm = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", path, "-map", "0:a:0", "-af",
         f"aresample={RATE}:async=1:first_pts=0", "-ac", "1", "-f", "s16le", "-"],
        check=True, capture_output=True).stdout
    samples = array.array("h")
    samples.frombytes(pcm[: len(pcm) // 2 * 2])
    times, quiet = [], RATE  # an onset follows at least 50 ms of silence
    for index, value in enumerate(samples):
        if abs(value) > 3000:
            if quiet >= RATE // 20:
                times.append(round(index / RATE, 4))
            quiet = 0
        else:
            quiet += 1
    return times


def main():
    path = sys.argv[1]
    video, audio = flashes(path), onsets(path)
    offsets = [round(a - v, 4) for v, a in zip(video, audio)]
    print(json.dumps({"flashes": video, "onsets": audio, "offsets": offsets}))


if __name__ == "__main__":
    main()
