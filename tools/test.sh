#!/usr/bin/env bash
# Sets up and runs every test: the Swift suites, the camera suites against a real V4L2
# device, then the Python example clients (events, GPS feeder, Haar detector, the people
# detector on real pedestrian footage) against a
# real `sightline run`, the MQTT output against a real mosquitto broker (TLS, restarts,
# kill -9), export of a real recording, the console in headless Chromium, and
# `sightline serve` with its metrics, health and retention, network cameras against a real
# RTSP server (restarts, stalls, refused passwords), and hostile input against
# `record`, the console and the metrics server.
# This is the
# README's test command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
swift build --build-tests

# Everything below is also kept in a log, so that the end can say which suites were
# skipped and why (a line among thousands otherwise), whether the run passed or not.
log=$(mktemp -t sightline-tests.XXXXXX)
summary() {
  local status=$?
  echo
  # Swift Testing's "Test/Suite … skipped: reason" and the scripts' "…: skipped (reason)";
  # the tests the host skipped for want of a camera and vivid-run then ran are not skipped.
  local ran_in_vm='^$'
  grep -q "^V4L2 suites: ran in vivid-run" "$log" && ran_in_vm='needs /dev/video0'
  local skipped
  skipped=$(grep -aE "(Suite|Test) .* skipped: |: skipped( \(|$)" "$log" | grep -avE "$ran_in_vm" \
    | sed -E 's/^[^A-Za-z]*//' | sort -u || true)  # nothing skipped is no failure
  if [ -n "$skipped" ]; then
    echo "Skipped:"
    sed 's/^/  /' <<<"$skipped"
  else
    echo "Skipped: nothing"
  fi
  # What failed, again at the end: a CI log is often read from its tail alone.
  local failed
  failed=$(grep -aE "✘ Test .* recorded an issue|: FAILED: " "$log" | cut -c1-500 | head -n 40 || true)
  if [ -n "$failed" ]; then
    echo "Failed:"
    sed 's/^/  /' <<<"$failed"
  fi
  rm -f "$log"
  exit "$status"
}
trap summary EXIT
exec > >(tee -a "$log") 2>&1

swift test --skip-build

# Cameras: with no /dev/video0 here, the V4L2 suites above reported themselves skipped. Run
# them against the kernel's vivid driver in a small VM when vivid-run is available (it is
# beside the checkout on the project's machines and in CI; VIVID_RUN may point elsewhere).
vivid="${VIVID_RUN:-$(cd .. && pwd)/shared/tools/vivid-run}"
if [ -e /dev/video0 ]; then
  echo "V4L2 suites: ran above against /dev/video0"
  tools/test-camera-cli.sh "$(swift build --show-bin-path)/sightline"
  python3 tools/test-camera-controls.py "$(swift build --show-bin-path)/sightline"
  python3 tools/test-microphone.py "$(swift build --show-bin-path)/sightline"  # skipped without snd-aloop
elif [ -x "$vivid" ]; then
  # One suite after the other (they share the one device), each as the VM's command itself:
  # under a shell there, Foundation's Process never sees its children exit.
  tests="$(swift build --show-bin-path)/SightlinePackageTests.xctest"
  for suite in V4L2Tests V4L2PipelineTests; do
    "$vivid" --timeout 600 -- "$tests" --testing-library swift-testing --filter "$suite"
  done
  echo "V4L2 suites: ran in vivid-run, not on this host"
  "$vivid" --timeout 600 -- tools/test-camera-cli.sh "$(swift build --show-bin-path)/sightline"
  # Chromium drives the console's control panel in there: the VM gets 2 GiB, and half an
  # hour (an emulated CPU; loaded, Chromium's first start and page took over 10 minutes).
  VIVID_MEM=2048 "$vivid" --timeout 1800 -- python3 tools/test-camera-controls.py "$(swift build --show-bin-path)/sightline"
  # A microphone beside the camera: the kernel's snd-aloop loopback card plays into itself.
  VIVID_EXTRA_MODULES="snd-aloop" "$vivid" --timeout 600 -- \
    python3 tools/test-microphone.py "$(swift build --show-bin-path)/sightline"
else
  echo "V4L2 suites and microphone tests: skipped (no /dev/video0 and no vivid-run)"
fi

tools/test-python-client.sh
tools/test-examples.sh
python3 tools/test-people.py "$(swift build --show-bin-path)/sightline"
python3 tools/test-mqtt.py "$(swift build --show-bin-path)/sightline"
python3 tools/test-console.py "$(swift build --show-bin-path)/sightline"
python3 tools/test-export.py "$(swift build --show-bin-path)/sightline"
python3 tools/test-serve.py "$(swift build --show-bin-path)/sightline"
python3 tools/test-rtsp.py "$(swift build --show-bin-path)/sightline"
python3 tools/test-hostile.py "$(swift build --show-bin-path)/sightline"

# Long tests (CI sets SIGHTLINE_LONG_TESTS=1): 50 kills of a recording run at random moments,
# and a 30-minute soak of `serve` (SIGHTLINE_SOAK_MINUTES shortens it).
if [ "${SIGHTLINE_LONG_TESTS:-0}" = 1 ]; then
  python3 tools/test-crash.py "$(swift build --show-bin-path)/sightline" 50
  python3 tools/test-soak.py "$(swift build --show-bin-path)/sightline"
fi
