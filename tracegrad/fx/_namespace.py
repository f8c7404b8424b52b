"""Unique, legal Python names for the values of a Graph (torch.fx.graph's ``_Namespace``
rules): sanitised, never a keyword or a builtin, numbered ``relu``, ``relu_1``, ``relu_2``..."""
from __future__ import annotations

import builtins
import keyword
import math
import re
from collections import defaultdict

# names the generated code binds itself, so no value may take them
RESERVED = {"inf": math.inf, "nan": math.nan, "NoneType": type(None), "torch": None, "device": None,
            "fx_pytree": None, "pytree": None}


def snake_case(s: str) -> str:
    """``MyModule`` -> ``my_module`` (torch names values after their target this way)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", s).lower()


def target_to_str(target) -> str:
    op = target if isinstance(target, str) else getattr(target, "__name__", type(target).__name__)
    if op.startswith("__") and op.endswith("__") and len(op) > 4:
        op = op[2:-2]
    return snake_case(op)


class Namespace:
    """Hands out names that are unique in one graph's generated code."""

    def __init__(self):
        self._used = set()
        self._base_count = defaultdict(int)
        self._obj_to_name = {}

    def _illegal(self, name, obj) -> bool:
        if keyword.iskeyword(name):
            return True
        if name in builtins.__dict__:
            return obj is not builtins.__dict__[name]
        return name in RESERVED

    def create_name(self, candidate: str, obj=None) -> str:
        """A fresh legal name from ``candidate``; the same ``obj`` (not None) gets the same name."""
        if obj is not None and id(obj) in self._obj_to_name:
            return self._obj_to_name[id(obj)][0]
        candidate = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = f"_{candidate}"
        m = re.match(r"(.*)_(\d+)$", candidate)
        base, num = (m.group(1), int(m.group(2))) if m else (candidate, None)
        candidate = base if num is None else f"{base}_{num}"
        if not num:
            num = self._base_count[base]
        while candidate in self._used or self._illegal(candidate, obj):
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[id(obj)] = (candidate, obj)   # obj kept alive so its id stays unique
        return candidate

    def associate_name_with_obj(self, name: str, obj) -> None:
        self._obj_to_name[id(obj)] = (name, obj)

    def copy(self) -> "Namespace":
        ns = Namespace()
        ns._used = set(self._used)
        ns._base_count = defaultdict(int, self._base_count)
        ns._obj_to_name = dict(self._obj_to_name)
        return ns
