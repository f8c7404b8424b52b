"""Twenty-fifth round of adversarial compiled-vs-eager programs: tensors built inside the step
from Python lists of captured numbers that change between calls, ``torch.tensor`` of a float
attribute, a step that reads ``param.grad`` before its backward (``None`` on the first call),
``optimizer.state`` read inside the step, ``module.apply(init_fn)`` and ``requires_grad_(False)``
on a submodule between calls, ``no_grad`` regions writing buffers, ``.data`` assignments,
an ``nn.Parameter`` created inside the step, ``register_buffer`` between calls, weight tying
changed between calls and an EMA written into a slice of a parameter under ``no_grad``.
torch eager, tracegrad eager and ``tracegrad.compile`` run each program from the same state
and must agree after every call (``_dynamo_port.compare``).

Found here and fixed: a state tensor the function read from a Python place (a dict entry, a
list item, a global) and returned as itself, ``prev = state["last"]``, came back as the tensor
the trace read on every later call, when the caller rebound the place between calls or the call
itself rebound it (``state["last"] = x.mean()``, the "previous value" pattern): the result recipe
kept it as a constant. It is now the tensor the place holds at the call (``results._result_places``)."""
import numpy as np
import pytest

import tracegrad

from ._dynamo_port import compare
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear

torch = pytest.importorskip("torch")


def test_tensor_from_a_list_of_captured_numbers_that_change():
    """A step builds ``T.tensor([a, b, c])`` from a list the caller edits between calls (and
    appends to once, changing the shape): each call uses that call's numbers."""
    def build(T, wrap):
        coefs = [0.5, -1.0, 2.0]
        f = wrap(lambda x: x * T.tensor(coefs[:3]) + T.tensor(coefs).sum())

        def run(i):
            coefs[i % 3] = float(i) * 1.5 - 1
            if i == 3:
                coefs.append(10.0)
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=5)


def test_tensor_of_a_float_attribute_inside_the_step():
    """``T.tensor(self.scale)`` of a float attribute the caller changes between calls, in a
    compiled module's forward (and as a float64 tensor): the value of that call."""
    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _linear(T, 3, 2)
                self.scale = 0.25

            def forward(self, x):
                s = T.tensor(self.scale)
                d = T.tensor(self.scale, dtype=T.float64)
                return self.lin(x) * s, d * 2

        m = M()
        f = wrap(m)

        def run(i):
            m.scale = 0.25 + i * 0.5
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=4)


def test_step_reads_param_grad_before_backward():
    """A step that reads ``w.grad`` before its backward (``None`` on the first call, the
    previous call's gradient later) and uses it as a momentum-like term: the same branch and
    values as eager."""
    def build(T, wrap):
        net = _linear(T, 3, 2)

        def step(x):
            g = net.weight.grad
            extra = 0.0 if g is None else g.sum()
            loss = net(x).pow(2).mean() + extra
            net.zero_grad(set_to_none=False) if g is not None else None
            loss.backward()
            with T.no_grad():
                for p in net.parameters():
                    p -= 0.1 * p.grad
            return loss, g is None

        f = wrap(step)

        def run(i):
            return f(_rand(T, i, 2, 3)), net.weight, net.weight.grad
        return run
    compare(build, calls=4)


def test_optimizer_state_read_inside_the_step():
    """The step reads Adam's ``exp_avg_sq`` and ``step`` from ``optimizer.state`` (empty on the
    first call) to scale its loss: each call sees that call's state."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.Adam(net.parameters(), lr=0.05)

        def step(x):
            st = opt.state.get(net.weight, {})
            k = 1.0 if not st else 1.0 + st["exp_avg_sq"].sum() * 10
            n = 0 if not st else int(st["step"])
            opt.zero_grad()
            loss = net(x).pow(2).mean() * k
            loss.backward()
            opt.step()
            return loss, n, len(opt.state)

        f = wrap(step)

        def run(i):
            return f(_rand(T, i, 2, 3)), net.weight
        return run
    compare(build, calls=4)


def test_module_apply_init_fn_between_calls():
    """``model.apply(init)`` re-initialises the Linear layers (fill_ from a per-call number)
    between calls of a compiled training step: the step trains from the new weights."""
    def build(T, wrap):
        model = T.nn.Sequential(_linear(T, 3, 4), T.nn.Tanh(), _linear(T, 4, 2, seed=1))
        opt = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x):
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss

        f = wrap(step)

        def run(i):
            if i in (1, 3):
                def init(m):
                    if isinstance(m, T.nn.Linear):
                        with T.no_grad():
                            m.weight.fill_(0.1 * i)
                            m.bias.zero_()
                model.apply(init)
            return f(_rand(T, i, 2, 3)), list(model.parameters())
        return run
    compare(build, calls=5)


def test_requires_grad_false_on_a_submodule_between_calls():
    """The first layer is frozen with ``requires_grad_(False)`` after the second call and
    unfrozen after the fourth: its weights and grads follow eager's (no update while frozen)."""
    def build(T, wrap):
        a, b = _linear(T, 3, 4), _linear(T, 4, 2, seed=1)
        model = T.nn.Sequential(a, T.nn.ReLU(), b)
        opt = T.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss

        f = wrap(step)

        def run(i):
            if i == 2:
                a.requires_grad_(False)
            if i == 4:
                a.requires_grad_(True)
            return f(_rand(T, i, 2, 3)), a.weight, a.weight.grad, b.weight
        return run
    compare(build, calls=6)


def test_no_grad_region_writes_a_buffer_inside_the_step():
    """A compiled module keeps a running mean of its input in a buffer written in place under
    ``no_grad`` and a call counter buffer; the forward uses the buffer: buffer values after
    every call as eager's."""
    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _linear(T, 3, 2)
                self.register_buffer("mean", T.zeros(3))
                self.register_buffer("n", T.zeros((), dtype=T.int64))

            def forward(self, x):
                with T.no_grad():
                    self.n += 1
                    self.mean.mul_(0.9).add_(x.mean(0), alpha=0.1)
                return self.lin(x - self.mean)

        m = M()
        f = wrap(m)

        def run(i):
            y = f(_rand(T, i, 2, 3))
            y.sum().backward()
            return y, m.mean, m.n, m.lin.weight.grad
        return run
    compare(build, calls=4)


def test_data_assignment_between_and_inside_calls():
    """``p.data = ...`` by the caller between calls (a new tensor, other values) and
    ``p.data.mul_`` inside the step: the step uses and updates the current data."""
    def build(T, wrap):
        net = _linear(T, 3, 2)

        def step(x):
            loss = net(x).pow(2).mean()
            loss.backward()
            net.weight.data.mul_(0.9)
            net.bias.data = net.bias.data - 0.1 * net.bias.grad
            return loss

        f = wrap(step)

        def run(i):
            if i == 2:
                net.weight.data = T.full((2, 3), 0.3)
            net.zero_grad()
            return f(_rand(T, i, 2, 3)), net.weight, net.bias, net.bias.grad
        return run
    compare(build, calls=5)


def test_parameter_created_inside_the_step():
    """A step wraps a computed tensor as ``nn.Parameter`` and differentiates through it: the
    result is a fresh leaf that requires grad, with its own grad, every call."""
    def build(T, wrap):
        net = _linear(T, 3, 2)

        def step(x):
            p = T.nn.Parameter(net.weight.detach() * 2)
            y = (x @ p.t()).pow(2).sum()
            y.backward()
            return y, p, p.grad, p.is_leaf, p.requires_grad

        f = wrap(step)

        def run(i):
            with T.no_grad():
                net.weight.add_(0.1)
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=4)


def test_register_buffer_between_calls():
    """The caller registers a new buffer (and later replaces it with ``None`` then another
    tensor) between calls of a compiled module whose forward uses it when present."""
    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _linear(T, 3, 2)

            def forward(self, x):
                y = self.lin(x)
                off = getattr(self, "off", None)
                return y if off is None else y + off

        m = M()
        f = wrap(m)

        def run(i):
            if i == 1:
                m.register_buffer("off", T.tensor([1.0, -1.0]))
            if i == 3:
                m.off = None
            if i == 4:
                m.off = T.tensor([0.5, 2.0])
            return f(_rand(T, i, 2, 3)), sorted(k for k, _ in m.named_buffers())
        return run
    compare(build, calls=6)


def test_weight_tying_changed_between_calls():
    """A decoder whose weight is tied to the encoder's (``dec.weight = enc.weight``) after the
    second call and untied (a new Parameter copy) after the fourth, trained by a compiled step
    whose optimizer holds both: weights after every call as eager's."""
    def build(T, wrap):
        enc, dec = _linear(T, 3, 3), _linear(T, 3, 3, seed=1)

        def step(x):
            for p in (enc.weight, dec.weight, enc.bias, dec.bias):
                p.grad = None
            loss = dec(enc(x).tanh()).pow(2).mean()
            loss.backward()
            with T.no_grad():
                seen = set()
                for p in (enc.weight, dec.weight, enc.bias, dec.bias):
                    if id(p) not in seen:
                        seen.add(id(p))
                        p -= 0.1 * p.grad
            return loss

        f = wrap(step)

        def run(i):
            if i == 2:
                dec.weight = enc.weight
            if i == 4:
                dec.weight = T.nn.Parameter(enc.weight.detach().clone() * 0.5)
            return f(_rand(T, i, 2, 3)), enc.weight, dec.weight, dec.weight is enc.weight
        return run
    compare(build, calls=6)


def test_ema_into_a_slice_of_a_parameter_under_no_grad():
    """After each SGD step, the first row of a shadow model's weight is moved toward the live
    weight's first row in place (``shadow.weight[0].mul_().add_()``) under ``no_grad``: the
    shadow's other rows keep their values and the row follows eager's."""
    def build(T, wrap):
        net, shadow = _linear(T, 3, 2), _linear(T, 3, 2, seed=2)
        opt = T.optim.SGD(net.parameters(), lr=0.2)

        def step(x, decay):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            with T.no_grad():
                shadow.weight[0].mul_(decay).add_(net.weight[0], alpha=1 - decay)
                shadow.bias[:1].lerp_(net.bias[:1], 1 - decay)
            return loss

        f = wrap(step)

        def run(i):
            return f(_rand(T, i, 2, 3), 0.9 - 0.1 * i), shadow.weight, shadow.bias
        return run
    compare(build, calls=4)


def test_list_numbers_change_kind():
    """``T.tensor(vals)`` of a captured list whose items change kind between calls (int, then a
    float, then a bool, then all replaced): the dtype (int64 or float32) and values of that
    call, and the product's promotion with them."""
    def build(T, wrap):
        vals = [1, 2, 3]
        f = wrap(lambda x: (x * T.tensor(vals), T.tensor(vals)))
        def run(i):
            if i == 2: vals[1] = 2.5
            if i == 3: vals[0] = True
            if i == 4: vals[:] = [4, 5, 6]
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=5)


def test_numpy_captured_mutated():
    """A captured numpy array written in place by the caller between calls, read inside the step
    with ``as_tensor`` and ``from_numpy``: each call sees the array's current values."""
    def build(T, wrap):
        arr = np.array([1.0, 2.0, 3.0], dtype=np.float32)
        f = wrap(lambda x: x * T.as_tensor(arr) + T.from_numpy(arr).sum())
        def run(i):
            arr[i % 3] = i * 2.0
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=4)


def test_rebind_buffer_attr_inside_forward():
    """A forward that rebinds its buffer attribute to a new tensor (``self.m = 0.5 * self.m + ...``)
    instead of writing it in place: the buffer stays registered and holds each call's value."""
    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _linear(T, 3, 2)
                self.register_buffer("m", T.zeros(2))
            def forward(self, x):
                y = self.lin(x)
                self.m = 0.5 * self.m + 0.5 * y.detach().mean(0)
                return y - self.m
        m = M()
        f = wrap(m)
        def run(i):
            return f(_rand(T, i, 2, 3)), m.m, sorted(dict(m.named_buffers()))
        return run
    compare(build, calls=4)


def test_lazy_parameter_created_on_first_call_stored():
    """A forward that creates and stores an ``nn.Parameter`` on its first call only (a lazy
    parameter): later calls use the stored, trained parameter, which ``parameters()`` lists."""
    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _linear(T, 3, 2)
            def forward(self, x):
                if not hasattr(self, "gain"):
                    self.gain = T.nn.Parameter(T.ones(2) * 1.5)
                return self.lin(x) * self.gain
        m = M()
        f = wrap(m)
        def run(i):
            y = f(_rand(T, i, 2, 3))
            m.zero_grad()
            y.pow(2).mean().backward()
            with T.no_grad():
                for p in m.parameters():
                    p -= 0.05 * p.grad
            return y, m.gain, m.gain.grad, len(list(m.parameters()))
        return run
    compare(build, calls=4)


def test_grad_decayed_in_place_before_backward():
    """A step that scales the previous call's ``.grad`` in place before its backward accumulates
    into it (skipped on the first call, where the grads are ``None``)."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        def step(x):
            if net.weight.grad is not None:
                for p in net.parameters():
                    p.grad.mul_(0.5)
            loss = net(x).pow(2).mean()
            loss.backward()
            with T.no_grad():
                for p in net.parameters():
                    p.sub_(0.1 * p.grad)
            return loss
        f = wrap(step)
        def run(i):
            return f(_rand(T, i, 2, 3)), net.weight, net.weight.grad
        return run
    compare(build, calls=4)


def test_optimizer_state_mutated_inside_step():
    """A step that zeroes SGD's momentum buffers in ``optimizer.state`` in place on one call,
    before stepping: the buffers and weights after every call as eager's."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        def step(x, reset):
            if reset:
                for s in opt.state.values():
                    s["momentum_buffer"].mul_(0.0)
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        def run(i):
            return f(_rand(T, i, 2, 3), i == 2), net.weight, opt.state[net.weight]["momentum_buffer"]
        return run
    compare(build, calls=4)


def test_requires_grad_flip_inside_step():
    """A step that sets ``requires_grad_`` of the first layer from its argument before the
    forward: on frozen calls its grads stay zero/None as in eager."""
    def build(T, wrap):
        a, b = _linear(T, 3, 3), _linear(T, 3, 2, seed=1)
        def step(x, freeze):
            a.requires_grad_(not freeze)
            a.zero_grad(); b.zero_grad()
            loss = b(a(x)).pow(2).mean()
            loss.backward()
            return loss, a.weight.grad, b.weight.grad, a.weight.requires_grad
        f = wrap(step)
        def run(i):
            return f(_rand(T, i, 2, 3), i % 2 == 1)
        return run
    compare(build, calls=5)


def test_tensor_of_item_inside():
    """``T.tensor([y.sum().item(), float(y.max()), 1.0])`` built inside the step from values the
    step computed: each call's numbers, not the first trace's."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        def step(x):
            y = net(x)
            s = T.tensor([y.sum().item(), float(y.max()), 1.0])
            return y * s[0] + s[1], s
        f = wrap(step)
        def run(i):
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=4)


def test_data_swapped_shape_between_calls():
    """``.data`` of a Linear's weight and bias replaced by tensors of another shape between calls:
    the output takes the new shape (a recompile), not the old program."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        f = wrap(lambda x: net(x))
        def run(i):
            if i == 2:
                net.weight.data = T.ones(4, 3) * 0.2
                net.bias.data = T.zeros(4)
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=4)


def test_no_grad_update_of_a_changing_row_count_and_a_masked_bias():
    """Under ``no_grad`` the step updates only the first ``k`` rows of a weight (``k`` changes per
    call) and halves the bias entries chosen by a boolean mask of its values."""
    def build(T, wrap):
        net = _linear(T, 3, 4)
        def step(x, k):
            loss = net(x).pow(2).mean()
            net.zero_grad()
            loss.backward()
            with T.no_grad():
                net.weight[:k] -= 0.5 * net.weight.grad[:k]
                net.bias[net.bias > 0] *= 0.5
            return loss
        f = wrap(step)
        def run(i):
            return f(_rand(T, i, 2, 3), 1 + i % 3), net.weight, net.bias
        return run
    compare(build, calls=5)


def test_tied_embedding_swap():
    """An output head tied to the embedding (``head.weight = emb.weight``) after the second call,
    with Adam holding both original parameters: the old head weight no longer trains, the shared
    one gets both gradients."""
    def build(T, wrap):
        emb = T.nn.Embedding(5, 3)
        head = T.nn.Linear(3, 5, bias=False)
        with T.no_grad():
            emb.weight.copy_(T.tensor(np.random.RandomState(0).randn(5, 3).astype("float32")))
            head.weight.copy_(T.tensor(np.random.RandomState(1).randn(5, 3).astype("float32")))
        opt = T.optim.Adam(list(emb.parameters()) + list(head.parameters()), lr=0.05)
        def step(idx):
            opt.zero_grad()
            loss = head(emb(idx)).logsumexp(-1).mean()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        def run(i):
            if i == 2:
                head.weight = emb.weight
            return f(T.tensor([i % 5, (i + 2) % 5])), emb.weight, head.weight
        return run
    compare(build, calls=5)


def test_leaf_from_float_attr_requires_grad():
    """``T.tensor(number, requires_grad=True)`` of a number the caller changes between calls,
    used as a leaf inside the step: its value and its ``.grad`` after the step's backward."""
    def build(T, wrap):
        state = {"t": 0.3}
        net = _linear(T, 3, 2)
        def step(x):
            t = T.tensor(state["t"], requires_grad=True)
            loss = (net(x) * t).pow(2).mean()
            loss.backward()
            return loss, t, t.grad
        f = wrap(step)
        def run(i):
            state["t"] = 0.3 + i
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=4)


def test_numpy_scalar_attrs():
    """numpy float64/int64 scalars the caller replaces between calls, used as multipliers and
    in ``T.tensor``/``T.full``: values and dtypes (float64 and int64 tensors, a float32 product)."""
    def build(T, wrap):
        cfg = {"s": np.float64(0.5), "k": np.int64(2)}
        f = wrap(lambda x: (x * cfg["s"], T.tensor(cfg["s"]), T.tensor(cfg["k"]), x * cfg["k"], T.full((2,), cfg["s"])))
        def run(i):
            cfg["s"] = np.float64(0.5 + i)
            cfg["k"] = np.int64(2 + i)
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=4)


def test_attr_int_to_float():
    """A captured number that changes from int to float between calls, in ``T.tensor``,
    ``T.full``, ``x + v`` and ``T.arange(v + 1)``: the dtype and length of each call."""
    def build(T, wrap):
        cfg = {"v": 2}
        f = wrap(lambda x: (T.tensor(cfg["v"]), T.full((2,), cfg["v"]), x + cfg["v"], T.arange(cfg["v"] + 1)))
        def run(i):
            cfg["v"] = [2, 3, 2.5, 4][i]
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=4)


def test_tensor_of_list_of_0d_tensors():
    """``T.tensor`` of a list of 0-d tensors the step computed (detached) next to ``T.stack`` of
    the same entries: values, dtypes and requires_grad as eager's."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        def step(x):
            y = net(x)
            s = T.tensor([y[0, 0].detach(), y[1, 1].detach()])
            z = T.stack([y[0, 0], y[1, 1]])
            return s, z, T.tensor([[1, 2]]) * s
        f = wrap(step)
        def run(i):
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=4)


def test_input_data_assign_inside_step():
    """A step that rebinds ``x.data`` of a leaf argument (doubled, then a row zeroed through
    ``.data``) before the forward: the output, the argument's values and its ``.grad``."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        def step(x):
            x.data = x.data * 2
            x.data[0] = 0.0
            y = net(x).sum()
            y.backward()
            return y, x, x.grad
        f = wrap(step)
        def run(i):
            x = _rand(T, i, 2, 3).requires_grad_()
            out = f(x)
            return out, x
        return run
    compare(build, calls=4)


def test_param_data_slice_assign_inside():
    """After an SGD step the step clamps one column of the weight through ``weight.data[:, j] =``
    with ``j`` changing per call: only that column is clamped each call."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1)
        def step(x, j):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            net.weight.data[:, j] = net.weight.data[:, j].clamp(-0.2, 0.2)
            return loss
        f = wrap(step)
        def run(i):
            return f(_rand(T, i, 2, 3), i % 3), net.weight
        return run
    compare(build, calls=5)


def test_param_created_inside_added_to_optimizer():
    """A step that creates an ``nn.Parameter`` and ``add_param_group``s it on its first call
    only, then trains it with its own lr: the parameter and group count after every call."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1)
        extra = []
        def step(x):
            if len(extra) < 1 and len(opt.param_groups) == 1 and x.sum() > -100:
                p = T.nn.Parameter(T.ones(2))
                extra.append(p)
                opt.add_param_group({"params": [p], "lr": 0.5})
            opt.zero_grad()
            loss = (net(x) * extra[0]).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        def run(i):
            return f(_rand(T, i, 2, 3)), extra[0], net.weight, len(opt.param_groups)
        return run
    compare(build, calls=4)


def test_register_buffer_inside_forward_first_call():
    """A forward that registers a non-persistent counter and a persistent accumulator buffer on its
    first call and updates both in place on every call: values and ``state_dict`` keys."""
    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _linear(T, 3, 2)
            def forward(self, x):
                if "count" not in self._buffers:
                    self.register_buffer("count", T.zeros((), dtype=T.int64), persistent=False)
                    self.register_buffer("acc", x.detach().sum(0))
                self.count += 1
                self.acc.add_(x.detach().sum(0))
                return self.lin(x) + self.acc.sum() / self.count
        m = M()
        f = wrap(m)
        def run(i):
            return f(_rand(T, i, 2, 3)), m.count, m.acc, sorted(m.state_dict())
        return run
    compare(build, calls=4)


def test_module_compile_freeze_between_calls_adam():
    """``Module.compile()`` on a Sequential trained by Adam with weight decay; its first layer is
    frozen with ``requires_grad_(False)`` for two calls (grads stay as the last ``zero_grad``
    left them, Adam skips the layer) and then unfrozen."""
    def build(T, wrap):
        model = T.nn.Sequential(_linear(T, 3, 4), T.nn.Tanh(), _linear(T, 4, 2, seed=1))
        opt = T.optim.Adam(model.parameters(), lr=0.05, weight_decay=0.1)
        if wrap(model) is not model:    # the compiled run: Module.compile() in place
            model.compile()
        def run(i):
            if i == 1:
                model[0].requires_grad_(False)
            if i == 3:
                model[0].requires_grad_(True)
            opt.zero_grad()
            loss = model(_rand(T, i, 2, 3)).pow(2).mean()
            loss.backward()
            opt.step()
            return loss, list(model.parameters()), model[0].weight.grad
        return run
    compare(build, calls=5)


def test_apply_with_nn_init_constant_and_buffers():
    """``model.apply`` with ``nn.init.constant_``/``zeros_`` on the Linears and
    ``reset_running_stats`` on a BatchNorm between calls of the compiled model, then ``eval()``:
    outputs, running mean and ``num_batches_tracked`` as eager's."""
    def build(T, wrap):
        model = T.nn.Sequential(_linear(T, 3, 4), T.nn.BatchNorm1d(4), _linear(T, 4, 2, seed=1))
        f = wrap(model)
        def run(i):
            if i == 2:
                def init(m):
                    if isinstance(m, T.nn.Linear):
                        T.nn.init.constant_(m.weight, 0.05 * i)
                        T.nn.init.zeros_(m.bias)
                    if isinstance(m, T.nn.BatchNorm1d):
                        m.reset_running_stats()
                        T.nn.init.constant_(m.weight, 2.0)
                model.apply(init)
            if i == 3:
                model.eval()
            return f(_rand(T, i, 3, 3)), model[1].running_mean, model[1].num_batches_tracked
        return run
    compare(build, calls=5)


def test_ema_foreach_on_param_slices():
    """``_foreach_lerp_`` of row and strided slices of a shadow model's parameters toward the live
    ones, and a transposed-column ``mul_``, under ``no_grad`` after each SGD step."""
    def build(T, wrap):
        net, shadow = _linear(T, 3, 4), _linear(T, 3, 4, seed=2)
        opt = T.optim.SGD(net.parameters(), lr=0.2)
        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            with T.no_grad():
                dst = [shadow.weight[1:3], shadow.bias[::2]]
                src = [net.weight[1:3], net.bias[::2]]
                T._foreach_lerp_(dst, src, 0.25)
                shadow.weight.T[0].mul_(0.5)
            return loss
        f = wrap(step)
        def run(i):
            return f(_rand(T, i, 2, 3)), shadow.weight, shadow.bias
        return run
    compare(build, calls=4)


def test_grad_alias_read_before_backward():
    """A step returns ``w.grad`` read before its backward; the caller keeps every returned grad:
    backward accumulates into that same tensor in place, so the held ones show the later sums
    (``None`` from the first call)."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        def step(x):
            g = net.weight.grad
            loss = net(x).pow(2).mean()
            loss.backward()
            return loss, g
        f = wrap(step)
        held = []
        def run(i):
            out = f(_rand(T, i, 2, 3))
            held.append(out[1])
            return out, held, net.weight.grad
        return run
    compare(build, calls=4)


def test_captured_tensor_data_swapped():
    """A captured plain tensor whose ``.data`` is rebound and later ``set_`` to another tensor
    between calls: each call multiplies by the current values."""
    def build(T, wrap):
        scale = T.tensor([2.0, 3.0, 4.0])
        f = wrap(lambda x: x * scale)
        def run(i):
            if i == 2:
                scale.data = T.tensor([1.0, -1.0, 0.5])
            if i == 3:
                scale.set_(T.tensor([7.0, 8.0, 9.0]))
            return f(_rand(T, i, 2, 3)), scale
        return run
    compare(build, calls=5)


def test_param_data_dtype_change():
    """A Linear whose weight and bias ``.data`` become float64 between calls, called with float64
    input from then on: a float64 output as eager's."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        f = wrap(lambda x: net(x))
        def run(i):
            if i == 2:
                net.weight.data = net.weight.data.double()
                net.bias.data = net.bias.data.double()
            x = _rand(T, i, 2, 3)
            return f(x.double() if i >= 2 else x)
        return run
    compare(build, calls=4)


def test_grad_set_inside_before_backward():
    """A step that sets ``w.grad`` to a filled tensor (its value changes per call) and ``b.grad``
    to ``None`` before its backward: the accumulated grads as eager's."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        def step(x, i):
            net.weight.grad = T.full_like(net.weight, float(i))
            net.bias.grad = None
            loss = net(x).pow(2).mean()
            loss.backward()
            return loss, net.weight.grad, net.bias.grad
        f = wrap(step)
        def run(i):
            return f(_rand(T, i, 2, 3), i)
        return run
    compare(build, calls=4)


def test_bool_attr_tensor():
    """``T.tensor`` of a Python bool that flips between calls (a bool tensor, a product promoting
    it to float): dtypes and values of each call."""
    def build(T, wrap):
        cfg = {"flag": True}
        f = wrap(lambda x: (x * T.tensor(cfg["flag"]), T.tensor([cfg["flag"], not cfg["flag"]])))
        def run(i):
            cfg["flag"] = i % 2 == 0
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=4)


def test_param_removed_from_group_between_calls():
    """The bias is popped from the optimizer's param group list between calls of a compiled SGD
    step with momentum: it stops training, the weight keeps its momentum."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)
        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        def run(i):
            if i == 2:
                opt.param_groups[0]["params"].pop()
            return f(_rand(T, i, 2, 3)), net.weight, net.bias
        return run
    compare(build, calls=4)


def test_optimizer_load_state_dict_between_calls():
    """Adam's ``state_dict`` saved after one call and loaded back two calls later: the step count
    and moments restart from the saved ones inside the compiled step."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.Adam(net.parameters(), lr=0.1)
        saved = []
        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss, int(opt.state[net.weight]["step"])
        f = wrap(step)
        def run(i):
            if i == 1:
                saved.append(__import__("copy").deepcopy(opt.state_dict()))
            if i == 3:
                opt.load_state_dict(saved[0])
            return f(_rand(T, i, 2, 3)), net.weight, opt.state[net.weight]["exp_avg"]
        return run
    compare(build, calls=5)


def test_buffer_index_put_data_dependent_in_no_grad():
    """A forward that counts argmax hits in a buffer with ``index_put_(accumulate=True)`` and resets
    entries over 2 with a boolean-mask write, under ``no_grad``."""
    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _linear(T, 3, 4)
                self.register_buffer("hits", T.zeros(4))
            def forward(self, x):
                y = self.lin(x)
                with T.no_grad():
                    idx = y.argmax(1)
                    self.hits.index_put_((idx,), T.ones(idx.shape[0]), accumulate=True)
                    self.hits[self.hits > 2] = 0.0
                return y
        m = M()
        f = wrap(m)
        def run(i):
            return f(_rand(T, i, 3, 3)), m.hits
        return run
    compare(build, calls=5)


def test_swap_submodule_between_calls():
    """Submodules of a compiled Sequential replaced (``model[1] = Tanh()``, a new Linear) and
    deleted between calls: each call runs the current layers."""
    def build(T, wrap):
        model = T.nn.Sequential(_linear(T, 3, 3), T.nn.ReLU(), _linear(T, 3, 2, seed=1))
        f = wrap(model)
        def run(i):
            if i == 2:
                model[1] = T.nn.Tanh()
            if i == 3:
                model[2] = _linear(T, 3, 2, seed=5)
            if i == 4:
                del model[1]
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=5)


@pytest.mark.parametrize("who", ["caller", "call"])
def test_returning_a_tensor_read_from_a_rebound_place(who):
    """A step returns the tensor it reads from ``state["last"]`` unchanged; the caller binds a
    new tensor there before every call, or the step itself binds its input's mean there (a
    "previous value" pattern): eager returns the tensor the place holds at that call."""
    def build(T, wrap):
        state = {"last": T.tensor(0.0)}

        def step(x):
            prev = state["last"]
            if who == "call":
                state["last"] = x.mean()
            return x * 2, prev

        f = wrap(step)

        def run(i):
            if who == "caller":
                state["last"] = T.tensor(float(i))
            return f(_rand(T, i, 2, 3)), state["last"]
        return run
    compare(build, calls=4)


def test_attribute_numbers_mutated_inside_forward():
    """A forward that updates Python number attributes of its module (``self.calls += 1``,
    ``self.scale *= 0.5``) and uses them: each call's numbers and the attributes after it."""
    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _linear(T, 3, 2)
                self.scale = 1.0
                self.calls = 0

            def forward(self, x):
                self.calls += 1
                self.scale *= 0.5
                return self.lin(x) * self.scale + T.tensor(float(self.calls))

        m = M()
        f = wrap(m)

        def run(i):
            return f(_rand(T, i, 2, 3)), m.scale, m.calls
        return run
    compare(build, calls=4)


def test_tensor_from_a_history_list_the_step_appends_to():
    """A step appends ``float(loss)`` to a list and builds ``T.tensor(hist[-3:])`` from it (its
    length grows to 3): each call's history."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        hist = []

        def step(x):
            loss = net(x).pow(2).mean()
            hist.append(float(loss))
            w = T.tensor(hist[-3:])
            return loss * w.mean(), w

        f = wrap(step)

        def run(i):
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=5)


def test_tying_through_register_parameter_between_calls():
    """``b.register_parameter("weight", a.weight)`` ties two layers of a compiled module after
    the first call and ``register_parameter("bias", None)`` drops a bias later: outputs, the
    shared grad and the parameter count as eager's."""
    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = _linear(T, 3, 3)
                self.b = _linear(T, 3, 3, seed=1)

            def forward(self, x):
                return self.b(self.a(x).tanh())

        m = M()
        f = wrap(m)

        def run(i):
            if i == 1:
                m.b.register_parameter("weight", m.a.weight)
            if i == 3:
                m.b.register_parameter("bias", None)
            m.zero_grad()
            y = f(_rand(T, i, 2, 3))
            y.pow(2).sum().backward()
            return y, m.a.weight.grad, len(list(m.parameters()))
        return run
    compare(build, calls=5)
