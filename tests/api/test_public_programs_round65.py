"""A sixty-fifth round of public PyTorch programs, run unchanged with torch and with tracegrad
(``import tracegrad as torch``) from repositories no earlier round used; the program sources are
in tests/public_programs_round65_src.py, executed with ``torch`` bound to either module. Each
test compares losses, printed logs, gradients and parameters after optimizer steps:

- markkwang/MDN (no license file), ``src/mdn.py``, ``src/loss.py``, ``src/utils.py``,
  ``src/data.py`` and ``src/train_2d.py`` at a83a907 (a mixture density network for inverse
  problems): ``nn.Sequential(Linear, Softmax(dim=1))`` mixing weights, ``torch.exp`` scales and
  means ``.view(-1, k, output_dim)``, the loss written out by hand (``expand_as`` of the target,
  the Gaussian density, ``torch.prod`` over the output dims, ``-torch.log`` of the mixture plus
  1e-8), ``sample_from_mdn`` (``Categorical(pi).sample()``, gathering by
  ``[torch.arange(batch_size), component_indices]``, ``randn_like``), the script's Adam loop with
  ``model.zero_grad()`` and its ``f"Epoch {epoch} - Loss: {loss.item():.4f}"`` log.
- betray12138/Basic-RL-Algorithms (no license file), ``model/network.py`` at 540c85a,
  ``replay/replay.py`` at 12677dd, ``algo/a2c_discrete.py`` and ``algo/a2c_continuous.py`` at
  4844ace (advantage actor-critic): ``Sequential.extend`` with one shared ``net_block`` (so
  ``layer_size=3`` repeats one Linear), ``dist.Categorical`` of ``F.softmax`` probabilities and
  ``dist.Normal`` with a ``log_var`` parameter ``expand_as``-ed, ``exp().sqrt()``-ed;
  ``log_prob`` of the float actions the NumPy replay buffer hands back (shape ``(B, 1)``
  against a batch of ``B``: a ``(B, B)`` broadcast), the detached TD advantage, two Adams with
  ``clip_grad_norm_``, ``torch.FloatTensor(ndarray).to(device)``, ``select_action`` under
  ``no_grad`` (``np.argmax`` of the mean for evaluation), ``train``'s episode loop with its
  prints, a ``SummaryWriter``'s ``add_scalar`` and ``save_model``'s ``torch.save`` of both
  ``state_dict``s. The environments are hand-written (gymnasium is not installed).
- sair-lab/LGL (BSD-3-Clause), ``models/sage.py`` at d5fbf74, ``non_lifelong.py`` at 0c96b61,
  ``datasets/continuum.py`` at 1c35b9c (lifelong graph learning): GraphSAGE over per-node
  neighbour lists (``torch.cat`` of each list's ``mean(dim=0, keepdim=True)``, the GCN, mean and
  max-pool aggregators, ``BatchNorm1d(1)`` on ``(n, 1, f)`` node and neighbour features, its
  running statistics updated by every neighbour list), ``train``/``performance`` over a
  ``DataLoader`` with the ``graph_collate`` of ragged neighbours; ``LifelongSAGE``: the
  optimizer made by ``exec``, ``register_buffer`` of ``torch.Tensor(0, 1, f)`` and
  ``torch.LongTensor(0)`` rebound by ``torch.cat``, ``observe``'s replay of its memory in
  ``randperm`` minibatches, ``sample``'s reservoir (``memory_order += n`` on an empty
  ``LongTensor()``, ``torch.zeros(n, dtype=bool)``, ``ge(np.ceil(..)) * lt(np.floor(..))``,
  ``nonzero()``, ``mask[leftindex] = True`` with a ``(k, 1)`` index, a Python list indexed by the
  one-element tensors of ``mask.nonzero()``).
- todor-markov/deep-rl-algorithms (MIT), ``deeprl/models.py``, ``deeprl/rollouts.py`` and
  ``deeprl/ppo.py`` at ca636c0 (PPO with the clipped objective): ``BasicActorCritic`` with
  ``partial(distr.normal.Normal, scale=nn.Parameter)`` held in an ``nn.ParameterDict`` or
  ``partial(distr.categorical.Categorical, None)`` (logits passed second, positionally),
  ``th.tensor(obs).float()`` of NumPy observations; ``RolloutGenerator``: a vectorised rollout
  under ``no_grad`` (``log_prob(...).unsqueeze(-1).sum(dim=[...])``), ``th.as_tensor`` of lists
  of arrays, ``compute_gae``'s backwards loop of row writes into ``th.zeros``, ``_sf01``
  (``transpose(0, 1).reshape``), advantages normalised by ``mean``/``std``;
  ``train_ppo_clip``: the ratio ``exp``, ``th.clamp``, ``th.max`` of the negated surrogates,
  entropy bonus, approximate KL; the minibatch/epoch loop with early stop of ``run.py``.
- kperkins411/Pytorch_combine_embeddings_and_continuous_variables (no license file),
  ``multiple_inputs_embeddings_cats_oneatatime.py`` at 1bce1c1 (a categorical column's entity
  embedding beside continuous inputs), run whole: ``torch.manual_seed``, days mapped through
  ``list(set(days))``, ``embeddings(day).view((1, -1)).squeeze()`` concatenated with
  ``torch.tensor(float).unsqueeze(0)`` inputs, ``clamp(min=0)``, ``MSELoss(size_average=False)``
  (its deprecation warning) of a ``(1,)`` prediction against a 0-d target (the broadcast
  warning), Adam one row at a time, ``total_loss = torch.Tensor([0])`` summed with
  ``loss.item()`` and printed as ``str(tensor)``.
Changes, the same on both sides: parameters from seeded NumPy streams (for MDN, whose script
builds its model, an ``nn`` whose ``Linear`` draws them), the random draws (``sample()``,
``randn_like``, ``randperm``) taken from NumPy streams, synthetic data, tiny sizes.
"""
import contextlib
import functools
import io
import os
import types
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, compare, grads as _grads, init_uniform, numpy_draws, \
    same_error, same_logs, state as _state
from public_programs_round65_src import (A2C_CONTINUOUS, A2C_DISCRETE, LGL_COLLATE, LGL_TRAIN, MDN, MDN_DATA,
                                         MDN_LOSS, MDN_TRAIN, MDN_UTILS, PPO_CLIP, PPO_MODELS, PPO_ROLLOUTS,
                                         RL_NETWORK, RL_REPLAY, SAGE_LGL, EMBED_ONE_AT_A_TIME, module, program)

torch = pytest.importorskip("torch")

_compare = functools.partial(compare, torch, tracegrad)


class draws(numpy_draws):
    """``numpy_draws`` with ``randperm`` from the same NumPy stream as well."""

    def randperm(self, n, **kw):
        return self._T.tensor(self._rs.permutation(n))


def numpy_dists(T, seed):
    """A stand-in for ``torch.distributions`` (``dist``) whose ``Categorical``/``Normal`` draw
    ``sample()`` from a seeded NumPy stream (the inverse CDF of ``probs``; ``loc + scale *
    eps``); everything else (``log_prob``, ``mean``, validation) is ``T``'s own."""
    rs, D = np.random.RandomState(seed), T.distributions

    class Categorical(D.Categorical):
        def sample(self, sample_shape=()):
            p = self.probs.detach().numpy()
            u = rs.rand(*p.shape[:-1], 1)
            return T.tensor(np.minimum((np.cumsum(p, -1) < u).sum(-1), p.shape[-1] - 1))

    class Normal(D.Normal):
        def sample(self, sample_shape=()):
            with T.no_grad():
                return self.loc + self.scale * T.tensor(rs.randn(*self.loc.shape).astype(np.float32))

    return types.SimpleNamespace(Categorical=Categorical, Normal=Normal)


# ---------------------------------------------------------------- mixture density network

def split(X, y, test_size=0.2):
    """A stand-in for sklearn's ``train_test_split`` that keeps the order."""
    n = int(len(X) * (1 - test_size))
    return X[:n], X[n:], y[:n], y[n:]


def seeded_nn(T, seed):
    """``T.nn`` but for a ``Linear`` and an ``Embedding`` whose ``reset_parameters`` draw from a
    seeded NumPy stream (uniform in [-0.5, 0.5])."""
    rs = np.random.RandomState(seed)

    def fill(m):
        with T.no_grad():
            for p in m.parameters(recurse=False):
                p.copy_(T.tensor(rs.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))

    class Linear(T.nn.Linear):
        def reset_parameters(self):
            fill(self)

    class Embedding(T.nn.Embedding):
        def reset_parameters(self):
            fill(self)

    ns = types.SimpleNamespace(**{k: getattr(T.nn, k) for k in dir(T.nn) if not k.startswith("_")})
    ns.Linear, ns.Embedding = Linear, Embedding
    return ns


class seeded_torch:
    """``T`` but for its ``nn`` (``seeded_nn``): a script that builds its model from
    ``torch.nn`` gets the same parameters with torch and tracegrad."""

    def __init__(self, T, seed):
        self._T, self.nn = T, seeded_nn(T, seed)

    def __getattr__(self, name):
        return getattr(self._T, name)


def mdn_program(T, seed=1):
    """The MDN, loss and sampling modules with a seeded ``nn`` and NumPy ``Categorical`` draws."""
    nn = seeded_nn(T, seed)
    return nn, program(numpy_draws(T, 2), MDN + MDN_LOSS + MDN_UTILS, nn=nn,
                       Categorical=numpy_dists(T, 3).Categorical)


def parabola(T, n=40):
    np.random.seed(0)
    return program(T, MDN_DATA, train_test_split=split).generate_parabola_data(n=n)


def _mdn_script(T, epochs):
    x_train, x_test, y_train, y_test = parabola(T)
    nn, ns = mdn_program(T)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = program(T, MDN_TRAIN, nn=nn, MDN=ns.MDN, mdn_loss=ns.mdn_loss, sample_from_mdn=ns.sample_from_mdn,
                      input_dim=1, output_dim=1, hidden_dim=5, epochs=epochs, lr=0.01, x_train=x_train,
                      x_test=x_test, y_train=y_train, y_test=y_test)
    return buf.getvalue(), _arr(out.loss, out.y_sample, out.pi_test, out.sigma_test) + _state(out.model)


def test_mdn_train_2d_script():
    (ref_log, ref), (got_log, got) = _mdn_script(torch, 4), _mdn_script(tracegrad, 4)
    assert ref_log.startswith("Training...\nEpoch 0 - Loss: ") and ref_log.endswith("Training completed.\n")
    same_logs(ref_log, got_log, 1e-4)
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def _mdn_loss(T, far):
    _, ns = mdn_program(T)
    rs = np.random.RandomState(4)
    logits = T.tensor(rs.randn(5, 3).astype(np.float32), requires_grad=True)
    log_sigma = T.tensor(rs.randn(5, 3, 2).astype(np.float32) * 0.3, requires_grad=True)
    mu = T.tensor(rs.randn(5, 3, 2).astype(np.float32), requires_grad=True)
    # far targets: every density underflows to 0 and the loss is -log(1e-8)
    target = T.tensor(rs.randn(5, 2).astype(np.float32) + (40.0 if far else 0.0))
    pi, sigma = T.softmax(logits, dim=1), T.exp(log_sigma)
    loss = ns.mdn_loss(pi, sigma, mu, target)
    loss.backward()
    return _arr(loss, logits.grad, log_sigma.grad, mu.grad) + [type(loss.grad_fn).__name__]


@pytest.mark.parametrize("far", [False, True], ids=["near", "underflow"])
def test_mdn_loss_two_dims(far):
    ref, got = _mdn_loss(torch, far), _mdn_loss(tracegrad, far)
    assert ref[-1] == got[-1] == "MeanBackward0"
    if far:
        np.testing.assert_allclose(ref[0], -np.log(1e-8), rtol=1e-6)
    _compare(lambda T: (ref if T is torch else got)[:-1], tol=2e-5)


# ---------------------------------------------------------------- A2C (betray12138)

class Writer:
    """A stand-in for tensorboardX's ``SummaryWriter``: the ``add_scalar`` calls, in order."""

    def __init__(self):
        self.log = []

    def add_scalar(self, *args):
        self.log.append(args)


class Corridor:
    """Four cells; action 1 steps right, 0 left; reward 1 (and done) at the right end,
    truncated after 4 steps. Observations ``(pos / 3, 1 - pos / 3)``."""

    def reset(self):
        self.pos, self.t = 0, 0
        return self.obs()

    def obs(self):
        return np.array([self.pos / 3.0, 1.0 - self.pos / 3.0])

    def step(self, action):
        self.t += 1
        self.pos = min(3, max(0, self.pos + (1 if int(np.asarray(action).flatten()[0]) == 1 else -1)))
        return self.obs(), float(self.pos == 3), self.pos == 3, self.t >= 4


class Point:
    """A point moved by half the action; reward ``-x**2``; truncated after 3 steps."""

    def reset(self):
        self.x, self.t = 0.5, 0
        return np.array([self.x, 1.0])

    def step(self, action):
        self.t += 1
        self.x = self.x + 0.5 * float(np.asarray(action).flatten()[0])
        return np.array([self.x, 1.0]), -self.x ** 2, False, self.t >= 3


def agent(T, continuous, layer_size=2):
    """An ``A2C_Continuous`` (2-d states, 1-d actions in [-1, 1]) or ``A2C_Discrete`` (2-d
    states, 2 actions), hidden 6, its networks seeded."""
    Net = module(T, RL_NETWORK, dist=numpy_dists(T, 0))
    g = dict(Net=Net, ReplayBuffer=program(T, RL_REPLAY).ReplayBuffer, SummaryWriter=Writer,
             RewardScaling=object, Normalization=object)
    if continuous:
        a = program(T, A2C_CONTINUOUS, **g).A2C_Continuous("cpu", 2, 1, 1.0, 0.9, 0.01, 0.02, layer_size, 6,
                                                              0.5, 32)
    else:
        a = program(T, A2C_DISCRETE, **g).A2C_Discrete("cpu", 2, 2, 0.9, 0.01, 0.02, layer_size, 6, 0.5, 32)
    init_uniform(T, a.actor, 1, 0.5)
    init_uniform(T, a.critic, 2, 0.5)
    return a


def _a2c_train(T, tmp, continuous, layer_size):
    a = agent(T, continuous, layer_size)
    writer, buf = Writer(), io.StringIO()
    folder = str(tmp / T.__name__) + "/"
    os.makedirs(folder)
    with contextlib.redirect_stdout(buf):
        env = Point if continuous else Corridor
        a.train(env(), env(), writer, 8, 2, 1, folder)
    saved = sorted(os.listdir(folder))
    loaded = T.load(folder + saved[0])
    facts = [saved, sorted(loaded), len(list(a.actor.parameters())), len(a.actor.policy), writer.log]
    return buf.getvalue(), facts, _state(a.actor) + _state(a.critic) + _arr(*loaded.values())


@pytest.mark.parametrize("continuous,layer_size", [(False, 3), (True, 2)], ids=["discrete", "continuous"])
def test_a2c_train_loop(tmp_path, continuous, layer_size):
    (ref_log, ref_facts, ref), (got_log, got_facts, got) = (_a2c_train(T, tmp_path, continuous, layer_size)
                                                            for T in (torch, tracegrad))
    assert ref_log.count("Episode: ") == 3, ref_log
    same_logs(ref_log, got_log, 1e-5)
    # the returns logged to the writer, then the rest exactly
    (rl, gl) = ref_facts.pop(), got_facts.pop()
    assert [r[0::2] for r in rl] == [g[0::2] for g in gl]
    np.testing.assert_allclose([g[1] for g in gl], [r[1] for r in rl], rtol=1e-5, atol=1e-5)
    assert ref_facts == got_facts, (ref_facts, got_facts)
    # layer_size=3 extends the policy with one shared block twice: its Linear counts once
    assert ref_facts[2:] == ([6, 5] if layer_size == 3 else [7, 3])
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def _a2c_update(T, continuous, actions):
    a = agent(T, continuous)
    rs = np.random.RandomState(5)
    for act in actions:
        a.replay.store(rs.randn(2), np.array(act), np.array([rs.randn()]), rs.randn(2), np.array([False]))
    a.update()
    state = a.replay.sample_all_to_tensor("cpu")[0]
    _, d = a.actor(state)
    shape = tuple(d.log_prob(a.replay.sample_all_to_tensor("cpu")[1]).shape)
    return shape, _grads(a.actor) + _grads(a.critic) + _state(a.actor) + _state(a.critic)


@pytest.mark.parametrize("continuous,actions", [(False, [[1.0], [0.0], [1.0]]), (True, [[0.3], [-0.2], [0.9]])],
                         ids=["discrete", "continuous"])
def test_a2c_update_on_a_batch(continuous, actions):
    # three transitions: the discrete actions ``(3, 1)`` broadcast against a batch of 3
    (ref_shape, ref), (got_shape, got) = (_a2c_update(T, continuous, actions) for T in (torch, tracegrad))
    assert ref_shape == got_shape == ((3, 1) if continuous else (3, 3))
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


@pytest.mark.parametrize("action", [2.0, 0.5])
def test_a2c_action_outside_support_fails_alike(action):
    msgs = same_error(torch, tracegrad, lambda T: _a2c_update(T, False, [[action]]))
    assert all(m.startswith("Expected value argument (Tensor of shape (1, 1)) to be within the support "
                            "(IntegerInterval(lower_bound=0, upper_bound=1))") for m in msgs), msgs


def test_a2c_evaluation_is_greedy():
    def run(T):
        a = agent(T, False)
        acts = [a.select_action(np.array([x, 1.0 - x]), True) for x in (0.0, 0.5, 1.0)]
        ret = a.evaluation(Corridor(), Writer(), None)
        return [[a.tolist() for a in acts], ret, a.actor.training, a.critic.training]
    assert run(torch) == run(tracegrad)


# ---------------------------------------------------------------- GraphSAGE (sair-lab/LGL)

def graph_items(T, n=7, f=3, seed=0):
    """``Continuum.__getitem__``'s items for a random graph: ``(features (1, f), label,
    neighbour features (k, 1, f))``, each node its own neighbour (the self-loops it adds)."""
    rs = np.random.RandomState(seed)
    feats, labels = rs.randn(n, f).astype(np.float32), rs.randint(0, 3, n)
    nbrs = [sorted({i, *rs.choice(n, rs.randint(1, 4))}) for i in range(n)]
    return [(T.tensor(feats[i]).unsqueeze(-2), T.tensor(labels[i]), T.tensor(feats[nb]).unsqueeze(-2))
            for i, nb in enumerate(nbrs)]


def _sage_train(T, aggr):
    net = init_uniform(T, program(T, SAGE_LGL).SAGE(3, 3, hidden=[4, 5], aggr=aggr), 1)
    ns = program(T, LGL_TRAIN + LGL_COLLATE, tqdm=types.SimpleNamespace(tqdm=lambda x: x),
                 args=types.SimpleNamespace(k=None))
    loader = T.utils.data.DataLoader(graph_items(T), batch_size=3, shuffle=False, collate_fn=ns.graph_collate,
                                     drop_last=True)
    opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    res = [ns.train(loader, net, T.nn.CrossEntropyLoss(), opt, "cpu") for _ in range(2)]
    acc = ns.performance(loader, net, "cpu")
    return [r[1] for r in res] + [acc], [r[0] for r in res], _grads(net) + _state(net)


@pytest.mark.parametrize("aggr", ["gcn", "mean", "pool"])
def test_sage_train_and_performance(aggr):
    (ref_acc, ref_loss, ref), (got_acc, got_loss, got) = _sage_train(torch, aggr), _sage_train(tracegrad, aggr)
    assert ref_acc == got_acc
    np.testing.assert_allclose(got_loss, ref_loss, rtol=2e-5)
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def _lifelong(T, uniform=False):
    args = types.SimpleNamespace(memory_size=4, optm="SGD", lr=0.1, iteration=2, batch_size=2)
    net = program(draws(T, 3), SAGE_LGL).LifelongSAGE(args, 3, 3)
    init_uniform(T, net, 1, 0.1)
    items, collate = graph_items(T), program(T, LGL_COLLATE).graph_collate
    out, sizes = [], []
    for b in range(0, 7, 2):                 # batches of 2, 2, 2, 1
        inputs, targets, neighbor = collate(items[b:b + 2])
        if uniform:
            net.uniform_sample(inputs, targets, neighbor)
        else:
            net.observe(inputs, targets, neighbor)
        out += _arr(net.inputs, net.targets) + ([] if uniform else _arr(net.memory_order))
        sizes.append([tuple(n.shape) for n in net.neighbor])
    facts = [sizes, net.sample_viewed, sorted(dict(net.named_buffers())), type(net.optimizer).__name__]
    return facts, out + _grads(net) + _state(net)


@pytest.mark.parametrize("uniform", [False, True], ids=["observe", "uniform_sample"])
def test_lifelong_sage_memory(uniform):
    (ref_facts, ref), (got_facts, got) = _lifelong(torch, uniform), _lifelong(tracegrad, uniform)
    assert ref_facts == got_facts, (ref_facts, got_facts)
    assert len(ref_facts[0][-1]) == 4       # the memory holds memory_size nodes
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


# ---------------------------------------------------------------- PPO (todor-markov)

class Box:
    """A stand-in for ``gym.spaces.Box`` (gym is not installed)."""

    def __init__(self, shape):
        self.shape = shape


class Discrete:
    """A stand-in for ``gym.spaces.Discrete``."""

    def __init__(self, n):
        self.n = n


gym = types.SimpleNamespace(spaces=types.SimpleNamespace(Box=Box, Discrete=Discrete))


class VecWalk:
    """``n`` walkers on a line as a vectorised env (baselines' ``SubprocVecEnv`` interface):
    observations ``(x, t / 5)``, reward ``-|x|``, episodes of 5 steps (reset in place, with an
    ``info['episode']``), actions a 1-d move or one of 3 (left, stay, right)."""

    def __init__(self, n, continuous):
        self.n, self.continuous = n, continuous
        self.observation_space = Box((2,))
        self.action_space = Box((1,)) if continuous else Discrete(3)

    def reset(self):
        self.x, self.t, self.ret = np.linspace(-1, 1, self.n), 0, np.zeros(self.n)
        return self.obs()

    def obs(self):
        return np.stack([self.x, np.full(self.n, self.t / 5.0)], 1).astype(np.float32)

    def step(self, ac):
        ac = np.asarray(ac)
        self.x = self.x + 0.3 * (ac[:, 0] if self.continuous else ac - 1.0)
        self.t += 1
        rew = -np.abs(self.x)
        self.ret += rew
        done = np.full(self.n, self.t >= 5)
        infos = [{"episode": {"r": float(self.ret[i]), "l": self.t}} if done[i] else {} for i in range(self.n)]
        if self.t >= 5:
            self.reset()
        return self.obs(), rew, done, infos


def ppo_program(T, seed=0):
    """models.py, rollouts.py and ppo.py with NumPy-drawn ``sample()`` (``distr``)."""
    d = numpy_dists(T, seed)
    distr = types.SimpleNamespace(normal=types.SimpleNamespace(Normal=d.Normal),
                                  categorical=types.SimpleNamespace(Categorical=d.Categorical))
    return program(T, PPO_MODELS + PPO_ROLLOUTS + PPO_CLIP, th=T, distr=distr, gym=gym,
                   partial=functools.partial)


def ppo_setup(T, continuous):
    ns = ppo_program(T)
    env = VecWalk(3, continuous)
    model = init_uniform(T, ns.mlp_model(env, [5, 4]), 1, 0.5)
    return ns, model, ns.RolloutGenerator(model, env, gamma=0.9, lam=0.8), T.optim.Adam(model.parameters(), lr=0.01)


def _ppo(T, continuous):
    ns, model, gen, opt = ppo_setup(T, continuous)
    out, epinfos, mb = [], [], 6
    for _ in range(2):                  # run.py's updates: 4 steps of 3 envs, 2 minibatches, 3 epochs
        obs, rews, dones, acs, old, vpreds, advs, vtargs, infos = gen.generate_rollout(4)
        epinfos += infos
        out += _arr(obs, rews, dones, acs, old, vpreds, advs, vtargs)
        for _ in range(3):
            for i in range(2):
                sl = slice(i * mb, (i + 1) * mb)
                info = ns.train_ppo_clip(model, opt, obs[sl], acs[sl], advs[sl], vtargs[sl], old[sl], entcoef=0.01)
            if info["kl_divergence"] > 0.075:
                break
        out += _arr(*info.values())
    facts = [sorted(dict(model.named_parameters())), sorted(info), len(epinfos), gen.reduce_acd_dims]
    return facts, out + _state(model)


@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy.ndarrays")
@pytest.mark.parametrize("continuous", [False, True], ids=["categorical", "normal"])
def test_ppo_rollouts_and_clipped_updates(continuous):
    (ref_facts, ref), (got_facts, got) = _ppo(torch, continuous), _ppo(tracegrad, continuous)
    assert ref_facts == got_facts, (ref_facts, got_facts)
    assert ("ac_distr_params.scale" in ref_facts[0]) is continuous
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


# ---------------------------------------------------------------- entity embedding (kperkins411)

def _embed_script(T):
    buf = io.StringIO()
    with warnings.catch_warnings(record=True) as w, contextlib.redirect_stdout(buf):
        warnings.simplefilter("always")
        ns = program(seeded_torch(T, 0), EMBED_ONE_AT_A_TIME)
    kinds = sorted({(m.category.__name__, str(m.message)[:40]) for m in w})
    return buf.getvalue(), kinds, _state(ns.model) + _arr(ns.total_loss, ns.y_pred, ns.loss)


def test_embedding_one_row_at_a_time_script():
    (ref_log, ref_warn, ref), (got_log, got_warn, got) = _embed_script(torch), _embed_script(tracegrad)
    assert ref_log.startswith("Epoch 0, loss =tensor([") and ref_log.count("\n") == 2, ref_log
    same_logs(ref_log, got_log, 1e-4)
    assert ref_warn == got_warn == [("UserWarning", "Using a target size (torch.Size([])) tha"),
                                    ("UserWarning", "size_average and reduce args will be dep")], got_warn
    _compare(lambda T: ref if T is torch else got, tol=2e-5)
