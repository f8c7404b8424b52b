"""Tensor methods, registration: attaches every family's methods and operators to ``Tensor``."""
from __future__ import annotations

from .._ops import dtypes as _dt
from .._tensor.tensor import Tensor
from .conversion import _cast, clone, contiguous, cpu, cuda, is_contiguous, stride, to, type_as
from .elementwise import (
    _rdiv, _rpow, _unaries, add, addcdiv, addcmul, allclose, atan2, bitwise_and, bitwise_or,
    bitwise_xor, clamp, clamp_max, clamp_min, div, eq, equal, floor_divide, fmax, fmin, fmod, ge, gt,
    isclose, le, lerp, logical_and, logical_or, logical_xor, lt, maximum, minimum, mul, ne, pow,
    remainder, round, rsub, sub, where
)
from .indexing import (
    argwhere, gather, getitem, index_add, index_put, index_put_, index_select, masked_fill,
    masked_select, nonzero, scatter, scatter_add, setitem, take_along_dim
)
from .inplace import (
    _inplace_unary, add_, addcdiv_, addcmul_, bernoulli_, clamp_, copy_, div_, exponential_, fill_,
    index_add_, lerp_, masked_fill_, mul_, normal_, pow_, random_, scatter_, scatter_add_, squeeze_,
    sub_, t_, transpose_, uniform_, unsqueeze_, zero_
)
from .linalg import addmm, bmm, dot, matmul, mm, mv, outer
from .promotion import _Number, result_dtype
from .reduction import (
    all, amax, amin, any, argmax, argmin, argsort, count_nonzero, cumprod, cumsum, kthvalue,
    log_softmax, logsumexp, max, mean, median, min, nanmean, nansum, norm, prod, quantile, softmax,
    sort, std, std_mean, sum, topk, var, var_mean
)
from .shape import (
    broadcast_to, chunk, diag, diagonal, expand, expand_as, flatten, flip, fliplr, flipud, movedim,
    narrow, permute, repeat, repeat_interleave, reshape, reshape_as, roll, select, split, squeeze, t,
    tensor_split, trace, transpose, tril, triu, unbind, unflatten, unsqueeze, view, view_as
)


def register_all():
    """Attach methods and operators to ``Tensor``."""
    T = Tensor
    methods = dict(
        add=add, sub=sub, subtract=sub, mul=mul, multiply=mul, div=div, divide=div, true_divide=div,
        floor_divide=floor_divide, remainder=remainder, fmod=fmod, pow=pow, atan2=atan2,
        maximum=maximum, minimum=minimum, fmax=fmax, fmin=fmin, eq=eq, ne=ne, lt=lt, le=le, gt=gt, ge=ge,
        greater=gt, greater_equal=ge, less=lt, less_equal=le, not_equal=ne,
        logical_and=logical_and, logical_or=logical_or, logical_xor=logical_xor,
        bitwise_and=bitwise_and, bitwise_or=bitwise_or, bitwise_xor=bitwise_xor,
        round=round, clamp=clamp, clip=clamp, clamp_min=clamp_min, clamp_max=clamp_max, lerp=lerp,
        addcmul=addcmul, addcdiv=addcdiv, isclose=isclose, allclose=allclose, equal=equal,
        where=lambda self, condition, other: where(condition, self, other),
        to=to, type_as=type_as, cpu=cpu, cuda=cuda, clone=clone, contiguous=contiguous,
        is_contiguous=is_contiguous, stride=stride,
        float=_cast(_dt.float32), double=_cast(_dt.float64), half=_cast(_dt.float16),
        bfloat16=_cast(_dt.bfloat16), long=_cast(_dt.int64), int=_cast(_dt.int32), short=_cast(_dt.int16),
        char=_cast(_dt.int8), byte=_cast(_dt.uint8), bool=_cast(_dt.bool_),
        sum=sum, nansum=nansum, mean=mean, nanmean=nanmean, prod=prod, var=var, std=std, max=max, min=min,
        amax=amax, amin=amin, argmax=argmax, argmin=argmin, logsumexp=logsumexp, softmax=softmax,
        log_softmax=log_softmax, norm=norm, cumsum=cumsum, cumprod=cumprod, all=all, any=any,
        count_nonzero=count_nonzero, quantile=quantile, sort=sort, argsort=argsort, topk=topk, kthvalue=kthvalue, median=median,
        matmul=matmul, mm=mm, bmm=bmm, mv=mv, dot=dot, addmm=addmm, outer=outer, ger=outer,
        view=view, reshape=reshape, view_as=view_as, reshape_as=reshape_as, flatten=flatten,
        unflatten=unflatten, squeeze=squeeze, unsqueeze=unsqueeze, transpose=transpose,
        swapaxes=transpose, swapdims=transpose, t=t, permute=permute, movedim=movedim, moveaxis=movedim,
        expand=expand, expand_as=expand_as, broadcast_to=broadcast_to, repeat=repeat,
        repeat_interleave=repeat_interleave, narrow=narrow, select=select, unbind=unbind, split=split,
        chunk=chunk, tensor_split=tensor_split, flip=flip, fliplr=fliplr, flipud=flipud, roll=roll,
        tril=tril, triu=triu, diag=diag, diagonal=diagonal, trace=trace,
        gather=gather, take_along_dim=take_along_dim, scatter=scatter, scatter_add=scatter_add,
        index_select=index_select, index_add=index_add, index_put=index_put, index_put_=index_put_,
        masked_fill=masked_fill, masked_select=masked_select, nonzero=nonzero, argwhere=argwhere,
        add_=add_, sub_=sub_, mul_=mul_, div_=div_, pow_=pow_, clamp_=clamp_, clip_=clamp_, copy_=copy_,
        fill_=fill_, zero_=zero_, masked_fill_=masked_fill_, scatter_=scatter_, scatter_add_=scatter_add_,
        index_add_=index_add_, addcmul_=addcmul_, addcdiv_=addcdiv_, lerp_=lerp_, t_=t_,
        transpose_=transpose_, squeeze_=squeeze_, unsqueeze_=unsqueeze_,
        normal_=normal_, uniform_=uniform_, bernoulli_=bernoulli_, random_=random_, exponential_=exponential_,
        var_mean=var_mean, std_mean=std_mean,
    )
    for name, fn in _unaries.items():
        methods.setdefault(name, fn)
        if name not in ("isnan", "isinf", "isfinite", "signbit", "sgn"):
            methods[name + "_"] = _inplace_unary(name)
    methods.update(negative=_unaries["neg"], absolute=_unaries["abs"], arcsin=_unaries["asin"],
                   arccos=_unaries["acos"], arctan=_unaries["atan"], fix=_unaries["trunc"])
    for name, fn in methods.items():
        setattr(T, name, fn)

    T.T = property(lambda self: permute(self, tuple(reversed(range(self.ndim)))))
    T.mT = property(lambda self: transpose(self, -2, -1))
    T.H = property(lambda self: permute(self, (1, 0)))
    T.real = property(lambda self: self)
    T.__getitem__ = getitem
    T.__setitem__ = setitem
    T.__add__ = T.__radd__ = lambda s, o: add(s, o)
    T.__sub__ = lambda s, o: sub(s, o)
    T.__rsub__ = lambda s, o: rsub(s, o)
    T.__mul__ = T.__rmul__ = lambda s, o: mul(s, o)
    T.__truediv__ = lambda s, o: div(s, o)
    T.__rtruediv__ = _rdiv
    T.__floordiv__ = lambda s, o: div(s, o, rounding_mode="floor")
    T.__rfloordiv__ = lambda s, o: div(_full_like_scalar(s, o), s, rounding_mode="floor")
    T.__mod__ = lambda s, o: remainder(s, o)
    T.__rmod__ = lambda s, o: remainder(_full_like_scalar(s, o), s)
    T.__pow__ = lambda s, o: pow(s, o)
    T.__rpow__ = _rpow
    T.__matmul__ = lambda s, o: matmul(s, o)
    T.__rmatmul__ = lambda s, o: matmul(o, s)
    T.__neg__ = _unaries["neg"]
    T.__pos__ = lambda s: s
    T.__abs__ = _unaries["abs"]
    T.__invert__ = lambda s: _unaries["logical_not"](s) if s.dtype is _dt.bool_ else _unaries["bitwise_not"](s)
    T.__and__ = T.__rand__ = lambda s, o: bitwise_and(s, o) if s.dtype is not _dt.bool_ else logical_and(s, o)
    T.__or__ = T.__ror__ = lambda s, o: bitwise_or(s, o) if s.dtype is not _dt.bool_ else logical_or(s, o)
    T.__xor__ = T.__rxor__ = lambda s, o: bitwise_xor(s, o) if s.dtype is not _dt.bool_ else logical_xor(s, o)
    T.__eq__ = lambda s, o: eq(s, o) if isinstance(o, (Tensor,) + _Number) else NotImplemented
    T.__ne__ = lambda s, o: ne(s, o) if isinstance(o, (Tensor,) + _Number) else NotImplemented
    T.__lt__ = lambda s, o: lt(s, o)
    T.__le__ = lambda s, o: le(s, o)
    T.__gt__ = lambda s, o: gt(s, o)
    T.__ge__ = lambda s, o: ge(s, o)
    T.__iadd__ = lambda s, o: add_(s, o)
    T.__isub__ = lambda s, o: sub_(s, o)
    T.__imul__ = lambda s, o: mul_(s, o)
    T.__itruediv__ = lambda s, o: div_(s, o)
    T.__ipow__ = lambda s, o: pow_(s, o)
    T.__hash__ = lambda s: id(s)


def _full_like_scalar(s, o):
    from .._tensor.factories import tensor
    return tensor(o, dtype=result_dtype(s, o))
