"""Mirrors ``torch.storage``: the module that names torch's storage classes (a storage prints
as ``[torch.storage.TypedStorage(...) of size n]``). ``TypedStorage`` is ``Tensor.storage()``'s
class, ``UntypedStorage`` (and its older name ``Storage``) ``Tensor.untyped_storage()``'s."""
from ._tensor.storage import TypedStorage as TypedStorage
from ._tensor.storage_types import UntypedStorage as UntypedStorage

Storage = UntypedStorage

__all__ = ["Storage", "TypedStorage", "UntypedStorage"]
