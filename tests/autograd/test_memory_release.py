"""Eager memory: arrays are let go of as torch's engine lets go of its tensors (issue 9).

Checked with weak references to the JAX arrays behind tensors, never with RSS or time:
- a node's saved tensors and its incoming gradient die once the node has run (not at the
  end of backward), so backward's live bytes fall as it goes;
- nothing from a step outlives it but parameters, gradients and optimizer state: no old
  parameter or gradient buffer after ``opt.step()`` / a second accumulation;
- the engine hands freed memory back to the C allocator (NOTE [returning freed memory] in
  autograd/engine.py) once enough was released, never for small graphs, and counts a retained
  graph's saved tensors as kept.
"""
import gc
import weakref

import numpy as np
import pytest

import tracegrad as torch
from tracegrad.autograd import engine


def _arr(t):
    """The JAX array a tensor's storage holds (what an XLA buffer's lifetime follows)."""
    return t._st.array


def _chain(x, n):
    """x -> exp -> sin -> ... (n ops); each op saves its input or its result."""
    h = x
    for k in range(n):
        h = h.exp() if k % 2 == 0 else h.sin()
    return h


def test_saved_tensors_die_when_their_node_has_run():
    x = torch.randn(8, 8, requires_grad=True)
    hs = [x]
    for k in range(6):
        hs.append(hs[-1].exp() if k % 2 == 0 else hs[-1].sin())
    loss = hs[-1].sum()
    # node j makes hs[j+1]: exp (even j) saves its result hs[j+1], and the sin after it
    # (node j+1) saves the same tensor as its input; sin's outputs are saved by nobody
    nodes = [h.grad_fn for h in hs[1:]]
    refs = [weakref.ref(_arr(h)) for h in hs[1:]]
    seen = []

    def prehook(i):
        def hook(grad_outputs):
            seen.append((i, [r() is not None for r in refs]))
        return hook

    for i, n in enumerate(nodes):
        n.register_prehook(prehook(i))
    del hs, n
    loss.backward()
    assert [i for i, _ in seen] == list(range(5, -1, -1))   # last node first
    for i, alive in seen:
        # when node i starts, nodes above i have run: hs[j+1] lives while node j or j+1
        # (its savers) is still to run, i.e. exactly while j <= i
        assert alive == [j % 2 == 0 and j <= i for j in range(6)], (i, alive)
    assert all(r() is None for r in refs)


def test_incoming_gradient_dies_after_its_node():
    x = torch.randn(16, 16, requires_grad=True)
    h = _chain(x, 6)
    grad_refs, alive_at_start = [], []

    def hook(grad_outputs):
        alive_at_start.append([r() is not None for r in grad_refs])
        grad_refs.append(weakref.ref(_arr(grad_outputs[0])))

    node = h.grad_fn
    while node is not None and node.next_functions:
        node.register_prehook(hook)
        node = node.next_functions[0][0]
    h.sum().backward()
    assert len(alive_at_start) == 6
    # when a node starts, the gradient the previous node consumed is gone
    for alive in alive_at_start[1:]:
        assert not alive[-1]
    assert x.grad is not None and all(r() is None for r in grad_refs[:-1])


def test_backward_leaves_only_gradients_alive():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    x = torch.randn(16, 32)
    model(x).square().mean().backward()       # warm-up: cached constants come into being
    for p in model.parameters():
        p.grad = None
    gc.collect()
    before = {id(a) for a in _live()}
    acts = []
    h = x
    for m in model:
        h = m(h)
        acts.append(weakref.ref(_arr(h)))
    loss = h.square().mean()
    del h
    loss.backward()
    del loss
    assert all(r() is None for r in acts)
    new = [a for a in _live() if id(a) not in before]
    grads = {id(_arr(p.grad)) for p in model.parameters()}
    assert {id(a) for a in new} <= grads, [a.shape for a in new if id(a) not in grads]


def _live():
    import jax
    return jax.live_arrays()


@pytest.mark.parametrize("make", [
    lambda ps: torch.optim.SGD(ps, lr=0.1),
    lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    lambda ps: torch.optim.Adam(ps, lr=0.1),
], ids=["sgd", "sgd-momentum", "adam"])
def test_step_leaves_no_old_parameter_buffers(make):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    opt = make(model.parameters())
    x = torch.randn(4, 8)

    def step():
        opt.zero_grad()
        model(x).square().sum().backward()
        opt.step()

    step()
    step()
    gc.collect()
    n_live = len(_live())
    old_params = [weakref.ref(_arr(p)) for p in model.parameters()]
    old_grads = [weakref.ref(_arr(p.grad)) for p in model.parameters()]
    old_state = [weakref.ref(_arr(v)) for s in opt.state.values() for v in s.values()
                 if isinstance(v, torch.Tensor)]
    values = [np.array(p.detach()) for p in model.parameters()]   # numpy() would share the buffer
    step()
    # the update happened, and no buffer of the previous step's parameters, gradients or
    # optimizer state survives it
    assert any(not np.array_equal(v, np.array(p.detach())) for v, p in zip(values, model.parameters()))
    assert all(r() is None for r in old_params)
    assert all(r() is None for r in old_grads)
    assert all(r() is None for r in old_state)
    gc.collect()
    assert len(_live()) == n_live     # steady state: a step allocates nothing that stays


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_each_old_parameter_buffer_dies_at_its_own_update(momentum):
    # an in-place update makes a new array (JAX arrays are immutable): the old one must be gone
    # before the next parameter's update, not at the end of step()
    torch.manual_seed(0)
    params = [torch.randn(4, 4, requires_grad=True) for _ in range(4)]
    opt = torch.optim.SGD(params, lr=0.1, momentum=momentum)
    for _ in range(2):
        opt.zero_grad()
        sum((p * p).sum() for p in params).backward()
        olds, dead_after = [], []
        update = type(opt)._update

        def spy(p, grad, state, group):
            olds.append(weakref.ref(_arr(p)))
            update(opt, p, grad, state, group)
            dead_after.append([r() is None for r in olds])

        opt._update = spy
        opt.step()
        del opt._update
        assert dead_after == [[True] * (k + 1) for k in range(4)]


def test_accumulated_gradient_replaces_the_old_buffer():
    w = torch.randn(4, 4, requires_grad=True)
    (w * 2).sum().backward()
    first = weakref.ref(_arr(w.grad))
    grad_tensor = w.grad
    (w * 3).sum().backward()
    assert w.grad is grad_tensor            # torch accumulates into the same .grad tensor
    assert first() is None                  # and no copy of the old value stays behind
    np.testing.assert_allclose(w.grad.numpy(), np.full((4, 4), 5.0))


class _Trims:
    """Counts the engine's trims instead of making them, with a chosen threshold."""

    def __init__(self, monkeypatch, threshold):
        self.n = 0
        monkeypatch.setattr(engine, "_TRIM_BYTES", threshold)
        monkeypatch.setattr(engine, "_PENDING", [0])
        monkeypatch.setattr(engine, "_malloc_trim", self)

    def __call__(self):
        self.n += 1


def test_freed_memory_is_returned_once_enough_was_released(monkeypatch):
    x = torch.randn(64, 64, requires_grad=True)          # 16 KiB per array
    # 12 nodes drop a saved array and a gradient each (~32 KiB), plus x's gradient: ~400 KiB
    # per backward, trimmed at its end once the count since the last trim reaches the threshold
    trims = _Trims(monkeypatch, 64 * 1024)
    _chain(x, 12).sum().backward()
    assert trims.n == 1 and engine._PENDING[0] == 0
    trims = _Trims(monkeypatch, 600 * 1024)
    _chain(x, 12).sum().backward()
    assert trims.n == 0
    _chain(x, 12).sum().backward()           # the count carries over between calls
    assert trims.n == 1
    np.testing.assert_allclose(x.grad.numpy(),
                               3 * torch.autograd.grad(_chain(x, 12).sum(), x)[0].numpy(), rtol=1e-6)


def test_no_trim_for_small_graphs(monkeypatch):
    x = torch.randn(64, 64, requires_grad=True)
    trims = _Trims(monkeypatch, 1 << 40)
    for _ in range(3):
        _chain(x, 12).sum().backward()
    assert trims.n == 0


def test_retained_graph_counts_only_gradients(monkeypatch):
    # 13 gradients of 16 KiB (~208 KiB) are dropped either way; the 12 saved arrays (~192 KiB)
    # only when the graph is freed
    x = torch.randn(64, 64, requires_grad=True)
    trims = _Trims(monkeypatch, 300 * 1024)
    y = _chain(x, 12).sum()
    y.backward(retain_graph=True)
    assert trims.n == 0
    engine._PENDING[0] = 0
    y.backward()
    assert trims.n == 1


def test_note_released(monkeypatch):
    trims = _Trims(monkeypatch, 1000)
    engine.note_released(999)
    assert trims.n == 0
    engine.note_released(1)
    assert trims.n == 1 and engine._PENDING[0] == 0


def test_malloc_trim_is_callable():
    engine._malloc_trim()    # glibc's malloc_trim, or a no-op where the C library has none
