"""Ported from PyTorch's test/nn/test_lazy_modules.py (TestLazyModules), round 20: what a lazy
module's placeholders (``UninitializedParameter`` / ``UninitializedBuffer``) allow before the
first forward -- attribute reads and the few conversions torch lists, every other function
refused with ValueError (test_invalid_functions, here over many entry points: counting a lazy
model's parameters with ``numel()`` is the common one) -- and the module-level behaviours
around initialisation: dtype moves before the first forward, deepcopy / pickle, partial
``load_state_dict``, optimizers built before initialisation (Adagrad / Rprop refuse the
placeholder), grouped and unbatched convolutions, BatchNorm without running stats. The first
round is in test_nn_files_ported.py. Each program runs under torch 2.13 (the oracle) and
tracegrad (``same_outcome``: equal values, or the same builtin exception class)."""
import copy
import pickle

import pytest

from parity import same_outcome

torch = pytest.importorskip("torch")


def _init(T, m, *shape):
    T.manual_seed(0)
    m(T.ones(*shape))
    return m


def test_placeholder_refuses_functions():
    # TestLazyModules.test_invalid_functions, over the methods, functions and operators a program
    # reaches for first; attribute reads and the listed conversions stay allowed
    refused = {
        "numel": lambda p: p.numel(), "nelement": lambda p: p.nelement(), "dim": lambda p: p.dim(),
        "len": lambda p: len(p), "tolist": lambda p: p.tolist(), "index": lambda p: p[0],
        "add": lambda p: p + 1, "torch.add": lambda p: _lib(p).add(p, p),
        "sum": lambda p: p.sum(), "detach": lambda p: p.detach(), "clone": lambda p: p.clone(),
        "mul_": lambda p: p.mul_(2), "zero_": lambda p: p.zero_(), "empty_like": lambda p: _lib(p).empty_like(p),
        "linear": lambda p: _lib(p).nn.functional.linear(_lib(p).ones(2), p),
    }

    def prog(T):
        out = []
        for make in (lambda: T.nn.LazyLinear(3).weight, lambda: T.nn.LazyBatchNorm1d().running_mean):
            for name, fn in refused.items():
                try:
                    fn(make())
                    out.append((name, "no error"))
                except ValueError as e:
                    out.append((name, "uninitialized parameter" in str(e)))
            p = make()
            out.append([p.dtype, p.requires_grad, p.is_leaf, p.grad, p.ndim, p.size(), p.is_floating_point(),
                        p.is_complex(), repr(p), type(p.float()).__name__, type(p.to(T.float64)).__name__])
        return out

    got = same_outcome(prog)
    assert all(r[1] is True for r in got[0:15] + got[16:31]), got


def _lib(t):
    return torch if type(t).__module__.startswith("torch") else __import__("tracegrad")


def test_materialize_and_module_moves():
    # test_materialize_dtype / test_materialize_device / test_lazy_linear_pickle /
    # test_chained_initialization-style checks: placeholders follow module.double() / .to(),
    # materialize(shape or int, dtype=), deepcopy and pickle before and after the first forward
    def prog(T):
        P = T.nn.parameter
        p = P.UninitializedParameter()
        p.materialize((2, 3))
        q = P.UninitializedParameter(requires_grad=False)
        q.materialize(4, dtype=T.float64)
        b = P.UninitializedBuffer()
        b.materialize((2,))
        m = T.nn.LazyLinear(3).double()
        y = m(T.ones(2, 5, dtype=T.float64))
        n = T.nn.LazyLinear(3)
        n.to(T.float64)
        kinds = type(n.weight).__name__
        n(T.ones(2, 5, dtype=T.float64))
        dc = copy.deepcopy(T.nn.LazyLinear(3))
        dc_kinds = (type(dc).__name__, type(dc.weight).__name__, _init(T, dc, 1, 4).weight.shape)
        done = copy.deepcopy(_init(T, T.nn.LazyLinear(3), 1, 4))
        pk = pickle.loads(pickle.dumps(_init(T, T.nn.LazyLinear(3), 2, 5)))
        pk_lazy = pickle.loads(pickle.dumps(T.nn.LazyLinear(3)))
        return [type(p).__name__, p.shape, p.requires_grad, type(q).__name__, q.dtype, q.shape, q.requires_grad,
                type(b).__name__, b.shape, b.requires_grad, y.dtype, m.weight.dtype, kinds, n.weight.dtype,
                dc_kinds, type(done).__name__, done.weight.shape, type(pk).__name__, pk.in_features,
                type(pk_lazy).__name__, pk_lazy.has_uninitialized_params(), repr(T.nn.LazyLinear(3)),
                repr(_init(T, T.nn.LazyLinear(3), 2, 5))]
    same_outcome(prog)


def test_state_dict_and_optimizers_before_initialisation():
    # test_lazy_linear_state / test_optimizer_pass: a partial non-strict load leaves the other
    # placeholder; a strict load takes each shape as given (a bias of 4 for 3 outputs too); SGD with momentum built before the first forward
    # steps the materialized parameter; Adagrad and Rprop build state from the placeholder and
    # refuse it
    def prog(T):
        out = []
        m = T.nn.LazyLinear(3)
        out.append([(k, type(v).__name__) for k, v in m.state_dict().items()])
        res = m.load_state_dict({"weight": T.ones(3, 5)}, strict=False)
        out += [list(res.missing_keys), type(m.weight).__name__, type(m.bias).__name__, m.has_uninitialized_params()]
        try:
            T.nn.LazyLinear(3).load_state_dict({"weight": T.ones(3, 5), "bias": T.ones(4)})
            out.append("loaded")
        except RuntimeError as e:
            out.append("size mismatch" in str(e))
        m = T.nn.LazyLinear(3)
        opt = T.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        _init(T, m, 2, 5)
        m(T.ones(2, 5)).sum().backward()
        opt.step()
        out += [m.weight.shape, len(opt.state), opt.param_groups[0]["params"][0] is m.weight]
        for name in ("Adagrad", "Rprop"):
            try:
                getattr(T.optim, name)(T.nn.LazyLinear(3).parameters())
                out.append((name, "built"))
            except ValueError as e:
                out.append((name, "uninitialized parameter" in str(e)))
        return out
    got = same_outcome(prog)
    assert [list(r) for r in got[-2:]] == [["Adagrad", True], ["Rprop", "built"]] and got[5] == "loaded"


def test_initialisation_of_conv_norm_and_sequential():
    # test_lazy_conv*d with groups / unbatched input / transposed output_padding,
    # test_lazy_batchnorm*d without running stats and in eval mode, a Sequential of lazy layers
    # (parameter count after the first forward), hooks seeing the module's class at each call
    def prog(T):
        log = []
        lin = T.nn.LazyLinear(3)
        lin.register_forward_pre_hook(lambda mod, inp: log.append(("pre", type(mod).__name__)))
        lin.register_forward_hook(lambda mod, i, o: log.append(("post", type(mod).__name__)))
        _init(T, lin, 2, 5)
        g = _init(T, T.nn.LazyConv2d(6, 3, groups=2), 1, 4, 5, 5)
        try:
            _init(T, T.nn.LazyConv2d(6, 3, groups=4), 1, 6, 5, 5)
            bad = "built"
        except ValueError as e:
            bad = "divisible" in str(e)
        bn = T.nn.LazyBatchNorm1d(track_running_stats=False)
        _init(T, bn, 3, 4)
        ev = T.nn.LazyBatchNorm1d().eval()
        _init(T, ev, 3, 4)
        seq = T.nn.Sequential(T.nn.LazyLinear(4), T.nn.ReLU(), T.nn.LazyLinear(2))
        n_before = sum(1 for _ in seq.parameters())
        _init(T, seq, 2, 5)
        return [log, g.weight.shape, g.in_channels, bad, bn.running_mean, bn.weight.shape, ev.running_mean,
                ev.num_features, _init(T, T.nn.LazyConv1d(2, 3), 4, 7).weight.shape,
                _init(T, T.nn.LazyLinear(3), 5).weight.shape,
                _init(T, T.nn.LazyConvTranspose2d(3, 2, stride=2, output_padding=1), 1, 2, 3, 3).weight.shape,
                n_before, sum(p.numel() for p in seq.parameters()), [type(x).__name__ for x in seq]]
    got = same_outcome(prog)
    assert got[3] is True and got[-3] == 4 and got[-2] == 4 * 5 + 4 + 2 * 4 + 2
