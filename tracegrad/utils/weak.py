"""``tracegrad.utils.weak``: weak references and a weak-keyed dictionary that key on object
IDENTITY. Mirrors ``torch.utils.weak`` (``WeakIdRef``, ``WeakIdKeyDictionary``,
``WeakTensorKeyDictionary``, ``TensorWeakRef``).

Why not ``weakref.WeakKeyDictionary``: it finds keys with ``==``, and a Tensor's ``==`` is
elementwise (its truth value raises for more than one element). These classes hash a key by
``id`` and match it with ``is``, so any weak-referenceable object (a Tensor, a Module) can be a key
and an entry disappears when its key is garbage collected.
"""
from __future__ import annotations

import copy as _copy
import weakref
from collections.abc import Mapping, MutableMapping

__all__ = ["WeakIdRef", "WeakIdKeyDictionary", "WeakTensorKeyDictionary", "TensorWeakRef", "WeakRef"]

WeakRef = weakref.ref


class WeakIdRef(weakref.ref):
    """A weak reference hashed by its referent's ``id`` and equal to another one when both point
    at the same live object (``is``); once the referent is gone, only to itself. Mirrors
    ``torch.utils.weak.WeakIdRef``. Raises TypeError for an object that cannot be weakly
    referenced (an int, a str)."""

    __slots__ = ("_key",)

    def __new__(cls, obj, callback=None):
        ref = super().__new__(cls, obj, callback)
        ref._key = cls._key_of(obj)
        return ref

    def __init__(self, obj, callback=None):
        super().__init__(obj, callback)

    @staticmethod
    def _key_of(obj):
        return id(obj)

    def __hash__(self):
        return self._key

    def _same(self, a, b):
        return a is b

    def __eq__(self, other):
        if not isinstance(other, weakref.ref):
            return NotImplemented
        a, b = self(), other()
        if a is None or b is None:    # a dead reference equals only itself
            return self is other
        return self._same(a, b)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq


class _WeakHashRef(WeakIdRef):
    """A ``WeakIdRef`` that keys on ``hash(obj)`` instead of ``id`` (for objects whose Python
    wrapper may change while the object stays the same). Mirrors ``torch.utils.weak._WeakHashRef``."""

    __slots__ = ()

    @staticmethod
    def _key_of(obj):
        return hash(obj)

    def _same(self, a, b):
        return hash(a) == hash(b)


class WeakIdKeyDictionary(MutableMapping):
    """A mutable mapping whose keys are held weakly and matched by identity (``ref_type``, default
    :class:`WeakIdRef`); the entry goes away when its key is collected. Mirrors
    ``torch.utils.weak.WeakIdKeyDictionary(dict=None, ref_type=WeakIdRef)``: the MutableMapping
    API plus ``copy``/``deepcopy`` (values deep-copied, keys shared) and ``|``/``|=``.
    Raises TypeError for a key that cannot be weakly referenced, KeyError for a missing one."""

    def __init__(self, dict=None, ref_type=WeakIdRef):  # noqa: A002 -- torch's argument name
        self.data = {}
        self.ref_type = ref_type
        self._pending = []        # refs whose keys died while the dict was being iterated
        self._iterating = 0
        self_ref = weakref.ref(self)

        # holds the dictionary weakly: the callback lives as long as the keys' references do
        def remove(ref):
            d = self_ref()
            if d is None:
                return
            if d._iterating:
                d._pending.append(ref)
            else:
                d.data.pop(ref, None)
        self._remove = remove
        if dict is not None:
            self.update(dict)

    def _commit_removals(self):
        while self._pending:
            self.data.pop(self._pending.pop(), None)

    def _live_items(self):
        # removals wait until the iteration ends: the dict must not change size under it
        self._iterating += 1
        try:
            for ref, value in self.data.items():
                obj = ref()
                if obj is not None:
                    yield obj, value
        finally:
            self._iterating -= 1
            if not self._iterating:
                self._commit_removals()

    def __getitem__(self, key):
        return self.data[self.ref_type(key)]

    def __setitem__(self, key, value):
        self.data[self.ref_type(key, self._remove)] = value

    def __delitem__(self, key):
        self._commit_removals()
        del self.data[self.ref_type(key)]

    def __contains__(self, key):
        try:
            ref = self.ref_type(key)
        except TypeError:
            return False
        return ref in self.data

    def __len__(self):
        return len(self.data) - len(self._pending)

    def __iter__(self):
        for obj, _ in self._live_items():
            yield obj

    def get(self, key, default=None):
        return self.data.get(self.ref_type(key), default)

    def keyrefs(self):
        """Mirrors ``WeakIdKeyDictionary.keyrefs``: a list of the weak references (``ref_type``
        objects) that hold the keys; call one for its key, or None once the key is collected."""
        return list(self.data)

    def __repr__(self):
        return f"<{type(self).__name__} at {id(self):#x}>"

    def copy(self):
        """A new dictionary of the same keys (still weak) and the same values."""
        new = type(self)(ref_type=self.ref_type)
        for obj, value in self._live_items():
            new[obj] = value
        return new

    __copy__ = copy

    def __deepcopy__(self, memo):
        new = type(self)(ref_type=self.ref_type)
        for obj, value in self._live_items():
            new[obj] = _copy.deepcopy(value, memo)
        return new

    def __or__(self, other):
        if not isinstance(other, Mapping):
            return NotImplemented
        new = self.copy()
        new.update(other)
        return new

    def __ror__(self, other):
        if not isinstance(other, Mapping):
            return NotImplemented
        new = type(self)(ref_type=self.ref_type)
        new.update(other)
        new.update(self)
        return new

    def __ior__(self, other):
        self.update(other)
        return self

    def __eq__(self, other):
        if not isinstance(other, Mapping):
            return NotImplemented
        # identity-keyed on both sides: compare entry by entry, never the keys' own ==
        if len(self) != len(other):
            return False
        try:
            return all(other[k] == v for k, v in self.items())
        except (KeyError, TypeError):
            return False

    __hash__ = None


# torch's name for the dictionary when the keys are tensors
WeakTensorKeyDictionary = WeakIdKeyDictionary


class TensorWeakRef:
    """A weak reference to a Tensor: call it for the tensor, or None once it is collected.
    Mirrors ``torch.utils.weak.TensorWeakRef``. Raises TypeError for a non-tensor."""

    __slots__ = ("ref",)

    def __init__(self, tensor):
        from .._tensor.tensor import Tensor
        if not isinstance(tensor, Tensor):
            raise TypeError(f"TensorWeakRef: expected a Tensor, got {type(tensor).__name__}")
        self.ref = weakref.ref(tensor)

    def __call__(self):
        return self.ref()
