"""Twentieth round of adversarial compiled-vs-eager programs (the rest in
test_adversarial_round20b.py): a GRU cell whose hidden state the caller carries (detached)
between calls, an ``Embedding`` with ``padding_idx`` and ``max_norm`` (whose forward renormalizes
the weight in place), a custom parametrization registered with
``parametrize.register_parametrization`` trained under ``parametrize.cached()``, an
``AveragedModel`` with a custom ``avg_fn`` updated inside the step, and the compiled function's
``__defaults__`` and ``__kwdefaults__`` replaced between calls. torch eager, tracegrad eager and
``tracegrad.compile`` run each program from the same state and must agree after every call
(``_dynamo_port.compare``).

Found here and fixed: a function kept as an attribute of an object or a module
(``AveragedModel``'s ``avg_fn`` lambda) was not scanned for the Python state it reads, so the
decay in a list its closure holds was baked in at the traced value (NOTE [functions held as
attributes] in ``_lowering/pystate.py``); so were functions in a list or dict attribute and a
``functools.partial`` attribute bound to a list; and a helper function's ``__defaults__``
replaced between calls was not guarded (NOTE [helper defaults])."""
import pytest

from ._dynamo_port import compare
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear
from ._dynamo_port import train_step

torch = pytest.importorskip("torch")


def _seed_params(T, module, seed):
    import numpy as np
    rs = np.random.RandomState(seed)
    with T.no_grad():
        for p in module.parameters():
            p.copy_(T.tensor(rs.randn(*p.shape).astype("float32") * 0.4))
    return module


def test_gru_cell_hidden_state_carried_detached_between_calls():
    """A ``GRUCell`` run over two time steps; its hidden state is stored on the trainer between
    calls (``h.detach()``; the first call passes zeros) and the caller also edits the returned
    state in place (``mul_``) before the next call."""
    def build(T, wrap):
        cell = _seed_params(T, T.nn.GRUCell(3, 2), 0)
        head = _linear(T, 2, 1, seed=1)
        opt = T.optim.SGD(list(cell.parameters()) + list(head.parameters()), lr=0.1)
        state = {"h": T.zeros(2, 2)}

        def step(x, h):
            opt.zero_grad()
            for t in range(x.shape[1]):
                h = cell(x[:, t], h)
            loss = head(h).pow(2).mean()
            loss.backward()
            opt.step()
            return loss, h.detach()

        f = wrap(step)

        def run(i):
            loss, h = f(_rand(T, i, 2, 2, 3), state["h"])
            state["h"] = h
            if i == 1:
                h.mul_(0.5)
            return loss, h, cell.weight_hh, cell.bias_ih.grad
        return run
    compare(build, calls=3)


def test_embedding_with_padding_idx_and_max_norm_renormalizes_in_place():
    """``Embedding(5, 3, padding_idx=0, max_norm=1.0)``: each forward rescales the looked-up
    rows in place (eagerly, under no_grad) so the weight changes even without an optimizer
    step; the padding row gets no gradient. The indices change every call."""
    def build(T, wrap):
        emb = T.nn.Embedding(5, 3, padding_idx=0, max_norm=1.0)
        _seed_params(T, emb, 0)
        with T.no_grad():
            emb.weight.mul_(4.0)        # rows well above max_norm
        opt = T.optim.SGD(emb.parameters(), lr=0.1)
        idx = [[0, 1, 2], [3, 0, 1], [4, 4, 0], [2, 3, 1]]

        f = wrap(train_step(opt, lambda ix: emb(ix).sum(dim=1).pow(2).mean()))

        def run(i):
            loss = f(T.tensor([idx[i]]))
            return loss, emb.weight, emb.weight.grad
        return run
    compare(build, calls=3)


def test_custom_parametrization_trained_under_parametrize_cached():
    """A ``Symmetric`` parametrization (``triu + triu(1).T``) registered on a Linear's weight;
    the step reads ``lin.weight`` twice inside ``parametrize.cached()`` and trains
    ``parametrizations.weight.original`` with Adam. The caller reads ``lin.weight`` outside."""
    def build(T, wrap):
        P = T.nn.utils.parametrize

        class Symmetric(T.nn.Module):
            def forward(self, X):
                return X.triu() + X.triu(1).transpose(0, 1)

        lin = _linear(T, 3, 3, seed=0)
        P.register_parametrization(lin, "weight", Symmetric())
        opt = T.optim.Adam(lin.parameters(), lr=0.05)

        def loss_of(x):
            with P.cached():
                y = lin(x)
                reg = (lin.weight - T.eye(3)).pow(2).sum()
            return y.pow(2).mean() + 0.1 * reg

        f = wrap(train_step(opt, loss_of))

        def run(i):
            loss = f(_rand(T, i, 2, 3))
            orig = lin.parametrizations.weight.original
            return loss, lin.weight, orig, orig.grad
        return run
    compare(build, calls=3)


def test_averaged_model_updated_inside_the_step_with_a_custom_avg_fn():
    """``AveragedModel(net, avg_fn=...)`` (exponential average with a decay read from a list the
    caller edits) whose ``update_parameters(net)`` runs inside the step after ``opt.step()``;
    ``n_averaged`` grows by one per call and the averaged model's output is returned."""
    def build(T, wrap):
        net = _linear(T, 3, 2, seed=0)
        decay = [0.5]
        swa = T.optim.swa_utils.AveragedModel(
            net, avg_fn=lambda avg, new, n: decay[0] * avg + (1 - decay[0]) * new)
        opt = T.optim.SGD(net.parameters(), lr=0.2)

        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            swa.update_parameters(net)
            with T.no_grad():
                return loss, swa(x)

        f = wrap(step)

        def run(i):
            if i == 2:
                decay[0] = 0.9
            loss, y = f(_rand(T, i, 2, 3))
            return loss, y, swa.n_averaged, swa.module.weight, net.weight
        return run
    compare(build, calls=3)


def test_function_defaults_replaced_on_the_function_object_between_calls():
    """The step has a positional default ``scale`` and a keyword-only default ``shift``; the
    caller replaces ``step.__defaults__`` and ``step.__kwdefaults__`` on the original function
    object between calls (the compiled wrapper calls that same object)."""
    def build(T, wrap):
        net = _linear(T, 3, 2, seed=0)
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def step(x, scale=1.0, *, shift=0.0, **extra):
            opt.zero_grad()
            loss = (net(x) * scale + shift).pow(2).mean() + extra.get("bonus", 0.0)
            loss.backward()
            opt.step()
            return loss

        f = wrap(step)

        def run(i):
            if i == 1:
                step.__defaults__ = (2.0,)
            if i == 2:
                step.__kwdefaults__ = {"shift": 0.5}
            kw = {"bonus": 1.5} if i == 3 else {}
            return f(_rand(T, i, 2, 3), **kw), net.weight
        return run
    compare(build, calls=4)


def test_functions_held_in_attribute_containers_and_partials_read_a_changed_list():
    """A module keeps functions in a list attribute, a dict attribute and as a
    ``functools.partial`` bound to a list; all read ``decay[0]``, which the caller changes at
    call 2 (found here: each was baked in at the traced value)."""
    import functools

    def build(T, wrap):
        net = _linear(T, 3, 2, seed=0)
        decay = [0.5]
        net.fns = [lambda a: decay[0] * a]
        net.table = {"f": lambda a: a - decay[0]}
        net.part = functools.partial(lambda a, d: a * d[0] + 1.0, d=decay)
        f = wrap(lambda x: (net.fns[0](net(x)), net.table["f"](net(x)), net.part(net(x))))

        def run(i):
            if i == 2:
                decay[0] = 0.9
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=3)


def test_a_helper_functions_defaults_replaced_between_calls():
    """The compiled function calls ``helper(x)``, whose default ``k`` the caller replaces
    through ``helper.__defaults__`` at call 2 (found here: the traced default stayed)."""
    def build(T, wrap):
        def helper(a, k=0.5):
            return a * k

        f = wrap(lambda x: helper(x) + 1.0)

        def run(i):
            if i == 2:
                helper.__defaults__ = (0.9,)
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=3)
