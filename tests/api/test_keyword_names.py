"""torch's keyword argument names and keyword-only options (found by comparing torch's
signatures with tracegrad's): the same call works, or raises the same class, in both."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

CALLS = [
    "m.set_rng_state(new_state=m.get_rng_state())",
    "m.ones(2).round_(decimals=1)", "m.round_(m.ones(2), decimals=2)", "m.round_(m.ones(2))",
    "m.ones(2, 3).swapaxes_(axis0=0, axis1=1)", "m.ones(2, 3).swapdims_(dim0=0, dim1=1)",
    "m.ones(4).split(split_size=2)", "m.split(m.ones(4), split_size_or_sections=2)",
    "m.ones(4).split(split_size_or_sections=2)", "m.split(m.ones(4), split_size=2)",
    "m.set_default_device(device='cpu')", "m.from_dlpack(m.ones(2), device='cpu', copy=True)",
    "m.randn(2, layout=m.strided, pin_memory=False)", "m.rand(2, layout=m.strided, pin_memory=False)",
    "m.randperm(3, layout=m.strided, pin_memory=False)", "m.randint(0, 5, (2,), layout=m.strided)",
    "m.rand_like(m.ones(2), generator=m.Generator().manual_seed(1))",
    "m.randn_like(m.ones(2), generator=m.Generator().manual_seed(1))",
    "m.randint_like(m.ones(2), 5, generator=m.Generator().manual_seed(1))",
    "m.eye(2, layout=m.strided)", "m.arange(3, layout=m.strided)", "m.linspace(0, 1, 3, layout=m.strided)",
    "m.logspace(0, 1, 3, layout=m.strided)", "m.full_like(m.ones(2), 3., layout=m.strided)",
    "m.randn(2, layout=m.sparse_coo)", "m.eye(2, layout=m.sparse_coo)", "m.full_like(2, 3.)",
    "m.rand_like([1.0])",
]


@pytest.mark.parametrize("call", CALLS)
def test_call_behaves_as_torch(call):
    outcome = {}
    for m in (torch, tracegrad):
        try:
            v = eval(call)     # noqa: S307 -- a fixed table of calls
            outcome[m] = ("ok", [tuple(t.shape) for t in v] if isinstance(v, tuple) else
                          tuple(v.shape) if hasattr(v, "shape") else None)
        except Exception as e:   # noqa: BLE001 -- the class is what is compared
            outcome[m] = (type(e).__name__, None)
        finally:
            m.set_default_device(None)
    assert outcome[tracegrad] == outcome[torch]


def test_generator_of_like_factories_is_used():
    a = tracegrad.rand_like(tracegrad.ones(3), generator=tracegrad.Generator().manual_seed(5))
    b = tracegrad.rand_like(tracegrad.ones(3), generator=tracegrad.Generator().manual_seed(5))
    c = tracegrad.rand(3, generator=tracegrad.Generator().manual_seed(5))
    assert a.tolist() == b.tolist() == c.tolist()


def test_round_in_place_with_decimals_matches_torch():
    for m in (torch, tracegrad):
        x = m.tensor([1.234, -5.678, 2.5], requires_grad=True).clone()
        x.round_(decimals=1)
        x.sum().backward()
        if m is torch:
            ref = x.tolist()
        else:
            assert x.tolist() == pytest.approx(ref)


INPUT_CALLS = [
    "m.sum(input=x)", "m.sum(input=x, dim=0)", "m.add(input=x, other=x)", "m.exp(input=x)",
    "m.maximum(input=x, other=x)", "m.clamp(input=x, min=0.5)", "m.mean(input=x, dim=1, keepdim=True)",
    "m.softmax(input=x, dim=0)", "m.abs(input=x)", "m.sum(x, input=x)", "m.argmax(input=x)", "m.topk(input=x, k=1)",
    "m.norm(input=x)", "m.mul(input=x, other=2)", "m.std(input=x)", "m.squeeze(input=x)", "m.relu(input=x)",
    "m.sigmoid(input=x)", "m.sub(input=x, other=x, alpha=2)", "m.pow(input=x, exponent=2)",
    "m.log_softmax(input=x, dim=1)", "m.cumsum(input=x, dim=0)", "m.flip(input=x, dims=[0])", "m.t(input=x)",
    "m.chunk(input=x, chunks=2)", "m.unsqueeze(input=x, dim=0)", "m.sum(x, axis=0, keepdims=True)",
]


@pytest.mark.parametrize("call", INPUT_CALLS)
def test_function_forms_take_input_by_keyword(call):
    """NOTE [input keyword]: torch's function forms name their tensor ``input``."""
    got = {}
    for m in (torch, tracegrad):
        x = m.arange(1.0, 5.0).reshape(2, 2)
        try:
            v = eval(call)     # noqa: S307 -- a fixed table of calls
            got[m] = ("ok", [t.tolist() for t in v] if isinstance(v, tuple) else v.tolist())
        except TypeError as e:
            got[m] = ("TypeError", None)
    assert got[tracegrad][0] == got[torch][0]
    if got[torch][0] == "ok":
        np.testing.assert_allclose(np.array(got[tracegrad][1], dtype=float), np.array(got[torch][1], dtype=float),
                                   rtol=1e-6)


def test_methods_keep_their_positional_self():
    x = tracegrad.arange(4.0)
    assert x.sum().item() == 6.0 and x.add(x).tolist() == [0.0, 2.0, 4.0, 6.0]
    assert tracegrad.Tensor.sum(x).item() == 6.0
