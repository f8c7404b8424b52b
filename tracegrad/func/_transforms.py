"""``torch.func``'s differentiation transforms on JAX's: ``grad``, ``grad_and_value``, ``vjp``,
``jvp``, ``jacrev``, ``jacfwd``, ``hessian`` (``vmap`` is in ``_vmap.py``).

Each transform turns the user's function over Tensors into a pure JAX function (``_wrap.pure``),
applies ``jax.grad``/``jax.vjp``/``jax.jvp``/``jax.jacrev``/``jax.jacfwd`` and wraps the results
back into Tensors. Transforms nest (``vmap(grad(f))``, ``jacrev(jacrev(f))``) because an inner
transform called on tracer-holding Tensors just adds a JAX transform level.

Autograd: called eagerly on Tensors that require grad, or on a function that reads outside
Tensors requiring grad (closes over them: ``_closure``), a transform's results are recorded as
one ``FuncTransformBackward`` node over those Tensors (``_wrap.differentiable``), so
``backward()`` reaches them as through torch's transforms (MAML's outer loop); when the
transformed function is an nn.Module (``vmap(jacrev(model))``), its parameters are inputs of
that node too. Differs from torch: that node's gradient is not differentiable again (nest
``tracegrad.func`` transforms for higher orders), and an input the results do not depend on
gets a zero gradient where torch's stays None.

Speed: each call traces the function again (eager, like torch.func): ~70-90 ms for per-sample
gradients of a 32-64-10 MLP at batch 256 (torch.func: ~2-3 ms; benchmarks/func_transforms.py).
For repeated calls wrap the transformed function in ``tracegrad.compile``: one XLA program,
~0.6-1.5 ms there, retraced when outside tensors it read change (as torch.compile over torch.func).
A transformed function that reads outside Tensors requiring grad (a model's parameters in a
closure) while grad mode is on breaks the compiled graph and runs eagerly (its results must stay
differentiable, ``_wrap._traced_closure``): pass such Tensors as arguments, or read them detached.
"""
from __future__ import annotations

import functools
import operator

import jax
import jax.numpy as jnp
import numpy as np

from .._tensor.tensor import Tensor
from . import _closure, _vmap, _wrap

_FLOAT_KINDS = "fc"


def _argnums(argnums, nargs):
    """Validate ``argnums`` as torch.func does; return it as a tuple of non-negative ints."""
    items = argnums if isinstance(argnums, tuple) else (argnums,)
    if not items:   # torch's own words for an empty tuple (it is a tuple of ints, vacuously)
        raise RuntimeError("argnums must be non-empty")
    # a bool is an int to torch (argnums=True differentiates argument 1)
    if not all(isinstance(a, int) for a in items):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    out = []
    for a in map(int, items):
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise RuntimeError(f"argnums must be unique, got {argnums}")
    return tuple(out)


def _diff_leaves(args, positions, api, need_float=True):
    for p in positions:
        for leaf in _wrap.check_tensor_tree(args[p], api):
            if need_float and np.dtype(leaf._value.dtype).kind not in _FLOAT_KINDS:
                raise RuntimeError("only Tensors of floating point dtype can require gradients")


def _jax_argnums(argnums, positions):
    """The differentiated arguments reach JAX as its positional arguments 0..n-1; an int
    ``argnums`` stays an int so JAX (like torch) returns bare results instead of 1-tuples."""
    return tuple(range(len(positions))) if isinstance(argnums, tuple) else 0


def _checked_outputs(func, has_aux, api, kwargs=None, float_outputs=False):
    """``func`` checked as torch.func checks a transformed function's result: Tensors (trees of
    them), and with ``has_aux`` an ``(output, aux)`` pair; ``float_outputs``: floating or
    complex ones (what a reverse-mode Jacobian needs). ``api`` prefixes the messages."""
    def checked(*a):
        out = func(*a, **(kwargs or {}))
        if has_aux and not (isinstance(out, tuple) and len(out) == 2):
            raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
        _wrap.check_outputs(out[0] if has_aux else out, api)
        if not _wrap.tensor_leaves(out[0] if has_aux else out):
            shown = [None] if (out[0] if has_aux else out) is None else out[0] if has_aux else out
            raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {shown})")
        for leaf in _wrap.tensor_leaves(out[1]) if has_aux else ():
            if not isinstance(leaf, Tensor):
                raise RuntimeError(f"{api}: Expected tensors, got unsupported type {type(leaf)} in aux; has_aux "
                                   "outputs must be Tensors (or trees of them)")
        for leaf in _wrap.tensor_leaves(out[0] if has_aux else out) if float_outputs else ():
            if np.dtype(leaf._value.dtype).kind not in _FLOAT_KINDS:
                raise RuntimeError(f"{api}: All outputs of f must be floating-point or complex Tensors, got Tensor "
                                   f"with dtype {leaf.dtype}")
        return out
    return checked


def _scalar_fn(fn, has_aux, api):
    """``fn`` checked as torch checks the function given to grad: a scalar Tensor output
    (plus an aux tree of Tensors with ``has_aux``)."""
    def checked(*args):
        out = fn(*args)
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(f"{api}(f)(*args): output of function f should be a tuple: (output, aux) "
                                   "if has_aux is True")
            out, aux = out
            for leaf in _wrap.tensor_leaves(aux):
                if not isinstance(leaf, Tensor):
                    raise RuntimeError(f"Expected tensors, got unsupported type {type(leaf)}")
        if not isinstance(out, Tensor):
            raise RuntimeError(f"{api}(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
        if out.dim() != 0:
            raise RuntimeError(f"{api}(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with "
                               f"{out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        if out.dtype.is_complex:   # torch's implicit grad_outputs need a real scalar
            raise RuntimeError(f"{api}: grad can be implicitly created only for real scalar outputs but got "
                               f"{out.dtype}; return a real loss (e.g. .abs() or .real of the output)")
        return (out, aux) if has_aux else out
    return checked


def grad_and_value(func, argnums=0, has_aux=False):
    """Mirrors ``torch.func.grad_and_value``: a function returning ``(grad, value)`` (or
    ``(grad, (value, aux))`` with ``has_aux``), on ``jax.value_and_grad``.

    ``func`` must return a scalar Tensor. ``grad`` has the structure of ``args[argnums]`` (a
    tuple over argnums when ``argnums`` is a tuple); inputs may be trees (dicts, tuples) of
    floating Tensors. Raises RuntimeError for bad ``argnums``, a non-scalar or non-Tensor
    output, integer inputs; ValueError for non-Tensor differentiated inputs (torch's classes).
    An integer or bool output is not differentiable: its gradient is zeros, as torch's.
    """
    def wrapper(*args, **kwargs):
        positions = _argnums(argnums, len(args))
        _diff_leaves(args, positions, "grad_and_value")
        checked = _scalar_fn(lambda *a: func(*a, **kwargs), has_aux, "grad_and_value")
        jf = _wrap.pure(checked, args, positions, "reverse")

        def real_valued(*d):
            # an integer or bool output has a zero gradient in torch (it is not differentiable);
            # JAX's grad refuses such outputs, so differentiate it as a float, keep the value as is
            res = jf(*d)
            out = res[0] if has_aux else res
            return (out if jnp.issubdtype(out.dtype, jnp.inexact) else out.astype(jnp.float32)), res
        diff = tuple(_wrap.to_arrays(args[p]) for p in positions)
        (_, value), grads = _wrap.run_jax(jax.value_and_grad(real_valued, argnums=_jax_argnums(argnums, positions),
                                                             has_aux=True), *diff)
        # under no_grad inside an outer reverse-mode transform, a constant of it
        return _closure.constant_of_level((_wrap.to_tensors(_conj_complex(grads)), _wrap.to_tensors(value)))
    return _wrap.recorded(wrapper, func)


def _conj_complex(tree):
    """NOTE [complex gradients] (``_ops/registry.py``): torch.func's gradient of a complex input
    is the conjugate of JAX's; real leaves pass through untouched."""
    return jax.tree_util.tree_map(lambda a: jnp.conj(a) if jnp.iscomplexobj(a) else a, tree)


def grad(func, argnums=0, has_aux=False):
    """Mirrors ``torch.func.grad``: ``grad(f)(*args)`` is the gradient of the scalar
    ``f(*args)`` with respect to ``args[argnums]``; with ``has_aux`` returns ``(grad, aux)``.
    See :func:`grad_and_value` for shapes and errors."""
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """Mirrors ``torch.func.vjp``: returns ``(output, vjp_fn)`` (``(output, vjp_fn, aux)`` with
    ``has_aux``). ``vjp_fn(cotangents)`` takes Tensors shaped as ``output`` and returns a tuple
    with one gradient per primal. Output and gradients stay differentiable with respect to
    primals/cotangents that require grad (see the module docstring). Raises ValueError for
    non-Tensor primals, RuntimeError for an integer or bool output (as torch) or a cotangent
    whose shape differs from the output's."""
    _diff_leaves(primals, range(len(primals)), "vjp")
    fn = _checked_outputs(func, has_aux, "vjp(f, *primals)", float_outputs=True)
    first = []   # (output arrays, pullback[, aux]) of the call on the given primals

    def linearize(prims):
        res = _wrap.run_jax(functools.partial(jax.vjp, _wrap.pure(fn, prims, range(len(prims)), "reverse"), has_aux=has_aux),
                            *(_wrap.to_arrays(p) for p in prims))
        if not first:
            first.append(res)
        return res

    read = []    # the outside Tensors the forward read, read again by reusing its pullback

    def forward(*prims):
        res = linearize(prims)
        reads = _closure.active()
        read[:] = reads.found.values() if reads is not None else ()
        return (_wrap.to_tensors(res[0]),) + ((_wrap.to_tensors(res[2]),) if has_aux else ())
    outs = _wrap.differentiable(forward, primals)
    out = first[0][0]
    given = [leaf._value for leaf in _wrap.tensor_leaves(primals)]

    def pull(prims, cts):
        same = [leaf._value for leaf in _wrap.tensor_leaves(prims)]
        reads = _closure.active()
        # a backward's trace (outside Tensors swapped for traced values) must trace it again
        if all(a is b for a, b in zip(same, given)) and not (reads is not None and reads.lifted):
            _closure.note_reads(read)
            pullback = first[0][1]
        else:
            pullback = linearize(prims)[1]

        def run(c):
            # torch's convention: conj(JAX vjp(conj(cotangent))) (NOTE [complex gradients])
            return _conj_complex(pullback(_conj_complex(
                jax.tree_util.tree_map(lambda ci, o: jnp.asarray(ci, o.dtype), c, out))))
        return tuple(_wrap.to_tensors(g) for g in _wrap.run_jax(run, _wrap.to_arrays(cts)))

    def vjp_fn(cotangents, *extra, retain_graph=True, create_graph=None):
        for name, flag in (("retain_graph", retain_graph), ("create_graph", create_graph)):
            # torch hands both flags to its autograd engine, whose bool parse takes what has
            # __index__ (None: the default) and refuses a str or float (they were ignored here)
            if flag is not None:
                try:
                    operator.index(flag)
                except TypeError:
                    raise TypeError(f"'{type(flag).__name__}' object cannot be interpreted as an integer "
                                    f"(vjp_fn: {name} is a bool)") from None
        if extra:
            cotangents = (cotangents, *extra)
        cts = _wrap.to_arrays(cotangents)
        want, got = jax.tree_util.tree_structure(out), jax.tree_util.tree_structure(cts)
        if want != got:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {_shown(got)}, primal output: {_shown(want)}")
        for o, c in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(cts)):
            if not hasattr(c, "shape"):   # a Python number: torch's autograd refuses it by class
                raise TypeError(f"gradients can be either Tensors or None, but got {type(c).__name__} "
                                "(vjp_fn: pass cotangents as Tensors shaped as the outputs)")
            if tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {_size(c.shape)} and "
                                   f"output[0] has a shape of {_size(o.shape)}.")
        return _wrap.differentiable(pull, (primals, cotangents))
    return (outs[0], vjp_fn) + ((outs[1],) if has_aux else ())


def _shown(treedef):
    """A tree structure in the message's words: ``(*, *)`` for two tensors in a tuple (the
    structure object's own repr names the library below tracegrad)."""
    text = str(treedef)
    return text[len("PyTreeDef("):-1] if text.startswith("PyTreeDef(") else text


def linearize(func, *primals):
    """Mirrors ``torch.func.linearize`` on ``jax.linearize``: returns ``(output, jvp_fn)`` where
    ``jvp_fn(*tangents)`` gives ``J @ tangents`` at ``primals`` without re-running ``func``
    (tangents shaped as the primals). Raises RuntimeError for a tangent whose shape differs from
    its primal's. Results carry no autograd history. AttributeError, as torch's Python code,
    for a primal that is not a Tensor (at the pytree's leaves); ValueError, as torch's jvp
    underneath, for an integer or bool primal."""
    for leaf in jax.tree_util.tree_leaves(primals, is_leaf=lambda v: isinstance(v, Tensor)):
        if not isinstance(leaf, Tensor):
            raise AttributeError(f"'{type(leaf).__name__}' object has no attribute 'new_empty' (linearize: the "
                                 f"primals must be Tensors)")
    for leaf in _wrap.check_tensor_tree(primals, "linearize"):   # torch's linearize runs jvp: its ValueError
        if np.dtype(leaf._value.dtype).kind not in _FLOAT_KINDS:
            raise ValueError(f"linearize(f, *primals): Expected primal to be floating point or complex, but got: "
                             f"{leaf.dtype}")
    fn = _checked_outputs(func, False, "linearize(f, *primals)")
    arrays = tuple(_wrap.to_arrays(p) for p in primals)
    out, lin = _wrap.run_jax(functools.partial(jax.linearize, _wrap.pure(fn, primals, range(len(primals)), "forward")), *arrays)

    def structure(tree):   # None and Tensors are leaves, as in torch's pytree
        return jax.tree_util.tree_structure(_wrap.keep_order(tree), is_leaf=lambda v: v is None or _wrap.is_tensor(v))
    want = structure(primals)
    flat_primals = _wrap.tensor_leaves(primals)

    def jvp_fn(*tangents):
        # torch's checks, in its order: the tangents' structure is the primals' (RuntimeError,
        # not the tree library's own ValueError), then per leaf its shape and dtype (a tangent
        # of another dtype was cast quietly)
        got = structure(tangents)
        if got != want:
            raise RuntimeError(f"Expected the tangents {_shown(got)} to have the same argspec as the primals "
                               f"{_shown(want)} (linearize's jvp_fn takes one tangent per primal)")
        flat = jax.tree_util.tree_leaves(_wrap.keep_order(tangents), is_leaf=lambda v: v is None or _wrap.is_tensor(v))
        for i, (p, t) in enumerate(zip(flat_primals, flat)):
            if not isinstance(t, Tensor):
                raise AttributeError(f"'{type(t).__name__}' object has no attribute 'shape' (linearize's jvp_fn: "
                                     f"tangent:{i} must be a Tensor)")
            if tuple(p.shape) != tuple(t.shape):
                raise RuntimeError(f"tangent:{i} with shape {_size(t.shape)} in flattened pytree doesn't match the "
                                   f"shape {_size(p.shape)} of the corresponding primal.")
            if t.dtype != p.dtype:
                raise RuntimeError(f"tangent:{i} with dtype {t.dtype} in flattened pytree doesn't match the dtype "
                                   f"{p.dtype} of the corresponding primal.")
        tans = _wrap.to_arrays(tangents)
        cast = _wrap.run_jax(lambda ts: jax.tree_util.tree_map(lambda t, p: jnp.asarray(t, p.dtype), ts, arrays), tans)
        return _wrap.to_tensors(_wrap.run_jax(lin, *cast))
    return _wrap.to_tensors(out), jvp_fn


def _size(shape):
    return f"torch.Size([{', '.join(map(str, shape))}])"


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """Mirrors ``torch.func.jvp``: ``(func(*primals), J @ tangents)`` (plus ``aux`` with
    ``has_aux``), on ``jax.jvp``. ``primals`` and ``tangents`` are tuples of the same structure
    and shapes. Raises RuntimeError for non-tuples, mismatched structure or shapes; ValueError for
    an integer primal or tangent. An integer or bool output's tangent is zeros, as torch's."""
    return _wrap.differentiable(lambda p, t: _jvp(func, p, t, strict, has_aux), (primals, tangents))


def _jvp(func, primals, tangents, strict, has_aux):
    if strict:
        raise RuntimeError("jvp(f, primals, tangents): strict=True is not implemented (torch.func has not "
                           "implemented it either)")
    for name, v in (("primals", primals), ("tangents", tangents)):
        if not isinstance(v, tuple):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected {name} to be a tuple. E.g. it should be valid "
                               "to call f(*primals).")
    for leaf in _wrap.tensor_leaves(primals):   # torch's class here is RuntimeError (not ValueError)
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals to only contain Tensors, got "
                               f"{type(leaf)}")
    for leaf in _wrap.tensor_leaves(tangents):
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected tangents to only contain Tensors, got "
                               f"{type(leaf)}")
    for leaf in _wrap.check_tensor_tree(primals, "jvp"):
        if np.dtype(leaf._value.dtype).kind not in _FLOAT_KINDS:
            raise ValueError(f"jvp(f, primals, tangents): Expected primal to be floating point or complex, but got: "
                             f"{leaf.dtype}")
    for leaf in _wrap.tensor_leaves(tangents):
        if isinstance(leaf, Tensor) and np.dtype(leaf._value.dtype).kind not in _FLOAT_KINDS:
            raise ValueError(f"jvp(f, primals, tangents): Expected tangent to be floating point or complex, but "
                             f"got: {leaf.dtype}")
    p_arr, t_arr = _wrap.to_arrays(primals), _wrap.to_arrays(tangents)
    sp, st = jax.tree_util.tree_structure(p_arr), jax.tree_util.tree_structure(t_arr)
    if sp != st:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, tangents also must be. "
                           f"Got primals with structure {_shown(sp)} and tangents with structure {_shown(st)}")
    if not jax.tree_util.tree_leaves(p_arr):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to contain at least one Tensor.")
    for p, t in zip(jax.tree_util.tree_leaves(p_arr), jax.tree_util.tree_leaves(t_arr)):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError("Trying to set a forward gradient that has a different size than that of the "
                               f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} while "
                               f"the given forward gradient is of size {list(t.shape)}.")
    t_arr = _wrap.run_jax(lambda ts: jax.tree_util.tree_map(lambda t, p: jnp.asarray(t, p.dtype), ts, p_arr), t_arr)

    fn = _checked_outputs(func, has_aux, "jvp(f, primals, tangents)")
    jf = _wrap.pure(fn, primals, range(len(primals)), "forward")
    def run(ps, ts):
        res = jax.jvp(jf, ps, ts, has_aux=has_aux)
        # an integer or bool output's tangent is JAX's empty float0: torch's is zeros of the output
        tan = jax.tree_util.tree_map(lambda o, t: jnp.zeros(o.shape, o.dtype) if t.dtype == jax.dtypes.float0 else t,
                                     res[0], res[1])
        return (res[0], tan) + tuple(res[2:])
    res = _wrap.run_jax(run, p_arr, t_arr)
    return tuple(_wrap.to_tensors(r) for r in res)


def _jacobian(jax_transform, api, func, argnums, has_aux):
    """``jacrev``/``jacfwd``: ``jax_transform`` of ``func`` with torch.func's checks."""
    def wrapper(*args, **kwargs):
        positions = _argnums(argnums, len(args))
        if api == "jacfwd":   # torch's jacfwd checks its primals as jvp does (ValueError for integers)
            for p in positions:
                for leaf in _wrap.check_tensor_tree(args[p], api):
                    if np.dtype(leaf._value.dtype).kind not in _FLOAT_KINDS:
                        raise ValueError(f"jacfwd: Expected primal to be floating point or complex, but got: "
                                         f"{leaf.dtype}")
        _diff_leaves(args, positions, api)
        # torch.func's Jacobians take real inputs only
        leaves = [leaf for p in positions for leaf in _wrap.tensor_leaves(args[p])]
        for i, leaf in enumerate(leaves):
            if leaf.dtype.is_complex:
                raise RuntimeError(f"{api}: Expected all inputs to be real but received complex tensor at flattened "
                                   f"input idx: {i}; differentiate the real and imaginary parts (view_as_real) "
                                   "instead")

        fn = _checked_outputs(func, has_aux, f"{api}(f, ...)(*args)", kwargs, float_outputs=api == "jacrev")
        # jacfwd's level is a forward level that is also a vmap (torch's jacfwd vmaps its jvp):
        # a custom Function in it needs vmap support (``_custom_function``)
        jf = _wrap.pure(fn, args, positions, "reverse" if api == "jacrev" else "jacfwd")
        diff = tuple(_wrap.to_arrays(args[p]) for p in positions)
        res = _wrap.run_jax(jax_transform(jf, argnums=_jax_argnums(argnums, positions), has_aux=has_aux), *diff)
        jac = _wrap.to_tensors(res[0] if has_aux else res)
        return (jac, _wrap.to_tensors(res[1])) if has_aux else jac
    return _wrap.recorded(wrapper, func)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """Mirrors ``torch.func.jacrev`` on ``jax.jacrev``: the Jacobian of each output leaf with
    respect to ``args[argnums]``, shaped ``output.shape + input.shape`` (a tuple over argnums
    when ``argnums`` is a tuple); ``(jacobian, aux)`` with ``has_aux``. ``chunk_size`` is
    accepted and ignored (JAX vectorizes the whole basis at once).
    Raises as :func:`grad_and_value` for bad ``argnums`` or inputs; RuntimeError for a complex
    input, as torch."""
    _wrap.check_chunk_size(chunk_size, "jacrev")
    return _jacobian(jax.jacrev, "jacrev", func, argnums, has_aux)


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """Mirrors ``torch.func.jacfwd`` on ``jax.jacfwd``; same result layout as :func:`jacrev`.
    ``randomness='error'`` (default): a random draw inside ``func`` raises RuntimeError, as
    torch's (its jacfwd is a vmap over basis vectors); 'same' and 'different' both draw once for
    all basis vectors.
    Raises: RuntimeError for a ``randomness`` other than 'error', 'different' or 'same'.
    Differs from torch: 'different' draws the same values for every basis vector."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    jac = _jacobian(jax.jacfwd, "jacfwd", func, argnums, has_aux)
    if randomness != "error":
        return jac

    @functools.wraps(jac)
    def guarded(*args, **kwargs):
        with _vmap._random_guard("error"):
            return jac(*args, **kwargs)
    return guarded


def hessian(func, argnums=0):
    """Mirrors ``torch.func.hessian``: ``jacfwd(jacrev(func, argnums), argnums)``, shaped
    ``output.shape + input.shape + input.shape``."""
    return jacfwd(jacrev(func, argnums), argnums)
