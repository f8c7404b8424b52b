"""Twenty-eighth round of adversarial compiled-vs-eager programs, around tensors that share a
storage through ``.data``: SAM-style restores from a backup kept in a dict or made outside,
Lookahead's slow weights copied in through ``p.data.copy_`` on the calls a Python counter
picks, two parameters tied inside the step by ``q.data = p.data``, ``vector_to_parameters``
(each parameter a view of one new vector), a running average written by ``p.data = ...`` with
a counter kept on an object, a DQN soft update, a caller holding ``p.data`` across calls, a
``register_full_backward_hook`` replacing ``grad_input`` and ``optimizer.state_dict()`` read
inside the step. After every call the caller also writes into one of the tensors in place, so
a storage the program shares differently from eager shows up in the next call's values.
tracegrad eager and ``tracegrad.compile`` run each program from the same state
(``check_compiled``) and, where it fits, torch eager too.

Every program agreed with eager. The restore onto a backup the dict keeps (SAM, FGM) ran
eagerly (a graph break since round 42's fix of a silent difference); it now compiles, the
parameter following the entry's new tensor after each call (NOTE [.data set in a trace]).
Left as graph breaks (equal to eager): a parameter moved onto a view of the kept entry, a
counter kept on a Python object (``c.n += 1``), and ``register_full_backward_hook`` (its
per-forward hooks are registered inside the function)."""
import numpy as np
import pytest

import tracegrad

from ._harness import check_compiled, data, labels, np_init


def _lin(mod, i=4, o=3, seed=0):
    return np_init(mod.nn.Linear(i, o), mod, seed=seed)


def test_restore_from_a_local_backup_dict_two_passes():
    # FGM/SAM with the backup a local dict: nothing keeps it, p alone ends on the backup's storage
    def make(mod, wrap):
        m = _lin(mod)
        opt = mod.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

        def step(x):
            m(x).pow(2).mean().backward()
            backup = {}
            with mod.no_grad():
                for n, p in m.named_parameters():
                    backup[n] = p.data.clone()
                    p.add_(0.05 * p.grad)
            opt.zero_grad()
            loss = m(x).pow(2).mean()
            loss.backward()
            with mod.no_grad():
                for n, p in m.named_parameters():
                    p.data = backup[n]
            opt.step()
            opt.zero_grad()
            return loss
        return wrap(step), {"m": m, "opt": opt}, lambda i: (data(mod, i, 5, 4),)
    check_compiled(make, calls=4, torch_too=True)


def _poke(state, i):
    """The caller writes into the first parameter in place between calls (seen through every
    tensor on its storage)."""
    with tracegrad.no_grad() if isinstance(state["m"].weight, tracegrad.Tensor) else _torch_no_grad():
        state["m"].weight.add_(0.01)


def _torch_no_grad():
    import torch
    return torch.no_grad()


def test_parameter_reset_onto_a_tensor_made_outside_each_call():
    # ``p.data = anchor`` with ``anchor`` made before the first call: eagerly p and anchor share
    # one storage from then on, so the step's update and the caller's write move anchor too
    def make(mod, wrap):
        m = _lin(mod)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)
        anchor = m.weight.detach().clone()

        def step(x):
            with mod.no_grad():
                m.weight.data = anchor
            loss = m(x).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        return wrap(step), {"m": m, "opt": opt, "anchor": anchor}, lambda i: (data(mod, i, 5, 4),)
    check_compiled(make, calls=4, between=_poke, torch_too=True)


def test_lookahead_slow_weights_synced_on_the_calls_a_counter_picks():
    def make(mod, wrap):
        m = _lin(mod)
        opt = mod.optim.Adam(m.parameters(), lr=0.05)
        slow = [p.detach().clone() for p in m.parameters()]

        def step(x, k):
            loss = m(x).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            if (k + 1) % 2 == 0:
                with mod.no_grad():
                    for p, s in zip(m.parameters(), slow):
                        s.add_(p.data - s, alpha=0.5)
                        p.data.copy_(s)
            return loss
        return wrap(step), {"m": m, "opt": opt, "slow": slow}, lambda i: (data(mod, i, 5, 4), i)
    check_compiled(make, calls=5, between=_poke, torch_too=True)


def test_two_parameters_tied_inside_the_step_by_data():
    # ``b.weight.data = a.weight.data`` each call: both parameters on one storage, which
    # SGD then updates twice (once per parameter), as eager
    def make(mod, wrap):
        a, b = _lin(mod, 4, 4, 0), _lin(mod, 4, 4, 1)
        opt = mod.optim.SGD([*a.parameters(), *b.parameters()], lr=0.1)

        def step(x):
            with mod.no_grad():
                b.weight.data = a.weight.data
            loss = b(a(x)).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        state = {"m": a, "b": b, "opt": opt}
        return wrap(step), state, lambda i: (data(mod, i, 5, 4),)
    check_compiled(make, calls=4, between=_poke, torch_too=True)


def test_vector_to_parameters_makes_each_parameter_a_view_of_one_vector():
    def make(mod, wrap):
        m = _lin(mod)
        U = mod.nn.utils

        def step(x):
            loss = m(x).pow(2).mean()
            grads = mod.autograd.grad(loss, list(m.parameters()))
            with mod.no_grad():
                vec = U.parameters_to_vector(m.parameters()) - 0.1 * U.parameters_to_vector(grads)
                U.vector_to_parameters(vec, m.parameters())
            return loss
        return wrap(step), {"m": m}, lambda i: (data(mod, i, 5, 4),)
    check_compiled(make, calls=4, between=_poke, torch_too=True)


def test_running_average_by_data_assignment_with_a_counter_on_an_object():
    class Avg:
        n = 0

    def make(mod, wrap):
        m, avg = _lin(mod), _lin(mod, seed=3)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)
        c = Avg()

        def step(x):
            loss = m(x).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            c.n += 1
            with mod.no_grad():
                for q, p in zip(avg.parameters(), m.parameters()):
                    q.data = q.data * ((c.n - 1) / c.n) + p.data / c.n
            return loss, avg(x)
        return wrap(step), {"m": m, "avg": avg, "opt": opt}, lambda i: (data(mod, i, 5, 4),)
    check_compiled(make, calls=4, between=_poke, torch_too=True)


def test_dqn_soft_update_with_tau_an_argument():
    def make(mod, wrap):
        q, tq = _lin(mod), _lin(mod, seed=5)
        opt = mod.optim.RMSprop(q.parameters(), lr=0.01)

        def step(s, a, r, tau):
            with mod.no_grad():
                target = r + 0.9 * tq(s).max(1).values
            pred = q(s).gather(1, a.unsqueeze(1)).squeeze(1)
            loss = mod.nn.functional.smooth_l1_loss(pred, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            for tp, p in zip(tq.parameters(), q.parameters()):
                tp.data.mul_(1 - tau).add_(tau * p.data)
            return loss
        return wrap(step), {"m": q, "tq": tq, "opt": opt}, \
            lambda i: (data(mod, i, 5, 4), labels(mod, i, 5, 3), data(mod, i, 5, seed=7), 0.1 * (i + 1))
    check_compiled(make, calls=4, between=_poke, torch_too=True)


def test_caller_holds_p_data_while_the_step_replaces_it():
    held = []

    def make(mod, wrap):
        m = _lin(mod)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)
        held.clear()

        def step(x):
            loss = m(x).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            with mod.no_grad():
                m.weight.data = m.weight.data.clamp(-0.3, 0.3)
            return loss
        state = {"m": m, "opt": opt, "held": held}

        def batch(i):
            held.append(m.weight.data)     # the caller's alias of this call's storage
            return (data(mod, i, 5, 4),)
        return wrap(step), state, batch
    check_compiled(make, calls=4, between=_poke)


def test_full_backward_hook_replacing_grad_input():
    def make(mod, wrap):
        m = mod.nn.Sequential(_lin(mod, 4, 4), mod.nn.Tanh(), _lin(mod, 4, 2, 1))
        opt = mod.optim.SGD(m.parameters(), lr=0.1)
        seen = []
        m[1].register_full_backward_hook(
            lambda mod_, gi, go: (gi[0].clamp(-0.01, 0.01),))

        def step(x):
            loss = m(x).pow(2).sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        return wrap(step), {"m": m, "opt": opt, "seen": seen}, lambda i: (data(mod, i, 5, 4),)
    check_compiled(make, calls=3, torch_too=True)


def test_optimizer_state_dict_read_inside_the_step():
    def make(mod, wrap):
        m = _lin(mod)
        opt = mod.optim.Adam(m.parameters(), lr=0.05)

        def step(x):
            loss = m(x).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            sd = opt.state_dict()
            return loss, sd["state"][0]["exp_avg"].clone(), sd["state"][1]["exp_avg_sq"] * 2
        return wrap(step), {"m": m, "opt": opt}, lambda i: (data(mod, i, 5, 4),)
    check_compiled(make, calls=3, between=_poke, torch_too=True)


@pytest.mark.parametrize("how", ["data", "detach", "view", "grad"])
def test_alias_of_a_parameter_kept_in_a_dict_by_the_step(how):
    # ``hold["w"] = p.data`` (or ``p.detach()``, a view, ``p.grad``) each call, then the
    # optimizer (or zero_grad) writes in place: eagerly the kept tensor shares p's storage and
    # sees that write and the caller's write after the call
    def make(mod, wrap):
        m = _lin(mod)
        opt = mod.optim.SGD(m.parameters(), lr=0.1, momentum=0.5)
        hold = {}

        def step(x):
            loss = m(x).pow(2).mean()
            loss.backward()
            if how == "data":
                hold["w"] = m.weight.data
            elif how == "detach":
                hold["w"] = m.weight.detach()
            elif how == "view":
                hold["w"] = m.weight.data.view(-1)
            else:
                hold["w"] = m.weight.grad
            opt.step()
            opt.zero_grad(set_to_none=False)
            return loss
        return wrap(step), {"m": m, "opt": opt, "hold": hold}, lambda i: (data(mod, i, 5, 4),)
    st = check_compiled(make, calls=4, between=_poke, torch_too=True).step.stats
    assert st["graph_breaks"] == [] and st["traces"] == 1, st


def test_data_set_to_another_parameter_itself_and_to_itself():
    def make(mod, wrap):
        a, b = _lin(mod, 4, 4, 0), _lin(mod, 4, 4, 1)
        opt = mod.optim.Adam([*a.parameters(), *b.parameters()], lr=0.05)

        def step(x):
            with mod.no_grad():
                b.weight.data = a.weight          # the parameter, not its .data
                a.bias.data = a.bias.data
            loss = b(a(x)).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        return wrap(step), {"m": a, "b": b, "opt": opt}, lambda i: (data(mod, i, 5, 4),)
    check_compiled(make, calls=4, between=_poke, torch_too=True)


def test_restore_then_write_through_the_local_backup():
    # p moved onto a local backup's storage, then the backup written in place: p sees it
    def make(mod, wrap):
        m = _lin(mod)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)

        def step(x):
            old = m.weight.data.clone()
            loss = m(x).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            with mod.no_grad():
                m.weight.data = old
                old.mul_(0.9)
            return loss
        return wrap(step), {"m": m, "opt": opt}, lambda i: (data(mod, i, 5, 4),)
    check_compiled(make, calls=4, between=_poke, torch_too=True)


def test_gradient_accumulation_with_a_python_counter_and_loss_scaled():
    def make(mod, wrap):
        m = _lin(mod)
        opt = mod.optim.SGD(m.parameters(), lr=0.1, weight_decay=1e-2)
        accum = 3

        def step(x, i):
            loss = m(x).pow(2).mean() / accum
            loss.backward()
            if (i + 1) % accum == 0:
                mod.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
                opt.step()
                opt.zero_grad()
            return loss
        return wrap(step), {"m": m, "opt": opt}, lambda i: (data(mod, i, 5, 4), i)
    check_compiled(make, calls=6, torch_too=True)


@pytest.mark.parametrize("two", [False, True])
def test_parameter_moved_onto_a_backup_the_dict_keeps_then_poked(two):
    # SAM's restore with the backup kept in a dict past the call (NOTE [.data set in a trace]):
    # eagerly the parameter and the dict's entry share one storage, so the step's update and
    # the caller's write between calls show through both; with ``two`` a second parameter is
    # moved onto the same entry (both and the entry on one storage)
    def make(mod, wrap):
        m = _lin(mod, 4, 4)
        opt = mod.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        keep = {}

        def step(x):
            with mod.no_grad():
                keep["w"] = m.weight.data.clone()
                m.weight.add_(0.1)
            loss = m(x).pow(2).mean()
            loss.backward()
            with mod.no_grad():
                m.weight.data = keep["w"]
                if two:
                    m.bias.data = keep["w"][0]
            opt.step()
            opt.zero_grad()
            return loss
        return wrap(step), {"m": m, "opt": opt, "keep": keep}, lambda i: (data(mod, i, 5, 4),)
    run = check_compiled(make, calls=4, between=_poke, torch_too=True)
    keep, m, st = run.state["keep"], run.state["m"], run.step.stats
    assert keep["w"].data_ptr() == m.weight.data_ptr()
    if two:     # the bias follows a view of the entry: the program cannot, the step runs eagerly
        assert st["eager_calls"] == 4 and all("`p.data = backup[name]`" in b for b, _ in st["graph_breaks"]), st
    else:       # one program after the first (eager) call, the weight following the entry
        assert st["graph_breaks"] == [] and st["traces"] == 1, st


def test_averaged_model_default_average_updated_inside_the_step():
    def make(mod, wrap):
        m = _lin(mod)
        swa = mod.optim.swa_utils.AveragedModel(m)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)

        def step(x):
            loss = m(x).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            swa.update_parameters(m)
            return loss, swa(x)
        return wrap(step), {"m": m, "swa": swa, "opt": opt}, lambda i: (data(mod, i, 5, 4),)
    check_compiled(make, calls=4, between=_poke, torch_too=True)


def test_weight_norm_parametrization_with_its_direction_clamped_through_data():
    def make(mod, wrap):
        P = mod.nn.utils.parametrizations
        m = P.weight_norm(_lin(mod))
        opt = mod.optim.SGD(m.parameters(), lr=0.1)

        def step(x):
            loss = m(x).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            with mod.no_grad():
                v = m.parametrizations.weight.original1
                v.data = v.data.clamp(-0.35, 0.35)
            return loss
        return wrap(step), {"m": m, "opt": opt}, lambda i: (data(mod, i, 5, 4),)
    check_compiled(make, calls=4, torch_too=True)


def test_tensor_made_in_the_step_moved_onto_a_kept_entry_stays_its_own_object():
    # ``t.data = keep["b"]; keep["a"] = t`` with ``t`` made in the step: eagerly two tensor
    # objects on one storage. A program binding the entries would bind one tensor to both
    # (``keep["a"] is keep["b"]``); the step runs eagerly instead
    runs = []
    for wrap in (lambda f: f, tracegrad.compile):
        keep = {}

        def step(x):
            keep["b"] = (x * 2).clone()
            t = tracegrad.zeros(4)
            t.data = keep["b"]
            keep["a"] = t
            keep["b"].add_(1)
            return x.sum()
        f = wrap(step)
        seen = []
        for i in range(3):
            f(tracegrad.ones(4) * i)
            keep["a"].add_(100)
            seen.append((keep["a"].tolist(), keep["b"].tolist(), keep["a"] is keep["b"],
                         keep["a"].data_ptr() == keep["b"].data_ptr()))
        runs.append(seen)
    assert runs[0] == runs[1]
    assert f.stats["graph_breaks"], f.stats
