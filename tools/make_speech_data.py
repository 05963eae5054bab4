"""Make chapter 12's spoken-digit data set, once: ``data/speech/digits.npz`` and two example wavs.

Spoken digit strings (1 to 4 digits) in English and Mandarin, synthesised
offline with Debian's ``espeak-ng`` (voice, variant, speed, pitch and word gap
drawn with a fixed seed), resampled to 16 kHz with ``sox``, mixed with white
noise at a random signal-to-noise ratio, and turned into log-mel features with
:func:`course_lib.analysis.mel.log_mel` (25 ms windows every 20 ms, 40 bands)::

    python tools/make_speech_data.py            # writes data/speech/ and prints the sha256

espeak-ng's output may change between its versions, so the features are made
once and committed; the notebook and the recipe read the committed file
(:func:`course_lib.labs.speech.load_speech`, which checks its SHA-256), and
neither needs espeak-ng. The features are stored compactly: each utterance's
log-mel in dB relative to its own loudest cell, clipped at -80 dB and
quantised to uint8 (steps of 80/255 dB). Mandarin is synthesised from Arabic
digits with the ``cmn`` voice (which reads ``3 1 4`` as sān yī sì; it misreads
a string of Chinese numerals as one large number); its label is the digit string.

Speakers are (voice, variant) pairs. Held out, never in training: the variants
``+m3`` and ``+f4`` in every voice, and the whole ``en-gb-scotland`` accent.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from scipy.io import wavfile

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from course_lib.analysis.mel import log_mel  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "data" / "speech"
SR = 16000
MEL = dict(n_fft=512, hop_length=320, win_length=400, n_mels=40)
EN_VOICES = ["en-us", "en-gb", "en-gb-x-rp", "en-029", "en-us-nyc", "en-gb-x-gbclan", "en-gb-x-gbcwmd",
             "en-gb-scotland"]
ZH_VOICES = ["cmn"]
VARIANTS = [f"m{i}" for i in range(1, 8)] + [f"f{i}" for i in range(1, 6)]
HELD_OUT_VARIANTS = ("m3", "f4")
HELD_OUT_VOICES = ("en-gb-scotland",)
N_TRAIN, N_TEST = 2200, 500
SPEED, PITCH, GAP, SNR_DB = (120, 221), (20, 81), (0, 9), (15.0, 35.0)
DB_RANGE = 80.0
TRIM_DB = 45.0
SEED = 0


def espeak_cmd(voice, variant, speed, pitch, gap, text):
    return ["espeak-ng", "-v", f"{voice}+{variant}", "-s", str(speed), "-p", str(pitch), "-g", str(gap),
            "--stdout", text]


SOX_CMD = ["sox", "-t", "wav", "-", "-r", str(SR), "-b", "16", "-e", "signed-integer", "-c", "1", "-t", "raw", "-"]


def synthesise(voice, variant, speed, pitch, gap, text) -> np.ndarray:
    """16 kHz float64 samples in [-1, 1] of espeak-ng saying ``text``."""
    raw = subprocess.run(espeak_cmd(voice, variant, speed, pitch, gap, text), check=True,
                         capture_output=True).stdout
    pcm = subprocess.run(SOX_CMD, input=raw, check=True, capture_output=True).stdout
    return np.frombuffer(pcm, dtype="<i2").astype(np.float64) / 32768.0


def features(wave: np.ndarray) -> np.ndarray:
    """uint8 log-mel: dB relative to the loudest cell, clipped at -80, trimmed of leading/trailing silence."""
    lm = log_mel(wave, SR, **MEL)                                # (T, 40) dB
    lm = lm - lm.max()
    energy = lm.max(axis=1)
    loud = np.flatnonzero(energy > -TRIM_DB)
    lm = lm[max(0, loud[0] - 2): loud[-1] + 3]
    return np.round((np.clip(lm, -DB_RANGE, 0.0) + DB_RANGE) * 255.0 / DB_RANGE).astype(np.uint8)


def speakers(split: str):
    out = []
    for lang, voices in (("en", EN_VOICES), ("zh", ZH_VOICES)):
        for v in voices:
            for var in VARIANTS:
                held = var in HELD_OUT_VARIANTS or v in HELD_OUT_VOICES
                if held == (split == "test"):
                    out.append((lang, v, var))
    return out


def make_split(split: str, n: int, rng) -> dict:
    pool = {lang: [s for s in speakers(split) if s[0] == lang] for lang in ("en", "zh")}
    rows, feats = [], []
    for i in range(n):
        lang = ("en", "zh")[i % 2]
        _, voice, variant = pool[lang][rng.integers(len(pool[lang]))]
        digits = "".join(str(d) for d in rng.integers(0, 10, size=rng.integers(1, 5)))
        speed, pitch, gap = (int(rng.integers(*r)) for r in (SPEED, PITCH, GAP))
        snr = float(rng.uniform(*SNR_DB))
        wave = synthesise(voice, variant, speed, pitch, gap, " ".join(digits))
        noise = rng.standard_normal(wave.shape[0])
        wave = wave + noise * np.sqrt(np.mean(wave ** 2) / 10 ** (snr / 10))
        f = features(wave)
        feats.append(f)
        rows.append((digits, lang, voice, variant, speed, pitch, gap, round(snr, 2), f.shape[0]))
    cols = list(zip(*rows))
    return {"feats": np.concatenate(feats), "lengths": np.array(cols[8], dtype=np.int32),
            "digits": np.array(cols[0]), "lang": np.array(cols[1]), "voice": np.array(cols[2]),
            "variant": np.array(cols[3]), "speed": np.array(cols[4], dtype=np.int16),
            "pitch": np.array(cols[5], dtype=np.int16), "gap": np.array(cols[6], dtype=np.int16),
            "snr_db": np.array(cols[7], dtype=np.float32)}


def version(cmd) -> str:
    return subprocess.run(cmd, capture_output=True, text=True).stdout.strip().splitlines()[0]


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    arrays = {}
    for split, n in (("train", N_TRAIN), ("test", N_TEST)):
        for k, v in make_split(split, n, rng).items():
            arrays[f"{split}_{k}"] = v
    meta = {
        "espeak_ng": version(["espeak-ng", "--version"]), "sox": version(["sox", "--version"]),
        "espeak_command": " ".join(espeak_cmd("{voice}", "{variant}", "{speed}", "{pitch}", "{gap}",
                                              "'{d1} {d2} …'")),
        "sox_command": " ".join(SOX_CMD), "sample_rate": SR, "mel": MEL, "mel_scale": "HTK",
        "storage": f"uint8 q = round((dB - max dB, clipped at -{DB_RANGE:g}) + {DB_RANGE:g}) * 255/{DB_RANGE:g}); "
                   f"frames quieter than -{TRIM_DB:g} dB trimmed at both ends (2 frames kept)",
        "noise": f"white, SNR uniform in {SNR_DB} dB", "speed_wpm": SPEED, "pitch": PITCH, "word_gap_10ms": GAP,
        "voices": {"en": EN_VOICES, "zh": ZH_VOICES}, "variants": VARIANTS,
        "held_out": {"variants": HELD_OUT_VARIANTS, "voices": HELD_OUT_VOICES},
        "split": {"train": N_TRAIN, "test": N_TEST}, "seed": SEED,
        "zh_text": "Arabic digits read by the cmn voice", "generator": "tools/make_speech_data.py",
    }
    digest = hashlib.sha256()
    for k in sorted(arrays):
        digest.update(k.encode() + np.ascontiguousarray(arrays[k]).tobytes())
    meta["arrays_sha256"] = digest.hexdigest()
    np.savez_compressed(OUT / "digits.npz", meta=np.array(json.dumps(meta, sort_keys=True)), **arrays)
    for name, args in (("example_en.wav", ("en-us", "f2", 150, 50, 2, "3 1 4")),
                       ("example_zh.wav", ("cmn", "m1", 150, 50, 2, "2 0 7"))):
        wave = synthesise(*args)
        wavfile.write(OUT / name, SR, np.round(wave * 32767).astype(np.int16))
    for f in sorted(OUT.iterdir()):
        print(f"{f.name}  {f.stat().st_size} bytes  sha256 {hashlib.sha256(f.read_bytes()).hexdigest()}")


if __name__ == "__main__":
    main()
