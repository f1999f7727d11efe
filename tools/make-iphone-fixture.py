#!/usr/bin/env python3
"""Builds Tests/SightlineMovieTests/Fixtures/iphone-layout.mov: a QuickTime file laid out the
way an iPhone (iOS 12) records detected faces and video orientation, assembled here byte by
byte from the layouts in docs/movie-format.md, independently of Sightline's own writer.

Layout: ftyp 'qt', wide, one mdat with interleaved chunks, then moov: mvhd at timescale 600,
a rotated H.264 video track (id 2), a detected-face track (id 3: key table in iOS's order
3,1,4,2,5 with sdpd/ctps, lidp/lidl, the 100-byte one-face sample verbatim, NULL samples
before and after, one sample held for two frames), an orientation track (id 4: the entry and
10-byte sample verbatim), tref cdsc+cdep, gmhd, alis data handler, stco, and a movie-level
meta with mdta keys. The video is 120 frames of ffmpeg's test pattern, 64x48 at 30 fps.

Usage: tools/make-iphone-fixture.py [OUT]   (needs the ffmpeg CLI with libx264)
"""
import struct
import subprocess
import sys
import tempfile

OUT = sys.argv[1] if len(sys.argv) > 1 else "Tests/SightlineMovieTests/Fixtures/iphone-layout.mov"
FRAMES, TICKS = 120, 20  # 30 fps at timescale 600


def box(kind, payload=b""):
    return struct.pack(">I", 8 + len(payload)) + kind + payload


def full(kind, version, flags, payload):
    return box(kind, struct.pack(">I", version << 24 | flags) + payload)


def h264_access_units():
    with tempfile.NamedTemporaryFile(suffix=".h264") as raw:
        subprocess.run(
            ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc=size=64x48:rate=30:duration={FRAMES / 30}",
             "-c:v", "libx264", "-profile:v", "high", "-bf", "0", "-g", "30", "-pix_fmt", "yuv420p",
             "-x264-params", "aud=1", "-f", "h264", raw.name], check=True)
        data = open(raw.name, "rb").read()
    # Split at start codes into NAL units.
    starts, i = [], 0
    while True:
        i = data.find(b"\x00\x00\x01", i)
        if i < 0:
            break
        starts.append(i + 3)
        i += 3
    units = []
    for n, start in enumerate(starts):
        end = starts[n + 1] - 3 if n + 1 < len(starts) else len(data)
        unit = data[start:end].rstrip(b"\x00") if n + 1 < len(starts) else data[start:end]
        units.append(unit)
    sps = next(u for u in units if u[0] & 0x1F == 7)
    pps = next(u for u in units if u[0] & 0x1F == 8)
    samples, current = [], None
    for unit in units:
        kind = unit[0] & 0x1F
        if kind == 9:  # access unit delimiter: a new frame
            current = [b"", False]
            samples.append(current)
        elif kind not in (7, 8):
            current[0] += struct.pack(">I", len(unit)) + unit
            current[1] |= kind == 5
    avcc = bytes([1, sps[1], sps[2], sps[3], 0xFF, 0xE1]) + struct.pack(">H", len(sps)) + sps
    avcc += bytes([1]) + struct.pack(">H", len(pps)) + pps
    return avcc, [(bytes(s), key) for s, key in samples]


def sdpd():
    return box(b"sdpd", box(b"sdpi", b"\x00\x00\x00\x00"))


def key(local_id, namespace, name, dtyp, extra=b""):
    return box(struct.pack(">I", local_id), box(b"keyd", namespace + name) + box(b"dtyp", dtyp) + extra)


FACE_ENTRY = box(b"mebx", bytes(6) + b"\x00\x01" + box(b"keys",
    key(3, b"fiel", b"com.apple.quicktime.detected-face.bounds", struct.pack(">II", 0, 80), sdpd())
    + key(1, b"mdta", b"com.apple.quicktime.detected-face", struct.pack(">I", 1) + b"com.apple.quicktime.detected-face",
          box(b"ctps", box(b"dtyp", struct.pack(">II", 0, 69))))
    + key(4, b"fiel", b"com.apple.quicktime.detected-face.roll-angle", struct.pack(">II", 0, 23), sdpd())
    + key(2, b"fiel", b"com.apple.quicktime.detected-face.face-id", struct.pack(">II", 0, 77))
    + key(5, b"fiel", b"com.apple.quicktime.detected-face.yaw-angle", struct.pack(">II", 0, 23), sdpd()))
    + box(b"lidp", struct.pack(">I", 1)) + box(b"lidl", struct.pack(">6I", 0x18, 0x01000000, 2, 3, 4, 5)))
ONE_FACE = bytes.fromhex(
    "00000064 00000001 0000005C 63726563 00000054 63697473 0000000C 00000002 00000001"
    "00000028 00000003 3E851EB8 3EC0B780 3EBDA512 3EC0B780 3EBDA512 3F135A86 3E851EB8 3F135A86"
    "0000000C 00000004 43870000 0000000C 00000005 00000000".replace(" ", ""))
NULL = bytes.fromhex("0000000800000000")
ORIENTATION_ENTRY = bytes.fromhex(
    "00000075 6D656278 00000000 00000001 00000065 6B657973 0000005D 00000001"
    "00000031 6B657964 6D647461 636F6D2E 6170706C 652E7175 69636B74 696D652E"
    "76696465 6F2D6F72 69656E74 6174696F 6E000000 10647479 70000000 00000000"
    "42000000 14736470 64000000 0C736470 69000000 00".replace(" ", ""))
ORIENTATION_SAMPLE = bytes.fromhex("0000000A000000010006")

IDENTITY = struct.pack(">9I", 0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000)
ROTATE_90 = struct.pack(">9I", 0, 0x10000, 0, 0xFFFF0000, 0, 0, 0x300000, 0, 0x40000000)


def handler(kind, subtype, name, flags):
    return full(b"hdlr", 0, 0, kind + subtype + b"appl" + struct.pack(">II", flags, 0) + bytes([len(name)]) + name)


def trak(track_id, flags, width, height, matrix, media_handler, media_header, entry, samples, chunks, refs=b"",
         sync=None):
    """samples: list of (size, duration); chunks: list of (offset, count)."""
    duration = sum(d for _, d in samples)
    tkhd = full(b"tkhd", 0, flags, struct.pack(">IIIII", 0, 0, track_id, 0, duration) + bytes(8)
                + struct.pack(">HHHH", 0, 0, 0, 0) + matrix + struct.pack(">II", width << 16, height << 16))
    elst = box(b"edts", full(b"elst", 0, 0, struct.pack(">IIiI", 1, duration, 0, 0x10000)))
    stts_runs = []
    for _, d in samples:
        if stts_runs and stts_runs[-1][1] == d:
            stts_runs[-1][0] += 1
        else:
            stts_runs.append([1, d])
    stsc_runs = []
    for index, (_, count) in enumerate(chunks):
        if not stsc_runs or stsc_runs[-1][1] != count:
            stsc_runs.append((index + 1, count))
    stbl = full(b"stsd", 0, 0, struct.pack(">I", 1) + entry)
    stbl += full(b"stts", 0, 0, struct.pack(">I", len(stts_runs)) + b"".join(struct.pack(">II", *r) for r in stts_runs))
    if sync is not None:
        stbl += full(b"stss", 0, 0, struct.pack(">I", len(sync)) + b"".join(struct.pack(">I", s) for s in sync))
    stbl += full(b"stsc", 0, 0, struct.pack(">I", len(stsc_runs)) + b"".join(struct.pack(">III", f, c, 1) for f, c in stsc_runs))
    stbl += full(b"stsz", 0, 0, struct.pack(">II", 0, len(samples)) + b"".join(struct.pack(">I", s) for s, _ in samples))
    stbl += full(b"stco", 0, 0, struct.pack(">I", len(chunks)) + b"".join(struct.pack(">I", o) for o, _ in chunks))
    minf = media_header + handler(b"dhlr", b"alis", b"Core Media Data Handler", 0)
    minf += box(b"dinf", full(b"dref", 0, 0, struct.pack(">I", 1) + full(b"alis", 0, 1, b"")))
    minf += box(b"stbl", stbl)
    mdia = full(b"mdhd", 0, 0, struct.pack(">IIIIHH", 0, 0, 600, duration, 0x55C4, 0)) + media_handler + box(b"minf", minf)
    return box(b"trak", tkhd + elst + refs + box(b"mdia", mdia))


def main():
    avcc, video = h264_access_units()
    assert len(video) == FRAMES, len(video)
    # Face samples as iOS times them: NULL for frame 0, one face per frame 1..98, one held
    # for frames 99-100, NULL to the end.
    faces = [(NULL, TICKS)] + [(ONE_FACE, TICKS)] * 98 + [(ONE_FACE, 2 * TICKS)]
    faces.append((NULL, FRAMES * TICKS - sum(d for _, d in faces)))
    face_frame = []  # first frame of each face sample
    frame = 0
    for _, d in faces:
        face_frame.append(frame)
        frame += d // TICKS

    head = box(b"ftyp", b"qt  " + struct.pack(">I", 0) + b"qt  ") + box(b"wide")
    data = b""
    base = len(head) + 8
    video_chunks, face_chunks, orientation_chunks = [], [], []
    next_face = 0
    for start in range(0, FRAMES, 10):  # chunks of 10 frames, interleaved like iOS
        video_chunks.append((base + len(data), 10))
        data += b"".join(s for s, _ in video[start:start + 10])
        first = next_face
        while next_face < len(faces) and face_frame[next_face] < start + 10:
            data += faces[next_face][0]
            next_face += 1
        if next_face > first:
            face_chunks.append((base + len(data) - sum(len(faces[i][0]) for i in range(first, next_face)), next_face - first))
        if start == 0:
            orientation_chunks.append((base + len(data), 1))
            data += ORIENTATION_SAMPLE
    mdat = box(b"mdat", data)

    avc1 = box(b"avc1", bytes(6) + struct.pack(">H", 1) + bytes(16) + struct.pack(">HHIIIH", 64, 48, 0x480000, 0x480000, 0, 1)
               + bytes([5]) + b"H.264" + bytes(26) + struct.pack(">Hh", 24, -1) + box(b"avcC", avcc))
    gmhd = box(b"gmhd", full(b"gmin", 0, 0, struct.pack(">HHHHHH", 0x40, 0x8000, 0x8000, 0x8000, 0, 0)))
    refs = box(b"tref", box(b"cdsc", struct.pack(">I", 2)) + box(b"cdep", struct.pack(">I", 2)))
    meta_handler = handler(b"mhlr", b"meta", b"Core Media Metadata", 1)
    moov = full(b"mvhd", 0, 0, struct.pack(">IIII", 0, 0, 600, FRAMES * TICKS) + struct.pack(">IH", 0x10000, 0x100)
                + bytes(10) + IDENTITY + bytes(24) + struct.pack(">I", 5))
    moov += trak(2, 3, 64, 48, ROTATE_90, handler(b"mhlr", b"vide", b"Core Media Video", 1),
                 full(b"vmhd", 0, 1, bytes(8)), avc1, [(len(s), TICKS) for s, _ in video], video_chunks,
                 sync=[i + 1 for i, (_, key) in enumerate(video) if key])
    moov += trak(3, 0xF, 0, 0, IDENTITY, meta_handler, gmhd, FACE_ENTRY, [(len(s), d) for s, d in faces], face_chunks, refs)
    moov += trak(4, 0xF, 0, 0, IDENTITY, meta_handler, gmhd, ORIENTATION_ENTRY, [(len(ORIENTATION_SAMPLE), FRAMES * TICKS)],
                 orientation_chunks, refs)
    # Movie-level metadata, as iPhones write it (not timed).
    keys = [b"com.apple.quicktime.make", b"com.apple.quicktime.model"]
    values = [b"Apple", b"iPhone 6"]
    meta = full(b"hdlr", 0, 0, struct.pack(">I", 0) + b"mdta" + bytes(12) + b"\x00")
    meta += full(b"keys", 0, 0, struct.pack(">I", len(keys)) + b"".join(box(b"mdta", k) for k in keys))
    meta += box(b"ilst", b"".join(box(struct.pack(">I", i + 1), box(b"data", struct.pack(">II", 1, 0) + v))
                                  for i, v in enumerate(values)))
    moov += box(b"meta", meta)
    with open(OUT, "wb") as out:
        out.write(head + mdat + box(b"moov", moov))
    print(f"wrote {OUT}")


main()
