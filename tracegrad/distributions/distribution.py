"""Mirrors ``torch.distributions.Distribution``: batch/event shapes, argument and sample
validation (on by default, as torch: ``Distribution.set_default_validate_args``), and the
``sample``/``rsample``/``log_prob``/``entropy`` interface the concrete classes fill in."""
from __future__ import annotations

import numbers

import tracegrad
from tracegrad import _state

from . import constraints
from .utils import broadcast_all, lazy_property
from .._ops.warn import warn as _warn

__all__ = ["Distribution"]


def _show(value):
    return str(value.item()) if isinstance(value, tracegrad.Tensor) and value.dim() == 0 else str(value)


def _all_valid(valid, what):
    """``bool(valid.all())`` for argument/sample validation. Inside a compiled function the check
    reads values Python cannot see while tracing (a graph break, as any ``bool(tensor)``): the
    break then says that validation is the reason and how to compile without it."""
    try:
        return bool(valid.all())
    except tracegrad.compiler.GraphBreak as e:
        cap = _state.CAPTURE[0]
        if cap is not None:
            cap.broken = None          # replaced by the more precise reason below
        raise tracegrad.compiler.GraphBreak(
            f"{what} checks its values in Python (validate_args, on by default as in torch); build the "
            f"distribution with validate_args=False, or call "
            f"torch.distributions.Distribution.set_default_validate_args(False), to compile it", e.where) from None


class Distribution:
    """Mirrors ``torch.distributions.Distribution``.

    ``batch_shape``/``event_shape`` are ``tracegrad.Size``; ``sample(sample_shape)`` draws
    without gradient, ``rsample`` with the reparameterisation gradient (where ``has_rsample``).
    With validation on, bad parameters raise ValueError at construction and out-of-support
    values raise ValueError in ``log_prob``, with torch's messages.
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        """Turns validation on or off for distributions made afterwards (ValueError for a non-bool)."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = tracegrad.Size(batch_shape)
        self._event_shape = tracegrad.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                # a user subclass without ``arg_constraints`` (robomimic's TanhWrappedDistribution):
                # torch validates nothing and warns once per construction
                arg_constraints = {}
                _warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                      "`arg_constraints = {}` or initialize the distribution with "
                      "`validate_args=False` to turn off validation.")
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue
                value = getattr(self, param)
                if not _all_valid(constraint.check(value), f"{type(self).__name__}(validate_args=True) argument '{param}'"):
                    raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                     f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                     f"{constraint!r}, but found invalid values:\n{_show(value)}")

    @property
    def arg_constraints(self):
        """Argument name -> constraint; every family defines it, and a subclass that does not
        raises NotImplementedError here, as torch's base property does."""
        raise NotImplementedError

    def _init_params(self, names, values, validate_args):
        """Stores ``values`` (numbers or tensors, broadcast together) as attributes ``names`` and
        initialises with their shape as ``batch_shape`` (``()`` when all are Python numbers)."""
        tensors = broadcast_all(*values)
        for name, t in zip(names, tensors):
            setattr(self, name, t)
        numbers_only = all(isinstance(v, numbers.Number) for v in values)
        Distribution.__init__(self, () if numbers_only else tensors[0].shape, validate_args=validate_args)

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def expand(self, batch_shape, _instance=None):
        raise NotImplementedError

    def sample(self, sample_shape=()):
        """Draws ``sample_shape + batch_shape + event_shape`` values without gradient."""
        with tracegrad.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError

    def sample_n(self, n):
        return self.sample((n,))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return self.entropy().exp()

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def _extended_shape(self, sample_shape=()):
        if not isinstance(sample_shape, tuple):
            sample_shape = tuple(sample_shape)
        if any(isinstance(n, int) and n < 0 for n in sample_shape):   # torch: RuntimeError (was expand's text)
            raise RuntimeError(f"{type(self).__name__}.sample(): sample_shape {list(sample_shape)} holds a negative "
                               "size; sizes must be non-negative")
        return tracegrad.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value):
        if not isinstance(value, tracegrad.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: {value.shape} vs "
                             f"{self._event_shape}.")
        expected = tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(tuple(value.shape)), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {value.shape} vs "
                                 f"{tracegrad.Size(expected)}.")
        try:
            support = self.support
        except NotImplementedError:
            # a user subclass without ``support``: as torch, warn and check nothing more (the
            # same rule as a missing ``arg_constraints`` in __init__)
            _warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                  "initialize the distribution with `validate_args=False` to turn off validation.")
            return
        if not _all_valid(support.check(value), f"{type(self).__name__}.log_prob(validate_args=True)"):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{_show(value)}")

    def _expand_params(self, cls, batch_shape, _instance, names, event_shape=()):
        """``expand`` for a distribution whose parameters ``names`` are tensors of shape
        ``batch_shape + event_shape``: ``_instance`` (or a new ``cls``) over expanded views of
        them, validation as this one's."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = tracegrad.Size(batch_shape)
        full = tuple(batch_shape) + tuple(event_shape)
        for name in names:
            setattr(new, name, getattr(self, name).expand(full))
        Distribution.__init__(new, batch_shape, event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      f"__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {_show(self.__dict__[p]) if self.__dict__[p].numel() == 1 else self.__dict__[p].shape}"
                         for p in names)
        return f"{self.__class__.__name__}({args})"


class _CentredAtLoc:
    """Mixin for symmetric unimodal families: ``mean`` and ``mode`` are ``loc``."""

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc


class _LocScale(Distribution):
    """A real-valued family with a real ``loc`` and a positive ``scale`` (numbers or tensors,
    broadcast; ``batch_shape`` is their shape), reparameterised."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self._init_params(("loc", "scale"), (loc, scale), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(type(self), batch_shape, _instance, ("loc", "scale"))
