"""Finite-difference gradient checks: mirrors ``torch.autograd.gradcheck`` / ``gradgradcheck``.

The numerical Jacobian uses central differences (``eps``) on each input element, the
analytical one is built row by row with ``autograd.grad``; they must agree within
``atol + rtol * |numerical|``. Inputs should be float64 (a UserWarning otherwise, as torch);
complex inputs and outputs are checked as (real, imag) pairs (NOTE [complex gradcheck]).
"""
from __future__ import annotations

import numpy as np

from .._tensor.factories import tensor
from .._tensor.tensor import Tensor
from . import forward_ad, grad_mode
from .engine import grad as _grad
from .._ops.warn import warn as _warn


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck when ``raise_exception=True`` and a check fails."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(func, inputs):
    out = _as_tuple(func(*inputs))
    for o in out:
        if not isinstance(o, Tensor):
            # torch reads ``requires_grad`` of every output: anything else is its AttributeError
            # (a number used to be dropped, so the check passed with nothing checked)
            raise AttributeError(f"gradcheck: func returned a {type(o).__name__} among its outputs, which has no "
                                 "attribute 'requires_grad'; return a Tensor or a tuple of Tensors")
    return [o for o in out if isinstance(o, Tensor) and (o.dtype.is_floating_point or o.dtype.is_complex)]


# NOTE [complex gradcheck]: a complex tensor counts as its (real, imag) pairs, as torch's
# ``view_as_real``: element k is real coordinates 2k and 2k+1. A Jacobian is (real numel of the
# input, real numel of the output). Reverse mode follows torch's convention: the backward of
# grad_output ``go`` differentiates the real loss ``Re(sum(conj(go) * out))`` and a complex
# input's gradient is ``dL/d re + i dL/d im``; so ``go = 1`` at element k gives the row of the
# output's real part there and ``go = 1j`` the row of its imaginary part.
def _real_flat(v):
    """An array (or array-like) as float64 real coordinates, complex elements as (re, im) pairs."""
    a = np.asarray(v)
    if np.iscomplexobj(a):
        return np.stack([a.real, a.imag], axis=-1).astype(np.float64).ravel()
    return a.astype(np.float64).ravel()


def _jacobians_close(a, n, complex_input, rtol, atol) -> bool:
    """torch's element-wise comparison: a complex input's Jacobian entries are complex numbers
    (d/d re + i d/d im, one per output real coordinate), so ``|a - n| <= atol + rtol * |n|``
    holds in the complex modulus, not separately for the real and imaginary derivatives."""
    a, n = np.asarray(a), np.asarray(n)
    if complex_input and a.ndim == 2 and a.shape[0] % 2 == 0 and a.shape == n.shape:
        a, n = a[0::2] + 1j * a[1::2], n[0::2] + 1j * n[1::2]
    return np.allclose(a, n, rtol=rtol, atol=atol)


def _real_numel(t):
    return t.numel() * (2 if t.dtype.is_complex else 1)


def _unit(t, k):
    """The k-th real coordinate's unit vector in ``t``'s layout (1 or 1j at an element)."""
    g = np.zeros(t.numel(), dtype=np.complex128 if t.dtype.is_complex else np.float64)
    if t.dtype.is_complex:
        g[k // 2] = 1.0 if k % 2 == 0 else 1j
    else:
        g[k] = 1.0
    return g.reshape(tuple(t.shape))


def _check_perturbed(ref, outs, eps):
    """torch's assertion: finite differences need the outputs' shapes and dtypes to stay put
    when an input moves by ``eps`` (a function whose output shape or dtype depends on the
    values cannot be checked)."""
    for (shape, dtype), o in zip(ref, outs):
        if tuple(o.shape) != shape:
            raise AssertionError(f"Expected `func` to return outputs with the same shape when inputs are perturbed "
                                 f"by `eps` ({eps}), but got: shape {tuple(o.shape)} instead of {shape}.")
        if o.dtype != dtype:
            raise AssertionError(f"Expected `func` to return outputs with the same dtype when inputs are perturbed "
                                 f"by `eps` ({eps}), but got: dtype {o.dtype} instead of {dtype}.")


def _numerical(func, inputs, i, eps):
    """d outputs / d inputs[i] as a list (per output) of (real numel_in, real numel_out) arrays
    (NOTE [complex gradcheck])."""
    x = inputs[i]
    cplx = x.dtype.is_complex
    base = _real_flat(x.detach()._value).copy()
    # perturb x in place, through ``.data`` (its storage, not its version counter), as torch: a
    # function that also reaches x another way (a dict holding it, a closure) sees the change
    data, orig = x.data, x.detach().clone()
    ref = [(tuple(o.shape), o.dtype) for o in _outputs(func, inputs)]
    cols = []
    try:
        for k in range(base.size):
            vals = []
            for sign in (1, -1):
                pert = base.copy()
                pert[k] += sign * eps
                if cplx:
                    pert = pert[0::2] + 1j * pert[1::2]
                data.copy_(tensor(pert.reshape(tuple(x.shape)), dtype=x.dtype))
                outs = _outputs(func, inputs)
                _check_perturbed(ref, outs, eps)
                vals.append([_real_flat(o._value) for o in outs])
            cols.append([(a - b) / (2 * eps) for a, b in zip(*vals)])
    finally:
        data.copy_(orig)
    n_out = len(cols[0]) if cols else 0
    return [np.stack([c[j] for c in cols]) if cols else np.zeros((0, 0)) for j in range(n_out)]


def _analytical(func, inputs, diff_idx, nondet_tol=0.0):
    """d outputs / d inputs by reverse mode, one ``autograd.grad`` row per output element. Each
    row is computed twice with the same grad_output, as torch does: rows that differ by more
    than ``nondet_tol`` mean the backward is not reentrant (GradcheckError)."""
    with grad_mode.enable_grad():
        outs = _outputs(func, inputs)
    jac = {}  # (out j, input i) -> (numel_in, numel_out)
    for j, o in enumerate(outs):
        n = _real_numel(o)
        rows = {i: np.zeros((_real_numel(inputs[i]), n)) for i in diff_idx}
        if not o.requires_grad:
            for i in diff_idx:
                jac[(j, i)] = rows[i]
            continue
        for k in range(n):
            go = tensor(_unit(o, k), dtype=o.dtype)
            gs = _grad([o], [inputs[i] for i in diff_idx], [go], retain_graph=True, allow_unused=True)
            again = _grad([o], [inputs[i] for i in diff_idx], [go], retain_graph=True, allow_unused=True)
            for i, gi, gj in zip(diff_idx, gs, again):
                if gi is not None:
                    rows[i][:, k] = _real_flat(gi._value)
                    second = _real_flat(gj._value) if gj is not None else 0.0
                    if not np.allclose(rows[i][:, k], second, rtol=nondet_tol, atol=nondet_tol):
                        raise GradcheckError(
                            "Backward is not reentrant, i.e., running backward with same input and "
                            "grad_output multiple times gives different values, although analytical "
                            f"gradient matches numerical gradient. The tolerance for nondeterminism was {nondet_tol}.")
        for i in diff_idx:
            jac[(j, i)] = rows[i]
    return jac, len(outs)


def _forward(func, inputs, diff_idx):
    """The Jacobians from forward-mode AD: one dual-level run per input element (its tangent a
    one-hot), each giving a row of d outputs / d input."""
    jac = {}
    for i in diff_idx:
        x = inputs[i].detach()
        rows = None
        for k in range(_real_numel(x)):
            xs = list(inputs)
            with forward_ad.dual_level():
                # every differentiable input is dual, the others with zero tangents, as torch's
                # check: the function may read any input's tangent
                for m in diff_idx:
                    if m != i:
                        xm = inputs[m].detach()
                        xs[m] = forward_ad.make_dual(xm, tensor(np.zeros(tuple(xm.shape)), dtype=xm.dtype))
                xs[i] = forward_ad.make_dual(x, tensor(_unit(x, k), dtype=x.dtype))
                outs = _outputs(func, xs)
                tans = [forward_ad.unpack_dual(o).tangent for o in outs]
            if rows is None:
                rows = [np.zeros((_real_numel(x), _real_numel(o))) for o in outs]
            for j, (o, t) in enumerate(zip(outs, tans)):
                if t is not None:
                    rows[j][k] = _real_flat(t.detach()._value)
        for j, r in enumerate(rows or ()):
            jac[(j, i)] = r
    return jac


def _fast(func, inputs, diff_idx, eps, atol, rtol, nondet_tol, check_backward_ad, check_forward_ad):
    """NOTE [fast gradcheck]: torch's ``fast_mode``: instead of whole Jacobians, one number
    ``v^T J u`` per (output, input) pair, for a random unit direction ``u`` in each input and a
    random unit grad_output ``v`` of each output: finite differences along ``u`` (two calls of
    ``func`` per input) against one backward per output with ``v`` (and a forward-mode run
    along ``u``), within ``atol * sum(u) * sum(v) + rtol * |numerical|`` (``atol`` bounds each
    Jacobian entry's error; ``v^T E u`` bounds the sum's). Returns None when every pair agrees,
    else a description of the first that does not (the caller then runs the full check, as torch
    does, for the element-wise message). Real inputs and outputs only."""
    rng = np.random.RandomState(0)     # deterministic, as torch's seeded generator

    def unit(t):
        w = rng.uniform(0.0, 1.0, tuple(t.shape))
        return w / max(np.linalg.norm(w), 1e-300)

    us = {i: unit(inputs[i]) for i in diff_idx}
    with grad_mode.enable_grad():
        outs = _outputs(func, inputs)
    vs = [unit(o) for o in outs]
    numerical = {}
    for i in diff_idx:
        x = inputs[i]
        data, orig = x.data, x.detach().clone()
        base = np.asarray(orig._value, dtype=np.float64)
        ref = [(tuple(o.shape), o.dtype) for o in outs]
        vals = []
        try:
            for sign in (1, -1):
                data.copy_(tensor(base + sign * eps * us[i], dtype=x.dtype))
                got = _outputs(func, inputs)
                _check_perturbed(ref, got, eps)
                vals.append([np.asarray(o._value, dtype=np.float64) for o in got])
        finally:
            data.copy_(orig)
        for j, (a, b) in enumerate(zip(*vals)):
            numerical[(j, i)] = float(np.sum(vs[j] * (a - b) / (2 * eps)))
    analytical = []
    if check_backward_ad:
        rev = {}
        for j, o in enumerate(outs):
            for i in diff_idx:
                rev[(j, i)] = 0.0
            if not o.requires_grad:
                continue
            go = tensor(vs[j], dtype=o.dtype)
            gs = _grad([o], [inputs[i] for i in diff_idx], [go], retain_graph=True, allow_unused=True)
            again = _grad([o], [inputs[i] for i in diff_idx], [go], retain_graph=True, allow_unused=True)
            for i, g, h in zip(diff_idx, gs, again):
                if g is None:
                    continue
                a = float(np.sum(np.asarray(g._value, dtype=np.float64) * us[i]))
                b = 0.0 if h is None else float(np.sum(np.asarray(h._value, dtype=np.float64) * us[i]))
                if abs(a - b) > nondet_tol * (1 + abs(b)):
                    raise GradcheckError(
                        "Backward is not reentrant, i.e., running backward with same input and "
                        "grad_output multiple times gives different values, although analytical "
                        f"gradient matches numerical gradient. The tolerance for nondeterminism was {nondet_tol}.")
                rev[(j, i)] = a
        analytical.append((rev, "Jacobian mismatch"))
    if check_forward_ad:
        fwd = {}
        for i in diff_idx:
            xs = list(inputs)
            with forward_ad.dual_level():
                for m in diff_idx:
                    xm = inputs[m].detach()
                    t = us[i] if m == i else np.zeros(tuple(xm.shape))
                    xs[m] = forward_ad.make_dual(xm, tensor(t, dtype=xm.dtype))
                tans = [forward_ad.unpack_dual(o).tangent for o in _outputs(func, xs)]
            for j, t in enumerate(tans):
                fwd[(j, i)] = 0.0 if t is None else float(np.sum(vs[j] * np.asarray(t.detach()._value, dtype=np.float64)))
        analytical.append((fwd, "Jacobian computed with forward mode mismatch"))
    for found, what in analytical:
        for (j, i), n in numerical.items():
            a = found[(j, i)]
            tol = atol * float(us[i].sum()) * float(vs[j].sum()) + rtol * abs(n)
            if not abs(a - n) <= tol:
                return (f"{what} for output {j} with respect to input {i} (fast mode: v^T J u is "
                        f"{n} by finite differences, {a} analytically)")
    return None


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_backward_ad=True, fast_mode=False, masked=None,
              check_forward_ad=False, check_batched_forward_grad=False):
    """Mirrors ``torch.autograd.gradcheck``: True when the analytical gradients of ``func`` at
    ``inputs`` match finite differences; otherwise raises ``GradcheckError`` (a RuntimeError)
    or returns False when ``raise_exception=False``. ``check_backward_ad`` checks reverse mode
    (``autograd.grad``), ``check_forward_ad`` forward mode (``autograd.forward_ad`` tangents).
    Each reverse-mode row is computed twice: rows differing by more than ``nondet_tol`` raise
    "Backward is not reentrant". A function with no differentiable output passes when finite
    differences see no change ("Numerical gradient for function expected to be zero"
    otherwise). AssertionError when both ``check_forward_ad`` and ``check_backward_ad`` are False;
    RuntimeError for a negative (or NaN) ``atol``/``rtol`` (torch's allclose refuses them), even
    with ``raise_exception=False``."""
    if not (check_forward_ad or check_backward_ad):   # torch's class for this misuse
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    for name, tol in (("atol", atol), ("rtol", rtol)):
        if not tol >= 0:   # (numpy's allclose would take it, and every comparison would fail)
            raise RuntimeError(f"gradcheck: {name} must be greater than or equal to zero, but got {tol}")
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them have requires_grad=True.")
    for i in diff_idx:
        x = inputs[i]
        if not getattr(x, "is_sparse", False) and any(n > 1 and st == 0 for n, st in zip(x.shape, x.stride())):
            # (raised even with raise_exception=False, as torch): perturbing one element of an
            # expanded input would move every element that aliases it
            raise RuntimeError(f"The {i}th input has a dimension with stride 0. gradcheck only supports inputs that "
                               "are non-overlapping to be able to compute the numerical gradients correctly. You "
                               "should call .contiguous on the input before passing it to gradcheck.")
    for i in diff_idx:
        if inputs[i].dtype.name not in ("float64", "complex128"):
            _warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                  "This check will likely fail if all the inputs are not of double precision floating point. ")
    with grad_mode.enable_grad():
        if not any(o.requires_grad for o in _outputs(func, inputs)):
            # no differentiable output: torch checks only that finite differences see no change
            for i in diff_idx:
                if any(np.any(n != 0) for n in _numerical(func, inputs, i, eps)):
                    if raise_exception:
                        raise GradcheckError("Numerical gradient for function expected to be zero")
                    return False
            return True
    if fast_mode and not any(inputs[i].dtype.is_complex for i in diff_idx) and not any(
            o.dtype.is_complex for o in _outputs(func, inputs)):
        try:
            mismatch = _fast(func, inputs, diff_idx, eps, atol, rtol, nondet_tol, check_backward_ad, check_forward_ad)
        except GradcheckError:
            if raise_exception:
                raise
            return False
        if mismatch is None:
            return _finish(func, inputs, diff_idx, check_backward_ad, raise_exception)
        # fall through to the full check: torch's message names the differing elements
    else:
        mismatch = None
    checks = []     # (analytical Jacobians by (output, input), how torch's message names them)
    if check_backward_ad:
        try:
            checks.append((_analytical(func, inputs, diff_idx, nondet_tol)[0], "Jacobian mismatch"))
        except GradcheckError:
            if raise_exception:
                raise
            return False
    if check_forward_ad:
        checks.append((_forward(func, inputs, diff_idx), "Jacobian computed with forward mode mismatch"))
    for i in diff_idx:
        numerical = _numerical(func, inputs, i, eps)
        for analytical, what in checks:
            for j, n in enumerate(numerical):
                a = analytical[(j, i)]
                if not _jacobians_close(a, n, inputs[i].dtype.is_complex, rtol, atol):
                    # printed as tensors, as torch's message (not as raw arrays)
                    msg = (f"{what} for output {j} with respect to input {i},\n"
                           f"numerical:{tensor(np.asarray(n))}\nanalytical:{tensor(np.asarray(a))}\n")
                    if raise_exception:
                        raise GradcheckError(msg)
                    return False
    if fast_mode and mismatch is not None:
        # the full check passed where the fast one did not (torch's "Fast gradcheck failed but
        # element-wise differences are small")
        if raise_exception:
            raise GradcheckError(mismatch + "\nFast gradcheck failed but element-wise differences are small: "
                                 "pass fast_mode=False to check element by element")
        return False
    return _finish(func, inputs, diff_idx, check_backward_ad, raise_exception)


def _finish(func, inputs, diff_idx, check_backward_ad, raise_exception):
    """The checks after the Jacobians': the backward scales with grad_output."""
    if check_backward_ad and not _mul_by_grad_output(func, inputs, diff_idx):
        if raise_exception:
            raise GradcheckError("backward not multiplied by grad_output")
        return False
    return True


def _mul_by_grad_output(func, inputs, diff_idx):
    """torch's check that the backward is linear in grad_output: zero grad_outputs must give
    zero input gradients (a hook adding a constant, say, fails it)."""
    with grad_mode.enable_grad():
        outs = [o for o in _outputs(func, inputs) if o.requires_grad]
    if not outs:
        return True
    zeros = [tensor(np.zeros(tuple(o.shape)), dtype=o.dtype) for o in outs]
    gs = _grad(outs, [inputs[i] for i in diff_idx], zeros, allow_unused=True)
    return all(g is None or not np.any(np.asarray(g._value)) for g in gs)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False):
    """Mirrors ``torch.autograd.gradgradcheck``: gradcheck of the map
    ``(inputs, grad_outputs) -> autograd.grad(func(inputs), inputs, grad_outputs, create_graph=True)``."""
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff_idx:   # torch checks this first too (autograd.grad's "empty inputs" RuntimeError leaked)
        raise ValueError("gradgradcheck expects at least one input tensor to require gradient, but none of them "
                         "have requires_grad=True; pass inputs created with requires_grad=True")
    with grad_mode.enable_grad():
        outs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.RandomState(0)
        grad_outputs = tuple(tensor(rng.randn(*o.shape), dtype=o.dtype, requires_grad=True) for o in outs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_order(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs_ = _outputs(func, ins)
        gs = _grad(outs_, [ins[i] for i in diff_idx], list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_order, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol, fast_mode=fast_mode)


_PRIVATE_API_WARNING = ("`{}` was part of PyTorch's private API and not meant to be exposed. We are deprecating "
                        "it and it will be removed in a future version of PyTorch (tracegrad keeps it for programs "
                        "that still call it).")


def _check_grad_out(grad_out, api):
    if grad_out != 1.0:
        raise ValueError(f"Expected grad_out to be 1.0. {api} no longer supports values of grad_out != 1.0.")


def get_numerical_jacobian(fn, inputs, target=None, eps=1e-3, grad_out=1.0):
    """Mirrors the deprecated ``torch.autograd.gradcheck.get_numerical_jacobian`` (FutureWarning):
    the finite-difference Jacobians, one (numel of the input, numel of the output) tensor per
    tensor of ``target`` (default: ``inputs`` that require grad), of ``fn``'s first output.
    ``fn`` takes the inputs as one tuple. ValueError unless ``grad_out`` is 1.0."""
    _warn(_PRIVATE_API_WARNING.format("get_numerical_jacobian"), FutureWarning)
    _check_grad_out(grad_out, "get_numerical_jacobian")
    inputs = _as_tuple(inputs)
    if target is None:
        targets = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    else:
        wanted = [id(t) for t in _as_tuple(target)]
        targets = [i for i, x in enumerate(inputs) if id(x) in wanted]
    call = lambda *xs: fn(xs)   # noqa: E731 -- fn takes the tuple itself
    with grad_mode.no_grad():
        return tuple(tensor(_numerical(call, inputs, i, eps)[0], dtype=inputs[i].dtype) for i in targets)


def get_analytical_jacobian(inputs, output, nondet_tol=0.0, grad_out=1.0):
    """Mirrors the deprecated ``torch.autograd.gradcheck.get_analytical_jacobian``
    (FutureWarning): ``(jacobians, reentrant, correct_grad_sizes, correct_grad_types)`` for
    ``output`` (already computed from ``inputs``) by reverse mode, one (numel of the input,
    numel of the output) tensor per input requiring grad; ``reentrant`` is False when running
    backward twice gives values further apart than ``nondet_tol``. ValueError unless
    ``grad_out`` is 1.0."""
    _warn(_PRIVATE_API_WARNING.format("get_analytical_jacobian"), FutureWarning)
    _check_grad_out(grad_out, "get_analytical_jacobian")
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    reentrant = True
    try:
        jac, _ = _analytical(lambda *xs: output, inputs, diff_idx, nondet_tol)
    except GradcheckError:
        reentrant = False
        jac, _ = _analytical(lambda *xs: output, inputs, diff_idx, float("inf"))
    return (tuple(tensor(jac[(0, i)], dtype=inputs[i].dtype) for i in diff_idx), reentrant, True, True)
