"""NOTE [deferred item] (tracegrad/_lowering/deferred.py): ``tensor.item()`` inside a compiled
function whose number is only returned stays in the program (one trace, no graph break), and
each call returns that call's Python number, of eager's type. Any other use of the number in
Python, and a number kept outside the result, is a graph break: the call runs eagerly, as before.
"""
import dataclasses
import math
import types

import numpy as np
import pytest

import tracegrad
from tracegrad.compiler import GraphBreak

from ._harness import assert_same, check_compiled, data, labels, np_init, run_program


def _training_step(result):
    """A classifier step returning ``result(loss, logits, y)`` (numbers taken with item())."""
    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(4, 8), mod.nn.ReLU(), mod.nn.Linear(8, 3)), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            logits = model(x)
            loss = mod.nn.functional.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            return result(loss, logits, y)
        return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 6, 4), labels(mod, i, 6, 3))
    return make


@pytest.mark.parametrize("result", [
    lambda loss, logits, y: loss.item(),
    lambda loss, logits, y: (loss.item(), (logits.argmax(1) == y).sum().item()),
    lambda loss, logits, y: {"loss": loss.item(), "all_right": (logits.argmax(1) == y).all().item(),
                             "tensor": loss.detach()},
    lambda loss, logits, y: [loss.item(), loss.item() * 0 if False else loss.item()],
], ids=["loss", "tuple", "dict", "twice"])
def test_returned_item_stays_in_the_program(result):
    comp = check_compiled(_training_step(result), calls=3, torch_too=True)
    st = comp.step.stats
    assert st["traces"] == 1 and st["eager_calls"] == 1 and st["graph_breaks"] == []


ARITHMETIC = {
    # NOTE [deferred item]: Python arithmetic that cannot raise, applied after each run
    "divided by a number": lambda loss, logits, y: loss.item() / 3,
    "accuracy": lambda loss, logits, y: (logits.argmax(1) == y).sum().item() / len(y),
    "round": lambda loss, logits, y: {"loss": round(loss.item(), 4), "n": round((y > 0).sum().item(), -1)},
    "sum of items": lambda loss, logits, y: sum(v.item() for v in logits.sum(0)),
    "unary": lambda loss, logits, y: (-loss.item(), +loss.item(), abs(logits.min().item())),
    "floor div and mod": lambda loss, logits, y: (2 * loss.item() // 0.25, loss.item() % 0.5, (y + 7).sum().item() % 4),
    "two items": lambda loss, logits, y: (loss.item() + (y == 1).sum().item()) * 0.5 - 1,
    "bool and int": lambda loss, logits, y: ((logits > -1e9).all().item() + 1, (y == 1).any().item() * 2.5),
    "in place operators": lambda loss, logits, y: _accumulated(loss, logits),
}


def _accumulated(loss, logits):
    total = 0.0
    for v in logits.sum(1):
        total += v.item()
    total /= 2
    total *= loss.item()
    return total


@pytest.mark.parametrize("name", list(ARITHMETIC), ids=list(ARITHMETIC))
def test_arithmetic_on_returned_numbers_stays_in_the_program(name):
    comp = check_compiled(_training_step(ARITHMETIC[name]), calls=3, torch_too=True)
    st = comp.step.stats
    assert st["traces"] == 1 and st["eager_calls"] == 1 and st["graph_breaks"] == []


def test_arithmetic_gives_eager_numbers_and_types_bit_for_bit():
    lin = tracegrad.nn.Linear(3, 2)

    def f(x):
        y = lin(x)
        n = (y > 0).sum().item()
        return (y.sum().item() / 7, n + 1, y.sum().item() * 1j - 2, n / 2, (y > 0).any().item() + True, round(y.mean().item(), 2),
                y.max().item() // 0.5, -(y > 1e9).all().item(), [y[0, 0].item() * 3 - 1])
    g = tracegrad.compile(f)
    for i in range(4):
        x = tracegrad.full((2, 3), float(i) - 1.5)
        got, want = g(x), f(x)
        assert got == want and [type(v) for v in got] == [type(v) for v in want]
        assert type(got[-1][0]) is float
    assert g.stats["traces"] == 1 and not g.stats["graph_breaks"]


class _Args:
    chunk_len = 3


_ARGS = _Args()


def test_a_number_changed_between_calls_is_read_again():
    # spro/char-rnn's ``return loss.item() / args.chunk_len`` with the divisor changed between
    # calls: the divisor is the trace's number, guarded (a new program), never a stale one
    def f(x):
        return (x * 2).sum().item() / _ARGS.chunk_len
    g = tracegrad.compile(f)
    try:
        for i, n in enumerate((3, 3, 3, 5, 5, 2)):
            _ARGS.chunk_len = n
            x = tracegrad.full((2,), float(i))
            assert g(x) == f(x) == 4.0 * i / n
    finally:
        _ARGS.chunk_len = 3
    assert not g.stats["graph_breaks"] and g.stats["traces"] == 3


def test_arithmetic_result_appended_to_a_list_stays_in_the_program():
    # NOTE [Python appends]: each run appends its own number
    log = []

    def f(x):
        log.append((x * 2).sum().item() / 4)
        return x + 1
    g = tracegrad.compile(f)
    for i in range(3):
        g(tracegrad.full((2,), float(i)))
    assert log == [0.0, 1.0, 2.0] and all(type(v) is float for v in log)
    assert g.stats["traces"] == 1 and not g.stats["graph_breaks"]


class _Meter:
    def __init__(self):
        self.total, self.last = 0.0, None


@pytest.mark.parametrize("where", ["running total", "kept", "kept operand"])
def test_arithmetic_result_kept_outside_is_a_graph_break_and_equals_eager(where):
    meter, box = _Meter(), {}

    def f(x):
        v = (x * 2).sum().item()
        if where == "running total":
            meter.total += v / 2        # the old total is a number the program would freeze
        elif where == "kept":
            meter.last = v * 2
        else:
            box["v"] = v                # the item an operation read, kept on its own
        return v * 2
    g = tracegrad.compile(f)
    with pytest.warns(UserWarning, match="eagerly"):
        for i in range(3):
            assert g(tracegrad.full((2,), float(i))) == 8.0 * i
    assert g.stats["traces"] == 0
    assert (meter.total, meter.last, box.get("v")) == {"running total": (6.0, None, None), "kept": (0.0, 16.0, None),
                                                      "kept operand": (0.0, None, 8.0)}[where]


def test_item_of_a_result_that_requires_grad():
    # no backward in the step: the loss is a differentiable result of the region (its program
    # runs under jax.vjp) and its number is still only returned; backward after the call works
    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(4, 8), mod.nn.Tanh(), mod.nn.Linear(8, 3)), mod)

        def step(x, y):
            loss = mod.nn.functional.cross_entropy(model(x), y)
            return loss, loss.item()

        def call(x, y):
            f = wrapped(x, y)
            f[0].backward()
            return f
        wrapped = wrap(step)
        return call, {"model": model}, lambda i: (data(mod, i, 6, 4), labels(mod, i, 6, 3))
    made = []

    def wrap(f):
        made.append(tracegrad.compile(f))
        return made[-1]
    eager = run_program(make, tracegrad, lambda f: f, 3)
    comp = run_program(make, tracegrad, wrap, 3)
    for e, c in zip(eager.snaps, comp.snaps):
        assert_same(e, c)
    assert type(comp.snaps[-1]["out"][1]) is float
    assert made[0].stats["traces"] == 1 and not made[0].stats["graph_breaks"]


def test_returned_numbers_have_eager_types_and_values_each_call():
    lin = tracegrad.nn.Linear(3, 2)

    def f(x):
        y = lin(x)
        return y.sum().item(), y.argmax().item(), (y > 0).any().item(), (y.sum() > 1e9).item()
    g = tracegrad.compile(f)
    for i in range(4):
        x = tracegrad.full((2, 3), float(i))
        got, want = g(x), f(x)
        assert [type(v) for v in got] == [float, int, bool, bool]
        assert got[1:] == want[1:] and math.isclose(got[0], want[0], rel_tol=1e-6)
    assert g.stats["traces"] == 1 and not g.stats["graph_breaks"]


def test_matches_torch_types():
    torch = pytest.importorskip("torch")
    for mod in (torch, tracegrad):
        x = mod.tensor([1.5, 2.5])
        got = (x.sum().item(), x.long().sum().item(), (x > 2).any().item())
        assert [type(v) for v in got] == [float, int, bool]


def test_unused_item_is_dropped():
    def f(x):
        _ = (x * 2).sum().item()
        return x + 1
    g = tracegrad.compile(f)
    for i in range(3):
        np.testing.assert_allclose(g(tracegrad.ones(2) * i).numpy(), (np.ones(2) * i + 1))
    assert g.stats["traces"] == 1 and not g.stats["graph_breaks"]


USES = {
    "compare": lambda v: v if v > 0 else -v,
    "divide by it": lambda v: 1.0 / v,
    "modulo by it": lambda v: 7 % v,
    "power": lambda v: v ** 2,
    "round to int": lambda v: round(v),
    "divide by zero": lambda v: v / 0,
    "floor": lambda v: math.floor(v),
    "numpy number": lambda v: v + np.float32(1),
    "divmod": lambda v: divmod(v, 2),
    "int past float's range": lambda v: v + 10 ** 400,
    "number method": lambda v: v.is_integer(),
    "number attribute": lambda v: v.real,
    "float": lambda v: float(v),
    "format": lambda v: f"{v:.3f}",
    "str": lambda v: str(v),
    "isnan": lambda v: math.isnan(v),
    "bool": lambda v: 1 if v else 0,
    "equal": lambda v: v == 3.0,
    "hash": lambda v: {v: 1},
    "numpy": lambda v: np.float32(v) * 2,
    "tensor op": lambda v: tracegrad.ones(2) * v,
}


@pytest.mark.parametrize("use", list(USES), ids=list(USES))
def test_any_other_use_is_a_graph_break_and_equals_eager(use):
    fn = USES[use]

    def f(x):
        return fn((x * 2).sum().item())
    g = tracegrad.compile(f)
    with pytest.warns(UserWarning, match="eagerly"):
        for i in range(3):
            x = tracegrad.full((2,), float(i) - 0.75)
            try:
                want = f(x)
            except (ZeroDivisionError, OverflowError) as e:
                with pytest.raises(type(e)):
                    g(x)
                continue
            got = g(x)
            if isinstance(want, tracegrad.Tensor):
                np.testing.assert_array_equal(got.numpy(), want.numpy())
            else:
                assert got == want and type(got) is type(want)
    assert g.stats["traces"] == 0


def test_item_as_a_tensor_index_is_the_item_graph_break():
    # gram-ai/capsule-networks picks a capsule per sample by ``x[batch, index.item(), :]``:
    # the break names item() and the user's line (before: "tracing raised IndexError ...
    # (got DeferredItem)", the indexing code refusing the stand-in as no int)
    def f(x, y):
        return tracegrad.stack([x[b, i.item(), :] for b, i in enumerate(y)])
    g = tracegrad.compile(f)
    x, y = tracegrad.arange(24.0).reshape(2, 3, 4), tracegrad.tensor([2, 0])
    with pytest.warns(UserWarning, match="eagerly"):
        for _ in range(3):
            np.testing.assert_array_equal(g(x, y).numpy(), f(x, y).numpy())
    (reason, where), = g.stats["graph_breaks"]
    assert reason.startswith("item() reads a tensor's value") and where.endswith(".py:" + str(
        test_item_as_a_tensor_index_is_the_item_graph_break.__code__.co_firstlineno + 5)), (reason, where)


SIZES = {
    "repeat": lambda x, n: x.repeat(n),
    "view": lambda x, n: x.view(-1, n),
    "reshape": lambda x, n: x.reshape(n, -1),
    "zeros": lambda x, n: tracegrad.zeros(n),
    "expand": lambda x, n: x[:1].expand(n),
}


@pytest.mark.parametrize("name", list(SIZES), ids=list(SIZES))
def test_item_as_a_size_is_the_item_graph_break(name):
    # a size parser reads the stand-in by ``operator.index`` inside its own ``except``, which
    # caught the graph break and raised its TypeError ("tracing raised TypeError ... found
    # element of type DeferredItem"): the break caught on the way is the reason
    op = SIZES[name]

    def f(x):
        return op(x, x.sum().item()) * 2
    g = tracegrad.compile(f)
    x = tracegrad.ones(3, dtype=tracegrad.int64)
    with pytest.warns(UserWarning, match="eagerly"):
        for _ in range(2):
            np.testing.assert_array_equal(g(x).numpy(), f(x).numpy())
    (reason, where), = g.stats["graph_breaks"]
    # named by the user's line that used the number as a size
    assert reason.startswith("item() reads a tensor's value") and where.endswith(
        ".py:" + str(op.__code__.co_firstlineno)), (reason, where)
    with pytest.raises(GraphBreak, match="item"):      # torch: Unsupported (data-dependent size)
        tracegrad.compile(f, fullgraph=True)(x)


def test_print_of_the_number_prints_every_call(capsys):
    def f(x):
        print("loss", (x * 2).sum().item())
        return x
    g = tracegrad.compile(f)
    with pytest.warns(UserWarning):
        for i in range(3):
            g(tracegrad.full((2,), float(i)))
    assert capsys.readouterr().out.splitlines() == ["loss 0.0", "loss 4.0", "loss 8.0"]


class _Holder:
    pass


def _kept_programs():
    log, holder, box = [], _Holder(), {}
    m = tracegrad.nn.Linear(2, 1)
    cell = [None]

    def to_list(x):
        v = (x * 2).sum().item()
        log.append(v)
        return v

    def to_object(x):
        holder.last = (x * 2).sum().item()
        return holder.last

    def to_dict(x):
        box["v"] = (x * 2).sum().item()
        return box["v"]

    def to_module(x):
        m.last_value = (x * 2).sum().item()
        return m.last_value

    def to_closure(x):
        v = (x * 2).sum().item()

        def later():
            return v
        cell[0] = later
        return v

    def to_global(x):
        global _KEPT
        _KEPT = (x * 2).sum().item()
        return _KEPT
    return {"list": (to_list, lambda: log[-1]), "object": (to_object, lambda: holder.last),
            "dict": (to_dict, lambda: box["v"]), "module": (to_module, lambda: m.last_value),
            "closure": (to_closure, lambda: cell[0]()), "global": (to_global, lambda: _KEPT)}


_KEPT = None


def test_number_appended_to_a_list_and_returned_stays_in_the_program():
    # NOTE [Python appends] (pystate.py): the list only grown gets each run's number
    f, read = _kept_programs()["list"]
    g = tracegrad.compile(f)
    for i in range(3):
        got = g(tracegrad.full((2,), float(i)))
        assert got == 4.0 * i and read() == 4.0 * i and type(read()) is float
    assert g.stats["traces"] == 1 and not g.stats["graph_breaks"]


@pytest.mark.parametrize("where", ["object", "dict", "module", "closure", "global"])
def test_number_kept_outside_the_result_is_a_graph_break(where):
    f, read = _kept_programs()[where]
    g = tracegrad.compile(f)
    with pytest.warns(UserWarning, match="eagerly"):
        for i in range(3):
            got = g(tracegrad.full((2,), float(i)))
            assert got == 4.0 * i and read() == 4.0 * i and type(read()) is float
    assert g.stats["traces"] == 0


def test_fullgraph_returns_the_number_and_raises_where_python_needs_it_as_torch():
    # torch 2.13: ``fullgraph=True`` compiles a returned item(); branching on it raises
    def f(x):
        return (x * 2).sum().item()

    def branch(x):
        return x * 2 if (x * 2).sum().item() > 0 else x
    g = tracegrad.compile(f, fullgraph=True)
    assert [g(tracegrad.full((2,), float(i))) for i in range(3)] == [0.0, 4.0, 8.0]
    assert g.stats["traces"] == 1 and not g.stats["graph_breaks"]
    with pytest.raises(GraphBreak, match="item"):
        tracegrad.compile(branch, fullgraph=True)(tracegrad.ones(2))


def test_item_inside_a_checkpointed_block_equals_eager():
    from tracegrad.utils.checkpoint import checkpoint
    lin = tracegrad.nn.Linear(2, 2)
    seen = []

    def block(x):
        seen.append(None)
        y = lin(x)
        return y, y.sum().item()

    def f(x):
        y, v = checkpoint(block, x, use_reentrant=False)
        return v
    g = tracegrad.compile(f)
    for i in range(3):
        x = tracegrad.full((1, 2), float(i))
        assert math.isclose(g(x), f(x), rel_tol=1e-6)


def test_library_item_calls_still_read_the_value():
    """tracegrad's own code reads its item() (here clip_grad_norm_'s non-finite check): not
    deferred, so its Python sees the number (a graph break, as before) and the call equals eager."""
    def make(mod, wrap):
        model = np_init(mod.nn.Linear(3, 2), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            model(x).pow(2).sum().backward()
            mod.nn.utils.clip_grad_norm_(model.parameters(), 0.5, error_if_nonfinite=True)
            opt.step()
        return wrap(step), {"model": model}, lambda i: (data(mod, i, 4, 3),)
    check_compiled(make, calls=3)


@dataclasses.dataclass
class _Stats:
    loss: float
    n: int


_HELD = {}


def _made_results(x):
    v = (x * 2).sum().item()
    a = types.SimpleNamespace(v=v)               # the number is the object's last value
    a.me = a
    return _Stats(v / 4, 3), a, types.SimpleNamespace(inner=a, w=v * 2)


def test_objects_the_call_made_are_rebuilt_around_each_calls_numbers():
    # NOTE [returned objects]: a dataclass or SimpleNamespace the call made is rebuilt per
    # call; the numbers it holds are results read after each run, as in a returned tuple
    g = tracegrad.compile(_made_results)
    for i in range(3):
        x = tracegrad.full((2,), float(i))
        stats, a, b = g(x)
        want = _made_results(x)
        assert (stats, a.v, b.w) == (want[0], want[1].v, want[2].w) == (_Stats(i * 1.0, 3), 4.0 * i, 8.0 * i)
        assert type(a.v) is float and a.me is a and b.inner is a
    assert g.stats["traces"] == 1 and not g.stats["graph_breaks"]


def test_a_made_object_also_kept_outside_is_a_graph_break():
    def f(x):
        ns = types.SimpleNamespace(v=(x * 2).sum().item())
        _HELD["last"] = ns          # the program would not store the later calls' objects
        return ns
    g = tracegrad.compile(f)
    with pytest.warns(UserWarning, match="eagerly"):
        for i in range(3):
            assert g(tracegrad.full((2,), float(i))).v == 4.0 * i
            assert _HELD["last"].v == 4.0 * i
    assert g.stats["traces"] == 0
