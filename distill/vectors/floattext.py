"""float32 matrices as text, formatted by numpy array arithmetic instead of one Python call per value.

Each value is written with 9 significant digits (enough to read back the same float32) in compact
scientific notation without trailing zeros (``-1.2345678e-2``, ``3e-1``, ``0``). Each value fills 16
byte slots (separator, sign, digit, point, 8 digits, ``e``, exponent sign, 2 exponent digits), written
two at a time from tables of digit pairs; unused slots hold 0 and are dropped at the end: several times
faster than ``np.savetxt(fmt="%.9g")`` (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

_DIGITS = 9  # significant digits: the most a float32 needs to round-trip
_PAIRS = 8  # 16 one-byte slots per value, written as 8 little-endian uint16 pairs
_VALUES = 2**16  # values formatted at once: their 1 MiB of slots stays in the core's cache
_U16 = np.dtype("<u2")  # pairs of slots, little-endian whatever the machine


def _pair(first: Any, second: Any) -> Any:
    return first | second << 8


def _tables() -> tuple[np.ndarray, np.ndarray]:
    """Digit pairs 00..99: ``pairs[p]`` with trailing zeros dropped ("5" for 50, "" for 00), ``pairs[100 + p]``
    in full ("50"); ``exponents[e]`` without a leading zero ("7", "12")."""
    tens, ones = np.divmod(np.arange(100), 10)
    full = _pair(tens + ord("0"), ones + ord("0"))
    trimmed = np.where(ones == 0, tens + ord("0"), full)
    trimmed[0] = 0
    exponents = np.where(tens == 0, _pair(0, ones + ord("0")), full)
    return np.concatenate([trimmed, full]).astype(_U16), exponents.astype(_U16)


_PAIR_TABLE, _EXPONENT_TABLE = _tables()
_POW10 = 10.0 ** np.arange(-64, 65)  # float32 exponents are in -45..38: 10^(8 - e) by table lookup


def format_lines(words: Sequence[str], values: np.ndarray) -> Iterator[bytes]:
    """``word v1 v2 ...\\n`` for each word and row of ``values`` (n, d), a block of lines at a time."""
    values = np.asarray(values, dtype=np.float32)
    rows = max(1, _VALUES // max(1, values.shape[1]))
    for start in range(0, len(values), rows):
        block = [w.encode() for w in words[start : start + rows]]
        yield _format_block(block, values[start : start + rows])


def format_rows(values: np.ndarray) -> list[bytes]:
    """One line (no newline) of space-separated values per row of ``values`` (n, d)."""
    text = b"".join(format_lines([""] * len(values), values))
    return [line[1:] for line in text.splitlines()]  # each line starts with the separator after its word


def _format_block(words: list[bytes], x: np.ndarray) -> bytes:
    if not np.isfinite(x).all():  # nan and inf: the general formatter
        buffer = io.BytesIO()
        np.savetxt(buffer, x, fmt="%.9g", delimiter=" ")
        return b"".join(w + b" " + row + b"\n" for w, row in zip(words, buffer.getvalue().splitlines()))
    n, d = x.shape
    a = np.abs(x.astype(np.float64))
    zero = a == 0
    a[zero] = 1.0
    exponent = np.floor(np.log10(a)).astype(np.int64)
    mantissa = np.rint(a * _POW10[64 + _DIGITS - 1 - exponent]).astype(np.int64)
    # log10 may land one off next to a power of ten, and rounding may carry to 10^9: fix both
    for low, step in ((mantissa < 10 ** (_DIGITS - 1), -1), (mantissa >= 10**_DIGITS, 1)):
        exponent[low] += step
        mantissa[low] = np.rint(a[low] * _POW10[64 + _DIGITS - 1 - exponent[low]]).astype(np.int64)
    mantissa[zero] = 0
    exponent[zero] = 0

    # One row of bytes per word: the word (NUL-padded to an even width), the values' slots, "\n" + NUL.
    width = -(-max(len(w) for w in words) // 2) * 2
    line = np.zeros((n, width // 2 + d * _PAIRS + 1), dtype=_U16)
    line[:, : width // 2] = np.frombuffer(b"".join(w.ljust(width, b"\0") for w in words), _U16).reshape(n, -1)
    line[:, -1] = ord("\n")  # "\n" then NUL
    slots = line[:, width // 2 : -1].reshape(n, d, _PAIRS)
    # divisions by a constant and np.take, not divmod and fancy indexing: they vectorize better
    mantissa = mantissa.astype(np.int32)
    lead = mantissa // 10 ** (_DIGITS - 1)  # the first digit, then 8 more in 4 pairs
    rest = mantissa - lead * 10 ** (_DIGITS - 1)
    seen = np.zeros((n, d), dtype=bool)  # a non-zero digit after this pair: its zeros are not trailing
    for k in range(4, 0, -1):  # least significant pair first, into slots 2k+2 and 2k+3
        quotient = rest // 100
        pair = rest - quotient * 100
        slots[..., k + 1] = np.take(_PAIR_TABLE, pair + seen * 100)
        seen |= pair != 0
        rest = quotient
    slots[..., 0] = _pair(ord(" "), 0) + np.signbit(x) * np.uint16(ord("-") << 8)
    slots[..., 1] = (lead + ord("0")).astype(np.uint16) + seen * np.uint16(ord(".") << 8)
    has_exponent = exponent != 0
    slots[..., 6] = has_exponent * np.uint16(ord("e")) + (exponent < 0) * np.uint16(ord("-") << 8)
    slots[..., 7] = has_exponent * np.take(_EXPONENT_TABLE, np.abs(exponent))
    return line.tobytes().translate(None, b"\0")
