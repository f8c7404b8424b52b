"""Containers: mirror ``torch.nn.Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``,
``ParameterDict``."""
from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from itertools import islice

from tracegrad import Tensor

from ..parameter import Parameter
from .module import Module, _Registry, _addindent, _layout_changed, _layout_removed
from ..._ops.warn import warn as _warn


def _by_idx(iterator, idx, n):
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range")
    idx %= n
    return next(islice(iterator, idx, None))


def _check_repeat(seq, n):
    # torch: TypeError for a non-int factor, ValueError for one below 1
    if not isinstance(n, int):
        raise TypeError(f"unsupported operand type(s) for *: {type(seq)} and {type(n)}")
    if n <= 0:
        raise ValueError(f"Non-positive multiplication factor {n} for {type(seq)}")


class Sequential(Module):
    """Mirrors ``torch.nn.Sequential``: calls its modules in order. ``Sequential(m1, m2)`` names them
    '0', '1'; ``Sequential(OrderedDict(...))`` keeps the given names. Indexing (int or slice,
    which returns a Sequential), ``len``, ``append``, ``insert``, ``extend``, ``pop``, ``del``, ``+``,
    ``* n`` (the same modules repeated; TypeError for a non-int, ValueError for ``n < 1``)."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))
        return _by_idx(iter(self._modules.values()), idx, len(self))

    def __setitem__(self, idx, module):
        key = _by_idx(iter(self._modules.keys()), idx, len(self))
        setattr(self, key, module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for key in list(self._modules.keys())[idx]:
                delattr(self, key)
        else:
            delattr(self, _by_idx(iter(self._modules.keys()), idx, len(self)))
        self.__dict__["_modules"] = _Registry((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        ret = Sequential()
        for layer in self:
            ret.append(layer)
        for layer in other:
            ret.append(layer)
        return ret

    def __iadd__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        for layer in other:
            self.append(layer)
        return self

    def __mul__(self, other):
        """``seq * n``: a new Sequential repeating the same module objects ``n`` times."""
        _check_repeat(self, other)
        out = Sequential()
        for _ in range(other):
            out.extend(self)
        return out

    def __rmul__(self, other):
        return self.__mul__(other)

    def __imul__(self, other):
        _check_repeat(self, other)
        original = list(self)
        for _ in range(other - 1):
            self.extend(original)
        return self

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        mods = list(self._modules.values())
        mods.insert(index, module)
        # the modules move to new names without setattr: compiled programs must see it
        _layout_changed(self, str(n), self._modules)
        self.__dict__["_modules"] = _Registry((str(i), m) for i, m in enumerate(mods))
        return self

    def extend(self, sequential):
        for layer in sequential:
            self.append(layer)
        return self

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """Mirrors ``torch.nn.ModuleList``: a registered list of modules (no forward)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self += modules

    def _abs(self, idx):
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return str(idx % len(self))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(list(self._modules.values())[idx])
        return self._modules[self._abs(idx)]

    def __setitem__(self, idx, module):
        setattr(self, self._abs(idx), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, self._abs(idx))
        self.__dict__["_modules"] = _Registry((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        combined = ModuleList()
        for i, m in enumerate(list(self) + list(other)):
            combined.add_module(str(i), m)
        return combined

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def insert(self, index, module):
        mods = list(self._modules.values())
        mods.insert(index, module)
        self.__dict__["_modules"] = _Registry()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def extend(self, modules):
        # torch's check (an int failed in the loop with Python's "'int' object is not iterable")
        if not isinstance(modules, Iterable) or (
                isinstance(modules, (Tensor, Module)) and not isinstance(modules, (ModuleList, Sequential))):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " + type(modules).__name__)
        offset = len(self)
        for i, m in enumerate(modules):
            self.add_module(str(offset + i), m)
        return self

    def __repr__(self):
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        spans, blocks = [[0, 0]], [reprs[0]]
        for i, r in enumerate(reprs[1:], 1):
            if r == blocks[-1]:
                spans[-1][1] += 1
                continue
            spans.append([i, i])
            blocks.append(r)
        lines = []
        for (a, b), r in zip(spans, blocks):
            s = f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}"
            lines.append(_addindent(s, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """Mirrors ``torch.nn.ModuleDict``: a registered ordered dict of modules."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        if key not in self._modules:   # torch deletes from its dict: KeyError, not delattr's AttributeError
            raise KeyError(key)
        delattr(self, key)       # through Module.__delattr__: compiled programs see the removal

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        for key in list(self._modules):
            del self[key]

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        if isinstance(modules, (OrderedDict, ModuleDict, Mapping)):
            for k, m in modules.items():
                self[k] = m
        else:
            # torch's checks, in its words (Python's own text reached the user: "'int' object is
            # not iterable", "object of type 'ReLU' has no len()")
            if not isinstance(modules, Iterable):
                raise TypeError("ModuleDict.update should be called with an iterable of key/value pairs, but got "
                                + type(modules).__name__)
            for j, m in enumerate(modules):
                if not isinstance(m, Iterable):
                    raise TypeError(f"ModuleDict update sequence element #{j} should be Iterable; is "
                                    f"{type(m).__name__}")
                if len(m) != 2:
                    raise ValueError(f"ModuleDict update sequence element #{j} has length {len(m)}; 2 is required")
                self[m[0]] = m[1]


def _entry_repr(key, p, dtype_text):
    """One line of a parameter container's repr: a tensor's kind, dtype text and size, or the
    type of a non-tensor entry (torch keeps those as plain attributes)."""
    if not isinstance(p, Tensor):
        return f"  ({key}): Object of type: {type(p).__name__}"
    size_str = "x".join(str(s) for s in p.size())
    kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
    return f"  ({key}): {kind} containing: [{dtype_text(p)} of size {size_str}]"


def _as_parameter(value):
    # torch wraps a plain tensor put in a parameter container; other objects stay as they are
    return Parameter(value) if isinstance(value, Tensor) and not isinstance(value, Parameter) else value


class ParameterList(Module):
    """Mirrors ``torch.nn.ParameterList``: a registered list of parameters. A plain tensor put in
    is wrapped in a Parameter; any other object is kept as an attribute (not a parameter).
    Indexing by int or slice (a new ParameterList of the same objects), ``append``, ``extend``,
    ``+=``, ``len``, iteration. IndexError out of range; TypeError when ``extend`` gets a
    non-iterable or a tensor; RuntimeError when called."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _abs(self, idx):
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return idx % len(self)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = self.__class__()
            for i in range(len(self))[idx]:
                out.append(self[i])
            return out
        return getattr(self, str(self._abs(idx)))

    def __setitem__(self, idx, param):
        setattr(self, str(self._abs(idx)), _as_parameter(param))

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called; index it or iterate over it instead")

    def append(self, value):
        new_idx = len(self)
        self._size += 1
        self[new_idx] = value
        return self

    def extend(self, values):
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got " + type(values).__name__)
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return "\n".join(_entry_repr(i, p, lambda t: f"torch.{t.dtype.name}") for i, p in enumerate(self))


class ParameterDict(Module):
    """Mirrors ``torch.nn.ParameterDict``: a registered ordered dict of parameters with string
    keys. A plain tensor put in is wrapped in a Parameter; other objects are kept as attributes.
    Dict methods as torch: ``get``, ``setdefault``, ``pop``, ``popitem``, ``clear``, ``copy``,
    ``fromkeys``, ``update`` (a plain ``dict`` goes in sorted by key, as torch), ``|``, ``|=``,
    ``reversed``. TypeError for a non-string key or a non-iterable ``update``; ValueError for an
    update pair of the wrong length; AttributeError for a missing key (as torch); RuntimeError when
    called."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _attr(key):
        if not isinstance(key, str):
            raise TypeError(f"Index given to ParameterDict cannot be used as a key as it is not a string (type is "
                            f"'{type(key).__name__}'); use string keys")
        return key

    def __getitem__(self, key):
        return getattr(self, self._attr(key))

    def __setitem__(self, key, value):
        attr = self._attr(key)
        self._keys[key] = None
        setattr(self, attr, _as_parameter(value))

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, self._attr(key))

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(list(self._keys))

    def __contains__(self, key):
        return key in self._keys

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called; index it by key instead")

    def __or__(self, other):
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other):
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other):
        self.update(other)
        return self

    def copy(self):
        """A new ParameterDict holding the same parameter objects."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def popitem(self):
        """Removes and returns the last inserted ``(key, parameter)``; KeyError when empty."""
        if not self._keys:
            raise KeyError("popitem(): ParameterDict is empty")
        key = next(reversed(self._keys))
        return key, self.pop(key)

    def clear(self):
        for k in list(self._keys):
            del self[k]

    def fromkeys(self, keys, default=None):
        return ParameterDict((k, default) for k in keys)

    def update(self, parameters):
        if not isinstance(parameters, Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of key/value pairs, but got "
                            + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            items = parameters.items()
        elif isinstance(parameters, Mapping):
            items = sorted(parameters.items())
        else:
            items = []
            for j, p in enumerate(parameters):
                if not isinstance(p, Iterable):
                    raise TypeError(f"ParameterDict update sequence element #{j} should be Iterable; is "
                                    f"{type(p).__name__}")
                if len(p) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} has length {len(p)}; 2 is required")
                items.append(p)
        for k, v in items:
            self[k] = v

    def extra_repr(self):
        return "\n".join(_entry_repr(k, p, lambda t: t.type()) for k, p in self.items())


_CONTAINER_DEPRECATED = ("`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. "
                         "Subclass that instead.")


class Container(Module):
    """Mirrors the deprecated ``torch.nn.Container(**kwargs)``: a Module holding each keyword's
    module under its name. Warns FutureWarning when built and when subclassed, as torch."""

    def __init_subclass__(cls, **kwargs):
        _warn(_CONTAINER_DEPRECATED, FutureWarning)
        super().__init_subclass__(**kwargs)

    def __init__(self, **kwargs):
        _warn(_CONTAINER_DEPRECATED, FutureWarning)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)
