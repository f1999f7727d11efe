#!/usr/bin/env bash
# Writes Sources/CDlib/Data/frontal_face_detector.dat: dlib's built-in frontal face detector
# in dlib's binary serialisation. `get_frontal_face_detector()` decodes and decompresses its
# text form in about 0.4 s, every process, every start; the binary form deserialises in
# about 2 ms. The shim embeds this file (.incbin); DetectionTests check that it is still
# exactly what this dlib's get_frontal_face_detector() serialises to. Run again after a
# dlib upgrade, then rebuild (touch Sources/CDlib/FaceDetector.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/write.cpp" <<'CPP'
#include <dlib/image_processing/frontal_face_detector.h>
#include <fstream>
int main(int, char **argv) {
    std::ofstream out(argv[1], std::ios::binary);
    dlib::serialize(dlib::get_frontal_face_detector(), out);
    return out ? 0 : 1;
}
CPP
c++ -O1 -o "$work/write" "$work/write.cpp" -ldlib -llapack -lblas
"$work/write" Sources/CDlib/Data/frontal_face_detector.dat
ls -l Sources/CDlib/Data/frontal_face_detector.dat
