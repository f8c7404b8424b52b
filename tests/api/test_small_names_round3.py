"""A third batch of torch's smaller public names, each against torch on the same program:
``torch.func.functionalize`` and ``replace_all_batch_norm_modules_``,
``nn.utils.convert_conv2d_weight_memory_format``/``convert_conv3d_...``, and
``torch.autograd``'s multithreading / view-replay switches."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _functionalize(m):
    def f(x):
        y = x.clone()
        y.add_(1)
        x.mul_(2)                   # a mutation of the input still reaches the caller
        return y.view(-1)[:2]
    x = m.ones(3)
    out = [m.func.functionalize(f)(x).tolist(), x.tolist(),
           m.func.functionalize(f, remove="mutations_and_views")(m.ones(3)).tolist(),
           m.func.vmap(m.func.functionalize(f))(m.ones(2, 3)).tolist(),
           m.func.functionalize(f).__name__]
    w = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out.append(m.func.grad(m.func.functionalize(lambda v: (v.clone().mul_(v)).sum()))(w).tolist())
    try:
        m.func.functionalize(f, remove="views")
    except Exception as e:  # noqa: BLE001 -- the class is compared
        out.append(type(e).__name__)
    return out


def test_functionalize_matches_torch():
    assert _functionalize(tracegrad) == _functionalize(torch)


def _no_running_stats(m):
    nn = m.nn
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Sequential(nn.BatchNorm1d(3)))
    root = m.func.replace_all_batch_norm_modules_(model)
    bn = model[1]
    r = np.random.RandomState(0)
    with m.no_grad():
        model[0].weight.copy_(m.tensor(r.randn(2, 1, 3, 3).astype(np.float32)))
        model[0].bias.copy_(m.tensor(r.randn(2).astype(np.float32)))
    x = m.tensor(r.randn(2, 1, 4, 4).astype(np.float32))
    y = model[:2](x)
    return [root is model, bn.running_mean, bn.running_var, bn.num_batches_tracked, bn.track_running_stats,
            sorted(model.state_dict()), model[2][0].track_running_stats,
            np.round(y.detach().numpy(), 4).tolist()]


def test_replace_all_batch_norm_modules_matches_torch():
    a, b = _no_running_stats(tracegrad), _no_running_stats(torch)
    assert a[:-1] == b[:-1]
    np.testing.assert_allclose(a[-1], b[-1], atol=1e-4)


def _memory_format(m):
    nn = m.nn
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Sequential(nn.ConvTranspose2d(4, 3, 2)), nn.Conv3d(2, 2, 1))
    before = [p for p in model.parameters()]
    w0 = model[0].weight.detach().clone()
    assert m.nn.utils.convert_conv2d_weight_memory_format(model, m.channels_last) is model
    assert m.nn.utils.convert_conv3d_weight_memory_format(model, m.channels_last_3d) is model
    return [all(p is q for p, q in zip(before, model.parameters())),
            model[0].weight.is_contiguous(memory_format=m.channels_last),
            model[2][0].weight.is_contiguous(memory_format=m.channels_last),
            model[3].weight.is_contiguous(memory_format=m.channels_last_3d),
            bool(m.equal(model[0].weight, w0)), model[0].weight.requires_grad]


def test_convert_conv_weight_memory_format_matches_torch():
    assert _memory_format(tracegrad) == _memory_format(torch)


def _autograd_switches(m):
    ag = m.autograd
    out = [ag.is_multithreading_enabled(), ag.is_view_replay_enabled()]
    with ag.set_multithreading_enabled(False):
        out.append(ag.is_multithreading_enabled())
    out.append(ag.is_multithreading_enabled())
    ag.set_multithreading_enabled(False)        # a call sets it at once, as set_grad_enabled
    out.append(ag.is_multithreading_enabled())
    ag.set_multithreading_enabled(True)
    with ag.grad_mode._force_original_view_tracking(True):
        out.append(ag.is_view_replay_enabled())
        x = m.ones(3, requires_grad=True)
        y = x.clone()[1:]
        y.mul_(2)
        y.sum().backward()
    out += [ag.is_view_replay_enabled(), x.grad.tolist()]

    @ag.set_multithreading_enabled(False)
    def inside():
        return ag.is_multithreading_enabled()
    out += [inside(), ag.is_multithreading_enabled()]
    return out


def test_autograd_multithreading_and_view_replay_switches_match_torch():
    assert _autograd_switches(tracegrad) == _autograd_switches(torch)
