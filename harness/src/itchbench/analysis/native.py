"""The C++ log reader (gateway/log/log_reader_c.h, libitchlog.so), loaded
with ctypes: a compact latency log is a sequential state machine (escapes
carry values onto the slots after them), which compiled code decodes at
hundreds of millions of slots a second and numpy at a few million."""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from .. import paths


class ClockLine(ctypes.Structure):
    _fields_ = [("tsc0", ctypes.c_uint64), ("ns0", ctypes.c_uint64), ("ns_per_tick_q32", ctypes.c_uint64),
                ("reserved", ctypes.c_uint64)]


class CompactState(ctypes.Structure):
    """What a compact slot is read against: the previous message's values and the base (a log's start: 1, 0, 0)."""
    _fields_ = [("next_seq", ctypes.c_uint64), ("prev_origin", ctypes.c_uint64), ("base", ctypes.c_uint64)]

    def __init__(self, next_seq: int = 1, prev_origin: int = 0, base: int = 0) -> None:
        super().__init__(next_seq, prev_origin, base)


@functools.lru_cache(maxsize=1)
def _library() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(paths.library("libitchlog.so")))
    lib.itchlog_decode_compact.restype = ctypes.c_int64
    lib.itchlog_decode_compact.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint8,
                                           ctypes.POINTER(ClockLine), ctypes.POINTER(CompactState), ctypes.c_void_p,
                                           ctypes.POINTER(ctypes.c_uint64)]
    lib.itchlog_ticks_to_ns.restype = None
    lib.itchlog_ticks_to_ns.argtypes = [ctypes.POINTER(ClockLine), ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64]
    return lib


def decode_compact(slots: np.ndarray, stages: int, line: ClockLine | None, state: CompactState,
                   out: np.ndarray) -> tuple[int, int]:
    """Decodes the contiguous slots into out (room for len(slots) records of the stages' layout), moving state past
    them; line maps the stamps to ns. Returns (records written, slots consumed), or (-1, index of the slot) for an
    escape whose kind the stages cannot hold."""
    assert slots.flags.c_contiguous and out.flags.c_contiguous and len(out) >= len(slots)
    consumed = ctypes.c_uint64(0)
    written = _library().itchlog_decode_compact(slots.ctypes.data, len(slots), stages,
                                                 ctypes.byref(line) if line is not None else None,
                                                 ctypes.byref(state), out.ctypes.data, ctypes.byref(consumed))
    return int(written), int(consumed.value)


def ticks_to_ns(line: ClockLine, column: np.ndarray) -> None:
    """Maps a u64 column (a field of a record array, any stride) from raw ticks to ns in place; 0 stays 0."""
    assert column.dtype.itemsize == 8 and column.ndim == 1
    if len(column):
        _library().itchlog_ticks_to_ns(ctypes.byref(line), column.ctypes.data, len(column), column.strides[0])
