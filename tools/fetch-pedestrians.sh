#!/usr/bin/env bash
# Fetches real pedestrian footage for the plugged-in people detector's test: vtest.avi
# (768x576, 10 fps, 79.5 s of people walking in a square) from Debian's opencv-doc 4.6.0
# package (Apache-2.0 and BSD-3-Clause, per its copyright file), checked against its sha256.
# Only that file is kept, not the package's 270 MB of documentation. Idempotent.
#
#   tools/fetch-pedestrians.sh [DIR]     (default: .cache/ of this checkout); prints the path
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
target="${1:-$here/.cache}"
file="$target/vtest.avi"
sha256=45cddc9490be69345cbdab64ca583be65987e864ca408038e648db99e10516cf

verified() { [ -f "$file" ] && [ "$(sha256sum "$file" | cut -d' ' -f1)" = "$sha256" ]; }
if ! verified; then
  mkdir -p "$target"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  echo "fetch-pedestrians: downloading Debian's opencv-doc for vtest.avi" >&2
  (cd "$work" && apt-get download opencv-doc=4.6.0+dfsg-12 >/dev/null 2>&1 || apt-get download opencv-doc >/dev/null)
  dpkg-deb --fsys-tarfile "$work"/opencv-doc_*.deb \
    | tar -x -C "$work" ./usr/share/doc/opencv-doc/examples/data/vtest.avi
  mv "$work/usr/share/doc/opencv-doc/examples/data/vtest.avi" "$file"
  verified || { echo "fetch-pedestrians: $file does not have the expected sha256" >&2; exit 1; }
fi
echo "$file"
