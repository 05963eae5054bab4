"""Chapter 12: log-mel features, the Speech Transformer, the spoken-digit data and its metrics."""

import math
import shutil

import numpy as np
import pytest
import torch
from scipy import signal

from course_lib.analysis import mel
from course_lib.labs import speech as S
from course_lib.models.speech import SpeechTransformer, subsampled_lengths

# ----------------------------------------------------------------------------- features


def test_mel_scale_matches_htk_by_hand():
    # 700 Hz is where HTK's scale reaches 2595 log10(2); 0 Hz is 0 mel.
    assert mel.hz_to_mel(700.0) == pytest.approx(2595 * math.log10(2), rel=1e-15)
    assert mel.hz_to_mel(0.0) == 0.0
    f = np.array([50.0, 440.0, 3000.0, 7999.0])
    np.testing.assert_allclose(mel.mel_to_hz(mel.hz_to_mel(f)), f, rtol=1e-12)


def _filterbank_by_loops(sr, n_fft, n_mels):
    # Independent: each triangle written out bin by bin with plain math.
    lo, hi = 0.0, 2595 * math.log10(1 + sr / 2 / 700)
    pts = [700 * (10 ** ((lo + (hi - lo) * i / (n_mels + 1)) / 2595) - 1) for i in range(n_mels + 2)]
    out = np.zeros((n_mels, n_fft // 2 + 1))
    for m in range(n_mels):
        a, b, c = pts[m], pts[m + 1], pts[m + 2]
        for k in range(n_fft // 2 + 1):
            f = k * sr / n_fft
            if a <= f <= b:
                out[m, k] = (f - a) / (b - a)
            elif b < f <= c:
                out[m, k] = (c - f) / (c - b)
    return out


def test_filterbank_equals_a_bin_by_bin_computation():
    np.testing.assert_allclose(mel.mel_filterbank(16000, 512, 40), _filterbank_by_loops(16000, 512, 40),
                               rtol=0, atol=1e-12)


def test_power_spectrogram_equals_scipy_stft():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(3000)
    win = signal.get_window("hann", 400)                      # periodic Hann
    _, _, Z = signal.stft(x, window=win, nperseg=400, noverlap=400 - 320, nfft=512, boundary=None,
                          padded=False, detrend=False, return_onesided=True)
    expected = np.abs(Z.T * win.sum()) ** 2                   # scipy scales by 1 / sum(window)
    got = mel.power_spectrogram(x, 512, 320, 400)
    assert got.shape == expected.shape == (1 + (3000 - 400) // 320, 257)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)


def test_a_pure_tone_lands_in_the_band_centred_nearest_to_it():
    sr, f0 = 16000, 1000.0
    t = np.arange(sr) / sr
    lm = mel.log_mel(np.sin(2 * np.pi * f0 * t), sr)
    centres = mel.mel_to_hz(np.linspace(0, mel.hz_to_mel(sr / 2), 42))[1:-1]
    assert lm.shape == (1 + (sr - 400) // 320, 40)
    assert set(lm.argmax(axis=1)) == {int(np.argmin(np.abs(centres - f0)))}


@pytest.mark.parametrize("call,exc,match", [
    (lambda: mel.mel_filterbank(16000, 512, 40, fmax=9000), ValueError, "fmin and fmax"),
    (lambda: mel.mel_filterbank(16000, 0, 40), TypeError, "n_fft must be a positive integer"),
    (lambda: mel.power_spectrogram(np.ones((2, 500)), 512, 160), ValueError, "wave must be a 1-D"),
    (lambda: mel.power_spectrogram(np.ones(100), 512, 160, 400), ValueError, "at least win_length"),
    (lambda: mel.power_spectrogram(np.ones(1000), 256, 160, 400), ValueError, "win_length must be <= n_fft"),
    (lambda: mel.log_mel(np.ones(1000), 16000, floor=0.0), ValueError, "floor must be > 0"),
    (lambda: mel.hz_to_mel(-1.0), ValueError, "f must be >= 0"),
])
def test_bad_feature_input_is_named(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# ----------------------------------------------------------------------------- model


def _model(**kw):
    torch.manual_seed(0)
    return SpeechTransformer(**{**S.MODEL, **kw}).double().eval()


def _inputs(B=3, T=37, L=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    frames = torch.randn(B, T, 40, generator=g, dtype=torch.float64)
    lengths = torch.tensor([T, T - 10, 4][:B])        # 27: odd, so a padded frame shares a window
    tokens = torch.randint(3, len(S.VOCAB), (B, L), generator=g)
    return frames, lengths, tokens


def test_shapes_and_subsampling():
    model = _model()
    frames, lengths, tokens = _inputs()
    memory, mask, _ = model.encode(frames, lengths)
    assert subsampled_lengths(torch.tensor([37, 28, 4, 1])).tolist() == [10, 7, 1, 1]   # ceil(ceil(T/2)/2)
    assert memory.shape == (3, 10, 64) and mask.shape == (3, 1, 1, 10)
    assert mask[:, 0, 0].sum(1).tolist() == [10, 7, 1]
    assert model(frames, lengths, tokens).shape == (3, 5, len(S.VOCAB))
    out = model.generate_text(frames, lengths, S.VOCAB.sos_id, S.VOCAB.eos_id, max_len=4)
    assert out.shape[0] == 3 and out.shape[1] <= 4



def test_subsample_frames_is_the_front_end_and_ignores_padding():
    # Each row's first lengths' positions are the two convolutions (with ReLU) of its real frames alone;
    # garbage after an utterance's end changes nothing there.
    model = _model()
    frames, lengths, _ = _inputs()
    padded = frames.clone()
    padded[1, int(lengths[1]):] = 1e3
    x, sub = model.subsample_frames(padded, lengths)
    assert x.shape == (3, 10, 64) and sub.tolist() == subsampled_lengths(lengths).tolist()
    for b in range(3):
        alone = model.subsample(frames[b:b + 1, :int(lengths[b])].transpose(1, 2)).transpose(1, 2)[0]
        torch.testing.assert_close(x[b, :int(sub[b])], alone, rtol=0, atol=1e-12)

def test_decoder_is_causal():
    # Changing tokens after position t leaves the logits at positions <= t exactly as they were.
    model = _model()
    frames, lengths, tokens = _inputs()
    base = model(frames, lengths, tokens)
    for t in range(tokens.shape[1] - 1):
        other = tokens.clone()
        other[:, t + 1:] = (other[:, t + 1:] - 3 + 1) % (len(S.VOCAB) - 3) + 3
        new = model(frames, lengths, other)
        torch.testing.assert_close(new[:, :t + 1], base[:, :t + 1], rtol=0, atol=0)
        assert not torch.allclose(new[:, t + 1:], base[:, t + 1:])


def test_frame_order_matters():
    # With positions (and convolutions) the encoder is not permutation-equivariant.
    model = _model()
    frames, lengths, tokens = _inputs(B=1, T=24)
    perm = torch.randperm(24, generator=torch.Generator().manual_seed(1))
    assert not torch.allclose(model(frames, lengths, tokens), model(frames[:, perm], lengths, tokens), atol=1e-6)


def test_positions_tell_identical_frames_apart():
    # A constant input: the convolutions give the same vector at every interior position, so
    # only the positional encoding can make the encoder's outputs there differ.
    model = _model()
    frames = torch.full((1, 40, 40), 0.5, dtype=torch.float64)
    memory, _, _ = model.encode(frames, torch.tensor([40]))
    inner = memory[0, 1:-1]                                                  # (8, d_model)
    gaps = torch.cdist(inner, inner) + torch.eye(len(inner)) * 1e9
    assert gaps.min() > 1e-3


def test_padding_does_not_change_an_utterance():
    # Alone or padded in a batch with garbage after its end: the same logits.
    model = _model()
    frames, lengths, tokens = _inputs()
    alone = model(frames[1:2, :27], lengths[1:2], tokens[1:2])
    padded = frames.clone()
    padded[1, 27:] = 1e3
    torch.testing.assert_close(model(padded, lengths, tokens)[1:2], alone, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("call,exc,match", [
    (lambda m, f, l, t: m(f[..., :30], l, t), ValueError, r"frames .*n_mels=40"),
    (lambda m, f, l, t: m(f, l[:2], t), ValueError, "lengths must hold one length per utterance"),
    (lambda m, f, l, t: m(f, l + 1, t), ValueError, r"lengths must lie in \[1, T = 37\]"),
    (lambda m, f, l, t: m(f, l.double(), t), TypeError, "lengths must be an integer tensor"),
    (lambda m, f, l, t: m(f, l, t + 100), ValueError, "tokens must hold ids in"),
    (lambda m, f, l, t: m(f, l, torch.ones(3, 9, dtype=torch.long)), ValueError, "longer than max_len = 8"),
    (lambda m, f, l, t: m.generate_text(f, l, 1, 2, max_len=8), ValueError, "max_len must be < max_tokens"),
    (lambda m, f, l, t: m.generate_text(f, l, 99, 2), ValueError, "sos_id"),
    (lambda m, f, l, t: SpeechTransformer(d_model=64, num_heads=5), ValueError, "divisible by num_heads=5"),
    (lambda m, f, l, t: SpeechTransformer(n_mels=0), ValueError, "SpeechTransformerConfig.n_mels"),
])
def test_bad_model_input_is_named(call, exc, match):
    frames, lengths, tokens = _inputs()
    with pytest.raises(exc, match=match):
        call(_model(), frames, lengths, tokens)


# ----------------------------------------------------------------------------- data and metrics


def test_committed_data_and_held_out_speakers():
    train, test, meta = S.load_speech()
    assert (len(train), len(test)) == (meta["split"]["train"], meta["split"]["test"])
    assert all(f.shape[1] == 40 and f.dtype == np.float64 for f in train.feats[:20])
    # dB relative to each utterance's loudest cell, on the uint8 grid of 80/255 dB steps
    assert all(f.max() == 0.0 and f.min() >= -80.0 for f in test.feats)
    q = (test.feats[0] + 80.0) * 255.0 / 80.0
    np.testing.assert_allclose(q, np.round(q), rtol=0, atol=1e-9)
    seen = set(zip(train.voice, train.variant))
    assert not seen & set(zip(test.voice, test.variant))
    assert set(test.variant) >= set(meta["held_out"]["variants"]) and not set(train.variant) & set(meta["held_out"]["variants"])
    assert {"en", "zh"} == set(train.lang) == set(test.lang)
    assert all(1 <= len(str(d)) <= 4 and str(d).isdigit() for d in train.digits)


def test_a_changed_data_file_is_refused(tmp_path, monkeypatch):
    (tmp_path / "speech").mkdir()
    src = S.data_path(*S.DATA_FILE)
    dst = tmp_path / "speech" / "digits.npz"
    shutil.copy(src, dst)
    with open(dst, "ab") as fh:
        fh.write(b"x")
    monkeypatch.setenv("COURSE_DATA", str(tmp_path))
    S.load_speech.cache_clear()
    try:
        with pytest.raises(ValueError, match="expected 98b112c49c29"):
            S.load_speech()
    finally:
        S.load_speech.cache_clear()


def test_batch_targets_start_with_the_language():
    train, _, _ = S.load_speech()
    i = next(k for k in range(len(train)) if train.lang[k] == "zh" and len(str(train.digits[k])) == 3)
    frames, lengths, tgt_in, tgt_out = S.batch(train, [i])
    d = str(train.digits[i])
    assert [S.VOCAB.itos[t] for t in tgt_in[0]] == ["<sos>", "<zh>", *d]
    assert [S.VOCAB.itos[t] for t in tgt_out[0]] == ["<zh>", *d, "<eos>"]
    np.testing.assert_allclose(frames[0, :lengths[0]].numpy(), (train.feats[i] + 40) / 20, rtol=1e-6)


def test_edit_distance_and_cer_by_hand():
    assert S.edit_distance("314", "314") == 0
    assert S.edit_distance("314", "34") == 1          # one deletion
    assert S.edit_distance("314", "3140") == 1        # one insertion
    assert S.edit_distance("314", "413") == 2         # two substitutions
    assert S.edit_distance("", "12") == 2
    assert S.cer(["314", "27"], ["34", "27"]) == pytest.approx(1 / 5)
    with pytest.raises(ValueError, match="refs and hyps"):
        S.cer(["1"], [])


# ----------------------------------------------------------------------------- recipe and loss


def test_loss_mixes_cross_entropy_and_ctc():
    train, _, _ = S.load_speech()
    model = _model()                                          # eval mode: no dropout, deterministic
    b = S.batch(train, [0, 1, 2, 3], dtype=torch.float64)
    frames, lengths, tgt_in, tgt_out = b
    logits = model(frames, lengths, tgt_in)
    ce_by_hand = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1),
                                                   ignore_index=0)
    ce, ctc = S.loss_fn(model, b, ctc_weight=0.0), S.loss_fn(model, b, ctc_weight=1.0)
    torch.testing.assert_close(ce, ce_by_hand, rtol=1e-12, atol=1e-12)
    assert abs(float((ctc - ce).detach())) > 1e-3
    torch.testing.assert_close(S.loss_fn(model, b, ctc_weight=0.5), 0.5 * ce + 0.5 * ctc, rtol=1e-12, atol=1e-12)


def test_recipe_and_checkpoint_fit_the_lab():
    from course_lib import repro

    rec = repro.RECIPES["ch10-speech"]
    meta = repro.checkpoint_meta("ch10-speech")
    assert rec.chapter == "ch10" and set(rec.tolerance) <= set(meta["metrics"])
    assert {k: meta["config"][k] for k in S.MODEL} == S.MODEL and meta["config"]["data_sha256"] == S.DATA_SHA256
    model = S.build(0)
    repro.load_checkpoint("ch10-speech", model, dtype=torch.float64)
    assert meta["metrics"]["cer"] < meta["metrics"]["majority_cer"]


def test_bad_lab_input_is_named():
    train, test, _ = S.load_speech()
    with pytest.raises(ValueError, match=r"index must hold positions in \[0, 2200\)"):
        S.batch(train, [0, 2200])
    with pytest.raises(ValueError, match="by must be one of"):
        S.breakdown(test, [("en", "1")] * len(test), by="speaker")
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        S.build(-1)
