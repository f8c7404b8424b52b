"""``functionalize`` and ``replace_all_batch_norm_modules_``: torch.func's helpers for running
programs with in-place ops and BatchNorm under its transforms."""
from __future__ import annotations

import functools

_REMOVE = ("mutations", "mutations_and_views")


def functionalize(func, *, remove: str = "mutations"):
    """Mirrors ``torch.func.functionalize(func, *, remove='mutations')``: a function with
    ``func``'s semantics whose intermediate mutations are removed. tracegrad's in-place ops
    already are functional updates of immutable JAX arrays (DESIGN: Storage + views), inside
    ``vmap``/``grad`` too, so the result calls ``func`` as it is; mutations of the inputs still
    reach the caller, as torch's does. Raises RuntimeError for an unknown ``remove``."""
    if remove not in _REMOVE:
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           f"Valid options are: 'mutations' (in-place and out= ops replaced by their out-of-place "
                           f"equivalents) and 'mutations_and_views' (also views replaced by copies).")

    @functools.wraps(func)
    def functionalized(*args, **kwargs):
        return func(*args, **kwargs)
    return functionalized


def replace_all_batch_norm_modules_(root):
    """Mirrors ``torch.func.replace_all_batch_norm_modules_(root)``: in place, every BatchNorm
    module under ``root`` stops tracking running statistics (``running_mean``/``running_var``/
    ``num_batches_tracked`` become None, ``track_running_stats`` False), so it normalises with the
    batch's own statistics under ``vmap``. Returns ``root``."""
    for module in root.modules():
        # by class name: tracegrad.func sits below tracegrad.nn (DESIGN 2); InstanceNorm shares
        # _NormBase but is not a BatchNorm, as torch's isinstance check also says
        if any(c.__name__ == "_BatchNorm" for c in type(module).__mro__):
            module.running_mean = module.running_var = module.num_batches_tracked = None
            module.track_running_stats = False
    return root
