"""``tracegrad.optim.swap_in_optimizer_params_and_state``: mirrors torch 2.13's
``torch.optim.swap_in_optimizer_params_and_state`` (listed in ``torch.optim.__all__``).

Inside the context an optimizer works on other parameter tensors and on the state of an
``optimizer.state_dict()``-shaped dict; on exit its own groups and state come back. Written
against the optimizer's public attributes only (``param_groups``, ``state``)."""
from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Any

from .. import Tensor

__all__ = ["swap_in_optimizer_params_and_state"]

_API = "swap_in_optimizer_params_and_state"


def _fail(what):
    raise RuntimeError(f"{_API}: {what}")


def _checked_state(osd):
    """``osd['state']``: a dict from packed parameter ids (ints) to per-parameter dicts."""
    state = osd.get("state")
    if not isinstance(state, dict):
        _fail(f"swapin_optim_state['state'] must be a dict from packed parameter ids to "
              f"per-parameter state dicts, not {type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        _fail("swapin_optim_state['state'] must be keyed by packed parameter ids (as "
              "optimizer.state_dict() gives them), not by tensors.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        _fail("every per-parameter entry of swapin_optim_state['state'] must be a dict.")
    return state


def _checked_groups(optimizer, osd):
    """Pairs (live group, swap-in group) after checking ``osd['param_groups']`` group by group:
    a list as long as ``optimizer.param_groups``, each a dict whose ``params`` are packed ids, as
    many as the live group holds, and whose keys are exactly the live group's keys."""
    groups = osd.get("param_groups")
    if not isinstance(groups, list):
        _fail(f"swapin_optim_state['param_groups'] must be a list of param-group dicts, not "
              f"{type(groups).__name__}.")
    if len(groups) != len(optimizer.param_groups):
        _fail(f"swapin_optim_state has {len(groups)} parameter groups, the optimizer "
              f"{len(optimizer.param_groups)}.")
    for i, (live, new) in enumerate(zip(optimizer.param_groups, groups)):
        if not isinstance(new, dict):
            _fail(f"swapin_optim_state['param_groups'][{i}] must be a dict.")
        ids = new.get("params")
        if not isinstance(ids, list) or not all(isinstance(x, int) for x in ids):
            _fail(f"swapin_optim_state['param_groups'][{i}]['params'] must be a list of packed "
                  "parameter ids (as optimizer.state_dict() gives them).")
        if len(ids) != len(live["params"]):
            _fail(f"swapin_optim_state['param_groups'][{i}] has {len(ids)} params, the "
                  f"optimizer's group {len(live['params'])}.")
        only_new = [k for k in new if k not in live]
        only_live = [k for k in live if k not in new]
        if only_new or only_live:
            _fail(f"the keys of swapin_optim_state['param_groups'][{i}] must be the optimizer "
                  f"group's keys; only in swap-in: {only_new}, only in the optimizer: {only_live}.")
    return list(zip(optimizer.param_groups, groups))


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters: dict[str, Tensor],
                                       swapin_optim_state: dict[str, Any]):
    """Mirrors ``torch.optim.swap_in_optimizer_params_and_state``: a context manager in which
    ``optimizer`` steps ``swapin_parameters``' tensors (taken in order, group after group, as
    ``optimizer.param_groups`` lists its parameters) with the hyper-parameters and per-parameter
    state of ``swapin_optim_state`` (``optimizer.state_dict()``'s layout: ``state`` keyed by
    packed ids, ``param_groups`` with packed ``params``). The per-parameter dicts are shallow
    copies: in-place updates of their tensors reach ``swapin_optim_state``, new entries do not.
    On exit the optimizer's own groups (their very dicts) and state are restored.

    Raises:
        RuntimeError: the optimizer has no state yet; ``swapin_optim_state`` is not a dict of that
            layout (state keyed by tensors or not by dicts, another number of groups or of params
            in a group, other group keys, state ids no group lists); fewer swap-in tensors than
            the groups need.
    """
    if not optimizer.state:
        _fail("the optimizer's state must be initialized (step it once first).")
    if not isinstance(swapin_optim_state, dict):
        _fail("swapin_optim_state must be an optimizer.state_dict()-style dict.")
    state = _checked_state(swapin_optim_state)
    pairs = _checked_groups(optimizer, swapin_optim_state)
    tensors = list(swapin_parameters.values())
    per_group, start = [], 0
    for _, new in pairs:
        stop = start + len(new["params"])
        if stop > len(tensors):
            _fail(f"swapin_parameters holds {len(tensors)} tensors, fewer than the optimizer's "
                  "parameter groups list.")
        per_group.append(tensors[start:stop])
        start = stop
    listed = {i for _, new in pairs for i in new["params"]}
    stray = [k for k in state if k not in listed]
    if stray:
        _fail(f"swapin_optim_state['state'] has ids no param group lists: {stray!r}.")

    own_state = optimizer.state
    # shallow copies: restoring them keeps each group dict (and its params list) the same object
    own_groups = [dict(g) for g in optimizer.param_groups]
    try:
        swapped = defaultdict(dict)
        for (live, new), params in zip(pairs, per_group):
            live.update({k: v for k, v in new.items() if k != "params"})
            live["params"] = params
            for p, i in zip(params, new["params"]):
                swapped[p] = dict(state.get(i, {}))
        optimizer.state = swapped
        yield
    finally:
        for live, saved in zip(optimizer.param_groups, own_groups):
            live.clear()
            live.update(saved)
        optimizer.state = own_state
