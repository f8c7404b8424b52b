"""Twenty-sixth round of adversarial compiled-vs-eager programs: activation checkpointing over
an input that does not require grad (reentrant: the block's parameters get no gradient), over a
block drawing from an explicit ``Generator``, under the forward's autocast state and around a
parametrization that counts its evaluations; gradients of compiled results differentiated
outside (a gradient penalty, a Hessian-vector product through the region's backward; a third
order raises the clear error) and a gradient penalty through a checkpoint inside the step; custom Functions with ``once_differentiable``,
``mark_non_differentiable`` with ``set_materialize_grads(False)`` and a generated vmap rule;
``autograd.grad`` w.r.t. intermediates (copied into buffers, ``materialize_grads``, after an
in-place write to a saved tensor); ``functional_call`` with masked and tied weights,
``tie_weights=False`` and ``strict``; ``func.jacrev`` penalties and per-sample
gradients through ``vmap(grad)``; parametrizations (``right_inverse`` assignment and removal,
``unsafe`` shape changes, ``spectral_norm`` with train/eval flips, ``weight_norm`` state dicts,
one with its own buffer); buffers copied from parameters (with grad mode on, by slices, and
back); ``state_dict`` inside the step (``keep_vars``); hooks that raise (tensor, parameter,
forward pre-, full backward, optimizer step pre-) and exceptions after ``opt.step()``; ``swap_tensors`` between
calls; and results the caller writes in place. torch eager, tracegrad eager and
``tracegrad.compile`` run each program from the same state and must agree after every call
(``_dynamo_port.compare``; random draws: tracegrad eager against compiled).

Found here and fixed: a ``.grad`` made by the call's backward (after ``zero_grad()`` to
``None``) and returned by the function (``return p.grad``, ``x.grad`` of an argument) came back
as a second tensor holding the same values, not the ``.grad`` tensor itself: the caller's
in-place writes through it (scaling, clipping, ``zero_()`` before ``opt.step()``) never reached
the gradient and ``g is p.grad`` was False; so too a gradient from ``autograd.grad`` the step
assigned to ``p.grad`` and returned, and views, ``detach()`` and ``.data`` of such a ``.grad``
(``trace._returned_grads``).

Found and left: while a compiled function that read two parameters is alive,
``torch.utils.swap_tensors`` on them raises "Cannot swap t1 because it has weakref associated
with it" (its guards hold weak references), as torch.compile's guards make it raise in
torch 2.13; the test pins that."""
import numpy as np
import pytest

import tracegrad

from ._dynamo_port import compare, same
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear

torch = pytest.importorskip("torch")


def _tied_pair(T):
    """Two 3x3 Linear layers sharing one weight (``b.weight = a.weight``), ``b(tanh(a(x)))``."""
    class M(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = _linear(T, 3, 3, seed=1)
            self.b = _linear(T, 3, 3, seed=2)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x).tanh())

    return M()


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_over_an_input_that_does_not_require_grad(reentrant):
    """A block checkpointed over an input that does not require grad, beside a plain path: the
    reentrant form cuts the block's parameters off (their grads stay ``None``, torch warns), the
    non-reentrant form gives them grads; the optimizer updates only what has a grad."""
    def build(T, wrap):
        block = _linear(T, 3, 3, seed=1)
        head = _linear(T, 3, 2, seed=2)
        opt = T.optim.SGD(list(block.parameters()) + list(head.parameters()), lr=0.1)

        def step(x):
            opt.zero_grad()
            h = T.utils.checkpoint.checkpoint(lambda t: block(t).tanh(), x, use_reentrant=reentrant)
            loss = head(x + h).pow(2).mean()
            loss.backward()
            opt.step()
            return loss, h.requires_grad, block.weight.grad, head.weight.grad
        step = wrap(step)

        def run(i):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = step(_rand(T, i, 4, 3))
            return out, block.weight, head.bias
        return run
    compare(build, calls=4)


def test_gradient_penalty_through_a_compiled_forward_with_a_custom_function():
    """A compiled forward holding a custom Function whose backward is made of differentiable
    ops; outside it, ``autograd.grad(create_graph=True)`` w.r.t. the input and a gradient
    penalty on that gradient, then the double backward into the parameters."""
    def build(T, wrap):
        class Cube(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 3 * x * x

        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.05)
        fwd = wrap(lambda x: Cube.apply(net(x)).sum(dim=1))

        def run(i):
            x = _rand(T, i, 4, 3).requires_grad_()
            opt.zero_grad()
            out = fwd(x)
            (g,) = T.autograd.grad(out.sum(), x, create_graph=True)
            loss = out.mean() + (g.norm(dim=1) - 1).pow(2).mean()
            loss.backward()
            opt.step()
            return loss, g, net.weight, net.weight.grad, x.grad
        return run
    compare(build, calls=4)


def test_double_backward_through_a_once_differentiable_function_in_a_compiled_forward():
    """A ``once_differentiable`` custom Function inside a compiled forward: the first-order
    gradient works every call; differentiating that gradient raises ``RuntimeError`` as eager."""
    def build(T, wrap):
        from importlib import import_module
        once = import_module(T.__name__ + ".autograd.function").once_differentiable

        class Sq(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @once_differentiable_of(once)
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * g * x

        w = T.nn.Parameter(T.tensor([0.5, -1.0, 2.0]))
        fwd = wrap(lambda x: Sq.apply(x * w).sum())

        def run(i):
            x = _rand(T, i, 3).requires_grad_()
            out = fwd(x)
            (g,) = T.autograd.grad(out, x, create_graph=True)
            try:
                g.sum().backward()
                err = None
            except RuntimeError as e:
                err = "RuntimeError"
            return out, g, g.requires_grad, err, w.grad
        return run
    compare(build, calls=4)


def once_differentiable_of(once):
    return once


def test_custom_function_with_a_non_differentiable_output_and_unmaterialized_grads():
    """A custom Function returning a value and its argmax-style mask (``mark_non_differentiable``)
    plus a second value, with ``set_materialize_grads(False)``: the step uses one value on some
    calls and both on others, so backward sees ``None`` for the unused one and branches on it."""
    def build(T, wrap):
        class Two(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                ctx.save_for_backward(x)
                mask = (x > 0).to(x.dtype)
                ctx.mark_non_differentiable(mask)
                return x.sin(), mask, x * 2

            @staticmethod
            def backward(ctx, ga, gmask, gb):
                (x,) = ctx.saved_tensors
                out = None
                if ga is not None:
                    out = ga * x.cos()
                if gb is not None:
                    out = gb * 2 if out is None else out + gb * 2
                return out

        net = _linear(T, 3, 3)
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def step(x, both):
            opt.zero_grad()
            a, mask, b = Two.apply(net(x))
            loss = (a * mask).sum() + (b.pow(2).mean() if both else 0)
            loss.backward()
            opt.step()
            return loss, mask, mask.requires_grad, a.requires_grad
        step = wrap(step)

        def run(i):
            return step(_rand(T, i, 4, 3), i % 3 == 1), net.weight, net.bias
        return run
    compare(build, calls=5)


def test_autograd_grad_wrt_an_intermediate_copied_into_a_buffer():
    """Inside the step, ``autograd.grad(loss, h, retain_graph=True)`` w.r.t. an intermediate,
    its norm written into a buffer with ``copy_`` under ``no_grad``, then ``loss.backward()``
    and a step whose loss reads the buffer of the previous call."""
    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = _linear(T, 3, 4, seed=1)
                self.b = _linear(T, 4, 2, seed=2)
                self.register_buffer("gnorm", T.zeros(4))

        m = M()
        opt = T.optim.SGD(m.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            h = m.a(x).relu()
            loss = m.b(h * (1 + m.gnorm)).pow(2).mean()
            (gh,) = T.autograd.grad(loss, h, retain_graph=True)
            with T.no_grad():
                m.gnorm.copy_(gh.abs().mean(dim=0))
            loss.backward()
            opt.step()
            return loss, gh
        step = wrap(step)

        def run(i):
            return step(_rand(T, i, 5, 3)), m.gnorm, m.a.weight.grad
        return run
    compare(build, calls=4)


def test_buffer_copied_from_a_parameter_with_grad_mode_on():
    """After each step ``buf.copy_(weight)`` runs with grad mode on: the buffer becomes a
    non-leaf (``CopyBackwards``) tied to the weight, and the next call's loss that reads it
    sends gradient through that old copy into the weight."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        net.register_buffer("prev", T.zeros(2, 3))
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).mean() + (net.prev * net.weight).sum() * 0.1 + net.prev.sum() * 0.2
            loss.backward()
            opt.step()
            net.prev.copy_(net.weight)
            return loss, net.prev.requires_grad, net.prev.is_leaf
        step = wrap(step)

        def run(i):
            return step(_rand(T, i, 4, 3)), net.weight, net.weight.grad, net.prev
        return run
    compare(build, calls=4)


def test_parametrization_assigned_through_right_inverse_and_removed_between_calls():
    """A custom parametrization with ``right_inverse``: the caller assigns ``m.weight = ...``
    between calls (stored through ``right_inverse`` into ``original``), and after call 2 removes
    it with ``leave_parametrized=True`` (the same Parameter keeps the optimizer's state)."""
    def build(T, wrap):
        P = T.nn.utils.parametrize

        class Sym(T.nn.Module):
            def forward(self, w):
                return w.triu() + w.triu(1).transpose(0, 1)

            def right_inverse(self, w):
                return w.triu()

        lin = _linear(T, 3, 3)
        P.register_parametrization(lin, "weight", Sym())
        opt = T.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)

        def step(x):
            opt.zero_grad()
            loss = lin(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        step = wrap(step)

        def run(i):
            if i == 1:
                with T.no_grad():
                    lin.weight = T.tensor(np.arange(9.0, dtype="float32").reshape(3, 3) * 0.1)
            if i == 3:
                P.remove_parametrizations(lin, "weight", leave_parametrized=True)
            loss = step(_rand(T, i, 4, 3))
            return loss, lin.weight, P.is_parametrized(lin)
        return run
    compare(build, calls=5)


def test_spectral_norm_parametrization_trained_with_train_eval_flips():
    """``parametrizations.spectral_norm`` (two power iterations) on a layer used twice per step,
    the module flipped to eval (no power iteration, the cached vectors) on some calls: weights,
    ``_u``/``_v`` and losses as eager."""
    def build(T, wrap):
        lin = _linear(T, 3, 3)
        T.nn.utils.parametrizations.spectral_norm(lin, n_power_iterations=2)
        opt = T.optim.SGD(lin.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = lin(lin(x).tanh()).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        step = wrap(step)
        sn = lin.parametrizations.weight[0]
        with T.no_grad():   # the registration's vectors come from each library's RNG
            sn._u.copy_(T.nn.functional.normalize(T.tensor([1.0, -2.0, 0.5]), dim=0))
            w0 = lin.parametrizations.weight.original
            sn._v.copy_(T.nn.functional.normalize(w0.t() @ sn._u, dim=0))

        def run(i):
            lin.train(i % 3 != 2)
            return step(_rand(T, i, 4, 3)), sn._u, sn._v, lin.parametrizations.weight.original
        return run
    compare(build, calls=5)


def test_tensor_hook_raising_in_the_backward_of_a_compiled_step():
    """A hook on an intermediate that raises (on the calls the caller arms it): the step's
    backward fails, the caller catches, the optimizer never stepped on that call, and the
    following calls run as eager."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1)
        armed = [False]

        def hook(g):
            if armed[0]:
                raise ValueError("bad grad")
            return g * 2

        def step(x):
            opt.zero_grad()
            y = net(x)
            y.register_hook(hook)
            loss = y.pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        step = wrap(step)

        def run(i):
            armed[0] = i in (1, 3)
            try:
                out = step(_rand(T, i, 4, 3))
            except ValueError as e:
                out = str(e)
            return out, net.weight, net.weight.grad
        return run
    compare(build, calls=5)


def test_functional_call_with_a_masked_weight_and_tied_entries():
    """``torch.func.functional_call`` inside the step with a weight computed from the parameter
    and a mask the caller changes between calls, on a module whose two layers share one
    weight (``tie_weights``): the real parameter gets the gradient through the mask."""
    def build(T, wrap):
        m = _tied_pair(T)
        opt = T.optim.SGD(m.parameters(), lr=0.1)
        mask = T.ones(3, 3)

        def step(x):
            opt.zero_grad()
            out = T.func.functional_call(m, {"a.weight": m.a.weight * mask}, (x,))
            loss = out.pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        step = wrap(step)

        def run(i):
            mask.copy_(T.tensor((np.random.RandomState(i).rand(3, 3) > 0.3).astype("float32")))
            return step(_rand(T, i, 4, 3)), m.a.weight, m.b.bias, m.b.weight is m.a.weight
        return run
    compare(build, calls=4)


def test_compiled_input_gradient_with_graph_differentiated_outside():
    """A compiled function returns ``autograd.grad(net(x).tanh().pow(2).sum(), x,
    create_graph=True)``; the caller squares it and backpropagates into the parameters and
    ``x`` (a Hessian-vector product through the region's backward)."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        f = wrap(lambda x: T.autograd.grad(net(x).tanh().pow(2).sum(), x, create_graph=True)[0])

        def run(i):
            net.zero_grad()
            x = _rand(T, i, 4, 3).requires_grad_()
            g = f(x)
            g.pow(2).sum().backward()
            return g, g.grad_fn is not None, net.weight.grad, net.bias.grad, x.grad
        return run
    compare(build, calls=4)


def test_third_order_through_a_compiled_gradient_raises_clearly():
    """As above, but the caller takes ``autograd.grad(r, x, create_graph=True)`` of the squared
    gradient and backpropagates that: a backward through the compiled backward (torch.compile
    does not support it either). Eager agrees with torch; every traced call raises the clear
    ``RuntimeError`` rather than a silently different gradient."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        f = wrap(lambda x: T.autograd.grad(net(x).tanh().pow(2).sum(), x, create_graph=True)[0])

        def run(i):
            net.zero_grad()
            x = _rand(T, i, 4, 3).requires_grad_()
            r = f(x).pow(2).sum()
            (gx,) = T.autograd.grad(r, x, create_graph=True)
            (gx.sum() + r).backward()
            return gx, net.weight.grad, x.grad
        return run
    runs = [build(torch, lambda f: f), build(tracegrad, lambda f: f),
            build(tracegrad, tracegrad.compile)]
    raised = 0
    for i in range(4):
        a, b = runs[0](i), runs[1](i)
        same(a, b, f"call{i} eager vs torch", rtol=1e-4, atol=1e-5)
        try:
            c = runs[2](i)
        except RuntimeError as e:
            assert "double backward" in str(e) and "tracegrad.compile" in str(e), e
            raised += 1
            continue
        same(b, c, f"call{i} compiled vs eager")
    assert raised >= 2, raised


def test_exception_after_the_optimizer_step_keeps_the_update():
    """The step raises after ``opt.step()`` on the calls where the loss is above a threshold the
    caller changes: the update (and the momentum buffer) of the failing call stays, as eager."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        limit = [1.0]

        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            if loss > limit[0]:
                raise ArithmeticError("loss too large")
            return loss
        step = wrap(step)

        def run(i):
            limit[0] = [10.0, 0.01, 10.0, 0.01, 10.0][i]
            try:
                out = step(_rand(T, i, 4, 3))
            except ArithmeticError as e:
                out = str(e)
            return out, net.weight, opt.state[net.weight]["momentum_buffer"]
        return run
    compare(build, calls=5)


def test_forward_pre_hook_raising_after_batchnorm_updated_its_stats():
    """A compiled Sequential(BatchNorm, Linear) whose Linear has a forward pre-hook that raises
    on armed calls: BatchNorm's running stats and ``num_batches_tracked`` were already updated
    before the raise, as in eager."""
    def build(T, wrap):
        bn = T.nn.BatchNorm1d(3)
        lin = _linear(T, 3, 2)
        seq = T.nn.Sequential(bn, lin)
        armed = [False]

        def pre(mod, args):
            if armed[0]:
                raise KeyError("stop")
        lin.register_forward_pre_hook(pre)
        f = wrap(seq)

        def run(i):
            armed[0] = i % 2 == 1
            try:
                out = f(_rand(T, i, 4, 3))
            except KeyError as e:
                out = str(e)
            return out, bn.running_mean, bn.running_var, bn.num_batches_tracked
        return run
    compare(build, calls=5)


def test_functional_call_without_tying_and_with_strict_keys():
    """``functional_call(m, {"a.weight": w2}, tie_weights=False)`` on a module with tied layers
    replaces only ``a``'s use of the weight; ``strict=True`` with a missing key raises
    ``RuntimeError`` as eager; the module's own parameters are back after each call."""
    def build(T, wrap):
        m = _tied_pair(T)
        w2 = T.nn.Parameter(T.tensor(np.eye(3, dtype="float32") * 0.5))

        def f(x, strict):
            p = {"a.weight": w2 * 2}
            if strict:
                return T.func.functional_call(m, p, (x,), strict=True)
            return T.func.functional_call(m, p, (x,), tie_weights=False)
        f = wrap(f)

        def run(i):
            m.zero_grad()
            w2.grad = None
            try:
                out = f(_rand(T, i, 4, 3), i == 2)
                out.pow(2).sum().backward()
            except RuntimeError:
                out = "RuntimeError"
            return out, m.a.weight.grad, w2.grad, m.b.weight is m.a.weight
        return run
    compare(build, calls=4)


def test_autograd_grad_after_an_inplace_write_to_a_saved_intermediate_raises():
    """Inside the step, an intermediate saved by ``tanh``'s backward is written in place on
    some calls before ``autograd.grad``: ``RuntimeError`` (the saved tensor was modified) as
    eager; on the other calls the gradient w.r.t. the intermediate and the parameters."""
    def build(T, wrap):
        net = _linear(T, 3, 3)

        def f(x, poke):
            h = net(x)
            y = h.tanh()
            if poke:
                y.mul_(2)
            return T.autograd.grad(y.sum(), [h, net.weight])
        f = wrap(f)

        def run(i):
            try:
                out = f(_rand(T, i, 4, 3), i % 2 == 1)
            except RuntimeError:
                out = "RuntimeError"
            return out
        return run
    compare(build, calls=4)


def test_checkpoint_drawing_from_an_explicit_generator():
    """A non-reentrant checkpoint whose block draws noise from an explicit ``Generator`` (not
    restored for the recomputation, unlike the global RNG) and dropout from the global one: the
    compiled step draws what eager draws, forward and recomputation, call after call."""
    def run_of(wrap):
        T = tracegrad
        T.manual_seed(0)
        g = T.Generator().manual_seed(5)
        net = _linear(T, 3, 3)
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def block(x):
            noise = T.rand(x.shape, generator=g)
            return T.nn.functional.dropout(net(x) + noise, 0.5, training=True)

        def step(x):
            opt.zero_grad()
            y = T.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
            loss = y.pow(2).mean()
            loss.backward()
            opt.step()
            return loss, y
        step = wrap(step)
        state = [T.get_rng_state()]

        def run(i):     # each run keeps its own global RNG stream
            T.set_rng_state(state[0])
            out = step(_rand(T, i, 4, 3)), net.weight, g.get_state().sum()
            state[0] = T.get_rng_state()
            return out
        return run

    eager, comp = run_of(lambda f: f), run_of(tracegrad.compile)
    for i in range(4):
        same(eager(i), comp(i), f"call{i}")


def test_exception_from_python_state_after_the_optimizer_step_of_a_traced_step():
    """As above, but the raise after ``opt.step()`` depends on a Python flag the caller sets, so
    the step is traced: a call that raises still leaves its update, momentum and ``.grad`` as
    eager."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        flag = [False]

        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            if flag[0]:
                raise ArithmeticError("stop after the step")
            return loss
        step = wrap(step)

        def run(i):
            flag[0] = i in (2, 4)
            try:
                out = step(_rand(T, i, 4, 3))
            except ArithmeticError as e:
                out = str(e)
            return out, net.weight, net.weight.grad, opt.state[net.weight]["momentum_buffer"]
        return run
    compare(build, calls=6)


def test_parameter_hook_raising_when_armed_in_a_traced_step():
    """A hook registered once on a parameter (outside the step) that doubles its gradient, and
    raises when the caller arms it: the traced step's backward runs the hook every call, and an
    armed call raises with the optimizer not stepped, as eager."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1)
        armed = [False]

        def hook(g):
            if armed[0]:
                raise ValueError("bad grad")
            return g * 2
        net.weight.register_hook(hook)

        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        step = wrap(step)

        def run(i):
            armed[0] = i in (2, 4)
            try:
                out = step(_rand(T, i, 4, 3))
            except ValueError as e:
                out = str(e)
            return out, net.weight, net.bias, net.weight.grad, net.bias.grad
        return run
    compare(build, calls=6)


def test_jacobian_penalty_with_func_jacrev_inside_the_step():
    """A step whose loss adds the squared norm of ``torch.func.jacrev`` of the network at one
    sample (through ``functional_call``, the live parameters passed as an argument of the
    transformed function): gradients flow into the parameters through the transform."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.05)

        def step(x):
            opt.zero_grad()
            params = dict(net.named_parameters())
            f = lambda p, v: T.func.functional_call(net, p, (v,)).tanh()
            jac = T.func.jacrev(f, argnums=1)(params, x[0])
            loss = net(x).pow(2).mean() + jac.pow(2).sum() * 0.1
            loss.backward()
            opt.step()
            return loss, jac
        step = wrap(step)

        def run(i):
            return step(_rand(T, i, 4, 3)), net.weight, net.bias
        return run
    compare(build, calls=4)


def test_unsafe_parametrization_changing_the_shape():
    """``register_parametrization(..., unsafe=True)`` with a parametrization that returns the
    transpose of a 2x3 original (so ``weight`` is 3x2, a Linear(2, 3)), and a second, ordinary
    one chained on top that scales by a Python attribute the caller changes between calls."""
    def build(T, wrap):
        P = T.nn.utils.parametrize

        class Tr(T.nn.Module):
            def forward(self, w):
                return w.t()

        class Scale(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.s = 1.0

            def forward(self, w):
                return w * self.s

        lin = _linear(T, 2, 3)
        with T.no_grad():
            orig = lin.weight.detach().t().clone()
        lin.weight = T.nn.Parameter(orig)
        P.register_parametrization(lin, "weight", Tr(), unsafe=True)
        sc = Scale()
        P.register_parametrization(lin, "weight", sc)
        opt = T.optim.Adam(lin.parameters(), lr=0.05)

        def step(x):
            opt.zero_grad()
            loss = lin(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss, lin.weight.shape
        step = wrap(step)

        def run(i):
            sc.s = 1.0 + 0.5 * i
            out = step(_rand(T, i, 4, 2))
            return out, lin.parametrizations.weight.original, tuple(lin.weight.shape)
        return run
    compare(build, calls=4)


def test_parametrization_with_its_own_counter_buffer_and_state_dict_inside_the_step():
    """A parametrization module with a buffer it bumps on every evaluation in training mode; the
    step reads ``lin.weight`` twice, then returns ``lin.state_dict()`` (the
    ``parametrizations.weight.original`` and the parametrization's buffer keys) cloned."""
    def build(T, wrap):
        P = T.nn.utils.parametrize

        class Counted(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("n", T.zeros(()))

            def forward(self, w):
                if self.training:
                    with T.no_grad():
                        self.n.add_(1)
                return w / (1 + 0.1 * self.n)

        lin = _linear(T, 3, 2)
        P.register_parametrization(lin, "weight", Counted())
        opt = T.optim.SGD(lin.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = (x @ lin.weight.t()).pow(2).mean() + lin(x).sum() * 0.1
            loss.backward()
            opt.step()
            return loss, {k: v.clone() for k, v in lin.state_dict().items()}
        step = wrap(step)

        def run(i):
            lin.train(i != 2)
            return step(_rand(T, i, 4, 3))
        return run
    compare(build, calls=5)


def test_weight_norm_state_dict_loaded_between_calls():
    """``parametrizations.weight_norm``: the step trains ``original0``/``original1``; between
    calls the caller loads a state dict with the magnitudes halved (``load_state_dict`` into the
    parametrized module), and the step returns the effective weight."""
    def build(T, wrap):
        lin = _linear(T, 3, 2)
        T.nn.utils.parametrizations.weight_norm(lin)
        opt = T.optim.SGD(lin.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = lin(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss, lin.weight
        step = wrap(step)

        def run(i):
            if i == 2:
                sd = {k: v.clone() for k, v in lin.state_dict().items()}
                sd["parametrizations.weight.original0"] = sd["parametrizations.weight.original0"] * 0.5
                lin.load_state_dict(sd)
            return step(_rand(T, i, 4, 3)), sorted(lin.state_dict())
        return run
    compare(build, calls=4)


def test_swap_tensors_between_two_parameters_between_calls():
    """``torch.utils.swap_tensors(a.weight, b.weight)`` between calls of a step over two
    same-shaped layers: eagerly the Python objects keep their identity (and the optimizer's
    state follows the object) while values and gradients are swapped. While a compiled function
    that read the parameters is alive, the swap is refused with torch's ``RuntimeError`` (its
    guards hold weak references, as torch.compile's in torch 2.13) and the compiled step goes
    on with the parameters unswapped, as an eager run without the swap."""
    def build(T, wrap, swap=True):
        a, b = _linear(T, 3, 3, seed=1), _linear(T, 3, 3, seed=2)
        opt = T.optim.SGD(list(a.parameters()) + list(b.parameters()), lr=0.1, momentum=0.5)

        def step(x):
            opt.zero_grad()
            loss = b(a(x).tanh()).pow(2).mean()
            loss.backward()
            opt.step()
            return loss.detach()    # no graph (and no AccumulateGrad node) kept past the call
        step = wrap(step)

        def run(i):
            swapped = None
            if i == 2 and swap:
                try:
                    T.utils.swap_tensors(a.weight, b.weight)
                    swapped = True
                except RuntimeError as e:
                    assert "weakref" in str(e), e
                    swapped = False
            mom = opt.state[a.weight]["momentum_buffer"] if a.weight in opt.state else None
            return swapped, step(_rand(T, i, 4, 3)), a.weight, b.weight, mom
        return run
    torch_run, eager_run = build(torch, lambda f: f), build(tracegrad, lambda f: f)
    comp_run, plain_run = build(tracegrad, tracegrad.compile), build(tracegrad, lambda f: f, swap=False)
    for i in range(4):
        t, e = torch_run(i), eager_run(i)
        same(t, e, f"call{i} eager vs torch", rtol=1e-4, atol=1e-5)
        c, p = comp_run(i), plain_run(i)
        assert c[0] is (False if i == 2 else None), c[0]
        same(p[1:], c[1:], f"call{i} compiled vs eager without the swap")


def test_autograd_grad_with_materialize_grads_for_an_unused_intermediate():
    """``autograd.grad(loss, [h, unused, w], allow_unused=True, materialize_grads=True)``
    inside the step: zeros (not ``None``) for the unused intermediate; with
    ``materialize_grads=False`` on other calls, ``None``."""
    def build(T, wrap):
        net = _linear(T, 3, 3)

        def f(x, mat):
            h = net(x)
            unused = h * 3
            loss = h.tanh().pow(2).sum()
            return T.autograd.grad(loss, [h, unused, net.weight], allow_unused=True,
                                   materialize_grads=mat)
        f = wrap(f)

        def run(i):
            return f(_rand(T, i, 4, 3), i % 2 == 0)
        return run
    compare(build, calls=4)


@pytest.mark.parametrize("reentrant", [True, False])
def test_counting_parametrization_evaluated_again_by_a_checkpoint_recomputation(reentrant):
    """A checkpointed block whose layer has a parametrization that bumps its own buffer on every
    evaluation: the backward's recomputation evaluates it again (twice per step in all), and
    the weight it sees the second time is the bumped one, as eager."""
    def build(T, wrap):
        P = T.nn.utils.parametrize

        class Counted(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("n", T.zeros(()))

            def forward(self, w):
                with T.no_grad():
                    self.n.add_(1)
                return w * (1 + 0.05 * self.n)

        lin = _linear(T, 3, 3)
        P.register_parametrization(lin, "weight", Counted())
        head = _linear(T, 3, 2, seed=3)
        opt = T.optim.SGD(list(lin.parameters()) + list(head.parameters()), lr=0.1)

        def step(x):
            opt.zero_grad()
            h = T.utils.checkpoint.checkpoint(lambda t: lin(t).tanh(), x, use_reentrant=reentrant)
            loss = head(h).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        step = wrap(step)
        cnt = lin.parametrizations.weight[0]

        def run(i):
            x = _rand(T, i, 4, 3).requires_grad_()
            return step(x), x.grad, cnt.n, lin.parametrizations.weight.original
        return run
    compare(build, calls=4)


def test_slice_of_a_buffer_copied_from_a_column_of_a_parameter_in_forward():
    """A compiled module's forward writes ``buf[:, 0].copy_(weight[:, 0])`` (a view of a buffer
    from a view of a parameter) under ``no_grad`` and then reads the whole buffer; the step
    trains the weight, so each call copies the updated column."""
    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _linear(T, 3, 3)
                self.register_buffer("buf", T.ones(3, 3))

            def forward(self, x):
                with T.no_grad():
                    self.buf[:, 0].copy_(self.lin.weight[:, 0])
                    self.buf[1].mul_(0.5)
                return self.lin(x) + x @ self.buf

        m = M()
        f = wrap(m)
        opt = T.optim.SGD(m.parameters(), lr=0.1)

        def run(i):
            opt.zero_grad()
            loss = f(_rand(T, i, 4, 3)).pow(2).mean()
            loss.backward()
            opt.step()
            return loss, m.buf, m.lin.weight
        return run
    compare(build, calls=4)


def test_parameter_reset_from_a_buffer_on_a_python_flag():
    """A step that, when the caller sets a flag, first restores the weight from a saved buffer
    (``weight.copy_(saved)`` under ``no_grad``) and on other calls saves it
    (``saved.copy_(weight)``), with Adam whose state is not reset: as eager, call after call."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        net.register_buffer("saved", net.weight.detach().clone())
        opt = T.optim.Adam(net.parameters(), lr=0.05)
        flag = [False]

        def step(x):
            with T.no_grad():
                if flag[0]:
                    net.weight.copy_(net.saved)
                else:
                    net.saved.copy_(net.weight)
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        step = wrap(step)

        def run(i):
            flag[0] = i in (2, 3)
            return step(_rand(T, i, 4, 3)), net.weight, net.saved, opt.state[net.weight]["exp_avg"]
        return run
    compare(build, calls=5)


def test_state_dict_keep_vars_written_through_data_inside_the_step():
    """``state_dict(keep_vars=True)`` inside the step returns the Parameters themselves; the step
    shrinks them through ``sd[k].data.mul_(0.9)`` after the optimizer step (weight decay by hand)
    and returns whether the entries are the module's parameters."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            sd = net.state_dict(keep_vars=True)
            for k in sd:
                sd[k].data.mul_(0.9)
            return loss, sd["weight"] is net.weight, sorted(sd)
        step = wrap(step)

        def run(i):
            return step(_rand(T, i, 4, 3)), net.weight, net.bias
        return run
    compare(build, calls=4)


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_recomputation_under_the_forwards_autocast_state(reentrant):
    """A checkpoint taken inside ``autocast(cpu, bfloat16)``, its backward run after the autocast
    region closed: the recomputation runs under the forward's autocast state (bfloat16
    matmuls), so the gradients are those of the autocast forward, as eager."""
    def build(T, wrap):
        net = _linear(T, 3, 3)
        head = _linear(T, 3, 2, seed=4)
        opt = T.optim.SGD(list(net.parameters()) + list(head.parameters()), lr=0.1)

        def step(x):
            opt.zero_grad()
            with T.autocast("cpu", dtype=T.bfloat16):
                h = T.utils.checkpoint.checkpoint(lambda t: net(t).relu(), x, use_reentrant=reentrant)
                out = head(h)
            loss = out.float().pow(2).mean()
            loss.backward()
            opt.step()
            return loss, str(h.dtype)[-8:], str(out.dtype)[-8:]
        step = wrap(step)

        def run(i):
            x = _rand(T, i, 4, 3).requires_grad_()
            return step(x), x.grad, net.weight, head.weight
        return run
    runs = [build(torch, lambda f: f), build(tracegrad, lambda f: f),
            build(tracegrad, tracegrad.compile)]
    for i in range(4):
        seen = [r(i) for r in runs]
        # bfloat16 rounding: torch's kernels round otherwise, so torch is compared loosely
        same(seen[0], seen[2], f"call{i} compiled vs torch", rtol=3e-2, atol=3e-2)
        same(seen[1], seen[2], f"call{i} compiled vs eager")


@pytest.mark.parametrize("w1_first", [True, False])
def test_parameter_hook_raising_mid_backward_after_other_leaves_accumulated(w1_first):
    """Two parameters on separate paths of one loss, a hook registered once on ``w2`` raising
    when armed: depending on which path was built first, ``w1``'s gradient was (or was not)
    accumulated before the raise, and that partial state is what the caller sees, as eager."""
    def build(T, wrap):
        w1 = T.nn.Parameter(T.tensor([0.5, -1.0, 2.0]))
        w2 = T.nn.Parameter(T.tensor([1.5, 0.25, -0.5]))
        armed = [False]

        def hook(g):
            if armed[0]:
                raise ValueError("w2 refused")
            return g
        w2.register_hook(hook)

        def step(x):
            if w1_first:
                a = (w1 * x).tanh().sum()
                b = (w2 * x).pow(2).sum()
            else:
                b = (w2 * x).pow(2).sum()
                a = (w1 * x).tanh().sum()
            (a + b).backward()
            return a.detach(), b.detach()
        step = wrap(step)

        def run(i):
            w1.grad = w2.grad = None
            armed[0] = i % 2 == 1
            try:
                out = step(_rand(T, i, 3))
            except ValueError as e:
                out = str(e)
            return out, w1.grad, w2.grad
        return run
    compare(build, calls=4)


def test_full_backward_hook_raising_on_a_compiled_module():
    """A ``register_full_backward_hook`` on a compiled module that scales ``grad_input`` and
    raises on armed calls: the backward outside the compiled forward runs it every call; an
    armed call raises and the parameters' grads are as eager's."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        armed = [False]

        def hook(mod, gin, gout):
            if armed[0]:
                raise ValueError("refused")
            return tuple(None if g is None else g * 3 for g in gin)
        net.register_full_backward_hook(hook)
        f = wrap(net)

        def run(i):
            net.zero_grad()
            armed[0] = i == 2
            x = _rand(T, i, 4, 3).requires_grad_()
            try:
                out = f(x)
                out.pow(2).sum().backward()
                out = out.detach()
            except ValueError as e:
                out = str(e)
            return out, x.grad, net.weight.grad
        return run
    compare(build, calls=4)


def test_per_sample_gradients_with_vmap_of_grad_clipped_into_dot_grad():
    """DP-SGD by hand inside the step: ``vmap(grad(loss of functional_call))`` over the batch for
    per-sample gradients, each clipped to a norm bound the caller changes between calls, summed
    with ``add_`` into ``.grad`` (zeroed by ``zero_grad(set_to_none=False)``), then ``opt.step()``."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        for v in net.parameters():
            v.grad = T.zeros_like(v)
        opt = T.optim.SGD(net.parameters(), lr=0.1)
        bound = [1.0]

        def sample_loss(p, x, y):
            out = T.func.functional_call(net, p, (x.unsqueeze(0),))
            return (out.squeeze(0) - y).pow(2).sum()

        def step(x, y):
            opt.zero_grad(set_to_none=False)
            p = {k: v.detach() for k, v in net.named_parameters()}
            g = T.func.vmap(T.func.grad(sample_loss), in_dims=(None, 0, 0))(p, x, y)
            norms = T.stack([g[k].flatten(1).norm(dim=1) for k in g]).norm(dim=0)
            scale = (bound[0] / (norms + 1e-6)).clamp(max=1.0)
            with T.no_grad():
                for k, v in net.named_parameters():
                    v.grad.add_((g[k] * scale.view(-1, *([1] * (g[k].dim() - 1)))).mean(0))
            opt.step()
            return norms
        step = wrap(step)

        def run(i):
            bound[0] = [1.0, 0.3, 5.0, 0.1][i]
            return step(_rand(T, i, 5, 3), _rand(T, i + 10, 5, 2)), net.weight, net.bias
        return run
    compare(build, calls=4)


def test_custom_function_with_a_generated_vmap_rule_under_vmap_in_the_step():
    """A setup_context-style custom Function with ``generate_vmap_rule = True`` applied under
    ``torch.func.vmap`` inside the step, and its backward through the vmapped call into a
    parameter."""
    def build(T, wrap):
        class Soft(T.autograd.Function):
            generate_vmap_rule = True

            @staticmethod
            def forward(x, w):
                return (x * w).tanh()

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(inputs[0], inputs[1], output)

            @staticmethod
            def backward(ctx, g):
                x, w, y = ctx.saved_tensors
                d = g * (1 - y * y)
                return d * w, d * x

        w = T.nn.Parameter(T.tensor([0.5, -1.0, 2.0]))
        opt = T.optim.SGD([w], lr=0.1)

        def step(x):
            opt.zero_grad()
            y = T.func.vmap(Soft.apply, in_dims=(0, None))(x, w)
            loss = y.pow(2).sum()
            loss.backward()
            opt.step()
            return loss, y
        step = wrap(step)

        def run(i):
            return step(_rand(T, i, 4, 3)), w
        return run
    compare(build, calls=4)


def test_returned_grads_are_the_parameters_and_arguments_grads():
    """A compiled step runs ``zero_grad()`` (to ``None``) and ``backward`` and returns
    ``net.weight.grad``, ``net.bias.grad`` and its argument's ``x.grad``; the caller scales
    them in place through the returned tensors, then steps the optimizer outside: eagerly the
    returned tensors are the ``.grad`` tensors, so the writes reach the update. (They were new
    tensors holding the same values, the writes lost.)"""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.5)

        def step(x):
            opt.zero_grad()
            loss = net(x).tanh().pow(2).mean()
            loss.backward()
            return loss.detach(), net.weight.grad, net.bias.grad, x.grad
        step = wrap(step)

        def run(i):
            x = _rand(T, i, 4, 3).requires_grad_()
            loss, gw, gb, gx = step(x)
            same_objects = (gw is net.weight.grad, gb is net.bias.grad, gx is x.grad)
            gw.mul_(0.5)
            gb.zero_()
            gx.add_(1)
            opt.step()
            return loss, same_objects, net.weight, net.bias, x.grad
        return run
    compare(build, calls=4)


def test_returned_state_aliases_written_by_the_caller():
    """The step returns ``bn.state_dict()`` (detached aliases of the running stats), a
    ``weight.detach()``, the bias's new ``.grad`` and Adam's ``exp_avg``; the caller writes
    each in place between calls (``fill_``, ``add_``, ``mul_``, ``zero_``): the writes reach the
    module, the gradient and the optimizer state, as eager's."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        bn = T.nn.BatchNorm1d(2)
        opt = T.optim.Adam(net.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = bn(net(x)).pow(2).mean() + net(x).mean()
            loss.backward()
            opt.step()
            return (loss.detach(), bn.state_dict(), net.weight.detach(), net.bias.grad,
                    opt.state[net.weight]["exp_avg"])
        step = wrap(step)

        def run(i):
            loss, sd, wd, g, ea = step(_rand(T, i, 4, 3))
            sd["running_mean"].fill_(0.5)
            sd["num_batches_tracked"].add_(10)
            wd[0].mul_(0.5)
            g.zero_()
            ea.mul_(2)
            return (loss, bn.running_mean, bn.num_batches_tracked, net.weight, net.bias.grad,
                    opt.state[net.weight]["exp_avg"])
        return run
    compare(build, calls=4)


def test_returned_views_of_new_grads_written_by_the_caller():
    """As above with views: the step returns ``net.weight.grad.view(-1)``, ``net.bias.grad[0]``
    ``x.grad.t()``, ``net.bias.grad.detach()`` and ``net.weight.grad.data`` of grads its
    backward made; the caller's in-place writes through them reach the ``.grad`` tensors (the
    views' ``_base`` is that ``.grad``; ``detach`` shares its version counter, ``.data`` not),
    as eager's."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.5)

        def step(x):
            opt.zero_grad()
            loss = net(x).tanh().pow(2).mean()
            loss.backward()
            return (loss.detach(), net.weight.grad.view(-1), net.bias.grad[0], x.grad.t(),
                    net.bias.grad.detach(), net.weight.grad.data)
        step = wrap(step)

        def run(i):
            x = _rand(T, i, 4, 3).requires_grad_()
            loss, gw, gb0, gxt, gbd, gwd = step(x)
            bases = (gw._base is net.weight.grad, gb0._base is net.bias.grad, gxt._base is x.grad)
            v0 = net.weight.grad._version
            gw.mul_(0.5)
            gb0.fill_(1.0)
            gxt[0].zero_()
            gbd.add_(0.25)
            gwd[1].mul_(3)
            versions = (net.weight.grad._version - v0, gbd._version, gwd._version)
            opt.step()
            return loss, bases, versions, gw, net.weight, net.bias, x.grad
        return run
    compare(build, calls=4)


def test_grads_from_autograd_grad_assigned_to_dot_grad_and_returned():
    """The step takes ``autograd.grad`` of the loss w.r.t. the parameters, assigns the results
    to ``.grad`` and steps; it returns one of them. The caller doubles it in place: that is
    the weight's ``.grad`` (one object eagerly), so the doubled value is what ``.grad`` shows."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            gw, gb = T.autograd.grad(loss, [net.weight, net.bias])
            net.weight.grad, net.bias.grad = gw, gb
            opt.step()
            return loss, gw
        step = wrap(step)

        def run(i):
            loss, gw = step(_rand(T, i, 4, 3))
            gw.mul_(2)
            return loss, gw is net.weight.grad, net.weight.grad, net.weight
        return run
    compare(build, calls=4)


def test_teacher_loads_the_students_state_dict_inside_the_step_on_some_calls():
    """A frozen teacher takes ``load_state_dict(student.state_dict())`` inside the step when the
    caller passes ``sync=True``; the loss distils the student towards the teacher."""
    def build(T, wrap):
        student, teacher = _linear(T, 3, 2), _linear(T, 3, 2, seed=5)
        for p in teacher.parameters():
            p.requires_grad_(False)
        opt = T.optim.SGD(student.parameters(), lr=0.1)

        def step(x, sync):
            if sync:
                teacher.load_state_dict(student.state_dict())
            opt.zero_grad()
            loss = (student(x) - teacher(x)).pow(2).mean() + student(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        step = wrap(step)

        def run(i):
            return step(_rand(T, i, 4, 3), i % 2 == 1), teacher.weight, student.weight
        return run
    compare(build, calls=5)


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_rng_replay_with_draws_between_forward_and_recomputation(reentrant):
    """A checkpointed block with dropout and ``randn`` noise, a ``rand`` draw after it and
    before the backward, and one after the backward: the recomputation replays the forward's
    draws and puts the global RNG back, so a compiled step with the checkpoint equals an eager
    step without it (masks, gradients, the later draws), call after call, the RNG never
    reseeded between calls."""
    def run_of(wrap, ckpt):
        T = tracegrad
        net = _linear(T, 3, 3)
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def block(x):
            return T.nn.functional.dropout(net(x), 0.5, training=True) + T.randn(x.shape) * 0.1

        def step(x):
            opt.zero_grad()
            y = T.utils.checkpoint.checkpoint(block, x, use_reentrant=reentrant) if ckpt else block(x)
            loss = (y + T.rand(y.shape)).pow(2).mean()
            loss.backward()
            after = T.rand(2)
            opt.step()
            return loss, y, after
        step = wrap(step)
        T.manual_seed(3)
        state = [T.get_rng_state()]

        def run(i):     # each run keeps its own global RNG stream
            T.set_rng_state(state[0])
            x = _rand(T, i, 4, 3).requires_grad_()
            out = step(x), net.weight, x.grad, T.rand(1)
            state[0] = T.get_rng_state()
            return out
        return run

    plain, comp = run_of(lambda f: f, False), run_of(tracegrad.compile, True)
    for i in range(4):
        same(plain(i), comp(i), f"call{i} compiled with checkpoint vs eager without")


def test_optimizer_step_pre_hook_raising_when_armed():
    """An Adam step pre-hook that raises on the calls the caller arms: the backward has filled
    ``.grad``, the update and Adam's state (``exp_avg``, ``step``) are left as before, and the
    following calls go on from there, as eager."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.Adam(net.parameters(), lr=0.1)
        armed = [False]

        def pre(o, args, kwargs):
            if armed[0]:
                raise OverflowError("skip this step")
        opt.register_step_pre_hook(pre)

        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss.detach()
        step = wrap(step)

        def run(i):
            armed[0] = i in (2, 4)
            try:
                out = step(_rand(T, i, 4, 3))
            except OverflowError as e:
                out = str(e)
            st = opt.state[net.weight]
            return out, net.weight, net.weight.grad, st["exp_avg"], st["step"]
        return run
    compare(build, calls=6)


def test_gradient_penalty_through_a_non_reentrant_checkpoint_inside_the_step():
    """Inside the step: a non-reentrant checkpoint, ``autograd.grad(out, x, create_graph=True)``
    through it, a gradient penalty on that gradient and the double backward into the
    parameters and the input (the recomputation runs for the first and again for the second
    backward), as eager."""
    def build(T, wrap):
        net = _linear(T, 3, 3)
        head = _linear(T, 3, 1, seed=2)
        opt = T.optim.SGD(list(net.parameters()) + list(head.parameters()), lr=0.05)

        def step(x):
            opt.zero_grad()
            h = T.utils.checkpoint.checkpoint(lambda t: net(t).tanh(), x, use_reentrant=False)
            out = head(h).sum()
            (gx,) = T.autograd.grad(out, x, create_graph=True)
            loss = out * 0.1 + (gx.norm(dim=1) - 1).pow(2).mean()
            loss.backward()
            opt.step()
            return loss.detach(), gx.detach()
        step = wrap(step)

        def run(i):
            x = _rand(T, i, 4, 3).requires_grad_()
            return step(x), net.weight, head.weight, x.grad
        return run
    compare(build, calls=4)
