"""``Tensor.module_load`` and ``load_state_dict`` under
``torch.__future__.set_swap_module_params_on_conversion(True)``: what the module's own objects
hold afterwards, a Tensor subclass's ``module_load`` override remapping the checkpoint's value,
and torch's error for an override that returns one of its inputs (torch 2.13 as the oracle)."""
import contextlib

import pytest

import tracegrad

torch = pytest.importorskip("torch")

LIBS = (torch, tracegrad)


@contextlib.contextmanager
def swapping(lib):
    before = lib.__future__.get_swap_module_params_on_conversion()
    lib.__future__.set_swap_module_params_on_conversion(True)
    try:
        yield
    finally:
        lib.__future__.set_swap_module_params_on_conversion(before)


@pytest.mark.parametrize("assign", [False, True])
def test_swap_loading_keeps_the_module_objects(assign):
    seen = []
    for lib in LIBS:
        with swapping(lib):
            m = lib.nn.Linear(2, 3)
            m.weight.requires_grad_(False)
            objects = dict(m.named_parameters())
            sd = {k: lib.arange(v.numel(), dtype=lib.float32).reshape(v.shape) for k, v in m.state_dict().items()}
            m.load_state_dict(sd, assign=assign)
            seen.append([(k, p is objects[k], p is sd[k], type(p).__name__, p.requires_grad, p.tolist())
                         for k, p in m.named_parameters()])
    assert seen[0] == seen[1]


@pytest.mark.parametrize("assign", [False, True])
def test_module_load_default_matches_torch(assign):
    seen = []
    for lib in LIBS:
        t, other = lib.zeros(3), lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        out = t.module_load(other, assign=assign)
        seen.append((out is t, out is other, out.requires_grad, out.tolist(), t.tolist(),
                     out.data_ptr() == t.data_ptr(), out.data_ptr() == other.data_ptr()))
    assert seen[0] == seen[1]


def test_subclass_module_load_override_remaps_the_value():
    seen = []
    for lib in LIBS:
        class Doubling(lib.Tensor):
            def module_load(self, other, assign=False):
                return (other * 2).detach()
        with swapping(lib):
            m = lib.nn.Module()
            m.register_buffer("b", lib.zeros(2).as_subclass(Doubling))
            m.p = lib.nn.Parameter(lib.zeros(2).as_subclass(Doubling))
            m.load_state_dict({"b": lib.ones(2), "p": lib.full((2,), 3.0)})
            seen.append((m.b.tolist(), m.p.tolist(), type(m.p).__name__, m.p.requires_grad))
    assert seen[0] == seen[1] == ([2.0, 2.0], [6.0, 6.0], "Parameter", True)


@pytest.mark.parametrize("returns", ["self", "other"])
def test_module_load_returning_an_input_is_torchs_error(returns):
    for lib in LIBS:
        class Lazy(lib.Tensor):
            def module_load(self, other, assign=False):
                return self if returns == "self" else other
        with swapping(lib):
            m = lib.nn.Module()
            m.register_buffer("c", lib.zeros(2).as_subclass(Lazy))
            with pytest.raises(RuntimeError, match=r'(?s)While swapping the parameter named "c".*module_load '
                                                   r"returned one of self or other"):
                m.load_state_dict({"c": lib.ones(2)})
