"""Compile patterns of the fifty-fourth round of public programs
(tests/api/test_public_programs_round54.py; sources in tests/public_programs_round54_src.py): each
program's training step run by torch eagerly, tracegrad eagerly and ``tracegrad.compile`` over
three calls on the same initial state:

- tonyduan/normalizing-flows (MIT): flow_2d.py's iteration (``NormalizingFlowModel`` over
  RealNVP, MAF's in-place autoregressive columns, planar, radial, and 1x1 conv + ActNorm + RealNVP
  stacks; Adam) is one program when the ``MultivariateNormal`` prior does not validate its
  arguments; as the example builds it (validating), the value checks are a graph break and the
  step runs eagerly with eager's values; the neural spline flows read boolean masks (``nonzero()``:
  data-dependent shapes), a graph break too.
- Lightning-Universe/lightning-bolts (Apache-2.0): the DQN ``training_step`` (gather of the
  taken actions, the bool-mask write of done states under ``no_grad``, the target network's
  ``load_state_dict`` inside the step every ``sync_rate`` steps) and a double-DQN step through
  ``NoisyLinear`` layers (``normal_()`` into buffers inside the program, same draws as eager
  under one seed). The step number is a Python int, so each value is its own program; at the
  recompile limit the warning named it by its place among the flattened leaves ("position 8")
  rather than as the caller passed it (fixed: ``compiler._changing_numbers`` names it
  ``args[4]``).
  The continuous policy's ``TanhMultivariateNormal`` (a ``MultivariateNormal`` subclass): its
  argument checks are a graph break named after the subclass; with validation off by
  ``Distribution.set_default_validate_args(False)`` the actor step is one program.
- omihub777/ViT-CIFAR (MIT): the ViT's step (unfold patches, einsum attention, the
  label-smoothing loss's ``scatter_`` under ``no_grad``, the accuracy by ``torch.eq``, Adam with
  weight decay) with ``CosineAnnealingLR`` stepped between compiled calls: one program.
- the GIN graph classifier (pattern of zengkaipeng/UAlign): the step pools graphs by
  ``index_add_`` and divides by ``bincount`` of the batch vector, whose output size depends on
  the values: a graph break, which was reported as "numpy() reads a tensor's value" (the op
  read its input through ``numpy()``; fixed: ``_api/composite._host`` reads it under the op's
  name, ``bincount()``/``unique()``); with the counts passed in, one program.
"""
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, close as _close, init_uniform as _init
from public_programs_round54_src import BOLTS_RL, GIN, NF_FLOWS, NF_UTILS, VIT, program

torch = pytest.importorskip("torch")

NF = NF_UTILS + NF_FLOWS


def _check(runner, ref_tol=2e-5, comp_tol=1e-5, torch_ref=True):
    eager, comp = runner(tracegrad, False), runner(tracegrad, True)
    if torch_ref:
        _close(runner(torch, False)[0], eager[0], ref_tol)
    _close(eager[0], comp[0], comp_tol)
    return comp[1].stats


def _flow_runs(T, compiled, kind, convolve=False, validate=False):
    P = program(T, NF)
    np.random.seed(0)
    flows = [_init(T, getattr(P, kind)(dim=2), 10 + i) for i in range(2)]
    if convolve:
        flows = [m for f in flows for m in (P.OneByOneConv(dim=2), P.ActNorm(dim=2), f)]
    prior = T.distributions.MultivariateNormal(T.zeros(2), T.eye(2), **({} if validate else {"validate_args": False}))
    model = P.NormalizingFlowModel(prior, flows)
    optimizer = T.optim.Adam(model.parameters(), lr=0.005)
    step = P.train_iteration
    if compiled:
        step = T.compile(step)
    out = []
    for i in range(3):
        rs = np.random.RandomState(i)
        x = P.standardize(T.Tensor(rs.randn(9, 2) * [1, 2] + [0, 3]))
        out += _arr(*step(model, optimizer, x))
    return out + _arr(*[t for _, t in sorted(model.state_dict().items())]), step


@pytest.mark.parametrize("kind,convolve", [("RealNVP", False), ("MAF", False), ("Planar", False),
                                           ("Radial", False), ("RealNVP", True)])
def test_flow_iteration_compiled(kind, convolve):
    st = _check(lambda T, c: _flow_runs(T, c, kind, convolve))
    # the first call runs eagerly (lazy state), the second traces, the third reuses the program
    assert st["traces"] == 1 and st["eager_calls"] == 1 and not st["graph_breaks"], st


def test_flow_iteration_with_validating_prior_runs_eagerly():
    st = _check(lambda T, c: _flow_runs(T, c, "RealNVP", validate=True))
    assert st["traces"] == 0 and st["eager_calls"] == 3, st
    assert [b[0].split("(")[0] for b in st["graph_breaks"]] == ["MultivariateNormal.log_prob"], st


def test_spline_flow_iteration_breaks_at_its_masks():
    st = _check(lambda T, c: _flow_runs(T, c, "NSF_CL"))
    assert st["traces"] == 0 and st["eager_calls"] == 3, st
    assert [b[0].split(" ")[0] for b in st["graph_breaks"]] == ["nonzero()"], st


def _rl_batch(T, seed, n=6):
    rs = np.random.RandomState(seed)
    return (T.tensor(rs.randn(n, 4).astype(np.float32)), T.tensor(rs.randint(0, 3, n)),
            T.tensor(rs.randn(n).astype(np.float32)), T.tensor(rs.rand(n) < 0.3),
            T.tensor(rs.randn(n, 4).astype(np.float32)))


def _dqn_runs(T, compiled, calls=3, limit=None):
    P = program(T, BOLTS_RL)
    net, target_net = _init(T, P.MLP((4,), 3, 8), 1, 0.4), _init(T, P.MLP((4,), 3, 8), 2, 0.4)
    optimizer = T.optim.Adam(net.parameters(), lr=1e-2)
    step = P.training_step
    if compiled:
        step = T.compile(step, recompile_limit=limit)
    out = []
    for i in range(calls):
        out += _arr(step(net, target_net, optimizer, _rl_batch(T, i), i + 1))
    return out + _arr(*net.parameters(), *target_net.parameters()), step


def test_bolts_dqn_training_step_compiled():
    st = _check(_dqn_runs)
    # steps 2 and 3: one program per value of the Python int global_step (step 2 syncs the
    # target network by load_state_dict inside the program)
    assert st["traces"] == 2 and st["eager_calls"] == 1 and not st["graph_breaks"], st


def test_bolts_dqn_changing_step_number_is_named_at_the_limit():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        st = _check(lambda T, c: _dqn_runs(T, c, calls=4, limit=2))
    assert st["traces"] == 2 and st["eager_calls"] == 2, st
    (reason, _), = st["graph_breaks"]
    assert "the Python number argument(s) args[4] change between calls" in reason, reason
    assert any("args[4]" in str(x.message) for x in w)


def test_changing_numbers_named_in_nested_arguments():
    # the same hint for numbers inside a tuple argument and a keyword argument
    f = tracegrad.compile(lambda x, pair, *, scale: x * pair[1] * scale, recompile_limit=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(3):
            f(tracegrad.ones(2), (1, float(k + 2)), scale=float(k + 5))
    (reason, _), = f.stats["graph_breaks"]
    assert "argument(s) args[1][1], kwargs['scale'] change" in reason, reason


def _noisy_runs(T, compiled):
    # a double-DQN step through NoisyLinear layers: the noise is drawn inside the program
    P = program(T, BOLTS_RL)
    T.manual_seed(0)
    net = _init(T, T.nn.Sequential(P.NoisyLinear(4, 8), T.nn.ReLU(), P.NoisyLinear(8, 3)), 3, 0.4)
    target_net = _init(T, T.nn.Sequential(P.NoisyLinear(4, 8), T.nn.ReLU(), P.NoisyLinear(8, 3)), 4, 0.4)
    optimizer = T.optim.Adam(net.parameters(), lr=1e-2)

    def step(batch):
        loss = P.double_dqn_loss(batch, net, target_net)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    if compiled:
        step = T.compile(step)
    T.manual_seed(1)
    out = []
    for i in range(3):
        out += _arr(step(_rl_batch(T, 20 + i)), *net.buffers())
    return out + _arr(*net.parameters()), step


def test_bolts_noisy_double_dqn_step_compiled():
    # torch's noise differs (another generator): compiled is compared with tracegrad eager only
    st = _check(_noisy_runs, torch_ref=False)
    assert st["traces"] == 1 and not st["graph_breaks"], st


def _gin_runs(T, compiled, counts_in=False):
    P = program(T, GIN)
    model = _init(T, P.GraphNet(3, 2, 6, 2, 2), 4, 0.4)
    if counts_in:     # the pooling's counts passed in instead of bincount inside the step
        def forward(x, edge_attr, edge_index, batch, counts):
            h, e = model.node_in(x), model.edge_in(edge_attr)
            for layer in model.layers:
                h = h + T.nn.functional.relu(layer(h, e, edge_index, x.shape[0]))
            pooled = T.zeros(counts.shape[0], h.shape[1]).index_add_(0, batch, h)
            return model.out(pooled / counts.unsqueeze(1))
    else:
        def forward(x, edge_attr, edge_index, batch, counts):
            return model(x, edge_attr, edge_index, batch, 2)
    optimizer = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x, edge_attr, edge_index, batch, counts, y):
        optimizer.zero_grad()
        loss = T.nn.functional.cross_entropy(forward(x, edge_attr, edge_index, batch, counts), y)
        loss.backward()
        optimizer.step()
        return loss

    if compiled:
        step = T.compile(step)
    edge_index = T.tensor(np.array([[0, 1, 1, 2, 3, 4, 5, 6, 6], [1, 0, 2, 1, 4, 3, 6, 5, 4]]))
    batch = T.tensor(np.array([0, 0, 0, 1, 1, 1, 1]))
    out = []
    for i in range(3):
        rs = np.random.RandomState(5 + i)
        x, edge_attr = T.tensor(rs.randn(7, 3).astype(np.float32)), T.tensor(rs.randn(9, 2).astype(np.float32))
        out += _arr(step(x, edge_attr, edge_index, batch, T.tensor([3., 4.]), T.tensor([0, 1])))
    return out + _arr(*model.parameters()), step


def test_gin_step_breaks_at_bincount():
    st = _check(_gin_runs)
    assert st["traces"] == 0 and st["eager_calls"] == 3, st
    assert [b[0].split(" ")[0] for b in st["graph_breaks"]] == ["bincount()"], st


def test_gin_step_with_counts_compiled():
    st = _check(lambda T, c: _gin_runs(T, c, counts_in=True))
    assert st["traces"] == 1 and not st["graph_breaks"], st


def test_unique_in_compiled_function_names_itself():
    f = tracegrad.compile(lambda x: tracegrad.unique(x).sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            assert f(tracegrad.tensor([3, 1, 3])).item() == 4
    assert [b[0].split(" ")[0] for b in f.stats["graph_breaks"]] == ["unique()"], f.stats


def _vit_runs(T, compiled):
    P = program(T, VIT.replace("hidden=384", "hidden=32"))
    model = P.ViTSmall(3, 10, 16, 4)
    model.enc = model.enc[:2]      # two of its seven encoders (a Sequential slice)
    _init(T, model, 1, 0.2)
    for m in model.modules():
        if isinstance(m, T.nn.Dropout):
            m.p = 0.0
    criterion = P.LabelSmoothingCrossEntropyLoss(10, smoothing=0.1)
    optimizer = T.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-1)
    scheduler = T.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=5, eta_min=1e-5)

    def step(img, label):
        loss, acc = P.training_step(model, criterion, (img, label))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss, acc

    if compiled:
        step = T.compile(step)
    out = []
    for i in range(3):
        rs = np.random.RandomState(i)
        out += _arr(*step(T.tensor(rs.randn(3, 3, 16, 16).astype(np.float32)), T.tensor(rs.randint(0, 10, 3))))
        scheduler.step()
    return out + _arr(*model.parameters()), step


def test_vit_step_compiled():
    st = _check(_vit_runs)
    assert st["traces"] == 1 and not st["graph_breaks"], st


def _policy_runs(T, compiled):
    P = program(T, BOLTS_RL)
    m = _init(T, P.ContinuousMLP((4,), 2, 8, action_bias=0.5, action_scale=2.0), 2, 0.4)
    optimizer = T.optim.Adam(m.parameters(), lr=1e-2)

    def step(x, actions):
        pi = m(x)
        loss = -(pi.log_prob(actions) * 0.1).mean() + m.get_action(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    if compiled:
        step = T.compile(step)
    out = []
    for i in range(3):
        rs = np.random.RandomState(i)
        actions = (rs.uniform(-0.9, 0.9, (5, 2)) * 2 + 0.5).astype(np.float32)
        out += _arr(step(T.tensor(rs.randn(5, 4).astype(np.float32)), T.tensor(actions)))
    return out + _arr(*m.parameters()), step


@pytest.mark.parametrize("validate", [True, False])
def test_bolts_continuous_policy_step_compiled(validate):
    libs = (torch.distributions.Distribution, tracegrad.distributions.Distribution)
    for d in libs:
        d.set_default_validate_args(validate)
    try:
        st = _check(_policy_runs)
    finally:
        for d in libs:
            d.set_default_validate_args(True)
    if validate:
        assert st["traces"] == 0 and st["eager_calls"] == 3, st
        assert [b[0].split(" ")[0] for b in st["graph_breaks"]] == ["TanhMultivariateNormal(validate_args=True)"], st
    else:
        assert st["traces"] == 1 and not st["graph_breaks"], st
