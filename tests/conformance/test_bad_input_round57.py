"""Bad-input parity, round 57: ``torch.cond`` and ``torch.while_loop`` misuse (no earlier round fed
them: a pred of each kind, branches that are not callable, take other arguments, raise, return an
operand, None, a float, other nestings, dims or dtypes, or write into an operand; operands that are
not tensors; a ``cond_fn`` returning a Python bool, a float/int/1-element tensor or a tuple; bodies
returning other counts, kinds, shapes and dtypes; carried inputs of other kinds; ``while_loop``'s
signature; the same under grad mode off, in a compiled function and under vmap), autograd's view
creation metadata one step removed (views of a custom Function's or a full backward hook's view,
views of unbind/split/chunk outputs after their base was written, aliases of inference tensors),
and, as a wider net, the suggested areas no difference was left in: distributions under
``validate_args``, utils.data, the nn.Module API and hooks, autograd.graph, process settings, amp,
forward AD, functional_call, lazy modules, fusion and masked functions. A probe of ~700 calls
(written here for this table, no other repository's tests copied; torch 2.13 the oracle) found
these differences, fixed in tracegrad:

- torch runs an eager ``cond`` with a tensor pred, and every ``while_loop``, by compiling the op:
  what goes wrong while a branch is traced is ``torch._dynamo.exc.UncapturedHigherOrderOpError``
  (aliasing, input mutation, a None/float output, differing nestings, a Python error in a branch,
  a bad ``cond_fn`` result, a body's other count/shape/dtype) or ``TorchRuntimeError`` (an op of a
  branch failing, branches' tensors of other dims/dtypes); tracegrad had no
  ``UncapturedHigherOrderOpError`` and raised plain RuntimeError or the branch's own exception
  (ZeroDivisionError, TypeError). The classes now live in ``_ops/dynamo_exc`` (the API layer raises
  them; ``_lowering/exc`` and ``_dynamo.exc`` re-export), and ``_api/torch_extras`` converts
  (NOTE [higher-order op errors]); an IndexError passes through as torch's does.
- ``cond`` took branches that are not callable (TypeError "'int' object is not callable"; torch:
  RuntimeError "Expect both branches to be callable") and operands that are not tensors (ints,
  strings, None, nested in dicts; torch refuses them before tracing, but accepts them in a compiled
  function), and refused a float pred (torch calls the branch, as for a bool or int). A branch
  returning None or a float, or dicts of other keys, was accepted; torch refuses.
- a branch returning a closed-over tensor that needs no grad (or a parameter) unchanged was not
  seen as aliasing (the check predated the storages a branch creates being noted); ``while_loop``
  compared only the top level of nested carried inputs (a nested leaf could change shape or
  count), let an int carried input become a tensor, and a carried bool failed with
  AttributeError ("'bool' object has no attribute 'clone'"); a NumPy bool pred was taken (torch:
  RuntimeError).
- with grad mode off torch lets the taken branch (a loop's body) write into its operands and
  return them; tracegrad refused (RuntimeError) whatever the grad mode.
- ``while_loop`` whose ``cond_fn`` returns a constant ``True`` looped forever (torch traces it once:
  "infinite loop detected"); a float, int or 1-element ``cond_fn`` result was read for its truth
  (torch: only a 0-d bool tensor); a tuple was read as true (torch's RuntimeError); non-callables
  were TypeError, a carried str/None/float an AttributeError (torch: AssertionError naming the
  kinds); ``while_loop`` took a fourth argument torch's signature does not have (TypeError).
- a view of a view that a custom Function (or ``register_full_backward_hook``'s wrapper) returned
  could be written in place (``out.view(2).add_(1)``, ``out[0] = 5``), marked dirty, or have its
  grad_fn regenerated after its base changed: a silent rebase past the Function's backward (wrong
  gradients). torch propagates the IN_CUSTOM_FUNCTION creation meta to such views: RuntimeError
  (``autograd/_dispatch``: ``_make_view``, ``check_custom_function_view``, ``view_grad_fn``).
- an unbind/split/chunk output (or a view of one) whose base was written in place after it was
  taken -- also by an optimizer-style step under no_grad -- got a regenerated AsStrided grad_fn;
  torch's MULTI_OUTPUT_NODE meta refuses that rebase: RuntimeError on reading its grad_fn (or
  requires_grad, or using it) (``view_grad_fn``).
- an alias of an inference tensor detached outside inference mode (``detach()``, ``.data``) has
  a version counter of its own in torch and may be written in place there (not through its
  views); tracegrad refused (``Tensor.detach``, ``check_inplace``).

Found and left alone: a body returning a bare tensor for one carried 0-d input is accepted here;
torch fails with an IndexError of its own indexing ("invalid index of a 0-dim tensor").
``while_loop`` with a tensor (not a tuple) as carried inputs is torch's AssertionError, TypeError
here. ``cond``'s ``a + "s"`` in a branch is torch's TorchRuntimeError (its op meets it on fake
tensors) and UncapturedHigherOrderOpError here (a TypeError is read as the branch's Python error).
Under ``vmap`` a per-sample cond has no aliasing check here, and refuses branches of other dims
that torch's batching rule broadcasts; ``vmap`` of ``while_loop`` and ``func.grad`` of ``cond`` fail
inside torch (internal errors) and work here. torch writes an inference tensor's view before it
raises "Inplace update to inference tensor" (the storage changes); tracegrad raises first.
``torch.linalg.LinAlgError`` is torch's private ``_LinAlgError`` class (not tabled: names differ).

Each call runs under torch and tracegrad: the same exception class (``torch._dynamo.exc``'s by
name: tracegrad's of the same name) or none, no text of the layers below tracegrad; ``_ok`` calls
are ones torch accepts, and they give torch's value.
"""
import logging

import numpy as np
import pytest

import tracegrad

from _bad_input_helpers import FOREIGN, close_values, outcome, plain_value

torch = pytest.importorskip("torch")

C = {}
P = lambda T: T.tensor(True)   # noqa: E731  (a tensor pred: torch's traced path)
X = lambda T: (T.ones(2),)     # noqa: E731

# ---- cond: checks before tracing (plain RuntimeError)
C["cond_pred_int"] = lambda T: T.cond(1, lambda a: a + 1, lambda a: a - 1, X(T))
C["cond_pred_float_ok"] = lambda T: T.cond(1.0, lambda a: a + 1, lambda a: a - 1, X(T))
C["cond_pred_py_bool_ok"] = lambda T: T.cond(False, lambda a: a + 1, lambda a: a - 1, X(T))
C["cond_pred_py_noncallable"] = lambda T: T.cond(True, 3, lambda a: a - 1, X(T))
C["cond_pred_py_operand_int_ok"] = lambda T: T.cond(True, lambda a: a, lambda a: a, (3,))
C["cond_pred_py_raises"] = lambda T: T.cond(True, lambda a: 1 / 0, lambda a: a, X(T))
C["cond_pred_str"] = lambda T: T.cond("a", lambda a: a + 1, lambda a: a - 1, X(T))
C["cond_pred_none"] = lambda T: T.cond(None, lambda a: a + 1, lambda a: a - 1, X(T))
C["cond_pred_two_elements"] = lambda T: T.cond(T.tensor([True, False]), lambda a: a + 1, lambda a: a - 1, X(T))
C["cond_pred_float_tensor_ok"] = lambda T: T.cond(T.tensor(0.5), lambda a: a + 1, lambda a: a - 1, X(T))
C["cond_pred_int_tensor_ok"] = lambda T: T.cond(T.tensor(0), lambda a: a + 1, lambda a: a - 1, X(T))
C["cond_pred_one_element_ok"] = lambda T: T.cond(T.tensor([True]), lambda a: a + 1, lambda a: a - 1, X(T))
C["cond_true_noncallable"] = lambda T: T.cond(P(T), 3, lambda a: a - 1, X(T))
C["cond_false_none"] = lambda T: T.cond(P(T), lambda a: a, None, X(T))
C["cond_operand_int"] = lambda T: T.cond(P(T), lambda a: a + 1, lambda a: a - 1, (3,))
C["cond_operand_str"] = lambda T: T.cond(P(T), lambda a: a, lambda a: a, ("s",))
C["cond_operand_none"] = lambda T: T.cond(P(T), lambda a: T.ones(1), lambda a: T.ones(1), (None,))
C["cond_operand_nested_int"] = lambda T: T.cond(P(T), lambda d: d["a"] + 1, lambda d: d["a"] - 1, ({"a": 1},))
C["cond_operands_dict"] = lambda T: T.cond(P(T), lambda a: a + 1, lambda a: a - 1, {"a": T.ones(2)})
C["cond_operands_tensor"] = lambda T: T.cond(P(T), lambda a: a + 1, lambda a: a - 1, T.ones(2))
C["cond_operands_nested_dict_ok"] = lambda T: T.cond(P(T), lambda d: d["a"] + 1, lambda d: d["a"] - 1,
                                                     ({"a": T.ones(1)},))
C["cond_operands_list_ok"] = lambda T: T.cond(P(T), lambda a: a + 1, lambda a: a - 1, [T.ones(2)])
C["cond_no_operands_ok"] = lambda T: T.cond(P(T), lambda: T.ones(1), lambda: T.zeros(1))
C["cond_keywords_ok"] = lambda T: T.cond(pred=P(T), true_fn=lambda a: a * 2, false_fn=lambda a: a * 3,
                                         operands=X(T))

# ---- cond: what tracing the branches meets (torch._dynamo.exc classes)
C["cond_returns_operand"] = lambda T: T.cond(P(T), lambda a: a, lambda a: a + 1, X(T))
C["cond_returns_view_of_operand"] = lambda T: T.cond(P(T), lambda a: a[:1], lambda a: a[:1] + 1, X(T))
C["cond_mutates_operand"] = lambda T: T.cond(P(T), lambda a: a.add_(1) + 0, lambda a: a + 1, X(T))
C["cond_returns_none"] = lambda T: T.cond(P(T), lambda a: None, lambda a: None, X(T))
C["cond_returns_float"] = lambda T: T.cond(P(T), lambda a: 1.5, lambda a: 2.5, X(T))
C["cond_returns_tuple_with_none"] = lambda T: T.cond(P(T), lambda a: (a + 1, None), lambda a: (a - 1, None), X(T))
C["cond_returns_bool"] = lambda T: T.cond(P(T), lambda a: True, lambda a: False, X(T))
C["cond_returns_str"] = lambda T: T.cond(P(T), lambda a: "x", lambda a: "y", X(T))
C["cond_nested_keys_differ"] = lambda T: T.cond(P(T), lambda a: [(a + 1, {"k": a * 2})], lambda a: [(a - 1, {"j": a})],
                                                X(T))
C["cond_dict_key_order_differs"] = lambda T: T.cond(P(T), lambda a: {"x": a + 1, "y": a + 2},
                                                    lambda a: {"y": a - 2, "x": a - 1}, X(T))
C["cond_nested_ok"] = lambda T: T.cond(P(T), lambda a: [(a + 1, {"k": a * 2})], lambda a: [(a - 1, {"k": a * 3})], X(T))
C["cond_int_and_tensor_ok"] = lambda T: T.cond(P(T), lambda a: (1, a + 1), lambda a: (2, a - 1), X(T))
C["cond_int_where_tensor"] = lambda T: T.cond(P(T), lambda a: (1, a + 1), lambda a: (a - 1, 2), X(T))
C["cond_returns_int_ok"] = lambda T: T.cond(P(T), lambda a: 1, lambda a: 2, X(T))
C["cond_returns_empty_tuple_ok"] = lambda T: T.cond(P(T), lambda a: (), lambda a: (), X(T))
C["cond_returns_list_ok"] = lambda T: T.cond(P(T), lambda a: [a + 1], lambda a: [a - 1], X(T))
C["cond_returns_dict_ok"] = lambda T: T.cond(P(T), lambda a: {"x": a + 1}, lambda a: {"x": a - 1}, X(T))
C["cond_dict_keys_differ"] = lambda T: T.cond(P(T), lambda a: {"x": a + 1}, lambda a: {"y": a - 1}, X(T))
C["cond_tuple_vs_list"] = lambda T: T.cond(P(T), lambda a: (a + 1,), lambda a: [a - 1], X(T))
C["cond_tuple_vs_tensor"] = lambda T: T.cond(P(T), lambda a: (a + 1, a + 2), lambda a: a - 1, X(T))
C["cond_tensor_vs_int"] = lambda T: T.cond(P(T), lambda a: a + 1, lambda a: 1, X(T))
C["cond_dims_differ"] = lambda T: T.cond(P(T), lambda a: a + 1, lambda a: a.sum(), X(T))
C["cond_dtypes_differ"] = lambda T: T.cond(P(T), lambda a: a + 1, lambda a: (a - 1).long(), X(T))
C["cond_sizes_differ_ok"] = lambda T: T.cond(P(T), lambda a: a + 1, lambda a: a[:1] - 1, X(T))
C["cond_branch_arity"] = lambda T: T.cond(P(T), lambda: T.ones(1), lambda a: a + 1, (T.ones(1),))
C["cond_branch_zero_division"] = lambda T: T.cond(P(T), lambda a: a + 1, lambda a: 1 / 0, X(T))
C["cond_branch_value_error"] = lambda T: T.cond(P(T), lambda a: a + int("x"), lambda a: a + 1, X(T))
C["cond_branch_attribute_error"] = lambda T: T.cond(P(T), lambda a: a.nosuch(), lambda a: a + 1, X(T))
C["cond_branch_op_fails"] = lambda T: T.cond(P(T), lambda a: a + 1, lambda a: T.ones(2) @ T.ones(3), X(T))
C["cond_branch_view_fails"] = lambda T: T.cond(P(T), lambda a: a.view(3), lambda a: a + 1, X(T))
C["cond_branch_index_error"] = lambda T: T.cond(P(T), lambda a: a[5] + 0, lambda a: a[0] + 0, X(T))
C["cond_grad_ok"] = lambda T: T.cond(P(T), lambda a: a * 2, lambda a: T.zeros(2), (T.ones(2, requires_grad=True),))

# ---- while_loop
I0 = lambda T: (T.tensor(0),)   # noqa: E731
C["while_ok"] = lambda T: T.while_loop(lambda i: i < 3, lambda i: (i + 1,), I0(T))
C["while_keywords_ok"] = lambda T: T.while_loop(cond_fn=lambda i: i < 3, body_fn=lambda i: (i + 1,), carried_inputs=I0(T))
C["while_zero_trips_ok"] = lambda T: T.while_loop(lambda i: i < 0, lambda i: (i + 1,), I0(T))
C["while_carried_list_ok"] = lambda T: T.while_loop(lambda i: i < 3, lambda i: (i + 1,), [T.tensor(0)])
C["while_int_carried_ok"] = lambda T: T.while_loop(lambda i, x: x.sum() < 3, lambda i, x: (i + 1, x + 1), (0, T.zeros(1)))
C["while_grad_ok"] = lambda T: T.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2),
                                            (T.tensor(0), T.ones(1, requires_grad=True)))
C["while_fourth_argument"] = lambda T: T.while_loop(lambda i, y: i < 3, lambda i, y: (i + y,), I0(T), (T.tensor(1),))
C["while_cond_noncallable"] = lambda T: T.while_loop(3, lambda i: (i + 1,), I0(T))
C["while_body_none"] = lambda T: T.while_loop(lambda i: i < 3, None, I0(T))
C["while_carried_str"] = lambda T: T.while_loop(lambda i, x: x.sum() < 3, lambda i, x: (i, x + 1), ("s", T.zeros(1)))
C["while_carried_none"] = lambda T: T.while_loop(lambda i: i < 3, lambda i: (i + 1,), (None,))
C["while_carried_float"] = lambda T: T.while_loop(lambda i, x: x.sum() < 3, lambda i, x: (i, x + 1), (1.5, T.zeros(1)))
C["while_cond_python_true"] = lambda T: T.while_loop(lambda i: True, lambda i: (i + 1,), I0(T))
C["while_cond_python_one"] = lambda T: T.while_loop(lambda i: 1, lambda i: (i + 1,), I0(T))
C["while_cond_python_false_ok"] = lambda T: T.while_loop(lambda i: False, lambda i: (i + 1,), I0(T))
C["while_cond_none_ok"] = lambda T: T.while_loop(lambda i: None, lambda i: (i + 1,), I0(T))
C["while_cond_float_tensor"] = lambda T: T.while_loop(lambda i: (i < 3).float(), lambda i: (i + 1,), I0(T))
C["while_cond_int_tensor"] = lambda T: T.while_loop(lambda i: (i < 3).long(), lambda i: (i + 1,), I0(T))
C["while_cond_one_element"] = lambda T: T.while_loop(lambda i: i < 3, lambda i: (i + 1,), (T.tensor([0]),))
C["while_cond_two_elements"] = lambda T: T.while_loop(lambda i: i < 3, lambda i: (i + 1,), (T.zeros(2),))
C["while_cond_tuple"] = lambda T: T.while_loop(lambda i: (i < 3,), lambda i: (i + 1,), I0(T))
C["while_body_more_outputs"] = lambda T: T.while_loop(lambda i: i < 3, lambda i: (i + 1, i + 2), I0(T))
C["while_body_fewer_outputs"] = lambda T: T.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1,),
                                                       (T.tensor(0), T.tensor(1)))
C["while_body_shape"] = lambda T: T.while_loop(lambda i: i.sum() < 3, lambda i: (T.cat([i, i]),), (T.ones(1),))
C["while_body_dtype"] = lambda T: T.while_loop(lambda i: i < 3, lambda i: (i + 1.,), I0(T))
C["while_body_returns_none"] = lambda T: T.while_loop(lambda i: i < 3, lambda i: None, I0(T))
C["while_body_int_for_tensor"] = lambda T: T.while_loop(lambda i: i < 3, lambda i: (3,), I0(T))
C["while_body_float_for_int"] = lambda T: T.while_loop(lambda i, x: x < 3, lambda i, x: (i + 0.5, x + 1), (1, T.tensor(0)))
C["while_body_zero_division"] = lambda T: T.while_loop(lambda i: i < 3, lambda i: (i + 1 / 0,), I0(T))
C["while_cond_zero_division"] = lambda T: T.while_loop(lambda i: 1 / 0, lambda i: (i + 1,), I0(T))
C["while_body_arity"] = lambda T: T.while_loop(lambda: T.tensor(False), lambda i: (i,), I0(T))
C["while_body_mutates"] = lambda T: T.while_loop(lambda i: i < 3, lambda i: (i.add_(1) + 0,), I0(T))
C["while_body_op_fails"] = lambda T: T.while_loop(lambda i: i < 3, lambda i: (i.view(3),), I0(T))


# ---- grad mode off: torch lets the taken branch (the body) write into its operands and return them
def _no_grad_cond(T, pred, fns):
    x = T.ones(2)
    with T.no_grad():
        r = T.cond(T.tensor(pred), *fns, (x,))
    return [x, r, r is x]


C["cond_no_grad_mutates_and_returns_operand_ok"] = lambda T: _no_grad_cond(T, True, (lambda a: a.add_(1),
                                                                                       lambda a: a.sub_(1)))
C["cond_no_grad_untaken_write_put_back_ok"] = lambda T: _no_grad_cond(T, False, (lambda a: a.add_(1) + 0,
                                                                                  lambda a: a * 3))
C["cond_no_grad_returns_operand_ok"] = lambda T: _no_grad_cond(T, True, (lambda a: a, lambda a: a + 1))


def _no_grad_while(T):
    x = T.ones(2)
    with T.no_grad():
        r = T.while_loop(lambda i: i.sum() < 5, lambda i: (i.add_(1) + 0,), (x,))
    return [x, r]


C["while_no_grad_body_mutates_ok"] = _no_grad_while
NESTED = lambda T: ((T.tensor(0), T.ones(1)),)   # noqa: E731
C["while_nested_carried_ok"] = lambda T: T.while_loop(lambda a: a[0] < 3, lambda a: ((a[0] + 1, a[1] * 2),), NESTED(T))
C["while_nested_leaf_shape"] = lambda T: T.while_loop(lambda a: a[0] < 3, lambda a: ((a[0] + 1, T.cat([a[1], a[1]])),),
                                                      NESTED(T))
C["while_nested_leaf_count"] = lambda T: T.while_loop(lambda a: a[0] < 3, lambda a: ((a[0] + 1,),), NESTED(T))
C["while_bool_carried_ok"] = lambda T: T.while_loop(lambda b, x: x.sum() < 3, lambda b, x: (b, x + 1), (True, T.zeros(1)))
C["while_tensor_for_int"] = lambda T: T.while_loop(lambda i, x: x.sum() < 3, lambda i, x: (T.tensor(i) + 1, x + 1),
                                                   (0, T.zeros(1)))
C["cond_pred_numpy_bool"] = lambda T: T.cond(np.bool_(True), lambda a: a + 1, lambda a: a - 1, X(T))
C["cond_returns_closed_over_tensor"] = lambda T: (lambda c: T.cond(P(T), lambda a: c, lambda a: a * 3, X(T)))(T.ones(2))
C["cond_returns_parameter"] = lambda T: (lambda c: T.cond(P(T), lambda a: c, lambda a: a * 3, X(T)))(
    T.nn.Parameter(T.ones(2)))
C["cond_returns_new_factory_tensor_ok"] = lambda T: T.cond(P(T), lambda a: T.zeros(2), lambda a: a * 3, X(T))


# ---- inside a compiled function (torch's dynamo meets the op first) and under vmap
def _compiled(T, f, *args):
    return T.compile(f, backend="eager")(*args)


C["compiled_cond_noncallable"] = lambda T: _compiled(T, lambda x: T.cond(x.sum() > 0, 3, lambda a: a - 1, (x,)), T.ones(2))
C["compiled_cond_int_operand_ok"] = lambda T: _compiled(
    T, lambda x: T.cond(x.sum() > 0, lambda a: x + a, lambda a: x - a, (3,)), T.ones(2))
C["compiled_cond_zero_division"] = lambda T: _compiled(
    T, lambda x: T.cond(x.sum() > 0, lambda a: a + 1, lambda a: 1 / 0, (x,)), T.ones(2))
C["compiled_while_noncallable"] = lambda T: _compiled(T, lambda x: T.while_loop(3, lambda i: (i + 1,), (x,)), T.tensor(0))
C["compiled_while_python_true"] = lambda T: _compiled(
    T, lambda x: T.while_loop(lambda i: True, lambda i: (i + 1,), (x,)), T.tensor(0))
V = lambda T, f: T.func.vmap(f)(T.tensor([[1.], [-1.]]))   # noqa: E731
C["vmap_cond_ok"] = lambda T: V(T, lambda x: T.cond(x.sum() > 0, lambda a: a + 1, lambda a: a - 1, (x,)))
C["vmap_cond_returns_none"] = lambda T: V(T, lambda x: T.cond(x.sum() > 0, lambda a: None, lambda a: None, (x,)))
C["vmap_cond_zero_division"] = lambda T: V(T, lambda x: T.cond(x.sum() > 0, lambda a: a + 1, lambda a: 1 / 0, (x,)))
C["vmap_cond_tuple_vs_list"] = lambda T: V(T, lambda x: T.cond(x.sum() > 0, lambda a: (a + 1,), lambda a: [a - 1], (x,)))
C["vmap_cond_int_operand"] = lambda T: V(T, lambda x: T.cond(x.sum() > 0, lambda a: x + 1, lambda a: x - 1, (3,)))


# ---- a view of a view that a custom Function (or a full backward hook) returned, written in place
def _hooked_output(T):
    m = T.nn.ReLU()
    m.register_full_backward_hook(lambda mod, gi, go: None)
    return m(T.ones(2, requires_grad=True) * 1)


def _view_fn(T):
    class ViewOf(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            return g
    return ViewOf


C["hook_output_add_"] = lambda T: _hooked_output(T).add_(1)
C["hook_output_view_add_"] = lambda T: _hooked_output(T).view(2).add_(1)
C["hook_output_select_add_"] = lambda T: _hooked_output(T)[0].add_(1)
C["hook_output_setitem"] = lambda T: _hooked_output(T).__setitem__(0, 5.)
C["hook_output_view_of_view_mul_"] = lambda T: _hooked_output(T).view(2).view(1, 2).mul_(2)
C["hook_output_view_clone_add_ok"] = lambda T: _hooked_output(T).clone().view(2).add_(1)
C["hook_output_view_detach_add_ok"] = lambda T: _hooked_output(T).view(2).detach().add_(1)
C["function_view_view_add_"] = lambda T: _view_fn(T).apply(T.ones(2, requires_grad=True) * 1).view(2).add_(1)
C["function_view_transpose_add_"] = lambda T: _view_fn(T).apply(T.ones(2, 2, requires_grad=True) * 1).t().add_(1)
C["function_view_unbind_add_"] = lambda T: _view_fn(T).apply(T.ones(2, requires_grad=True) * 1).unbind()[0].add_(1)


def _view_of_function_view_after_base_write(T, use):
    b = T.ones(2, requires_grad=True) * 1
    v = _view_fn(T).apply(b).view(2)
    b.add_(1)
    return (v * 2).sum() if use else v.grad_fn


def _function_view_marked_dirty(T):
    class AddOne(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g
    return AddOne.apply(_view_fn(T).apply(T.ones(2, requires_grad=True) * 1).view(2))


C["function_view_view_grad_fn_after_base_write"] = lambda T: _view_of_function_view_after_base_write(T, False)
C["function_view_view_used_after_base_write"] = lambda T: _view_of_function_view_after_base_write(T, True)
C["function_view_view_marked_dirty"] = _function_view_marked_dirty


# ---- one of several views (unbind/split/chunk), its storage written after it was taken
def _multi_view_after_write(T, take, write, read):
    x = T.ones(2, 3, requires_grad=True) * 1
    v = take(x)
    write(T, x)
    return read(v)


def _no_grad_add(T, x):
    with T.no_grad():
        x.add_(1)


def _param_step_then_grad_fn(T):
    p = T.ones(2, 3, requires_grad=True)
    v = p.unbind()[0]
    with T.no_grad():
        p.add_(1)      # an optimizer step
    return v.grad_fn


C["unbind_grad_fn_after_base_add_"] = lambda T: _multi_view_after_write(
    T, lambda x: x.unbind()[0], lambda T, x: x.add_(1), lambda v: v.grad_fn)
C["unbind_requires_grad_after_base_add_"] = lambda T: _multi_view_after_write(
    T, lambda x: x.unbind()[0], lambda T, x: x.add_(1), lambda v: v.requires_grad)
C["split_used_after_no_grad_write"] = lambda T: _multi_view_after_write(
    T, lambda x: x.split(1)[1], _no_grad_add, lambda v: v * 2)
C["chunk_view_grad_fn_after_sibling_write"] = lambda T: _multi_view_after_write(
    T, lambda x: x.chunk(2)[0].view(3), lambda T, x: x.chunk(2)[1].detach().add_(1), lambda v: v.grad_fn)
C["unbind_of_parameter_after_step"] = _param_step_then_grad_fn
C["unbind_used_before_base_write_ok"] = lambda T: _multi_view_after_write(
    T, lambda x: x.unbind()[0] * 2, lambda T, x: x.add_(1), lambda v: v.grad_fn.name())


def _unbind_of_plain_base_given_history(T):
    b = T.ones(2, 3)
    v = b.unbind()[0]
    b.add_(T.ones(2, 3, requires_grad=True))
    return v.grad_fn


C["unbind_of_plain_base_given_history"] = _unbind_of_plain_base_given_history


def _no_grad_view_write(T):
    o = _hooked_output(T)
    with T.no_grad():
        o.view(2).add_(1)
    return o.detach()


C["hook_output_view_add_no_grad_ok"] = _no_grad_view_write


# ---- an alias of an inference tensor detached outside inference mode has a version counter
def _inference_tensor(T):
    with T.inference_mode():
        return T.ones(2)


def _alias_write(T, how):
    x = _inference_tensor(T)
    how(T, x)
    return x


C["inference_detach_add_ok"] = lambda T: _alias_write(T, lambda T, x: x.detach().add_(1))
C["inference_data_mul_ok"] = lambda T: _alias_write(T, lambda T, x: x.data.mul_(3))
C["inference_detach_copy_ok"] = lambda T: _alias_write(T, lambda T, x: x.detach().copy_(T.full((2,), 5.)))
C["inference_detach_out_ok"] = lambda T: _alias_write(T, lambda T, x: T.add(T.ones(2), 1, out=x.detach()))
C["inference_detach_version_ok"] = lambda T: _inference_tensor(T).detach()._version
C["inference_detach_is_inference_ok"] = lambda T: _inference_tensor(T).detach().is_inference()
C["inference_version"] = lambda T: _inference_tensor(T)._version
C["inference_add_"] = lambda T: _inference_tensor(T).add_(1)
C["inference_detach_view_add_"] = lambda T: _inference_tensor(T).detach().view(2).add_(1)
C["inference_detach_requires_grad_"] = lambda T: _inference_tensor(T).detach().requires_grad_()
C["inference_detach_saved_for_backward"] = lambda T: (T.ones(2, requires_grad=True) * _inference_tensor(T).detach()).sum()


def _detached_in_mode(T):
    with T.inference_mode():
        d = T.ones(2).detach()
    return d.add_(1)


C["inference_detached_inside_mode_add_"] = _detached_in_mode

# ---- wider net: equal before this round (regression cases)
D = lambda T: T.distributions   # noqa: E731
C["categorical_negative_probs"] = lambda T: D(T).Categorical(probs=T.tensor([0.5, -0.1, 0.6]))
C["categorical_probs_and_logits"] = lambda T: D(T).Categorical(probs=T.tensor([.5, .5]), logits=T.tensor([0., 0.]))
C["categorical_log_prob_out_of_support"] = lambda T: D(T).Categorical(probs=T.tensor([.5, .5])).log_prob(T.tensor(2))
C["categorical_rsample"] = lambda T: D(T).Categorical(probs=T.tensor([.5, .5])).rsample()
C["categorical_expand_bad"] = lambda T: D(T).Categorical(probs=T.ones(2, 3) / 3).expand((4,))
C["normal_negative_scale"] = lambda T: D(T).Normal(0., -1.)
C["normal_shapes_do_not_broadcast"] = lambda T: D(T).Normal(T.zeros(2), T.ones(3))
C["normal_enumerate_support"] = lambda T: D(T).Normal(0., 1.).enumerate_support()
C["uniform_low_above_high"] = lambda T: D(T).Uniform(1., 0.)
C["uniform_log_prob_outside_ok"] = lambda T: D(T).Uniform(0., 1., validate_args=False).log_prob(T.tensor(2.))
C["binomial_negative_count"] = lambda T: D(T).Binomial(-1, probs=T.tensor(.5))
C["multinomial_log_prob_wrong_total"] = lambda T: D(T).Multinomial(3, probs=T.tensor([.5, .5])).log_prob(T.tensor([1., 1.]))
C["dirichlet_0d"] = lambda T: D(T).Dirichlet(T.tensor(1.))
C["mvn_not_positive_definite"] = lambda T: D(T).MultivariateNormal(T.zeros(2), T.tensor([[1., 2.], [2., 1.]]))
C["mvn_covariance_and_scale_tril"] = lambda T: D(T).MultivariateNormal(T.zeros(2), covariance_matrix=T.eye(2),
                                                                       scale_tril=T.eye(2))
C["mvn_no_covariance"] = lambda T: D(T).MultivariateNormal(T.zeros(2))
C["mvn_log_prob_wrong_event"] = lambda T: D(T).MultivariateNormal(T.zeros(2), T.eye(2)).log_prob(T.zeros(3))
C["independent_too_many_dims"] = lambda T: D(T).Independent(D(T).Normal(T.zeros(2), 1.), 2)
C["mixture_batch_mismatch"] = lambda T: D(T).MixtureSameFamily(D(T).Categorical(T.ones(3) / 3), D(T).Normal(T.zeros(2), 1.))
C["kl_unregistered_pair"] = lambda T: D(T).kl_divergence(D(T).Normal(0., 1.), D(T).Categorical(T.ones(2) / 2))
C["kl_uniform_not_covered_ok"] = lambda T: D(T).kl_divergence(D(T).Uniform(0., 2.), D(T).Uniform(0., 1.))
C["base_distribution_sample"] = lambda T: D(T).Distribution().sample()
C["transforms_reshape_numel"] = lambda T: D(T).transforms.ReshapeTransform((2, 3), (5,))
C["lkj_dimension_one"] = lambda T: D(T).LKJCholesky(1, 1.)
C["set_printoptions_profile"] = lambda T: T.set_printoptions(profile="nope")
C["deterministic_algorithms_str"] = lambda T: T.use_deterministic_algorithms("yes")
C["deterministic_debug_mode_bad"] = lambda T: T.set_deterministic_debug_mode("nope")
C["float32_matmul_precision_bad"] = lambda T: T.set_float32_matmul_precision("ultra")
C["fuse_conv_bn_training"] = lambda T: T.nn.utils.fusion.fuse_conv_bn_eval(T.nn.Conv2d(1, 1, 1), T.nn.BatchNorm2d(1))
C["fuse_linear_bn_mismatch"] = lambda T: T.nn.utils.fusion.fuse_linear_bn_eval(T.nn.Linear(2, 3).eval(),
                                                                               T.nn.BatchNorm1d(2).eval())
C["lazy_linear_0d_input"] = lambda T: T.nn.LazyLinear(3)(T.tensor(1.))
C["lazy_weight_before_first_call"] = lambda T: T.nn.LazyLinear(3).weight + 1


def _dual_of_other_shape(T):
    with T.autograd.forward_ad.dual_level():
        return T.autograd.forward_ad.make_dual(T.ones(2), T.ones(3))


C["forward_ad_dual_shape"] = _dual_of_other_shape
C["forward_ad_no_level"] = lambda T: T.autograd.forward_ad.make_dual(T.ones(2), T.ones(2))
C["autocast_unknown_device"] = lambda T: T.autocast("nope").__enter__()
C["gradscaler_scale_number"] = lambda T: T.amp.GradScaler("cpu").scale(3)
C["masked_sum_mask_shape"] = lambda T: T.masked.sum(T.ones(2, 2), mask=T.ones(3, dtype=T.bool))
C["masked_tensor_float_mask"] = lambda T: T.masked.masked_tensor(T.ones(2), T.ones(2))
C["functional_call_strict_missing"] = lambda T: T.func.functional_call(T.nn.Linear(2, 2), {"weight": T.ones(2, 2)},
                                                                       (T.ones(2),), strict=True)
C["functional_call_wrong_shape"] = lambda T: T.func.functional_call(T.nn.Linear(2, 2), {"weight": T.ones(3, 3)}, (T.ones(2),))
C["stack_module_state_mixed_shapes"] = lambda T: T.func.stack_module_state([T.nn.Linear(2, 2), T.nn.Linear(2, 3)])
C["manual_seed_str"] = lambda T: T.manual_seed("a")
C["set_rng_state_floats"] = lambda T: T.set_rng_state(T.ones(3))
C["set_num_threads_zero"] = lambda T: T.set_num_threads(0)
C["set_grad_enabled_str"] = lambda T: T.set_grad_enabled("a")
C["no_grad_argument"] = lambda T: T.no_grad(True)
U = lambda T: T.utils.data   # noqa: E731
C["random_split_lengths_do_not_sum"] = lambda T: U(T).random_split(range(5), [2, 2])
C["random_split_fractions_over_one"] = lambda T: U(T).random_split(range(5), [0.5, 0.6])
C["random_split_fractions_ok"] = lambda T: [len(s) for s in U(T).random_split(range(10), [0.33, 0.33, 0.34])]
C["subset_index_out_of_range"] = lambda T: U(T).Subset(range(3), [5])[0]
C["weighted_sampler_negative_weight"] = lambda T: list(U(T).WeightedRandomSampler([-1., 1.], 2))
C["weighted_sampler_too_many_without_replacement"] = lambda T: list(
    U(T).WeightedRandomSampler([1., 1.], 3, replacement=False))
C["tensor_dataset_lengths_differ"] = lambda T: U(T).TensorDataset(T.ones(2), T.ones(3))
C["concat_dataset_index_out_of_range"] = lambda T: U(T).ConcatDataset([range(2), range(3)])[7]
C["stack_dataset_lengths_differ"] = lambda T: U(T).StackDataset(range(2), range(3))
C["collate_dicts_of_other_keys"] = lambda T: U(T).default_collate([{"a": 1}, {"b": 2}])
L2 = lambda T: T.nn.Linear(2, 2)   # noqa: E731
C["set_tensor_over_parameter"] = lambda T: setattr(L2(T), "weight", T.ones(2, 2))
C["parametrization_changes_shape"] = lambda T: T.nn.utils.parametrize.register_parametrization(
    L2(T), "weight", type("First", (T.nn.Module,), {"forward": lambda s, x: x[0]})())
C["load_state_dict_assign_wrong_shape"] = lambda T: L2(T).load_state_dict({"weight": T.ones(3, 3), "bias": T.ones(2)},
                                                                          assign=True)
C["set_submodule_missing_parent"] = lambda T: T.nn.Sequential(L2(T)).set_submodule("a.b", T.nn.ReLU())
C["multi_grad_hook_bad_mode"] = lambda T: T.autograd.graph.register_multi_grad_hook(
    (T.ones(1, requires_grad=True),), lambda g: None, mode="nope")
C["tensor_hook_returns_wrong_shape"] = lambda T: (lambda x: (x.register_hook(lambda g: T.ones(3)),
                                                             (x * 2).sum().backward()))(T.ones(2, requires_grad=True))
C["grad_materialize_without_allow_unused"] = lambda T: (lambda x, z: T.autograd.grad(
    (x * 2).sum(), [x, z], materialize_grads=True, allow_unused=False))(T.ones(2, requires_grad=True),
                                                                        T.ones(2, requires_grad=True))

GIST = {
    "cond_true_noncallable": "Expect both branches to be callable",
    "cond_operand_int": "tensor leaves",
    "cond_returns_operand": "Encountered aliasing during higher order op tracing",
    "cond_mutates_operand": "Encountered input mutation during higher order op tracing",
    "cond_dict_keys_differ": "differing branch outputs",
    "cond_branch_zero_division": "division by zero",
    "while_cond_noncallable": "Expect cond_fn and body_fn to be callable",
    "while_cond_python_true": "infinite loop detected",
    "while_cond_float_tensor": "unsupported cond_fn return type",
    "while_cond_tuple": "cond_fn must return a boolean scalar tensor or a boolean",
    "while_body_more_outputs": "Expected body_fn_output and carried_inputs to have same number of outputs",
    "while_body_shape": "Expected body_fn_output and carried_inputs to have same metadata",
    "while_body_mutates": "Encountered input mutation during higher order op tracing",
    "hook_output_view_add_": "Output 0 of View is a view and is being modified inplace",
    "function_view_transpose_add_": "This view was created inside a custom Function",
    "function_view_unbind_add_": "output of a function that returns multiple views",
    "function_view_view_grad_fn_after_base_write": "its base or another view of its base has been modified inplace",
    "unbind_grad_fn_after_base_add_": "Output 0 of Unbind is a view and its base or another view of its base",
    "unbind_of_plain_base_given_history": "A view was created in no_grad mode and its base",
}


def _quiet(fn, T):
    """``outcome`` with torch's compile logging (the traced higher-order ops log their failures) off."""
    logging.disable(logging.CRITICAL)
    try:
        return outcome(fn, T)
    finally:
        logging.disable(logging.NOTSET)


def _expected_class(cls):
    """tracegrad's class for torch's: ``torch._dynamo.exc``'s by name, any other as it is."""
    if cls is not None and cls.__module__ == "torch._dynamo.exc":
        return getattr(tracegrad._dynamo.exc, cls.__name__)
    return cls


@pytest.mark.parametrize("name", list(C))
def test_same_class_as_torch(name):
    expected, tmsg = _quiet(C[name], torch)
    got, msg = _quiet(C[name], tracegrad)
    assert got is _expected_class(expected), (f"{name}: torch raises {expected} ({tmsg[:200]}), "
                                              f"tracegrad {got}: {msg[:300]}")
    assert not FOREIGN.search(msg), f"{name}: foreign text leaked: {msg[:300]}"
    if name.endswith("_ok"):
        assert got is None


@pytest.mark.parametrize("name", list(GIST))
def test_message_gist(name):
    _, want = _quiet(C[name], torch)
    _, got = _quiet(C[name], tracegrad)
    assert GIST[name].lower() in want.lower(), f"torch's message changed: {want[:200]}"
    assert GIST[name].lower() in got.lower(), f"{name}: {got[:300]}"


@pytest.mark.parametrize("name", [k for k in C if k.endswith("_ok")])
def test_accepted_value_matches_torch(name):
    got, want = plain_value(C[name](tracegrad)), plain_value(C[name](torch))
    assert close_values(got, want), f"{name}: {str(got)[:300]} != {str(want)[:300]}"


def test_branch_error_keeps_the_cause():
    """The converted error chains the branch's own exception (``__cause__``), so the traceback
    still points into the branch."""
    with pytest.raises(tracegrad._dynamo.exc.UncapturedHigherOrderOpError) as info:
        tracegrad.cond(tracegrad.tensor(True), lambda a: a + 1, lambda a: 1 / 0, (tracegrad.ones(2),))
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert isinstance(info.value, RuntimeError)


def test_class_is_exported_like_torch():
    """``UncapturedHigherOrderOpError`` is in ``_dynamo.exc`` as in torch, a TorchDynamoException
    (a RuntimeError)."""
    from tracegrad._dynamo.exc import TorchDynamoException, UncapturedHigherOrderOpError
    assert issubclass(UncapturedHigherOrderOpError, TorchDynamoException)
    assert [c.__name__ for c in UncapturedHigherOrderOpError.__mro__[:4]] == \
        [c.__name__ for c in torch._dynamo.exc.UncapturedHigherOrderOpError.__mro__[:4]]
