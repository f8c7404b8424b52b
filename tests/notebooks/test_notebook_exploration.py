"""Exploring in Jupyter: what is special about a notebook, in a real kernel (nbclient + ipykernel,
as tests/notebooks/test_notebooks.py runs the stored notebooks), compared with the same cells
run with PyTorch in a second kernel.

One notebook is built here (nbformat; nothing stored) and run twice: with ``import tracegrad as
torch`` and, the source's ``tracegrad`` spelled ``torch``, with PyTorch. Cells print a
``RESULT {json}`` line that the tests compare. Covered: a function, a helper it calls and an
``nn.Module`` class redefined in a later cell (the compiled call runs the new code); a
fullgraph error and a graph-break warning naming the cell's file and line (cells have no source
file: ``inspect.getsource`` fails); a training cell run twice (optimizer state and ``.grad``
carried, hooks registered twice accumulate); an exception inside a compiled step (the traceback
shows the cell's line; state as eager leaves it); displays of tensors,
modules, optimizers and state dicts; tqdm.auto; print inside a compiled step; ``%time``/``%timeit``
of a compiled call (no retrace); warnings once per location, as Python's default filter; and
``manual_seed`` reruns reproducing.

A kernel interrupt (SIGINT) in the middle of a training loop is tested in one process, with the
signal raised from inside the program call (tests/compile/test_interrupt_donated_state.py): a
timed SIGINT into a kernel made these runs flaky (a KeyboardInterrupt out of a JAX call in an
eager op aborted the process about once in 40 interrupts, and a kernel once sat idle until the
deadline), and torch's own per-parameter Adam loop can stop between two parameters' steps.
"""
import importlib.util
import json
import math
import os
import re
import signal
import tempfile

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("tqdm")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("run_notebooks", os.path.join(ROOT, "notebooks", "run_notebooks.py"))
run_notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_notebooks)

# one thread in either kernel (the machine is shared); Agg: no figure window
KERNEL_DEADLINE_S = 180     # one kernel's whole run (about 20 s)
KERNEL_ENV = {"MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "TQDM_DISABLE": ""}

# (name, source). ``aot_eager``: PyTorch's kernel skips Inductor's C++ compile (seconds per
# graph); tracegrad takes the name and compiles as always.
CELLS = [
    ("setup", """\
import tracegrad as torch
import tracegrad.nn as nn
import copy, json, traceback, warnings
counters = torch._dynamo.utils.counters
def out(**kw):
    print("RESULT " + json.dumps(kw))
def values(t):
    return t.detach().flatten().tolist()
"""),
    # -- redefinition ---------------------------------------------------------------
    ("redef_fn_1", """\
def f(x):
    return x * 2
cf = torch.compile(f, backend="aot_eager")
scale = 1.0
def helper(x):
    return x + 1
def uses_helper(x):
    return helper(x) * scale
ch = torch.compile(uses_helper, backend="aot_eager")
x3 = torch.ones(3)
out(f=values(cf(x3)), f2=values(cf(x3)), h=values(ch(x3)), h2=values(ch(x3)))
"""),
    ("redef_fn_2", """\
def f(x):
    return x * 3
cf_old, cf = cf, torch.compile(f, backend="aot_eager")
def helper(x):
    return x + 10
h_new_helper = values(ch(x3))
scale = 2.0
out(f=values(cf(x3)), f2=values(cf(x3)), old=values(cf_old(x3)), h=h_new_helper, h_scale=values(ch(x3)))
"""),
    ("redef_module_1", """\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 1)
        with torch.no_grad():
            self.lin.weight.copy_(torch.tensor([[0.5, -1.0]])); self.lin.bias.fill_(0.25)
    def forward(self, x):
        return self.lin(x)
x2 = torch.tensor([[1.0, 2.0]])
net = Net(); cnet = torch.compile(net, backend="aot_eager")
out(a=values(cnet(x2)), b=values(cnet(x2)))
"""),
    ("redef_module_2", """\
class Net(Net):
    def forward(self, x):
        return self.lin(x) * 10
old_net = net
net = Net(); cnet = torch.compile(net, backend="aot_eager")
out(a=values(cnet(x2)), b=values(cnet(x2)), old=values(torch.compile(old_net, backend="aot_eager")(x2)))
"""),
    # -- errors and warnings naming the cell ----------------------------------------
    ("fullgraph", """\
def branchy(x):
    if x.sum() > 0:
        return x * 2
    return x
try:
    torch.compile(branchy, fullgraph=True, backend="aot_eager")(torch.ones(2))
except Exception as e:
    err = e
import inspect
try:
    inspect.getsource(branchy); source = "found"
except (OSError, TypeError):
    source = "missing"
out(cls=type(err).__name__, msg=str(err), file=branchy.__code__.co_filename, source=source)
"""),
    ("print_in_step", """\
def noisy_step(x):
    print("step sees", tuple(x.shape))
    return x * 2
cn = torch.compile(noisy_step, backend="aot_eager")
for i in range(3):
    cn(torch.ones(2))
print("file", noisy_step.__code__.co_filename)
"""),
    # -- training state across cells --------------------------------------------------
    ("train_setup", """\
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (i + 1) / 4)
opt = torch.optim.Adam(model.parameters(), lr=0.05)
xb = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [-1.0, 0.0, 1.0]])
yb = torch.tensor([[1.0], [0.0], [-1.0]])
seen = []
def make_step(model, opt):
    def step(x, y):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    return step
train_step = torch.compile(make_step(model, opt), backend="aot_eager")
"""),
    ("train_run", """\
model[0].weight.register_hook(lambda g: seen.append("hook"))
model[0].register_forward_hook(lambda mod, inp, res: seen.append("fwd"))
losses = [train_step(xb, yb).item() for i in range(3)]
out(losses=losses, seen=len(seen), w=values(model[0].weight), step=opt.state[model[0].weight]["step"].item(),
    grad=values(model[2].weight.grad), exp_avg=values(opt.state[model[2].weight]["exp_avg"]))
"""),
    ("train_run_again", """\
model[0].weight.register_hook(lambda g: seen.append("hook"))
model[0].register_forward_hook(lambda mod, inp, res: seen.append("fwd"))
losses = [train_step(xb, yb).item() for i in range(3)]
out(losses=losses, seen=len(seen), w=values(model[0].weight), step=opt.state[model[0].weight]["step"].item(),
    grad=values(model[2].weight.grad), exp_avg=values(opt.state[model[2].weight]["exp_avg"]))
"""),
    ("show_grad", "model[2].weight.grad"),
    ("after_show_grad", """\
shown = _
kept = shown.clone()
train_step(xb, yb)
out(same_object=shown is model[2].weight.grad, unchanged=torch.equal(shown, kept), shown=values(shown))
"""),
    ("raise_in_step", """\
def failing_step(x, y):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    raise ValueError("boom in my cell")
try:
    torch.compile(failing_step, backend="aot_eager")(xb, yb)
except ValueError as e:
    lines = [fr.line for fr in traceback.extract_tb(e.__traceback__)
             if fr.filename == failing_step.__code__.co_filename]
out(lines=lines, w=values(model[0].weight), step=opt.state[model[0].weight]["step"].item(),
    grad=values(model[2].weight.grad))
"""),
    # re-running the setup cell rebinds the globals the compiled step reads
    ("rerun_setup", """\
def setup(scale):
    global small, small_opt
    small = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.0), nn.Linear(4, 1))
    with torch.no_grad():
        for i, p in enumerate(small.parameters()):
            p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (i + scale) / 4)
    small_opt = torch.optim.SGD(small.parameters(), lr=0.1, momentum=0.9)
@torch.compile(backend="aot_eager")
def small_step(x, y):
    small_opt.zero_grad()
    loss = ((small(x) - y) ** 2).mean()
    loss.backward()
    small_opt.step()
    return loss
setup(1)
first = [small_step(xb, yb).item() for i in range(3)]
setup(1)
again = [small_step(xb, yb).item() for i in range(3)]
small_opt.param_groups[0]["lr"] = 0.01
new_lr = [small_step(xb, yb).item() for i in range(2)]
small[0].requires_grad_(False)
w0 = small[0].weight.clone()
frozen = [small_step(xb, yb).item() for i in range(2)]
small.eval()
evaluated = [small_step(xb, yb).item() for i in range(2)]
out(first=first, again=again, new_lr=new_lr, frozen=frozen, evaluated=evaluated,
    kept=torch.equal(w0, small[0].weight), no_grad=small[0].weight.grad is None)
"""),
    # -- rich display ------------------------------------------------------------------
    ("disp_grad_fn", "torch.tensor([1.5, 2.0], requires_grad=True) * 2"),
    ("disp_large", "torch.arange(2000, dtype=torch.float64) / 7"),
    ("disp_dtypes", """\
print(torch.tensor([1, 2], dtype=torch.int32), torch.tensor([1.0, 2.5], dtype=torch.float16))
print(torch.tensor([1.0], dtype=torch.bfloat16), torch.tensor(3.0), torch.zeros(2, 0), torch.tensor([True]))
print(torch.tensor([1e10, 1.0]), torch.tensor([[1.123456789]]), torch.ones(2, requires_grad=True))
print(str(torch.ones(2, 2).sum(0)), torch.tensor([1.0, 2.0], dtype=torch.float64) * torch.ones(2, requires_grad=True))
"""),
    ("disp_module", "model"),
    ("disp_optimizer", "opt"),
    ("disp_state_dict", "net.state_dict()"),
    ("disp_param", "net.lin.bias"),
    ("disp_hooks", """\
out(has=[[hasattr(v, a) for a in ("_repr_html_", "_repr_pretty_", "_repr_markdown_", "_repr_latex_", "_ipython_display_")]
         for v in (torch.ones(1), net.lin.weight, net, opt, torch.float32, torch.Size([2]))])
"""),
    ("tqdm", """\
from tqdm.auto import tqdm
total = 0.0
for i in tqdm(range(4), desc="epochs"):
    total += cn(torch.ones(2)).sum().item()
print("total", total)
"""),
    # -- timing magics, warnings, seeds ------------------------------------------------
    ("timeit", """\
graphs = counters["stats"]["unique_graphs"]
%timeit -n 3 -r 2 train_step(xb, yb)
%time train_step(xb, yb)
out(new_graphs=counters["stats"]["unique_graphs"] - graphs)
"""),
    ("warn_nonleaf", """\
for i in range(3):
    nonleaf = torch.ones(2, requires_grad=True) * 2
    nonleaf.grad
"""),
    ("warn_compiled_1", """\
def warns(x):
    warnings.warn("look at this")
    return x + 1
cw = torch.compile(warns, backend="aot_eager")
for i in range(4):
    cw(x3)
"""),
    ("warn_compiled_2", """\
for i in range(4):
    cw(x3)
"""),
    ("seed_1", """\
def draws(x):
    return nn.functional.dropout(x, 0.5) + torch.rand(4)
cd = torch.compile(draws, backend="aot_eager")
torch.manual_seed(3); a1 = values(cd(torch.ones(4)))
torch.manual_seed(3); a2 = values(cd(torch.ones(4)))
torch.manual_seed(3); a3 = values(cd(torch.ones(4))); b3 = values(torch.randn(2))
out(a1=a1, a2=a2, a3=a3, b3=b3)
"""),
    ("seed_2", """\
torch.manual_seed(3); a3 = values(cd(torch.ones(4))); b3 = values(torch.randn(2))
out(a3=a3, b3=b3)
"""),
]
NAMES = [n for n, _ in CELLS]


def _execute(library):
    """Run CELLS in a fresh kernel with ``library`` ("tracegrad" or "torch"); returns name ->
    {stdout, stderr, display (text/plain), error (ename or None), traceback, result (parsed)}."""
    nb = nbformat.v4.new_notebook()
    for _, src in CELLS:
        nb.cells.append(nbformat.v4.new_code_cell(src if library == "tracegrad" else src.replace("tracegrad", "torch")))
    with tempfile.TemporaryDirectory(prefix="tracegrad-kernel-") as folder:
        client = nbclient.NotebookClient(nb, km=run_notebooks.kernel_manager(folder, KERNEL_ENV), timeout=120,
                                         allow_errors=True, record_timing=False,
                                         resources={"metadata": {"path": folder}})
        # NOTE: one run in about ten hung (kernel idle, the client waiting; cause not found,
        # after the SIGINT cells): fail instead of hanging the suite
        def _late(signum, frame):
            raise TimeoutError(f"the {library} kernel run passed {KERNEL_DEADLINE_S} s")
        prev = signal.signal(signal.SIGALRM, _late)
        signal.alarm(KERNEL_DEADLINE_S)
        try:
            client.execute()
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, prev)
    cells = {}
    for (name, _), cell in zip(CELLS, nb.cells):
        c = {"stdout": "", "stderr": "", "display": None, "error": None, "traceback": ""}
        for o in cell.outputs:
            if o.output_type == "stream":
                c[o.name] += o.text
            elif o.output_type == "execute_result":
                c["display"] = o.data.get("text/plain")
            elif o.output_type == "error":
                c["error"], c["evalue"], c["traceback"] = o.ename, o.evalue, "\n".join(o.traceback)
        m = re.search(r"^RESULT (.*)$", c["stdout"], re.M)
        c["result"] = json.loads(m.group(1)) if m else None
        cells[name] = c
    return cells


@pytest.fixture(scope="module")
def ours():
    return _execute("tracegrad")


@pytest.fixture(scope="module")
def theirs():
    pytest.importorskip("torch")
    return _execute("torch")


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
    bad = {n: (c["error"], c.get("evalue")) for n, c in cells.items() if c["error"] and n not in allowed}
    assert not bad, bad


def _same_results(ours, theirs, names, tol=1e-5, skip=("lines",)):
    """The cells' RESULT values agree (``skip``: keys compared by the tests themselves)."""
    for n in names:
        assert ours[n]["result"] is not None, (n, ours[n])
        a, b = ({k: v for k, v in c[n]["result"].items() if k not in skip} for c in (ours, theirs))
        assert _close(a, b, tol), (n, a, b)


def test_cells_run_in_both_kernels(ours, theirs):
    _no_errors(ours)
    _no_errors(theirs)


def test_redefined_function_helper_and_module_run_the_new_code(ours, theirs):
    _same_results(ours, theirs, ["redef_fn_1", "redef_fn_2", "redef_module_1", "redef_module_2"])
    r = ours["redef_fn_2"]["result"]
    assert r["f"] == r["f2"] == [3.0] * 3 and r["old"] == [2.0] * 3
    assert r["h"] == [11.0] * 3 and r["h_scale"] == [22.0] * 3     # the new helper, the new global
    r = ours["redef_module_2"]["result"]
    assert r["a"] == r["b"] == [-12.5] and r["old"] == [-1.25]


def test_fullgraph_error_names_the_cell_line(ours, theirs):
    for cells in (ours, theirs):
        r = cells["fullgraph"]["result"]
        assert r["source"] == "found" or r["file"].startswith("/"), r    # ipykernel: a file per cell
        # torch: 'File "<cell file>", line 2'; tracegrad: '<cell file>:2'
        assert re.search(re.escape(r["file"]) + r'(:2\b|", line 2\b)', r["msg"]), r["msg"]
    msg = ours["fullgraph"]["result"]["msg"]
    assert not re.search(r"jax|tracer|jaxpr", msg, re.I), msg
    assert "fullgraph" in msg and "bool()" in msg


def test_print_in_compiled_step_each_call_and_graph_break_warning_names_the_line(ours, theirs):
    for cells in (ours, theirs):
        assert cells["print_in_step"]["stdout"].count("step sees (2,)") == 3
    c = ours["print_in_step"]
    fname = re.search(r"^file (.*)$", c["stdout"], re.M).group(1)
    # a warning (torch compiles the print silently, splitting the graph) that points at the print
    assert f"at {fname}:2)" in c["stderr"], c["stderr"]
    assert c["stderr"].count("UserWarning") == 1, c["stderr"]


def test_training_cell_rerun_carries_state_and_hooks_accumulate(ours, theirs):
    _same_results(ours, theirs, ["train_run", "train_run_again", "after_show_grad", "raise_in_step"], tol=1e-4)
    # hooks: one of each, then two of each, per step (3 steps each cell)
    assert ours["train_run"]["result"]["seen"] == 6
    assert ours["train_run_again"]["result"]["seen"] == 6 + 12
    assert ours["train_run_again"]["result"]["step"] == 6.0
    r = ours["after_show_grad"]["result"]
    assert r["unchanged"] and not r["same_object"]    # zero_grad() set the displayed .grad aside
    assert ours["show_grad"]["display"] == theirs["show_grad"]["display"]


def test_exception_in_compiled_step_shows_the_cell_line(ours, theirs):
    for cells in (ours, theirs):
        assert 'raise ValueError("boom in my cell")' in cells["raise_in_step"]["result"]["lines"]
    assert ours["raise_in_step"]["result"]["step"] == 8.0     # the step ran before the raise, as eagerly


def test_rerun_setup_cell_rebinds_model_optimizer_lr_and_frozen_layers(ours, theirs):
    _same_results(ours, theirs, ["rerun_setup"], tol=1e-4)
    r = ours["rerun_setup"]["result"]
    assert r["first"] == r["again"] and r["kept"] and r["no_grad"], r


def test_displays_match_torch(ours, theirs):
    for n in ("disp_grad_fn", "disp_large", "disp_module", "disp_optimizer", "disp_state_dict", "disp_param"):
        assert ours[n]["display"] is not None, n
        assert ours[n]["display"] == theirs[n]["display"].replace("torch.", "tracegrad."), n
    assert ours["disp_dtypes"]["stdout"] == theirs["disp_dtypes"]["stdout"].replace("torch.", "tracegrad.")
    assert "grad_fn=<MulBackward0>" in ours["disp_grad_fn"]["display"]
    assert "..." in ours["disp_large"]["display"]
    _same_results(ours, theirs, ["disp_hooks"])


def test_tqdm_auto_progress_with_compiled_calls(ours, theirs):
    for cells in (ours, theirs):
        c = cells["tqdm"]
        assert "total 16.0" in c["stdout"], c
        # a text bar where ipywidgets is missing, a widget where it is installed
        assert "4/4" in c["stderr"] or c["display"] is not None or "epochs" in c["stderr"], c


def test_time_magics_do_not_retrace(ours, theirs):
    for cells in (ours, theirs):
        c = cells["timeit"]
        assert "per loop" in c["stdout"] and "Wall time" in c["stdout"], c
    # tracegrad's repeated calls reuse the program; torch's may recompile once here, depending on
    # which earlier outputs IPython's ``_``/``__`` history still holds (its guards on the .grad)
    assert ours["timeit"]["result"] == {"new_graphs": 0}, ours["timeit"]
    assert theirs["timeit"]["result"]["new_graphs"] <= 1, theirs["timeit"]


def test_warnings_once_per_location(ours, theirs):
    for cells in (ours, theirs):
        assert cells["warn_nonleaf"]["stderr"].count("is not a leaf Tensor") == 1
    # Python's default filter, as for the same function run eagerly: once at the warn() line,
    # and not again from a later cell (torch's compiled function repeats it: dynamo's rerun)
    assert ours["warn_compiled_1"]["stderr"].count("UserWarning: look at this") == 1, ours["warn_compiled_1"]["stderr"]
    assert ours["warn_compiled_2"]["stderr"].count("UserWarning: look at this") == 0, ours["warn_compiled_2"]["stderr"]


def test_manual_seed_reruns_reproduce(ours, theirs):
    for cells in (ours, theirs):
        r1, r2 = cells["seed_1"]["result"], cells["seed_2"]["result"]
        assert r1["a1"] == r1["a2"] == r1["a3"] == r2["a3"], (r1, r2)
        assert r1["b3"] == r2["b3"]
