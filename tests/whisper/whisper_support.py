"""Helpers of the Whisper tests (imported by tests/whisper/conftest.py and the tests there): the fixed test
sentences, speech synthesis with espeak-ng into 16 kHz mono WAV files, WAV reading, and the word error rate."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Sequence, Tuple

import numpy as np

SAMPLE_RATE = 16000
# espeak-ng's American English voice at 130 words a minute, with 0.5 s of silence before and after each sentence
# (chosen once, by tiny.en's WER over these sentences at 120..180 wpm with and without the silence: 9..18%;
# the figure the tests report is for these settings)
# The foreign sentences: 150 wpm, no added silence (with it base takes the second German one for English).
ENGLISH_VOICE = ("en-us", 130)
ENGLISH_SILENCE_S = 0.5
FOREIGN_SPEED = 150
_RECIPE = "sox-rate-16k-pad-or-resample_poly"  # part of the cache key

ENGLISH_SENTENCES: Tuple[str, ...] = (
    "The quick brown fox jumps over the lazy dog.",
    "Please call me back when you get home tonight.",
    "The weather is cold and windy this morning.",
    "We need to buy bread, milk and eggs from the store.",
    "My brother is reading a book in the garden.",
    "The train to the city leaves at noon every day.",
    "She opened the window to let the fresh air in.",
    "Could you help me carry these boxes upstairs?",
    "The children are playing football in the park.",
    "I would like a cup of hot coffee with sugar.",
    "The meeting will start after lunch on Monday.",
    "He forgot his keys on the kitchen table again.",
)

# (language, sentence, an English word its translation contains or None)
FOREIGN_SENTENCES: Tuple[Tuple[str, str, object], ...] = (
    ("de", "Guten Morgen, wie geht es dir heute?", "morning"),
    ("de", "Ich trinke jeden Morgen eine Tasse Kaffee.", "coffee"),
    ("fr", "Bonjour, je voudrais un café, s'il vous plaît.", "coffee"),
    ("es", "Buenos días, ¿cómo estás hoy?", None),
    ("es", "Me gusta mucho leer libros en la playa.", "beach"),
)


@dataclass(frozen=True)
class SpeechSample:
    """One synthesized sentence: its text and language, the 16 kHz mono WAV file and its samples."""

    text: str
    language: str
    path: Path
    audio: np.ndarray  # float32 in [-1, 1], 16 kHz mono
    translation_word: object = None  # an English word the translation should contain (foreign samples)


@dataclass(frozen=True)
class SpeechSamples:
    """The English samples (``english``, >= 10) and the non-English ones (``foreign``)."""

    english: Tuple[SpeechSample, ...]
    foreign: Tuple[SpeechSample, ...]

    def __iter__(self) -> Iterator[SpeechSample]:
        return iter(self.english + self.foreign)


def read_wav(path: Path) -> np.ndarray:
    """A 16-bit PCM mono WAV file as float32 samples in [-1, 1]."""
    with wave.open(str(path)) as w:
        if w.getsampwidth() != 2 or w.getnchannels() != 1:
            raise ValueError(f"{path}: expected 16-bit mono PCM")
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0


def espeak_version() -> str:
    r = subprocess.run(["espeak-ng", "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=True)
    return r.stdout.decode("utf-8", "replace").strip()


def _resample_to_16k(src: Path, dst: Path, silence_s: float) -> None:
    """espeak-ng writes 22050 Hz; sox resamples (and pads with silence) when present, else scipy's polyphase
    resampler."""
    if shutil.which("sox"):
        subprocess.run(["sox", str(src), "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", str(dst),
                        "pad", str(silence_s), str(silence_s)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return
    from scipy.signal import resample_poly

    with wave.open(str(src)) as w:
        rate = w.getframerate()
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float64)
    g = np.gcd(rate, SAMPLE_RATE)
    out = np.clip(resample_poly(pcm, SAMPLE_RATE // g, rate // g), -32768, 32767).astype("<i2")
    silence = np.zeros(int(silence_s * SAMPLE_RATE), dtype="<i2")
    out = np.concatenate([silence, out, silence])
    with wave.open(str(dst), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(out.tobytes())


def synthesize(text: str, voice: str, speed: int, cache: Path, silence_s: float = 0.0) -> Path:
    """``text`` spoken by espeak-ng as a 16 kHz mono WAV in ``cache`` with ``silence_s`` seconds of silence
    before and after (named by a hash of the inputs and the espeak-ng version; made once)."""
    key = hashlib.sha256("\0".join([espeak_version(), voice, str(speed), text, str(silence_s), _RECIPE]).encode()
                         ).hexdigest()[:20]
    out = cache / f"{voice}-{speed}-{key}.wav"
    if out.is_file():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    raw = cache / f".{key}.{os.getpid()}.raw.wav"
    part = cache / f".{key}.{os.getpid()}.wav"
    try:
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(raw), text], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _resample_to_16k(raw, part, silence_s)
        os.replace(part, out)
    finally:
        for p in (raw, part):
            if p.exists():
                p.unlink()
    return out


def speech_samples(cache: Path) -> SpeechSamples:
    """Every test sentence synthesized (cached in ``cache``)."""
    voice, speed = ENGLISH_VOICE
    english = tuple(SpeechSample(s, "en", p, read_wav(p))
                    for s in ENGLISH_SENTENCES for p in [synthesize(s, voice, speed, cache, ENGLISH_SILENCE_S)])
    foreign = tuple(SpeechSample(s, lang, p, read_wav(p), word)
                    for lang, s, word in FOREIGN_SENTENCES for p in [synthesize(s, lang, FOREIGN_SPEED, cache)])
    return SpeechSamples(english, foreign)


# --------------------------------------------------------------------------- word error rate


def normalize_words(text: str) -> List[str]:
    """Lower case, punctuation (except apostrophes inside words) to spaces, split on whitespace."""
    text = re.sub(r"[^\w']+", " ", text.lower())
    return [w.strip("'") for w in text.split() if w.strip("'")]


def word_errors(reference: str, hypothesis: str) -> Tuple[int, int]:
    """(edit distance in words — substitutions, insertions, deletions — , reference word count)."""
    ref, hyp = normalize_words(reference), normalize_words(hypothesis)
    row = list(range(len(hyp) + 1))
    for i in range(1, len(ref) + 1):
        diagonal, row[0] = row[0], i
        for j in range(1, len(hyp) + 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (ref[i - 1] != hyp[j - 1]))
    return row[len(hyp)], len(ref)


def wer(references: Sequence[str], hypotheses: Sequence[str]) -> float:
    """Corpus word error rate: the summed word edit distances over the summed reference word counts."""
    if len(references) != len(hypotheses):
        raise ValueError(f"{len(references)} references but {len(hypotheses)} hypotheses")
    errors = words = 0
    for ref, hyp in zip(references, hypotheses):
        e, n = word_errors(ref, hyp)
        errors, words = errors + e, words + n
    if words == 0:
        raise ValueError("the references have no words")
    return errors / words


def run_oracle_cases(script: str, ir: Path, cases: List[Dict[str, Any]], tmp: Path, *extra: str) -> List[Any]:
    """Run `script` (it loads openvino_genai) in a child on `cases` (each with its "audio" samples): it gets
    ``ir cases.json out.json *extra`` (the cases with each audio saved as .npy, "audio" its path) and writes its
    results to out.json, returned here."""
    spec = []
    for i, c in enumerate(cases):
        np.save(tmp / f"audio{i}.npy", c["audio"])
        spec.append({**{k: v for k, v in c.items() if k != "audio"}, "audio": str(tmp / f"audio{i}.npy")})
    (tmp / "cases.json").write_text(json.dumps(spec))
    proc = subprocess.run([sys.executable, "-c", script, str(ir), str(tmp / "cases.json"), str(tmp / "out.json"),
                           *extra], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((tmp / "out.json").read_text())
