"""NOTE: the tests that followed PyTorch's test/test_autograd.py statement for statement (the same code
and literals, lightly edited, asserts renamed) were removed (a public repository's code stays out of
this project's commits); what remains is the tests written here. The text below describes the file
as it was.

Ported from PyTorch's test/test_autograd.py, round 9: TestAutogradLogging
(test/autograd/test_logging.py), the single-process parts of TestMultithreadAutograd (Python
threads sharing leaves and graphs), and TestAutogradComplex (test/autograd/test_complex.py). Each
body runs under torch 2.13 (the oracle) and tracegrad through the ``T`` fixture, or as a
``run_both`` program; each test names its original.

Adapted: the originals draw inputs with ``randn``; here they are fixed numpy draws (``rn``) so
both libraries see the same values. Not ported: test_fork_join_in_middle (TorchScript's
``jit._fork``), the CUDA device-thread and DataParallel tests.
"""
import logging




# ---- TestAutogradLogging ------------------------------------------------------------------------
class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def test_logging_off_after_reset(T):
    # TestAutogradLogging: without autograd=DEBUG (set_logs() resets it) nothing is logged
    h = _Records()
    logger = logging.getLogger(T.__name__ + ".autograd")
    logger.addHandler(h)
    try:
        T._logging.set_logs(autograd=logging.DEBUG)
        T._logging.set_logs()
        x = T.ones(2, requires_grad=True)
        (x * 2).sum().backward()
    finally:
        logger.removeHandler(h)
    assert h.records == []
    assert x.grad.tolist() == [2.0, 2.0]


