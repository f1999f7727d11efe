#!/usr/bin/env bash
# Builds Sightline's sample and test clips from real photos shipped in PyPI packages.
#
# The clips this writes are committed (Sources/SightlineSamples/Media); run this only to
# rebuild them. Every photo used is licensed for redistribution:
#   - scikit-image 0.25.2 wheel: astronaut.png (NASA, public domain), coffee.png (CC0)
#   - face-recognition 1.3.0 sdist (MIT): obama.jpg, obama2.jpg, biden.jpg, obama3.jpg (official
#     White House photos, US federal works; provenance as stated in the package)
#   - Debian opencv-doc 4.6.0+dfsg-12 (Apache-2.0 and BSD-3-Clause, per its copyright
#     file): 4_barcodes.jpg, a phone photo of four book backs with ISBN barcodes
# Images whose licence is unknown (insightface t1.jpg, opencv messi5.jpg) are never used.
# Also needs segno and python-barcode (PyPI) for the generated codes, and Pillow.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out="$here/Sources/SightlineSamples/Media"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 -m pip download --quiet --no-deps -d "$work" scikit-image==0.25.2 \
  --only-binary :all: --platform manylinux2014_x86_64 --python-version 3.11
python3 -m pip download --quiet --no-deps --no-binary :all: -d "$work" face-recognition==1.3.0
(cd "$work" && python3 -m zipfile -e scikit_image-0.25.2-*.whl skimage_whl >/dev/null)
tar -xzf "$work"/face_recognition-1.3.0.tar.gz -C "$work" face_recognition-1.3.0/tests/test_images
sk="$work/skimage_whl/skimage/data"
fr="$work/face_recognition-1.3.0/tests/test_images"

# One 400x500 tile per photo, cropped to head and shoulders; a strip of six tiles
# (no face, four faces, no face) is the scene a virtual camera pans across.
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }
ff -i "$sk/coffee.png" -vf "crop=320:400:0:0,scale=400:500,format=rgb24" "$work/t0.png"
ff -i "$sk/astronaut.png" -vf "crop=280:350:90:0,scale=400:500,format=rgb24" "$work/t1.png"
ff -i "$fr/obama.jpg" -vf "crop=720:900:95:0,scale=400:500,format=rgb24" "$work/t2.png"
ff -i "$fr/biden.jpg" -vf "crop=600:750:190:0,scale=400:500,format=rgb24" "$work/t3.png"
ff -i "$fr/obama3.jpg" -vf "crop=560:700:610:60,scale=400:500,format=rgb24" "$work/t4.png"
ff -i "$sk/coffee.png" -vf "crop=320:400:280:0,scale=400:500,format=rgb24" "$work/t5.png"
ff -i "$work/t0.png" -i "$work/t1.png" -i "$work/t2.png" -i "$work/t3.png" -i "$work/t4.png" \
  -i "$work/t5.png" -filter_complex "hstack=inputs=6" "$work/strip.png"

# A 10 s, 30 fps pan from the left end of the strip to the right end. x264 runs with one
# thread so the bitstream (and so the dlib golden) is reproducible.
pan() { # width height window_width crf output
  local frames=300 travel=$((2400 - $3))
  ff -loop 1 -framerate 30 -i "$work/strip.png" -frames:v $frames \
    -vf "crop=$3:500:'trunc($travel*n/($frames-1))':0,scale=$1:$2:flags=bicubic,format=yuv420p" \
    -c:v libx264 -threads 1 -preset medium -crf "$4" -g 60 -bf 2 -profile:v high \
    -colorspace smpte170m -color_primaries smpte170m -color_trc smpte170m -color_range tv \
    -movflags +faststart "$5"
}
mkdir -p "$out"
pan 640 480 666 26 "$out/faces_640x480.mp4"
pan 1280 720 889 28 "$out/faces_1280x720.mp4"

# Barcodes: generated codes over a pan across coffee.png, with the frames each is on.
barcodes="$here/Tests/SightlineDetectionTests/Barcodes"
python3 "$here/tools/make-barcode-media.py" "$sk/coffee.png" "$out/barcodes_640x480.mp4" \
  "$barcodes/barcodes_640x480.truth.json"
# Stills for the landmark, descriptor and identity tests: a portrait of Obama that is not
# in the clips (obama2.jpg), to enrol him from, and Biden's tile of the clips.
faces="$here/Tests/SightlineDetectionTests/Faces"
mkdir -p "$faces"
ff -i "$fr/obama2.jpg" -vf "crop=480:600:80:60,scale=320:400" -q:v 3 "$faces/obama2.jpg"
ff -i "$fr/biden.jpg" -vf "crop=600:750:190:0,scale=320:400" -q:v 3 "$faces/biden.jpg"
# A real photo of printed barcodes, unchanged from Debian's opencv-doc.
(cd "$work" && apt-get download opencv-doc=4.6.0+dfsg-12 >/dev/null)
dpkg-deb --fsys-tarfile "$work"/opencv-doc_*.deb |
  tar -xO ./usr/share/doc/opencv-doc/opencv4/html/4_barcodes.jpg >"$barcodes/books.jpg"
ls -l "$out"
