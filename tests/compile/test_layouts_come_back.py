"""NOTE [layouts come back] (tracegrad/_state.py): a module entry rebound between compiled calls
and rebound back -- a task's head swapped in, a layer replaced by ``nn.Identity()`` for a few
calls, a parameter or buffer alternating between two tensors -- runs the program traced for the
layout it brings back, not a new trace per call (torch.compile keeps one frame per layout).
Every program runs under tracegrad eager, tracegrad.compile and torch eager with the same
numbers (``run_three_ways``): values, gradients and parameters agree on every call, and the
compiled function traces once per distinct layout."""
import pytest

from ._harness import data, np_init, run_three_ways, snapshot, traces

CALLS = 12


def _model(mod, heads):
    nn = mod.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(4, 6)
            self.head = heads[0]

        def forward(self, x):
            return self.head(mod.relu(self.body(x)))
    return np_init(Net(), mod)


def _train(mod, wrap, model, params, between):
    opt = mod.optim.SGD(params, lr=0.1, momentum=0.9)

    def step(x):
        opt.zero_grad()
        out = model(x)
        loss = out.pow(2).mean()
        loss.backward()
        opt.step()
        return loss
    f = wrap(step)
    res = []
    for i in range(CALLS):
        between(i)
        res.append([snapshot(f(data(mod, i, 5, 4))), snapshot(model)])
        if hasattr(f, "stats"):
            f.per_call = getattr(f, "per_call", []) + [f.stats["traces"]]
    return res


def _settled(f, layouts):
    """The compiled step traced at most three times per layout and nothing in its last four
    calls: when a layout comes back, what the step starts from may be new to its program once
    or twice (SGD's momentum of the other heads' parameters made meanwhile; their ``.grad``
    set, then None after one call that does not use them), never the layout itself."""
    assert traces(f) <= 3 * layouts and f.per_call[-1] == f.per_call[-5], f.per_call


def _heads_run(pattern):
    """``pattern(i)``: which of three heads (two of 3 outputs, one of 2) call ``i`` binds."""
    def run(mod, wrap):
        nn = mod.nn
        heads = [np_init(nn.Linear(6, 3), mod, seed=1), np_init(nn.Linear(6, 3), mod, seed=2),
                 np_init(nn.Linear(6, 2), mod, seed=3)]
        model = _model(mod, heads)
        params = list(model.body.parameters()) + [p for h in heads for p in h.parameters()]

        def between(i):
            model.head = heads[pattern(i)]
        return _train(mod, wrap, model, params, between)
    return run


@pytest.mark.parametrize("pattern,layouts", [
    (lambda i: i % 2, 2),                  # two heads of the same shape, alternating
    (lambda i: i % 3, 3),                  # three heads, two output widths
    (lambda i: 0 if i < 3 or i > 5 else 1, 2),   # swapped for a few calls, then back
], ids=["alternating", "three", "back_after_a_while"])
def test_task_heads_swapped_between_calls(pattern, layouts):
    made = run_three_ways(_heads_run(pattern))
    _settled(made[0], layouts)


def test_layer_replaced_by_identity_and_put_back():
    """``model.mid = nn.Identity()`` for calls 2-3 (a layer switched off), then the layer again:
    its parameters, untouched meanwhile, train on from where they were."""
    def run(mod, wrap):
        nn = mod.nn
        model = np_init(nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 6), nn.Linear(6, 2)), mod)
        mid = model[2]

        def between(i):
            model[2] = nn.Identity() if i in (2, 3) else mid
        return _train(mod, wrap, model, list(model.parameters()), between)
    made = run_three_ways(run)
    # the layer, an Identity per call (a new object each time: no layout seen before), the
    # layer again (its momentum buffers are new), then that program
    assert made[0].per_call == [0, 1, 2, 3, 4] + [4] * (CALLS - 5), made[0].per_call


@pytest.mark.parametrize("store", ["parameter", "buffer"])
def test_tensor_entry_alternating_between_two_tensors(store):
    """A parameter (``model.scale = pa``/``pb``) or a buffer alternating between two tensors the
    caller keeps: each call reads the one bound, the step's in-place update lands on it."""
    def run(mod, wrap):
        nn = mod.nn
        model = _model(mod, [nn.Linear(6, 3)])
        np_init(model, mod)
        if store == "parameter":
            pair = [nn.Parameter(mod.full((3,), 0.5)), nn.Parameter(mod.full((3,), 2.0))]
        else:
            pair = [mod.full((3,), 0.5), mod.full((3,), 2.0)]
            model.register_buffer("scale", pair[0])
        model.scale = pair[0]
        base = model.forward
        model.forward = lambda x: base(x) * model.scale
        params = list(model.parameters()) + ([pair[1]] if store == "parameter" else [])
        opt = mod.optim.SGD(params, lr=0.1)

        def step(x):
            opt.zero_grad()
            out = model(x)
            out.pow(2).mean().backward()
            opt.step()
            if store == "buffer":
                with mod.no_grad():
                    model.scale.mul_(0.9)
            return out
        f = wrap(step)
        res = []
        for i in range(CALLS):
            model.scale = pair[i % 2]
            res.append([snapshot(f(data(mod, i, 5, 4))), snapshot(model), [snapshot(t) for t in pair]])
        return res
    made = run_three_ways(run)
    assert traces(made[0]) == 2, made[0].stats


def test_head_changed_while_swapped_out_traces_again():
    """The head swapped out is changed meanwhile (a parameter of it replaced): putting it back
    is a layout no program saw, so the call traces it again (and reads the new parameter)."""
    def run(mod, wrap):
        nn = mod.nn
        heads = [np_init(nn.Linear(6, 3), mod, seed=1), np_init(nn.Linear(6, 3), mod, seed=2)]
        model = _model(mod, heads)
        params = list(model.body.parameters()) + [p for h in heads for p in h.parameters()]

        def between(i):
            model.head = heads[i % 2]
            if i == 3:
                heads[0].bias = nn.Parameter(mod.full((3,), 0.25))
        return _train(mod, wrap, model, params, between)
    made = run_three_ways(run)
    # the new bias (which the optimizer never sees) makes head 0 a layout no program saw
    assert made[0].per_call[4] == made[0].per_call[3] + 1, made[0].per_call
    assert made[0].per_call[-1] == made[0].per_call[-5], made[0].per_call


def test_deleted_and_added_back():
    """``del model.head`` and the same head added back: the layout it was in."""
    def run(mod, wrap):
        nn = mod.nn
        head = np_init(nn.Linear(6, 3), mod, seed=1)
        model = _model(mod, [head])

        def between(i):
            if i % 2:
                del model.head
                model.head = head
        return _train(mod, wrap, model, list(model.parameters()), between)
    made = run_three_ways(run)
    _settled(made[0], 1)


def test_many_layouts_start_over():
    """More distinct rebinds than the table holds: values stay right."""
    def run(mod, wrap):
        nn = mod.nn
        heads = [np_init(nn.Linear(6, 3), mod, seed=k) for k in range(3)]
        model = _model(mod, heads)
        extra = [nn.Module() for _ in range(300)]
        params = list(model.body.parameters()) + [p for h in heads for p in h.parameters()]

        def between(i):
            model.head = heads[i % 3]
            for k, e in enumerate(extra):          # 300 other entries rebound (a new table)
                e.sub = nn.Identity() if (i + k) % 2 else None
        return _train(mod, wrap, model, params, between)
    run_three_ways(run, torch_too=False)


def test_a_new_head_per_call_each_read_afresh():
    """A new head per call, the previous one dropped (its id free for the next): every call
    reads the head bound now, never a program traced for a head that is gone."""
    def run(mod, wrap):
        nn = mod.nn
        model = _model(mod, [np_init(nn.Linear(6, 3), mod, seed=1)])

        def between(i):
            model.head = np_init(nn.Linear(6, 3), mod, seed=10 + i)
        return _train(mod, wrap, model, list(model.body.parameters()), between)
    run_three_ways(run)


def test_the_replaced_module_is_freed():
    """A layer replaced between compiled calls is freed once nothing else holds it (the layout
    table refers to the objects it swaps weakly, by id), and a call after that reads the layer
    bound now."""
    import gc
    import weakref

    import tracegrad
    first = [tracegrad.nn.Linear(6, 3)]
    model = _model(tracegrad, first)
    x = data(tracegrad, 0, 5, 4)
    step = tracegrad.compile(lambda x: model(x).sum())
    for _ in range(2):
        step(x)
    gone = weakref.ref(model.head)
    model.head = tracegrad.nn.Linear(6, 3)
    first.clear()             # (the model's class keeps the list it was built from)
    del step                  # the programs that called the old layer
    gc.collect()
    assert gone() is None
    again = tracegrad.compile(lambda x: model(x).sum())
    for _ in range(3):
        assert tracegrad.allclose(again(x), model(x).sum())


def test_a_gone_objects_id_names_no_layout():
    """When an object a layout's token counts is gone, no token name counts its id (the next
    object may get it): binding that next object is a layout of its own."""
    import gc

    import tracegrad
    from tracegrad import _state
    from tracegrad.nn.modules.module import _Registry
    store = _Registry()
    a, b = tracegrad.nn.Linear(2, 2), tracegrad.nn.Linear(2, 2)
    store["h"] = a
    with_a = _state.STRUCTURE[0]
    store["h"] = b
    ia = id(a)
    del a
    gc.collect()
    _state._forget_gone()          # (what the next layout change does first)
    assert not any(n[1] == ia for key in _state._TOKENS if key for n in key[1])
    store["h"] = tracegrad.nn.Linear(2, 2)
    assert _state.STRUCTURE[0] != with_a
    # the first object gone while the entry holds None: still not the layout it began with
    c = tracegrad.nn.Linear(2, 2)
    store = _Registry({"h": c})
    before = _state.STRUCTURE[0]
    store["h"] = None
    del c
    gc.collect()
    store["z"] = b                 # the token recomputed: "h" still counts as changed
    del store["z"]
    assert _state.STRUCTURE[0] != before
