"""Custom autograd Functions: mirrors ``torch.autograd.Function`` and ``torch.autograd.function``.

``MyFn.apply(*args)`` runs ``forward`` with grad recording off, then records one node whose
class is ``MyFnBackward`` (the ctx *is* the node, as in torch) with edges to the tensor
arguments. At backward the engine calls ``node.apply(grads)``, which runs the user's
``backward(ctx, *grads)`` and checks what it returns.

This module depends only on the graph (``_graph_impl``: ``Node``, ``SavedTensor``, ``edge``);
the region lowering maps the same classes onto ``jax.custom_vjp`` (DESIGN 2.4).
"""
from __future__ import annotations

import functools
import inspect
import weakref


from .._ops import dtypes as _dt
from .._tensor import factories as _factories
from .. import _state
from .._tensor.tensor import Tensor
from . import _dispatch, grad_mode
from ._graph_impl import MSG_FREED, AccumulateGrad, Node, SavedTensor, _SavedNone, edge
from .._ops.errors import broadcast_shapes as _broadcast_shapes
from .._ops.warn import warn as _warn


def _check_saved(tensors):
    """torch checks what ``save_for_backward`` got only when the call records a node: a Python
    number saved by a call no input of which requires grad is ignored."""
    for i, t in enumerate(tensors):
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                            f"{type(t).__name__}")


class FunctionCtx:
    """The ctx API (mirrors ``torch.autograd.function.FunctionCtx``)."""

    # made for one call: what forward stores on it is part of that call's graph (inside a
    # compiled function, of the trace), not outside Python state (_lowering/pystate.py)
    _tracegrad_state_is_captured = True

    def save_for_backward(self, *tensors):
        """Save tensors (or None) for ``backward``; call at most once, from forward/setup_context.
        Version-checked: modifying one in place later makes ``saved_tensors`` raise."""
        self.to_save = tensors     # checked when the call records a node (_check_saved), as torch

    def save_for_forward(self, *tensors):
        """Save tensors (or None) for ``jvp`` (forward-mode AD), where ``ctx.saved_tensors``
        returns them; call at most once, from forward/setup_context. AssertionError, as torch's
        assert, for an argument that is no tensor."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise AssertionError("save_for_forward expects all arguments to be tensors; you should "
                                f"save non-tensors as attributes on ctx, got {type(t).__name__}")
        self.saved_for_forward = tensors

    def mark_dirty(self, *args):
        """Declare inputs modified in place by forward (they must be returned as outputs).
        RuntimeError at apply for a leaf that requires grad, a view of one, one of the views
        split/unbind/chunk returned, a view when the Function returns several tensors, or a view
        that is not an input; UserWarning for another tensor that is not an input. RuntimeError,
        as torch, for an argument that is not a Tensor (None included)."""
        for i, a in enumerate(args):
            # (unchecked, a non-tensor was reported at apply as a dirty tensor "not returned")
            if not isinstance(a, Tensor):
                raise RuntimeError(f"mark_dirty can only accept variables, but argument {i} is of type "
                                   f"{type(a).__name__}; pass the input tensors forward modified in place")
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args):
        """Declare outputs that are not differentiable (integer indices, masks...). RuntimeError,
        as torch, for an argument that is not a Tensor."""
        for a in args:
            if not isinstance(a, Tensor):
                raise RuntimeError(f"mark_non_differentiable only accepts variable arguments, but got "
                                   f"{type(a).__name__}; pass the output tensors themselves")
        self.non_differentiable = args

    def set_materialize_grads(self, value: bool):
        """Whether undefined output gradients reach backward as zeros (default True) or None.
        TypeError for a value that is not a bool, as torch."""
        if type(value) is not bool:
            raise TypeError(f"set_materialize_grads received an invalid combination of arguments - got "
                            f"({type(value).__name__}), but expected (bool)")
        self.materialize_grads = value


# Function classes whose backward ran with create_graph=True (a gradient penalty, a Hessian-vector
# product through it): a compiled forward differentiated outside cannot differentiate a custom
# Function's backward again (its VJP is one program), so such a Function stays a graph break
# there from then on (_lowering/custom_function.py) and keeps running eagerly, as it did here.
DOUBLE_DIFFERENTIATED = weakref.WeakSet()


class BackwardCFunction(Node, FunctionCtx):
    """Node of one ``Function.apply`` call; subclassed per Function as ``<Name>Backward``."""

    _forward_cls = None

    def __init__(self):
        Node.__init__(self, ())
        self.to_save = ()
        self._saved = None
        self.dirty_tensors = ()
        self.non_differentiable = ()
        self.materialize_grads = True
        self._materialize_non_diff_grads = True
        self.needs_input_grad = ()
        self._released = False
        self._out_meta = ()
        self._in_meta = ()

    def _output_avals(self):
        # torch leaves the metadata of an output that takes no gradient (marked
        # non-differentiable, of an integer dtype, not a tensor) undefined: shape [], float32
        return tuple((shape, dtype) if not nondiff and (dtype.is_floating_point or dtype.is_complex)
                     else ((), _dt.float32) for shape, dtype, nondiff in self._out_meta)

    @property
    def saved_tensors(self):
        """The tensors given to ``save_for_backward`` (RuntimeError if one was modified in place
        since, or after the graph was freed)."""
        if self.__dict__.get("_in_jvp"):     # inside jvp: what save_for_forward kept
            return tuple(getattr(self, "saved_for_forward", ()))
        if self._released:
            raise RuntimeError(MSG_FREED)
        if self._saved is None:
            return tuple(self.to_save)
        once = getattr(getattr(self, "_forward_cls", None), "clear_saved_tensors_on_access", False)
        if once and self.__dict__.get("_saved_taken"):
            raise RuntimeError("saved_tensors can only be accessed once when clear_saved_tensors_on_access is "
                               "set to True")
        out = tuple(None if s is None else s.get(self, i) for i, s in enumerate(self._saved))
        if once:    # torch's clear_saved_tensors_on_access: the node lets go of them on first access
            self._saved_taken = True
            self._saved = [None] * len(self._saved)
        return out

    @property
    def _raw_saved_tensors(self):
        """Mirrors torch's ``grad_fn._raw_saved_tensors`` of a custom Function: one SavedTensor
        per tensor given to ``save_for_backward`` (a ``None`` one refuses hooks); RuntimeError
        once the backward freed them."""
        if self._released:
            raise RuntimeError(MSG_FREED)
        if self._saved is None:
            return ()
        return tuple(_SavedNone() if s is None else s for s in self._saved)

    @property
    def saved_variables(self):
        """Deprecated alias of ``saved_tensors`` (DeprecationWarning, as torch)."""
        _warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning)
        return self.saved_tensors

    def apply(self, grads, create_graph=False):
        if self._released and self._saved:
            raise RuntimeError(MSG_FREED)
        if create_graph and self._forward_cls is not None:
            DOUBLE_DIFFERENTIATED.add(self._forward_cls)
        gs = []
        for g, (shape, dtype, nondiff) in zip(list(grads) + [None] * (len(self._out_meta) - len(grads)), self._out_meta):
            # torch leaves a non-differentiable output's missing grad as None when the Function
            # set ctx._materialize_non_diff_grads = False (its default metadata is not materialized)
            keep_none = nondiff and not self._materialize_non_diff_grads
            if g is None and self.materialize_grads and shape is not None and not keep_none:
                g = _factories.zeros(shape, dtype=dtype)
            gs.append(g)
        cls = self._forward_cls
        # `vjp` and `backward` are aliases: a Function may define either, not both (as torch)
        if cls.backward is not Function.backward and cls.vjp is not Function.vjp:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. "
                               "You should only implement one of them.")
        bwd = cls.backward if cls.backward is not Function.backward else cls.vjp
        res = bwd(self, *gs)
        if not isinstance(res, tuple):
            res = (res,)
        n_in = len(self._in_meta)
        if len(res) != n_in:
            if len(res) > n_in and all(r is None for r in res[n_in:]):
                res = res[:n_in]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients (expected {n_in}, got {len(res)})")
        out = []
        k = -1   # the tensor argument's position among next_functions
        for i, (r, meta) in enumerate(zip(res, self._in_meta)):
            k += meta is not None
            if meta is None:  # a non-tensor argument
                if r is not None and isinstance(r, Tensor):
                    raise RuntimeError(f"function {self.name()} returned a gradient different than None at position {i + 1}, but the corresponding forward input was not a Variable")
                continue
            shape, dtype, needs = meta
            if r is None or not needs:
                out.append(None)
                continue
            if not isinstance(r, Tensor):   # torch: RuntimeError from validate_outputs
                raise RuntimeError(f"function {self.name()} returned a {type(r).__name__} as gradient {i}: "
                                   f"expected Variable or None (got {type(r).__name__})")
            if tuple(r.shape) != tuple(shape):
                r = _sum_to(r, shape, self.name(), i)
            if r.dtype.is_complex and not dtype.is_complex:
                # torch's validate_outputs: a complex gradient for a real input is an error (it is
                # not cast: that would drop the imaginary part silently)
                raise RuntimeError(f"function {self.name()} returned a complex gradient ({r.dtype}) at index {i} for "
                                   f"a real input of dtype {dtype}; return a real gradient (e.g. .real)")
            nxt = self.next_functions[k][0] if k < len(self.next_functions) else None
            if type(nxt) is AccumulateGrad and "_gdt" in nxt.variable.__dict__:
                pass    # a leaf whose grad_dtype was set: the engine casts to that, or keeps it (None)
            elif r.dtype is not dtype:
                r = r.to(dtype)
            out.append(r)
        return out

    def num_outputs(self) -> int:
        return max(len(self._out_meta), 1)

    def release(self):
        self._released = True
        self._saved = ()
        self.to_save = ()   # the tensors themselves: freed after backward, as torch frees them


def _sum_to(g, shape, name, i):
    try:
        if _broadcast_shapes(tuple(g.shape), tuple(shape)) != tuple(g.shape):
            raise ValueError
    except ValueError:
        raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} - got {list(g.shape)} "
                           f"but expected shape compatible with {list(shape)}") from None
    lead = g.ndim - len(shape)
    if lead:
        g = g.sum(tuple(range(lead)))
    dims = tuple(d for d, s in enumerate(shape) if s == 1 and g.shape[d] != 1)
    if dims:
        g = g.sum(dims, keepdim=True)
    return g


_backward_classes: dict = {}


def _backward_cls(fn_cls):
    c = _backward_classes.get(fn_cls)
    if c is None:
        c = _backward_classes[fn_cls] = type(fn_cls.__name__ + "Backward", (BackwardCFunction,),
                                             {"_forward_cls": fn_cls})
    return c


class _FunctionMeta(type):
    @property
    def _backward_cls(cls):
        """The node class of this Function (``<Name>Backward``), as torch's ``Function._backward_cls``."""
        return _backward_cls(cls)


class Function(FunctionCtx, metaclass=_FunctionMeta):
    """Mirrors ``torch.autograd.Function``: subclass with static ``forward`` and ``backward``
    and call ``apply``. A ``FunctionCtx`` subclass, as torch's.

    ``forward(ctx, *args, **kwargs)`` (or ``forward(*args)`` plus
    ``setup_context(ctx, inputs, output)``) runs with grad recording off;
    ``backward(ctx, *grad_outputs)`` (or ``vjp``, not both) returns one gradient (or None) per
    forward input; a gradient of another dtype is cast, one the input's shape broadcasts to is
    summed to it. An input returned as-is comes back as a new alias; a tensor returned twice is
    one object. RuntimeError when backward returns the wrong number of gradients, a non-tensor
    gradient, a gradient for a non-tensor input, one of an incompatible shape or a complex one for
    a real input, and when a view
    (or an as-is input) the Function returned is later modified in place.
    """

    # a user's Function class is outside state a compiled function reads (class attributes it
    # sets, a counter), unlike the per-call ctx objects FunctionCtx stands for
    _tracegrad_state_is_captured = False

    def __init__(self, *args, **kwargs):
        _warn(f"{type(self)} should not be instantiated. Methods on autograd "
              "functions are all static, so you should invoke them on the class itself.",
              DeprecationWarning)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please "
                           "use new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with forward mode AD.")

    # torch's defaults for functorch: no generated vmap rule, and a vmap staticmethod that
    # refuses (tracegrad's transforms trace through forward/backward instead of calling it)
    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("To use autograd.Function with vmap, you must either override the vmap "
                                  "staticmethod or set generate_vmap_rule=True.")

    @classmethod
    def apply(cls, *args, **kwargs):
        new_style = cls.setup_context is not Function.setup_context
        # under vmap (which opens no FUNC_LEVELS entry) torch's functorch rules hold for a user's
        # Function too: setup_context, and a vmap staticmethod or generate_vmap_rule=True.
        # tracegrad's own Functions trace through vmap as they are.
        in_vmap = bool(_state.VMAP_SAME) and not cls.__module__.startswith("tracegrad.")
        if in_vmap and new_style and cls.generate_vmap_rule and cls.vmap is not Function.vmap:
            raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it has both generate_vmap_rule=True and an "
                               "overridden vmap staticmethod. Please set generate_vmap_rule=False or delete the "
                               "overridden vmap staticmethod to avoid ambiguity.")
        if in_vmap and new_style and not cls.generate_vmap_rule and cls.vmap is Function.vmap:
            raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please "
                               "override and implement the vmap staticmethod or set generate_vmap_rule=True.")
        if not new_style and (_state.FUNC_LEVELS or in_vmap):
            raise RuntimeError(
                f"In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, jacrev, ...), "
                f"it must override the setup_context staticmethod; {cls.__name__} defines forward(ctx, ...) instead. "
                "Move the ctx work of forward into setup_context(ctx, inputs, output).")
        # inside a tracegrad.func level: that level's rule is the Function's backward/jvp
        rule = _state.FUNC_FUNCTION[0] if new_style else None
        if new_style:   # as torch: setup_context sees forward's defaults among the inputs
            given = set(kwargs)
            args, kwargs = _bind_defaults(cls.forward, args, kwargs)
            if in_vmap and cls.generate_vmap_rule:
                # torch's generated vmap rule calls forward without its keyword-only arguments:
                # their defaults hold; one given is refused below (torch would drop it silently)
                kwargs = {k: v for k, v in kwargs.items() if k in given}
            # at a vmap level that is the innermost transform: the Function's own vmap
            # staticmethod, as torch.func (without one, generate_vmap_rule traces forward); it
            # gets forward's keyword-only arguments by keyword, as torch's
            if rule is not None and in_vmap and not cls.generate_vmap_rule and cls.vmap is not Function.vmap \
                    and (not _state.FUNC_LEVELS or rule.vmap_innermost()):
                return rule.vmap_apply(cls, args, kwargs)
        # as torch's (C++) apply: keywords become positional arguments (a tensor given by keyword
        # is an input of the graph); one forward cannot take positionally is a TypeError
        args, kwargs = _keywords_to_positions(cls, args, kwargs, 0 if new_style else 1)
        if new_style:
            if rule is not None and _state.FUNC_LEVELS and rule.handles(cls, args):
                return rule.apply(cls, args)
        ctx = _backward_cls(cls)()
        needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        ctx.needs_input_grad = needs
        record = grad_mode.STATE[0] and any(needs)
        # inside a trace JAX differentiates, the capture gives the call its own rule (the
        # Function's backward as the region's VJP: _lowering/custom_function.py), or breaks
        runner = _state.CAPTURE[0].see_function(cls) if record and _state.CAPTURE[0] is not None else None
        fw = _state.FORWARD_AD[0]
        # forward-mode AD: the input tangents (None: no input is dual); forward sees plain tensors
        fw_in = fw.function_tangents(cls, args) if fw is not None else None
        if fw_in is not None:
            _state.set_forward_ad(None)
        prev = grad_mode.STATE[0]
        # inside a tracegrad.func transform the forward stays differentiable by that transform
        # (its no_grad would make the result a constant of it: NOTE [grad mode inside transforms])
        grad_mode.STATE[0] = prev if _state.FUNC_LEVELS else False
        try:
            if runner is not None:
                output = runner(cls, ctx, args, kwargs, _run_forward)
            else:
                output = _run_forward(cls, ctx, args, kwargs)
        finally:
            grad_mode.STATE[0] = prev
            if fw_in is not None:
                _state.set_forward_ad(fw)
        is_tuple = isinstance(output, tuple)
        outs = output if is_tuple else (output,)
        dirty = {id(t) for t in ctx.dirty_tensors}
        nondiff = {id(t) for t in ctx.non_differentiable}
        for t in ctx.dirty_tensors:   # as torch's _mark_dirty: one more version for each marked tensor
            if isinstance(t, Tensor):
                t._vc[0] += 1
        inputs_by_id = {id(a): a for a in args if isinstance(a, Tensor)}
        if new_style:
            # as torch: with setup_context the output an input returned as-is becomes is made only
            # after setup_context ran, so saving that tensor (as input or as output, for backward
            # or forward) could not tell which one was meant; torch refuses it, recorded or not
            same = {id(o) for o in outs if id(o) in inputs_by_id and id(o) not in dirty}
            saved = tuple(getattr(ctx, "to_save", ())) + tuple(getattr(ctx, "saved_for_forward", ()) or ())
            if same and any(id(t) in same for t in saved if t is not None):
                raise RuntimeError(
                    "An input that has been returned as-is as output is being saved for backward. This is not "
                    "supported if you override setup_context. You should return and save a view of the input "
                    f"instead, e.g. with x.view_as(x) or setup ctx inside the forward function itself ({cls.__name__}).")
        if record:
            ctx.next_functions = tuple(edge(a) if (isinstance(a, Tensor) and a.requires_grad) else (None, 0)
                                       for a in args if isinstance(a, Tensor))
        ctx._in_meta = tuple((tuple(a.shape), a.dtype, n) if isinstance(a, Tensor) else None
                             for a, n in zip(args, needs))
        result, meta = [], []
        made = {}    # id of a new or dirty output -> its result: a duplicate is the same object, as torch
        for i, o in enumerate(outs):
            if not isinstance(o, Tensor):
                result.append(o)
                meta.append((None, None, True))
                continue
            if id(o) in made:
                # the same tensor returned again: one object, whose edge is its last position
                res = made[id(o)]
                if res._gf is ctx:
                    res._out_nr = i
                if "_cfn" in res.__dict__:
                    res._cfn = (i, cls.__name__)
            elif id(o) in dirty and id(o) in nondiff:
                # dirty and non-differentiable: torch keeps the input's history and returns a
                # detached alias of it (the input itself when it does not require grad)
                res = o.detach() if record and o.requires_grad else o
                made[id(o)] = res
            elif id(o) in dirty:
                if record:
                    if o._gf is None and o._rg:
                        raise RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                                           "operation (mark_dirty). Clone it before passing it in.")
                    b = o._base
                    if id(o) not in inputs_by_id:
                        # torch: a view (of an intermediate) cannot be rebased, so that is an
                        # error; any other tensor that is no input only warns
                        if b is not None:
                            raise RuntimeError(MSG_DIRTY_NOT_INPUT)
                        _warn(MSG_DIRTY_NOT_INPUT)
                    if b is not None and b._rg:
                        # torch's handle_view_on_rebase comes before its view-of-a-leaf check
                        _dispatch.check_custom_function_view(o)
                        _dispatch.check_multi_output_view(o)
                    if b is not None and b._gf is None and b._rg:
                        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation (mark_dirty). Clone the leaf before taking the view.")
                    if b is not None and len(outs) > 1:   # the view rebase needs a single-output node
                        raise RuntimeError(MSG_DIRTY_VIEW_MULTI_OUTPUT)
                    base_edge = edge(b) if b is not None and b.requires_grad else (None, 0)
                    o._gf, o._out_nr, o._rg, o._gf_ver = ctx, i, True, o._vc[0]
                    if b is not None:
                        _rebase_custom_view(ctx, o, b, base_edge, args)
                made[id(o)] = res = o
            elif id(o) in inputs_by_id:
                # an input returned unchanged: the output is a new alias of it
                res = o.detach()
                if record and id(o) not in nondiff:
                    _custom_view(res, o, ctx, i, cls)
            else:
                res = o
                if record and id(o) not in nondiff and (o.dtype.is_floating_point or o.dtype.is_complex):
                    if o._base is not None:
                        res = _custom_view(o.detach(), o, ctx, i, cls)
                    else:
                        if o._gf is not None:
                            res = o.detach()
                        res._gf, res._out_nr, res._rg = ctx, i, True
                elif o._base is not None and id(o) not in nondiff:
                    res._cfn = (i, cls.__name__)
                made[id(o)] = res
            meta.append((tuple(o.shape), o.dtype, id(o) in nondiff))
            result.append(res)
        # torch checks this whether or not the call is recorded (no_grad, inputs that need no
        # grad): an in-place write the caller cannot see is a bug either way
        if dirty and not set(dirty) <= {id(o) for o in outs if isinstance(o, Tensor)}:
            raise RuntimeError("Some elements marked as dirty during the forward method were not returned as output. "
                               "The inputs that are modified inplace must all be outputs of the Function "
                               f"({cls.__name__}: return each tensor passed to ctx.mark_dirty)")
        ctx._out_meta = tuple(meta)
        if record:
            # save after outputs exist: a saved output is checked against its own version. An
            # input returned unchanged stays an input (its output is a new alias), unless dirty
            out_ids = {id(o) for o in outs if id(o) not in inputs_by_id or id(o) in dirty}
            pos = {id(o): k for k, o in enumerate(outs)}
            _check_saved(ctx.to_save)
            try:
                ctx._saved = tuple(None if t is None else SavedTensor(result[pos[id(t)]] if id(t) in out_ids else t,
                                                                      id(t) in out_ids)
                                   for t in ctx.to_save)
            finally:
                # the SavedTensors hold them now; an output kept here would be a cycle -- also when
                # a pack hook raised (checkpoint's early stop): torch frees that abandoned node at once
                ctx.to_save = ()
            # nor does the node keep what mark_dirty/mark_non_differentiable named: a dirty input
            # is an output whose grad_fn is this node (torch's ctx lets go of them too)
            ctx.dirty_tensors = ctx.non_differentiable = ()
        if fw_in is not None:
            fw.function_outputs(cls, ctx, fw_in, result, nondiff={id(r) for r, o in zip(result, outs) if id(o) in nondiff},
                                args=args, outs=outs, dirty=dirty)
        return tuple(result) if is_tuple else result[0]


def _run_forward(cls, ctx, args, kwargs):
    """``cls``'s forward on ``args`` with ``ctx`` (``forward(*args)`` then ``setup_context``
    when the Function defines it)."""
    if cls.setup_context is not Function.setup_context:
        output = cls.forward(*args, **kwargs)
        cls.setup_context(ctx, args, output)
        return output
    return cls.forward(ctx, *args, **kwargs)


class CopySlices(Node):
    """torch's ``CopySlices`` around a custom Function that wrote a view of ``base`` in place
    (``ctx.mark_dirty`` of a view input): the base's new history. Backward: the incoming base
    gradient with the view's positions given to the Function's backward (which sees the view's
    gradient) and replaced by what it returns for the view input; its other inputs get the
    rest. ``next_functions``: the base's old edge, then the Function's other inputs' edges."""

    __slots__ = ("_fn", "_pos", "_layout")

    def __init__(self, fn, pos, layout, base_edge):
        super().__init__((base_edge,) + tuple(e for j, e in enumerate(fn.next_functions) if j != pos))
        self._fn, self._pos, self._layout = fn, pos, layout

    def apply(self, grads, create_graph=False):
        g = grads[0]
        if g is None:
            return [None] * len(self.next_functions)
        result = g.clone()
        part = result.as_strided(*self._layout)
        res = self._fn.apply([part.clone()], create_graph)
        mine = res[self._pos]
        if mine is None:
            part.zero_()
        else:
            part.copy_(mine)
        return [result] + [r for j, r in enumerate(res) if j != self._pos]

    def release(self):
        self._fn.release()


def _rebase_custom_view(ctx, view, base, base_edge, args):
    """A custom Function marked ``view`` (a view of ``base``) dirty: as torch, ``base``'s history
    becomes a ``CopySlices`` of the Function's node and ``view``'s grad_fn is regenerated from it.
    Done for a base laid out row-major over its own storage (the view's strides and offset then
    locate it in the base's gradient); other bases keep the Function's node on the view only."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    pos = next((j for j, a in enumerate(tensors) if a is view), None)
    if pos is None or base._chain or not base.is_contiguous() or not base_edge[0]:
        return
    layout = (tuple(view.shape), tuple(view.stride()), view.storage_offset())
    base._gf, base._out_nr, base._rg = CopySlices(ctx, pos, layout, base_edge), 0, True
    view._gf_ver = -1     # regenerated from the base's new history on next access


def _custom_view(res, o, ctx, i, cls):
    """Make ``res`` (a detached alias of forward's output ``o``, a view of an input or an input
    itself) output ``i`` of ``ctx``: still a view of ``o``'s base for autograd, as torch's
    IN_CUSTOM_FUNCTION creation meta. Writing it in place (``_dispatch.check_inplace``), or
    reading its grad_fn after its base changed (``_dispatch.view_grad_fn``), raises: the view
    rebase would bypass this Function's backward."""
    res._base = o._base if o._base is not None else o
    res._gf, res._out_nr, res._rg, res._gf_ver = ctx, i, True, res._vc[0]
    res._chain = o._chain
    res._cfn = (i, cls.__name__)
    return res


MSG_DIRTY_NOT_INPUT = ("ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that "
                       "have been mutated should be passed to ctx.mark_dirty().")

MSG_DIRTY_VIEW_MULTI_OUTPUT = (
    "If your Function modifies inplace an input that is a view of another Tensor, your Function cannot "
    "return more than one Tensor. Make sure the input is not a view (clone() it first) or make the "
    "Function return a single Tensor (split it into two Functions).")


_SIGNATURES: dict = _state.register_cache("autograd.function._SIGNATURES", {})


def _bind_defaults(forward, args, kwargs):
    """``forward``'s arguments with its defaults filled in, as torch's ``bind_default_args``: the
    positional tuple and the keyword-only (or ``**kwargs``) ones; TypeError for arguments forward
    does not take, as a call would."""
    # the signature is cached with what it was read from: a default or ``__signature__`` set on
    # forward (or on the function it wraps or a partial's) after a call is read again, as
    # torch's inspect.signature on every call (test_vmap_custom_rule_tracks_wrapped_and_partial_defaults)
    deps = _signature_sources(forward)
    hit = _SIGNATURES.get(forward)
    if hit is None or len(hit[1]) != len(deps) or any(a is not b for a, b in zip(hit[1], deps)):
        hit = _SIGNATURES[forward] = (inspect.signature(forward), deps)
    bound = hit[0].bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args, bound.kwargs


def _signature_sources(f):
    """What ``inspect.signature(f)`` reads that a user may rebind: the defaults and any
    ``__signature__`` of ``f`` and of the functions it wraps (``__wrapped__``, a partial's
    ``func``)."""
    out = []
    for _ in range(8):          # a wrapper chain this deep is not worth following further
        if f is None:
            break
        d = getattr(f, "__dict__", None) or {}
        out += (getattr(f, "__defaults__", None), getattr(f, "__kwdefaults__", None), d.get("__signature__"))
        f = d.get("__wrapped__", getattr(f, "func", None) if isinstance(f, functools.partial) else None)
    return tuple(out)


def _keywords_to_positions(cls, args, kwargs, skip):
    """``args`` with ``kwargs`` put at the positions of ``cls.forward``'s parameters of those names,
    as torch's C++ ``Function.apply``: the names are read from ``forward.__code__`` (not its
    ``__signature__``) after its first ``skip`` parameters (ctx); a keyword that names no
    positional parameter, one also given positionally, or a parameter left out before a later
    keyword's raises TypeError (no default fills the gap). A forward without ``__code__`` (a
    ``functools.partial``) is given the keywords as they are."""
    code = getattr(cls.forward, "__code__", None)
    if not kwargs or code is None:
        return args, kwargs
    names = code.co_varnames[skip:code.co_argcount]
    who = f"{cls.__name__}.apply: forward()"
    placed = {}
    for k, v in kwargs.items():
        if k not in names:
            raise TypeError(f"{who} got an unexpected keyword argument '{k}' (apply passes a keyword "
                            "only to one of forward's positional parameters)")
        i = names.index(k)
        if i < len(args):
            raise TypeError(f"{who} got multiple values for argument '{k}'")
        placed[i] = v
    out = list(args)
    for i in range(len(args), max(placed) + 1):
        if i not in placed:
            raise TypeError(f"{who} missing required argument: '{names[i]}' (position {i}): give every "
                            "argument before the last keyword one")
        out.append(placed[i])
    return tuple(out), {}


class InplaceFunction(Function):
    def __init__(self, inplace=False):
        self.inplace = inplace


class NestedIOFunction(Function):
    pass


def once_differentiable(fn):
    """Mirrors ``torch.autograd.function.once_differentiable``: the decorated ``backward`` runs
    without recording; differentiating its result again raises RuntimeError."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with grad_mode.no_grad():
            outputs = fn(ctx, *args)
        if not grad_mode.is_grad_enabled():
            return outputs
        requires = any(isinstance(a, Tensor) and a.requires_grad for a in args)
        if not requires:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        # as torch: one Error node over detached aliases (that require grad) of all the outputs,
        # with an edge per output (None for a None gradient), so double backward reaches it
        fakes = tuple(o.detach()._set_requires_grad(True)
                      if isinstance(o, Tensor) and (o.dtype.is_floating_point or o.dtype.is_complex) else o
                      for o in outs)
        wrapped = _ErrorOnBackward.apply("trying to differentiate twice a function that was marked with "
                                         "@once_differentiable", *fakes)
        node = next((w.grad_fn for w in wrapped if isinstance(w, Tensor) and w.grad_fn is not None), None)
        if node is not None:
            node.next_functions = tuple(edge(f) if isinstance(f, Tensor) and f.requires_grad else (None, 0)
                                        for f in fakes)
        return wrapped[0] if single else wrapped
    return wrapper


_NO_DERIVATIVE = {}


def _no_derivative(value, input, op, node, error=None):
    """``value`` (a tensor computed from ``input`` outside autograd) as torch's output of an op
    that has no derivative formula: when grad mode is on and ``input`` (a tensor, or a tuple of
    them: one edge each, as torch's node) requires grad it requires grad too, with a ``node``
    grad_fn (torch's name, e.g. ``Unique2Backward0``) whose backward raises torch's
    NotImplementedError ("the derivative for '<op>' is not implemented."), or ``error`` (an
    exception class and its message) where torch's backward kernel refuses."""
    inputs = input if isinstance(input, tuple) else (input,)
    if not (grad_mode.is_grad_enabled()
            and any(isinstance(t, Tensor) and t.requires_grad for t in inputs)):
        return value
    cls = _NO_DERIVATIVE.get(node)
    if cls is None:
        def forward(ctx, box, err, *xs):
            ctx.err = err
            return box[0].clone()     # boxed: the value is no input of the node (no edge)

        def backward(ctx, g):
            kind, message = ctx.err or (NotImplementedError, f"the derivative for '{op}' is not implemented.")
            raise kind(message)

        cls = _NO_DERIVATIVE[node] = type(node, (Function,), {"forward": staticmethod(forward),
                                                             "backward": staticmethod(backward)})
        _backward_cls(cls).__name__ = node
    return cls.apply([value], error, *inputs)


class _ErrorOnBackward(Function):
    """``torch._C._functions.DelayedError(msg, n)(*tensors)``: aliases of ``tensors`` whose
    grad_fn (torch's ``Error`` node) raises RuntimeError(msg) when the backward reaches it; also
    the node ``once_differentiable`` puts after a backward."""

    @staticmethod
    def forward(ctx, msg, *xs):
        ctx.msg = msg
        return xs

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(ctx.msg)


_backward_cls(_ErrorOnBackward).__name__ = "Error"


class _UndefinedGradFn(Function):
    """``torch._C._functions.UndefinedGrad()(*tensors)``: clones of ``tensors`` whose grad_fn
    (``UndefinedGradBackward``) passes an undefined (None) gradient on to every input."""

    @staticmethod
    def forward(ctx, *xs):
        return tuple(x.clone() if isinstance(x, Tensor) else x for x in xs)

    @staticmethod
    def backward(ctx, *grads):
        return (None,) * len(grads)


_backward_cls(_UndefinedGradFn).__name__ = "UndefinedGradBackward"


class DelayedError(Node):
    """Mirrors ``torch._C._functions.DelayedError(msg, num_inputs)``: called on tensors, returns
    aliases (one tensor for one input) whose backward raises ``RuntimeError(msg)``; torch's tests
    use it to check that the engine runs no node it does not need."""

    def __init__(self, msg, num_inputs=1):
        super().__init__()
        self.msg, self.num_inputs = str(msg), int(num_inputs)

    def __call__(self, *tensors):
        if len(tensors) != self.num_inputs:
            raise TypeError(f"DelayedError: expected {self.num_inputs} arguments, got {len(tensors)} instead")
        out = _ErrorOnBackward.apply(self.msg, *tensors)
        return out[0] if len(out) == 1 else out


class UndefinedGrad(Node):
    """Mirrors ``torch._C._functions.UndefinedGrad()``: called on tensors, returns clones (one
    tensor for one input) whose backward sends undefined gradients on (a custom Function
    before it sees zeros, or None with ``ctx.set_materialize_grads(False)``)."""

    def __call__(self, *tensors):
        out = _UndefinedGradFn.apply(*tensors)
        return out[0] if len(out) == 1 else out
