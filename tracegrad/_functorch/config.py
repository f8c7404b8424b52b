"""``torch._functorch.config``: AOTAutograd settings programs assign before ``torch.compile``,
with torch's defaults for the ones they commonly read or flip. Every assignment is accepted and
kept; none changes what tracegrad compiles (JAX derives the backward, XLA decides what to save
or recompute)."""
enable_autograd_cache = True
activation_memory_budget = 1.0
donated_buffer = True
view_replay_for_aliased_outputs = True
functionalize_rng_ops = False
debug_assert = False
treat_parameters_as_free_to_save = True
ban_recompute_reductions = True
recompute_views = False
