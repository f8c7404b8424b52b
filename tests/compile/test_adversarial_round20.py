"""Twentieth round of adversarial compiled-vs-eager programs: a GRU whose hidden state the
caller carries (detached) between calls, an ``Embedding`` with ``padding_idx`` and ``max_norm``
(whose forward renormalizes the weight in place), BatchNorm without running statistics next to
one with a cumulative average switched between train and eval, clipping by value and by
``foreach`` norm with thresholds the caller changes, a custom parametrization registered with
``parametrize.register_parametrization`` trained under ``parametrize.cached()``, an
``AveragedModel`` updated inside the step, the compiled function's ``__defaults__`` and
``__kwdefaults__`` replaced between calls, ``functional_call`` with a parameter dict the caller
rebuilds, and ``parameters_to_vector``/``vector_to_parameters`` round trips inside the step.
torch eager, tracegrad eager and ``tracegrad.compile`` run each program from the same state and
must agree after every call (``_dynamo_port.compare``)."""
import pytest

from ._dynamo_port import compare
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear

torch = pytest.importorskip("torch")


def _seed_params(T, module, seed):
    import numpy as np
    rs = np.random.RandomState(seed)
    with T.no_grad():
        for p in module.parameters():
            p.copy_(T.tensor(rs.randn(*p.shape).astype("float32") * 0.4))
    return module


def test_gru_hidden_state_carried_detached_between_calls():
    """A GRU cell's hidden state is stored on the trainer between calls (``h.detach()``); the
    first call passes ``None``. The step returns the new hidden state, which the caller also
    edits in place (``mul_``) before the next call."""
    def build(T, wrap):
        rnn = _seed_params(T, T.nn.GRU(3, 2, batch_first=True), 0)
        head = _linear(T, 2, 1, seed=1)
        opt = T.optim.SGD(list(rnn.parameters()) + list(head.parameters()), lr=0.1)
        state = {"h": None}

        def step(x, h):
            opt.zero_grad()
            out, h_new = rnn(x, h)
            loss = head(out).pow(2).mean()
            loss.backward()
            opt.step()
            return loss, h_new.detach()

        f = wrap(step)

        def run(i):
            loss, h = f(_rand(T, i, 2, 2, 3), state["h"])
            state["h"] = h
            if i == 1:
                h.mul_(0.5)
            return loss, h, rnn.weight_hh_l0, rnn.bias_ih_l0.grad
        return run
    compare(build, calls=4)


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

        def step(ix):
            opt.zero_grad()
            loss = emb(ix).sum(dim=1).pow(2).mean()
            loss.backward()
            opt.step()
            return loss

        f = wrap(step)

        def run(i):
            loss = f(T.tensor([idx[i]]))
            return loss, emb.weight, emb.weight.grad
        return run
    compare(build, calls=4)


def test_batchnorm_without_running_stats_and_with_cumulative_average_in_eval_and_train():
    """One ``BatchNorm1d(track_running_stats=False)`` (always batch statistics, no buffers) and
    one ``BatchNorm1d(momentum=None)`` (cumulative average over ``num_batches_tracked``); the
    caller switches the model to ``eval()`` for call 2 and back to ``train()`` after."""
    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 3, seed=0), T.nn.BatchNorm1d(3, track_running_stats=False),
                              _linear(T, 3, 2, seed=1), T.nn.BatchNorm1d(2, momentum=None))
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss

        f = wrap(step)

        def run(i):
            net.train(i != 2)
            loss = f(_rand(T, i, 4, 3) + i)
            bn = net[3]
            return (loss, net[1].running_mean, bn.running_mean, bn.running_var,
                    bn.num_batches_tracked, net[0].weight)
        return run
    compare(build, calls=4)


def test_clip_grad_value_and_foreach_norm_with_thresholds_the_caller_changes():
    """``clip_grad_value_(params, c)`` then ``clip_grad_norm_(params, m, foreach=True)`` with
    ``c`` and ``m`` held on a config object the caller edits between calls; the returned total
    norm is compared too."""
    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 3, seed=0), T.nn.Tanh(), _linear(T, 3, 2, seed=1))
        opt = T.optim.SGD(net.parameters(), lr=0.5)

        class Cfg:
            clip = 0.3
            max_norm = 0.5

        cfg = Cfg()

        def step(x):
            opt.zero_grad()
            loss = (net(x) * 3.0).pow(2).mean()
            loss.backward()
            T.nn.utils.clip_grad_value_(net.parameters(), cfg.clip)
            norm = T.nn.utils.clip_grad_norm_(net.parameters(), cfg.max_norm, foreach=True)
            opt.step()
            return loss, norm

        f = wrap(step)

        def run(i):
            cfg.clip = [0.3, 0.05, 1.0, 0.2][i]
            cfg.max_norm = [0.5, 0.5, 0.1, 2.0][i]
            loss, norm = f(_rand(T, i, 2, 3))
            return loss, norm, net[0].weight, net[2].bias.grad
        return run
    compare(build, calls=4)


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

        def step(x):
            opt.zero_grad()
            with P.cached():
                y = lin(x)
                reg = (lin.weight - T.eye(3)).pow(2).sum()
            loss = y.pow(2).mean() + 0.1 * reg
            loss.backward()
            opt.step()
            return loss

        f = wrap(step)

        def run(i):
            loss = f(_rand(T, i, 2, 3))
            orig = lin.parametrizations.weight.original
            return loss, lin.weight, orig, orig.grad
        return run
    compare(build, calls=4)


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
    compare(build, calls=4)


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


def test_functional_call_with_a_parameter_dict_the_caller_rebuilds():
    """``torch.func.functional_call(net, params, (x,))`` inside a compiled function, where
    ``params`` is a dict argument the caller rebuilds each call: call 1 swaps in a different
    weight tensor, call 2 leaves out the bias (the module's own is used), call 3 passes a
    buffer-free dict with ``strict=False``. The gradient w.r.t. the dict's weight is returned."""
    def build(T, wrap):
        net = _linear(T, 3, 2, seed=0)
        w0 = _linear(T, 3, 2, seed=3).weight.detach()
        w1 = _linear(T, 3, 2, seed=4).weight.detach()

        def fn(params, x):
            y = T.func.functional_call(net, params, (x,))
            loss = y.pow(2).sum()
            (g,) = T.autograd.grad(loss, [params["weight"]])
            return loss, g

        f = wrap(fn)

        def run(i):
            w = (w1 if i == 1 else w0).clone().requires_grad_(True)
            params = {"weight": w} if i == 2 else {"weight": w, "bias": net.bias.detach() * i}
            loss, g = f(params, _rand(T, i, 2, 3))
            return loss, g, net.weight, net.bias
        return run
    compare(build, calls=4)


def test_parameters_to_vector_round_trip_with_a_noise_step():
    """The step flattens the parameters with ``parameters_to_vector``, takes a gradient step on
    the flat vector (grads flattened too), adds a perturbation argument, and writes back with
    ``vector_to_parameters`` under ``no_grad``; the flat vector is returned and the caller edits
    the returned vector in place (it must not alias the parameters)."""
    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 2, seed=0), T.nn.Tanh(), _linear(T, 2, 1, seed=1))
        U = T.nn.utils

        def step(x, noise):
            for p in net.parameters():
                p.grad = None
            loss = net(x).pow(2).mean()
            loss.backward()
            with T.no_grad():
                v = U.parameters_to_vector(net.parameters())
                g = U.parameters_to_vector(p.grad for p in net.parameters())
                v = v - 0.1 * g + noise
                U.vector_to_parameters(v, net.parameters())
            return loss, v

        f = wrap(step)

        def run(i):
            loss, v = f(_rand(T, i, 2, 3), _rand(T, 10 + i, 11) * 0.01)
            v.mul_(0.0)
            return loss, v, net[0].weight, net[2].bias
        return run
    compare(build, calls=4)
