#!/usr/bin/env bash
# Hard clips for region tracking (issue 36; `tools/bench-tracking.sh`), made from the face
# stills Debian's libdlib19.1 ships (installed with libdlib-dev by tools/setup.sh), none of
# them the bundled samples or the test stills, at WxH (default 1280x720) into DIR:
#   edges_WxH.mp4     10 s: portraits enter fast (0.4 s from outside to wholly in) from the
#                     left, top, right and bottom edges in turn, stop, and leave the same way.
#   zoom_WxH.mp4      10 s: a collage of portraits, zoomed from the whole collage to 3x and
#                     back twice, panning: faces grow past pyramid levels from frame to frame,
#                     enter at every edge and leave.
#   crossing_WxH.mp4  10 s: two portraits cross from either side while one grows from a
#                     third of the frame's height to two thirds and the other shrinks.
# Each frame has camera noise; x264 at the same settings as tools/make-tracking-media.sh.
set -euo pipefail
out=${1:?usage: make-hard-tracking-media.sh DIR [WxH]}
size=${2:-1280x720}
w=${size%x*}
h=${size#*x}
stills=/usr/share/doc/libdlib19.1/examples/faces
[[ -f $stills/bald_guys.jpg ]] || { echo "make-hard-tracking-media.sh: $stills missing: apt-get install libdlib-dev" >&2; exit 1; }
mkdir -p "$out"
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }
x264=(-c:v libx264 -threads 1 -preset veryfast -crf 23 -g 60 -pix_fmt yuv420p)
background="color=c=0x707870:s=${size}:r=30:d=10"
noise="noise=alls=4:allf=t"

# A portrait half the frame high; each enters in 0.4 s at 2.5 s intervals, holds for 1.4 s
# and leaves in 0.4 s. p = position along the way in (0 outside, 1 in place).
ph=$((h / 2 / 2 * 2))
pw=$((ph * 3 / 4 / 2 * 2))
p() { echo "clip((t-$1)/0.4,0,1)*clip(($1+2.2-t)/0.4,0,1)"; }
ff -f lavfi -i "$background" -i "$stills/Tom_Cruise_avp_2014_4.jpg" -i "$stills/2009_004587.jpg" \
  -i "$stills/2008_001009.jpg" -i "$stills/Tom_Cruise_avp_2014_4.jpg" -filter_complex "\
[1]scale=${pw}:${ph}[a];[2]crop=iw:iw*1.2:0:0,scale=${pw}:${ph}[b];[3]crop=iw:iw*1.1:0:ih*0.15,scale=${pw}:${ph}[c];\
[4]hflip,scale=${pw}:${ph}[d];\
[0][a]overlay=x='-${pw}+($(p 0))*(${w}/4+${pw})':y=(H-h)/3:enable='between(t,0,2.5)'[s1];\
[s1][b]overlay=x=(W-w)/2:y='-${ph}+($(p 2.5))*(${h}/4+${ph})':enable='between(t,2.5,5)'[s2];\
[s2][c]overlay=x='${w}-($(p 5))*(${w}/4+${pw})':y=(H-h)/2:enable='between(t,5,7.5)'[s3];\
[s3][d]overlay=x=(W-w)/3:y='${h}-($(p 7.5))*(${h}/2+${ph}/2)':enable='between(t,7.5,10)',$noise" \
  -frames:v 300 "${x264[@]}" "$out/edges_${size}.mp4"

# Zoom z from 1 to 3 and back in 2.5 s, twice; the view's centre wanders over the collage.
ff -loop 1 -framerate 30 -i "$stills/bald_guys.jpg" -vf "\
scale=${w}*2:-2,crop=iw:iw*${h}/${w},\
zoompan=z='1+2*(1-cos(2*PI*on/75))/2':x='(iw-iw/zoom)*(1+sin(2*PI*on/170))/2':\
y='(ih-ih/zoom)*(1+cos(2*PI*on/130))/2':d=1:s=${size}:fps=30,$noise" \
  -frames:v 300 "${x264[@]}" "$out/zoom_${size}.mp4"

# Heights in pixels as functions of time: one grows from h/3 to 2h/3, the other shrinks.
grow="trunc(${h}/3*(1+t/10)/2)*2"
shrink="trunc(${h}/3*(2-t/10)/2)*2"
ff -f lavfi -i "$background" -i "$stills/Tom_Cruise_avp_2014_4.jpg" -i "$stills/2009_004587.jpg" -filter_complex "\
[1]loop=-1:1:0,setpts=N/30/TB,scale=w=-2:h='${grow}':eval=frame[a];\
[2]crop=iw:iw*1.2:0:0,loop=-1:1:0,setpts=N/30/TB,scale=w=-2:h='${shrink}':eval=frame[b];\
[0][a]overlay=x='-w+t/10*(W+w)':y=(H-h)/4:eval=frame[ab];\
[ab][b]overlay=x='W-t/10*(W+w)':y=(H-h)*3/4:eval=frame,$noise" \
  -frames:v 300 "${x264[@]}" "$out/crossing_${size}.mp4"
ls -l "$out"
