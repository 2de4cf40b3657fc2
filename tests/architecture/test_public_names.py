"""What a module offers is declared, and only that is used: every public module of ``pipelines/``,
``transforms/``, ``metrics/``, ``schemas/`` and ``scripts/`` declares ``__all__`` (each name in it bound by
the module, each public function and class it defines listed; in ``schemas/`` and ``scripts/`` each public
constant and type alias too), and no module of the project reads another module's private (``_name``)
attributes.

Read from the source with ``ast``, so the Beam and TensorFlow modules are checked without importing them;
the modules light enough to import (``transforms``, ``metrics``, ``schemas``, ``scripts``) are also checked
by importing them.
"""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DECLARING = ("pipelines", "transforms", "metrics", "schemas", "scripts")
"""The rooms whose public modules declare ``__all__``."""
PROJECT = ("schemas", "transforms", "metrics", "pipelines", "scripts")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def public_modules(rooms=DECLARING) -> dict[str, Path]:
    """Module name -> file of every module under ``rooms`` with no ``_`` part in its name."""
    found = {}
    for room in rooms:
        for path in sorted((ROOT / room).rglob("*.py")):
            name = module_name(path)
            if not any(part.startswith("_") for part in name.split(".")):
                found[name] = path
    return found


def declared_all(tree: ast.Module):
    """The names of the module's top-level ``__all__ = [...]``, or None."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return [element.value for element in node.value.elts]
    return None


def bound_names(tree: ast.Module) -> set:
    """Every name bound at the top level of a module (definitions, assignments, imports), inside
    top-level ``if`` and ``try`` blocks too."""
    names = set()

    def visit(statements):
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.If):
                visit(node.body + node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body])
    visit(tree.body)
    return names


def assigned_public(tree: ast.Module) -> list:
    """The public names a module binds at its top level by assignment (constants, type aliases)."""
    names = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        names += [n.id for target in targets for n in ast.walk(target)
                  if isinstance(n, ast.Name) and not n.id.startswith("_")]
    return names


def defined_public(tree: ast.Module) -> list:
    """The public functions and classes a module defines at its top level."""
    definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [node.name for node in tree.body if isinstance(node, definitions) and not node.name.startswith("_")]


MODULES = public_modules()


def test_the_rooms_have_public_modules():
    assert len(MODULES) > 140 and {"transforms", "metrics", "pipelines.beam.build"} <= set(MODULES)
    assert {"schemas", "schemas.editions", "schemas.editions.cifar", "scripts", "scripts.cli"} <= set(MODULES)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_public_module_declares_all_and_every_name_in_it_exists(name):
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = declared_all(tree)
    assert names is not None, f"{path.relative_to(ROOT)} declares no __all__"
    assert len(names) == len(set(names)), f"{name}.__all__ lists a name twice"
    submodules = {p.stem for p in path.parent.glob("*.py")} | {p.name for p in path.parent.iterdir() if p.is_dir()} \
        if path.name == "__init__.py" else set()
    missing = [n for n in names if n not in bound_names(tree) and n not in submodules]
    assert not missing, f"{name}.__all__ names what the module does not bind: {missing}"
    unlisted = [n for n in defined_public(tree) if n not in names]
    assert not unlisted, f"{name} defines public {unlisted} but its __all__ does not list them"


FULLY_DECLARING = ("schemas", "scripts")
"""The rooms whose modules list in ``__all__`` every public name they bind, constants and type aliases too."""


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.split(".")[0] in FULLY_DECLARING))
def test_every_public_name_of_schemas_and_scripts_is_declared(name):
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    names = declared_all(tree) or []
    unlisted = [n for n in dict.fromkeys(assigned_public(tree)) if n not in names]
    assert not unlisted, f"{name} binds public {unlisted} but its __all__ does not list them"


@pytest.mark.parametrize("package", ["transforms", "metrics", "schemas", "scripts"])
def test_all_of_the_light_modules_resolves_on_import(package):
    for name in (n for n in MODULES if n.split(".")[0] == package):
        module = importlib.import_module(name)
        assert all(hasattr(module, n) for n in module.__all__), name


def private_reach_ins(path: Path, modules: set) -> list:
    """``module._name`` attributes and ``from module import _name`` of project modules in one file."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases, found = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                if base in modules and alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"from {base} import {alias.name}")
                if f"{base}.{alias.name}" in modules:
                    aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.Import):
            aliases.update({a.asname or a.name: a.name for a in node.names if a.name in modules})
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            value, chain = node.value, []
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in aliases:
                found.append(".".join([value.id, *reversed(chain), node.attr]))
    return found


def test_no_module_reads_another_modules_private_names():
    everything = public_modules(PROJECT) | {module_name(p): p for room in PROJECT for p in (ROOT / room).rglob("*.py")}
    modules = set(everything)
    reach_ins = {name: found for name, path in everything.items() if (found := private_reach_ins(path, modules))}
    assert not reach_ins
