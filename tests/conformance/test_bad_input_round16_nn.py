"""Bad-input parity, round 16 (nn, transforms, serialization): a probe over ~900 wrong calls
(nn.init on 0-d, 1-d, empty and 6-d tensors; clip_grad_norm_ with inf norms and
error_if_nonfinite; parameters_to_vector; pad/pack_sequence; spectral_norm and weight_norm
dims; torch.func vmap in_dims/out_dims/randomness, grad/jacrev/vjp/jvp misuse; save/load of
truncated, foreign and plain-pickle files; distributions with validate_args=True; custom
autograd.Function misuse) left these differences from torch 2.13, fixed here:
``orthogonal_(gain='a')`` raised NumPy's error (torch's mul_ TypeError); ``trunc_normal_`` with
a negative std raised (torch draws as with its absolute value); ``spectral_norm`` of a 1-D
parameter (a bias) failed with IndexError and of a 0-d one raised ValueError (torch's
IndexError); ``skip_init(3)`` was RuntimeError (torch's TypeError: not a class);
``clip_grads_with_norm_`` with a str total_norm ValueError (TypeError); ``func.vjp``'s
``vjp_fn(1.0)`` and ``func.jvp`` with a float tangent were AttributeErrors naming ``shape``
(torch's TypeError / RuntimeError); and ``load`` of a plain pickle under ``weights_only=True``
(the default) was UnpicklingError where torch's legacy reader finds no magic number
(RuntimeError), except where torch's weights-only unpickler refuses the pickle first (protocol
4's FRAME, a global not allowlisted). Each call runs under torch (the oracle) and tracegrad:
the same exception class (or none), no text of the layers below tracegrad; ``_ok`` calls are
ones torch accepts."""
import collections
import io
import pickle
import warnings

import pytest

import tracegrad

from _bad_input_helpers import assert_gist, assert_same_class

torch = pytest.importorskip("torch")


def _lin(T):
    T.manual_seed(0)
    return T.nn.Linear(2, 3)


def _with_scalar(T):
    m = _lin(T)
    m.register_parameter("s", T.nn.Parameter(T.tensor(2.)))
    return m


def _grads(T):
    p = T.nn.Parameter(T.ones(2))
    p.grad = T.tensor([3., 4.])
    return [p]


def _load_pickle(T, obj, protocol, **kw):
    with warnings.catch_warnings():   # torch's note on a protocol its weights-only reader did not expect
        warnings.simplefilter("ignore")
        return T.load(io.BytesIO(pickle.dumps(obj, protocol=protocol)), **kw)


class _Plain:   # a class no weights-only read allows
    pass


CASES = {
    # nn.init
    "orthogonal_(gain 'a')": lambda T: T.nn.init.orthogonal_(T.empty(2, 2), gain="a"),
    "trunc_normal_(std -1)_ok": lambda T: T.nn.init.trunc_normal_(T.empty(3), std=-1.).shape,
    "trunc_normal_(std 0)": lambda T: T.nn.init.trunc_normal_(T.empty(3), std=0.),
    # nn.utils
    "spectral_norm(bias)_ok": lambda T: T.nn.utils.spectral_norm(_lin(T), name="bias")(T.ones(1, 2)).shape,
    "spectral_norm(0-d parameter)": lambda T: T.nn.utils.spectral_norm(_with_scalar(T), name="s"),
    "parametrizations.spectral_norm(0-d parameter)": lambda T: T.nn.utils.parametrizations.spectral_norm(
        _with_scalar(T), name="s"),
    "skip_init(3)": lambda T: T.nn.utils.skip_init(3),
    "skip_init(int)": lambda T: T.nn.utils.skip_init(int),
    "clip_grads_with_norm_(total_norm 'a')": lambda T: T.nn.utils.clip_grads_with_norm_(_grads(T), 1., "a"),
    "clip_grads_with_norm_(no grads, 'a')_ok": lambda T: T.nn.utils.clip_grads_with_norm_(
        [T.nn.Parameter(T.ones(2))], 1., "a"),
    # torch.func: non-Tensor cotangents and tangents
    "vjp_fn(1.0)": lambda T: T.func.vjp(lambda a: a * 2, T.ones(2))[1](1.0),
    "vjp_fn((1.0, 1.0)) for two outputs": lambda T: T.func.vjp(lambda a: (a, a), T.ones(2))[1]((1.0, 1.0)),
    "jvp(tangent 1.0)": lambda T: T.func.jvp(lambda a: a * 2, (T.ones(2),), (1.0,)),
    "jvp(tangent None)": lambda T: T.func.jvp(lambda a: a * 2, (T.ones(2),), (None,)),
    # load of a plain pickle: no magic number (RuntimeError) unless weights-only refuses it first
    "load(pickle of 3)": lambda T: _load_pickle(T, 3, 4),
    "load(pickle of 3, weights_only=False)": lambda T: _load_pickle(T, 3, 4, weights_only=False),
    "load(protocol-2 dict)": lambda T: _load_pickle(T, {"a": [1, 2.0, "x"]}, 2),
    "load(protocol-2 OrderedDict)": lambda T: _load_pickle(T, collections.OrderedDict(a=1), 2),
    "load(protocol-2 set)": lambda T: _load_pickle(T, {1}, 2),
    "load(protocol-4 dict, framed)": lambda T: _load_pickle(T, {"a": [1, 2.0, "x"]}, 4),
    "load(protocol-2 class)": lambda T: _load_pickle(T, _Plain(), 2),
    "load(protocol-2 class, weights_only=False)": lambda T: _load_pickle(T, _Plain(), 2, weights_only=False),
    "load(protocol-0 int)": lambda T: _load_pickle(T, [1], 0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_class_as_torch(name):
    assert_same_class(name, CASES[name], torch, tracegrad)


GIST = {
    "orthogonal_(gain 'a')": "must be Tensor, not str",
    "spectral_norm(0-d parameter)": "Dimension specified as 0 but tensor has no dimensions",
    "skip_init(3)": "issubclass() arg 1 must be a class",
    "vjp_fn(1.0)": "gradients can be either Tensors or None, but got float",
    "jvp(tangent 1.0)": "Expected tangents to only contain Tensors, got <class 'float'>",
    "load(pickle of 3)": "Invalid magic number; corrupt file?",
    "load(protocol-2 dict)": "Invalid magic number; corrupt file?",
}


@pytest.mark.parametrize("name", list(GIST))
def test_message_gist(name):
    assert_gist(name, CASES[name], GIST[name], torch, tracegrad)


def test_fixed_calls_compute_torch_values():
    # spectral norm of a bias (a 1-D weight is one column): unit norm, as torch's
    for T in (torch, tracegrad):
        m = T.nn.utils.spectral_norm(_lin(T), name="bias")
        assert tuple(m.bias_u.shape) == (3,) and tuple(m.bias_v.shape) == (1,)
        m(T.ones(1, 2))   # the hook recomputes the bias in the forward
        assert abs(m.bias.norm().item() - 1) < 1e-5
        m = T.nn.utils.parametrizations.spectral_norm(_lin(T), name="bias")
        assert abs(m.bias.norm().item() - 1) < 1e-5
    # orthogonal_ with a gain: rows orthogonal of norm gain, the parameter still a leaf
    w = tracegrad.nn.Parameter(tracegrad.empty(2, 3))
    tracegrad.nn.init.orthogonal_(w, gain=2.)
    gram = (w @ w.T).detach()
    assert gram.round(decimals=4).tolist() == [[4., 0.], [0., 4.]] and w.is_leaf and w.grad_fn is None
    # trunc_normal_ with std -1 is N(0, 1) truncated to [-2, 2]
    tracegrad.manual_seed(0)
    t = tracegrad.nn.init.trunc_normal_(tracegrad.empty(256), std=-1.)
    assert t.abs().max().item() <= 2 and 0.7 < t.std().item() < 1.05
    # a Tensor total_norm scales; a float one is torch's clamp() TypeError (round 19), grads untouched
    g1, g2 = _grads(tracegrad), _grads(tracegrad)
    tracegrad.nn.utils.clip_grads_with_norm_(g1, 1., tracegrad.tensor(5.))
    with pytest.raises(TypeError, match="total_norm must be a Tensor"):
        tracegrad.nn.utils.clip_grads_with_norm_(g2, 1., 5.)
    assert [round(v, 4) for v in g1[0].grad.tolist()] == [0.6, 0.8]
    assert g2[0].grad.tolist() == _grads(tracegrad)[0].grad.tolist()
    # a plain pickle torch.load refuses still loads with pickle
    data = pickle.dumps({"a": 1})
    with pytest.raises(RuntimeError, match="Invalid magic number"):
        tracegrad.load(io.BytesIO(data), weights_only=False)
    assert pickle.loads(data) == {"a": 1}
