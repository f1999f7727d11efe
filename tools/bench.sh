#!/usr/bin/env bash
# Benchmarks on the bundled samples: `sightline bench` (release build), then the Python
# dlib binding on the same frames as a baseline, and the ratio between the two.
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
