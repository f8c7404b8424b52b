"""testinfra25: the hand-written tests of PyTorch's test/test_nn.py ``TestNN`` class (CPU; not the
generated module/criterion table tests) run under tracegrad and torch 2.13. Most of them already
pass; the cases here are the ones that found a tracegrad difference, cut down to tiny shapes. Value
cases run one program with torch and with tracegrad (``same_outcome``: values, dtypes, shapes,
gradients, or the same exception class); each case names its TestNN original."""

import numpy as np
import pytest
from parity import outcome_params, same_outcome


# ==== grid_sample: the grid gradient on the border (border / reflection padding) ================
# (bicubic's taps fold integer coordinates, so its grid gradient never passes the clip; its
# near-zero gradients there differ by float32 rounding only, and it is left out)
def _grid_sample_edge_grad(mode, padding_mode, align_corners, input_requires_grad):
    # TestNN.test_grid_sample ("explicit check for gradient edge cases"): grid points on +-1 and
    # +-0.8 land exactly on, or are folded onto, the border pixels, where torch's
    # clip_coordinates_set_grad gives the coordinate a zero gradient.
    def fn(T):
        x = T.arange(0., 5).expand((1, 1, 5, 5)).requires_grad_(input_requires_grad)
        grid = T.tensor([[[1.0, 1.0], [1.0, -1.0], [0.8, 0.8], [0.8, -0.8]],
                         [[-1.0, -1.0], [-1.0, 1.0], [-0.8, -0.8], [-0.8, 0.8]]]).view(1, 2, 4, 2).requires_grad_()
        out = T.nn.functional.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
        out.sum().backward()
        return out, grid.grad
    return fn


_GRID_EDGE = {f"{m}-{p}-ac{int(a)}-in{int(r)}": _grid_sample_edge_grad(m, p, a, r)
              for m in ("bilinear", "nearest") for p in ("zeros", "border", "reflection")
              for a in (True, False) for r in (False, True)}


@pytest.mark.parametrize("fn", outcome_params(_GRID_EDGE))
def test_grid_sample_edge_gradients(fn):
    same_outcome(fn)


def _grid_sample_3d_edge(padding_mode, align_corners):
    # TestNN.test_grid_sample_3d: the volumetric sampler shares the coordinate folding
    def fn(T):
        x = T.arange(0., 27).view(1, 1, 3, 3, 3)
        grid = T.tensor([[1.0, 1.0, 1.0], [-1.0, 0.5, -1.0], [0.25, -1.0, 1.0], [2.0, 0.0, -1.5]]).view(1, 1, 1, 4, 3)
        grid.requires_grad_()
        out = T.nn.functional.grid_sample(x, grid, mode="bilinear", padding_mode=padding_mode, align_corners=align_corners)
        out.sum().backward()
        return out, grid.grad
    return fn


@pytest.mark.parametrize("fn", outcome_params({f"{p}-ac{int(a)}": _grid_sample_3d_edge(p, a)
                                               for p in ("zeros", "border", "reflection") for a in (True, False)}))
def test_grid_sample_3d_edge_gradients(fn):
    same_outcome(fn)


# ==== Module._apply under set_swap_module_params_on_conversion(True) ===========================
def _swap_future(T, body):
    T.__future__.set_swap_module_params_on_conversion(True)
    try:
        return body()
    finally:
        T.__future__.set_swap_module_params_on_conversion(False)


def test_swap_module_params_poisons_acc_grad(T):
    # TestNN.test_swap_module_params_poisons_acc_grad: m.half() between forward and backward swaps
    # the converted tensors into the Parameter objects, which poisons the old graph's AccumulateGrad
    def body():
        m = T.nn.Linear(2, 3)
        inp = T.randn(2, 2)
        out = m(inp)
        m.half()
        assert all(p.dtype == T.float16 for p in m.parameters())
        with pytest.raises(RuntimeError, match="Trying to execute AccumulateGrad node that was poisoned by swap_tensors"):
            out.sum().backward()
        # after backward has run, converting is fine again
        out2 = m(T.randn(2, 2, dtype=T.half))
        out2.sum().backward()
        m.float()
        assert all(p.dtype == T.float32 for p in m.parameters())
        m(inp)
    _swap_future(T, body)


def test_swap_module_params_keeps_objects():
    # TestNN.test_swap_module_params_poisons_acc_grad's conversion, checked for what the swap is
    # for: the Parameter and .grad objects held outside the module see the new dtype
    def fn(T):
        def body():
            m = T.nn.Linear(2, 3)
            with T.no_grad():
                m.weight.copy_(T.arange(6.).view(3, 2))
            m.weight.grad = T.ones(3, 2)
            w, g = m.weight, m.weight.grad
            m.double()
            return (w is m.weight, g is m.weight.grad, type(m.weight).__name__, w.dtype, w.requires_grad,
                    g.dtype, g.requires_grad, w.detach().clone(), w.is_leaf)
        return _swap_future(T, body)
    same_outcome(fn)


def test_swap_module_params_noop_conversion():
    # TestNN.test_swap_module_params_poisons_acc_grad, corners: torch swaps even when the conversion
    # changes nothing (m.float() on a float module), so the old graph is poisoned all the same; a
    # .grad keeps its object through half(), and backward after float() accumulates again
    def fn(T):
        def body():
            res = []
            m = T.nn.Linear(2, 3)
            out = m(T.randn(2, 2))
            m.float()
            try:
                out.sum().backward()
                res.append("no error")
            except RuntimeError as e:
                res.append("poisoned" if "poisoned by swap_tensors" in str(e) else str(e))
            x = T.randn(2, 2)
            m(x).sum().backward()
            g = m.weight.grad
            m.half()
            res += [g is m.weight.grad, m.weight.grad.dtype]
            m.float()
            m(x).sum().backward()
            res += [m.weight.grad.dtype, m.weight.grad.shape]
            return res
        return _swap_future(T, body)
    same_outcome(fn)
