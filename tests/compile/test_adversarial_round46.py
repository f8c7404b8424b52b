"""Round 46: a model's layout changed between compiled calls and changed back (NOTE [layouts
come back] in tracegrad/_state.py), gradient clipping variants inside the step, flat parameter
vectors, bfloat16 autocast around the forward with a hand loss scale, a loss summed over a
Python list of modules whose length changes, and GAN steps with two optimizers.

Parametrizations registered and removed between calls (``parametrize.register_parametrization``,
``remove_parametrizations`` both ways, a parametrization reading a Python attribute), old- and
new-API ``weight_norm`` / ``spectral_norm`` applied after some calls (with the new parameters
added to the optimizer), ``load_state_dict`` rolling the model back, ``model.to(float64)`` and
back, ``requires_grad_`` on a submodule flipped twice; ``clip_grad_norm_`` with ``foreach``,
``norm_type`` 1 / 3 / inf read from the trainer, ``get_total_norm`` + ``clip_grads_with_norm_``,
``clip_grad_value_(foreach=True)``, clipping on a generator of parameters;
``parameters_to_vector`` as a penalty and of the gradients for a hand update,
``vector_to_parameters`` inside ``no_grad``; ``autocast("cpu", bfloat16)`` around only the
forward with a scale kept in a tensor (``torch.where`` on ``isfinite``) and in Python; the sum
of the outputs of the first ``k`` blocks (``k`` an argument), of a ModuleList appended between
calls and of a plain list popped; GAN discriminator and generator steps in one compiled
function (``n_critic`` an argument) and in two, called alternately or on every other call;
SWA/EMA ``AveragedModel.update_parameters`` in the step.

Each program runs eagerly, through ``tracegrad.compile`` and with torch from identical state
(``_harness.run_three_ways``), comparing the step's results, the model and the optimizers after
every call; the number of programs is asserted (the first call runs eagerly; a layout seen
before runs its program again; a Python value the step reads is a constant of its program).

Fixes (``nn/utils/parametrize.py``):
- NOTE [parametrize cache in a trace]: ``with parametrize.cached():`` around a compiled call
  cached the parametrized weight the trace computed, a tracer outliving its program (JAX's
  UnexpectedTracerError out of the call); a weight cached eagerly before the call was a graph
  from outside the program (a graph break). A trace now caches in its own dict
  (test_parametrize_cached_context_around_the_compiled_step_and_inside,
  test_parametrized_weight_read_in_a_cached_block_before_the_compiled_call).
- ``ParametrizationList.right_inverse`` copied the value into the original where torch
  ``set_``s the original onto the value's storage: after ``model.weight = sym`` the optimizer's
  in-place steps show through ``sym`` in torch, not in tracegrad (eager and compiled alike;
  test_parametrized_weight_assigned_between_calls_through_right_inverse). Tuple results get
  torch's per-tensor dtype check too.

Not bugs (equal to eager, documented by the asserted counts): the ``.grad`` None-ness a call
starts with is part of what its program was traced for, so a parameter left out of a call
(``blocks[:k]``, Parameters rebound by ``load_state_dict(assign=True)``, a weight replaced by
``weight_norm``) makes one more program until the pattern repeats; ``vector_to_parameters`` in
the step traces twice (the first program met the parameters as views of eager call 0's vector).
"""
import pytest

import tracegrad

from . import _harness as _h
from ._harness import change_loop as _loop, np_init, small_mlp as _model, small_xy as _xy, traces as _traces

_both = lambda run, **kw: _h.run_three_ways(run, **kw)


def _F(mod):
    return mod.nn.functional


def _ce_step(mod, model, opt, extra=None):
    """zero_grad, cross-entropy of ``model(x)``, backward, ``extra()`` (between backward and
    step, e.g. clipping; its result returned with the loss), ``opt.step()``."""
    def step(x, y):
        opt.zero_grad()
        loss = _F(mod).cross_entropy(model(x), y)
        loss.backward()
        out = None if extra is None else extra()
        opt.step()
        return loss if extra is None else (loss, out)
    return step


# ---- layouts changed between calls and changed back

def _changed_run(make_opt, calls, change):
    """``run(mod, wrap)``: the small MLP trained by ``make_opt(mod, params)`` through
    ``_ce_step`` for ``calls`` calls, ``change(mod, model, opt, i)`` after call ``i``."""
    def run(mod, wrap):
        mod.manual_seed(0)          # the same draws (a spectral norm's ``_u``/``_v``) in both runs
        model = _model(mod)
        opt = make_opt(mod, model.parameters())
        f = wrap(_ce_step(mod, model, opt))
        return _loop(f, lambda i: _xy(mod, i), calls, lambda i: change(mod, model, opt, i), model, opt)
    return run


class _Scale:
    """A parametrization ``w * factor``; ``factor`` is a Python attribute the caller changes."""

    @staticmethod
    def make(mod, factor=2.0):
        class Scale(mod.nn.Module):
            def __init__(self):
                super().__init__()
                self.factor = factor

            def forward(self, w):
                return w * self.factor
        return Scale()


def test_parametrization_registered_then_removed_between_calls():
    """``register_parametrization(model[0], "weight", Scale())`` after call 1; removed after
    call 3 keeping the parametrized value (``leave_parametrized=True``): the optimizer keeps
    training the same Parameter object (torch moves it to ``parametrizations.weight.original``
    and back only when ``leave_parametrized=False``; with True it writes the value into it)."""
    def change(mod, model, _opt, i):
        P = mod.nn.utils.parametrize
        if i == 1:
            P.register_parametrization(model[0], "weight", _Scale.make(mod))
        if i == 3:
            P.remove_parametrizations(model[0], "weight", leave_parametrized=True)
    made = _both(_changed_run(lambda mod, ps: mod.optim.SGD(ps, lr=0.1, momentum=0.9), 6, change))
    # call 0 eager; 1 plain; 2-3 parametrized; 4-5 plain layout again (its Parameter object
    # is the original, now holding the parametrized value): at most one more
    assert _traces(made[0]) <= 3, made[0].stats


def test_parametrization_removed_without_leaving_the_value_and_registered_again():
    """Register, remove with ``leave_parametrized=False`` (the original comes back as the
    entry), register again: the parametrized layout comes back with a new container."""
    def change(mod, model, _opt, i):
        P = mod.nn.utils.parametrize
        if i in (0, 4):
            P.register_parametrization(model[2], "weight", _Scale.make(mod, 0.5))
        if i == 2:
            P.remove_parametrizations(model[2], "weight", leave_parametrized=False)
    made = _both(_changed_run(lambda mod, ps: mod.optim.Adam(ps, lr=0.05), 7, change))
    assert _traces(made[0]) <= 4, made[0].stats


def test_parametrization_factor_changed_between_calls():
    """The parametrization's ``factor`` (a Python float) changed after calls 1 and 3 and set
    back: one program per value, the first value's reused."""
    def run(mod, wrap):
        P = mod.nn.utils.parametrize
        model = _model(mod)
        sc = _Scale.make(mod)
        P.register_parametrization(model[0], "weight", sc)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        f = wrap(_ce_step(mod, model, opt))
        factors = {1: 3.0, 3: 2.0}
        return _loop(f, lambda i: _xy(mod, i), 6, lambda i: setattr(sc, "factor", factors.get(i, sc.factor)),
                     model, opt)
    made = _both(run)
    assert _traces(made[0]) == 2, made[0].stats


@pytest.mark.parametrize("api", ["old", "new"])
def test_weight_norm_applied_after_two_calls_and_params_added(api):
    """``weight_norm`` applied to the first layer after call 1 (old API: ``weight_g``/
    ``weight_v`` Parameters replace ``weight``; new API: a parametrization with
    ``original0``/``original1``); the new Parameters go into the optimizer with
    ``add_param_group``, the old ``weight`` stays in its group with ``.grad`` left from call 1."""
    def change(mod, model, opt, i):
        U = mod.nn.utils
        if i == 1:
            before = {id(p) for p in model.parameters()}
            if api == "old":
                U.weight_norm(model[0])
            else:
                U.parametrizations.weight_norm(model[0])
            new = [p for p in model.parameters() if id(p) not in before]
            opt.add_param_group({"params": new, "lr": 0.05})
    made = _both(_changed_run(lambda mod, ps: mod.optim.SGD(ps, lr=0.1), 5, change))
    # call 0 eager, call 1 the plain layout; call 2 the normalised layout with the old weight's
    # .grad set and the new Parameters' None, call 3 the other way round; call 4 reuses 3
    assert _traces(made[0]) == 3, made[0].stats


def test_spectral_norm_applied_between_calls_power_iteration_in_the_step():
    """``parametrizations.spectral_norm`` on the second layer after call 1: each training
    forward runs one power iteration on its ``_u``/``_v`` buffers in place (drawn from the
    global generator when registered: torch's draws differ, so no torch comparison), then
    removed after call 3 (leaving the normalised weight)."""
    def change(mod, model, _opt, i):
        U = mod.nn.utils
        if i == 1:
            U.parametrizations.spectral_norm(model[2])
        if i == 3:
            U.parametrize.remove_parametrizations(model[2], "weight")
    made = _both(_changed_run(lambda mod, ps: mod.optim.SGD(ps, lr=0.1), 6, change), torch_too=False)
    assert _traces(made[0]) <= 3, made[0].stats


def test_load_state_dict_rolls_the_model_back_every_third_call():
    """The caller keeps a ``state_dict`` copy from before call 0 and loads it after calls 2
    and 5 (a rollback): values copied in place, the layout unchanged, one program."""
    def run(mod, wrap):
        model = _model(mod)
        saved = {k: v.clone() for k, v in model.state_dict().items()}
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        f = wrap(_ce_step(mod, model, opt))
        return _loop(f, lambda i: _xy(mod, i), 7, lambda i: i % 3 == 2 and model.load_state_dict(saved),
                     model, opt)
    made = _both(run)
    # call 0 (eager) makes the momentum buffers; loading copies values in place: one program
    assert _traces(made[0]) == 1, made[0].stats


def test_load_state_dict_assign_rebinds_parameters_optimizer_keeps_the_old():
    """``load_state_dict(sd, assign=True)`` after call 1 binds new Parameter objects; the
    optimizer still holds the old ones, so from call 2 on the model's new parameters get grads
    that nothing applies (their values stay), as eagerly."""
    def run(mod, wrap):
        model = _model(mod)
        sd = {k: v.clone() * 0.5 for k, v in model.state_dict().items()}
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        f = wrap(_ce_step(mod, model, opt))
        return _loop(f, lambda i: _xy(mod, i), 5, lambda i: i == 1 and model.load_state_dict(sd, assign=True),
                     model, opt)
    made = _both(run)
    # call 1 the first layout; call 2 the new Parameters (their .grad None, the old ones' set),
    # call 3 the same layout with the new ones' .grad set (nothing zeroes them); call 4 reuses
    assert _traces(made[0]) == 3, made[0].stats


def test_model_to_float64_and_back_between_calls():
    """``model.to(float64)`` after call 1, back to float32 after call 3 (the Parameter objects
    kept, their data converted); the batch follows the model's dtype: one program per dtype,
    the float32 one reused."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        step = _ce_step(mod, model, opt)
        f = wrap(lambda x, y: step(x.to(model[0].weight.dtype), y))

        def change(i):
            if i == 1:
                model.to(mod.float64)
            if i == 3:
                model.to(mod.float32)
        return _loop(f, lambda i: _xy(mod, i), 6, change, model, opt)
    made = _both(run, torch_rtol=2e-4)
    assert _traces(made[0]) <= 3, made[0].stats


def test_submodule_requires_grad_flipped_off_and_on_twice():
    """``model[0].requires_grad_(False)`` after calls 0 and 3, back on after 1 and 4, with Adam
    (a frozen layer's grads stay from the last call it trained; zero_grad sets them None, Adam
    skips them): the two flag sets alternate, each program reused."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        f = wrap(_ce_step(mod, model, opt))
        return _loop(f, lambda i: _xy(mod, i), 7, lambda i: model[0].requires_grad_(i not in (0, 3)), model, opt)
    made = _both(run)
    assert _traces(made[0]) <= 3, made[0].stats


# ---- clipping inside the step

def _clipped(clip, freeze=False):
    """``run(mod, wrap)``: the small MLP (its first layer frozen with ``freeze``) trained by
    SGD for 4 calls, ``clip(mod, model)()`` between backward and step, its result returned."""
    def run(mod, wrap):
        model = _model(mod)
        if freeze:
            model[0].requires_grad_(False)
        opt = mod.optim.SGD(model.parameters(), lr=0.5)
        f = wrap(_ce_step(mod, model, opt, clip(mod, model)))
        return _loop(f, lambda i: _xy(mod, i), 4, _h.no_change, model, opt)
    return run


@pytest.mark.parametrize("foreach", [None, True, False])
def test_clip_grad_norm_foreach_returns_the_total_norm(foreach):
    made = _both(_clipped(lambda mod, model: lambda: mod.nn.utils.clip_grad_norm_(
        model.parameters(), 0.3, foreach=foreach)))
    assert _traces(made[0]) == 1, made[0].stats


def test_clip_norm_type_read_from_the_trainer_changed_between_calls():
    """``norm_type`` held by the trainer (1, 3, inf, back to 1): a constant of its program."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.5)
        cfg = {"p": 1.0}
        clip = lambda: mod.nn.utils.clip_grad_norm_(model.parameters(), 0.2, norm_type=cfg["p"])
        f = wrap(_ce_step(mod, model, opt, clip))
        seq = {0: 3.0, 1: float("inf"), 2: 1.0}
        return _loop(f, lambda i: _xy(mod, i), 5, lambda i: cfg.update(p=seq.get(i, cfg["p"])), model, opt)
    made = _both(run)
    # call 0 eager (p=1 unseen by a program); calls 1, 2, 3 trace p=3, inf, 1; call 4 reuses 1
    assert _traces(made[0]) == 3, made[0].stats


def test_get_total_norm_then_clip_grads_with_norm():
    """The two-part API: ``get_total_norm`` of the grads, logged, then
    ``clip_grads_with_norm_`` with that norm."""
    def clip_of(mod, model):
        U = mod.nn.utils

        def clip():
            grads = [p.grad for p in model.parameters()]
            total = U.get_total_norm(grads, norm_type=2.0)
            U.clip_grads_with_norm_(model.parameters(), 0.25, total)
            return total
        return clip
    made = _both(_clipped(clip_of))
    assert _traces(made[0]) == 1, made[0].stats


@pytest.mark.parametrize("foreach", [True, False])
def test_clip_grad_value_foreach_then_norm_on_a_generator(foreach):
    """``clip_grad_value_(..., foreach=...)`` then ``clip_grad_norm_`` of a generator
    expression over the parameters (consumed once, as torch's does)."""
    def run(mod, wrap):
        U = mod.nn.utils
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.5, momentum=0.5)

        def clip():
            U.clip_grad_value_(model.parameters(), 0.05, foreach=foreach)
            return U.clip_grad_norm_((p for p in model.parameters() if p.ndim == 2), 0.1)
        f = wrap(_ce_step(mod, model, opt, clip))
        return _loop(f, lambda i: _xy(mod, i), 4, _h.no_change, model, opt)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats     # the momentum buffers exist after call 0


# ---- flat parameter vectors

def test_parameters_to_vector_penalty_in_the_loss():
    def run(mod, wrap):
        U = mod.nn.utils
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            vec = U.parameters_to_vector(model.parameters())
            loss = _F(mod).cross_entropy(model(x), y) + 1e-2 * vec.pow(2).sum()
            loss.backward()
            opt.step()
            return loss, vec
        return _loop(wrap(step), lambda i: _xy(mod, i), 4, _h.no_change, model, opt)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_hand_update_through_flat_gradient_vector():
    """No optimizer: ``g = parameters_to_vector(p.grad ...)``, ``v = parameters_to_vector(...)``,
    ``vector_to_parameters(v - lr * g / g.norm(), ...)`` under ``no_grad``, then grads zeroed
    in place (``zero_grad(set_to_none=False)``)."""
    def run(mod, wrap):
        U = mod.nn.utils
        model = _model(mod)

        def step(x, y):
            loss = _F(mod).cross_entropy(model(x), y)
            loss.backward()
            with mod.no_grad():
                g = U.parameters_to_vector([p.grad for p in model.parameters()])
                v = U.parameters_to_vector(model.parameters())
                U.vector_to_parameters(v - 0.1 * g / g.norm(), model.parameters())
            model.zero_grad(set_to_none=False)
            return loss, g
        return _loop(wrap(step), lambda i: _xy(mod, i), 5, _h.no_change, model)
    made = _both(run)
    # call 1's program is traced while the parameters are views of the vector eager call 0's
    # ``vector_to_parameters`` made (one storage for four: NOTE [.data set in a trace] cannot
    # point them back), so call 2 traces once more with the program's own; then it settles
    assert _traces(made[0]) == 2, made[0].stats


# ---- bfloat16 autocast around the forward, hand loss scaling

def test_autocast_forward_with_scale_in_a_tensor_and_where_on_isfinite():
    """The forward under ``autocast("cpu", bfloat16)``, the loss in float32, scaled by a tensor
    ``scale``; grads unscaled, the update skipped by ``torch.where`` when any is not finite
    (call 2's batch is scaled to overflow), the scale halved or grown by 1.5 in the tensor."""
    def run(mod, wrap):
        model = _model(mod)
        scale = mod.tensor(64.0)

        def step(x, y):
            with mod.autocast("cpu", dtype=mod.bfloat16):
                logits = model(x)
            loss = _F(mod).cross_entropy(logits.float(), y)
            (loss * scale).backward()
            with mod.no_grad():
                grads = [p.grad / scale for p in model.parameters()]
                ok = mod.stack([mod.isfinite(g).all() for g in grads]).all()
                for p, g in zip(model.parameters(), grads):
                    p.sub_(mod.where(ok, 0.1 * g, mod.zeros_like(g)))
                scale.copy_(mod.where(ok, scale * 1.5, scale * 0.5))
            model.zero_grad()
            return loss.detach(), ok

        def batch(i):
            x, y = _xy(mod, i)
            return (x * 3e38 if i == 2 else x), y
        return _loop(wrap(step), batch, 5, _h.no_change, model, scale)
    made = _both(run, torch_rtol=2e-2)
    assert _traces(made[0]) == 1, made[0].stats


def test_autocast_forward_with_python_scale_decided_by_item():
    """The same with the scale a Python float and the skip decided by ``found.item()``: runs
    eagerly past the ``.item()`` with a reason; values and the Python scale equal eager."""
    def run(mod, wrap):
        model = _model(mod)
        st = {"scale": 32.0, "log": []}

        def step(x, y):
            with mod.autocast("cpu", dtype=mod.bfloat16):
                logits = model(x)
            loss = _F(mod).cross_entropy(logits.float(), y)
            (loss * st["scale"]).backward()
            with mod.no_grad():
                found = mod.stack([(~mod.isfinite(p.grad)).any() for p in model.parameters()]).any()
                if found.item():
                    st["scale"] /= 2
                else:
                    for p in model.parameters():
                        p.sub_(0.1 * p.grad / st["scale"])
            model.zero_grad()
            st["log"].append(st["scale"])
            return loss.detach()

        def batch(i):
            x, y = _xy(mod, i)
            return (x * 3e38 if i == 1 else x), y
        return _loop(wrap(step), batch, 4, _h.no_change, model, st)
    _both(run, torch_rtol=2e-2)


# ---- a loss summed over a Python list of modules

def _blocks(mod, n):
    nn = mod.nn
    return [np_init(nn.Linear(4, 4), mod, seed=10 + k) for k in range(n)]


def test_loss_over_first_k_blocks_k_an_argument():
    """``sum(b(x).pow(2).mean() for b in blocks[:k])`` with ``k`` a Python argument 1, 3, 2, 3,
    2, ...: one program per ``k`` and the .grads it starts with (``zero_grad()`` left a block
    the last call did not use at None), reused once both repeat."""
    def run(mod, wrap):
        blocks = mod.nn.ModuleList(_blocks(mod, 3))
        opt = mod.optim.SGD(blocks.parameters(), lr=0.1)

        def step(x, k):
            opt.zero_grad()
            loss = sum(b(x).pow(2).mean() for b in blocks[:k])
            loss.backward()
            opt.step()
            return loss
        ks = [1, 3, 2, 3, 2, 3, 2]
        return _loop(wrap(step), lambda i: (_h.data(mod, i, 5, 4), ks[i]), len(ks), _h.no_change, blocks, opt)
    made = _both(run)
    # call 1: k=3 from grads (set, None, None); call 2: k=2 from all set; call 3: k=3 from
    # (set, set, None); calls 4-6 repeat calls 2 and 3
    assert _traces(made[0]) == 3, made[0].stats


def test_module_list_appended_between_calls_and_added_to_the_optimizer():
    """A ModuleList grows by one block after calls 1 and 3 (``add_param_group`` for it); the
    loss sums over the whole list: a new layout per growth."""
    def run(mod, wrap):
        blocks = mod.nn.ModuleList(_blocks(mod, 1))
        spare = _blocks(mod, 3)[1:]
        opt = mod.optim.SGD(blocks.parameters(), lr=0.1, momentum=0.5)

        def step(x):
            opt.zero_grad()
            loss = sum(b(x).tanh().pow(2).mean() for b in blocks)
            loss.backward()
            opt.step()
            return loss

        def change(i):
            if i in (1, 3):
                blocks.append(spare.pop(0))
                opt.add_param_group({"params": list(blocks[-1].parameters())})
        return _loop(wrap(step), lambda i: (_h.data(mod, i, 5, 4),), 6, change, blocks, opt)
    made = _both(run)
    assert _traces(made[0]) <= 5, made[0].stats


def test_plain_list_of_modules_popped_and_pushed_back():
    """A plain Python list of blocks held by the trainer: the last block popped after call 1,
    pushed back after call 3. Each length is its own program; the full list's comes back."""
    def run(mod, wrap):
        blocks = _blocks(mod, 3)
        params = [p for b in blocks for p in b.parameters()]
        opt = mod.optim.SGD(params, lr=0.1)
        held = []

        def step(x):
            opt.zero_grad()
            loss = sum(b(x).pow(2).mean() for b in blocks)
            loss.backward()
            opt.step()
            return loss

        def change(i):
            if i == 1:
                held.append(blocks.pop())
            if i == 3:
                blocks.append(held.pop())
        return _loop(wrap(step), lambda i: (_h.data(mod, i, 5, 4),), 7, change, *blocks, opt)
    made = _both(run)
    assert _traces(made[0]) <= 4, made[0].stats


# ---- GANs: two optimizers

def _gan(mod):
    nn = mod.nn
    G = np_init(nn.Sequential(nn.Linear(2, 6), nn.Tanh(), nn.Linear(6, 4)), mod, seed=3)
    D = np_init(nn.Sequential(nn.Linear(4, 6), nn.LeakyReLU(0.2), nn.Linear(6, 1)), mod, seed=4)
    oG = mod.optim.Adam(G.parameters(), lr=0.01, betas=(0.5, 0.9))
    oD = mod.optim.Adam(D.parameters(), lr=0.02, betas=(0.5, 0.9))
    return G, D, oG, oD


def _gan_batch(mod):
    return lambda i: (_h.data(mod, i, 5, 4), _h.data(mod, i, 5, 2, seed=300))


def _d_step(mod, G, D, oD, real, z):
    bce = _F(mod).binary_cross_entropy_with_logits
    oD.zero_grad()
    fake = G(z).detach()
    lr_, lf = D(real), D(fake)
    ld = bce(lr_, mod.ones_like(lr_)) + bce(lf, mod.zeros_like(lf))
    ld.backward()
    oD.step()
    return ld


def _g_step(mod, G, D, oG, z):
    bce = _F(mod).binary_cross_entropy_with_logits
    oG.zero_grad()
    out = D(G(z))
    lg = bce(out, mod.ones_like(out))
    lg.backward()       # also fills D's grads; the next D step zeroes them
    oG.step()
    return lg


def test_gan_d_and_g_steps_in_one_compiled_function_n_critic_argument():
    def run(mod, wrap):
        G, D, oG, oD = _gan(mod)

        def step(real, z, n_critic):
            lds = [_d_step(mod, G, D, oD, real, z) for _ in range(n_critic)]
            return lds, _g_step(mod, G, D, oG, z)
        b = _gan_batch(mod)
        nc = [1, 2, 2, 1, 2]
        return _loop(wrap(step), lambda i: b(i) + (nc[i],), len(nc), _h.no_change, G, D, oG, oD)
    made = _both(run)
    assert _traces(made[0]) <= 3, made[0].stats


@pytest.mark.parametrize("d_every", [1, 2])
def test_gan_d_and_g_in_two_compiled_functions(d_every):
    """A D step and a G step, each its own compiled function; the caller runs the D step on
    every call (``d_every=1``) or on even calls only, G on every call: the G program meets D's
    grads set by a D step or left by its own last backward, the same layout either way."""
    def run(mod, wrap):
        G, D, oG, oD = _gan(mod)
        fd = wrap(lambda real, z: _d_step(mod, G, D, oD, real, z))
        fg = wrap(lambda z: _g_step(mod, G, D, oG, z))
        b = _gan_batch(mod)
        out = []
        for i in range(6):
            real, z = b(i)
            ld = fd(real, z) if i % d_every == 0 else None
            out.append([_h.snapshot(ld), _h.snapshot(fg(z)), [_h.snapshot(o) for o in (G, D, oG, oD)]])
        return out
    made = _both(run)
    assert [_traces(f) for f in made] == [1, 1], [f.stats for f in made]


def test_gan_set_requires_grad_false_on_d_for_the_g_step_in_one_function():
    """D's parameters frozen by ``requires_grad_(False)`` around the G step and unfrozen after
    (inside the compiled step), so the G step leaves D's grads from the D step."""
    def run(mod, wrap):
        G, D, oG, oD = _gan(mod)

        def step(real, z):
            ld = _d_step(mod, G, D, oD, real, z)
            D.requires_grad_(False)
            lg = _g_step(mod, G, D, oG, z)
            D.requires_grad_(True)
            return ld, lg
        return _loop(wrap(step), _gan_batch(mod), 4, _h.no_change, G, D, oG, oD)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


# ---- averaged models updated in the step

@pytest.mark.parametrize("kind", ["swa", "ema"])
def test_averaged_model_updated_in_the_step(kind):
    """``AveragedModel`` (SWA mean, or ``get_ema_multi_avg_fn(0.9)``) updated after
    ``opt.step()`` in the step, its prediction returned: ``n_averaged`` counts every call."""
    def run(mod, wrap):
        S = mod.optim.swa_utils
        model = _model(mod)
        kw = {} if kind == "swa" else {"multi_avg_fn": S.get_ema_multi_avg_fn(0.9)}
        avg = S.AveragedModel(model, **kw)
        opt = mod.optim.SGD(model.parameters(), lr=0.2)

        def step(x, y):
            loss = _ce_step(mod, model, opt)(x, y)
            avg.update_parameters(model)
            with mod.no_grad():
                return loss, avg(x)
        return _loop(wrap(step), lambda i: _xy(mod, i), 5, _h.no_change, model, opt, avg)
    made = _both(run)
    # n_averaged goes 0 -> 1 in call 0 (eager); the first update copies, later ones average
    assert _traces(made[0]) <= 2, made[0].stats


# ---- more layouts: parametrized values assigned, state dicts of parametrized modules

class _Sym:
    """A parametrization ``(w + w.T) / 2`` with ``right_inverse`` the identity (assigning a
    symmetric value to the weight stores it as the original)."""

    @staticmethod
    def make(mod):
        class Sym(mod.nn.Module):
            def forward(self, w):
                return (w + w.t()) / 2

            def right_inverse(self, w):
                return w
        return Sym()


def _square_model(mod):
    nn = mod.nn
    return np_init(nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 3)), mod)


def test_parametrized_weight_assigned_between_calls_through_right_inverse():
    """``model[0].weight = sym`` after call 1 goes through ``right_inverse`` into the original
    Parameter: torch ``set_``s it onto ``sym``'s storage (the same Parameter object, the
    optimizer keeps training it, and its in-place steps show through ``sym``)."""
    def run(mod, wrap):
        P = mod.nn.utils.parametrize
        model = _square_model(mod)
        P.register_parametrization(model[0], "weight", _Sym.make(mod))
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        f = wrap(_ce_step(mod, model, opt))
        sym = mod.eye(4) * 0.3

        def change(i):
            if i == 1:
                model[0].weight = sym
        return _loop(f, lambda i: _xy(mod, i), 5, change, model, opt, sym)
    made = _both(run)
    # call 1; call 2 reads the original from its new storage (``set_`` between calls); reused
    assert _traces(made[0]) == 2, made[0].stats


def test_parametrize_cached_context_around_the_compiled_step_and_inside():
    """``with parametrize.cached():`` around a compiled call (the parametrized weight computed
    once per block) and inside the step: the gradient reaches the original either way."""
    def run(mod, wrap):
        P = mod.nn.utils.parametrize
        model = _square_model(mod)
        P.register_parametrization(model[0], "weight", _Sym.make(mod))
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        inner = _ce_step(mod, model, opt)

        def step(x, y, inside):
            if inside:
                with P.cached():
                    return inner(x, y)
            return inner(x, y)
        f = wrap(step)
        out = []
        for i in range(5):
            if i % 2:
                with P.cached():
                    out.append(_h.snapshot(f(*_xy(mod, i), False)))
            else:
                out.append(_h.snapshot(f(*_xy(mod, i), True)))
            out.append(_h.snapshot(model))
        return out
    made = _both(run)
    # call 0 eager; call 1 (in a block around the call) and call 2 (the block inside) are one
    # program each, reused by calls 3 and 4: nothing ran eagerly
    st = made[0].stats
    assert (st["traces"], st["eager_calls"], st["graph_breaks"]) == (2, 1, []), st


def test_parametrized_weight_read_in_a_cached_block_before_the_compiled_call():
    """In each ``cached()`` block the caller reads the parametrized weight first (logging its
    norm: cached eagerly, a graph from outside the call), then calls the step: eagerly the
    step backpropagates through that cached tensor; the compiled step computes its own (NOTE
    [parametrize cache in a trace]) with the same values and gradients."""
    def run(mod, wrap):
        P = mod.nn.utils.parametrize
        model = _square_model(mod)
        P.register_parametrization(model[0], "weight", _Sym.make(mod))
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        f = wrap(_ce_step(mod, model, opt))
        out = []
        for i in range(4):
            with P.cached():
                norm = model[0].weight.norm().item()
                out.append([norm, _h.snapshot(f(*_xy(mod, i))), _h.snapshot(model)])
        return out
    made = _both(run)
    st = made[0].stats
    assert (st["traces"], st["eager_calls"], st["graph_breaks"]) == (1, 1, []), st


def test_state_dict_of_a_parametrized_module_loaded_between_calls():
    """A parametrized model's ``state_dict`` (keys ``parametrizations.weight.original``) saved
    before call 0 and loaded after call 2: the originals take the saved values in place."""
    def run(mod, wrap):
        P = mod.nn.utils.parametrize
        model = _square_model(mod)
        P.register_parametrization(model[0], "weight", _Sym.make(mod))
        saved = {k: v.clone() for k, v in model.state_dict().items()}
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        f = wrap(_ce_step(mod, model, opt))
        return _loop(f, lambda i: _xy(mod, i), 5, lambda i: i == 2 and model.load_state_dict(saved), model, opt)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_old_weight_norm_removed_between_calls_weight_is_a_new_parameter():
    """Old-API ``weight_norm`` from the start, ``remove_weight_norm`` after call 1: ``weight``
    is a new Parameter the optimizer does not hold (it gets grads, never steps), ``weight_g``/
    ``weight_v`` keep their last grads and step on with momentum."""
    def run(mod, wrap):
        U = mod.nn.utils
        model = _model(mod)
        U.weight_norm(model[0])
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        f = wrap(_ce_step(mod, model, opt))
        return _loop(f, lambda i: _xy(mod, i), 5, lambda i: i == 1 and U.remove_weight_norm(model[0]), model, opt)
    made = _both(run)
    assert _traces(made[0]) <= 3, made[0].stats


def test_load_state_dict_strict_false_with_a_missing_head_returns_the_keys():
    """``load_state_dict(partial, strict=False)`` between calls (only the first layer): the
    result's ``missing_keys`` logged, the first layer reset, the head training on."""
    def run(mod, wrap):
        model = _model(mod)
        partial = {k: v.clone() for k, v in model.state_dict().items() if k.startswith("0.")}
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        f = wrap(_ce_step(mod, model, opt))
        log = []
        res = _loop(f, lambda i: _xy(mod, i), 4,
                    lambda i: log.append(list(model.load_state_dict(partial, strict=False).missing_keys)), model, opt)
        return [res, log]
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


# ---- clipping with frozen layers, autocast toggled by a flag

def test_clip_grad_norm_skips_parameters_without_grads():
    """The first layer frozen from the start (its ``.grad`` None): ``clip_grad_norm_`` over all
    parameters ignores it, as torch does; the norm returned."""
    made = _both(_clipped(lambda mod, model: lambda: mod.nn.utils.clip_grad_norm_(
        model.parameters(), 0.1, foreach=True), freeze=True))
    assert _traces(made[0]) == 1, made[0].stats


def test_autocast_enabled_by_a_python_flag_argument():
    """``autocast("cpu", dtype=bfloat16, enabled=amp)`` with ``amp`` an argument alternating:
    two programs, each reused; the output dtype follows the flag."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y, amp):
            opt.zero_grad()
            with mod.autocast("cpu", dtype=mod.bfloat16, enabled=amp):
                logits = model(x)
            loss = _F(mod).cross_entropy(logits.float(), y)
            loss.backward()
            opt.step()
            return loss, str(logits.dtype).split(".")[-1], logits.float()
        return _loop(wrap(step), lambda i: _xy(mod, i) + (i % 2 == 1,), 6, _h.no_change, model, opt)
    made = _both(run, torch_rtol=2e-2)
    assert _traces(made[0]) == 2, made[0].stats


def test_model_to_bfloat16_and_back_with_float32_master_copy():
    """A float32 master copy: after call 1 the model goes to bfloat16 (``model.to``), the step
    copies the master into it, backprops in bfloat16, steps the master with the float32
    gradient; after call 3 it goes back to float32."""
    def run(mod, wrap):
        model = _model(mod)
        master = [p.detach().clone().requires_grad_(True) for p in model.parameters()]
        opt = mod.optim.SGD(master, lr=0.1)

        def step(x, y):
            with mod.no_grad():
                for p, m in zip(model.parameters(), master):
                    p.copy_(m)
            model.zero_grad()
            loss = _F(mod).cross_entropy(model(x.to(model[0].weight.dtype)).float(), y)
            loss.backward()
            for p, m in zip(model.parameters(), master):
                m.grad = p.grad.float()
            opt.step()
            return loss

        def change(i):
            if i == 1:
                model.to(mod.bfloat16)
            if i == 3:
                model.to(mod.float32)
        return _loop(wrap(step), lambda i: _xy(mod, i), 6, change, model, opt)
    made = _both(run, torch_too=False)     # (torch's bfloat16 parameters have no NumPy view)
    assert _traces(made[0]) <= 3, made[0].stats
