#!/usr/bin/env bash
# Where a face scan's instructions go, counted by valgrind's callgrind (repeatable on a busy
# machine, unlike times): the shim compiled with the package's flags drives dlib's scan over
# the first FRAMES frames of a clip, scanned whole or tracked (tools/callgrind-face-scan.cpp),
# and callgrind_annotate prints each function's share, its callees included.
#
#   tools/callgrind-face-scan.sh [CLIP] [UPSAMPLE] [full|track] [FRAMES]
#   (defaults: the bundled 1280x720 clip, upsample 1, track, 10 frames)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
clip="${1:-$here/Sources/SightlineSamples/Media/faces_1280x720.mp4}"
upsample="${2:-1}"
mode="${3:-track}"
frames="${4:-10}"
case "$mode" in full | track) ;; *) echo "mode must be full or track, not $mode" >&2; exit 2 ;; esac
[[ "$upsample" =~ ^[0-3]$ ]] || { echo "upsample must be 0 to 3, not $upsample" >&2; exit 2; }
[[ "$frames" =~ ^[1-9][0-9]{0,3}$ ]] || { echo "frames must be 1 to 9999, not $frames" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt install valgrind)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
size="$(ffprobe -v error -select_streams v:0 -show_entries stream=width,height -of csv=p=0:s=x "$clip")"
ffmpeg -v error -i "$clip" -frames:v "$frames" -pix_fmt gray -f rawvideo "$work/frames.gray"
simd=""
grep -q ' avx2' /proc/cpuinfo && simd="-mavx2"
g++ -std=c++17 -O3 -DNDEBUG $simd -g -gdwarf-4 -I"$here/Sources/CDlib/include" -I"$here/Sources/CDlib/Data" \
    "$here/tools/callgrind-face-scan.cpp" "$here/Sources/CDlib/FaceDetector.cpp" "$here/Sources/CDlib/FaceModels.cpp" \
    -o "$work/scan" -ldlib -llapack -lblas -lpthread
echo "$(basename "$clip") ($size), upsample $upsample, $mode, $frames frames:"
valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" --toggle-collect='sl_face_detector_detect*' \
    "$work/scan" "$work/frames.gray" "${size%x*}" "${size#*x}" "$upsample" "$mode" 2>"$work/valgrind.log" \
    || { cat "$work/valgrind.log" >&2; exit 1; }
python3 - "$work/callgrind.out" "$frames" <<'PY'
"""Whole scans against region scans, then where the instructions go: each function's own
instructions (callees apart), template and argument lists left out, largest first."""
import re, subprocess, sys
out, frames = sys.argv[1], int(sys.argv[2])
def annotate(inclusive):
    text = subprocess.run(["callgrind_annotate", f"--inclusive={inclusive}", "--threshold=100", out],
                          capture_output=True, text=True, check=True).stdout
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S+?):(.*?)( \[.*\])?$", line)
        if m:
            yield int(m.group(1).replace(",", "")), m.group(3)
def short(name):
    while re.search(r"<[^<>]*>", name):
        name = re.sub(r"<[^<>]*>", "", name)
    return re.sub(r"\(.*", "", name).split(" ")[-1]
total = next(n for n, f in annotate("yes") if f.strip() == "main")
entry = {}
for n, f in annotate("yes"):
    for api in ("sl_face_detector_detect_regions", "sl_face_detector_detect"):
        if f.strip() == api:
            entry[api] = max(entry.get(api, 0), n)
print(f"{total:,} instructions in all, {total // frames:,} a frame")
print(f"  whole scans:  {entry.get('sl_face_detector_detect', 0):>15,} ({entry.get('sl_face_detector_detect', 0) / total:6.1%})")
print(f"  region scans: {entry.get('sl_face_detector_detect_regions', 0):>15,} ({entry.get('sl_face_detector_detect_regions', 0) / total:6.1%})")
own = {}
for n, f in annotate("no"):
    own[short(f)] = own.get(short(f), 0) + n
print("own instructions by function:")
for name, n in sorted(own.items(), key=lambda kv: -kv[1])[:12]:
    print(f"  {n / total:6.1%}  {name}")
PY
