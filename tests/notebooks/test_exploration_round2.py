"""Exploring in Jupyter, round 2: what a user does between cells, in a real kernel (nbclient +
ipykernel, the kernel setup of notebooks/run_notebooks.py), checked cell by cell.

Two notebooks are built here (nbformat; nothing stored):

* ``EXPLORE`` runs twice, with ``import tracegrad as torch`` and (the source's ``tracegrad``
  spelled ``torch``) with PyTorch; cells print ``RESULT {json}`` lines and displays whose text
  is torch's are compared with torch's. Covered: the cell defining the model and optimizer run
  again (twice in a row, three times, edited to Adam; only its model line, leaving the
  optimizer on the old parameters; only its optimizer line) before a compiled step defined in
  an earlier cell, which reads the new globals; the compiled step's cell edited and run again
  (and edited back); ``%time``/``%timeit`` of the compiled step; reprs, ``print`` and
  ``display()`` of tensors with a ``grad_fn``, modules, optimizers and state dicts; a bad shape
  raising in a cell, eagerly and in the compiled step, with the next cell's model, optimizer
  state and training unchanged; a plot without matplotlib from ``.numpy()``/``.tolist()``;
  ``detach()``, ``.numpy()`` and ``state_dict()`` kept from before training steps showing the
  new weights; the compiled step and a compiled model displayed.
* ``INTERRUPT`` runs with tracegrad only (its checks are about tracegrad's own state): a long
  eager training loop interrupted (SIGINT to the kernel's process group while the cell runs,
  as Jupyter's stop button does), the model then equal to the same number of whole
  steps replayed, and the next cells training, eagerly and compiled; ``manual_seed`` cells run
  twice giving the same numbers; a tqdm.auto progress bar around compiled steps.
"""
import importlib.util
import json
import math
import os
import re
import signal
import tempfile
import threading

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("tqdm")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("run_notebooks", os.path.join(ROOT, "notebooks", "run_notebooks.py"))
run_notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_notebooks)

KERNEL_DEADLINE_S = 150     # one kernel's whole run: fail instead of hanging the suite
KERNEL_ENV = {"MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "TQDM_DISABLE": ""}
INTERRUPT_AFTER_S = 2       # the long loop's cell is interrupted after this many seconds

SETUP = """\
import tracegrad as torch
import tracegrad.nn as nn
from IPython.display import display
import json
counters = torch._dynamo.utils.counters
def out(**kw):
    print("RESULT " + json.dumps(kw))
def values(t):
    return t.detach().flatten().tolist()
def init(model):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (i + 1) / 4)
    return model
xb = torch.linspace(-1, 1, 12).reshape(4, 3)
yb = torch.tensor([[1.0], [0.0], [-1.0], [0.5]])
"""

# the compiled step reads ``model`` and ``opt``: globals a later cell defines
STEP_V1 = """\
@torch.compile(backend="aot_eager")
def step(x, y):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    return loss
"""
STEP_V2 = """\
@torch.compile(backend="aot_eager")
def step(x, y):
    opt.zero_grad()
    loss = (model(x) - y).abs().mean()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    opt.step()
    return loss
"""
MODEL = """\
model = init(nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
"""
MODEL_ADAM = """\
model = init(nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)))
opt = torch.optim.Adam(model.parameters(), lr=0.05)
"""
TRAIN = """\
losses = [step(xb, yb).item() for i in range(3)]
out(losses=losses, w=values(model[2].weight), state=[values(v) for v in opt.state[model[2].weight].values()])
"""

EXPLORE = [
    ("setup", SETUP),
    ("step_v1", STEP_V1),
    ("model_1", MODEL), ("train_1", TRAIN),
    ("model_2", MODEL), ("train_2", TRAIN),
    ("model_3a", MODEL), ("model_3b", MODEL), ("train_3", TRAIN),
    # only the model's line run again: ``opt`` still steps the old model's parameters
    ("model_only", "model = init(nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)))"),
    ("train_stale", """\
losses = [step(xb, yb).item() for i in range(3)]
out(losses=losses, grad=values(model[2].weight.grad), old=values(opt.param_groups[0]["params"][2]))
"""),
    # only the optimizer's line run again: training goes on from the model's weights
    ("opt_only", "opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)"),
    ("train_opt_only", TRAIN),
    ("model_adam", MODEL_ADAM), ("train_adam", TRAIN),
    ("step_v2", STEP_V2), ("model_4", MODEL), ("train_v2", TRAIN),
    ("model_5", MODEL), ("step_v1_again", STEP_V1), ("train_v1_again", TRAIN),
    ("timeit", """\
graphs = counters["stats"]["unique_graphs"]
%timeit -n 2 -r 2 step(xb, yb)
%time loss = step(xb, yb)
out(new_graphs=counters["stats"]["unique_graphs"] - graphs, loss=loss.item(), w=values(model[0].weight))
"""),
    # -- what a tensor, a module, an optimizer look like ----------------------------------
    ("disp_output", "model(xb)"),
    ("disp_print", """\
print(model)
print(model(xb).sum())
print(str(model[2].bias), repr(model[0].bias.grad))
print((model(xb) * 2).grad_fn.name(), [type(f).__name__ for f, _ in (model(xb) * 2).grad_fn.next_functions])
"""),
    ("disp_opt", "opt"),
    ("disp_step", "step"),
    ("disp_compiled_model", 'torch.compile(model, backend="aot_eager")'),
    ("disp_state_dict", "model.state_dict()"),
    ("disp_opt_state_dict", "opt.state_dict()"),
    ("disp_display", "display(model(xb).mean(), model[2].weight, opt, model[1])"),
    # -- a cell that raises, and the cells after it --------------------------------------
    ("snapshot", """\
before = [p.detach().clone() for p in model.parameters()]
before_state = {i: {k: v.clone() for k, v in s.items()} for i, s in enumerate(opt.state.values())}
"""),
    ("bad_shape_eager", "model(torch.ones(2, 5))"),
    ("bad_shape_compiled", "step(torch.ones(2, 5), yb)"),
    ("after_errors", """\
same = all(torch.equal(a, p) for a, p in zip(before, model.parameters()))
same_state = all(torch.equal(before_state[i][k], v) for i, s in enumerate(opt.state.values()) for k, v in s.items())
eager = model(xb).sum().item()
losses = [step(xb, yb).item() for i in range(2)]
out(same=same, same_state=same_state, eager=eager, losses=losses, w=values(model[0].weight))
"""),
    # -- a plot without matplotlib ---------------------------------------------------------
    ("plot", """\
hist = torch.tensor([step(xb, yb).item() for i in range(8)])
arr = hist.numpy()
span = float(arr.max() - arr.min()) or 1.0
print("".join(" .:-=+*#%@"[int(9 * (v - arr.min()) / span)] for v in arr.tolist()))
try:
    model[0].weight.numpy()
except RuntimeError as e:
    numpy_err = str(e)
shared = torch.zeros(3); view = shared.numpy(); view[0] = 5.0
out(kind=type(arr).__name__, dtype=str(arr.dtype), shape=list(arr.shape), values=hist.tolist(),
    numpy_err=numpy_err, shared=shared.tolist())
"""),
    # what an earlier cell kept of the weights follows the training (one storage)
    ("live_views", """\
w_det, w_np, sd = model[0].weight.detach(), model[0].weight.detach().numpy(), model.state_dict()
buf = opt.state[model[0].weight]["momentum_buffer"]
for i in range(2):
    step(xb, yb)
w = model[0].weight
out(det=torch.equal(w_det, w), np=bool((w_np == w.detach().numpy()).all()), sd=torch.equal(sd["0.weight"], w),
    buf=torch.equal(buf, opt.state[w]["momentum_buffer"]), w=values(w))
"""),
]

SEED = """\
torch.manual_seed(7)
m = nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.5), nn.Linear(8, 1))
o = torch.optim.SGD(m.parameters(), lr=0.1)
def seeded_step():
    o.zero_grad()
    loss = ((m(xb) - yb) ** 2).mean() + torch.randn(()) * 0
    loss.backward()
    o.step()
    return loss.item()
out(losses=[seeded_step() for i in range(3)], w=values(m[0].weight), r=torch.rand(2).tolist())
"""

INTERRUPT = [
    ("setup", SETUP),
    ("step_v1", STEP_V1),
    ("eager_warm", """\
def make():
    # a small learning rate: the long loop does not reach a fixed point (see ``whole``)
    global model, opt
    model = init(nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.005, momentum=0.9)
make()
def eager_step():
    opt.zero_grad()
    loss = ((model(xb) - yb) ** 2).mean()
    loss.backward()
    opt.step()
    return loss
warm = [eager_step().item() for i in range(3)]
done = 3
"""),
    ("long_loop", """\
while True:
    eager_step()
    done += 1
"""),
    ("after_interrupt", """\
import math
now = [p.detach().clone() for p in model.parameters()]
kept_model, kept_opt = model, opt
make()
for i in range(done):
    eager_step()
whole = []
for extra in range(2):
    whole.append(all(torch.allclose(a, p, rtol=0, atol=0) for a, p in zip(now, model.parameters())))
    eager_step()
model, opt = kept_model, kept_opt
eager = [eager_step().item() for i in range(3)]
compiled = [step(xb, yb).item() for i in range(3)]
out(done=done, whole=whole, finite=all(math.isfinite(v) for v in eager + compiled), warm=warm, eager=eager,
    compiled=compiled)
"""),
    ("seed_1", SEED),
    ("seed_2", SEED),   # the same cell run again
    ("tqdm", """\
from tqdm.auto import tqdm
model = init(nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for i in tqdm(range(5), desc="train"):
    loss = step(xb, yb)
print("final", loss.item())
"""),
]


def _execute(cells, library="tracegrad"):
    """Run ``cells`` in a fresh kernel with ``library`` ("tracegrad" or "torch"); returns name ->
    {stdout, stderr, display (text/plain of the result), displays (text/plain of display()),
    error, evalue, result (parsed RESULT line)}. The cell named ``long_loop`` is interrupted
    after INTERRUPT_AFTER_S."""
    nb = nbformat.v4.new_notebook()
    for name, src in cells:
        cell = nbformat.v4.new_code_cell(src if library == "tracegrad" else src.replace("tracegrad", "torch"))
        cell.metadata["name"] = name
        nb.cells.append(cell)
    with tempfile.TemporaryDirectory(prefix="tracegrad-kernel-") as folder:
        km = run_notebooks.kernel_manager(folder, KERNEL_ENV)
        client = nbclient.NotebookClient(nb, km=km, timeout=120, allow_errors=True, record_timing=False,
                                         resources={"metadata": {"path": folder}})
        stop = threading.Event()

        def _interrupt_later(cell, cell_index):
            # Jupyter's stop button: SIGINT to the kernel's process group (what jupyter_client's
            # interrupt_kernel sends), every INTERRUPT_AFTER_S while the cell runs (pressed
            # again if the first came before the loop began). nbclient's interrupt_on_timeout
            # sends it too, but then dropped the cell's output and waited for the deadline.
            if cell.metadata.get("name") == "long_loop":
                group = os.getpgid(km.provisioner.pid)

                def press():
                    while not stop.wait(INTERRUPT_AFTER_S):
                        os.killpg(group, signal.SIGINT)
                threading.Thread(target=press, daemon=True).start()

        def _executed(cell, cell_index, execute_reply):
            if cell.metadata.get("name") == "long_loop":
                stop.set()
        client.on_cell_execute, client.on_cell_executed = _interrupt_later, _executed

        def _late(signum, frame):
            raise TimeoutError(f"the {library} kernel run passed {KERNEL_DEADLINE_S} s")
        prev = signal.signal(signal.SIGALRM, _late)
        signal.alarm(KERNEL_DEADLINE_S)
        try:
            client.execute()
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, prev)
            stop.set()
    got = {}
    for (name, _), cell in zip(cells, nb.cells):
        c = {"stdout": "", "stderr": "", "display": None, "displays": [], "error": None, "evalue": None}
        for o in cell.outputs:
            if o.output_type == "stream":
                c[o.name] += o.text
            elif o.output_type == "execute_result":
                c["display"] = o.data.get("text/plain")
            elif o.output_type == "display_data":
                c["displays"].append(o.data.get("text/plain"))
            elif o.output_type == "error":
                c["error"], c["evalue"] = o.ename, o.evalue
        m = re.search(r"^RESULT (.*)$", c["stdout"], re.M)
        c["result"] = json.loads(m.group(1)) if m else None
        got[name] = c
    return got


@pytest.fixture(scope="module")
def ours():
    return _execute(EXPLORE)


@pytest.fixture(scope="module")
def theirs():
    pytest.importorskip("torch")
    return _execute(EXPLORE, "torch")


@pytest.fixture(scope="module")
def interrupted():
    return _execute(INTERRUPT)


def _close(a, b, tol=1e-5):
    """Same JSON structure; numbers within ``tol`` (relative to magnitude, at least absolute)."""
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=tol, abs_tol=tol)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], tol) for k in a)
    return a == b


def _no_errors(cells, allowed=()):
    bad = {n: (c["error"], c["evalue"]) for n, c in cells.items() if c["error"] and n not in allowed}
    assert not bad, bad


def _same_results(ours, theirs, names, tol=1e-5, skip=()):
    for n in names:
        assert ours[n]["result"] is not None, (n, ours[n])
        a, b = ({k: v for k, v in c[n]["result"].items() if k not in skip} for c in (ours, theirs))
        assert _close(a, b, tol), (n, a, b)


def _as_torch(text):
    """torch's text with tracegrad's names, object addresses blanked."""
    return _blank(text.replace("torch.", "tracegrad."))


def _blank(text):
    return re.sub(r"0x[0-9a-f]+", "0x", text)


ERROR_CELLS = ("bad_shape_eager", "bad_shape_compiled")


def test_cells_run(ours, theirs):
    _no_errors(ours, ERROR_CELLS)
    _no_errors(theirs, ERROR_CELLS)


def test_model_cell_rerun_before_an_earlier_compiled_step(ours, theirs):
    trains = ["train_1", "train_2", "train_3", "train_adam", "train_v2", "train_v1_again"]
    _same_results(ours, theirs, trains, tol=1e-4)
    r = {n: ours[n]["result"] for n in trains}
    # a fresh model and optimizer each time: the same three steps, not a continuation
    assert r["train_1"] == r["train_2"] == r["train_3"] == r["train_v1_again"]
    assert r["train_adam"]["losses"] != r["train_1"]["losses"]
    assert len(r["train_adam"]["state"]) == 3     # step, exp_avg, exp_avg_sq


def test_model_or_optimizer_line_rerun_alone(ours, theirs):
    _same_results(ours, theirs, ["train_stale", "train_opt_only"], tol=1e-4)
    r = ours["train_stale"]["result"]
    # the new model is never stepped: the same loss each time, its .grad summed over the steps
    assert r["losses"] == [ours["train_1"]["result"]["losses"][0]] * 3, r
    assert ours["train_opt_only"]["result"]["losses"][0] == r["losses"][0]


def test_edited_step_cell_runs_the_new_code(ours, theirs):
    r1, r2 = ours["train_1"]["result"], ours["train_v2"]["result"]
    assert r2["losses"] != r1["losses"]         # L1 loss and clipping
    _same_results(ours, theirs, ["train_v2"], tol=1e-4)


def test_time_magics(ours, theirs):
    for cells in (ours, theirs):
        c = cells["timeit"]
        assert "per loop" in c["stdout"] and "Wall time" in c["stdout"], c
    _same_results(ours, theirs, ["timeit"], tol=1e-4, skip=("new_graphs",))
    assert ours["timeit"]["result"]["new_graphs"] == 0


@pytest.mark.parametrize("name", ["disp_output", "disp_opt", "disp_step", "disp_compiled_model", "disp_state_dict",
                                  "disp_opt_state_dict"])
def test_display_matches_torch(ours, theirs, name):
    assert ours[name]["display"] is not None, ours[name]
    assert _blank(ours[name]["display"]) == _as_torch(theirs[name]["display"])


def test_print_and_display_match_torch(ours, theirs):
    assert _blank(ours["disp_print"]["stdout"]) == _as_torch(theirs["disp_print"]["stdout"])
    assert [_blank(t) for t in ours["disp_display"]["displays"]] == [_as_torch(t) for t in theirs["disp_display"]["displays"]]
    assert len(ours["disp_display"]["displays"]) == 4


def test_bad_shape_leaves_model_and_optimizer_as_they_were(ours, theirs):
    e, t = ours["bad_shape_eager"], theirs["bad_shape_eager"]
    assert e["error"] == t["error"] == "RuntimeError"
    assert e["evalue"] == t["evalue"], (e["evalue"], t["evalue"])
    c = ours["bad_shape_compiled"]
    # torch: TorchRuntimeError (a RuntimeError) from tracing, the same shapes named
    assert c["error"] in ("RuntimeError", theirs["bad_shape_compiled"]["error"]), c
    assert "2x5" in c["evalue"] and "3x4" in c["evalue"], c["evalue"]
    r = ours["after_errors"]["result"]
    assert r["same"] and r["same_state"], r
    _same_results(ours, theirs, ["after_errors"], tol=1e-4)


def test_plot_from_numpy_and_tolist(ours, theirs):
    _same_results(ours, theirs, ["plot"], tol=1e-4)
    # the text plot (the RESULT line's floats are compared within tolerance above)
    assert ours["plot"]["stdout"].splitlines()[0] == theirs["plot"]["stdout"].splitlines()[0]


def test_views_kept_in_an_earlier_cell_follow_training(ours, theirs):
    _same_results(ours, theirs, ["live_views"], tol=1e-4)
    r = ours["live_views"]["result"]
    assert r["det"] and r["np"] and r["sd"] and r["buf"], r


def test_interrupted_loop_stops_after_whole_steps_and_training_goes_on(interrupted):
    _no_errors(interrupted, ("long_loop",))
    assert interrupted["long_loop"]["error"] == "KeyboardInterrupt", interrupted["long_loop"]
    r = interrupted["after_interrupt"]["result"]
    assert r["done"] > 3, r      # the loop ran before the interrupt
    # the model is that of ``done`` whole steps (or one more: stopped before ``done += 1``)
    assert r["whole"] in ([True, False], [False, True]), r
    assert r["finite"] and max(r["eager"] + r["compiled"]) < r["warm"][0], r


def test_manual_seed_cell_rerun_reproduces(interrupted):
    assert interrupted["seed_1"]["result"] == interrupted["seed_2"]["result"]


def test_tqdm_progress_around_compiled_steps(interrupted):
    c = interrupted["tqdm"]
    assert "final" in c["stdout"]
    assert "5/5" in c["stderr"] or c["displays"] or "train" in c["stderr"], c
