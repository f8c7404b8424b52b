"""Mirrors ``torch.distributed.device_mesh``: ``init_device_mesh`` and ``DeviceMesh``, here a
``jax.sharding.Mesh`` over JAX's devices (``.jax_mesh``).

In torch a mesh is an n-d array of process ranks (one device per process). Here it is an
n-d array of devices: in one process, every device JAX sees (on CPU, simulate several with
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` set before JAX starts); with several
processes (``init_process_group``, ``jax.distributed``), every device of every process.
``DistributedDataParallel(..., device_mesh=mesh)`` and ``FullyShardedDataParallel(...,
device_mesh=mesh)`` train over it.
"""
from __future__ import annotations

import numpy as np

import tracegrad

from . import GroupMember, _group, _jax

__all__ = ["DeviceMesh", "init_device_mesh"]


class DeviceMesh:
    """Mirrors ``torch.distributed.device_mesh.DeviceMesh``: an n-d arrangement of devices with
    optional dimension names.

    Attributes: ``device_type`` ("cpu", "cuda"), ``mesh`` (a ``tracegrad`` int64 tensor of
    device positions, the ranks of torch's mesh), ``mesh_dim_names`` (tuple or None),
    ``ndim``, ``shape``; ``jax_mesh`` is the ``jax.sharding.Mesh`` (axis names: the dim names,
    or ``dim0``, ``dim1``... when none were given). ``mesh["dp"]`` is the 1-d sub-mesh of
    one named dimension. Differs from torch: a rank is a device, not a process, so
    ``get_rank()``/``get_local_rank()`` are this process's index (0 in one process)."""

    def __init__(self, device_type, mesh=None, *, mesh_dim_names=None, _jax_mesh=None):
        if _jax_mesh is None:
            shape = tuple(np.asarray(mesh.tolist() if hasattr(mesh, "tolist") else mesh).shape)
            names = mesh_dim_names or tuple(f"dim{i}" for i in range(len(shape)))
            _jax_mesh = _jax.make_mesh(device_type, shape, names)
        self.device_type = device_type
        self.jax_mesh = _jax_mesh
        self.mesh_dim_names = tuple(mesh_dim_names) if mesh_dim_names else None

    @property
    def mesh(self):
        return tracegrad.arange(self.jax_mesh.devices.size).reshape(*self.jax_mesh.devices.shape)

    @property
    def ndim(self):
        return self.jax_mesh.devices.ndim

    @property
    def shape(self):
        return tuple(self.jax_mesh.devices.shape)

    def size(self, mesh_dim=None):
        """Number of devices in the mesh, or along ``mesh_dim`` (an index or a name)."""
        if mesh_dim is None:
            return int(self.jax_mesh.devices.size)
        return int(self.shape[self._dim(mesh_dim)])

    def axis_names(self):
        """The ``jax_mesh`` axis names, in order."""
        return tuple(self.jax_mesh.axis_names)

    def _dim(self, mesh_dim):
        if isinstance(mesh_dim, str):
            if not self.mesh_dim_names or mesh_dim not in self.mesh_dim_names:
                raise KeyError(f"Mesh dimension '{mesh_dim}' does not exist. Available mesh "
                               f"dimensions are: mesh_dim_names={self.mesh_dim_names}")
            return self.mesh_dim_names.index(mesh_dim)
        if not -self.ndim <= mesh_dim < self.ndim:
            raise IndexError(f"DeviceMesh: mesh_dim {mesh_dim} is out of range for a "
                             f"{self.ndim}-d mesh")
        return mesh_dim % self.ndim

    def __getitem__(self, name):
        if self.mesh_dim_names is None:
            raise RuntimeError("Cannot slice a DeviceMesh without mesh_dim_names!")
        names = (name,) if isinstance(name, str) else tuple(name)
        dims = [self._dim(n) for n in names]
        if len(dims) == self.ndim and dims == list(range(self.ndim)):
            return self
        devs = self.jax_mesh.devices
        # keep this process's position along the other dims (index 0 in one process)
        index = tuple(slice(None) if i in dims else 0 for i in range(self.ndim))
        sub = np.transpose(devs[index], np.argsort(np.argsort(dims))) if len(dims) > 1 else devs[index]
        axis = [self.jax_mesh.axis_names[d] for d in dims]
        return DeviceMesh(self.device_type, mesh_dim_names=names,
                          _jax_mesh=type(self.jax_mesh)(sub, tuple(axis)))

    def get_group(self, mesh_dim=None):
        """The process group of a mesh dimension: the default group (one per job here)."""
        if mesh_dim is None and self.ndim > 1:
            raise RuntimeError("Found the DeviceMesh have 2 dimensions; get_group() needs "
                               "mesh_dim when the mesh has more than one dimension")
        return GroupMember.WORLD if GroupMember.WORLD is not None else _group()

    def get_all_groups(self):
        return [self.get_group(i) for i in range(self.ndim)]

    def get_rank(self):
        return _jax.process_index()

    def get_local_rank(self, mesh_dim=None):
        return _jax.process_index()

    def get_coordinate(self):
        return [0] * self.ndim

    def __repr__(self):
        names = f", mesh_dim_names={self.mesh_dim_names}" if self.mesh_dim_names else ""
        return f"DeviceMesh('{self.device_type}', {list(self.shape)}{names})"

    def __eq__(self, other):
        return isinstance(other, DeviceMesh) and other.jax_mesh == self.jax_mesh

    def __hash__(self):
        return hash(self.jax_mesh)


def init_device_mesh(device_type, mesh_shape, *, mesh_dim_names=None, backend_override=None):
    """Mirrors ``torch.distributed.device_mesh.init_device_mesh``: a ``DeviceMesh`` of shape
    ``mesh_shape`` (a tuple of ints) over every ``device_type`` device ("cpu", "cuda") JAX
    sees, with optional unique ``mesh_dim_names`` (one per dimension).

    Raises RuntimeError, as torch, for a device type with an index ("cuda:0"), names that are
    not unique or not one per dimension, and when the shape's product is not the number of
    devices (torch: the world size)."""
    if ":" in str(device_type):
        # torch raises with two arguments (its message prints as a tuple); so does this
        raise RuntimeError(f"Device type with index is not supported but got {device_type}. ",
                           "If you maintained a 'torch.device' object, it's recommended to pass "
                           "in 'device.type'.")
    mesh_shape = tuple(int(s) for s in mesh_shape)
    if mesh_dim_names is not None:
        mesh_dim_names = tuple(mesh_dim_names)
        if len(set(mesh_dim_names)) != len(mesh_dim_names):
            raise RuntimeError("Each mesh_dim_name must be unique. Found repeated mesh_dim_name "
                               f"in mesh_dim_names {mesh_dim_names}")
        if len(mesh_shape) != len(mesh_dim_names):
            raise RuntimeError("mesh_shape and mesh_dim_names should have same length! Found "
                               f"len(mesh_dim_names): {len(mesh_dim_names)} and "
                               f"len(mesh_shape):{len(mesh_shape)}.")
    names = mesh_dim_names or tuple(f"dim{i}" for i in range(len(mesh_shape)))
    return DeviceMesh(str(device_type), mesh_dim_names=mesh_dim_names,
                      _jax_mesh=_jax.make_mesh(str(device_type), mesh_shape, names))
