"""A catalog over a models root: the IR folders and GGUF files under it, with their format and profile.

Names are paths relative to the root (``"qwen/ir"``, ``"smol.gguf"``). A folder that is not a model itself but
holds models (e.g. ``SmolLM2-135M-Instruct/`` with ``ir/`` and a ``.gguf``) resolves to one of them, by the
preferred format. A name that resolves outside the root — ``..`` components, absolute paths, symlinks that
escape — is refused with :class:`CatalogError`.

Root: the ``root`` argument, else ``OVGENAI_C_MODELS``, else ``<default-model cache>/models``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Dict, List, Optional, Union

from .errors import CatalogError, ProfileError
from .model_info import model_format
from .profile import PROFILE_NAME, Profile, profile_for

MAX_DEPTH = 3


def default_root() -> Path:
    env = os.environ.get("OVGENAI_C_MODELS")
    if env:
        return Path(env).expanduser()
    from .. import models

    return models.cache_root() / "models"


@dataclass
class ModelEntry:
    """One model the catalog can serve."""

    name: str
    path: Path
    format: str  # "ir", "gguf" or "whisper"
    profile: Optional[Profile] = None
    profile_error: Optional[str] = None
    size: int = 0

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "path": str(self.path), "format": self.format, "size": self.size,
                "profile": self.profile.to_dict() if self.profile else None, "profile_error": self.profile_error}


def _within(root_real: str, target: Union[str, Path]) -> bool:
    real = os.path.realpath(target)
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _size(path: Path, fmt: str) -> int:
    try:
        if fmt == "gguf":
            return path.stat().st_size
        return sum(p.stat().st_size for p in path.iterdir() if p.is_file())
    except OSError:
        return 0


class Catalog:
    """The models under ``root``."""

    def __init__(self, root: Union[None, str, os.PathLike] = None) -> None:
        self.root = Path(root).expanduser() if root is not None else default_root()

    def __repr__(self) -> str:
        return f"Catalog({str(self.root)!r})"

    @property
    def _root_real(self) -> str:
        return os.path.realpath(self.root)

    def entry(self, name: str, path: Path, fmt: Optional[str] = None) -> ModelEntry:
        """The entry for the model at ``path`` (inside the root or not) under ``name``, with its size and
        profile; ``fmt`` defaults to the path's :func:`~ovgenai_c.provider.model_info.model_format` (else "ir")."""
        fmt = fmt or model_format(path) or "ir"
        entry = ModelEntry(name=name, path=path, format=fmt, size=_size(path, fmt))
        try:
            entry.profile = profile_for(path)
        except ProfileError as exc:
            entry.profile_error = str(exc)
        return entry

    def list(self) -> List[ModelEntry]:
        """Every servable model under the root (symlinks escaping the root are skipped), sorted by name."""
        out: List[ModelEntry] = []
        if not self.root.is_dir():
            return out
        root_real = self._root_real

        def walk(folder: Path, rel: PurePosixPath, depth: int) -> None:
            try:
                children = sorted(folder.iterdir(), key=lambda p: p.name)
            except OSError:
                return
            for child in children:
                if child.name.startswith(".") or not _within(root_real, child):
                    continue
                name = str(rel / child.name)
                fmt = model_format(child)
                if fmt is not None:
                    out.append(self.entry(name, child, fmt))
                elif child.is_dir() and depth < MAX_DEPTH:
                    walk(child, rel / child.name, depth + 1)

        walk(self.root, PurePosixPath(), 1)
        return out

    def resolve(self, name: Union[str, os.PathLike], prefer: str = "ir") -> ModelEntry:
        """The model called ``name`` (a path relative to the root). Refuses names escaping the root."""
        text = os.fspath(name)
        if not isinstance(text, str) or not text or "\0" in text:
            raise CatalogError(f"invalid model name {text!r}")
        pure = PurePosixPath(text.replace("\\", "/"))
        if pure.is_absolute() or os.path.isabs(text):
            raise CatalogError(f"model name {text!r} is an absolute path; catalog names are relative to {self.root}")
        if ".." in pure.parts:
            raise CatalogError(f"model name {text!r} leaves the models root {self.root} ('..' is not allowed)")
        target = self.root.joinpath(*pure.parts)
        root_real = self._root_real
        if not _within(root_real, target):
            raise CatalogError(f"model name {text!r} resolves outside the models root {self.root} "
                               f"(to {os.path.realpath(target)}); refused")
        if not target.exists():
            known = [e.name for e in self.list()]
            from .errors import closest

            hint = closest(text, known) if known else f" (the models root {self.root} holds no models)"
            raise CatalogError(f"no model named {text!r} under {self.root}{hint}")
        fmt = model_format(target)
        if fmt is not None:
            return self.entry(str(pure), target, fmt)
        if target.is_dir():  # a folder of models: pick by preferred format
            inside = [e for e in self.list() if e.name.startswith(str(pure) + "/")]
            inside.sort(key=lambda e: (e.format != prefer, e.name.count("/"), e.name))
            if inside:
                return inside[0]
        raise CatalogError(f"{target} is neither an OpenVINO IR model folder nor a .gguf file")


__all__ = ["Catalog", "ModelEntry", "default_root", "PROFILE_NAME"]
