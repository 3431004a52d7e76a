"""The package's layers reach each other through public names only: the provider, the server and the command
line import no private module or name of ``ovgenai_c``; no module touches another module's private attributes;
the runtime package never imports the tools package (``ovgenai_c_tools``)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "ovgenai_c"
UPPER_LAYERS = sorted([*PACKAGE.joinpath("provider").glob("*.py"), *PACKAGE.joinpath("serve").glob("*.py"),
                       PACKAGE / "cli.py", PACKAGE / "server_client.py"])
ALL_MODULES = sorted(PACKAGE.rglob("*.py"))
# attributes of other libraries' objects that their documentation names (ctypes: CDLL._handle)
DOCUMENTED_FOREIGN = {"_handle"}


def _rel(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _imported_modules(path: Path, tree: ast.AST):
    """(absolute module name, imported names) of every import in ``path``."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            yield module, [a.name for a in node.names]


@pytest.mark.parametrize("path", UPPER_LAYERS, ids=_rel)
def test_upper_layers_use_the_public_api_only(path):
    bad = []
    for module, names in _imported_modules(path, ast.parse(path.read_text())):
        if not module.startswith("ovgenai_c"):
            continue
        if any(_is_private(part) for part in module.split(".")):
            bad.append(module)
        bad += [f"{module}.{n}" for n in names if _is_private(n)]
    assert not bad, f"{_rel(path)} imports private names: {bad}"


@pytest.mark.parametrize("path", ALL_MODULES, ids=_rel)
def test_no_module_touches_another_modules_private_attributes(path):
    """``x._name`` on anything but ``self``/``cls`` is allowed only for names this module itself defines."""
    source = path.read_text()
    tree = ast.parse(source)
    own = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            own.add(n.attr)  # self._x = ...
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own.add(n.name)
        elif isinstance(n, ast.Call) and ast.unparse(n.func) in ("setattr", "object.__setattr__") \
                and len(n.args) > 1 and isinstance(n.args[1], ast.Constant):
            own.add(n.args[1].value)  # object.__setattr__(self, "_x", ...)
    reaches = [f"{ast.unparse(n.value)}.{n.attr} (line {n.lineno})" for n in ast.walk(tree)
               if isinstance(n, ast.Attribute) and _is_private(n.attr)
               and ast.unparse(n.value) not in ("self", "cls")
               and n.attr not in own and n.attr not in DOCUMENTED_FOREIGN]
    assert not reaches, f"{_rel(path)} reaches into another module's private attributes: {reaches}"


@pytest.mark.parametrize("path", ALL_MODULES, ids=_rel)
def test_the_runtime_never_imports_the_tools_package(path):
    tree = ast.parse(path.read_text())
    tools = [m for m, _ in _imported_modules(path, tree) if m.split(".")[0] == "ovgenai_c_tools"]
    assert not tools, f"{_rel(path)} imports {tools}; reach the tools through ovgenai_c.optional_tools"
    assert '"ovgenai_c_tools" /' not in path.read_text()  # nor finds them by file path
