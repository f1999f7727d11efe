#!/usr/bin/env bash
# Installs what Sightline needs on Debian 12, idempotently: the C libraries it links,
# the tools its tests use as independent readers, and what the Python examples import
# (pyzmq; numpy and OpenCV 4 for the Haar detector), the browser the console's tests
# drive (Debian's chromium and chromium-driver, selenium and Pillow from PyPI), the Python
# dlib binding the model tests compare with, and dlib's landmark and recognition models.
# Safe to run again; it installs only what is missing.
set -euo pipefail

packages=(
  pkg-config
  libzmq3-dev                                                   # ZeroMQ
  libavformat-dev libavcodec-dev libswscale-dev libavutil-dev   # FFmpeg
  libswresample-dev                                             # FFmpeg: audio to the AAC encoder
  libv4l-dev v4l-utils                                          # cameras
  libasound2-dev                                                # microphones (ALSA)
  libmosquitto-dev                                              # the MQTT output
  mosquitto mosquitto-clients openssl                           # its tests: a real broker and mosquitto_sub
  libdlib-dev liblapack-dev libblas-dev                         # dlib (links LAPACK/BLAS)
  libopenblas0-serial    # dlib's BLAS through Debian's alternatives: descriptors 15x faster than the reference BLAS
  libzxing-dev                                                  # barcodes and QR codes
  libsqlite3-dev                                                # the console's event index (GRDB)
  libfreetype-dev fonts-dejavu-core                             # text in burned-in clips
  ffmpeg libimage-exiftool-perl mediainfo                       # independent readers in tests
  prometheus                                                    # promtool checks the /metrics text
  python3 python3-zmq                                           # the example client
  chromium chromium-driver                                      # the console's browser tests
  # A real RTSP camera for the network-source tests: GStreamer's RTSP server, driven from
  # Debian's own /usr/bin/python3 (python3-gi imports there, not in another Python on PATH).
  gir1.2-gst-rtsp-server-1.0 python3-gi gir1.2-gstreamer-1.0
  gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-libav
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The python3 first on PATH may not be Debian's (pyenv, a venv): give it what the
# examples import. OpenCV 5 dropped the Haar cascades, hence < 5.
python_missing=()
python3 -c "import zmq" 2>/dev/null || python_missing+=(pyzmq)
python3 -c "import cv2; cv2.CascadeClassifier" 2>/dev/null || python_missing+=("opencv-python-headless>=4.6,<5")
python3 -c "import selenium" 2>/dev/null || python_missing+=("selenium>=4.10")
python3 -c "import PIL" 2>/dev/null || python_missing+=(pillow)
# The Python dlib binding is the reference the landmark and descriptor tests compare with.
python3 -c "import dlib" 2>/dev/null || python_missing+=("dlib-bin==20.0.1.post1")
if ((${#python_missing[@]})); then
  echo "setup: installing ${python_missing[*]} for $(command -v python3)" >&2
  python3 -m pip install --quiet "${python_missing[@]}"
fi

"$(dirname "$0")/fetch-models.sh"

command -v swift >/dev/null || { echo "setup: swift is not on PATH; install Swift 6 for Linux first" >&2; exit 1; }
echo "setup: ready" >&2
