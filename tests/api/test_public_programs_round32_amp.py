"""Round-32 public programs, continued (``test_public_programs_round32.py`` has the round's notes):
SeanChang-3245/BankWatchList's ``main.ipynb`` run as written, under CPU ``torch.amp.autocast``
(bfloat16 linear layers and attention inside the sequence-first ``TransformerEncoder``, the
bfloat16 logits into ``BCEWithLogitsLoss``, ``torch.amp.GradScaler()`` disabled without CUDA),
eagerly with torch and with tracegrad (``parity.run_both``).
"""
from parity import run_both

from tests.api.test_public_programs_round32 import bankwatchlist_program


def test_bankwatchlist_transformer_autocast():
    # bfloat16 matmuls: one ulp (2**-8) apart where the two libraries' dot products round
    # differently (the eval forward of the same weights gives equal logits, and the first
    # step's gradients differ from torch's by what torch's own bfloat16 run differs from its
    # float32 one). From there Adam turns such differences into lr-sized steps, and where the
    # trajectories go depends on the CPU's kernels (an AVX-512 machine's bfloat16 dot products
    # round unlike an AVX2 machine's): the first step's values are compared, and after it what
    # does not depend on rounding (dtypes under autocast, shapes, the printed lines' words).
    run_both(bankwatchlist_program(autocast=True), rtol=3e-2, atol=3e-2, diverge_after="train")
