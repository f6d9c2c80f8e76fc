"""The original ELMo (Peters et al. 2018) in PyTorch, from the official ``options.json`` + ``weights.hdf5``.

Character CNN -> highway layers -> projection (layer 0, context-free, repeated to twice its size as in
AllenNLP), then a 2-layer bidirectional LSTM with cell and state projection clipping and a residual
connection into the second layer (layers 1 and 2: forward and backward states concatenated). Sentences
get ``<S>`` ... ``</S>`` around them; those positions are dropped from the outputs. The weight layout
and gate order follow the TensorFlow checkpoints (TF gates i, j, f, o with forget bias +1) as AllenNLP
reads them. No maintained ELMo package installs on Python 3.11 (allennlp is archived), hence this module.

Real weights (not reachable from here): https://allenai.org/allennlp/software/elmo, e.g.
``elmo_2x4096_512_2048cnn_2xhighway_options.json`` and ``..._weights.hdf5`` (the paper's "original"); put
both in one folder as ``options.json`` and ``weights.hdf5`` and pass the folder as ``--model``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import regex
import torch
from torch import nn

from distill.encoders.alignment import Window
from distill.errors import ConfigError, require
from distill.files import read_model_json

MAX_CHARS = 50
BOW, EOW, PAD, BOS_CHAR, EOS_CHAR = 258, 259, 260, 256, 257
TOKEN_RE = regex.compile(r"\w+|[^\w\s]")  # words (as distill splits them) and single punctuation marks


def elmo_files(source: str | Path) -> tuple[Path, Path] | None:
    """``(options.json, weights .hdf5)`` when ``source`` is an ELMo folder, else None."""
    folder = Path(source)
    if not (folder / "options.json").is_file():
        return None
    weights = sorted(folder.glob("*.hdf5"))
    if not weights:
        raise ConfigError(f"{folder} has options.json but no .hdf5 weights file; put weights.hdf5 beside it")
    return folder / "options.json", weights[0]


def char_ids(token: str) -> list[int]:
    """The 50 character ids of one token, shifted by one so that 0 is padding (AllenNLP's mapping)."""
    ids = [PAD] * MAX_CHARS
    if token in ("<S>", "</S>"):
        ids[:3] = [BOW, BOS_CHAR if token == "<S>" else EOS_CHAR, EOW]
    else:
        raw = token.encode("utf-8", "ignore")[: MAX_CHARS - 2]
        ids[0] = BOW
        ids[1 : 1 + len(raw)] = list(raw)
        ids[1 + len(raw)] = EOW
    return [c + 1 for c in ids]


class CharEncoder(nn.Module):
    """Token -> vector from its characters: embedding, max-pooled convolutions, highway, projection."""

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__()
        cnn = options["char_cnn"]
        dim = cnn["embedding"]["dim"]
        self.char_embedding = nn.Parameter(torch.zeros(cnn["n_characters"], dim))  # row 0 = padding
        self.convs = nn.ModuleList(nn.Conv1d(dim, n, kernel_size=w) for w, n in cnn["filters"])
        n_filters = sum(n for _, n in cnn["filters"])
        self.highways = nn.ModuleList(nn.Linear(n_filters, 2 * n_filters) for _ in range(cnn["n_highway"]))
        self.projection = nn.Linear(n_filters, options["lstm"]["projection_dim"])
        self.activation = torch.tanh if cnn.get("activation", "relu") == "tanh" else torch.relu

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        """``chars``: (B, T, 50) ids -> (B, T, projection_dim)."""
        b, t, c = chars.shape
        x = nn.functional.embedding(chars.view(-1, c), self.char_embedding).transpose(1, 2)
        x = torch.cat([self.activation(conv(x).max(dim=-1).values) for conv in self.convs], dim=-1)
        for highway in self.highways:  # AllenNLP's Highway: gate * x + (1 - gate) * relu(transform)
            nonlinear, gate = highway(x).chunk(2, dim=-1)
            gate = torch.sigmoid(gate)
            x = gate * x + (1 - gate) * torch.relu(nonlinear)
        return self.projection(x).view(b, t, -1)


class ProjectedLstm(nn.Module):
    """One direction of one layer: LSTM cell with a projected, clipped state (AllenNLP's LstmCellWithProjection)."""

    def __init__(self, input_size: int, hidden: int, cell: int, cell_clip: float, proj_clip: float) -> None:
        super().__init__()
        self.cell_size, self.hidden, self.cell_clip, self.proj_clip = cell, hidden, cell_clip, proj_clip
        self.input_linearity = nn.Linear(input_size, 4 * cell, bias=False)
        self.state_linearity = nn.Linear(hidden, 4 * cell, bias=True)
        self.state_projection = nn.Linear(cell, hidden, bias=False)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor, backward: bool) -> torch.Tensor:
        """``x``: (B, T, input) right-padded; each row runs over its own length (backward: from its end)."""
        b, t, _ = x.shape
        out = x.new_zeros(b, t, self.hidden)
        h, c = x.new_zeros(b, self.hidden), x.new_zeros(b, self.cell_size)
        projected = self.input_linearity(x)
        for step in range(t):
            idx = (lengths - 1 - step).clamp(min=0) if backward else torch.full_like(lengths, step)
            active = (step < lengths)[:, None]
            gates = projected[torch.arange(b), idx] + self.state_linearity(h)
            i, f, g, o = gates.chunk(4, dim=-1)
            c_new = (torch.sigmoid(i) * torch.tanh(g) + torch.sigmoid(f) * c).clamp(-self.cell_clip, self.cell_clip)
            h_new = self.state_projection(torch.sigmoid(o) * torch.tanh(c_new)).clamp(-self.proj_clip, self.proj_clip)
            c, h = torch.where(active, c_new, c), torch.where(active, h_new, h)
            out[torch.arange(b), idx] = torch.where(active, h_new, out[torch.arange(b), idx])
        return out


class Elmo(nn.Module):
    """Character encoder + biLSTM; ``forward`` returns the 3 layers, each (B, T, 2 * projection_dim)."""

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__()
        lstm = options["lstm"]
        self.chars = CharEncoder(options)
        proj, cell, n = lstm["projection_dim"], lstm["dim"], lstm["n_layers"]
        args = (proj, proj, cell, lstm.get("cell_clip", 3.0), lstm.get("proj_clip", 3.0))
        self.forward_layers = nn.ModuleList(ProjectedLstm(*args) for _ in range(n))
        self.backward_layers = nn.ModuleList(ProjectedLstm(*args) for _ in range(n))
        self.skip = bool(lstm.get("use_skip_connections", True))

    def forward(self, chars: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, ...]:
        token = self.chars(chars)
        layers = [torch.cat([token, token], dim=-1)]
        fwd = bwd = token
        for k, (f_layer, b_layer) in enumerate(zip(self.forward_layers, self.backward_layers)):
            f_out, b_out = f_layer(fwd, lengths, backward=False), b_layer(bwd, lengths, backward=True)
            if k > 0 and self.skip:
                f_out, b_out = f_out + fwd, b_out + bwd
            fwd, bwd = f_out, b_out
            layers.append(torch.cat([fwd, bwd], dim=-1))
        return tuple(layers)

    def load_hdf5(self, path: str | Path) -> None:
        """Weights in the official TensorFlow-checkpoint layout."""
        h5py = require("h5py", "elmo", "reading ELMo's weights")

        with h5py.File(path, "r") as fin, torch.no_grad():
            emb = fin["char_embed"][...]
            self.chars.char_embedding[1:] = torch.from_numpy(emb)
            for i, module in enumerate(self.chars.convs):
                conv = cast(nn.Conv1d, module)
                w = fin["CNN"][f"W_cnn_{i}"][...]  # (1, width, char_dim, filters)
                conv.weight.copy_(torch.from_numpy(np.transpose(w.squeeze(0), (2, 1, 0))))
                cast(torch.Tensor, conv.bias).copy_(torch.from_numpy(fin["CNN"][f"b_cnn_{i}"][...]))
            for k, module in enumerate(self.chars.highways):
                highway = cast(nn.Linear, module)
                g = fin[f"CNN_high_{k}"]
                weight = np.concatenate([g["W_transform"][...].T, -g["W_carry"][...].T], axis=0)
                highway.weight.copy_(torch.from_numpy(weight))
                highway.bias.copy_(torch.from_numpy(np.concatenate([g["b_transform"][...], -g["b_carry"][...]])))
            self.chars.projection.weight.copy_(torch.from_numpy(fin["CNN_proj"]["W_proj"][...].T))
            self.chars.projection.bias.copy_(torch.from_numpy(fin["CNN_proj"]["b_proj"][...]))
            for k, layers in enumerate(zip(self.forward_layers, self.backward_layers)):
                for direction, module in enumerate(layers):
                    lstm = cast(ProjectedLstm, module)
                    cell = fin[f"RNN_{direction}"]["RNN"]["MultiRNNCell"][f"Cell{k}"]["LSTMCell"]
                    w = cell["W_0"][...].T  # (4 * cell, input + hidden), TF gates i, j, f, o
                    b = cell["B"][...].copy()
                    b[2 * lstm.cell_size : 3 * lstm.cell_size] += 1.0  # TF's forget bias
                    order = _tf_to_torch_gates(lstm.cell_size)
                    n_in = lstm.input_linearity.in_features
                    lstm.input_linearity.weight.copy_(torch.from_numpy(w[order, :n_in]))
                    lstm.state_linearity.weight.copy_(torch.from_numpy(w[order, n_in:]))
                    lstm.state_linearity.bias.copy_(torch.from_numpy(b[order]))
                    lstm.state_projection.weight.copy_(torch.from_numpy(cell["W_P_0"][...].T))


def _tf_to_torch_gates(cell: int) -> np.ndarray:
    """Row order taking TF's (i, j, f, o) blocks to ours (i, f, j, o)."""
    blocks = [np.arange(k * cell, (k + 1) * cell) for k in range(4)]
    return np.concatenate([blocks[0], blocks[2], blocks[1], blocks[3]])


@dataclass
class ElmoEncoder:
    """ELMo behind the ``Encoder`` interface: a token is a word or a punctuation mark (one piece each)."""

    name: str
    source: str
    model: Elmo
    n_layers: int
    hidden_size: int
    max_length: int
    device: torch.device
    dtype: torch.dtype = torch.float32
    uncased: bool = False  # ELMo reads characters: case is kept
    revision: str | None = None
    layers_run: int = 0
    unk_id: int | None = None  # characters: no unknown token
    token_ids: dict[str, int] = field(default_factory=dict)  # token string -> id, grown as text is read
    tokens: list[str] = field(default_factory=list)

    @property
    def vocab_size(self) -> None:
        """None: ELMo reads characters, it has no fixed vocabulary of pieces."""
        return None

    def _id(self, token: str) -> int:
        if token not in self.token_ids:
            self.token_ids[token] = len(self.tokens)
            self.tokens.append(token)
        return self.token_ids[token]

    def tokenize(self, texts: list[str], stride: int) -> list[Window]:
        windows = []
        size = self.max_length
        for sentence, text in enumerate(texts):
            spans = [m.span() for m in TOKEN_RE.finditer(text)]
            step = max(1, size - stride)
            for start in range(0, max(len(spans), 1), step):
                part = spans[start : start + size]
                ids = [self._id(text[a:b]) for a, b in part]
                starts = np.array([a for a, _ in part], dtype=np.int64)
                ends = np.array([b for _, b in part], dtype=np.int64)
                content = np.ones(len(part), dtype=bool)
                fresh = content if start == 0 else np.arange(len(part)) >= size - step  # overlap counted once
                windows.append(Window(sentence, ids, starts, ends, content, fresh))
                if start + size >= len(spans):
                    break
        return windows

    def forward_padded(self, padded: np.ndarray, real: np.ndarray) -> tuple[torch.Tensor, ...]:
        """Every layer's states of a right-padded batch of token ids (``real``: which are not padding)."""
        width = padded.shape[1]
        sizes = real.sum(axis=1).tolist()
        chars = torch.zeros((len(padded), width + 2, MAX_CHARS), dtype=torch.long)
        for i, (row, size) in enumerate(zip(padded.tolist(), sizes)):
            tokens = ["<S>", *(self.tokens[t] for t in row[:size]), "</S>"]
            chars[i, : len(tokens)] = torch.tensor([char_ids(t) for t in tokens])
        lengths = torch.tensor([size + 2 for size in sizes])
        layers = self.model(chars.to(self.device), lengths.to(self.device))
        return tuple(layer[:, 1 : width + 1] for layer in layers)  # drop <S>; </S> falls in the padding


def elmo_config(source: str | Path) -> Any:
    """What the pipeline needs of the options before loading: layers 0..n_layers and the output size."""
    files = elmo_files(source)
    if files is None:
        raise ConfigError(f"{source} is not an ELMo folder (options.json + weights .hdf5)")
    options = read_model_json(files[0])
    try:  # every size the model is built from, read before the weights are
        lstm, cnn = options["lstm"], options["char_cnn"]
        sizes = [lstm[key] for key in ("n_layers", "projection_dim", "dim")]
        sizes += [cnn["embedding"]["dim"], cnn["n_characters"], cnn["n_highway"]]
        sizes += [size for filters in cnn["filters"] for size in filters]
        if not all(isinstance(size, int) and size > 0 for size in sizes) or any(len(f) != 2 for f in cnn["filters"]):
            raise ValueError("a size that is not a positive whole number")
    except (KeyError, TypeError, ValueError) as err:
        why = f"{type(err).__name__}: {err}"
        raise ConfigError(f"{files[0]} is not ELMo's options ({why}); the model folder is damaged") from err
    return SimpleNamespace(
        num_hidden_layers=lstm["n_layers"], hidden_size=2 * lstm["projection_dim"], options=options, weights=files[1]
    )


def load_elmo(name: str, source: str, device: torch.device, max_length: int | None = None) -> ElmoEncoder:
    config = elmo_config(source)
    model = Elmo(config.options)
    model.load_hdf5(config.weights)
    model.requires_grad_(False).to(device).eval()
    return ElmoEncoder(
        name=name,
        source=source,
        model=model,
        n_layers=config.num_hidden_layers,
        hidden_size=config.hidden_size,
        max_length=max_length or 256,
        device=device,
        layers_run=config.num_hidden_layers,
    )
