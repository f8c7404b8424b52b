"""NOTE [out of memory] (tracegrad/_ops/errors.py): an allocation XLA or the host refuses raises
torch's exception -- a plain RuntimeError with the CPU allocator's text on the CPU, as torch's
CPU tensors; OutOfMemoryError ("CUDA out of memory. Tried to allocate ...") on an accelerator,
the class ``except torch.cuda.OutOfMemoryError`` retry loops catch -- never JAX's
JaxRuntimeError, numpy's MemoryError or the misleading "cannot run on inputs of shapes"."""
import jax
import jax.numpy as jnp
import pytest

import tracegrad
from tracegrad._lowering.program import Program
from tracegrad._ops.errors import out_of_memory

torch = pytest.importorskip("torch")

HUGE = 2 ** 40      # elements: 4 TiB of float32, more than any test machine has


def _cases(T):
    return {
        "empty": lambda: T.empty(HUGE),
        "ones": lambda: T.ones(2 ** 20, 2 ** 20),
        "randn": lambda: T.randn(HUGE),
        "rand_float64": lambda: T.rand(2 ** 20, 2 ** 20, dtype=T.float64),
        "repeat": lambda: T.ones(2 ** 10, 2 ** 10).repeat(2 ** 10, 2 ** 10),
    }


@pytest.mark.parametrize("case", sorted(_cases(tracegrad)))
def test_cpu_allocation_refused_is_torchs_runtime_error(case):
    with pytest.raises(RuntimeError) as theirs:
        _cases(torch)[case]()
    with pytest.raises(RuntimeError) as ours:
        _cases(tracegrad)[case]()
    assert type(ours.value) is type(theirs.value) is RuntimeError
    msg = str(ours.value)
    assert "can't allocate memory" in msg and "tracegrad" in msg, msg
    assert "RESOURCE_EXHAUSTED" not in msg and "cannot run on inputs" not in msg, msg
    assert ours.value.__cause__ is None and ours.value.__suppress_context__


def test_accelerator_allocation_refused_is_out_of_memory_error():
    err = RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2097152 bytes.")
    oom = out_of_memory(err, "tracegrad.mm()", platform="gpu")
    assert isinstance(oom, tracegrad.cuda.OutOfMemoryError) and isinstance(oom, RuntimeError)
    assert str(oom).startswith("CUDA out of memory. Tried to allocate 2.00 MiB."), str(oom)
    assert "tracegrad.mm()" in str(oom)


def test_other_runtime_errors_are_not_memory_errors():
    assert out_of_memory(RuntimeError("INVALID_ARGUMENT: shapes"), "tracegrad.mm()", platform="gpu") is None
    assert out_of_memory(ValueError("RESOURCE_EXHAUSTED"), "tracegrad.mm()") is None


def test_compiled_program_run_out_of_memory():
    # a program that ran before meets a full device later (other tensors took the memory):
    # its call raises torch's error, not JAX's
    prog = Program.trace(lambda a: [a * 2], [jnp.ones(3)], {})

    def refused(*a):
        raise jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 96 bytes.") \
            if hasattr(jax.errors, "JaxRuntimeError") else RuntimeError("RESOURCE_EXHAUSTED: allocating 96 bytes")
    prog._safe = refused
    with pytest.raises(RuntimeError) as e:
        prog([jnp.ones(3)], donate=False)
    assert "can't allocate memory: you tried to allocate 96 bytes" in str(e.value)
    assert "compile" in str(e.value) and "RESOURCE_EXHAUSTED" not in str(e.value)
    if jax.default_backend() == "cpu":
        assert type(e.value) is RuntimeError
