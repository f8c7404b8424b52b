"""Mirrors ``torch.nn.modules.utils``: the int-or-tuple argument helpers layers use
(``_single``, ``_pair``, ``_triple``, ``_quadruple``, ``_ntuple``) and
``consume_prefix_in_state_dict_if_present``."""
from __future__ import annotations

import collections.abc
from itertools import repeat

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n, name="parse"):
    """A parser: an iterable (not a string) becomes a tuple as it is; anything else is repeated ``n`` times."""
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))
    parse.__name__ = name
    return parse


_single, _pair, _triple, _quadruple = (_ntuple(n, name) for n, name in
                                       ((1, "_single"), (2, "_pair"), (3, "_triple"), (4, "_quadruple")))


def _reverse_repeat_tuple(t, n):
    """``t`` reversed, each element repeated ``n`` times: conv padding ``(ph, pw)`` -> F.pad's
    ``(pw, pw, ph, ph)``."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    """An adaptive pool's output size with each None replaced by the matching trailing entry of
    ``defaults`` (the input's shape); an int passes through. ValueError when ``defaults`` has no
    more dims than ``out_size``."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Mirrors ``torch.nn.modules.utils.consume_prefix_in_state_dict_if_present``: strips ``prefix``
    (e.g. ``'module.'`` of a DataParallel/DDP checkpoint) from the keys of ``state_dict`` in
    place (renamed keys move to the end), and from its ``_metadata`` keys when present."""
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is None:
        return
    for key in list(metadata.keys()):
        # '' is the wrapper itself; 'module' (prefix without its dot) becomes the new root ''
        if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
            metadata[key[len(prefix):]] = metadata.pop(key)
