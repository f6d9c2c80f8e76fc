"""Short modern sentences written by a small causal LM, as tuning targets with no corpus and no STS text.

    python benchmarks/generate_sentences.py OUT [--n 25600] [--seed 0] [--batch 256]

Gutenberg's sentences are long and 19th-century; STS's are short and modern. SmolLM2-135M-Instruct (``make
smollm2-weights``; bfloat16 on the CPU) is asked, for each of ``--n`` seeded words among English's 30,000 most
frequent (the 300 most frequent left out), for one short sentence or one short question using the word; the
answer's first sentence is kept when it has 4 to 30 words and does not talk about the request itself (the word
"word", "sentence", "prompt", an assistant's "I'm" or "here's"). OUT gets one line per request, empty where the
answer was dropped, so a stopped run resumes where it stopped (``tune_targets.py --extra file:OUT`` reads the
non-empty lines). Sampled (temperature 0.8, top-p 0.95), seeded per batch.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from distill.lexicon import frequent_words
from distill.paths import default_gguf, resolve_model

FORMS = ('Write one short sentence using the word "{w}".', 'Write one short question using the word "{w}".')
META = ("word", "sentence", "prompt", "question", "assist", "i'm ", "here's", "here is")
FIRST = re.compile(r"^(.*?[.?!])(\s|$)")


def first_sentence(answer: str) -> str:
    """The answer's first sentence (a quoted one after a colon unwrapped), or "" when it is no plain sentence."""
    text = answer.strip().split("\n")[0]
    quoted = re.search(r':\s*"(.+)', text)
    text = (quoted.group(1) if quoted else text).strip().strip('"').strip()
    found = FIRST.match(text)
    text = found.group(1).strip('"') if found else ""
    return text if 4 <= len(text.split()) <= 30 and not any(m in text.lower() for m in META) else ""


def requests(n: int, seed: int) -> list[str]:
    """``n`` seeded requests, sentences and questions in turn (which words, all of them, depends on ``n``)."""
    words = frequent_words(30_000)[300:]
    rng = np.random.default_rng(seed)
    chosen = [words[i] for i in rng.choice(len(words), size=n, replace=n > len(words))]
    return [FORMS[i % 2].format(w=w) for i, w in enumerate(chosen)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--n", type=int, default=25_600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    prompts = requests(args.n, args.seed)
    out = Path(args.out)
    written = out.read_text(encoding="utf-8").splitlines() if out.exists() else []
    done = len(written) - len(written) % args.batch  # a batch is written whole or written again
    folder = resolve_model("smollm2")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.padding_side = "left"
    gguf = Path(default_gguf("smollm2") or "")
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name).eval().to(torch.bfloat16)
    out.write_text("".join(line + "\n" for line in written[:done]), encoding="utf-8")
    start_time = time.perf_counter()
    with out.open("a", encoding="utf-8") as handle:
        for start in range(done, args.n, args.batch):
            chats = [[{"role": "user", "content": p}] for p in prompts[start : start + args.batch]]
            texts = [tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in chats]
            batch = tokenizer(texts, return_tensors="pt", padding=True)
            torch.manual_seed(args.seed * 1_000_003 + start)
            with torch.inference_mode():
                made = model.generate(**batch, max_new_tokens=28, do_sample=True, temperature=0.8, top_p=0.95,
                                      pad_token_id=tokenizer.eos_token_id)  # fmt: skip
            answers = tokenizer.batch_decode(made[:, batch.input_ids.shape[1] :], skip_special_tokens=True)
            handle.writelines(first_sentence(a) + "\n" for a in answers)
            handle.flush()
            seconds = time.perf_counter() - start_time
            print(f"{min(start + args.batch, args.n):,} of {args.n:,} requests, {seconds:.0f} s", flush=True)


if __name__ == "__main__":
    main()
