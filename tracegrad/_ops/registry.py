"""The op table: every op is a pure JAX function plus the metadata autograd needs.

``defop`` declares an op once (STYLE 3). The table row holds:

* ``fn(*inputs, **static)`` -- a pure function on ``jax.Array``s (Python scalars may sit in
  tensor positions); static arguments are hashable keyword arguments.
* ``grad_fn`` -- torch's Node name (``MulBackward0``); ``None`` for non-differentiable ops.
* ``args`` -- torch's names of the positional inputs (``self``, ``other``...), used for the
  saved set and ``grad_fn._saved_<name>``.
* ``saves`` -- the names torch saves for backward (inputs, or ``"result"``), see
  NOTE [saved set].
* ``n_out`` / ``n_diff`` -- number of outputs, and how many leading ones are differentiable.
* ``view`` -- ``True`` for ops whose output aliases the input's storage (torch views),
  ``"overlap"`` for views where several elements alias one (``expand``).
* ``vjp_rule`` -- optional ``vjp_rule(static) -> rule or None``: for the static arguments where
  torch's backward kernel rounds unlike ``jax.vjp`` of the forward, ``rule(args, diff_pos,
  grad)`` gives the gradients of the inputs at ``diff_pos`` (``args`` as the backward rebuilds
  them, or None for ``jax.vjp`` at these input dtypes); a None rule keeps ``jax.vjp``
  (NOTE [16-bit mul backward] in elementwise.py).

NOTE [saved set]
The backward of every op is ``jax.vjp`` of its forward, jitted and cached per
(op, static args, layout: NOTE [saved layout]). PyTorch's saved set is by construction enough to compute the
backward, so the backward receives only the saved inputs; inputs torch does not save are
rebuilt inside the jitted backward as zeros of the right shape (XLA removes them when the
VJP does not read them). Ops whose torch backward reads the *result* (``exp``, ``tanh``,
``sigmoid``, ``relu``, ``softmax``...) give a formula ``vjp_result(result, grad, **static)``
instead, so they keep only their output alive, like torch.
"""
from __future__ import annotations

import math
import weakref
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp

from .. import _state
from .._x64 import x64_enter, x64_exit
from . import limited
from .errors import index_dims, integral_dims, op_error, static_kind_error, uint64_scalars
from .tracers import live
from .xla_options import eager_jit, nested_options_error

OPS: dict[str, "Op"] = {}
_NEVER_EDGE = {"alpha", "beta", "condition", "mask", "index", "indices", "rounding_mode"}

# NOTE [double-backward names]
# With create_graph=True torch's gradient tensors carry the grad_fn of the last op in its
# backward formula (grad * result -> MulBackward0). Ours is one node per backward; it takes
# torch's name from this table (observed on torch 2.13), else that of a native backward
# function (``_backward_name``: EluBackward0 -> EluBackwardBackward0).
BACKWARD_NAMES = {
    "MulBackward0": "MulBackward0", "DivBackward0": "DivBackward0", "PowBackward0": "MulBackward0",
    "PowBackward1": "WhereBackward0", "PowBackward2": "MulBackward0", "ExpBackward0": "MulBackward0",
    "Exp2Backward0": "MulBackward0", "Expm1Backward0": "MulBackward0", "LogBackward0": "DivBackward0",
    "Log2Backward0": "DivBackward0", "Log10Backward0": "DivBackward0", "Log1PBackward0": "DivBackward0",
    "SinBackward0": "MulBackward0", "CosBackward0": "MulBackward0", "TanBackward0": "MulBackward0",
    "SqrtBackward0": "DivBackward0", "RsqrtBackward0": "MulBackward0",
    "ReciprocalBackward0": "MulBackward0", "AbsBackward0": "MulBackward0", "ErfBackward0": "MulBackward0",
    "TanhBackward0": "TanhBackwardBackward0", "SigmoidBackward0": "SigmoidBackwardBackward0",
    "ReluBackward0": "ThresholdBackwardBackward0", "SoftmaxBackward0": "SoftmaxBackwardDataBackward0",
    "LogSoftmaxBackward0": "LogSoftmaxBackwardDataBackward0", "MmBackward0": "MmBackward0",
    "AddmmBackward0": "AddBackward0", "LogsumexpBackward0": "MulBackward0", "StdBackward0": "MulBackward0",
    "VarBackward0": "MulBackward0", "LinalgVectorNormBackward0": "MulBackward0",
    "GeluBackward0": "GeluBackwardBackward0", "SiluBackward0": "MulBackward0",
    "NllLossBackward0": "NllLossBackwardBackward0", "BmmBackward0": "BmmBackward0",
    "MvBackward0": "MvBackward0", "DotBackward0": "MulBackward0", "UnsafeViewBackward0": "ViewBackward0",
    "SumBackward0": "ExpandBackward0", "AcosBackward0": "MulBackward0", "AsinBackward0": "MulBackward0",
    "AtanBackward0": "DivBackward0", "SinhBackward0": "MulBackward0", "CoshBackward0": "MulBackward0",
    "AsinhBackward0": "MulBackward0", "AtanhBackward0": "DivBackward0", "ErfcBackward0": "MulBackward0",
    "ErfinvBackward0": "MulBackward0", "LgammaBackward0": "MulBackward0", "DigammaBackward0": "MulBackward0",
    "I0Backward0": "MulBackward0", "MvlgammaBackward0": "MulBackward0", "MishBackward0": "MulBackward0",
    "ProdBackward0": "MulBackward0", "ProdBackward1": "MulBackward0", "CumprodBackward0": "DivBackward0",
    "LogcumsumexpBackward0": "SubBackward0", "LogSigmoidBackward0": "LogSigmoidBackwardBackward0",
    "GluBackward0": "GluBackwardBackward0", "SincBackward0": "WhereBackward0", "LogitBackward0": "WhereBackward0",
    "NegBackward0": "NegBackward0", "UnsqueezeBackward0": "SqueezeBackward1",
    "Deg2RadBackward0": "MulBackward0", "Rad2DegBackward0": "MulBackward0", "HypotBackward0": "DivBackward0",
    "LogaddexpBackward0": "DivBackward0", "Logaddexp2Backward0": "DivBackward0", "VdotBackward0": "MulBackward0",
}

# NOTE [non-differentiable backwards]
# These ops' backward formulas use their saved tensors only through masks or indices (which
# element was the max, clamped, sorted where): torch's gradient depends on the incoming gradient
# alone, so with create_graph it requires grad only if that does (often: no grad_fn at all). Their
# backward is recorded with its saved tensors detached (autograd/_dispatch.py: the derivative
# there is zero almost everywhere).
NONDIFF_SAVED = frozenset((
    "AmaxBackward0", "AminBackward0", "MaxBackward0", "MaxBackward1", "MinBackward0", "MinBackward1",
    "MedianBackward0", "MedianBackward1", "NanmedianBackward0", "NanmedianBackward1", "ModeBackward0",
    "NansumBackward0", "CummaxBackward0", "CumminBackward0", "SortBackward0", "SortBackward1",
    "TopkBackward0", "KthvalueBackward0", "ClampBackward0", "ClampBackward1", "ClampMinBackward0",
    "ClampMinBackward1", "ClampMaxBackward0", "ClampMaxBackward1", "AngleBackward0",
    "MaximumBackward0", "MinimumBackward0", "FmaxBackward0", "FminBackward0"))


# NOTE [saved layout]
# How a node keeps each input of its forward, one kind per input: built by
# ``autograd/_dispatch.py``'s ``_record``, read by the node (its backward,
# ``grad_fn._saved_<name>``) and by ``Op.backward_op``, which builds the VJP of one layout.
SAVED = 0    # a tensor torch saves: in the node's ``saved`` list, in torch's packing order
SHAPE = 1    # a tensor torch does not save: only its (shape, dtype) is kept, rebuilt as zeros
CONST = 2    # a constant (Python scalar, None, a never-differentiated tensor): in ``consts``
RESULT = -1  # in ``Op.save_order``: the op's output


class SavedLayout(NamedTuple):
    """What a node keeps of its forward inputs; hashable (part of the backward cache keys).

    ``kinds[p]`` is SAVED, SHAPE or CONST for input ``p``; ``avals`` the ``(shape, dtype)`` of
    each SHAPE input, in input order; ``needs`` one flag per non-CONST input (its gradient is
    wanted); ``edge_pos`` the inputs that have a ``next_functions`` slot, in slot order.
    """
    kinds: tuple
    avals: tuple
    needs: tuple
    edge_pos: tuple

    def save_order(self, op) -> list:
        """The positions (RESULT for the output) of the node's ``saved`` tensors, in order."""
        kinds, n = self.kinds, len(self.kinds)
        return [p for p in op.save_order if p == RESULT or (p < n and kinds[p] == SAVED)]

    def const_index(self, p: int) -> int:
        """Where CONST input ``p`` sits in the node's ``consts``."""
        return sum(1 for k in self.kinds[:p] if k == CONST)

    def aval_index(self, p: int) -> int:
        """Where SHAPE input ``p`` sits in ``avals``."""
        return sum(1 for k in self.kinds[:p] if k == SHAPE)

    def grad_slots(self) -> tuple:
        """Per ``next_functions`` slot, which output of the backward is its gradient (-1: none)."""
        by_pos, k, r = {}, 0, 0
        for p, kind in enumerate(self.kinds):
            if kind != CONST:
                if self.needs[k]:
                    by_pos[p] = r
                    r += 1
                k += 1
        return tuple(by_pos.get(p, -1) for p in self.edge_pos)


class Op:
    """One op: a pure JAX function plus the metadata autograd needs (the module docstring lists
    the fields; ``defop`` documents the arguments). Built only in the op layer: ``defop`` for the
    table's rows, ``Op.backward_op`` and ``derived.py`` for ops derived from them, every
    argument passed by keyword."""

    __slots__ = ("name", "fn", "args", "grad_fn", "saves", "save_order", "save_pos", "saves_result", "n_out",
                 "n_diff", "vjp_result", "view", "_fwd", "_bwd", "doc", "save_if", "no_edge_pos", "derivative_of",
                 "no_derivative", "no_forward_ad", "shape_edges", "kept_edges", "vjp_rule", "__weakref__")

    def __init__(self, *, name, fn, args=("self",), grad_fn=None, saves=(), n_out=1, n_diff=None,
                 vjp_result=None, view=False, doc=None, save_if=None, no_edge=(), no_derivative=None,
                 no_forward_ad=None, shape_edges=None, vjp_rule=None):
        self.name, self.fn, self.args, self.grad_fn = name, fn, tuple(args), grad_fn
        self.vjp_rule = vjp_rule
        self.saves = tuple(saves)
        self.saves_result = "result" in self.saves
        # positions in ``args`` of the saved inputs, in torch's packing order; -1 is the result
        self.save_order = tuple(-1 if s == "result" else self.args.index(s) for s in self.saves)
        self.save_pos = frozenset(p for p in self.save_order if p >= 0)
        # n_out == -1: the number of outputs depends on static args (split, unbind);
        # n_diff None: every output is differentiable
        self.n_out, self.n_diff = n_out, n_diff
        self.vjp_result, self.view, self.doc = vjp_result, view, doc
        # torch saves some inputs only when another input needs a gradient (mul saves self
        # only if other requires grad): {saved position: position whose grad needs it}
        self.save_if = {self.args.index(k): self.args.index(v) for k, v in (save_if or {}).items()}
        # inputs that never get a next_functions slot: torch's Scalar arguments and
        # non-differentiable tensors (conditions, masks, indices); a Python scalar in any
        # other position gets the slot (None, 0), as torch's wrapped numbers do
        no_edge = set(no_edge) | _NEVER_EDGE
        self.no_edge_pos = frozenset(i for i, a in enumerate(self.args)
                                     if a in no_edge or a.startswith("indices"))
        # jitted forwards per static key, backward ops per (static, layout): NOTE [op jit caches]
        self._fwd: dict = {}
        self._bwd: dict = {}
        self.derivative_of = None    # the op whose backward this is (``backward_op``)
        # torch's ``not_implemented(...)`` derivatives: {input position: torch's label}; the
        # input keeps its edge, and a backward that reaches it raises (NOTE [not-implemented
        # derivatives] in autograd/_dispatch.py)
        self.no_derivative = {self.args.index(k): v for k, v in (no_derivative or {}).items()}
        # torch's name for an op with no forward-AD formula (a dual input raises), or None
        self.no_forward_ad = no_forward_ad
        # saved inputs torch's backward op takes without differentiating through their values:
        # {input position: "zeros" | "undefined"} (NOTE [shape edges] in autograd/_dispatch.py)
        self.shape_edges = {self.args.index(k): v for k, v in (shape_edges or {}).items()}
        # on a backward op: the same, by its own argument position (set by ``backward_op``)
        self.kept_edges: dict = {}
        _ALL_OPS.add(self)

    def __repr__(self):
        return f"<op {self.name}>"

    def _jit_caches(self) -> tuple:
        """This op's dicts of jitted functions and derived ops (NOTE [op jit caches])."""
        return (self._fwd, self._bwd)

    def forward(self, static: tuple):
        """The jitted forward for these static arguments; one stable function per key so
        JAX's C++ dispatch cache hits on every later call."""
        f = self._fwd.get(static)
        if f is None:
            wrong = static_kind_error(self, static)   # a new key only: nothing on the cached path
            if wrong is not None:
                fixed = index_dims(static)   # cumsum(x, tensor(0)): the int's program, not cached here
                if fixed is None or static_kind_error(self, fixed) is not None:
                    raise wrong
                return self.forward(fixed)
            # the program is built from int dims: a later call whose key equals this one
            # (x.unsqueeze(1) after x.unsqueeze(1.0)) reuses it, so it must not bake in a float
            static_fn = integral_dims(static)
            fn = partial(self.fn, **dict(static_fn)) if static_fn else self.fn
            f = self._fwd[static] = eager_jit(limited.guarded(self.name, self.view, fn, static_fn))
        return f

    def run(self, arrays, static: tuple):
        """The forward on ``arrays`` (jax.Arrays, Python scalars, None): the cached jitted
        function, or -- inside a JAX trace -- the pure function, which JAX traces through once
        (Python numbers stay numbers there: a cached concrete array must not leak into a
        trace). JAX's exceptions become torch's (NOTE [errors at the dispatch boundary])."""
        for a in arrays:
            if isinstance(a, jax.core.Tracer):
                arrays = [live(b) for b in arrays]     # NOTE [concrete primals]: escaped ones
                if any(isinstance(b, jax.core.Tracer) for b in arrays):
                    return self._inline(arrays, static)
                break
        prev = x64_enter()  # float64/int64 for tracegrad's own JAX calls only (_x64.py)
        try:
            return self.forward(static)(*map(as_arg, arrays))
        except Exception as e:
            if nested_options_error(e):     # concrete arrays inside someone's trace
                return self._inline(arrays, static)
            wide = uint64_scalars(arrays, static)   # x + 2**63: torch's uint64 scalar
            if wide is not None:
                return self.run(wide, static)
            raise op_error(self, arrays, static, e) from None
        finally:
            x64_exit(prev)

    def _inline(self, arrays, static: tuple):
        """The pure forward, for JAX's current trace to trace through."""
        limited.check_complex(self.name, arrays)
        out = self.fn(*arrays, **dict(static)) if static else self.fn(*arrays)
        limited.check(self.name, self.view, arrays, static, out)
        return out

    def backward_op(self, static, layout: SavedLayout, ns, nc):
        """The backward as an op of its own ``(*saved, *consts, *grads) -> grads``, so that
        ``create_graph=True`` records it like any forward op (any order of derivatives).

        ``layout`` says how the node keeps each forward input (NOTE [saved layout]);
        ``ns``/``nc`` count the saved tensors and constants.
        """
        key = (static, layout)
        b = self._bwd.get(key)
        if b is None:
            fixed = index_dims(static)       # a dim given as a 0-d tensor: the int's backward
            if fixed is not None:
                return self.backward_op(fixed, layout, ns, nc)
            fn = _make_backward(self, static, layout)
            n = sum(layout.needs)

            def flat(*a):
                out = fn(a[:ns], a[ns:ns + nc], a[ns + nc:])
                return tuple(out) if n > 1 else out[0]
            nargs = len(layout.kinds) + (1 if self.saves_result else 0) + max(self.n_out, 256)
            names = tuple(f"in{i}" for i in range(nargs + 2))
            name = BACKWARD_NAMES.get(self.grad_fn) or _backward_name(self.grad_fn)
            b = self._bwd[key] = Op(name=f"{self.name}_backward", fn=flat, args=names, grad_fn=name,
                                    saves=names, n_out=n)
            b.derivative_of = self
            b.kept_edges = {i: self.shape_edges[p] for i, p in enumerate(layout.save_order(self))
                            if p in self.shape_edges}
        return b


def _backward_name(grad_fn):
    """torch's name for the node of a backward it implements as one native function
    (``EluBackward0`` -> ``EluBackwardBackward0``); the table above holds the composite ones."""
    stem, digit = grad_fn.rstrip("0123456789"), grad_fn[len(grad_fn.rstrip("0123456789")):]
    return f"{stem}Backward{digit or 0}" if stem.endswith("Backward") else f"{grad_fn}Backward"


# NOTE [op jit caches]
# Each Op memoizes its jitted forward per static key (``_fwd``) and its backward op per
# (static, layout) (``_bwd``); a subclass may keep more (``_jit_caches()`` lists them). Ops
# live in the table and in other caches, so the registry cannot hold each dict by name: one
# ``_state`` entry reaches every live Op through a weak set (an Op dropped by the cache that held
# it leaves the set). ``clear()`` empties every Op's dicts (later calls jit again on demand),
# ``len`` counts their entries.
_ALL_OPS: "weakref.WeakSet[Op]" = weakref.WeakSet()


class _OpJitCaches:
    __slots__ = ()

    def clear(self) -> None:
        for op in list(_ALL_OPS):
            for d in op._jit_caches():
                d.clear()

    def __len__(self) -> int:
        return sum(len(d) for op in list(_ALL_OPS) for d in op._jit_caches())


_OP_JIT_CACHES = _state.register_cache("_ops.registry._OP_JIT_CACHES", _OpJitCaches())


# NOTE [scalar arguments]
# A Python number passed to a jitted function is converted to a device array on every call
# (3-4 us here, a third of a small op). Passing a cached weakly-typed 0-d array instead gives
# the same trace (weak types promote like Python numbers) without the conversion.
_PY_NUMBERS = (float, int, bool)
_SCALARS: dict = _state.register_cache("_ops.registry._SCALARS", {})


def as_arg(v):
    """``v`` as a jitted-call argument: Python numbers become cached weak 0-d arrays."""
    if type(v) not in _PY_NUMBERS:
        return v
    # -0.0 == 0.0 (one dict key), but 1 / -0.0 is -inf: a zero float is keyed by its sign too;
    # NaN != NaN (a new NaN object per call missed the cache and filled it)
    key = (type(v), v) if type(v) is not float or (v and v == v) else \
        (float, "nan") if v != v else (float, v, math.copysign(1.0, v))
    a = _SCALARS.get(key)
    if a is None:
        if len(_SCALARS) > 4096:   # many distinct values (a schedule, NaNs): start afresh
            _SCALARS.clear()
        with jax.ensure_compile_time_eval():     # concrete inside a trace too: the cache outlives it
            a = _SCALARS[key] = jnp.asarray(v)
    return a


def _conj_if_complex(x):
    # trace-time dtype test: real arrays pass through untouched (no op in the jitted backward)
    return jnp.conj(x) if x is not None and jnp.iscomplexobj(x) else x


def _torch_convention(bwd):
    """NOTE [complex gradients]: torch's gradient of a complex tensor is the conjugate of JAX's
    cotangent: ``torch_bwd(g) = conj(jax_vjp(conj(g)))``. The rule composes (conj twice is the
    identity), so applying it per op gives torch's convention for any chain. It runs inside the
    jitted backward, where ``iscomplexobj`` is decided while tracing: real backwards are the
    same program as without it."""
    def wrapped(saved, consts, grads):
        if any(g is not None and jnp.iscomplexobj(g) for g in grads):
            grads = tuple(_conj_if_complex(g) for g in grads)
            return tuple(_conj_if_complex(r) for r in bwd(saved, consts, grads))
        out = bwd(saved, consts, grads)
        if any(r is not None and jnp.iscomplexobj(r) for r in out):
            return tuple(_conj_if_complex(r) for r in out)
        return out
    return wrapped


def _make_backward(op, static, layout: SavedLayout):
    return _torch_convention(_make_backward_jax(op, static, layout))


def _make_backward_jax(op, static, layout: SavedLayout):
    fwd = partial(op.fn, **dict(static)) if static else op.fn
    kinds, avals, needs = layout.kinds, layout.avals, layout.needs
    tensor_pos = [i for i, k in enumerate(kinds) if k != CONST]
    diff_pos = [p for p, n in zip(tensor_pos, needs) if n]

    if op.vjp_result is not None:
        rule = partial(op.vjp_result, **dict(static)) if static else op.vjp_result

        ri = layout.save_order(op).index(RESULT)

        def bwd(saved, consts, grads):
            out = rule(saved[ri], *grads)
            return tuple(out) if isinstance(out, tuple) else (out,)
        return bwd

    n_diff, multi = op.n_diff, op.n_out != 1
    # the saved list holds, in torch's packing order, the saved inputs that were tensors
    save_order = layout.save_order(op)
    rule = op.vjp_rule(dict(static)) if op.vjp_rule is not None else None

    def bwd(saved, consts, grads):
        by_pos = dict(zip(save_order, saved))
        it_c, it_a = iter(consts), iter(avals)
        args = []
        for i, k in enumerate(kinds):
            if k == SAVED:
                args.append(by_pos[i])
            elif k == SHAPE:
                shape, dt = next(it_a)
                args.append(jnp.zeros(shape, dt))
            else:
                args.append(next(it_c))

        def f(*d):
            a = list(args)
            for p, v in zip(diff_pos, d):
                a[p] = v
            out = fwd(*a)
            return tuple(out[:n_diff]) if multi else out

        if rule is not None:
            out = rule(args, diff_pos, grads[0])    # None: not this input dtype (decided while tracing)
            if out is not None:
                return tuple(out)
        primals = [args[p] for p in diff_pos]
        out, vjp = jax.vjp(f, *primals)
        if multi:
            cts = tuple(jnp.zeros_like(o) if g is None else g.astype(o.dtype) for o, g in zip(out, grads))
        else:
            cts = grads[0].astype(out.dtype)
        return vjp(cts)
    return bwd


def defop(name, fn, *, args=("self",), grad_fn=None, saves=(), n_out=1, n_diff=None,
          vjp_result=None, view=False, doc=None, save_if=None, no_edge=(), no_derivative=None,
          no_forward_ad=None, shape_edges=None, vjp_rule=None) -> Op:
    """Declare an op in the table and return it. ``grad_fn=None`` means not differentiable;
    ``save_if={"self": "other"}`` saves ``self`` only when ``other`` requires grad;
    ``no_edge`` names torch's Scalar arguments (no next_functions slot); ``no_derivative``
    maps an input to torch's label for its ``not_implemented`` derivative; ``no_forward_ad``
    is torch's op name when it has no forward-AD formula; ``shape_edges`` maps a saved input
    that torch's backward op takes but whose values no gradient reads to what differentiating
    that backward gives it ("zeros" or "undefined": NOTE [shape edges]); ``vjp_rule`` replaces
    ``jax.vjp`` where torch's backward kernel rounds otherwise (the module docstring)."""
    if name in OPS:
        raise ValueError(f"op {name!r} declared twice")
    op = OPS[name] = Op(name=name, fn=fn, args=args, grad_fn=grad_fn, saves=saves, n_out=n_out, n_diff=n_diff,
                        vjp_result=vjp_result, view=view, doc=doc, save_if=save_if, no_edge=no_edge,
                        no_derivative=no_derivative, no_forward_ad=no_forward_ad, shape_edges=shape_edges,
                        vjp_rule=vjp_rule)
    return op
