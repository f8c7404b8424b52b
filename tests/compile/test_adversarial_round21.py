"""Twenty-first round of adversarial compiled-vs-eager programs (the rest in
test_adversarial_round21b.py and test_adversarial_round21c.py): iterative magnitude pruning
applied between calls (``prune.l1_unstructured`` twice, then ``prune.remove``), a recursive tree
network over a nested-tuple argument whose shape changes and comes back, a key/value cache a
module grows with ``cat`` on itself and the caller resets, and per-parameter Python attributes
(``p.lr_scale``, ``p.no_decay``) read by a hand-written update. torch eager, tracegrad eager and
``tracegrad.compile`` run each program from the same state and must agree after every call
(``_dynamo_port.compare_programs``, which also counts the programs built). Nothing found in
these programs."""
import pytest

from ._dynamo_port import compare_programs
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear
from ._dynamo_port import train_step

torch = pytest.importorskip("torch")


def test_iterative_magnitude_pruning_between_calls_then_remove():
    """Call 0 trains the dense layer; before call 1 the caller prunes 30% of it by magnitude
    twice (the masks combine in a ``PruningContainer``: a forward pre-hook, ``weight_orig`` and
    ``weight_mask``), and before call 2 makes it permanent with ``prune.remove`` (a new
    ``weight`` Parameter the optimizer does not hold; the optimizer keeps the old one, which no
    longer reaches the loss but keeps its momentum)."""
    def build(T, wrap):
        import importlib
        prune = importlib.import_module(T.__name__ + ".nn.utils.prune")
        net = T.nn.Sequential(_linear(T, 4, 3), T.nn.Tanh(), _linear(T, 3, 2, seed=1))
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        f = wrap(train_step(opt, lambda x: net(x).pow(2).mean()))

        def run(i):
            if i == 1:
                prune.l1_unstructured(net[0], "weight", amount=0.3)
                prune.l1_unstructured(net[0], "weight", amount=0.3)
            if i == 2:
                prune.remove(net[0], "weight")
            loss = f(_rand(T, i, 2, 4))
            first = net[0]
            seen = [loss, first.weight, [n for n, _ in net.named_parameters()],
                    [n for n, _ in net.named_buffers()]]
            if hasattr(first, "weight_orig"):
                seen += [first.weight_orig, first.weight_orig.grad, first.weight_mask]
            else:
                seen += [first.weight.grad]
            return seen
        return run
    compare_programs(build, calls=3, traces=2)


def test_recursive_tree_network_over_a_nested_tuple_argument():
    """A recursive network over a parse tree given as nested tuples of leaf indices (an
    embedding row per leaf, ``tanh(W [l; r])`` per node): the tree's shape changes every call
    and comes back to an earlier shape, so each call must run the program of its own shape."""
    trees = [((0, 1), 2), (0, (1, (2, 3))), ((0, 1), 2), (0, (1, (2, 3)))]

    def build(T, wrap):
        emb = T.nn.Embedding(4, 3)
        with T.no_grad():
            emb.weight.copy_(_rand(T, 7, 4, 3))
        comp = _linear(T, 6, 3, seed=4)
        head = _linear(T, 3, 1, seed=5)
        opt = T.optim.SGD(list(emb.parameters()) + list(comp.parameters()) + list(head.parameters()), lr=0.1)

        def encode(node):
            if isinstance(node, int):
                return emb.weight[node]
            return T.tanh(comp(T.cat([encode(node[0]), encode(node[1])])))

        def step(tree, y):
            opt.zero_grad()
            loss = (head(encode(tree)) - y).pow(2).sum()
            loss.backward()
            opt.step()
            return loss

        f = wrap(step)

        def run(i):
            loss = f(trees[i], T.tensor([float(i) - 1.5]))
            return loss, emb.weight, comp.weight, head.bias
        return run
    compare_programs(build, calls=4, traces=2)


def test_key_value_cache_grown_on_the_module_and_reset_by_the_caller():
    """Incremental decoding under ``no_grad``: each call projects one new token, appends its key
    and value to ``self.k``/``self.v`` with ``cat`` (the cache grows by one row a call) and
    attends over the whole cache; the caller resets the cache to empty before call 2 and
    reads the cache after every call (call 3 runs call 1's program again)."""
    def build(T, wrap):
        class Attn(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.qkv = _linear(T, 3, 9, seed=2)
                self.reset()

            def reset(self):
                self.k = T.zeros(0, 3)
                self.v = T.zeros(0, 3)

            def forward(self, x):
                q, k, v = self.qkv(x).split(3, dim=-1)
                self.k = T.cat([self.k, k])
                self.v = T.cat([self.v, v])
                w = T.softmax(q @ self.k.t() / 3 ** 0.5, dim=-1)
                return w @ self.v

        m = Attn()
        f = wrap(lambda x: m(x))

        def run(i):
            if i == 2:
                m.reset()
            with T.no_grad():
                out = f(_rand(T, i, 1, 3))
            return out, m.k, m.v
        return run
    compare_programs(build, calls=4, traces=range(2, 4))


def test_per_parameter_python_attributes_read_by_a_hand_written_update():
    """A hand-written SGD with decoupled weight decay reads ``p.lr_scale`` and ``p.no_decay``
    (Python attributes set on the parameters, as layer-wise lr decay and no-decay lists do);
    the caller changes a scale and flips two ``no_decay`` flags before call 2."""
    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 3), T.nn.Tanh(), _linear(T, 3, 2, seed=1))
        for j, p in enumerate(net.parameters()):
            p.lr_scale = 1.0 / (j + 1)
            p.no_decay = p.dim() == 1

        def step(x, lr):
            for p in net.parameters():
                p.grad = None
            loss = net(x).pow(2).mean()
            loss.backward()
            with T.no_grad():
                for p in net.parameters():
                    if not p.no_decay:
                        p.mul_(1 - lr * 0.1)
                    p.add_(p.grad, alpha=-lr * p.lr_scale)
            return loss

        f = wrap(step)

        def run(i):
            if i == 2:
                net[0].weight.lr_scale = 3.0
                net[2].bias.no_decay = False
                net[0].weight.no_decay = True
            loss = f(_rand(T, i, 2, 3), 0.1)
            return loss, net[0].weight, net[2].bias, net[0].bias
        return run
    compare_programs(build, traces=2)
