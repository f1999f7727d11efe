#!/usr/bin/env bash
# Writes the clips the audio tests record, into DIR: 6 s of 320x240 black video at 30 fps
# with a white frame at 1, 2, 3, 4 and 5 s, and a 100 ms 1 kHz tone starting at the same
# instants, so that tools/av-sync.py can measure the offset between picture and sound.
#   sync_aac.mp4    AAC 48 kHz stereo (passed through)     sync_adts.ts   the same in MPEG-TS
#   sync_mulaw.mov  G.711 µ-law 8 kHz mono                 sync_alaw.mov  G.711 A-law 8 kHz mono
#   sync_opus.mp4   Opus 48 kHz stereo                     sync_mp3.mp4   MP3 44.1 kHz stereo
#   sync_pcm.mov    PCM s16 22.05 kHz stereo
#   short_audio.mp4 AAC that stops at 3 s while the video goes on to 6 s
#   gap_audio.ts    22 s (flashes and tones each second to 21 s) whose AAC is missing from
#                   3.5 to 18.5 s, as a microphone unplugged, in MPEG-TS
#   no_audio.mp4    the video alone
# Usage: tools/make-audio-media.sh DIR
set -euo pipefail
out="${1:?usage: $0 DIR}"
mkdir -p "$out"
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }
video="color=c=black:s=320x240:r=30:d=6,geq=lum='if(lt(mod(N\,30)\,1)*gte(N\,30)\,235\,16)':cb=128:cr=128"
tone="aevalsrc='0.5*sin(2*PI*1000*t)*lt(mod(t\,1)\,0.1)*gte(t\,0.9)':s=48000:c=stereo:d=6"
x264=(-c:v libx264 -threads 1 -preset veryfast -g 30 -pix_fmt yuv420p)
clip() { # audio-codec-arguments... -- output
  local args=() ; while [ "$1" != -- ]; do args+=("$1"); shift; done
  ff -f lavfi -i "$video" -f lavfi -i "$tone" "${x264[@]}" "${args[@]}" -shortest "$2"
}
clip -c:a aac -b:a 128k -- "$out/sync_aac.mp4"
clip -c:a aac -b:a 128k -f mpegts -- "$out/sync_adts.ts"
clip -c:a pcm_mulaw -ar 8000 -ac 1 -- "$out/sync_mulaw.mov"
clip -c:a pcm_alaw -ar 8000 -ac 1 -- "$out/sync_alaw.mov"
clip -c:a libopus -b:a 64k -- "$out/sync_opus.mp4"
clip -c:a libmp3lame -ar 44100 -b:a 128k -- "$out/sync_mp3.mp4"
clip -c:a pcm_s16le -ar 22050 -- "$out/sync_pcm.mov"
ff -f lavfi -i "$video" -f lavfi -i "${tone/d=6/d=3}" "${x264[@]}" -c:a aac "$out/short_audio.mp4"
ff -f lavfi -i "${video/d=6/d=22}" -f lavfi -i "${tone/d=6/d=22}" "${x264[@]}" \
  -af "aselect='not(between(t\,3.5\,18.5))'" -c:a aac -f mpegts "$out/gap_audio.ts"
ff -f lavfi -i "$video" "${x264[@]}" "$out/no_audio.mp4"
