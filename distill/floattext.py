"""float32 matrices as text, formatted by numpy array arithmetic instead of one Python call per value.

Each value is written with 9 significant digits (enough to read back the same float32) in compact
scientific notation without trailing zeros (``-1.2345678e-2``, ``3e-1``, ``0``). Writing a word2vec
text file this way is 4x faster than ``np.savetxt(fmt="%.9g")``, whose per-value formatting
was half of the time spent writing a run's outputs.
"""

from __future__ import annotations

import io

import numpy as np

_DIGITS = 9  # significant digits: the most a float32 needs to round-trip
_WIDTH = 16  # slots per value: sign, 9 digits, point, 'e', exponent sign, 2 exponent digits, separator
_ZERO = ord("0")
_VALUES = 2**16  # values formatted at once: their 1 MiB of slots stays in the core's cache


def format_rows(values: np.ndarray) -> list[bytes]:
    """One line (no newline) of space-separated values per row of ``values`` (n, d)."""
    values = np.asarray(values, dtype=np.float32)
    rows = max(1, _VALUES // max(1, values.shape[1]))
    lines: list[bytes] = []
    for start in range(0, len(values), rows):
        lines += _format_block(values[start : start + rows])
    return lines


def _format_block(x: np.ndarray) -> list[bytes]:
    if not np.isfinite(x).all():  # nan and inf: the general formatter
        buffer = io.BytesIO()
        np.savetxt(buffer, x, fmt="%.9g", delimiter=" ")
        return buffer.getvalue().splitlines()
    n, d = x.shape
    a = np.abs(x.astype(np.float64))
    zero = a == 0
    a[zero] = 1.0
    exponent = np.floor(np.log10(a)).astype(np.int64)
    mantissa = np.rint(a * 10.0 ** (_DIGITS - 1 - exponent)).astype(np.int64)
    # log10 may land one off next to a power of ten, and rounding may carry to 10^9: fix both
    for low, step in ((mantissa < 10 ** (_DIGITS - 1), -1), (mantissa >= 10**_DIGITS, 1)):
        exponent[low] += step
        mantissa[low] = np.rint(a[low] * 10.0 ** (_DIGITS - 1 - exponent[low])).astype(np.int64)
    mantissa[zero] = 0
    exponent[zero] = 0

    mantissa = mantissa.astype(np.int32)  # < 10^9 < 2^31
    slots = np.zeros((n, d, _WIDTH), dtype=np.uint8)  # 0 = unused, dropped at the end
    slots[..., 0] = np.signbit(x) * np.uint8(ord("-"))
    seen = np.zeros((n, d), dtype=bool)  # a non-zero digit at or after this one: it is not a trailing zero
    for k in range(_DIGITS - 1, 0, -1):  # least significant first
        quotient = mantissa // 10
        digit = (mantissa - quotient * 10).astype(np.uint8)
        mantissa = quotient
        seen |= digit != 0
        slots[..., 2 + k] = (digit + _ZERO) * seen
    slots[..., 1] = mantissa.astype(np.uint8) + _ZERO
    slots[..., 2] = seen * np.uint8(ord("."))
    has_exponent = exponent != 0
    slots[..., 11] = has_exponent * np.uint8(ord("e"))
    slots[..., 12] = (exponent < 0) * np.uint8(ord("-"))
    e = np.abs(exponent).astype(np.uint8)
    slots[..., 13] = (e >= 10) * (e // 10 + _ZERO)
    slots[..., 14] = has_exponent * (e % 10 + _ZERO)
    slots[..., 15] = ord(" ")
    slots[:, -1, 15] = ord("\n")
    return slots.tobytes().translate(None, b"\0").splitlines()
