"""Compile patterns met in the fifty-first round of public programs
(tests/api/test_public_programs_round51.py), each a minimal training step run by torch eagerly,
tracegrad eagerly and ``tracegrad.compile``:

- shchur/ifl-tpp (MIT): a ``dict`` subclass with attribute access (``Batch``) passed to the
  compiled step, a new one each call: keyed by identity (an opaque object), every call traced again
  until ``cache_size_limit`` (fixed: ``_lowering/region.py`` flattens such a subclass like a dict
  and rebuilds it with its class; one changed or returned by the function is a graph break, as a
  dict); ``torch.distributions`` with argument validation is a graph break, without it one program
  (a mixture of normals under ``AffineTransform``/``ExpTransform``).
- 1Konny/FactorVAE (no license file): two optimizers in one step, the second one's
  ``zero_grad()`` dropping gradients the first backward left on its parameters: the third call
  traces again (strict xfail; values agree).
- jik876/hifi-gan (MIT): ``weight_norm`` and ``spectral_norm`` convolutions trained under
  ``compile`` (the norms' pre-forward hooks traced, spectral norm's power-iteration buffers
  carried).
"""
import numpy as np
import pytest

import tracegrad

from .test_public_patterns_round50 import _arr, _close   # round 50's snapshot and comparison

torch = pytest.importorskip("torch")


def _init(T, module, seed, scale=0.4):
    rs = np.random.RandomState(seed)
    with T.no_grad():
        for p in module.parameters():
            p.copy_(T.tensor(rs.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))
        for n, b in module.named_buffers():
            if n.endswith(("weight_u", "weight_v")):
                v = rs.standard_normal(tuple(b.shape)).astype(np.float32)
                b.copy_(T.tensor(v / np.linalg.norm(v)))
    return module


def _check(runner, ref_tol=1e-5, comp_tol=1e-6):
    ref, eager, comp = runner(torch, False), runner(tracegrad, False), runner(tracegrad, True)
    _close(ref[0], eager[0], ref_tol)
    _close(eager[0], comp[0], comp_tol)
    return comp[1].stats


class _Batch(dict):
    __getattr__ = dict.__getitem__
    __setattr__ = dict.__setitem__

    def __init__(self, x, y):
        self.x = x
        self.y = y


def _dict_subclass_runs(T, compiled):
    model = _init(T, T.nn.Linear(3, 2), 1)
    opt = T.optim.SGD(model.parameters(), lr=0.1)

    def step(batch):
        opt.zero_grad()
        loss = ((model(batch.x) - batch.y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    if compiled:
        step = T.compile(step)
    rs = np.random.RandomState(2)
    out = []
    for _ in range(4):
        b = _Batch(T.tensor(rs.randn(4, 3).astype(np.float32)), T.tensor(rs.randn(4, 2).astype(np.float32)))
        out += _arr(step(b))
    return out + _arr(model.weight), step


def test_dict_subclass_argument_values():
    _check(_dict_subclass_runs)


def test_dict_subclass_argument_traced_once():
    # was keyed by identity (an opaque object): a new batch each call traced again, until
    # cache_size_limit made the function eager (fixed: ``_lowering/region.py``)
    st = _check(_dict_subclass_runs)
    assert st["graph_breaks"] == [] and st["traces"] == 1, st


class _Attrs(dict):
    """A dict subclass with an instance attribute besides its items: stays an opaque argument."""

    def __init__(self, x, tag):
        super().__init__(x=x)
        self.tag = tag


def _escapes_runs(T, compiled, kind):
    lin = _init(T, T.nn.Linear(3, 2), 11)

    def changes(batch):       # an item set on the caller's batch: eager's, every call
        batch.y = batch.x * 2
        return lin(batch.y).sum()

    def returns(batch):       # the caller's own object comes back
        return batch, lin(batch.x).sum()

    def tagged(batch):
        return lin(batch["x"]).sum() * batch.tag

    fn = {"changes": changes, "returns": returns, "tagged": tagged}[kind]
    if compiled:
        fn = T.compile(fn)
    rs = np.random.RandomState(12)
    out = []
    for i in range(3):
        x = T.tensor(rs.randn(4, 3).astype(np.float32))
        b = _Attrs(x, float(i + 1)) if kind == "tagged" else _Batch(x, None)
        r = fn(b)
        if kind == "returns":
            assert r[0] is b and type(r[0]) is _Batch
            r = r[1]
        if kind == "changes":
            assert sorted(b) == ["x", "y"]
            out += _arr(b.y)
        out += _arr(r)
    return out, fn


@pytest.mark.parametrize("kind,breaks", [("changes", "the function changes a list or dict"),
                                         # returned: the caller's object again, compiled (round 36:
                                         # call_tree.argument_boxes boxes dict subclasses too)
                                         ("returns", None),
                                         ("tagged", None)])
def test_dict_subclass_argument_changed_or_returned(kind, breaks):
    st = _check(lambda T, c: _escapes_runs(T, c, kind))
    if breaks is None:
        assert st["graph_breaks"] == [], st
    else:
        assert [b[0][:len(breaks)] for b in st["graph_breaks"]] == [breaks], st


def _two_optimizers_runs(T, compiled):
    a, b = _init(T, T.nn.Linear(3, 2), 3), _init(T, T.nn.Linear(2, 2), 4)
    oa, ob = T.optim.Adam(a.parameters(), lr=1e-2), T.optim.Adam(b.parameters(), lr=1e-2)

    def step(x):
        # FactorVAE's ``Solver.train``: the VAE's loss reaches the discriminator's parameters too;
        # the discriminator's ``zero_grad`` drops those gradients before its own backward
        z = a(x)
        d = b(z)
        loss = d.pow(2).mean()
        oa.zero_grad()
        loss.backward()
        oa.step()
        l2 = b(a(x).detach()).sum() + d.detach().sum()
        ob.zero_grad()
        l2.backward()
        ob.step()
        return loss, l2

    if compiled:
        step = T.compile(step)
    x = T.tensor(np.random.RandomState(5).randn(4, 3).astype(np.float32))
    out = []
    for _ in range(4):
        out += _arr(*step(x))
    return out + _arr(a.weight, b.weight, b.weight.grad), step


def test_two_optimizers_values():
    _check(_two_optimizers_runs)


def test_two_optimizers_traced_once():
    # the .grad storage the first backward accumulated into, dropped by the second optimizer's
    # zero_grad, is no orphan (NOTE [the .grad a call starts with]): one program
    st = _check(_two_optimizers_runs)
    assert st["graph_breaks"] == [] and st["traces"] == 1, st


def _mixture_runs(T, compiled):
    D = T.distributions
    lin = _init(T, T.nn.Linear(3, 9), 6)
    opt = T.optim.Adam(lin.parameters(), lr=1e-2)

    def step(x, t):
        raw = lin(x)
        locs, log_scales, logits = raw[..., :3], raw[..., 3:6], raw[..., 6:]
        gmm = D.MixtureSameFamily(D.Categorical(logits=T.log_softmax(logits, -1)),
                                  D.Normal(locs, log_scales.exp()))
        dist = D.TransformedDistribution(gmm, [D.AffineTransform(loc=-0.3, scale=0.8), D.ExpTransform()])
        loss = -dist.log_prob(t).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    was = T.distributions.Distribution._validate_args
    T.distributions.Distribution.set_default_validate_args(False)
    try:
        if compiled:
            step = T.compile(step)
        rs = np.random.RandomState(7)
        x = T.tensor(rs.randn(5, 3).astype(np.float32))
        t = T.tensor(rs.exponential(1.0, 5).astype(np.float32) + 0.1)
        out = []
        for _ in range(3):
            out += _arr(step(x, t))
    finally:
        T.distributions.Distribution.set_default_validate_args(was)
    return out + _arr(lin.weight), step


def test_log_normal_mixture_step():
    st = _check(_mixture_runs)
    assert st["graph_breaks"] == [] and st["traces"] == 1, st


def _norms_runs(T, compiled):
    nn = T.nn
    g = nn.Sequential(nn.utils.weight_norm(nn.Conv1d(2, 3, 3, padding=1)), nn.LeakyReLU(0.1),
                      nn.utils.weight_norm(nn.ConvTranspose1d(3, 2, 4, 2, padding=1)))
    d = nn.Sequential(nn.utils.spectral_norm(nn.Conv1d(2, 4, 5, 2, groups=2, padding=2)), nn.LeakyReLU(0.1),
                      nn.utils.spectral_norm(nn.Conv1d(4, 1, 3, padding=1)))
    _init(T, g, 8)
    _init(T, d, 9)
    og = T.optim.AdamW(g.parameters(), 0.01, betas=[0.8, 0.99])
    od = T.optim.AdamW(d.parameters(), 0.01, betas=[0.8, 0.99])

    def step(x, y):
        # hifi-gan's least-squares GAN step with an L1 term
        y_hat = g(x)
        od.zero_grad()
        loss_d = ((1 - d(y)) ** 2).mean() + (d(y_hat.detach()) ** 2).mean()
        loss_d.backward()
        od.step()
        og.zero_grad()
        loss_g = ((1 - d(y_hat)) ** 2).mean() + 45 * T.nn.functional.l1_loss(y_hat, y)
        loss_g.backward()
        og.step()
        return loss_d, loss_g

    if compiled:
        step = T.compile(step)
    rs = np.random.RandomState(10)
    x = T.tensor(rs.randn(2, 2, 8).astype(np.float32))
    y = T.tensor(rs.randn(2, 2, 16).astype(np.float32))
    out = []
    for _ in range(3):
        out += _arr(*step(x, y))
    return out + _arr(*[t for _, t in d.named_buffers()], *g.parameters()), step


def test_weight_and_spectral_norm_gan_step():
    st = _check(_norms_runs, ref_tol=1e-4, comp_tol=1e-5)
    assert st["graph_breaks"] == [], st
