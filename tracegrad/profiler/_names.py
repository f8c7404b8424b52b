"""Profiler event names for tracegrad's ops: ``aten::<name>``, torch's name for the same op.

tracegrad's op table uses torch's aten names, except where one torch op is several table rows
(an overload: ``sum_dim``, ``pow_tensor``, ``div_scalar``), an indexing form (``index_int`` is
torch's ``select``), or a ``torch.special`` function. This table maps those rows to the name
torch's profiler shows; every other op keeps its table name. Names with no torch counterpart
(``backward_hook_function``, ``rnn_layer``) stay as they are."""

_TORCH_NAMES = {
    # overloads: torch's profiler names the op, not its overload
    "clamp_max_tensor": "clamp_max", "clamp_min_tensor": "clamp_min", "clamp_tensor": "clamp",
    "copysign_scalar": "copysign", "div_scalar": "div", "div_mode": "div", "fill_tensor": "fill", "fmod_tensor": "fmod",
    "index_fill_tensor": "index_fill", "lerp_tensor": "lerp", "masked_fill_tensor": "masked_fill",
    "max_all": "max", "max_dim": "max", "mean_dim": "mean", "median_all": "median", "median_dim": "median",
    "min_all": "min", "min_dim": "min", "mul_scalar": "mul", "nanmedian_all": "nanmedian",
    "nanmedian_dim": "nanmedian", "normal_float_tensor": "normal", "normal_tensor_float": "normal",
    "normal_tensor_tensor": "normal", "pad_mode": "pad", "pow_scalar_base": "pow", "pow_tensor": "pow",
    "prod_dim": "prod", "remainder_tensor": "remainder", "repeat_interleave_tensor": "repeat_interleave",
    "roll_flat": "roll", "round_decimals": "round", "rsub_tensor": "rsub", "scatter_value": "scatter",
    "squeeze_dim": "squeeze", "squeeze_dims": "squeeze", "sum_dim": "sum",
    # indexing and views
    "basic_index": "index", "index_alias": "alias", "index_int": "select", "index_none": "unsqueeze",
    "index_slice": "slice", "imag_view": "imag", "real_view": "real", "reshape_copy": "reshape",
    "matmul_clone": "matmul", "matmul_squeeze": "matmul", "to_copy": "_to_copy",
    # torch.special and torch's private kernels
    "entr": "special_entr", "erfcx": "special_erfcx", "i0e": "special_i0e", "i1": "special_i1",
    "i1e": "special_i1e", "log_ndtr": "special_log_ndtr", "ndtri": "special_ndtri", "zeta": "special_zeta",
    "standard_gamma": "_standard_gamma", "upsample_bicubic2d_aa": "_upsample_bicubic2d_aa",
    "upsample_bilinear2d_aa": "_upsample_bilinear2d_aa", "upsample_nearest_exact1d": "_upsample_nearest_exact1d",
    "upsample_nearest_exact2d": "_upsample_nearest_exact2d", "upsample_nearest_exact3d": "_upsample_nearest_exact3d",
    # layers that are one op here
    "nn_embedding": "embedding", "lstm_layer": "lstm", "pairwise_norm": "pairwise_distance",
}

_cache: dict = {}


def event_name(op, inplace: bool = False) -> str:
    """``aten::<torch's name>`` for ``op`` (a table Op), with ``_`` appended for its in-place form."""
    key = (op.name, inplace)
    name = _cache.get(key)
    if name is None:
        name = _cache[key] = "aten::" + _TORCH_NAMES.get(op.name, op.name) + ("_" if inplace else "")
    return name
