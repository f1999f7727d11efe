#!/usr/bin/env bash
# Sets up and runs every test: the Swift suites, then the Python example client against a
# real `sightline run`. This is the README's test command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
swift build --build-tests
swift test --skip-build
tools/test-python-client.sh
