"""``tracegrad.masked.MaskedTensor``: one program under torch and tracegrad -- construction,
repr, elementwise ops, reductions, softmax, views, gradients and errors."""
import warnings

import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _program(torch):
    out = []
    M = torch.masked
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = torch.tensor([[1., 2., 3.], [4., 5., 6.]])
        m = torch.tensor([[True, False, True], [False, False, True]])
        mt = M.masked_tensor(d, m, requires_grad=True)
        out.append(repr(mt))
        out.append(repr(mt.sum()))
        out.append(repr(mt.sum(1)))
        out.append(repr(mt.amax(0)))
        out.append(repr(mt.mean(dim=1, keepdim=True)))
        out.append(repr(torch.exp(mt)))
        out.append(repr(mt * 2 + mt))
        out.append(repr(mt.to_tensor(0.)))
        out.append(repr(mt.get_mask()))
        out.append(repr(torch.softmax(mt, 1)))
        out.append(repr(mt[0]))
        out.append(repr(mt.t()))
        out.append((tuple(mt.shape), str(mt.dtype).split(".")[-1], mt.requires_grad, mt.is_leaf))
        (mt * mt).sum().backward()
        out.append(repr(mt.grad))
        x = torch.tensor([1., 2., 3.], requires_grad=True)
        amt = M.as_masked_tensor(x, torch.tensor([True, True, False]))
        (amt * 3).sum().backward()
        out.append(repr(x.grad.to_tensor(0.) if M.is_masked_tensor(x.grad) else x.grad))
        other = M.masked_tensor(d, ~m)
        try:
            mt.detach() + other
        except ValueError as e:
            out.append(str(e))
        for bad in (lambda: M.masked_tensor([1.], m), lambda: M.masked_tensor(d, m.int()),
                    lambda: M.masked_tensor(d, m[0])):
            try:
                bad()
            except (TypeError, ValueError) as e:
                out.append((type(e).__name__, str(e)))
        out.append(M.is_masked_tensor(mt))
        out.append(repr(M.masked_tensor(torch.tensor([1, 2]), torch.tensor([True, False])).sum()))
    return out


def test_masked_tensor_matches_torch():
    ours, theirs = _program(tracegrad), _program(torch)
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, (i, a, b)


def test_masked_tensor_warns_and_refuses_unsupported_ops():
    d, m = tracegrad.tensor([1.0, 2.0]), tracegrad.tensor([True, False])
    with pytest.warns(UserWarning, match="prototype stage"):
        mt = tracegrad.masked.masked_tensor(d, m)
    with pytest.raises(TypeError, match="MaskedTensor does not support"):
        tracegrad.matmul(mt, mt)   # no masked semantics defined: never silently unmasked
    assert isinstance(mt, tracegrad.masked.MaskedTensor) and mt.get_data().tolist() == [1.0, 2.0]
    assert str(mt) == repr(mt) == "MaskedTensor(\n  [  1.0000,       --]\n)"   # print shows the mask, as torch
