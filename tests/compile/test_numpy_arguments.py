"""NumPy array arguments of a compiled function (NOTE [numpy arguments] in
tracegrad/_lowering/numpy_args.py): an array the function only converts with tracegrad
(``from_numpy``, ``as_tensor``, ``tensor``) is a program input keyed by shape and dtype, so new
batches reuse one program, as ``torch.compile`` takes such arrays in as tensors; an array the
function reads by value (numpy ops, Python reads, kept past the call) falls back to being a
constant of its program keyed by its bytes. Either way compiled equals eager."""
import warnings

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _batches(n=5, shape=(6, 4), seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape).astype(dtype), rng.integers(0, 3, shape[0]))
            for _ in range(n)]


def _train(T, compiled, convert, n=5):
    """A classifier trained on NumPy batches converted inside the step by ``convert``."""
    model = T.nn.Sequential(T.nn.Linear(4, 8), T.nn.Tanh(), T.nn.Linear(8, 3))
    with T.no_grad():       # the same initial weights in torch and tracegrad
        for k, p in enumerate(model.parameters()):
            p.copy_(T.tensor(np.random.default_rng(k).uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
    opt = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x, y):
        xt, yt = convert(T, x, y)
        loss = T.nn.functional.cross_entropy(model(xt), yt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

    f = T.compile(step) if compiled else step
    losses = [float(f(x, y)) for x, y in _batches(n)]
    return losses, [p.detach().numpy().copy() for p in model.parameters()], f


_CONVERSIONS = {
    "from_numpy": lambda T, x, y: (T.from_numpy(x), T.from_numpy(y)),
    "as_tensor": lambda T, x, y: (T.as_tensor(x), T.as_tensor(y, dtype=T.long)),
    "tensor": lambda T, x, y: (T.tensor(x, dtype=T.float32), T.tensor(y)),
    "asarray": lambda T, x, y: (T.asarray(x), T.asarray(y)),
    "converted": lambda T, x, y: (T.as_tensor(x, dtype=T.float64).float(), T.from_numpy(y).long()),
}


@pytest.mark.parametrize("how", sorted(_CONVERSIONS))
def test_new_batches_one_program(how):
    convert = _CONVERSIONS[how]
    ref_losses, ref_params, _ = _train(torch, False, convert)
    eager_losses, eager_params, _ = _train(tracegrad, False, convert)
    losses, params, f = _train(tracegrad, True, convert)
    np.testing.assert_allclose(eager_losses, ref_losses, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5, atol=1e-6)
    for a, b, c in zip(params, eager_params, ref_params):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b, c, rtol=1e-5, atol=1e-6)
    # the first call eager, one trace for the four new batches after it
    assert f.stats["traces"] == 1 and f.stats["eager_calls"] == 1, f.stats


def _calls(fn, arrays, **options):
    """``fn`` run eagerly and compiled on each of ``arrays`` (each a tuple of arguments; eager
    gets copies, so a write to them by either is seen); the results and the compiled stats."""
    f = tracegrad.compile(fn, **options)
    pairs = []
    for args in arrays:
        eager = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        pairs.append((eager, f(*args)))
    return pairs, f.stats


def _close(pairs):
    for eager, comp in pairs:
        for e, c in zip(eager if isinstance(eager, tuple) else (eager,), comp if isinstance(comp, tuple) else (comp,)):
            np.testing.assert_allclose(np.asarray(c), np.asarray(e), rtol=1e-6)


_READS = {
    "np.mean": lambda x: float(np.mean(x)),
    "method": lambda x: float(x.max()),
    "operator": lambda x: float((x * 2)[0]),
    "np.asarray": lambda x: float(np.asarray(x)[0]),
    "index": lambda x: float(x[1]),
    "iterate": lambda x: sum(float(v) for v in x),
    "tolist": lambda x: x.tolist()[0],
    "bool": lambda x: float(bool((x > 0).any())),
    "format": lambda x: float(len(str(x)) > 0),
    "copy": lambda x: float(x.copy()[0]),
}


@pytest.mark.parametrize("read", sorted(_READS))
def test_value_reads_are_constants_of_their_program(read):
    get = _READS[read]

    def fn(x):
        return tracegrad.from_numpy(x) * get(x)

    rng = np.random.default_rng(1)
    arrays = [(rng.standard_normal(3),) for _ in range(4)]
    pairs, stats = _calls(fn, arrays + arrays[1:2])
    _close(pairs)
    # keyed by the arrays' bytes: each new one traces (the last call repeats one: reused)
    assert stats["traces"] == 3 and stats["eager_calls"] == 1, stats


def test_read_caught_by_the_function_still_bakes():
    def fn(x):
        try:
            s = float(x.sum())
        except Exception:     # noqa: BLE001 -- the stand-in's exception must not hide the read
            s = 0.0
        return tracegrad.from_numpy(x) + s

    rng = np.random.default_rng(2)
    pairs, stats = _calls(fn, [(rng.standard_normal(3),) for _ in range(4)])
    _close(pairs)
    assert stats["traces"] == 3, stats


def test_only_the_read_argument_is_baked():
    def fn(x, w):
        return tracegrad.as_tensor(x).sum() * float(w.mean())

    rng = np.random.default_rng(3)
    w = rng.standard_normal(2)
    pairs, stats = _calls(fn, [(rng.standard_normal(4), w) for _ in range(5)])
    _close(pairs)
    assert stats["traces"] == 1, stats     # one w: new x arrays are inputs


def test_returned_and_stored_arrays_are_the_callers():
    class Holder:
        pass
    h = Holder()

    def returns(x):
        return tracegrad.from_numpy(x) * 2, x

    def stores(x):
        h.last = x
        return tracegrad.as_tensor(x) + 1

    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(3) for _ in range(4)]
    f, g = tracegrad.compile(returns), tracegrad.compile(stores)
    for a in arrays:
        t, same = f(a)
        assert same is a
        np.testing.assert_allclose(t.numpy(), 2 * a)
        np.testing.assert_allclose(g(a).numpy(), a + 1)
        assert h.last is a


def test_write_through_from_numpy_reaches_the_callers_array():
    def fn(x):
        t = tracegrad.from_numpy(x)
        t.mul_(2)
        return t.sum()

    rng = np.random.default_rng(5)
    f = tracegrad.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            a = rng.standard_normal(3)
            b = a.copy()
            s = f(b)
            np.testing.assert_allclose(b, 2 * a)
            np.testing.assert_allclose(float(s), 2 * a.sum(), rtol=1e-6)


@pytest.mark.parametrize("copy", [tracegrad.tensor, lambda x: tracegrad.asarray(x, copy=True)],
                         ids=["tensor", "asarray_copy"])
def test_a_copy_written_in_place_keeps_the_array(copy):
    def fn(x):
        t = copy(x)
        t.mul_(3)          # a copy eagerly: no write reaches the caller's array, no break
        return t

    rng = np.random.default_rng(6)
    arrays = [(rng.standard_normal(3),) for _ in range(4)]
    originals = [a.copy() for a, in arrays]
    pairs, stats = _calls(fn, arrays)
    _close(pairs)
    for (a,), o in zip(arrays, originals):
        np.testing.assert_array_equal(a, o)
    assert stats["traces"] == 1 and not stats["graph_breaks"], stats


def test_identity_isinstance_and_metadata():
    def fn(x, y):
        if not isinstance(x, np.ndarray):
            raise TypeError("not an array")
        n = x.shape[0] + len(y) + x.ndim + x.size + x.itemsize
        same = x is y
        return tracegrad.from_numpy(x) * n + (1.0 if same else -1.0), str(x.dtype)

    def reads(x, y):        # arrays read by value: constants, compared by identity all the same
        return tracegrad.from_numpy(x) * float(x.sum()) + (1.0 if x is y else -1.0), ""

    rng = np.random.default_rng(7)
    a, b = rng.standard_normal(3), rng.standard_normal(3)
    for g in (fn, reads):
        f = tracegrad.compile(g)
        for x, y in [(a, a), (a, b), (b, b), (rng.standard_normal(3), a), (a, a.copy()), (a, a)]:
            t, name = f(x, y)
            e, ename = g(x, y)
            np.testing.assert_allclose(t.numpy(), e.numpy())
            assert name == ename


def test_strided_and_fortran_arrays_are_inputs_keyed_by_strides():
    def fn(x):      # the strides read in Python: keyed by them
        return tracegrad.from_numpy(x).sum(0) * (1.0 if x.flags.c_contiguous else 2.0) + x.strides[-1]

    rng = np.random.default_rng(15)
    f = tracegrad.compile(fn)
    for make in [lambda a: a, np.asfortranarray, lambda a: a[:, ::2].copy(), lambda a: a[:, ::2]] * 2:
        for _ in range(2):
            a = make(rng.standard_normal((3, 4)))
            np.testing.assert_allclose(f(a).numpy(), fn(a).numpy(), rtol=1e-6)
    # one program per shape and layout (the first call eager): (3, 4) C and Fortran, (3, 2) C
    # (a copied slice) and strided, each reused for its second array and second round
    assert f.stats["traces"] == 4, f.stats


@pytest.mark.parametrize("make", ["read_only", "object"])
def test_arrays_not_taken_in_keep_eager_values(make):
    rng = np.random.default_rng(8)

    def array():
        a = rng.standard_normal((3, 4))
        if make == "read_only":
            a.flags.writeable = False
            return a
        return np.array([1.5, 2.5], dtype=object)

    def fn(x):
        return tracegrad.tensor(np.asarray(x, dtype=np.float64)).sum(0) if make == "object" else \
            tracegrad.tensor(x).sum(0)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs, stats = _calls(fn, [(array(),) for _ in range(3)])
    _close(pairs)


def test_array_over_a_parameters_memory():
    # a parameter's numpy() view passed in: the step writes the parameter, then reads the
    # array, which eagerly sees the write
    def run(compiled):
        tracegrad.manual_seed(0)
        m = tracegrad.nn.Linear(2, 2, bias=False)
        opt = tracegrad.optim.SGD(m.parameters(), lr=0.1)
        w = m.weight.detach().numpy()

        def step(x):
            opt.zero_grad()
            m(tracegrad.ones(1, 2)).sum().backward()
            opt.step()
            return tracegrad.from_numpy(x).sum()

        f = tracegrad.compile(step) if compiled else step
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [float(f(w)) for _ in range(4)]

    np.testing.assert_allclose(run(True), run(False), rtol=1e-6)


def test_batches_in_containers_and_keywords():
    def fn(batch, *, scale):
        return (tracegrad.from_numpy(batch["x"]) * scale).sum() + tracegrad.as_tensor(batch["pair"][1]).sum()

    rng = np.random.default_rng(9)
    f = tracegrad.compile(fn)
    for _ in range(4):
        b = {"x": rng.standard_normal(4), "pair": (0, rng.integers(0, 9, 3))}
        np.testing.assert_allclose(float(f(b, scale=2.0)), float(fn(b, scale=2.0)), rtol=1e-6)
    assert f.stats["traces"] == 1, f.stats


def test_gradient_through_a_tensor_made_from_an_argument():
    def fn(x):
        t = tracegrad.tensor(x, requires_grad=True)
        (t ** 3).sum().backward()
        return t.grad

    rng = np.random.default_rng(10)
    arrays = [(rng.standard_normal(3),) for _ in range(4)]
    pairs, stats = _calls(fn, arrays)
    _close(pairs)
    for (a,), (_, g) in zip(arrays, pairs):
        np.testing.assert_allclose(g.numpy(), 3 * a ** 2, rtol=1e-6)
    assert stats["traces"] == 1, stats


def test_fullgraph_with_a_value_read():
    def fn(x):
        return tracegrad.from_numpy(x) - float(x.mean())

    rng = np.random.default_rng(11)
    pairs, stats = _calls(fn, [(rng.standard_normal(3),) for _ in range(3)], fullgraph=True)
    _close(pairs)


def test_type_checks_take_eagers_branch():
    # ``type(x) is np.ndarray`` is the one question the stand-in cannot answer as the array
    def own_code(x):
        if type(x) is np.ndarray:
            return tracegrad.from_numpy(x) * 2
        return tracegrad.as_tensor(x, dtype=tracegrad.float32)

    def unconverted_branch(x):
        return tracegrad.from_numpy(x) if type(x) == np.ndarray else tracegrad.zeros(3)

    def helper(x):
        return type(x) is np.ndarray

    def through_helper(x):
        return tracegrad.from_numpy(x) + (1.0 if helper(x) else 5.0) if helper(x) else tracegrad.zeros(3)

    rng = np.random.default_rng(12)
    for fn in (own_code, unconverted_branch, through_helper):
        pairs, _ = _calls(fn, [(rng.standard_normal(3),) for _ in range(3)])
        _close(pairs)
        for e, c in pairs:
            assert e.dtype == c.dtype


def test_unused_array_argument():
    def fn(x, unused):
        return tracegrad.from_numpy(x) * 3

    rng = np.random.default_rng(13)
    pairs, stats = _calls(fn, [(rng.standard_normal(3), rng.standard_normal(2)) for _ in range(4)])
    _close(pairs)


def test_calls_a_stand_in_cannot_take_run_on_the_arrays():
    # C code that checks for an ndarray's buffer refuses the stand-in: the call is traced again
    # with the arrays themselves (constants), with eager's values and no eager fallback
    cases = (lambda x: tracegrad.from_numpy(x) + len(memoryview(x).tobytes()),
             lambda x: tracegrad.from_numpy(np.frombuffer(x, dtype=x.dtype).copy()),
             lambda x: tracegrad.from_numpy(np.ndarray.copy(x)))
    rng = np.random.default_rng(14)
    for fn in cases:
        pairs, stats = _calls(fn, [(rng.standard_normal(3),) for _ in range(3)])
        _close(pairs)
        assert stats["eager_calls"] == 1 and stats["traces"] == 2, stats


def test_a_function_that_raises_raises_as_eagerly():
    def fn(x):
        t = tracegrad.from_numpy(x)
        if x.shape[0] > 2:
            raise ValueError("too long")
        return t

    f = tracegrad.compile(fn)
    f(np.ones(2))
    f(np.ones(2) * 2)
    with pytest.raises(ValueError, match="too long"):
        f(np.ones(3))
    with pytest.raises(ValueError, match="too long"):
        f(np.ones(3))
    traces = f.stats["traces"]
    for k in range(3, 6):      # new arrays of the shape that does not raise: still inputs
        np.testing.assert_array_equal(f(np.full(2, float(k))).numpy(), np.full(2, float(k)))
    assert f.stats["traces"] == traces, f.stats
