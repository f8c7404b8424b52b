"""``torch.nn.factory_kwargs``."""


def factory_kwargs(kwargs):
    """Mirrors ``torch.nn.factory_kwargs``: the ``device``/``dtype``/``memory_format`` entries of
    ``kwargs`` as one dict for factory functions, added to a copy of the explicit
    ``factory_kwargs`` entry (passed through as given). TypeError for any other key of
    ``kwargs``, or a key named both ways; ``{}`` for None."""
    if kwargs is None:
        return {}
    simple = ("device", "dtype", "memory_format")
    unexpected = set(kwargs) - set(simple) - {"factory_kwargs"}
    if unexpected:
        raise TypeError(f"unexpected kwargs {unexpected}: factory_kwargs accepts only 'device', 'dtype', "
                        "'memory_format' and 'factory_kwargs'")
    out = dict(kwargs.get("factory_kwargs", {}))
    for k in simple:
        if k in kwargs:
            if k in out:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            out[k] = kwargs[k]
    return out
