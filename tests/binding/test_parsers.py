"""Parsers (ovgenai_c.parsers, TextParserStreamer, GenerationConfig.parsers, DecodedResults.parsed) against
openvino_genai's on the same inputs: the built-in parsers on thousands of generated texts and chunk sequences, the
streamer on text and on token ids, and the pipelines end to end."""
from __future__ import annotations

import json
import pickle
import random
from pathlib import Path
from typing import Any, Callable, List

import pytest

import ovgenai_c
from ovgenai_c import errors, parsers as P

try:  # the oracle; the tests of the binding's own rules run without it (e.g. on PyPy)
    import openvino_genai as og
except ImportError:
    og = None
needs_oracle = pytest.mark.skipif(og is None, reason="openvino_genai (the oracle) is not installed")

TINY_IR = Path(__file__).resolve().parents[1] / "fixtures" / "tiny" / "ir"
F32 = {"INFERENCE_PRECISION_HINT": "f32"}

FRAGMENTS = ["<think>", "</think>", "</th", "ink>", "<thi", "<", ">", "/", "{", "}", "[", "]", "(", ")", '"', "'",
             "=", ",", ":", " ", "  ", "\n", "\r", "\t", "x", "name", "get_weather", "location", "é", "日本", "😀",
             '"a"', '"b": ', "1", "-2", "1.5", "1e400", "1e-400", "18446744073709551616", "true", "null", "NaN",
             "\\", "\\ud800", "\\ud83d\\ude00", "\\n", '[get(a="1", b = "2")]', "[f()]", '{"name": "f"}',
             '{"type": "function", "function": {"name": "g", "parameters": {"q": [1, 2.5, null]}}}', "word ", "the"]


def _texts(n: int, seed: int, max_parts: int = 12) -> List[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, max_parts))) for _ in range(n)]


def _outcome(fn: Callable[[], Any]) -> Any:
    try:
        return ("ok", fn())
    except RuntimeError:  # (GenAI raises RuntimeError; ours are GenAIError, also RuntimeErrors)
        return ("error",)
    except UnicodeDecodeError:  # (GenAI's error text, cut inside a character, cannot become a Python str)
        return ("error",)


def _run(parser: Any, text: str) -> Any:
    def go() -> Any:
        message = {"content": text}
        parser.parse(message)
        return json.dumps(message, sort_keys=True)
    return _outcome(go)


PARSER_PAIRS = [
    ("ReasoningParser()", lambda m: m.ReasoningParser()),
    ("ReasoningParser(keep_original_content=False)", lambda m: m.ReasoningParser(keep_original_content=False)),
    ("ReasoningParser(expect_open_tag=False)", lambda m: m.ReasoningParser(expect_open_tag=False)),
    ("ReasoningParser(False, False, '[', ']')", lambda m: m.ReasoningParser(False, False, "[", "]")),
    ("ReasoningParser(True, False, '{', '}')", lambda m: m.ReasoningParser(True, False, "{", "}")),
    ("DeepSeekR1ReasoningParser", lambda m: m.DeepSeekR1ReasoningParser()),
    ("Phi4ReasoningParser", lambda m: m.Phi4ReasoningParser()),
    ("Llama3PythonicToolParser", lambda m: m.Llama3PythonicToolParser()),
    ("Llama3JsonToolParser", lambda m: m.Llama3JsonToolParser()),
]


@needs_oracle
@pytest.mark.parametrize("make", [m for _, m in PARSER_PAIRS], ids=[n for n, _ in PARSER_PAIRS])
def test_parsers_of_the_complete_text_give_genais_messages(make):
    ours, theirs = make(ovgenai_c), make(og)
    texts = _texts(3000, seed=len(repr(make(ovgenai_c))))
    texts += ['x {"name": "f", "parameters": {"a": 1}} y', '{"a": 1} and {"b": 2}', "}{", '{"a": 1.5e400}',
              '{"a": 99999999999999999999999}', '{"a": -9223372036854775809}', '{"a": "\\ud800"}', '{"a": 1e-400}',
              '[a(x = "1", y="2\n3")] [b()]', "[a\n(x=\"1\")]", "[noparen]", "[]", "[get_weather(location='NY')]",
              '[g(k="é", 日="本", n2_="x")]', "a<think>b</think>c<think>d</think>", "</think><think>x</think>", ""]
    differ = [(t, a, b) for t in texts for a, b in [(_run(ours, t), _run(theirs, t))] if a != b]
    assert not differ, differ[:5]
    if "Json" in type(ours).__name__:  # the texts reached every branch: calls found, none, and bad JSON
        outcomes = [_run(ours, t) for t in texts]
        assert {"error"} <= {o[0] for o in outcomes} and sum("tool_calls" in o[-1] for o in outcomes) > 100


INCREMENTAL_PAIRS = [
    ("ReasoningIncrementalParser()", lambda m: m.ReasoningIncrementalParser()),
    ("keep_original_content=False", lambda m: m.ReasoningIncrementalParser(keep_original_content=False)),
    ("expect_open_tag=False", lambda m: m.ReasoningIncrementalParser(expect_open_tag=False)),
    ("False, False, '<', '>'", lambda m: m.ReasoningIncrementalParser(False, False, "<", ">")),
    ("True, True, 'name', 'the'", lambda m: m.ReasoningIncrementalParser(True, True, "name", "the")),
    ("DeepSeekR1ReasoningIncrementalParser", lambda m: m.DeepSeekR1ReasoningIncrementalParser()),
    ("Phi4ReasoningIncrementalParser", lambda m: m.Phi4ReasoningIncrementalParser()),
]


@needs_oracle
@pytest.mark.parametrize("make", [m for _, m in INCREMENTAL_PAIRS], ids=[n for n, _ in INCREMENTAL_PAIRS])
def test_incremental_parsers_give_genais_text_and_messages_chunk_by_chunk(make):
    ours, theirs = make(ovgenai_c), make(og)
    rng = random.Random(7)
    for round_ in range(800):
        chunks = _texts(rng.randint(1, 10), seed=round_, max_parts=3)
        ours.reset()
        theirs.reset()
        for i, chunk in enumerate(chunks):
            a, b = {}, {}
            got, want = ours.parse(a, chunk, [1, 2]), theirs.parse(b, chunk, [1, 2])
            assert (got, a) == (want, b), (chunks, i)
    assert ours.get_status().name == theirs.get_status().name == "RUNNING"


class _Collect:
    """A TextParserStreamer subclass's write, for both libraries: the messages it got."""

    def write(self, message):
        self.seen.append(json.dumps(message, sort_keys=True))
        return self.status_module.StreamingStatus.RUNNING


def _streamer(module, tokenizer, parsers):
    cls = type("Collecting", (_Collect, module.TextParserStreamer), {"status_module": module})
    s = cls(tokenizer, parsers=parsers)
    s.seen = []
    return s


def _tool_parser(module):
    """upstream's own test parser: gathers a JSON object streamed between "{" and "}" into tool_calls."""

    class ToolParser(module.IncrementalParser):
        def __init__(self):
            super().__init__()
            self.reset()

        def reset(self):
            self.buffer, self.started, self.done = "", False, False

        def parse(self, message, text, tokens=None):
            if self.done:
                return text
            if text == "{" and not self.started:
                self.started, self.buffer = True, text
            elif self.started and text == "}":
                self.buffer += text
                self.done = True
                message["tool_calls"] = [json.loads(self.buffer)]
            elif self.started:
                self.buffer += text
            return text

    return ToolParser()


@pytest.fixture(scope="module")
def our_tokenizer():
    return ovgenai_c.Tokenizer(TINY_IR)


@pytest.fixture(scope="module")
def tokenizers(our_tokenizer):
    if og is None:
        pytest.skip("openvino_genai (the oracle) is not installed")
    return our_tokenizer, og.Tokenizer(str(TINY_IR))


def test_text_parser_streamer_on_text_chunks_is_genais(tokenizers):
    stream = ["Hello", "<think>", " ", "world", " ", "</think>", "!", "{", '"func_name": ',
              '"weather", "location": "New York"', "}", " and more\n"]
    results = []
    for module, tok in zip((ovgenai_c, og), tokenizers):
        s = _streamer(module, tok, [_tool_parser(module), module.ReasoningIncrementalParser(keep_original_content=False)])
        for chunk in stream:
            s._write(chunk)
        results.append((s.seen, s.get_parsed_message()))
        s.reset()
        assert s.get_parsed_message() == {"content": ""}
    assert results[0] == results[1]
    assert results[0][1]["tool_calls"] == [{"func_name": "weather", "location": "New York"}]
    assert results[0][1]["reasoning_content"] == " world "
    rng = random.Random(3)
    for round_ in range(300):  # random chunks through two reasoning parsers
        chunks = [c for c in _texts(rng.randint(1, 12), seed=1000 + round_, max_parts=3) if c]
        seen = []
        for module, tok in zip((ovgenai_c, og), tokenizers):
            s = _streamer(module, tok, [module.ReasoningIncrementalParser(), module.ReasoningIncrementalParser(
                expect_open_tag=False, keep_original_content=False, open_tag="{", close_tag="}")])
            for chunk in chunks:
                s._write(chunk)
            seen.append((s.seen, s.get_parsed_message()))
        assert seen[0] == seen[1], chunks


def test_text_parser_streamer_on_token_ids_gives_each_chunk_its_tokens_as_genai(tokenizers):
    text = "Hi there\nand more text here, then a line\n\nand é日本😀 at the end"
    ids = [int(i) for i in tokenizers[1].encode(text).input_ids.data[0]]
    assert len(ids) > 10
    outcomes = []
    for module, tok in zip((ovgenai_c, og), tokenizers):
        class TokenParser(module.IncrementalParser):
            def parse(self, message, delta_text, delta_tokens=None):
                message["tokens"] = ",".join(map(str, delta_tokens)) + ";"
                return delta_text

            def reset(self):
                pass

        s = _streamer(module, tok, [TokenParser()])
        statuses = [int(s._write([i]).value) for i in ids[:7]] + [int(s._write(ids[7:9]).value)]
        statuses += [int(s._write([i]).value) for i in ids[9:]]
        s.end()
        outcomes.append((statuses, s.seen, s.get_parsed_message()))
    assert outcomes[0] == outcomes[1]
    tokens = outcomes[0][2]["tokens"]
    assert tokens.count(";") == len(outcomes[0][1]) and any(c.isdigit() for c in tokens)


def test_concatenating_anything_but_strings_and_objects_fails_as_genais(tokenizers):
    for module, tok in zip((ovgenai_c, og), tokenizers):
        class Twice(module.IncrementalParser):
            def parse(self, message, delta_text, delta_tokens=None):
                message["tool_calls"] = [{"n": 1}]
                message["meta"] = {"k": delta_text}
                return delta_text

            def reset(self):
                pass

        s = _streamer(module, tok, [Twice()])
        s._write("a")
        with pytest.raises(RuntimeError) as info:
            s._write("b")
        if module is ovgenai_c:
            assert isinstance(info.value, errors.InvalidParameterError) and "tool_calls" in str(info.value)


def test_concatenate_joins_strings_and_merges_objects():
    merged = {"content": "x", "meta": {"k": "a"}}
    P.concatenate(merged, {"content": "y", "meta": {"k": "b", "new": [1]}})
    assert merged == {"content": "xy", "meta": {"k": "ab", "new": [1]}}
    with pytest.raises(errors.InvalidParameterError, match=r"'n' \(number\) to the accumulated one \(string\)"):
        P.concatenate({"meta": {"n": "1"}}, {"meta": {"n": 2}})


def test_bad_parser_input_is_a_clear_error():
    with pytest.raises(errors.InvalidParameterError, match="has no 'content'"):
        ovgenai_c.ReasoningParser().parse({})
    with pytest.raises(errors.InvalidParameterError, match="'content' that is a number"):
        ovgenai_c.Llama3JsonToolParser().parse({"content": 5})
    with pytest.raises(TypeError, match="message dict"):
        ovgenai_c.Llama3PythonicToolParser().parse("text")
    with pytest.raises(errors.InvalidJSONError, match="Llama3JsonToolParser: the tool call is not valid JSON"):
        ovgenai_c.Llama3JsonToolParser().parse({"content": "{bad}"})
    with pytest.raises(NotImplementedError, match="Parser.parse is abstract"):
        ovgenai_c.Parser().parse({"content": "x"})
    with pytest.raises(NotImplementedError, match="reset is abstract"):
        ovgenai_c.IncrementalParser().reset()
    with pytest.raises(TypeError, match="expect_open_tag must be a bool"):
        ovgenai_c.ReasoningParser(expect_open_tag="yes")
    with pytest.raises(TypeError, match="close_tag must be a str"):
        ovgenai_c.ReasoningIncrementalParser(close_tag=None)
    with pytest.raises(TypeError, match=r"parsers\[1\] is a ReasoningParser, not an IncrementalParser"):
        ovgenai_c.TextParserStreamer(ovgenai_c.Tokenizer(TINY_IR), [ovgenai_c.ReasoningIncrementalParser(),
                                                                    ovgenai_c.ReasoningParser()])
    with pytest.raises(TypeError, match="must be a StreamingStatus"):
        ovgenai_c.ReasoningIncrementalParser().set_status(1)
    with pytest.raises(TypeError, match=r"parsers\[0\] is a ReasoningIncrementalParser, not a Parser: an "
                                        "IncrementalParser parses streamed chunks"):
        ovgenai_c.GenerationConfig(parsers=[ovgenai_c.ReasoningIncrementalParser()])
    with pytest.raises(TypeError, match="must be a list of Parser objects, not ReasoningParser"):
        ovgenai_c.GenerationConfig(parsers=ovgenai_c.ReasoningParser())
    with pytest.raises(TypeError, match=r"message\['k'\] is a set"):
        P.check_message({"content": "", "k": {1}})


def test_vllm_parser_wrapper_reads_vllm_style_results():
    class Calls:
        def __init__(self, payload):
            self.payload = payload

        def model_dump_json(self):
            return json.dumps(self.payload)

    class VLLMLike:
        def extract_tool_calls(self, content, request):
            assert request is None
            return Calls({"tools_called": "{" in content, "tool_calls": [], "content": content})

        def extract_reasoning(self, content, request):
            head, _, tail = content.partition("</think>")
            return head, tail

    message = {"content": "think</think>{answer}", "other": 1}
    ovgenai_c.VLLMParserWrapper(VLLMLike()).parse(message)
    assert message == {"tools_called": True, "tool_calls": [], "content": "think</think>{answer}{answer}",
                       "reasoning": "think"}
    with pytest.raises(errors.InvalidParameterError, match="extract_tool_calls' or 'extract_reasoning"):
        ovgenai_c.VLLMParserWrapper(object())


# --- the pipelines ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def our_pipe():
    with ovgenai_c.LLMPipeline(TINY_IR, "CPU", **F32) as ours:
        yield ours


@pytest.fixture(scope="module")
def pipes(our_pipe):
    if og is None:
        pytest.skip("openvino_genai (the oracle) is not installed")
    return our_pipe, og.LLMPipeline(str(TINY_IR), "CPU", **F32)


PROMPTS = ["Hello there", "Once upon a time", "The weather today"]


def _tags(text: str) -> tuple:
    """Two pieces of a generated text to use as the tags (so that parsers find them)."""
    words = text.split()
    return words[1][:3], words[-2][-2:]


def test_generate_fills_parsed_from_config_parsers_as_genai(pipes):
    ours, theirs = pipes
    found = []
    for prompt in PROMPTS:
        plain = ours.generate(prompt, max_new_tokens=24)
        assert plain.parsed == []
        open_tag, close_tag = _tags(plain)
        for keep in (True, False):
            mine = [ovgenai_c.ReasoningParser(True, keep, open_tag, close_tag), ovgenai_c.Llama3PythonicToolParser()]
            genai = [og.ReasoningParser(True, keep, open_tag, close_tag), og.Llama3PythonicToolParser()]
            a = ours.generate([prompt], max_new_tokens=24, parsers=mine)
            b = theirs.generate([prompt], max_new_tokens=24, parsers=genai)
            assert a.texts == list(b.texts)
            assert a.parsed == [dict(m) for m in b.parsed] and len(a.parsed) == 1
            assert ours.generate(prompt, max_new_tokens=24, parsers=mine).parsed == a.parsed  # a str answer too
            config = ovgenai_c.GenerationConfig(max_new_tokens=24, parsers=mine)
            assert ours.generate([prompt], config).parsed == a.parsed
            with ours.stream(prompt, config) as chunks:
                assert "".join(chunks) == plain
            assert chunks.result.parsed == a.parsed
            found.append(a.parsed[0]["reasoning_content"])
    assert sum(bool(r) for r in found) >= 3, found  # the tags were found: the parsers had work to do
    two = ours.generate(PROMPTS[:2], max_new_tokens=8, parsers=[ovgenai_c.DeepSeekR1ReasoningParser()])
    assert [m["content"] for m in two.parsed] == two.texts and len(two.parsed) == 2


def test_generate_with_a_text_parser_streamer_is_genais(pipes, tokenizers):
    ours, theirs = pipes
    for prompt in PROMPTS:
        open_tag, close_tag = _tags(ours.generate(prompt, max_new_tokens=30))
        outcomes = []
        for module, pipe in ((ovgenai_c, ours), (og, theirs)):
            streamer = _streamer(module, pipe.get_tokenizer(), [
                module.ReasoningIncrementalParser(True, False, open_tag, close_tag)])
            for _ in range(2):  # the pipeline resets it before each generation
                res = pipe.generate([prompt], max_new_tokens=30, streamer=streamer,
                                    parsers=[module.Llama3JsonToolParser()])
            outcomes.append((list(res.texts), streamer.seen[len(streamer.seen) // 2:], [dict(m) for m in res.parsed],
                             streamer.get_parsed_message()))
        assert outcomes[0] == outcomes[1]
        assert outcomes[0][2][0] == outcomes[0][3] and len(outcomes[0][1]) > 3
        assert outcomes[0][3].get("reasoning_content")


def test_a_parser_status_stops_generation_and_parser_errors_reach_the_caller(our_pipe):
    ours = our_pipe

    class StopAfter(ovgenai_c.IncrementalParser):
        def parse(self, message, delta_text, delta_tokens=None):
            self.chunks += 1
            if self.chunks == 3:
                self.set_status(ovgenai_c.StreamingStatus.STOP)
            return delta_text

        def reset(self):
            self.chunks = 0
            self.set_status(ovgenai_c.StreamingStatus.RUNNING)

    class Write(ovgenai_c.TextParserStreamer):
        def write(self, message):
            return None

    full = ours.generate("Hello there", max_new_tokens=40)
    stopped = ours.generate("Hello there", max_new_tokens=40, streamer=Write(ours.get_tokenizer(), [StopAfter()]))
    assert len(stopped) < len(full) and full.startswith(stopped) and stopped.finish_reason == "stop"

    class Broken(ovgenai_c.Parser):
        def parse(self, message):
            raise KeyError("broken parser")

    class NotJson(ovgenai_c.Parser):
        def parse(self, message):
            message["when"] = object()

    class BadReturn(ovgenai_c.IncrementalParser):
        def parse(self, message, delta_text, delta_tokens=None):
            return None

        def reset(self):
            pass

    with pytest.raises(KeyError, match="broken parser"):
        ours.generate("Hello there", max_new_tokens=4, parsers=[Broken()])
    with pytest.raises(TypeError, match=r"after NotJson.parse\['when'\] is a object"):
        ours.generate("Hello there", max_new_tokens=4, parsers=[NotJson()])
    with pytest.raises(TypeError, match="BadReturn.parse must return the text to go on"):
        ours.generate("Hello there", max_new_tokens=4, streamer=Write(ours.get_tokenizer(), [BadReturn()]))
    assert ours.generate("Hello there", max_new_tokens=40) == full  # the pipeline goes on


def test_parsed_survives_pickling_and_config_copies(our_pipe):
    ours = our_pipe
    res = ours.generate(["Hello there"], max_new_tokens=8, parsers=[ovgenai_c.DeepSeekR1ReasoningParser()])
    back = pickle.loads(pickle.dumps(res))
    assert back.parsed == res.parsed and back.texts == res.texts
    text = ours.generate("Hello there", max_new_tokens=8, parsers=[ovgenai_c.DeepSeekR1ReasoningParser()])
    assert pickle.loads(pickle.dumps(text)).parsed == text.parsed == res.parsed
    parser = ovgenai_c.ReasoningParser()
    config = ovgenai_c.GenerationConfig(parsers=[parser])
    assert config.copy().parsers == [parser] and config.to_dict()["parsers"] == [parser]
    assert config.unsupported_fields() == []


def test_text_parser_streamer_on_the_libraries_text_stream(make_pipe, our_tokenizer):
    """A library that streams text only (the double here, the official library in use): chunks reach the parsers
    without token ids, and the accumulated message is parsed[0]."""
    pipe = make_pipe()
    got = []

    class Write(ovgenai_c.TextParserStreamer):
        def write(self, message):
            got.append(message)

    class Tokens(ovgenai_c.IncrementalParser):
        def parse(self, message, delta_text, delta_tokens=None):
            message["ids"] = repr(delta_tokens)
            return delta_text.upper()

        def reset(self):
            pass

    res = pipe.generate(["hello world"], max_new_tokens=50, streamer=Write(our_tokenizer, [Tokens()]),
                        parsers=[ovgenai_c.ReasoningParser(expect_open_tag=False, close_tag=" ")])
    assert res.texts == ["Echo: hello world"] and got
    assert "".join(m["content"] for m in got) == "ECHO: HELLO WORLD"
    assert {m["ids"] for m in got} == {"[]"}
    assert res.parsed == [{"content": "ECHO: HELLO WORLD", "ids": "[]" * len(got), "reasoning_content": "ECHO:"}]


def test_a_tool_call_stop_ends_the_call_with_finish_reason_tool_call_as_genai(pipes):
    """StreamingStatus.TOOL_CALL_STOP, from a parser of a TextParserStreamer (upstream's test_stop_invoked_by_tool_call
    in a real call) or from a callable: the call ends there and every finish reason is TOOL_CALL, as GenAI reports
    it (the C ABI knows only STOP; GenAI, which streams on another thread, may run a few tokens past the stop)."""
    ours, theirs = pipes
    reasons = []
    for module, pipe in ((ovgenai_c, ours), (og, theirs)):
        class ToolStop(module.IncrementalParser):
            def parse(self, message, delta_text, delta_tokens=None):
                self.chunks += 1
                if self.chunks == 3:
                    message["tool_calls"] = [{"name": "f", "arguments": {}}]
                    self.set_status(module.StreamingStatus.TOOL_CALL_STOP)
                return delta_text

            def reset(self):
                self.chunks = 0
                self.set_status(module.StreamingStatus.RUNNING)

        class Write(module.TextParserStreamer):
            def write(self, message):
                self.got.append(message["content"])
                return module.StreamingStatus.RUNNING

        streamer = Write(pipe.get_tokenizer(), [ToolStop()])
        streamer.got = []
        res = pipe.generate(["Hello there"], max_new_tokens=30, streamer=streamer)
        chunks = []
        stopped = pipe.generate(["Hello there"], max_new_tokens=30, streamer=lambda t: chunks.append(t) or (
            module.StreamingStatus.TOOL_CALL_STOP if len(chunks) == 3 else module.StreamingStatus.RUNNING))
        reasons.append([[r.name for r in res.finish_reasons], [r.name for r in stopped.finish_reasons],
                        streamer.get_parsed_message()])
        if module is ovgenai_c:
            assert res.texts == ["".join(streamer.got)] and len(streamer.got) >= 3  # (+ what end() flushes)
            assert res.parsed[0]["tool_calls"] == [{"name": "f", "arguments": {}}]
            assert stopped.texts == ["".join(chunks)] and stopped.finish_reason == "stop"
    assert reasons[0] == reasons[1] and reasons[0][0] == ["TOOL_CALL"]
    assert [r.name for r in ours.generate(["Hello there"], max_new_tokens=3).finish_reasons] == ["LENGTH"]
