"""``distill run`` and the commands on a finished run: neighbors, export, derive."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from distill.choices import Choice
from distill.cli.app import ProgressOpt, VerboseOpt, app, setup_logging, user_errors
from distill.cli.options import config_from, parameters, with_parameters
from distill.config import DEFAULT_MODEL, EXPORT_DTYPES, TEMPLATES, AlonePool, DType, Oov, Pooling, check_dtype
from distill.derived import DerivePooling
from distill.errors import ConfigError
from distill.serve.compress import Scale
from distill.tune.options import MODEL_BAG_TOPICS, MODEL_BAGS, TuneOptions
from distill.vectors.faiss_index import IndexKind
from distill.vectors.postprocess import Combine


class WeightingChoice(Choice):
    """--weighting of distill export."""

    AUTO = "auto"
    NONE = "none"
    SIF = "sif"
    USIF = "usif"
    ZIPF = "zipf"


SOURCE_NOTE = {"pieces": " (from its pieces)", "alone": " (read alone by the model)"}

SetOpt = Annotated[
    Optional[str],
    typer.Option(
        "--set",
        help="A run folder's vector set: best (the recommended set), layer1.pc, layers4-6.mean ... "
        "Default: best when the run has it, else its first layer's.",
    ),
]
LayerOpt = Annotated[
    Optional[int],
    typer.Option("--layers", help="Or one layer of a run folder, numbered as distill run's (with --pooling)."),
]
#: ``--layer``, the old spelling of ``--layers`` here, kept hidden for one release.
OldLayerOpt = Annotated[Optional[int], typer.Option("--layer", hidden=True)]
PoolingOpt = Annotated[Optional[Pooling], typer.Option(help="Pooling of --layers (default: the run's first).")]


@app.command()
@with_parameters(parameters())
def run(progress: ProgressOpt = True, verbose: VerboseOpt = False, **options: Any) -> None:
    """Distil static vectors: word2vec .txt/.bin, a FAISS index and manifest.json per layer and pooling."""
    from distill.pipeline import run_pipeline, summary

    setup_logging(verbose, progress)
    with user_errors():
        result = run_pipeline(config_from(options, progress=progress))
    typer.echo(summary(result))


@app.command()
def neighbors(
    vectors: Annotated[Path, typer.Argument(help="A .txt/.bin vector file, or a run folder.")],
    words: Annotated[list[str], typer.Argument(help="Query words.")],
    k: Annotated[int, typer.Option("-k", min=1, help="Neighbours per word.")] = 10,
    vector_set: SetOpt = None,
    layer: LayerOpt = None,
    old_layer: OldLayerOpt = None,
    pooling: PoolingOpt = None,
    index: Annotated[
        IndexKind,
        typer.Option(help="FAISS index: flat (exact), hnsw (graph) or ivfpq (compressed); built once, kept beside."),
    ] = IndexKind.FLAT,
    oov: Annotated[
        str,
        typer.Option(
            help=f"A run folder's words outside the vocabulary: pieces ({Oov.PIECES.description}) "
            f"or alone ({Oov.ALONE.description}; loads the model)."
        ),
    ] = Oov.PIECES.value,
) -> None:
    """Nearest neighbours by cosine similarity, searched in a FAISS index."""
    setup_logging(verbose=False)  # before a model loads: no Hugging Face bars or warnings off a terminal
    from distill.serve.search import Searcher

    with user_errors():
        if not all(word.strip() for word in words):
            raise ConfigError("a query word is empty (or only white space); give the words to look up")
        layer = layer if old_layer is None else old_layer
        searcher = Searcher.open(vectors, layer, pooling and pooling.value, index, vector_set, oov)
        found = searcher.neighbors(words, k)
    for word, hits in zip(words, found):
        if hits is None:
            hint = "" if searcher.fallback is not None else " (distill run --pieces gives OOV words a vector)"
            typer.echo(f"{word}: not in the vocabulary{hint}", err=True)
            continue
        source = SOURCE_NOTE.get(searcher.vector(word)[1], "")
        listed = ", ".join(f"{w} {s:.3f}" for w, s in hits) or "no other word in the vectors"
        typer.echo(f"{word}{source}: {listed}")


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="A distill run folder.")],
    format: Annotated[
        str,
        typer.Option(help="word2vec, kv (gensim), model2vec, sentence-transformers, npy, projector; comma-separated."),
    ] = "kv,model2vec,sentence-transformers,npy",
    vector_set: SetOpt = None,
    layer: LayerOpt = None,
    old_layer: OldLayerOpt = None,
    pooling: PoolingOpt = None,
    dtype: Annotated[
        str, typer.Option(help="Numbers stored: float32, float16 or int8 (int8 keeps a float32 scale).")
    ] = DType.FLOAT32.value,
    int8_scale: Annotated[
        Scale,
        typer.Option(
            help="int8 scale per vector, per dimension or for the whole table (a model2vec folder keeps "
            "model2vec's own int8: one scale for its table)."
        ),
    ] = Scale.VECTOR,
    dims: Annotated[Optional[int], typer.Option(help="PCA of the vocabulary to this many dimensions.")] = None,
    top_words: Annotated[
        Optional[int],
        typer.Option(
            help="Keep only the N most frequent words (in a model2vec or sentence-transformers folder, a "
            "word left out that is one of the model's pieces keeps its vector as that piece)."
        ),
    ] = None,
    weighting: Annotated[
        WeightingChoice,
        typer.Option(
            help="Word weights baked into the vectors for sentence means: sif (a/(a+p(w)) from the run's counts, "
            "over unit vectors), usif, zipf (model2vec's, from the rank), none, or auto (sif; none for a set "
            "distill tune made)."
        ),
    ] = WeightingChoice.AUTO,
    push_to_hub: Annotated[
        Optional[str],
        typer.Option(
            help="Also upload the model2vec or sentence-transformers folder to this Hugging Face hub repository, "
            "with its model card."
        ),
    ] = None,
    out: Annotated[
        Optional[str],
        typer.Option(
            help="Output folder. Default: RUN_DIR/export. With one folder format (model2vec, "
            "sentence-transformers, npy), OUT is the folder the loader reads."
        ),
    ] = None,
) -> None:
    """Write the vectors for serving: gensim .kv, model2vec and sentence-transformers folders, .npy + vocab."""
    setup_logging(verbose=False)  # before a model loads: no Hugging Face bars or warnings off a terminal
    from distill.serve.export import export_run, parse_formats

    with user_errors():
        layer = layer if old_layer is None else old_layer
        formats = parse_formats(format)
        if push_to_hub:
            from distill.serve.hub import check_push

            check_push(push_to_hub, formats)
        written = export_run(run_dir, vector_set=vector_set, layer=layer, pooling=pooling and pooling.value,
                             formats=formats, out=out,
                             dtype=dtype, scale=int8_scale, dims=dims, top_words=top_words,
                             weighting=weighting.value)  # fmt: skip
    for path, size in written:
        typer.echo(f"{size / 1e6:8.2f} MB  {path}")
    if push_to_hub:
        from distill.serve.card import renamed
        from distill.serve.hub import push_folder

        with user_errors():
            for path, _ in written:
                if (path / "README.md").is_file():  # a model2vec or sentence-transformers folder: its card
                    card = renamed((path / "README.md").read_text(encoding="utf-8"), path.name, push_to_hub)
                    typer.echo(f"pushed {path} to {push_folder(path, push_to_hub, card)}")


@app.command()
def derive(
    run_dir: Annotated[Path, typer.Argument(help="A finished distill run folder.")],
    layers: Annotated[str, typer.Option(help="Layers to combine: 1, 1-6, 0,2,4 or all.")] = "1",
    pooling: Annotated[
        DerivePooling, typer.Option(help="pc, mean, or pc+mean (the sum of both, unit-normalised).")
    ] = DerivePooling.PC,
    combine: Annotated[Combine, typer.Option(help="Several layers: mean of unit vectors, or concat.")] = Combine.MEAN,
    remove_top: Annotated[
        Optional[int],
        typer.Option(
            help="All-but-the-top: remove the vocabulary mean and its D top principal directions (0: mean only)."
        ),
    ] = None,
    whiten: Annotated[bool, typer.Option(help="PCA-whiten the vocabulary.")] = False,
    alone_weight: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=100.0,
            help="Add W times each word's reading alone by the run's model (unit, in the same layers) to its unit "
            "vector (loads the model; as distill run --alone-weight). 0: no model runs.",
        ),
    ] = 0.0,
    alone: Annotated[Optional[float], typer.Option(min=0.0, max=100.0, hidden=True)] = None,  # its old name
    language_words: Annotated[
        int,
        typer.Option(
            min=0,
            help="Also add the words the set lacks among the N most frequent of English (wordfreq), each read alone "
            "by the run's model (see distill run --language-words). 0: off.",
        ),
    ] = 0,
    alone_template: Annotated[
        Optional[str],
        typer.Option(
            help="The prompt those words are read alone in: a built-in name ("
            + ", ".join(TEMPLATES)
            + ") or text holding {word} once. Default: the run's own (its --alone-template). Another prompt "
            "names the set after it (layers4-6.mean.alone0.25.word).",
        ),
    ] = None,
    alone_pool: Annotated[
        str,
        typer.Option(
            help="What --alone-weight adds: the reading of the word's own pieces (pieces), or the sum of that and "
            "the whole prompt's reading (both; see distill run --alone-pool). Both names the set after it "
            "(layers4-6.mean.alone1.both).",
        ),
    ] = AlonePool.PIECES.value,
    progress: ProgressOpt = True,
    verbose: VerboseOpt = False,
) -> None:
    """Derive a better set from a run's layer files: combined layers, pc+mean, all-but-the-top, words read alone."""
    setup_logging(verbose, progress)  # before a model loads: no Hugging Face bars or warnings off a terminal
    from distill.config import Layers, Template, parse_alone_pool
    from distill.derived import Recipe
    from distill.derived import derive as derive_set

    with user_errors():
        weight = alone_weight if alone is None else alone
        prompt = None if alone_template is None else Template.parse(alone_template)
        pool = parse_alone_pool(alone_pool)
        recipe = Recipe(Layers.parse(layers), pooling, combine, remove_top, whiten, weight, language_words, prompt,
                        pool)  # fmt: skip
        name, kv = derive_set(run_dir, recipe, progress)
    typer.echo(f"wrote {run_dir}/{name}.txt, .bin, .faiss ({len(kv.index_to_key):,} words, {kv.vector_size} dims)")


@app.command(short_help="Train a set toward the teacher's sentence embeddings the run kept; writes SET.tuned.")
def tune(
    run_dir: Annotated[Path, typer.Argument(help="A run folder distilled with --teacher.")],
    vector_set: SetOpt = None,
    epochs: Annotated[int, typer.Option(min=1, help="At most this many passes over the sentences.")] = 30,
    learning_rate: Annotated[float, typer.Option(help="Adam's step size.")] = 1e-3,
    batch_size: Annotated[int, typer.Option(min=1, help="Sentences per step.")] = 256,
    blend: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of the trained change kept (1: the trained vectors).")
    ] = TuneOptions.blend,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the held-out split and the order.")] = 0,
    loss: Annotated[
        str,
        typer.Option(
            help="What is trained down: cosine (each sentence's mean toward its teacher embedding), mse (the "
            "distance to it, at the table's scale), contrastive (nearer its own embedding than the batch's others) "
            "or relational (the batch's cosines toward the teacher's)."
        ),
    ] = TuneOptions.loss,
    shared_map: Annotated[
        bool,
        typer.Option(
            help="Also train one linear map applied to every row, so that words no tuning sentence holds move with "
            "the rest (--no-shared-map: only the rows the sentences hold change)."
        ),
    ] = TuneOptions.shared_map,
    bags: Annotated[
        bool,
        typer.Option(
            help="Also train on the bags of words the run kept (distill run --teacher-bags); --no-bags: on its "
            "corpus sentences alone."
        ),
    ] = TuneOptions.bags,
    recommend: Annotated[
        bool,
        typer.Option(
            "--recommend", help="Make the tuned set the run's recommended set (what --set best, export and load pick)."
        ),
    ] = False,
    device: Annotated[
        str,
        typer.Option(
            help="Where the table trains: auto (a CUDA GPU when there is one, else the CPU), cpu or cuda[:N]."
        ),
    ] = "auto",
    progress: ProgressOpt = True,
    verbose: VerboseOpt = False,
) -> None:
    """Train a set toward the teacher: each sentence's mean word vector should point where the teacher's
    embedding of it points (the bags of words of --teacher-bags too, never held out). Writes the set SET.tuned
    into the run (export it like any other set)."""
    from distill.tune.train import tune_run, tuning_device

    setup_logging(verbose, progress)
    with user_errors():
        tuning_device(device)  # a device this machine lacks is an error before the tables load
        options = TuneOptions(epochs=epochs, learning_rate=learning_rate, batch_size=batch_size, blend=blend, seed=seed,
                              loss=loss, shared_map=shared_map, bags=bags)  # fmt: skip
        name, kv, result = tune_run(
            run_dir, vector_set, options=options, progress=progress, recommend=recommend, device=device
        )
    best = result.history[result.best_epoch]
    targets = f"{result.sentences - result.bags:,} sentences" + (f" and {result.bags:,} bags" if result.bags else "")
    typer.echo(
        f"wrote {run_dir}/{name}.txt, .bin, .faiss: {len(kv.index_to_key):,} words tuned on {targets}"
        f"; held-out {loss} loss {result.history[0]['held_out']:.4f} -> {best['held_out']:.4f} "
        f"(epoch {result.best_epoch})"
    )


ContextShareOpt = Annotated[
    float,
    typer.Option(
        min=-1.0,
        max=10.0,
        help="Add this share of each occurrence's sentence to its vector (see distill run --help; 0: off).",
    ),
]
TeacherDeviceOpt = Annotated[
    str,
    typer.Option(
        help="Where the teacher runs: auto (cuda, then mps, then cpu), cpu, cuda, cuda:N or mps; the tuning runs "
        "there too when it is a CUDA GPU."
    ),
]


@app.command(
    short_help="The production model in one command: distil, tune, export model2vec and sentence-transformers, score."
)
def model(
    corpus: Annotated[
        Optional[list[str]], typer.Option(help="Corpus file(s) or folders. Default: the STS sentences.")
    ] = None,
    out: Annotated[
        Optional[str], typer.Option(help="Folder of the run; the models go to OUT/model2vec and OUT/st.")
    ] = None,
    teacher_model: Annotated[str, typer.Option("--model", help="The teacher, as for distill run.")] = DEFAULT_MODEL,
    tune_epochs: Annotated[int, typer.Option(min=0, help="Tuning epochs at most (0: no tuning).")] = 30,
    dtype: Annotated[
        str, typer.Option(help="Numbers the model2vec folder stores: float32, float16 or int8 (one scale for all).")
    ] = DType.FLOAT32.value,
    dims: Annotated[Optional[int], typer.Option(min=1, help="PCA of the vocabulary to this many dimensions.")] = None,
    top_words: Annotated[
        Optional[int],
        typer.Option(
            min=1,
            help="Keep only the N most frequent words (a word left out that is one of the teacher's pieces keeps its "
            "vector as that piece).",
        ),
    ] = None,
    teacher_bags: Annotated[
        int,
        typer.Option(
            min=0,
            help="Also tune toward the teacher's reading of N seeded bags of English's frequent words, for the "
            "words the corpus lacks (see distill run --help; 0: off).",
        ),
    ] = MODEL_BAGS,
    teacher_texts: Annotated[
        Optional[str],
        typer.Option(
            help="Also tune toward the teacher's reading of each line of this text file: text like what the model "
            "will embed (see distill run --help)."
        ),
    ] = None,
    bag_topics: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Put each bag on one topic: this share of it from a seed word's nearest words (see distill run "
            "--help; 0: bags of unrelated words).",
        ),
    ] = MODEL_BAG_TOPICS,
    context_share: ContextShareOpt = 0.0,
    device: TeacherDeviceOpt = "auto",
    progress: ProgressOpt = True,
    verbose: VerboseOpt = False,
) -> None:
    """The recommended production model in one command: distil (the recommended set, the teacher's sentence
    embeddings kept), tune toward the teacher, export model2vec and sentence-transformers folders with a
    model card, and score them on STS. Stopped at any point, the same command goes on from its last checkpoint
    (after the encoding: from the finished encoding; in the tuning: from its last epoch saved). Run again on its
    finished folder (the same options, model and corpus, its files as written), it tunes and exports again
    without distilling again."""
    from distill.pipeline import run_pipeline_then
    from distill.production import check_model, model_step

    setup_logging(verbose, progress)
    with user_errors():
        check_dtype(dtype, EXPORT_DTYPES, "--dtype")  # before minutes of distillation, not after
        config = config_from({"corpus": corpus}, model=teacher_model, out=out, layers="1", pooling="pc",
                             best=True, teacher=True, teacher_bags=teacher_bags, teacher_texts=teacher_texts,
                             bag_topics=bag_topics if teacher_bags else 0.0, model_words=True,
                             split_sentences=True, context_share=context_share, device=device,
                             progress=progress)  # fmt: skip
        step = model_step(tune_epochs, progress, dtype, dims, top_words, config.device)
        folders, summary_lines = run_pipeline_then(  # a failed tuning or export goes on from the encoding
            config,
            step,
            lambda plan: check_model(plan.out, dims, plan.model_config),  # before minutes of distillation
            reuse=step,  # a finished run up to date: tuned and exported again, not distilled again
        )
    typer.echo("\n".join(summary_lines))
    typer.echo("wrote " + ", ".join(map(str, folders)))
