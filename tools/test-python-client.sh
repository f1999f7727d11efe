#!/usr/bin/env bash
# The Python example client subscribes to a real `sightline run` on the bundled sample and
# must see the four faces enter and leave, then the final status.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(swift build --show-bin-path)/sightline
port=$((20000 + RANDOM % 20000))
out=$(mktemp)
trap 'rm -f "$out"' EXIT

python3 tools/face_events.py --connect "tcp://127.0.0.1:$port" --until-stopped --summary --timeout 60 >"$out" &
client=$!
"$bin" run --publish "tcp://127.0.0.1:$port" --every-frame --wait-for-subscriber 10 --log-level warning
wait "$client"
cat "$out"
summary=$(tail -n 1 "$out")
if [ "$summary" = '{"entered": [1, 2, 3, 4], "left": [1, 2, 3, 4]}' ]; then
  echo "1 passed, 0 failed: python client"
else
  echo "python client saw: $summary (expected faces 1-4 to enter and leave)" >&2
  echo "0 passed, 1 failed: python client"
  exit 1
fi
