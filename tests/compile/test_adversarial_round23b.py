"""Twenty-third round of adversarial compiled-vs-eager programs, second file (also
test_adversarial_round23.py): ``torch.where`` over a branch that is NaN where it is not taken
(whose gradient eager gives as NaN, next to the safe double-``where`` form), a teacher made with
``copy.deepcopy`` of the student inside every step, gradient accumulation over a Python loop
whose trip count is an argument, and weight normalisation by hand through ``p.data`` after the
optimizer step. torch eager, tracegrad eager and ``tracegrad.compile`` run each program from the
same state and must agree after every call (``_dynamo_port.compare``/``compare_programs``).

Found here and fixed: ``copy.deepcopy`` of a ``Parameter`` copied its ``.grad`` and Python
attributes (torch's copies neither), so a teacher made by ``deepcopy(student)`` before
``zero_grad()`` carried the student's gradients, eagerly and compiled (NOTE [deepcopy of a
parameter] in ``nn/parameter.py``)."""
import copy

import pytest

from ._dynamo_port import compare, compare_programs
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear

torch = pytest.importorskip("torch")


def test_where_over_a_nan_branch_gives_eagers_nan_gradient_and_the_safe_form_none():
    """``where(h > 0, h.sqrt(), 0)`` and ``where(h != 0, h * h.log(), 0)``: the untaken branch is
    NaN (or -inf times 0), and eager's gradient at those entries is NaN (0 times the branch's
    NaN derivative); the compiled step must give the same NaNs where eager does (no algebraic
    simplification of ``0 * nan``), and the safe double-``where`` forms no NaN. The step trains
    on the safe loss and returns the gradients of both with respect to the activations."""
    def build(T, wrap):
        net = _linear(T, 3, 4)
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            a = net(x)
            h = T.cat([a, -a, a * 0], 1)         # positive, negative and zero entries
            unsafe = T.where(h > 0, h.sqrt(), T.zeros_like(h)) + T.where(h != 0, h * h.abs().log(), 0.0)
            pos = h > 0
            hs = T.where(pos, h, T.ones_like(h))
            nz = h != 0
            ha = T.where(nz, h.abs(), T.ones_like(h))
            safe = T.where(pos, hs.sqrt(), T.zeros_like(h)) + T.where(nz, h * ha.log(), 0.0)
            g_unsafe, = T.autograd.grad(unsafe.sum(), h, retain_graph=True)
            loss = safe.pow(2).mean()
            loss.backward()
            opt.step()
            return loss, g_unsafe, g_unsafe.isnan().sum(), net.weight.grad.isnan().any()

        f = wrap(step)

        def run(i):
            out = f(_rand(T, i, 2, 3))
            assert 0 < int(out[2]) < out[1].numel()      # NaN at some entries, as eager's
            return out, net.weight, net.bias
        return run
    compare_programs(build, calls=3, traces=1)


@pytest.mark.parametrize("keep", [False, True], ids=["returned", "kept_by_the_caller"])
def test_teacher_made_by_deepcopy_of_the_student_inside_every_step(keep):
    """A self-distillation step: ``teacher = copy.deepcopy(student)`` inside the step before
    ``zero_grad()`` (the student still holds last call's ``.grad``), frozen, perturbed in place
    under ``no_grad`` by a scale argument, then the student trains towards the teacher's outputs;
    the step returns the teacher's first weight, or stores the teacher in a dict the caller reads
    (a Python side effect: that call runs eagerly). The teacher must be a copy of the student as
    it was *this* call, not alias it, and carry no ``.grad`` (torch's Parameter deepcopy copies
    none)."""
    def build(T, wrap):
        student = T.nn.Sequential(_linear(T, 3, 4), T.nn.Tanh(), _linear(T, 4, 2, seed=1))
        opt = T.optim.SGD(student.parameters(), lr=0.2, momentum=0.5)
        kept = {}

        def step(x, scale):
            teacher = copy.deepcopy(student).requires_grad_(False)
            with T.no_grad():
                for p in teacher.parameters():
                    p.mul_(scale)
            opt.zero_grad()
            loss = (student(x) - teacher(x)).pow(2).mean() + student(x).pow(2).mean() * 0.1
            loss.backward()
            opt.step()
            if keep:
                kept["teacher"] = teacher
            return loss, teacher[0].weight, teacher[2].bias.grad

        f = wrap(step)

        def run(i):
            loss, tw, tgrad = f(_rand(T, i, 2, 3), 0.9)
            out = [loss, student[0].weight, tw, tgrad, tw.requires_grad, tw.is_leaf]
            if keep:
                t = kept["teacher"]
                out += [t[0].weight, t[0].weight.grad, t[0].weight.data_ptr() != student[0].weight.data_ptr()]
            return out
        return run
    made = []
    compare(lambda T, wrap: build(T, lambda g: made.append(wrap(g)) or made[-1]), calls=3)
    st = made[-1].stats
    if keep:
        assert st["graph_breaks"] and "kept['teacher']" in st["graph_breaks"][0][0], st
    else:
        assert st["graph_breaks"] == [] and st["traces"] == 1, st


def test_gradient_accumulation_over_a_python_loop_whose_trip_count_is_an_argument():
    """The step accumulates ``n`` micro-batches (``n`` a Python int argument: 2, 3, 2) into
    ``.grad`` with one backward each, divides by ``n``, steps Adam and returns the summed
    detached loss: one program per trip count, the Adam state carrying across them."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.Adam(net.parameters(), lr=0.05)

        def step(xs, n):
            opt.zero_grad()
            total = 0
            for k in range(n):
                loss = net(xs[k]).pow(2).mean() / n
                loss.backward()
                total = total + loss.detach()
            opt.step()
            return total

        f = wrap(step)
        counts = [2, 3, 2]

        def run(i):
            total = f(_rand(T, i, 3, 2, 3), counts[i])
            return total, net.weight, net.bias.grad, opt.state[net.weight]["exp_avg_sq"]
        return run
    compare_programs(build, calls=3, traces=2)


def test_weight_normalisation_by_hand_through_data_after_the_step():
    """After ``opt.step()`` the step renormalises each row of the weight to unit norm in place
    through ``p.data`` (``w.data.div_(w.data.norm(dim=1, keepdim=True))``), caps the bias with
    ``b.data.copy_(b.data.renorm(2, 0, c))`` for a Python float ``c`` argument, and scales the
    whole weight by ``p.data.mul_(g)`` with a 0-dim tensor argument ``g``; the momentum buffer
    carries and the next call trains from the normalised weights."""
    def build(T, wrap):
        net = _linear(T, 3, 3)
        opt = T.optim.SGD(net.parameters(), lr=0.3, momentum=0.9)

        def step(x, c, g):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            w, b = net.weight, net.bias
            w.data.div_(w.data.norm(dim=1, keepdim=True))
            b.data.copy_(b.data.unsqueeze(0).renorm(2, 0, c).squeeze(0))
            w.data.mul_(g)
            return loss

        f = wrap(step)
        cs = [0.5, 0.5, 0.2, 0.5]

        def run(i):
            loss = f(_rand(T, i, 2, 3), cs[i], T.tensor(1.0 + 0.1 * i))
            return loss, net.weight, net.bias, net.weight.grad, opt.state[net.weight]["momentum_buffer"]
        return run
    compare_programs(build, calls=4, traces=range(1, 3))
