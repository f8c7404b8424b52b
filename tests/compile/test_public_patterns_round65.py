"""Compile patterns of the sixty-fifth round of public programs
(tests/api/test_public_programs_round65.py; sources in tests/public_programs_round65_src.py): each
program's training step run by torch eagerly, tracegrad eagerly and ``tracegrad.compile`` on the
same initial state:

- markkwang/MDN: ``train_2d.py``'s loop body (``model.zero_grad()``, the hand-written mixture
  likelihood, Adam): one trace after the eager first call. ``sample_from_mdn`` compiled on
  tracegrad's own random stream draws what eager draws from the same seed.
- betray12138/Basic-RL-Algorithms: ``A2C_*.update`` itself compiled (it reads the NumPy replay
  buffer, ``torch.FloatTensor(ndarray)``, builds ``Categorical``/``Normal``, steps two Adams
  with ``clip_grad_norm_``). With the distributions' ``validate_args`` on (torch's default) it
  runs eagerly with a warning that says how to compile it; with it off, repeated updates on one
  batch are one trace. A buffer refilled between calls holds new NumPy values, constants of
  each program: a trace per call up to ``cache_size_limit``, then eager calls with a warning.
  Until round 65 that warning blamed "the global '__defaults__'" (two methods' defaults,
  ``select_action``'s and ``evaluation``'s, compared with each other by their shared name) and
  never named the arrays; it now names the ReplayBuffer's arrays (NOTE [repeated names in the
  scalar signature], _lowering/guards.py).
- sair-lab/LGL: ``non_lifelong.train``'s step over ragged neighbour lists for the GCN and
  max-pool aggregators: one trace; another batch (other neighbour counts) another trace.
  ``LifelongSAGE.observe`` (a Python counter on the module, ``nonzero`` masks, ``randperm``)
  runs eagerly with a warning naming its line, equal to eager.
- kperkins411/Pytorch_combine_embeddings_and_continuous_variables: the one-row step (embedding
  lookup, ``MSELoss(size_average=False)`` of a ``(1,)`` prediction against a 0-d target, Adam)
  compiled, the running ``total_loss += loss.item()`` outside it: one trace.
- todor-markov/deep-rl-algorithms: ``train_ppo_clip`` compiled (model and optimizer passed in,
  a dict of five tensors returned), run over ``run.py``'s minibatches and epochs of two
  rollouts made eagerly, for a Categorical (logits) and a Normal policy (its scale a parameter
  in a ``ParameterDict``): one trace after the eager first call; the early-stop test on the
  returned KL reads a tensor outside the compiled function.
"""
import functools
import warnings

import numpy as np
import pytest

import tracegrad
import tracegrad._dynamo as tdynamo
from public_programs_helpers import arrays as _arr, close, compiled_parity, state as _state

torch = pytest.importorskip("torch")

import api.test_public_programs_round65 as _api  # noqa: E402  (the stand-ins and the tiny sizes)
from public_programs_round65_src import EMBED_ONE_AT_A_TIME, LGL_COLLATE, MDN_UTILS, SAGE_LGL, program  # noqa: E402


pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")     # graph breaks

_parity = functools.partial(compiled_parity, torch, tracegrad)


@pytest.fixture
def no_validation():
    """``Distribution.set_default_validate_args(False)`` in both libraries while the test runs."""
    for T in (torch, tracegrad):
        T.distributions.Distribution.set_default_validate_args(False)
    yield
    for T in (torch, tracegrad):
        T.distributions.Distribution.set_default_validate_args(True)


@pytest.fixture
def small_cache():
    """``cache_size_limit`` 2 while the test runs: a few calls reach it."""
    old = tdynamo.config.cache_size_limit
    tdynamo.config.cache_size_limit = 2
    yield
    tdynamo.config.cache_size_limit = old


def _calls_changing(f, change, x, n=5):
    """``f(x)`` as a list, ``n`` times, ``change(i)`` before call ``i``; and the
    tracegrad.compile warnings."""
    def calls():
        out = []
        for i in range(n):
            change(i)
            out.append(f(x).tolist())
        return out
    return _caught(calls)


def _caught(fn):
    """``fn()``'s result and the tracegrad.compile warnings it gave."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(m.message) for m in w if "tracegrad.compile" in str(m.message)]


# ---------------------------------------------------------------- MDN

def _mdn(T, compiled):
    x_train, _, y_train, _ = _api.parabola(T)
    nn, ns = _api.mdn_program(T)
    model = nn.Sequential(nn.Linear(1, 5), nn.ReLU(), ns.MDN(5, 1, k=2))
    optimizer = T.optim.Adam(model.parameters(), lr=0.01)

    def step(x, y):                     # train_2d.py's loop body
        model.train()
        model.zero_grad()
        pi, sigma, mu = model(x)
        loss = ns.mdn_loss(pi, sigma, mu, y)
        loss.backward()
        optimizer.step()
        return loss

    f = T.compile(step) if compiled else step
    return _arr(*[f(x_train, y_train) for _ in range(4)]) + _state(model), f


def test_mdn_step_compiled():
    stats = _parity(_mdn)
    assert stats["traces"] == 1 and stats["eager_calls"] == 1 and not stats["graph_breaks"], stats


def _mdn_samples(compiled):
    ns = program(tracegrad, MDN_UTILS)
    rs = np.random.RandomState(0)
    pi = tracegrad.softmax(tracegrad.tensor(rs.randn(6, 3).astype(np.float32)), 1)
    sigma = tracegrad.tensor(rs.rand(6, 3, 2).astype(np.float32))
    mu = tracegrad.tensor(rs.randn(6, 3, 2).astype(np.float32))
    tracegrad.manual_seed(0)
    f = tracegrad.compile(ns.sample_from_mdn) if compiled else ns.sample_from_mdn
    return _arr(*[f(pi, sigma, mu) for _ in range(4)]), f


def test_mdn_sampling_compiled_follows_the_eager_stream(no_validation):
    # tracegrad's own random stream (Categorical(pi).sample(), randn_like): from one seed the
    # compiled calls draw what the eager ones draw, a new draw on every call
    (eager, _), (comp, f) = _mdn_samples(False), _mdn_samples(True)
    close(eager, comp, 1e-5)
    assert not np.allclose(comp[1], comp[2])
    assert f.stats["traces"] == 1 and f.stats["eager_calls"] == 1 and not f.stats["graph_breaks"], f.stats


# ---------------------------------------------------------------- A2C

def _store(a, rs, i, continuous):
    act = [rs.uniform(-1, 1)] if continuous else [float(i % 2)]
    a.replay.store(rs.randn(2), np.array(act), np.array([rs.randn()]), rs.randn(2), np.array([i == 2]))


def _a2c(continuous, refill, calls=4):
    def run(T, compiled):
        a = _api.agent(T, continuous)
        f = T.compile(a.update) if compiled else a.update
        rs, out = np.random.RandomState(5), []
        _store(a, rs, 0, continuous)
        for i in range(calls):
            if refill:                  # train()'s clear() and store() between updates
                a.replay.clear()
                _store(a, rs, i, continuous)
            f()
            out += _state(a.actor) + _state(a.critic)
        return out, f
    return run


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
def test_a2c_update_compiled_on_one_batch(no_validation, continuous):
    stats = _parity(_a2c(continuous, refill=False))
    assert stats["traces"] == 1 and stats["eager_calls"] == 1 and not stats["graph_breaks"], stats


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
def test_a2c_update_validating_runs_eagerly(continuous):
    stats, msgs = _caught(lambda: _parity(_a2c(continuous, refill=False, calls=2)))
    name = "Normal" if continuous else "Categorical"
    assert stats["traces"] == 0 and stats["eager_calls"] == 2, stats
    assert len(msgs) == 1 and f"{name}(validate_args=True)" in msgs[0] and "set_default_validate_args(False)" \
        in msgs[0], msgs


def test_a2c_update_refilled_buffer_names_the_arrays(no_validation, small_cache):
    stats, msgs = _caught(lambda: _parity(_a2c(False, refill=True, calls=4)))
    # calls 2-3 traced (new values each), 4 eager past the limit
    assert stats["traces"] == 2 and stats["eager_calls"] == 2, stats
    assert len(msgs) == 1 and "cache_size_limit" in msgs[0], msgs
    assert "the attribute 'state' of a ReplayBuffer (a NumPy array)" in msgs[0], msgs[0]
    assert "__defaults__" not in msgs[0], msgs[0]


def test_changed_values_pairs_repeated_names_by_position(small_cache):
    """Two helpers' defaults (both refs named ``__defaults__``) that did not change, and a NumPy
    global that did: the cache-limit warning names the array, not the defaults."""
    data = {"a": np.zeros(2)}

    def helper_a(x, scale=2.0):
        return x * scale

    def helper_b(x, shift=None):
        return x if shift is None else x + shift

    def step(x):
        return helper_b(helper_a(x)) + tracegrad.tensor(data["a"], dtype=tracegrad.float32)

    out, msgs = _calls_changing(tracegrad.compile(step), lambda i: data.update(a=np.full(2, float(i))),
                                tracegrad.ones(2))
    assert out == [[2.0 + i] * 2 for i in range(5)]
    assert len(msgs) == 1 and "the entry 'a' of a dict (a NumPy array)" in msgs[0], msgs
    assert "__defaults__" not in msgs[0] and "defaults of" not in msgs[0], msgs[0]


def test_changed_defaults_are_named_by_their_function(small_cache):
    """A helper's ``__defaults__`` rebound between calls (each value a constant of its program):
    past the limit the warning names that helper's defaults, not "the global '__defaults__'"."""
    def helper(x, scale=1.0):
        return x * scale

    def other(x, shift=0.0):
        return x + shift

    out, msgs = _calls_changing(tracegrad.compile(lambda x: other(helper(x))),
                                lambda i: setattr(helper, "__defaults__", (float(i),)), tracegrad.ones(1))
    assert out == [[0.0], [1.0], [2.0], [3.0], [4.0]]
    assert len(msgs) == 1 and "the defaults of test_changed_defaults_are_named_by_their_function.<locals>.helper" \
        in msgs[0], msgs
    assert "other" not in msgs[0] and "the global" not in msgs[0], msgs[0]


# ---------------------------------------------------------------- GraphSAGE (LGL)

def _sage(aggr):
    def run(T, compiled):
        net = _api.init_uniform(T, program(T, SAGE_LGL).SAGE(3, 3, hidden=[4, 5], aggr=aggr), 1)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        criterion = T.nn.CrossEntropyLoss()
        collate = program(T, LGL_COLLATE).graph_collate

        def step(inputs, targets, neighbor):        # non_lifelong.train's loop body
            opt.zero_grad()
            outputs = net(inputs, neighbor)
            loss = criterion(outputs, targets)
            loss.backward()
            opt.step()
            return loss, outputs

        f = T.compile(step) if compiled else step
        items, out = _api.graph_items(T), []
        for batch in (items[:2], items[:2], items[:2], items[2:4]):
            out += _arr(*f(*collate(batch)))
        return out + _state(net), f
    return run


@pytest.mark.parametrize("aggr", ["gcn", "pool"])      # (the API test runs "mean" too)
def test_sage_step_compiled(aggr):
    stats = _parity(_sage(aggr))
    # the second batch's neighbour lists have other lengths: a second program
    assert stats["traces"] == 2 and stats["eager_calls"] == 1 and not stats["graph_breaks"], stats


def _observe(T, compiled):
    out, f = [], None

    def run():
        nonlocal f
        args = _api.types.SimpleNamespace(memory_size=4, optm="SGD", lr=0.1, iteration=2, batch_size=2)
        net = program(_api.draws(T, 3), SAGE_LGL).LifelongSAGE(args, 3, 3)
        _api.init_uniform(T, net, 1, 0.1)
        f = T.compile(net.observe) if compiled else net.observe
        items, collate = _api.graph_items(T), program(T, LGL_COLLATE).graph_collate
        for b in range(0, 7, 2):
            f(*collate(items[b:b + 2]))
            out.extend(_arr(net.inputs, net.targets, net.memory_order))
        return out + _state(net)
    res, msgs = _caught(run)
    return (res, msgs), f


def test_lifelong_observe_compiled_runs_eagerly():
    (ref, _), _ = _observe(torch, False)
    (got, msgs), f = _observe(tracegrad, True)
    _api._compare(lambda T: ref if T is torch else got, tol=2e-5)
    assert f.stats["traces"] == 0 and f.stats["eager_calls"] == 4, f.stats
    assert len(msgs) == 1 and "setting attribute 'sample_viewed' of LifelongSAGE" in msgs[0], msgs


# ---------------------------------------------------------------- PPO (todor-markov)

def _ppo(continuous):
    def run(T, compiled):
        ns, model, gen, opt = _api.ppo_setup(T, continuous)
        f = T.compile(ns.train_ppo_clip) if compiled else ns.train_ppo_clip
        out = []
        for _ in range(2):
            obs, _, _, acs, old, _, advs, vtargs, _ = gen.generate_rollout(4)
            for _ in range(2):
                for i in range(2):
                    sl = slice(i * 6, (i + 1) * 6)
                    info = f(model, opt, obs[sl], acs[sl], advs[sl], vtargs[sl], old[sl], entcoef=0.01)
                    out += _arr(*info.values())
                if info["kl_divergence"] > 0.075:
                    break
        return out + _state(model), f
    return run


@pytest.mark.parametrize("continuous", [False, True], ids=["categorical", "normal"])
def test_ppo_clip_step_compiled(no_validation, continuous):
    stats = _parity(_ppo(continuous))
    assert stats["traces"] == 1 and stats["eager_calls"] == 1 and not stats["graph_breaks"], stats


# ---------------------------------------------------------------- entity embedding (kperkins411)

def _embed(T, compiled):
    rs = np.random.RandomState(1)
    # the script's TwoLayerNet: its source up to the data (which the step takes as arguments),
    # with the seeded modules
    ns = program(T, EMBED_ONE_AT_A_TIME.split("# dtype = torch.float32")[0], torch=_api.seeded_torch(T, 0))
    model = ns.TwoLayerNet(600, 8, 1, embedding_num=7, embedding_dim=5)
    loss_fn = T.nn.MSELoss(reduction="sum")
    optimizer = T.optim.Adam(model.parameters(), lr=4e-3)

    def step(x_1, x_2, context_idx, y_1):       # the script's inner loop body
        y_pred = model(x_1, x_2, context_idx)
        loss = loss_fn(y_pred, y_1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    f = T.compile(step) if compiled else step
    total_loss, out = T.Tensor([0]), []
    for j in range(5):
        loss = f(T.tensor(rs.randn()).unsqueeze(0), T.tensor(rs.randn()).unsqueeze(0),
                 T.tensor([int(rs.randint(0, 7))], dtype=T.long), T.tensor(rs.randn(), dtype=T.float))
        total_loss += loss.item()
        out += _arr(loss)
    return out + _arr(total_loss) + _state(model), f


def test_embedding_row_step_compiled():
    stats = _parity(_embed)
    assert stats["traces"] == 1 and stats["eager_calls"] == 1 and not stats["graph_breaks"], stats
