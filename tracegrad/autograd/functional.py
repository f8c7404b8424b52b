"""``tracegrad.autograd.functional``: mirrors ``torch.autograd.functional`` -- ``vjp``, ``jvp``,
``jacobian``, ``hessian``, ``vhp``, ``hvp`` -- built on tracegrad's own engine
(``autograd.grad`` with ``create_graph``, which supports any order of derivatives).

Conventions as torch: ``inputs`` is a Tensor or a tuple of Tensors and results keep that
structure; a function returning a tuple gives per-output results. ``create_graph=True`` keeps
results differentiable; ``strict=True`` raises RuntimeError when an output (or a derivative)
does not depend on an input instead of returning zeros.

Differs from torch: ``jvp``/``hvp`` use the double-backward trick (as torch does);
``strategy="forward-mode"`` (and ``outer_jacobian_strategy="forward-mode"``) is accepted with
torch's argument checks but computed in reverse mode, which gives the same values.
``vectorize=True`` runs one backward pass under ``tracegrad.func.vmap`` over the batch of basis
vectors (the engine runs on traced tensors), or ``autograd.grad(is_grads_batched=True)`` with
``create_graph=True``.
"""
from __future__ import annotations

import tracegrad as _tg

from .._tensor.tensor import Tensor
from ..func import vmap as _vmap
from . import grad_mode
from .engine import grad as _grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

_STRICT_REQUIRES = {
    # kind -> message for a Tensor that does not require grad, {i} the position
    "outputs": ("Output {i} of the user-provided function does not require gradients. The outputs "
                "must be computed in a differentiable manner from the input when running in strict mode."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of the "
                    "user-provided function. This is not allowed in strict mode."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided function "
                 "with respect to input {i} is independent of the input. This is not allowed in strict "
                 "mode. You should ensure that your function is twice differentiable and that the "
                 "jacobian depends on the inputs (this would be violated by a linear function for example)."),
    "hessian": ("The hessian of the user-provided function with respect to input {i} is independent of "
                "the input. This is not allowed in strict mode. You should ensure that your function is "
                "thrice differentiable and that the hessian depends on the inputs."),
}

_STRICT_NONE = {
    # stage -> message for a gradient that is None (the result does not depend on input {i})
    "back": ("The output of the user-provided function is independent of input {i}. This is not "
             "allowed in strict mode."),
    "back_trick": ("The gradient with respect to the input is independent of entry {i} in the "
                   "grad_outputs when using the double backward trick to compute forward mode "
                   "gradients. This is not allowed in strict mode."),
    "double_back": ("The jacobian of the user-provided function is independent of input {i}. This is "
                    "not allowed in strict mode."),
    "double_back_trick": ("The hessian of the user-provided function is independent of entry {i} in the "
                          "grad_jacobian. This is not allowed in strict mode as it prevents from using "
                          "the double backward trick to replace forward mode AD."),
}


def _tuple(value, what, api):
    """``(was_tuple, tuple_of_tensors)``; TypeError naming ``what`` for non-Tensors."""
    was_tuple = isinstance(value, tuple)
    items = value if was_tuple else (value,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"value at index {i}" if was_tuple else f"given {what}"
            raise TypeError(f"The {what} given to {api} must be either a Tensor or a tuple of Tensors "
                            f"but the {where} has type {type(el)}.")
    return was_tuple, items


def _unpack(res, was_tuple):
    """Undo the tuple wrapping: ``was_tuple`` is a bool, or (outer, inner) for nested results."""
    if isinstance(was_tuple, tuple):
        outer, inner = was_tuple
        if not inner:
            res = tuple(r[0] for r in res)
        return res if outer else res[0]
    return res if was_tuple else res[0]


def _prepare(inputs, create_graph, need_graph):
    """Fresh differentiable handles on the inputs: with ``create_graph`` an input that requires
    grad stays connected to its history (a view of itself), else it is detached."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(need_graph)
                 for t in inputs)


def _finish(tensors, create_graph):
    if create_graph:
        return tensors
    return tuple(_finish(t, create_graph) if isinstance(t, tuple) else t.detach() for t in tensors)


def _check_v(v, ref, ref_is_tuple):
    if len(v) != len(ref):
        if ref_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(ref)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, ref)):
        if a.size() != b.size():
            where = f"Entry {i} in " if ref_is_tuple else ""
            raise RuntimeError(f"{where}v has invalid size: should be {b.size()} but got {a.size()}.")


def _check_requires(tensors, kind, strict):
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(_STRICT_NONE["back"].format(i=i))
        if not t.requires_grad:
            raise RuntimeError(_STRICT_REQUIRES[kind].format(i=i))


def _grads(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None, batched=False):
    """``autograd.grad`` over the outputs that require grad; all None when none does."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    keep = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not keep:
        return (None,) * len(inputs)
    outs, gos = tuple(o for o, _ in keep), tuple(g for _, g in keep)
    if batched and not create_graph:
        # one backward pass vmapped over the batch of grad_outputs (the engine runs on traced
        # tensors): 3-10x faster than a backward per row for a 100x100 jacobian. With
        # create_graph the rows must stay recorded, so the engine's batched loop runs instead.
        unused = []

        def row(*g):
            # a gradient None for an input the outputs do not use (the same for every row) is no
            # Tensor vmap may return: a stand-in leaves the map and None is put back
            r = _grad(outs, inputs, g, allow_unused=True, retain_graph=retain_graph)
            unused[:] = [x is None for x in r]
            return tuple(_tg.zeros(()) if x is None else x for x in r)
        rows = _vmap(row)(*gos)
        return tuple(None if u else x for u, x in zip(unused, rows))
    return _grad(outs, inputs, gos, allow_unused=True, create_graph=create_graph, retain_graph=retain_graph,
                 is_grads_batched=batched)


def _zeros_for_none(grads, refs, strict, create_graph, stage):
    out = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_STRICT_NONE[stage].format(i=i))
            g = _tg.zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. "
                               "This is not allowed in strict mode when create_graph=True.")
        out.append(g)
    return tuple(out)


def _v_or_default(v, ref, ref_is_tuple, create_graph, api, about):
    """Validate ``v`` against ``ref`` (outputs for vjp, inputs otherwise); None is allowed only
    when ``ref`` is one single-element Tensor."""
    if v is not None:
        _, v = _tuple(v, "v", api)
        v = _prepare(v, create_graph, need_graph=False)
        _check_v(v, ref, ref_is_tuple)
        return v
    if len(ref) != 1 or ref[0].nelement() != 1:
        raise RuntimeError(f"The vector v can only be None if the {about} a single Tensor with a single element.")
    return None


def _call(func, inputs, api, strict):
    out_tuple, outputs = _tuple(func(*inputs), "outputs of the user-provided function", api)
    _check_requires(outputs, "outputs", strict)
    return out_tuple, outputs


def _scalar_output(out_tuple, outputs, api):
    if out_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {api} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {api} should contain a single element")


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """Mirrors ``torch.autograd.functional.vjp``: ``(func(*inputs), v^T J)``.

    ``v`` has the outputs' shapes (may be None when ``func`` returns one single-element Tensor).
    Returns the output(s) and one vjp per input, shaped as the inputs.
    Raises: TypeError for non-Tensor inputs/outputs; RuntimeError for a mismatched ``v``, and in
    strict mode for an output independent of an input.
    """
    with grad_mode.enable_grad():
        in_tuple, inputs = _tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _call(func, inputs, "vjp", strict)
        v = _v_or_default(v, outputs, out_tuple, create_graph, "vjp",
                          "user-provided function returns")
    with grad_mode.set_grad_enabled(bool(create_graph) or grad_mode.is_grad_enabled()):
        res = _zeros_for_none(_grads(outputs, inputs, v, create_graph=create_graph), inputs, strict,
                              create_graph, "back")
    return _unpack(_finish(outputs, create_graph), out_tuple), _unpack(_finish(res, create_graph), in_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """Mirrors ``torch.autograd.functional.jvp``: ``(func(*inputs), J v)`` by the double-backward
    trick. ``v`` has the inputs' shapes; the jvp has the outputs' shapes.
    Raises as :func:`vjp` (strict mode also checks the intermediate gradients)."""
    with grad_mode.enable_grad():
        in_tuple, inputs = _tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _v_or_default(v, inputs, in_tuple, create_graph, "jvp",
                          "input to the user-provided function is")
        out_tuple, outputs = _call(func, inputs, "jvp", strict)
        # u -> J^T u is linear in u; differentiating it w.r.t. u at any point gives J
        dummies = tuple(_tg.zeros_like(o, requires_grad=True) for o in outputs)
        back = _grads(outputs, inputs, dummies, create_graph=True)
        _check_requires(back, "grad_inputs", strict)
    with grad_mode.set_grad_enabled(bool(create_graph) or grad_mode.is_grad_enabled()):
        res = _zeros_for_none(_grads(back, dummies, v, create_graph=create_graph), outputs, strict,
                              create_graph, "back_trick")
    return _unpack(_finish(outputs, create_graph), out_tuple), _unpack(_finish(res, create_graph), out_tuple)


def _basis_rows(ref, total, offset):
    """Rows ``offset .. offset+n`` of the ``total x total`` identity, as a ``(total, *ref.shape)``
    tensor for the slice of the flat output that ``ref`` occupies."""
    cols = _tg.eye(total, dtype=ref.dtype)[:, offset:offset + ref.numel()]
    return cols.reshape((total,) + tuple(ref.shape))


def _jacobian_vectorized(inputs, outputs, create_graph):
    numels = [o.numel() for o in outputs]
    total = sum(numels)
    offsets = [sum(numels[:i]) for i in range(len(numels))]
    basis = tuple(_basis_rows(o, total, off) for o, off in zip(outputs, offsets))
    per_input = _grads(outputs, inputs, basis, create_graph=create_graph, batched=True)
    per_input = [g if g is not None else _tg.zeros_like(x).expand((total,) + tuple(x.shape))
                 for g, x in zip(per_input, inputs)]
    return tuple(tuple(g[off:off + n].reshape(tuple(o.shape) + tuple(x.shape)) for g, x in zip(per_input, inputs))
                 for o, off, n in zip(outputs, offsets, numels))


def _jacobian_rows(inputs, outputs, create_graph, strict):
    jac = []
    for i, out in enumerate(outputs):
        rows = [[] for _ in inputs]
        flat = out.reshape(-1)
        for j in range(out.nelement()):
            vj = _grads((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
            for k, (g, x) in enumerate(zip(vj, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {k}. "
                                           "This is not allowed in strict mode.")
                    g = _tg.zeros_like(x)
                elif strict and create_graph and not g.requires_grad:
                    raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. "
                                       "This is not allowed in strict mode when create_graph=True.")
                rows[k].append(g)
        jac.append(tuple(_tg.stack(r, dim=0).view(tuple(out.shape) + tuple(x.shape)) for r, x in zip(rows, inputs)))
    return tuple(jac)


def _check_strategy(strategy, api, create_graph, strict, vectorize):
    if strategy not in ("forward-mode", "reverse-mode"):
        # torch raises AssertionError here
        raise AssertionError(f'tracegrad.autograd.functional.{api}: expected strategy to be either "forward-mode" '
                             f'or "reverse-mode", got {strategy!r}.')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                'torch.autograd.functional.jacobian: `create_graph=True` and `strategy="forward-mode"` are not '
                'supported together (yet). Please either set `create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError(
                'torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not supported '
                'together (yet). Please either set `strict=False` or `strategy="reverse-mode"`.')
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
                                      "implemented for `vectorize=True`.")


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """Mirrors ``torch.autograd.functional.jacobian``.

    Returns ``J[i][j]`` of shape ``output_i.shape + input_j.shape``, unwrapped as torch: a
    Tensor when both inputs and outputs are single Tensors, a tuple over inputs (or outputs)
    when one side is a tuple, a tuple of tuples when both are.
    ``vectorize=True`` computes all rows in one batched backward.
    Raises: TypeError for non-Tensors; RuntimeError in strict mode for an output independent
    of an input, and for ``strict`` with ``vectorize``; NotImplementedError for
    ``strategy="forward-mode"`` with ``create_graph`` or without ``vectorize`` (as torch).
    Differs from torch: forward-mode is computed in reverse mode (same values).
    """
    _check_strategy(strategy, "jacobian", create_graph, strict, vectorize)
    with grad_mode.enable_grad():
        in_tuple, inputs = _tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _call(func, inputs, "jacobian", strict)
        if vectorize:
            if strict:
                raise RuntimeError(
                    "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not supported "
                    "together. Please either set `strict=False` or `vectorize=False`.")
            jac = _jacobian_vectorized(inputs, outputs, create_graph)
        else:
            jac = _jacobian_rows(inputs, outputs, create_graph, strict)
        jac = _finish(jac, create_graph)
        if strategy == "forward-mode":   # torch's forward-mode path builds lists, not tuples
            jac = [list(row) for row in jac]
        return _unpack(jac, (out_tuple, in_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """Mirrors ``torch.autograd.functional.hessian`` of a function returning one single-element
    Tensor: ``H[i][j]`` of shape ``input_i.shape + input_j.shape`` (a Tensor for a single input).
    Raises: RuntimeError when ``func`` returns a tuple or more than one element, and in strict
    mode when the jacobian or hessian does not depend on an input."""
    in_tuple, inputs = _tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('tracegrad.autograd.functional.hessian: expected outer_jacobian_strategy to be '
                             f'either "forward-mode" or "reverse-mode", got {outer_jacobian_strategy!r}.')

    def scalar_func(*xs):
        out_tuple, outputs = _call(func, xs, "hessian", strict)
        _scalar_output(out_tuple, outputs, "hessian")
        return outputs[0].squeeze()

    def jac_func(*xs):
        jac = jacobian(scalar_func, xs, create_graph=True)
        _check_requires(jac, "jacobian", strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _unpack(res, (in_tuple, in_tuple))


def _first_derivative(func, inputs, v, create_graph, strict, api):
    """Shared start of vhp/hvp: prepared inputs, v, the scalar output and its gradient."""
    in_tuple, inputs = _tuple(inputs, "inputs", api)
    inputs = _prepare(inputs, create_graph, need_graph=True)
    v = _v_or_default(v, inputs, in_tuple, create_graph, api, "input to the user-provided function is")
    out_tuple, outputs = _call(func, inputs, api, strict)
    _scalar_output(out_tuple, outputs, api)
    jac = _grads(outputs, inputs, create_graph=True)
    _check_requires(jac, "jacobian", strict)
    return in_tuple, inputs, v, out_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """Mirrors ``torch.autograd.functional.vhp``: ``(func(*inputs), v^T H)`` for a function
    returning one single-element Tensor; ``v`` and the result have the inputs' shapes."""
    with grad_mode.enable_grad():
        in_tuple, inputs, v, out_tuple, outputs, jac = _first_derivative(func, inputs, v, create_graph, strict, "vhp")
    with grad_mode.set_grad_enabled(bool(create_graph) or grad_mode.is_grad_enabled()):
        res = _zeros_for_none(_grads(jac, inputs, v, create_graph=create_graph), inputs, strict, create_graph,
                              "double_back")
    return _unpack(_finish(outputs, create_graph), out_tuple), _unpack(_finish(res, create_graph), in_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """Mirrors ``torch.autograd.functional.hvp``: ``(func(*inputs), H v)`` by the double-backward
    trick; ``v`` and the result have the inputs' shapes."""
    with grad_mode.enable_grad():
        in_tuple, inputs, v, out_tuple, outputs, jac = _first_derivative(func, inputs, v, create_graph, strict, "hvp")
        dummies = tuple(_tg.zeros_like(x, requires_grad=True) for x in inputs)
        back = _grads(jac, inputs, dummies, create_graph=True)
        _check_requires(jac, "hessian", strict)
    with grad_mode.set_grad_enabled(bool(create_graph) or grad_mode.is_grad_enabled()):
        res = _zeros_for_none(_grads(back, dummies, v, create_graph=create_graph), inputs, strict, create_graph,
                              "double_back_trick")
    return _unpack(_finish(outputs, create_graph), out_tuple), _unpack(_finish(res, create_graph), in_tuple)
