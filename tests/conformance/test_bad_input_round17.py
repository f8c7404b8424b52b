"""Bad-input parity, round 17 (windows and factory options): a probe over ~1,250 wrong calls
(optimizer and scheduler constructors, DataLoader/Dataset/Sampler arguments, the nn.Module
registration and container API, torch.fft and stft/istft arguments, the window functions, factory
keyword options) left these differences from torch 2.13, fixed here: ``torch.signal.windows``
took a float or bool ``M`` (``hann(2.0)``: a window; torch's ``linspace(steps=M)`` refuses it,
TypeError) but refused a 0-d integer tensor and ``M=0.0``/``M=1.0`` where torch special-cases
them; it ignored ``layout`` (torch: ValueError for anything but strided, None included),
``device`` (a bad one is RuntimeError) and a non-bool ``requires_grad`` (TypeError), read
``dtype='float32'`` or ``float`` as a dtype (torch: ValueError), and took only a list/tuple for
``general_cosine``'s coefficients (torch: any iterable: a range, a generator, a one-element
tensor; a string is ValueError, a complex number TypeError, where a window was computed); the
top-level ``hann_window``/``kaiser_window``/... ignored ``device`` and a sparse ``layout``
(RuntimeError); and every factory took ``pin_memory=True`` on a machine without an accelerator,
where torch's CPU build has no pinned allocator (RuntimeError), while ``zeros``/``ones``/``full``,
the ``*_like`` factories and ``tril_indices``/``triu_indices`` refused the keyword (TypeError)
and ``range``/``Tensor.new_tensor``, which have none in torch, took it; ``asarray(copy=False)``
copied a NumPy array into another dtype and a Python list or number (torch: ValueError, nothing
can alias them) and took a non-bool ``copy`` (TypeError); ``randperm(n, dtype=float16)`` with
``n > 2049`` drew rounded duplicates (torch: RuntimeError). Each call runs under
torch (the oracle) and tracegrad: the same exception class (or none), no text of the layers below
tracegrad; ``_ok`` calls are ones torch accepts, and their values are compared below."""
import numpy as np
import pytest

import tracegrad

from _bad_input_helpers import assert_gist, assert_same_class, outcome

torch = pytest.importorskip("torch")


def _W(T):
    return T.signal.windows


def _gc(T, a, M=3, **kw):
    return T.signal.windows.general_cosine(M, a=a, **kw)


def _coeffs(T, kind):
    return {"range": range(2), "generator": (v for v in (0.5, 0.5)), "1-elem tensor": T.tensor([0.5]),
            "2-elem tensor": T.tensor([0.5, 0.5]), "numpy": np.array([0.5, 0.5]), "str": "ab", "dict": {0.5: 1},
            "[str]": ["x"], "[complex]": [1j], "[2-elem tensor]": [T.tensor([1., 2.])], "int": 3}[kind]


_NO_GPU = not tracegrad.cuda.is_available()

CASES = {
    # signal.windows: M is linspace's steps past the special cases 0 (and 1 for most windows)
    "hann(2.0)": lambda T: _W(T).hann(2.0),
    "cosine(1.5)": lambda T: _W(T).cosine(1.5),
    "gaussian(True)": lambda T: _W(T).gaussian(True),
    "kaiser(True)_ok": lambda T: _W(T).kaiser(True),
    "cosine(1.0)": lambda T: _W(T).cosine(1.0),
    "bartlett(1.0)_ok": lambda T: _W(T).bartlett(1.0),
    "exponential(0.0)_ok": lambda T: _W(T).exponential(0.0),
    "hamming(np.float64(3))": lambda T: _W(T).hamming(np.float64(3.)),
    "nuttall(tensor(3))_ok": lambda T: _W(T).nuttall(T.tensor(3)),
    "cosine(tensor(3.))": lambda T: _W(T).cosine(T.tensor(3.)),
    "blackman(tensor([3]))": lambda T: _W(T).blackman(T.tensor([3])),
    "gaussian(tensor(True))": lambda T: _W(T).gaussian(T.tensor(True)),
    # the options torch checks: layout, dtype, device, requires_grad
    "hann(3, layout=None)": lambda T: _W(T).hann(3, layout=None),
    "cosine(0, layout=sparse_coo)": lambda T: _W(T).cosine(0, layout=T.sparse_coo),
    "kaiser(3, dtype='float32')": lambda T: _W(T).kaiser(3, dtype="float32"),
    "bartlett(3, dtype=float)": lambda T: _W(T).bartlett(3, dtype=float),
    "exponential(3, dtype=float64)_ok": lambda T: _W(T).exponential(3, dtype=T.float64),
    "gaussian(3, device='foo')": lambda T: _W(T).gaussian(3, device="foo"),
    "hann(0, device='foo')": lambda T: _W(T).hann(0, device="foo"),
    "cosine(3, device=3)": lambda T: _W(T).cosine(3, device=3),
    "hamming(3, requires_grad=1)": lambda T: _W(T).hamming(3, requires_grad=1),
    "kaiser(1, requires_grad=1)": lambda T: _W(T).kaiser(1, requires_grad=1),
    "cosine(3, requires_grad=None)_ok": lambda T: _W(T).cosine(3, requires_grad=None),
    "hann(3, requires_grad=None)": lambda T: _W(T).hann(3, requires_grad=None),
    "hann(1, requires_grad=None)_ok": lambda T: _W(T).hann(1, requires_grad=None),
    # general_cosine's coefficients: any iterable, read as torch.tensor reads them
    **{f"general_cosine(a={k})" + ("_ok" if k in ("range", "generator", "1-elem tensor", "dict") else ""):
       (lambda T, k=k: _gc(T, _coeffs(T, k)))
       for k in ("range", "generator", "1-elem tensor", "dict", "2-elem tensor", "numpy", "str", "[str]",
                 "[complex]", "[2-elem tensor]", "int")},
    "general_cosine(1, a=3)_ok": lambda T: _gc(T, 3, M=1),
    "general_cosine(3, a=[])": lambda T: _gc(T, []),
    # the top-level windows: layout and device
    "hann_window(3, layout=sparse_coo)": lambda T: T.hann_window(3, layout=T.sparse_coo),
    "hann_window(-1, layout=sparse_coo)": lambda T: T.hann_window(-1, layout=T.sparse_coo),
    "bartlett_window(3, layout=3)": lambda T: T.bartlett_window(3, layout=3),
    "hamming_window(3, layout=None)_ok": lambda T: T.hamming_window(3, layout=None),
    "blackman_window(3, device='foo')": lambda T: T.blackman_window(3, device="foo"),
    "kaiser_window(0, device=3)": lambda T: T.kaiser_window(0, device=3),
    "hann_window(3, device='meta')_ok": lambda T: T.hann_window(3, device="meta").shape,
}

# pin_memory=True: torch's CPU build has no pinned allocator (on a GPU machine both accept it)
_PINNED = {
    "tensor": lambda T: T.tensor([1.], pin_memory=True),
    "empty": lambda T: T.empty(2, pin_memory=True),
    "empty(-1)": lambda T: T.empty(-1, pin_memory=True),
    "zeros": lambda T: T.zeros(2, pin_memory=True),
    "ones": lambda T: T.ones(2, pin_memory=True),
    "full": lambda T: T.full((2,), 1., pin_memory=True),
    "eye": lambda T: T.eye(2, pin_memory=True),
    "arange": lambda T: T.arange(2, pin_memory=True),
    "linspace": lambda T: T.linspace(0, 1, 2, pin_memory=True),
    "logspace": lambda T: T.logspace(0, 1, 2, pin_memory=True),
    "rand": lambda T: T.rand(2, pin_memory=True),
    "randn": lambda T: T.randn(2, pin_memory=True),
    "randint": lambda T: T.randint(3, (2,), pin_memory=True),
    "randperm": lambda T: T.randperm(3, pin_memory=True),
    "zeros_like": lambda T: T.zeros_like(T.ones(2), pin_memory=True),
    "ones_like": lambda T: T.ones_like(T.ones(2), pin_memory=True),
    "empty_like": lambda T: T.empty_like(T.ones(2), pin_memory=True),
    "full_like": lambda T: T.full_like(T.ones(2), 1., pin_memory=True),
    "rand_like": lambda T: T.rand_like(T.ones(2), pin_memory=True),
    "randint_like": lambda T: T.randint_like(T.ones(2), 3, pin_memory=True),
    "empty_strided": lambda T: T.empty_strided((2,), (1,), pin_memory=True),
    "empty_permuted": lambda T: T.empty_permuted((2,), (0,), pin_memory=True),
    "tril_indices": lambda T: T.tril_indices(2, 2, pin_memory=True),
    "triu_indices": lambda T: T.triu_indices(2, 2, pin_memory=True),
    "scalar_tensor": lambda T: T.scalar_tensor(1., pin_memory=True),
    "hann_window": lambda T: T.hann_window(2, pin_memory=True),
    "kaiser_window": lambda T: T.kaiser_window(2, pin_memory=True),
    "new_zeros": lambda T: T.ones(2).new_zeros(2, pin_memory=True),
    "new_full": lambda T: T.ones(2).new_full((2,), 1., pin_memory=True),
    "new_empty_strided": lambda T: T.ones(2).new_empty_strided((2,), (1,), pin_memory=True),
    "sparse_coo_tensor": lambda T: T.sparse_coo_tensor([[0]], [1.], (2,), pin_memory=True),
}
CASES.update({f"{k}(pin_memory=True)": v for k, v in _PINNED.items()})
CASES.update({
    # the keyword torch's signature lacks; False and a meta tensor are fine; a non-bool is TypeError
    "range(pin_memory=False)": lambda T: T.range(0, 2, pin_memory=False),
    "new_tensor(pin_memory=False)": lambda T: T.ones(2).new_tensor([1.], pin_memory=False),
    "zeros(pin_memory=False)_ok": lambda T: T.zeros(2, pin_memory=False),
    "ones_like(pin_memory=False)_ok": lambda T: T.ones_like(T.ones(2), pin_memory=False),
    "empty(device='meta', pin_memory=True)_ok": lambda T: T.empty(2, device="meta", pin_memory=True),
    "zeros(pin_memory=1)": lambda T: T.zeros(2, pin_memory=1),
    # asarray(copy=False) aliases or refuses; copy is None or a bool
    "asarray(float64 array, float32, copy=False)": lambda T: T.asarray(np.ones(2), dtype=T.float32, copy=False),
    "asarray(int64 array, float32, copy=False)": lambda T: T.asarray(np.ones(2, dtype=np.int64), dtype=T.float32,
                                                                     copy=False),
    "asarray([1., 2.], copy=False)": lambda T: T.asarray([1., 2.], copy=False),
    "asarray(1.5, copy=False)": lambda T: T.asarray(1.5, copy=False),
    "asarray(copy=0)": lambda T: T.asarray([1.], copy=0),
    "asarray(float32 array, float32, copy=False)_ok": lambda T: T.asarray(np.ones(2, dtype=np.float32),
                                                                          dtype=T.float32, copy=False),
    "asarray(float64 array, copy=False)_ok": lambda T: T.asarray(np.ones(2), copy=False),
    # randperm in float16 holds n up to 2049 (torch's bound)
    "randperm(2050, float16)": lambda T: T.randperm(2050, dtype=T.float16),
    "randperm(2049, float16)_ok": lambda T: T.randperm(2049, dtype=T.float16).shape,
})


@pytest.mark.parametrize("name", list(CASES))
def test_same_class_as_torch(name):
    if "pin_memory=True" in name and "meta" not in name and not _NO_GPU:
        pytest.skip("pin_memory=True is taken where an accelerator exists")
    assert_same_class(name, CASES[name], torch, tracegrad)
    if name.endswith("_ok"):
        assert outcome(CASES[name], tracegrad)[0] is None


GIST = {
    "hann(2.0)": "linspace() received an invalid combination of arguments",
    "hann(3, layout=None)": "is implemented for strided tensors only, got: None",
    "kaiser(3, dtype='float32')": "kaiser expects float32 or float64 dtypes",
    "general_cosine(a=str)": "too many dimensions 'str'",
    "general_cosine(a=[complex])": "must be real number, not complex",
    "hann_window(3, layout=sparse_coo)": "hann_window is not implemented for sparse types",
    "gaussian(3, device='foo')": "Expected one of cpu, cuda",
    "hamming(3, requires_grad=1)": "requires_grad",
    "tensor(pin_memory=True)": "pin_memory=True requires a CUDA or other accelerator backend",
    "zeros_like(pin_memory=True)": "pin_memory=True requires a CUDA or other accelerator backend",
    "asarray(float64 array, float32, copy=False)": "can't alias tensor with dtype 'Double' into dtype 'Float'",
    "asarray([1., 2.], copy=False)": "can't alias arbitrary sequence into a tensor",
    "randperm(2050, float16)": "n cannot be greater than 2049 for Half type",
}


@pytest.mark.parametrize("name", list(GIST))
def test_message_gist(name):
    if "pin_memory=True" in name and not _NO_GPU:
        pytest.skip("pin_memory=True is taken where an accelerator exists")
    assert_gist(name, CASES[name], GIST[name], torch, tracegrad)


def _vals(t):
    return np.round(np.asarray(t.detach().tolist(), dtype=np.float64), 5).tolist()


def test_accepted_windows_give_torch_values():
    # the forms torch accepts that tracegrad refused or read otherwise: same shapes and values
    calls = {
        "0-d int tensor M": lambda T: T.signal.windows.nuttall(T.tensor(4)),
        "int32 tensor M, periodic": lambda T: T.signal.windows.cosine(T.tensor(4, dtype=T.int32), sym=False),
        "M=1.0": lambda T: T.signal.windows.kaiser(1.0),
        "M=0.0": lambda T: T.signal.windows.gaussian(0.0),
        "range coefficients": lambda T: _gc(T, range(3), M=4),
        "generator coefficients, periodic": lambda T: _gc(T, (v for v in (0.5, 0.25)), M=4, sym=False),
        "1-element tensor coefficients": lambda T: _gc(T, T.tensor([0.5])),
        "dict coefficients (its keys)": lambda T: _gc(T, {0.5: 1, 0.5 + 1e-9: 2}),
        "nested coefficients": lambda T: _gc(T, [[1., 2.]]),
        "float64 hann": lambda T: T.signal.windows.hann(5, dtype=T.float64),
        "exponential center, periodic": lambda T: T.signal.windows.exponential(4, center=1., sym=False),
    }
    for name, fn in calls.items():
        want, got = fn(torch), fn(tracegrad)
        assert tuple(got.shape) == tuple(want.shape), name
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], name
        assert np.allclose(_vals(got), _vals(want), atol=1e-5), name
    # a window on the meta device has no values; on cpu it is a leaf asking for grad when asked
    assert tracegrad.signal.windows.hann(3, device="meta").device.type == "meta"
    w = tracegrad.hann_window(4, device="cpu", requires_grad=True)
    assert w.requires_grad and w.is_leaf and _vals(w) == _vals(torch.hann_window(4))
    # pin_memory=False everywhere is the default: the tensors are the ordinary ones
    assert tracegrad.zeros(2, pin_memory=False).tolist() == [0., 0.]
    assert tracegrad.tril_indices(2, 2, pin_memory=False).tolist() == torch.tril_indices(2, 2).tolist()
