"""tracegrad.nn against PyTorch's own ModuleInfo database (torch.testing._internal's ``module_db``).

For every ModuleInfo whose class exists in ``tracegrad.nn``, the first module inputs torch gives are
run in both libraries, in training mode (and in eval mode where the module behaves differently):

* construction: the same ``state_dict`` keys, shapes and dtypes, and the same ``repr``;
* forward: torch's parameters and buffers are loaded into tracegrad's module, both run the same
  inputs; outputs and, after the call, buffers (running statistics) equal torch's (random modules:
  shapes and dtypes only);
* backward: gradients of ``sum(out * fixed random cotangent)`` w.r.t. the floating inputs and the
  parameters equal torch's;
* errors: every ``module_error_inputs_func`` case raises torch's exception class.

Known differences are strict xfails in ``XFAIL`` (a fix shows up as XPASS).
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")   # the module database's module imports it

import tracegrad  # noqa: E402
from torch.testing._internal.common_modules import ModuleErrorEnum, module_db  # noqa: E402

from _opinfo_helpers import Carrier, Unsupported, assert_same, cotangents, flat, tg_to_torch  # noqa: E402

# TRACEGRAD_OPINFO_SAMPLES=N raises the count to N for a deeper run outside CI (e.g. 1000: all).
N_INPUTS = max(2, int(os.environ.get("TRACEGRAD_OPINFO_SAMPLES") or 2))
TOL = {torch.float32: dict(rtol=1e-4, atol=1e-5), torch.float64: dict(rtol=1e-7, atol=1e-7)}
GRAD_TOL = {torch.float32: dict(rtol=1e-3, atol=1e-4), torch.float64: dict(rtol=1e-6, atol=1e-6)}

# (ModuleInfo name, check) -> what differs; strict xfails
XFAIL: dict[tuple[str, str], str] = {}


def _infos():
    out = []
    for info in module_db:
        tg_cls = getattr(tracegrad.nn, info.module_cls.__name__, None)
        if tg_cls is not None:
            out.append((info, tg_cls))
    return out


INFOS = _infos()


def _params(check, keep=lambda info: True):
    return [pytest.param(info, cls, id=info.name,
                         marks=[pytest.mark.xfail(strict=True, reason=XFAIL[info.name, check])]
                         if (info.name, check) in XFAIL else [])
            for info, cls in INFOS if keep(info)]


class _Carry(Carrier):
    """Carrier that refuses torch modules inside constructor arguments (no counterpart object)."""

    def __call__(self, x):
        if isinstance(x, torch.nn.Module):
            raise Unsupported("a torch module as an argument")
        return super().__call__(x)


def _inputs(info, training):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = 0
        for mi in info.module_inputs_func(info, device="cpu", dtype=torch.float32, requires_grad=True,
                                          training=training):
            if mi.forward_input is None:
                continue
            c = _Carry(grad=True)
            try:
                c((mi.constructor_input.args, mi.constructor_input.kwargs,
                   mi.forward_input.args, mi.forward_input.kwargs))
            except Unsupported:
                continue
            yield mi
            got += 1
            if got == N_INPUTS:
                return


def _build(info, tg_cls, mi, training):
    """(torch module, tracegrad module holding torch's parameters and buffers, carrier)."""
    ci = mi.constructor_input
    torch.manual_seed(0)
    m_t = info.module_cls(*ci.args, **ci.kwargs)
    c = _Carry(grad=True)
    m_g = tg_cls(*c(tuple(ci.args)), **c(dict(ci.kwargs)))
    m_t.train(training)
    m_g.train(training)
    if info.is_lazy:   # parameters take their shapes from a first call
        fi = mi.forward_input
        with torch.no_grad(), tracegrad.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m_t(*fi.args, **fi.kwargs)
            m_g(*c(tuple(fi.args)), **c(dict(fi.kwargs)))
    return m_t, m_g, c


def _load(m_t, m_g):
    sd = {k: tracegrad.tensor(v.detach().numpy().copy()) for k, v in m_t.state_dict().items()}
    m_g.load_state_dict(sd)


def _modes(info):
    return (True, False) if info.train_and_eval_differ else (True,)


@pytest.mark.parametrize("info,tg_cls", _params("state"))
def test_state_dict_structure(info, tg_cls):
    checked = 0
    for mi in _inputs(info, True):
        m_t, m_g, _ = _build(info, tg_cls, mi, True)
        ref = {k: (tuple(v.shape), str(v.dtype).split(".")[-1]) for k, v in m_t.state_dict().items()}
        got = {k: (tuple(v.shape), str(v.dtype).split(".")[-1]) for k, v in m_g.state_dict().items()}
        assert got == ref, f"{info.name} {mi.desc}"
        assert [n for n, _ in m_g.named_parameters()] == [n for n, _ in m_t.named_parameters()]
        assert repr(m_g) == repr(m_t)
        checked += 1
    if not checked:
        pytest.skip("no module input that carries over")


def _random(info, mi, training):
    """Whether the module draws random numbers here (two seeds, two results)."""
    outs = []
    if info.is_lazy:
        return False
    for seed in (0, 1):
        m_t = info.module_cls(*mi.constructor_input.args, **mi.constructor_input.kwargs)
        m_t.train(training)
        torch.manual_seed(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outs.append([o.detach().clone() if isinstance(o, torch.Tensor) else o
                         for o in flat(m_t(*mi.forward_input.args, **mi.forward_input.kwargs))])
    return any(isinstance(a, torch.Tensor) and not torch.equal(a, b) for a, b in zip(*outs))


@pytest.mark.parametrize("info,tg_cls", _params("forward"))
def test_forward_and_backward(info, tg_cls):
    checked = 0
    for training in _modes(info):
        for mi in _inputs(info, training):
            m_t, m_g, c = _build(info, tg_cls, mi, training)
            _load(m_t, m_g)
            fi = mi.forward_input
            try:
                values = not _random(info, mi, training)
            except Exception:   # noqa: BLE001 -- an input torch itself rejects checks nothing here
                continue
            _load(m_t, m_g)   # _random ran modules of its own; torch's m_t is untouched
            where = f"{info.name} training={training} {mi.desc}"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = m_t(*fi.args, **fi.kwargs)
                out = m_g(*c(tuple(fi.args)), **c(dict(fi.kwargs)))
            assert_same(out, ref, TOL, values=values, where=where)
            # buffers after the call (running statistics, counters)
            for (k, b_t), (k2, b_g) in zip(m_t.named_buffers(), m_g.named_buffers()):
                assert k == k2
                assert_same(b_g, b_t, TOL, values=values, where=f"{where} buffer {k}")
            checked += 1
            if not values:
                continue
            refs = [o for o in flat(ref) if isinstance(o, torch.Tensor) and o.requires_grad
                    and o.dtype.is_floating_point]
            if not refs:
                continue
            outs = [o for o in flat(out) if isinstance(o, tracegrad.Tensor) and o.requires_grad
                    and o.dtype.is_floating_point]
            assert len(outs) == len(refs), f"{where}: {len(outs)} differentiable outputs, torch {len(refs)}"
            cots = cotangents(refs)
            leaves_t = [x for x, _ in c.leaves] + list(m_t.parameters())
            leaves_g = [g for _, g in c.leaves] + list(m_g.parameters())
            grads_t = torch.autograd.grad(sum((o * w).sum() for o, w in zip(refs, cots)), leaves_t,
                                          allow_unused=True)
            tg_cots = [tracegrad.tensor(w.numpy()) for w in cots]
            grads_g = tracegrad.autograd.grad(sum((o * w).sum() for o, w in zip(outs, tg_cots)), leaves_g,
                                              allow_unused=True)
            for i, (gt, gg) in enumerate(zip(grads_t, grads_g)):
                if gt is None:
                    assert gg is None or not tg_to_torch(gg).any(), f"{where}: grad {i} should be None"
                    continue
                assert gg is not None, f"{where}: grad {i} is None, torch's is not"
                assert_same(gg, gt, GRAD_TOL, where=f"{where} grad {i}")
    if not checked:
        pytest.skip("no module input that carries over")


def _error_params():
    return _params("error", keep=lambda info: info.module_error_inputs_func is not None)


@pytest.mark.parametrize("info,tg_cls", _error_params())
def test_error_inputs(info, tg_cls):
    checked = 0
    errors = info.module_error_inputs_func(info, device="cpu", dtype=torch.float32, requires_grad=False,
                                            training=True)
    for e in errors:
        mi = e.module_error_input
        c = _Carry()
        try:
            args = c((tuple(mi.constructor_input.args), dict(mi.constructor_input.kwargs)))
            fwd = c((tuple(mi.forward_input.args), dict(mi.forward_input.kwargs))) if mi.forward_input else None
        except Unsupported:
            continue
        where = f"{info.name} {e.error_on} {mi.desc}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if e.error_on == ModuleErrorEnum.CONSTRUCTION_ERROR:
                with pytest.raises(e.error_type):
                    tg_cls(*args[0], **args[1])
            else:
                m = tg_cls(*args[0], **args[1])
                with pytest.raises(e.error_type) as got:
                    m(*fwd[0], **fwd[1])
                assert "jax" not in str(got.value).lower(), where
        checked += 1
    if not checked:
        pytest.skip("no error input that carries over")
