"""The ``Examples`` sections of the public functions of ``transforms`` and ``metrics`` run as doctests.

``make test`` (``pytest tests``) collects this module, so each example is one test here: no
``--doctest-modules`` is needed, and the project's ``--import-mode=importlib`` and ``testpaths``
stay as they are. Every public function must have an example (``test_every_public_function_has_an_example``).
"""
import doctest
import importlib
import inspect
import pkgutil

import pytest

import metrics
import transforms

PACKAGES = (transforms, metrics)
#: Public functions (beyond the packages' ``__all__``) whose docstrings must carry an example.
ALSO_PUBLIC = ("metrics.imagenet_a_o.imagenet_a_metrics", "metrics.imagenet_a_o.rms_calibration_error",
               "metrics.imagenet_a_o.aurra", "metrics.vcr.bin_values", "metrics.vcr.compare_curves",
               "metrics.vcr.performance_curve")


def _modules():
    for package in PACKAGES:
        yield package
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            yield importlib.import_module(info.name)


def _doctests():
    finder = doctest.DocTestFinder(exclude_empty=True)
    found = {}
    for module in _modules():
        for test in finder.find(module):
            if test.examples and test.name.split(".")[-1][:1] != "_":
                found.setdefault(test.name, test)
    return sorted(found.values(), key=lambda test: test.name)


DOCTESTS = _doctests()


@pytest.mark.parametrize("test", DOCTESTS, ids=[test.name for test in DOCTESTS])
def test_docstring_example(test):
    report: list = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    result = runner.run(test, out=report.append, clear_globs=False)
    assert result.attempted > 0 and result.failed == 0, "".join(report)


def _public_functions():
    names = [f"{package.__name__}.{name}" for package in PACKAGES for name in package.__all__
             if inspect.isfunction(getattr(package, name))]
    return [*names, *ALSO_PUBLIC]


@pytest.mark.parametrize("name", _public_functions())
def test_every_public_function_has_an_example(name):
    module, _, attribute = name.rpartition(".")
    function = getattr(importlib.import_module(module), attribute)
    assert ">>>" in (function.__doc__ or ""), f"{name} has no Examples section"
