"""Twenty-second round of adversarial compiled-vs-eager programs, third file (also
test_adversarial_round22.py and test_adversarial_round22b.py): per-parameter learning rates in
a dict the caller edits, read by post-accumulate-grad hooks that update each parameter in place
(no optimizer object), a weight tied between an embedding and an output layer with the
output bias in a param group whose lr the caller changes, and ``retain_grad()`` inside the step
on a view result, a stashed intermediate and a result two backwards reach. torch eager, tracegrad eager and
``tracegrad.compile`` run each program from the same state and must agree after every call
(``_dynamo_port.compare_programs``, which also counts the programs built)."""
import pytest

from ._dynamo_port import compare_programs
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear

torch = pytest.importorskip("torch")


def test_optimizer_in_backward_hooks_reading_per_parameter_lrs_from_a_caller_dict():
    """Each parameter has a post-accumulate-grad hook that does ``p.add_(p.grad, alpha=-lr)``
    with ``lr = lrs[name]`` and then sets ``p.grad = None`` (no optimizer object); the caller
    edits the ``lrs`` dict between calls, and one parameter's lr becomes 0."""
    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 4), T.nn.Tanh(), _linear(T, 4, 1, seed=1))
        lrs = {name: 0.1 for name, _ in net.named_parameters()}

        def make_hook(name):
            def hook(p):
                with T.no_grad():
                    p.add_(p.grad, alpha=-lrs[name])
                p.grad = None
            return hook

        for name, p in net.named_parameters():
            p.register_post_accumulate_grad_hook(make_hook(name))

        def step(x):
            loss = net(x).pow(2).mean()
            loss.backward()
            return loss

        f = wrap(step)

        def run(i):
            if i == 2:
                lrs["0.weight"] = 0.0
                lrs["2.bias"] = 0.5
            loss = f(_rand(T, i, 3, 3))
            return loss, net[0].weight, net[2].bias, net[2].weight, net[0].weight.grad
        return run
    compare_programs(build, calls=4, traces=range(1, 3))


def test_tied_embedding_and_output_weight_with_a_param_group_whose_lr_the_caller_changes():
    """An embedding and an output ``Linear`` share one weight (``out.weight = emb.weight``); the
    optimizer's first group holds the embedding (so the tied weight once) and the second only
    the output bias, with its own lr the caller changes between calls (no retrace)."""
    def build(T, wrap):
        emb = T.nn.Embedding(5, 3)
        out = _linear(T, 3, 5, seed=1)
        with T.no_grad():
            emb.weight.copy_(_rand(T, 3, 5, 3))
        out.weight = emb.weight
        opt = T.optim.SGD([{"params": emb.parameters()}, {"params": [out.bias], "lr": 0.5}],
                          lr=0.1, momentum=0.9)

        def step(tok, tgt):
            opt.zero_grad()
            loss = T.nn.functional.cross_entropy(out(emb(tok)), tgt)
            loss.backward()
            opt.step()
            return loss

        f = wrap(step)
        lrs = [0.5, 0.2, 0.2, 0.0]

        def run(i):
            opt.param_groups[1]["lr"] = lrs[i]
            loss = f(T.tensor([i % 5, 2, 4]), T.tensor([1, (i + 2) % 5, 0]))
            return loss, emb.weight, out.weight is emb.weight, out.bias, emb.weight.grad
        return run
    compare_programs(build, calls=4, traces=1)


def test_retained_grads_of_a_view_result_a_stashed_intermediate_and_two_backwards_inside():
    """NOTE [retained grads of results]: ``retain_grad()`` inside the step on a view that is
    returned, on an intermediate kept in a dict the caller reads, on a result two backwards
    inside reach (its ``.grad`` accumulates over both) and on a result no backward reaches
    (``.grad`` None, still retaining); the caller reads them all after each call."""
    def build(T, wrap):
        lin = _linear(T, 3, 4)
        opt = T.optim.SGD(lin.parameters(), lr=0.1)
        stash = {}

        def step(x):
            opt.zero_grad()
            h = lin(x)
            v = h[:, :2]
            v.retain_grad()
            k = h.tanh()
            k.retain_grad()
            stash["k"] = k
            m = h * 2
            m.retain_grad()
            (k.sum() + v.pow(2).sum() + m.mean()).backward(retain_graph=True)
            m.pow(2).mean().backward()
            u = h.sigmoid()
            u.retain_grad()
            opt.step()
            return v, m, u

        f = wrap(step)

        def run(i):
            v, m, u = f(_rand(T, i, 2, 3))
            k = stash["k"]
            return v.grad, m.grad, u.grad, k.grad, v.retains_grad, k.retains_grad, u.retains_grad, lin.weight
        return run
    compare_programs(build, calls=3, traces=1)
