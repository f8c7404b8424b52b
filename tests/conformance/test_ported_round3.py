"""NOTE: the tests that followed PyTorch's test files statement for statement (the same code and
literals, lightly edited, asserts renamed) were removed (a public repository's code stays out of
this project's commits); what remains is the tests written here. The text below describes the file
as it was.

Round 3 of PyTorch's own tests ported (issue 10): autograd hook ordering and grad-call edge
cases from test/test_autograd.py, grad-mode objects on generators, module hooks from
test/nn/test_module_hooks.py, DataLoader from test/test_dataloader.py and optimizers from
test/test_optim.py. Each test names its original; bodies run under torch and tracegrad (the
``T`` fixture), so torch 2.13 checks every expectation the port makes."""

import pytest


def test_weighted_sampler_without_replacement_too_many(T):
    # TestSamplers-style: more draws than weights without replacement fail when drawn
    # (torch.multinomial's RuntimeError), not at construction
    s = T.utils.data.WeightedRandomSampler([1.0, 1.0], 3, replacement=False)
    with pytest.raises(RuntimeError):
        list(s)


def _hook_inplace_body(T):
    # TestModuleHookNN.test_hook_inplace: with a full backward hook, the module's inputs and
    # outputs are views made by BackwardHookFunction: writing them in place, or using one after
    # its base changed, raises
    class M(T.nn.Module):
        def forward(self, inp, do_inplace):
            self.inp = inp
            if do_inplace:
                inp += 1
            return inp.clone()

    inp = T.rand(10, requires_grad=True)
    mod = M()
    mod.register_full_backward_hook(lambda *a: None)
    mod(inp, False).sum().backward()
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        mod(inp.clone(), True)
    local = inp.clone()
    mod(local, False)
    local[0] *= 1
    with pytest.raises(RuntimeError, match="is a view and its base or another view"):
        mod.inp + 2
    out = mod(inp, False)
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        out += 1


def test_hook_inplace_torch():
    import torch
    _hook_inplace_body(torch)


@pytest.mark.xfail(strict=True, reason="gap: the module backward-hook identity (BackwardHookFunction) returns "
                                       "plain tensors, not views created in a custom Function, so torch's in-place "
                                       "errors on them are not raised; needs view-from-Function support in _dispatch")
def test_hook_inplace_tracegrad():
    import tracegrad
    _hook_inplace_body(tracegrad)


def _second_grad_of_mul_is_unused(T):
    # TestAutograd.test_grad_materialize_grads (the allow_unused half): d(x*a)/dx = a does not
    # depend on x, so the second derivative w.r.t. x is None
    x = T.tensor(0.5, requires_grad=True)
    a = T.tensor(1.0, requires_grad=True)
    dydx = T.autograd.grad(x * a, x, create_graph=True)
    assert T.autograd.grad(dydx, x, create_graph=True, allow_unused=True)[0] is None


def test_second_grad_of_mul_is_unused_torch():
    import torch
    _second_grad_of_mul_is_unused(torch)


def test_second_grad_of_mul_is_unused_tracegrad():
    import tracegrad
    _second_grad_of_mul_is_unused(tracegrad)


