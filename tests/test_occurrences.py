import numpy as np
import pytest

from distill.corpus import build_vocabulary, count_words, iter_lines
from distill.occurrences import iter_jobs, plan_sample

from .conftest import TINY_CORPUS


def _vocab(lowercase=True):
    counts = count_words(iter_lines([str(TINY_CORPUS)]), lowercase)
    return build_vocabulary(counts, lowercase=lowercase, min_count=2)


def test_plan_caps_each_word_and_is_seeded():
    counts = np.array([500, 3, 200, 201])
    plan = plan_sample(counts, cap=200, seed=1)
    assert list(plan.sizes()) == [200, 3, 200, 200]
    assert set(plan.chosen) == {0, 3}
    assert len(np.unique(plan.chosen[0])) == 200 and plan.chosen[0].max() < 500
    again = plan_sample(counts, cap=200, seed=1)
    np.testing.assert_array_equal(plan.chosen[0], again.chosen[0])
    other = plan_sample(counts, cap=200, seed=2)
    assert not np.array_equal(plan.chosen[0], other.chosen[0])


@pytest.mark.parametrize("cap", [1, 4, 1000])
def test_jobs_fill_every_planned_row_once_with_the_right_word(cap):
    vocab = _vocab()
    plan = plan_sample(vocab.counts, cap=cap, seed=0)
    rows, seen_words = [], []
    for job in iter_jobs(iter_lines([str(TINY_CORPUS)]), vocab, plan):
        rows.extend(job.rows.tolist())
        seen_words.extend(job.text[s:e].lower() for s, e in zip(job.starts, job.ends))
    assert sorted(rows) == list(range(plan.n_rows))
    owner = np.searchsorted(plan.offsets, np.asarray(rows), side="right") - 1
    assert [vocab.words[w] for w in owner] == seen_words


def test_sampled_occurrences_are_the_chosen_ordinals():
    vocab = _vocab()
    plan = plan_sample(vocab.counts, cap=3, seed=5)
    w = vocab.index()["king"]
    sentences = [
        job.sentence_id
        for job in iter_jobs(iter_lines([str(TINY_CORPUS)]), vocab, plan)
        if any(plan.offsets[w] <= r < plan.offsets[w + 1] for r in job.rows)
    ]
    ordinal_sentences = []
    for sid, text in enumerate(iter_lines([str(TINY_CORPUS)])):
        ordinal_sentences += [sid] * sum(
            1 for t in text.lower().replace(".", " ").replace(",", " ").split() if t == "king"
        )
    assert sentences == sorted({ordinal_sentences[k] for k in plan.chosen[w]})
