"""Tensors a compiled function binds to places that outlive the call (NOTE [carried state] in
``_lowering/carry.py``): a module attribute, a registered buffer rebound, a dict item, a plain
object's attribute, a closure variable. Every call binds a new tensor with that call's values
(a tensor the caller kept from an earlier call keeps its own values), and the next call reads
whatever tensor the place holds then, also one the caller bound between calls. Compared with
tracegrad eager and torch eager on every call."""
import numpy as np
import pytest

import tracegrad

from ._harness import np_init


def _program(mod, where):
    lin = np_init(mod.nn.Linear(5, 5), mod)
    lin.register_buffer("buf", mod.zeros(2, 5))
    lin.h = mod.zeros(2, 5)
    carry = {"h": mod.zeros(2, 5)}

    class Trainer:
        pass
    tr = Trainer()
    tr.h = mod.zeros(2, 5)
    place = {"module attribute": (lambda: lin.h, lambda v: setattr(lin, "h", v)),
             "buffer": (lambda: lin.buf, lambda v: setattr(lin, "buf", v)),
             "dict item": (lambda: carry["h"], lambda v: carry.__setitem__("h", v)),
             "object attribute": (lambda: tr.h, lambda v: setattr(tr, "h", v))}[where]

    def step(x):
        if where == "module attribute":
            h = (lin(lin.h) + x).tanh()
            lin.h = h.detach()
        elif where == "buffer":
            h = (lin(lin.buf) + x).tanh()
            lin.buf = h.detach()
        elif where == "dict item":
            h = (lin(carry["h"]) + x).tanh()
            carry["h"] = h.detach()
        else:
            h = (lin(tr.h) + x).tanh()
            tr.h = h.detach()
        return h.sum()
    return step, place


def _run(mod, where, compiled, reset_at=None, calls=6):
    mod.manual_seed(0)
    step, (get, put) = _program(mod, where)
    f = tracegrad.compile(step) if compiled else step
    losses, kept = [], []
    for i in range(calls):
        if i == reset_at:
            put(mod.ones(2, 5) * 0.5)           # a new sequence: the caller rebinds the place
        x = mod.tensor(np.random.RandomState(i).randn(2, 5).astype("float32"))
        losses.append(float(f(x)))
        kept.append(get())                      # the caller keeps every call's state
    return losses, [k.detach().numpy().copy() for k in kept], kept, f


PLACES = ["module attribute", "buffer", "dict item", "object attribute"]


@pytest.mark.parametrize("reset_at", [None, 3])
@pytest.mark.parametrize("where", PLACES)
def test_carried_tensor_is_a_new_tensor_per_call_and_is_read_from_its_place(where, reset_at):
    e_loss, e_vals, _, _ = _run(tracegrad, where, False, reset_at)
    c_loss, c_vals, kept, f = _run(tracegrad, where, True, reset_at)
    np.testing.assert_allclose(c_loss, e_loss, rtol=1e-5, atol=1e-6)
    for a, b in zip(c_vals, e_vals):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # values read again now: each kept tensor still holds its own call's values
    for t, b in zip(kept, e_vals):
        np.testing.assert_allclose(t.numpy(), b, rtol=1e-5, atol=1e-6)
    assert len({id(t) for t in kept}) == len(kept)
    # a rebind by the caller is followed, not retraced; except that setting a tensor attribute on
    # a module changes its layout, which every compiled call re-checks (one trace more)
    module_place = where in ("module attribute", "buffer")
    assert f.stats["traces"] == (2 if module_place and reset_at else 1), f.stats
    torch = pytest.importorskip("torch")
    t_loss, t_vals, _, _ = _run(torch, where, False, reset_at)
    np.testing.assert_allclose(c_loss, t_loss, rtol=1e-5, atol=1e-5)


def test_closure_variable_rebound_matches_eager():
    def run(compiled):
        tracegrad.manual_seed(0)
        lin = np_init(tracegrad.nn.Linear(3, 3), tracegrad)
        h = tracegrad.zeros(1, 3)

        def step(x):
            nonlocal h
            h = (lin(h) + x).tanh().detach()
            return h.sum()
        f = tracegrad.compile(step) if compiled else step
        out = [float(f(tracegrad.ones(1, 3) * i)) for i in range(4)] + h.tolist()[0]
        if compiled:
            assert f.stats["traces"] == 1 and f.stats["eager_calls"] == 1, f.stats
        return out
    np.testing.assert_allclose(run(True), run(False), rtol=1e-5, atol=1e-6)


def test_stashed_tensor_is_new_each_call():
    """``self.last = out.detach()``: stored, never read back by the function."""
    def run(compiled):
        tracegrad.manual_seed(0)
        lin = np_init(tracegrad.nn.Linear(3, 3), tracegrad)

        def step(x):
            out = lin(x)
            lin.last = out.detach()
            return out.sum()
        f = tracegrad.compile(step) if compiled else step
        kept = []
        for i in range(4):
            f(tracegrad.ones(2, 3) * i)
            kept.append(lin.last)
        return kept
    e, c = run(False), run(True)
    assert len({id(t) for t in c}) == 4
    for a, b in zip(c, e):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_view_bound_to_a_place_runs_eagerly_with_the_reason():
    def run(compiled):
        tracegrad.manual_seed(0)
        lin = np_init(tracegrad.nn.Linear(3, 3), tracegrad)
        carry = {"h": tracegrad.zeros(2, 3)}

        def step(x):
            out = tracegrad.cat([lin(carry["h"]) + x, x])
            carry["h"] = out[:2].detach()           # a view of a result
            return out.sum()
        f = tracegrad.compile(step) if compiled else step
        kept = []
        for i in range(4):
            f(tracegrad.ones(2, 3) * i)
            kept.append(carry["h"])
        return [k.numpy() for k in kept], f
    e, _ = run(False)
    with pytest.warns(UserWarning, match="binds a view"):
        c, f = run(True)
    for a, b in zip(c, e):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert any("binds a view" in r for r, _ in f.stats["graph_breaks"])


def test_abandoned_trace_puts_module_attributes_back():
    """A first trace abandoned to lift newly found state must not leave the tensor it bound on
    the module: the retried trace would read a value of the abandoned one."""
    tracegrad.manual_seed(0)
    rnn = tracegrad.nn.RNN(4, 5, batch_first=True)
    rnn.h = tracegrad.zeros(1, 2, 5)

    def step(x):
        out, h = rnn(x, rnn.h)
        rnn.h = h.detach()
        return out.sum()
    f = tracegrad.compile(step)
    ref = []
    tracegrad.manual_seed(0)
    rnn2 = tracegrad.nn.RNN(4, 5, batch_first=True)
    h2 = tracegrad.zeros(1, 2, 5)
    for i in range(4):
        x = tracegrad.ones(2, 4, 4) * i
        out, h2 = rnn2(x, h2)
        ref.append(float(out.sum()))
        assert float(f(x)) == pytest.approx(ref[-1], rel=1e-5, abs=1e-5)


def _lstm_program(mod, container):
    """The LSTM tutorial's pattern: the hidden state lives on the module as a tuple (or list,
    namedtuple) of tensors, detached and rebound on every training step."""
    import collections
    HC = collections.namedtuple("HC", "h c")
    make = {"tuple": lambda h, c: (h, c), "list": lambda h, c: [h, c], "namedtuple": HC}[container]

    class Tagger(mod.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = mod.nn.LSTM(4, 3)
            self.out = mod.nn.Linear(3, 2)
            self.hidden = self.init_hidden()

        def init_hidden(self):
            return make(mod.zeros(1, 1, 3), mod.zeros(1, 1, 3))

        def forward(self, x):
            y, hc = self.lstm(x, tuple(self.hidden))
            self.hidden = make(*hc)
            return self.out(y)
    model = np_init(Tagger(), mod)
    opt = mod.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        model.hidden = make(*(t.detach() for t in model.hidden))
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss
    return model, step


def _lstm_run(mod, container, compiled):
    mod.manual_seed(0)
    model, step = _lstm_program(mod, container)
    f = tracegrad.compile(step) if compiled else step
    losses, kept = [], []
    for i in range(8):
        if i in (3, 6):
            model.hidden = model.init_hidden()          # a new sequence, bound by the caller
        x = mod.tensor(np.random.RandomState(i).randn(5, 1, 4).astype("float32"))
        losses.append(float(f(x)))
        kept.append(model.hidden)                       # the caller keeps every call's state
    return losses, [[t.detach().numpy().copy() for t in k] for k in kept], kept, f


@pytest.mark.parametrize("container", ["tuple", "list", "namedtuple"])
def test_tuple_of_tensors_module_attribute_is_carried(container):
    e_loss, e_vals, e_kept, _ = _lstm_run(tracegrad, container, False)
    c_loss, c_vals, kept, f = _lstm_run(tracegrad, container, True)
    assert [[t.requires_grad for t in k] for k in kept] == [[t.requires_grad for t in k] for k in e_kept]
    # two programs: one reads the caller's zero state (requires_grad False), one the state the
    # previous call bound (the LSTM's output, requires_grad True); later resets retrace nothing
    assert f.stats["graph_breaks"] == [] and f.stats["traces"] == 2, f.stats
    np.testing.assert_allclose(c_loss, e_loss, rtol=1e-5, atol=1e-6)
    for got, want, k in zip(c_vals, e_vals, kept):
        # a new sequence of the same type per call, whose tensors keep their own call's values
        assert type(k).__name__ == {"tuple": "tuple", "list": "list", "namedtuple": "HC"}[container]
        for a, b, t in zip(got, want, k):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(t.detach().numpy(), b, rtol=1e-5, atol=1e-6)
    assert len({id(k) for k in kept}) == len(kept)
    torch = pytest.importorskip("torch")
    t_loss, t_vals, _, _ = _lstm_run(torch, container, False)
    np.testing.assert_allclose(c_loss, t_loss, rtol=1e-5, atol=1e-5)
    for got, want in zip(c_vals, t_vals):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_tuple_of_tensors_in_a_dict_is_carried():
    def run(compiled):
        tracegrad.manual_seed(0)
        cell = np_init(tracegrad.nn.GRUCell(3, 3), tracegrad)
        state = {"hc": (tracegrad.zeros(1, 3), tracegrad.ones(1, 3))}

        def step(x):
            h, c = state["hc"]
            h = cell(x, h)
            state["hc"] = (h.detach(), c * 0.5)
            return h.sum()
        f = tracegrad.compile(step) if compiled else step
        out, kept = [], []
        for i in range(5):
            out.append(float(f(tracegrad.ones(1, 3) * i)))
            kept.append(state["hc"])
        return out, [[t.numpy().copy() for t in k] for k in kept], kept, f
    e_out, e_vals, _, _ = run(False)
    c_out, c_vals, kept, f = run(True)
    assert f.stats["traces"] == 1 and f.stats["eager_calls"] == 1, f.stats
    np.testing.assert_allclose(c_out, e_out, rtol=1e-5, atol=1e-6)
    for got, want, k in zip(c_vals, e_vals, kept):
        for a, b, t in zip(got, want, k):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(t.numpy(), b, rtol=1e-5, atol=1e-6)


def test_sequence_with_a_number_bound_to_a_place_runs_eagerly():
    """``self.state = (h, n + 1)``: the number changes every call and a program would not bind
    it again, so the call runs eagerly (the counter keeps counting)."""
    lin = tracegrad.nn.Linear(2, 2)
    lin.state = (tracegrad.zeros(1, 2), 0)
    box = {"s": (tracegrad.zeros(1, 2), 0)}

    def on_module(x):
        h, n = lin.state
        lin.state = (lin(h + x).detach(), n + 1)
        return lin.state[0].sum()

    def in_dict(x):
        h, n = box["s"]
        box["s"] = (lin(h + x).detach(), n + 1)
        return box["s"][0].sum()
    for fn, read in ((on_module, lambda: lin.state), (in_dict, lambda: box["s"])):
        f = tracegrad.compile(fn)
        with pytest.warns(UserWarning, match="side effect|changes the Python value"):
            for _ in range(4):
                f(tracegrad.ones(1, 2))
        assert read()[1] == 4 and f.stats["traces"] == 0


def test_dict_of_tensors_bound_per_call_is_carried():
    """``self.logs = {"loss": ..., "out": ...}`` and a global rebound to a new dict of tensors
    each call (a training loop's logging stash): a new dict of new tensors after every call."""
    def run(compiled):
        tracegrad.manual_seed(0)
        lin = np_init(tracegrad.nn.Linear(3, 2), tracegrad)
        opt = tracegrad.optim.SGD(lin.parameters(), lr=0.1)
        box = {}

        def step(x):
            opt.zero_grad()
            out = lin(x)
            loss = out.pow(2).mean()
            loss.backward()
            opt.step()
            lin.logs = {"loss": loss.detach(), "out": out.detach()}
            box["last"] = {"scaled": loss.detach() * 2}
            return loss
        f = tracegrad.compile(step) if compiled else step
        kept = []
        for i in range(5):
            f(tracegrad.ones(4, 3) * (i + 1))
            kept.append((lin.logs, box["last"]))
        return kept, f
    e, _ = run(False)
    c, f = run(True)
    assert f.stats["graph_breaks"] == [] and f.stats["traces"] == 1, f.stats
    assert len({id(logs) for logs, _ in c}) == len(c)
    for (cl, cb), (el, eb) in zip(c, e):
        assert cl.keys() == el.keys() and cb.keys() == eb.keys()
        for k in el:
            np.testing.assert_allclose(cl[k].numpy(), el[k].numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(cb["scaled"].numpy(), eb["scaled"].numpy(), rtol=1e-5, atol=1e-6)


def test_place_bound_to_the_returned_result_or_an_alias_of_it():
    """``self.out = out`` (the returned tensor itself), ``self.last = loss.detach()`` and
    ``self.raw = loss.data`` alongside ``return out, loss``: after each call the places hold the
    call's result itself / an alias sharing its storage (and, for detach, its version counter),
    as eagerly."""
    def run(compiled):
        tracegrad.manual_seed(0)
        lin = np_init(tracegrad.nn.Linear(3, 2), tracegrad)
        opt = tracegrad.optim.SGD(lin.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            out = lin(x)
            loss = out.pow(2).mean()
            loss.backward()
            opt.step()
            lin.out = out
            lin.last, lin.raw = loss.detach(), loss.data
            return out, loss
        f = tracegrad.compile(step) if compiled else step
        seen = []
        for i in range(4):
            out, loss = f(tracegrad.ones(4, 3) * (i + 1))
            assert lin.out is out
            before = float(lin.last)
            with tracegrad.no_grad():
                loss.add_(1.0)                  # through the result: both aliases see it
            seen.append((before, float(lin.last), float(lin.raw), lin.last._version, lin.raw._version,
                         lin.out.requires_grad, lin.out.grad_fn is not None))
        return seen, f
    e, _ = run(False)
    c, f = run(True)
    assert f.stats["graph_breaks"] == [] and f.stats["traces"] == 1, f.stats
    for a, b in zip(c, e):
        np.testing.assert_allclose(a[:3], b[:3], rtol=1e-5, atol=1e-6)
        assert a[3:] == b[3:]


def test_module_tensor_attribute_rebound_by_another_compiled_function_is_read_by_place():
    """NOTE [module tensor attributes]: one compiled function binds a new tensor to a module's
    plain attribute on every call, another reads it: the reader sees each call's tensor (also
    when the caller keeps the previous one alive), with one program each, as eagerly."""
    nn = tracegrad.nn

    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.buf = tracegrad.zeros(3)

        def forward(self, y):
            return (self.buf * y).sum()

    def run(wrap):
        m = Holder()

        def set_buf(x):
            m.buf = x * 2.0

        def read(y):
            return m(y)

        setter, reader, kept, outs = wrap(set_buf), wrap(read), [], []
        for i in range(5):
            setter(tracegrad.arange(3.0) + i)
            kept.append(m.buf)                       # the previous tensor stays alive
            outs.append(float(reader(tracegrad.ones(3))))
        return outs, setter, reader
    eager, _, _ = run(lambda f: f)
    outs, setter, reader = run(tracegrad.compile)
    assert outs == eager == [2.0 * (3 + 3 * i) for i in range(5)]
    assert setter.stats["traces"] == 1 and reader.stats["traces"] == 1, (setter.stats, reader.stats)


def test_eager_rebinding_of_a_tensor_attribute_no_program_reads_keeps_programs():
    """An eager module that keeps its batch statistics as plain tensor attributes
    (``self.running_mean = m`` in forward: e-hulten/real-nvp-2d's batch norm) rebinds them on
    every call; no compiled program reads those tensors, so a compiled step of another module
    keeps its one program. Rebinding, eagerly, an attribute a program does read still gives
    eager's values on the next call."""
    nn = tracegrad.nn

    class Stats(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(tracegrad.ones(3))
            self.running_mean = tracegrad.zeros(3)

        def forward(self, x):
            self.running_mean = x.mean(0)
            return (x * self.w).sum()

    eager_mod, compiled_mod = Stats(), Stats()
    step = tracegrad.compile(lambda x: compiled_mod(x))
    for i in range(4):
        x = tracegrad.arange(6.0).reshape(2, 3) + i
        eager_mod(x)
        assert float(step(x)) == float(eager_mod(x))
    assert step.stats["traces"] == 1 and step.stats["graph_breaks"] == [], step.stats

    class Reader(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = tracegrad.ones(3)

        def forward(self, y):
            return (self.scale * y).sum()

    r = Reader()
    read = tracegrad.compile(lambda y: r(y))
    outs = []
    for i in range(4):
        r.scale = tracegrad.full((3,), float(i))     # eagerly, a tensor the program reads
        outs.append(float(read(tracegrad.ones(3))))
    assert outs == [0.0, 3.0, 6.0, 9.0]
