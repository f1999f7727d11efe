#!/usr/bin/env python3
"""Records the bundled clips with two sightline binaries and compares the files byte for
byte, apart from the creation and modification times of mvhd, tkhd and mdhd (also in the
copies of the movie header that crash-safe recordings keep in free boxes):

  tools/compare-recordings.py OLD_SIGHTLINE NEW_SIGHTLINE

A restructuring that must not change what is recorded passes when every line says
"identical". Three recordings: faces and codes on the faces clip, the same on the codes
clip, and faces named by a gallery (the identity fields) on the 1280x720 clip.
"""

import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
MEDIA = ROOT / "Sources" / "SightlineSamples" / "Media"
PORTRAIT = ROOT / "Tests" / "SightlineDetectionTests" / "Faces" / "obama2.jpg"


def without_times(data: bytes) -> bytearray:
    """The file with each mvhd, tkhd and mdhd's two times zeroed, wherever the box stands."""
    copy = bytearray(data)
    for match in re.finditer(rb"mvhd|tkhd|mdhd", data):
        version = match.end()
        width = 8 if copy[version] == 1 else 4
        start = version + 4
        copy[start:start + 2 * width] = bytes(2 * width)
    return copy


def record(binary: str, directory: pathlib.Path, arguments: list[str]) -> bytes:
    directory.mkdir(parents=True)
    subprocess.run([binary, "run", "--record", str(directory), "--publish", f"inproc://{directory.name}"] + arguments,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    files = sorted(directory.glob("*.mov"))
    if len(files) != 1:
        sys.exit(f"{binary} recorded {len(files)} files in {directory}")
    return files[0].read_bytes()


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    old, new = sys.argv[1:]
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        gallery = work / "gallery.json"
        subprocess.run([new, "faces", "enroll", "Obama", str(PORTRAIT), "--gallery", str(gallery)], check=True,
                       stdout=subprocess.DEVNULL)
        cases = {
            "faces and codes": ["--source", str(MEDIA / "faces_640x480.mp4"), "--detect", "faces,barcodes"],
            "codes": ["--source", str(MEDIA / "barcodes_640x480.mp4"), "--detect", "faces,barcodes"],
            "named faces": ["--source", str(MEDIA / "faces_1280x720.mp4"), "--gallery", str(gallery)],
        }
        failed = False
        for index, (name, arguments) in enumerate(cases.items()):
            a = record(old, work / f"old{index}", arguments)
            b = record(new, work / f"new{index}", arguments)
            differing = sum(x != y for x, y in zip(without_times(a), without_times(b))) + abs(len(a) - len(b))
            verdict = "identical" if differing == 0 else f"{differing} bytes differ"
            failed |= differing != 0
            print(f"{name}: {len(a)} and {len(b)} bytes, {verdict} apart from creation times")
        sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
