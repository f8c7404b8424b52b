"""The tensor layer (DESIGN 2, L2): Storage and views, the ``Tensor`` core, devices, printing,
factories, the ``Generator``, hook handles, runtime settings and the errors raised at the
dispatch boundary. It imports only ``_state`` and ``_ops`` (below it); autograd records on top
of it. Nothing is re-exported here: importers name the module they use."""
