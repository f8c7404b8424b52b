"""Round 21 of PyTorch's own tests, ported: test/test_autograd.py (TestAutograd) on the graph a
forward records: grad_fn names and next_functions of views, in-place writes and setitem
(test_inplace_on_view_*, test_autograd_views_codegen, test_next_functions, test_setitem*), the
Node API (name(), metadata, register_hook/register_prehook, _saved_* attributes,
_sequence_nr, calling a node, autograd.graph.get_gradient_edge / increment_version); and
test/test_nn.py (TestNN) on torch.nn.utils: test_clip_grad_value, test_clip_grad_norm,
get_total_norm/clip_grads_with_norm_, test_vector_to_parameters, and torch.nn.utils.rnn
(test_pad_sequence, test_unpad_sequence, test_pack_sequence, test_pad_packed_sequence).
Each check runs with torch 2.13 (the oracle) and with tracegrad and must give the same value
(dtype, shape, values; NaN equal to NaN), the same exception class, and the same warnings."""
import importlib

import numpy as np
import pytest
from _observe_helpers import make_check, norm as _norm

torch = pytest.importorskip("torch")


check = make_check(_norm)


def A(T):
    return T.tensor([[1., -2, 3], [4, 5, -6]], requires_grad=True)


def _graph(op):
    """The first output's grad_fn: its name, class name, and its next_functions' class names."""
    def f(T):
        out = op(T, A(T))
        out = out[0] if isinstance(out, (tuple, list)) else out
        g = out.grad_fn
        return g.name(), type(g).__name__, [(type(n).__name__ if n else None, i) for n, i in g.next_functions]
    return f


def _written(write):
    """A clone of A written in place by ``write``: the grad_fn the write leaves on it."""
    return lambda T, a: (lambda c: (write(T, c), c)[1])(a.clone())


def test_grad_fn_names_and_next_functions_of_views_and_inplace_writes():
    """test_autograd_views_codegen / test_inplace_on_view_* / test_next_functions / test_setitem:
    views name their view node over AccumulateGrad; an in-place write on a view leaves CopySlices
    on the base (AsStridedBackward0 for as_strided views); setitem with a bool mask or a list is
    IndexPutBackward0 whose values slot is (None, 0) for a Python number (torch wraps it in a
    tensor that needs no grad) and the value's node for a tensor; Scalar arguments have no slot."""
    ops = [
        lambda T, a: a[0], lambda T, a: a[:, 1:], lambda T, a: a[[0, 1]], lambda T, a: a[a > 0], lambda T, a: a.T,
        lambda T, a: a.mT, lambda T, a: a.view(3, 2), lambda T, a: a.reshape(6), lambda T, a: a.unsqueeze(0),
        lambda T, a: a.expand(2, 2, 3), lambda T, a: a.permute(1, 0), lambda T, a: a.narrow(1, 0, 2),
        lambda T, a: a.diagonal(), lambda T, a: a.unbind(0), lambda T, a: a.split(1, 1), lambda T, a: a.chunk(2, 1),
        lambda T, a: a.as_strided((2, 2), (1, 2)), lambda T, a: a.unfold(1, 2, 1), lambda T, a: a.t().contiguous(),
        lambda T, a: a.double(), lambda T, a: a.max(1), lambda T, a: a * 2, lambda T, a: 2 ** a, lambda T, a: a - a,
        lambda T, a: T.addmm(a[:, :2], a, a.t()), lambda T, a: T.where(a > 0, a, 0.), lambda T, a: a.clamp(min=0),
        lambda T, a: a.sum_to_size(1, 3), lambda T, a: a.new_zeros(2) + a[0, :2],
        _written(lambda T, c: c.add_(1)), _written(lambda T, c: c[0].mul_(2)), _written(lambda T, c: c[:, 0].zero_()),
        _written(lambda T, c: c.t().add_(1)), _written(lambda T, c: c.as_strided((2,), (1,)).add_(1)),
        _written(lambda T, c: c.__setitem__(0, 0.)), _written(lambda T, c: c.__setitem__((slice(None), [0]), 0.)),
        _written(lambda T, c: c.__setitem__(c > 2, 0.)), _written(lambda T, c: c.__setitem__(c > 2, 7)),
        _written(lambda T, c: c.__setitem__(c > 2, T.tensor(0.))),
        _written(lambda T, c: c.__setitem__(c > 2, T.zeros(1, requires_grad=True))),
        _written(lambda T, c: c.masked_fill_(c > 0, 1.)),
        _written(lambda T, c: c.index_put_((T.tensor([0]),), T.tensor(1.))),
        _written(lambda T, c: c.relu_()), _written(lambda T, c: c.resize_(6)),
        lambda T, a: (lambda c: c.copy_(a.t().t()))(T.zeros(2, 3)),
        lambda T, a: (lambda c: (c[0].copy_(a[1]), c)[1])(T.zeros(2, 3)),
        lambda T, a: (lambda v: v.mul_(2))(a.clone()[0]),
    ]
    check([_graph(op) for op in ops])


def _meta(T):
    a = A(T)
    g = (a * 2).grad_fn
    g.metadata["k"] = 1
    return dict(g.metadata), dict((a * 2).grad_fn.metadata), type(g.metadata).__name__


def _prehook(T):
    a, log = A(T), []
    o = a * 2
    h = o.grad_fn.register_prehook(lambda go: log.append(go[0].sum().item()) or (go[0] * 3,))
    o.sum().backward(retain_graph=True)
    g1 = a.grad.clone()
    h.remove()
    o.sum().backward()
    return log, g1, a.grad


def _hook(T):
    a, log = A(T), []
    o = a * 2
    o.grad_fn.register_hook(lambda gi, go: log.append((len(gi), len(go), gi[0].sum().item())))
    o.sum().backward()
    return log, a.grad


def _saved(op, attr):
    return lambda T: getattr(op(T, A(T)).grad_fn, attr)


def test_node_api_saved_attributes_hooks_and_gradient_edges():
    """test_grad_fn_attr_bindings / test_node_hooks / test_gradient_edge_*: a node's _saved_*
    attributes (tensors, Python numbers wrapped as tensors, ints, dims, sizes) and the
    AttributeError of one it does not have; metadata is a dict per node; a prehook may replace
    grad_outputs until removed; a hook sees grad_inputs and grad_outputs; a leaf's
    AccumulateGrad holds the leaf; sequence numbers grow in creation order; calling a node
    applies its backward (a wrong argument count raises TypeError); get_gradient_edge names a
    tensor's node and output index and feeds autograd.grad; increment_version bumps _version."""
    ge = lambda T, t: T.autograd.graph.get_gradient_edge(t)
    check([
        _saved(lambda T, a: a.exp(), "_saved_result"), _saved(lambda T, a: a * a, "_saved_other"),
        _saved(lambda T, a: a.pow(3), "_saved_exponent"), _saved(lambda T, a: a.sum(1, keepdim=True), "_saved_dim"),
        _saved(lambda T, a: a.sum(1, keepdim=True), "_saved_keepdim"),
        _saved(lambda T, a: a.view(3, 2), "_saved_self_sym_sizes"), _saved(lambda T, a: a.transpose(0, 1), "_saved_dim0"),
        _saved(lambda T, a: a.clamp(0, 1), "_saved_min"), _saved(lambda T, a: a * 2, "_saved_other"),
        _saved(lambda T, a: a.max(1)[0], "_saved_indices"), _saved(lambda T, a: a.select(1, 2), "_saved_index"),
        _saved(lambda T, a: a.permute(1, 0), "_saved_dims"), _saved(lambda T, a: a.exp(), "_saved_nonexistent"),
        lambda T: type(_saved(lambda T, a: a.exp(), "_raw_saved_result")(T)).__name__,
        _meta, _prehook, _hook,
        lambda T: (A(T) * 2).grad_fn.next_functions[0][0].variable.shape,
        lambda T: (A(T) * 2).grad_fn.next_functions[0][0].name(),
        lambda T: (lambda a: (a * 2).grad_fn._sequence_nr() < (a * 3).grad_fn._sequence_nr())(A(T)),
        lambda T: (A(T) * A(T)).grad_fn(T.ones(2, 3)),
        lambda T: A(T).sum().grad_fn(T.tensor(2.)),
        lambda T: A(T).sum().grad_fn(T.tensor(2.), T.tensor(1.)),
        lambda T: [isinstance((A(T) * 2).grad_fn, T.autograd.graph.Node), isinstance(A(T).grad_fn, T.autograd.graph.Node)],
        lambda T: (lambda a: (T.autograd.graph.increment_version([a, a]), a._version)[1])(T.ones(2)),
        lambda T: repr((A(T) * 2).grad_fn).split(" ")[0],
        lambda T: (ge(T, A(T) * 2).node.name(), ge(T, A(T) * 2).output_nr, ge(T, A(T)).node.name()),
        lambda T: ge(T, T.ones(2)),
        lambda T: (lambda a: T.autograd.grad((a * 2).sum(), ge(T, a)))(A(T)),
        lambda T: (lambda o: T.autograd.grad((o * 2).sum(), ge(T, o)))(A(T).exp()),
    ])


def _utils(T):
    return importlib.import_module(T.__name__ + ".nn.utils")


def _rnn(T):
    return importlib.import_module(T.__name__ + ".nn.utils.rnn")


def _params(T):
    a, b = T.arange(6., requires_grad=True), T.tensor([3., -4.], requires_grad=True)
    a.grad, b.grad = T.tensor([1., -2, 3, -4, 5, -6]), T.tensor([0.5, -10.])
    return [a, b]


def _clip_value(T, v, **kw):
    p = _params(T)
    return _utils(T).clip_grad_value_(p, v, **kw), [q.grad for q in p]


def _clip_norm(T, *args, **kw):
    p = _params(T)
    return _utils(T).clip_grad_norm_(p, *args, **kw), [q.grad for q in p]


def _nonfinite(T, fill, **kw):
    p = _params(T)
    p[0].grad.fill_(fill)
    return _utils(T).clip_grad_norm_(p, 1., **kw)


def test_nn_utils_clip_grad_vectors_and_rnn_helpers():
    """test_clip_grad_value / test_clip_grad_norm / test_vector_to_parameters and the rnn
    helpers: clipping by value (0, negative, tensor, foreach on/off, a lone tensor, a tensor
    without grad), by norm (p = 1, 2, 0.5, inf, 'inf'; unclipped below max_norm; NaN/inf totals
    with and without error_if_nonfinite), get_total_norm and clip_grads_with_norm_;
    parameters_to_vector/vector_to_parameters and their type errors; pad_sequence
    (batch_first, padding_value, padding_side, bad side, trailing dims), unpad_sequence,
    pack_sequence (sorted error, enforce_sorted=False indices), pad_packed_sequence
    (total_length too short), pack_padded_sequence length errors, PackedSequence casts."""
    seqs = lambda T: [T.tensor([1., 2, 3]), T.tensor([4.]), T.tensor([5., 6])]
    packed = lambda T: _rnn(T).pack_sequence(seqs(T), enforce_sorted=False)
    check([
        lambda T: _clip_value(T, 2.5), lambda T: _clip_value(T, 0), lambda T: _clip_value(T, -1.),
        lambda T: _clip_value(T, 2, foreach=True), lambda T: _clip_value(T, 2, foreach=False),
        lambda T: _clip_value(T, T.tensor(2.)),
        lambda T: (lambda a: (_utils(T).clip_grad_value_(a, 1.), a.grad)[1])(T.tensor([1., 5.], requires_grad=True)),
        lambda T: (lambda a: (_utils(T).clip_grad_value_(a, 1.), a.grad)[1])(T.tensor([1., 5.])),
        lambda T: _clip_norm(T, 1.0), lambda T: _clip_norm(T, 1.0, norm_type=1), lambda T: _clip_norm(T, 1.0, norm_type="inf"),
        lambda T: _clip_norm(T, 100.0), lambda T: _clip_norm(T, 1.0, norm_type=0.5),
        lambda T: _clip_norm(T, 1.0, foreach=True), lambda T: _utils(T).clip_grad_norm_([], 1.0),
        lambda T: _nonfinite(T, float("nan"), error_if_nonfinite=True), lambda T: _nonfinite(T, float("inf")),
        lambda T: _utils(T).get_total_norm([T.tensor([3., 4]), T.tensor([12.])]),
        lambda T: _utils(T).get_total_norm([T.tensor([3., 4]), T.tensor([12.])], norm_type=1),
        lambda T: _utils(T).get_total_norm(T.tensor([3., 4])), lambda T: _utils(T).get_total_norm([]),
        lambda T: (lambda p: (_utils(T).clip_grads_with_norm_(p, 1., T.tensor(10.)), [q.grad for q in p])[1])(_params(T)),
        lambda T: _utils(T).parameters_to_vector([T.ones(2, 2), T.zeros(3)]),
        lambda T: (lambda ps: (_utils(T).vector_to_parameters(T.arange(7.), ps), ps)[1])(
            [T.nn.Parameter(T.ones(2, 2)), T.nn.Parameter(T.zeros(3))]),
        lambda T: _utils(T).vector_to_parameters(T.arange(7.).reshape(7, 1), [T.nn.Parameter(T.ones(7))]),
        lambda T: _utils(T).vector_to_parameters(T.arange(7.), T.nn.Parameter(T.ones(7))),
        lambda T: _rnn(T).pad_sequence(seqs(T)),
        lambda T: _rnn(T).pad_sequence(seqs(T), batch_first=True, padding_value=-1),
        lambda T: _rnn(T).pad_sequence(seqs(T), batch_first=True, padding_side="left"),
        lambda T: _rnn(T).pad_sequence(seqs(T), padding_side="middle"),
        lambda T: _rnn(T).pad_sequence([T.ones(2, 3), T.zeros(1, 3)]), lambda T: _rnn(T).pad_sequence([T.ones(2), T.ones(2, 1)]),
        lambda T: _rnn(T).unpad_sequence(_rnn(T).pad_sequence(seqs(T), batch_first=True), T.tensor([3, 1, 2]), batch_first=True),
        lambda T: _rnn(T).unpack_sequence(packed(T)), lambda T: _rnn(T).pack_sequence(seqs(T)),
        lambda T: (packed(T).data, packed(T).batch_sizes, packed(T).sorted_indices, packed(T).unsorted_indices),
        lambda T: _rnn(T).pad_packed_sequence(packed(T), batch_first=True, total_length=4),
        lambda T: _rnn(T).pad_packed_sequence(packed(T), total_length=2),
        lambda T: _rnn(T).pack_padded_sequence(T.ones(3, 2), T.tensor([3, 0]), enforce_sorted=False),
        lambda T: _rnn(T).pack_padded_sequence(T.ones(3, 2), T.tensor([2, 3])),
        lambda T: _rnn(T).pack_padded_sequence(T.ones(3, 2), T.tensor([[2, 3]])),
        lambda T: _rnn(T).pack_sequence([]), lambda T: _rnn(T).pad_sequence([]),
        lambda T: (packed(T).to(T.float64).data, packed(T).long().data, packed(T).is_pinned(), len(packed(T))),
    ])
