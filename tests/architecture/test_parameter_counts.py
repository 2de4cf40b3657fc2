"""No function in ``pipelines/`` takes more than :data:`MOST_PARAMETERS` parameters: what belongs
together travels as one object (:class:`pipelines.beam.build.BuildPlan`,
:class:`pipelines.beam.runner.RunOptions`, a config, a model, a selection ...).

Counted from the source (``ast``): every parameter, positional-only and keyword-only ones included;
``self`` and ``cls`` left out; ``*args`` and ``**kwargs`` count one each.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOST_PARAMETERS = 8


def parameter_count(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    arguments = function.args
    names = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    count = len(names) - (1 if names and names[0] in ("self", "cls") else 0)
    return count + (arguments.vararg is not None) + (arguments.kwarg is not None)


def functions_over(limit: int, folder: Path) -> list[str]:
    """``path:line name (count)`` of every function under ``folder`` taking more than ``limit`` parameters."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and parameter_count(node) > limit:
                found.append(f"{path.relative_to(folder.parent)}:{node.lineno} {node.name} ({parameter_count(node)})")
    return found


def test_the_count_takes_every_kind_of_parameter(tmp_path):
    source = ("def f(a, /, b, *args, c, d=1, **kwargs): pass\n"
              "class K:\n    def m(self, a, b): pass\n    @classmethod\n    def n(cls, a): pass\n")
    counts = {node.name: parameter_count(node) for node in ast.walk(ast.parse(source))
              if isinstance(node, ast.FunctionDef)}
    assert counts == {"f": 6, "m": 2, "n": 1}
    (tmp_path / "wide.py").write_text("def wide(a, b, c, d, e, f, g, h, *, i): pass\ndef fine(a, b): pass\n")
    assert [line.split()[1] for line in functions_over(MOST_PARAMETERS, tmp_path)] == ["wide"]


def test_no_function_in_pipelines_takes_more_than_eight_parameters():
    over = functions_over(MOST_PARAMETERS, ROOT / "pipelines")
    assert over == [], "group these parameters into a small frozen dataclass:\n" + "\n".join(over)
