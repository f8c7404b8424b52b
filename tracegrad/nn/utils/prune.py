"""``tracegrad.nn.utils.prune``: mirrors ``torch.nn.utils.prune``.

Pruning re-parametrizes a module's tensor ``name``: the parameter moves to ``name + '_orig'``,
a 0/1 buffer ``name + '_mask'`` (the tensor's dtype) is registered, ``module.<name>`` becomes the
plain attribute ``mask * orig`` (grad_fn ``MulBackward0``), and the pruning method itself is a
forward pre-hook that recomputes that product before every forward. Pruning the same tensor
again combines the masks in a ``PruningContainer``; ``remove`` makes the pruning permanent.

Written on tracegrad's public API only (layer L7). Differs from torch: the random methods
(``random_unstructured``, ``random_structured``) draw from tracegrad's generator, so which
entries they prune differs from torch's for the same seed.
"""
from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import tracegrad

_ORIG, _MASK = "_orig", "_mask"


# ---- argument checks (torch's classes and messages) ---------------------------------------------

def _validate_pruning_amount_init(amount):
    """``amount`` is a fraction in [0, 1] or a count >= 0: TypeError / ValueError otherwise."""
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if isinstance(amount, numbers.Integral):
        bad = amount < 0
    else:
        bad = not 0.0 <= float(amount) <= 1.0
    if bad:
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_pruning_amount(amount, tensor_size):
    """ValueError for a count ``amount`` larger than ``tensor_size`` (torch's private helper of
    this name; a fraction always fits)."""
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")


def _compute_nparams_toprune(amount, tensor_size):
    """How many of ``tensor_size`` entries (or channels) ``amount`` prunes: a count as it is,
    a fraction rounded (torch's private helper of this name)."""
    if isinstance(amount, bool):
        # torch hands the count on as it is, so topk refuses a bool count (TypeError) where
        # int() would quietly prune one entry
        return amount
    return int(amount) if isinstance(amount, numbers.Integral) else round(amount * tensor_size)


def _n_to_prune(amount, size):
    _validate_pruning_amount(amount, size)
    return _compute_nparams_toprune(amount, size)


def _check_structured(t, dim):
    if t.dim() <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of "
                         f"shape {t.shape} with {t.dim()} dims")
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _channel_mask(t, dim, kept):
    """A mask shaped as ``t``: ones on the channels ``kept`` (indices or a bool mask) along
    ``dim``, zeros elsewhere."""
    mask = tracegrad.zeros_like(t)
    index = [slice(None)] * t.dim()
    index[dim] = kept
    mask[tuple(index)] = 1
    return mask


def _hooks_of(module, name):
    """``[(key, method)]`` of the pruning hooks of ``module`` acting on tensor ``name``."""
    return [(k, h) for k, h in module._forward_pre_hooks.items()
            if isinstance(h, BasePruningMethod) and h._tensor_name == name]


# ---- methods ------------------------------------------------------------------------------------

class BasePruningMethod(ABC):
    """Mirrors ``torch.nn.utils.prune.BasePruningMethod``: subclasses set ``PRUNING_TYPE``
    ('unstructured', 'structured' with a ``dim`` attribute, or 'global') and implement
    ``compute_mask(t, default_mask)``, returning a mask shaped as ``t`` that keeps the zeros of
    ``default_mask``. An instance is the module's forward pre-hook for its tensor."""

    _tensor_name = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask (shaped as ``t``) of this method for the importance scores ``t``."""

    def apply_mask(self, module):
        """``module.<name>_mask * module.<name>_orig`` (the mask cast to the tensor's dtype)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        orig = getattr(module, self._tensor_name + _ORIG)
        return getattr(module, self._tensor_name + _MASK).to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)``, composing with any earlier
        pruning of the same tensor; returns the method (or container) now hooked on the module.
        ``importance_scores`` (shaped as the tensor; default the tensor itself) decide the mask.
        Raises AssertionError for a score shape mismatch; on an error while computing the mask
        the module is left as it was."""
        method = cls._compose(module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is None:
            importance_scores = orig
        elif importance_scores.shape != orig.shape:
            raise AssertionError(f"importance_scores should have the same shape as parameter {name} of {module}, "
                                 f"got {importance_scores.shape} vs {orig.shape}")
        first = not isinstance(method, PruningContainer)
        if first:
            module.register_parameter(name + _ORIG, orig)
            del module._parameters[name]
            default_mask = tracegrad.ones_like(orig)
        else:
            default_mask = getattr(module, name + _MASK).detach().clone(memory_format=tracegrad.contiguous_format)
        try:
            module.register_buffer(name + _MASK, method.compute_mask(importance_scores, default_mask=default_mask))
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:   # put the parameter back where it was
                module.register_parameter(name, getattr(module, name + _ORIG))
                del module._parameters[name + _ORIG]
            raise
        return method

    @classmethod
    def _compose(cls, module, name, *args, **kwargs):
        """The new method for ``module.<name>``, joined with the tensor's earlier pruning into
        a ``PruningContainer``; the earlier hook is taken off the module."""
        found = _hooks_of(module, name)
        if len(found) > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module "
                                 f"{module}. Use a PruningContainer.")
        for k, _ in found:
            del module._forward_pre_hooks[k]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if not found:
            return method
        old = found[0][1]
        container = old if isinstance(old, PruningContainer) else PruningContainer(old)
        container.add_pruning_method(method)
        return container

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times this method's mask (computed from ``importance_scores``, default ``t``)."""
        if importance_scores is None:
            importance_scores = t
        elif importance_scores.shape != t.shape:
            raise AssertionError(f"importance_scores should have the same shape as tensor t, got "
                                 f"{importance_scores.shape} vs {t.shape}")
        if default_mask is None:
            default_mask = tracegrad.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruning permanent: ``module.<name>`` becomes a parameter again (the same
        Parameter object as ``<name>_orig``, holding the pruned values); ``_orig``/``_mask`` go."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        name = self._tensor_name
        pruned = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        param = module._parameters.pop(name + _ORIG)
        param.data = pruned.data
        del module._buffers[name + _MASK]
        setattr(module, name, param)


class PruningContainer(BasePruningMethod):
    """Mirrors ``torch.nn.utils.prune.PruningContainer``: the history of the pruning methods
    applied to one tensor (iterable, indexable, ``len``); its mask applies the newest method
    to the entries (or channels) the earlier masks kept."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1:
            # torch takes the tensor name from its one argument, so anything but a pruning
            # method (an int, a tuple of methods, None) is an AttributeError there, not a TypeError
            if not isinstance(args[0], BasePruningMethod):
                raise AttributeError(f"PruningContainer(method): {type(args[0]).__name__!r} object has no attribute "
                                     "'_tensor_name'; pass pruning methods one by one (PruningContainer(m1, m2))")
            self._tensor_name = args[0]._tensor_name
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method):
        """Append ``method``: TypeError if it is no pruning method, ValueError if it acts on
        another tensor than the container, AttributeError (as torch) while the container has no
        ``_tensor_name`` yet."""
        if method is not None and not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name is None:
            raise AttributeError("'PruningContainer' object has no attribute '_tensor_name': set "
                                 "container._tensor_name to the pruned tensor's name before add_pruning_method")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' to "
                             f"PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        kind = method.PRUNING_TYPE
        if kind == "unstructured":      # the entries still kept
            where = default_mask == 1
        elif kind == "structured":      # the channels along method.dim with any entry kept
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute `dim` '
                                     'defined.')
            dim = method.dim + t.dim() if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {t.dim()}")
            others = [d for d in range(t.dim()) if d != dim]
            where = [slice(None)] * t.dim()
            where[dim] = default_mask.sum(dim=others) != 0
            where = tuple(where)
        elif kind == "global":
            where = (slice(None),) * t.dim()
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        mask = default_mask.to(dtype=t.dtype)
        mask[where] = method.compute_mask(t[where], default_mask=default_mask[where]).to(dtype=mask.dtype)
        return mask


class Identity(BasePruningMethod):
    """Mirrors ``prune.Identity``: a mask of ones (the re-parametrization without pruning)."""
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class _Unstructured(BasePruningMethod):
    """Prunes ``amount`` (a fraction or a count) of the entries chosen by ``_pick``."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        k = _n_to_prune(self.amount, t.numel())
        mask = default_mask.clone(memory_format=tracegrad.contiguous_format)
        if k:
            mask.view(-1)[self._pick(t, k)] = 0
        return mask


class RandomUnstructured(_Unstructured):
    """Mirrors ``prune.RandomUnstructured``: prunes entries chosen uniformly at random."""

    @staticmethod
    def _pick(t, k):
        return tracegrad.topk(tracegrad.rand_like(t).view(-1), k=k).indices

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Mirrors ``prune.L1Unstructured``: prunes the entries of smallest absolute value."""

    @staticmethod
    def _pick(t, k):
        return tracegrad.topk(tracegrad.abs(t).view(-1), k=k, largest=False).indices

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Mirrors ``prune.RandomStructured``: prunes whole channels along ``dim`` at random."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        _check_structured(t, self.dim)
        size = t.shape[self.dim]
        k = _n_to_prune(self.amount, size)
        if not k:
            return default_mask
        draws = tracegrad.rand(size)
        mask = _channel_mask(t, self.dim, draws > tracegrad.kthvalue(draws, k=k).values)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Mirrors ``prune.LnStructured``: prunes the channels along ``dim`` of smallest
    ``n``-norm (``n`` as ``tracegrad.norm``'s ``p``: an int, float, 'fro', inf, -inf)."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t, default_mask):
        _check_structured(t, self.dim)
        size = t.shape[self.dim]
        k = _n_to_prune(self.amount, size)
        dim = self.dim % t.dim()
        norms = tracegrad.norm(t, p=self.n, dim=[d for d in range(t.dim()) if d != dim])
        kept = tracegrad.topk(norms, k=size - k, largest=True).indices
        if not k:
            return default_mask
        mask = _channel_mask(t, self.dim, kept)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Mirrors ``prune.CustomFromMask``: prunes where the given ``mask`` is 0."""
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask shape "
                                 f"{self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


# ---- functions ----------------------------------------------------------------------------------

def identity(module, name):
    """Mirrors ``prune.identity``: re-parametrize ``module.<name>`` with a mask of ones."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Mirrors ``prune.random_unstructured``: prune ``amount`` entries at random; returns module."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Mirrors ``prune.l1_unstructured``: prune the ``amount`` entries of smallest magnitude
    (of ``importance_scores`` when given); returns module."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Mirrors ``prune.random_structured``: prune ``amount`` channels along ``dim`` at random."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Mirrors ``prune.ln_structured``: prune the ``amount`` channels along ``dim`` of smallest
    ``n``-norm; returns module."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    """Mirrors ``prune.custom_from_mask``: prune ``module.<name>`` where ``mask`` is 0."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Mirrors ``prune.global_unstructured``: one unstructured ``pruning_method(**kwargs)``
    over all ``(module, name)`` pairs of ``parameters`` taken together (their scores, default
    the tensors, flattened into one vector), each tensor then pruned with its slice of the
    mask. ``importance_scores``: a dict ``{(module, name): scores}``. Raises TypeError for a
    non-iterable ``parameters``, a non-dict ``importance_scores`` or a method that is not
    'unstructured'."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = {} if importance_scores is None else importance_scores
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    parameters = list(parameters)
    to_vector = tracegrad.nn.utils.parameters_to_vector
    scores = to_vector([importance_scores.get((m, n), getattr(m, n)) for m, n in parameters])
    default_mask = to_vector([getattr(m, n + _MASK, tracegrad.ones_like(getattr(m, n))) for m, n in parameters])
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    method._tensor_name = "temp"
    container = PruningContainer()
    container._tensor_name = "temp"
    container.add_pruning_method(method)
    mask = container.compute_mask(scores, default_mask)
    start = 0
    for module, name in parameters:
        tensor = getattr(module, name)
        custom_from_mask(module, name, mask=mask[start:start + tensor.numel()].view_as(tensor))
        start += tensor.numel()


def remove(module, name):
    """Mirrors ``prune.remove``: make the pruning of ``module.<name>`` permanent. Raises
    ValueError when that tensor is not pruned."""
    for k, hook in _hooks_of(module, name):
        hook.remove(module)
        del module._forward_pre_hooks[k]
        return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    """Mirrors ``prune.is_pruned``: whether ``module`` or a submodule has a pruning hook."""
    return any(isinstance(h, BasePruningMethod)
               for _, m in module.named_modules() for h in m._forward_pre_hooks.values())
