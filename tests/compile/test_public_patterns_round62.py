"""Compile patterns of the sixty-second round of public programs
(tests/api/test_public_programs_round62.py; sources in tests/public_programs_round62_src.py): each
program's training step run by torch eagerly, tracegrad eagerly and ``tracegrad.compile`` on the
same initial state:

- FarhanRah/Taxi-Fare-Prediction: ``main.py``'s loop body (entity embeddings per column,
  ``BatchNorm1d``, RMSE by ``torch.sqrt`` of ``MSELoss``, SGD with momentum for its Adam) as a
  step of the split tensors.
- timomernick/pytorch-capsule: ``main.py``'s train-loop body (``to_one_hot`` writing
  ``x_one_hot[i, x[i]] = 1.0``, the routing, the reconstruction loss that masks by a 0-d
  index and counts its calls in a Python attribute, saving an image every 10th call, Adam);
  and ``train(epoch)`` compiled whole (its loader loop, Adam made per call, ``loss.item()``
  compared with the early-stop threshold: a graph break, run eagerly equal to torch).
- wonbeomjang/Knowledge-Distilling-PyTorch: ``train_model``'s body with the teacher's logits
  passed as a NumPy array and taken in by ``torch.from_numpy(...).type_as(preds)`` (a new
  array each step, never a frozen constant), ``loss_kd``, Adam.
- leftthomas/SimCLR: ``train`` compiled whole over its DataLoader, and its NT-Xent step:
  ``masked_select`` (a result length that depends on values) is a graph break, as in
  torch.compile's default, so both run eagerly, equal to torch.
- seanie12/real-nvp: ``main``'s loop body (strided-slice coupling layers, ``log_det += ld``,
  the ``MultivariateNormal`` prior's ``log_prob``, Adam) compiled, and ``model.sample`` under
  ``no_grad`` whose prior draws from a NumPy stream (a Python state change: eager each call,
  never one frozen draw).
Found: a DataLoader pass drew torch's worker base seed with ``.item()``: inside a compiled
function every loop over a loader was a graph break, reported at the ``for`` line; the draw is
kept (the generator advances as in torch), its value read only when there are workers
(tracegrad/utils/data/dataloader.py). A plain object a user module holds (RealNVP's prior) had
its methods' closure cells and globals unseen: a NumPy stream its ``sample`` draws from was
drawn once more by the trace and the program returned that draw on every later call; they are
now scanned like a helper's, and classes made by ``exec``'d source (``__module__`` 'builtins',
no file) count as user classes when their functions are user code
(tracegrad/_lowering/pystate.py). The cache-limit warning named nothing when a NumPy array
argument held new values each call; it names it and says to pass a tensor
(tracegrad/compiler.py).
"""
import contextlib
import io
import types
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, compiled_parity, init_uniform, state as _state
from public_programs_round62_src import CAPSNET, KD_LOSS, KD_MODELS, KD_UTILS, RNVP_MODELS, SIMCLR_MAIN, \
    SIMCLR_MODEL, TAXI_MODEL, program

torch = pytest.importorskip("torch")

import api.test_public_programs_round62 as _api  # noqa: E402  (the stand-ins and the tiny sizes)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # graph breaks, implicit softmax dims, volatile
        yield


# ---------------------------------------------------------------- a loop over a DataLoader

def _loader_epochs(T, compiled):
    T.manual_seed(0)
    rs = np.random.RandomState(0)
    ds = T.utils.data.TensorDataset(T.tensor(rs.randn(8, 3).astype(np.float32)),
                                    T.tensor(rs.randn(8, 1).astype(np.float32)))
    loader = T.utils.data.DataLoader(ds, batch_size=4)
    net = init_uniform(T, T.nn.Linear(3, 1), 1)
    opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)

    def epoch(loader):
        total = 0
        for x, y in loader:
            loss = T.nn.functional.mse_loss(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total = total + loss.detach()
        return total

    f = T.compile(epoch) if compiled else epoch
    out = [f(loader) for _ in range(3)]
    # each pass drew the loader's base seed from the global generator, as in torch
    return _arr(*out, T.rand(2)) + _state(net), f


def test_loop_over_a_dataloader_compiles():
    ref, eager = _loader_epochs(torch, False)[0], _loader_epochs(tracegrad, False)[0]
    np.testing.assert_allclose(eager[:3], ref[:3], rtol=1e-6)
    comp, f = _loader_epochs(tracegrad, True)
    for i, (a, b) in enumerate(zip(eager, comp)):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7, err_msg=f"output {i}")
    # call 1 eager (momentum buffers and .grad come into being), then one program
    assert not f.stats["graph_breaks"], f.stats
    assert f.stats["calls"] == 3 and f.stats["eager_calls"] == 1 and f.stats["traces"] == 1, f.stats


# ---------------------------------------------------------------- taxi fares

def _taxi_runs(T, compiled):
    df = _api.taxi_frame()
    cats = T.tensor(np.stack([df[c].astype("category").cat.codes.values for c in ("hour", "am_or_pm", "weekday")],
                             1), dtype=T.int64)
    conts = T.tensor(np.stack([df[c].values for c in ("pickup_latitude", "pickup_longitude", "dropoff_latitude",
                                                      "dropoff_longitude", "passenger_count", "dist_km")], 1),
                     dtype=T.float)
    y = T.tensor(df[["fare_amount"]].values, dtype=T.float)
    sizes = [(len(df[c].astype("category").cat.categories),) for c in ("hour", "am_or_pm", "weekday")]
    embed_size = [(s, min(50, (s + 1) // 2)) for (s,) in sizes]
    model = _api.seeded(T, program(T, TAXI_MODEL).TabularModel, 3)(embed_size, conts.shape[1], 1, [20, 10], p=0.4)
    criterion = T.nn.MSELoss()
    # SGD with momentum for main.py's Adam: biases that the next BatchNorm takes away have
    # gradients of float noise, which Adam would turn into steps of ~lr (see the api test)
    optimizer = T.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step(cat_train, con_train, y_train):      # main.py's loop body
        y_pred = model.forward(cat_train, con_train)
        loss = T.sqrt(criterion(y_pred, y_train))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    f = T.compile(step) if compiled else step
    out = [f(cats[:16], conts[:16], y[:16]) for _ in range(3)] + [f(cats[16:], conts[16:], y[16:])]
    return _arr(*out) + _state(model), f


def test_taxi_step_compiled():
    st = compiled_parity(torch, tracegrad, _taxi_runs, 5e-5, 1e-5)
    # one program for the 16-row batches (after the first call's eager run), one for the 8 rows
    assert st["calls"] == 4 and not st["graph_breaks"] and st["traces"] == 2, st


# ---------------------------------------------------------------- capsule network

def _caps_setup(T):
    saved = []
    net = program(T, CAPSNET, vutils=types.SimpleNamespace(save_image=lambda img, path: saved.append(_arr(img)[0])))
    network = _api.seeded(T, net.CapsuleNetwork, 5)(image_width=20, image_height=20, image_channels=1,
                                                    conv_inputs=1, conv_outputs=4, num_primary_units=8,
                                                    primary_unit_size=32 * 2 * 2, num_output_units=10,
                                                    output_unit_size=16)
    return network, saved


def _to_one_hot(T):
    # main.py's helper (its globals: torch)
    src = _api.capsnet_main()
    return program(T, src[src.index("# Converts batches"):src.index("# This is the test function")]).to_one_hot


def _caps_runs(T, compiled, n_calls=12, margin_only=False):
    network, saved = _caps_setup(T)
    to_one_hot = _to_one_hot(T)
    optimizer = T.optim.SGD(network.parameters(), lr=0.01, momentum=0.9)

    def step(data, target):     # main.py's train-loop body, ``loss.data[0]`` as ``loss.item()``
        target_one_hot = to_one_hot(target, length=network.digits.num_units)
        data, target = T.autograd.Variable(data), T.autograd.Variable(target_one_hot)
        optimizer.zero_grad()
        output = network(data)
        loss = network.margin_loss(output, target) if margin_only else network.loss(data, output, target)
        loss.backward()
        return loss, output

    def train_step(data, target):
        loss, output = step(data, target)
        optimizer.step()
        return loss, output

    f = T.compile(train_step) if compiled else train_step
    rs = np.random.RandomState(4)
    batches = [(T.tensor(rs.rand(4, 1, 20, 20).astype(np.float32)), T.tensor(rs.randint(0, 10, 4)))
               for _ in range(3)]
    out = []
    for i in range(n_calls):
        out += _arr(*f(*batches[i % 3]))
    # the reconstruction loss counts its calls and saves every 10th reconstruction (calls 1, 11)
    calls = 0 if margin_only else n_calls
    assert network.reconstructed_image_count == calls and len(saved) == (calls + 9) // 10, \
        (network.reconstructed_image_count, len(saved))
    return out + saved + _state(network), f


def test_capsnet_step_compiled_runs_eagerly_for_its_image_counter():
    # the reconstruction loss reads and bumps ``self.reconstructed_image_count`` and saves an
    # image when it is a multiple of 10: a Python counter a program cannot repeat, so every call
    # runs eagerly (the count and the two saved images as eager)
    st = compiled_parity(torch, tracegrad, _caps_runs, 5e-5, 1e-5)
    assert st["calls"] == 12 and st["eager_calls"] == 12 and st["traces"] == 0, st
    assert ["reconstructed_image_count" in r for r, _ in st["graph_breaks"]] == [True], st


def test_capsnet_margin_step_compiled():
    # the margin loss alone: to_one_hot's ``x_one_hot[i, x[i]] = 1.0`` (0-d index tensors), the
    # routing's stacks, 5-D matmuls and implicit-dim softmax, ``torch.max`` with a 1-element
    # tensor; call 1 eager (momentum buffers), then one program for the three batches
    st = compiled_parity(torch, tracegrad, lambda T, c: _caps_runs(T, c, 6, margin_only=True), 5e-5, 1e-5)
    assert st["calls"] == 6 and st["eager_calls"] == 1 and st["traces"] == 1 and not st["graph_breaks"], st


def _caps_train_runs(T, compiled):
    saved = []
    net = program(T, CAPSNET, vutils=types.SimpleNamespace(save_image=lambda img, path: saved.append(_arr(img)[0])))
    rs = np.random.RandomState(4)
    data = lambda n: T.utils.data.TensorDataset(T.tensor(rs.rand(n, 1, 20, 20).astype(np.float32)),
                                                T.tensor(rs.randint(0, 10, n)))
    src = _api.capsnet_main().replace("loss.data[0]", "loss.item()").replace("num_epochs = 2", "num_epochs = 0")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        g = program(T, src, CapsuleNetwork=_api.seeded(T, net.CapsuleNetwork, 5), learning_rate=0.01, batch_size=4,
                    test_batch_size=4, early_stop_loss=0.0001,
                    train_loader=T.utils.data.DataLoader(data(8), batch_size=4),
                    test_loader=T.utils.data.DataLoader(data(4), batch_size=4))
        train = T.compile(g.train) if compiled else g.train
        last = [train(epoch) for epoch in (1, 2)]
    assert all(isinstance(x, float) for x in last) and buf.getvalue().count("Train Epoch: 2") == 2
    return [np.array(last)] + saved + _state(g.network), train


def test_capsnet_train_epoch_compiled_runs_eagerly():
    # main.py's ``train(epoch)``: Adam made per call, the loader loop, ``last_loss < early_stop_loss``
    # on ``loss.item()`` and the image counter: graph breaks, each call eager and equal (to torch
    # within the api test's 1e-3: Adam steps the float noise of near-0 reconstruction gradients)
    st = compiled_parity(torch, tracegrad, _caps_train_runs, 1e-3, 1e-5)
    assert st["calls"] == 2 and st["eager_calls"] == 2 and st["traces"] == 0 and st["graph_breaks"], st


# ---------------------------------------------------------------- knowledge distillation

def _kd_runs(T, compiled):
    utils = program(T, KD_UTILS)
    models = program(T, KD_MODELS, tqdm=_api.progress, AverageMeter=utils.AverageMeter, resnet=None,
                     densenet=None, vgg=None)
    param = types.SimpleNamespace(model_name="base", alpha=0.9, temperature=20)
    student = _api.seeded(T, models.Model, 6, 0.05)(5, param)
    criterion = program(T, KD_LOSS).loss_kd
    optimizer = T.optim.SGD(student.parameters(), lr=0.01, momentum=0.9)
    rs = np.random.RandomState(8)
    images = [T.tensor(rs.randn(4, 3, 8, 8).astype(np.float32)) for _ in range(2)]
    targets = [T.tensor(rs.randint(0, 5, 4)) for _ in range(2)]
    teacher_preds = [rs.randn(4, 5).astype(np.float32) * 3 for _ in range(2)]     # fetch_output's arrays

    def step(images, targets, teacher_logits):       # train_model's loop body
        preds = student.forward(images)
        loss = criterion(preds, targets, T.from_numpy(teacher_logits).type_as(preds), param)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        preds = preds.argmax(dim=1)
        return loss, (preds == targets).sum()

    student.train()
    f = T.compile(step) if compiled else step
    out = []
    for i in (0, 1, 0, 1):
        out += _arr(*f(images[i], targets[i], teacher_preds[i]))
    return out + _state(student), f


def test_kd_step_compiled_takes_each_numpy_teacher_batch():
    # a NumPy array argument only read by ``from_numpy`` is a program input (NOTE [numpy
    # arguments]): each step's teacher logits count (a frozen first batch would change the
    # losses). Call 1 eager, calls 2 to 4 one program
    st = compiled_parity(torch, tracegrad, _kd_runs, 5e-5, 1e-5)
    assert st["calls"] == 4 and st["eager_calls"] == 1 and st["traces"] == 1 and not st["graph_breaks"], st


def test_numpy_argument_of_new_values_each_call_names_it_at_the_cache_limit():
    # the KD loop passes a new teacher array each step, here read by value with NumPy as well
    # (a constant of its program): after cache_size_limit programs the warning names the
    # argument and says to convert it (it named nothing before)
    w = tracegrad.nn.Parameter(tracegrad.ones(3))
    opt = tracegrad.optim.SGD([w], lr=0.1)

    def step(preds, teacher):
        loss = (w * preds * tracegrad.from_numpy(teacher).type_as(preds)).sum() / float(np.abs(teacher).max())
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    f = tracegrad.compile(step)
    rs = np.random.RandomState(0)
    x = tracegrad.ones(3)
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        for _ in range(10):
            f(x, rs.randn(3).astype(np.float32))
    msgs = [str(m.message) for m in ws if "cache_size_limit" in str(m.message)]
    assert len(msgs) == 1 and "the NumPy array argument(s) args[1] hold other values between calls" in msgs[0] \
        and "tracegrad.from_numpy(a)" in msgs[0], msgs
    assert f.stats["traces"] == 8 and f.stats["eager_calls"] >= 2, f.stats


# ---------------------------------------------------------------- SimCLR

def _simclr_setup(T):
    net = init_uniform(T, program(T, SIMCLR_MODEL, resnet50=_api.backbone(T)).Model(8), 9, 0.1)
    g = program(T, SIMCLR_MAIN, tqdm=_api.Bar, feature_dim=8, temperature=0.5, k=3, batch_size=4, epochs=3, c=5,
                epoch=1)
    return net, g


def _simclr_train_runs(T, compiled):
    net, g = _simclr_setup(T)
    optimizer = T.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loader = T.utils.data.DataLoader(_api.simclr_pairs(T, 8, 10), batch_size=4, shuffle=False, drop_last=True)
    train = T.compile(g.train) if compiled else g.train
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        losses = [train(net, loader, optimizer) for _ in range(3)]
    assert all(isinstance(x, float) for x in losses) and buf.getvalue().count("Train Epoch: [1/3]") == 6
    return [np.array(losses)] + _state(net), train


def test_simclr_train_compiled_breaks_at_masked_select():
    # ``sim_matrix.masked_select(mask)``: the result's length depends on the mask's values (that
    # they come from ``ones_like - eye`` is not tracked), a graph break as in torch.compile's
    # default (no dynamic output shapes), reported at that line of the program, no longer inside
    # the DataLoader; each call runs eagerly, equal to torch
    st = compiled_parity(torch, tracegrad, _simclr_train_runs, 5e-5, 1e-5)
    assert st["calls"] == 3 and st["eager_calls"] == 3 and st["traces"] == 0, st
    (reason, where), = st["graph_breaks"]
    line = SIMCLR_MAIN.split("\n")[int(where.rpartition(":")[2]) - 1]
    assert reason.startswith("nonzero() reads a tensor's value") and where.startswith("<public program>:") \
        and "masked_select(mask)" in line, st


def _simclr_step_runs(T, compiled):
    net, g = _simclr_setup(T)
    optimizer = T.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    temperature, batch_size = 0.5, 4

    def step(pos_1, pos_2):     # train's loop body up to the optimizer step
        feature_1, out_1 = net(pos_1)
        feature_2, out_2 = net(pos_2)
        out = T.cat([out_1, out_2], dim=0)
        sim_matrix = T.exp(T.mm(out, out.t().contiguous()) / temperature)
        mask = (T.ones_like(sim_matrix) - T.eye(2 * batch_size, device=sim_matrix.device)).bool()
        sim_matrix = sim_matrix.masked_select(mask).view(2 * batch_size, -1)
        pos_sim = T.exp(T.sum(out_1 * out_2, dim=-1) / temperature)
        pos_sim = T.cat([pos_sim, pos_sim], dim=0)
        loss = (- T.log(pos_sim / sim_matrix.sum(dim=-1))).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    f = T.compile(step) if compiled else step
    data = _api.simclr_pairs(T, 8, 10)
    out = [f(T.stack([data[i][0] for i in range(j, j + 4)]), T.stack([data[i][1] for i in range(j, j + 4)]))
           for j in (0, 4, 0)]
    return _arr(*out) + _state(net), f


def test_simclr_step_compiled():
    # the same break in the step (eager, equal); the 0 traces: the signature is not traced again
    st = compiled_parity(torch, tracegrad, _simclr_step_runs, 5e-5, 1e-5)
    assert st["calls"] == 3 and st["eager_calls"] == 3 and st["traces"] == 0, st
    assert [r.startswith("nonzero() reads") for r, _ in st["graph_breaks"]] == [True], st


# ---------------------------------------------------------------- RealNVP

def _rnvp_model(T, validate=None):
    models = program(T, RNVP_MODELS)
    flows = [init_uniform(T, models.CouplingLayer(2, 24, parity=i % 2), 20 + i, 0.3) for i in range(5)]
    prior = _api.normal_prior(T, 13)(T.zeros(2), T.eye(2), validate_args=validate)
    return models.NormalizingFlowModel(prior, flows)


def _rnvp_runs(T, compiled, validate=None):
    model = _rnvp_model(T, validate)
    optimizer = T.optim.Adam(model.parameters(), 1e-3)
    model.train()
    d = _api.moons(T, 12)()

    def step(x):                # main's loop body
        zs, prior_logprob, log_det = model(x)
        logprob = prior_logprob + log_det
        loss = -T.sum(logprob)
        model.zero_grad()
        loss.backward()
        optimizer.step()
        return loss, zs[-1]

    f = T.compile(step) if compiled else step
    out = []
    for _ in range(4):
        out += _arr(*f(d.sample(16)))
    model.eval()
    sample = T.compile(model.sample) if compiled else model.sample
    with T.no_grad():
        draws = [sample(8)[-1] for _ in range(3)]
    assert not np.allclose(_arr(draws[0])[0], _arr(draws[1])[0])
    return out + _arr(*draws) + [a for f_ in model.flow.flows for a in _state(f_)], (f, sample)


@pytest.mark.parametrize("validate", [None, False])
def test_rnvp_step_and_sample_compiled(validate):
    run = lambda T, c: _rnvp_runs(T, c, validate)
    eager, (comp, (f, sample)) = run(tracegrad, False)[0], run(tracegrad, True)
    for i, (a, b) in enumerate(zip(run(torch, False)[0], eager)):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4, err_msg=f"torch output {i}")
    for i, (a, b) in enumerate(zip(eager, comp)):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5, err_msg=f"compiled output {i}")
    if validate is None:
        # the prior checks its argument (validate_args on by default, as torch): a value check
        # in Python, so the step runs eagerly, the message saying how to compile it
        assert f.stats["calls"] == 4 and f.stats["eager_calls"] == 4 and f.stats["traces"] == 0, f.stats
        assert ["validate_args" in r for r, _ in f.stats["graph_breaks"]] == [True], f.stats
    else:
        # validate_args=False: call 1 eager (Adam's state), then one program for the batches
        assert f.stats["calls"] == 4 and f.stats["eager_calls"] == 1 and f.stats["traces"] == 1, f.stats
        assert not f.stats["graph_breaks"], f.stats
    # the sampler advances the prior's NumPy stream (a closure of the prior's ``sample``, a
    # plain object the module holds): each call eager, each draw new. Found: that stream was
    # not seen as state, the trace drew once more and the program returned that draw on every
    # later call (tracegrad/_lowering/pystate.py, NOTE [module attributes' methods])
    assert sample.stats["calls"] == 3 and sample.stats["eager_calls"] == 3 and sample.stats["traces"] == 0, \
        sample.stats
    assert ["'rs'" in r for r, _ in sample.stats["graph_breaks"]] == [True], sample.stats


def _prior(T, seed):
    rs = np.random.RandomState(seed)

    class Prior(T.distributions.Normal):     # its ``sample`` closes over a NumPy generator
        def sample(self, n):
            return T.tensor(rs.randn(n, 2).astype(np.float32))
    return Prior(T.zeros(2), T.ones(2))


class _Flow(tracegrad.nn.Module):
    """A module given its prior (made elsewhere: no code of the module names its class)."""

    def __init__(self, prior):
        super().__init__()
        self.prior = prior
        self.lin = init_uniform(tracegrad, tracegrad.nn.Linear(2, 2), 1)

    def sample(self, n):
        return self.lin(self.prior.sample(n))


def test_module_holding_a_sampler_object_is_never_frozen():
    # the RealNVP finding reduced: each compiled call draws anew, as eager (it ran the trace's
    # extra draw and then that draw on every call)
    eager, net = _Flow(_prior(tracegrad, 3)), _Flow(_prior(tracegrad, 3))
    f = tracegrad.compile(net.sample)
    with tracegrad.no_grad():
        for _ in range(3):
            np.testing.assert_array_equal(_arr(f(2))[0], _arr(eager.sample(2))[0])
    assert f.stats["eager_calls"] == 3 and f.stats["traces"] == 0, f.stats
    assert ["'rs'" in r for r, _ in f.stats["graph_breaks"]] == [True], f.stats
