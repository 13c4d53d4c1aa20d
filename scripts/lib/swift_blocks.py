#!/usr/bin/env python3
"""The Swift code blocks of Markdown files, as scripts/apple-compile and
scripts/consumer-test compile them.

A block's fence says what it is, after the language:

    ```swift                  a whole file, as a user would paste it
    ```swift statements       statements in an async throwing function
    ```swift app-delegate     members of a UIApplicationDelegate class

A whole file that imports PackageDescription is a package manifest.

    swift_blocks.py list FILE...        one line per block: FILE:LINE KIND
    swift_blocks.py write DIR FILE...   each block to DIR/NAME.swift, and the
                                        list above, with NAME, to DIR/blocks.tsv
    swift_blocks.py manifest FILE       the one manifest block of FILE
"""
import os
import re
import sys

KINDS = ("file", "statements", "app-delegate")


def blocks(path):
    """(line, kind, code) of each ```swift block of `path`."""
    found = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        match = re.match(r"^```swift(?:\s+(\S+))?\s*$", lines[i])
        if not match:
            if re.match(r"^```swift", lines[i]):
                sys.exit(f"{path}:{i + 1}: a swift fence says {lines[i]!r}; the kinds are {', '.join(KINDS)}")
            i += 1
            continue
        kind = match.group(1) or "file"
        if kind not in KINDS:
            sys.exit(f"{path}:{i + 1}: unknown kind {kind!r} of a swift block; the kinds are {', '.join(KINDS)}")
        start = i + 1
        end = start
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end == len(lines):
            sys.exit(f"{path}:{start}: a swift block that never ends")
        code = "\n".join(lines[start:end]) + "\n"
        if kind == "file" and re.search(r"^import PackageDescription$", code, re.M):
            kind = "manifest"
        found.append((start, kind, code))
        i = end + 1
    return found


def name(path, line):
    stem = re.sub(r"[^A-Za-z0-9]+", "_", os.path.splitext(os.path.basename(path))[0])
    return f"{stem}_{line}"


def main(argv):
    if len(argv) >= 2 and argv[0] == "list":
        for path in argv[1:]:
            for line, kind, _ in blocks(path):
                print(f"{path}:{line} {kind}")
    elif len(argv) >= 3 and argv[0] == "write":
        out = argv[1]
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "blocks.tsv"), "w", encoding="utf-8") as listing:
            for path in argv[2:]:
                for line, kind, code in blocks(path):
                    block = name(path, line)
                    with open(os.path.join(out, block + ".swift"), "w", encoding="utf-8") as f:
                        f.write(code)
                    listing.write(f"{block}\t{kind}\t{path}:{line}\n")
    elif len(argv) == 2 and argv[0] == "manifest":
        manifests = [code for _, kind, code in blocks(argv[1]) if kind == "manifest"]
        if len(manifests) != 1:
            sys.exit(f"{argv[1]}: {len(manifests)} package manifest blocks, where one is expected")
        sys.stdout.write(manifests[0])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
