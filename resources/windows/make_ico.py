#!/usr/bin/env python3
"""Packs PNG images into one Windows .ico (the icon of cflow-studio.exe, its Start-menu entry and the
installer): an ICONDIR header, one 16-byte entry per image, then each PNG as it is (Windows Vista and
later read PNG-compressed entries at every size).

    make_ico.py OUT.ico IN-16.png IN-32.png ... (square PNGs, 1 to 256 pixels)
"""
import struct
import sys


def png_size(data: bytes, path: str) -> int:
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        sys.exit(f"make_ico.py: {path} is not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    if width != height or not 1 <= width <= 256:
        sys.exit(f"make_ico.py: {path} is {width}x{height}; an icon image is square, 1 to 256 pixels")
    return width


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, inputs = sys.argv[1], sys.argv[2:]
    images = []
    for path in inputs:
        with open(path, "rb") as f:
            data = f.read()
        images.append((png_size(data, path), data))
    images.sort(key=lambda image: image[0])
    header = struct.pack("<HHH", 0, 1, len(images))
    offset = len(header) + 16 * len(images)
    entries, blobs = b"", b""
    for size, data in images:
        # 256 is written as 0: the byte fields hold 0-255.
        entries += struct.pack("<BBBBHHII", size % 256, size % 256, 0, 0, 1, 32, len(data), offset)
        blobs += data
        offset += len(data)
    with open(out, "wb") as f:
        f.write(header + entries + blobs)


if __name__ == "__main__":
    main()
