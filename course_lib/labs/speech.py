"""Chapter 12's experiment (``ch12_speech``): a Speech Transformer that reads spoken digits.

Data (:func:`load_speech`): ``data/speech/digits.npz``, made once by
``tools/make_speech_data.py`` with espeak-ng (English and Mandarin, 1 to 4
digits, varied voice, variant, speed, pitch, word gap and noise) and committed;
its SHA-256 is checked on load. Held-out utterances come from speakers never
heard in training (the variants ``+m3`` and ``+f4`` in every voice, and the
Scottish English accent)::

    log-mel (T, 40) dB --(x + 40) / 20--> frames (B, T, 40)
      --SpeechTransformer (chapter 12)-->  logits over <pad> <sos> <eos> <en> <zh> 0 … 9
    target: <sos> <en> 3 1 4 <eos>: the language first, then the digits

Training (:func:`fit`, :data:`TRAINING`): AdamW with warm-up and cosine decay;
the loss (:func:`loss_fn`) is half the decoder's cross-entropy and half a CTC
loss on the encoder's frames (joint CTC-attention training, as in ESPnet's
Speech Transformer), which teaches the encoder where each digit is and lets the
cross-attention find it within the 2-minute budget. Decoding uses the decoder only; the CTC
head's own transcripts and joint decoding are in :mod:`course_lib.labs.speech_decode`, errors by
position in :mod:`course_lib.labs.speech_errors`, a longer run in :mod:`course_lib.labs.speech_long`.

Metrics (:func:`evaluate`, float64, greedy decoding): character (digit) error
rate, the edit distance over the reference length; sequence accuracy; the
language token's accuracy. Baselines (:func:`baselines`): always answering the
training set's most frequent digit string, and, on single-digit utterances, a
non-attention model: logistic regression on the frame-averaged log-mel
(mean and standard deviation of each band).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..analysis.edit import levenshtein
from .._validate import check_choice, check_positive_int
from ..data import data_path
from ..models.speech import SpeechTransformer, SpeechTransformerConfig
from ..repro import recipe, sha256
from ..text import Vocab
from ..training import logged_curve, train

__all__ = ["DATA_FILE", "DATA_SHA256", "VOCAB", "MODEL", "TRAINING", "LOG_EVERY", "SpeechData", "load_speech",
           "normalise", "batch", "build", "fit", "transcribe", "edit_distance", "cer", "evaluate", "breakdown",
           "baselines", "speech_transformer"]

DATA_FILE = ("speech", "digits.npz")
DATA_SHA256 = "98b112c49c29cceb04c69d81653937f0aa3d71617d41997b941017d4e015bc45"
"""SHA-256 of ``data/speech/digits.npz`` as committed (also in ``data/README.md``)."""
DB_RANGE = 80.0
VOCAB = Vocab(["<en>", "<zh>"] + [str(d) for d in range(10)])
"""``<pad>`` 0, ``<sos>`` 1, ``<eos>`` 2, ``<en>`` 3, ``<zh>`` 4, then the digits ``0`` … ``9``."""
LANG_TOKEN = {"en": "<en>", "zh": "<zh>"}
MODEL = dict(n_mels=40, vocab_size=len(VOCAB), d_model=64, num_heads=4, num_encoder_layers=2,
             num_decoder_layers=1, d_ff=128, dropout=0.1, max_frames=256, max_tokens=8)
TRAINING = dict(steps=700, batch_size=32, lr=4e-3, warmup=60, ctc_weight=0.5, seed=0)
"""AdamW (weight decay 0.01), linear warm-up then cosine decay, random mini-batches drawn with ``seed``;
the loss mixes the decoder's cross-entropy and the encoder's CTC loss half and half (:func:`loss_fn`)."""
LOG_EVERY = 50


@dataclass
class SpeechData:
    """One split: log-mels in dB (float64, one ``(T_i, 40)`` array each) and their labels."""

    feats: list
    digits: np.ndarray
    lang: np.ndarray
    voice: np.ndarray
    variant: np.ndarray
    speed: np.ndarray
    pitch: np.ndarray

    def __len__(self):
        return len(self.feats)


@functools.lru_cache(maxsize=1)
def load_speech() -> tuple[SpeechData, SpeechData, dict]:
    """``(train, test, meta)`` from the committed ``data/speech/digits.npz`` (chapter 12).

    The file's SHA-256 is checked first; features are returned in dB
    (``q · 80 / 255 - 80``, float64). ``meta`` records espeak-ng's and sox's
    versions, the command lines, the split and the held-out speakers.
    """
    path = data_path(*DATA_FILE)
    digest = sha256(path)
    if digest != DATA_SHA256:
        raise ValueError(f"{path.name} has sha256 {digest[:12]}…, expected {DATA_SHA256[:12]}… "
                         "(data/README.md); restore the committed file")
    with np.load(path) as z:
        meta = json.loads(str(z["meta"]))
        out = []
        for split in ("train", "test"):
            q, lengths = z[f"{split}_feats"], z[f"{split}_lengths"]
            ends = np.cumsum(lengths)
            feats = [q[e - n:e].astype(np.float64) * DB_RANGE / 255.0 - DB_RANGE for e, n in zip(ends, lengths)]
            out.append(SpeechData(feats, *(z[f"{split}_{k}"] for k in ("digits", "lang", "voice", "variant",
                                                                       "speed", "pitch"))))
    return out[0], out[1], meta


def normalise(db: np.ndarray) -> np.ndarray:
    """Model input from a log-mel in dB relative to its peak: ``(x + 40) / 20``, roughly in [-2, 2]."""
    return (np.asarray(db, dtype=np.float64) + 40.0) / 20.0


def targets(digits: str, lang: str) -> list[int]:
    """``<sos> <lang> d_1 … d_n <eos>`` as ids."""
    return [VOCAB.sos_id, VOCAB.stoi[LANG_TOKEN[lang]]] + [VOCAB.stoi[c] for c in digits] + [VOCAB.eos_id]


def batch(data: SpeechData, index, dtype=torch.float32):
    """``(frames (B, T, 40), lengths (B,), tgt_in (B, L), tgt_out (B, L))``, right-padded (chapter 12)."""
    index = [int(i) for i in np.asarray(index).ravel()]
    if not index or min(index) < 0 or max(index) >= len(data):
        raise ValueError(f"index must hold positions in [0, {len(data)}), got {index[:5]}…")
    lengths = torch.tensor([data.feats[i].shape[0] for i in index])
    frames = torch.zeros(len(index), int(lengths.max()), data.feats[index[0]].shape[1], dtype=dtype)
    for row, i in enumerate(index):
        frames[row, :lengths[row]] = torch.from_numpy(normalise(data.feats[i]))
    seqs = [targets(str(data.digits[i]), str(data.lang[i])) for i in index]
    L = max(len(s) for s in seqs) - 1
    tgt = torch.full((len(index), L + 1), VOCAB.pad_id, dtype=torch.long)
    for row, s in enumerate(seqs):
        tgt[row, :len(s)] = torch.tensor(s)
    return frames, lengths, tgt[:, :-1], tgt[:, 1:]


def build(seed: int = 0, **overrides) -> SpeechTransformer:
    """The chapter's model (:data:`MODEL`) with random weights from ``seed``."""
    torch.manual_seed(check_positive_int(seed, "seed", minimum=0))
    return SpeechTransformer(SpeechTransformerConfig(**{**MODEL, **overrides}))


def loss_fn(model, b, ctc_weight: float | None = None):
    """``(1 - λ) · cross-entropy of the decoder + λ · CTC of the encoder``, ``λ = TRAINING["ctc_weight"]`` (chapter 12).

    The CTC labels are what the decoder reads after ``<sos>``, ``tgt_in[:, 1:]`` without padding:
    the language token, the digits and, in every row shorter than the batch's longest (``tgt_in``
    is the padded target without its last column), ``<eos>``; ``<pad>`` is CTC's blank. The
    stored ``ch12-speech`` was trained so; chapter 12 writes this loss out (``my_joint_loss``).
    CTC uses ``F.ctc_loss``'s ``reduction="mean"`` (each loss over its label count, then the
    batch mean) with ``zero_infinity=True``; the cross-entropy is the mean over real target tokens.
    """
    frames, lengths, tgt_in, tgt_out = b
    lam = TRAINING["ctc_weight"] if ctc_weight is None else ctc_weight
    memory, mask, _ = model.encode(frames, lengths)                          # (B, T', d_model)
    logits = model.decode(tgt_in, memory, mask)[0]                           # (B, L, vocab)
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1), ignore_index=VOCAB.pad_id)
    if not lam:
        return ce
    labels = tgt_in[:, 1:]                                                   # (B, L - 1): <lang> d_1 … (pad after)
    label_lengths = (labels != VOCAB.pad_id).sum(1)
    log_probs = model.ctc_logits(memory).log_softmax(-1).transpose(0, 1)     # (T', B, vocab)
    ctc = F.ctc_loss(log_probs, labels, mask[:, 0, 0].sum(1), label_lengths, blank=VOCAB.pad_id,
                     zero_infinity=True)
    return (1 - lam) * ce + lam * ctc


def fit(model, data: SpeechData, steps: int | None = None, **kwargs) -> list[float]:
    """Train with :data:`TRAINING` through :func:`course_lib.training.train`; mini-batches drawn with its seed.

    ``steps`` (default ``TRAINING["steps"]``) may stop early: the batches of step ``s``
    do not depend on the total, so the first steps of a notebook match ``make train``'s.
    """
    t = TRAINING
    steps = t["steps"] if steps is None else check_positive_int(steps, "steps")
    order = np.random.default_rng(t["seed"]).integers(0, len(data), size=(t["steps"], t["batch_size"]))
    warm = t["warmup"]
    total = t["steps"]

    def lr(step):        # linear warm-up, then cosine decay to 0 at TRAINING["steps"]
        if step < warm:
            return t["lr"] * (step + 1) / warm
        return t["lr"] * 0.5 * (1 + np.cos(np.pi * (step - warm) / (total - warm)))

    return train(model, lambda s: batch(data, order[s]), loss_fn, steps, lr, optimizer="adamw",
                 weight_decay=0.01, seed=t["seed"], log_every=kwargs.pop("log_every", LOG_EVERY), **kwargs)


def transcribe(model, data: SpeechData, index=None, batch_size: int = 100) -> list[tuple[str, str]]:
    """Greedy transcripts ``(language, digits)`` of ``data[index]`` (all by default)."""
    index = np.arange(len(data)) if index is None else np.asarray(index)
    dtype = next(model.parameters()).dtype
    out = []
    model.eval()
    for start in range(0, len(index), batch_size):
        frames, lengths, _, _ = batch(data, index[start:start + batch_size], dtype=dtype)
        ids = model.generate_text(frames, lengths, VOCAB.sos_id, VOCAB.eos_id)
        for row in ids.tolist():
            toks = [VOCAB.itos[i] for i in row]
            toks = toks[:toks.index("<eos>")] if "<eos>" in toks else toks
            lang = {"<en>": "en", "<zh>": "zh"}.get(toks[0], "?") if toks else "?"
            out.append((lang, "".join(t for t in toks[1:] if t.isdigit())))
    return out


def edit_distance(a, b) -> int:
    """Levenshtein distance between two sequences (insertions, deletions, substitutions cost 1;
    :func:`course_lib.analysis.edit.levenshtein`)."""
    return levenshtein(a, b)


def cer(refs, hyps) -> float:
    """Character error rate: total edit distance over total reference length."""
    refs, hyps = list(refs), list(hyps)
    if len(refs) != len(hyps) or not refs:
        raise ValueError(f"refs and hyps must be non-empty and of equal length, got {len(refs)} and {len(hyps)}")
    return sum(edit_distance(r, h) for r, h in zip(refs, hyps)) / sum(len(r) for r in refs)


def evaluate(model, data: SpeechData, hyps=None) -> dict:
    """Held-out ``cer``, ``seq_acc`` (every digit right) and ``lang_acc`` (chapter 12)."""
    hyps = transcribe(model, data) if hyps is None else hyps
    refs = [str(d) for d in data.digits]
    return {"cer": cer(refs, [h for _, h in hyps]),
            "seq_acc": float(np.mean([r == h for r, (_, h) in zip(refs, hyps)])),
            "lang_acc": float(np.mean([str(l) == g for l, (g, _) in zip(data.lang, hyps)]))}


def breakdown(data: SpeechData, hyps, by: str = "lang") -> list[tuple[str, int, float, float]]:
    """``(group, n, cer, seq_acc)`` per value of ``by`` (``"lang"``, ``"voice"``, ``"variant"`` or ``"length"``)."""
    check_choice(by, "by", ("lang", "voice", "variant", "length"))
    refs = [str(d) for d in data.digits]
    keys = [str(len(r)) for r in refs] if by == "length" else [str(k) for k in getattr(data, by)]
    rows = []
    for g in sorted(set(keys)):
        idx = [i for i, k in enumerate(keys) if k == g]
        rows.append((g, len(idx), cer([refs[i] for i in idx], [hyps[i][1] for i in idx]),
                     float(np.mean([refs[i] == hyps[i][1] for i in idx]))))
    return rows


def _pooled(data: SpeechData, index) -> np.ndarray:
    """Frame-averaged features: mean and standard deviation of each band, ``(n, 80)``."""
    return np.stack([np.concatenate([normalise(data.feats[i]).mean(0), normalise(data.feats[i]).std(0)])
                     for i in index])


def baselines(train_data: SpeechData, test: SpeechData) -> dict:
    """The chapter's baselines on the held-out split (chapter 12).

    Returns:
        ``majority_cer``: CER of always answering the most frequent training
        digit string; ``single_n``: held-out single-digit utterances;
        ``logreg_single_acc``: accuracy on them of a logistic regression on
        frame-averaged log-mels, trained (through :func:`~course_lib.training.train`)
        on the training set's single-digit utterances.
    """
    strings, counts = np.unique(train_data.digits, return_counts=True)
    majority = str(strings[np.argmax(counts)])
    out = {"majority_string": majority,
           "majority_cer": cer([str(d) for d in test.digits], [majority] * len(test))}
    tr = [i for i in range(len(train_data)) if len(str(train_data.digits[i])) == 1]
    te = [i for i in range(len(test)) if len(str(test.digits[i])) == 1]
    X, Xt = torch.from_numpy(_pooled(train_data, tr)), torch.from_numpy(_pooled(test, te))
    mu, sd = X.mean(0), X.std(0)
    X, Xt = (X - mu) / sd, (Xt - mu) / sd
    y = torch.tensor([int(str(train_data.digits[i])) for i in tr])
    torch.manual_seed(0)
    clf = torch.nn.Linear(X.shape[1], 10).double()
    train(clf, lambda s: (X, y), lambda m, b: F.cross_entropy(m(b[0]), b[1]) + 1e-3 * m.weight.pow(2).sum(),
          300, 0.05, seed=0)
    yt = torch.tensor([int(str(test.digits[i])) for i in te])
    out.update(single_n=len(te), single_index=te,
               logreg_single_acc=float((clf(Xt).argmax(1) == yt).double().mean()))
    return out


_DATA = ("data/speech/digits.npz: espeak-ng 1.51 spoken digit strings (1-4 digits), English and Mandarin, "
         "varied voice, speed, pitch, gap, noise; 2200 training utterances; evaluated on 500 held-out "
         "utterances from unseen speakers · espeak-ng 合成的中英文数字串，在 500 条未见说话人的留出语音上评估")


@recipe("ch10-speech", chapter="ch10", tolerance={"cer": 0.04, "seq_acc": 0.08}, data=_DATA)
def speech_transformer() -> dict:
    """Chapter 12's Speech Transformer on the spoken digits."""
    train_data, test, meta = load_speech()
    model = build(0)
    losses = fit(model, train_data)
    model.double()
    metrics = evaluate(model, test)
    base = baselines(train_data, test)
    hyps = transcribe(model, test, base["single_index"])
    metrics["single_acc"] = float(np.mean([h == str(test.digits[i]) for i, (_, h) in zip(base["single_index"], hyps)]))
    metrics["majority_cer"] = base["majority_cer"]
    metrics["logreg_single_acc"] = base["logreg_single_acc"]
    model.float()
    return {"model": model, "metrics": metrics, "curve": logged_curve(losses, LOG_EVERY),
            "config": {**MODEL, **TRAINING, "log_every": LOG_EVERY, "vocab": VOCAB.itos,
                       "data_sha256": DATA_SHA256, "schedule": "linear warm-up, cosine decay, AdamW wd 0.01"}}
