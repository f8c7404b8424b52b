"""Small constant fills share one immutable array (NOTE [shared constant fills] in
tracegrad/_tensor/host.py): tensors made by zeros/ones/full, and the ``ones_like`` seed of every
``backward()``, must still behave as tensors of their own: writes, the numpy bridge, donation
into compiled programs, and JAX traces around tracegrad ops."""
import jax
import numpy as np
import pytest

import tracegrad as torch


def test_in_place_write_leaves_other_fills_alone():
    a, b = torch.zeros(3), torch.zeros(3)
    a.add_(1)
    a[0] = 5
    assert b.tolist() == [0.0, 0.0, 0.0]
    assert torch.zeros(3).tolist() == [0.0, 0.0, 0.0]
    assert a.tolist() == [5.0, 1.0, 1.0]


def test_numpy_view_write_leaves_other_fills_alone():
    a = torch.ones(2, 2)
    n = a.numpy()
    n[0, 0] = 7.0
    assert a[0, 0].item() == 7.0
    assert torch.ones(2, 2).tolist() == [[1.0, 1.0], [1.0, 1.0]]


@pytest.mark.parametrize("value", [0.0, -0.0, float("nan"), float("inf"), 1, True, -1])
def test_distinct_values_and_dtypes_are_distinct_arrays(value):
    for dtype in (torch.float32, torch.float64, torch.int64, torch.uint8, torch.bool):
        if dtype is not torch.bool and isinstance(value, float) and value != value and not dtype.is_floating_point:
            continue
        if not dtype.is_floating_point and isinstance(value, float) and value in (float("inf"),):
            continue
        got = torch.full((2,), value, dtype=dtype)
        want = np.full((2,), value).astype(np.dtype(str(dtype).split(".")[1]))
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.numpy(), want)
        if dtype.is_floating_point and value == 0:
            assert np.signbit(got.numpy()).tolist() == np.signbit(want).tolist()


def test_backward_seed_is_a_gradient_of_its_own():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    seeds = []
    y = (x * 3).sum()
    y.register_hook(lambda g: seeds.append(g) or g)
    y.backward()
    seeds[0].mul_(10)            # a hook's in-place edit of one seed does not reach the next
    z = (x * 3).sum()
    z.register_hook(lambda g: seeds.append(g.clone()) or g)
    z.backward()
    assert seeds[1].item() == 1.0
    assert x.grad.tolist() == [6.0, 6.0]


def test_fill_inside_users_jax_jit_does_not_leak_a_tracer():
    def f(a):
        t = torch.Tensor._make(a)
        return (t * torch.ones(3)).sum()._value
    jitted = jax.jit(f)
    assert float(jitted(np.ones(3, np.float32))) == 3.0
    assert float(jitted(np.ones(3, np.float32) * 2)) == 6.0
    # the fill made inside the trace was not kept: eager ones of that shape are concrete
    assert torch.ones(3).tolist() == [1.0, 1.0, 1.0]
    vm = jax.vmap(lambda a: (torch.Tensor._make(a) + torch.zeros(()))._value)
    np.testing.assert_array_equal(vm(np.arange(4.0, dtype=np.float32)), np.arange(4.0))
    assert torch.zeros(()).item() == 0.0


def test_fill_state_of_a_compiled_step_is_not_donated_away():
    buf = torch.zeros(4)                  # shares the cached zeros array

    @torch.compile
    def step(x):
        buf.add_(x)
        return buf * 2

    x = torch.ones(4)
    outs = [step(x).tolist() for _ in range(3)]
    assert outs == [[2.0] * 4, [4.0] * 4, [6.0] * 4]
    assert buf.tolist() == [3.0] * 4
    assert torch.zeros(4).tolist() == [0.0] * 4     # the shared array is alive and unchanged


def test_fill_inside_compiled_step_matches_eager():
    def step(x):
        h = torch.zeros(2, 3)
        h = h + x
        return h.sum(0) + torch.full((3,), -0.0)

    compiled = torch.compile(step)
    for i in range(3):
        x = torch.full((2, 3), float(i))
        assert compiled(x).tolist() == step(x).tolist()
    assert torch.zeros(2, 3).tolist() == [[0.0] * 3] * 2
