"""Strides, storage offsets, contiguity and view-ability of view chains (NOTE [strides by
formula] in ``_tensor/view_strides.py``) against torch 2.13: random chains of view ops on meta
tensors of both libraries (shapes only, so no data and no XLA programs), and chains over
storages far too large to enumerate."""
import random

import pytest

import tracegrad
from tracegrad._tensor import tensor as T

torch = pytest.importorskip("torch")


def _ops(shape, rnd):
    """(name, f) view steps valid for ``shape``, f written once for both libraries."""
    nd, out = len(shape), [("alias", lambda x: x[...])]
    if nd == 0:
        return out + [("unsqueeze", lambda x: x.unsqueeze(0)), ("none", lambda x: x[None])]
    d = rnd.randrange(nd)
    n = shape[d]
    start, stop, step = rnd.randrange(0, n + 1), rnd.randrange(0, n + 2), rnd.randint(1, 3)
    perm = tuple(rnd.sample(range(nd), nd))
    out += [
        ("slice", lambda x: x[(slice(None),) * d + (slice(start, stop, step),)]),
        ("narrow", lambda x: x.narrow(d, min(start, n), max(0, min(n - min(start, n), 2)))),
        ("unsqueeze", lambda x, u=rnd.randrange(-nd - 1, nd + 1): x.unsqueeze(u)),
        ("squeeze", lambda x: x.squeeze()),
        ("squeeze_dim", lambda x: x.squeeze(d)),
        ("permute", lambda x: x.permute(*perm)),
        ("transpose", lambda x, a=rnd.randrange(nd), b=rnd.randrange(nd): x.transpose(a, b)),
        ("index", lambda x, k=rnd.choice([(Ellipsis, None), (slice(None), None), (Ellipsis, slice(1, None, 2)),
                                          (None, Ellipsis)]): x[k]),
        ("expand", lambda x, s=tuple(rnd.choice([1, 3]) if k == 1 else k for k in shape): x.expand(2, *s)),
        ("flatten", lambda x: x.reshape(-1) if x.is_contiguous() else x.flatten()),
        ("view_split_last", lambda x: x.view(*(tuple(shape[:-1]) + (1, shape[-1])))),
    ]
    if n:
        k, i = rnd.randint(1, n), rnd.randrange(8)
        out += [
            ("select", lambda x, a=rnd.randrange(-n, n): x.select(d, a)),
            ("int_index", lambda x, a=rnd.randrange(n): x[(slice(None),) * d + (a,)]),
            ("split", lambda x: x.split(k, d)[i % len(x.split(k, d))]),
            ("unbind", lambda x, a=rnd.randrange(n): x.unbind(d)[a]),
            ("unfold", lambda x, sz=rnd.randint(1, n), st=rnd.randint(1, 2): x.unfold(d, sz, st)),
        ]
    if nd >= 2:
        d1, d2 = rnd.sample(range(nd), 2)
        out += [("diagonal", lambda x, o=rnd.randint(-2, 2): x.diagonal(o, d1, d2)), ("mT", lambda x: x.mT)]
    if nd == 2:
        out.append(("t", lambda x: x.t()))
    return out


def _facts(x):
    return tuple(x.shape), tuple(x.stride()), x.storage_offset(), x.is_contiguous()


def _viewable(x, shape):
    try:
        x.view(*shape)
        return True
    except RuntimeError:
        return False


@pytest.mark.parametrize("seed", range(6))
def test_random_view_chains_match_torch(seed):
    rnd = random.Random(seed)
    for _ in range(60):
        shape = [rnd.choice([1, 1, 2, 3, 4, 5]) for _ in range(rnd.randint(0, 4))]
        a = torch.empty(shape, device="meta")
        b = tracegrad.empty(shape, device="meta")
        steps = []
        for _ in range(rnd.randint(1, 4)):
            name, f = rnd.choice(_ops(list(b.shape), rnd))
            try:
                a2 = f(a)
            except (RuntimeError, IndexError, ValueError):
                break
            a, b = a2, f(b)
            steps.append(name)
            assert _facts(b) == _facts(a) or a.numel() == 0, (shape, steps)
            if a.numel():
                for new in ([-1], list(a.shape)[::-1] or [1]):
                    assert _viewable(b, new) == _viewable(a, new), (shape, steps, new)


@pytest.mark.parametrize("make", [
    lambda L: L.empty(10 ** 6, 10 ** 6, device="meta").t()[::2, 5:],
    lambda L: L.empty(32000, 4096, device="meta").t().unsqueeze(0).expand(3, -1, -1),
    lambda L: L.empty(4096, 4096, 64, device="meta").permute(2, 0, 1)[1:, ::3].diagonal(0, 1, 2),
    lambda L: L.empty(10 ** 5, 10 ** 5, device="meta").view(10 ** 4, 10, 10 ** 5).transpose(0, 2).unfold(0, 4, 2),
])
def test_views_of_storages_too_large_to_enumerate(make):
    # torch's strides follow from formulas: tracegrad's too (before, a 4 TB storage's element
    # positions were enumerated, or a 131M-element one's took minutes)
    a, b = make(torch), make(tracegrad)
    assert _facts(b) == _facts(a)
    assert _viewable(b, [-1]) == _viewable(a, [-1])


def test_data_views_keep_their_values_and_torch_strides():
    x = torch.arange(120.0).reshape(4, 5, 6)
    y = tracegrad.arange(120.0).reshape(4, 5, 6)
    for f in (lambda t: t.transpose(0, 2)[1:, ::2].unsqueeze(1), lambda t: t[:, 1].t().diagonal(),
              lambda t: t.unfold(2, 3, 2)[..., 1], lambda t: t.permute(1, 2, 0).narrow(0, 1, 1).squeeze(0)):
        a, b = f(x), f(y)
        assert _facts(b) == _facts(a)
        assert b.tolist() == a.tolist()
        assert b.contiguous().tolist() == a.contiguous().tolist()


def test_chains_without_a_formula_read_element_positions():
    # complex part views: no formula here, the element positions answer (and agree with torch)
    c = torch.arange(12.0).reshape(3, 4) * (1 + 1j)
    g = tracegrad.arange(12.0).reshape(3, 4) * (1 + 1j)
    assert T.chain_layout_of(g.t().real) is False
    assert _facts(g.t().real) == _facts(c.t().real)
    assert _facts(g.t().imag[1:]) == _facts(c.t().imag[1:])
