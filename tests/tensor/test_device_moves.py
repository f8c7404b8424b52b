"""Moves between devices (``Tensor.to``/``cpu``/``cuda``) and float32 matmul precision: the
behaviours that matter on a GPU, checked here on two emulated CPU devices (a fresh process
with ``--xla_force_host_platform_device_count=2``; 'cpu:1' is the second)."""
import os
import subprocess
import sys
import textwrap

import jax
import pytest

import tracegrad

_TWO_DEVICES = textwrap.dedent("""
    import tracegrad as t

    def dev(x):
        return next(iter(x._value.devices())).id

    x = t.ones(3, requires_grad=True)
    w = t.full((3,), 2.0, requires_grad=True)
    y = x.to('cpu:1')
    assert type(y.grad_fn).__name__ == 'ToCopyBackward0' and dev(y) == 1
    (y * y.detach()).sum().backward()           # the gradient comes back to x's device
    assert x.grad.tolist() == [1.0] * 3 and dev(x.grad) == 0
    h = (x * w).to('cpu:1')
    (h * h).sum().backward()                    # through a move into the next node's kernel
    assert w.grad.tolist() == [4.0] * 3 and dev(w.grad) == 0
    x.grad = None
    g, = t.autograd.grad((x.to('cpu:1') ** 2).sum(), x, create_graph=True)
    assert dev(g) == 0 and g.tolist() == [2.0] * 3
    g.sum().backward()                          # double backward through the move
    assert x.grad.tolist() == [2.0] * 3 and dev(x.grad) == 0
    # 64-bit data keeps its width across a move (a transfer outside x64 mode narrows it)
    i = t.tensor([2 ** 40, -3]).to('cpu:1')
    d = t.tensor([1.0 + 2 ** -40], dtype=t.float64).to('cpu:1')
    assert i._value.dtype == 'int64' and i.tolist() == [2 ** 40, -3]
    assert d._value.dtype == 'float64' and d.item() == 1.0 + 2 ** -40
    assert (i + 1).tolist() == [2 ** 40 + 1, -2]
    with t.no_grad():                            # no record when grad mode is off
        assert x.to('cpu:1').grad_fn is None
    print('ok')
""")


def test_moves_between_devices_route_gradients_back():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-c", _TWO_DEVICES], capture_output=True, text=True, env=env,
                       timeout=240)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]


def _precisions(fn, *args):
    text = str(jax.make_jaxpr(fn)(*args))
    return [part.split(" ")[0].rstrip(",") for part in text.split("precision=")[1:]]


@pytest.mark.parametrize("name", ["mm", "addmm", "einsum"])
def test_float32_products_follow_torch_matmul_precision(name):
    """torch's default 'highest' is explicit in every product (XLA:GPU would otherwise use
    TF32); 'high'/'medium' defer to JAX's default_matmul_precision, which the setter writes."""
    from tracegrad._ops.registry import OPS
    a = jax.numpy.ones((2, 2), "float32")
    fns = {"mm": lambda a: OPS["mm"].fn(a, a, dtype="float32"),
           "addmm": lambda a: OPS["addmm"].fn(a, a, a, 1.0, 1.0, dtype="float32"),
           "einsum": lambda a: OPS["einsum"].fn(a, a, equation="ij,jk->ik")}
    assert tracegrad.get_float32_matmul_precision() == "highest"
    assert "HIGHEST" in " ".join(_precisions(fns[name], a))
    before = jax.config.jax_default_matmul_precision
    try:
        tracegrad.set_float32_matmul_precision("high")
        assert "HIGHEST" not in " ".join(_precisions(fns[name], a))
    finally:
        tracegrad.set_float32_matmul_precision("highest")
        jax.config.update("jax_default_matmul_precision", before)
    assert "HIGHEST" in " ".join(_precisions(fns[name], a))
