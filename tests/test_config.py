from pathlib import Path
from types import SimpleNamespace

import pytest

from distill.config import (
    CAUSAL_TEMPLATE,
    ENCODER_TEMPLATE,
    TEMPLATES,
    Layers,
    Pooling,
    RunConfig,
    Template,
    parse_poolings,
)
from distill.errors import ConfigError
from distill.paths import resolve_model


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("1", (1,)), ("3,1", (1, 3)), ("0-3", (0, 1, 2, 3)), ("all", (0, 1, 2, 3, 4, 5, 6)), (2, (2,)), ([0, 6], (0, 6))],
)
def test_parse_layers(spec, expected):
    assert Layers.parse(spec).resolve(n_layers=6) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("7", "layer 7 is out of range.*0..6"),
        ("x", "cannot read layer spec"),
        ("3-1", "runs backwards"),
        ("-1", "cannot read|out of range"),
    ],
)
def test_parse_layers_errors(spec, message):
    with pytest.raises(ConfigError, match=message):
        Layers.parse(spec).resolve(n_layers=6)


def test_poolings():
    assert parse_poolings("pc,mean") == (Pooling.PC, Pooling.MEAN)
    with pytest.raises(ConfigError, match="unknown pooling 'max'; use one or more of: pc, mean"):
        parse_poolings("max")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"min_count": 0}, "--min-count must be a positive integer"),
        ({"device": "tpu"}, "unknown device 'tpu'"),
        ({"dtype": "float16", "device": "cpu"}, "float16 is for GPUs"),
        ({"store": "ssd"}, "unknown store 'ssd'; use one of: auto, memory, disk"),
        ({"corpus": ("/nonexistent.txt",)}, "corpus file /nonexistent.txt does not exist"),
        ({"layers": "a-b"}, "cannot read layer spec"),
        ({"max_length": 64, "stride": 40}, "stride 40 must be under half"),
        ({"teacher_bags": 10}, "--teacher-bags adds to the teacher's embeddings: add --teacher"),
        ({"teacher_bags": -1, "teacher": True}, "--teacher-bags must be 0 \\(off\\) or more"),
        ({"teacher_bags": 10**11, "teacher": True}, "--teacher-bags 100,000,000,000 is over 5,000,000"),
        ({"teacher_texts": __file__}, "--teacher-texts adds to the teacher's embeddings: add --teacher"),
        ({"teacher_texts": "/nonexistent.txt", "teacher": True}, "--teacher-texts file /nonexistent.txt does not"),
        ({"alone_weight": 0.5}, "--alone-weight adds each word's reading alone to the recommended set: add --best"),
        ({"language_words": 100}, "--language-words adds words to the recommended set: add --best"),
        ({"batch_size": 8, "batch_tokens": 1000}, "--batch-size and --batch-tokens both size the batches"),
        ({"shuffle_buffer": 100}, "--shuffle-buffer sizes the shuffle of --sampling greedy"),
        ({"workers": 2}, "--workers sets the encoder actors of --engine ray"),
        ({"context_share": -2}, "--context-share must be between -1 and 10, not -2"),
    ],
)
def test_bad_options_fail_before_any_model_loads(options, message):
    with pytest.raises(ConfigError, match=message):
        RunConfig(**options)


def test_a_batch_size_given_makes_batches_of_sentences_on_a_gpu_too():
    from distill.config import GPU_BATCH_TOKENS, token_budget

    gpu = SimpleNamespace(type="cuda")
    assert token_budget(RunConfig().batch_tokens, gpu) == GPU_BATCH_TOKENS
    assert token_budget(RunConfig(batch_size=8).batch_tokens, gpu) is None
    assert token_budget(RunConfig(batch_tokens=4096).batch_tokens, gpu) == 4096


def test_config_json_round_trip():
    config = RunConfig(layers="0-2", pooling=("mean", "pc"), max_vocab=10)
    assert RunConfig.from_json(config.to_json()) == config


def test_aliases(tmp_path, monkeypatch):
    from distill.config import DEFAULT_MODEL
    from distill.paths import default_out

    assert resolve_model("bert") == "bert-base-cased"
    assert resolve_model("some/model") == "some/model"
    monkeypatch.setenv("DISTILL_MODELS", str(tmp_path))
    assert resolve_model("minilm") == resolve_model(DEFAULT_MODEL) == "sentence-transformers/all-MiniLM-L6-v2"
    (tmp_path / "all-MiniLM-L6-v2").mkdir()
    (tmp_path / "all-MiniLM-L6-v2" / "config.json").write_text("{}")  # a copy of the hub model serves it
    assert resolve_model("minilm") == resolve_model(DEFAULT_MODEL) == str(tmp_path / "all-MiniLM-L6-v2")
    assert default_out(DEFAULT_MODEL, ()) == default_out("minilm", ()) == Path("outputs/minilm-sts")


def test_gguf_weights_come_from_the_cache_with_their_sha256(tmp_path, monkeypatch):
    from distill.paths import GGUF_WEIGHTS, default_gguf

    monkeypatch.setenv("DISTILL_CACHE", str(tmp_path))
    assert default_gguf("minilm") is None
    with pytest.raises(ConfigError, match="make smollm2-weights"):
        default_gguf("smollm2")
    (tmp_path / GGUF_WEIGHTS["smollm2"][0]).write_bytes(b"not the weights")
    with pytest.raises(ConfigError, match="has sha256 .* fetch it again"):
        default_gguf("smollm2")


def test_the_mpnet_alias_lives_in_the_cache_folder(tmp_path, monkeypatch):
    from distill.errors import ConfigError
    from distill.paths import resolve_model

    monkeypatch.setenv("DISTILL_CACHE", str(tmp_path))
    with pytest.raises(ConfigError, match="make mpnet-weights"):
        resolve_model("mpnet")
    (tmp_path / "all-mpnet-base-v2").mkdir()
    (tmp_path / "all-mpnet-base-v2" / "config.json").write_text("{}")
    assert resolve_model("mpnet") == str(tmp_path / "all-mpnet-base-v2")


def test_layers_are_parsed_once_and_spelled_back_one_way():
    assert (
        str(Layers.parse("3,1,2")) == "1-3" and str(Layers.parse([0, 2])) == "0,2" and str(Layers.parse("ALL")) == "all"
    )
    assert RunConfig(layers="1,3").layers == Layers((1, 3))
    assert RunConfig.from_json(RunConfig(layers="0-3").to_json()).layers == Layers((0, 1, 2, 3))
    assert Layers.parse("all").resolve(2) == (0, 1, 2)


def test_the_python_api_takes_every_run_option_with_its_default_and_its_help():
    import dataclasses
    import inspect

    import distill

    parameters = inspect.signature(distill.run).parameters
    fields = dataclasses.fields(RunConfig)
    assert list(parameters) == [f.name for f in fields]
    assert RunConfig(**{name: p.default for name, p in parameters.items()}) == RunConfig()
    assert all(f"{f.name}: {f.metadata['help']}" in distill.run.__doc__ for f in fields)


def test_alone_templates_fill_the_word_in_and_are_spelled_back_as_given():
    text, at = Template.parse("word").fill("queen")
    assert (text, at) == ('the word "queen"', 10) and text[at : at + 5] == "queen"
    assert Template.parse("Meaning").text == TEMPLATES["meaning"] and str(Template.parse("meaning")) == "meaning"
    free = Template.parse("{word}, as in a dictionary {x}")  # free text; other braces are kept as they are
    assert free.fill("cat") == ("cat, as in a dictionary {x}", 0) and str(free) == "{word}, as in a dictionary {x}"
    assert Template.parse("bare").fill("cat") == ("cat", 0)
    assert RunConfig.from_json(RunConfig(alone_template="a {word}").to_json()).alone_template == Template("a {word}")
    assert RunConfig().to_json()["alone_template"] is None  # the model's kind chooses it: for_model


def test_the_alone_template_defaults_by_the_models_kind_and_a_given_one_is_kept():
    encoder, causal = RunConfig().for_model(512, False), RunConfig().for_model(512, False, causal=True)
    assert encoder.template == Template.parse(ENCODER_TEMPLATE) == Template.parse("word")
    assert causal.template == Template.parse(CAUSAL_TEMPLATE) == Template.parse("concept")
    assert encoder.to_json()["alone_template"] == "word" and causal.to_json()["alone_template"] == "concept"
    given = RunConfig(alone_template="meaning")
    assert given.for_model(512, False, causal=True).template == given.template == Template.parse("meaning")
    with pytest.raises(RuntimeError, match="for_model"):
        _ = RunConfig().template


@pytest.mark.parametrize("spec", ["no placeholder", "{word} and {word}", "", "{Word}"])
def test_an_alone_template_without_one_word_placeholder_is_refused(spec):
    with pytest.raises(ConfigError, match="must hold \\{word\\} once"):
        RunConfig(alone_template=spec)


def test_every_option_enum_prints_as_its_value():
    import distill.cli.run
    import distill.vectors.faiss_index  # noqa: F401  (each module defining a Choice)
    from distill.choices import Choice

    def subclasses(cls: type) -> list[type]:
        return [c for s in cls.__subclasses__() for c in (s, *subclasses(s))]

    enums = subclasses(Choice)
    assert {c.__name__ for c in enums} >= {"Pooling", "Oov", "DType", "IndexKind", "WeightingChoice"}
    for enum_class in enums:
        for member in enum_class:
            assert f"{member}" == str(member) == member.value and f"{member:>12}" == f"{member.value:>12}"
    assert f"pooling {Pooling.MEAN}" == "pooling mean"


def test_options_that_need_wordfreq_say_so_before_any_model_loads(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wordfreq" else real(name, *a))
    with pytest.raises(
        ConfigError, match=r'--teacher-bags \(0: off\) needs the package wordfreq: pip install "distill\[lexicon\]"'
    ):
        RunConfig(teacher=True, teacher_bags=5)
    with pytest.raises(ConfigError, match="--language-words needs the package wordfreq"):
        RunConfig(best=True, language_words=5)
    RunConfig(teacher=True)  # no bags: no wordfreq needed


def test_a_dtype_is_refused_with_the_choices_of_its_use():
    from distill.config import EXPORT_DTYPES, STORE_DTYPES, DType, check_dtype

    assert check_dtype("int8", EXPORT_DTYPES, "--dtype") is DType.INT8
    with pytest.raises(ConfigError, match=r"^unknown dtype 'int4'; use one of: float32, float16, int8$"):
        check_dtype("int4", EXPORT_DTYPES, "--dtype")
    with pytest.raises(ConfigError, match=r"^--store-dtype int8 is not available; use one of: auto, float32, float16$"):
        check_dtype("int8", STORE_DTYPES, "--store-dtype")


def test_one_corpus_path_given_alone_is_one_input():
    from .conftest import TINY_CORPUS

    assert RunConfig(corpus=str(TINY_CORPUS)).corpus == (str(TINY_CORPUS),)
    assert RunConfig(corpus=Path(TINY_CORPUS)).corpus == (str(TINY_CORPUS),)  # type: ignore[arg-type]
    assert RunConfig(corpus=[TINY_CORPUS, str(TINY_CORPUS)]).corpus == (str(TINY_CORPUS),) * 2  # type: ignore[list-item]
