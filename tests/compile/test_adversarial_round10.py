"""Tenth round of adversarial compiled-vs-eager programs: results that alias each other, the
arguments or a parameter and are written by the caller; in-place ops on transposed, sliced and
expanded arguments; int/bool/complex/float16/bfloat16, 0-dim and empty tensors through the
function; leaves made inside the function (``nn.Parameter(...)``, ``requires_grad=True``) and
returned; hooks, ``retain_grad`` and ``autograd.grad`` at a result another result was computed
from (``return logits, loss``); ``zero_grad(set_to_none=False)`` when some parameters get no
gradient; bound methods and several compiled functions sharing one model; ``model.compile()``
with hooks and a ``state_dict`` round trip; batch sizes and Python ints changing past the
cache size limit; ``step(loss)`` running the backward of a graph built outside; values that
decide results or errors (integer division by zero, negative integer powers, quantile's q,
masked_scatter's source count, a negative Gaussian NLL variance). torch eager, tracegrad eager
and ``tracegrad.compile`` run each program from the same state and must agree after every call
(``_dynamo_port.compare``).

Found here and fixed: a leaf made inside the compiled function that a returned result's graph
reached came back detached from that graph (a backward after the call left its ``.grad`` None;
now a graph break when the caller can see the leaf); a hook or ``retain_grad()`` on a result,
or ``autograd.grad`` with it as an input, missed the gradient flowing through it from another
result computed from it (silently None or partial; now a clear RuntimeError, NOTE [results
computed from results]); a hook registered on a result between calls made the next call trace
again (past the cache size limit every call ran eagerly); ``step(loss)`` calling
``loss.backward()`` on a graph from outside was found only after the function had read
``.grad``s the trace left None, and ``fullgraph=True`` named the caller's line instead of the
backward's; integer ``//``/``%``/``fmod`` by a zero, integer powers by negative exponents,
``quantile`` with q outside [0, 1], ``masked_scatter`` with too short a source and
``gaussian_nll_loss`` with a negative variance gave XLA's numbers in a program where eager
raises or gives torch's values (now run-time value checks, NOTE [value checks at run time]);
``index_reduce_`` raised RuntimeError where torch raises IndexError; ``p.data = arg`` and
``p.set_(arg)`` inside left ``p`` on a copy of the caller's tensor (now a graph break). Left as
a strict xfail: ``p.data = new`` traced, then ``p`` moved again by the caller between calls."""
import warnings

import pytest

import tracegrad

from ._dynamo_port import compare, same, seeded_linear as _linear
from ._dynamo_port import randn32 as _rand

torch = pytest.importorskip("torch")


def test_results_aliasing_each_other_the_arguments_and_a_parameter_written_by_the_caller():
    """``return y, y.view(-1), w.t(), x[0]``: the caller's writes through one reach the others,
    the argument and the parameter; in-place ops on a transposed and a strided-slice argument
    reach their bases; an in-place op on an expanded argument raises torch's error."""
    def build(T, wrap):
        net = _linear(T)

        def f(x, a, b):
            y = x * 2 + 1
            a.add_(1.0)             # a transposed view: its base changes
            b.mul_(2.0)             # every second row of the caller's tensor
            return y, y.view(-1), net.weight.t(), x[0], (a * b).sum()

        def g(e):
            e.add_(1.0)
            return e
        f, g = wrap(f), wrap(g)

        def run(i):
            x, base, big = _rand(T, i, 2, 3), _rand(T, i + 1, 3, 2), _rand(T, i + 2, 4, 3)
            y, yv, wt, x0, s = f(x, base.t(), big[::2])
            with T.no_grad():
                y.add_(1.0)
                x0.mul_(3.0)
                wt[0, 0] = float(i)
            try:
                g(_rand(T, i, 1, 3).expand(2, 3))
                err = None
            except RuntimeError as e:
                err = "single memory location" in str(e)
            return (y, yv, x, net.weight, s, base, big, err, yv._base is y, x0._base is x,
                    wt._base is net.weight, y._version, x._version)
        return run
    compare(build)


def test_dtypes_zero_dim_and_empty_tensors_through_the_function():
    """int64/bool/float16/bfloat16/complex64 arguments, a 0-dim and an empty one: values,
    dtypes and shapes of everything returned, a boolean-mask select included."""
    def build(T, wrap):
        def f(n, m, h, bf, z, s, e):
            k = (n * 2 + m.to(n.dtype)).sum()
            zz = z * z.conj() + s
            return (k, h * h + 1, (bf * 3).float(), zz.real, z.imag * 2, z.abs(), s * 2, s.dim(),
                    m.any(), n.sum(1) // 2, str((h.sum() + bf.sum()).dtype).split(".")[-1], e.sum(), e.shape,
                    T.cat([s.reshape(1), e.reshape(-1)]), n > s)
        f = wrap(f)

        def run(i):
            n = T.arange(6).reshape(2, 3) + i
            m = T.tensor([[True, False, True], [False, False, i % 2 == 0]])
            h = _rand(T, i, 2, 3).half()
            bf = _rand(T, i + 1, 2, 3).to(T.bfloat16)
            z = T.complex(_rand(T, i, 3), _rand(T, i + 2, 3))
            out = f(n, m, h, bf, z, T.tensor(float(i)), T.zeros(0, 3))
            return [str(o.dtype).split(".")[-1] if hasattr(o, "dtype") else None for o in out], list(out)
        return run
    compare(build)


def test_leaves_made_inside_and_returned_get_their_gradients():
    """A new ``nn.Parameter`` and a ``zeros(requires_grad=True)`` made inside, returned with a
    result computed from them: a backward after the call fills their ``.grad`` as eagerly (the
    program cannot: a graph break, and ``fullgraph=True`` names the line)."""
    def build(T, wrap):
        def f(x):
            p = T.nn.Parameter(x * 2)
            q = T.zeros(3, requires_grad=True)
            frozen = T.nn.Parameter(x.clone(), requires_grad=False)
            return p, q, frozen, (p * 3 + q * x).sum()
        f = wrap(f)
        made = []

        def run(i):
            x = _rand(T, i, 3)
            p, q, frozen, s = f(x)
            s.backward()
            made.append(p)
            return (p, q, frozen, p.grad, q.grad, type(p).__name__, type(frozen).__name__, p.is_leaf,
                    q.is_leaf, len({id(t) for t in made}))
        return run
    compiled = compare(build)
    assert compiled is not None
    g = tracegrad.compile(lambda x: (lambda w: (w, (w * x).sum()))(tracegrad.nn.Parameter(x + 1)),
                          fullgraph=True)
    with pytest.raises(tracegrad.compiler.GraphBreak, match=r"leaf tensor made inside.*test_adversarial_round10"):
        g(tracegrad.ones(3))
    # a leaf made inside whose graph is used up inside (the backward ran there), and one the
    # caller never sees (an input-gradient penalty's ``x.detach().requires_grad_()``), compile
    fns = []

    def build2(T, wrap):
        net = _linear(T)

        def used_up(x):
            w = T.zeros(3, requires_grad=True)
            (w * x).pow(2).sum().backward()
            return w.grad * 2, w.detach() + 1

        def double_backprop(x):
            x = x.detach().requires_grad_()
            loss = net(x).pow(2).mean()
            g, = T.autograd.grad(loss, x, create_graph=True)
            return loss + g.pow(2).sum()
        fns.extend([wrap(used_up), wrap(double_backprop)])
        f1, f2 = fns[-2:]

        def run(i):
            x = _rand(T, i, 4, 3)
            net.zero_grad()
            total = f2(x)
            total.backward()
            return f1(x[0]), total, net.weight.grad
        return run
    compare(build2)
    for fn in fns[-2:]:
        assert fn.stats["traces"] == 1 and fn.stats["graph_breaks"] == [], fn.stats


def test_gradient_at_a_result_another_result_was_computed_from():
    """``return h, loss(h)``: a backward from ``loss`` alone (the usual ``logits, loss``) and one
    from ``h`` with a hook on it match eager; a hook, ``retain_grad()``, ``autograd.grad`` or
    ``backward(inputs=...)`` at ``h`` while backpropagating from ``loss`` raise a clear error
    instead of silently missing the gradient flowing through ``h``."""
    def f(T, x):
        h = x * 2
        return h, (h ** 2).sum(), h.view(-1)

    def observe(T, fn, i, what):
        x = _rand(T, i, 3).requires_grad_()
        h, s, hv = fn(x)
        seen = []
        if what == "plain":
            s.backward()
            return x.grad
        if what == "from h":
            h.register_hook(lambda g: seen.append(g * 1))
            (h * 3).sum().backward()
            return x.grad, seen
        if what == "hook":
            h.register_hook(lambda g: seen.append(g * 1))
            s.backward()
        elif what == "retain":
            h.retain_grad()
            s.backward()
            return x.grad, h.grad
        elif what == "grad":
            return T.autograd.grad(s, h)
        elif what == "inputs":
            s.backward(inputs=[h])
            return h.grad
        return x.grad, seen

    fn = tracegrad.compile(lambda x: f(tracegrad, x))
    for i, what in enumerate(["plain", "plain", "from h", "plain", "from h"]):
        same(observe(torch, lambda x: f(torch, x), i, what), observe(tracegrad, fn, i, what), what)
    # a hook registered on a result between calls leaves the program cached (it traced again
    # on every call, so past cache_size_limit the calls ran eagerly)
    assert fn.stats["traces"] == 1 and fn.stats["eager_calls"] == 1 and fn.stats["graph_breaks"] == []
    for what in ("hook", "retain", "grad", "inputs"):
        observe(torch, lambda x: f(torch, x), 0, what)          # fine eagerly
        with pytest.raises(RuntimeError, match="result of a compiled function.*computed from it"):
            observe(tracegrad, fn, 0, what)

    # the same through a tensor the forward stores on the module (``self.h = ...``)
    class Keeps(tracegrad.nn.Module):
        def forward(self, x):
            self.h = x * 2
            return (self.h ** 2).sum()
    m = Keeps()
    c = tracegrad.compile(m)
    for i in range(3):
        x = _rand(tracegrad, i, 3).requires_grad_()
        loss = c(x)
        if i < 2:
            loss.backward()
            same(x.detach() * 8, x.grad)
        else:
            m.h.retain_grad()
            with pytest.raises(RuntimeError, match="result of a compiled function.*computed from it"):
                loss.backward()


def test_zero_grad_without_none_when_some_parameters_get_no_gradient():
    """``zero_grad(set_to_none=False)`` then a step where one layer is used on one call only:
    before it the layer's ``.grad`` stays None and SGD skips it; after it SGD keeps moving it
    from zero gradients by its momentum buffer, as eagerly."""
    def build(T, wrap):
        a, b = _linear(T, seed=0), _linear(T, seed=1)
        opt = T.optim.SGD(list(a.parameters()) + list(b.parameters()), lr=0.1, momentum=0.9)

        def step(x, use_b):
            opt.zero_grad(set_to_none=False)
            out = a(x)
            if use_b:
                out = out + b(x)
            out.pow(2).sum().backward()
            opt.step()
        step = wrap(step)

        def run(i):
            step(_rand(T, i, 4, 3), i == 1)
            return a.weight, b.weight, b.bias.grad, b.weight.grad, len(opt.state)
        return run
    compare(build)


def test_bound_method_and_compiled_functions_sharing_a_model():
    """A compiled bound method reading attributes the caller changes (a number, a tensor
    rebound), and a compiled train step and a compiled eval step on one model, with an eager
    step between calls."""
    def build(T, wrap):
        class Scaler:
            def __init__(self):
                self.scale, self.w = 1.0, _rand(T, 9, 3)

            def apply(self, x):
                return x * self.w * self.scale
        sc = Scaler()
        net = _linear(T)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)

        def train(x):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss

        def evaluate(x):
            with T.no_grad():
                return net(x).sum()
        meth, tr, ev = wrap(sc.apply), wrap(train), wrap(evaluate)

        def run(i):
            x = _rand(T, i, 4, 3)
            out = (meth(x[0]), ev(x), tr(x), ev(x))
            if i == 2:
                train(x)
                sc.w, sc.scale = _rand(T, 10, 3), 3.0
            return out, net.weight, opt.state[net.weight]["momentum_buffer"]
        return run
    compare(build)


def _probe():
    pass


def test_module_compile_with_hooks_and_a_state_dict_round_trip():
    """``model.compile()`` with a forward hook that scales an output, a pre-hook that edits
    the input and a ``state_dict`` saved and loaded back (scaled) between calls: outputs,
    grads, the keys (no ``_orig_mod.`` prefix) and the loaded values as eagerly; the calls
    really run a program."""
    nets = []

    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 4), T.nn.ReLU(), _linear(T, 4, 2, seed=3))
        nets.append(net)
        net[0].register_forward_hook(lambda m, a, o: o * 0.5)
        net.register_forward_pre_hook(lambda m, a: (a[0] + 1,))
        if wrap(_probe) is not _probe:      # the compiled run
            net.compile()

        def run(i):
            out = net(_rand(T, i, 2, 3))
            out.sum().backward()
            sd = net.state_dict()
            if i == 1:
                net.load_state_dict({k: v * 0.5 for k, v in sd.items()})
                net.zero_grad()
            return out, list(sd), net[0].weight.grad, net[2].bias
        return run
    compare(build)
    st = nets[2].__dict__["_compiled_call"].stats
    assert st["traces"] >= 1 and st["graph_breaks"] == [], st


def test_batch_size_and_python_ints_changing_past_the_cache_size_limit():
    """Batch sizes 1, 2, 3, ... and a Python int argument changing every call: each value is
    traced into its own program (never a frozen constant), up to ``cache_size_limit``; past it
    the calls run eagerly with one warning (with the hint about the changing number), the
    programs already made still run, and every result equals torch's."""
    import tracegrad._dynamo as tdynamo
    old = tdynamo.config.cache_size_limit
    tdynamo.config.cache_size_limit = 3
    try:
        net_t, net = _linear(torch), _linear(tracegrad)
        f = tracegrad.compile(lambda x, n: (net(x).relu().sum(0) * n, x.repeat(n, 1).shape))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for i, (b, n) in enumerate([(1, 1), (2, 1), (3, 1), (1, 2), (1, 3), (4, 1), (2, 1), (1, 4)]):
                x = _rand(torch, i, b, 3)
                same((net_t(x).relu().sum(0) * n, x.repeat(n, 1).shape),
                     f(_rand(tracegrad, i, b, 3), n), f"batch {b}, n {n}")
        msgs = [str(m.message) for m in w if "tracegrad.compile" in str(m.message)]
        assert len(msgs) == 1 and "cache_size_limit" in msgs[0] and "args[1]" in msgs[0], msgs
        # the first call ran eagerly; (2,1) (3,1) (1,2) were traced; (1,3) (4,1) (1,4) ran
        # eagerly; (2,1) again ran its program
        assert f.stats["traces"] == 3 and f.stats["eager_calls"] == 4, f.stats
    finally:
        tdynamo.config.cache_size_limit = old


def test_backward_inside_reaching_an_argument_with_a_graph_from_outside():
    """``step(loss)`` calling ``loss.backward()`` on a loss built before the call: eager's
    backward carries on into the graph outside (the parameters' grads), which a program cannot:
    the calls run eagerly (``fullgraph=True`` names the backward's line, before the function
    reads a ``.grad`` the trace left None). A gradient penalty taking ``autograd.grad`` w.r.t. a
    non-leaf argument stays in the program and equals eager."""
    def build(T, wrap):
        net = _linear(T)
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def step(loss):
            opt.zero_grad()
            loss.backward()
            opt.step()
            return net.weight.grad.clone()

        def penalty(x_hat):
            out = net(x_hat).sum()
            g, = T.autograd.grad(out, x_hat, create_graph=True)
            return (g.norm(dim=1) - 1).pow(2).mean()
        step, penalty = wrap(step), wrap(penalty)
        pens.append(penalty)

        def run(i):
            x = _rand(T, i, 4, 3).requires_grad_()
            x_hat = x * 0.5 + 1
            gp = penalty(x_hat)
            gp.backward()
            loss = net(x).pow(2).mean()
            return step(loss), net.weight, gp, x.grad
        return run
    pens = []
    compare(build)
    assert pens[2].stats["graph_breaks"] == [] and pens[2].stats["traces"] == 1
    net = tracegrad.nn.Linear(3, 2)

    def bad(loss):
        loss.backward()
        return net.weight.grad * 2
    with pytest.raises(tracegrad.compiler.GraphBreak, match=r"argument whose graph was built outside.*round10.py:%d"
                       % (bad.__code__.co_firstlineno + 1)):
        tracegrad.compile(bad, fullgraph=True)(net(tracegrad.ones(1, 3)).sum())


def test_integer_division_by_a_zero_tensor_raises_on_every_call():
    """``//``, ``%``, ``fmod`` and an in-place ``//=`` by an integer tensor that holds a zero on
    some calls: torch raises ZeroDivisionError after the step's earlier in-place write; the
    program checks the divisor when it runs (it used to return XLA's garbage silently)."""
    def build(T, wrap):
        count = T.zeros(2, dtype=T.int64)

        def f(a, b):
            count.add_(1)
            q = a // b
            a %= 5
            a.fmod_(b)
            return q, a
        f = wrap(f)

        def run(i):
            a, b = T.tensor([7, -9]) + i, T.tensor([2, 1 if i % 2 else 0])
            try:
                out = f(a, b)
            except RuntimeError as e:
                out = "ZeroDivisionError" in str(e)
            return out, a, count
        return run
    compare(build, calls=5)


def test_value_dependent_results_and_errors_of_traced_operands():
    """Integer powers by a tensor of exponents that turn negative (torch: 0, 1 or -1; XLA's
    integer pow gave garbage), ``quantile`` with a ``q`` tensor outside [0, 1],
    ``masked_scatter`` with fewer source elements than the mask's ones and ``gaussian_nll_loss``
    with a negative variance on some calls (torch raises; the program returned NaN, a repeated
    element and a number), ``index_reduce_`` with an index out of range (torch's IndexError)."""
    def build(T, wrap):
        def f(a, e, x, q, m):
            out = [a ** e, 2 ** e, a.clone().pow_(e)]
            for g in (lambda: x.quantile(q), lambda: x[:4].masked_scatter(m, x[:2]),
                      lambda: T.nn.functional.gaussian_nll_loss(x[:2], x[2:4], q - 0.6),
                      lambda: x[:3].clone().index_reduce_(0, e[2:] + 2, x[3:], "amax")):
                try:
                    out.append(g())
                except (RuntimeError, ValueError, IndexError) as err:
                    out.append(type(err).__name__)
            return out
        f = wrap(f)

        def run(i):
            return f(T.tensor([2, -1, 1, 3]), T.tensor([2, -3, -2, 1 - i]), _rand(T, i, 5),
                     T.tensor([0.5, 0.2 if i % 2 else 1.5]), T.tensor([True, i % 2 == 0, True, False]))
        return run
    compare(build)


def test_a_parameter_moved_onto_an_argument_s_memory_inside():
    """``net.weight.data = w`` and ``net.weight.set_(w)`` inside, then the caller writes ``w`` in
    place: eagerly the weight shares ``w``'s memory and sees the write (the program's weight
    was a copy: now those calls run eagerly, ``fullgraph=True`` names the line)."""
    def build(T, wrap):
        net = _linear(T)

        def f(x, w, how):
            with T.no_grad():
                if how == "data":
                    net.weight.data = w
                else:
                    net.weight.set_(w)
            return net(x)
        f = wrap(f)

        def run(i):
            w = _rand(T, i + 3, 2, 3)
            out = f(_rand(T, i, 4, 3), w, ("data", "set")[i // 2])
            with T.no_grad():
                w.add_(1)
            return out, net.weight, w
        return run
    compare(build)
    net = tracegrad.nn.Linear(3, 2)

    def g(w):
        with tracegrad.no_grad():
            net.weight.set_(w)
    with pytest.raises(tracegrad.compiler.GraphBreak, match=r"moved onto a tensor argument.*round10.py:%d"
                       % (g.__code__.co_firstlineno + 2)):
        tracegrad.compile(g, fullgraph=True)(tracegrad.ones(2, 3))


def test_data_set_inside_then_moved_again_between_calls():
    def build(T, wrap):
        net = _linear(T)

        def f(x, w):
            with T.no_grad():
                net.weight.data = w * 2
            return net(x)
        f = wrap(f)

        def run(i):
            out = f(_rand(T, i, 4, 3), _rand(T, i + 3, 2, 3))
            if i == 2:
                net.weight.data = T.zeros(2, 3)
            return out, net.weight
        return run
    compare(build)
