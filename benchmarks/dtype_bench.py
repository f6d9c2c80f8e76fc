"""Forward pass in float32, in bfloat16 weights (what ``--dtype bfloat16`` loads) and under bfloat16 autocast.

    .venv/bin/python benchmarks/dtype_bench.py [--model minilm] [--batch 64] [--length 24] [--device cpu]

In one process, on the same random batch: tokens/s of each (two timed rounds, side by side) and the
smallest cosine of any token's hidden state to float32's, per layer. On a CPU, bfloat16 is only fast
where the CPU has bf16 units (AMX: ``amx_bf16`` in /proc/cpuinfo).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from distill.paths import resolve_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    from transformers import AutoModel

    source = resolve_model(args.model)
    device = torch.device(args.device)
    fp32 = AutoModel.from_pretrained(source).eval().to(device)
    bf16 = AutoModel.from_pretrained(source, dtype=torch.bfloat16).eval().to(device)
    torch.manual_seed(0)
    ids = torch.randint(1000, min(20000, fp32.config.vocab_size), (args.batch, args.length), device=device)
    mask = torch.ones_like(ids)

    def run(model: torch.nn.Module, autocast: bool) -> tuple[torch.Tensor, ...]:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            return model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states

    settings = {"float32": (fp32, False), "bfloat16 weights": (bf16, False), "float32 + autocast": (fp32, True)}
    tokens = args.rounds * ids.numel()
    rates: dict[str, list[float]] = {name: [] for name in settings}
    with torch.inference_mode():
        reference = run(fp32, False)
        for _ in range(2):
            for name, (model, autocast) in settings.items():
                run(model, autocast)  # warm-up
                t0 = time.perf_counter()
                for _ in range(args.rounds):
                    hidden = run(model, autocast)
                hidden[-1].float().sum().item()  # wait for the device
                rates[name].append(tokens / (time.perf_counter() - t0))
        for name, (model, autocast) in settings.items():
            hidden = run(model, autocast)
            cosines = [
                torch.nn.functional.cosine_similarity(h.float().flatten(0, 1), r.flatten(0, 1)).min().item()
                for h, r in zip(hidden, reference)
            ]
            print(f"{name:20s} {' / '.join(f'{r:,.0f}' for r in rates[name])} tokens/s   min cosine per layer to "
                  f"float32: {' '.join(f'{c:.5f}' for c in cosines)}")  # fmt: skip


if __name__ == "__main__":
    main()
