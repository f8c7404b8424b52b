"""``torch.cuda.FloatTensor``, ``torch.cuda.LongTensor``, ...: importable on any machine, as
torch's are (kuc2477/pytorch-memn2n's ``encs.py`` imports them at module level and picks
``CudaTensor if cuda else Tensor``; before, ``from tracegrad.cuda import FloatTensor`` was an
ImportError). Without a GPU, calling one is torch's TypeError and ``x.type(...)`` of one its
RuntimeError; ``isinstance`` of a CPU tensor is False."""
import pytest

import tracegrad

torch = pytest.importorskip("torch")

NAMES = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
         "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]


@pytest.mark.parametrize("name", NAMES)
def test_cuda_legacy_type_names(name):
    ref, got = getattr(torch.cuda, name), getattr(tracegrad.cuda, name)
    assert got.__name__ == ref.__name__ == name
    assert got.dtype == getattr(tracegrad, str(ref.dtype).split(".")[1])
    assert got is not getattr(tracegrad, name)
    for T, cls in ((torch, ref), (tracegrad, got)):
        assert not isinstance(T.zeros(2).to(cls.dtype), cls)


@pytest.mark.skipif(tracegrad.cuda.is_available(), reason="torch's CPU build is the oracle here")
def test_cuda_legacy_types_without_a_gpu():
    for T in (torch, tracegrad):
        with pytest.raises(TypeError, match="torch.cuda.FloatTensor not available"):
            T.cuda.FloatTensor(2, 3)
        with pytest.raises(RuntimeError):
            T.zeros(2).type(T.cuda.LongTensor)
        # the memn2n pattern: the CPU type chosen when cuda is False
        dt = T.cuda.LongTensor if False else T.LongTensor
        t = T.Tensor(range(3)).type(dt)
        assert t.dtype == T.int64 and t.tolist() == [0, 1, 2]


@pytest.mark.skipif(not tracegrad.cuda.is_available(), reason="needs a GPU")
def test_cuda_legacy_types_on_a_gpu():
    t = tracegrad.cuda.FloatTensor(2, 3)
    assert t.device.type == "cuda" and t.dtype == tracegrad.float32
    assert isinstance(t, tracegrad.cuda.FloatTensor) and not isinstance(t, tracegrad.FloatTensor)
    assert tracegrad.zeros(2).type(tracegrad.cuda.LongTensor).device.type == "cuda"
