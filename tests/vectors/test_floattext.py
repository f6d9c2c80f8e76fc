"""The vectorised float32 text formatter: every value reads back bit for bit."""

from __future__ import annotations

import io

import numpy as np

from distill.vectors.floattext import format_lines, format_rows


def _parse(rows: list[bytes]) -> np.ndarray:
    return np.array([[np.float32(float(s)) for s in row.split(b" ")] for row in rows], dtype=np.float32)


def test_every_float32_reads_back_exactly(rng):
    bits = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    edges = np.array(
        [0.0, -0.0, 1, -1, 10, 1e-5, 9.99999e-5, 1e-4, 0.1, 0.3, 123456789, 999999999, 1e9, 3.4028235e38,
         1.17549435e-38, 1e-45, -2.5e-7, 0.5, 1 / 3],
        dtype=np.float32,
    )  # fmt: skip
    powers = (10.0 ** np.arange(-45, 39)).astype(np.float32)  # where log10 lands next to an integer
    near = np.concatenate([np.nextafter(powers, np.float32(0)), np.nextafter(powers, np.float32(np.inf))])
    values = np.concatenate([bits[np.isfinite(bits)], edges, powers, near])
    values = values[: len(values) // 8 * 8].reshape(-1, 8)
    back = _parse(format_rows(values))
    np.testing.assert_array_equal(back.view(np.uint32), values.view(np.uint32))


def test_layout_is_compact_and_matches_known_strings():
    rows = format_rows(np.array([[0.0, -0.0, 1.0, 0.25, -1234.5, 1e-10], [3e8, 0.1, 7.0, 10.0, 1e9, 2.0]], np.float32))
    assert rows[0] == b"0 -0 1 2.5e-1 -1.2345e3 1.00000001e-10"
    assert rows[1] == b"3e8 1.00000001e-1 7 1e1 1e9 2"


def test_non_finite_values_fall_back_to_the_general_formatter():
    rows = format_rows(np.array([[np.nan, np.inf, -np.inf, 0.5]], np.float32))
    assert rows == [b"nan inf -inf 0.5"]
    assert np.isnan(_parse(rows)[0, 0])


def test_many_rows_in_blocks_match_numpy_parse(rng):
    values = (rng.standard_normal((2500, 7)) * 10.0 ** rng.integers(-8, 8, (2500, 7))).astype(np.float32)
    rows = format_rows(values)
    assert len(rows) == 2500
    np.testing.assert_array_equal(np.loadtxt(io.BytesIO(b"\n".join(rows)), dtype=np.float32), values)


def test_lines_carry_each_word_whatever_its_length(rng):
    words = ["a", "bb", "ccc", "naïve", "日本語", "x" * 41, "e"]
    values = rng.standard_normal((len(words), 5)).astype(np.float32)
    text = b"".join(format_lines(words, values))
    assert text.count(b"\n") == len(words)
    assert text.splitlines() == [w.encode() + b" " + row for w, row in zip(words, format_rows(values))]
    assert text.decode().splitlines()[4].split(" ")[0] == "日本語"
