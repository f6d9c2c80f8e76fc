import numpy as np
import pytest

from distill.corpus import word_spans
from distill.encoders.alignment import (
    Window,
    align_pieces,
    choose_windows,
    make_windows,
    pad_windows,
    piece_mask,
    truncating_backend,
)


def _pieces(tokenizer, text, **kwargs):
    """Pieces of every word of ``text``, as the alignment finds them."""
    backend = truncating_backend(tokenizer, kwargs.get("max_length", 512), kwargs.get("stride", 0))
    windows = make_windows(backend.encode_batch([text]))
    spans = word_spans(text)
    starts = np.array([s for s, _ in spans])
    ends = np.array([e for _, e in spans])
    chosen = choose_windows(windows, np.zeros(len(spans), dtype=int), starts, ends)
    out = {}
    for k, (s, e) in enumerate(spans):
        window = windows[chosen[k]]
        mask = piece_mask(window, starts[k : k + 1], ends[k : k + 1])[0]
        out[text[s:e]] = tokenizer.convert_ids_to_tokens([window.ids[i] for i in np.flatnonzero(mask)])
    return out, windows, chosen


@pytest.mark.integration
def test_wordpiece_word_gets_all_its_pieces(minilm_tokenizer):
    pieces, _, _ = _pieces(minilm_tokenizer, "Vivendi's unbelievable offer.")
    assert pieces["Vivendi"] == ["vi", "##ven", "##di"]
    assert pieces["s"] == ["s"]
    assert pieces["unbelievable"] == ["unbelievable"]


@pytest.mark.integration
def test_byte_level_bpe_pieces_carry_their_leading_space(smollm2_tokenizer):
    pieces, _, _ = _pieces(smollm2_tokenizer, "Hello world, Vivendi's naïve bids.")
    assert pieces["world"] == ["Ġworld"]
    assert pieces["Vivendi"] == ["ĠViv", "end", "i"]
    assert "".join(pieces["naïve"]).replace("Ġ", "") == "naÃ¯ve"  # byte-level: ï is two bytes


def test_tiny_tokenizers_split_unseen_words_into_pieces(wordpiece_tokenizer, bpe_tokenizer):
    pieces, _, _ = _pieces(wordpiece_tokenizer, "The kings offered.")
    assert pieces["kings"] == ["king", "##s"]
    pieces, _, _ = _pieces(bpe_tokenizer, "The kings offered.")
    assert len(pieces["kings"]) > 1 and "".join(pieces["kings"]) == "Ġkings"


def test_sentencepiece_pieces_align(sentencepiece_tokenizer):
    pieces, _, _ = _pieces(sentencepiece_tokenizer, "The king walked to the castle")
    assert "".join(pieces["castle"]).lstrip("▁") == "castle"
    assert all(p for p in pieces.values())


def test_cased_wordpiece_keeps_case(tmp_path):
    from transformers import BertTokenizer

    from ..conftest import DATA

    cased = BertTokenizer(vocab=str(DATA / "wordpiece" / "vocab.txt"), do_lower_case=False)
    pieces, _, _ = _pieces(cased, "king King")
    assert pieces["king"] == ["king"]  # the vocabulary is lowercase: "King" is unknown to a cased model
    assert pieces["King"] == ["[UNK]"]


def test_long_sentence_is_split_into_windows_not_truncated(wordpiece_tokenizer):
    text = " ".join(f"word{i % 10} alpha" for i in range(60))  # ~180 pieces
    _, windows, chosen = _pieces(wordpiece_tokenizer, text, max_length=32, stride=8)
    assert len(windows) > 5
    assert all(len(w.ids) <= 32 for w in windows)
    assert (chosen >= 0).all()  # every occurrence found a window that holds it whole
    spans = word_spans(text)
    for k, (s, e) in enumerate(spans):
        lo, hi = windows[chosen[k]].span
        assert lo <= s and e <= hi
    # the last word lives only in the last window
    assert chosen[-1] == len(windows) - 1


def test_overlapping_windows_pick_the_one_with_more_context():
    a = Window(0, [0] * 4, np.array([0, 5, 10, 15]), np.array([4, 9, 14, 19]), np.ones(4, bool))
    b = Window(0, [0] * 4, np.array([10, 15, 20, 25]), np.array([14, 19, 24, 29]), np.ones(4, bool))
    chosen = choose_windows([a, b], np.array([0, 0, 0]), np.array([15, 10, 0]), np.array([19, 14, 4]))
    assert list(chosen) == [1, 0, 0]  # 15-19: margin 0 in a, 5 in b; 10-14: 5 in a, 0 in b


@pytest.mark.parametrize("fixture", ["wordpiece_tokenizer", "bpe_tokenizer", "sentencepiece_tokenizer"])
def test_windows_are_what_transformers_returns_with_overflow(fixture, request):
    tokenizer = request.getfixturevalue(fixture)
    texts = ["short one.", "A much longer sentence, " * 12 + "that needs several windows to be read whole.", ""]
    windows = make_windows(truncating_backend(tokenizer, 16, 4).encode_batch(texts))
    reference = tokenizer(texts, max_length=16, truncation=True, stride=4, return_overflowing_tokens=True,
                          return_offsets_mapping=True, return_special_tokens_mask=True)  # fmt: skip
    assert [w.sentence for w in windows] == reference["overflow_to_sample_mapping"]
    assert max(len(w.ids) for w in windows) == 16 and len(windows) > 4
    for window, ids, offsets, special in zip(
        windows, reference["input_ids"], reference["offset_mapping"], reference["special_tokens_mask"]
    ):
        assert window.ids == ids
        assert window.starts.tolist() == [s for s, _ in offsets] and window.ends.tolist() == [e for _, e in offsets]
        assert not window.content[np.array(special, dtype=bool)].any()


def _by_mask(windows, chosen, starts, ends):
    """Each occurrence's pieces by the overlap definition, one occurrence at a time."""
    masks = [piece_mask(windows[c], starts[k : k + 1], ends[k : k + 1])[0] for k, c in enumerate(chosen)]
    return [np.flatnonzero(m).tolist() for m in masks]


@pytest.mark.parametrize("fixture", ["wordpiece_tokenizer", "bpe_tokenizer", "sentencepiece_tokenizer"])
def test_pieces_found_by_binary_search_are_those_the_overlap_defines(fixture, request):
    tokenizer = request.getfixturevalue(fixture)
    texts = ["The kings offered naïve bids.", "A much longer sentence, " * 9 + "read in windows.", "", "x"]
    windows = make_windows(truncating_backend(tokenizer, 16, 4).encode_batch(texts))
    sentence, starts, ends = [], [], []
    for i, text in enumerate(texts):
        for s, e in [*word_spans(text), (0, len(text)), (1, 2)]:  # words, whole texts, parts of words
            sentence.append(i), starts.append(s), ends.append(e)
    sentence, starts, ends = np.array(sentence), np.array(starts), np.array(ends)
    chosen = choose_windows(windows, sentence, starts, ends)
    keep = chosen >= 0
    chosen, starts, ends = chosen[keep], starts[keep], ends[keep]
    positions, counts = align_pieces(windows, chosen, starts, ends)
    found = np.split(positions, np.cumsum(counts)[:-1])
    assert [f.tolist() for f in found] == _by_mask(windows, chosen, starts, ends)
    assert counts.sum() > len(chosen) and (counts == 0).any()  # split words, and an empty text's span


def test_a_window_with_offsets_out_of_order_is_aligned_by_the_mask():
    content = np.ones(4, bool)
    ordered = Window(0, [1, 2, 3, 4], np.array([0, 4, 8, 12]), np.array([3, 7, 11, 15]), content)
    shuffled = Window(1, [1, 2, 3, 4], np.array([8, 0, 12, 4]), np.array([11, 3, 15, 7]), content)
    chosen, starts, ends = np.array([0, 1, 1, 0]), np.array([4, 0, 4, 0]), np.array([11, 7, 15, 15])
    positions, counts = align_pieces([ordered, shuffled], chosen, starts, ends)
    found = np.split(positions, np.cumsum(counts)[:-1])
    assert [f.tolist() for f in found] == _by_mask([ordered, shuffled], chosen, starts, ends)
    assert [f.tolist() for f in found] == [[1, 2], [1, 3], [0, 2, 3], [0, 1, 2, 3]]


def test_padded_batch_holds_each_windows_ids_then_zeros():
    content = np.ones(3, bool)
    windows = [
        Window(0, [5, 6, 7], np.zeros(3), np.ones(3), content),
        Window(1, [9], np.zeros(1), np.ones(1), content[:1]),
    ]
    ids, real = pad_windows(windows)
    assert ids.tolist() == [[5, 6, 7], [9, 0, 0]]
    assert real.tolist() == [[True, True, True], [True, False, False]]


def _best_by_hand(windows, sentence, starts, ends):
    """The definition: of every window of the occurrence's sentence that holds it whole, the first with the
    largest margin on its nearer side."""
    chosen = []
    for s, a, b in zip(sentence, starts, ends):
        best, pick = -1, -1
        for i, w in enumerate(windows):
            lo, hi = w.span
            if w.sentence == s and lo <= a and b <= hi and min(a - lo, hi - b) > best:
                best, pick = min(a - lo, hi - b), i
        chosen.append(pick)
    return chosen


@pytest.mark.parametrize("shuffle", [False, True])
def test_the_best_centred_window_is_the_definitions_in_long_texts(wordpiece_tokenizer, shuffle):
    """Occurrences of many-window texts are matched to windows by binary search; windows whose spans do not
    move forward (``shuffle``: one window's offsets moved back) are compared one by one, as the definition."""
    rng = np.random.default_rng(0)
    texts = ["short one.", " ".join(f"word{i % 7} alpha beta" for i in range(90)), "x", "king queen " * 40]
    windows = make_windows(truncating_backend(wordpiece_tokenizer, 16, 4).encode_batch(texts))
    if shuffle:
        w = windows[3]
        windows[3] = Window(w.sentence, w.ids, w.starts - 100, w.ends - 100, w.content, w.fresh)
    sentence, starts, ends = [], [], []
    for i, text in enumerate(texts):
        for s, e in [*word_spans(text), *(sorted(rng.integers(0, len(text) + 1, 2)) for _ in range(40))]:
            sentence.append(i), starts.append(s), ends.append(e)
    sentence, starts, ends = np.array(sentence), np.array(starts), np.array(ends)
    chosen = choose_windows(windows, sentence, starts, ends)
    assert chosen.tolist() == _best_by_hand(windows, sentence, starts, ends)
    assert (chosen == -1).any() and len(set(chosen.tolist())) > 10
