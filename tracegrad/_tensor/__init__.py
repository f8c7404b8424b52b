"""The tensor layer (DESIGN 2, L2): Storage and views, the ``Tensor`` core (``tensor.py``), data
conversion (``convert.py``), devices, printing (``tensor_str.py``), factories, the ``Generator``,
hook handles and runtime settings (the errors raised at the dispatch boundary are
``_ops/errors.py``). It imports only ``_state`` and ``_ops`` (below it); autograd records on top
of it. Inside, imports run one way: ``convert``/``tensor_str``/``device`` <- ``tensor`` <-
``generator`` <- ``factories``. Nothing is re-exported here: importers name the module they use."""
