#!/usr/bin/env bash
# The camera commands as a user runs them, against /dev/video0 (run inside vivid-run by
# tools/test.sh): `sightline devices`, and one clear error line for each bad request.
set -uo pipefail
bin="${1:?usage: test-camera-cli.sh SIGHTLINE_BINARY}"
passed=0
failed=0
check() {  # check NAME CONDITION-COMMAND...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name"; fi
}
# One line on stderr starting with "Error:" and containing $2, and a non-zero exit.
one_line_error() {
  local expected=$1; shift
  local out status
  out=$("$bin" "$@" 2>&1 >/dev/null); status=$?
  [ "$status" -ne 0 ] && [ "$(grep -c '^Error:' <<<"$out")" -eq 1 ] && grep -q "^Error: .*$expected" <<<"$out" \
    || { echo "  got (exit $status): $out" | head -c 600; echo; return 1; }
}

json=$("$bin" devices --json)
check "devices --json lists /dev/video0 with yuyv at 640x480" python3 -c '
import json, sys
devices = json.loads(sys.argv[1])
camera = devices["cameras"][0]
assert camera["path"] == "/dev/video0" and camera["driver"], camera["path"]
yuyv = [f for f in camera["formats"] if f["pixelFormat"] == "yuyv"][0]
assert any(s["width"] == 640 and s["height"] == 480 and s["frameRates"] for s in yuyv["sizes"])
' "$json"
check "devices prints the device and its sizes" grep -q "^    640x480  " <<<"$("$bin" devices)"
check "unsupported size" one_line_error "cannot open /dev/video0: does not support 1000x1000; it offers yuyv 320x180@" \
  run --source /dev/video0 --size 1000x1000
check "unsupported format" one_line_error "cannot open /dev/video0: no mjpeg capture; it offers yuyv " \
  run --source /dev/video0 --pixel-format mjpeg
check "not a V4L2 device" one_line_error "cannot open /dev/null: not a V4L2 device" run --source /dev/null
check "missing device" one_line_error "cannot open /dev/video7: no such device" run --source /dev/video7
echo "$passed passed, $failed failed: camera cli"
[ "$failed" -eq 0 ]
