"""Custom ``autograd.Function``s inside a ``tracegrad.compile``d training step: parameters,
``.grad``s, optimizer state and outputs equal eager tracegrad (and torch eager) call after
call. The Functions have deliberately non-mathematical backwards (a gradient that is not the
forward's derivative), so a lowering that differentiated the forward instead of running the
user's backward would show; they read ctx attributes of several kinds, use setup_context,
needs_input_grad with a frozen parameter, several outputs with a non-differentiable one and
set_materialize_grads(False), once_differentiable, mark_dirty, saved outputs, and a backward
that runs autograd itself. (The test_autograd_function ports of test/dynamo live in
tests/conformance/test_compile_ported.py; the ScaledTanh step in test_rng_function.py.)"""
import pytest

from ._harness import check_compiled, data, np_init


def _clip_sign(mod):
    class ClipSign(mod.autograd.Function):
        """Forward ``x * scale``; backward ``clamp(g, -lim, lim) * sign(x) * scale + offset``
        (not the derivative), reading a float, a tuple, a dict and a string from ctx."""

        @staticmethod
        def forward(ctx, x, scale, cfg):
            ctx.scale, ctx.shape, ctx.cfg, ctx.mode = scale, tuple(x.shape), dict(cfg), "sign"
            ctx.save_for_backward(x)
            return x * scale

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert tuple(g.shape) == ctx.shape and ctx.mode == "sign"
            lim = ctx.cfg["lim"]
            return g.clamp(-lim, lim) * x.sign() * ctx.scale + ctx.cfg["offset"], None, None
    return ClipSign


def ctx_attributes_program(mod, wrap):
    model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Linear(4, 1)), mod)
    opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    fn = _clip_sign(mod)

    def step(x, y):
        opt.zero_grad()
        h = fn.apply(model[0](x), 0.7, {"lim": 0.05, "offset": 0.01})
        loss = ((model[1](h) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 6, 3), data(mod, i, 6, 1, seed=300))


def _split_mask(mod):
    class SplitMask(mod.autograd.Function):
        """Three outputs: ``2x``, ``x**2`` and a 0/1 mask (non-differentiable). Grads are not
        materialized: an unused output's gradient arrives as None and is replaced by 0.5."""

        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            mask = (x > 0).to(x.dtype)
            ctx.mark_non_differentiable(mask)
            ctx.save_for_backward(x, mask)
            return x * 2, x * x, mask

        @staticmethod
        def backward(ctx, g_lin, g_sq, g_mask):
            assert g_mask is None
            x, mask = ctx.saved_tensors
            g_lin = g_lin if g_lin is not None else 0.5
            g_sq = g_sq * x * 3 if g_sq is not None else 0.5
            return (g_lin + g_sq) * (mask + 0.25)
    return SplitMask


def nondiff_program(use_square):
    """Linear -> SplitMask; the loss uses the squared output only when ``use_square``."""
    def make(mod, wrap):
        model = np_init(mod.nn.Linear(3, 3), mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        fn = _split_mask(mod)

        def step(x):
            opt.zero_grad()
            lin, sq, mask = fn.apply(model(x))
            loss = (lin * mask).sum() + (sq.mean() if use_square else 0)
            loss.backward()
            opt.step()
            return loss, mask
        return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 4, 3),)
    return make


def _scaled_matmul(mod):
    class ScaledMatmul(mod.autograd.Function):
        """setup_context style ``x @ w.T * k``; backward skips what needs_input_grad does not
        ask for and scales the weight gradient by a made-up 0.5; once_differentiable."""

        @staticmethod
        def forward(x, w, k):
            return x @ w.t() * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, w, k = inputs
            ctx.save_for_backward(x, w)
            ctx.k = k

        @staticmethod
        @mod.autograd.function.once_differentiable
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            gx = g @ w * ctx.k if ctx.needs_input_grad[0] else None
            gw = (g.t() @ x) * ctx.k * 0.5 if ctx.needs_input_grad[1] else None
            return gx, gw, None
    return ScaledMatmul


def frozen_weight_program(mod, wrap):
    model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Linear(4, 2, bias=False)), mod)
    model[0].weight.requires_grad_(False)       # needs_input_grad[1] is False for it
    opt = mod.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.2)
    fn = _scaled_matmul(mod)

    def step(x):
        opt.zero_grad()
        h = fn.apply(x, model[0].weight, 1.5) + model[0].bias
        out = fn.apply(h.tanh(), model[1].weight, 0.5)
        loss = out.pow(2).mean()
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 5, 3),)


def _inplace_relu_scale(mod):
    class InplaceReluScale(mod.autograd.Function):
        """In-place ``relu(x) * 3`` (mark_dirty); backward saves the output and passes the
        gradient where it is positive, times 2 (not 3)."""

        @staticmethod
        def forward(ctx, x):
            x.clamp_(min=0).mul_(3)
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * (out > 0).to(g.dtype) * 2
    return InplaceReluScale


def dirty_program(mod, wrap):
    model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 5), mod.nn.Linear(5, 1)), mod)
    opt = mod.optim.SGD(model.parameters(), lr=0.05)
    fn = _inplace_relu_scale(mod)

    def step(x):
        opt.zero_grad()
        h = model[0](x)
        fn.apply(h)                        # the output is discarded: h itself was rewired
        loss = model[1](h).abs().mean()
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 4, 3),)


def _reentrant_cube(mod):
    class ReentrantCube(mod.autograd.Function):
        """Forward ``x**3`` computed on a detached copy; backward gets its gradient by running
        autograd.grad on a fresh graph under enable_grad (a reentrant backward)."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with mod.enable_grad():
                xd = x.detach().requires_grad_()
                (gx,) = mod.autograd.grad((xd ** 3).sum(), xd)
            return g * gx
    return ReentrantCube


def reentrant_program(mod, wrap):
    model = np_init(mod.nn.Linear(2, 2), mod)
    opt = mod.optim.SGD(model.parameters(), lr=0.05)
    fn = _reentrant_cube(mod)

    def step(x):
        opt.zero_grad()
        loss = fn.apply(model(x)).mean()
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 3, 2),)


def _passthrough_dup(mod):
    class PassDup(mod.autograd.Function):
        """Returns its input as-is, then one new tensor twice (the same object); backward
        weights the three gradients 1, 2 and 5 (whatever the forward did)."""

        @staticmethod
        def forward(ctx, x):
            y = x.tanh()
            return x, y, y

        @staticmethod
        def backward(ctx, g_x, g_y1, g_y2):
            return g_x + 2 * g_y1 + 5 * g_y2
    return PassDup


def passthrough_program(mod, wrap):
    model = np_init(mod.nn.Linear(3, 2), mod)
    opt = mod.optim.SGD(model.parameters(), lr=0.1)
    fn = _passthrough_dup(mod)

    def step(x):
        opt.zero_grad()
        same, y1, y2 = fn.apply(model(x))
        assert y1 is y2
        loss = (same * y1).sum() + y2.mean()
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 4, 3),)


def _check_whole_step(make):
    """Compiled == eager tracegrad == eager torch, every call; the step is one trace, no breaks."""
    run = check_compiled(make, calls=3, torch_too=True)
    assert not run.step.stats["graph_breaks"] and run.step.stats["traces"] == 1
    return run


def test_ctx_attributes_and_non_mathematical_backward():
    _check_whole_step(ctx_attributes_program)


@pytest.mark.parametrize("use_square", [False, True])
def test_non_differentiable_output_and_unmaterialized_grads(use_square):
    _check_whole_step(nondiff_program(use_square))


def test_setup_context_needs_input_grad_frozen_weight_once_differentiable():
    run = _check_whole_step(frozen_weight_program)
    assert run.state["model"][0].weight.grad is None


def test_mark_dirty_discarded_output_in_step():
    _check_whole_step(dirty_program)


def test_reentrant_backward_in_step():
    _check_whole_step(reentrant_program)


def test_input_returned_as_is_and_duplicate_output_in_step():
    _check_whole_step(passthrough_program)
