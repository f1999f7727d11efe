#!/usr/bin/env python3
"""`sightline export` on a real recording made by `sightline run --record`, checked with
independent readers: ffprobe for frames and times, exiftool for the faces, ffmpeg for
decoding every frame and for the pixels of a burned-in box.

  tools/test-export.py [PATH/TO/sightline]

Ends with "N passed, M failed"; exit status 1 when anything failed.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import import_module

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sightline_testkit import Checks  # noqa: E402

console_test = import_module("test-console")
inspect_faces, faces_at, close = console_test.inspect_faces, console_test.faces_at, console_test.close
check = Checks("export of a real recording")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build/debug/sightline")
FROM, TO = 3.2, 6.5


def frame_times(path):
    out = subprocess.check_output(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries",
                                   "frame=pts_time", "-of", "csv=p=0", path], text=True)
    return [float(line.split(",")[0]) for line in out.splitlines() if line.split(",")[0]]


def decodes(path):
    return subprocess.run(["ffmpeg", "-v", "error", "-xerror", "-i", path, "-f", "null", "-"]).returncode == 0


def exif_face_ids(path):
    """exiftool's face IDs, sample by sample (its documents), each sample's sorted."""
    out = subprocess.check_output(["exiftool", "-ee", "-n", "-G3", "-s", "-DetectedFaceID", path], text=True)
    documents = {}
    for line in out.splitlines():
        document, value = line.split("]", 1)[0].strip("["), line.split(":", 1)[1].strip()
        documents.setdefault(int(document.removeprefix("Doc")), []).append(int(value))
    return [",".join(map(str, sorted(documents[key]))) for key in sorted(documents)]


def rgb_frame(path, seconds, width, height):
    raw = subprocess.check_output(["ffmpeg", "-v", "error", "-ss", str(seconds), "-i", path, "-frames:v", "1",
                                   "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
    assert len(raw) == width * height * 3, len(raw)
    return lambda x, y: tuple(raw[(y * width + x) * 3:(y * width + x) * 3 + 3])


def green(pixel):
    return pixel[1] > 170 and pixel[0] < 90 and pixel[2] < 150


def main():
    work = tempfile.mkdtemp(prefix="sightline-export-test-")
    try:
        subprocess.check_call([BIN, "run", "--every-frame", "--record", work, "--publish", "inproc://export-test",
                               "--log-level", "warning"])
        source = next(os.path.join(work, f) for f in os.listdir(work) if f.endswith(".mov"))
        source_bytes = open(source, "rb").read()
        groups = inspect_faces(source)

        # Trim: the frames of the range from 0, the faces of those frames, timed from 0.
        clip = os.path.join(work, "clip.mov")
        summary = json.loads(subprocess.check_output(
            [BIN, "export", source, "-o", clip, "--from", str(FROM), "--to", str(TO), "--json"], text=True))
        check("trim: a JSON summary", summary["mode"] == "trim" and summary["from"] == FROM and summary["to"] == TO)
        times = frame_times(clip)
        expected_frames = round(TO * 30) - round(FROM * 30)
        check("trim: ffprobe sees the range's frames from 0",
              len(times) == expected_frames and abs(times[0]) < 1e-3 and abs(times[-1] - (expected_frames - 1) / 30) < 1e-3,
              f"{len(times)} frames, {times[:1]}…{times[-1:]}")
        check("trim: every frame decodes", decodes(clip))
        shown = subprocess.check_output(
            ["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", clip], text=True).strip()
        inspected = subprocess.check_output([BIN, "inspect", clip], text=True).splitlines()[0]
        check("trim: inspect's duration is ffprobe's (the edit list's, not the media's from the key frame)",
              f", {float(shown):.3f} s," in inspected, f"ffprobe {shown}; inspect: {inspected}")
        refused = subprocess.run([BIN, "export", source, "-o", os.path.join(work, "clip.avi")], capture_output=True,
                                 text=True)
        check("export -o clip.avi is one line, exit 1, and writes nothing",
              refused.returncode == 1 and refused.stderr.count("Error:") == 1 and ".mov" in refused.stderr
              and not os.path.exists(os.path.join(work, "clip.avi")), refused.stderr)
        clipped = inspect_faces(clip)
        mismatches = [n for n in range(expected_frames)
                      if sorted(f[0] for f in faces_at(clipped, n / 30 + 1e-3))
                      != sorted(f[0] for f in faces_at(groups, FROM + n / 30 + 1e-3))
                      or not all(close(a[1], b[1], 1e-6) for a, b in zip(
                          sorted(faces_at(clipped, n / 30 + 1e-3)), sorted(faces_at(groups, FROM + n / 30 + 1e-3))))]
        check("trim: inspect --metadata gives the source's faces over the range", not mismatches, str(mismatches[:5]))
        source_ids = [",".join(str(f[0]) for f in sorted(faces_at(groups, FROM + n / 30 + 1e-3))) for n in range(expected_frames)]
        clip_ids = exif_face_ids(clip)
        check("trim: exiftool reads the same face IDs", clip_ids == [i for i in source_ids if i], f"{clip_ids[:5]}")

        # Burn-in: every frame decodes, and a face's box edge is green where the metadata puts it.
        burned = os.path.join(work, "clip.mp4")
        subprocess.check_call([BIN, "export", source, "-o", burned, "--from", str(FROM), "--to", str(TO), "--quiet"])
        check("burn-in: every frame decodes", decodes(burned) and len(frame_times(burned)) == expected_frames)
        at = 1.0
        faces = faces_at(groups, FROM + at + 1e-3)
        pixel = rgb_frame(burned, at, 640, 480)
        ok = bool(faces)
        for _, (x, y, w, h) in faces:
            left, top, right, bottom = int(x * 640), int(y * 480), int((x + w) * 640), int((y + h) * 480)
            ok &= green(pixel((left + right) // 2, top + 1)) and green(pixel(left + 1, (top + bottom) // 2))
            ok &= not green(pixel((left + right) // 2, (top + bottom) // 2))
        check("burn-in: the boxes are drawn where the faces are", ok, str(faces))
        check("the source is untouched", open(source, "rb").read() == source_bytes)

        # Across cuts: the recording as three files of one source, 10 s apart; 5 s to 25 s
        # joined, each file's faces in its place.
        segments = os.path.join(work, "segments")
        os.makedirs(segments)
        for n in range(3):
            shutil.copy(source, os.path.join(segments, f"door-20261128T0000{n}0Z.mov"))
        duration = float(subprocess.check_output(
            ["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", source], text=True))
        joined = os.path.join(work, "joined.mov")
        summary = json.loads(subprocess.check_output(
            [BIN, "export", "--recordings", segments, "--source-id", "door", "-o", joined, "--json",
             "--from-time", "2026-11-28T00:00:05Z", "--to-time", "2026-11-28T00:00:25Z"], text=True))
        times = frame_times(joined)
        # Each file follows the one before: 00:00:25 is 5 s into the third, 2 files' length after 00:00:05.
        check("join: ffprobe sees the range's frames from 0, and every frame decodes",
              decodes(joined) and abs(len(times) / 30 - 2 * duration) < 0.05 and abs(times[0]) < 1e-3,
              f"{len(times)} frames, {summary}")
        joined_groups = inspect_faces(joined)
        wrong = [t for t in (1.0, 4.0, 6.0, 9.0, 12.0, 15.0)
                 if [f[0] for f in faces_at(joined_groups, t)] != [f[0] for f in faces_at(groups, (t + 5) % duration)]]
        check("join: each moment has its own file's faces, across both cuts", not wrong, str(wrong))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
