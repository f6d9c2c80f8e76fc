import math

import numpy as np
import pytest

from distill.errors import ConfigError
from distill.evaluation import datasets
from distill.evaluation.datasets import (
    REGISTRY,
    AnalogyDataset,
    CategorizationDataset,
    RelationalDataset,
    SimilarityDataset,
    load_benchmark,
    load_similarity,
)
from distill.evaluation.metrics import (
    Oov,
    evaluate_analogy,
    evaluate_categorization,
    evaluate_relational,
    evaluate_similarity,
    purity,
)
from distill.paths import data_dir
from distill.vectors.keyed import to_keyed_vectors

GLOVE_4K = data_dir() / "vectors" / "glove.6B.50d.cs124-4k.txt"


def _need_data() -> None:
    if not (data_dir() / "similarity").is_dir():
        pytest.skip(f"{data_dir()} is missing: these tests need ../shared/data (or DISTILL_DATA)")


@pytest.mark.integration
def test_without_a_data_folder_the_shipped_copies_are_read_and_checked(tmp_path, monkeypatch):
    _need_data()
    shipped = tmp_path / "shipped"
    (shipped / "similarity").mkdir(parents=True)
    (shipped / "similarity" / "simlex999.tsv").write_bytes((data_dir() / "similarity" / "simlex999.tsv").read_bytes())
    (shipped / "similarity" / "men_natural.tsv").write_text("word1\tword2\tscore\nsun\tmoon\t9\n")
    monkeypatch.setattr(datasets, "PACKAGED", shipped)
    monkeypatch.setenv("DISTILL_DATA", str(tmp_path / "none"))
    simlex = load_benchmark("simlex999")
    assert isinstance(simlex, SimilarityDataset) and len(simlex.pairs) == 999
    assert datasets.available("simlex999") and datasets.available("men") and not datasets.available("rw")
    with pytest.raises(ConfigError, match="men_natural.tsv has sha256"):
        load_benchmark("men")
    with pytest.raises(ConfigError, match="rw.tsv not found .*distill does not ship it"):
        load_benchmark("rw")
    assert set(datasets.SHIPPED) <= {b.path for b in REGISTRY.values()}


def test_spearman_against_a_hand_computed_value():
    words = ["a", "b", "c", "d"]
    vectors = np.array([[1, 0], [1, 0.2], [0, 1], [1, 1]], dtype=np.float32)
    kv = to_keyed_vectors(words, vectors)
    data = SimilarityDataset("toy", (("a", "b"), ("a", "c"), ("a", "d"), ("A", "zz")), (3.0, 1.0, 2.0, 5.0))
    result = evaluate_similarity(kv, data)
    # cosines: a-b 0.981, a-c 0.0, a-d 0.707 -> ranks 3,1,2; gold 3,1,2 -> rho = 1
    assert result.score == pytest.approx(1.0)
    assert (result.n_total, result.n_covered) == (4, 3)
    swapped = SimilarityDataset("toy", data.pairs[:3], (1.0, 3.0, 2.0))
    # ranks 3,1,2 vs 1,3,2: d = (2, -2, 0), rho = 1 - 6*8 / (3*(9-1)) = -1
    assert evaluate_similarity(kv, swapped).score == pytest.approx(-1.0)


def test_similarity_paper_policy_gives_missing_words_the_mean_vector():
    # mean of a, b, c = (1/3, 1/3) -> direction (1, 1)/sqrt2; cos(a, mean) = 0.707
    kv = to_keyed_vectors(["a", "b", "c"], np.array([[1, 0], [0, 1], [0, 0]], dtype=np.float32))
    data = SimilarityDataset("toy", (("a", "b"), ("a", "zz"), ("a", "a")), (1.0, 2.0, 3.0))
    standard = evaluate_similarity(kv, data, oov="standard")
    paper = evaluate_similarity(kv, data, oov="paper")
    # standard scores (a,b)=0, (a,a)=1 against 1, 3 -> rho 1; paper adds (a, mean)=0.707 against 2 -> still 1
    assert standard.score == pytest.approx(1.0) and paper.score == pytest.approx(1.0)
    assert (paper.n_total, paper.n_covered, paper.oov) == (3, 2, "paper")
    reordered = SimilarityDataset("toy", data.pairs, (1.0, 3.0, 2.0))  # now the OOV pair ranks top in gold
    # cosines 0, 0.707, 1 against 1, 3, 2: ranks (1,2,3) vs (1,3,2) -> rho = 1 - 6*2/(3*8) = 0.5
    assert evaluate_similarity(kv, reordered, oov="paper").score == pytest.approx(0.5)


def test_no_covered_pair_is_an_error():
    kv = to_keyed_vectors(["a"], np.ones((1, 2), dtype=np.float32))
    with pytest.raises(ValueError, match="none of 1 pairs is in the vocabulary"):
        evaluate_similarity(kv, SimilarityDataset("toy", (("x", "y"),), (1.0,)))


def _royal_kv():
    words = ["man", "woman", "king", "queen", "apple"]
    vectors = np.array(
        [[1, 0, 0, 0.0], [1, 1, 0, 0.0], [1, 0, 1, 0.0], [1, 1, 1, 0.0], [0, 0, 0, 1.0]], dtype=np.float32
    )
    return to_keyed_vectors(words, vectors)


def test_analogy_finds_the_fourth_word_and_skips_questions_with_missing_words():
    kv = _royal_kv()
    data = AnalogyDataset(
        "toy",
        (("man", "woman", "king", "queen"), ("man", "king", "woman", "queen"), ("man", "woman", "king", "prince")),
        ("semantic", "semantic", "syntactic"),
    )
    for method in ("3cosadd", "3cosmul"):
        total, semantic, syntactic = evaluate_analogy(kv, data, method)
        assert (total.score, total.n_total, total.n_covered, total.method) == (1.0, 3, 2, method)
        assert (semantic.section, semantic.score) == ("semantic", 1.0)
        assert syntactic.n_covered == 0 and math.isnan(syntactic.score)
        paper = evaluate_analogy(kv, data, method, oov="paper")[0]
        assert paper.score == pytest.approx(2 / 3)  # the question with a missing answer is a miss
        # over all questions, the one not covered counts as wrong: 2 of 3, beside 2 of 2 covered
        assert (total.all_questions, semantic.all_questions, syntactic.all_questions) == (2 / 3, 1.0, 0.0)
        assert paper.all_questions == pytest.approx(paper.score)
    from distill.evaluation.report import _cell

    assert _cell(total) == "1.000 (2); 0.667 of all" and _cell(semantic) == "1.000 (2)"


def test_analogy_never_answers_a_question_word():
    # b - a + c is closest to c itself here; excluding question words leaves d
    words = ["a", "b", "c", "d"]
    vectors = np.array([[1, 0], [1, 0.1], [0, 1], [0.3, 1]], dtype=np.float32)
    kv = to_keyed_vectors(words, vectors)
    data = AnalogyDataset("toy", (("a", "b", "c", "d"),), ("all",))
    assert evaluate_analogy(kv, data)[0].score == 1.0
    with pytest.raises(ValueError, match="none of 1 questions"):  # d is not among the 3 most frequent words
        evaluate_analogy(kv, data, top_n=3)


def test_analogy_chunks_give_the_same_answers(rng):
    words = [f"w{i}" for i in range(50)]
    kv = to_keyed_vectors(words, rng.standard_normal((50, 8)).astype(np.float32))
    questions = tuple(tuple(rng.choice(words, 4, replace=False)) for _ in range(40))
    data = AnalogyDataset("toy", questions, ("all",) * 40)  # type: ignore[arg-type]
    for method in ("3cosadd", "3cosmul"):
        whole = evaluate_analogy(kv, data, method)[0].score
        assert evaluate_analogy(kv, data, method, chunk_bytes=1)[0].score == whole


def test_purity_by_hand():
    # cluster 0 holds a, a, b (2 right); cluster 1 holds b (1 right): 3 / 4
    assert purity(["a", "a", "b", "b"], np.array([0, 0, 0, 1])) == 0.75
    assert purity(["a", "b"], np.array([1, 1])) == 0.5


def test_categorization_of_separated_groups_is_pure(rng):
    centers = {"fruit": [10, 0, 0], "tool": [0, 10, 0], "bird": [0, 0, 10]}
    words, vectors, labels = [], [], []
    for category, center in centers.items():
        for i in range(5):
            words.append(f"{category}{i}")
            vectors.append(np.array(center) + rng.standard_normal(3) * 0.1)
            labels.append(category)
    kv = to_keyed_vectors(words, np.array(vectors, dtype=np.float32))
    data = CategorizationDataset("toy", (*words, "unknown"), (*labels, "fruit"))
    score = evaluate_categorization(kv, data)
    assert (score.score, score.n_total, score.n_covered) == (1.0, 16, 15)
    assert evaluate_categorization(kv, data, oov="paper").score == pytest.approx(15 / 16)


def test_relational_score_by_hand():
    # prototype offset a - b = (1, 0); pairs' offsets dotted with it: 3, 2, 1 -> same order as gold
    kv = to_keyed_vectors(
        ["a", "b", "p", "q", "r", "s", "t"],
        np.array([[1, 0], [0, 0.001], [1, 0], [0, 1], [1, 1], [0, 2], [0, 0]], dtype=np.float32) + 0.0,
    )
    data = RelationalDataset(
        "toy",
        prototypes={"1a": (("a", "b"),)},
        pairs={"1a": (("p", "q"), ("r", "s"), ("t", "p"), ("zz", "p"))},
        scores={"1a": (30.0, 10.0, -20.0, 0.0)},
    )
    score = evaluate_relational(kv, data)
    assert (score.score, score.n_total, score.n_covered) == (pytest.approx(1.0), 4, 3)


@pytest.mark.integration
def test_every_registered_benchmark_loads_with_its_published_size():
    _need_data()
    sizes = {
        "simlex999": 999,
        "men": 3000,
        "ws353": 353,
        "ws353_sim": 203,
        "ws353_rel": 252,
        "rw": 2034,
        "mturk287": 287,
        "google": 19544,
        "msr": 8000,
        "ap": 402,
        "bless": 200,
        "battig": 5231,
        "essli2008": 45,
    }
    classes = {"ap": 21, "bless": 17, "battig": 56, "essli2008": 9}
    for name in REGISTRY:
        data = load_benchmark(name)
        if isinstance(data, SimilarityDataset):
            assert len(data.pairs) == len(data.scores) == sizes[name]
        elif isinstance(data, AnalogyDataset):
            assert len(data.questions) == sizes[name]
        elif isinstance(data, CategorizationDataset):
            assert len(data.words) == sizes[name] and len(set(data.categories)) == classes[name]
        else:
            assert len(data.pairs) == 79 and sum(map(len, data.pairs.values())) == 3218
    google = load_benchmark("google")
    assert google.sections.count("semantic") == 8869 and google.sections.count("syntactic") == 10675
    assert google.questions[0] == ("Athens", "Greece", "Baghdad", "Iraq")


@pytest.mark.integration
def test_a_changed_benchmark_file_is_refused(tmp_path, monkeypatch):
    _need_data()
    monkeypatch.setattr(datasets, "PACKAGED", tmp_path / "no-shipped-copies")
    (tmp_path / "similarity").mkdir()
    original = (data_dir() / "similarity" / "simlex999.tsv").read_text()
    (tmp_path / "similarity" / "simlex999.tsv").write_text(original.replace("9.2", "9.3", 1))
    monkeypatch.setenv("DISTILL_DATA", str(tmp_path))
    with pytest.raises(ConfigError, match="simlex999.tsv has sha256 .* not the registry's"):
        load_benchmark("simlex999")
    with pytest.raises(ConfigError, match="men_natural.tsv not found in the data folder .*; set DISTILL_DATA"):
        load_benchmark("men")
    with pytest.raises(ConfigError, match="unknown benchmark 'simlex'"):
        load_benchmark("simlex")


def test_similarity_files_load(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("word1\tword2\tscore\nold\tnew\t1.58\n\nsmart\tintelligent\t9.2\n")
    data = load_similarity(path)
    assert data.pairs == (("old", "new"), ("smart", "intelligent")) and data.scores == (1.58, 9.2)
    path.write_text("word1\tword2\tscore\nold\tnew\n")
    with pytest.raises(ConfigError, match="line 2: expected word1<TAB>word2<TAB>score"):
        load_similarity(path)
    path.write_text("word1\tword2\tscore\nold\tnew\thigh\n")
    with pytest.raises(ConfigError, match="line 2: score 'high' is not a number"):
        load_similarity(path)


@pytest.mark.integration
def test_similarity_equals_gensim_evaluate_word_pairs():
    _need_data()
    from distill.vectors.reader import read_vectors

    kv = read_vectors(GLOVE_4K)
    for name in ("simlex999", "men", "ws353"):
        path = data_dir() / REGISTRY[name].path
        _, gensim_rho, oov_ratio = kv.evaluate_word_pairs(str(path), delimiter="\t")  # skips the header line
        ours = evaluate_similarity(kv, load_benchmark(name))
        assert ours.score == pytest.approx(gensim_rho.statistic, abs=1e-9)
        assert ours.n_covered == round(ours.n_total * (1 - oov_ratio / 100))


@pytest.mark.integration
def test_google_accuracy_equals_gensim_evaluate_word_analogies():
    _need_data()
    from distill.vectors.reader import read_vectors

    kv = read_vectors(GLOVE_4K)
    questions = data_dir() / "analogy" / "original" / "google" / "questions-words.txt"
    for top_n in (1000, None):
        gensim_score, sections = kv.evaluate_word_analogies(str(questions), restrict_vocab=top_n or 10**6)
        total, semantic, syntactic = evaluate_analogy(kv, load_benchmark("google"), top_n=top_n)
        assert total.score == pytest.approx(gensim_score, abs=1e-12)
        assert total.n_covered == len(sections[-1]["correct"]) + len(sections[-1]["incorrect"])
        gensim_semantic = [s for s in sections[:-1] if not s["section"].startswith("gram")]
        correct = sum(len(s["correct"]) for s in gensim_semantic)
        assert semantic.score * semantic.n_covered == pytest.approx(correct)
        assert semantic.n_covered + syntactic.n_covered == total.n_covered


def test_nothing_covered_is_a_score_of_nothing_but_a_real_error_surfaces(monkeypatch):
    import math

    import distill.evaluation.report as report
    from distill.evaluation.datasets import SimilarityDataset

    kv = to_keyed_vectors(["a", "b"], np.eye(2, dtype=np.float32))
    data = {"pairs": SimilarityDataset("pairs", (("x", "y"), ("y", "z")), (1.0, 2.0))}
    options = report.EvalOptions(benchmarks=("pairs",), oov=(Oov.STANDARD,))
    (score,) = report.score_vectors(kv, options, data)
    assert math.isnan(score.score) and score.n_covered == 0

    def broken(*args, **kwargs):
        raise ValueError("a bug, not a missing word")

    monkeypatch.setattr(report, "evaluate_similarity", broken)
    with pytest.raises(ValueError, match="a bug"):
        report.score_vectors(kv, options, data)


def test_the_scores_plot_has_every_benchmark_asked_for_with_its_metric_and_items_scored(monkeypatch, tmp_path):
    from distill.evaluation import plots
    from distill.evaluation.metrics import Score
    from distill.evaluation.report import Row

    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figures.append(fig) or path)
    ours = [Score("simlex999", "spearman", 0.5, 999, 44), Score("google", "accuracy", 0.3, 100, 50, method="3cosadd"),
            Score("ap", "none", math.nan, 0, 0)]  # fmt: skip
    theirs = [Score("simlex999", "spearman", 0.4, 999, 321),
              Score("google", "accuracy", 0.6, 100, 90, method="3cosadd"),
              Score("ap", "purity", 0.7, 402, 402)]  # fmt: skip
    rows = [Row("ours", "a.txt", {}, False, ours), Row("glove", "g.txt", {}, True, theirs)]
    asked = [("simlex999", "all", "SimLex"), ("google", "all", "Google"), ("ap", "all", "AP"), ("rw", "all", "RW")]
    plots.plot_scores(rows, tmp_path / "scores.png", asked)
    axes = [ax for ax in figures[0].axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == ["SimLex (999 items)", "Google (100 items)", "AP (402 items)"]
    assert [ax.get_xlabel() for ax in axes] == ["Spearman ρ", "accuracy (3CosAdd)", "cluster purity"]
    assert [t.get_text() for t in axes[0].texts] == ["0.50 (n=44)", "0.40 (n=321)"]
    assert [t.get_text() for t in axes[2].texts] == ["none scored", "0.70 (n=402)"]
    for ax in axes:  # room beyond 1 for the notes, with no tick where no score can be
        assert max(ax.get_xticks()) == 1.0 < ax.get_xlim()[1]
    named = [[t.get_text() for t in ax.get_yticklabels() if t.get_visible()] for ax in axes]
    assert named == [["ours", "glove"], [], []]  # the sets named once, at the left of the row
    title = figures[0].get_suptitle().replace("\n", " ")
    assert "standard: items with a missing word are skipped, coverage shown" in title


def test_a_benchmark_no_set_covers_is_said_once_with_the_number_of_sets(caplog, monkeypatch):
    import distill.evaluation.report as report
    from distill.evaluation.vectors import Vectors

    sets = [Vectors(f"set{i}", to_keyed_vectors(["x", f"y{i}"], np.eye(2, dtype=np.float32)), f"s{i}.txt")
            for i in range(3)]  # fmt: skip
    toy = SimilarityDataset("toy", (("a", "b"), ("c", "d")), (1.0, 2.0))
    monkeypatch.setattr(report, "load_benchmark", lambda name: toy)
    with caplog.at_level("WARNING"):
        rows = report.evaluate_rows(sets, report.EvalOptions(benchmarks=("toy",), oov=(Oov.STANDARD,)), progress=False)
    lines = [r.getMessage() for r in caplog.records if "toy" in r.getMessage()]
    assert len(rows) == 3 and len(lines) == 1 and "of 3 of 3 sets of vectors (set0 ...)" in lines[0]


def test_a_report_of_words_read_alone_heads_each_benchmark_with_its_size_and_leaves_out_the_analogies():
    from distill.evaluation.metrics import Score
    from distill.evaluation.report import EvalOptions, Row, markdown

    scores = [Score("ws353", "spearman", 0.7, 353, 353, "alone"), Score("google", "none", math.nan, 0, 0, "alone")]
    options = EvalOptions(benchmarks=("ws353", "google"), oov=(Oov.ALONE,))
    text = markdown([Row("set", "set.txt", {}, scores=scores)], options)
    assert "| vectors | WS353 /353 |\n" in text and "| set | 0.700 (353) |\n" in text
    assert "Google" not in text.split("## OOV policy `alone`")[1]
    assert "## OOV policy `alone`\n" in text  # no analogies' method named where none is scored


def test_the_plots_show_the_first_policy_asked_for(monkeypatch, tmp_path):
    from distill.evaluation import plots, report
    from distill.evaluation.metrics import Score

    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figures.append(fig) or path)
    rows = [report.Row("set", "set.txt", {}, scores=[Score("ws353", "spearman", 0.7, 353, 353, "alone")])]
    report.write_report(rows, report.EvalOptions(benchmarks=("ws353",), oov=(Oov.ALONE,)), tmp_path)
    (figure,) = figures
    assert "OOV policy alone" in figure.get_suptitle()
    assert [t.get_text() for t in figure.axes[0].texts] == ["0.70 (n=353)"]  # not an empty panel of standard's


def test_a_plot_of_one_benchmark_is_one_panel_wide(tmp_path):
    from matplotlib.image import imread

    from distill.evaluation.metrics import Score
    from distill.evaluation.plots import plot_scores
    from distill.evaluation.report import Row

    rows = [Row("set", "set.txt", {}, scores=[Score("ws353", "spearman", 0.7, 353, 353)])]
    image = imread(plot_scores(rows, tmp_path / "scores.png", [("ws353", "all", "WS353")]))
    assert image.shape[1] < 2 * 3.2 * 110  # one panel (3.2 inches at 110 dpi) and its labels, not three panels


def test_each_oov_policy_is_described_in_the_same_words_by_help_report_and_plot(monkeypatch, tmp_path):
    import re

    from typer.testing import CliRunner

    import distill.evaluation.plots as plots
    from distill.cli import app
    from distill.evaluation.metrics import Score
    from distill.evaluation.report import EvalOptions, Row, markdown

    help_text = " ".join(re.sub(r"[│\s]+", " ", CliRunner().invoke(app, ["evaluate", "--help"]).output).split())
    rows = [Row("set", "set.txt", {}, scores=[Score("ws353", "spearman", 0.7, 353, 353, p.value) for p in Oov])]
    legend = markdown(rows, EvalOptions(benchmarks=("ws353",), oov=tuple(Oov)))
    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figures.append(fig) or path)
    for policy in Oov:
        plots.plot_scores(rows, tmp_path / "scores.png", [("ws353", "all", "WS353")], policy)
        title = figures[-1].get_suptitle().replace("\n", " ")
        said = f"{policy.value}: {policy.description}"
        assert said in help_text and f"`{policy.value}`: {policy.description}" in legend and said in title
    assert "pieces: a missing word gets the mean of its pieces' vectors" in help_text
