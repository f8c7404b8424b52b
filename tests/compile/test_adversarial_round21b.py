"""Twenty-first round of adversarial compiled-vs-eager programs, second file (also
test_adversarial_round21.py and test_adversarial_round21c.py): a DQN step that syncs its target
network when the caller says, masks from a Python float threshold and ``topk`` with a Python
``k`` from the arguments, and micro-batch accumulation inside one call with a loss scale the
step grows in a tensor on a plain object. torch eager, tracegrad eager and ``tracegrad.compile``
run each program from the same state and must agree after every call
(``_dynamo_port.compare_programs``, which also counts the programs built). Nothing found in
these programs (``topk``'s order among tied values differs from torch's in eager tracegrad too:
an op-parity matter, kept out of the comparison)."""
import pytest

from ._dynamo_port import compare_programs
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear

torch = pytest.importorskip("torch")


def test_dqn_step_with_a_target_network_synced_when_the_caller_says():
    """A DQN update: Q(s, a) picked with ``gather`` from an action-index argument, the TD
    target from a target network under ``no_grad`` with ``max(1).values`` and a done mask, a
    Huber loss; every other call the caller passes ``sync=True`` and the step copies the online
    network into the target with ``load_state_dict(state_dict())`` after its optimizer step (a
    counter kept on the agent inside the step would be a graph break: round 11). Both programs
    run (with and without the sync) and the target is fixed on some calls and fresh on others."""
    def build(T, wrap):
        online = T.nn.Sequential(_linear(T, 3, 4), T.nn.ReLU(), _linear(T, 4, 2, seed=1))
        target = T.nn.Sequential(_linear(T, 3, 4, seed=2), T.nn.ReLU(), _linear(T, 4, 2, seed=3))
        opt = T.optim.Adam(online.parameters(), lr=0.05)

        def update(s, a, r, s2, done, sync):
            q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
            with T.no_grad():
                y = r + 0.9 * target(s2).max(1).values * (1 - done)
            loss = T.nn.functional.smooth_l1_loss(q, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if sync:
                target.load_state_dict(online.state_dict())
            return loss

        f = wrap(update)

        def run(i):
            a = T.tensor([i % 2, 1, 0])
            done = T.tensor([0.0, float(i % 2), 0.0])
            loss = f(_rand(T, i, 3, 3), a, _rand(T, i + 9, 3), _rand(T, i + 5, 3, 3), done, i % 2 == 1)
            return loss, target[2].weight, target[0].bias, online[0].weight
        return run
    compare_programs(build, calls=4, traces=2)


def test_masks_from_a_python_float_threshold_and_topk_from_a_python_int():
    """The step masks activations below a Python float threshold with ``masked_fill`` and
    ``where`` (the threshold differs every call and comes back to an earlier value) and keeps
    the ``k`` largest logits with ``topk``/``scatter`` where ``k`` is an argument too."""
    def build(T, wrap):
        net = _linear(T, 3, 4)
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def step(x, thr, k):
            opt.zero_grad()
            h = net(x)
            a = h.masked_fill(h.abs() < thr, 0.0)
            b = T.where(h > thr, h, h * thr)
            # (topk of a + b: no ties among the masked zeros; torch's order of tied values is its own)
            vals, idx = (a + b).topk(k, dim=1)
            kept = T.zeros_like(a).scatter(1, idx, vals)
            loss = (kept.pow(2).sum() + b.sum()) / x.shape[0]
            loss.backward()
            opt.step()
            return loss, idx

        f = wrap(step)
        args = [(0.1, 2), (0.5, 2), (0.5, 2), (0.1, 3)]

        def run(i):
            loss, idx = f(_rand(T, i, 2, 3), *args[i])
            return loss, idx, net.weight, net.bias
        return run
    compare_programs(build, calls=4, traces=2)


def test_micro_batch_accumulation_inside_one_call_with_a_loss_scale_grown_by_the_step():
    """One call splits its batch into ``n`` micro-batches (``n`` an argument), backpropagates
    each loss times ``scaler.scale / n``, unscales the gradients in place and steps; the step
    counts its calls in a tensor on the scaler object and doubles the scale every second call
    by rebinding ``scaler.scale`` to a new tensor (GradScaler's growth tracker kept by hand)."""
    def build(T, wrap):
        class Scaler:
            def __init__(self):
                self.scale = T.tensor(4.0)
                self.good = T.tensor(0)

        scaler = Scaler()
        net = T.nn.Sequential(_linear(T, 3, 3), T.nn.ReLU(), _linear(T, 3, 1, seed=1))
        opt = T.optim.SGD(net.parameters(), lr=0.05, momentum=0.5)

        def step(x, n):
            opt.zero_grad()
            total = 0.0
            for chunk in x.chunk(n):
                loss = net(chunk).pow(2).mean() / n
                (loss * scaler.scale).backward()
                total = total + loss.detach()
            for p in net.parameters():
                p.grad.div_(scaler.scale)
            opt.step()
            scaler.good += 1
            scaler.scale = T.where(scaler.good % 2 == 0, scaler.scale * 2, scaler.scale)
            return total

        f = wrap(step)
        ns = [4, 2, 2]      # the eager first call splits in four, the program in two

        def run(i):
            total = f(_rand(T, i, 4, 3), ns[i])
            return total, scaler.scale, scaler.good, net[0].weight, net[2].weight.grad
        return run
    compare_programs(build, calls=3, traces=1)
