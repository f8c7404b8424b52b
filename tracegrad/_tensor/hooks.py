"""``RemovableHandle``: mirrors ``torch.utils.hooks.RemovableHandle`` (layer L2: imports only
``_state``, so autograd's nodes and tensor hooks use it without importing ``tracegrad.utils``).
``tracegrad.utils.hooks.RemovableHandle`` is this class.

One handle per registered hook; it holds the hook dicts weakly (so a handle never keeps a
graph alive) and removes its entry from each on ``remove()`` or when used as a context
manager exits.
"""
from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any

from .. import _state


class RemovableHandle:
    next_id: int = 0

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None, _structure: bool = True) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        # ``_structure`` False: a hook no compiled program can have baked in (a tensor hook on a
        # node made outside any trace, ``autograd/_tensor_hooks.register_hook``): adding or
        # removing it leaves the cached programs valid
        self._structure = _structure
        # a hook in the table of a module no trace has seen yet is in no program: its id stays
        # out of the live hook set (NOTE [objects no trace has seen] in _state.py)
        self._counted = _structure and not _state.fresh(hooks_dict)   # its id is in ``_state``'s live hook set
        if self._counted:
            _state.hook_added(self.id, hooks_dict)   # compiled programs re-check which hooks exist
        if _state.CAPTURE[0] is not None:
            _state.CAPTURE[0].on_hook("registration", None)
        extras = extra_dict if isinstance(extra_dict, (list, tuple)) else ([extra_dict] if extra_dict is not None else [])
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self) -> None:
        """Unregister the hook; removing twice is harmless."""
        removed = False
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None and self.id in d:
                if _state.CAPTURE[0] is not None:
                    # inside a compiled trace (a hook removing itself after its first call): the
                    # program would keep running the hook, eager would not; raised before the
                    # removal, so an abandoned trace leaves the hook in place for the eager rerun
                    _state.CAPTURE[0].on_hook("removal", None)
                if isinstance(d, OrderedDict):   # not a module's ``_HookDict.__delitem__``: see below
                    OrderedDict.__delitem__(d, self.id)
                else:
                    del d[self.id]
                removed = True
        if removed and getattr(self, "_structure", True):
            if getattr(self, "_counted", False):
                _state.hook_removed(self.id)
            elif not _state.fresh(self.hooks_dict_ref()):
                # registered while its module was fresh (a trace may have seen the hook since), or
                # an unpickled or copied handle: its id may be the live original's, whose hook
                # stays (NOTE [hook sets come back] in _state.py)
                _state.bump_structure()

    def __getstate__(self):
        # pickled with its dicts (a lazy module keeps handles to its own hooks): the weak
        # references become the dicts themselves, and back
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state) -> None:
        hooks, self.id = state[0], state[1]
        self._counted = False        # a copy: removing it never takes the original's id out
        self.hooks_dict_ref = weakref.ref(OrderedDict() if hooks is None else hooks)   # None: a dead reference
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in (state[2] if len(state) > 2 else ()) if d is not None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


RemovableHandle.__module__ = "tracegrad.utils.hooks"   # its public home, as torch's
