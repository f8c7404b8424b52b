"""Ports the generated-test machinery of PyTorch's test/test_nn.py (``add_test`` over
``module_tests``/``get_new_module_tests()``/``criterion_tests``): the classes and tables in
``tracegrad.testing._internal.common_nn`` (our own code, see its docstring) run a few table entries
through ``NewModuleTest``/``CriterionTest`` with a ``TestNN``-like harness, and the checks are shown
able to fail (a wrong ``reference_fn``, a wrong gradient)."""
import unittest

import pytest

import tracegrad
from tracegrad.testing._internal import common_nn
from tracegrad.testing._internal.common_nn import (CriterionTest, NewModuleTest, NNTestCase, criterion_tests,
                                                   ctcloss_reference, get_new_module_tests, loss_reference_fns,
                                                   module_tests, single_batch_reference_fn)
from tracegrad.testing._internal.common_utils import freeze_rng_state

torch = pytest.importorskip("torch")
nn = tracegrad.nn


class _Harness(NNTestCase):
    """test_nn.py's ``TestNN`` harness methods (``_forward``, ``_backward``, ``_forward_criterion``,
    ``_zero_grad_parameters``, ``_get_parameters``), written for these tests."""

    def runTest(self):
        pass

    def _forward(self, module, input):
        with freeze_rng_state():
            return module(*input) if isinstance(input, tuple) else module(input)

    def _backward(self, module, input, output, grad_output, create_graph=False):
        output.backward(grad_output, retain_graph=True, create_graph=create_graph)
        if isinstance(input, tuple):
            return tuple(None if i.grad is None else i.grad.data for i in input)
        return None if input.grad is None else input.grad.data

    def _forward_criterion(self, criterion, input, target, extra_args=None):
        extra_args = () if extra_args is None else extra_args
        if isinstance(input, tuple):
            return criterion(*(input + (target,) + extra_args))
        return criterion(input, target, *extra_args)

    def _zero_grad_parameters(self, module):
        for p in module.parameters():
            if p.grad is not None:
                with tracegrad.no_grad():
                    p.grad.zero_()
                p.grad.detach_()

    def _get_parameters(self, module):
        params = list(module.parameters())
        return params, [p.grad for p in params]


def _entry(table, name, desc=None):
    for params in table:
        if params.get("module_name") == name and params.get("desc") == desc:
            params = dict(params)
            params["constructor"] = getattr(nn, params.pop("module_name"))
            params.pop("decorator", None)
            return params
    raise KeyError(name)


def test_tables_have_torch_format():
    # test_nn.py: the loops over module_tests + get_new_module_tests() and criterion_tests
    assert 30 <= len(module_tests) + len(get_new_module_tests()) + len(criterion_tests) <= 80
    for params in module_tests + get_new_module_tests() + criterion_tests:
        assert isinstance(getattr(nn, params["module_name"]), type)
        assert any(k in params for k in ("input", "input_fn", "input_size"))
    assert all(any(k in p for k in ("target", "target_fn", "target_size")) for p in criterion_tests)
    # get_new_module_tests builds fresh dicts (test_nn.py pops module_name from them)
    assert get_new_module_tests()[0] is not get_new_module_tests()[0]


def test_names_follow_torch():
    # test_nn.py add_test: test.get_name() gives the TestNN method name
    assert NewModuleTest(constructor=nn.Linear, constructor_args=(2, 3), input_size=(1, 2)).get_name() == "test_Linear"
    assert NewModuleTest(constructor=nn.Linear, input_size=(1, 2), desc="x").get_name() == "test_Linear_x"
    assert CriterionTest(constructor=nn.L1Loss, input_size=(2,), target_size=(2,), fullname="L1").get_name() == "test_L1"
    with pytest.raises(ValueError):
        CriterionTest(constructor=nn.L1Loss, input_size=(2,))  # no target


@pytest.mark.parametrize("name,desc", [("Linear", None), ("ReLU", None), ("Conv1d", "no_batch_dim"),
                                       ("Softmax", None), ("LayerNorm", None)])
def test_new_module_test_entries_pass(name, desc):
    # generated TestNN.test_<name>[_<desc>] (test_nn.py add_test(NewModuleTest(**test_params)))
    table = module_tests + get_new_module_tests()
    params = _entry(table, name, desc)
    params["check_batched_grad"] = False  # keep it fast; batched grads are covered elsewhere
    params["check_gradgrad"] = params.get("check_gradgrad", True) and name in ("ReLU", "Softmax")  # speed
    NewModuleTest(**params)(_Harness())


@pytest.mark.parametrize("name,desc", [("MSELoss", None), ("NLLLoss", "weights"), ("CrossEntropyLoss", None),
                                       ("CosineEmbeddingLoss", None), ("CTCLoss", "lengths_intlists")])
def test_criterion_test_entries_pass(name, desc):
    # generated TestNN.test_<name>[_<desc>] (test_nn.py add_test(CriterionTest(**test_params)))
    params = _entry(criterion_tests, name, desc)
    params["check_batched_grad"] = False
    params["check_gradgrad"] = params.get("check_gradgrad", True) and name == "MSELoss"  # speed
    CriterionTest(**params)(_Harness())


def test_wrong_reference_fn_fails():
    # a NewModuleTest / CriterionTest whose reference disagrees with the module must fail
    bad = NewModuleTest(constructor=nn.ReLU, input_size=(2, 3), default_dtype=tracegrad.float64,
                        reference_fn=lambda i, p, m: i.abs(), check_batched_grad=False)
    with pytest.raises(AssertionError):
        bad(_Harness())
    bad_loss = CriterionTest(constructor=nn.L1Loss, input_size=(2, 3), target_size=(2, 3),
                             default_dtype=tracegrad.float64, check_batched_grad=False,
                             reference_fn=lambda i, t, m: loss_reference_fns["MSELoss"](i, t))
    with pytest.raises(AssertionError):
        bad_loss(_Harness())


def test_wrong_gradient_fails():
    # gradcheck inside NewModuleTest catches a module whose backward is wrong
    class Twice(tracegrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3  # wrong on purpose

    class Bad(nn.Module):
        def forward(self, x):
            return Twice.apply(x)

    test = NewModuleTest(constructor=Bad, input_size=(2,), default_dtype=tracegrad.float64,
                         check_batched_grad=False, check_gradgrad=False, pickle=False)
    with pytest.raises(Exception):
        test(_Harness())


def test_cuda_variants_skip():
    # test_nn.py add_test also adds *_cuda tests; on a CPU machine they skip
    test = CriterionTest(constructor=nn.L1Loss, input_size=(2,), target_size=(2,))
    with pytest.raises(unittest.SkipTest):
        test.test_cuda(_Harness(), dtype=tracegrad.float32)


def test_single_batch_reference_fn_matches_torch():
    # common_nn.single_batch_reference_fn: the batched module on an input with a batch of one
    x = torch.randn(2, 5)
    m_t = torch.nn.Conv1d(2, 3, 2)
    m_g = nn.Conv1d(2, 3, 2)
    m_g.load_state_dict({k: tracegrad.tensor(v.numpy()) for k, v in m_t.state_dict().items()})
    got = single_batch_reference_fn(tracegrad.tensor(x.numpy()), None, m_g)
    torch.testing.assert_close(torch.tensor(got.detach().numpy()), m_t(x).detach(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_ctcloss_reference_matches_torch(reduction):
    # common_nn.ctcloss_reference agrees with torch's CTC loss (torch's test_nn CTC tests compare with it)
    g = torch.Generator().manual_seed(0)
    log_probs = torch.randn(7, 3, 5, generator=g, dtype=torch.float64).log_softmax(2)
    targets = torch.tensor([[1, 2, 2], [3, 1, 0], [4, 0, 0]])
    in_len, tg_len = [7, 6, 5], [3, 2, 1]
    expected = torch.nn.functional.ctc_loss(log_probs, targets, in_len, tg_len, blank=0, reduction=reduction)
    got = ctcloss_reference(tracegrad.tensor(log_probs.numpy()), tracegrad.tensor(targets.numpy()),
                            in_len, tg_len, blank=0, reduction=reduction)
    torch.testing.assert_close(torch.tensor(got.numpy()), expected, rtol=1e-9, atol=1e-9)


def test_get_reduction():
    assert common_nn.get_reduction(nn.L1Loss(reduction="sum")) == "sum"
    assert common_nn.get_reduction(nn.MSELoss()) == "mean"
