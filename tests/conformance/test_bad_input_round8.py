"""Bad-input parity, round 8: Tensor methods with keyword arguments (alpha=None, to()/type()
overloads, new/new_tensor), in-place dtype rules, nn.functional argument kinds (conv, pooling,
interpolate, pad, the class-index losses, embedding, softmax dtype), autograd misuse (hooks that
change the dtype, is_grads_batched, custom Function ctx calls), generators and devices, and
compile(options=). Each wrong call runs with torch 2.13 (the oracle) and tracegrad: the same
exception class, no text from the layers below tracegrad; calls torch accepts are accepted too
(the ``_ok`` cases). The cases were found by a probe over families of wrong arguments (bad kinds,
None, duplicate dims, shapes that do not broadcast, unknown options)."""
import warnings

import pytest

import tracegrad

from _bad_input_helpers import assert_same_class

torch = pytest.importorskip("torch")


def x(T, *shape):
    return T.ones(*(shape or (2, 3)))


def F(T):
    return T.nn.functional


def B(T, *shape):
    return T.ones(*shape, dtype=T.bool)


def im(T):
    return T.ones(1, 1, 4, 4)


def inp(T):
    return T.ones(1, 4, 5, 5)


def w(T):
    return T.ones(4, 2, 3, 3)


def lg(T):
    return T.ones(3, 4)


def _fn(T, fwd, bwd, *args):
    """``Fn.apply(*args)`` of a custom Function with the given forward/backward."""
    return type("Fn", (T.autograd.Function,), {"forward": staticmethod(fwd), "backward": staticmethod(bwd)}).apply(*args)


@pytest.fixture(autouse=True)
def _keep_default_dtype():
    # set_default_dtype cases must not leak a changed default into other tests
    before = (torch.get_default_dtype(), tracegrad.get_default_dtype())
    yield
    torch.set_default_dtype(before[0])
    tracegrad.set_default_dtype(before[1])


CASES = {
    'add(1, alpha=None)': lambda T: x(T).add(1, alpha=None),
    'sub(t, alpha=None)': lambda T: x(T).sub(x(T), alpha=None),
    'torch.add(t,t,alpha=None)': lambda T: T.add(x(T), x(T), alpha=None),
    'add_(t, alpha=None)': lambda T: x(T).add_(x(T), alpha=None),
    "std(unbiased='a')": lambda T: x(T).std(unbiased="a"),
    'torch.permute(x,1,0)': lambda T: T.permute(x(T), 1, 0),
    'scatter_add(0, idx, 1.0)': lambda T: x(T).scatter_add(0, T.zeros(1, 3, dtype=T.int64), 1.0),
    "to(dtype='float')": lambda T: x(T).to(dtype="float"),
    "to('float32')": lambda T: x(T).to("float32"),
    'to(cpu, cpu)': lambda T: x(T).to("cpu", "cpu"),
    "to(copy='a')": lambda T: x(T).to(T.float64, copy="a"),
    "to(non_blocking='a')": lambda T: x(T).to(T.float64, non_blocking="a"),
    'type(foo=1)': lambda T: x(T).type(foo=1),
    "type(int64, non_blocking='a')": lambda T: x(T).type(T.int64, non_blocking="a"),
    'new_tensor(None)': lambda T: x(T).new_tensor(None),
    'new(storage)': lambda T: x(T).new({}),
    'int.addcmul_(float)': lambda T: T.ones(3, dtype=T.int64).addcmul_(T.ones(3), T.ones(3)),
    'conv2d padding=1.5': lambda T: F(T).conv2d(inp(T), w(T), groups=2, padding=1.5),
    'conv2d bias 2d': lambda T: F(T).conv2d(inp(T), w(T), bias=T.ones(4, 1), groups=2),
    "conv_transpose2d padding='same'": lambda T: F(T).conv_transpose2d(inp(T), T.ones(4, 2, 3, 3), padding="same"),
    "interp scale='a'": lambda T: F(T).interpolate(im(T), scale_factor="a"),
    "interp bilinear align_corners='a'": lambda T: F(T).interpolate(im(T), scale_factor=2, mode="bilinear", align_corners="a"),
    "pad value='a'": lambda T: F(T).pad(im(T), (1, 1), value="a"),
    'pad reflect empty': lambda T: F(T).pad(T.ones(1, 0, 4), (1, 1), mode="reflect"),
    'ce ignore_index=2.5': lambda T: F(T).cross_entropy(lg(T), T.zeros(3, dtype=T.int64), ignore_index=2.5),
    "ce ignore_index='a'": lambda T: F(T).cross_entropy(lg(T), T.zeros(3, dtype=T.int64), ignore_index="a"),
    'ce weight list': lambda T: F(T).cross_entropy(lg(T), T.zeros(3, dtype=T.int64), weight=[1.] * 4),
    'ce input 0-d': lambda T: F(T).cross_entropy(T.tensor(1.), T.tensor(0)),
    'embedding idx list': lambda T: F(T).embedding([1], T.ones(5, 2)),
    'embedding padding_idx -6': lambda T: F(T).embedding(T.tensor([1]), T.ones(5, 2), padding_idx=-6),
    'embedding padding_idx 1.5': lambda T: F(T).embedding(T.tensor([1]), T.ones(5, 2), padding_idx=1.5),
    'softmax dtype=long': lambda T: F(T).softmax(x(T), 0, dtype=T.int64),
    'grad batched no grad_outputs': lambda T: (lambda a: T.autograd.grad((a * 2).sum(), a, is_grads_batched=True))(T.ones(2, requires_grad=True)),
    'Function mark_non_differentiable non-tensor': lambda T: _fn(T, lambda ctx, a: (ctx.mark_non_differentiable(5), a * 2)[1], lambda ctx, g: g, T.ones(2, requires_grad=True)),
    'hook returns wrong dtype': lambda T: (lambda a: (a.register_hook(lambda g: g.long()), (a * 2).sum().backward()))(T.ones(2, requires_grad=True)),
    "Generator().manual_seed('a')": lambda T: T.Generator().manual_seed("a"),
    'Generator().manual_seed(1.5)': lambda T: T.Generator().manual_seed(1.5),
    "compile(options={'x':1})": lambda T: T.compile(lambda a: a * 2, options={"x": 1})(T.ones(2)),
    'compile(options=5)': lambda T: T.compile(lambda a: a * 2, options=5)(T.ones(2)),
    "compile(options={'x':1}) no call": lambda T: T.compile(lambda a: a * 2, options={"x": 1}),
    'x.div(2, rounding_mode=1)': lambda T: x(T).div(2, rounding_mode=1),
    "x.div_(2, rounding_mode='x')": lambda T: x(T).div_(2, rounding_mode="x"),
    'x.narrow(0, 1.0, 1)': lambda T: x(T).narrow(0, 1.0, 1),
    'x.select(0, 1.0)': lambda T: x(T).select(0, 1.0),
    'x.movedim(0, 0, 1)': lambda T: x(T).movedim((0, 1), 0),
    'x.squeeze((0,0))': lambda T: x(T).squeeze((0, 0)),
    "x.numpy(force='a')": lambda T: x(T).numpy(force="a"),
    'x.index_put_ tensor idx not tuple': lambda T: x(T).index_put_(T.tensor([0]), T.tensor(1.)),
    'ones(size=2)': lambda T: T.ones(size=2),
    'full(2, 1)': lambda T: T.full(2, 1),
    'normal(tensor, tensor wrong)': lambda T: T.normal(T.zeros(2), T.ones(3)),
    'cat([x, 1])': lambda T: T.cat([x(T), 1]),
    "linalg.vector_norm(ord='fro')": lambda T: T.linalg.vector_norm(x(T), ord="fro"),
    "sort(stable='a')": lambda T: x(T).sort(stable="a"),
    'cumsum(dtype=bool)': lambda T: x(T).cumsum(0, dtype=T.bool),
    'prod(dim=(0,1))': lambda T: x(T).prod(dim=(0, 1)),
    "set_default_dtype('float')": lambda T: T.set_default_dtype("float"),
    'set_default_dtype(float)': lambda T: T.set_default_dtype(float),
    "result_type(x, 'a')": lambda T: T.result_type(x(T), "a"),
    "device('cpu', -1)": lambda T: T.device("cpu", -1),
    'device(None)': lambda T: T.device(None),
    "device('cpu', 'a')": lambda T: T.device("cpu", "a"),
    'masked_scatter(mask nb)': lambda T: x(T).masked_scatter(B(T, 4), x(T)),
    'index_put(idx shapes nb)': lambda T: x(T).index_put((T.tensor([0, 1]), T.tensor([0, 1, 2])), T.tensor(1.)),
    'masked_fill_(val 1d)': lambda T: x(T).masked_fill_(B(T, 2, 3), T.ones(1)),
    'rsub(x, 1, alpha=None)': lambda T: T.rsub(x(T), 1, alpha=None),
    'x.sub_(1, alpha=None)': lambda T: x(T).sub_(1, alpha=None),
    'x.add(x, alpha=[1])': lambda T: x(T).add(x(T), alpha=[1]),
    "x.to(x, copy='a')": lambda T: x(T).to(x(T), copy="a"),
    "x.to(float64, 'a')": lambda T: x(T).to(T.float64, "a"),
    'x.to(float64, False, True)_ok': lambda T: x(T).to(T.float64, False, True),
    "x.to('cpu', float64, False, True)_ok": lambda T: x(T).to("cpu", T.float64, False, True),
    'x.to(x, dtype=float64)': lambda T: x(T).to(x(T), dtype=T.float64),
    "x.to(float64, device='cpu')": lambda T: x(T).to(T.float64, device="cpu"),
    'conv1d padding=(1.0,)': lambda T: F(T).conv1d(T.ones(1, 2, 5), T.ones(1, 2, 3), padding=(1.0,)),
    'Conv2d(2,2,3,padding=1.0)(x)': lambda T: T.nn.Conv2d(2, 2, 3, padding=1.0)(T.ones(1, 2, 5, 5)),
    'interp scale tensor': lambda T: F(T).interpolate(T.ones(1, 1, 4, 4), scale_factor=T.tensor(2.)),
    'interp align_corners=1 bilinear': lambda T: F(T).interpolate(T.ones(1, 1, 4, 4), scale_factor=2, mode="bilinear", align_corners=1),
    'pad value=[1]': lambda T: F(T).pad(T.ones(1, 4), (1, 1), value=[1]),
    'ce ignore_index True': lambda T: F(T).cross_entropy(T.ones(3, 4), T.zeros(3, dtype=T.int64), ignore_index=True),
    'nll ignore_index 1.5': lambda T: F(T).nll_loss(T.ones(3, 4), T.zeros(3, dtype=T.int64), ignore_index=1.5),
    'nll weight list': lambda T: F(T).nll_loss(T.ones(3, 4), T.zeros(3, dtype=T.int64), weight=[1.] * 4),
    'NLLLoss(ignore_index=1.5)(..)': lambda T: T.nn.NLLLoss(ignore_index=1.5)(T.ones(3, 4), T.zeros(3, dtype=T.int64)),
    'embedding idx tuple': lambda T: F(T).embedding((1,), T.ones(5, 2)),
    'log_softmax dtype=int': lambda T: F(T).log_softmax(x(T), 0, dtype=T.int32),
    'softmin dtype=long': lambda T: F(T).softmin(x(T), 0, dtype=T.int64),
    'std(0, unbiased=1)': lambda T: x(T).std(0, unbiased=1),
    'var(unbiased=tensor)': lambda T: x(T).var(unbiased=T.tensor(True)),
    "var_mean(unbiased='a')": lambda T: T.var_mean(x(T), unbiased="a"),
    'Generator().manual_seed(True)': lambda T: T.Generator().manual_seed(True),
    'Generator().manual_seed(tensor)': lambda T: T.Generator().manual_seed(T.tensor(3)),
    "Generator('meta')": lambda T: T.Generator("meta"),
    'hook returns float64': lambda T: (lambda a: (a.register_hook(lambda g: g.double()), (a * 2).sum().backward()))(T.ones(2, requires_grad=True)),
    'grad batched nonscalar none': lambda T: (lambda a: T.autograd.grad(a * 2, a, is_grads_batched=True))(T.ones(2, requires_grad=True)),
    'mark_non_differentiable(None)': lambda T: type("Fn", (T.autograd.Function,), {"forward": staticmethod(lambda ctx, a: (ctx.mark_non_differentiable(None), a * 2)[1]), "backward": staticmethod(lambda ctx, g: g)}).apply(T.ones(2, requires_grad=True)),
    "set_materialize_grads('a')": lambda T: type("Fn", (T.autograd.Function,), {"forward": staticmethod(lambda ctx, a: (ctx.set_materialize_grads("a"), a * 2)[1]), "backward": staticmethod(lambda ctx, g: g)}).apply(T.ones(2, requires_grad=True)),
    'compile options {1: 1}': lambda T: T.compile(lambda a: a, options={1: 1}),
    'reshape(x, 6)': lambda T: T.reshape(x(T), 6),
    'flip(x, 0)': lambda T: T.flip(x(T), 0),
    "scatter_reduce_(0, idx, None, 'sum')": lambda T: x(T).scatter_reduce_(0, T.zeros(1, 3, dtype=T.int64), None, "sum"),
    'new_tensor(None, dtype=long)': lambda T: x(T).new_tensor(None, dtype=T.int64),
    'new(set())': lambda T: x(T).new(set()),
    'type(non_blocking=None)': lambda T: x(T).type(T.int64, non_blocking=None),
    "conv_transpose1d padding='valid'": lambda T: F(T).conv_transpose1d(T.ones(1, 2, 5), T.ones(2, 1, 3), padding="valid"),
    'conv_transpose2d bias wrong': lambda T: F(T).conv_transpose2d(T.ones(1, 2, 5, 5), T.ones(2, 1, 3, 3), bias=T.ones(2)),
    "device('cuda', -1)": lambda T: T.device("cuda", -1),
    'empty(size=2)': lambda T: T.empty(size=2),
    'full(tensor, 1)': lambda T: T.full(T.tensor([2]), 1),
    'narrow(0, 0, 1.0)': lambda T: x(T).narrow(0, 0, 1.0),
    'movedim([0], 1)': lambda T: x(T).movedim([0], 1),
    'T.sort(x, stable=1)': lambda T: T.sort(x(T), stable=1),
    'cumprod(dtype=bool)': lambda T: x(T).cumprod(0, dtype=T.bool),
    'prod(dim=[0])': lambda T: x(T).prod(dim=[0]),
    'T.prod(x, (0,))': lambda T: T.prod(x(T), (0,)),
    'numpy(force=1)': lambda T: x(T).numpy(force=1),
    'set_default_dtype(None)': lambda T: T.set_default_dtype(None),
    'result_type(x, None)': lambda T: T.result_type(x(T), None),
    'index_put_((0,), v)': lambda T: x(T).index_put_((0,), T.tensor(1.)),
    'index_put(t, v)': lambda T: T.index_put(x(T), T.tensor([0]), T.tensor(1.)),
    'x.div_(2, rounding_mode=1)': lambda T: x(T).div_(2, rounding_mode=1),
    'cat((x, 1))': lambda T: T.cat((x(T), 1)),
    'new(size=2)': lambda T: x(T).new(size=2),
    # calls torch accepts, beside the wrong ones
    'add(t, alpha=2)_ok': lambda T: x(T).add(x(T), alpha=2),
    'sum(dtype=int32)_ok': lambda T: x(T).sum(dtype=T.int32),
    'view(size=(6,))_ok': lambda T: x(T).view(size=(6,)),
    'permute([1,0])_ok': lambda T: x(T).permute([1, 0]),
    'permute(dims=(1,0))_ok': lambda T: x(T).permute(dims=(1, 0)),
    'index_select(0, int32)_ok': lambda T: x(T).index_select(0, T.tensor([0], dtype=T.int32)),
    'scatter(0, idx, 1.5)_ok': lambda T: x(T).scatter(0, T.zeros(1, 3, dtype=T.int64), 1.5),
    'to(float)_ok': lambda T: x(T).to(float),
    'to(other)_ok': lambda T: x(T).to(T.ones(1, dtype=T.int64)),
    'to(cpu, float64)_ok': lambda T: x(T).to("cpu", T.float64),
    'type(None)_ok': lambda T: x(T).type(None),
    'type(int64)_ok': lambda T: x(T).type(T.int64),
    'new(2, 3)_ok': lambda T: x(T).new(2, 3),
    'new(t)_ok': lambda T: x(T).new(x(T)),
    'new([1.5])_ok': lambda T: x(T).new([1.5]),
    'new(())_ok': lambda T: x(T).new(()),
    "int.div_(2, rounding_mode='floor')_ok": lambda T: T.ones(3, dtype=T.int64).div_(2, rounding_mode="floor"),
    'bool.add_(True)_ok': lambda T: T.ones(3, dtype=T.bool).add_(True),
    'int.fill_(1.5)_ok': lambda T: T.ones(3, dtype=T.int64).fill_(1.5),
    'int.copy_(float)_ok': lambda T: T.ones(3, dtype=T.int64).copy_(T.ones(3)),
    'conv2d groups=2_ok': lambda T: F(T).conv2d(inp(T), w(T), groups=2),
    "conv2d padding='valid'_ok": lambda T: F(T).conv2d(inp(T), w(T), groups=2, padding="valid"),
    "conv1d padding='same' dilation 2_ok": lambda T: F(T).conv1d(T.ones(1, 2, 5), T.ones(1, 2, 3), padding="same", dilation=2),
    'pad value=None_ok': lambda T: F(T).pad(im(T), (1, 1), value=None),
    'pad negative_ok': lambda T: F(T).pad(im(T), (-1, -1)),
    'ce ignore_index=0 all ignored_ok': lambda T: F(T).cross_entropy(lg(T), T.zeros(3, dtype=T.int64), ignore_index=0),
    'ce prob target + ignore_index_ok': lambda T: F(T).cross_entropy(lg(T), T.ones(3, 4) / 4, ignore_index=1),
    'one_hot empty 3_ok': lambda T: F(T).one_hot(T.zeros(0, dtype=T.int64), 3),
    'softmax long dtype=float_ok': lambda T: F(T).softmax(T.ones(3, dtype=T.int64), 0, dtype=T.float32),
    'grad batched_ok': lambda T: (lambda a: T.autograd.grad(a * 2, a, T.ones(3, 2), is_grads_batched=True))(T.ones(2, requires_grad=True)),
    'Function save None_ok': lambda T: _fn(T, lambda ctx, a: (ctx.save_for_backward(a, None), a * 2)[1], lambda ctx, g: g, T.ones(2, requires_grad=True)),
    "Generator(device='cpu')_ok": lambda T: T.Generator(device="cpu"),
    'manual_seed(-1)_ok': lambda T: T.manual_seed(-1),
    'manual_seed(tensor)_ok': lambda T: T.manual_seed(T.tensor(3)),
    "compile(options={'max_autotune': True})_ok": lambda T: T.compile(lambda a: a * 2, options={"max_autotune": True})(T.ones(2)),
    "compile(options={'triton.cudagraphs':True})_ok": lambda T: T.compile(lambda a: a * 2, options={"triton.cudagraphs": True}),
    'ce ignore_index tensor_ok': lambda T: F(T).cross_entropy(T.ones(3, 4), T.zeros(3, dtype=T.int64), ignore_index=T.tensor(1)),
    'embedding padding_idx -5_ok': lambda T: F(T).embedding(T.tensor([1]), T.ones(5, 2), padding_idx=-5),
    'softmax dtype=float64_ok': lambda T: F(T).softmax(x(T), 0, dtype=T.float64),
    'pad replicate empty batch_ok': lambda T: F(T).pad(T.ones(0, 2, 4), (1, 1), mode="replicate"),
    "x.to(device='cpu', dtype=float64)_ok": lambda T: x(T).to(device="cpu", dtype=T.float64),
    'x.to(non_blocking=True)_ok': lambda T: x(T).to(non_blocking=True),
    'x.to()_ok': lambda T: x(T).to(),
    'x.type(int64, True)_ok': lambda T: x(T).type(T.int64, True),
    'x.add(x, alpha=tensor)_ok': lambda T: x(T).add(x(T), alpha=T.tensor(2.)),
    'float.addcmul_(long, long)_ok': lambda T: T.ones(3).addcmul_(T.ones(3, dtype=T.int64), T.ones(3, dtype=T.int64)),
    'conv_transpose2d groups bias_ok': lambda T: F(T).conv_transpose2d(T.ones(1, 2, 5, 5), T.ones(2, 1, 3, 3), bias=T.ones(2), groups=2),
    'device(cpu_device)_ok': lambda T: T.device(T.device("cpu")),
    "device('cpu', np int)_ok": lambda T: T.device("cpu", __import__("numpy").int64(0)),
    'zeros(size=(2,))_ok': lambda T: T.zeros(size=(2,)),
    'zeros(size=Size)_ok': lambda T: T.zeros(size=T.Size([2])),
    'full(Size, 1)_ok': lambda T: T.full(T.Size([2]), 1),
    'narrow(0, tensor 0d, 1)_ok': lambda T: x(T).narrow(0, T.tensor(0), 1),
    'select(0, tensor)_ok': lambda T: x(T).select(0, T.tensor(1)),
    'sort(stable=True)_ok': lambda T: x(T).sort(stable=True),
    'sort(stable=None)_ok': lambda T: x(T).sort(stable=None),
    'vector_norm(ord=tensor)_ok': lambda T: T.linalg.vector_norm(x(T), ord=T.tensor(2.)),
    'result_type(1, 2)_ok': lambda T: T.result_type(1, 2),
    'index_put_([t], v)_ok': lambda T: x(T).index_put_([T.tensor([0])], T.tensor(1.)),
    'div(1, rounding_mode=None)_ok': lambda T: x(T).div(1, rounding_mode=None),
    'reshape(x, (3, 2))_ok': lambda T: T.reshape(x(T), (3, 2)),
    'permute(x, dims=(1,0))_ok': lambda T: T.permute(x(T), dims=(1, 0)),
    "compile options ''_ok": lambda T: T.compile(lambda a: a, options=""),
    'type(int64, async=True)_ok': lambda T: x(T).type(T.int64, **{"async": True}),
    'std(True)_ok': lambda T: x(T).std(True),
    'var(dim=True)': lambda T: x(T).var(dim=True),
    'std_mean(x, dim=False)': lambda T: T.std_mean(x(T), dim=False),
    'var(True, True)': lambda T: x(T).var(True, True),
    'std(True, keepdim=True)': lambda T: x(T).std(True, keepdim=True),
    'var(True, correction=0)': lambda T: x(T).var(True, correction=0),
    'var_mean(x, True)_ok': lambda T: T.var_mean(x(T), True),
    'var(1, True)_ok': lambda T: x(T).var(1, True),
    'cat([x, long])_ok': lambda T: T.cat([x(T), T.ones(2, 3, dtype=T.int64)]),
    'full((2,), 1.5, dtype=long)_ok': lambda T: T.full((2,), 1.5, dtype=T.int64),
    'zeros(2, out=long)': lambda T: T.zeros(2, out=T.empty(2, dtype=T.int64)),
}


def test_table_size():
    assert len(CASES) >= 150


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_round8(name):
    assert_same_class(name, CASES[name], torch, tracegrad)


@pytest.mark.skipif(tracegrad.cuda.is_available(), reason="the machine has a GPU: both calls are valid there")
@pytest.mark.parametrize("call", [lambda T: T.ones(2).to(device="cuda:0"), lambda T: T.Generator("cuda")])
def test_absent_accelerator(call):
    # torch's CPU build: AssertionError for a CUDA tensor, RuntimeError for a CUDA generator
    assert_same_class("absent accelerator", call, torch, tracegrad)


def test_to_positional_flags_and_legacy_alpha():
    # torch's to(dtype, non_blocking, copy) and the deprecated add_(Number alpha, Tensor other)
    for T in (torch, tracegrad):
        a = T.ones(3)
        b = a.to(T.float32, False, True)
        assert b is not a and b.dtype == T.float32
        with warnings.catch_warnings():   # (torch warns once per process)
            warnings.simplefilter("ignore")
            c = a.clone().add_(-0.5, T.ones(3) * 2)
        assert c.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("size", [(2, 3), [4], (1, 0)])
def test_new_size_keyword_shape(size):
    # x.new(size=s) is the sizes overload (x.new(*s)), not data
    shapes = [tuple(T.ones(2).new(size=size).shape) for T in (torch, tracegrad)]
    assert shapes[0] == shapes[1] == tuple(size)
