"""Property-based: random option values and random file bytes give a clear error or a correct result, never a
traceback."""

from __future__ import annotations

import gzip
import string

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from distill.cli import app
from distill.config import Layers, Pooling, RunConfig, parse_choices
from distill.errors import ConfigError
from distill.vectors.reader import read_vectors

SPEC = st.text(alphabet="0123456789-, alL", max_size=12)


@given(spec=SPEC, n_layers=st.integers(min_value=0, max_value=40))
def test_layer_specs_parse_to_layers_in_range_or_say_why(spec, n_layers):
    try:
        layers = Layers.parse(spec).resolve(n_layers)
    except ConfigError as err:
        assert str(err)
        return
    assert layers == tuple(sorted(set(layers))) and all(0 <= layer <= n_layers for layer in layers)


@given(spec=st.text(max_size=20))
def test_choice_lists_parse_to_members_or_say_why(spec):
    try:
        poolings = parse_choices(Pooling, spec, "pooling")
    except ConfigError as err:
        assert "use one or more of: pc, mean" in str(err)
        return
    assert poolings and all(isinstance(p, Pooling) for p in poolings)
    assert [p.value for p in poolings] == list(dict.fromkeys(s.strip().lower() for s in spec.split(",")))


NUMBER = st.one_of(st.integers(min_value=-(10**12), max_value=10**12), st.floats(allow_nan=True), st.none())
WORD = st.text(alphabet=string.ascii_letters + string.digits + ":-_.,", max_size=10)
OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "layers": WORD,
        "pooling": WORD,
        "min_count": NUMBER,
        "max_vocab": NUMBER,
        "max_occurrences": NUMBER,
        "seed": NUMBER,
        "batch_size": NUMBER,
        "max_length": NUMBER,
        "stride": NUMBER,
        "device": WORD,
        "dtype": WORD,
        "sampling": WORD,
        "store": WORD,
        "store_dtype": WORD,
        "engine": WORD,
        "chunk_size": NUMBER,
        "checkpoint_every": NUMBER,
        "shuffle_buffer": NUMBER,
        "workers": NUMBER,
    },
)


@settings(max_examples=150, deadline=None)
@given(options=OPTIONS)
def test_random_run_config_values_are_accepted_or_refused_with_a_config_error(options):
    try:
        config = RunConfig(**options)
    except ConfigError as err:
        assert str(err) and "\n" not in str(err)
        return
    assert RunConfig.from_json(config.to_json()) == config


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "--layers",
                    "--pooling",
                    "--seed",
                    "--min-count",
                    "--stride",
                    "--max-length",
                    "--device",
                    "--sampling",
                    "--store",
                    "--dtype",
                    "--batch-size",
                ]
            ),
            st.text(alphabet=string.ascii_letters + string.digits + "-,.:", min_size=1, max_size=8),
        ),
        max_size=4,
    )
)
def test_the_cli_answers_random_option_values_with_exit_2_and_no_traceback(values, tmp_path_factory):
    out = tmp_path_factory.mktemp("cli")
    args = ["run", "--model", str(out / "no-model"), "--out", str(out / "o"), "--no-progress"]
    for flag, value in values:
        args += [flag, value]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert not (out / "o").exists()


@pytest.mark.parametrize("suffix", [".txt", ".bin", ".txt.gz"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400))
def test_random_bytes_are_read_as_vectors_or_refused_with_a_config_error(tmp_path_factory, suffix, data):
    path = tmp_path_factory.mktemp("bytes") / f"vectors{suffix}"
    path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    try:
        kv = read_vectors(path)
    except ConfigError as err:
        assert str(err)
        return
    assert len(kv.index_to_key) > 0 and np.isfinite(kv.vectors).all()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.tuples(
            st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=6),
            st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=3, max_size=3),
        ),
        min_size=1,
        max_size=8,
        unique_by=lambda r: r[0],
    )
)
def test_well_formed_text_files_read_back_exactly(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("text") / "vectors.txt"
    path.write_text(f"{len(rows)} 3\n" + "".join(f"{w} " + " ".join(repr(x) for x in v) + "\n" for w, v in rows))
    kv = read_vectors(path)
    assert kv.index_to_key == [w for w, _ in rows]
    np.testing.assert_array_equal(kv.vectors, np.array([v for _, v in rows], dtype=np.float32))
