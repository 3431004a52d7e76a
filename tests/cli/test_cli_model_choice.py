"""Which file of a model the CLI hands to the library: the IR whenever it exists (the official library would
convert a GGUF on every start), the GGUF only for the official library when no IR is there."""
from __future__ import annotations

import argparse

import pytest

from cli_helpers import make_ir
from ovgenai_c import cli, models


@pytest.fixture
def default_model(monkeypatch, tmp_path):
    asked = []
    state = {"ir_present": True}
    monkeypatch.setattr(models, "default_model_status", lambda: dict(state))
    monkeypatch.setattr(models, "ensure_default_model",
                        lambda fmt="ir", progress=True: asked.append(fmt) or tmp_path / fmt)
    return state, asked


@pytest.mark.parametrize("kind", ["official", "bundled", "other"])
def test_default_model_is_the_ir_when_it_exists(default_model, kind, tmp_path):
    state, asked = default_model
    args = argparse.Namespace(models_root=str(tmp_path / "root"))
    assert cli._resolve_model(args, None, kind) == tmp_path / "ir" and asked == ["ir"]


def test_official_library_takes_the_gguf_only_while_no_ir_exists(default_model, tmp_path):
    state, asked = default_model
    state["ir_present"] = False
    args = argparse.Namespace(models_root=str(tmp_path / "root"))
    assert cli._resolve_model(args, None, "official") == tmp_path / "gguf"
    assert cli._resolve_model(args, None, "bundled") == tmp_path / "ir"  # the bundled backend makes it (~1 s)
    assert asked == ["gguf", "ir"]


def test_catalog_folder_with_both_formats_gives_the_official_library_the_ir(tmp_path):
    root = tmp_path / "root"
    make_ir(root / "m" / "ir")
    (root / "m" / "m.gguf").write_bytes(b"GGUF" + b"\0" * 60)
    args = argparse.Namespace(models_root=str(root))
    assert cli._resolve_model(args, "m", "official") == root / "m" / "ir"
