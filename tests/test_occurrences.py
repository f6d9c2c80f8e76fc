import numpy as np
import pytest

from distill import corpus, occurrences
from distill.corpus import WORD_RE, CorpusStats, build_vocabulary, count_words, iter_lines
from distill.occurrences import SamplingStats, iter_jobs, iter_jobs_greedy, plan_sample
from distill.parallel import WorkerPool

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


def _reference_jobs(lines, vocab, plan, greedy):
    """The walk word by word, as it was written before it went a block at a time."""
    index, sizes = vocab.index(), plan.sizes()
    seen, taken = np.zeros(len(vocab), int), np.zeros(len(vocab), int)
    jobs = []
    for sid, text in enumerate(lines):
        found = []
        for match in WORD_RE.finditer(text):
            w = index.get(match.group().lower())
            if w is None:
                continue
            k, seen[w] = seen[w], seen[w] + 1
            if greedy and k < sizes[w]:
                found.append((*match.span(), plan.offsets[w] + k))
            elif not greedy and (w not in plan.chosen or k in plan.chosen[w]):
                found.append((*match.span(), plan.offsets[w] + taken[w]))
                taken[w] += 1
        if found:
            jobs.append((sid, *(list(column) for column in zip(*found))))
        if greedy and (seen >= sizes).all():
            return jobs, sid + 1
    return jobs, len(lines)


@pytest.mark.parametrize("block", [1, 7, 4096])
@pytest.mark.parametrize("greedy", [False, True])
@pytest.mark.parametrize("cap", [1, 3, 1000])
def test_the_walk_a_block_at_a_time_equals_the_walk_word_by_word(monkeypatch, block, greedy, cap):
    monkeypatch.setattr(occurrences, "BLOCK_LINES", block)
    monkeypatch.setattr(corpus, "BLOCK_LINES", block)
    lines = list(iter_lines([str(TINY_CORPUS)]))
    lines[3] = "Naïve Ünïcode words, a_b 12 kings\tand tabs" + lines[3]  # \w is Unicode; no line break inside
    vocab = build_vocabulary(count_words(iter(lines), True), lowercase=True, min_count=2)
    assert vocab.counts.sum() == sum(
        1 for text in lines for word in WORD_RE.findall(text) if word.lower() in vocab.index()
    )
    plan = plan_sample(vocab.counts, cap=cap, seed=0, draw=not greedy)
    stats = SamplingStats()
    walk = iter_jobs_greedy if greedy else iter_jobs
    jobs = [
        (j.sentence_id, j.starts.tolist(), j.ends.tolist(), j.rows.tolist())
        for j in walk(iter(lines), vocab, plan, stats)
    ]
    expected, read = _reference_jobs(lines, vocab, plan, greedy)
    assert jobs == expected
    assert (stats.sentences_read, stats.sentences_kept) == (read, len(expected))
    assert (read < len(lines)) == (greedy and cap < 1000)  # greedy stops once every word is full


@pytest.mark.parametrize("greedy", [False, True])
def test_a_pool_of_workers_counts_and_walks_as_this_process_does(monkeypatch, greedy):
    """A GPU run counts the corpus and finds the sampled sentences' words in worker processes, blocks of lines
    out of order across workers; what comes back is what one process finds, in the same order."""
    monkeypatch.setattr(occurrences, "BLOCK_LINES", 5)
    monkeypatch.setattr(corpus, "POOL_BLOCK_LINES", 3)
    lines = list(iter_lines([str(TINY_CORPUS)]))
    walk = iter_jobs_greedy if greedy else iter_jobs
    runs = []
    with WorkerPool(2) as pool:
        for mapper in (pool.map, None):
            stats, sampling = CorpusStats(), SamplingStats()
            counts = count_words(iter(lines), True, stats, mapper)
            vocab = build_vocabulary(counts, lowercase=True, min_count=2)
            plan = plan_sample(vocab.counts, cap=2, seed=0, draw=not greedy)
            jobs = walk(iter(lines), vocab, plan, sampling, mapper or occurrences.in_process)
            found = [(j.sentence_id, j.text, j.starts.tolist(), j.ends.tolist(), j.rows.tolist()) for j in jobs]
            runs.append((counts, stats.words, vocab.words, found, sampling))
    assert runs[0] == runs[1]
    assert len(runs[0][3]) > 5 and runs[0][1] > 100


def test_a_corpus_changed_between_passes_is_caught():
    vocab = _vocab()
    lines = list(iter_lines([str(TINY_CORPUS)]))
    with pytest.raises(RuntimeError, match="the corpus changed between passes"):
        list(iter_jobs(iter(lines[:-20]), vocab, plan_sample(vocab.counts, cap=3, seed=0)))
    with pytest.raises(RuntimeError, match="the corpus changed between passes"):
        list(iter_jobs_greedy(iter(lines[:5]), vocab, plan_sample(vocab.counts, cap=3, seed=0, draw=False)))
