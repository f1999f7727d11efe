#!/usr/bin/env bash
# Benchmarks on the bundled samples: `sightline bench` (release build), then the Python
# dlib binding on the same frames as a baseline, and the ratio between the two; then whole
# processes, `sightline run` against the loop a Python user writes (PyAV, dlib, pyzmq); then
# what audio adds to `run --record`.
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

# Region tracking and the motion gate on clips made for them: faces entering, crossing and
# leaving; a still scene with long quiet stretches.
tracking=$(mktemp -d)
trap 'rm -rf "$tracking"' EXIT
tools/make-tracking-media.sh "$tracking" >/dev/null
for clip in crossing_1280x720 still_640x480; do
  echo "(${clip%_*} clip)"
  "$bin/sightline" bench --source "$tracking/$clip.mp4" --full-scan-interval 5 --motion-gate --latency-rounds 0 |
    grep -E "^[0-9]+x[0-9]+ +tracking"
done
# Hard footage for tracking, from stills Debian ships with dlib (faces entering fast at each
# edge, a collage zoomed in and out, two portraits crossing as they grow and shrink): recall
# and speed at full-scan intervals 2, 5 and 10.
for size in 640x480 1280x720; do
  tools/make-hard-tracking-media.sh "$tracking" "$size" >/dev/null
  for clip in edges zoom crossing; do
    echo "($clip clip)"
    "$bin/sightline" bench --source "$tracking/${clip}_$size.mp4" --full-scan-interval 2 --full-scan-interval 5 \
      --full-scan-interval 10 --latency-rounds 0 | grep -E "^[0-9]+x[0-9]+ +tracking"
  done
done

# Whole processes, every frame, as a user runs them: `sightline run` (scanning every frame
# whole, then with --full-scan-interval 5) against the loop a Python user writes (PyAV →
# dlib → pyzmq, tools/bench-python-loop.py), best of 3 each, alternated; the CPU each
# spent per frame (user + system, best run); and the faces each found, which must be the
# same for whole scans.
python3 -c "import av" 2>/dev/null || python3 -m pip install --quiet av
python3 - "$bin/sightline" "$media/faces_640x480.mp4" "$media/faces_1280x720.mp4" <<'PY'
import json, resource, socket, subprocess, sys, time

def port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def timed(command):
    """Wall seconds, CPU seconds (user + system) and standard output of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, output

def faces(command):
    printed = subprocess.run(command + ["--print"], check=True, capture_output=True, text=True).stdout
    return sum(len(m.get("faces") or []) for m in map(json.loads, printed.splitlines()) if m["kind"] == "faces")

sightline = sys.argv[1]
for clip in sys.argv[2:]:
    run = [sightline, "run", "--source", clip, "--log-level", "error"]
    commands = {
        "whole": run + ["--publish", f"tcp://127.0.0.1:{port()}"],
        "every 5": run + ["--full-scan-interval", "5", "--publish", f"tcp://127.0.0.1:{port()}"],
        "python": [sys.executable, "tools/bench-python-loop.py", clip, f"tcp://127.0.0.1:{port()}"],
    }
    results = {name: [] for name in commands}
    for _ in range(3):
        for name, command in commands.items():
            results[name].append(timed(command))
    python_faces = json.loads(results["python"][-1][2])["faces"]
    frames = 300
    size = "1280x720" if "1280" in clip else "640x480"
    python_wall = min(r[0] for r in results["python"])
    python_cpu = min(r[1] for r in results["python"])
    print(f"{size} whole process: Python loop {frames / python_wall:6.1f} frames/s, "
          f"{1000 * python_cpu / frames:5.1f} ms CPU/frame  (faces {python_faces})")
    for name in ("whole", "every 5"):
        wall = min(r[0] for r in results[name])
        cpu = min(r[1] for r in results[name])
        ours = faces(commands[name])
        same = "" if name != "whole" or ours == python_faces else ": DIFFERENT"
        label = "sightline run" if name == "whole" else "sightline run --full-scan-interval 5"
        print(f"{size} whole process: {label} {frames / wall:6.1f} frames/s = {python_wall / wall:.2f}x the Python loop, "
              f"{1000 * cpu / frames:5.1f} ms CPU/frame  (faces {ours}{same})")
PY

# What audio adds to a recording, and the AAC encoder's cost per second of audio.
python3 tools/bench-audio.py "$bin/sightline"
