#!/usr/bin/env python3
"""The structure's symptoms, measured from the tree (issue 33's targets):

  tools/structure-report.py [--list] [TREE]     (TREE: another checkout, to compare)

functions over 60 lines and types over 400 in Sources/ (Swift; the C shims aside), public
and package declarations, `@unchecked Sendable` and how many lack a reason beside them,
sleep calls, and the detector names ("barcodes", "identities") outside the object kinds.
--list names every offender. Exits 0: it reports, the reader judges.
"""

import pathlib
import re
import sys

ARGUMENTS = [argument for argument in sys.argv[1:] if not argument.startswith("--")]
ROOT = pathlib.Path(ARGUMENTS[0] if ARGUMENTS else pathlib.Path(__file__).resolve().parent.parent).resolve()
SOURCES = ROOT / "Sources"
KINDS = SOURCES / "SightlineMovie" / "ObjectKinds"
FUNCTION = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|private|fileprivate|internal|open|static|"
                      r"class|final|override|mutating|nonisolated|convenience|required|@discardableResult)\s+)*"
                      r"(?:func\s+\S+|init[?!]?\s*[(<]|deinit\b|subscript\s*[(<])")
TYPE = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|private|fileprivate|internal|open|final|"
                  r"indirect)\s+)*(?:class|struct|enum|actor|protocol)\s+(\w+)")
DECLARATION = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(public|package)\s+(?!import)")


def code_of(line: str) -> str:
    """The line without string literals and comments, so that braces in them do not count."""
    line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
    return line.split("//", 1)[0]


def block_end(lines: list[str], start: int) -> int:
    """The index of the line that closes the block opened at or after `start`."""
    depth, opened = 0, False
    for index in range(start, len(lines)):
        code = code_of(lines[index])
        for char in code:
            if char == "{":
                depth, opened = depth + 1, True
            elif char == "}":
                depth -= 1
                if opened and depth == 0:
                    return index
        if not opened and index > start and code.strip() and not code.rstrip().endswith((",", "(", "->")) \
                and "{" not in code and index - start > 12:
            return start  # a declaration without a body (a protocol requirement)
    return start


def main() -> None:
    listing = "--list" in sys.argv
    long_functions, long_types, unchecked, unexplained, sleeps, names = [], [], [], [], [], []
    counts = {"public": 0, "package": 0}
    for path in sorted(SOURCES.rglob("*.swift")):
        relative = path.relative_to(ROOT)
        lines = path.read_text().splitlines()
        in_multiline_string = False
        for index, line in enumerate(lines):
            if line.count('"""') % 2 == 1:
                in_multiline_string = not in_multiline_string
                continue
            if in_multiline_string:
                continue
            if match := DECLARATION.match(line):
                counts[match.group(1)] += 1
            if FUNCTION.match(line):
                length = block_end(lines, index) - index + 1
                if length > 60:
                    long_functions.append((length, f"{relative}:{index + 1}: {line.strip()[:70]}"))
            elif match := TYPE.match(line):
                length = block_end(lines, index) - index + 1
                if length > 400:
                    long_types.append((length, f"{relative}:{index + 1}: {match.group(1)}"))
            if "@unchecked Sendable" in line:
                unchecked.append(f"{relative}:{index + 1}")
                before = lines[index - 1].strip() if index else ""
                if "//" not in line and not before.startswith("///") and not before.startswith("//"):
                    unexplained.append(f"{relative}:{index + 1}")
            if re.search(r"\b(Thread\.sleep|usleep|Task\.sleep)\b", line):
                sleeps.append(f"{relative}:{index + 1}: {line.strip()[:80]}")
            if re.search(r'"(barcodes|identities)"', line) and KINDS not in path.parents:
                names.append(f"{relative}:{index + 1}")

    def report(title: str, items: list, show) -> None:
        print(f"{title}: {len(items)}")
        if listing:
            for item in items:
                print(f"  {show(item)}")

    report("functions over 60 lines", sorted(long_functions, reverse=True), lambda i: f"{i[0]:4d} {i[1]}")
    report("types over 400 lines", sorted(long_types, reverse=True), lambda i: f"{i[0]:4d} {i[1]}")
    print(f"public declarations: {counts['public']}")
    print(f"package declarations: {counts['package']}")
    report("@unchecked Sendable", unchecked, str)
    report("  of them without a reason beside them", unexplained, str)
    report("sleep calls", sleeps, str)
    report('"barcodes"/"identities" outside the object kinds', names, str)


if __name__ == "__main__":
    main()
