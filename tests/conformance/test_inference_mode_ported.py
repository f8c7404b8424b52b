"""Ported from PyTorch's TestAutogradInferenceMode (test/autograd/test_inference_mode.py, run
with test/test_autograd.py); each test names its original. The bodies are rewritten for the
``T`` fixture: each runs under torch 2.13 (the oracle) and under tracegrad."""
import pytest

def test_inference_mode_context_manager(T):
    # TestAutogradInferenceMode.test_inference_mode_context_manager
    assert not T.is_inference_mode_enabled()
    with T.inference_mode():
        assert T.is_inference_mode_enabled()
        with T.inference_mode(False):
            assert not T.is_inference_mode_enabled()
        assert T.is_inference_mode_enabled()
    assert not T.is_inference_mode_enabled()


@pytest.mark.parametrize("requires_grad", [True, False])
def test_inference_mode_decorator(T, requires_grad):
    # TestAutogradInferenceMode.test_inference_mode_decorator
    seen = []

    @T.inference_mode()
    def func(x):
        seen.append(T.is_inference_mode_enabled())
        return x * x

    d = func(T.ones(1, 2, 3, requires_grad=requires_grad))
    assert seen == [True]
    assert d.is_inference() and not d.requires_grad


def test_inference_mode_tensor_creation(T):
    # TestAutogradInferenceMode.test_inference_mode_tensor_creation
    with T.inference_mode():
        c = T.ones(1, 2, 3)
        assert not c.requires_grad and c.is_inference()
        tmp = T.ones(1, 2, 3, requires_grad=True)
        assert tmp.requires_grad and tmp.is_inference()
        tmp = T.ones(1, 2, 3).requires_grad_(False)
        assert not tmp.requires_grad and tmp.is_inference()


def test_inference_mode_existing_autograd_session(T):
    # TestAutogradInferenceMode.test_inference_mode_existing_autograd_session
    s = T.ones(1, 2, 3, requires_grad=True)
    a = s.clone()
    out = a * a          # a saved outside inference mode
    with T.inference_mode():
        a.add_(2)        # a normal tensor: its version counter still advances
    assert not a.is_inference()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward(T.ones_like(out))


@pytest.mark.parametrize("requires_grad", [True, False])
def test_inference_mode_inf_tensor_in_inf_mode_functional_op(T, requires_grad):
    # TestAutogradInferenceMode.test_inference_mode_inf_tensor_in_inf_mode_functional_op
    with T.inference_mode():
        c = T.ones(1, 2, 3, requires_grad=requires_grad)
        out = c * c
        assert out.is_inference() and not out.requires_grad


@pytest.mark.parametrize("op", ["add_", "transpose_"])
@pytest.mark.parametrize("requires_grad", [True, False])
def test_inference_mode_inf_tensor_in_inf_mode_inplace_op(T, op, requires_grad):
    # TestAutogradInferenceMode.test_inference_mode_inf_tensor_in_inf_mode_inplace_op
    fn = {"add_": lambda x: x.add_(2), "transpose_": lambda x: x.transpose_(0, 1)}[op]
    with T.inference_mode():
        c = T.ones(1, 2, 3, requires_grad=requires_grad)
        fn(c)
        assert c.is_inference()
        assert c.requires_grad == requires_grad


@pytest.mark.parametrize("requires_grad", [True, False])
def test_inference_mode_inf_tensor_in_inf_mode_view_op(T, requires_grad):
    # TestAutogradInferenceMode.test_inference_mode_inf_tensor_in_inf_mode_view_op
    with T.inference_mode():
        c = T.ones(1, 2, 3, requires_grad=requires_grad)
        v = c.view(-1)
        assert v.is_inference() and not v.requires_grad


@pytest.mark.parametrize("requires_grad", [True, False])
def test_inference_mode_inf_tensor_in_normal_mode_functional_op_is_leaf(T, requires_grad):
    # TestAutogradInferenceMode.test_inference_mode_inf_tensor_in_normal_mode_functional_op
    with T.inference_mode():
        c = T.ones(1, 2, 3, requires_grad=requires_grad)
    out = c * c if not requires_grad else (c * 1).detach()
    with T.no_grad():
        out2 = c * c
    for o in (out, out2):
        assert not o.is_inference() and not o.requires_grad and o.is_leaf


@pytest.mark.parametrize("op", ["add_", "transpose_"])
def test_inference_mode_inf_tensor_in_normal_mode_inplace_op(T, op, request):
    # TestAutogradInferenceMode.test_inference_mode_inf_tensor_in_normal_mode_inplace_op
    fn = {"add_": lambda x: x.add_(2), "transpose_": lambda x: x.transpose_(0, 1)}[op]
    with T.inference_mode():
        c = T.ones(1, 2, 3)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        fn(c)


@pytest.mark.parametrize("requires_grad", [True, False])
def test_inference_mode_inf_tensor_in_normal_mode_view_op_not_a_view(T, requires_grad):
    # TestAutogradInferenceMode.test_inference_mode_inf_tensor_in_normal_mode_view_op
    with T.inference_mode():
        c = T.ones(1, 2, 3, requires_grad=requires_grad)
    out = c.view(-1)
    assert out.is_inference() and not out.requires_grad
    assert not out._is_view() and out.is_leaf


@pytest.mark.parametrize("op", ["add_", "transpose_"])
@pytest.mark.parametrize("requires_grad", [True, False])
def test_normal_tensor_inplace_output_in_inference_mode(T, op, requires_grad):
    # TestAutogradInferenceMode.test_normal_tensor_inplace_output_in_inference_mode
    fn = {"add_": lambda x: x.add_(2), "transpose_": lambda x: x.transpose_(0, 1)}[op]
    a = T.ones(1, 2, 3, requires_grad=requires_grad).clone()
    with T.inference_mode():
        for _ in range(2):     # inplace, then inplace again
            fn(a)
            assert not a.is_inference() and a.requires_grad == requires_grad
        v = a.view(-1)         # inplace -> inplace -> view
        assert not v.is_inference() and v.requires_grad == requires_grad


@pytest.mark.parametrize("requires_grad", [True, False])
def test_normal_tensor_inplace_output_in_normal_mode(T, requires_grad):
    # TestAutogradInferenceMode.test_normal_tensor_inplace_output_in_normal_mode
    a = T.ones(1, 2, 3, requires_grad=requires_grad).clone()
    with T.inference_mode():
        a.add_(2)
        assert not a.is_inference() and a.requires_grad == requires_grad
    a.add_(2)
    a.add_(2)
    assert not a.is_inference() and a.requires_grad == requires_grad
    v = a.view(-1)
    assert not v.is_inference() and v.requires_grad == requires_grad
    assert a.tolist() == [[[7.0] * 3] * 2]


@pytest.mark.parametrize("requires_grad", [True, False])
def test_normal_tensor_view_output_in_inference_mode(T, requires_grad):
    # TestAutogradInferenceMode.test_normal_tensor_view_output_in_inference_mode
    a = T.ones(1, 2, 3, requires_grad=requires_grad).clone()
    with T.inference_mode():
        out = a.view(-1)
        assert not out.is_inference() and out.requires_grad == requires_grad and out._is_view()
        tmp = out.view(-1)     # view -> view
        assert not tmp.is_inference() and tmp.requires_grad == requires_grad
        assert tmp._is_view() and tmp.is_leaf
        tmp.add_(2)            # view -> view -> inplace
        assert not tmp.is_inference() and tmp.requires_grad == requires_grad
        assert a._version == tmp._version
    assert a.tolist() == [[[3.0] * 3] * 2]


@pytest.mark.parametrize("requires_grad", [True, False])
def test_normal_tensor_view_output_in_normal_mode(T, requires_grad):
    # TestAutogradInferenceMode.test_normal_tensor_view_output_in_normal_mode
    a = T.ones(1, 2, 3, requires_grad=requires_grad).clone()
    with T.inference_mode():
        out = a.view(-1)
        assert out._is_view() and out.is_leaf
    tmp = out * out
    assert not tmp.is_inference() and tmp.requires_grad == requires_grad
    if requires_grad:
        with pytest.raises(RuntimeError, match="A view was created in inference mode and is being modified inplace"):
            out.add_(2)
    else:
        out.add_(2)
    tmp = out.view(2, 3)
    assert not tmp.is_inference() and tmp.requires_grad == requires_grad


@pytest.mark.parametrize("requires_grad", [True, False])
def test_mix_inference_and_normal_tensor_functional_op(T, requires_grad):
    # TestAutogradInferenceMode.test_mix_inference_and_normal_tensor_functional_op
    s = T.ones(1, 2, 3, requires_grad=requires_grad)
    with T.inference_mode():
        c = T.ones(1, 2, 3, requires_grad=requires_grad)
    out = c.add(s)             # add saves nothing: allowed
    assert not out.is_inference() and out.requires_grad == requires_grad
    if requires_grad:
        out.backward(T.ones_like(out))   # an inference leaf requiring grad still gets a gradient
        assert c.grad.tolist() == [[[1.0] * 3] * 2]
        with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
            c * s
        # the original also expects stack to refuse; torch 2.13's StackBackward0 saves no
        # tensor, so stack (and cat) of an inference tensor is recorded
        for r in (T.stack([s, c]), T.cat([s, c])):
            assert r.requires_grad and not r.is_inference()


@pytest.mark.parametrize("requires_grad", [True, False])
def test_mix_inference_and_normal_tensor_inplace_op(T, requires_grad):
    # TestAutogradInferenceMode.test_mix_inference_and_normal_tensor_inplace_op (the out= half
    # is left out: tracegrad has no out= arguments)
    a = T.ones(1, 2, 3, requires_grad=requires_grad).clone()
    with T.inference_mode():
        c = T.ones(1, 2, 3)
    assert c.is_inference()
    if requires_grad:
        with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
            a.mul_(c)
    else:
        a.mul_(c)
        assert not a.is_inference()


@pytest.mark.parametrize("requires_grad", [True, False])
def test_mix_inference_and_normal_tensor_view_op(T, requires_grad):
    # TestAutogradInferenceMode.test_mix_inference_and_normal_tensor_view_op
    s = T.ones(1, 2, 3, requires_grad=requires_grad)
    with T.inference_mode():
        c = T.ones(1, 2, 3)
    tmp1 = c.view_as(s)
    assert tmp1.is_inference() and not tmp1.requires_grad
    tmp2 = s.view_as(c)
    assert not tmp2.is_inference() and tmp2.requires_grad == requires_grad


@pytest.mark.parametrize("op", ["add_", "transpose_"])
@pytest.mark.parametrize("requires_grad", [True, False])
def test_inference_mode_handle_direct_view_on_rebase(T, op, requires_grad, request):
    # TestAutogradInferenceMode.test_inference_mode_handle_direct_view_on_rebase
    fn = {"add_": lambda x: x.add_(2), "transpose_": lambda x: x.transpose_(0, 1)}[op]
    a = T.ones(1, 2, 3, requires_grad=requires_grad).clone()
    with T.inference_mode():
        view_out = a.view_as(a)
    if requires_grad:
        with pytest.raises(RuntimeError, match="A view was created in inference mode and is being modified inplace"):
            fn(view_out)
    else:
        fn(view_out)


@pytest.mark.parametrize("requires_grad", [True, False])
def test_inference_mode_handle_indirect_view_on_rebase(T, requires_grad):
    # TestAutogradInferenceMode.test_inference_mode_handle_indirect_view_on_rebase (add_ half)
    a = T.ones(1, 2, 3, requires_grad=requires_grad).clone()
    with T.inference_mode():
        view_out = a.view(-1)
    a.add_(2)
    if requires_grad:
        with pytest.raises(RuntimeError, match="A view was created in inference mode and its base or another view"):
            view_out.grad_fn
    else:
        assert view_out.grad_fn is None
    assert view_out.tolist() == [3.0] * 6


def test_requires_grad_on_inference_tensor_outside_mode(T, request):
    # TestAutogradInferenceMode.test_inference_mode_tensor_creation's requires_grad_ half, used
    # outside the mode: torch 2.13 refuses to make an inference tensor require grad there
    with T.inference_mode():
        c = T.ones(2)
        c.requires_grad_(False)     # allowed inside the mode
    with pytest.raises(RuntimeError, match="inference tensor outside InferenceMode"):
        c.requires_grad_()
    assert not c.requires_grad


def test_view_made_in_inference_mode_leads_nowhere(T):
    # TestAutogradInferenceMode.test_normal_tensor_view_output_in_normal_mode, backward half:
    # the view requires grad but has no grad_fn; an op using it records an edge to nowhere
    a0 = T.ones(2, 3, requires_grad=True)
    a = a0 * 1
    with T.inference_mode():
        v = a.view(-1)
    y = (v * 2).sum() + a.sum()
    y.backward()
    assert v.grad is None
    assert a0.grad.tolist() == [[1.0] * 3] * 2
