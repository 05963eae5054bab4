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


def _table_log_prob_fn(table, V, default=None):
    """``prefixes (B, K, t) -> (B, K, V)`` from ``{prefix after <sos>: {token: p}}``; unlisted prefixes
    get ``default`` (<eos> with probability 1 if None)."""
    def log_prob_fn(prefixes):
        out = torch.full((*prefixes.shape[:2], V), float("-inf"), dtype=torch.float64)
        for b in range(prefixes.shape[0]):
            for k in range(prefixes.shape[1]):
                for tok, p in table.get(tuple(prefixes[b, k, 1:].tolist()), default or {EOS: 1.0}).items():
                    out[b, k, tok] = math.log(p)
        return out
    return log_prob_fn


# ---- mutation survivors: _check_common ----

def test_check_common_checks_the_ids_against_a_vocabulary_when_given_one():
    from course_lib.models.decoding import _check_common

    assert _check_common(2, 1, 2, 0, 5, vocab=7) == (2, 1, 2, 0, 5)
    with pytest.raises(ValueError) as err:
        _check_common(2, 1, 7, 0, 5, vocab=7)
    assert str(err.value) == "eos_id must be an integer in [0, vocab) = [0, 7), got 7"
    with pytest.raises(TypeError) as err:
        _check_common(2, 1.5, 2, 0, 5, vocab=7)
    assert str(err.value) == "sos_id must be an integer in [0, vocab) = [0, 7), got float 1.5"


# ---- mutation survivors: _next_log_probs ----

@pytest.mark.parametrize("fn,got", [
    (lambda p: torch.zeros(1, 2, 5), "(1, 2, 5)"),       # three dimensions, but K = 2 for one prefix
    (lambda p: torch.zeros(1, 1), "(1, 1)"),             # (B, K) right, no V
    (lambda p: [0.0], "list"),
])
def test_a_log_prob_fn_of_the_wrong_shape_is_named_whole(fn, got):
    with pytest.raises(ValueError) as err:
        beam_search(fn, 1, SOS, EOS, PAD, 3)
    assert str(err.value) == f"log_prob_fn must return log-probabilities of shape (B, K, V) = (1, 1, V), got {got}"


# ---- mutation survivors: beam_search ----

def test_beam_search_keeps_four_prefixes_by_default():
    """First tokens 3, 4, 5, 6, 7 (0.3, 0.2, 0.19, 0.16, 0.15); only 6 and 7 end well.

    After 3, 4 or 5 the best is 3 (0.4; <eos> and 4 0.3 each): three prefixes give 3 3,
    0.3 * 0.4 = 0.12. Four keep 6, and 6 <eos> (0.16 * 0.8 = 0.128) wins; five keep 7, and
    7 <eos> (0.15 * 1.0) wins.
    """
    after = {3: 0.4, EOS: 0.3, 4: 0.3}
    table = {(): {3: 0.3, 4: 0.2, 5: 0.19, 6: 0.16, 7: 0.15}, (6,): {EOS: 0.8, 3: 0.2}, (7,): {EOS: 1.0},
             **{(x,): after for x in (3, 4, 5)}}
    fn = _table_log_prob_fn(table, 8)
    tokens, scores = beam_search(fn, 1, SOS, EOS, PAD, max_len=2)
    assert tokens.tolist() == [[6, EOS]] and scores.tolist() == [math.log(0.16) + math.log(0.8)]
    for width, best, p in [(3, [3, 3], (0.3, 0.4)), (5, [7, EOS], (0.15, 1.0))]:
        tokens, scores = beam_search(fn, 1, SOS, EOS, PAD, max_len=2, beam_width=width)
        assert tokens.tolist() == [best] and scores.tolist() == [math.log(p[0]) + math.log(p[1])]


def test_beam_search_drops_the_padding_after_an_early_best_output():
    """<eos> first (0.4) is finished; the other prefix, 3 (0.6), drops to at most 0.6 * 0.3 = 0.18.

    At step 2 the best prefix is <eos> <pad> (0.4, finished): the search stops, and the
    column of padding is cut.
    """
    table = {(): {EOS: 0.4, 3: 0.6}, (3,): {3: 0.3, 4: 0.25, 5: 0.2, 6: 0.15, 7: 0.1}}
    tokens, scores = beam_search(_table_log_prob_fn(table, 8), 1, SOS, EOS, PAD, max_len=4, beam_width=2)
    assert tokens.tolist() == [[EOS]] and scores.tolist() == [math.log(0.4)]


def test_beam_search_returns_one_column_when_the_output_is_all_padding():
    """A decoder that only ever gives <pad> (probability 1): two steps of <pad>, cut to one column."""
    tokens, scores = beam_search(_table_log_prob_fn({}, 5, default={PAD: 1.0}), 1, SOS, EOS, PAD, max_len=2, beam_width=1)
    assert tokens.tolist() == [[PAD]] and scores.tolist() == [0.0]


@pytest.mark.parametrize("eos_id,pad_id", [(5, PAD), (7, PAD), (EOS, 5), (EOS, 6)])
def test_beam_search_names_ids_outside_the_decoders_vocabulary(eos_id, pad_id):
    with pytest.raises(ValueError) as err:
        beam_search(toy_log_prob_fn, 1, SOS, eos_id, pad_id, 3)                  # V = 5
    assert str(err.value) == "pad_id and eos_id must be ids in [0, V) = [0, 5)"


def test_beam_search_takes_eos_id_0():
    """<eos> = 0, <sos> = 1, <pad> = 2: 3 (0.7) then <eos> (1.0) beats <eos> first (0.3)."""
    table = {(): {3: 0.7, 0: 0.3}, (3,): {0: 1.0}}
    tokens, scores = beam_search(_table_log_prob_fn(table, 4, default={0: 1.0}), 1, 1, 0, 2, max_len=3, beam_width=2)
    assert tokens.tolist() == [[3, 0]] and scores.tolist() == [math.log(0.7) + math.log(1.0)]


# ---- mutation survivors: transformer_log_probs ----

def test_transformer_log_probs_names_a_wrong_model_whole():
    with pytest.raises(TypeError) as err:
        transformer_log_probs(torch.nn.Linear(2, 2), torch.tensor([[4]]))
    assert str(err.value) == "model must be a course_lib Transformer, got Linear"
