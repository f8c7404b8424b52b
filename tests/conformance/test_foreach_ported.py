"""NOTE: the programs that followed PyTorch's test/test_foreach.py statement for statement (the same
code and literals, lightly edited, asserts turned into logs) were removed with their tests (a public
repository's code stays out of this project's commits); what remains is the tests written here. The
text below describes the file as it was.

Conformance tests ported from PyTorch's test/test_foreach.py (TestForeach): the
``torch._foreach_*`` functions on lists of tensors -- values against the per-tensor op, in-place
variants, argument forms (number, list of numbers, list of Tensors, 0-dim Tensor, alpha), the
slow-path layouts (expanded, transposed, sliced), inf/nan, autograd, and the errors. Each body
runs under torch 2.13 (the oracle) and tracegrad; each test names the originals it covers."""
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _foreach_names(mod):
    return sorted(n for n in dir(mod) if n.startswith("_foreach_"))


def test_every_torch_foreach_function_exists():
    # the OpInfo loop of TestForeach runs over foreach_unary/binary/pointwise/reduce/other op dbs
    assert _foreach_names(tracegrad) == _foreach_names(torch)


