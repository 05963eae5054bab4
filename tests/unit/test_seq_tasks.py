"""Chapter 1's lab (course_lib.labs.seq_tasks), the training loop (course_lib.training) and
RNN analysis (course_lib.analysis.rnn)."""

from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from course_lib.analysis import rnn as rnn_analysis
from course_lib.labs import seq_tasks as tasks
from course_lib.labs import seq_tasks_data as task_data
from course_lib.models import Seq2Seq
from course_lib.text import EOS_ID, PAD_ID, SOS_ID, Vocab
from course_lib.training import train


# --- data --------------------------------------------------------------------------------------

def test_seq2seq_batch_pads_and_adds_sos_eos():
    src, tgt_in, tgt_out = task_data.seq2seq_batch([[3, 4, 5], [6]], [[7, 8], [9, 10, 11]])
    assert src.tolist() == [[3, 4, 5], [6, PAD_ID, PAD_ID]]
    assert tgt_in.tolist() == [[SOS_ID, 7, 8, PAD_ID], [SOS_ID, 9, 10, 11]]
    assert tgt_out.tolist() == [[7, 8, EOS_ID, PAD_ID], [9, 10, 11, EOS_ID]]
    assert src.dtype == tgt_in.dtype == tgt_out.dtype == torch.long


@pytest.mark.parametrize("task", task_data.TASKS)
def test_sequence_batch_copy_and_reverse(task):
    lengths = [5, 2, 7]
    src, tgt_in, tgt_out = task_data.sequence_batch(task, lengths, n_symbols=6, seed=3)
    assert src.shape == (3, 7) and tgt_in.shape == tgt_out.shape == (3, 8)
    for b, L in enumerate(lengths):
        s = src[b, :L]
        assert (src[b, L:] == PAD_ID).all()
        assert ((s >= 3) & (s < 9)).all()
        expected = s if task == "copy" else s.flip(0)
        assert torch.equal(tgt_out[b, :L], expected) and tgt_out[b, L] == EOS_ID
        assert tgt_in[b, 0] == SOS_ID and torch.equal(tgt_in[b, 1:L + 1], expected)
        assert (tgt_out[b, L + 1:] == PAD_ID).all() and (tgt_in[b, L + 1:] == PAD_ID).all()


def test_batches_are_seeded():
    a = task_data.sequence_batch("copy", [6] * 4, 5, seed=1)
    b = task_data.sequence_batch("copy", [6] * 4, 5, seed=1)
    c = task_data.sequence_batch("copy", [6] * 4, 5, seed=2)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(a[0], c[0])
    fn = task_data.length_sampler("reverse", 8, 3, 9, 5, seed=0)
    first = [fn(s)[0] for s in range(5)]
    fn(17)  # calling another step in between changes nothing
    assert all(torch.equal(x, fn(s)[0]) for s, x in enumerate(first))
    assert all(x.shape[0] == 8 and 3 <= x.shape[1] <= 9 for x in first)


def test_vocab_and_symbol_vocab():
    v = task_data.symbol_vocab(3)
    assert v.itos == ["<pad>", "<sos>", "<eos>", "a", "b", "c"] and len(v) == 6
    assert v.decode([3, 5, EOS_ID, 4], strip=True) == ["a", "c"]
    assert task_data.symbol_vocab(60).itos[-1] == "s59"


def test_toy_corpus():
    src_vocab, tgt_vocab, src_rows, tgt_rows = task_data.toy_corpus_pairs()
    pairs = dict(task_data.TOY_CORPUS)
    assert pairs["I love deep learning"] == "j' aime l' apprentissage profond"
    assert len(src_rows) == len(tgt_rows) == len(task_data.TOY_CORPUS)
    k = list(pairs).index("I love deep learning")
    assert tgt_vocab.decode(tgt_rows[k]) == "j' aime l' apprentissage profond".split()
    assert len(set(task_data.TOY_CORPUS)) == len(task_data.TOY_CORPUS)


# --- training ----------------------------------------------------------------------------------

def test_train_reduces_loss_and_is_deterministic(capsys):
    torch.set_num_threads(2)

    def run():
        torch.manual_seed(0)
        model = Seq2Seq(7, 7, 8, 16, attention=True)
        batches = task_data.length_sampler("copy", 16, 2, 4, n_symbols=4, seed=0)
        return train(model, batches, tasks.seq2seq_loss, steps=60, lr=1e-2,
                     log_every=30, name="copy"), model

    losses, model = run()
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("copy · step 30/60 · loss ")
    assert len(out.splitlines()) == 2
    assert len(losses) == 60 and np.mean(losses[-10:]) < 0.6 * np.mean(losses[:10])
    assert not model.training
    assert run()[0] == losses
    # Score the trained model by hand: record what it saw and answered, count matches with a loop.
    seen = []

    def recording(src, tgt_in):
        out = model(src, tgt_in)
        seen.append((src, out[0].argmax(-1)))
        return out

    acc = tasks.accuracy_by_length(recording, "copy", [2, 3], n_symbols=4, n_per_length=10)
    expected = []
    for L, (src, pred) in zip([2, 3], seen):
        assert src.shape == (10, L) and (src >= 3).all()
        right = sum(int(pred[b, t]) == int(src[b, t]) for b in range(10) for t in range(L))
        expected.append(right / (10 * L))          # copy: the answer is the source itself
    assert len(seen) == 2 and acc.tolist() == expected


class _Scripted(torch.nn.Module):
    """A stand-in for a Seq2Seq on the copy/reverse tasks whose accuracy is known by construction.

    Teacher-forced, it names the right token at the first ``k_tf`` target positions of every row,
    a wrong real symbol after them and ``<eos>`` (right, but never scored) at position ``L``.
    Greedy, it emits the first ``k_greedy`` right tokens, then ``<eos>``, and stops: the rest is missing.
    So at source length ``L`` the accuracies are ``min(k, L) / L``.
    """

    def __init__(self, task, n_symbols, k_tf, k_greedy, log=None):
        super().__init__()
        self.task, self.n_symbols, self.k_tf, self.k_greedy = task, n_symbols, k_tf, k_greedy
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.log = log.append if log is not None else None    # a builtin: deepcopy keeps the same list

    def _answer(self, src):
        return src if self.task == "copy" else src.flip(1)     # every row has the same length, no padding

    def forward(self, src, tgt_in):
        if self.log is not None:
            self.log(self.weight.dtype)
        B, L = src.shape
        pred = torch.full((B, L + 1), EOS_ID, dtype=torch.long)
        answer = self._answer(src)
        wrong = 3 + (answer - 3 + 1) % self.n_symbols
        pred[:, :L] = torch.where(torch.arange(L) < self.k_tf, answer, wrong)
        logits = torch.nn.functional.one_hot(pred, 3 + self.n_symbols).to(self.weight.dtype)
        return logits, None

    def greedy_decode(self, src, sos_id, eos_id, max_len):
        k = min(self.k_greedy, src.shape[1])
        eos = torch.full((src.shape[0], 1), eos_id, dtype=torch.long)
        return torch.cat([self._answer(src)[:, :k], eos], dim=1), None


@pytest.mark.parametrize("task", task_data.TASKS)
def test_accuracy_by_length_of_models_known_by_construction(task):
    lengths = [1, 3, 4, 6]
    scripted = _Scripted(task, n_symbols=5, k_tf=3, k_greedy=4)
    acc = tasks.accuracy_by_length(scripted, task, lengths, n_symbols=5, n_per_length=7)
    assert acc.tolist() == [1 / 1, 3 / 3, 3 / 4, 3 / 6]
    acc = tasks.accuracy_by_length(scripted, task, lengths, n_symbols=5, n_per_length=7, mode="greedy")
    assert acc.tolist() == [1 / 1, 3 / 3, 4 / 4, 4 / 6]
    for mode in ("teacher_forced", "greedy"):
        perfect = _Scripted(task, 5, k_tf=99, k_greedy=99)
        assert tasks.accuracy_by_length(perfect, task, lengths, 5, 7, mode=mode).tolist() == [1.0] * 4
        wrong = _Scripted(task, 5, k_tf=0, k_greedy=0)
        assert tasks.accuracy_by_length(wrong, task, lengths, 5, 7, mode=mode).tolist() == [0.0] * 4


def test_train_warmup_and_plain_loss_fn():
    model = torch.nn.Linear(2, 1)
    x, y = torch.randn(32, 2), torch.randn(32, 1)
    losses = train(model, lambda step: (x, y),
                   lambda m, b: ((m(b[0]) - b[1]) ** 2).mean(), steps=50, lr=0.05, warmup=10)
    assert losses[-1] < losses[0]


# --- RNN analysis ------------------------------------------------------------------------------

def test_gradient_norms_vanish_and_match_the_jacobian_product():
    norms = rnn_analysis.rnn_gradient_norms(30, hidden=16, batch_size=4)
    assert norms.shape == (30,) and norms[-1] == pytest.approx(1.0)
    assert norms[0] < 1e-3 * norms[-1]
    # the NumPy product of Jacobians gives the same numbers on one sequence
    torch.manual_seed(0)
    cell = torch.nn.RNNCell(8, 8)
    x = torch.randn(12, 8)
    h, states = torch.zeros(1, 8), []
    for t in range(12):
        h = cell(x[t:t + 1], h)
        h.retain_grad()
        states.append(h)
    u = torch.randn(8)
    (h[0] @ u).backward()
    auto = [s.grad[0].norm().item() for s in states]
    ours = rnn_analysis.jacobian_product_norms(cell.weight_hh.detach().T.numpy(),
                                               torch.cat(states).detach().numpy(), u.numpy())
    np.testing.assert_allclose(ours, auto, rtol=1e-4)


def test_timing_helpers(monkeypatch):
    t = rnn_analysis.sequential_vs_parallel_times([4, 8], d_model=8, repeats=1)
    assert t["rnn"].shape == t["attention"].shape == (2,) and (t["rnn"] > 0).all()
    # min_time on a fake clock: each call of fn takes a known time (binary fractions: exact differences).
    clock, calls = {"now": 1000.0}, []
    durations = [0.125, 0.75, 0.5, 0.25]          # the first is the warm-up: shortest, but not timed

    def fn():
        clock["now"] += durations[len(calls)]
        calls.append(clock["now"])

    monkeypatch.setattr(rnn_analysis, "time", SimpleNamespace(perf_counter=lambda: clock["now"]))
    assert rnn_analysis.min_time(fn, repeats=3) == 0.25 and len(calls) == 4


# --- bad input ---------------------------------------------------------------------------------

BAD = {
    "unknown task": (lambda: task_data.sequence_batch("sort", [3], 4), ValueError, r"task must be one of"),
    "lengths int": (lambda: task_data.sequence_batch("copy", 3, 4), TypeError, r"lengths must be a non-empty list"),
    "length zero": (lambda: task_data.sequence_batch("copy", [0], 4), ValueError, r"lengths\[i\] must be an integer >= 1"),
    "n_symbols zero": (lambda: task_data.sequence_batch("copy", [3], 0), ValueError, r"n_symbols must be an integer >= 1"),
    "negative seed": (lambda: task_data.sequence_batch("copy", [3], 4, seed=-1), TypeError, r"seed must be a non-negative"),
    "max < min": (lambda: task_data.length_sampler("copy", 4, 9, 3, 4), ValueError, r"max_len must be >= min_len"),
    "special id in rows": (lambda: task_data.seq2seq_batch([[1, 3]], [[3]]), ValueError, r"src_rows\[0\] must hold real token ids >= 3"),
    "float ids": (lambda: task_data.seq2seq_batch([[3.0]], [[3]]), TypeError, r"src_rows\[0\] must hold integer token ids"),
    "empty row": (lambda: task_data.seq2seq_batch([[3]], [[]]), ValueError, r"tgt_rows\[0\] must be a non-empty list"),
    "row counts": (lambda: task_data.seq2seq_batch([[3], [4]], [[3]]), ValueError, r"same length, got 2 and 1"),
    "vocab special": (lambda: Vocab(["a", "<eos>"]), ValueError, r"must not contain the special token '<eos>'"),
    "vocab string": (lambda: Vocab("abc"), TypeError, r"tokens must be a sequence of strings"),
    "unknown word": (lambda: Vocab(["a"]).encode(["b"]), ValueError, r"'b', which is not in the vocabulary"),
    "corpus": (lambda: task_data.toy_corpus_pairs([("a b", "")]), TypeError, r"pairs must be a non-empty list"),
    "train model": (lambda: train("net", lambda s: 0, tasks.seq2seq_loss, 1, 0.1), TypeError,
                    r"model must be a torch.nn.Module"),
    "train batches": (lambda: train(torch.nn.Linear(1, 1), None, tasks.seq2seq_loss, 1, 0.1), TypeError,
                      r"batches_fn must be callable"),
    "train steps": (lambda: train(torch.nn.Linear(1, 1), lambda s: 0, tasks.seq2seq_loss, 0, 0.1),
                    ValueError, r"steps must be an integer >= 1, got 0"),
    "train lr": (lambda: train(torch.nn.Linear(1, 1), lambda s: 0, tasks.seq2seq_loss, 1, -1.0),
                 ValueError, r"lr must be a positive number"),
    "train scalar": (lambda: train(torch.nn.Linear(1, 1), lambda s: 0, lambda m, b: torch.zeros(2), 1, 0.1),
                     TypeError, r"loss_fn must return a scalar tensor"),
    "loss batch": (lambda: tasks.seq2seq_loss(torch.nn.Linear(1, 1), (1, 2)), TypeError,
                   r"batch must be the triple"),
    "accuracy lengths": (lambda: tasks.accuracy_by_length(None, "copy", 5, 4), TypeError,
                         r"lengths must be a non-empty list"),
    "grad cell": (lambda: rnn_analysis.rnn_gradient_norms(5, cell="lstm"), ValueError, r"cell must be one of"),
    "grad T": (lambda: rnn_analysis.rnn_gradient_norms(0), ValueError, r"T must be an integer >= 1"),
    "jacobian W_h": (lambda: rnn_analysis.jacobian_product_norms(np.zeros((2, 3)), np.zeros((4, 2)), np.zeros(2)),
                     ValueError, r"W_h must be a square"),
    "jacobian states": (lambda: rnn_analysis.jacobian_product_norms(np.eye(2), np.zeros((4, 3)), np.zeros(2)),
                        ValueError, r"states must have shape \(T, d_h=2\)"),
    "min_time fn": (lambda: rnn_analysis.min_time(3), TypeError, r"fn must be callable"),
    "timing lengths": (lambda: rnn_analysis.sequential_vs_parallel_times(8), TypeError,
                       r"lengths must be a non-empty list"),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_input_is_named(name):
    call, exc, pattern = BAD[name]
    with pytest.raises(exc, match=pattern):
        call()


# --- chapter 1's recipes (their pieces; retraining is tools/train.py --check) ------------------

def test_copy_recipe_pieces_match_the_chapter():
    from course_lib import repro

    plain, attention = tasks.copy_model(False), tasks.copy_model(True)
    assert plain.attention is None and attention.attention is not None
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), tasks.copy_model(False).state_dict().values()))
    assert tasks.COPY_LENGTHS == (5, 10, 15, 20, 25, 30, 35, 40)
    src, tgt_in, tgt_out = tasks.copy_batches()(0)
    assert src.shape[0] == tasks.COPY["batch_size"] and tasks.COPY["min_len"] <= src.shape[1] <= tasks.COPY["max_len"]
    assert torch.equal(tgt_out[:, :-1], src)
    for name in ("ch01-copy-plain", "ch01-copy-attention", "ch01-translator"):
        assert repro.RECIPES[name].chapter == "ch01"
    assert set(repro.RECIPES["ch01-copy-plain"].tolerance) == {"tf_accuracy", "greedy_accuracy"}
    # A model known by construction: right on the first 10 tokens teacher-forced, the first 20 greedy.
    dtypes = []
    scripted = _Scripted("copy", tasks.COPY["n_symbols"], k_tf=10, k_greedy=20, log=dtypes)
    metrics = tasks.copy_metrics(scripted)
    assert set(metrics) == set(repro.RECIPES["ch01-copy-attention"].tolerance)
    lengths = (5, 10, 15, 20, 25, 30, 35, 40)
    tf = sum(Fraction(min(10, L), L) for L in lengths) / len(lengths)
    greedy = sum(Fraction(min(20, L), L) for L in lengths) / len(lengths)
    assert metrics == {"tf_accuracy": pytest.approx(float(tf), rel=1e-12),
                       "greedy_accuracy": pytest.approx(float(greedy), rel=1e-12)}
    assert dtypes and set(dtypes) == {torch.float64}                      # evaluated on a float64 copy
    assert scripted.weight.dtype == torch.float32 and scripted.training   # the model itself is untouched


def test_translator_split_holds_out_every_eighth_pair():
    src_vocab, tgt_vocab, train_batch, held_batch = tasks.translator_split()
    n = len(task_data.TOY_CORPUS)
    assert len(held_batch[0]) == n // 8 and len(train_batch[0]) + len(held_batch[0]) == n
    rows = lambda b: {tuple(r[r != PAD_ID].tolist()) for r in b[0]}                   # noqa: E731
    assert not rows(train_batch) & rows(held_batch)
    first = tuple(src_vocab.encode("I love deep learning".split(), add_special=False))
    assert first in rows(train_batch)
    model = tasks.translator_model(src_vocab, tgt_vocab)
    assert model.attention is not None
    with pytest.raises(ValueError, match="every must be an integer >= 2"):
        tasks.translator_split(every=1)


class _Echo(torch.nn.Module):
    """Decodes a fixed answer: the targets, one of them spoilt, or without <eos>."""

    def __init__(self, answer):
        super().__init__()
        self.answer = answer

    def greedy_decode(self, src, sos_id, eos_id, max_len):
        return self.answer, None


def test_exact_matches_counts_whole_sentences_up_to_eos():
    _, _, batch, _ = tasks.translator_split()
    tgt_out = batch[2]
    assert tasks.exact_matches(_Echo(tgt_out.clone()), batch) == len(tgt_out)
    spoilt = tgt_out.clone()
    spoilt[0, 0] = spoilt[0, 0] + 1 if spoilt[0, 0] + 1 != EOS_ID else 3
    assert tasks.exact_matches(_Echo(spoilt), batch) == len(tgt_out) - 1
    no_eos = tgt_out.clone()
    no_eos[1][no_eos[1] == EOS_ID] = PAD_ID
    assert tasks.exact_matches(_Echo(no_eos), batch) == len(tgt_out) - 1
