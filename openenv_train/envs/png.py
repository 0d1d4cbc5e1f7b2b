"""A small PNG encoder (zlib, standard library) for the envs' frames: Atari screens (few colours, long runs: a few
KiB against 100 KiB raw) and MuJoCo renders."""

from __future__ import annotations

import base64
import struct
import zlib

__all__ = ["encode_png", "png_data_url"]


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(pixels: bytes, width: int, height: int, channels: int) -> bytes:
    """PNG bytes of ``height`` rows of ``width`` pixels, 8 bits per channel (1: greyscale, 3: RGB), row-major."""
    if channels not in (1, 3) or len(pixels) != width * height * channels:
        raise ValueError(f"need {width}x{height}x{channels} bytes for a greyscale or RGB image, got {len(pixels)}")
    stride = width * channels
    rows = b"".join(b"\x00" + pixels[y * stride:(y + 1) * stride] for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0 if channels == 1 else 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(rows, 6)) + _chunk(b"IEND", b"")


def png_data_url(encoded: object) -> str | None:
    """A ``data:`` URL of an observation's base64 PNG field (an ``<img>``'s ``src``); None when it is empty or not
    valid base64."""
    if not isinstance(encoded, str) or not encoded:
        return None
    try:
        data = base64.b64encode(base64.b64decode(encoded, validate=True)).decode("ascii")
    except ValueError:  # binascii.Error is a ValueError
        return None
    return f"data:image/png;base64,{data}"
