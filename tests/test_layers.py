"""Layers import downward only: messages → models / journal / mailbox →
tools → actors → supervisors → gateway / cli (DESIGN.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import agentrio

PACKAGE = Path(agentrio.__file__).parent

#: Each top-level part of the package and its layer; a module may import
#: its own layer and those below it, never one above. Modules that hold no
#: layer of their own (ids, callbacks, initiators, the tracing hooks that
#: models, tools and actors call, reading JSON) sit at the bottom.
LAYERS = {
    "_ids": 0,
    "_callbacks": 0,
    "_errors": 0,
    "_json": 0,
    "initiator": 0,
    "messages": 1,
    "models": 2,
    "journal": 2,
    "mailbox": 2,
    "supervision": 2,
    "events": 3,
    "tools": 3,
    "actors": 4,
    "supervisors": 5,
    "tracing": 0,
    "gateway": 6,
    "cli": 7,
    "__main__": 8,
    "__init__": 8,
}


def _part(module: str) -> str:
    """``agentrio.tools.builtin.shell`` → ``tools``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> list[tuple[int, str]]:
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    if path.name == "__init__.py":
        package = package[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            if node.module:
                found.append((node.lineno, ".".join([*base, node.module])))
            else:
                found += [(node.lineno, ".".join([*base, alias.name])) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agentrio"):
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("agentrio")]
    return found


def test_every_part_of_the_package_has_a_layer():
    parts = {
        p.stem if p.is_file() else p.name
        for p in PACKAGE.iterdir()
        if p.suffix == ".py" or (p / "__init__.py").exists()
    }
    assert parts <= set(LAYERS), f"give these a layer: {sorted(parts - set(LAYERS))}"


def test_no_module_imports_a_layer_above_its_own():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = _part(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        for line, target in _imports(path):
            if LAYERS[_part(target)] > LAYERS[source]:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}")
    assert upward == []
