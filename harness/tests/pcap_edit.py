"""Damaging captures on purpose, for tests of bad input."""

from __future__ import annotations

from pathlib import Path

PCAP_HEADER = 24
RECORD_HEADER = 16
FIRST_ITCH_BYTE = 42 + 20 + 2  # Ethernet+IPv4+UDP, MoldUDP64 header, message length


def record_offsets(data: bytes) -> list[int]:
    """Offset of every record header in a pcap written by itch-synth."""
    offsets, off = [], PCAP_HEADER
    while off + RECORD_HEADER <= len(data):
        offsets.append(off)
        off += RECORD_HEADER + int.from_bytes(data[off + 8:off + 12], "little")
    return offsets


def corrupt_first_type_byte(pcap: Path, record: int, byte: int = ord("z")) -> None:
    """Overwrite the ITCH type byte of the first message in the given (0-based) record."""
    data = bytearray(pcap.read_bytes())
    data[record_offsets(data)[record] + RECORD_HEADER + FIRST_ITCH_BYTE] = byte
    pcap.write_bytes(bytes(data))
