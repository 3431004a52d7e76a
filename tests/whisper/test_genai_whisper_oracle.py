"""openvino_genai's own WhisperPipeline on the converted IR: real speech (espeak-ng) is transcribed with a low
word error rate, timestamps come out, the multilingual model detects the language and translates, and the
tiny random model loads and decodes deterministically."""
from __future__ import annotations

import numpy as np
import pytest

from whisper_support import normalize_words, wer

genai = pytest.importorskip("openvino_genai")

WER_BOUND = 0.15


@pytest.fixture(scope="module")
def real_pipe(whisper_real_ir):
    return genai.WhisperPipeline(str(whisper_real_ir), "CPU")


@pytest.fixture(scope="module")
def multilingual_pipe(whisper_multilingual_ir):
    return genai.WhisperPipeline(str(whisper_multilingual_ir), "CPU")


def test_real_model_transcribes_speech(real_pipe, speech_samples, record_property, capsys):
    samples = speech_samples.english
    assert len(samples) >= 10
    texts = [real_pipe.generate(s.audio).texts[0] for s in samples]
    rate = wer([s.text for s in samples], texts)
    record_property("wer_tiny_en", rate)
    with capsys.disabled():
        print(f"\nwhisper-tiny.en on {len(samples)} espeak-ng sentences: WER {rate:.1%}")
    assert rate <= WER_BOUND, list(zip([s.text for s in samples], texts))


def test_real_model_beam_search(real_pipe, whisper_real_ir, speech_samples, capsys):
    """Beam search (beam_idx reorders every cached state) transcribes as well, and a call after it is not
    affected by it: greedy transcripts interleaved with beam searches equal those of a fresh pipeline."""
    samples = speech_samples.english
    beams, greedy = [], []
    for s in samples:
        beams.append(real_pipe.generate(s.audio, num_beams=4).texts[0])
        greedy.append(real_pipe.generate(s.audio).texts[0])
    rate = wer([s.text for s in samples], beams)
    with capsys.disabled():
        print(f"\nwhisper-tiny.en, beam search (4 beams): WER {rate:.1%}")
    assert rate <= WER_BOUND, list(zip([s.text for s in samples], beams))
    fresh = genai.WhisperPipeline(str(whisper_real_ir), "CPU")
    assert greedy == [fresh.generate(s.audio).texts[0] for s in samples]


def test_real_model_long_form(real_pipe, speech_samples, capsys):
    """Audio longer than one 30 s window: the sentences one after another (about 55 s)."""
    audio = np.concatenate([s.audio for s in speech_samples.english])
    assert len(audio) > 16000 * 40
    result = real_pipe.generate(audio, return_timestamps=True)
    reference = " ".join(s.text for s in speech_samples.english)
    rate = wer([reference], [result.texts[0]])
    with capsys.disabled():
        print(f"\nwhisper-tiny.en, {len(audio) / 16000:.0f} s of speech at once: WER {rate:.1%}")
    assert rate <= WER_BOUND
    assert result.chunks[-1].end_ts > 35.0 and [c.start_ts for c in result.chunks] == sorted(
        c.start_ts for c in result.chunks)


@pytest.mark.parametrize("option", ["initial_prompt", "hotwords"])
def test_real_model_prompt(real_pipe, speech_samples, option):
    """initial_prompt / hotwords go through the tokenizer IR (GenAI encodes them): given the sentence itself as
    the prompt, the model makes fewer errors on the sentences it got wrong."""
    wrong = [(s, t) for s in speech_samples.english for t in [real_pipe.generate(s.audio).texts[0]]
             if normalize_words(t) != normalize_words(s.text)]
    assert wrong
    prompted = [real_pipe.generate(s.audio, **{option: s.text}).texts[0] for s, _ in wrong]
    refs = [s.text for s, _ in wrong]
    assert wer(refs, prompted) < wer(refs, [t for _, t in wrong])


def test_real_model_timestamps(real_pipe, speech_samples):
    for sample in speech_samples.english[:3]:
        duration = len(sample.audio) / 16000
        result = real_pipe.generate(sample.audio, return_timestamps=True)
        chunks = result.chunks
        assert chunks, sample.text
        assert 0.0 <= chunks[0].start_ts < chunks[-1].end_ts <= duration + 1.0
        assert all(c.start_ts <= c.end_ts for c in chunks)
        joined = normalize_words(" ".join(c.text for c in chunks))
        assert joined == normalize_words(result.texts[0]) and joined


def test_real_model_word_timestamps(whisper_real_ir, speech_samples):
    """GenAI's word timestamps need the cross-attention SDPA nodes named encoder_attn (with a mask input) and
    the alignment heads of generation_config.json."""
    pipe = genai.WhisperPipeline(str(whisper_real_ir), "CPU", word_timestamps=True)
    sample = speech_samples.english[1]
    result = pipe.generate(sample.audio, word_timestamps=True)
    words = result.words
    assert normalize_words("".join(w.word for w in words)) == normalize_words(result.texts[0]) and words
    starts = [w.start_ts for w in words]
    assert starts == sorted(starts) and all(w.start_ts <= w.end_ts for w in words)
    assert words[-1].end_ts <= len(sample.audio) / 16000 + 0.5


def test_real_model_is_english_only(real_pipe, speech_samples):
    with pytest.raises(RuntimeError, match="not multilingual"):
        real_pipe.generate(speech_samples.english[0].audio, language="<|de|>")


def test_multilingual_detects_language(multilingual_pipe, speech_samples):
    for sample in speech_samples.foreign + speech_samples.english[:2]:
        result = multilingual_pipe.generate(sample.audio)
        assert result.language == sample.language, (sample.text, result.texts[0])


def test_multilingual_translates(multilingual_pipe, speech_samples):
    checked = 0
    for sample in speech_samples.foreign:
        transcript = multilingual_pipe.generate(sample.audio, task="transcribe").texts[0]
        translation = multilingual_pipe.generate(sample.audio, task="translate").texts[0]
        assert normalize_words(translation) != normalize_words(transcript)
        if sample.translation_word:
            assert sample.translation_word in normalize_words(translation), (sample.text, translation)
            checked += 1
    assert checked >= 3


def test_multilingual_forced_language(multilingual_pipe, speech_samples):
    sample = speech_samples.foreign[0]
    forced = multilingual_pipe.generate(sample.audio, language="<|de|>", task="transcribe").texts[0]
    assert "morgen" in normalize_words(forced)


def test_tiny_model_loads_and_is_deterministic(whisper_tiny_ir, speech_samples):
    pipe = genai.WhisperPipeline(str(whisper_tiny_ir), "CPU")
    audio = speech_samples.english[0].audio
    first = pipe.generate(audio, max_new_tokens=12)
    assert first.texts[0].strip() and first.texts[0] == pipe.generate(audio, max_new_tokens=12).texts[0]
    other = pipe.generate(speech_samples.english[1].audio, max_new_tokens=12)
    assert other.texts[0] != first.texts[0]  # the audio counts
    stamped = pipe.generate(audio, max_new_tokens=12, return_timestamps=True)
    assert stamped.chunks is not None


def test_tiny_multilingual_model_loads(whisper_tiny_multilingual_ir):
    pipe = genai.WhisperPipeline(str(whisper_tiny_multilingual_ir), "CPU")
    audio = np.random.default_rng(3).uniform(-0.3, 0.3, 16000 * 2).astype(np.float32)
    result = pipe.generate(audio, max_new_tokens=8)
    assert result.language.strip("<|>") and result.texts[0]
    assert pipe.generate(audio, max_new_tokens=8, language="<|fr|>", task="translate").texts[0]
