"""POST /v1/audio/transcriptions and /v1/audio/translations over the ABI double (its fake transcription names
the task, language, sample count and sum): OpenAI's multipart shape through httpx and the openai client's
``audio.transcriptions.create``, the response formats, and 400s that name what the C ABI cannot do."""
from __future__ import annotations

import io
import wave
from pathlib import Path

import numpy as np
import pytest

from ovgenai_c.provider import Provider, SessionPool
from ovgenai_c.serve import ServeConfig, create_app
from serve_helpers import ServerThread

from abi_double.controls import make_whisper_dir

pytest.importorskip("python_multipart")


def wav_bytes(samples: np.ndarray, rate: int = 16000, channels: int = 1) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype(np.int16).tobytes())
    return out.getvalue()


SPEECH = wav_bytes(np.zeros(16000 * 2, np.int16))
TEXT = " transcribe auto 32000 samples sum 0.0000 peak 0.0000"


@pytest.fixture
def server(double, tmp_path):
    whisper = make_whisper_dir(tmp_path / "models" / "whisper")
    from testsupport import make_ir

    make_ir(tmp_path / "models" / "llm")

    def factory(path: Path, index: int) -> Provider:
        return Provider(path, library=double.library, pool=SessionPool(ttl=None, max_resident=1))

    app = create_app(ServeConfig(models_root=tmp_path / "models", default_model=whisper), provider_factory=factory)
    with ServerThread(app) as srv:
        yield srv
    assert double.live() == 0  # the Whisper pipeline was freed with its slot


def post(server, path="/v1/audio/transcriptions", files=None, **data):
    import httpx

    files = files if files is not None else {"file": ("speech.wav", SPEECH, "audio/wav")}
    return httpx.post(server.url + path, files=files, data=data, timeout=60)


def test_json_text_and_verbose_json(server):
    r = post(server, model="whisper")
    assert r.status_code == 200, r.text
    assert r.json() == {"text": TEXT}
    r = post(server, response_format="text", language="de")
    assert r.status_code == 200 and r.text == " transcribe de 32000 samples sum 0.0000 peak 0.0000"
    r = post(server, response_format="verbose_json", language="fr", prompt="Bonjour")
    doc = r.json()
    assert doc["text"] == " transcribe fr 32000 samples sum 0.0000 peak 0.0000 prompt Bonjour"
    assert (doc["task"], doc["language"], doc["duration"]) == ("transcribe", "fr", 2.0)
    assert doc["segments"] == [{"id": 0, "seek": 0, "start": 0.0, "end": 2.0, "text": " window 0 32000 samples",
                                "tokens": [], "temperature": 0.0, "avg_logprob": None, "compression_ratio": None,
                                "no_speech_prob": None}]


def test_an_english_only_model_gets_no_task(double, tmp_path):
    from abi_double.controls import WHISPER_GENERATION_CONFIG

    english = make_whisper_dir(tmp_path / "models" / "tiny.en", {**WHISPER_GENERATION_CONFIG, "is_multilingual": False})

    def factory(path: Path, index: int) -> Provider:
        return Provider(path, library=double.library, pool=SessionPool(ttl=None, max_resident=1))

    app = create_app(ServeConfig(models_root=tmp_path / "models", default_model=english), provider_factory=factory)
    with ServerThread(app) as srv:
        r = post(srv, response_format="verbose_json")
        assert r.status_code == 200, r.text  # upstream refuses any task for a model that is not multilingual
        assert r.json()["text"] == TEXT and r.json()["task"] == "transcribe"
        r = post(srv, "/v1/audio/translations")
        assert r.status_code == 400 and "Cannot specify 'task' for not multilingual model" in r.text


def test_translations_route(server):
    r = post(server, "/v1/audio/translations")
    assert r.status_code == 200 and r.json() == {"text": " translate auto 32000 samples sum 0.0000 peak 0.0000"}


def test_stereo_8_khz_wav_is_mixed_down_and_resampled(server):
    pytest.importorskip("scipy")
    stereo = np.zeros((8000, 2), np.int16)
    r = post(server, files={"file": ("s.wav", wav_bytes(stereo, rate=8000, channels=2), "audio/wav")})
    assert r.status_code == 200 and r.json()["text"].startswith(" transcribe auto 16000 samples")


@pytest.mark.parametrize("data, files, param", [
    ({"temperature": "0.7"}, None, "temperature"),  # the double is official-like: the C ABI does not sample Whisper
    ({"temperature": "1.5"}, None, "temperature"),  # OpenAI's range is 0 to 1
    ({"response_format": "srt"}, None, "response_format"),
    ({"timestamp_granularities[]": "word"}, None, "timestamp_granularities[]"),  # json: OpenAI wants verbose_json
    # the double is official-like: the C ABI has no word timings
    ({"timestamp_granularities[]": "word", "response_format": "verbose_json"}, None, "timestamp_granularities[]"),
    ({"timestamp_granularities[]": "phoneme", "response_format": "verbose_json"}, None, "timestamp_granularities[]"),
    ({"bogus": "1"}, None, "bogus"),
    ({"language": "xx"}, None, None),
    ({}, {"file": ("x.wav", b"not a wav", "audio/wav")}, None),
    ({}, {"other": ("x.wav", SPEECH, "audio/wav")}, "other"),
    ({"model": "llm"}, None, "transcribe"),
    ({"stream": "true"}, None, "stream"),  # the double is an official-like library: its Whisper C ABI cannot stream
    ({"stream": "yes"}, None, "stream"),
    ({"stream": "true", "response_format": "verbose_json"}, None, "stream"),
])
def test_refusals_are_400_naming_the_field(server, data, files, param):
    r = post(server, files=files, **data)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["message"]
    if param is not None:
        assert err["param"] == param


def test_missing_file_and_unknown_model(server):
    import httpx

    r = httpx.post(server.url + "/v1/audio/transcriptions", data={"model": "whisper"}, files={"x": ("", b"")})
    assert r.status_code == 400
    r = httpx.post(server.url + "/v1/audio/transcriptions", json={"model": "whisper"})
    assert r.status_code == 400 and "multipart/form-data" in r.json()["error"]["message"]
    r = post(server, model="nope")
    assert r.status_code == 404


def test_llm_routes_on_the_whisper_model_are_refused(server):
    # up front, whether streamed or not, in both APIs: no chat slot is made for a model that can never chat, and
    # the answer says what the model is and where its audio goes
    import httpx

    hi = [{"role": "user", "content": "hi"}]
    for path, body in (("/v1/chat/completions", {"messages": hi}), ("/v1/completions", {"prompt": "hi"}),
                       ("/api/chat", {"messages": hi}), ("/api/generate", {"prompt": "hi"}),
                       ("/api/chat", {"messages": []}), ("/api/generate", {})):
        for stream in (False, True):
            r = httpx.post(server.url + path, json={"model": "whisper", "stream": stream, **body}, timeout=60)
            assert r.status_code == 400, (path, stream, r.text)
            err = r.json()["error"]
            message = err if path.startswith("/api") else err["message"]
            assert "speech-to-text (Whisper) model" in message and "/v1/audio/transcriptions" in message, message
            assert "stream" not in message
            if not path.startswith("/api"):
                assert err["param"] == "model"
    assert server.state.registry.get_loaded("whisper") is None


def test_the_openai_client(server):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    t = client.audio.transcriptions.create(model="whisper", file=("speech.wav", SPEECH, "audio/wav"))
    assert t.text == TEXT
    v = client.audio.transcriptions.create(model="whisper", file=("speech.wav", SPEECH, "audio/wav"),
                                           response_format="verbose_json", language="de")
    assert v.language == "de" and v.duration == 2.0 and v.segments[0].end == 2.0
    text = client.audio.transcriptions.create(model="whisper", file=("speech.wav", SPEECH, "audio/wav"),
                                              response_format="text")
    assert text == TEXT
    tr = client.audio.translations.create(model="whisper", file=("speech.wav", SPEECH, "audio/wav"))
    assert tr.text.startswith(" translate")
    with pytest.raises(openai.BadRequestError, match="temperature"):
        client.audio.transcriptions.create(model="whisper", file=("speech.wav", SPEECH, "audio/wav"),
                                           temperature=0.5)
