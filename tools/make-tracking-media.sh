#!/usr/bin/env bash
# Clips for measuring region tracking and the motion gate (tools/bench.sh), made from the
# test stills (Tests/SightlineDetectionTests/Faces) into DIR:
#   crossing_1280x720.mp4  8 s: one face walks in from the left and one from the right, they
#                          cross in the middle and walk out the other side.
#   still_640x480.mp4      12 s: a face stands still for 4 s, a second one walks in and
#                          stops (2 s), then nothing moves for 6 s; camera noise throughout.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: make-tracking-media.sh DIR}
faces="$here/Tests/SightlineDetectionTests/Faces"
mkdir -p "$out"
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }
x264=(-c:v libx264 -threads 1 -preset veryfast -crf 23 -g 60 -pix_fmt yuv420p)

ff -f lavfi -i "color=c=0x707870:s=1280x720:r=30:d=8" -i "$faces/obama2.jpg" -i "$faces/biden.jpg" \
  -filter_complex "[1]scale=240:300[a];[2]scale=240:300[b];\
[0][a]overlay=x='-240+t*(1280+240)/8':y=150[ab];[ab][b]overlay=x='1280-t*(1280+240)/8':y=270,noise=alls=4:allf=t" \
  -frames:v 240 "${x264[@]}" "$out/crossing_1280x720.mp4"

ff -f lavfi -i "color=c=0x707870:s=640x480:r=30:d=12" -i "$faces/obama2.jpg" -i "$faces/biden.jpg" \
  -filter_complex "[1]scale=200:250[a];[2]scale=200:250[b];\
[0][a]overlay=x=40:y=110[ab];[ab][b]overlay=x='if(lt(t,4),-200,if(lt(t,6),-200+(t-4)*(400+200)/2,400))':y=110,noise=alls=3:allf=t" \
  -frames:v 360 "${x264[@]}" "$out/still_640x480.mp4"
ls -l "$out"
