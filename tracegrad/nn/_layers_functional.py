"""More of ``torch.nn.functional``'s layers, composed of tracegrad ops: ``lp_pool1d/2d/3d``,
``max_unpool1d/2d/3d``, ``adaptive_max_pool3d``, ``local_response_norm``, ``channel_shuffle``,
``pdist`` and ``fractional_max_pool2d/3d``. Re-exported by ``functional.py``. Index sets (unpool output sizes, adaptive bins,
pdist pairs) come from static shapes only, so each traces into one program."""
from __future__ import annotations

import math

import numpy as np

import tracegrad

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
           "adaptive_max_pool3d", "adaptive_max_indices", "local_response_norm", "channel_shuffle", "pdist", "fractional_max_pool2d",
           "fractional_max_pool3d"]


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, n):
    F = tracegrad.nn.functional
    pool = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[n]
    k = _tuple(kernel_size, n)
    if stride is not None:
        out = pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = pool(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return (out.sign() * out.abs().relu()).mul(math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Mirrors ``torch.nn.functional.lp_pool1d``: ``(sum over the window of x^p)^(1/p)``
    (an average pool of ``x^p`` times the window size); ``(N, C, L)`` or ``(C, L)``."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Mirrors ``torch.nn.functional.lp_pool2d`` (see ``lp_pool1d``); ``(N, C, H, W)``."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Mirrors ``torch.nn.functional.lp_pool3d`` (see ``lp_pool1d``); ``(N, C, D, H, W)``."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    n = len(kernel_size)
    default = [(input.shape[-n + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a "
                         f"length of '{len(output_size)}'")
    for d in range(n):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})')
    return [int(s) for s in output_size]


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, n):
    k = _tuple(kernel_size, n)
    s = _tuple(stride if stride is not None else kernel_size, n)
    p = _tuple(padding, n)
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"max_unpool{n}d: expected {n + 1}D or {n + 2}D input, got {input.dim()}D")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"max_unpool{n}d: expected indices of the input's shape {list(input.shape)}, got "
                           f"{list(indices.shape)}")
    if indices.dtype != tracegrad.int64:
        raise RuntimeError(f"max_unpool{n}d: expected indices of dtype int64 (from max_pool{n}d("
                           f"return_indices=True)), got {indices.dtype}")
    out = _unpool_output_size(input, k, s, p, output_size)
    lead = tuple(input.shape[:-n])
    flat_in = input.reshape(*lead, -1)
    zeros = tracegrad.zeros(*lead, math.prod(out), dtype=input.dtype, device=input.device)
    idx = indices.reshape(*lead, -1)
    # value: the scatter (a window overlap writes the same max twice); gradient: torch's
    # gather of the output gradient for every input, duplicates included, which is the
    # scatter_add's (a zero-valued add-minus-detached term carries it)
    added = zeros.scatter_add(-1, idx, flat_in)
    res = zeros.scatter(-1, idx, flat_in.detach()) + (added - added.detach())
    return res.reshape(*lead, *out)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Mirrors ``torch.nn.functional.max_unpool1d``: the inverse of ``max_pool1d(...,
    return_indices=True)``: each value written at its flat index of an ``L_out`` row, zeros
    elsewhere; ``L_out = (L - 1) * stride - 2 * padding + kernel_size`` unless ``output_size``.
    Raises ValueError for an ``output_size`` of the wrong length or out of range."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Mirrors ``torch.nn.functional.max_unpool2d`` (see ``max_unpool1d``); indices into ``H*W``."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Mirrors ``torch.nn.functional.max_unpool3d`` (see ``max_unpool1d``); indices into ``D*H*W``."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Mirrors ``torch.nn.functional.adaptive_max_pool3d``: ``(N, C, D, H, W)`` or ``(C, D, H,
    W)`` to ``output_size`` (an int, a triple, ``None`` keeps a size) with torch's bins
    ``[floor(i*In/Out), ceil((i+1)*In/Out))``; the box max taken one dim at a time.
    ``return_indices=True`` also gives int64 flat indices into ``D*H*W`` (``adaptive_max_indices``)."""
    if isinstance(output_size, (list, tuple)) and input.dim() <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")   # torch's wrapper check
    if input.dim() not in (4, 5):
        raise RuntimeError(f"adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: {list(input.shape)}")
    out = _tuple(output_size, 3)
    if len(out) != 3:
        raise RuntimeError(f"adaptive_max_pool3d(): internal error: output_size.size() must be 3, got {len(out)}")
    x = input
    for d, o in enumerate(out):
        dim = input.dim() - 3 + d
        size = input.shape[dim]
        o = size if o is None else int(o)
        if size == 0 or o <= 0:
            raise RuntimeError("adaptive_max_pool3d(): expected non-empty input and positive output_size, got input "
                               f"{list(input.shape)} and output_size {output_size}")
        parts = [x.narrow(dim, (i * size) // o, -(-((i + 1) * size) // o) - (i * size) // o).amax(dim, keepdim=True)
                 for i in range(o)]
        x = tracegrad.cat(parts, dim)
    return (x, adaptive_max_indices(input, tuple(x.shape[-3:]))) if return_indices else x


def adaptive_max_indices(input, output_size):
    """Flat indices into the last ``len(output_size)`` dims of ``input`` of the maxima picked by an
    adaptive max pool with torch's bins ``[floor(i*In/Out), ceil((i+1)*In/Out))``: the first
    maximum of each bin, as torch's CPU kernel. int64 ``(*batch, *output_size)``, no gradient.
    Each bin is gathered at a fixed width ``k`` (its last element repeated, which cannot move
    the first maximum), so the gathers come from static shapes."""
    nd = len(output_size)
    spatial = tuple(input.shape[-nd:])
    x, tables = input.detach(), []
    for d, (size, o) in enumerate(zip(spatial, output_size)):
        starts = [(i * size) // o for i in range(o)]
        ends = [-(-((i + 1) * size) // o) for i in range(o)]
        k = max(e - b for b, e in zip(starts, ends))
        table = np.array([[min(b + j, e - 1) for j in range(k)] for b, e in zip(starts, ends)], dtype=np.int64)
        tables.append(table)
        dim = input.dim() - nd + 2 * d      # the spatial dims before this one are now (o, k) pairs
        x = x.index_select(dim, tracegrad.tensor(table.reshape(-1))).unflatten(dim, (o, k))
    lead = x.dim() - 2 * nd
    x = x.permute(*range(lead), *(lead + 2 * d for d in range(nd)), *(lead + 2 * d + 1 for d in range(nd)))
    local = x.flatten(-nd).argmax(-1)       # position within the (k1, ..., knd) box
    flat, stride = tracegrad.zeros_like(local), 1
    for d in reversed(range(nd)):
        table, kd = tracegrad.tensor(tables[d]), tables[d].shape[1]
        rows = tracegrad.arange(output_size[d]).reshape((-1,) + (1,) * (nd - 1 - d))
        flat = flat + table[rows, local % kd] * stride
        local, stride = local // kd, stride * spatial[d]
    return flat


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Mirrors ``torch.nn.functional.local_response_norm``: ``x / (k + alpha * mean of x^2 over
    `size` neighbouring channels)^beta`` (zero-padded at the channel ends). Raises ValueError for
    an input of fewer than 3 dims."""
    F = tracegrad.nn.functional
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = F.pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = F.avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = tuple(input.shape)
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = F.pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = F.avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).reshape(sizes)
    return input / div.mul(alpha).add(k).pow(beta)


def channel_shuffle(input, groups):
    """Mirrors ``torch.nn.functional.channel_shuffle``: ``(N, C, *)`` with channels regrouped
    ``(g, C/g) -> (C/g, g)``. Raises RuntimeError for fewer than 3 dims, ``groups <= 0`` or
    ``C`` not divisible by ``groups``."""
    if input.dim() < 3:
        raise RuntimeError("channel_shuffle expects input to have at least 3 dimensions, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c = input.shape[0], input.shape[1]
    if c % groups != 0:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


def pdist(input, p=2):
    """Mirrors ``torch.nn.functional.pdist``: the p-norm distance of every pair ``i < j`` of the
    rows of an ``(N, M)`` input, in row-major upper-triangle order: ``(N*(N-1)/2,)``. Raises
    RuntimeError for a non-2-D input or a negative ``p``."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    if len(i) == 0:
        return tracegrad.zeros(0, dtype=input.dtype, device=input.device) + input.sum() * 0
    diff = input[tracegrad.tensor(i)] - input[tracegrad.tensor(j)]
    return tracegrad.linalg.vector_norm(diff, ord=p, dim=1)


def _fractional_starts(sample, size, out, k):
    """torch's interval sequence for one spatial dim: ``floor((i + u) * alpha) - floor(u * alpha)``
    for ``i < out - 1`` and ``size - k`` last, ``alpha = (size - k) / (out - 1)`` (float32 as
    the kernel computes it); ``sample`` ``(N, C)`` gives ``(N, C, out)`` int64 starts."""
    if out == 1:
        return tracegrad.full((*sample.shape, 1), size - k, dtype=tracegrad.long, device=sample.device)
    alpha = float(np.float32(size - k) / np.float32(out - 1))
    i = tracegrad.arange(out - 1, dtype=sample.dtype, device=sample.device)
    u = sample.unsqueeze(-1)
    seq = ((i + u) * alpha).floor() - (u * alpha).floor()
    last = tracegrad.full((*sample.shape, 1), size - k, dtype=tracegrad.long, device=sample.device)
    return tracegrad.cat([seq.long(), last], -1)


def _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices, samples, n):
    name = f"fractional_max_pool{n}d"
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"{name}(): Expected {n + 1}D or {n + 2}D tensor, but got: {list(input.shape)}")
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    spatial = tuple(input.shape[-n:])
    k = _tuple(kernel_size, n)
    if output_size is None:
        ratio = _tuple(output_ratio, n)
        if len(ratio) != n:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
        output_size = [int(s * r) for s, r in zip(spatial, ratio)]
    out = [int(o) for o in _tuple(output_size, n)]
    dims = ["time", "height", "width"][-n:]
    for d in range(n):
        if out[d] + k[d] - 1 > spatial[d]:
            raise RuntimeError(f"{name}(): pool {dims[d]} {k[d]} too large relative to input {dims[d]} "
                               f"{spatial[d]}")
    batched = input.dim() == n + 2
    x = input if batched else input.unsqueeze(0)
    nb, c = x.shape[0], x.shape[1]
    if samples is None:
        samples = tracegrad.rand(nb, c, n, dtype=input.dtype, device=input.device)
    if tuple(samples.shape) != (nb, c, n):
        raise RuntimeError(f"{name}(): expected _random_samples of shape {[nb, c, n]}, got {list(samples.shape)}")
    # torch's sample order: (w, h) for 2-D, (t, h, w) for 3-D
    order = [1, 0] if n == 2 else [0, 1, 2]
    starts = [_fractional_starts(samples[..., order[d]], spatial[d], out[d], k[d]) for d in range(n)]
    # gather each dim's windows (out_d * k_d rows) one dim at a time, then max over the k-box
    for d in range(n):
        dim = 2 + d
        idx = (starts[d].unsqueeze(-1) + tracegrad.arange(k[d], device=input.device)).reshape(nb, c, -1)
        shape = list(x.shape)
        shape[dim] = idx.shape[-1]
        view = [nb, c] + [1] * n
        view[dim] = idx.shape[-1]
        x = x.gather(dim, idx.reshape(view).expand(shape))
    split = [nb, c]
    for d in range(n):
        split += [out[d], k[d]]
    x = x.reshape(split).permute(0, 1, *[2 + 2 * d for d in range(n)], *[3 + 2 * d for d in range(n)])
    values, arg = x.reshape(nb, c, *out, -1).max(-1)
    if not batched:
        values = values.squeeze(0)
    if not return_indices:
        return values
    flat = tracegrad.zeros_like(arg)
    rem = arg
    for d in range(n):
        inner = math.prod(k[d + 1:])
        off = rem // inner
        rem = rem - off * inner
        view = [nb, c] + [1] * n
        view[2 + d] = out[d]
        pos = starts[d].reshape(view) + off
        flat = flat * spatial[d] + pos
    return values, (flat if batched else flat.squeeze(0))


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Mirrors ``torch.nn.functional.fractional_max_pool2d``: max over ``kernel_size`` windows at
    pseudo-random fractional starts (one uniform sample per (sample, channel, dim), from
    tracegrad's generator unless ``_random_samples`` ``(N, C, 2)`` is given; torch's interval
    rule), to ``output_size`` or ``int(size * output_ratio)``. ``return_indices`` adds int64
    flat indices into ``H*W`` (for ``max_unpool2d``). Raises ValueError without an output size
    or ratio; RuntimeError when the pool is too large for the input."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 2)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Mirrors ``torch.nn.functional.fractional_max_pool3d`` (see ``fractional_max_pool2d``);
    ``_random_samples`` ``(N, C, 3)``, indices into ``D*H*W``."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 3)
