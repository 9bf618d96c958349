"""Perceptual-hash arithmetic both sides need: the hash itself is computed on the device."""

from __future__ import annotations


def hamming(a: str, b: str) -> int:
    """Bits that differ between two equal-length hex hashes."""
    if len(a) != len(b):
        return 1 << 16
    return (int(a, 16) ^ int(b, 16)).bit_count()
