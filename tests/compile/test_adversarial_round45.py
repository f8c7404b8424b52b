"""Round 45: the optimizers no earlier round compiled (Adafactor, Muon, SparseAdam, ASGD,
RAdam, NAdam, Rprop, Adamax, Adadelta) with their ``param_groups`` flags flipped between
calls, optimizer state_dict hooks around and inside a compiled step, optimizers and
schedulers built between calls and inside the step, and the loss and embedding attributes
round 44 left (``KLDivLoss.log_target``/``reduction``, ``NLLLoss`` and ``CTCLoss`` with
ignored, out-of-range or infeasible targets, ``Embedding.max_norm``/``scale_grad_by_freq``),
BatchNorm ``momentum=None`` and ``track_running_stats`` flipped together, a step that zeroes
its gradients at the end.

Each program runs eagerly, through ``tracegrad.compile`` and with torch from identical state
(``_harness.run_three_ways``), comparing the step's results, the model and the optimizer after
every call; the number of programs is asserted (a Python value the step reads is a constant of
its program: one program per value, reused when the value comes back, as torch.compile guards
it; numeric ``lr``/``momentum``/``betas`` are inputs of one program).

Fixes:
- ``optim/optimizer.py`` (``state_dict``/``load_state_dict``, through ``compiler._note_hook``):
  the optimizer's state_dict and load_state_dict hooks were not reported to the capture, so a
  hook that appends ran only while tracing (the list grew on the traced call, never again) and
  one that counts was baked in (test_state_dict_hook_called_inside_the_step_logs_every_call,
  test_load_state_dict_hooks_inside_the_step_append_every_call,
  test_state_dict_pre_hook_counting_in_a_closure_runs_eagerly_with_a_reason).
- ``_lowering/capture.py`` NOTE [optimizers made in a trace], ``_lowering/region.py``
  ``_made_in_trace``, ``Optimizer.__init__``: an optimizer built inside the step over the
  model's parameters was lifted as outside state, a new one each retrace, so every call ran
  eagerly ("outside state kept changing while tracing"); now one program, and one kept past
  the call is a graph break with its reason
  (test_optimizer_constructed_inside_the_step_every_call,
  test_optimizer_made_inside_and_kept_by_the_caller_runs_eagerly_with_a_reason).
- ``optim/_lr_base.py`` ``LRScheduler.__new__``, ``compiler._defer_scheduler_step``,
  ``_lowering/capture.py`` ``see_scheduler_made``: a scheduler built inside the step had the
  step its constructor runs deferred past the program (NOTE [deferred scheduler step]), so
  every later call stepped the trace's scheduler object again: ``StepLR(opt, 1, 0.5)`` built
  after ``opt.step()`` halved the lr on every call where eager keeps it (a silently different
  lr). Its steps now run in the trace, where setting the group's lr is a graph break
  (test_scheduler_built_inside_the_step_runs_eagerly_with_a_reason).
- ``_ops/nn_ops.py`` ``_ctc_loss``: an infeasible sample (loss inf, ``zero_infinity=False``)
  had zero gradients where torch's are NaN in its frames before its input length
  (test_ctc_loss_infeasible_target_without_zero_infinity_and_reduction_flipped).

Not bugs (equal to eager, documented by the asserted counts and reasons): ``beta2_decay``,
``weight_decay``, ``eps`` and the Python flags are constants of their program (one per value);
a scheduler built between calls adds ``initial_lr`` to the group (one more program); SparseAdam
and a scheduler stepped before ``opt.step()`` run eagerly with a reason; a
call whose value check fails reruns eagerly up to the error, after its ``zero_grad()``, so the
next call meets None grads (a second program); Muon's bfloat16 Newton-Schulz rounds otherwise
when XLA fuses it (compiled, eager and torch agree to bfloat16 precision).
"""
import warnings

import pytest

import tracegrad

from . import _harness as _h
from ._harness import change_loop as _loop, small_mlp as _model, small_xy as _xy, snapshot, traces as _traces

_both = lambda run, **kw: _h.run_three_ways(run, **kw)


def _step(model, opts, zero_at_end=False, after=None, loss_fn=None):
    """``loss_fn(model(x), y)`` (cross-entropy by default), backward, ``step()`` of each of
    ``opts`` (one optimizer or a tuple); the grads zeroed first, or at the end with
    ``zero_at_end``. With ``after``, also returns ``after()``, called after the steps."""
    opts = opts if isinstance(opts, tuple) else (opts,)
    F = tracegrad.nn.functional if isinstance(model, tracegrad.nn.Module) else _torch().nn.functional
    loss_fn = loss_fn or F.cross_entropy

    def step(x, y):
        for o in opts if not zero_at_end else ():
            o.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        for o in opts:
            o.step()
        for o in opts if zero_at_end else ():
            o.zero_grad()
        return loss if after is None else (loss, after())
    return step


def _torch():
    return pytest.importorskip("torch")


def _set_group(opt, values):
    """``change(i)``: after call ``i`` write ``values[i]`` (a dict) into every param group."""
    def change(i):
        if i < len(values):
            for g in opt.param_groups:
                g.update(values[i])
    return change


# ---- optimizers no earlier round compiled, their flags flipped between calls

_FLIPS = {
    "Adafactor": (dict(lr=0.05), [dict(weight_decay=0.1), dict(maximize=True), dict(foreach=True, lr=0.02),
                                  dict(weight_decay=0.0, maximize=False), {}]),
    "NAdam": (dict(lr=0.05), [dict(weight_decay=0.1), dict(decoupled_weight_decay=True),
                              dict(maximize=True, momentum_decay=0.002), dict(weight_decay=0.0, maximize=False), {}]),
    "RAdam": (dict(lr=0.05), [dict(weight_decay=0.1), dict(decoupled_weight_decay=True), dict(maximize=True),
                              dict(weight_decay=0.0, maximize=False), {}]),
    "Adamax": (dict(lr=0.05), [dict(weight_decay=0.1), dict(maximize=True), dict(foreach=True, eps=1e-3),
                               dict(weight_decay=0.0, maximize=False), {}]),
    "Adadelta": (dict(lr=0.5), [dict(weight_decay=0.1), dict(maximize=True), dict(rho=0.5, foreach=True),
                                dict(weight_decay=0.0, maximize=False), {}]),
    "ASGD": (dict(lr=0.05, t0=2, lambd=0.01), [dict(weight_decay=0.1), dict(maximize=True), dict(alpha=0.5),
                                               dict(weight_decay=0.0, maximize=False), {}]),
    "Rprop": (dict(lr=0.05), [dict(etas=(0.4, 1.5)), dict(maximize=True), dict(step_sizes=(1e-3, 0.1)),
                              dict(maximize=False), {}]),
}


@pytest.mark.parametrize("name", sorted(_FLIPS))
def test_optimizer_flags_flipped_in_param_groups_between_calls(name):
    """Between calls the caller writes ``weight_decay``, ``maximize``, ``foreach`` and the
    optimizer's own knobs into ``param_groups``; every call must use the values set before it
    (torch reads the group on every ``step()``), the same values coming back reuse a program."""
    kw, flips = _FLIPS[name]

    def run(mod, wrap):
        model = _model(mod)
        opt = getattr(mod.optim, name)(model.parameters(), **kw)
        f = wrap(_step(model, opt))
        return _loop(f, lambda i: _xy(mod, i), len(flips) + 1, _set_group(opt, flips), model, opt)
    made = _both(run)
    # call 0 runs eagerly; calls 1-4 each bring a new set of options (the flags and the
    # options that are no lr/momentum/betas are constants of their program); call 5 reuses 4
    assert _traces(made[0]) == 4, made[0].stats


def test_adafactor_step_compiled_one_program():
    """Adafactor factors the second moment of the 2-D weights (``row_var``/``col_var``) and
    keeps a full ``variance`` for the biases; its ``step`` is a float tensor whose value sets
    ``beta2_t`` and the relative step size each call: one program for all calls."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adafactor(model.parameters(), lr=0.05)
        f = wrap(_step(model, opt))
        return _loop(f, lambda i: _xy(mod, i), 5, lambda i: None, model, opt)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_adafactor_lr_and_beta2_decay_set_by_hand_each_call():
    """``lr`` written into the group after every call (a hand schedule: an input of one
    program) and ``beta2_decay`` toggled between two values (a constant of its program, as
    ``weight_decay``: two programs, reused)."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adafactor(model.parameters(), lr=0.05)

        def change(i):
            opt.param_groups[0]["lr"] = 0.05 / (i + 2)
            opt.param_groups[0]["beta2_decay"] = -0.8 + 0.1 * (i % 2)
        f = wrap(_step(model, opt))
        return _loop(f, lambda i: _xy(mod, i), 6, change, model, opt)
    made = _both(run)
    assert _traces(made[0]) == 2, made[0].stats


def _both_bfloat16(run):
    """``run_three_ways`` for a program computing in bfloat16: XLA fuses the compiled
    program's bfloat16 Newton-Schulz steps and rounds their intermediates otherwise than one op
    at a time, so compiled, eager and torch agree to bfloat16 precision of the update."""
    made = []

    def wrap(f):
        made.append(tracegrad.compile(f))
        return made[-1]
    comp = run(tracegrad, wrap)
    _h.assert_same(run(tracegrad, lambda f: f), comp, "compiled", rtol=2e-3, atol=2e-4)
    _h.assert_same(run(_torch(), lambda f: f), comp, "torch", rtol=2e-3, atol=2e-4)
    return made


def _muon_pair(mod, model, **muon_kw):
    """Muon on the 2-D weights, AdamW on the biases (the way Muon is used)."""
    ws = [p for p in model.parameters() if p.dim() == 2]
    bs = [p for p in model.parameters() if p.dim() != 2]
    return mod.optim.Muon(ws, lr=0.02, **muon_kw), mod.optim.AdamW(bs, lr=0.01)


def test_muon_on_weights_and_adamw_on_biases_in_one_step():
    """Two optimizers stepped in one compiled step; Muon orthogonalises its momentum by
    Newton-Schulz in bfloat16 (torch agrees to bfloat16 precision)."""
    def run(mod, wrap):
        model = _model(mod)
        muon, adamw = _muon_pair(mod, model)

        f = wrap(_step(model, (muon, adamw)))
        return _loop(f, lambda i: _xy(mod, i), 4, lambda i: None, model, muon, adamw)
    made = _both_bfloat16(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_muon_nesterov_adjust_lr_fn_and_weight_decay_flipped_between_calls():
    def run(mod, wrap):
        model = _model(mod)
        muon, adamw = _muon_pair(mod, model, weight_decay=0.0)
        flips = [dict(nesterov=False), dict(adjust_lr_fn="match_rms_adamw"), dict(weight_decay=0.1, ns_steps=3),
                 dict(nesterov=True, adjust_lr_fn=None, weight_decay=0.0, ns_steps=5)]
        change = _set_group(muon, flips)
        f = wrap(_step(model, (muon, adamw)))
        return _loop(f, lambda i: _xy(mod, i), 5, change, model, muon)
    made = _both_bfloat16(run)
    assert _traces(made[0]) == 4, made[0].stats


def test_sparse_adam_on_sparse_embedding_equals_eager():
    """``Embedding(sparse=True)`` with SparseAdam: only the rows a batch looks up move. The
    rows are found on the host, so the step runs eagerly (with a reason) or compiled, but
    equal."""
    def run(mod, wrap):
        emb = mod.nn.Embedding(6, 3, sparse=True)
        _h.np_init(emb, mod)
        head = _h.np_init(mod.nn.Linear(3, 2), mod, seed=1)
        sparse = mod.optim.SparseAdam(list(emb.parameters()), lr=0.05)
        dense = mod.optim.Adam(head.parameters(), lr=0.05)
        idx = [[0, 1, 1], [2, 3, 0], [5, 5, 4], [0, 2, 4]]

        def step(ix):
            sparse.zero_grad()
            dense.zero_grad()
            loss = head(emb(ix)).pow(2).mean()
            loss.backward()
            sparse.step()
            dense.step()
            return loss
        f = wrap(step)
        # the weight's values (its sparse .grad has no dense snapshot), the head and both states
        return _loop(f, lambda i: (mod.tensor(idx[i]),), 4, lambda i: None, emb.weight.detach(), head,
                     sparse, dense)
    made = _both(run)
    assert _traces(made[0]) == 0, made[0].stats
    assert "sparse COO tensors work in eager mode only" in made[0].stats["graph_breaks"][0][0]


def test_asgd_averaging_starts_at_t0_inside_the_compiled_calls():
    """ASGD's ``mu`` is 1 until ``step > t0``, then ``1 / (step - t0)``; ``ax`` starts
    averaging there. The step count crosses ``t0=2`` during the compiled calls: the state
    tensors (``eta``, ``mu``, ``ax``, ``step``) must follow eager, with one program."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.ASGD(model.parameters(), lr=0.05, t0=2, lambd=0.05)
        f = wrap(_step(model, opt))
        return _loop(f, lambda i: _xy(mod, i), 6, lambda i: None, model, opt)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_radam_rectification_switches_on_during_the_compiled_calls():
    """RAdam's update is un-rectified while ``rho_t <= 5`` (the first steps with beta2 =
    0.9) and rectified after: the switch happens on a later call and must not be frozen."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.RAdam(model.parameters(), lr=0.05, betas=(0.9, 0.9))
        f = wrap(_step(model, opt))
        return _loop(f, lambda i: _xy(mod, i), 8, lambda i: None, model, opt)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_adam_amsgrad_switched_on_after_state_exists_raises_as_eager():
    """``amsgrad=True`` written into a group whose state was made without it: torch's Adam
    looks up ``max_exp_avg_sq`` and raises KeyError after the backward (the grads are the new
    ones, the parameters unchanged); the compiled step must raise it and leave the same state,
    then run on once ``amsgrad`` is off again."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        f = wrap(_step(model, opt))
        out = _loop(f, lambda i: _xy(mod, i), 2, lambda i: None, model, opt)
        opt.param_groups[0]["amsgrad"] = True
        with pytest.raises(KeyError, match="max_exp_avg_sq"):
            f(*_xy(mod, 2))
        out.append(snapshot(model))
        opt.param_groups[0]["amsgrad"] = False
        return out + _loop(f, lambda i: _xy(mod, i + 3), 2, lambda i: None, model, opt)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


# ---- optimizer state_dict hooks around a compiled step

def test_optimizer_state_dict_hooks_and_load_between_calls():
    """``register_state_dict_pre_hook`` / ``register_state_dict_post_hook`` record and edit
    what ``state_dict()`` returns (a marker key), ``register_load_state_dict_pre_hook`` halves
    the saved lr and ``register_load_state_dict_post_hook`` counts: between calls the caller
    saves and reloads the optimizer, so the next call runs with the lr and moments loaded."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        log = []

        def pre(o):
            log.append("pre")

        def post(o, sd):
            log.append("post")
            sd["marker"] = len(log)
            return sd

        def load_pre(o, sd):
            log.append(("load_pre", sd.pop("marker")))
            for g in sd["param_groups"]:
                g["lr"] = g["lr"] * 0.5
            return sd

        def load_post(o):
            log.append(("load_post", o.param_groups[0]["lr"]))
        opt.register_state_dict_pre_hook(pre)
        opt.register_state_dict_post_hook(post)
        opt.register_load_state_dict_pre_hook(load_pre)
        opt.register_load_state_dict_post_hook(load_post)

        def change(i):
            opt.load_state_dict(opt.state_dict())
        f = wrap(_step(model, opt))
        return _loop(f, lambda i: _xy(mod, i), 4, change, model, log)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_state_dict_hook_called_inside_the_step_logs_every_call():
    """The step itself snapshots ``opt.state_dict()`` after ``step()`` (a checkpoint every
    call); the post hook appends the step count it sees: once per call, compiled too."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        seen = []
        opt.register_state_dict_post_hook(lambda o, sd: seen.append(len(sd["state"])))
        f = wrap(_step(model, opt, after=lambda: opt.state_dict()["param_groups"][0]["lr"]))
        return _loop(f, lambda i: _xy(mod, i), 4, lambda i: None, model, opt, seen)
    _both(run)


# ---- schedulers built between calls

def test_step_lr_built_after_the_first_calls_and_stepped_outside():
    """The scheduler is made after call 1 (it writes ``initial_lr`` into the group) and
    stepped after every later call: the lr each call uses comes from the group, one program."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.2, momentum=0.5)
        box = {}

        def change(i):
            if i == 1:
                box["s"] = mod.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
            elif "s" in box:
                box["s"].step()
        f = wrap(_step(model, opt))
        out = _loop(f, lambda i: _xy(mod, i), 5, change, model, opt)
        return out + [box["s"].get_last_lr(), box["s"].state_dict()]
    made = _both(run)
    # the scheduler adds ``initial_lr`` to the group (its options are guarded by value): one
    # more program, then the lr it steps is an input
    assert _traces(made[0]) == 2, made[0].stats


def test_linear_warmup_built_between_calls_rescales_lr_at_construction():
    """``LinearLR(start_factor=0.25)`` made after call 0 multiplies the lr at once (the next
    call uses 0.25 lr), then a ``SequentialLR`` is built over it after call 2."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.08)
        box = {}
        S = mod.optim.lr_scheduler

        def change(i):
            if i == 0:
                box["s"] = S.LinearLR(opt, start_factor=0.25, total_iters=3)
            else:
                box["s"].step()
        f = wrap(_step(model, opt))
        out = _loop(f, lambda i: _xy(mod, i), 5, change, model, opt)
        return out + [box["s"].get_last_lr()]
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_scheduler_attached_to_the_trainer_between_calls_stepped_inside():
    """A trainer object steps ``self.sched`` inside the step when it is not None; the caller
    attaches an ExponentialLR after call 1: from then on the step steps it (a Python
    attribute the step reads: a new program, equal values)."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.2)

        class Trainer:
            sched = None

            def step(self, x, y):
                opt.zero_grad()
                loss = mod.nn.functional.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                if self.sched is not None:
                    self.sched.step()
                return loss
        t = Trainer()

        def change(i):
            if i == 1:
                t.sched = mod.optim.lr_scheduler.ExponentialLR(opt, gamma=0.7)
        f = wrap(t.step)
        out = _loop(f, lambda i: _xy(mod, i), 5, change, model, opt)
        return out + [t.sched.state_dict()]
    made = _both(run)
    assert _traces(made[0]) == 2, made[0].stats


def test_scheduler_state_loaded_between_calls_rewinds_lr():
    """A MultiStepLR stepped inside the step; after call 3 the caller loads the state it saved
    after call 0 (``last_epoch`` rewound) and resets the group's lr by hand."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.2)
        sched = mod.optim.lr_scheduler.MultiStepLR(opt, milestones=[1, 2], gamma=0.5)
        saved = {}

        def change(i):
            if i == 0:
                saved.update(sched.state_dict(), lr=opt.param_groups[0]["lr"])
            if i == 3:
                lr = saved.pop("lr")
                sched.load_state_dict(saved)
                opt.param_groups[0]["lr"] = lr
        f = wrap(_step(model, opt, after=sched.step))
        return _loop(f, lambda i: _xy(mod, i), 6, change, model, opt, sched)
    _both(run)


def test_swalr_and_averaged_model_updated_inside_the_step():
    """SWA: after call 1 the step also updates an ``AveragedModel`` and steps ``SWALR``
    (annealing to swa_lr over 2 epochs), chosen by a Python flag argument."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.2)
        swa_model = mod.optim.swa_utils.AveragedModel(model)
        swa_sched = mod.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=2)

        def step(x, y, swa):
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            if swa:
                swa_model.update_parameters(model)
                swa_sched.step()
            return loss
        f = wrap(step)
        return _loop(f, lambda i: _xy(mod, i) + (i >= 1,), 5, lambda i: None, model, opt, swa_model)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


# ---- loss and embedding attributes changed between calls

def test_nll_loss_with_every_target_ignored_on_one_call_is_nan_as_eager():
    """``NLLLoss(ignore_index=1, weight=w)``; call 2's targets are all 1: the mean over no
    weight is 0/0 = nan in torch, its grads are nan... zero, and SGD writes them in."""
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        crit = mod.nn.NLLLoss(ignore_index=1, weight=mod.tensor([1.0, 2.0, 0.5]))

        def batch(i):
            x, y = _xy(mod, i)
            return x, (mod.ones_like(y) if i == 2 else y)
        f = wrap(_step(model, opt, loss_fn=lambda out, y: crit(F.log_softmax(out, 1), y)))
        return _loop(f, batch, 4, lambda i: None, model)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_ctc_loss_with_lengths_changing_per_call_and_zero_infinity():
    """``CTCLoss(blank=0, zero_infinity=True)`` over a small model's log-probabilities, with
    target and input lengths that change every call (one target longer than its input is
    infeasible: inf, zeroed). Same shapes each call."""
    def run(mod, wrap):
        F = mod.nn.functional
        model = _h.np_init(mod.nn.Linear(4, 3), mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        crit = mod.nn.CTCLoss(blank=0, zero_infinity=True)
        targets = [[[1, 2, 1], [2, 2, 0]], [[2, 1, 1], [1, 0, 0]], [[1, 1, 1], [2, 1, 2]]]
        tlens = [[3, 2], [2, 1], [3, 3]]
        ilens = [[6, 5], [6, 3], [4, 6]]

        def step(x, tgt, il, tl):
            opt.zero_grad()
            logp = F.log_softmax(model(x), dim=2)
            loss = crit(logp, tgt, il, tl)
            loss.backward()
            opt.step()
            return loss

        def batch(i):
            return (_h.data(mod, i, 6, 2, 4), mod.tensor(targets[i]), mod.tensor(ilens[i]), mod.tensor(tlens[i]))
        f = wrap(step)
        return _loop(f, batch, 3, lambda i: None, model, opt)
    _both(run)


def test_embedding_max_norm_changed_between_calls():
    """``Embedding(max_norm=...)`` renormalises the looked-up rows of its weight in place in
    forward; the caller changes ``max_norm`` (and ``norm_type``) between calls and once sets
    it to None."""
    def run(mod, wrap):
        emb = _h.np_init(mod.nn.Embedding(6, 3, max_norm=1.0), mod, scale=1.5)
        opt = mod.optim.SGD(emb.parameters(), lr=0.1)
        idx = [[0, 1, 2], [3, 4, 1], [5, 0, 2], [1, 3, 5], [2, 2, 4]]
        vals = [(0.5, 2.0), (None, 2.0), (0.8, 1.0), (0.5, 2.0)]

        def step(ix):
            opt.zero_grad()
            loss = emb(ix).pow(2).sum()
            loss.backward()
            opt.step()
            return loss

        def change(i):
            if i < len(vals):
                emb.max_norm, emb.norm_type = vals[i]
        f = wrap(step)
        return _loop(f, lambda i: (mod.tensor(idx[i]),), 5, change, emb)
    made = _both(run)
    assert _traces(made[0]) == 3, made[0].stats


# ---- where the step zeroes its gradients

@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad_at_the_end_of_the_step(set_to_none):
    """``opt.zero_grad()`` after ``opt.step()``: between calls the caller sees no grads (None)
    or zero tensors, and the next call's backward starts from them."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=set_to_none)
            return loss
        f = wrap(step)
        return _loop(f, lambda i: _xy(mod, i), 4, lambda i: None, model, opt,
                     [p.grad for p in model.parameters()])
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_zero_grad_at_the_end_with_a_grad_read_by_the_caller_in_between():
    """The grads are zeroed at the end; the caller adds a penalty gradient into them between
    calls (``p.grad = ...`` on None, ``p.grad.add_`` later): the next call accumulates onto it."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        f = wrap(_step(model, opt, zero_at_end=True))

        def change(i):
            for p in model.parameters():
                p.grad = 0.01 * (i + 1) * p.detach().sign()
        return _loop(f, lambda i: _xy(mod, i), 4, change, model, opt)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


# ---- more state_dict hooks, now inside the step

def test_load_state_dict_hooks_inside_the_step_append_every_call():
    """Every call, after ``step()``, the step reloads the state it just saved (a round trip,
    as a checkpointing trainer does), through a load pre-hook that appends the number of
    states and a post-hook that appends the lr: both lists grow once per call, compiled too
    (they grew only while tracing)."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        pre_seen, post_seen = [], []
        opt.register_load_state_dict_pre_hook(lambda o, sd: pre_seen.append(len(sd["state"])))
        opt.register_load_state_dict_post_hook(lambda o: post_seen.append(o.param_groups[0]["lr"]))

        def change(i):
            opt.param_groups[0]["lr"] = 0.05 / (i + 2)
        f = wrap(_step(model, opt, after=lambda: opt.load_state_dict(opt.state_dict())))
        return _loop(f, lambda i: _xy(mod, i), 4, change, model, opt, pre_seen, post_seen)
    made = _both(run)
    # the post-hook reads the lr as a Python number (a constant of the program, guarded):
    # a new lr before every call is a new program each
    assert _traces(made[0]) == 3, made[0].stats


def test_state_dict_pre_hook_counting_in_a_closure_runs_eagerly_with_a_reason():
    """A state_dict pre-hook that counts (``nonlocal n; n += 1``) inside the step: the
    program cannot repeat the count, so the call runs eagerly and says why; equal values."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        n = 0

        def count(o):
            nonlocal n
            n += 1

        opt.register_state_dict_pre_hook(count)
        f = wrap(_step(model, opt, after=lambda: len(opt.state_dict()["param_groups"])))
        out = _loop(f, lambda i: _xy(mod, i), 3, lambda i: None, model)
        return out + [n]
    made = _both(run)
    assert _traces(made[0]) == 0, made[0].stats
    assert "count" in made[0].stats["graph_breaks"][0][0], made[0].stats


# ---- more optimizer states made or changed between calls

def test_adafactor_param_group_added_between_calls_with_a_3d_weight():
    """An Adafactor over a Linear; after call 1 a group with a 3-D tensor (factored over its
    last two dims) joins, and a later call's loss uses it: its state is made in a compiled
    call."""
    def run(mod, wrap):
        model = _model(mod)
        extra = _h.np_init(mod.nn.Linear(1, 1), mod)      # any module: its weight is replaced
        extra.w = mod.nn.Parameter(mod.ones(2, 3, 3) * 0.3)
        opt = mod.optim.Adafactor(model.parameters(), lr=0.05)
        box = {"on": False}

        def step(x, y, on):
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            if on:
                loss = loss + (extra.w @ extra.w).pow(2).mean()
            loss.backward()
            opt.step()
            return loss

        def change(i):
            if i == 1:
                opt.add_param_group({"params": [extra.w], "lr": 0.02})
                box["on"] = True
        f = wrap(step)
        return _loop(f, lambda i: _xy(mod, i) + (box["on"],), 5, change, model, opt, extra.w)
    made = _both(run)
    # call 1; call 2 makes the new group's state inside the program; then one more
    assert _traces(made[0]) == 3, made[0].stats


def test_lr_type_changes_float_int_zero_and_back():
    """``lr`` set to the int 0 (no update), then to an int 1 scaled by a float ``momentum``,
    then a float again: numbers of either type are one program's input."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
        lrs = [0, 1, 0.05, 0]
        f = wrap(_step(model, opt))
        return _loop(f, lambda i: _xy(mod, i), 5, _set_group(opt, [dict(lr=v) for v in lrs]), model, opt)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_asgd_t0_and_lambd_changed_between_calls():
    """ASGD's ``t0`` (when averaging starts) and ``lambd`` set by hand between calls."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.ASGD(model.parameters(), lr=0.05, t0=10)
        flips = [dict(t0=1), dict(lambd=0.1), {}, dict(t0=10)]
        f = wrap(_step(model, opt))
        return _loop(f, lambda i: _xy(mod, i), 5, _set_group(opt, flips), model, opt)
    made = _both(run)
    assert _traces(made[0]) == 3, made[0].stats


def test_reduce_on_plateau_built_between_calls_fed_the_returned_loss():
    """``ReduceLROnPlateau`` made after call 1 and stepped outside with the loss tensor the
    compiled step returned (patience 0: the lr halves whenever the loss does not improve)."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.1)
        box = {}
        f = wrap(_step(model, opt))
        out = []
        for i in range(6):
            loss = f(*_xy(mod, i % 2))
            if i == 1:
                box["s"] = mod.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0)
            elif i > 1:
                box["s"].step(loss)
            out.append([snapshot(loss), snapshot(opt)])
        return out + [box["s"].get_last_lr()]
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_optimizer_step_post_hook_keeping_an_ema_of_the_weights():
    """``opt.register_step_post_hook`` updates an EMA copy of the weights with
    ``_foreach_lerp_`` after every step (inside the compiled step); the caller removes it
    after call 2 (the EMA stops moving)."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.2)
        ema = [p.detach().clone() for p in model.parameters()]

        def hook(o, args, kwargs):
            with mod.no_grad():
                mod._foreach_lerp_(ema, [p.detach() for p in model.parameters()], 0.25)
        h = opt.register_step_post_hook(hook)
        f = wrap(_step(model, opt))
        return _loop(f, lambda i: _xy(mod, i), 5, lambda i: h.remove() if i == 2 else None, model, ema)
    made = _both(run)
    assert _traces(made[0]) == 2, made[0].stats


# ---- losses: run-time value errors and infeasible targets

def test_nll_target_out_of_range_on_one_call_raises_as_eager_then_recovers():
    """Call 2's targets hold a class index 3 of 3 classes: torch raises IndexError ("Target 3
    is out of bounds."); the compiled program must raise it when it runs (the value is not
    known while tracing), leave the parameters unchanged, and run on for later batches."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        f = wrap(_step(model, opt))
        out = _loop(f, lambda i: _xy(mod, i), 2, lambda i: None, model)
        x, y = _xy(mod, 2)
        y[1] = 3
        with pytest.raises(IndexError, match="out of bounds"):
            f(x, y)
        out.append(snapshot([p.detach() for p in model.parameters()]))
        return out + _loop(f, lambda i: _xy(mod, i + 3), 2, lambda i: None, model)
    made = _both(run)
    # the failing call reran eagerly up to the error, after its zero_grad(): the grads are
    # None for the next call, a second program (one per None-ness of the grads)
    assert _traces(made[0]) == 2, made[0].stats
    assert "value check failed at run time" in made[0].stats["graph_breaks"][0][0]


def test_embedding_index_out_of_range_in_a_compiled_step_raises_as_eager():
    """An index 6 into ``Embedding(6, 3)`` on one call: IndexError as eager, then recovery."""
    def run(mod, wrap):
        emb = _h.np_init(mod.nn.Embedding(6, 3), mod)
        opt = mod.optim.Adam(emb.parameters(), lr=0.1)

        def step(ix):
            opt.zero_grad()
            loss = emb(ix).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        out = _loop(f, lambda i: (mod.tensor([i, 5, 0]),), 2, lambda i: None, emb, opt)
        with pytest.raises(IndexError, match="index out of range"):
            f(mod.tensor([1, 6, 0]))
        out.append(snapshot(emb.weight.detach()))
        return out + _loop(f, lambda i: (mod.tensor([2, i, 3]),), 2, lambda i: None, emb, opt)
    made = _both(run)
    assert _traces(made[0]) == 2, made[0].stats      # as above: the grads None after the error


def test_ctc_loss_infeasible_target_without_zero_infinity_and_reduction_flipped():
    """``CTCLoss(zero_infinity=False)``: call 1's first target is longer than its input (loss
    inf): torch's gradient is NaN in that sample's frames before its input length and zero
    after (tracegrad's was zero: a silently finite step); ``reduction`` flipped between "mean"
    and "sum" between calls. The step returns the grads instead of stepping."""
    def run(mod, wrap):
        F = mod.nn.functional
        model = _h.np_init(mod.nn.Linear(4, 3), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.05)
        crit = mod.nn.CTCLoss(blank=0, reduction="mean")

        def step(x, tgt, il, tl):
            opt.zero_grad()
            loss = crit(F.log_softmax(model(x), dim=2), tgt, il, tl)
            loss.backward()
            return loss, [p.grad.clone() for p in model.parameters()]

        targets = [[[1, 2], [2, 1]], [[1, 2], [1, 1]], [[2, 2], [1, 0]]]
        ilens = [[5, 4], [1, 5], [5, 5]]
        tlens = [[2, 2], [2, 2], [2, 1]]
        f = wrap(step)
        reds = ["sum", "mean", "sum"]
        return _loop(f, lambda i: (_h.data(mod, i, 5, 2, 4), mod.tensor(targets[i]), mod.tensor(ilens[i]),
                                   mod.tensor(tlens[i])), 3,
                     lambda i: setattr(crit, "reduction", reds[i]), model)
    made = _both(run)
    assert _traces(made[0]) == 2, made[0].stats


def test_kl_div_reduction_and_log_target_flipped_with_per_element_losses():
    """``reduction="none"`` returns the per-element terms; the caller alternates ``none`` and
    ``batchmean`` and ``log_target`` between calls (four programs, each reused)."""
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        crit = mod.nn.KLDivLoss(reduction="none")

        def step(x, y):
            opt.zero_grad()
            logt = F.log_softmax(F.one_hot(y, 3).float(), dim=1)
            out = crit(F.log_softmax(model(x), dim=1), logt if crit.log_target else logt.exp())
            loss = out.sum() / x.shape[0] if crit.reduction == "none" else out
            loss.backward()
            opt.step()
            return out
        combos = [("batchmean", False), ("none", True), ("batchmean", True), ("none", False),
                  ("batchmean", False), ("none", True)]

        def change(i):
            if i < len(combos):
                crit.reduction, crit.log_target = combos[i]
        f = wrap(step)
        return _loop(f, lambda i: _xy(mod, i), 7, change, model)
    made = _both(run)
    assert _traces(made[0]) == 4, made[0].stats


# ---- optimizers and schedulers made or stepped at odd places

def test_optimizer_constructed_inside_the_step_every_call():
    """A fresh Adam made inside the step on every call (a common slip): its state starts empty
    each call, so every call is Adam's first step; the compiled step must not carry the
    previous call's moments, and builds one program."""
    def run(mod, wrap):
        model = _model(mod)

        def step(x, y):
            opt = mod.optim.Adam(model.parameters(), lr=0.05)
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss, opt.state_dict()["state"][0]["step"]
        f = wrap(step)
        return _loop(f, lambda i: _xy(mod, i), 4, lambda i: None, model)
    made = _both(run)
    # the optimizer is the call's own (NOTE [optimizers made in a trace]): one program; it ran
    # eagerly every call ("outside state kept changing while tracing") before round 45
    assert _traces(made[0]) == 1, made[0].stats


def test_optimizer_made_inside_from_a_config_the_caller_changes():
    """An SGD made inside the step from ``cfg.lr``/``cfg.momentum`` and stepped twice (the
    momentum buffer made by the first step is used by the second, within the call); the
    caller changes the config between calls: each call uses the values set before it (the
    config is read by the step's Python: one program per value pair, none reused here)."""
    def run(mod, wrap):
        model = _model(mod)
        cfg = type("Cfg", (), {})()
        cfg.lr, cfg.momentum = 0.2, 0.0
        vals = [(0.1, 0.0), (0.05, 0.9), (0.1, 0.9), (0.3, 0.0)]

        def step(x, y):
            opt = mod.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum)
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.step()
            return loss

        def change(i):
            if i < len(vals):
                cfg.lr, cfg.momentum = vals[i]
        f = wrap(step)
        return _loop(f, lambda i: _xy(mod, i), 5, change, model)
    made = _both(run)
    assert _traces(made[0]) == 4, made[0].stats


def test_optimizer_made_inside_and_kept_by_the_caller_runs_eagerly_with_a_reason():
    """The step builds an SGD with momentum and stores it in a dict the caller holds (the
    last one wins): its momentum buffers would hold values of the trace, so the call runs
    eagerly and says why; equal values, the kept optimizer's state included."""
    def run(mod, wrap):
        model = _model(mod)
        kept = {}

        def step(x, y):
            opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            kept["opt"] = opt
            return loss
        f = wrap(step)
        out = _loop(f, lambda i: _xy(mod, i), 3, lambda i: None, model)
        return out + [snapshot(kept["opt"])]
    made = _both(run)
    assert _traces(made[0]) == 0, made[0].stats
    assert "optimizer made inside the compiled function outlives the call" in made[0].stats["graph_breaks"][0][0]


def test_two_adafactor_steps_in_one_call_with_lr_read_between():
    """Two inner steps per call (a look-ahead pair): Adafactor's ``step`` state moves twice a
    call and its relative step size follows it."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adafactor(model.parameters(), lr=0.03, weight_decay=0.01)

        def step(x, y):
            losses = []
            for _ in range(2):
                opt.zero_grad()
                loss = mod.nn.functional.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                losses.append(loss)
            return losses
        f = wrap(step)
        return _loop(f, lambda i: _xy(mod, i), 4, lambda i: None, model, opt)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_scheduler_stepped_before_the_optimizer_warns_as_eager():
    """The step calls ``sched.step()`` before ``opt.step()``: torch warns that the order is
    wrong (the first lr is skipped); the compiled run must warn the same times and use the
    same lrs."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.2)
        sched = mod.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            sched.step()
            opt.step()
            return loss
        f = wrap(step)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = _loop(f, lambda i: _xy(mod, i), 4, lambda i: None, model, opt, sched)
        # the text after the first sentence is tracegrad's own words
        order = [str(m.message)[:60] for m in w if str(m.message).startswith("Detected call of `lr_scheduler")]
        return out + [order]
    made = _both(run)
    # the scheduler's step is deferred past the program (NOTE [deferred scheduler step]): an
    # opt.step() after it would use the old lr, so the step runs eagerly and says why
    assert _traces(made[0]) == 0, made[0].stats
    assert "optimizer.step() after lr_scheduler.step()" in made[0].stats["graph_breaks"][0][0]


def test_embedding_padding_idx_scale_grad_by_freq_and_max_norm_flipped():
    """``Embedding(padding_idx=0, max_norm=1.0)`` trained by SGD with momentum; between calls
    the caller flips ``scale_grad_by_freq`` and ``max_norm``; indices repeat within a batch
    (a row renormed once, its gradient scaled by its count)."""
    def run(mod, wrap):
        emb = _h.np_init(mod.nn.Embedding(5, 3, padding_idx=0, max_norm=1.0), mod, scale=1.2)
        opt = mod.optim.SGD(emb.parameters(), lr=0.1, momentum=0.9)
        idx = [[0, 1, 1, 3], [2, 2, 2, 0], [4, 1, 0, 4], [3, 3, 1, 2], [1, 0, 0, 4]]
        flips = [("scale_grad_by_freq", True), ("max_norm", None), ("scale_grad_by_freq", False),
                 ("max_norm", 1.0)]

        def step(ix):
            opt.zero_grad()
            loss = (emb(ix) * mod.arange(1.0, 4.0)).sum()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        return _loop(f, lambda i: (mod.tensor(idx[i]),), 5,
                     lambda i: setattr(emb, *flips[i]) if i < len(flips) else None, emb, opt)
    made = _both(run)
    assert _traces(made[0]) == 4, made[0].stats


@pytest.mark.parametrize("where", ["before", "after"])
def test_scheduler_built_inside_the_step_runs_eagerly_with_a_reason(where):
    """A scheduler made inside the step on every call, before ``opt.step()`` (a LambdaLR,
    stepped after it) or after it (a StepLR never stepped again): its constructor steps it
    once, setting the group's lr. Eager builds a fresh one each call (the StepLR keeps the lr);
    the compiled step deferred the trace's scheduler's step past the program and stepped that
    same object again on every call (the StepLR halved the lr each call: round 45). The call
    now runs eagerly and says why."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.2)
        S = mod.optim.lr_scheduler

        def step(x, y):
            sched = S.LambdaLR(opt, lambda e: 0.5 ** e) if where == "before" else None
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
            else:
                S.StepLR(opt, step_size=1, gamma=0.5)
            return loss
        f = wrap(step)
        return _loop(f, lambda i: _xy(mod, i), 4, lambda i: None, model, opt)
    made = _both(run)
    assert _traces(made[0]) == 0, made[0].stats
    assert "setting the optimizer's param_groups option 'lr'" in made[0].stats["graph_breaks"][0][0]


def test_batchnorm_momentum_none_and_track_running_stats_flipped_together():
    """BatchNorm1d's ``momentum`` None (cumulative average by ``num_batches_tracked``) and a
    float, and ``track_running_stats`` off and on, flipped between calls in train mode; the
    step also returns the running mean it leaves."""
    def run(mod, wrap):
        nn = mod.nn
        model = _h.np_init(nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6, momentum=None), nn.ReLU(),
                                         nn.Linear(6, 3)), mod)
        bn = model[1]
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        flips = [dict(momentum=0.3), dict(track_running_stats=False), dict(momentum=None),
                 dict(track_running_stats=True), dict(momentum=0.3)]

        def change(i):
            if i < len(flips):
                for k, v in flips[i].items():
                    setattr(bn, k, v)
        f = wrap(_step(model, opt, after=lambda: (bn.running_mean.clone(), bn.num_batches_tracked.clone())))
        return _loop(f, lambda i: _xy(mod, i), 6, change, model)
    made = _both(run)
    # calls 1-4: (0.3, on), (0.3, off), (None, off), (None, on) (call 0 ran eagerly); call 5
    # is (0.3, on) again and reuses call 1's program
    assert _traces(made[0]) == 4, made[0].stats
