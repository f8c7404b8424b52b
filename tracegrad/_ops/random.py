"""Random draws from a PRNG key (pure: a key in, values out) and torch's argument checks.

The stateful half -- ``Generator`` (torch.Generator), the default generator, ``manual_seed``
and ``key_for`` (the key a draw splits off) -- is ``tracegrad/_tensor/generator.py``, at the tensor
layer (``Generator.get_state`` returns a tensor).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import _state
from .._x64 import with_x64
from . import dtypes as _dt, limited
from .registry import defop


def _wrap(k):
    return jax.random.wrap_key_data(k)


# NOTE [host draws]
# Eager draws (a concrete key) come from numpy's Philox seeded with the JAX key's bits: the
# stream is still fixed by manual_seed, but no XLA program is compiled per shape (jax.random
# compiles one per new shape, 0.1-3 s each: every nn.init call on a new layer paid it).
# Inside a trace (a tracer key: tracegrad.compile, a checkpointed region) the same numpy draw
# runs through ``jax.pure_callback``, so a compiled step draws exactly the bits eager draws
# from the same generator state (dropout masks equal eager's), at ~50 us per draw.


def _philox(k):
    bits = np.asarray(k).astype(np.uint64)
    return np.random.Generator(np.random.Philox(key=int(bits[0]) << 32 | int(bits[-1])))


def check_same_randomness(*values):
    """torch's refusal, inside ``vmap(..., randomness='same')``, of a draw whose tensor
    parameters (probabilities, means, rates) are batched at that vmap level: one shared draw
    cannot follow per-example parameters. ``values``: the parameters' arrays."""
    top = _state.VMAP_SAME[-1] if _state.VMAP_SAME else None
    if top is not None and any(isinstance(v, jax.core.Tracer) and getattr(v, "_trace", None) is top for v in values):
        raise RuntimeError("Vmap does not currently support same randomness with a batched tensor input. Please "
                           "file an issue with functorch (use randomness='different', or draw outside vmap)")


def drawn_per_example_into_unbatched(target, drawn) -> bool:
    """Inside ``vmap(..., randomness='different')``: whether an in-place draw ``drawn`` (batched,
    one value per example) goes into ``target``, an array that is not batched. torch refuses
    that for a tensor captured from outside the function (it could hold one draw only);
    ``func/_closure.py`` raises it once the call shows the tensor was captured."""
    return (bool(_state.VMAP_SAME) and _state.VMAP_SAME[-1] is None and isinstance(drawn, jax.core.Tracer)
            and not isinstance(target, jax.core.Tracer))


# NOTE [draws past numpy's 64 dims]
# A numpy array holds at most 64 dimensions; a torch (and JAX) tensor any number (torch's own
# tests reduce a 65-d tensor). The host draw for such a shape is made flat -- numpy fills in C
# order, so these are the values a shaped draw would hold -- and JAX reshapes it. ``host_shape``
# is the shape the numpy draw uses; ``_draw`` restores the tensor's.
_NP_MAXDIMS = 64


def host_shape(shape):
    """The shape a numpy draw for a tensor of ``shape`` uses: ``shape`` itself, or its element
    count as one dimension past numpy's 64 dims (NOTE [draws past numpy's 64 dims])."""
    shape = tuple(shape)
    return shape if len(shape) <= _NP_MAXDIMS else (int(np.prod(shape, dtype=np.int64)),)


def _draw(k, sample, shape, dtype):
    """``sample(numpy_generator) -> numpy array`` of ``host_shape(shape)``/``dtype``, from key
    ``k``; returned in ``shape``."""
    hs, shape = host_shape(shape), tuple(shape)
    if not isinstance(k, jax.core.Tracer):
        out = with_x64(jnp.asarray)(sample(_philox(k)), dtype)
    else:
        out = host_call(lambda key: sample(_philox(key)), hs, dtype, k)
    return out if hs == shape else out.reshape(shape)


# NOTE [64-bit callback results]
# XLA may run a host callback on one of its own threads, where tracegrad's x64 scope (thread
# local) is off: JAX then canonicalizes a float64/int64 result to 32 bits and fails the call
# ("Incorrect output dtype"), depending on whether the program ran on the caller's thread
# (small programs did, so only bigger steps failed). 64-bit values therefore cross as uint32
# words, which no x64 setting changes, and are bitcast back inside the program.
def host_call(fn, shape, dtype, *args, **kwargs):
    """``jax.pure_callback(fn, ...)`` for a result of ``shape`` and ``dtype`` (leading batch
    dims allowed under ``vmap``), correct whatever x64 setting XLA's thread has
    (NOTE [64-bit callback results]). ``kwargs`` go to ``pure_callback``."""
    dtype = jnp.dtype(dtype)
    shape = tuple(shape)
    if dtype.itemsize != 8 or dtype.kind not in "fiu":
        return jax.pure_callback(lambda *a: np.asarray(fn(*a), dtype), jax.ShapeDtypeStruct(shape, dtype),
                                 *args, **kwargs)

    def words(*a):
        v = np.asarray(fn(*a), dtype)
        # ascontiguousarray makes a 0-d draw 1-d: the reshape uses the draw's own shape
        return np.ascontiguousarray(v).view(np.uint32).reshape(v.shape + (2,))
    out = jax.pure_callback(words, jax.ShapeDtypeStruct(shape + (2,), np.uint32), *args, **kwargs)
    return jax.lax.bitcast_convert_type(out, dtype)


def _np_float(dtype):
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


# ---- argument checks (torch's classes and messages; values only when concrete) -----------
def scalar_name(dtype):
    """torch's ScalarType name of a numpy/JAX dtype (``int64`` -> ``'Long'``)."""
    n = np.dtype(dtype).name
    return _dt.SCALAR_NAMES.get(n, n)


def check_floating(dtype, api, kernel):
    """NotImplementedError, as torch, when a float-only draw (``rand``, ``randn``, ``normal_``)
    is asked for an integer or bool dtype."""
    d = np.dtype(dtype)
    limited.check_dtype(api, d)
    if d.kind not in "fc" and d.name != "bfloat16":
        raise NotImplementedError(f'{api}: "{kernel}" not implemented for \'{scalar_name(d)}\'; '
                                  f"random floats need a floating dtype (e.g. dtype=tracegrad.float32)")


def _concrete(x, bad=None):
    """A host numpy copy of ``x`` (a number or array), or None inside a trace (no value to check
    here); there ``bad(x)`` (the check's failing elements), when given, is checked when the
    compiled program runs (NOTE [value checks at run time] in ``_lowering/capture.py``)."""
    if isinstance(x, jax.core.Tracer):
        if bad is not None:
            _state.check_values(x, bad)
        return None
    if getattr(x, "ndim", 0) > _NP_MAXDIMS:      # NOTE [draws past numpy's 64 dims]: values, flat
        return np.asarray(x.reshape(-1))
    return np.asarray(x)


def _numeric(v, given, api, name):
    """TypeError, as torch's parser, when ``given`` (host copy ``v``) holds no numbers (a string,
    an object): numpy's own comparison error would name numpy."""
    if v is not None and v.dtype.kind not in "biufc":
        raise TypeError(f"{api}: argument '{name}' must be a Tensor or a number, not {type(given).__name__}")


def check_std(std, api="normal"):
    """RuntimeError for a negative or NaN ``std`` (a number or an array of them), as torch."""
    # ``not std >= 0``: torch's check is ``std >= 0.0``, so a NaN std is refused too (``std < 0``
    # let it through to a NaN sample)
    if isinstance(std, (int, float, np.number)):
        if not std >= 0:
            raise RuntimeError(f"{api}: normal expects std >= 0.0, but found std {std:g}")
        return
    v = _concrete(std, lambda s: ~(s >= 0))
    _numeric(v, std, api, "std")
    if v is not None and v.size and not bool(np.all(v >= 0)):
        raise RuntimeError(f"{api}: normal expects all elements of std >= 0.0")


def check_range(low, high, api):
    """RuntimeError for an empty ``[low, high)`` integer range, as torch's ``random_``."""
    if not low < high:
        raise RuntimeError(f"{api}: random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")


def check_probs(p, api):
    """RuntimeError for a Bernoulli probability outside [0, 1] (NaN included), as torch."""
    if isinstance(p, (int, float, np.number)):
        if not 0 <= p <= 1:
            raise RuntimeError(f"{api}: bernoulli_ expects p to be in [0, 1], but got p={p:g}")
        return None
    v = _concrete(p, lambda q: ~((q >= 0) & (q <= 1)))
    _numeric(v, p, api, "p")
    if v is not None and v.size and not bool(np.all((v >= 0) & (v <= 1))):
        raise RuntimeError(f"{api}: Expected p_in >= 0 && p_in <= 1 to be true, but got false "
                           f"(every probability must lie in [0, 1])")
    return v


def check_multinomial(probs, num_samples, replacement, api="multinomial"):
    """torch's checks of ``multinomial``: 1-D/2-D floating input, ``num_samples > 0`` (and at most
    the number of categories without replacement), finite non-negative probabilities with a
    positive sum per row (values only when concrete)."""
    d = np.dtype(probs.dtype)
    if d.kind != "f" and d.name != "bfloat16":   # (torch has no complex kernel either)
        raise RuntimeError(f"{api}: multinomial only supports floating-point dtypes for input, got: {scalar_name(d)}")
    if probs.ndim not in (1, 2):
        raise RuntimeError(f"{api}: prob_dist must be 1 or 2 dim, got {probs.ndim} dims")
    if num_samples <= 0:
        raise RuntimeError(f"{api}: cannot sample n_sample <= 0 samples (got num_samples={num_samples})")
    if not replacement and num_samples > probs.shape[-1]:
        raise RuntimeError(f"{api}: cannot sample n_sample > prob_dist.size(-1) samples without replacement "
                           f"({num_samples} > {probs.shape[-1]}); pass replacement=True")
    if probs.shape[-1] == 0 and probs.size == 0 and (probs.ndim == 1 or probs.shape[0] > 0):
        # no categories: torch's kernel fails on the empty rows (not numpy's argmax of nothing)
        raise RuntimeError(f"{api}: invalid multinomial distribution (sum of probabilities <= 0): the input has no "
                           f"categories (shape {tuple(probs.shape)})")
    v = _concrete(probs, lambda q: ~(jnp.isfinite(q) & (q >= 0)) | ~(q.sum(-1, keepdims=True) > 0))
    if v is None or not v.size:
        return
    v = v.astype(np.float64)
    if replacement and num_samples > 1:
        # torch's CPU kernel for several draws with replacement checks row by row, each entry in
        # turn (negative or nan, then infinite) before the row's sum, in its own words (what
        # WeightedRandomSampler's default replacement=True shows for bad weights)
        for row in v.reshape(-1, v.shape[-1]):
            bad = np.flatnonzero(~(row >= 0) | ~np.isfinite(row))
            if bad.size:
                what = "< 0" if not row[bad[0]] >= 0 else "= infinity or NaN"
                raise RuntimeError(f"{api}: invalid multinomial distribution (encountering probability entry {what})")
            if not row.sum() > 0:
                raise RuntimeError(f"{api}: invalid multinomial distribution (sum of probabilities <= 0)")
        return
    if not bool(np.all(np.isfinite(v) & (v >= 0))):
        raise RuntimeError(f"{api}: probability tensor contains either `inf`, `nan` or element < 0")
    if not bool(np.all(v.sum(-1) > 0)):
        raise RuntimeError(f"{api}: invalid multinomial distribution (sum of probabilities <= 0)")


# torch's C type names of the floating dtypes in its bound messages (a complex draw's parts)
_BOUND_TYPE = {"float32": ("float", "Float"), "complex64": ("float", "Float"), "float64": ("double", "Double"),
               "complex128": ("double", "Double"), "float16": ("c10::Half", "Half"),
               "bfloat16": ("c10::BFloat16", "BFloat16")}


def uniform(k, shape, dtype, low=0.0, high=1.0, api="uniform_"):
    """Uniform [low, high) draws. RuntimeError, as torch, for a bound that is not a finite value
    of the dtype (inf, nan, past its largest), ``low > high``, or a range wider than the dtype's
    largest value (the draw would overflow to inf)."""
    check_floating(dtype, api, "check_uniform_bounds")
    if isinstance(low, (int, float)) and isinstance(high, (int, float)):
        name = np.dtype(dtype).name
        cname, tname = _BOUND_TYPE.get(name, (name, name))
        top = float(jnp.finfo(jnp.float32 if name == "complex64" else jnp.float64 if name == "complex128"
                              else dtype).max)
        for what, v in (("from", low), ("to", high)):
            if not -top <= v <= top:
                raise RuntimeError(f"{what} is out of bounds for {cname} ({api}: the bounds must be finite values "
                                   f"of the tensor's dtype)")
        if low > high:
            raise RuntimeError(f"{api}: uniform_ expects to return a [from, to) range, but found from={low:g} > "
                               f"to={high:g}")
        if high - low > top:
            raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{tname}>::max(), but found "
                               f"to={high:g} and from={low:g} which result in to-from to exceed the limit")
    if np.issubdtype(np.dtype(dtype), np.complexfloating):
        # torch draws the real and the imaginary part each uniform on [low, high) (rand,
        # rand_like, uniform_ on a complex tensor); a real draw cast would leave imag 0
        def draw(g):
            part = np.float64 if np.dtype(dtype) == np.complex128 else np.float32
            pair = g.uniform(low, high, host_shape(shape) + (2,)).astype(part)
            return (pair[..., 0] + 1j * pair[..., 1]).astype(np.dtype(dtype))
        return _draw(k, draw, shape, dtype)
    return _draw(k, lambda g: g.uniform(low, high, host_shape(shape)).astype(_np_float(dtype)), shape, dtype)


def normal(k, shape, dtype, mean=0.0, std=1.0, api="normal_"):
    check_floating(dtype, api, "normal_kernel_cpu")
    check_std(std, api)
    if np.issubdtype(np.dtype(dtype), np.complexfloating):
        # torch: real and imaginary parts each normal with variance std**2 / 2
        def draw(g):
            pair = g.standard_normal(host_shape(shape) + (2,)) * np.sqrt(0.5)
            return (mean + std * (pair[..., 0] + 1j * pair[..., 1])).astype(np.dtype(dtype))
        return _draw(k, draw, shape, dtype)
    return _draw(k, lambda g: (mean + std * g.standard_normal(host_shape(shape))).astype(_np_float(dtype)), shape,
                 dtype)


def randint(k, shape, low, high, dtype, api="random_"):
    check_range(low, high, api)
    return _draw(k, lambda g: g.integers(low, high, host_shape(shape)), shape, dtype)


def randint_inclusive(k, shape, low, high_inc):
    """int64 draws uniform over ``[low, high_inc]`` (both ends included: the range may reach
    int64's maximum, as ``random_(from, None)`` does)."""
    return _draw(k, lambda g: g.integers(low, high_inc, host_shape(shape), dtype=np.int64, endpoint=True), shape,
                 np.int64)


def ints_as(r, dtype):
    """int64 draws ``r`` in ``dtype``; for a float dtype rounded toward zero where they are not
    exact, as torch's ``random_`` (bfloat16 ``random_(0, 1000)`` never gives 1000)."""
    y = r.astype(dtype)
    if not jnp.issubdtype(jnp.dtype(dtype), jnp.floating):
        return y
    big = jnp.abs(y.astype(jnp.float64)) >= 2.0 ** 63          # rounded past int64: always away from 0
    back = jnp.where(big, 0, y).astype(jnp.int64)
    away = big | ((r >= 0) & (back > r)) | ((r < 0) & (back < r))
    return jnp.where(away, jnp.nextafter(y, jnp.zeros_like(y)), y)


def permutation(k, n, dtype, api="randperm"):
    if n < 0:
        raise RuntimeError(f"{api}: Trying to create tensor with negative dimension {n}: [{n}]")
    if np.dtype(dtype) == np.bool_:
        raise NotImplementedError(f"{api}: \"randperm\" not implemented for 'Bool'; use an integer or floating dtype")
    return _draw(k, lambda g: g.permutation(n), (n,), dtype)


def bernoulli(k, p, shape, api="bernoulli_"):
    host = check_probs(p, api)
    if isinstance(p, jax.core.Tracer) or isinstance(k, jax.core.Tracer):
        # the same uniform draw eager compares with p; the comparison happens in the program
        return _draw(k, lambda g: g.random(host_shape(shape)), shape, jnp.float64) < p
    if host_shape(shape) != tuple(shape):          # NOTE [draws past numpy's 64 dims]
        # p's values came back flat (_concrete): compare in p's own shape, broadcast by JAX
        probs = p if host is None else jnp.asarray(host).reshape(tuple(getattr(p, "shape", ())))
        return _draw(k, lambda g: g.random(host_shape(shape)), shape, jnp.float64) < probs
    return jnp.asarray(_philox(k).random(shape) < (host if host is not None else np.asarray(p)))


def multinomial(k, probs, num_samples, replacement):
    logits = jnp.log(probs)
    if replacement:
        return jax.random.categorical(_wrap(k), logits, shape=(num_samples,) + logits.shape[:-1]).T
    g = jax.random.gumbel(_wrap(k), logits.shape)
    return jnp.argsort(-(logits + g), axis=-1)[..., :num_samples]


def exponential(k, shape, dtype):
    """Exponential(1) draws; real floating dtypes only (RuntimeError, as torch, otherwise)."""
    if np.dtype(dtype).kind != "f" and np.dtype(dtype).name != "bfloat16":
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {scalar_name(dtype)}")
    return _draw(k, lambda g: g.exponential(1.0, host_shape(shape)).astype(_np_float(dtype)), shape, dtype)


# ---- Gamma draws with reparameterized gradients --------------------------------------------
def standard_gamma(k, alpha):
    """Gamma(``alpha``, 1) draws of ``alpha``'s shape and dtype from key ``k`` (NOTE [host draws]);
    torch's floor: a draw that underflows to 0 becomes the dtype's smallest normal number."""
    dtype = jnp.dtype(alpha.dtype)
    tiny = np.finfo(_np_float(dtype)).tiny

    def sample(key, a):
        draw = _philox(key).standard_gamma(np.asarray(a, np.float64))
        return np.maximum(draw, tiny).astype(_np_float(dtype))
    if isinstance(k, jax.core.Tracer) or isinstance(alpha, jax.core.Tracer):
        check_same_randomness(alpha)
        return host_call(sample, alpha.shape, dtype, k, alpha, vmap_method="sequential")
    return with_x64(jnp.asarray)(sample(k, alpha), dtype)


# NOTE [gamma reparameterization]
# A Gamma(alpha) draw x is a function of alpha through the inverse CDF at a fixed uniform
# level; its derivative is -(dF/dalpha)/(dF/dx) (implicit reparameterization, torch's
# ``_standard_gamma_grad``, JAX's ``random_gamma_grad``). The draw happens on the host, so the op
# takes it as an input and only declares that derivative.
@jax.custom_jvp
def gamma_reparam(alpha, sample):
    """``sample`` (a Gamma(``alpha``) draw) with derivative ``random_gamma_grad(alpha, sample)``
    with respect to ``alpha`` (NOTE [gamma reparameterization])."""
    return sample


@gamma_reparam.defjvp
def _gamma_reparam_jvp(primals, tangents):
    alpha, sample = primals
    return sample, tangents[0] * jax.lax.random_gamma_grad(alpha, sample)


defop("standard_gamma", gamma_reparam, args=("self", "sample"), grad_fn="StandardGammaBackward0",
      saves=("self", "sample"), no_edge=("sample",))


# ---- draws whose parameters are tensors (poisson, binomial) ----------------------------------
def param_draw(k, sample, params, shape, dtype):
    """``sample(numpy_generator, *params_as_numpy)`` from key ``k`` with tensor-valued
    parameters (NOTE [host draws]): directly when everything is concrete, else through a host
    callback that receives the traced parameters."""
    dtype = jnp.dtype(dtype)

    def run(key, *ps):
        return np.asarray(sample(_philox(key), *(np.asarray(p) for p in ps))).astype(dtype)
    if isinstance(k, jax.core.Tracer) or any(isinstance(p, jax.core.Tracer) for p in params):
        check_same_randomness(*params)
        # under vmap the key or the parameters are batched: one host draw per example
        return host_call(run, shape, dtype, k, *params, vmap_method="sequential")
    return with_x64(jnp.asarray)(run(k, *params), dtype)


def poisson(k, rate):
    """Poisson(``rate``) counts, in ``rate``'s (floating) dtype. RuntimeError for a negative
    rate (values checked when concrete)."""
    v = _concrete(rate, lambda r: r < 0)
    if v is not None and v.size and not bool(np.all(v >= 0)):
        raise RuntimeError("poisson(): invalid Poisson rate, expected rate to be non-negative")
    return param_draw(k, _poisson_counts, (rate,), rate.shape, rate.dtype)


# the largest rate numpy's Poisson sampler takes (a larger one is its ValueError)
_POISSON_RATE_MAX = np.iinfo(np.int64).max - 10 * np.sqrt(np.iinfo(np.int64).max)


def _poisson_counts(g, rate):
    """Poisson counts of ``rate`` (float64) from numpy generator ``g``. A rate past the int64
    range (inf included) is torch's accepted call whose int64 count wraps to -2**63: that value,
    where numpy would raise."""
    rate = np.maximum(rate.astype(np.float64), 0)
    huge = rate > _POISSON_RATE_MAX
    return np.where(huge, -2.0 ** 63, g.poisson(np.where(huge, 0, rate)))


def binomial(k, count, prob):
    """Binomial(``count``, ``prob``) draws of the broadcast shape, in ``count``'s dtype; a count
    or probability outside its range (negative count, prob outside [0, 1]) gives 0 where torch's
    kernel returns a garbage value or NaN."""
    shape = jnp.broadcast_shapes(count.shape, prob.shape)

    def sample(g, n, p):
        n = np.broadcast_to(n, shape).astype(np.float64)
        p = np.broadcast_to(p, shape).astype(np.float64)
        ok = (n >= 0) & (p >= 0) & (p <= 1)
        return np.where(ok, g.binomial(np.where(ok, n, 0).astype(np.int64), np.where(ok, p, 0)), 0)
    return param_draw(k, sample, (count, prob), shape, count.dtype)


def geometric(k, shape, dtype, p):
    """Geometric(``p``) counts of trials up to the first success (1, 2, ...); any real numeric
    dtype (NotImplementedError for a complex or bool one, as torch's kernel)."""
    if np.dtype(dtype).kind in "cb":
        raise NotImplementedError(f"\"geometric_cpu\" not implemented for '{scalar_name(dtype)}'; geometric_ fills "
                                  "real numeric tensors only")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return _draw(k, lambda g: g.geometric(p, host_shape(shape)).astype(np.dtype(dtype)), shape, dtype)


def log_normal(k, shape, dtype, mean, std):
    """``exp(Normal(mean, std))`` draws; real floating dtypes only."""
    if np.dtype(dtype).kind != "f" and np.dtype(dtype).name != "bfloat16":
        raise NotImplementedError(f"\"log_normal_cpu\" not implemented for '{scalar_name(dtype)}'; "
                                  "log_normal_ fills real floating tensors only")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    return _draw(k, lambda g: g.lognormal(mean, std, host_shape(shape)).astype(_np_float(dtype)), shape, dtype)


def cauchy(k, shape, dtype, median, sigma):
    """Cauchy(``median``, ``sigma``) draws; real floating dtypes only."""
    if np.dtype(dtype).kind != "f" and np.dtype(dtype).name != "bfloat16":
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype must be a floating "
                           f"point but you specified {scalar_name(dtype)}")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    return _draw(k, lambda g: (median + sigma * g.standard_cauchy(host_shape(shape))).astype(_np_float(dtype)),
                 shape, dtype)


# NOTE [zero-gradient draws]
# torch's draws from tensor parameters that it does not reparameterize (``normal(mean, std)``,
# ``poisson(rate)``) record a node whose gradient for the parameters is zero. These ops take
# the host draw as an input and return it: JAX's VJP of an unused input is that zero.
def _passthrough(*args):
    return args[-1]


defop("normal_tensor_tensor", _passthrough, args=("mean", "std", "sample"), grad_fn="NormalBackward3",
      no_edge=("sample",))
defop("normal_tensor_float", _passthrough, args=("mean", "sample"), grad_fn="NormalBackward1", no_edge=("sample",))
defop("normal_float_tensor", _passthrough, args=("std", "sample"), grad_fn="NormalBackward2", no_edge=("sample",))
defop("poisson", _passthrough, args=("self", "sample"), grad_fn="PoissonBackward0", no_edge=("sample",))
defop("bernoulli", _passthrough, args=("self", "sample"), grad_fn="BernoulliBackward0", no_edge=("sample",))
