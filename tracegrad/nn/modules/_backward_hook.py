"""``BackwardHook``: how full module backward hooks fire. Mirrors ``torch.utils.hooks.BackwardHook``.

The module's tensor inputs and outputs pass through an identity node
(``BackwardHookFunctionBackward``). A Node pre-hook on the *output* identity records
``grad_output`` (running backward pre-hooks, which may replace it); a Node post-hook on the
*input* identity sees the gradients w.r.t. the module's inputs and runs the full backward
hooks ``hook(module, grad_input, grad_output)``, which may replace ``grad_input``.

Only inputs that require grad pass through the identity (torch passes every tensor and marks the
others non-differentiable). As in torch, a tensor input that does not require grad shows up in
``grad_input`` as zeros (torch materializes the non-differentiable output's grad) when some other
input requires grad, and as ``None`` when none does; what a hook returns for it is ignored.
"""
from __future__ import annotations

import tracegrad
from tracegrad import Tensor
from tracegrad._api.nn_functions import _backward_hook_function
from ..._ops.warn import warn as _warn


class BackwardHook:
    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None
        self.input_no_grad = ()

    @staticmethod
    def _pack_with_none(indices, values, size):
        res = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    @staticmethod
    def _unpack_none(indices, values):
        return tuple(values[idx] for idx in indices)

    def _apply_on_tensors(self, fn, args):
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        if not idx or not tracegrad.is_grad_enabled():
            return args, None
        new = _backward_hook_function(*[args[i] for i in idx])
        fn(new[0].grad_fn)
        out = list(args)
        for i, v in zip(idx, new):
            out[i] = v
        return tuple(out), idx

    def setup_input_hook(self, args):
        def fn(grad_fn):
            def hook(grad_input, _):
                if self.grad_outputs is None:
                    # the gradient reached the inputs without passing through the outputs
                    return None
                res = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
                if self.input_no_grad:
                    res = list(res)
                    for i, t in self.input_no_grad:
                        res[i] = tracegrad.zeros_like(t)
                    res = tuple(res)
                for h in self.user_hooks:
                    out = h(self.module, res, self.grad_outputs)
                    if out is None:
                        continue
                    if len(out) != len(res):
                        raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got "
                                           f"{len(out)}, but expected {len(res)}")
                    res = out
                self.grad_outputs = None
                return self._unpack_none(self.input_tensors_index, res)
            grad_fn.register_hook(hook)
        res, idx = self._apply_on_tensors(fn, args)
        self.n_inputs = len(args)
        self.input_no_grad = tuple((i, a) for i, a in enumerate(args)
                                   if idx is not None and isinstance(a, Tensor) and i not in idx)
        self.input_tensors_index = idx
        return res

    def setup_output_hook(self, args):
        def fn(grad_fn):
            def hook(grad_output):
                grad_output = tuple(grad_output) + (None,) * (len(self.output_tensors_index) - len(grad_output))
                self.grad_outputs = self._pack_with_none(self.output_tensors_index, grad_output, self.n_outputs)
                if self.user_pre_hooks:
                    expected = len(self.grad_outputs)
                    for h in self.user_pre_hooks:
                        r = h(self.module, self.grad_outputs)
                        if r is None:
                            continue
                        if len(r) != expected:
                            raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got "
                                               f"{len(r)}, but expected {expected}")
                        self.grad_outputs = tuple(r)
                local = self.grad_outputs
                if self.input_tensors_index is None:
                    # no input requires grad: the hooks run now, with grad_input all None
                    if self.user_hooks:
                        _warn("Full backward hook is firing when gradients are computed with respect to "
                              "module outputs since no inputs require gradients. See the docs of "
                              "torch.nn.Module.register_full_backward_hook for more details.")
                    grad_inputs = self._pack_with_none([], [], self.n_inputs)
                    for h in self.user_hooks:
                        r = h(self.module, grad_inputs, self.grad_outputs)
                        if r is not None and not (isinstance(r, tuple) and all(e is None for e in r)):
                            raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                               "always return None or None for all gradients.")
                    self.grad_outputs = None
                if local is not None:
                    return tuple(local[i] for i in self.output_tensors_index)
                return None
            grad_fn.register_prehook(hook)
        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        res, idx = self._apply_on_tensors(fn, args)
        self.n_outputs = len(args)
        self.output_tensors_index = idx
        return res if is_tuple else res[0]
