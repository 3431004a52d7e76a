"""The ``whisper`` section: ovgenai_c's WhisperPipeline (on the bundled backend) against openvino_genai's
WhisperPipeline, each in its own worker process, on the same IR, the same audio and the same (default) properties
and generation config, in paired rounds.

The audio is espeak-ng speech (American English voice, resampled to 16 kHz mono with sox, else scipy's polyphase
resampler): a short clip (one 30 s window) and a long one (over 30 s: long-form decoding in several windows).

Figures per clip and system: the real-time factor (wall time of one ``generate`` call / audio duration), the time
to first segment — the wall time of a call on the audio cut to its first 30 s window (the result of the first
window; for a clip that fits one window, the whole call), what a caller without a streamer waits for — and the time
to first text: from the call to the first text a streamer gets, in a call with a text streamer (a callable: GenAI's
TextStreamer rules on both sides; on ovgenai_c's side the bundled backend's streaming extra, as the GenAI C ABI has
no Whisper streamer). Each ratio is ovgenai_c / openvino_genai per round (both measured in the same round, in
rotating order), as a geometric mean with its 95 % interval; target ≤ 1.00."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import wave
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from .stats import median, ratio_stats

OVGENAI_C = "ovgenai_c WhisperPipeline"
GENAI = "genai WhisperPipeline"
SAMPLE_RATE = 16000
WINDOW_S = 30.0
VOICE, SPEED = "en-us", 150
TARGET = 1.0

SHORT_TEXT = ("The quick brown fox jumps over the lazy dog. Please call me back when you get home tonight. "
              "The weather is cold and windy this morning.")
LONG_TEXT = " ".join([
    "We need to buy bread, milk and eggs from the store.", "My brother is reading a book in the garden.",
    "The train to the city leaves at noon every day.", "She opened the window to let the fresh air in.",
    "Could you help me carry these boxes upstairs?", "The children are playing football in the park.",
    "I would like a cup of hot coffee with sugar.", "The meeting will start after lunch on Monday.",
    "He forgot his keys on the kitchen table again.", "The quick brown fox jumps over the lazy dog.",
    "Please call me back when you get home tonight.", "The weather is cold and windy this morning.",
    "The library closes early on Sundays, so we should hurry.", "A small boat sailed slowly across the lake.",
])
CLIPS = {"short": SHORT_TEXT, "long": LONG_TEXT}
HOW = ("real-time factor = wall time of one generate() call / audio duration; time to first segment = wall time "
       "of a call on the audio cut to its first 30 s window (the first window's result without a streamer; for a "
       "clip within one window it is the whole call); time to first text = from the call to the first text a "
       "streamer (a callable, GenAI's TextStreamer rules) gets, in a streamed call (ovgenai_c: the bundled "
       "backend's extra; the GenAI C ABI has no Whisper streamer). Both pipelines in their own worker process, "
       "same IR, same audio, default properties and generation config (greedy), audio converted before the clock "
       "starts; ratio = ovgenai_c / openvino_genai per round, geometric mean with 95 % interval.")


def espeak_available() -> bool:
    """True when espeak-ng is on PATH (the section needs it for its audio)."""
    return shutil.which("espeak-ng") is not None


def _to_16k_mono(src: Path, dst: Path) -> None:
    if shutil.which("sox"):
        subprocess.run(["sox", str(src), "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", str(dst)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return
    import numpy as np
    from scipy.signal import resample_poly

    with wave.open(str(src)) as w:
        rate = w.getframerate()
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float64)
    g = int(np.gcd(rate, SAMPLE_RATE))
    out = np.clip(resample_poly(pcm, SAMPLE_RATE // g, rate // g), -32768, 32767).astype("<i2")
    with wave.open(str(dst), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(out.tobytes())


def speak(args: List[str]) -> None:
    """Run espeak-ng with ``args`` (writing a WAV file). Its audio library, libpulse, makes a runtime folder on first
    use even then — where no XDG_RUNTIME_DIR is set, in TMPDIR, linked from ~/.config/pulse, and left there —: it is
    given a private one instead (PULSE_RUNTIME_PATH), removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="espeak-") as runtime:
        subprocess.run(["espeak-ng", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=dict(os.environ, PULSE_RUNTIME_PATH=runtime))


def make_clip(name: str, text: str, cache: Path) -> Dict[str, Any]:
    """``text`` spoken by espeak-ng into ``cache`` (made once, keyed by the text and the voice): the 16 kHz WAV,
    the float32 samples as a .npy file (what the workers load) and the duration in seconds."""
    import numpy as np

    key = hashlib.sha256("\0".join([VOICE, str(SPEED), text]).encode()).hexdigest()[:16]
    cache.mkdir(parents=True, exist_ok=True)
    wav, npy = cache / f"{name}-{key}.wav", cache / f"{name}-{key}.npy"
    if not (wav.is_file() and npy.is_file()):
        raw, part = cache / f".{key}.{os.getpid()}.raw.wav", cache / f".{key}.{os.getpid()}.wav"
        try:
            speak(["-v", VOICE, "-s", str(SPEED), "-w", str(raw), text])
            _to_16k_mono(raw, part)
            with wave.open(str(part)) as w:
                pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
            np.save(npy, pcm.astype(np.float32) / 32768.0)
            os.replace(part, wav)
        finally:
            for p in (raw, part):
                if p.exists():
                    p.unlink()
    samples = int(np.load(npy, mmap_mode="r").shape[0])
    return {"name": name, "text": text, "wav": str(wav), "npy": str(npy), "samples": samples,
            "duration_s": samples / SAMPLE_RATE, "windows": int(-(-samples // int(WINDOW_S * SAMPLE_RATE)))}


def round_cell(clip: Dict[str, Any], full_wall_s: float, first_window_wall_s: Optional[float],
               text: str, streamed: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """One system on one clip in one round: its real-time factor and time to first segment, and from the
    ``streamed`` call (its worker's answer, when one ran) the time to first text, the streamed call's wall time and
    whether it gave the same text."""
    ttfs = full_wall_s if first_window_wall_s is None else first_window_wall_s
    cell = {"wall_s": full_wall_s, "rtf": full_wall_s / clip["duration_s"], "ttfs_s": ttfs,
            "ttfs_from": "whole call (one window)" if first_window_wall_s is None else "first 30 s window",
            "text": text}
    if streamed is not None:
        cell.update(first_text_s=streamed.get("first_text_s"), streamed_wall_s=streamed["wall_s"],
                    streamed_text_same=streamed["text"] == text)
    return cell


def summarise(rounds: List[Dict[str, Dict[str, Dict[str, Any]]]], clips: Sequence[str]) -> Dict[str, Any]:
    """Per system and clip over all rounds: median real-time factor and time to first segment."""
    out: Dict[str, Any] = {}
    for s in sorted({s for r in rounds for s in r}):
        per: Dict[str, Any] = {}
        for c in clips:
            cells = [r[s][c] for r in rounds if c in r.get(s, {})]
            if cells:
                per[c] = {"rtf": median([x["rtf"] for x in cells]),
                          "ttfs_ms": 1000.0 * median([x["ttfs_s"] for x in cells]),
                          "rounds": len(cells), "text": cells[-1]["text"]}
                firsts = [x["first_text_s"] for x in cells if x.get("first_text_s") is not None]
                if firsts:
                    per[c]["first_text_ms"] = 1000.0 * median(firsts)
        out[s] = per
    return out


def paired(rounds: List[Dict[str, Dict[str, Dict[str, Any]]]], clips: Sequence[str]) -> Dict[str, Any]:
    """ovgenai_c / openvino_genai per round for each clip's real-time factor, time to first segment and time to
    first text (``{clip}_rtf``, ``{clip}_ttfs``, ``{clip}_first``)."""
    out: Dict[str, Any] = {}
    for c in clips:
        for key in ("rtf", "ttfs_s", "first_text_s"):
            vals = []
            for r in rounds:
                a, b = r.get(OVGENAI_C, {}).get(c), r.get(GENAI, {}).get(c)
                if a and b and (a.get(key) or 0) > 0 and (b.get(key) or 0) > 0:
                    vals.append(a[key] / b[key])
            out[f"{c}_{key.split('_')[0]}"] = ratio_stats(vals)
    return out


def transcripts_agree(rounds: List[Dict[str, Dict[str, Dict[str, Any]]]], clips: Sequence[str]) -> Dict[str, Any]:
    """Per clip: whether both pipelines returned the same text in every round (None when one did not run)."""
    out: Dict[str, Any] = {}
    for c in clips:
        pairs = [(r[OVGENAI_C][c]["text"], r[GENAI][c]["text"]) for r in rounds
                 if c in r.get(OVGENAI_C, {}) and c in r.get(GENAI, {})]
        out[c] = all(a == b for a, b in pairs) if pairs else None
    return out


def ratio_lines(sec: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The section's lines for the report's ratio list (all at most ``TARGET``)."""
    pr = sec.get("paired") or {}
    clips = sec.get("clips") or {}
    lines = []
    for c, info in clips.items():
        for key, what in (("rtf", "real-time factor"), ("ttfs", "time to first segment"),
                          ("first", "time to first text (streamed)")):
            st = pr.get(f"{c}_{key}")
            value = st["geomean"] if st else None
            ci = st.get("ci95") if st else None
            status = None
            if value is not None:
                status = "ok" if value <= TARGET else "over"
                if status == "over" and ci and ci[0] <= TARGET:
                    status += ", within noise"
            text = (f"whisper: ovgenai_c / openvino_genai {what}, {c} clip ({info['duration_s']:.1f} s)"
                    + (f" [geomean of {st['n']} paired rounds]" if st else ""))
            lines.append({"what": text, "value": value, "target": TARGET, "unit": "x", "status": status,
                          "ci95": list(ci) if ci else None, "at_least": False})
    return lines
