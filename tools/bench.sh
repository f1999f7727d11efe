#!/usr/bin/env bash
# Benchmarks on the bundled samples: `sightline bench` (release build), then the Python
# dlib binding on the same frames as a baseline, and the ratio between the two; then whole
# processes, `sightline run` against the loop a Python user writes (PyAV, dlib, pyzmq).
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product sightline >/dev/null
bin=$(swift build -c release --show-bin-path)
media="$bin/Sightline_SightlineSamples.resources/Media"
ours=$("$bin/sightline" bench "$@")
echo "$ours"
python3 -c "import dlib" 2>/dev/null || python3 -m pip install --quiet dlib-bin numpy
theirs=$(python3 tools/bench-python-dlib.py "$media/faces_640x480.mp4" "$media/faces_1280x720.mp4")
echo "$theirs"
for size in 640x480 1280x720; do
  a=$(echo "$ours" | awk -v s="$size" '$1==s && $2=="detector" {print $3}')
  b=$(echo "$theirs" | awk -v s="$size" '$1==s {print $3}')
  awk -v s="$size" -v a="$a" -v b="$b" 'BEGIN {printf "%s sightline detector is %.2fx the Python binding'"'"'s speed\n", s, b / a}'
done

# Whole processes, every frame, as a user runs them: `sightline run` against the loop a
# Python user writes (PyAV → dlib → pyzmq, tools/bench-python-loop.py), best of 3 each,
# alternated; and the faces each found, which must be the same.
python3 -c "import av" 2>/dev/null || python3 -m pip install --quiet av
python3 - "$bin/sightline" "$media/faces_640x480.mp4" "$media/faces_1280x720.mp4" <<'PY'
import json, socket, subprocess, sys, time

def port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def timed(command):
    started = time.perf_counter()
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - started, output

sightline = sys.argv[1]
for clip in sys.argv[2:]:
    ours_cmd = [sightline, "run", "--source", clip, "--every-frame", "--log-level", "error",
                "--publish", f"tcp://127.0.0.1:{port()}"]
    theirs_cmd = [sys.executable, "tools/bench-python-loop.py", clip, f"tcp://127.0.0.1:{port()}"]
    ours, theirs = [], []
    for _ in range(3):
        ours.append(timed(ours_cmd)[0])
        seconds, output = timed(theirs_cmd)
        theirs.append(seconds)
    python_faces = json.loads(output)["faces"]
    printed = subprocess.run(ours_cmd + ["--print"], check=True, capture_output=True, text=True).stdout
    our_faces = sum(len(m.get("faces") or []) for m in map(json.loads, printed.splitlines()) if m["kind"] == "faces")
    frames = 300
    size = "1280x720" if "1280" in clip else "640x480"
    print(f"{size} whole process: sightline run {frames / min(ours):6.1f} frames/s, Python loop "
          f"{frames / min(theirs):6.1f} frames/s: {min(theirs) / min(ours):.2f}x  "
          f"(faces {our_faces} and {python_faces}{'' if our_faces == python_faces else ': DIFFERENT'})")
PY
