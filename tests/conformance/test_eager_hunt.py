"""Adversarial eager parity hunt: small programs run once with torch 2.13 (the oracle) and once
with tracegrad, comparing everything observable (values, dtypes, shapes, strides, grad_fn names,
gradients, printed text, exception classes). One test per difference found (fixed, or a strict
xfail naming what differs) plus programs that already agreed, kept as regression guards."""
import warnings

import numpy as np
import pytest

import tracegrad
from parity import log_outcome as outcome, run_both

torch = pytest.importorskip("torch")


def show(x):
    """Print ``repr(x)`` with tracegrad's module prefix spelled as torch's (``dtype=torch.float64``)."""
    print(repr(x).replace("tracegrad.", "torch."))


def dtype_name(d):
    return str(d).rsplit(".", 1)[-1]


# ---- printing ----------------------------------------------------------------------------------
def test_repr_inf_does_not_widen_columns():
    # torch sizes the column from nonzero finite values only: -inf stays unpadded
    def program(T, log):
        show(T.tensor([float("-inf"), 1.]))
        show(T.tensor([[1.5, float("inf")], [-2., 3.]]))
        show(T.tensor([1 + 1j, float("inf") - 2j, 0j]))
        show(T.tensor([0., 0.]))
        show(T.tensor([1., float("nan")]))
    run_both(program)


@pytest.fixture
def printoptions():
    """Both libraries back at the default print options afterwards."""
    yield
    for mod in (torch, tracegrad):
        mod.set_printoptions(profile="default")


def test_set_printoptions(printoptions):
    def program(T, log):
        T.set_printoptions(precision=2)
        show(T.tensor([1.23456, 2.]))
        show(T.tensor(3.14159))
        T.set_printoptions(sci_mode=True)
        show(T.tensor([1.5, 2.]))
        T.set_printoptions(profile="default")
        show(T.tensor([1.23456, 2.]))
        T.set_printoptions(threshold=5, edgeitems=1)
        show(T.arange(10))
        show(T.arange(24.).reshape(2, 3, 4))
        T.set_printoptions(linewidth=20)
        show(T.arange(8.) + 0.5)
        show(T.tensor([1., 2.], requires_grad=True))
        T.set_printoptions(profile="short")
        show(T.arange(100.) / 3)
        T.set_printoptions(profile="full")
        show(T.arange(1200).reshape(30, 40)[:2])
        T.set_printoptions(profile="default")
        show(T.arange(8.) + 0.5)
    run_both(program)


def test_repr_names_dtype_against_the_default_dtype():
    def program(T, log):
        T.set_default_dtype(T.float64)
        try:
            show(T.tensor([1.5, 2.], dtype=T.float64))
            show(T.tensor([1.5, 2.], dtype=T.float32))
            show(T.tensor([1j], dtype=T.complex64))
            show(T.tensor([1j], dtype=T.complex128))
            show(T.zeros(0))
            show(T.zeros(0, dtype=T.float32))
        finally:
            T.set_default_dtype(T.float32)
        show(T.zeros(0, dtype=T.complex64))
        show(T.zeros(0, 2, dtype=T.bool))
    run_both(program)


def test_repr_formats_agree():
    def program(T, log):
        for x in [T.tensor([1e-5, 1.5]), T.tensor([1e-3, 0.5]), T.arange(1001.), T.arange(30.).reshape(5, 6) ** 3,
                  T.arange(3000).reshape(10, 10, 30), T.tensor([1.0e8, 2.]), T.tensor([123456.7, 1.]),
                  T.tensor(1e-10), T.tensor(123456789.), T.tensor([2.5], dtype=T.float16) * 1000,
                  T.tensor([[True], [False]]), T.arange(24.).reshape(2, 3, 4) * 1e-6, T.tensor([-0.]),
                  T.tensor([0.5 + 1j, -2j]), T.tensor([2.], dtype=T.bfloat16), T.zeros(3, 0, 2),
                  T.tensor([1, 2], dtype=T.uint8), T.arange(2000).reshape(40, 50)]:
            show(x)
        a = T.tensor([1., 2.], requires_grad=True)
        show(a[0])
        show(a.view(2, 1))
        show(T.nn.Parameter(T.ones(2, dtype=T.float64)))
    run_both(program)


# ---- indexing ----------------------------------------------------------------------------------
def grad_fn_name(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def test_bool_scalar_index_adds_a_dim():
    # torch: a Python bool / 0-d bool tensor in a key is a new size-1 dim, kept (True) or emptied (False)
    def program(T, log):
        a = T.arange(6.).reshape(2, 3).requires_grad_()
        keys = [True, False, T.tensor(True), T.tensor(False), (0, True), (True, 1), (..., True), (True, [0, 1]),
                (slice(None), T.tensor(False)), (None, True, ..., False), (True, True)]
        for i, k in enumerate(keys):
            b = a[k]
            log(f"key{i}", [b, grad_fn_name(b), b._is_view()])
        z = T.tensor(5.)
        log("0-d", [z[True], z[False].shape, z[T.tensor(True)], z[None, True].shape])
        c = T.zeros(2, 3)
        c[True] = 1
        c[False] = 5
        c[0, True] = 2
        c[..., True] = T.tensor([7.])
        log("written", c)
        (a * 1)[True].sum().backward()
        log("grad", a.grad)
        outcome(log, "too many", lambda: a[0, 0, True, 0])
    run_both(program)


def test_index_put_checks_dtype_and_range():
    # XLA drops an out-of-range scatter index and casts values: torch raises
    def program(T, log):
        a = T.zeros(3)
        cases = {
            "long values": lambda: a.index_put_((T.tensor([0]),), T.tensor([1])),
            "0-d long": lambda: a.index_put_((T.tensor([0]),), T.tensor(5)),
            "float64": lambda: a.index_put_((T.tensor([0]),), T.tensor(5., dtype=T.float64)),
            "out of range": lambda: a.index_put_((T.tensor([3]),), T.tensor(1.)),
            "below range": lambda: a.index_put_((T.tensor([-4]),), T.tensor(1.), accumulate=True),
            "negative": lambda: a.index_put_((T.tensor([-3]),), T.tensor(1.), accumulate=True),
            "float index": lambda: a.index_put_((T.tensor([0.]),), T.tensor(1.)),
            "out of place": lambda: T.index_put(a, (T.tensor([0]),), T.tensor([1])),
            "too many": lambda: a.index_put_([T.tensor([0]), T.tensor([0])], T.tensor(1.)),
            "mask": lambda: a.index_put_((T.tensor([True, False, True]),), T.tensor(2.)),
            "python value": lambda: a.index_put_((T.tensor([0]),), 1.0),
            "2-d out of range": lambda: T.zeros(2, 3).index_put_((T.tensor([1]), T.tensor([3])), T.tensor(1.)),
        }
        for name, fn in cases.items():
            outcome(log, name, fn)
    run_both(program)


def test_advanced_setitem_needs_the_dtype_basic_setitem_casts():
    def program(T, log):
        a = T.zeros(3)
        for i, (k, v) in enumerate([(T.tensor([0]), T.tensor([1])), (T.tensor([0, 1]), T.tensor(1)), (0, T.tensor(1)),
                                    (slice(0, 2), T.tensor([1, 2])), (T.tensor([True, False, True]), T.tensor([1, 2])),
                                    ([0, 1], T.tensor([1, 2])), (T.tensor([2]), 4)]):
            outcome(log, f"set{i}", lambda: a.__setitem__(k, v) or a.clone())
    run_both(program)


# ---- factories ---------------------------------------------------------------------------------
def test_tensor_infers_numpy_scalar_and_tensor_element_dtypes():
    # torch promotes the leaves' own dtypes: numpy scalars keep theirs, tensors are one number each
    def program(T, log):
        data = [[np.float64(1.5)], [np.int32(1)], [np.uint8(1), np.int8(1)], [np.float16(1), 2], [np.float16(1), 2.0],
                [1, np.float64(2)], [np.complex64(1j)], [T.tensor(1, dtype=T.int32), 2], [T.tensor([[1.]])],
                [T.tensor(1., dtype=T.float16), T.tensor(1., dtype=T.bfloat16)], [True, 2], [1, 2.5], [[1, 2], [3., 4]],
                np.float16(2)]
        for i, d in enumerate(data):
            outcome(log, f"data{i}", lambda: (lambda t: (dtype_name(t.dtype), t.shape, t.float().tolist()))(T.tensor(d)))
        outcome(log, "multi-element tensors", lambda: T.tensor([T.tensor([1., 2.]), T.tensor([3., 4.])]))
        T.set_default_dtype(T.float64)
        try:
            log("complex under float64", [dtype_name(T.tensor([1j]).dtype), dtype_name(T.tensor(1j).dtype),
                                          dtype_name(T.tensor([np.float32(1)]).dtype)])
        finally:
            T.set_default_dtype(T.float32)
    run_both(program)


def test_tensor_from_a_tensor_warns_and_detaches():
    def program(T, log):
        src = T.tensor([1., 2.], requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = T.tensor(src * 2)
        log("warnings", [c.category.__name__ for c in w])
        log("copy", [t, t.requires_grad, t.is_leaf, t.grad_fn is None])
    run_both(program)


# ---- nn.Module state dicts ---------------------------------------------------------------------
def test_state_dict_metadata_versions_and_old_batchnorm_dicts():
    # torch records each module's _version in state_dict()._metadata; a BatchNorm dict without
    # metadata (or from version 1) lacks num_batches_tracked and still loads strictly
    from collections import OrderedDict

    def program(T, log):
        nn = T.nn
        m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), nn.Sequential(nn.LayerNorm(3)))
        sd = m.state_dict()
        log("metadata", [(k, dict(v)) for k, v in sd._metadata.items()])
        log("versions", [nn.Module._version, nn.BatchNorm1d._version, nn.Linear._version])
        plain = {k: v for k, v in sd.items() if "num_batches" not in k}
        outcome(log, "no metadata", lambda: str(m.load_state_dict(plain)))
        with_meta = OrderedDict(plain)
        with_meta._metadata = OrderedDict((k, dict(v)) for k, v in sd._metadata.items())
        outcome(log, "version 2 metadata", lambda: str(m.load_state_dict(with_meta)))
        seen = []
        m[0]._register_load_state_dict_pre_hook(lambda *a: seen.append(a[2]))
        m.load_state_dict(sd)
        log("pre-hook metadata", seen)
        calls = []
        m[1].register_state_dict_post_hook(lambda mod, d, p, meta: calls.append(dict(meta)))
        m.state_dict()
        log("post-hook metadata", calls)
        h = m[1].register_state_dict_post_hook(lambda mod, d, p, meta: d)
        outcome(log, "post-hook returns", lambda: m.state_dict())
        h.remove()
        r = m.load_state_dict({**sd, "extra": T.ones(1)}, strict=False)
        log("incompatible", [type(r).__name__, repr(r), str(m.load_state_dict(sd))])
        log("given destination", hasattr(m.state_dict(destination=OrderedDict(), prefix="q."), "_metadata"))
    run_both(program)


# ---- views -------------------------------------------------------------------------------------
def test_unfold_is_a_view_and_storage_offset():
    def program(T, log):
        a = T.arange(12.).reshape(3, 4)
        for args in [(1, 2, 1), (1, 2, 2), (0, 2, 1), (0, 3, 1), (1, 1, 3), (-1, 3, 1)]:
            u = a.unfold(*args)
            log(str(args), [u, u.stride(), u.is_contiguous(), u._is_view(), u._base is a, u.storage_offset()])
        b = T.arange(12.).reshape(3, 4)
        u = b.unfold(1, 2, 2)
        u.mul_(10)
        log("written through", [b, b._version, u._version])
        x = T.arange(6., requires_grad=True)
        y = x * 1
        w = y.unfold(0, 2, 2)
        w.mul_(2)
        log("grad_fns", [grad_fn_name(y), grad_fn_name(w)])
        y.sum().backward()
        log("grad", x.grad)
        x.grad = None
        z = x.unfold(0, 3, 1)
        (z * T.arange(12.).reshape(4, 3)).sum().backward()
        log("overlapping windows", [grad_fn_name(z), x.grad])
        log("0-d", [T.tensor(5.).unfold(0, 1, 1)])
        outcome(log, "too big", lambda: a.unfold(1, 5, 1))
        outcome(log, "step 0", lambda: a.unfold(1, 2, 0))
        log("offsets", [a[1:].storage_offset(), a[:, 2:].storage_offset(), a.t()[1].storage_offset(), a.storage_offset(),
                        a[1, 1:].storage_offset(), a.diagonal(1).storage_offset(), a.view(-1)[5:].view(1, 7).storage_offset()])
    run_both(program)


# ---- dtypes: kernels that do not promote -------------------------------------------------------
def test_mixed_dtype_operands_raise_where_torch_does_not_promote():
    def program(T, log):
        F = T.nn.functional
        f32, f64 = T.ones(2, 3), T.ones(3, 2, dtype=T.float64)
        d = T.float64
        cases = {
            "addmm self": lambda: T.addmm(T.ones(2, 2, dtype=d), f32, f32.T),
            "addmm mats": lambda: T.addmm(T.ones(2, 2), f32, f64),
            "linear bias": lambda: F.linear(f32, T.ones(2, 3), T.ones(2, dtype=d)),
            "Linear on float64": lambda: T.nn.Linear(3, 2)(T.ones(2, 3, dtype=d)),
            "Linear on int64": lambda: T.nn.Linear(3, 2)(T.ones(2, 3, dtype=T.long)),
            "einsum": lambda: T.einsum("ij,jk->ik", f32, f64),
            "layer_norm weight": lambda: F.layer_norm(T.ones(2, 3), (3,), T.ones(3, dtype=d)),
            "layer_norm bias": lambda: F.layer_norm(T.ones(2, 3), (3,), T.ones(3), T.ones(3, dtype=d)),
            "layer_norm bf16 input": lambda: F.layer_norm(T.ones(2, 3, dtype=T.bfloat16), (3,), T.ones(3)),
            "batch_norm stats": lambda: F.batch_norm(T.ones(2, 3), T.zeros(3, dtype=d), T.ones(3, dtype=d)),
            "batch_norm weight": lambda: F.batch_norm(T.ones(2, 3), None, None, T.ones(3, dtype=d), training=True),
            "group_norm": lambda: F.group_norm(T.ones(2, 4), 2, T.ones(4, dtype=d)),
            "lerp end": lambda: T.lerp(T.ones(1), T.ones(1, dtype=d), 0.5),
            "lerp weight": lambda: T.lerp(T.ones(1), T.ones(1), T.tensor(0.5, dtype=d)),
            "addr promotes": lambda: T.addr(T.ones(2, 2, dtype=d), T.ones(2), T.ones(2)),
            "prelu": lambda: F.prelu(T.ones(2), T.ones(1, dtype=d)),
            "bce target": lambda: F.binary_cross_entropy(T.ones(2) * 0.5, T.ones(2, dtype=d)),
            "nll weight": lambda: F.nll_loss(T.ones(2, 3), T.tensor([0, 1]), weight=T.ones(3, dtype=d)),
            "cdist": lambda: T.cdist(T.ones(1, 2), T.ones(1, 2, dtype=d)),
            "linalg.cross": lambda: T.linalg.cross(T.ones(3), T.ones(3, dtype=d)),
            "bilinear": lambda: F.bilinear(T.ones(1, 2), T.ones(1, 2), T.ones(1, 2, 2, dtype=d)),
            "GRUCell": lambda: T.nn.GRUCell(2, 2)(T.ones(1, 2, dtype=d)),
            "mse promotes": lambda: F.mse_loss(T.ones(2), T.ones(2, dtype=d)),
        }
        for name, fn in cases.items():
            outcome(log, name, lambda: dtype_name(fn().dtype))
    run_both(program)


def test_rms_norm_keeps_the_input_dtype():
    def program(T, log):
        F = T.nn.functional
        x = T.tensor([[1., 2., 3., 4.], [0.5, -1, 2, 0.1]])
        w = T.tensor([1., 2., 3., 0.5])
        for xd in [T.float32, T.bfloat16, T.float64]:
            for wd in [T.float32, T.bfloat16, T.float64]:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = F.rms_norm(x.to(xd), (4,), w.to(wd))
                log(dtype_name(xd) + " x " + dtype_name(wd), [dtype_name(r.dtype), r.float()])
    run_both(program)


# ---- special functions -------------------------------------------------------------------------
def test_erfcx_just_below_the_overflow_switch():
    # jax's erfcx gave 0 where erfc(x) is subnormal (flushed): x in (26.55, 26.64) float64, (9.19, 9.4) float32
    def program(T, log):
        for dt, xs in [(T.float64, [25.0, 26.0, 26.56, 26.6, 26.63, 27.0, 1e5]), (T.float32, [8.5, 9.0, 9.2, 9.3, 9.39, 9.5])]:
            x = T.tensor(xs, dtype=dt, requires_grad=True)
            y = T.special.erfcx(x)
            y.sum().backward()
            log(dtype_name(dt), [y, x.grad])
    run_both(program)


# ---- autograd: differences in the engine / Function layer (not fixed here) ---------------------
def test_function_returning_a_view_of_its_input():
    """torch's IN_CUSTOM_FUNCTION views: a view (or an input returned as-is) a Function returns
    is a view of the input's base; writing it in place, or reading its grad_fn after the base
    changed, raises (the view rebase would bypass the custom backward)."""
    def program(T, log):
        class Flatten(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.view(-1)

            @staticmethod
            def backward(ctx, g):
                return g.view(2, 2) * 3

        class Ident(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 3
        a = T.ones(2, 2, requires_grad=True)
        b = a * 1
        c = Flatten.apply(b)
        log("is view", [c._is_view(), c._base is b, type(c.grad_fn).__name__])
        outcome(log, "in-place", lambda: c.mul_(2))
        c.sum().backward(retain_graph=True)
        log("grad", a.grad)
        d, f = Ident.apply(b), Ident.apply(b[0])
        log("as-is", [d._is_view(), d._base is b, d is b, f._is_view(), f._base is b])
        e = Flatten.apply(a)
        log("leaf input", [e._is_view(), e._base is a])
        b.mul_(2)
        outcome(log, "grad_fn after base write", lambda: c.grad_fn)
        outcome(log, "as-is grad_fn after base write", lambda: d.grad_fn)
        with T.no_grad():
            a.mul_(2)
            g = Flatten.apply(b)
        outcome(log, "leaf base written", lambda: e.grad_fn)
        log("no-grad call", [g._is_view(), g._base is b, g.grad_fn])
        log("no input needs grad", Flatten.apply(T.ones(2, 2))._is_view())
    run_both(program)


def test_create_graph_accumulated_grad_is_a_copy():
    def program(T, log):
        a = T.tensor([1., 2.], requires_grad=True)
        (a ** 3).sum().backward(create_graph=True)
        log("first", [a.grad, a.grad.requires_grad, grad_fn_name(a.grad)])
        (a ** 2).sum().backward()
        log("second", [a.grad, grad_fn_name(a.grad)])
    run_both(program)


def test_grad_fn_dir_lists_saved_attributes():
    def program(T, log):
        a = T.tensor([1., 2.], requires_grad=True)
        c = (a * 2).pow(2)
        log("saved", [c.grad_fn._saved_self, c.grad_fn._saved_exponent])
        log("dir", sorted(n for n in dir(c.grad_fn) if n.startswith(("_saved", "_raw_saved"))))
    run_both(program)


def test_function_save_for_backward_of_a_number():
    def program(T, log):
        class Scale(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, n):
                ctx.save_for_backward(x, n)
                return x * n

            @staticmethod
            def backward(ctx, g):
                return g, None
        outcome(log, "numbers only", lambda: Scale.apply(3.0, 2))
        outcome(log, "with a tensor", lambda: Scale.apply(T.ones(2, requires_grad=True), 3))
    run_both(program)


def test_retain_grad_on_a_view_survives_an_inplace_on_its_base():
    def program(T, log):
        x = T.ones(3, requires_grad=True)
        y = x * 2
        z = y[:2]
        z.retain_grad()
        y.mul_(3)
        log("grad_fns", [grad_fn_name(y), grad_fn_name(z)])
        (z * T.tensor([1., 2.])).sum().backward()
        log("grads", [x.grad, z.grad])
    run_both(program)


def test_autograd_corners_that_agree():
    def program(T, log):
        a = T.tensor([1., 2.], requires_grad=True)
        b = a * 3
        calls = []
        b.register_hook(lambda g: calls.append(("b1", g.tolist())))
        b.register_hook(lambda g: calls.append(("b2", g.tolist())) or g * 2)
        a.register_hook(lambda g: calls.append(("a", g.tolist())))
        b.retain_grad()
        b.grad_fn.register_prehook(lambda go: calls.append(("pre", [x.tolist() for x in go])))
        b.grad_fn.register_hook(lambda gi, go: calls.append(("post", [None if x is None else x.tolist() for x in gi])))
        a.register_post_accumulate_grad_hook(lambda p: calls.append(("post-accumulate", p.grad.tolist())))
        b.sum().backward()
        log("order", calls)
        log("grads", [b.grad, a.grad])
        y = (a.exp() * a).sum()
        y.backward()
        outcome(log, "second backward", lambda: y.backward())
        c = a * 1
        d = c.sin()
        c.add_(1)
        outcome(log, "modified saved tensor", lambda: d.sum().backward())
        x = T.ones(4, requires_grad=True)
        outcome(log, "leaf in-place", lambda: x.add_(1))
        outcome(log, "leaf view in-place", lambda: x[0].mul_(2))
        y = x.clone()
        y[1:3] = T.tensor([5., 6.])
        v = y[0:2]
        v.mul_(3)
        log("copy slices", [grad_fn_name(y), grad_fn_name(v), y._version])
        y.sum().backward()
        log("through copy slices", x.grad)
        g = T.autograd.grad((a * 2).sum(), [a, T.ones(1, requires_grad=True)], allow_unused=True,
                            materialize_grads=True)
        log("materialized", g)
    run_both(program)


# ---- optimizers --------------------------------------------------------------------------------
def test_adam_tensor_lr_with_foreach_is_refused():
    def program(T, log):
        for name in ("Adam", "AdamW"):
            p = T.ones(2, requires_grad=True)
            for kw in (dict(foreach=True), dict(foreach=True, capturable=True), dict(), dict(foreach=False)):
                outcome(log, f"{name} {sorted(kw.items())}",
                        lambda: type(getattr(T.optim, name)([p], lr=T.tensor(0.01), **kw)).__name__)
            outcome(log, f"{name} 2-element lr", lambda: getattr(T.optim, name)([p], lr=T.tensor([0.01, 0.02])))
    run_both(program)


_OPTIMIZER_CASES = [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5, maximize=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=0.01, foreach=True, betas=(0.8, 0.9))),
    ("AdamW", dict(lr=0.01, weight_decay=0.5, amsgrad=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1)),
    ("Adadelta", dict(lr=1.0, rho=0.8, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, decoupled_weight_decay=True, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, decoupled_weight_decay=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("Rprop", dict(lr=0.01, etas=(0.4, 1.3), step_sizes=(1e-5, 1))),
    ("ASGD", dict(lr=0.01, t0=2, lambd=1e-3, weight_decay=0.1)),
]


def test_optimizers_five_steps_a_group_added_later_and_their_state_dicts():
    from parity import inputs, loss_fn, make_params

    def program(T, log):
        for name, kw in _OPTIMIZER_CASES:
            params = make_params(T)
            x, y = inputs(T)
            opt = getattr(T.optim, name)([params[0]], **kw)
            for i in range(5):
                if i == 2:
                    opt.add_param_group({"params": params[1:], "lr": 0.003})
                opt.zero_grad()
                loss_fn(T, params, x, y).backward()
                opt.step()
            log(name, [p.detach() for p in params])
            sd = opt.state_dict()
            log(name + " state", [sorted((k, v if not hasattr(v, "shape") else (dtype_name(v.dtype), tuple(v.shape)))
                                         for k, v in s.items()) for s in sd["state"].values()])
            log(name + " groups", [sorted(g.items()) for g in sd["param_groups"]])
    run_both(program)


# ---- elementwise and reduction corners ---------------------------------------------------------
def test_integer_and_bool_corners_raise_as_torch():
    def program(T, log):
        b, i = T.tensor([True]), T.tensor([1])
        cases = {
            "int pow_ negative": lambda: T.tensor([2]).pow_(-1),
            "int pow_ negative tensor": lambda: T.tensor([2, 1, -1]).pow_(T.tensor([-1, -2, -3])),
            "int clamp_ float bounds": lambda: T.tensor([1, 5]).clamp_(1.5, 3.5),
            "int clamp_ int bounds": lambda: T.tensor([1, 5]).clamp_(2, 3),
            "int8 fill_ 300": lambda: T.tensor([1], dtype=T.int8).fill_(300),
            "int fill_ 2.7": lambda: T.tensor([1, 5]).fill_(2.7),
            "uint8 fill_ -1": lambda: T.tensor([1], dtype=T.uint8).fill_(-1),
            "bool fill_ 2": lambda: T.tensor([False]).fill_(2),
            "int - bool": lambda: i - b, "bool - int": lambda: b - i, "1 - bool": lambda: 1 - b,
            "int - True": lambda: i - True, "True - int": lambda: True - i, "rsub": lambda: T.rsub(b, 1),
            "float - bool": lambda: T.tensor([1.]) - b, "int - int": lambda: i - 1,
            "sign bool": lambda: b.sign(), "sgn bool": lambda: b.sgn(), "abs bool": lambda: b.abs(),
            "norm int": lambda: i.norm(), "norm float": lambda: T.tensor([3., 4.]).norm(),
            "max over empty dim": lambda: T.zeros(0, 3).max(0), "min over kept dim": lambda: T.zeros(0, 3).min(1),
        }
        for name, fn in cases.items():
            outcome(log, name, lambda: (lambda r: [dtype_name(r.dtype), r])(fn()))
    run_both(program)


def test_conv_padding_string_errors():
    # the functional form raises RuntimeError, the module constructor ValueError (both as torch)
    def program(T, log):
        F = T.nn.functional
        x = T.ones(1, 1, 5, 5)
        for kw in (dict(padding="same", stride=2), dict(padding="bogus"), dict(padding="valid", stride=2),
                   dict(padding="same", dilation=2)):
            outcome(log, f"F {sorted(kw.items())}", lambda: F.conv2d(x, T.ones(1, 1, 3, 3), **kw).shape)
            outcome(log, f"module {sorted(kw.items())}", lambda: T.nn.Conv2d(1, 1, 3, **kw)(x).shape)
    run_both(program)


def test_module_set_submodule_and_bfloat16():
    def program(T, log):
        nn = T.nn
        m = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Linear(3, 3)))
        for target, mod, kw in [("1.0", nn.Tanh(), {}), ("1.5", nn.ReLU(), {}), ("1.7", nn.ReLU(), dict(strict=True)),
                                ("", nn.ReLU(), {}), ("0", 3, {}), ("0.weight", nn.ReLU(), {}), ("9.0", nn.ReLU(), {}),
                                ("new", nn.ELU(), {})]:
            outcome(log, f"{target!r} {kw}", lambda: (m.set_submodule(target, mod, **kw),
                                                      [(n, type(x).__name__) for n, x in m.named_modules()])[1])
        b = nn.BatchNorm1d(2).bfloat16()
        log("bfloat16", [dtype_name(t.dtype) for t in list(b.parameters()) + list(b.buffers())])
    run_both(program)


def test_warnings_torch_gives():
    def program(T, log):
        F = T.nn.functional
        cases = {
            "std of one": lambda: T.ones(1).std(), "var over a dim of one": lambda: T.ones(2, 1).var(1),
            "var_mean correction": lambda: T.var_mean(T.ones(2, 3), 1, correction=3),
            "std_mean fine": lambda: T.std_mean(T.ones(3)), "std fine": lambda: T.ones(3).std(correction=0),
            "upsample": lambda: F.upsample(T.ones(1, 1, 2, 2), scale_factor=2),
            "upsample_nearest": lambda: F.upsample_nearest(T.ones(1, 1, 2, 2), scale_factor=2),
            "upsample_bilinear": lambda: F.upsample_bilinear(T.ones(1, 1, 2, 2), scale_factor=2),
            "init.normal": lambda: T.nn.init.normal(T.empty(2)), "init.xavier_uniform": lambda: T.nn.init.xavier_uniform(T.empty(2, 2)),
            "init.normal_": lambda: T.nn.init.normal_(T.empty(2)),
            "int of requires_grad": lambda: int(T.ones(1, requires_grad=True)),
            "item of requires_grad": lambda: T.ones(1, requires_grad=True).item(),
        }
        for name, fn in cases.items():
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                fn()
            log(name, [c.category.__name__ for c in w])
    run_both(program)


@pytest.mark.parametrize("call", ["lu", "cross", "meshgrid", "qr", "cholesky"])
def test_deprecations_warn_once_per_process_as_torch(call, fresh_warn_once):
    # torch's TORCH_WARN_ONCE: the first call in the process warns, later ones do not (torch's
    # own flag cannot be reset, so this checks tracegrad alone, from a fresh registry)
    calls = {"lu": lambda: tracegrad.lu(tracegrad.eye(2)),
             "cross": lambda: tracegrad.cross(tracegrad.ones(3), tracegrad.ones(3)),
             "meshgrid": lambda: tracegrad.meshgrid(tracegrad.ones(2), tracegrad.ones(2)),
             "qr": lambda: tracegrad.qr(tracegrad.eye(2)),
             "cholesky": lambda: tracegrad.cholesky(tracegrad.eye(2))}
    seen = []
    for _ in range(2):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            calls[call]()
        seen.append([(c.category, c.filename) for c in w])
    assert seen == [[(UserWarning, __file__)], []]


def test_size_arithmetic_allclose_dtypes_and_narrow_copy():
    def program(T, log):
        s = T.ones(2, 3).shape
        log("Size results", [type(r).__name__ for r in (s + (4,), (4,) + s, s * 2, 2 * s, s[:1], s + s)])
        log("Size values", [s + (4,), (4,) + s, s * 2])
        for name, fn in {"isclose f32/f64": lambda: T.isclose(T.ones(1), T.ones(1, dtype=T.float64)),
                         "allclose f32/f64": lambda: T.allclose(T.ones(1), T.ones(1, dtype=T.float64)),
                         "allclose int/float": lambda: T.allclose(T.tensor([1]), T.tensor([1.])),
                         "allclose same": lambda: T.allclose(T.ones(2), T.ones(2) + 1e-9)}.items():
            outcome(log, name, fn)
        x = T.arange(12., requires_grad=True).reshape(3, 4)
        y = T.narrow_copy(x, 1, -3, 2)
        log("narrow_copy", [y, y._is_view(), grad_fn_name(y)])
        (y * T.tensor([[1., 2.]])).sum().backward()
        log("narrow_copy grad", x.grad if x.grad is not None else T.autograd.grad((T.narrow_copy(x, 1, -3, 2) * 2).sum(), x))
        outcome(log, "narrow_copy out of range", lambda: T.narrow_copy(x, 1, 3, 2))
    run_both(program)


def test_autograd_grad_api_that_agrees():
    def program(T, log):
        a = T.tensor([1., 2., 3.], requires_grad=True)
        y = a * a
        cases = {
            "grad_outputs shape": lambda: T.autograd.grad(y, a, grad_outputs=T.ones(2), retain_graph=True),
            "non-scalar without grad_outputs": lambda: T.autograd.grad(y, a, retain_graph=True),
            "grad_outputs dtype": lambda: T.autograd.grad(y, a, grad_outputs=T.ones(3, dtype=T.float64), retain_graph=True),
            "outputs list": lambda: T.autograd.grad([y.sum(), (a * 3).sum()], a, retain_graph=True),
            "grad_outputs with None": lambda: T.autograd.grad([y, (a * 3).sum()], a, grad_outputs=[T.ones(3), None],
                                                              retain_graph=True),
            "batched": lambda: T.autograd.grad(y, a, grad_outputs=T.eye(3), is_grads_batched=True, retain_graph=True),
            "output is the input": lambda: T.autograd.grad(a, a, grad_outputs=T.ones(3)),
            "output needs no grad": lambda: T.autograd.grad(T.ones(1).sum(), a, allow_unused=True),
            "integer input": lambda: T.autograd.grad(y.sum(), T.ones(1, dtype=T.long)),
            "backward of a constant": lambda: T.ones(1).sum().backward(),
        }
        for name, fn in cases.items():
            outcome(log, name, fn)
        b = T.tensor(2., requires_grad=True)
        T.autograd.backward([y.sum(), b * 3], [T.tensor(2.), T.tensor(1.)])
        log("backward with grad_tensors", [a.grad, b.grad])
        c = T.tensor([1., 2.], requires_grad=True)
        g1, = T.autograd.grad((c ** 3).sum(), c, create_graph=True)
        log("double backward", [grad_fn_name(g1), T.autograd.grad(g1.sum(), c)])
        with T.no_grad():
            q = b * 2
        outcome(log, "grad of a no_grad result", lambda: T.autograd.grad(q, b))
    run_both(program)


def test_copy_takes_a_tensor_or_a_number():
    # torch's copy_ fills in a number (numpy scalars too) but refuses a list, tuple, ndarray or None
    def program(T, log):
        for dt in ("float32", "int64", "bool"):
            for v in (3, -1.7, True, 1j, np.int64(3), np.float32(2.5), [1, 2], (1, 2), np.ones(2), np.array(3.), None):
                outcome(log, f"{dt} {v!r}", lambda: T.zeros(2, dtype=getattr(T, dt)).copy_(v).tolist())
    run_both(program)


def _warn_cases(T):
    F = T.nn.functional

    def sched_before_step():
        p = T.nn.Parameter(T.ones(1))
        T.optim.lr_scheduler.StepLR(T.optim.SGD([p], lr=0.1), 1).step()

    def non_leaf_grad():
        return (T.ones(1, requires_grad=True) * 2).grad
    return {
        "softmax without dim": lambda: F.softmax(T.ones(2, 2)),
        "log_softmax without dim": lambda: F.log_softmax(T.ones(2, 2)),
        "tensor(tensor)": lambda: T.tensor(T.ones(2)),
        "lr_scheduler.step() first": sched_before_step,
        "Tensor.grad of a non-leaf": non_leaf_grad,
        "std with one element": lambda: T.ones(1).std(),
        "F.upsample": lambda: F.upsample(T.ones(1, 1, 2, 2), scale_factor=2),
        "init.normal": lambda: T.nn.init.normal(T.empty(2)),
        ".T of 3 dims": lambda: T.ones(2, 2, 2).T,
        "clip_grad_norm": lambda: T.nn.utils.clip_grad_norm([T.nn.Parameter(T.ones(1))], 1.0),
        "cross without dim": lambda: T.cross(T.ones(3, 3), T.ones(3, 3)),
        "out= resized (add)": lambda: T.add(T.ones(2), T.ones(2), out=T.ones(3)),
        "out= resized (exp)": lambda: T.exp(T.ones(2), out=T.ones(3)),
        "out= resized (sum)": lambda: T.sum(T.ones(2, 2), 0, out=T.ones(3)),
        "range": lambda: T.range(0, 3),
        "Tensor.storage": lambda: T.ones(2).storage(),
        "state_dict positional": lambda: T.nn.Linear(1, 1).state_dict(None, ""),
        "softmin without dim": lambda: F.softmin(T.ones(2, 2)),
    }


@pytest.mark.parametrize("name", list(_warn_cases(torch)))
def test_warnings_point_at_the_callers_line(name, fresh_warn_once):
    # torch's warnings name the user's file and line (stacklevel), whatever wrappers sit between
    def record(mod):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            _warn_cases(mod)[name]()
        return [(c.category.__name__, c.filename, c.lineno) for c in w]
    ref, got = record(torch), record(tracegrad)    # tracegrad's once-only warnings: fresh (fixture)
    if not ref:   # torch warns some of these once per process (TORCH_WARN_ONCE), and an earlier test did
        pytest.skip("torch already gave this once-per-process warning in this run")
    assert all(f == __file__ for _, f, _ in ref), ref    # the case is one torch attributes to us
    assert [(c, f) for c, f, _ in got] == [(c, f) for c, f, _ in ref]


def test_meshgrid_without_indexing_warns_once_as_torch(fresh_warn_once):
    import contextlib
    import io
    import subprocess
    import sys
    code = ("import warnings, {m} as T\nwarnings.simplefilter('always')\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    for _ in range(2): T.meshgrid(T.ones(2), T.ones(3))\n"
            "    T.meshgrid(T.ones(2), T.ones(3), indexing='xy')\n"
            "print(len(w), [x.category.__name__ for x in w], [tuple(g.shape) for g in T.meshgrid(T.ones(2), T.ones(3))])")
    # torch in a fresh interpreter (its TORCH_WARN_ONCE cannot be reset in this process);
    # tracegrad here, its once-only warnings as in a fresh process (fresh_warn_once): a second
    # interpreter importing JAX and tracegrad cost seconds
    want = subprocess.run([sys.executable, "-c", code.format(m="torch")], capture_output=True, text=True).stdout
    buf = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(buf):
        exec(code.format(m="tracegrad"), {"__name__": "__meshgrid_case__"})
    assert buf.getvalue() == want and want.startswith("1 ")
