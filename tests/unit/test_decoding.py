"""Greedy and beam search (course_lib.models.decoding, chapter 5)."""

import itertools
import math

import pytest
import torch

from course_lib.models import Transformer
from course_lib.models.decoding import beam_search, greedy_search, sequence_log_prob, transformer_log_probs

PAD, SOS, EOS, A, B = range(5)

# A hand-built decoder: next-token probabilities given the prefix (after <sos>).
# Greedy takes A (0.6), then the best it can do is <eos> (0.4): p = 0.24.
# The better output is B <eos>: 0.4 * 0.9 = 0.36, which greedy never looks at.
TOY = {(): {A: 0.6, B: 0.4},
       (A,): {EOS: 0.4, A: 0.3, B: 0.3},
       (B,): {EOS: 0.9, A: 0.05, B: 0.05}}


def toy_probs(prefix):
    return TOY.get(tuple(prefix), {EOS: 1.0})


def toy_log_prob_fn(prefixes):
    B_, K, t = prefixes.shape
    out = torch.full((B_, K, 5), float("-inf"), dtype=torch.float64)
    for b in range(B_):
        for k in range(K):
            for tok, p in toy_probs(prefixes[b, k, 1:].tolist()).items():
                out[b, k, tok] = math.log(p)
    return out


def toy_best_by_enumeration(max_len=3):
    best = None
    for n in range(1, max_len + 1):
        for seq in itertools.product([A, B, EOS], repeat=n):
            if seq[-1] != EOS or EOS in seq[:-1]:
                continue
            p = 1.0
            for i, tok in enumerate(seq):
                p *= toy_probs(seq[:i]).get(tok, 0.0)
            if best is None or p > best[1]:
                best = (list(seq), p)
    return best


def test_greedy_is_suboptimal_on_the_toy_and_beam_finds_the_best():
    greedy, g_score = greedy_search(toy_log_prob_fn, 1, SOS, EOS, PAD, max_len=3)
    assert greedy.tolist() == [[A, EOS]] and math.isclose(float(g_score[0]), math.log(0.6 * 0.4))
    beam, b_score = beam_search(toy_log_prob_fn, 1, SOS, EOS, PAD, max_len=3, beam_width=2)
    seq, p = toy_best_by_enumeration()
    assert seq == [B, EOS]
    assert beam.tolist() == [seq] and math.isclose(float(b_score[0]), math.log(p))
    assert float(b_score[0]) > float(g_score[0])


def test_beam_width_one_is_greedy_on_the_toy():
    tokens, score = beam_search(toy_log_prob_fn, 2, SOS, EOS, PAD, max_len=3, beam_width=1)
    greedy, g_score = greedy_search(toy_log_prob_fn, 2, SOS, EOS, PAD, max_len=3)
    assert torch.equal(tokens, greedy) and torch.equal(score, g_score)


def _model(seed=0):
    torch.manual_seed(seed)
    return Transformer(src_vocab=9, tgt_vocab=7, d_model=16, num_heads=2, num_encoder_layers=1,
                       num_decoder_layers=1, d_ff=32, dropout=0.0, max_len=12).double().eval()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_width_one_equals_the_models_cached_greedy_decoder(seed):
    model = _model(seed)
    src = torch.tensor([[4, 5, 6, 7], [8, 4, 0, 0], [5, 5, 5, 0]])
    tokens, score = beam_search(transformer_log_probs(model, src), 3, 1, 2, 0, max_len=8, beam_width=1)
    cached = model.greedy_decode(src, 1, 2, max_len=8)
    assert torch.equal(tokens, cached)
    assert torch.allclose(score, sequence_log_prob(model, src, tokens, 1, 2), rtol=0, atol=1e-12)


def test_beam_scores_are_the_log_probabilities_of_its_outputs():
    model = _model(4)
    src = torch.tensor([[4, 5, 6, 7], [8, 4, 0, 0]])
    tokens, score = beam_search(transformer_log_probs(model, src), 2, 1, 2, 0, max_len=6, beam_width=3)
    assert torch.allclose(score, sequence_log_prob(model, src, tokens, 1, 2), rtol=0, atol=1e-12)


def test_a_wide_beam_finds_the_most_likely_output_of_a_short_search():
    """With beam_width >= all prefixes, beam search is exhaustive: compare with enumeration."""
    model = _model(5)
    src = torch.tensor([[4, 5, 6]])
    fn = transformer_log_probs(model, src)
    tokens, score = beam_search(fn, 1, 1, 2, 0, max_len=2, beam_width=7 * 7)
    best = -math.inf
    for seq in itertools.product(range(7), repeat=2):
        s = float(sequence_log_prob(model, src, torch.tensor([list(seq)]), 1, 2)[0])
        if seq[0] == 2:                       # <eos> first: a one-token output
            s = float(sequence_log_prob(model, src, torch.tensor([[2]]), 1, 2)[0])
        best = max(best, s)
    assert math.isclose(float(score[0]), best, abs_tol=1e-12)


@pytest.mark.parametrize("kwargs,err,match", [
    ({"beam_width": 0}, ValueError, "beam_width must be an integer >= 1"),
    ({"beam_width": 1.5}, TypeError, "beam_width must be an integer"),
    ({"max_len": 0}, ValueError, "max_len must be an integer >= 1"),
    ({"batch_size": 0}, ValueError, "batch_size must be an integer >= 1"),
    ({"eos_id": SOS}, ValueError, "three different ids"),
    ({"pad_id": -1}, ValueError, "pad_id must be an integer >= 0"),
])
def test_beam_search_names_bad_input(kwargs, err, match):
    args = dict(batch_size=1, sos_id=SOS, eos_id=EOS, pad_id=PAD, max_len=3, beam_width=2)
    args.update(kwargs)
    with pytest.raises(err, match=match):
        beam_search(toy_log_prob_fn, **args)


def test_a_log_prob_fn_of_the_wrong_shape_is_named():
    with pytest.raises(ValueError, match=r"log_prob_fn must return log-probabilities of shape \(B, K, V\)"):
        beam_search(lambda p: torch.zeros(p.shape[0], 5), 1, SOS, EOS, PAD, 3)
    with pytest.raises(ValueError, match="log_prob_fn must return"):
        greedy_search(lambda p: [0.0], 1, SOS, EOS, PAD, 3)


def test_transformer_helpers_name_bad_input():
    model = _model()
    with pytest.raises(TypeError, match="model must be a course_lib Transformer"):
        transformer_log_probs(torch.nn.Linear(2, 2), torch.tensor([[4]]))
    src = torch.tensor([[4, 5]])
    with pytest.raises(TypeError, match=r"tokens must be a \(B, T\) long tensor"):
        sequence_log_prob(model, src, torch.tensor([1.0, 2.0]), 1, 2)
    with pytest.raises(ValueError, match="same batch size"):
        sequence_log_prob(model, src, torch.tensor([[3, 2], [3, 2]]), 1, 2)
    with pytest.raises(ValueError, match=r"eos_id must be an integer in \[0, tgt_vocab\)"):
        sequence_log_prob(model, src, torch.tensor([[3, 2]]), 1, 7)


def test_greedy_pads_a_finished_sequence_and_stops_adding_to_its_score():
    """Row 0 ends at once (<eos>, 0.7); row 1 goes on for two more steps (A 0.8, A 0.6, <eos> 0.9)."""
    table = {0: {(): {EOS: 0.7, A: 0.3}},
             1: {(): {A: 0.8, EOS: 0.2}, (A,): {A: 0.6, B: 0.4}, (A, A): {EOS: 0.9, B: 0.1}}}

    def log_prob_fn(prefixes):                                              # (B, 1, t) -> (B, 1, 5)
        out = torch.full((prefixes.shape[0], 1, 5), float("-inf"), dtype=torch.float64)
        for b in range(prefixes.shape[0]):
            for tok, p in table[b].get(tuple(prefixes[b, 0, 1:].tolist()), {EOS: 1.0}).items():
                out[b, 0, tok] = math.log(p)
        return out

    tokens, scores = greedy_search(log_prob_fn, 2, SOS, EOS, PAD, max_len=5)
    assert tokens.tolist() == [[EOS, PAD, PAD], [A, A, EOS]]
    assert scores.dtype == torch.float64
    assert scores.tolist() == [math.log(0.7), math.log(0.8) + math.log(0.6) + math.log(0.9)]
