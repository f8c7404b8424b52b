"""Round-13 ports of test/dynamo/test_repros.py (user-reported bugs with plain tensor/nn code)
and test/dynamo/test_model_output.py (with a small ModelOutput-like class written here, not
HuggingFace's), run as plain ``tracegrad.compile`` calls that must equal torch eager (and
tracegrad eager) on every call. Each test names its original; only what a user can observe
is ported. The other round-13 ports are in test_dynamo_ported_round13.py and
test_dynamo_ported_round13b.py."""
import collections

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

from ._dynamo_port import CALLS, _np, check, rand, same  # noqa: E402


def ints(T, i, *shape, lo=-8, hi=8, seed=0):
    return T.tensor(np.random.RandomState(seed + i).randint(lo, hi, size=shape).astype("int64"))


# ---- test/dynamo/test_repros.py --------------------------------------------------------------
def test_rng_state_get_set():
    # ReproTests.test_rng_state: get_rng_state, rand, set_rng_state, rand gives the same draws,
    # on every call (and a fresh pair each call)
    def fn(T):
        state = T.get_rng_state()
        before = T.rand(20)
        T.set_rng_state(state)
        return before, T.rand(20)
    comp = tracegrad.compile(lambda: fn(tracegrad))
    prev = None
    for i in range(CALLS):
        before, after = comp()
        same(before, after, f"call{i}")
        assert prev is None or not np.allclose(_np(prev), _np(before)), f"call{i} repeats"
        prev = before


def test_seq_append_list():
    # ReproTests.test_seq_append_list: a Sequential whose forward appends to the list it is
    # passed; the caller's list grows on every call and the same list is returned
    def build(T):
        class SequentialAppendList(T.nn.Sequential):
            def forward(self, x, ll):
                for layer in self:
                    x = layer(x)
                    ll.append(x)
                return x, ll
        T.manual_seed(0)
        m = SequentialAppendList(T.nn.Linear(10, 10), T.nn.ReLU(), T.nn.Linear(10, 10), T.nn.ReLU())
        with T.no_grad():
            for k, p in enumerate(m.parameters()):
                p.copy_(T.tensor(np.random.RandomState(k).randn(*p.shape).astype("float32") * 0.3))
        return m
    fns = [build(torch), tracegrad.compile(build(tracegrad))]
    for i in range(CALLS):
        seen = []
        for T, m in zip((torch, tracegrad), fns):
            x = rand(T, i, 4, 10)
            ll = [x]
            res, l3 = m(x, ll)
            assert l3 is ll
            seen.append((res, ll))
        same(seen[0], seen[1], f"call{i}")


def test_batch_norm_act_eval():
    # ReproTests.test_batch_norm_act: BatchNorm2d subclass (eval) followed by an activation
    def build(T):
        class BatchNormAct2d(T.nn.BatchNorm2d):
            def __init__(self, n):
                super().__init__(n)
                self.act = T.nn.ReLU()

            def forward(self, x):
                return self.act(super().forward(x))
        m = BatchNormAct2d(2).eval()
        with T.no_grad():
            m.running_mean.fill_(0.3)
            m.running_var.fill_(1.7)
        return m
    check(build, lambda T, i: (rand(T, i, 3, 2, 4, 4),))


def test_get_parameter_dtype():
    # ReproTests.test_get_parameter_dtype: the dtype of a module's first parameter picks the
    # dtype of a factory call
    def build(T):
        m = T.nn.Sequential(T.nn.Linear(3, 3))

        def fn(x):
            dt = next(m.parameters()).dtype
            return x + T.ones(3, dtype=dt), str(dt).split(".")[-1]
        return fn
    check(build, lambda T, i: (rand(T, i, 3),))


def test_nn_parameter_created_inside():
    # ReproTests.test_nn_parameter: a Parameter made inside the compiled function is a
    # Parameter (and requires grad), every call
    @tracegrad.compile
    def fn(x):
        a = tracegrad.nn.Parameter(x * 2)
        assert isinstance(a, tracegrad.nn.Parameter)
        return a
    for i in range(CALLS):
        out = fn(rand(tracegrad, i, 3))
        assert isinstance(out, tracegrad.nn.Parameter) and out.requires_grad
        np.testing.assert_allclose(_np(out), _np(rand(tracegrad, i, 3)) * 2, rtol=1e-6)


def test_size_and_indexing_with_list():
    # ReproTests.test_Size / test_indexing_with_list: torch.Size built inside, numpy and tensor
    # indexing with None agree
    def build(T):
        def fn(x):
            s = T.Size([1, 2, 3])
            assert isinstance(s, T.Size)
            npx = x.numpy()
            shapes = [tuple(x[idx].shape) == npx[idx].shape for idx in ((None, None), (1, None))]
            return x * 2, s, shapes
        return fn
    check(build, lambda T, i: (T.arange(0, 10) + i,))


def test_recursive_map_dict_arg():
    # ReproTests.test_recursive_map: a nested dict argument walked (and rewritten in place)
    def build(T):
        def _recursive_map(struct):
            for k, v in struct.items():
                if v is not None:
                    if isinstance(v, dict):
                        _recursive_map(v)
                    else:
                        struct[k] = v

        def toy_example(a, b, v):
            x = a / (T.abs(a) + 1)
            if v is not None:
                _recursive_map(v)
            return x * b
        return toy_example
    check(build, lambda T, i: (rand(T, i, 10), rand(T, i, 10, seed=1),
                               {"layer0": {"memory_keys": rand(T, i, 10, seed=2)}}))


def test_with_on_graph_break_inst():
    # ReproTests.test_with_on_graph_break_inst: enable_grad inside a function called under
    # no_grad, a print (graph break) inside, and a backward inside; x.grad returned
    def build(T):
        def reversible(x):
            print("Hello world")
            return T.sin(T.cos(x))

        def fn(x):
            with T.enable_grad():
                a = T.sin(x)
                c = T.sigmoid(reversible(a))
                c.sum().backward()
                return x.grad
        return fn
    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS):
        seen = []
        for T, fn in fns:
            x = rand(T, i, 3, rg=True)
            with T.no_grad():
                seen.append(fn(x))
        same(seen[0], seen[1], f"call{i}")


def test_grad_mode_carrying_correct_state_after_graph_break():
    # ReproTests.test_grad_mode_carrying_correct_state_after_graph_break (torchdynamo 1446)
    def build(T):
        def fn(x):
            with T.no_grad():
                y = x * 3
                print("Break")
                z = x + 2
            return y, z
        return fn
    check(build, lambda T, i: (rand(T, i, 3, rg=True),))


def test_abc_setattr():
    # ReproTests.test_abc_setattr: an ABC module subclass with __setattr__ and super() calls,
    # setting a plain attribute in forward
    import abc

    def build(T):
        class BaseModule(T.nn.Module, abc.ABC):
            def blah(self, x):
                return x + 1

        class Derived(BaseModule):
            def __setattr__(self, name, value):
                super().__setattr__(name, value)

            def forward(self, x):
                self.foo = 0
                return self.blah(x)

            def blah(self, x):
                return super().blah(x)
        return Derived()
    m = check(build, lambda T, i: (rand(T, i, 3, rg=True),), backward=True)
    assert m is not None


def test_guard_fail_nested_tuple():
    # ReproTests.test_guard_fail_nested_tuple: the argument's structure changes between calls
    def build(T):
        return lambda args: (T.ones(()), args[0] * 2)

    def args(T, i):
        return ((T.ones(1) * i, (T.ones(1), T.ones(1))) if i % 2 else (T.ones(1) * i, T.ones(1)),)
    check(build, args)


def test_torch_ops_aten():
    # ReproTests.test_torch_ops_aten: torch.ops.aten.absolute under fullgraph
    check(lambda T: (lambda x: T.ops.aten.absolute(x)), lambda T, i: (rand(T, i, 3),), fullgraph=True)


def test_dict_iter_and_list_values():
    # ReproTests.test_dict_iter / test_dict_list_values: a dict iterated in forward; zip with
    # itertools.count over a list argument whose length changes
    import itertools

    def build(T):
        def fn(x, tensors):
            z = {"my": 1, "const": 2, "dict": 3, "variable": 4}
            tot = 0
            for key in z:
                tot += z[key]
            return x + tot, [t[1].shape for t in zip(itertools.count(), tensors["args"])]
        return fn
    check(build, lambda T, i: (T.tensor([i]), {"args": [T.ones(5, 5 + k) for k in range(1 + i % 3)]}))


def test_sort_and_sigmoid_out():
    # ReproTests.test_sort_out / test_sigmoid_out: out= tensors of another shape are resized
    def build(T):
        def fn(x):
            values1 = T.tensor(0.0)
            indices1 = T.tensor(0)
            T.sort(x[:, 0], out=(values1, indices1))
            out1 = T.tensor(0.0)
            T.sigmoid(x, out=out1)
            return values1, indices1, values1.stride(), out1, out1.numel()
        return fn
    check(build, lambda T, i: (rand(T, i, 3, 5),))


def test_slice_into_list_mutable():
    # ReproTests.test_slice_into_list_mutable: a slice of a list argument rebound in a loop
    def build(T):
        def fn(listy, y):
            x = listy[3:5]
            for k in range(4):
                x[0] = T.abs(y * k) + 1
            return x
        return fn
    check(build, lambda T, i: ([rand(T, i, 4)] * 6, rand(T, i, 4, seed=3)))


def test_vdd_duplicate_error():
    # ReproTests.test_vdd_duplicate_error: the same tensor reached twice through a plain
    # object's dict of objects
    class Value:
        def __init__(self, v):
            self._value = v

    class Sample:
        def __init__(self, v):
            self._jt_dict = {"POSITION_ID": Value(v)}

    def build(T):
        def fn(a, dt):
            keys = list(dt._jt_dict.keys())
            p = T.cos(dt._jt_dict[keys[0]]._value)
            q = T.sin(a)
            r = T.sigmoid(dt._jt_dict[keys[0]]._value)
            return p + q + r
        return fn
    check(build, lambda T, i: (rand(T, i, 4), Sample(rand(T, i, 4, seed=5))), fullgraph=True)


def test_specialized_stride():
    # ReproTests.test_specialized_stride: the stride of a strided slice of a fresh tensor
    check(lambda T: (lambda x: (x + T.empty(4)[::2].stride()[0], T.empty(4)[::2].stride())),
          lambda T, i: (rand(T, i, 2),))


def test_bigbird_unsqueeze_inplace():
    # ReproTests.test_bigbird_unsqueeze_inplace: unsqueeze_ on a clone, cat of one, view
    def build(T):
        def fn(reshape_2):
            view_2 = reshape_2.clone()
            view_2.unsqueeze_(2)
            cat_11 = T.cat([view_2], dim=2)
            return (cat_11.view((2, 3, 4, -1)),)
        return fn
    check(build, lambda T, i: (rand(T, i, 2, 3, 4, 4, rg=True),), backward=True, backend="aot_eager")


def test_issue1466_size_aot_autograd():
    # ReproTests.test_issue1466_size_aot_autograd: a size taken before a print, used after
    def build(T):
        def fn(x):
            y = x * 2
            x_size = x.size()
            print("arf")
            return y.view(x_size) + 1
        return fn
    check(build, lambda T, i: (rand(T, i, 2, 3, rg=True),), backward=True, backend="aot_eager")


def test_ellipsis_layernorm_linear():
    # ReproTests.test_ellipsis: LayerNorm, an index with slice/slice/Ellipsis, then Linear
    def build(T):
        class Repro(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lnorm = T.nn.LayerNorm((8,), eps=1e-06, elementwise_affine=True)
                self.linear = T.nn.Linear(in_features=8, out_features=8, bias=True)

            def forward(self, cat_10):
                lnorm = self.lnorm(cat_10)
                return (self.linear(lnorm[(slice(None, None, None), slice(0, 1, None), Ellipsis)]),)
        m = Repro()
        with T.no_grad():
            for k, p in enumerate(m.parameters()):
                p.copy_(T.tensor(np.random.RandomState(k).randn(*p.shape).astype("float32")))
        return m
    check(build, lambda T, i: (rand(T, i, 2, 5, 8, rg=True),), backward=True, fullgraph=True)


def test_class_member_and_named_buffers():
    # ReproTests.test_class_member / test_named_buffers / test_modules: class attributes
    # (an int and a tensor), buffers summed through named_buffers, a loop over self.modules()
    def build(T):
        class Foo(T.nn.Module):
            a = 4
            b = T.ones(3, 4)

            def __init__(self):
                super().__init__()
                self.c = 4
                self.register_buffer("x", T.ones(3) * 2)
                self.register_buffer("y", T.ones(3))
                self.fc = T.nn.Linear(4, 4)
                with T.no_grad():
                    self.fc.weight.copy_(T.tensor(np.eye(4, dtype="float32") * 0.5))
                    self.fc.bias.fill_(0.25)

            def forward(self, x):
                res = 0
                for name, buffer in self.named_buffers():
                    res += buffer.sum()
                out = x.cos() + self.a + self.b + self.c + res
                acc = T.zeros(3, 4)
                for mod in self.modules():
                    acc += self.fc(x)
                return out, acc
        return Foo()
    check(build, lambda T, i: (rand(T, i, 3, 4),), fullgraph=True)


def test_tokenization_userdict():
    # ReproTests.test_tokenization: a UserDict subclass with __getattr__ built inside
    from collections import UserDict

    class BatchEncoding(UserDict):
        def __getattr__(self, item):
            try:
                return self.data[item]
            except KeyError:
                raise AttributeError from None

    def build(T):
        return lambda x: BatchEncoding({"key": x})["key"] * 2
    check(build, lambda T, i: (rand(T, i, 1, 4),))


def test_for_and_while_loop_graph_break():
    # ReproTests.test_for_loop_graph_break / test_while_loop_graph_break: a graph break in a
    # loop whose body's results are dropped; the function returns x unchanged
    def build(T):
        def fn(x):
            i = 3
            while i > 0:
                T.sin(x)
                T._dynamo.graph_break()
                i -= 1
            for _ in range(3):
                x = x + 1
            return x
        return fn
    check(build, lambda T, i: (rand(T, i, 4),))


# ---- test/dynamo/test_repros.py (2) ----------------------------------------------------------
class _ModelOutput(collections.OrderedDict):
    # ReproTests' ModelOutput (an OrderedDict with attribute access, as HuggingFace's)
    def __getitem__(self, k):
        if isinstance(k, str):
            return {k: v for (k, v) in self.items()}[k]
        return self.to_tuple()[k]

    def __setattr__(self, name, value):
        if name in self.keys() and value is not None:
            super().__setitem__(name, value)
        super().__setattr__(name, value)

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


def test_hf_model_output():
    # ReproTests.test_hf_model_output: the ModelOutput read by key, attribute, to_tuple, index
    def mo(T, i):
        ex = _ModelOutput()
        for k, name in enumerate("abc"):
            ex[name] = rand(T, i, 10, seed=k)
        return (ex,)
    for f in (lambda x: x["a"] + 1, lambda x: x.a + 1, lambda x: x.to_tuple()[0] + 1, lambda x: x[0] + 1):
        check(lambda T, f=f: f, mo, fullgraph=True)


def test_create_rand_mask_from_inputs():
    # ReproTests.test_create_rand_mask_from_inputs (HF big_bird): stack of gathered rows,
    # view, einsum
    def build(T):
        def fn(from_blocked_mask, to_blocked_mask, rand_attn, num_attention_heads, num_rand_blocks,
               batch_size, from_seq_length, from_block_size):
            num_windows = from_seq_length // from_block_size - 2
            rand_mask = T.stack([p1[i1.flatten()] for p1, i1 in zip(to_blocked_mask, rand_attn)])
            rand_mask = rand_mask.view(batch_size, num_attention_heads, num_windows,
                                       num_rand_blocks * from_block_size)
            return T.einsum("blq,bhlk->bhlqk", from_blocked_mask[:, 1:-1], rand_mask)
        return fn

    def args(T, i):
        return (rand(T, i, 1, 8, 4), rand(T, i, 1, 8, 4, seed=1),
                ints(T, i, 1, 2, 6, 3, lo=0, hi=8), 2, 3, 1, 32, 4)
    check(build, args)


def test_reformer_sorting_and_min_chunk_len():
    # ReproTests.test_reformer_sorting / test_reformer_min_chunk_len (hf_Reformer): a stable
    # argsort by scaling, an undo-sort by scatter_ into new(); a config read into fill_
    class DummyConfig:
        attn_layers = ["local", "lsh", "local", "lsh"]
        lsh_attn_chunk_length = 64
        local_attn_chunk_length = 32

    def build(T):
        def stable_argsort(vector, dim):
            scale_offset = T.arange(vector.shape[dim]).view(1, 1, -1).expand(vector.shape)
            return T.argsort(vector.shape[dim] * vector + (scale_offset % vector.shape[dim]), dim=dim)

        def fn(buckets, cfg):
            with T.no_grad():
                sorted_idx = stable_argsort(buckets, dim=-1)
                indices = T.arange(sorted_idx.shape[-1]).view(1, 1, -1).expand(sorted_idx.shape)
                undo = sorted_idx.new(*sorted_idx.size())
                undo.scatter_(-1, sorted_idx, indices)
            t = T.empty(3)
            kinds = set(cfg.attn_layers)
            t.fill_(min(cfg.lsh_attn_chunk_length, cfg.local_attn_chunk_length) if len(kinds) == 2 else 1)
            return sorted_idx, undo, t[0]
        return fn
    check(build, lambda T, i: (ints(T, i, 1, 2, 16, lo=0, hi=4), DummyConfig()))


def test_slicing_dynamic_shape():
    # ReproTests.test_slicing_dynamic_shape / _setitem: a slice bound read from a tensor
    def build(T):
        def fn(y, new_ones_1):
            out = (T.ones(8)[y[0]:] + 3) * 5
            new_ones_1 = new_ones_1.clone()
            new_ones_1[(3, slice(y[3], None, None))] = 0
            return out, new_ones_1
        return fn
    check(build, lambda T, i: (ints(T, i, 10, lo=0, hi=6), rand(T, i, 5, 7)))


def test_rewrite_assert_with_msg():
    # ReproTests.test_rewrite_assert_with_msg / test_not_rewrite_assert_for_other_errors: an
    # assert (or a raise) on a tensor's value holds on passing calls and raises on failing ones,
    # every call, with the function's message
    def f(x):
        b = x.sin()
        assert x[0] == 3, "First dim need to be 3"
        return x.cos() + b

    def g(x):
        b = x.sin()
        if not x.sum() <= 3:
            raise ValueError("input sum needs to be 3")
        return x.cos() + b
    cf, cg = tracegrad.compile(f), tracegrad.compile(g)
    for i in range(CALLS):
        good = tracegrad.tensor([3.0, 4.0 + i, 5.0])
        same(f(good), cf(good), f"call{i}")
        with pytest.raises(AssertionError, match="First dim need to be 3"):
            cf(tracegrad.tensor([4.0, 4.0, 5.0 + i]))
        small = tracegrad.tensor([-3.0 - i, 1.0, 2.0])
        same(g(small), cg(small), f"call{i}")
        with pytest.raises(ValueError, match="input sum needs to be 3"):
            cg(tracegrad.tensor([3.0, 4.0, 5.0 + i]))


def test_rewrite_assert_noop():
    # ReproTests.test_rewrite_assert_noop: asserts on constants and dtypes under fullgraph
    def build(T):
        def f(x):
            b = x.sin()
            assert True
            assert x.dtype == T.float32
            return x.cos() + b
        return f
    check(build, lambda T, i: (rand(T, i, 3),), fullgraph=True)


def test_guard_ordering_shape_fail():
    # ReproTests.test_guard_ordering_shape_fail: a module method called with a tensor, then an
    # int, then a tensor of another shape
    def build(T):
        class TestModule(T.nn.Module):
            def inner_fn(self, left, right):
                return tuple(left) == tuple(right)

            def fn(self, tensor):
                if type(tensor) is int:
                    return False
                T.add(tensor, tensor)
                return self.inner_fn(tensor.shape, (1, 2, 3))
        m = TestModule()
        return lambda a: m.fn(a)
    vals = [lambda T: T.ones((5, 5)), lambda T: -3, lambda T: T.ones((1, 2, 3)), lambda T: T.ones((5, 5))]
    check(build, lambda T, i: (vals[i](T),))


def test_boxes_len_and_isinstance_tuple():
    # ReproTests.test_boxes_len / test_tensor_isinstance_tuple / test_isinstance_dtype: len()
    # and __len__ of a user class holding a tensor; isinstance checks against tuples and dtypes
    class Boxes:
        def __init__(self, tensor):
            self.tensor = tensor

        def __len__(self):
            return self.tensor.shape[0]

    def build(T):
        def fn(boxes):
            if not isinstance(boxes.tensor, (int, T.Tensor)) or not isinstance(T.bfloat16, T.dtype):
                raise ValueError("not a tensor")
            return len(boxes) + boxes.__len__() + boxes.tensor
        return fn
    check(build, lambda T, i: (Boxes(T.arange(0, 8 + 4 * i).reshape((-1, 4))),), fullgraph=True)


def test_issue175_transformer_encoder_layer():
    # ReproTests.test_issue175: a small TransformerEncoderLayer (MultiheadAttention, LayerNorm,
    # feed-forward; eval, so dropout is off), fullgraph, values and grads
    def build(T):
        class FeedForwardLayer(T.nn.Module):
            def __init__(self, d_model, dim_feedforward, activation, dropout):
                super().__init__()
                self.linear1 = T.nn.Linear(d_model, dim_feedforward)
                self.activation = activation
                self.dropout1 = T.nn.Dropout(dropout)
                self.linear2 = T.nn.Linear(dim_feedforward, d_model)
                self.dropout2 = T.nn.Dropout(dropout)

            def forward(self, x):
                return self.dropout2(self.linear2(self.dropout1(self.activation(self.linear1(x)))))

        class TransformerEncoderLayer(T.nn.Module):
            def __init__(self, d_model, nhead, dim_feedforward=16, dropout=0.1):
                super().__init__()
                self.self_attn = T.nn.MultiheadAttention(d_model, nhead, dropout=dropout)
                self.norm1 = T.nn.LayerNorm(d_model)
                self.norm2 = T.nn.LayerNorm(d_model)
                self.dropout = T.nn.Dropout(dropout)
                self.ff_block = FeedForwardLayer(d_model, dim_feedforward, T.nn.ReLU(), dropout)

            def forward(self, src):
                x = src
                x = self.norm1(x + self.dropout(self.self_attn(x, x, x, need_weights=False)[0]))
                return self.norm2(x + self.ff_block(x))
        m = TransformerEncoderLayer(8, 2).eval()
        with T.no_grad():
            for k, p in enumerate(m.parameters()):
                p.copy_(T.tensor(np.random.RandomState(k).randn(*p.shape).astype("float32") * 0.3))
        return m
    check(build, lambda T, i: (rand(T, i, 3, 8, rg=True),), backward=True, fullgraph=True)


# ---- test/dynamo/test_model_output.py (with a small ModelOutput of our own) ------------------
class _HFOutput(collections.OrderedDict):
    """A dataclass output that is also an ordered dict of its non-None fields, read by key,
    attribute or position (the shape of HuggingFace's ModelOutput, written here)."""

    def __post_init__(self):
        import dataclasses
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not None:
                collections.OrderedDict.__setitem__(self, f.name, v)

    def __getitem__(self, k):
        return dict(self.items())[k] if isinstance(k, str) else self.to_tuple()[k]

    def __setattr__(self, name, value):
        if name in self.keys() and value is not None:
            collections.OrderedDict.__setitem__(self, name, value)
        object.__setattr__(self, name, value)

    def __setitem__(self, key, value):
        collections.OrderedDict.__setitem__(self, key, value)
        object.__setattr__(self, key, value)

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


def _mo_class(T):
    import dataclasses

    @dataclasses.dataclass
    class BaseModelOutput(_HFOutput):
        last_hidden_state: object = None
        hidden_states: object = None
        attentions: object = None
    return BaseModelOutput


def _mo_args(T, i):
    return (_mo_class(T)(last_hidden_state=rand(T, i, 10), attentions=rand(T, i, 10, seed=1)),)


def _mo_fns(T):
    def getattr_(obj):
        x = obj.last_hidden_state * 10
        if obj.hidden_states is not None:
            x += obj.hidden_states
        if obj.attentions is not None:
            x += obj.attentions
        return x

    def getattr_missing(obj):
        if getattr(obj, "asdf", None) is not None:
            obj.asdf += 1
        return obj.attentions + 1

    def getitem(obj):
        x = obj["last_hidden_state"] * 10
        if "hidden_stats" in obj:
            x += obj["hidden_states"]
        if "attentions" in obj:
            x += obj["attentions"]
        return x

    def tuple_(obj):
        a, b = obj.to_tuple()
        return a + b * 10
    return {"getattr": getattr_, "getattr_missing": getattr_missing, "getitem": getitem, "tuple": tuple_,
            "index": lambda obj: obj[0] * 10 + obj[1]}


@pytest.mark.parametrize("name", ["getattr", "getattr_missing", "getitem", "tuple", "index"])
def test_mo_read(name):
    # TestModelOutput.test_mo_getattr / _getattr_missing / _getitem / _tuple / _index
    check(lambda T: _mo_fns(T)[name], _mo_args, fullgraph=True)


def test_mo_create_and_assign():
    # TestModelOutput.test_mo_create / test_mo_assign: made inside, fields set by attribute
    # and by key; the caller reads them by attribute
    def build(T):
        BaseModelOutput = _mo_class(T)

        def fn(a, b):
            tmp = BaseModelOutput(last_hidden_state=b + 3)
            tmp.hidden_states = a + 7
            tmp["attentions"] = a + b + 6
            return tmp, BaseModelOutput(a + 1, attentions=b + 3)
        return fn
    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad), fullgraph=True))]
    for i in range(CALLS):
        seen = []
        for T, fn in fns:
            o, o2 = fn(rand(T, i, 10), rand(T, i, 10, seed=1))
            seen.append((o.last_hidden_state, o.hidden_states, o.attentions, o.to_tuple(), list(o.keys()),
                         o2.to_tuple(), o2.hidden_states))
        same(seen[0], seen[1], f"call{i}")


def test_mo_init_fields_and_newkey():
    # TestModelOutput.test_mo_init / test_mo_init2 / test_mo_newkey / test_mo_from_outside:
    # dataclasses.fields walked inside, a total accumulated in place (on the first field's
    # tensor, as the original), a key set outside read inside
    import dataclasses

    def build(T):
        @dataclasses.dataclass
        class MyDataClass(_HFOutput):
            a: object = None
            b: object = None
            c: object = None
            d: object = None

        def fn(obj, other):
            class_fields = dataclasses.fields(obj)
            assert len(class_fields)
            assert all(field.default is None for field in class_fields[1:])
            total = getattr(obj, class_fields[0].name)
            for field in class_fields[1:]:
                v = getattr(obj, field.name)
                if v is not None:
                    total += v
            return total, other["wwww"] + 1, MyDataClass(a=total * 2).a
        return fn, MyDataClass

    def args(T, MyDataClass, i):
        other = _mo_class(T)()
        other["wwww"] = rand(T, i, 3, 3)
        return MyDataClass(*(rand(T, i, 10, seed=k) for k in range(3))), other
    (f0, C0), (f1, C1) = build(torch), build(tracegrad)
    comp = tracegrad.compile(f1)
    for i in range(CALLS):
        a0, a1 = args(torch, C0, i), args(tracegrad, C1, i)
        same((f0(*a0), a0[0].a), (comp(*a1), a1[0].a), f"call{i}")


def test_mo_init_with_disable():
    # TestModelOutput.test_mo_init_with_disable (pytorch issue 126028): the output made in a
    # function marked disable(recursive=False), called compiled
    def build(T):
        BaseModelOutput = _mo_class(T)
        return T._dynamo.disable(recursive=False)(lambda x: BaseModelOutput(hidden_states=x * 2))
    fns = [build(torch), tracegrad.compile(build(tracegrad))]
    for i in range(CALLS):
        same(fns[0](rand(torch, i, 3, 3)).hidden_states, fns[1](rand(tracegrad, i, 3, 3)).hidden_states)


def test_hf_bert_model_output():
    # TestModelOutput.test_HF_bert_model_output (CPU, small): an encoder returning an output
    # object, read by index, rebuilt with a pooler output set by attribute and by key
    def build(T):
        BaseModelOutput = _mo_class(T)
        import dataclasses

        @dataclasses.dataclass
        class PoolingOutput(_HFOutput):
            last_hidden_state: object = None
            pooler_output: object = None
            hidden_states: object = None

        class BertPooler(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.dense = T.nn.Linear(8, 8)
                self.activation = T.nn.Tanh()

            def forward(self, hidden_states):
                return self.activation(self.dense(hidden_states[:, 0]))

        class BertEncoder(T.nn.Module):
            def forward(self, hidden_states):
                return BaseModelOutput(last_hidden_state=hidden_states, hidden_states=None)

        class BertModel(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = BertEncoder()
                self.pooler = BertPooler()

            def forward(self, sequence_output):
                encoder_outputs = self.encoder(sequence_output)
                sequence_output = encoder_outputs[0]
                pooled_output = self.pooler(sequence_output) if self.pooler is not None else None
                result = PoolingOutput(last_hidden_state=sequence_output, pooler_output=pooled_output,
                                       hidden_states=encoder_outputs.hidden_states)
                result.pooler_output = pooled_output
                result["pooler_output"] = pooled_output
                return result
        m = BertModel()
        with T.no_grad():
            for k, p in enumerate(m.parameters()):
                p.copy_(T.tensor(np.random.RandomState(k).randn(*p.shape).astype("float32") * 0.3))
        return m
    fns = [build(torch), tracegrad.compile(build(tracegrad))]
    for i in range(CALLS):
        outs = [f(rand(T, i, 1, 4, 8)) for T, f in zip((torch, tracegrad), fns)]
        same([(o.last_hidden_state, o.pooler_output, o.to_tuple()) for o in outs][0],
             [(o.last_hidden_state, o.pooler_output, o.to_tuple()) for o in outs][1], f"call{i}")
