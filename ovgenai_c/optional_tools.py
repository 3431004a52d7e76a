"""The optional tools — the side-by-side benchmark and the CTranslate2 Whisper -> IR converter of the
``ovgenai_c_tools`` package, which use ``openvino_genai`` / ``openvino_tokenizers`` — reached by name, never
imported by the runtime to be found. (GGUF files are converted by the bundled backend itself:
:mod:`ovgenai_c.gguf_ir`.)

A tool is looked up as the ``ovgenai_c.tools`` entry point of that name (``pyproject.toml``) of the installed
distributions, else as its module ``ovgenai_c_tools.<name>`` when that is importable (a source tree, or an
install whose metadata predates the entry points). Both give a module name; the module is located with the
import system's path finder (no code of it or of its package runs). The benchmark is imported when it runs
(:func:`load_tool`); the converter runs in a child interpreter, ``python -m <module>`` (:func:`child_command`).
"""
from __future__ import annotations

import importlib
import importlib.machinery
import os
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from .errors import GenAIError

GROUP = "ovgenai_c.tools"
# name -> "module[:attribute]": what the entry points name, and the module looked for without them
DEFAULT_TARGETS: Dict[str, str] = {
    "bench": "ovgenai_c_tools.bench:main",
    "convert_whisper_ct2": "ovgenai_c_tools.convert_whisper_ct2",
}
DESCRIPTIONS = {"bench": "the side-by-side benchmark (ovgenai-c bench --compare)",
                "convert_whisper_ct2": "the CTranslate2 Whisper -> OpenVINO IR converter"}


class ToolNotFoundError(GenAIError, LookupError):
    """An optional tool that is not installed; the message says where it was looked for."""


@dataclass(frozen=True)
class Tool:
    """A located tool: its module (and callable attribute), how it was found, and the import root it is
    found under (which a child interpreter gets on its ``PYTHONPATH``)."""

    name: str
    module: str
    attribute: Optional[str]
    found_by: str  # "entry point" or "module name"
    import_root: Optional[str]


def _site_packages() -> List[str]:
    paths = sysconfig.get_paths()
    return [paths["purelib"], paths["platlib"]]


def _entry_points() -> Dict[str, str]:
    """name -> target of the installed distributions' ``ovgenai_c.tools`` entry points."""
    import importlib.metadata

    eps: Any = importlib.metadata.entry_points()
    group = eps.select(group=GROUP) if hasattr(eps, "select") else eps.get(GROUP, ())  # Python 3.9: a dict
    return {ep.name: ep.value for ep in group}


def find_module_spec(module: str) -> Optional[importlib.machinery.ModuleSpec]:
    """Where ``module`` (a dotted name) would be imported from, found with :class:`importlib.machinery.PathFinder`
    without importing it or its parent packages; None when it is not importable."""
    parts = module.split(".")
    search: Optional[List[str]] = None
    spec = None
    for i in range(len(parts)):
        if i and search is None:  # the parent is a plain module, not a package
            return None
        spec = importlib.machinery.PathFinder.find_spec(".".join(parts[:i + 1]), search)
        if spec is None:
            return None
        search = list(spec.submodule_search_locations) if spec.submodule_search_locations is not None else None
    return spec


def _import_root(module: str) -> Optional[str]:
    """The sys.path entry ``module``'s top-level package or module is found under."""
    top = find_module_spec(module.split(".")[0])
    if top is None:
        return None
    if top.submodule_search_locations:
        return str(Path(list(top.submodule_search_locations)[0]).parent)
    return str(Path(top.origin).parent) if top.origin else None


def find_tool(name: str) -> Tool:
    """The tool called ``name``: its entry point first, else its default module. Raises
    :class:`ToolNotFoundError` when neither is importable."""
    if name not in DEFAULT_TARGETS:
        raise ToolNotFoundError(f"no optional tool named {name!r} (known: {', '.join(DEFAULT_TARGETS)})")
    tried = []
    entry = _entry_points().get(name)
    for target, found_by in ((entry, "entry point"), (DEFAULT_TARGETS[name], "module name")):
        if not target:
            continue
        module, _, attribute = (part.strip() for part in target.partition(":"))
        tried.append(f"{found_by} {target!r}")
        if find_module_spec(module) is not None:
            return Tool(name, module, attribute or None, found_by, _import_root(module))
    where = f"the {GROUP!r} entry point {name!r}" + ("" if entry else " (none installed)")
    raise ToolNotFoundError(
        f"{DESCRIPTIONS[name]} is not installed: looked for {where} and the module "
        f"{DEFAULT_TARGETS[name].partition(':')[0]!r} ({'; '.join(tried)} not importable). It is part of the "
        "ovgenai_c_tools package that ships with ovgenai_c (the wheel and the source tree): reinstall ovgenai_c, "
        "or run from a source checkout")


def load_tool(name: str) -> Callable[..., Any]:
    """Import the tool ``name`` and return its callable (e.g. the benchmark's ``main``)."""
    tool = find_tool(name)
    obj: Any = importlib.import_module(tool.module)
    for part in (tool.attribute or "").split("."):
        if part:
            obj = getattr(obj, part)
    return obj


def child_command(name: str, python: str, args: List[str],
                  env: Optional[Dict[str, str]] = None) -> Tuple[List[str], Dict[str, str]]:
    """``(argv, env)`` to run the tool ``name`` as ``python -m <module> args`` in a child interpreter; ``env``
    (default: this process's) gets the tool's import root appended to ``PYTHONPATH``, so another interpreter
    (``OVGENAI_C_CONVERT_PYTHON``) runs the same module."""
    tool = find_tool(name)
    child_env = dict(os.environ if env is None else env)
    in_site = tool.import_root in _site_packages()
    if in_site and python != sys.executable:
        # another interpreter (a CPython with openvino_genai for a PyPy, say): this one's site-packages on its path
        # would put this interpreter's numpy / openvino ahead of its own; it gets the tool's package alone
        return [python, "-c", _RUN_PACKAGE_MODULE, tool.import_root, tool.module, *args], child_env
    if tool.import_root and not in_site:  # (this interpreter finds its own site-packages unaided)
        parts = [p for p in child_env.get("PYTHONPATH", "").split(os.pathsep) if p]
        if tool.import_root not in parts:
            child_env["PYTHONPATH"] = os.pathsep.join(parts + [tool.import_root])
    return [python, "-m", tool.module, *args], child_env


# `python -c` this ROOT MODULE ARGS...: imports MODULE's top-level package from ROOT alone (nothing else of ROOT
# joins sys.path), then runs MODULE as `python -m MODULE ARGS...` would
_RUN_PACKAGE_MODULE = (
    "import importlib.util, os, runpy, sys\n"
    "root, module = sys.argv[1], sys.argv[2]\n"
    "top = module.split('.')[0]\n"
    "where = os.path.join(root, top)\n"
    "spec = (importlib.util.spec_from_file_location(top, os.path.join(where, '__init__.py'),\n"
    "                                               submodule_search_locations=[where])\n"
    "        if os.path.isdir(where) else importlib.util.spec_from_file_location(top, where + '.py'))\n"
    "package = importlib.util.module_from_spec(spec)\n"
    "sys.modules[top] = package\n"
    "spec.loader.exec_module(package)\n"
    "sys.argv = [module] + sys.argv[3:]\n"
    "runpy.run_module(module, run_name='__main__', alter_sys=True)\n"
)


__all__ = ["GROUP", "DEFAULT_TARGETS", "Tool", "ToolNotFoundError", "find_module_spec", "find_tool", "load_tool",
           "child_command"]
