#!/usr/bin/env python3
"""Builds the barcode test clip and its truth: generated codes over a slow pan of a photo.

Usage: make-barcode-media.py COFFEE_PNG CLIP_OUT TRUTH_OUT

The photo is scikit-image's coffee.png (CC0). The codes come from segno (QR) and
python-barcode (EAN-13, EAN-8, Code 128), independent of the zxing-cpp reader under test.
Each code is pasted whole (with its quiet zone) on the frames listed in the truth file and
on no others, so a reader must report it on exactly those frames.
"""
import json
import subprocess
import sys
from io import BytesIO

import barcode
import segno
from barcode.writer import ImageWriter
from PIL import Image

WIDTH, HEIGHT, FRAMES, FPS = 640, 480, 240, 30


def linear(kind, text):
    # module_width in mm at 254 dpi: 0.2 mm = 2 px per module; human-readable text off.
    options = {"module_width": 0.2, "module_height": 10.0, "quiet_zone": 2.5, "write_text": False, "dpi": 254}
    buffer = BytesIO()
    barcode.get(kind, text, writer=ImageWriter()).write(buffer, options)
    return Image.open(BytesIO(buffer.getvalue())).convert("RGB")


def qr(text):
    buffer = BytesIO()
    segno.make_qr(text, error="m").save(buffer, kind="png", scale=5, border=4)
    return Image.open(BytesIO(buffer.getvalue())).convert("RGB")


# type (Sightline's name), text, image, first and last frame, position at the first frame,
# movement in pixels per frame.
codes = [
    ("qr", "https://sightline.example/qr/1", qr("https://sightline.example/qr/1"), 30, 149, (40, 60), (1, 0)),
    ("ean13", "5901234123457", linear("ean13", "590123412345"), 90, 209, (380, 40), (0, 0)),
    ("ean8", "96385074", linear("ean8", "9638507"), 120, 179, (420, 290), (0, -1)),
    ("code128", "SIGHTLINE-0042", linear("code128", "SIGHTLINE-0042"), 180, 239, (40, 300), (0, 0)),
]


def main(coffee, clip, truth_path):
    background = Image.open(coffee).convert("RGB").resize((960, 640), Image.BICUBIC)
    encoder = subprocess.Popen(
        ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
         "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{WIDTH}x{HEIGHT}", "-r", str(FPS), "-i", "-",
         "-c:v", "libx264", "-threads", "1", "-preset", "medium", "-crf", "18", "-g", "60", "-bf", "2",
         "-pix_fmt", "yuv420p", "-colorspace", "smpte170m", "-color_primaries", "smpte170m",
         "-color_trc", "smpte170m", "-color_range", "tv", "-movflags", "+faststart", clip],
        stdin=subprocess.PIPE)
    truth = {"width": WIDTH, "height": HEIGHT, "frames": FRAMES, "fps": FPS, "codes": []}
    for kind, text, image, first, last, _, _ in codes:
        truth["codes"].append({"type": kind, "text": text, "first": first, "last": last, "boxes": {}})
    for n in range(FRAMES):
        x0 = round(320 * n / (FRAMES - 1))  # the camera pans right across the photo
        frame = background.crop((x0, 80, x0 + WIDTH, 80 + HEIGHT))
        for entry, (kind, text, image, first, last, (x, y), (dx, dy)) in zip(truth["codes"], codes):
            if first <= n <= last:
                position = (x + dx * (n - first), y + dy * (n - first))
                frame.paste(image, position)
                entry["boxes"][str(n)] = [position[0], position[1], image.width, image.height]
        encoder.stdin.write(frame.tobytes())
    encoder.stdin.close()
    if encoder.wait() != 0:
        sys.exit("ffmpeg failed")
    with open(truth_path, "w") as out:
        json.dump(truth, out, indent=1)
        out.write("\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
