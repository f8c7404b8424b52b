"""Ported from PyTorch's test/test_nn.py (module API: get_submodule / set_submodule,
named_modules with duplicates, state_dict metadata and versions, buffers, containers, reprs,
dtype moves, to_empty), test/nn/test_load_state_dict.py (error messages, custom
_load_from_state_dict), test/test_transformers.py (encoder / decoder stacks with masks,
norm_first, callable activations) and test/nn/test_parametrization.py (weight_norm, orthogonal,
custom parametrizations with right_inverse and caching), round 13. Each case is a
``same_outcome`` program: torch 2.13 is the oracle and tracegrad must return equal values or
raise the same builtin exception class."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome

pytest.importorskip("torch")


def t(T, a, **kw):
    a = np.asarray(a)
    return T.tensor(a.astype(np.float32) if a.dtype == np.float64 else a, **kw)
def X(T, *shape, seed=0, grad=False):
    return T.tensor(np.random.RandomState(seed).standard_normal(shape).astype(np.float32), requires_grad=grad)
def _fill(T, m, scale=0.3):
    with T.no_grad():
        for i, (_, p) in enumerate(sorted(m.named_parameters())):
            p.copy_(T.tensor((np.sin(np.arange(p.numel()) * 0.9 + i) * scale).reshape(tuple(p.shape)).astype(np.float32)))
    return m

def net(T):
    return _fill(T, T.nn.Sequential(T.nn.Linear(3, 4), T.nn.ReLU(), T.nn.Sequential(T.nn.Linear(4, 2), T.nn.BatchNorm1d(2))))
def submodule_api(T):
    m = net(T)
    out = [type(m.get_submodule("2.1")).__name__, tuple(m.get_parameter("2.0.weight").shape), m.get_buffer("2.1.running_mean").tolist()]
    m.set_submodule("2.1", T.nn.Identity())
    out.append([n for n, _ in m.named_modules()])
    out.append(m.get_submodule(""))
    return out[:4] + [out[4] is m]
def get_submodule_bad(T):
    return net(T).get_submodule("2.5")
def get_parameter_bad(T):
    return net(T).get_parameter("2.0.nope")
def get_parameter_not_param(T):
    return net(T).get_parameter("2.1.running_mean")
def get_buffer_bad(T):
    return net(T).get_buffer("2.0.weight")
def named_modules_dup(T):
    l = T.nn.Linear(2, 2)
    m = T.nn.Sequential(l, l, T.nn.Sequential(l))
    return ([n for n, _ in m.named_modules()], [n for n, _ in m.named_modules(remove_duplicate=False)],
            [n for n, _ in m.named_parameters(remove_duplicate=False)], len(list(m.parameters())), [n for n, _ in m.named_children()])
def state_dict_metadata(T):
    m = net(T)
    sd = m.state_dict()
    md = sd._metadata
    return sorted(md.keys()), md["2.1"], type(sd).__name__
def non_persistent_buffer(T):
    m = T.nn.Module()
    m.register_buffer("a", T.ones(1), persistent=False)
    m.register_buffer("b", T.ones(1))
    m.register_buffer("c", None)
    return list(m.state_dict()), [n for n, _ in m.named_buffers()], m.c
def register_buffer_errors(T):
    m = T.nn.Module()
    m.register_buffer("a.b", T.ones(1))
def register_buffer_not_tensor(T):
    m = T.nn.Module()
    m.register_buffer("a", 3)
def register_param_exists(T):
    m = T.nn.Linear(2, 2)
    m.register_parameter("forward", T.nn.Parameter(T.ones(1)))
def assign_tensor_to_param(T):
    m = T.nn.Linear(2, 2)
    m.weight = T.ones(2, 2)
def module_repr(T):
    m = T.nn.Sequential(T.nn.Conv2d(1, 2, 3, stride=2, bias=False), T.nn.ModuleDict({"a": T.nn.Dropout(0.2)}),
                        T.nn.ModuleList([T.nn.GELU(approximate="tanh"), T.nn.LSTM(2, 3, batch_first=True)]),
                        T.nn.BatchNorm2d(2, affine=False), T.nn.Embedding(3, 2, padding_idx=0), T.nn.MaxPool2d(2, ceil_mode=True),
                        T.nn.LayerNorm(4, eps=1e-3), T.nn.MultiheadAttention(4, 2), T.nn.Identity(), T.nn.Softmax(dim=1), T.nn.Upsample(scale_factor=2))
    return repr(m)
def param_containers(T):
    pl = T.nn.ParameterList([T.nn.Parameter(T.ones(2)), T.zeros(3)])
    pl.append(T.ones(1))
    pd = T.nn.ParameterDict({"a": T.nn.Parameter(T.ones(1)), "b": T.zeros(2)})
    pd["c"] = T.ones(3)
    pd.update({"d": T.nn.Parameter(T.ones(1))})
    return ([type(p).__name__ for p in pl], [p.requires_grad for p in pl], list(pd.keys()), type(pd["b"]).__name__,
            len(pl), repr(pl), repr(pd), pd.pop("a").tolist(), list(pd), "c" in pd)
def module_containers(T):
    ml = T.nn.ModuleList([T.nn.ReLU(), T.nn.Tanh()])
    ml.insert(1, T.nn.Sigmoid())
    ml.extend([T.nn.Identity()])
    ml += [T.nn.ReLU6()]
    md = T.nn.ModuleDict({"x": T.nn.ReLU()})
    md.update([("y", T.nn.Tanh())])
    s = T.nn.Sequential(T.nn.ReLU(), T.nn.Tanh(), T.nn.Sigmoid())
    s.append(T.nn.Identity())
    del s[0]
    s2 = s[1:]
    s.insert(0, T.nn.ELU())
    return ([type(m).__name__ for m in ml], list(md), [type(m).__name__ for m in s], type(s2).__name__, len(s2),
            [type(m).__name__ for m in ml[-2:]], type(ml[1:]).__name__, [type(m).__name__ for m in s + s2], md.pop("x").__class__.__name__)
def sequential_bad_index(T):
    return T.nn.Sequential(T.nn.ReLU())[3]
def modulelist_bad_type(T):
    return T.nn.ModuleList([T.ones(1)])
def to_empty_and_dtype(T):
    m = net(T)
    m.double()
    a = [p.dtype for p in m.parameters()] + [b.dtype for b in m.buffers()]
    m.to(T.float16)
    b = [p.dtype for p in m.parameters()] + [b.dtype for b in m.buffers()]
    m2 = T.nn.Linear(2, 2, device="meta")
    m2.to_empty(device="cpu")
    return a, b, m2.weight.device.type, tuple(m2.weight.shape), m.float() is m
def requires_grad_and_zero(T):
    m = net(T)
    m.requires_grad_(False)
    r = [p.requires_grad for p in m.parameters()]
    m[0].requires_grad_()
    return r, [p.requires_grad for p in m.parameters()]
def train_eval_flags(T):
    m = net(T)
    m.eval()
    x = X(T, 5, 3)
    y1 = m(x)
    m.train()
    y2 = m(x)
    return y1, y2, m[2][1].running_mean, m[2][1].num_batches_tracked, m.training
def load_state_dict_custom_version(T):
    seen = []
    class M(T.nn.Module):
        _version = 3
        def __init__(self):
            super().__init__()
            self.w = T.nn.Parameter(T.zeros(2))
        def _load_from_state_dict(self, sd, prefix, local_metadata, strict, missing, unexpected, errors):
            seen.append((prefix, local_metadata.get("version"), sorted(sd)))
            super()._load_from_state_dict(sd, prefix, local_metadata, strict, missing, unexpected, errors)
    outer = T.nn.Sequential(M())
    sd = outer.state_dict()
    outer.load_state_dict(sd)
    return seen, sd._metadata["0"]
def load_state_dict_error_msg(T):
    m = T.nn.Linear(2, 2)
    try:
        m.load_state_dict({"weight": T.ones(3, 3), "bias": T.ones(2), "x": T.ones(1)})
    except RuntimeError as e:
        s = str(e)
        return ("Unexpected key(s)" in s, "size mismatch for weight" in s, "Error(s) in loading state_dict for Linear" in s)
def load_state_dict_strict_false_shape(T):
    m = T.nn.Linear(2, 2)
    return m.load_state_dict({"weight": T.ones(3, 3)}, strict=False)
def transformer_encoder(T):
    layer = T.nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True, norm_first=True, activation="gelu")
    enc = _fill(T, T.nn.TransformerEncoder(layer, 2, norm=T.nn.LayerNorm(4), enable_nested_tensor=False))
    x = X(T, 2, 5, 4, grad=True)
    kpm = t(T, [[False, False, False, True, True], [False] * 5])
    mask = T.nn.Transformer.generate_square_subsequent_mask(5)
    y = enc(x, mask=mask, src_key_padding_mask=kpm)
    y2 = enc(x, is_causal=True, mask=mask)
    (y.sum() + y2.sum()).backward()
    return y, y2, x.grad
def transformer_decoder(T):
    layer = T.nn.TransformerDecoderLayer(4, 2, dim_feedforward=8, dropout=0.0, activation=T.nn.functional.relu)
    dec = _fill(T, T.nn.TransformerDecoder(layer, 2))
    tgt = X(T, 3, 2, 4, grad=True)
    mem = X(T, 5, 2, 4, seed=1, grad=True)
    y = dec(tgt, mem, tgt_mask=T.nn.Transformer.generate_square_subsequent_mask(3), memory_key_padding_mask=t(T, [[False] * 4 + [True], [False] * 5]))
    y.sum().backward()
    return y, tgt.grad, mem.grad
def full_transformer(T):
    m = _fill(T, T.nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, batch_first=True))
    s, tg = X(T, 2, 5, 4), X(T, 2, 3, 4, seed=1)
    return m(s, tg, tgt_mask=m.generate_square_subsequent_mask(3), tgt_is_causal=True)
def transformer_bad_dims(T):
    m = T.nn.Transformer(4, 2, 1, 1, 8, dropout=0.0)
    return m(T.ones(5, 2, 4), T.ones(3, 3, 4))
def weight_norm_parametrize(T):
    P = T.nn.utils.parametrizations
    m = _fill(T, T.nn.Linear(3, 2))
    P.weight_norm(m, dim=0)
    names = sorted(n for n, _ in m.named_parameters())
    x = X(T, 4, 3, grad=True)
    y = m(x)
    y.sum().backward()
    g = m.parametrizations.weight.original0.grad
    T.nn.utils.parametrize.remove_parametrizations(m, "weight")
    return names, y, g, sorted(n for n, _ in m.named_parameters()), T.nn.utils.parametrize.is_parametrized(m)
def orthogonal_param(T):
    m = _fill(T, T.nn.Linear(3, 3))
    T.nn.utils.parametrizations.orthogonal(m)
    w = m.weight
    return (w @ w.t()).round(decimals=4), sorted(n for n, _ in m.named_parameters())
def custom_parametrization(T):
    class Sym(T.nn.Module):
        def forward(self, X): return X.triu() + X.triu(1).transpose(-1, -2)
        def right_inverse(self, A): return A.triu()
    m = _fill(T, T.nn.Linear(3, 3))
    T.nn.utils.parametrize.register_parametrization(m, "weight", Sym())
    w = m.weight
    with T.nn.utils.parametrize.cached():
        a = m.weight is m.weight
    m.weight = T.eye(3) * 2
    return w, a, m.weight, m.parametrizations.weight.original, list(m.state_dict())
def spectral_norm_old(T):
    m = _fill(T, T.nn.Linear(4, 3))
    T.nn.utils.spectral_norm(m, n_power_iterations=0)
    return sorted(m.state_dict()), tuple(m.weight_u.shape)


CASES = {k: v for k, v in dict(globals()).items() if callable(v) and getattr(v, "__module__", "") == __name__
         and k not in ("t", "X", "_fill", "net", "test_module_api_round13")}

XFAIL = {}


@pytest.mark.parametrize("fn", outcome_params(CASES, XFAIL))
def test_module_api_round13(fn):
    same_outcome(fn)
