"""The optional tools (ovgenai_c_tools) reached by name: the ``ovgenai_c.tools`` entry point first, else the
importable module; ``bench --compare`` says clearly when they are missing; the Whisper converter runs as
``python -m`` in a child interpreter. (GGUF files are converted by the bundled backend, no tool: tests/binding/
test_gguf_ir.py.) The entry-point lookup is monkeypatched: the installed distribution's
metadata is not rebuilt by these tests."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ovgenai_c import cli, optional_tools, whisper_models
from ovgenai_c.optional_tools import DEFAULT_TARGETS, GROUP, ToolNotFoundError, child_command, find_tool, load_tool

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_entry_points(monkeypatch):
    monkeypatch.setattr(optional_tools, "_entry_points", lambda: {})


@pytest.fixture
def fake_tools(tmp_path, monkeypatch):
    """A package ``fake_tools`` outside this tree, named by (monkeypatched) entry points."""
    pkg = tmp_path / "elsewhere" / "fake_tools"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "bench.py").write_text("CALLS = []\ndef main(argv):\n    CALLS.append(list(argv))\n    return 7\n")
    (pkg / "convert.py").write_text(textwrap.dedent("""\
        import json, os, sys
        src, dst = sys.argv[1], sys.argv[2]
        os.makedirs(dst, exist_ok=True)
        with open(os.path.join(dst, "converted_from.txt"), "w") as f:
            f.write(src)
        print("a progress line")
        print(json.dumps({"converter": "from-entry-point", "openvino": "?"}))
        """))
    monkeypatch.syspath_prepend(str(tmp_path / "elsewhere"))
    monkeypatch.setattr(optional_tools, "_entry_points",
                        lambda: {"bench": "fake_tools.bench:main", "convert_whisper_ct2": "fake_tools.convert"})
    yield tmp_path / "elsewhere"
    for name in [m for m in sys.modules if m.split(".")[0] == "fake_tools"]:
        del sys.modules[name]


def test_pyproject_declares_the_entry_points_the_lookup_falls_back_to():
    tomllib = pytest.importorskip("tomllib")  # (Python >= 3.11; PyPy 3.9 runs this folder too)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"][GROUP] == DEFAULT_TARGETS
    import importlib

    bench = importlib.import_module("ovgenai_c_tools.bench")  # the targets exist (tests may import the tools)
    assert callable(bench.main)
    assert importlib.util.find_spec("ovgenai_c_tools.convert_whisper_ct2") is not None
    # the GGUF converter is gone from the tools (the bundled backend converts: ovgenai_c.gguf_ir)
    assert "convert_gguf" not in DEFAULT_TARGETS and importlib.util.find_spec("ovgenai_c_tools.convert_gguf") is None
    with pytest.raises(ToolNotFoundError, match="no optional tool named 'convert_gguf'"):
        find_tool("convert_gguf")


def test_entry_point_first(fake_tools):
    tool = find_tool("bench")
    assert (tool.module, tool.attribute, tool.found_by) == ("fake_tools.bench", "main", "entry point")
    assert tool.import_root == str(fake_tools)
    main = load_tool("bench")
    assert main(["x"]) == 7 and sys.modules["fake_tools.bench"].CALLS == [["x"]]


def test_module_name_when_no_entry_point_is_installed(no_entry_points):
    tool = find_tool("convert_whisper_ct2")
    assert (tool.module, tool.found_by, tool.import_root) == ("ovgenai_c_tools.convert_whisper_ct2", "module name",
                                                              str(ROOT))
    argv, env = child_command("convert_whisper_ct2", "PY", ["src", "dst"], env={"PYTHONPATH": "/first"})
    assert argv == ["PY", "-m", "ovgenai_c_tools.convert_whisper_ct2", "src", "dst"]
    assert env["PYTHONPATH"].split(":") == ["/first", str(ROOT)]  # appended: the caller's path stays first


def test_a_child_of_this_interpreter_finds_its_own_site_packages(monkeypatch, no_entry_points):
    monkeypatch.setattr(optional_tools, "_site_packages", lambda: [str(ROOT)])  # as if installed there
    assert "PYTHONPATH" not in child_command("convert_whisper_ct2", sys.executable, [], env={})[1]
    argv, env = child_command("convert_whisper_ct2", "/other/python", [], env={})  # (gets the package alone: below)
    assert argv[1] == "-c" and argv[3:5] == [str(ROOT), "ovgenai_c_tools.convert_whisper_ct2"]
    assert "PYTHONPATH" not in env


def test_another_interpreter_gets_the_tool_package_alone_not_this_site_packages(fake_tools, tmp_path, monkeypatch):
    # as if fake_tools were installed in this interpreter's site-packages, beside a module the other interpreter
    # (a CPython converting for a PyPy) must not see: this interpreter's builds of numpy / openvino would shadow its own
    monkeypatch.setattr(optional_tools, "_site_packages", lambda: [str(fake_tools)])
    (fake_tools / "shadowing_module.py").write_text("raise SystemExit('the site-packages leaked into the child')\n")
    (fake_tools / "fake_tools" / "probe.py").write_text(
        "import importlib.util, sys\n"
        "print(sys.argv[1:], importlib.util.find_spec('shadowing_module') is None, __name__, __package__)\n")
    monkeypatch.setattr(optional_tools, "_entry_points", lambda: {"convert_whisper_ct2": "fake_tools.probe"})
    other = tmp_path / "other-python"
    other.symlink_to(sys.executable)
    argv, env = child_command("convert_whisper_ct2", str(other), ["a b", "--c"], env={})
    assert argv[:2] == [str(other), "-c"] and "PYTHONPATH" not in env
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['a b', '--c'] True __main__ fake_tools"
    # this interpreter, or a tool outside site-packages: `python -m` as before
    assert child_command("convert_whisper_ct2", sys.executable, [], env={})[0][1] == "-m"
    monkeypatch.setattr(optional_tools, "_site_packages", lambda: [])
    assert child_command("convert_whisper_ct2", str(other), [], env={})[0][1] == "-m"


def test_an_entry_point_to_a_missing_module_falls_back_to_the_module_name(monkeypatch):
    monkeypatch.setattr(optional_tools, "_entry_points", lambda: {"bench": "no_such_pkg.bench:main"})
    assert find_tool("bench").found_by == "module name"


def test_missing_tools_are_a_clear_error(monkeypatch, no_entry_points, capsys):
    monkeypatch.setitem(DEFAULT_TARGETS, "bench", "no_such_tools_pkg.bench:main")
    with pytest.raises(ToolNotFoundError, match=r"side-by-side benchmark .* is not installed.*'ovgenai_c\.tools' "
                                                r"entry point 'bench' \(none installed\)"):
        find_tool("bench")
    assert cli.main(["bench", "MODEL", "--compare"]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert err.startswith("ovgenai-c: error: the side-by-side benchmark") and "reinstall ovgenai_c" in err


def test_bench_compare_runs_the_tool_it_finds(fake_tools):
    assert cli.main(["bench", "MODEL", "--compare", "--quick"]) == 7
    assert sys.modules["fake_tools.bench"].CALLS == [["MODEL", "--compare", "--quick"]]


def test_conversion_runs_the_entry_points_module_in_a_child(fake_tools, tmp_path, monkeypatch):
    monkeypatch.delenv("OVGENAI_C_CONVERT_PYTHON", raising=False)
    src, dst = tmp_path / "ct2", tmp_path / "ir"
    src.mkdir()
    summary = whisper_models.convert_ct2_to_ir(src, dst, progress=False)
    assert summary == {"converter": "from-entry-point", "openvino": "?"}  # printed by fake_tools.convert in the child
    assert (dst / "converted_from.txt").read_text() == str(src)
    assert "fake_tools" not in sys.modules  # found, never imported here


def test_conversion_without_the_tools_is_a_clear_error(monkeypatch, no_entry_points, tmp_path):
    monkeypatch.setitem(DEFAULT_TARGETS, "convert_whisper_ct2", "no_such_tools_pkg.convert_whisper_ct2")
    with pytest.raises(whisper_models.ModelFetchError,
                       match="cannot convert the Whisper model to OpenVINO IR: the CTranslate2 Whisper -> OpenVINO IR "
                             "converter is not installed"):
        whisper_models.convert_ct2_to_ir(tmp_path / "ct2", tmp_path / "ir", progress=False)
    assert not (tmp_path / "ir").exists()


def test_finding_the_tools_imports_none_of_them():
    code = ("import sys\nfrom ovgenai_c import cli, models, optional_tools as t\n"
            "t.find_tool('bench'); t.child_command('convert_whisper_ct2', sys.executable, [])\n"
            "print(sorted(m for m in sys.modules if m.startswith(('ovgenai_c_tools', 'openvino_genai'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), check=True,
                         timeout=60).stdout
    assert out.strip() == "[]"
