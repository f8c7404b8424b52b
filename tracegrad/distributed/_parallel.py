"""What ``DistributedDataParallel`` and ``FullyShardedDataParallel`` do to a module, on JAX's
sharding (see ``_jax``'s docstring for the two modes).

``MeshPlacement`` (one process, a mesh of its devices): parameters and buffers are moved onto
the mesh in place (their storages keep their identity, so optimizers made before or after the
wrapper see them), replicated or split along dim 0; tensor inputs of ``forward`` get their
batch dim split over the mesh; gradients are laid out as their parameters (a
post-accumulate-grad hook, traced into compiled steps). The gradient all-reduce (data
parallel) or reduce-scatter (fully sharded) is XLA's, inside each backward op's program or
the compiled step; the averaging is torch's DDP's because the loss is a mean over the global
batch, which is every rank's mean averaged.

``ProcessAveraging`` (several processes, one device each): torch's DDP: rank 0's parameters
and buffers are broadcast at wrap time, each process runs its own batch, and each parameter's
gradient is averaged over the processes (``all_reduce``) right after it is accumulated, except
inside ``no_sync()``.
"""
from __future__ import annotations

from .. import no_grad
from ..compiler import GraphBreak, _tracing, allow_in_graph
from .._tensor.tensor import Tensor
from . import _jax


def _tree_map_tensors(fn, obj):
    if isinstance(obj, Tensor):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):       # namedtuple
        return type(obj)(*[_tree_map_tensors(fn, o) for o in obj])
    if isinstance(obj, (list, tuple)):
        return type(obj)(_tree_map_tensors(fn, o) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _tree_map_tensors(fn, v)) for k, v in obj.items())
    return obj


class MeshPlacement:
    """Places a module on ``mesh`` (a ``DeviceMesh``). ``shard_axes``: mesh axes parameters are
    split over along dim 0 (empty: replicated, data parallel); the batch is split over every
    axis of the mesh."""

    def __init__(self, mesh, shard_axes=()):
        self.mesh = mesh
        jm = mesh.jax_mesh
        self.batch_axes = tuple(jm.axis_names)
        self.batch_size = _jax.axes_size(jm, self.batch_axes)
        self.shard_axes = tuple(shard_axes)
        self.handles = []

    def param_sharding(self, p):
        jm = self.mesh.jax_mesh
        if not self.shard_axes:
            return _jax.replicated(jm)
        return _jax.dim0_sharding(jm, self.shard_axes, tuple(p.shape))

    def place_module(self, module, hooks=True):
        jm = self.mesh.jax_mesh
        seen = set()
        for p in module.parameters():
            if id(p) in seen:
                continue
            seen.add(id(p))
            sharding = self.param_sharding(p)
            _jax.place_(p, sharding)
            if p._grad is not None:
                _jax.place_(p._grad, sharding)
            if hooks and self.shard_axes and p.requires_grad:
                self.handles.append(p.register_post_accumulate_grad_hook(_grad_layout(sharding)))
        for b in module.buffers():
            _jax.place_(b, _jax.replicated(jm))

    def shard_inputs(self, obj):
        """Split the batch dim (0) of every floating or integer tensor in ``obj`` (nested
        lists/tuples/dicts) over the mesh; a tensor whose dim 0 does not divide evenly, or a
        0-d one, stays as it is (replicated when combined with the parameters)."""
        jm = self.mesh.jax_mesh
        sharding = _jax.split_dim0(jm, self.batch_axes)

        def one(t):
            if t.dim() == 0 or t.shape[0] % self.batch_size or t.shape[0] == 0:
                return t
            return _jax.shard_tensor(t, sharding)
        return _tree_map_tensors(one, obj)


def _grad_layout(sharding):
    def lay_out_grad(p):
        if p._grad is not None:
            _jax.place_(p._grad, sharding)
    # no Python side effects: the constraint is traced into compiled steps, not a graph break
    return allow_in_graph(lay_out_grad)


class ProcessAveraging:
    """torch's DDP over processes: broadcast at wrap time, gradients averaged after each is
    accumulated (skipped while ``owner.require_backward_grad_sync`` is False)."""

    def __init__(self, owner, module, init_sync=True):
        self.world = _jax.process_count()
        self.handles = []
        params = [p for p in dict.fromkeys(module.parameters())]
        if init_sync:
            self.broadcast(params + list(module.buffers()))
        for p in params:
            if p.requires_grad:
                self.handles.append(p.register_post_accumulate_grad_hook(self._hook(owner)))

    def broadcast(self, tensors, src=0):
        tensors = [t for t in tensors if t is not None]
        if not tensors:
            return
        arrays = _jax.process_collective("pick", [t._value for t in tensors], src)
        with no_grad():
            for t, a in zip(tensors, arrays):
                t._st.array = a if not t._chain else t._st.array
                t._st.gen += 1

    def _hook(self, owner):
        def average_grad(p):
            if _tracing():
                raise GraphBreak("DistributedDataParallel across processes averages each gradient "
                                 "with a collective between the processes' own programs, which "
                                 "one compiled program per process cannot contain")
            if owner.require_backward_grad_sync and p._grad is not None:
                (avg,) = _jax.process_collective("reduce", [p._grad._value], 1)
                p._grad._st.array = avg
                p._grad._st.gen += 1
        # traced only to report the graph break above with its reason
        return allow_in_graph(average_grad)
