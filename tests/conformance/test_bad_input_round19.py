"""Bad-input parity, round 19 (optimizers and schedulers, data loading, nn.utils, save/load): a
probe over ~1,680 wrong calls (every optimizer's constructor with negative or out-of-range lr,
momentum, betas, eps, weight_decay, duplicate and non-Tensor params, step with grads of another
shape/dtype/layout, add_param_group and load_state_dict with mismatched groups; every scheduler's
milestones, gamma, T_max, step order and load_state_dict; DataLoader batch_size/sampler/
batch_sampler/drop_last conflicts, random_split lengths, Subset, TensorDataset, StackDataset,
ConcatDataset, the samplers; clip_grad_norm_ with inf/nan norms and error_if_nonfinite,
parameters_to_vector and vector_to_parameters, pack_padded_sequence, pad_sequence,
PackedSequence, weight_norm/spectral_norm/parametrizations on missing names; torch.save/load of
unsupported objects, of truncated, corrupt and missing files and with bad arguments) left these
differences from torch 2.13, fixed here:

- a param group added to the optimizer after a ``CyclicLR`` or ``CosineAnnealingWarmRestarts``
  was built was silently left at its lr (torch's ``zip(..., strict=True)``: ValueError; the
  other schedulers' zips are strict now too);
- a DataLoader over a ``TensorDataset`` gathered an empty batch from ``batch_sampler=[[]]`` (torch:
  default_collate's IndexError) and read float sampler indices as positions (``sampler=[0.5]``
  gave row 0; torch: the tensor's IndexError);
- ``clip_grads_with_norm_`` took a Python number ``total_norm`` (torch clamps
  ``max_norm / (total_norm + 1e-6)``: TypeError for a number);
- ``t.data = u`` (and so ``vector_to_parameters``) moved a tensor between the meta device and a
  real one (torch's set_data: RuntimeError "incompatible tensor type");
- ``pad_sequence`` (and ``pack_sequence``) promoted mixed dtypes (torch: the first sequence's
  dtype, later ones cast), refused a sequence that broadcasts to its slot (torch copies it in:
  ``[ones(3, 2), ones(2)]`` is accepted), and raised RuntimeError for a complex padding_value
  (torch's parser: TypeError, as for None or a 1-element tensor);
- ``pack_padded_sequence`` with ``lengths`` on the meta device: NotImplementedError (torch:
  RuntimeError, lengths must be a CPU tensor);
- ``PackedSequence(data)`` raised RuntimeError where torch takes ``PackedSequence((data,
  batch_sizes))`` and asserts on anything else (AssertionError), and a list ``batch_sizes`` was
  taken (torch: AttributeError reading its device);
- ``pad_sequence``, ``pack_padded_sequence`` and ``pad_packed_sequence`` took any truthy
  ``batch_first`` (torch's parser: a Python bool only, TypeError for 1, None, a NumPy bool), and
  ``pad_sequence`` checked padding_side and the empty list before its parser's checks;
- an RNN fed a hand-made PackedSequence whose ``batch_sizes`` need more rows than its data has,
  grow from one step to the next, or are not int64 computed a result (torch: RuntimeError;
  TypeError for floating batch sizes);
- ``weight_norm`` and ``parametrizations.weight_norm`` took a float or bool ``dim`` (torch's
  ``norm_except_dim`` parser: TypeError) and a str one failed in Python's comparison words;
- ``save(obj, f, pickle_module=None)`` was accepted (torch: AttributeError, None has no
  Pickler) and ``save`` to a bytes path failed with a str/bytes TypeError (torch: AttributeError,
  not a path or file object);
- ``load`` with a ``map_location`` callable that returns no tensor returned that object as the
  loaded tensor (torch: TypeError), one that returns a storage of another size was taken (torch:
  RuntimeError), and the callable's own error (a TypeError for a one-argument callable) came out
  as a "damaged file" RuntimeError, for tracegrad and torch files;
- ``load`` read a file object that cannot seek (torch: AttributeError "You can only torch.load
  from a file that is seekable"), ignored a ``pickle_module`` without ``__name__`` (torch's dill
  check: AttributeError) and took ``errors=``/``fix_imports=`` under ``weights_only=True`` (torch's
  weights-only unpickler takes ``encoding`` only: TypeError, after its UserWarning, also given
  now);
- ``save`` gave no UserWarning for a tensor with ``register_hook`` hooks (torch warns that they
  are not saved; ``utils.hooks.unserializable_hook`` and ``warn_if_has_hooks`` added);
- ``save`` of a tensor of a user's Tensor subclass saved a plain Tensor (torch pickles the class:
  a weights-only load refuses it unless allowlisted, UnpicklingError; a full load gives the
  subclass back; a class made in a function cannot be saved, AttributeError);
- ``save`` of a sparse COO tensor raised NotImplementedError (torch saves it; it loads back
  sparse, coalesced flag kept, requires_grad dropped as torch's rebuild drops it).

A failed ``save`` to a path leaves no partial file and keeps an older file at that path intact
(torch writes in place and leaves a truncated file: the one intended difference, checked below).

Found and left alone: torch's class for truncated legacy-format or corrupt files (EOFError,
UnpicklingError, struct.error, UnicodeDecodeError, KeyError: accidents of its readers; tracegrad
raises RuntimeError naming the file), ``mmap=True`` of a file saved with
``_use_new_zipfile_serialization=False`` (tracegrad writes its own format for both, which maps),
``pack_padded_sequence`` with a length past the time dimension (torch reads past the input;
tracegrad raises RuntimeError), Adagrad.load_state_dict of a state without ``step`` (torch's
KeyError from its __setstate__), a list that contains itself (torch pickles it; tracegrad's tree
refuses it: ValueError), ``unpad_sequence`` with a negative length (torch's tensor-bound slice
gives an empty sequence), indexing a TensorDataset of sparse tensors, and
``clip_grad_norm_``/``parameters_to_vector`` of sparse gradients (tracegrad's NotImplementedError
subclass ``SparseOperand``). Each call runs under torch (the oracle) and tracegrad: the same exception class
(or none), no text of the layers below tracegrad; ``_ok`` calls are ones torch accepts.
"""
import io
import os
import tempfile

import numpy as np
import pytest

import tracegrad

from _bad_input_helpers import table_tests

torch = pytest.importorskip("torch")


def _sgd(T, n=1):
    return T.optim.SGD([T.nn.Parameter(T.ones(2)) for _ in range(n)], lr=0.1, momentum=0.9)


def _late_group(T, cls, **kw):
    # a scheduler built over one group, a second group added afterwards, then a step
    o = _sgd(T)
    s = getattr(T.optim.lr_scheduler, cls)(o, **kw)
    o.add_param_group({"params": [T.nn.Parameter(T.ones(1))]})
    o.step()
    s.step()
    return s.get_last_lr()


def _ds(T):
    return T.utils.data.TensorDataset(T.arange(5.))


def _batches(T, **kw):
    return [b[0].tolist() for b in T.utils.data.DataLoader(_ds(T), **kw)]


def _with_grads(T, vals=(3., 4.)):
    p = T.nn.Parameter(T.ones(2))
    p.grad = T.tensor(list(vals))
    return [p]


def _set_data(T, a, b):
    t = T.ones(2, device=a)
    t.data = T.ones(2, device=b)
    return t.device.type


def _rnn(T):
    return T.nn.utils.rnn


def _pad(T, seqs, **kw):
    return _rnn(T).pad_sequence(seqs, **kw)


def _saved(T, obj):
    b = io.BytesIO()
    T.save(obj, b)
    b.seek(0)
    return b


def _load_mapped(W, T, fn):
    # a file written by W, loaded by T with a map_location callable
    return T.load(_saved(W, {"a": W.ones(2)}), map_location=fn)


class _NoSeek:
    """A file object that reads but cannot seek (a pipe's)."""

    def __init__(self, data):
        self.data = data

    def read(self, n=-1):
        out, self.data = (self.data, b"") if n < 0 else (self.data[:n], self.data[n:])
        return out

    def readline(self):
        return self.read()


def _sparse(T):
    return T.sparse_coo_tensor(T.tensor([[0, 1, 1], [2, 0, 0]]), T.tensor([1., 2., 3.]), (2, 3))


CASES = {
    # schedulers: a group the scheduler was not built for
    "CyclicLR, group added late": lambda T: _late_group(T, "CyclicLR", base_lr=.1, max_lr=1.),
    "CosineAnnealingWarmRestarts, group added late": lambda T: _late_group(T, "CosineAnnealingWarmRestarts", T_0=2),
    "CyclicLR(cycle_momentum=False), group added late": lambda T: _late_group(
        T, "CyclicLR", base_lr=.1, max_lr=1., cycle_momentum=False),
    "StepLR, group added late_ok": lambda T: _late_group(T, "StepLR", step_size=1),
    "ExponentialLR, group added late_ok": lambda T: _late_group(T, "ExponentialLR", gamma=.5),
    "LambdaLR, group added late": lambda T: _late_group(T, "LambdaLR", lr_lambda=lambda e: 1.),
    "MultiplicativeLR, group added late": lambda T: _late_group(T, "MultiplicativeLR", lr_lambda=lambda e: .5),
    "CosineAnnealingLR, group added late": lambda T: _late_group(T, "CosineAnnealingLR", T_max=3),
    # DataLoader over a TensorDataset: batches of indices that are not ints
    "DataLoader(batch_sampler=[[]])": lambda T: _batches(T, batch_sampler=[[]]),
    "DataLoader(batch_sampler=[[0], []])": lambda T: _batches(T, batch_sampler=[[0], []]),
    "DataLoader(sampler=[0.5])": lambda T: _batches(T, sampler=[0.5]),
    "DataLoader(batch_sampler=[[1.0, 2]])": lambda T: _batches(T, batch_sampler=[[1.0, 2]]),
    "DataLoader(sampler=['a'])": lambda T: _batches(T, sampler=["a"]),
    "DataLoader(sampler=[np.int64(1)])_ok": lambda T: _batches(T, sampler=[np.int64(1)]),
    "DataLoader(sampler=[tensor(1)])_ok": lambda T: _batches(T, sampler=[T.tensor(1)]),
    "DataLoader(sampler=[-1], batch_size=1)_ok": lambda T: _batches(T, sampler=[-1]),
    "DataLoader(sampler=[9])": lambda T: _batches(T, sampler=[9]),
    "DataLoader(batch_sampler=[[0, 1], [4]])_ok": lambda T: _batches(T, batch_sampler=[[0, 1], [4]]),
    # clip_grads_with_norm_: total_norm is get_total_norm's Tensor
    "clip_grads_with_norm_(total_norm=5.)": lambda T: T.nn.utils.clip_grads_with_norm_(_with_grads(T), 1., 5.),
    "clip_grads_with_norm_(total_norm=5)": lambda T: T.nn.utils.clip_grads_with_norm_(_with_grads(T), 1., 5),
    "clip_grads_with_norm_(max_norm=tensor, total_norm=5.)": lambda T: T.nn.utils.clip_grads_with_norm_(
        _with_grads(T), T.tensor(1.), 5.),
    "clip_grads_with_norm_(total_norm=tensor)_ok": lambda T: T.nn.utils.clip_grads_with_norm_(
        _with_grads(T), 1., T.tensor(5.)),
    "clip_grads_with_norm_(no grads, total_norm=5.)_ok": lambda T: T.nn.utils.clip_grads_with_norm_(
        [T.nn.Parameter(T.ones(2))], 1., 5.),
    "clip_grads_with_norm_(no grads, max_norm='a')": lambda T: T.nn.utils.clip_grads_with_norm_(
        [T.nn.Parameter(T.ones(2))], "a", T.tensor(1.)),
    # .data across the meta device
    "cpu.data = meta": lambda T: _set_data(T, "cpu", "meta"),
    "meta.data = cpu": lambda T: _set_data(T, "meta", "cpu"),
    "meta.data = meta_ok": lambda T: _set_data(T, "meta", "meta"),
    "vector_to_parameters(meta vec, cpu params)": lambda T: T.nn.utils.vector_to_parameters(
        T.ones(2, device="meta"), [T.ones(2)]),
    "vector_to_parameters(cpu vec, meta params)": lambda T: T.nn.utils.vector_to_parameters(
        T.ones(2), [T.ones(2, device="meta")]),
    # pad_sequence / pack_sequence: the first sequence's dtype and trailing shape, copy_ semantics
    "pad_sequence([ones(3, 2), ones(2)])_ok": lambda T: _pad(T, [T.ones(3, 2), T.arange(2.)]).tolist(),
    "pad_sequence([ones(3, 2), ones(2, 1)])_ok": lambda T: _pad(T, [T.ones(3, 2), T.ones(2, 1)]).tolist(),
    "pad_sequence([ones(3, 2), ones(2, 3)])": lambda T: _pad(T, [T.ones(3, 2), T.ones(2, 3)]),
    "pad_sequence([ones(3, 1), ones(2, 3)])": lambda T: _pad(T, [T.ones(3, 1), T.ones(2, 3)]),
    "pad_sequence([ones(3, 2), ones(2, 2, 2)])": lambda T: _pad(T, [T.ones(3, 2), T.ones(2, 2, 2)]),
    "pack_sequence([ones(3, 2), ones(2)])_ok": lambda T: _rnn(T).pack_sequence([T.ones(3, 2), T.ones(2)]).data.shape,
    "pack_sequence([ones(3, 2), ones(2, 3)])": lambda T: _rnn(T).pack_sequence([T.ones(3, 2), T.ones(2, 3)]),
    "pad_sequence(padding_value=1j)": lambda T: _pad(T, [T.ones(2), T.ones(1)], padding_value=1j),
    "pad_sequence(padding_value=None)": lambda T: _pad(T, [T.ones(2), T.ones(1)], padding_value=None),
    "pad_sequence(padding_value=tensor([1.]))": lambda T: _pad(T, [T.ones(2), T.ones(1)], padding_value=T.tensor([1.])),
    "pad_sequence(padding_value=tensor(1j))": lambda T: _pad(T, [T.ones(2), T.ones(1)], padding_value=T.tensor(1j)),
    "pad_sequence(padding_value=tensor(2.))_ok": lambda T: _pad(T, [T.ones(2), T.ones(1)],
                                                                padding_value=T.tensor(2.)).tolist(),
    "pad_sequence(padding_value=np.float64(2))_ok": lambda T: _pad(T, [T.ones(2), T.ones(1)],
                                                                   padding_value=np.float64(2.)).tolist(),
    "pad_sequence(padding_value=True)_ok": lambda T: _pad(T, [T.ones(2), T.ones(1)], padding_value=True).tolist(),
    # pack_padded_sequence: lengths must be a CPU tensor
    "pack_padded_sequence(meta lengths)": lambda T: _rnn(T).pack_padded_sequence(
        T.ones(3, 2), T.tensor([3, 2], device="meta")),
    "pack_padded_sequence(float lengths tensor)_ok": lambda T: _rnn(T).pack_padded_sequence(
        T.ones(3, 2), T.tensor([3., 2.])).batch_sizes.tolist(),
    # the rnn kernels' bool arguments are Python bools only
    "pad_sequence(batch_first=1)": lambda T: _pad(T, [T.ones(2), T.ones(1)], batch_first=1),
    "pad_sequence(batch_first=None)": lambda T: _pad(T, [T.ones(2), T.ones(1)], batch_first=None),
    "pad_sequence([], batch_first=1)": lambda T: _pad(T, [], batch_first=1),
    "pad_sequence(3, batch_first=1)": lambda T: _pad(T, 3, batch_first=1),
    "pad_sequence(padding_value=1j, padding_side='x')": lambda T: _pad(T, [T.ones(2)], padding_value=1j,
                                                                       padding_side="x"),
    "pack_padded_sequence(batch_first=np.bool_(True))": lambda T: _rnn(T).pack_padded_sequence(
        T.ones(2, 2), [2, 1], batch_first=np.bool_(True)),
    "pack_padded_sequence(batch_first=0)": lambda T: _rnn(T).pack_padded_sequence(T.ones(2, 2), [2, 1], batch_first=0),
    "pad_packed_sequence(batch_first=1)": lambda T: _rnn(T).pad_packed_sequence(
        _rnn(T).pack_sequence([T.ones(2), T.ones(1)]), batch_first=1),
    "pack_sequence(enforce_sorted=1)_ok": lambda T: _rnn(T).pack_sequence([T.ones(2), T.ones(1)],
                                                                         enforce_sorted=1).batch_sizes.tolist(),
    # a PackedSequence made by hand, fed to an RNN
    **{f"RNN(PackedSequence(5 rows, batch_sizes={bs}, {dt}))" + ("_ok" if ok else ""):
       (lambda T, bs=bs, dt=dt: T.nn.RNN(2, 2)(
           _rnn(T).PackedSequence(T.ones(5, 2), T.tensor(bs, dtype=getattr(T, dt))))[0].data.shape)
       for bs, dt, ok in (([2, 2, 2], "int64", False), ([1, 2, 2], "int64", False), ([2, 0, 3], "int64", False),
                          ([2, 2, 1], "int32", False), ([2., 2., 1.], "float32", False), ([2, 2], "int64", True),
                          ([2, 2, 1, 0], "int64", True), ([2, 2, 1], "int64", True))},
    # PackedSequence's constructor
    "PackedSequence(data)": lambda T: _rnn(T).PackedSequence(T.ones(3)),
    "PackedSequence((data,))": lambda T: _rnn(T).PackedSequence((T.ones(3),)),
    "PackedSequence((data, batch_sizes))_ok": lambda T: _rnn(T).PackedSequence(
        (T.ones(3), T.tensor([2, 1]))).batch_sizes.tolist(),
    "PackedSequence(data, [2, 1])": lambda T: _rnn(T).PackedSequence(T.ones(3), [2, 1]),
    "PackedSequence(data, meta batch_sizes)": lambda T: _rnn(T).PackedSequence(T.ones(3), T.ones(2, device="meta")),
    # weight_norm's dim
    "weight_norm(dim=1.5)": lambda T: T.nn.utils.weight_norm(T.nn.Linear(2, 2), dim=1.5),
    "weight_norm(dim=True)": lambda T: T.nn.utils.weight_norm(T.nn.Linear(2, 2), dim=True),
    "weight_norm(dim='0')": lambda T: T.nn.utils.weight_norm(T.nn.Linear(2, 2), dim="0"),
    "weight_norm(dim=np.int64(1))_ok": lambda T: T.nn.utils.weight_norm(T.nn.Linear(2, 2), dim=np.int64(1)),
    "weight_norm(dim=tensor(0))_ok": lambda T: T.nn.utils.weight_norm(T.nn.Linear(2, 2), dim=T.tensor(0)),
    "parametrizations.weight_norm(dim=1.0)": lambda T: T.nn.utils.parametrizations.weight_norm(
        T.nn.Linear(2, 2), dim=1.0),
    "parametrizations.weight_norm(dim=-1)_ok": lambda T: T.nn.utils.parametrizations.weight_norm(
        T.nn.Linear(2, 2), dim=-1)(T.ones(1, 2)).shape,
    # save / load arguments
    "save(pickle_module=None)": lambda T: T.save(T.ones(2), io.BytesIO(), pickle_module=None),
    "save(pickle_module=pickle)_ok": lambda T: T.save(T.ones(2), io.BytesIO(), pickle_module=__import__("pickle")),
    "save(bytes path)": lambda T: T.save(T.ones(2), os.path.join(tempfile.gettempdir(), "r19_never.pt").encode()),
    "load(map_location returns int)": lambda T: _load_mapped(T, T, lambda s, loc: 3),
    "load(torch file, map_location returns int)": lambda T: _load_mapped(torch, T, lambda s, loc: 3),
    "load(map_location returns str)": lambda T: _load_mapped(T, T, lambda s, loc: "cpu"),
    "load(map_location returns None)_ok": lambda T: _load_mapped(T, T, lambda s, loc: None)["a"].tolist(),
    "load(map_location returns storage)_ok": lambda T: _load_mapped(T, T, lambda s, loc: s)["a"].tolist(),
    "load(map_location takes one argument)": lambda T: _load_mapped(T, T, lambda s: s),
    "load(torch file, map_location takes one argument)": lambda T: _load_mapped(torch, T, lambda s: s),
    "load(map_location raises)": lambda T: _load_mapped(T, T, lambda s, loc: 1 / 0),
    "load(map_location returns a slice)": lambda T: _load_mapped(T, T, lambda s, loc: s[:1]),
    "load(file object without seek)": lambda T: T.load(_NoSeek(_saved(T, T.ones(2)).getvalue())),
    "load(pickle_module=1, weights_only=False)": lambda T: T.load(_saved(T, T.ones(2)), pickle_module=1,
                                                                  weights_only=False),
    "load(errors='strict')": lambda T: T.load(_saved(T, T.ones(2)), errors="strict"),
    "load(fix_imports=False)": lambda T: T.load(_saved(T, T.ones(2)), fix_imports=False),
    "load(errors='strict', weights_only=False)_ok": lambda T: T.load(_saved(T, T.ones(2)), errors="strict",
                                                                     weights_only=False).tolist(),
    "load(encoding='latin1')_ok": lambda T: T.load(_saved(T, T.ones(2)), encoding="latin1").tolist(),
    "save+load(sparse)_ok": lambda T: T.load(_saved(T, _sparse(T))).to_dense().tolist(),
    "save+load(sparse in dict, weights_only=False)_ok": lambda T: T.load(
        _saved(T, {"s": _sparse(T)}), weights_only=False)["s"].is_sparse,
}


GIST = {
    "CyclicLR, group added late": "shorter than argument",
    "clip_grads_with_norm_(total_norm=5.)": "clamp()",
    "cpu.data = meta": "incompatible tensor type",
    "pad_sequence(padding_value=1j)": "argument 'padding_value' (position 3) must be float, not complex",
    "pack_padded_sequence(meta lengths)": "1D CPU int64 tensor",
    "PackedSequence(data)": "Expected data to be a list or tuple of length 2",
    "weight_norm(dim=1.5)": "must be int, not float",
    "save(pickle_module=None)": "'NoneType' object has no attribute 'Pickler'",
    "load(file object without seek)": "from a file that is seekable",
    "load(errors='strict')": "unexpected keyword argument 'errors'",
}

test_same_class_as_torch, test_message_gist = table_tests(CASES, GIST, torch, tracegrad)


def _same(fn):
    want, got = fn(torch), fn(tracegrad)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert tuple(got.shape) == tuple(want.shape)
    assert got.tolist() == want.tolist()
    return want, got


def test_pad_sequence_takes_first_dtype_and_copies_in():
    # torch's kernel fills a tensor of the first sequence's dtype and copy_s each one in
    _same(lambda T: _pad(T, [T.ones(2), T.tensor([1.5], dtype=T.float64)]))
    _same(lambda T: _pad(T, [T.ones(2, dtype=T.int64), T.tensor([1.5, -2.7])], padding_value=-1))
    _same(lambda T: _pad(T, [T.tensor([True, False]), T.tensor([3])]))
    _same(lambda T: _pad(T, [T.ones(3, 2), T.tensor([5., 6.])], batch_first=True, padding_side="left"))
    _same(lambda T: _rnn(T).pack_sequence([T.ones(3), T.tensor([2., 3.], dtype=T.float64)]).data)
    # the gradient flows back to each sequence in its own dtype (copy_'s backward casts back)
    grads = []
    for T in (torch, tracegrad):
        a = T.ones(2, requires_grad=True)
        b = T.tensor([2.], dtype=T.float64, requires_grad=True)
        c = T.tensor([3., 4.], requires_grad=True)
        out = _pad(T, [T.stack([a, a]), b, c])    # (3, 2) slot gets a; b and c broadcast into theirs
        (out * T.arange(1., out.numel() + 1).reshape(out.shape)).sum().backward()
        grads.append([(g.grad.tolist(), str(g.grad.dtype).split(".")[-1]) for g in (a, b, c)])
    assert grads[0] == grads[1]


def test_dataloader_fetches_like_torch():
    # the one-gather path still gives torch's batches for int batches, and the per-sample path
    # the rest (drop_last, a numpy index, negative indices)
    for kw in (dict(batch_size=2), dict(batch_size=2, drop_last=True), dict(batch_sampler=[[4, -1], [0]]),
               dict(sampler=[np.int64(3), 1], batch_size=2)):
        assert _batches(tracegrad, **kw) == _batches(torch, **kw), kw


def test_clip_grads_with_norm_scales_as_torch():
    for T in (torch, tracegrad):
        ps = _with_grads(T)
        total = T.nn.utils.get_total_norm([p.grad for p in ps])
        T.nn.utils.clip_grads_with_norm_(ps, 1., total)
        assert [round(v, 5) for v in ps[0].grad.tolist()] == [0.6, 0.8]
    # the refused number leaves the gradients as they were
    ps = _with_grads(tracegrad)
    with pytest.raises(TypeError):
        tracegrad.nn.utils.clip_grads_with_norm_(ps, 1., 5.)
    assert ps[0].grad.tolist() == [3., 4.]


def test_packed_sequence_pair_form():
    # PackedSequence((data, batch_sizes)) is the same packed sequence an RNN reads
    x = tracegrad.arange(6.).reshape(3, 2)
    p = tracegrad.nn.utils.rnn.pack_padded_sequence(x.unsqueeze(-1), [3, 2])
    q = tracegrad.nn.utils.rnn.PackedSequence((p.data, p.batch_sizes))
    assert q.data.tolist() == p.data.tolist() and q.batch_sizes.tolist() == [2, 2, 1]
    assert q.sorted_indices is None and q.unsorted_indices is None
    assert p.batch_sizes.device.type == "cpu"


def test_sparse_save_load_matches_torch(tmp_path):
    out = {}
    for T in (torch, tracegrad):
        s = T.sparse_coo_tensor(T.tensor([[0, 1, 1], [2, 0, 0]]), T.tensor([1., 2., 3.]), (2, 3),
                                requires_grad=True)
        path = tmp_path / f"{T.__name__}.pt"
        T.save({"raw": s, "c": s.detach().coalesce(), "d": T.ones(1)}, path)
        r = T.load(path)
        out[T.__name__] = [(v.is_sparse, v.is_coalesced() if v.is_sparse else None, v._nnz() if v.is_sparse else None,
                            v.to_dense().tolist() if v.is_sparse else v.tolist(), v.requires_grad)
                           for v in (r["raw"], r["c"], r["d"])]
    assert out["tracegrad"] == out["torch"]


def test_failed_save_leaves_no_partial_file(tmp_path):
    # the intended difference: torch writes in place (a failed pickle leaves a truncated file, and
    # destroys an older checkpoint at that path); tracegrad writes a temporary file and renames it
    fresh, old = tmp_path / "fresh.pt", tmp_path / "old.pt"
    tracegrad.save({"w": tracegrad.ones(2)}, old)
    for path in (fresh, old):
        with pytest.raises(AttributeError):
            tracegrad.save({"w": tracegrad.ones(2), "f": lambda: 0}, path)
    assert not fresh.exists()
    assert tracegrad.load(old)["w"].tolist() == [1., 1.]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.pt"]    # no temporary file left
    # a missing file is FileNotFoundError, as torch
    for T in (torch, tracegrad):
        with pytest.raises(FileNotFoundError):
            T.load(tmp_path / "missing.pt")


def test_save_warns_for_tensor_hooks():
    # torch's Tensor.__reduce_ex__ warns once per saved tensor for each hook not marked
    # unserializable_hook (leaf and non-leaf); the hooks are not saved
    import warnings
    said = {}
    for T in (torch, tracegrad):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            a = T.ones(2, requires_grad=True)
            a.register_hook(lambda g: g)
            b = a * 2
            b.register_hook(T.utils.hooks.unserializable_hook(lambda g: g))
            b.register_hook(print)
            c = T.ones(2, requires_grad=True)
            c.register_hook(T.utils.hooks.unserializable_hook(lambda g: g))
            r = T.load(_saved(T, {"a": a, "again": a, "b": b, "c": c}))
        said[T.__name__] = [(x.category, str(x.message).split(" on tensor")[0].split(" at 0x")[0]) for x in w]
        assert r["a"].requires_grad and r["a"].grad_fn is None
    assert said["tracegrad"] == said["torch"] and len(said["torch"]) == 2


class _TorchSub(torch.Tensor):
    pass


class _TracegradSub(tracegrad.Tensor):
    pass


def test_tensor_subclass_save_keeps_its_class():
    # torch pickles a tensor subclass by its class: a weights-only load refuses the class unless
    # allowlisted, a full load gives the subclass back (one object for one saved object)
    import pickle
    for T, S in ((torch, _TorchSub), (tracegrad, _TracegradSub)):
        s = T.ones(2, requires_grad=True).as_subclass(S)
        with pytest.raises(pickle.UnpicklingError):
            T.load(_saved(T, {"s": s}))
        r = T.load(_saved(T, {"s": s, "again": s}), weights_only=False)
        assert type(r["s"]) is S and r["s"] is r["again"], T.__name__
        assert r["s"].requires_grad and r["s"].tolist() == [1., 1.]
        with T.serialization.safe_globals([S]):
            assert type(T.load(_saved(T, s))) is S

        class Local(T.Tensor):
            pass
        with pytest.raises(AttributeError):    # pickle cannot name a class made in a function
            T.save(T.ones(1).as_subclass(Local), io.BytesIO())
