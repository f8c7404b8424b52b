"""Bad-input parity, round 29 (nn.functional's vision and loss arguments, index and shape methods
with empty, 0-d and odd-dtype tensors): a probe over ~2,000 wrong calls (interpolate, grid_sample,
affine_grid, pad modes, fold/unfold, embedding/embedding_bag, ctc/multi-margin losses,
pixel/channel shuffle, conv/pool/norm/RNN constructors, gather/scatter/index_* with every index
dtype, take_along_dim, unflatten, movedim, repeat_interleave, optimizers and schedulers,
DataLoader/samplers/random_split, load_state_dict, autograd.grad/backward, checkpoint, and the
float arguments of ~35 functionals) left these differences from torch 2.13, fixed here:

- a scatter (``scatter``/``scatter_``/``scatter_add(_)``/``scatter_reduce(_)``) whose index has no
  elements was refused for the index's or src's rank or size; torch writes nothing and checks
  none of them (dtype, dim and reduce name still are);
- ``take_along_dim(x, idx)`` without a dim refused an int32 index (torch hands the flattened
  tensors to gather, which takes it);
- ``index_select`` with a 2-D index of a non-integer dtype raised the dtype's RuntimeError (torch
  first refuses the rank: IndexError); ``index_put`` with a uint8 mask of the wrong shape raised
  masked_fill's RuntimeError (torch checks the mask's shape first: IndexError);
- ``x.unflatten(0, sizes)`` of a 0-d tensor raised Python's IndexError (torch: RuntimeError);
  ``repeat_interleave(True)`` was taken as one repeat (torch: TypeError), and a 0-d tensor's
  ``repeat_interleave(2, dim=0)`` repeated (torch: IndexError);
- ``grid_sample`` with a batch of 0 failed inside the kernel (torch: an empty result);
- ``unfold``/``fold`` of an input with an empty dim other than the batch ran (torch: RuntimeError);
- ``embedding_bag`` with a negative offset raised RuntimeError in 'mean'/'max' mode (torch:
  IndexError);
- the float arguments of the functionals (``margin``, ``eps``, ``p``, ``delta``, ``beta``,
  ``momentum``, ``label_smoothing``, ``max_norm``) took a string to ``float()`` (ValueError), a
  one-element 1-d tensor or one that requires grad as data, a complex number to ``clamp``, or a
  bool to ``True - x`` (refused); torch's parser takes a real number, a bool or a 0-dim tensor
  that needs no grad, and raises TypeError for anything else.

Each call runs under torch (the oracle) and tracegrad: the same exception class (or none), no text
of the layers below tracegrad; ``_ok`` calls are ones torch accepts, and their values are compared
in ``test_values_as_torch``.
"""
import pytest

import tracegrad

from _bad_input_helpers import table_tests

torch = pytest.importorskip("torch")


def _F(T):
    return T.nn.functional


def _x(T):
    return T.arange(6.0).view(2, 3)


def _e(T, dtype="int64"):
    return T.tensor([], dtype=getattr(T, dtype))


def _image(T, n=1, c=1):
    return T.arange(16.0 * n * c).view(n, c, 4, 4)


def _bag(T, offsets, mode):
    return _F(T).embedding_bag(T.tensor([0, 1, 2]), T.arange(12.0).view(4, 3), T.tensor(offsets), mode=mode)


def _tensor_arg(kind):
    """A float argument as ``kind`` names it: a plain value, or a tensor made by the library."""
    return {"0d": lambda T: T.tensor(0.5), "1d": lambda T: T.tensor([0.5]),
            "grad": lambda T: T.tensor(0.5, requires_grad=True)}.get(kind, lambda T: kind)


# (name, call with the float argument v) for the functionals whose float arguments torch's parser reads
_FLOAT_ARGS = {
    "margin_ranking_loss margin": lambda T, v: _F(T).margin_ranking_loss(T.ones(2), T.ones(2), T.ones(2), margin=v),
    "hinge_embedding_loss margin": lambda T, v: _F(T).hinge_embedding_loss(T.ones(2), T.ones(2), margin=v),
    "cosine_embedding_loss margin": lambda T, v: _F(T).cosine_embedding_loss(T.ones(2, 3), T.ones(2, 3), T.ones(2),
                                                                              margin=v),
    "multi_margin_loss margin": lambda T, v: _F(T).multi_margin_loss(T.ones(2, 3), T.tensor([0, 2]), margin=v),
    "triplet_margin_loss eps": lambda T, v: _F(T).triplet_margin_loss(T.ones(2, 3), T.ones(2, 3), T.ones(2, 3), eps=v),
    "triplet_margin_loss p": lambda T, v: _F(T).triplet_margin_loss(T.ones(2, 3), T.ones(2, 3), T.ones(2, 3), p=v),
    "huber_loss delta": lambda T, v: _F(T).huber_loss(T.ones(2), T.ones(2), delta=v),
    "smooth_l1_loss beta": lambda T, v: _F(T).smooth_l1_loss(T.ones(2), T.ones(2), beta=v),
    "poisson_nll_loss eps": lambda T, v: _F(T).poisson_nll_loss(T.ones(2), T.ones(2), eps=v),
    "cross_entropy label_smoothing": lambda T, v: _F(T).cross_entropy(T.ones(2, 3), T.tensor([0, 1]),
                                                                      label_smoothing=v),
    "pairwise_distance p": lambda T, v: _F(T).pairwise_distance(T.ones(2, 3), T.ones(2, 3), p=v),
    "cosine_similarity eps": lambda T, v: _F(T).cosine_similarity(T.ones(2, 3), T.ones(2, 3), eps=v),
    "layer_norm eps": lambda T, v: _F(T).layer_norm(T.ones(2, 3), (3,), eps=v),
    "group_norm eps": lambda T, v: _F(T).group_norm(T.ones(2, 4), 2, eps=v),
    "batch_norm momentum": lambda T, v: _F(T).batch_norm(T.ones(2, 3), T.zeros(3), T.ones(3), training=True,
                                                         momentum=v),
    "batch_norm eps": lambda T, v: _F(T).batch_norm(T.ones(2, 3), T.zeros(3), T.ones(3), eps=v),
    "instance_norm eps": lambda T, v: _F(T).instance_norm(T.ones(2, 3, 4), eps=v),
    "rms_norm eps": lambda T, v: _F(T).rms_norm(T.ones(2, 3), (3,), eps=v),
    "dropout p": lambda T, v: _F(T).dropout(T.ones(2, 3), p=v, training=False),
    "alpha_dropout p": lambda T, v: _F(T).alpha_dropout(T.ones(2, 3), p=v),
    "embedding max_norm": lambda T, v: _F(T).embedding(T.tensor([1]), T.ones(3, 2), max_norm=v),
}
# what torch's parser refuses (TypeError): a string, a tensor with dims, a tensor that requires grad;
# and what it takes (a 0-d tensor; a bool, also where tracegrad's composite would subtract it)
_FLOAT_VALUES = {"'a'": "a", "tensor([0.5])": "1d", "tensor(0.5, requires_grad=True)": "grad",
                 "tensor(0.5)_ok": "0d", "True_ok": True}

CASES = {
    # an empty index writes nothing: no rank or size checks (fixed: RuntimeError)
    "scatter(1, empty, 7.)_ok": lambda T: _x(T).scatter(1, _e(T), 7.0),
    "scatter(1, empty (0, 9), src)_ok": lambda T: _x(T).scatter(1, T.zeros(0, 9, dtype=T.int64), T.ones(2, 3)),
    "scatter(1, empty, 1-d src)_ok": lambda T: _x(T).scatter(1, T.zeros(0, 2, dtype=T.int64), T.ones(3)),
    "scatter(1, empty float index)_ok": lambda T: _x(T).scatter(1, T.tensor([]), 1.0),
    "scatter_(1, empty (0, 4, 1), src)_ok": lambda T: _x(T).scatter_(1, T.zeros(0, 4, 1, dtype=T.int64), T.ones(1)),
    "scatter_add(1, empty, src)_ok": lambda T: _x(T).scatter_add(1, _e(T), T.ones(2, 3)),
    "scatter_add_(1, empty, src)_ok": lambda T: _x(T).scatter_add_(1, _e(T), T.ones(2, 3)),
    "scatter_reduce(1, empty, src, sum)_ok": lambda T: _x(T).scatter_reduce(1, _e(T), T.ones(2, 3), "sum"),
    "scatter_reduce_(0, empty, src, mean)_ok": lambda T: _x(T).scatter_reduce_(0, _e(T), T.ones(2, 3), "mean",
                                                                               include_self=False),
    "0-d scatter(0, empty (0, 2), 1.)_ok": lambda T: T.tensor(1.0).scatter(0, T.zeros(0, 2, dtype=T.int64), 1.0),
    # ...but the dim, src's dtype and the reduce name still are
    "scatter(5, empty, 1.)": lambda T: _x(T).scatter(5, _e(T), 1.0),
    "scatter(1, empty, float64 src)": lambda T: _x(T).scatter(1, _e(T), T.ones(2, 3, dtype=T.float64)),
    "scatter(1, empty, 1., reduce='foo')": lambda T: _x(T).scatter(1, _e(T), 1.0, reduce="foo"),
    "scatter_reduce(1, empty, src, 'foo')": lambda T: _x(T).scatter_reduce(1, _e(T), T.ones(2, 3), "foo"),
    "scatter_add(1, empty, float64 src)": lambda T: _x(T).scatter_add(1, _e(T), T.ones(2, 3, dtype=T.float64)),
    # take_along_dim without a dim is gather's (fixed: int32 refused)
    "take_along_dim(int32 index)_ok": lambda T: T.take_along_dim(_x(T), T.tensor([[0, 4]], dtype=T.int32)),
    "take_along_dim(int16 index)": lambda T: T.take_along_dim(_x(T), T.tensor([[0, 1]], dtype=T.int16)),
    "take_along_dim(empty uint8 index)_ok": lambda T: T.take_along_dim(_x(T), _e(T, "uint8")),
    "take_along_dim(int32 index, 1)": lambda T: T.take_along_dim(_x(T), T.tensor([[0, 1]], dtype=T.int32), 1),
    "take_along_dim(index out of range)": lambda T: T.take_along_dim(_x(T), T.tensor([6])),
    # the rank before the dtype (fixed: RuntimeError)
    "index_select(1, 2-d float index)": lambda T: _x(T).index_select(1, T.tensor([[0.0, 1.0]])),
    "index_select(1, 2-d bool index)": lambda T: _x(T).index_select(1, T.tensor([[True, False]])),
    "index_select(1, 2-d uint8 index)": lambda T: _x(T).index_select(1, T.tensor([[0, 1]], dtype=T.uint8)),
    "index_select(1, 1-d float index)": lambda T: _x(T).index_select(1, T.tensor([0.0])),
    "index_put((uint8 mask (1, 2),), 1.)": lambda T: _x(T).index_put((T.tensor([[1, 0]], dtype=T.uint8),),
                                                                       T.tensor(1.0)),
    "index_put_((uint8 mask (1, 2),), 1.)": lambda T: _x(T).index_put_((T.tensor([[1, 0]], dtype=T.uint8),),
                                                                         T.tensor(1.0)),
    "index_put((uint8 mask (2, 3),), 1.)": lambda T: _x(T).index_put((T.tensor([[1, 0, 1], [0, 0, 0]],
                                                                               dtype=T.uint8),), T.tensor(1.0)),
    # a 0-d tensor has no dim to split or repeat along (fixed: IndexError / a result)
    "0-d unflatten(0, (1,))": lambda T: T.tensor(1.0).unflatten(0, (1,)),
    "0-d unflatten(-1, (1,))": lambda T: T.tensor(1.0).unflatten(-1, (1,)),
    "0-d unflatten(0, ())": lambda T: T.tensor(1.0).unflatten(0, ()),
    "0-d unflatten(5, (1,))": lambda T: T.tensor(1.0).unflatten(5, (1,)),
    "unflatten(1, ())": lambda T: _x(T).unflatten(1, ()),
    "0-d repeat_interleave(2, dim=0)": lambda T: T.tensor(1.0).repeat_interleave(2, dim=0),
    "0-d repeat_interleave(2, dim=-1)": lambda T: T.tensor(1.0).repeat_interleave(2, dim=-1),
    "0-d repeat_interleave(tensor([2, 3]), dim=0)": lambda T: T.tensor(1.0).repeat_interleave(T.tensor([2, 3]), dim=0),
    "0-d repeat_interleave(2)_ok": lambda T: T.tensor(1.0).repeat_interleave(2),
    "repeat_interleave(True)": lambda T: T.ones(2).repeat_interleave(True),
    "repeat_interleave(False, dim=0)": lambda T: T.ones(2).repeat_interleave(False, dim=0),
    "torch.repeat_interleave(x, True)": lambda T: T.repeat_interleave(T.ones(2), True),
    "repeat_interleave(int32 counts)_ok": lambda T: T.arange(2).repeat_interleave(T.tensor([1, 2], dtype=T.int32)),
    # grid_sample of a batch of 0 (fixed: the kernel's reshape failed)
    **{f"grid_sample N=0 {m} {p}_ok": (lambda T, m=m, p=p: _F(T).grid_sample(
        T.ones(0, 1, 4, 4), T.zeros(0, 2, 2, 2), mode=m, padding_mode=p, align_corners=False))
       for m in ("bilinear", "nearest", "bicubic") for p in ("zeros", "reflection")},
    "grid_sample 5-d N=0_ok": lambda T: _F(T).grid_sample(T.ones(0, 1, 2, 4, 4), T.zeros(0, 2, 2, 2, 3),
                                                          align_corners=True),
    "grid_sampler N=0_ok": lambda T: T.grid_sampler(T.ones(0, 1, 4, 4), T.zeros(0, 2, 2, 2), 0, 0, False),
    "grid_sample empty grid_ok": lambda T: _F(T).grid_sample(_image(T), T.zeros(1, 0, 2, 2), align_corners=False),
    # unfold/fold: only the batch may be empty (fixed: ran)
    "unfold (1, 0, 4, 4)": lambda T: _F(T).unfold(T.ones(1, 0, 4, 4), 2),
    "unfold (0, 4, 4)": lambda T: _F(T).unfold(T.ones(0, 4, 4), 2),
    "unfold (1, 1, 0, 4) padding 1": lambda T: _F(T).unfold(T.ones(1, 1, 0, 4), 1, padding=1),
    "unfold int64 (1, 0, 4, 4)": lambda T: _F(T).unfold(T.ones(1, 0, 4, 4, dtype=T.int64), 2),
    "unfold (0, 1, 4, 4)_ok": lambda T: _F(T).unfold(T.ones(0, 1, 4, 4), 2),
    "fold (1, 0, 9)": lambda T: _F(T).fold(T.ones(1, 0, 9), (4, 4), 2),
    "fold (1, 4, 0)": lambda T: _F(T).fold(T.ones(1, 4, 0), (4, 4), 2),
    "fold (0, 9)": lambda T: _F(T).fold(T.ones(0, 9), (4, 4), 2),
    "fold (0, 4, 9)_ok": lambda T: _F(T).fold(T.ones(0, 4, 9), (4, 4), 2),
    "Unfold()(1, 0, 4, 4)": lambda T: T.nn.Unfold(2)(T.ones(1, 0, 4, 4)),
    # embedding_bag's negative offsets (fixed: RuntimeError in 'mean'/'max')
    "embedding_bag offsets [0, -1] mean": lambda T: _bag(T, [0, -1], "mean"),
    "embedding_bag offsets [0, 1, -2] max": lambda T: _bag(T, [0, 1, -2], "max"),
    "embedding_bag offsets [0, -1] sum": lambda T: _bag(T, [0, -1], "sum"),
    "embedding_bag offsets [0, 2]_ok": lambda T: _bag(T, [0, 2], "mean"),
    # a complex margin: torch's Scalar takes it, its double does not
    "multi_margin_loss margin=1j": lambda T: _F(T).multi_margin_loss(T.ones(2, 3), T.tensor([0, 2]), margin=1j),
    **{f"{api} = {vname}": (lambda T, call=call, v=v: call(T, _tensor_arg(v)(T)))
       for api, call in _FLOAT_ARGS.items() for vname, v in _FLOAT_VALUES.items()},
}

GIST = {
    "scatter(5, empty, 1.)": "dimension out of range",
    "index_select(1, 2-d float index)": "index is supposed to be a vector",
    "index_put((uint8 mask (1, 2),), 1.)": "shape of the mask",
    "0-d unflatten(0, (1,))": "has no dimensions",
    "0-d unflatten(0, ())": "sizes must be non-empty",
    "unfold (1, 0, 4, 4)": "non-zero dimensions",
    "fold (1, 0, 9)": "non-zero dimensions",
    "huber_loss delta = 'a'": "must be float, not str",
    "layer_norm eps = tensor([0.5])": "argument 'eps' (position 5) must be float, not Tensor",
    "batch_norm momentum = tensor(0.5, requires_grad=True)": "argument 'momentum' (position 7) must be float",
    "multi_margin_loss margin = 'a'": "must be Number, not str",
    "cross_entropy label_smoothing = 'a'": "cross_entropy_loss(): argument 'label_smoothing'",
}

test_same_class_as_torch, test_message_gist = table_tests(CASES, GIST, torch, tracegrad)


def _value(r):
    if isinstance(r, (list, tuple)):
        return [_value(x) for x in r]
    if hasattr(r, "numpy"):
        return [list(r.shape), str(r.dtype).split(".")[-1], r.detach().double().numpy().round(5).tolist()]
    return r


@pytest.mark.parametrize("name", [n for n in CASES if n.endswith("_ok")])
def test_values_as_torch(name):
    want, got = _value(CASES[name](torch)), _value(CASES[name](tracegrad))
    assert got == want, f"{name}: torch {want}, tracegrad {got}"


@pytest.mark.parametrize("T", [torch, tracegrad], ids=["torch", "tracegrad"])
def test_empty_scatter_gradients(T):
    # an empty index scatters nothing: self's gradient passes whole, grad_fn is the scatter's
    x = T.arange(6.0).view(2, 3).requires_grad_()
    y = x.scatter(1, T.tensor([], dtype=T.int64), 2.0)
    assert type(y.grad_fn).__name__ == "ScatterBackward1"
    y.sum().backward()
    assert x.grad.tolist() == [[1.0] * 3] * 2


@pytest.mark.parametrize("T", [torch, tracegrad], ids=["torch", "tracegrad"])
def test_grid_sample_empty_batch_gradients(T):
    x = T.ones(0, 1, 4, 4, requires_grad=True)
    g = T.zeros(0, 2, 2, 2, requires_grad=True)
    T.nn.functional.grid_sample(x, g, align_corners=True).sum().backward()
    assert (tuple(x.grad.shape), tuple(g.grad.shape)) == ((0, 1, 4, 4), (0, 2, 2, 2))
