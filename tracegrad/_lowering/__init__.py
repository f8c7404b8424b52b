"""Region capture and lowering (DESIGN 2.4): Python over Tensors -> pure JAX programs."""
