"""tracegrad: PyTorch's eager autograd and training API on JAX/XLA.

``import tracegrad as torch`` -- the same names and semantics as torch 2.13 for tensors,
autograd (graph, hooks, custom Functions), nn, optim and data loading; arrays live on XLA
(CPU or GPU). See DESIGN.md for the architecture and README.md for what differs from torch.

Every public name here is one of torch's, re-exported explicitly below (no star imports; a
private helper never becomes ``tracegrad.<name>``), plus three extras torch does not have:
``from_jax`` and ``jax_function`` (``tracegrad.func``: JAX arrays and functions as tracegrad
tensors and ops) and ``viz`` (graph drawing). ``tests/api/test_public_api.py`` checks this.
"""


def _set_jax_runtime_defaults() -> None:
    """The two process-global JAX settings tracegrad changes (README "Runtime settings").

    torch has float64 and int64: JAX makes them only in x64 mode. tracegrad turns it on
    thread-locally around its own JAX calls (_x64.py), never for the process: the user's own
    JAX code keeps its float32/int32 defaults (DESIGN 2.7). float32 stays the default dtype.
    """
    import os

    import jax
    from jax._src import xla_bridge  # private: whether the client exists yet
    # Eager tracegrad issues many tiny jitted calls; JAX's CPU async dispatch makes each one
    # 1.6-1.8x slower here (benchmarks/eager_overhead.py). JAX reads the flag once, when it
    # creates its CPU client: set after that it does nothing, so it is left alone then.
    # TRACEGRAD_ASYNC_DISPATCH=1 keeps JAX's default.
    if os.environ.get("TRACEGRAD_ASYNC_DISPATCH", "0") != "1" and not xla_bridge.backends_are_initialized():
        jax.config.update("jax_cpu_enable_async_dispatch", False)
    # Eager mode compiles one small XLA program per (op, shapes): 20-250 ms each, paid again in
    # every new process. A persistent compilation cache makes later runs load them instead (a
    # small MLP's first 3 steps: 5-8 s -> 1-2 s). JAX keeps one cache per process (initialised
    # at the first compile), so the folder cannot be scoped; the 0 s write threshold (JAX's
    # default, 1 s, would skip every eager program) could be, as a thread-local, but that cost
    # 0.3 us per op. Both apply only when the user has set no cache folder. TRACEGRAD_CACHE_DIR
    # picks the folder; set it empty to turn it off.
    # JAX imports the MLIR dialect modules mhlo and builtin lazily, at the process's first
    # lowering. Those imports register Python classes in MLIR's process-wide registry: a
    # Ctrl-C during them (a notebook cell interrupted while its first op compiles) left the
    # registration half done, and every later new program failed with "Dialect namespace
    # 'mhlo' is already registered" until the kernel restarted (repeated SIGINTs into an
    # eager loop: 3 runs in 8). Imported here, 17 ms, no backend started.
    try:
        from jax._src.lib.mlir import dialects
        dialects.mhlo, dialects.builtin
    except (ImportError, AttributeError):     # another JAX layout: its own lazy imports
        pass
    cache = os.environ.get("TRACEGRAD_CACHE_DIR",
                           os.path.join(os.path.expanduser("~"), ".cache", "tracegrad", "xla"))
    if cache and not jax.config.jax_compilation_cache_dir:
        jax.config.update("jax_compilation_cache_dir", cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        # a folder every process of the user shares: NOTE [cache entries written whole]
        from ._api.compilation_cache import write_entries_atomically
        write_entries_atomically()


_set_jax_runtime_defaults()
del _set_jax_runtime_defaults

# The import order below is load-bearing: several private modules still import each other
# lazily (tests/test_layering.py lists those edges), and distributed must come before nn.
from ._ops.dtypes import (  # noqa: E402
    bfloat16 as bfloat16, complex64 as complex64, complex128 as complex128, float16 as float16,
    float32 as float32, float64 as float64, int8 as int8, int16 as int16, int32 as int32,
    int64 as int64, uint8 as uint8, dtype as dtype, get_default_dtype as get_default_dtype,
    set_default_dtype as set_default_dtype
)
from ._api.dtype_args import promote_types as promote_types, can_cast as can_cast  # noqa: E402
from ._ops.dtypes import bool_ as bool  # noqa: E402,A001
from ._ops.dtypes import (  # noqa: E402  (NOTE [limited dtypes], NOTE [dtypes without storage])
    uint16 as uint16, uint32 as uint32, uint64 as uint64, float8_e4m3fn as float8_e4m3fn,
    float8_e5m2 as float8_e5m2, float8_e4m3fnuz as float8_e4m3fnuz, float8_e5m2fnuz as float8_e5m2fnuz,
    float8_e8m0fnu as float8_e8m0fnu, complex32 as complex32, float4_e2m1fn_x2 as float4_e2m1fn_x2
)
from ._ops import dtypes as _dtypes  # noqa: E402
globals().update({_d.name: _d for _d in _dtypes.NO_STORAGE})   # int1..uint7, bits*, qint*/quint*
del _dtypes

half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble, chalf = complex64, complex128, complex32
bit = uint1  # noqa: F821  (set just above, with the other dtypes without storage)

# torch's numeric constants: Python floats (math's), and None for indexing (``x[:, torch.newaxis]``)
from math import e as e, inf as inf, nan as nan, pi as pi  # noqa: E402
newaxis = None

from ._ops.dtype_info import finfo as finfo, iinfo as iinfo  # noqa: E402
from ._tensor.tensor import Size as Size, Tensor as Tensor  # noqa: E402
from ._tensor.layout import layout as layout, sparse_coo as sparse_coo, strided as strided  # noqa: E402
from ._tensor.layout import sparse_csr as sparse_csr, sparse_csc as sparse_csc  # noqa: E402
from ._tensor.layout import sparse_bsr as sparse_bsr, sparse_bsc as sparse_bsc  # noqa: E402
from ._api.tensor_methods import return_types as return_types  # noqa: E402  (attaches Tensor's methods)
from ._tensor.device import device as device  # noqa: E402
from ._tensor.memory_format import (  # noqa: E402
    channels_last as channels_last, channels_last_3d as channels_last_3d, contiguous_format as contiguous_format,
    memory_format as memory_format, preserve_format as preserve_format
)
from . import _prims_common as _prims_common  # noqa: E402  (torch._prims_common.suggest_memory_format)
from ._tensor.generator import (
    Generator as Generator, default_generator as default_generator, get_rng_state as get_rng_state,
    initial_seed as initial_seed, manual_seed as manual_seed, seed as seed,
    set_rng_state as set_rng_state
)
from ._tensor.factories import range as range  # noqa: E402,A001
from ._tensor.factories import (
    arange as arange, as_tensor as as_tensor, asarray as asarray,
    empty as empty, empty_like as empty_like, eye as eye, from_numpy as from_numpy, full as full,
    full_like as full_like, linspace as linspace, logspace as logspace, multinomial as multinomial,
    ones as ones, ones_like as ones_like, rand as rand, rand_like as rand_like,
    randint as randint, randint_like as randint_like, randn as randn, randn_like as randn_like,
    randperm as randperm, tensor as tensor, zeros as zeros, zeros_like as zeros_like
)
# torch's free functions: every function the op families register (_api/_registry.py; with a
# Tensor method of the same name it is that method: tracegrad.exp is Tensor.exp).
# tests/api/test_registration.py checks that this list is exactly _api.functions.__all__.
from ._api.functions import (
    abs as abs, absolute as absolute, acos as acos, acosh as acosh, add as add, addcdiv as addcdiv, addcmul as addcmul,
    addmm as addmm, all as all, allclose as allclose, amax as amax, amin as amin, any as any,
    arccos as arccos, arccosh as arccosh, arcsin as arcsin, arcsinh as arcsinh, arctan as arctan,
    arctanh as arctanh, asinh as asinh, atanh as atanh, argmax as argmax, argmin as argmin,
    argsort as argsort, argwhere as argwhere, asin as asin, atan as atan, atan2 as atan2,
    bitwise_and as bitwise_and, bitwise_not as bitwise_not, bitwise_or as bitwise_or,
    bitwise_xor as bitwise_xor, bmm as bmm, broadcast_shapes as broadcast_shapes,
    broadcast_tensors as broadcast_tensors, broadcast_to as broadcast_to, cat as cat, cdist as cdist,
    ceil as ceil, chunk as chunk, clamp as clamp, clamp_max as clamp_max, clamp_min as clamp_min,
    clip as clip, clone as clone, concat as concat, concatenate as concatenate, cos as cos,
    cosh as cosh, count_nonzero as count_nonzero, cumprod as cumprod, cumsum as cumsum, diag as diag,
    diagonal as diagonal, div as div, divide as divide, dot as dot, einsum as einsum, eq as eq,
    equal as equal, erf as erf, erfinv as erfinv, exp as exp, exp2 as exp2, expm1 as expm1, fix as fix,
    flatten as flatten, flip as flip, fliplr as fliplr, flipud as flipud, floor as floor,
    floor_divide as floor_divide, fmax as fmax, fmin as fmin, fmod as fmod, frac as frac,
    gather as gather, ge as ge, ger as ger, greater as greater, greater_equal as greater_equal,
    gt as gt, hstack as hstack, index_add as index_add, index_copy as index_copy, index_fill as index_fill,
    index_put as index_put,
    index_select as index_select, is_floating_point as is_floating_point, is_inference as is_inference,
    is_storage as is_storage, is_tensor as is_tensor, isclose as isclose, isfinite as isfinite, isinf as isinf, isnan as isnan,
    kthvalue as kthvalue, le as le, lerp as lerp, less as less, less_equal as less_equal, log as log,
    log10 as log10, log1p as log1p, log2 as log2, log_softmax as log_softmax,
    logical_and as logical_and, logical_not as logical_not, logical_or as logical_or,
    logical_xor as logical_xor, logsumexp as logsumexp, lt as lt, masked_fill as masked_fill,
    masked_scatter as masked_scatter, masked_select as masked_select, matmul as matmul, max as max, maximum as maximum, mean as mean,
    median as median, meshgrid as meshgrid, min as min, minimum as minimum, mm as mm,
    moveaxis as moveaxis, movedim as movedim, mul as mul, multiply as multiply, mv as mv,
    nanmean as nanmean, nansum as nansum, narrow as narrow, ne as ne, neg as neg, negative as negative,
    nonzero as nonzero, norm as norm, not_equal as not_equal, numel as numel, outer as outer,
    permute as permute, pow as pow, prod as prod, quantile as quantile, reciprocal as reciprocal,
    relu as relu, remainder as remainder, repeat_interleave as repeat_interleave, reshape as reshape,
    result_type as result_type, roll as roll, round as round, rsqrt as rsqrt, rsub as rsub,
    scatter as scatter, scatter_add as scatter_add, scatter_reduce as scatter_reduce, select as select, sgn as sgn, sigmoid as sigmoid,
    sign as sign, signbit as signbit, sin as sin, sinh as sinh, softmax as softmax, sort as sort,
    split as split, sqrt as sqrt, square as square, squeeze as squeeze, stack as stack, std as std,
    std_mean as std_mean, sub as sub, subtract as subtract, sum as sum, swapaxes as swapaxes,
    swapdims as swapdims, t as t, take_along_dim as take_along_dim, tan as tan, tanh as tanh,
    tensor_split as tensor_split, topk as topk, trace as trace, transpose as transpose, tril as tril,
    triu as triu, true_divide as true_divide, trunc as trunc, unbind as unbind, unflatten as unflatten,
    unsqueeze as unsqueeze, var as var, var_mean as var_mean, vstack as vstack, where as where
)
# torch functions composed of other tracegrad functions (_api/composite.py).
from ._api.functions import (
    atleast_1d as atleast_1d, atleast_2d as atleast_2d, atleast_3d as atleast_3d, bincount as bincount,
    bucketize as bucketize, cartesian_prod as cartesian_prod, column_stack as column_stack,
    deg2rad as deg2rad, diff as diff, dstack as dstack, inner as inner, isin as isin, kron as kron,
    logaddexp as logaddexp, nan_to_num as nan_to_num, rad2deg as rad2deg, rot90 as rot90,
    searchsorted as searchsorted, tensordot as tensordot, tile as tile, tril_indices as tril_indices,
    triu_indices as triu_indices, unique as unique, xlogy as xlogy, hypot as hypot, copysign as copysign,
    heaviside as heaviside, sinc as sinc, float_power as float_power
)
# more composites: builders, take, baddbmm, integration, statistics (_api/composite_more.py).
from ._api.functions import (
    baddbmm as baddbmm, block_diag as block_diag, combinations as combinations, diag_embed as diag_embed,
    dist as dist, histc as histc, mode as mode, take as take, trapezoid as trapezoid, trapz as trapz,
    unique_consecutive as unique_consecutive, vander as vander
)
# statistics (_api/statistics.py), and functions tracegrad gained with them (adjoint, cumulative_trapezoid).
from ._api.functions import (  # noqa: E402
    adjoint as adjoint, corrcoef as corrcoef, cov as cov, cumulative_trapezoid as cumulative_trapezoid,
    histogram as histogram, histogramdd as histogramdd, nanmedian as nanmedian, nanquantile as nanquantile,
    segment_reduce as segment_reduce
)
# integer functions (_api/integer_math.py), incomplete gamma (_api/special_math.py) and more small
# compositions (_api/composite_extra.py)
from ._api.functions import (  # noqa: E402
    bitwise_left_shift as bitwise_left_shift, bitwise_right_shift as bitwise_right_shift, gcd as gcd, gcd_ as gcd_,
    lcm as lcm, lcm_ as lcm_, igamma as igamma, igammac as igammac, chain_matmul as chain_matmul,
    diagonal_scatter as diagonal_scatter, get_device as get_device, gradient as gradient, index_reduce as index_reduce, is_nonzero as is_nonzero, is_same_size as is_same_size,
    is_signed as is_signed, nonzero_static as nonzero_static, put as put, renorm as renorm,
    scalar_tensor as scalar_tensor, select_scatter as select_scatter, slice_scatter as slice_scatter,
    split_with_sizes as split_with_sizes, unravel_index as unravel_index, unsafe_chunk as unsafe_chunk,
    unsafe_split as unsafe_split, unsafe_split_with_sizes as unsafe_split_with_sizes
)
# storage-addressing views and torch's *_copy functions (_api/strided.py)
from ._api.functions import (  # noqa: E402
    as_strided as as_strided, view_copy as view_copy, diagonal_copy as diagonal_copy,
    split_copy as split_copy, split_with_sizes_copy as split_with_sizes_copy, select_copy as select_copy,
    slice_copy as slice_copy, transpose_copy as transpose_copy, permute_copy as permute_copy,
    t_copy as t_copy, unsqueeze_copy as unsqueeze_copy, squeeze_copy as squeeze_copy,
    expand_copy as expand_copy, unbind_copy as unbind_copy, as_strided_copy as as_strided_copy,
    narrow_copy as narrow_copy, unfold_copy as unfold_copy, alias_copy as alias_copy,
    detach_copy as detach_copy, view_as_real_copy as view_as_real_copy,
    view_as_complex_copy as view_as_complex_copy, as_strided_ as as_strided_, as_strided_scatter as as_strided_scatter,
    resize_as_ as resize_as_, slice_inverse as slice_inverse
)
# draws from tensor parameters and empty_strided (_api/random_draws.py)
from ._api.functions import (  # noqa: E402
    bernoulli as bernoulli, binomial as binomial, empty_permuted as empty_permuted, empty_strided as empty_strided, normal as normal,
    poisson as poisson
)
# aliases, one-line compositions and torch's top-level in-place functions (_api/composite_names.py).
from ._api.functions import (  # noqa: E402
    abs_ as abs_, acos_ as acos_, acosh_ as acosh_, addbmm as addbmm, addmv as addmv, addmv_ as addmv_, addr as addr,
    aminmax as aminmax, clamp_max_ as clamp_max_, clamp_min_ as clamp_min_, deg2rad_ as deg2rad_, erfc_ as erfc_,
    i0_ as i0_, ldexp_ as ldexp_, logit_ as logit_, nan_to_num_ as nan_to_num_, rad2deg_ as rad2deg_, sinc_ as sinc_,
    xlogy_ as xlogy_,
    arccos_ as arccos_, arccosh_ as arccosh_, arcsin_ as arcsin_, arcsinh_ as arcsinh_, arctan2 as arctan2,
    arctan_ as arctan_, arctanh_ as arctanh_, asin_ as asin_, asinh_ as asinh_, atan_ as atan_, atanh_ as atanh_,
    ceil_ as ceil_, clamp_ as clamp_, clip_ as clip_, conj_physical_ as conj_physical_, cos_ as cos_,
    cosh_ as cosh_, detach_ as detach_, diagflat as diagflat, dsplit as dsplit, erf_ as erf_, exp2_ as exp2_,
    exp_ as exp_, expm1_ as expm1_, fill_ as fill_, fix_ as fix_, floor_ as floor_, frac_ as frac_,
    hsplit as hsplit, index_put_ as index_put_, isneginf as isneginf, isposinf as isposinf, isreal as isreal,
    log10_ as log10_, log1p_ as log1p_, log2_ as log2_, log_ as log_, logaddexp2 as logaddexp2, msort as msort,
    neg_ as neg_, negative_ as negative_, positive as positive, ravel as ravel, reciprocal_ as reciprocal_,
    relu_ as relu_, round_ as round_, row_stack as row_stack, rsqrt_ as rsqrt_, sigmoid_ as sigmoid_,
    sin_ as sin_, sinh_ as sinh_, sparse_coo_tensor as sparse_coo_tensor, spmm as spmm, sqrt_ as sqrt_, square_ as square_, tan_ as tan_, tanh_ as tanh_,
    trunc_ as trunc_, vdot as vdot, vsplit as vsplit, zero_ as zero_,
    _softmax_backward_data as _softmax_backward_data, _log_softmax_backward_data as _log_softmax_backward_data
)
# special functions and scans, ops of their own (_ops/special.py, _api/special_math.py).
from ._api.functions import (
    cummax as cummax, cummin as cummin, digamma as digamma, erfc as erfc, frexp as frexp, i0 as i0,
    ldexp as ldexp, lgamma as lgamma, logcumsumexp as logcumsumexp, logit as logit, mvlgamma as mvlgamma,
    nextafter as nextafter, polar as polar, polygamma as polygamma
)
# complex tensors: part views, conj, angle (_api/complex_api.py).
from ._api.functions import (
    angle as angle, complex as complex, conj as conj, conj_physical as conj_physical, imag as imag,
    is_complex as is_complex, is_conj as is_conj, is_neg as is_neg, real as real, resolve_conj as resolve_conj,
    resolve_neg as resolve_neg, view_as_complex as view_as_complex, view_as_real as view_as_real
)
# torch's nn-level free functions (tracegrad.conv2d, tracegrad.batch_norm...).
from ._api.nn_functions import (
    adaptive_avg_pool1d as adaptive_avg_pool1d, adaptive_max_pool1d as adaptive_max_pool1d,
    avg_pool1d as avg_pool1d, batch_norm as batch_norm, batch_norm_update_stats as batch_norm_update_stats,
    celu as celu,
    constant_pad_nd as constant_pad_nd, conv1d as conv1d, conv2d as conv2d, conv3d as conv3d,
    conv_transpose1d as conv_transpose1d, conv_transpose2d as conv_transpose2d,
    convolution as convolution, dropout as dropout, embedding as embedding, group_norm as group_norm,
    layer_norm as layer_norm, max_pool1d as max_pool1d, max_pool2d as max_pool2d,
    native_batch_norm as native_batch_norm, selu as selu, _weight_norm as _weight_norm,
    _weight_norm_interface as _weight_norm_interface
)
from . import autograd as autograd  # noqa: E402
from . import serialization as serialization  # noqa: E402
from . import _utils as _utils  # noqa: E402  (torch._utils._element_size, used by torch's own tests)
from .serialization import load as load, save as save  # noqa: E402
from .autograd.grad_mode import (  # noqa: E402
    enable_grad as enable_grad, inference_mode as inference_mode, is_grad_enabled as is_grad_enabled,
    is_inference_mode_enabled as is_inference_mode_enabled, no_grad as no_grad,
    set_grad_enabled as set_grad_enabled
)
from .autograd.anomaly_mode import (  # noqa: E402
    is_anomaly_check_nan_enabled as is_anomaly_check_nan_enabled,
    is_anomaly_enabled as is_anomaly_enabled
)
from . import distributed as distributed  # noqa: E402  (before nn: nn.parallel uses it)
from . import nn as nn, optim as optim, utils as utils  # noqa: E402  (torch imports these at import, too)
from . import func as func, viz as viz  # noqa: E402
from .func import from_dlpack as from_dlpack, from_jax as from_jax, jax_function as jax_function  # noqa: E402
from .func import vmap as vmap  # noqa: E402  (torch.vmap is torch.func.vmap)
from . import compiler as compiler  # noqa: E402
from . import profiler as profiler  # noqa: E402
from . import _dynamo as _dynamo  # noqa: E402
from . import _logging as _logging  # noqa: E402  (torch._logging.set_logs)
from . import jit as jit  # noqa: E402
from . import linalg as linalg  # noqa: E402
from . import sparse as sparse  # noqa: E402
from . import random as random  # noqa: E402
from . import storage as storage  # noqa: E402  (torch.storage: the storage classes' module)
from . import __future__ as __future__  # noqa: E402  (torch.__future__'s conversion flags)
from ._checks import (  # noqa: E402  (torch._check and family)
    _check as _check, _check_index as _check_index, _check_is_size as _check_is_size,
    _check_not_implemented as _check_not_implemented, _check_tensor_all as _check_tensor_all,
    _check_type as _check_type, _check_value as _check_value, _check_with as _check_with,
)
from . import quasirandom as quasirandom  # noqa: E402
from . import testing as testing  # noqa: E402
from . import distributions as distributions  # noqa: E402
from . import special as special  # noqa: E402
from . import fft as fft  # noqa: E402
from . import signal as signal  # noqa: E402
# short-time Fourier transforms and windows (_spectral.py; it also sets Tensor.stft/istft)
from ._spectral import (  # noqa: E402
    bartlett_window as bartlett_window, blackman_window as blackman_window, hamming_window as hamming_window,
    hann_window as hann_window, istft as istft, kaiser_window as kaiser_window, stft as stft
)
from . import onnx as onnx  # noqa: E402  (export raises: tracegrad has no ONNX exporter)
from . import hub as hub  # noqa: E402
# torch's top-level linear algebra on tracegrad.linalg (L7; it also sets the Tensor methods)
from ._linalg_functions import (  # noqa: E402
    cross as cross, det as det, inverse as inverse, logdet as logdet, matrix_power as matrix_power,
    pinverse as pinverse, slogdet as slogdet, svd as svd, cholesky as cholesky, cholesky_solve as cholesky_solve,
    cholesky_inverse as cholesky_inverse, lu as lu, lu_unpack as lu_unpack, lu_solve as lu_solve, qr as qr,
    triangular_solve as triangular_solve, matrix_exp as matrix_exp, geqrf as geqrf, orgqr as orgqr, ormqr as ormqr,
    nuclear_norm as nuclear_norm, frobenius_norm as frobenius_norm
)
# randomized low-rank SVD/PCA and LOBPCG (torch._lowrank, torch._lobpcg; L7, on tracegrad.linalg)
from ._lowrank import pca_lowrank as pca_lowrank, svd_lowrank as svd_lowrank  # noqa: E402
from ._lobpcg import lobpcg as lobpcg  # noqa: E402
from .nn.functional import cosine_similarity as cosine_similarity  # noqa: E402
from .nn.functional import conv_tbc as conv_tbc  # noqa: E402
# torch's top-level spellings of nn ops, ATen signatures (nn/_toplevel.py)
from .nn._toplevel import (  # noqa: E402
    alpha_dropout as alpha_dropout, alpha_dropout_ as alpha_dropout_, bilinear as bilinear, celu_ as celu_,
    binary_cross_entropy_with_logits as binary_cross_entropy_with_logits, channel_shuffle as channel_shuffle,
    native_channel_shuffle as native_channel_shuffle,
    conv_transpose3d as conv_transpose3d, cosine_embedding_loss as cosine_embedding_loss, ctc_loss as ctc_loss,
    dropout_ as dropout_, feature_alpha_dropout as feature_alpha_dropout,
    feature_alpha_dropout_ as feature_alpha_dropout_, hardshrink as hardshrink,
    hinge_embedding_loss as hinge_embedding_loss, instance_norm as instance_norm, kl_div as kl_div,
    margin_ranking_loss as margin_ranking_loss, max_pool3d as max_pool3d, pairwise_distance as pairwise_distance,
    pdist as pdist, pixel_shuffle as pixel_shuffle, pixel_unshuffle as pixel_unshuffle,
    poisson_nll_loss as poisson_nll_loss, prelu as prelu, rms_norm as rms_norm, rrelu as rrelu, rrelu_ as rrelu_,
    selu_ as selu_, threshold as threshold, threshold_ as threshold_, triplet_margin_loss as triplet_margin_loss
)
from .compiler import compile as compile  # noqa: E402,A001
from . import accelerator as accelerator, amp as amp, backends as backends, cuda as cuda, mps as mps, xpu as xpu  # noqa: E402
from ._tensor.runtime import (
    are_deterministic_algorithms_enabled as are_deterministic_algorithms_enabled,
    is_deterministic_algorithms_warn_only_enabled as is_deterministic_algorithms_warn_only_enabled,
    use_deterministic_algorithms as use_deterministic_algorithms,
    set_deterministic_debug_mode as set_deterministic_debug_mode,
    get_deterministic_debug_mode as get_deterministic_debug_mode,
    get_default_device as get_default_device,
    get_float32_matmul_precision as get_float32_matmul_precision,
    set_default_device as set_default_device,
    set_float32_matmul_precision as set_float32_matmul_precision
)
from .amp import autocast as autocast  # noqa: E402
from .amp.autocast_mode import (  # noqa: E402
    autocast_decrement_nesting as autocast_decrement_nesting, autocast_increment_nesting as autocast_increment_nesting,
    clear_autocast_cache as clear_autocast_cache, get_autocast_dtype as get_autocast_dtype,
    is_autocast_cache_enabled as is_autocast_cache_enabled, is_autocast_enabled as is_autocast_enabled,
    set_autocast_cache_enabled as set_autocast_cache_enabled, set_autocast_dtype as set_autocast_dtype,
    set_autocast_enabled as set_autocast_enabled
)
from .amp.legacy import (  # noqa: E402
    get_autocast_cpu_dtype as get_autocast_cpu_dtype, get_autocast_gpu_dtype as get_autocast_gpu_dtype,
    is_autocast_cpu_enabled as is_autocast_cpu_enabled, set_autocast_cpu_dtype as set_autocast_cpu_dtype,
    set_autocast_cpu_enabled as set_autocast_cpu_enabled, set_autocast_gpu_dtype as set_autocast_gpu_dtype
)


from ._api.creation import (  # noqa: E402  (typed legacy constructors)
    BFloat16Tensor as BFloat16Tensor, BoolTensor as BoolTensor, ByteTensor as ByteTensor, CharTensor as CharTensor,
    DoubleTensor as DoubleTensor, FloatTensor as FloatTensor, HalfTensor as HalfTensor, IntTensor as IntTensor,
    LongTensor as LongTensor, ShortTensor as ShortTensor,
)

# torch's smaller top-level functions (_api/torch_extras.py)
from .nn._toplevel import (  # noqa: E402
    feature_dropout as feature_dropout, feature_dropout_ as feature_dropout_, grid_sampler as grid_sampler,
    grid_sampler_2d as grid_sampler_2d, grid_sampler_3d as grid_sampler_3d, embedding_renorm_ as embedding_renorm_,
    norm_except_dim as norm_except_dim, gru_cell as gru_cell, lstm_cell as lstm_cell,
    max_pool1d_with_indices as max_pool1d_with_indices, native_dropout as native_dropout,
    native_group_norm as native_group_norm, native_layer_norm as native_layer_norm,
    rnn_relu_cell as rnn_relu_cell, rnn_tanh_cell as rnn_tanh_cell, embedding_bag as embedding_bag,
    _embedding_bag as _embedding_bag, _embedding_bag_forward_only as _embedding_bag_forward_only,
    gru as gru, lstm as lstm, rnn_relu as rnn_relu, rnn_tanh as rnn_tanh
)
from ._api.torch_extras import (  # noqa: E402
    SymBool as SymBool, SymFloat as SymFloat, SymInt as SymInt, cond as cond, detach as detach, eig as eig,
    fill as fill, frombuffer as frombuffer, is_warn_always_enabled as is_warn_always_enabled, lstsq as lstsq,
    matrix_rank as matrix_rank, OutOfMemoryError as OutOfMemoryError, set_anomaly_enabled as set_anomaly_enabled, set_default_tensor_type as set_default_tensor_type,
    _nnpack_available as _nnpack_available,
    set_flush_denormal as set_flush_denormal, set_warn_always as set_warn_always, solve as solve,
    sym_float as sym_float, sym_int as sym_int, sym_ite as sym_ite, sym_max as sym_max, sym_min as sym_min,
    sym_not as sym_not, sym_sqrt as sym_sqrt, sym_sum as sym_sum, symeig as symeig, while_loop as while_loop
)
from .amp import GradScaler as GradScaler  # noqa: E402  (torch.GradScaler is torch.amp.GradScaler)
from ._api.foreach import FOREACH as _FOREACH  # noqa: E402
globals().update(_FOREACH)  # torch._foreach_add, ... (91 names, listed in _api/foreach.py)
del _FOREACH
from . import library as library  # noqa: E402
from . import cpu as cpu, types as types, _inductor as _inductor, _functorch as _functorch  # noqa: E402
from . import overrides as overrides, _C as _C  # noqa: E402  (torch imports both at import)
from .library import ops as ops  # noqa: E402  (torch.ops.<namespace>.<operator>)

from .version import __version__ as __version__  # noqa: E402
from . import torch_version as torch_version  # noqa: E402
from . import version as version, multiprocessing as multiprocessing  # noqa: E402
from .func import to_dlpack as to_dlpack  # noqa: E402


def get_device_module(device=None):
    """Mirrors ``torch.get_device_module``: the module of a device type (``tracegrad.cuda`` for
    'cuda', ``tracegrad.cpu``, ``tracegrad.mps``, ``tracegrad.xpu``); the current accelerator's
    (or cpu's) for None. RuntimeError for a device type without one."""
    if device is None:
        dev_type = "cuda" if cuda.is_available() else "cpu"
    else:
        dev_type = _tensor.device.device(device).type if isinstance(device, str) else getattr(device, "type", None)
    module = {"cuda": cuda, "cpu": cpu, "mps": mps, "xpu": xpu}.get(dev_type)
    if module is None:
        raise RuntimeError(f"Device '{dev_type}' does not have a corresponding module registered as 'torch.{dev_type}'.")
    return module


from ._tensor.tensor_str import set_printoptions as set_printoptions  # noqa: E402
from . import _tensor_str as _tensor_str  # noqa: E402


from ._api.threads import (  # noqa: E402
    get_num_interop_threads as get_num_interop_threads, get_num_threads as get_num_threads,
    set_num_interop_threads as set_num_interop_threads, set_num_threads as set_num_threads,
)


def typename(obj):
    """Mirrors ``torch.typename``: a tensor's legacy type string (``obj.type()``, e.g.
    ``'torch.FloatTensor'``); otherwise ``module.qualname`` of ``obj`` when it has a
    ``__qualname__`` (a class or function), else of its class, with the module left off
    for builtins (``typename(3) == 'int'``)."""
    if isinstance(obj, Tensor):
        return obj.type()
    if hasattr(obj, "__qualname__") or hasattr(obj, "__name__"):
        module = getattr(obj, "__module__", "") or ""
        qualname = getattr(obj, "__qualname__", None) or obj.__name__
    else:
        module = type(obj).__module__ or ""
        qualname = type(obj).__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def _assert(condition, message):
    """``torch._assert``: ``assert condition, message`` that symbolic tracing can record (a
    ``tracegrad.fx`` Proxy condition reaches its ``__torch_function__`` instead of ``bool()``).
    Raises AssertionError(message) when ``condition`` is false."""
    if type(condition) is not Tensor:
        from ._tensor.torch_function import handle_torch_function, has_torch_function
        if has_torch_function((condition,)):
            return handle_torch_function(_assert, (condition,), condition, message)
    assert condition, message


from . import __config__ as __config__  # noqa: E402  (torch.__config__: show(), parallel_info())
from . import functional as functional  # noqa: E402  (torch.functional; it reads the names above)
from . import fx as fx  # noqa: E402  (torch imports torch.fx at import, too)
from . import _dynamo_backends  # noqa: E402,F401  (user backends get FX graphs: it registers itself with compile)
from . import masked as masked  # noqa: E402  (torch.masked; built on the names above)
from ._api.streams import Event as Event, Stream as Stream  # noqa: E402  (CPU semantics: _api/streams.py)
from ._C import (  # noqa: E402
    DisableTorchFunction as DisableTorchFunction, DisableTorchFunctionSubclass as DisableTorchFunctionSubclass
)
from ._tensor.storage import TypedStorage as TypedStorage  # noqa: E402  (torch's storage classes)
from ._tensor.storage_types import LEGACY_STORAGES as _LEGACY_STORAGES, UntypedStorage as UntypedStorage  # noqa: E402
globals().update(_LEGACY_STORAGES)   # FloatStorage, LongStorage, ... (12 names, _tensor/storage_types.py)
del _LEGACY_STORAGES


# ``sys.modules["torch"] = tracegrad`` then ``import torch.nn`` gives tracegrad.nn itself (_torch_alias.py)
from . import _torch_alias  # noqa: E402
_torch_alias.install()
del _torch_alias


# torch's TypeError for an argument of the wrong kind, on the op families' functions (argcheck.py)
from ._api.argcheck import guard_all as _guard_all  # noqa: E402
_guard_all(globals())
del _guard_all

# a library function rebound between compiled calls (``F.linear = ...``) traces again: NOTE
# [library functions patched between calls] in _state.py
from ._state import watch_modules as _watch_modules  # noqa: E402
_watch_modules(__name__)
del _watch_modules


def __getattr__(name):
    # torch.Storage follows the default dtype (set_default_dtype / set_default_tensor_type):
    # FloatStorage under float32, DoubleStorage under float64, as torch
    if name == "Storage":
        kind = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16"}
        return globals()[kind[get_default_dtype().name] + "Storage"]
    raise AttributeError(f"module 'tracegrad' has no attribute {name!r}")
