"""Does a tuning stopped part way go on to the table an unstopped one gives, and what do its saves cost?

    python benchmarks/tune_resume.py RUN [--set best] [--stop-after 3] [--scratch DIR]

Trains the export table of a run made with ``--teacher`` as ``distill model`` does (nothing written to the run)
three ways, a checkpoint saved after every epoch: once unstopped; once stopped when epoch ``--stop-after`` is
saved (what Ctrl-C or a lost machine leaves); then that one again, resumed from its checkpoint. Prints the time
of each, the saves' size and time, and whether the resumed table, map and history equal the unstopped ones.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

import distill.tune.train as train
from distill.rundir import RunDir
from distill.serve.weighting import SentenceRecipe, Weighting
from distill.tune.options import TuneOptions


class Stopped(Exception):
    pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--set", default=None)
    parser.add_argument("--stop-after", type=int, default=3)
    parser.add_argument("--scratch", default=None, help="folder for the checkpoints (default: a temporary one)")
    args = parser.parse_args()
    run = RunDir(args.run)
    name = run.resolve_set(args.set)
    train.SAVE_SECONDS = 0.0  # every epoch, so that the stop falls where asked
    write, saves, stop_at = train.write_checkpoint, [], [0]  # stop_at[0]: the epoch to stop after (0: none)

    def timed_write(path: Path, state: dict) -> None:
        start = time.perf_counter()
        write(path, state)
        saves.append((time.perf_counter() - start, path.stat().st_size))
        if state["epoch"] == stop_at[0]:
            raise Stopped

    train.write_checkpoint = timed_write
    with tempfile.TemporaryDirectory(dir=args.scratch) as scratch:
        results, seconds = {}, {}
        for label, stop, path in (("unstopped", 0, "whole.pt"), ("stopped", args.stop_after, "part.pt"),
                                  ("resumed", 0, "part.pt")):  # fmt: skip
            stop_at[0], start = stop, time.perf_counter()
            try:
                table = train.train_table(run, name, SentenceRecipe(Weighting.SIF), TuneOptions(),
                                          checkpoint=Path(scratch) / path)  # fmt: skip
                results[label] = table.result
            except Stopped:
                pass
            seconds[label] = time.perf_counter() - start
    whole, resumed = results["unstopped"], results["resumed"]
    same = (
        whole.vectors.tobytes() == resumed.vectors.tobytes()
        and (whole.map is None or np.array_equal(whole.map, resumed.map))
        and whole.best_epoch == resumed.best_epoch
        and [h["held_out"] for h in whole.history] == [h["held_out"] for h in resumed.history]
    )
    print(f"set {name}: {whole.sentences:,} sentences, table {whole.vectors.shape}, best epoch {whole.best_epoch}, "
          f"{len(whole.history) - 1} epochs")  # fmt: skip
    print("| tuning | seconds |\n|---|---:|")
    for label, value in seconds.items():
        print(f"| {label}{f' after epoch {args.stop_after}' if label == 'stopped' else ''} | {value:.1f} |")
    times, sizes = zip(*saves)
    print(f"saves: {len(saves)}, {np.mean(sizes) / 2**20:.0f} MiB each, {np.mean(times):.2f} s each (max "
          f"{max(times):.2f})")  # fmt: skip
    print(f"resumed equals unstopped (table, map, best epoch, held-out losses): {same}")


if __name__ == "__main__":
    main()
