"""The import direction of the project: no circle among its modules, and no sub-room of
``pipelines/`` reaching back into ``pipelines/beam/`` (the Beam graphs build on the rooms, never
the other way round).

The graph is read from the source (``ast``: every ``import`` and ``from ... import``, at module
level or inside a function), so a lazy import inside a function counts as an edge too.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("schemas", "transforms", "metrics", "pipelines", "scripts")

#: Sub-rooms allowed to import ``pipelines.beam``: the benchmarks run real builds (``imagenet-cp bench``).
BEAM_USERS = ("pipelines.bench",)



def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def imports_of(name: str, path: Path, modules: dict) -> set:
    """The project modules ``name`` imports (``from a import b`` counts ``a.b`` when it is a module)."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set]:
    modules = project_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def circles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_is_read_from_the_source():
    graph = import_graph()
    assert "pipelines.inputs.listing" in graph["pipelines.beam.sources"]
    assert "pipelines.beam.build" in graph["pipelines.beam.imagenet_p"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle_among_project_modules():
    assert circles(import_graph()) == []


def test_no_sub_room_of_pipelines_imports_beam():
    graph = import_graph()
    back = sorted((name, target) for name, targets in graph.items() for target in targets
                  if name.startswith("pipelines.") and not name.startswith(("pipelines.beam", *BEAM_USERS))
                  and target.startswith("pipelines.beam"))
    assert back == []


def test_lower_layers_import_no_pipelines_or_scripts():
    graph = import_graph()
    upward = sorted((name, target) for name, targets in graph.items() for target in targets
                    if name.startswith(("schemas", "transforms", "metrics")) and target.startswith(("pipelines", "scripts")))
    assert upward == []
