"""Draws images/icon.png, the extension's 128x128 Marketplace icon: a small graph (four nodes, their
edges) on a torch-orange tile. Stdlib only (zlib + struct write the PNG); run it again after a change."""

from __future__ import annotations

import math
import struct
import zlib
from pathlib import Path

SIZE = 128
TILE, EDGE, NODE, RIM = (238, 76, 44), (255, 236, 226), (255, 255, 255), (120, 30, 12)
NODES = [(40, 30), (88, 52), (40, 76), (84, 100)]
EDGES = [(0, 1), (0, 2), (1, 3), (2, 3), (1, 2)]


def _segment_distance(px: float, py: float, a: tuple, b: tuple) -> float:
    (ax, ay), (bx, by) = a, b
    t = max(0.0, min(1.0, ((px - ax) * (bx - ax) + (py - ay) * (by - ay)) / ((bx - ax) ** 2 + (by - ay) ** 2)))
    return math.hypot(px - ax - t * (bx - ax), py - ay - t * (by - ay))


def _pixel(x: int, y: int) -> tuple[int, int, int, int]:
    cx, cy = x + 0.5, y + 0.5
    corner = 22  # a rounded tile: transparent outside the rounded rectangle
    qx, qy = max(corner - cx, cx - (SIZE - corner), 0), max(corner - cy, cy - (SIZE - corner), 0)
    if math.hypot(qx, qy) > corner:
        return (0, 0, 0, 0)
    for nx, ny in NODES:
        d = math.hypot(cx - nx, cy - ny)
        if d <= 9:
            return (*NODE, 255)
        if d <= 12:
            return (*RIM, 255)
    if any(_segment_distance(cx, cy, NODES[a], NODES[b]) <= 3.2 for a, b in EDGES):
        return (*EDGE, 255)
    return (*TILE, 255)


def png(width: int, height: int, rows: list[bytes]) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + row for row in rows)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


if __name__ == "__main__":
    rows = [b"".join(bytes(_pixel(x, y)) for x in range(SIZE)) for y in range(SIZE)]
    target = Path(__file__).resolve().parent.parent / "images" / "icon.png"
    target.write_bytes(png(SIZE, SIZE, rows))
    print(f"{target}: {target.stat().st_size} bytes")
