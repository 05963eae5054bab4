"""Log-mel features of a waveform, in NumPy float64 (chapter 12, *Speech*).

A Speech Transformer does not read samples; it reads a log-mel spectrogram,
one vector of ``n_mels`` numbers per frame (chapter 12)::

    wave (N,) --frames of win_length, every hop_length--> (T, win_length)
         --Hann window, |rfft|^2-->                       power (T, n_fft // 2 + 1)
         --mel filterbank F (n_mels, n_fft // 2 + 1)-->   mel (T, n_mels)
         --10 log10(. + floor)-->                         log-mel (T, n_mels), in dB

The mel scale is HTK's, ``mel(f) = 2595 log10(1 + f / 700)``; the filters are
triangles whose peaks are equally spaced in mel, each rising from the centre
of its left neighbour to 1 at its own centre and falling to 0 at the centre of
its right neighbour.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["hz_to_mel", "mel_to_hz", "mel_filterbank", "power_spectrogram", "log_mel"]


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _number(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise TypeError(f"{name} must be a finite real number, got {value!r}")
    return float(value)


def hz_to_mel(f):
    """HTK's mel scale, ``2595 log10(1 + f / 700)``; ``f`` in Hz (scalar or array, >= 0)."""
    f = np.asarray(f, dtype=np.float64)
    if np.any(f < 0):
        raise ValueError("f must be >= 0 Hz")
    return 2595.0 * np.log10(1.0 + f / 700.0)


def mel_to_hz(m):
    """The inverse of :func:`hz_to_mel`: ``700 (10^(m / 2595) - 1)`` Hz."""
    m = np.asarray(m, dtype=np.float64)
    return 700.0 * (10.0 ** (m / 2595.0) - 1.0)


def mel_filterbank(sr: int, n_fft: int, n_mels: int, fmin: float = 0.0, fmax: float | None = None) -> np.ndarray:
    """Triangular mel filters on the ``n_fft // 2 + 1`` bins of a real FFT (chapter 12).

    Args:
        sr: sample rate in Hz.
        n_fft: FFT length; bin ``k`` is at ``k sr / n_fft`` Hz.
        n_mels: number of filters.
        fmin, fmax: the lowest and highest edge in Hz (``fmax`` defaults to ``sr / 2``).

    Returns:
        ``F`` of shape ``(n_mels, n_fft // 2 + 1)``, peak 1 per filter; ``power @ F.T``
        gives the mel energies.
    """
    sr, n_fft, n_mels = _positive_int(sr, "sr"), _positive_int(n_fft, "n_fft"), _positive_int(n_mels, "n_mels")
    fmin = _number(fmin, "fmin")
    fmax = sr / 2.0 if fmax is None else _number(fmax, "fmax")
    if not 0 <= fmin < fmax <= sr / 2:
        raise ValueError(f"fmin and fmax must satisfy 0 <= fmin < fmax <= sr/2 = {sr / 2}, got {fmin}, {fmax}")
    edges = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))   # (n_mels + 2,) Hz
    freqs = np.arange(n_fft // 2 + 1) * sr / n_fft                                  # (n_bins,) Hz
    left, centre, right = edges[:-2, None], edges[1:-1, None], edges[2:, None]      # (n_mels, 1)
    rising = (freqs[None, :] - left) / (centre - left)
    falling = (right - freqs[None, :]) / (right - centre)
    return np.maximum(0.0, np.minimum(rising, falling))                             # (n_mels, n_bins)


def power_spectrogram(wave, n_fft: int, hop_length: int, win_length: int | None = None) -> np.ndarray:
    """``|rfft(window · frame)|^2`` of each frame; frames start every ``hop_length`` samples, no padding.

    Args:
        wave: ``(N,)`` real samples, ``N >= win_length``.
        n_fft: FFT length (the windowed frame is zero-padded to it).
        hop_length: samples between frame starts.
        win_length: Hann window length (periodic), ``<= n_fft``; defaults to ``n_fft``.

    Returns:
        ``(T, n_fft // 2 + 1)`` with ``T = 1 + (N - win_length) // hop_length``.
    """
    wave = np.asarray(wave)
    if wave.ndim != 1 or not np.issubdtype(wave.dtype, np.number) or np.iscomplexobj(wave):
        raise ValueError(f"wave must be a 1-D real array of samples, got shape {wave.shape}, dtype {wave.dtype}")
    n_fft, hop_length = _positive_int(n_fft, "n_fft"), _positive_int(hop_length, "hop_length")
    win_length = n_fft if win_length is None else _positive_int(win_length, "win_length")
    if win_length > n_fft:
        raise ValueError(f"win_length must be <= n_fft = {n_fft}, got {win_length}")
    if wave.shape[0] < win_length:
        raise ValueError(f"wave must hold at least win_length = {win_length} samples, got {wave.shape[0]}")
    wave = wave.astype(np.float64)
    T = 1 + (wave.shape[0] - win_length) // hop_length
    idx = np.arange(T)[:, None] * hop_length + np.arange(win_length)[None, :]      # (T, win_length)
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(win_length) / win_length)     # periodic Hann
    spec = np.fft.rfft(wave[idx] * window, n=n_fft, axis=1)                          # (T, n_bins)
    return spec.real ** 2 + spec.imag ** 2


def log_mel(wave, sr: int, *, n_fft: int = 512, hop_length: int = 320, win_length: int = 400,
            n_mels: int = 40, fmin: float = 0.0, fmax: float | None = None, floor: float = 1e-10) -> np.ndarray:
    """Log-mel spectrogram in dB, ``10 log10(power @ F.T + floor)`` (chapter 12).

    The defaults are chapter 12's: at 16 kHz, 25 ms windows every 20 ms, 40 mel bands.

    Args:
        wave: ``(N,)`` samples; sr: their rate in Hz; the rest as in
        :func:`power_spectrogram` and :func:`mel_filterbank`; floor: added
        before the logarithm so silence stays finite.

    Returns:
        ``(T, n_mels)`` float64.
    """
    floor = _number(floor, "floor")
    if floor <= 0:
        raise ValueError(f"floor must be > 0, got {floor}")
    power = power_spectrogram(wave, n_fft, hop_length, win_length)        # (T, n_bins)
    F = mel_filterbank(sr, n_fft, n_mels, fmin, fmax)                     # (n_mels, n_bins)
    return 10.0 * np.log10(power @ F.T + floor)                           # (T, n_mels)
