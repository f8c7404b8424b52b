"""Compiled against eager over ops found by the OpInfo sweep (``sweep_opdb.py``).

The sweep's one class of silent differences: an eager op raises on bad values (an index or a
class target out of range, probabilities outside [0, 1], a matrix that is not positive
definite), read on the host; a compiled program had no values to read and did what XLA does
(clamped the index, returned NaN) without a word. Now the program reports the failed check
and the call runs eagerly, raising eager's error after eager's side effects (NOTE [value checks
at run time] in ``tracegrad/_lowering/capture.py``). Each case runs valid calls with changing
values, a bad one, then a valid one again (on the same program). A small representative set of
OpInfo ops runs through the sweep's own checks (forward, backward inside, in-place, ``out=``).
"""
import warnings

import numpy as np
import pytest

import tracegrad as tg

from ._harness import np_init

F = tg.nn.functional
X = np.random.RandomState(0).randn(4, 3).astype("float32")


def _x(k):
    return tg.tensor(X * (1 + 0.1 * k))


def _ids(k, bad, good, wrong):
    """An int64 index tensor: ``good`` values rolled by ``k`` (valid), or with ``wrong`` last."""
    vals = list(np.roll(good, k)) if not bad else list(good[:-1]) + [wrong]
    return tg.tensor(vals)


# name -> (f, args(k, bad)): call k's arguments, valid or with one bad value
CASES = {
    "index_select": (lambda x, i: x.index_select(0, i), lambda k, bad: (_x(k), _ids(k, bad, [0, 3], 9))),
    "gather": (lambda x, i: x.gather(0, i), lambda k, bad: (_x(k), _ids(k, bad, [0, 1, 2], 7).reshape(1, 3))),
    "embedding": (lambda w, i: F.embedding(i, w), lambda k, bad: (_x(k), _ids(k, bad, [0, 2], 11))),
    "cross_entropy": (lambda x, t: F.cross_entropy(x, t), lambda k, bad: (_x(k), _ids(k, bad, [0, 1, 2, 1], 5))),
    "nll_loss_negative": (lambda x, t: F.nll_loss(x, t), lambda k, bad: (_x(k), _ids(k, bad, [0, 1, 2, 1], -3))),
    "binary_cross_entropy": (lambda p, t: F.binary_cross_entropy(p, t),
                             lambda k, bad: (tg.full((3,), 1.5 if bad else 0.2 + 0.1 * k), tg.full((3,), 0.5))),
    "getitem": (lambda x, i: x[i], lambda k, bad: (_x(k), _ids(k, bad, [0, 1], 8))),
    "index_fill_": (lambda x, i: x.clone().index_fill_(0, i, 1.0), lambda k, bad: (_x(k), _ids(k, bad, [0, 1], 8))),
    "scatter_": (lambda x, i: x.clone().scatter_(0, i, 1.0),
                 lambda k, bad: (_x(k), _ids(k, bad, [0, 1, 2], 8).reshape(1, 3))),
    "take": (lambda x, i: tg.take(x, i), lambda k, bad: (_x(k), _ids(k, bad, [0, 5], 80))),
    "index_add": (lambda x, i: x.index_add(0, i, tg.ones(2, 3)), lambda k, bad: (_x(k), _ids(k, bad, [0, 1], 8))),
    "index_put_": (lambda x, i: x.clone().index_put_((i,), tg.tensor(1.0)),
                   lambda k, bad: (_x(k), _ids(k, bad, [0, 1], 8))),
    "one_hot": (lambda i: F.one_hot(i, 4), lambda k, bad: (_ids(k, bad, [0, 3], 7),)),
    "multinomial": (lambda p: tg.multinomial(p, 1),
                    lambda k, bad: (tg.tensor([0.5, -1.0 if bad else 0.5 + 0.1 * k]),)),
    "bernoulli": (lambda p: tg.bernoulli(p), lambda k, bad: (tg.tensor([0.5, 2.0 if bad else 0.1 * k]),)),
    "poisson": (lambda r: tg.poisson(r), lambda k, bad: (tg.tensor([1.0, -1.0 if bad else 2.0 + k]),)),
    "normal_std": (lambda s: tg.normal(tg.zeros(2), s), lambda k, bad: (tg.tensor([1.0, -1.0 if bad else 1.0 + k]),)),
    "cholesky": (lambda a: tg.linalg.cholesky(a), lambda k, bad: (tg.eye(2) * (-1.0 if bad else 1.0 + k),)),
    "embedding_bag": (lambda w, i: F.embedding_bag(i, w, tg.tensor([0])),
                      lambda k, bad: (_x(k), _ids(k, bad, [0, 2], 11))),
    "multi_margin_loss": (lambda x, t: F.multi_margin_loss(x, t),
                          lambda k, bad: (_x(k), _ids(k, bad, [0, 1, 2, 1], 5))),
}
RANDOM = ("multinomial", "bernoulli", "poisson", "normal_std")


def _outcome(f, args):
    try:
        return "ok", f(*args)
    except Exception as e:   # noqa: BLE001 -- the error itself is compared
        return type(e), str(e)


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_check_raises_as_eager(name):
    f, make = CASES[name]
    cf = tg.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k, bad in enumerate((False, False, False, True, False)):
            tg.manual_seed(k)
            want = _outcome(f, make(k, bad))
            tg.manual_seed(k)
            got = _outcome(cf, make(k, bad))
            assert got[0] == want[0], f"call {k}: compiled {got}, eager {want}"
            if want[0] != "ok":
                assert got[1] == want[1]
            elif name not in RANDOM:
                np.testing.assert_allclose(got[1].detach().numpy(), want[1].detach().numpy(), rtol=1e-5, atol=1e-6)
            else:
                assert got[1].shape == want[1].shape and got[1].dtype == want[1].dtype
    assert want[0] == "ok"
    assert cf.stats["traces"] == 1, cf.stats       # the bad call kept the program
    assert any("value check failed" in r for r, _ in cf.stats["graph_breaks"])


def test_training_step_with_a_bad_target_leaves_eager_state():
    """A compiled SGD step whose batch has a class target out of range: IndexError as eagerly,
    after eager's side effects (``zero_grad``) and without the optimizer step; the next good
    batch runs the same program."""
    runs = []
    for compiled in (False, True):
        tg.manual_seed(0)
        model = np_init(tg.nn.Sequential(tg.nn.Linear(3, 5), tg.nn.ReLU(), tg.nn.Linear(5, 4)), tg)
        opt = tg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, t):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), t)
            loss.backward()
            opt.step()
            return loss
        f = tg.compile(step) if compiled else step
        snaps = []
        for k, bad in enumerate((False, False, False, True, False)):
            t = _ids(k, bad, [0, 1, 2, 3], 4)
            if bad:
                with pytest.raises(IndexError, match="Target 4 is out of bounds"):
                    f(_x(k), t)
                loss = None
            else:
                loss = f(_x(k), t).item()
            snaps.append((loss, [p.detach().numpy().copy() for p in model.parameters()],
                          [None if p.grad is None else p.grad.numpy().copy() for p in model.parameters()],
                          [v["momentum_buffer"].numpy().copy() for v in opt.state.values()]))
        runs.append((snaps, f))
    (eager, _), (comp, cf) = runs
    for k, (e, c) in enumerate(zip(eager, comp)):
        assert (e[0] is None) == (c[0] is None) and (e[0] is None or np.isclose(e[0], c[0], rtol=1e-5)), k
        for a, b in zip(e[1] + e[3], c[1] + c[3]):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=f"call {k}")
        assert [g is None for g in e[2]] == [g is None for g in c[2]], f"call {k}: .grad None-ness"
    # the failed call's zero_grad() left every .grad None, as eagerly: one more program for that
    assert cf.stats["traces"] == 2


def _regions(f):
    return [r for v in f._cache.values() if isinstance(v, list) for r in v]


@pytest.mark.parametrize("loss", ["cross_entropy", "bce_of_output"])
def test_checked_step_keeps_eager_state_and_donates_when_the_check_is_cheap(loss):
    """A target's range check runs as its own small program before the step, which stays
    donated; a check on the model's output (BCE's input in [0, 1]) needs the forward: the step
    reports it and donates nothing. Both give eager's values, error and state."""
    runs = []
    for compiled in (False, True):
        tg.manual_seed(0)
        model = np_init(tg.nn.Sequential(tg.nn.Linear(3, 5), tg.nn.Tanh(), tg.nn.Linear(5, 4)), tg)
        opt = tg.optim.Adam(model.parameters(), lr=0.1)

        def step(x, t, s):
            opt.zero_grad(set_to_none=False)
            out = model(x)
            if loss == "cross_entropy":
                value = F.cross_entropy(out, t)
            else:
                value = F.binary_cross_entropy(out.sigmoid() * s, t.float().unsqueeze(1).expand(4, 4) / 4)
            value.backward()
            opt.step()
            return value
        f = tg.compile(step) if compiled else step
        seen = []
        for k, bad in enumerate((False, False, False, True, False)):
            t = _ids(k, bad and loss == "cross_entropy", [0, 1, 2, 3], 4)
            s = tg.tensor(2.0 if bad else 1.0)
            try:
                seen.append(f(_x(k), t, s).item())
            except (IndexError, RuntimeError) as e:
                seen.append(type(e).__name__)
            seen.append([p.detach().numpy().copy() for p in model.parameters()])
        runs.append((seen, f))
    (eager, _), (comp, cf) = runs
    assert [type(v) for v in eager] == [type(v) for v in comp]
    assert eager[6] == comp[6] and isinstance(eager[6], str)
    for e, c in zip(eager, comp):
        if isinstance(e, list):
            for a, b in zip(e, c):
                np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
        elif not isinstance(e, str):
            assert np.isclose(e, c, rtol=1e-5)
    (region,) = _regions(cf)
    if loss == "cross_entropy":
        assert region.precheck is not None and not region.checked and region.program.donate
    else:
        assert region.precheck is None and region.checked and region.program.donate == ()


def test_check_inside_a_vmap_in_a_compiled_function():
    """A check on values of a nested transform's tracer is reported like any other."""
    f = lambda x, i: tg.func.vmap(lambda r: r.index_select(0, i))(x)   # noqa: E731
    cf = tg.compile(f)
    for k in range(3):
        assert cf(_x(k), tg.tensor([0, 2])).shape == (4, 2)
    with pytest.raises(IndexError, match="index_select"):
        cf(_x(3), tg.tensor([0, 9]))


def test_randint_zero_dim_compiled():
    """``randint(10, ())`` inside a compiled function: the host draw of a 0-d int64 came back
    1-d, the program failed after donating the generator's key, and every later random op of
    the process raised (the key's buffer was deleted)."""
    cf = tg.compile(lambda: tg.randint(10, ()))
    tg.manual_seed(0)
    got = [cf() for _ in range(4)]
    assert all(g.shape == () and g.dtype == tg.int64 for g in got)
    tg.manual_seed(0)
    want = [tg.randint(10, ()) for _ in range(4)]
    assert [int(g) for g in got] == [int(w) for w in want]
    assert cf.stats["traces"] == 1 and not cf.stats["graph_breaks"]
    tg.rand(2)    # the generator still works


@pytest.mark.parametrize("loss", ["hinge_embedding_loss", "cosine_embedding_loss"])
def test_input_without_gradient_path_keeps_grad_none(loss):
    """A compiled forward differentiated outside: an input that requires grad but that no
    differentiable result depends on (these losses' target) keeps ``.grad`` None, as eagerly
    (JAX's VJP gave it zeros); the other inputs' gradients equal eager's."""
    f = getattr(F, loss)
    cf = tg.compile(lambda *a: f(*a))
    for k in range(3):
        res = []
        for fn in (f, cf):
            xs = [tg.tensor(X[:, :2] * (1 + 0.1 * k), requires_grad=True)]
            if loss == "cosine_embedding_loss":
                xs.append(tg.tensor(X[:, 1:] * (1 - 0.1 * k), requires_grad=True))
            else:
                xs[0] = tg.tensor(X[:, 0] * (1 + 0.1 * k), requires_grad=True)
            t = tg.tensor([1.0, -1.0, 1.0, -1.0], requires_grad=True)
            fn(*xs, t).backward()
            res.append([None if a.grad is None else a.grad.numpy() for a in (*xs, t)])
        (e, c) = res
        assert [g is None for g in c] == [g is None for g in e], f"call {k}"
        for a, b in zip(e, c):
            if a is not None:
                np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert cf.stats["traces"] == 1


def test_unused_parameter_of_a_compiled_forward_keeps_grad_none():
    """A parameter used only through a comparison (no gradient path) keeps ``.grad`` None after
    backward through a compiled forward, as eagerly; the used one gets its gradient."""
    tg.manual_seed(0)
    used, unused = tg.nn.Linear(2, 2), tg.nn.Linear(2, 2)
    cf = tg.compile(lambda x: used(x).sum() + (unused(x) > 0).float().sum())
    for k in range(3):
        used.weight.grad = None
        cf(tg.ones(2) * (k + 1)).backward()
        assert used.weight.grad is not None and unused.weight.grad is None and unused.bias.grad is None


# ---- a representative set of the sweep itself -------------------------------------------------

SWEEP_OPS = ["add", "index_select", "take", "nn.functional.one_hot", "nn.functional.cross_entropy", "scatter_add",
             "clamp", "bernoulli", "randint", "nn.functional.hinge_embedding_loss"]


def _sweep_params():
    try:   # the OpInfo database is torch's (its module imports expecttest)
        import expecttest  # noqa: F401
        from . import sweep_opdb
    except ImportError:
        return []
    out = []
    for op, fn in sweep_opdb.op_table(set(SWEEP_OPS)):
        for mode in sweep_opdb.modes_of(op):
            out.append(pytest.param(op, fn, mode, id=f"{sweep_opdb.op_id(op)}-{mode}"))
    return out


@pytest.mark.parametrize("op,fn,mode", _sweep_params())
def test_sweep_case(op, fn, mode):
    from . import sweep_opdb
    case = next(sweep_opdb.samples(op, 1), None)
    if case is None:
        pytest.skip("no sample that carries over")
    outcome, detail = sweep_opdb.check_op(op, fn, mode, case)
    assert outcome in ("equal", "break", "eager_error"), f"{outcome}: {detail}"


def test_target_checked_again_after_an_in_place_write():
    """The checks of a target passed again as the same tensor are skipped (its array is the one
    that passed: ``Precheck``); a write into it in place gives it a new array, checked again:
    IndexError as eagerly, and the good values run the program again."""
    model = np_init(tg.nn.Linear(3, 4), tg)
    x, t = _x(0), tg.tensor([0, 1, 2, 3])

    @tg.compile
    def loss_of(x, t):
        return F.cross_entropy(model(x), t)
    want = F.cross_entropy(model(x), t).item()
    for _ in range(3):
        assert np.isclose(loss_of(x, t).item(), want, rtol=1e-6)
    t[1] = 4
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        loss_of(x, t)
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        loss_of(x, t)
    t[1] = 1
    assert np.isclose(loss_of(x, t).item(), want, rtol=1e-6)
    region, = _regions(loss_of)
    assert region.precheck is not None and loss_of.stats["traces"] == 1, loss_of.stats
