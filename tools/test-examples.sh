#!/usr/bin/env bash
# The two example clients under tools/ against a real `sightline run`: the GPS feeder
# publishes positions and the Haar detector subscribes to frames and publishes its faces,
# both into --metadata-in. The recording must hold both as timed metadata tracks:
# `sightline inspect` lists them and exiftool -ee shows the GPS coordinates.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-$(swift build --show-bin-path)/sightline}
publish=$((20000 + RANDOM % 20000))
input=$((publish + 1))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 tools/haar_detector.py --frames "tcp://127.0.0.1:$publish" --metadata "tcp://127.0.0.1:$input" \
  --timeout 60 >"$work/haar.out" &
detector=$!
python3 tools/gps_feeder.py --connect "tcp://127.0.0.1:$input" --rate 4 --duration 7 >"$work/gps.out" &
feeder=$!
# The tracks are declared, so that one file holds both even when a loaded machine delays
# the clients' first values past the start of the file.
"$bin" run --realtime --publish "tcp://127.0.0.1:$publish" --metadata-in "tcp://127.0.0.1:$input" \
  --frames gray8 --frames-rate 5 --record "$work/rec" --log-level warning \
  --metadata-track mdta/com.example.haar-faces=utf8 \
  --metadata-track mdta/com.apple.quicktime.location.ISO6709=com.apple.quicktime.location.ISO6709
wait "$detector" "$feeder"

passed=0 failed=0
check() { # name, then a command that must succeed
  local name=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
  else
    echo "examples: FAILED: $name" >&2
    failed=$((failed + 1))
  fi
}
file=$(ls "$work"/rec/*.mov)
inspect=$("$bin" inspect "$file")
exif=$(exiftool -ee -a -s -GPSCoordinates "$file")
echo "$inspect"
echo "haar_detector: $(cat "$work/haar.out")"
check "one recording" test "$(ls "$work"/rec/*.mov | wc -l)" -eq 1
check "the location track" grep -q "mdta/com.apple.quicktime.location.ISO6709" <<<"$inspect"
check "the Haar detector's track" grep -q "mdta/com.example.haar-faces (utf8)" <<<"$inspect"
check "GPS coordinates in exiftool" test "$(grep -c "GPSCoordinates.*48 deg 51'" <<<"$exif")" -ge 10
# The detector found faces in most frames it analysed, and each became a sample.
check "Haar faces recorded" python3 - "$bin" "$file" <<'PY'
import json, subprocess, sys
bin, path = sys.argv[1], sys.argv[2]
tracks = json.loads(subprocess.check_output([bin, "inspect", "--json", path]))["tracks"]
haar = next(t for t in tracks if any(k["identifier"] == "mdta/com.example.haar-faces" for k in t.get("keys", [])))
lines = subprocess.check_output([bin, "inspect", path, "--metadata", "--track", str(haar["id"])]).decode().splitlines()
boxes = [json.loads(item["value"]) for line in lines for item in json.loads(line)["items"]]
assert len(boxes) >= 20 and all(0 <= b[0] <= 1 and 0 < b[2] <= 1 for faces in boxes for b in faces), boxes[:3]
PY
echo "$passed passed, $failed failed: example clients"
[ "$failed" -eq 0 ]
