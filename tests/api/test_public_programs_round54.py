"""A fifty-fourth round of public PyTorch programs, run unchanged with torch and with tracegrad
(``import tracegrad as torch``) from repositories no earlier round used; the program sources are
in tests/public_programs_round54_src.py, executed with ``torch`` bound to either module. Each test
compares forward values, losses, gradients and the parameters after a few optimizer steps:

- tonyduan/normalizing-flows (MIT), ``nf/flows.py`` at e04a4f3, ``nf/utils.py`` at 1ddf686,
  ``nf/models.py`` at 680f643 and ``examples/flow_2d.py``'s loop at 5dbbecb: normalizing flows
  on 2-d data (planar, radial, RealNVP coupling, MAF, ActNorm, the LU-parametrised invertible
  1x1 "convolution" built with SciPy's ``qr``/``lu``, neural spline flows), a
  ``MultivariateNormal`` prior, uninitialised ``torch.Tensor(dim)`` parameters filled by
  ``init.uniform_``, a dict keyed by ``torch.tanh``/``F.elu`` holding derivatives with
  ``(x > 0).type(torch.FloatTensor)``, autoregressive columns written in place into
  ``zeros_like`` (``z[:, i] = ...``, ``log_det -= alpha``), ``torch.split``/``softmax``/
  ``softplus`` spline parameters; the rational-quadratic spline's boolean-mask reads and writes
  of 2-d masks into 3-d tensors (``outputs[mask], logabsdet[mask] = RQS(...)``), in-place writes
  into ``F.pad`` outputs, a ``searchsorted`` by summing ``>=`` after ``bin_locations[..., -1]
  += eps`` on a tensor autograd uses, ``gather`` of the bins; the column standardisation
  ``x[:, i] = (x[:, i] - mean) / std``; the repo's own errors (``Input outside domain``,
  ``NormalizingFlowModel.inverse`` calling the flows' missing ``inverse``, the 1x1 conv's
  ``if not self.W_inv`` on a cached 2x2 tensor, MAF's inverse written in place into a tensor its
  own layers read) raised alike.
- Lightning-Universe/lightning-bolts (Apache-2.0), ``src/pl_bolts/losses/rl.py`` at 2b0b649,
  ``src/pl_bolts/models/rl/common/networks.py`` at 268d493 and the DQN's ``training_step``: the
  DQN, double-DQN and prioritised-replay losses (``gather`` of the taken actions,
  ``max(1)[0]``/``max(1)[1]``, ``next_state_values[dones] = 0.0`` by a bool mask under
  ``no_grad``, ``torch.tensor(list)`` weights, ``.data.cpu().numpy()``), the target network
  synced by ``load_state_dict(net.state_dict())`` every ``sync_rate`` steps, Adam; the
  ``NoisyLinear`` layer (``normal_()`` into registered buffers every forward, ``.data`` of a
  buffer, ``F.linear`` of the noisy weights), the actor-critic MLP with a ``Categorical`` policy
  loss, ``ContinuousMLP``'s ``TanhMultivariateNormal`` (a ``MultivariateNormal`` subclass
  built by keyword through ``super().__init__(**kwargs)`` with a ``diag_embed`` scale, its
  ``log_prob`` by ``atanh`` written with logs and the tanh correction), and ``DuelingMLP``, whose ``adv_val`` calls heads the class never made (AttributeError
  on both sides).
- omihub777/ViT-CIFAR (MIT), ``vit.py`` at 03b33ef, ``layers.py`` at 3ef5f64, ``criterions.py`` at
  85eac76 and ``main.py``'s ``training_step``: a small ViT (patches by two ``unfold`` calls, a
  6-d ``permute(...).contiguous().view``, a class token ``repeat``-ed over the batch, learned
  position embeddings, pre-norm encoders whose attention is two ``einsum``s with spaced
  subscripts ``"bhif, bhjf->bhij"``, ``flatten(2)``, GELU MLPs), the label-smoothing loss
  (``fill_`` then ``scatter_`` of ``target.data`` under ``no_grad``), ``torch.eq(out.argmax(-1),
  label).float().mean()``, Adam with weight decay and ``CosineAnnealingLR``.
- a GIN graph classifier written for this round after zengkaipeng/UAlign's ``GINConv.py``
  (CC-BY-4.0, the pattern re-written): ``index_select`` of edge sources, ``scatter_add_`` with a
  repeated index into ``zeros(...).to(msg)``, a ``(1 + eps)`` Parameter from
  ``torch.Tensor([0])``, LayerNorm, graph pooling by ``index_add_`` over a batch vector divided
  by ``bincount``.
Changes, the same on both sides: tiny sizes, parameters overwritten from seeded NumPy streams,
synthetic data, the ViT's hard-coded width 384 set to 32, two of its seven encoders kept and its
dropouts set to 0; the flows' ``sample()`` (the prior's random stream) is not run.
Found: no differences in values, gradients or parameters; the library change of this round is
in the compiled counterparts (tests/compile/test_public_patterns_round54.py).
"""
import functools

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import (arrays as _arr, compare, grads as _grads, init_uniform as _init, same_error,
                                     state as _state)
from public_programs_round54_src import BOLTS_RL, GIN, NF_FLOWS, NF_UTILS, VIT, program

torch = pytest.importorskip("torch")

_compare = functools.partial(compare, torch, tracegrad)
_error = functools.partial(same_error, torch, tracegrad)

NF = NF_UTILS + NF_FLOWS


def _flow_data(T, P, seed):
    # flow_2d.py's gen_data (three Gaussian blobs), 4 points each, then its standardisation
    rs = np.random.RandomState(seed)
    x = T.Tensor(np.r_[rs.randn(4, 2) + np.array([0, 6]), rs.randn(4, 2) + np.array([2.5, 3]),
                       rs.randn(4, 2) + np.array([-2.5, 3])])
    return P.standardize(x)


def _flow_run(T, kind, convolve):
    P = program(T, NF)
    np.random.seed(0)     # OneByOneConv draws its initial rotation from NumPy's global stream
    flows = [_init(T, getattr(P, kind)(dim=2), 10 + i) for i in range(2)]
    if convolve:          # flow_2d.py --convolve: a 1x1 conv before every flow (with an ActNorm here)
        flows = [m for f in flows for m in (P.OneByOneConv(dim=2), P.ActNorm(dim=2), f)]
    prior = T.distributions.MultivariateNormal(T.zeros(2), T.eye(2))
    model = P.NormalizingFlowModel(prior, flows)
    optimizer = T.optim.Adam(model.parameters(), lr=0.005)
    out = []
    for i in range(3):
        loss, logprob, z = P.train_iteration(model, optimizer, _flow_data(T, P, 1 + i))
        out += _arr(loss, logprob, z)
        if i == 0:
            out += _grads(model)
    return out + _state(model)


@pytest.mark.parametrize("kind,convolve", [("NSF_CL", False), ("NSF_AR", False), ("RealNVP", False),
                                           ("MAF", False), ("Planar", False), ("Radial", False),
                                           ("RealNVP", True)])
def test_normalizing_flow_2d_training(kind, convolve):
    _compare(lambda T: _flow_run(T, kind, convolve), tol=2e-5)


@pytest.mark.parametrize("inverse", [False, True])
def test_rational_quadratic_spline_with_tails(inverse):
    # unconstrained_RQS with inputs outside [-B, B] (identity tails, the masks' other branch) and
    # the inverse branch (the quadratic's root); gradients into inputs and every spline parameter
    def run(T):
        P = program(T, NF)
        rs = np.random.RandomState(4)
        x = T.tensor(np.array([-4., -2.5, -1., 0., 0.3, 2.9, 3.5, 1.2], np.float32), requires_grad=True)
        w, h = (T.tensor(rs.randn(8, 5).astype(np.float32), requires_grad=True) for _ in range(2))
        d = T.tensor(rs.randn(8, 4).astype(np.float32), requires_grad=True)
        y, ld = P.unconstrained_RQS(x, w, h, d, inverse=inverse, tail_bound=3)
        (y * T.arange(8.) + ld).sum().backward()
        return _arr(y, ld, x.grad, w.grad, h.grad, d.grad)
    _compare(run, tol=5e-5)


def test_spline_input_outside_domain_raises():
    msgs = _error(lambda T: program(T, NF).RQS(T.tensor([0.5, 2.]), T.zeros(2, 3), T.zeros(2, 3), T.zeros(2, 4)))
    assert msgs == ["Input outside domain"] * 2


@pytest.mark.parametrize("h", ["elu", "leaky_relu"])
def test_planar_flow_piecewise_nonlinearities(h):
    # the dict keyed by F.elu / F.leaky_relu; derivatives by (x > 0).type(torch.FloatTensor)
    def run(T):
        P = program(T, NF)
        f = _init(T, P.Planar(3, nonlinearity=getattr(T.nn.functional, h)), 2, 0.8)
        x = T.tensor(np.random.RandomState(3).randn(5, 3).astype(np.float32), requires_grad=True)
        z, ld = f(x)
        (z.sum() + ld.sum()).backward()
        return _arr(z, ld, x.grad) + _grads(f)
    _compare(run)


def test_flow_inverses():
    # RealNVP/ActNorm/OneByOneConv backward() (the inverse maps) undo forward; the 1x1 conv caches
    # W_inv and its second call's ``if not self.W_inv`` asks a 2x2 tensor for one truth value
    def run(T):
        P = program(T, NF)
        np.random.seed(1)
        flows = [P.OneByOneConv(2), _init(T, P.ActNorm(2), 5), _init(T, P.RealNVP(2), 6)]
        x = T.tensor(np.random.RandomState(2).randn(4, 2).astype(np.float32))
        out, z = [], x
        for f in flows:
            z, ld = f(z)
            out += _arr(z, ld)
        for f in flows[::-1]:
            z, ld = f.backward(z)
            out += _arr(z, ld)
        with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
            flows[0].backward(z)
        return out + _arr(z - x)
    _compare(run)


def test_flow_model_inverse_and_maf_inverse_errors():
    def model_inverse(T):
        P = program(T, NF)
        prior = T.distributions.MultivariateNormal(T.zeros(2), T.eye(2))
        P.NormalizingFlowModel(prior, [_init(T, P.RealNVP(2), 1)]).inverse(T.zeros(3, 2))
    msgs = _error(model_inverse)
    assert msgs == ["'RealNVP' object has no attribute 'inverse'"] * 2

    def maf_inverse(T):
        # MAF.backward writes x[:, i] after its layers read x[:, :i]: differentiating it is
        # torch's "modified by an inplace operation" error
        P = program(T, NF)
        f = _init(T, P.MAF(3), 6)
        x, ld = f.backward(T.tensor(np.random.RandomState(3).randn(5, 3).astype(np.float32)))
        (x.sum() + ld.sum()).backward()
    msgs = _error(maf_inverse)
    assert all("modified by an inplace operation" in m for m in msgs), msgs


def _rl_batch(T, seed, n=6):
    rs = np.random.RandomState(seed)
    return (T.tensor(rs.randn(n, 4).astype(np.float32)), T.tensor(rs.randint(0, 3, n)),
            T.tensor(rs.randn(n).astype(np.float32)), T.tensor(rs.rand(n) < 0.3),
            T.tensor(rs.randn(n, 4).astype(np.float32)))


def _dqn_run(T):
    P = program(T, BOLTS_RL)
    net, target_net = _init(T, P.MLP((4,), 3, 8), 1, 0.4), _init(T, P.MLP((4,), 3, 8), 2, 0.4)
    optimizer = T.optim.Adam(net.parameters(), lr=1e-2)
    out = []
    for step in range(4):
        out += _arr(P.training_step(net, target_net, optimizer, _rl_batch(T, step), step + 1))
        if step == 0:
            out += _grads(net)
    loss = P.double_dqn_loss(_rl_batch(T, 9), net, target_net)
    loss.backward()
    out += _arr(loss) + _grads(net)
    loss, prios = P.per_dqn_loss(_rl_batch(T, 10), [0.5, 1, 2, 1, 1, .1], net, target_net)
    net.zero_grad()
    loss.backward()
    out += _arr(loss, prios) + _grads(net)
    return out + _state(net) + _state(target_net)


def test_bolts_dqn_training_steps_and_losses():
    _compare(_dqn_run)


def test_bolts_per_loss_with_integer_weights():
    # torch.tensor([1, 2, 3, 1]) is int64: the weighted loss promotes to float32
    def run(T):
        P = program(T, BOLTS_RL)
        net, target_net = _init(T, P.MLP((4,), 3, 8), 1, 0.4), _init(T, P.MLP((4,), 3, 8), 2, 0.4)
        loss, prios = P.per_dqn_loss(_rl_batch(T, 3, 4), [1, 2, 3, 1], net, target_net)
        loss.backward()
        return _arr(loss, prios) + _grads(net)
    _compare(run)


def test_bolts_dueling_mlp_missing_heads():
    msgs = _error(lambda T: program(T, BOLTS_RL).DuelingMLP((4,), 3, 8)(T.zeros(2, 4)))
    assert msgs == ["'DuelingMLP' object has no attribute 'fc_adv'"] * 2


def test_bolts_noisy_linear_against_torch_math():
    # the noise comes from each library's own stream: tracegrad's layer is checked against torch
    # computing the same layer from the epsilons tracegrad drew (forward and every gradient),
    # and the buffers are redrawn on every call
    P = program(tracegrad, BOLTS_RL)
    tracegrad.manual_seed(0)
    layer = _init(tracegrad, P.NoisyLinear(3, 2), 7, 0.5)
    x = np.random.RandomState(8).randn(4, 3).astype(np.float32)
    y = layer(tracegrad.tensor(x))
    (y * tracegrad.arange(8.).view(4, 2)).sum().backward()
    eps_w, eps_b = _arr(layer.epsilon_weight, layer.epsilon_bias)
    assert sorted(layer.state_dict()) == ["bias", "epsilon_bias", "epsilon_weight", "sigma_bias", "sigma_weight",
                                          "weight"]

    ref = {n: torch.tensor(v, requires_grad=True) for n, v in
           zip(("weight", "bias", "sigma_weight", "sigma_bias"),
               _arr(layer.weight, layer.bias, layer.sigma_weight, layer.sigma_bias))}
    y_ref = torch.nn.functional.linear(torch.tensor(x), ref["sigma_weight"] * torch.tensor(eps_w) + ref["weight"],
                                       ref["bias"] + ref["sigma_bias"] * torch.tensor(eps_b))
    (y_ref * torch.arange(8.).view(4, 2)).sum().backward()
    np.testing.assert_allclose(_arr(y)[0], _arr(y_ref)[0], rtol=1e-6, atol=1e-6)
    for n, p in ref.items():
        np.testing.assert_allclose(_arr(getattr(layer, n).grad)[0], _arr(p.grad)[0], rtol=1e-6, atol=1e-6, err_msg=n)
    layer(tracegrad.tensor(x))
    assert not np.array_equal(_arr(layer.epsilon_weight)[0], eps_w)


def test_bolts_actor_critic_policy_loss():
    def run(T):
        P = program(T, BOLTS_RL)
        m = _init(T, P.ActorCriticMLP((4,), 3, 8), 3, 0.5)
        logits, value = m(T.tensor(np.random.RandomState(3).randint(0, 5, (5, 4))))   # int states: x.float()
        pi = T.distributions.Categorical(logits=logits)
        adv = (T.ones(5) - value.squeeze(-1)).detach()
        loss = -(pi.log_prob(T.tensor([0, 1, 2, 1, 0])) * adv).mean() \
            + T.nn.functional.mse_loss(value.squeeze(-1), T.ones(5)) - 0.01 * pi.entropy().mean()
        loss.backward()
        return _arr(logits, value, loss) + _grads(m)
    _compare(run)


def _graph(T, seed):
    rs = np.random.RandomState(seed)
    edge_index = T.tensor(np.array([[0, 1, 1, 2, 3, 4, 5, 6, 6], [1, 0, 2, 1, 4, 3, 6, 5, 4]]))
    return (T.tensor(rs.randn(7, 3).astype(np.float32)), T.tensor(rs.randn(9, 2).astype(np.float32)),
            edge_index, T.tensor(np.array([0, 0, 0, 1, 1, 1, 1])), T.tensor(np.array([0, 1])))


def test_gin_graph_classifier_training():
    def run(T):
        P = program(T, GIN)
        model = _init(T, P.GraphNet(3, 2, 6, 2, 2), 4, 0.4)
        optimizer = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        out = []
        for step in range(3):
            x, edge_attr, edge_index, batch, y = _graph(T, 5 + step)
            optimizer.zero_grad()
            logits = model(x, edge_attr, edge_index, batch, 2)
            loss = T.nn.functional.cross_entropy(logits, y)
            loss.backward()
            optimizer.step()
            out += _arr(logits, loss)
            if step == 0:
                out += _grads(model)
        return out + _state(model)
    _compare(run)


def _vit_run(T):
    P = program(T, VIT.replace("hidden=384", "hidden=32"))
    model = P.ViTSmall(3, 10, 16, 4)
    model.enc = model.enc[:2]      # two of its seven encoders (a Sequential slice)
    _init(T, model, 1, 0.2)
    for m in model.modules():
        if isinstance(m, T.nn.Dropout):
            m.p = 0.0
    criterion = P.LabelSmoothingCrossEntropyLoss(10, smoothing=0.1)
    optimizer = T.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), weight_decay=1e-1)
    scheduler = T.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=5, eta_min=1e-5)
    out = []
    for step in range(3):
        rs = np.random.RandomState(step)
        batch = (T.tensor(rs.randn(3, 3, 16, 16).astype(np.float32)), T.tensor(rs.randint(0, 10, 3)))
        loss, acc = P.training_step(model, criterion, batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        out += _arr(loss, acc)
        if step == 0:
            out += _grads(model)
    out.append(np.array(optimizer.param_groups[0]["lr"], np.float64))
    return out + _state(model) + _arr(P.LabelSmoothingCrossEntropyLoss(10)(T.eye(3, 10) * 4, T.tensor([0, 4, 2])))


def test_vit_small_training():
    _compare(_vit_run, tol=2e-5)


@pytest.mark.parametrize("scale,bias", [(1, 0), (2.0, 0.5)])
def test_bolts_continuous_policy_log_probs(scale, bias):
    def run(T):
        P = program(T, BOLTS_RL)
        m = _init(T, P.ContinuousMLP((4,), 2, 8, action_bias=bias, action_scale=scale), 2, 0.4)
        x = T.tensor(np.random.RandomState(1).randn(5, 4).astype(np.float32))
        pi = m(x)
        actions = T.tensor(np.random.RandomState(2).uniform(-0.9, 0.9, (5, 2)).astype(np.float32)) * scale + bias
        z = T.tensor(np.random.RandomState(3).randn(5, 2).astype(np.float32))
        lp, lpz, greedy = pi.log_prob(actions), pi.log_prob_with_z(T.tanh(z) * scale + bias, z), m.get_action(x)
        (lp.sum() + lpz.sum() + greedy.sum()).backward()
        T.manual_seed(0)
        sample, sample_lp = pi.rsample_and_log_prob()
        shapes = [np.array(tuple(sample.shape) + tuple(sample_lp.shape) + tuple(pi.rsample().shape))]
        return _arr(lp, lpz, greedy, pi.mean, pi.stddev, pi.entropy()) + _grads(m) + shapes
    _compare(run)
