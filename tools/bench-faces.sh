#!/usr/bin/env bash
# Benchmarks landmarks and face descriptors: `sightline bench faces` (release build), then
# the Python dlib binding on the same frame's faces as a baseline, and the ratios.
#   tools/bench-faces.sh [--frame N] [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product sightline >/dev/null
bin=$(swift build -c release --show-bin-path)
clip="$bin/Sightline_SightlineSamples.resources/Media/faces_640x480.mp4"
frame=150
args=("$@")
while (($#)); do
  [ "$1" = "--frame" ] && frame="$2"
  shift
done
ours=$("$bin/sightline" bench faces --source "$clip" "${args[@]}")
echo "$ours"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
select=(-vf "select=eq(n\\,$frame)" -frames:v 1 -f rawvideo)
ffmpeg -v error -i "$clip" "${select[@]}" -pix_fmt yuv420p "$work/frame.yuv"
ffmpeg -v error -i "$clip" "${select[@]}" -pix_fmt rgb24 "$work/frame.rgb"
head -c $((640 * 480)) "$work/frame.yuv" >"$work/frame.y"
python3 -c "import dlib" 2>/dev/null || python3 -m pip install --quiet dlib-bin numpy
theirs=$(python3 tools/face-reference.py "$work/frame.y" "$work/frame.rgb" 640 480 --bench 20)
echo "python-dlib $theirs"
python3 - "$ours" "$theirs" <<'PY'
import json, sys
ours = {line.split()[0]: float(line.split()[1]) for line in sys.argv[1].splitlines() if line.split()[0] in ("landmarks", "descriptor")}
theirs = json.loads(sys.argv[2])
for part in ("landmarks", "descriptor"):
    print(f"{part:<11} sightline {ours[part]:8.3f} ms/face, Python binding {theirs[part + '_ms']:8.3f}: {theirs[part + '_ms'] / ours[part]:.2f}x its speed")
PY
