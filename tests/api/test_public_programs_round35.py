"""A thirty-fifth round of public programs, chosen for what they PRINT: tutorials and notebooks a
user steps through in Jupyter, printing tensors, ``grad_fn``s, shapes, dtypes, storages, named
tuples and ``.item()``/``.tolist()``/``.numpy()`` results (print options changed midway: the
dlwpt notebooks).
Each runs with torch and with tracegrad through ``parity.run_both``: every line printed must be
torch's text (the module's name and object addresses aside; numbers within the log tolerances,
as a float32 sum may round the last printed digit the other way) and every logged value agree.

- pytorch/tutorials ``beginner_source/introyt/tensors_deeper_tutorial.py`` (creation, dtypes,
  broadcasting and its errors, math/logic ops, ``torch.svd``'s named tuple, in-place ops,
  ``out=``, copies, ``squeeze``/``unsqueeze_``/``reshape``, the NumPy bridge);
- pytorch/tutorials ``beginner_source/introyt/autogradyt_tutorial.py`` as printed (earlier rounds
  logged its values only): ``grad_fn=<...>`` suffixes, ``next_functions`` chains, a model's
  weight slices and gradients before and after ``step()``/``zero_grad()``, ``no_grad``, the
  functional API's results;
- pytorch/tutorials ``beginner_source/basics/tensorqs_tutorial.py`` as printed (f-strings of
  tensors, shapes, dtypes, devices, the NumPy bridge's shared memory);
- mrdbourke/pytorch-deep-learning ``00_pytorch_fundamentals.ipynb`` (a notebook: each cell's
  last expression shown as its ``repr``);
- deep-learning-with-pytorch/dlwpt-code's notebooks, in ``test_public_programs_round35_dlwpt.py``
  (the two files' programs together would take longer than a file may).

Changes to the programs: random tensors come from a seeded numpy stream (``_seeded``) instead of
``torch.rand``/``randn`` (random streams differ by design), ``torch.empty`` is
``torch.zeros`` (its bytes are whatever memory held), a notebook cell's last expression is
printed with ``repr``, plots, the autograd profiler's timing table, ``%%time`` and CUDA-only
cells are left out, the autograd tutorial's model is smaller (a batch of 4 inputs of 12
features, not 16 of 1000), and an error a cell shows is caught and printed as its class and first sentence
(tracegrad's messages add what to do after torch's words).
"""
import math
import warnings

import numpy as np
import pytest
from parity import run_both

torch = pytest.importorskip("torch")


def _seeded(torch, seed):
    """``torch.rand``/``rand_like``/``randn`` stand-ins drawing from a seeded numpy stream, with
    torch's call forms (``rand(2, 3)``, ``rand((2, 3))``, ``rand(size=...)``, ``dtype=``,
    ``requires_grad=``, ``device=``, ``out=``)."""
    rs = np.random.RandomState(seed)

    def make(draw, *size, dtype=None, requires_grad=False, out=None, device=None, **kw):
        if "size" in kw:
            size = (kw["size"],)
        if len(size) == 1 and isinstance(size[0], (tuple, list)):
            size = tuple(size[0])
        t = torch.tensor(draw(size), dtype=dtype or torch.get_default_dtype(), device=device)
        if out is not None:
            with torch.no_grad():
                out.copy_(t)
            return out
        return t.requires_grad_(requires_grad)

    def rand(*size, **kw):
        return make(lambda s: rs.uniform(0, 1, s), *size, **kw)

    def randn(*size, **kw):
        return make(rs.standard_normal, *size, **kw)

    def rand_like(x, dtype=None):
        return rand(*x.shape, dtype=dtype or x.dtype)
    return rand, randn, rand_like


def _display(v):
    """What a notebook shows for a cell's last expression."""
    print(repr(v))


def _said(e):
    """An error as a cell shows it: its class and torch's words (its first sentence)."""
    print(type(e).__name__, str(e).split(". ")[0].split("; ")[0].rstrip("."))


# ---- pytorch/tutorials beginner_source/introyt/tensors_deeper_tutorial.py ------------------------
def test_introyt_tensors_deeper_tutorial():
    def program(torch, log):
        rand, _, rand_like = _seeded(torch, 0)
        x = torch.zeros(3, 4)
        print(type(x))
        print(x)
        zeros = torch.zeros(2, 3)
        print(zeros)
        ones = torch.ones(2, 3)
        print(ones)
        torch.manual_seed(1729)
        random = rand(2, 3)
        print(random)
        x = torch.zeros(2, 2, 3)
        print(x.shape)
        print(x)
        zeros_like_x = torch.zeros_like(x)
        print(zeros_like_x.shape)
        print(zeros_like_x)
        ones_like_x = torch.ones_like(x)
        print(ones_like_x.shape)
        print(ones_like_x)
        rand_like_x = rand_like(x)
        print(rand_like_x.shape)
        print(rand_like_x)
        some_constants = torch.tensor([[3.1415926, 2.71828], [1.61803, 0.0072897]])
        print(some_constants)
        some_integers = torch.tensor((2, 3, 5, 7, 11, 13, 17, 19))
        print(some_integers)
        more_integers = torch.tensor(((2, 4, 6), [3, 6, 9]))
        print(more_integers)
        a = torch.ones((2, 3), dtype=torch.int16)
        print(a)
        b = rand((2, 3), dtype=torch.float64) * 20.
        print(b)
        c = b.to(torch.int32)
        print(c)
        ones = torch.zeros(2, 2) + 1
        twos = torch.ones(2, 2) * 2
        threes = (torch.ones(2, 2) * 7 - 1) / 2
        fours = twos ** 2
        sqrt2s = twos ** 0.5
        print(ones)
        print(twos)
        print(threes)
        print(fours)
        print(sqrt2s)
        powers2 = twos ** torch.tensor([[1, 2], [3, 4]])
        print(powers2)
        fives = ones + fours
        print(fives)
        dozens = threes * fours
        print(dozens)
        try:                        # "The following cell throws a run-time error"
            print(rand(2, 3) * rand(3, 2))
        except RuntimeError as e:
            _said(e)
        rand_ = rand(2, 4)
        doubled = rand_ * (torch.ones(1, 4) * 2)
        print(rand_)
        print(doubled)
        a = torch.ones(4, 3, 2)
        b = a * rand(3, 2)
        print(b)
        c = a * rand(3, 1)
        print(c)
        d = a * rand(1, 2)
        print(d)
        for shape in ((4, 3), (2, 3), (0,)):   # the cell of attempts that fail
            try:
                a * rand(shape)
            except RuntimeError as e:
                _said(e)
        a = rand(2, 4) * 2 - 1
        print('Common functions:')
        print(torch.abs(a))
        print(torch.ceil(a))
        print(torch.floor(a))
        print(torch.clamp(a, -0.5, 0.5))
        angles = torch.tensor([0, math.pi / 4, math.pi / 2, 3 * math.pi / 4])
        sines = torch.sin(angles)
        inverses = torch.asin(sines)
        print('\nSine and arcsine:')
        print(angles)
        print(sines)
        print(inverses)
        print('\nBitwise XOR:')
        b = torch.tensor([1, 5, 11])
        c = torch.tensor([2, 7, 10])
        print(torch.bitwise_xor(b, c))
        print('\nBroadcasted, element-wise equality comparison:')
        d = torch.tensor([[1., 2.], [3., 4.]])
        e = torch.ones(1, 2)
        print(torch.eq(d, e))
        print('\nReduction ops:')
        print(torch.max(d))
        print(torch.max(d).item())
        print(torch.mean(d))
        print(torch.std(d))
        print(torch.prod(d))
        print(torch.unique(torch.tensor([1, 2, 1, 2, 1, 2])))
        v1 = torch.tensor([1., 0., 0.])
        v2 = torch.tensor([0., 1., 0.])
        m1 = rand(2, 2)
        m2 = torch.tensor([[3., 0.], [0., 3.]])
        print('\nVectors & Matrices:')
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")    # cross without dim: deprecated
            print(torch.cross(v2, v1))
        print(m1)
        m3 = torch.matmul(m1, m2)
        print(m3)
        print(torch.svd(m3))
        a = torch.tensor([0, math.pi / 4, math.pi / 2, 3 * math.pi / 4])
        print('a:')
        print(a)
        print(torch.sin(a))
        print(a)
        b = torch.tensor([0, math.pi / 4, math.pi / 2, 3 * math.pi / 4])
        print('\nb:')
        print(b)
        print(torch.sin_(b))
        print(b)
        a = torch.ones(2, 2)
        b = rand(2, 2)
        print('Before:')
        print(a)
        print(b)
        print('\nAfter adding:')
        print(a.add_(b))
        print(a)
        print(b)
        print('\nAfter multiplying')
        print(b.mul_(b))
        print(b)
        a = rand(2, 2)
        b = rand(2, 2)
        c = torch.zeros(2, 2)
        old_id = id(c)
        print(c)
        d = torch.matmul(a, b, out=c)
        print(c)
        assert c is d
        assert id(c) == old_id
        rand(2, 2, out=c)
        print(c)
        assert id(c) == old_id
        a = torch.ones(2, 2)
        b = a
        a[0][1] = 561
        print(b)
        a = torch.ones(2, 2)
        b = a.clone()
        assert b is not a
        print(torch.eq(a, b))
        a[0][1] = 561
        print(b)
        a = rand(2, 2, requires_grad=True)
        print(a)
        b = a.clone()
        print(b)
        c = a.detach().clone()
        print(c)
        print(a)
        if torch.cuda.is_available():
            print('We have a GPU!')
        else:
            print('Sorry, CPU only.')
        my_device = torch.device('cuda') if torch.cuda.is_available() else torch.device('cpu')
        print('Device: {}'.format(my_device))
        x = rand(2, 2, device=my_device)
        print(x)
        y = rand(2, 2)
        y = y.to(my_device)
        a = rand(3, 226, 226)
        b = a.unsqueeze(0)
        print(a.shape)
        print(b.shape)
        c = rand(1, 1, 1, 1, 1)
        print(c)
        a = rand(1, 20)
        print(a.shape)
        print(a)
        b = a.squeeze(0)
        print(b.shape)
        print(b)
        c = rand(2, 2)
        print(c.shape)
        d = c.squeeze(0)
        print(d.shape)
        a = torch.ones(4, 3, 2)
        b = rand(3)
        c = b.unsqueeze(1)
        print(c.shape)
        print(a * c)
        batch_me = rand(3, 226, 226)
        print(batch_me.shape)
        batch_me.unsqueeze_(0)
        print(batch_me.shape)
        output3d = rand(6, 20, 20)
        print(output3d.shape)
        input1d = output3d.reshape(6 * 20 * 20)
        print(input1d.shape)
        print(torch.reshape(output3d, (6 * 20 * 20,)).shape)
        numpy_array = np.ones((2, 3))
        print(numpy_array)
        pytorch_tensor = torch.from_numpy(numpy_array)
        print(pytorch_tensor)
        pytorch_rand = rand(2, 3)
        print(pytorch_rand)
        numpy_rand = pytorch_rand.numpy()
        print(numpy_rand)
        numpy_array[1, 1] = 23                 # the bridge shares memory both ways
        print(pytorch_tensor)
        pytorch_rand[1, 1] = 17
        print(numpy_rand)
        log("svd", torch.svd(m3))
    run_both(program)


# ---- pytorch/tutorials beginner_source/introyt/autogradyt_tutorial.py ----------------------------
def test_introyt_autograd_tutorial_printed():
    def program(torch, log):
        rand, randn, _ = _seeded(torch, 1)
        a = torch.linspace(0., 2. * math.pi, steps=25, requires_grad=True)
        print(a)
        b = torch.sin(a)
        print(b)
        c = 2 * b
        print(c)
        d = c + 1
        print(d)
        out = d.sum()
        print(out)
        print('d:')
        print(d.grad_fn)
        print(d.grad_fn.next_functions)
        print(d.grad_fn.next_functions[0][0].next_functions)
        print(d.grad_fn.next_functions[0][0].next_functions[0][0].next_functions)
        print(d.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0][0].next_functions)
        print('\nc:')
        print(c.grad_fn)
        print('\nb:')
        print(b.grad_fn)
        print('\na:')
        print(a.grad_fn)
        out.backward()
        print(a.grad)
        log("a.grad", a.grad)

        BATCH_SIZE = 4          # 16, 1000, 100 and 10 in the tutorial
        DIM_IN = 12
        HIDDEN_SIZE = 6
        DIM_OUT = 10

        class TinyModel(torch.nn.Module):
            def __init__(self):
                super(TinyModel, self).__init__()
                self.layer1 = torch.nn.Linear(DIM_IN, HIDDEN_SIZE)
                self.relu = torch.nn.ReLU()
                self.layer2 = torch.nn.Linear(HIDDEN_SIZE, DIM_OUT)

            def forward(self, x):
                x = self.layer1(x)
                x = self.relu(x)
                x = self.layer2(x)
                return x

        some_input = randn(BATCH_SIZE, DIM_IN, requires_grad=False)
        ideal_output = randn(BATCH_SIZE, DIM_OUT, requires_grad=False)
        model = TinyModel()
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(rand(*p.shape) - 0.5)
        print(model.layer2.weight[0][0:10])
        print(model.layer2.weight.grad)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
        prediction = model(some_input)
        loss = (ideal_output - prediction).pow(2).sum()
        print(loss)
        loss.backward()
        print(model.layer2.weight[0][0:10])
        print(model.layer2.weight.grad[0][0:10])
        optimizer.step()
        print(model.layer2.weight[0][0:10])
        print(model.layer2.weight.grad[0][0:10])
        print(model.layer2.weight.grad[0][0:10])
        for i in range(0, 5):
            prediction = model(some_input)
            loss = (ideal_output - prediction).pow(2).sum()
            loss.backward()
        print(model.layer2.weight.grad[0][0:10])
        optimizer.zero_grad()
        try:                     # torch 2's zero_grad sets the gradients to None
            print(model.layer2.weight.grad[0][0:10])
        except TypeError as e:
            print(type(e).__name__, e, model.layer2.weight.grad)
        log("layer2", model.layer2.weight)
        a = torch.ones(2, 3, requires_grad=True)
        print(a)
        b1 = 2 * a
        print(b1)
        a.requires_grad = False
        b2 = 2 * a
        print(b2)
        a = torch.ones(2, 3, requires_grad=True) * 2
        b = torch.ones(2, 3, requires_grad=True) * 3
        c1 = a + b
        print(c1)
        with torch.no_grad():
            c2 = a + b
        print(c2)
        c3 = a * b
        print(c3)

        def add_tensors1(x, y):
            return x + y

        @torch.no_grad()
        def add_tensors2(x, y):
            return x + y

        a = torch.ones(2, 3, requires_grad=True) * 2
        b = torch.ones(2, 3, requires_grad=True) * 3
        c1 = add_tensors1(a, b)
        print(c1)
        c2 = add_tensors2(a, b)
        print(c2)
        x = rand(5, requires_grad=True)
        y = x.detach()
        print(x)
        print(y)
        a = torch.linspace(0., 2. * math.pi, steps=25, requires_grad=True)
        try:                     # "The following code cell throws a runtime error"
            torch.sin_(a)
        except RuntimeError as e:
            _said(e)
        x = randn(3, requires_grad=True)
        y = x * 2
        while y.data.norm() < 1000:
            y = y * 2
        print(y)
        try:                     # "If we tried to call y.backward() now, we'd get a runtime error"
            y.backward()
        except RuntimeError as e:
            _said(e)
        v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
        y.backward(v)
        print(x.grad)

        def exp_adder(x, y):
            return 2 * x.exp() + 3 * y

        inputs = (rand(1), rand(1))
        print(inputs)
        _display(torch.autograd.functional.jacobian(exp_adder, inputs))
        inputs = (rand(3), rand(3))
        print(inputs)
        _display(torch.autograd.functional.jacobian(exp_adder, inputs))

        def do_some_doubling(x):
            y = x * 2
            while y.data.norm() < 1000:
                y = y * 2
            return y

        inputs = randn(3)
        my_gradients = torch.tensor([0.1, 1.0, 0.0001])
        _display(torch.autograd.functional.vjp(do_some_doubling, inputs, v=my_gradients))
    run_both(program)


# ---- pytorch/tutorials beginner_source/basics/tensorqs_tutorial.py -------------------------------
def test_tensorqs_tutorial_printed():
    def program(torch, log):
        rand, _, rand_like = _seeded(torch, 3)
        data = [[1, 2], [3, 4]]
        x_data = torch.tensor(data)
        np_array = np.array(data)
        x_np = torch.from_numpy(np_array)
        x_ones = torch.ones_like(x_data)
        print(f"Ones Tensor: \n {x_ones} \n")
        x_rand = rand_like(x_data, dtype=torch.float)
        print(f"Random Tensor: \n {x_rand} \n")
        shape = (2, 3,)
        rand_tensor = rand(shape)
        ones_tensor = torch.ones(shape)
        zeros_tensor = torch.zeros(shape)
        print(f"Random Tensor: \n {rand_tensor} \n")
        print(f"Ones Tensor: \n {ones_tensor} \n")
        print(f"Zeros Tensor: \n {zeros_tensor}")
        tensor = rand(3, 4)
        print(f"Shape of tensor: {tensor.shape}")
        print(f"Datatype of tensor: {tensor.dtype}")
        print(f"Device tensor is stored on: {tensor.device}")
        if torch.cuda.is_available() & (torch.device('cuda').index is not None):
            tensor = tensor.to('cuda')
        tensor = torch.ones(4, 4)
        print('First row: ', tensor[0])
        print('First column: ', tensor[:, 0])
        print('Last column:', tensor[..., -1])
        tensor[:, 1] = 0
        print(tensor)
        t1 = torch.cat([tensor, tensor, tensor], dim=1)
        print(t1)
        y1 = tensor @ tensor.T
        y2 = tensor.matmul(tensor.T)
        y3 = rand_like(tensor)
        torch.matmul(tensor, tensor.T, out=y3)
        z1 = tensor * tensor
        z2 = tensor.mul(tensor)
        z3 = rand_like(tensor)
        torch.mul(tensor, tensor, out=z3)
        print(y1, y2, y3, z1, z2, z3, x_np, sep="\n")
        agg = tensor.sum()
        agg_item = agg.item()
        print(agg_item, type(agg_item))
        print(tensor, "\n")
        tensor.add_(5)
        print(tensor)
        t = torch.ones(5)
        print(f"t: {t}")
        n = t.numpy()
        print(f"n: {n}")
        t.add_(1)
        print(f"t: {t}")
        print(f"n: {n}")
        n = np.ones(5)
        t = torch.from_numpy(n)
        np.add(n, 1, out=n)
        print(f"t: {t}")
        print(f"n: {n}")
    run_both(program)


# ---- mrdbourke/pytorch-deep-learning 00_pytorch_fundamentals.ipynb -------------------------------
def test_mrdbourke_pytorch_fundamentals_notebook():
    def program(torch, log):
        rand, _, _ = _seeded(torch, 4)
        display = _display
        scalar = torch.tensor(7)
        display(scalar)
        display(scalar.ndim)
        display(scalar.item())
        vector = torch.tensor([7, 7])
        display(vector)
        display(vector.ndim)
        display(vector.shape)
        MATRIX = torch.tensor([[7, 8],
                               [9, 10]])
        display(MATRIX)
        display(MATRIX.ndim)
        display(MATRIX.shape)
        TENSOR = torch.tensor([[[1, 2, 3],
                                [3, 6, 9],
                                [2, 4, 5]]])
        display(TENSOR)
        display(TENSOR.ndim)
        display(TENSOR.shape)
        random_tensor = rand(size=(3, 4))
        display((random_tensor, random_tensor.dtype))
        random_image_size_tensor = rand(size=(224, 224, 3))
        display((random_image_size_tensor.shape, random_image_size_tensor.ndim))
        zeros = torch.zeros(size=(3, 4))
        display((zeros, zeros.dtype))
        ones = torch.ones(size=(3, 4))
        display((ones, ones.dtype))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            zero_to_ten_deprecated = torch.range(0, 10)
        print([type(w.message).__name__ for w in caught], zero_to_ten_deprecated)
        zero_to_ten = torch.arange(start=0, end=10, step=1)
        display(zero_to_ten)
        ten_zeros = torch.zeros_like(input=zero_to_ten)
        display(ten_zeros)
        float_32_tensor = torch.tensor([3.0, 6.0, 9.0], dtype=None, device=None, requires_grad=False)
        display((float_32_tensor.shape, float_32_tensor.dtype, float_32_tensor.device))
        float_16_tensor = torch.tensor([3.0, 6.0, 9.0], dtype=torch.float16)
        display(float_16_tensor.dtype)
        display(float_16_tensor * float_32_tensor)
        some_tensor = rand(3, 4)
        print(some_tensor)
        print(f"Shape of tensor: {some_tensor.shape}")
        print(f"Datatype of tensor: {some_tensor.dtype}")
        print(f"Device tensor is stored on: {some_tensor.device}")
        tensor = torch.tensor([1, 2, 3])
        display(tensor + 10)
        display(tensor * 10)
        display(tensor)
        tensor = tensor - 10
        display(tensor)
        tensor = tensor + 10
        display(tensor)
        display(torch.multiply(tensor, 10))
        display(tensor)
        print(tensor, "*", tensor)
        print("Equals:", tensor * tensor)
        tensor = torch.tensor([1, 2, 3])
        display(tensor.shape)
        display(tensor * tensor)
        display(torch.matmul(tensor, tensor))
        display(tensor @ tensor)
        value = 0
        for i in range(len(tensor)):
            value += tensor[i] * tensor[i]
        display(value)
        tensor_A = torch.tensor([[1, 2],
                                 [3, 4],
                                 [5, 6]], dtype=torch.float32)
        tensor_B = torch.tensor([[7, 10],
                                 [8, 11],
                                 [9, 12]], dtype=torch.float32)
        try:                          # "(this will error)"
            torch.matmul(tensor_A, tensor_B)
        except RuntimeError as e:
            _said(e)
        print(tensor_A)
        print(tensor_B)
        print(tensor_A)
        print(tensor_B.T)
        print(f"Original shapes: tensor_A = {tensor_A.shape}, tensor_B = {tensor_B.shape}\n")
        print(f"New shapes: tensor_A = {tensor_A.shape} (same as above), tensor_B.T = {tensor_B.T.shape}\n")
        print(f"Multiplying: {tensor_A.shape} * {tensor_B.T.shape} <- inner dimensions match\n")
        print("Output:\n")
        output = torch.matmul(tensor_A, tensor_B.T)
        print(output)
        print(f"\nOutput shape: {output.shape}")
        display(torch.mm(tensor_A, tensor_B.T))
        torch.manual_seed(42)
        linear = torch.nn.Linear(in_features=2, out_features=6)
        with torch.no_grad():
            linear.weight.copy_(rand(6, 2) - 0.5)
            linear.bias.copy_(rand(6) - 0.5)
        x = tensor_A
        output = linear(x)
        print(f"Input shape: {x.shape}\n")
        print(f"Output:\n{output}\n\nOutput shape: {output.shape}")
        log("linear", output)
        x = torch.arange(0, 100, 10)
        display(x)
        print(f"Minimum: {x.min()}")
        print(f"Maximum: {x.max()}")
        try:                          # "# print(f"Mean: {x.mean()}") # this will error"
            print(f"Mean: {x.mean()}")
        except RuntimeError as e:
            _said(e)
        print(f"Mean: {x.type(torch.float32).mean()}")
        print(f"Sum: {x.sum()}")
        display((torch.max(x), torch.min(x), torch.mean(x.type(torch.float32)), torch.sum(x)))
        tensor = torch.arange(10, 100, 10)
        print(f"Tensor: {tensor}")
        print(f"Index where max value occurs: {tensor.argmax()}")
        print(f"Index where min value occurs: {tensor.argmin()}")
        tensor = torch.arange(10., 100., 10.)
        display(tensor.dtype)
        tensor_float16 = tensor.type(torch.float16)
        display(tensor_float16)
        tensor_int8 = tensor.type(torch.int8)
        display(tensor_int8)
        x = torch.arange(1., 8.)
        display((x, x.shape))
        x_reshaped = x.reshape(1, 7)
        display((x_reshaped, x_reshaped.shape))
        z = x.view(1, 7)
        display((z, z.shape))
        z[:, 0] = 5
        display((z, x))
        x_stacked = torch.stack([x, x, x, x], dim=0)
        display(x_stacked)
        display(torch.stack([x, x, x, x], dim=1))     # "try changing dim to dim=1"
        print(f"Previous tensor: {x_reshaped}")
        print(f"Previous shape: {x_reshaped.shape}")
        x_squeezed = x_reshaped.squeeze()
        print(f"\nNew tensor: {x_squeezed}")
        print(f"New shape: {x_squeezed.shape}")
        print(f"Previous tensor: {x_squeezed}")
        print(f"Previous shape: {x_squeezed.shape}")
        x_unsqueezed = x_squeezed.unsqueeze(dim=0)
        print(f"\nNew tensor: {x_unsqueezed}")
        print(f"New shape: {x_unsqueezed.shape}")
        x_original = rand(size=(224, 224, 3))
        x_permuted = x_original.permute(2, 0, 1)
        print(f"Previous shape: {x_original.shape}")
        print(f"New shape: {x_permuted.shape}")
        x_original[0, 0, 0] = 728218     # the course's extra: a permuted view shares the data
        print(x_original[0, 0, 0], x_permuted[0, 0, 0])
        print(x_permuted)
        x = torch.arange(1, 10).reshape(1, 3, 3)
        display((x, x.shape))
        print(f"First square bracket:\n{x[0]}")
        print(f"Second square bracket: {x[0][0]}")
        print(f"Third square bracket: {x[0][0][0]}")
        display(x[:, 0])
        display(x[:, :, 1])
        display(x[:, 1, 1])
        display(x[0, 0, :])
        array = np.arange(1.0, 8.0)
        tensor = torch.from_numpy(array)
        display((array, tensor))
        array = array + 1
        display((array, tensor))
        tensor = torch.ones(7)
        numpy_tensor = tensor.numpy()
        display((tensor, numpy_tensor))
        tensor = tensor + 1
        display((tensor, numpy_tensor))
        random_tensor_A = rand(3, 4)
        random_tensor_B = rand(3, 4)
        print(f"Tensor A:\n{random_tensor_A}\n")
        print(f"Tensor B:\n{random_tensor_B}\n")
        print("Does Tensor A equal Tensor B? (anywhere)")
        display(random_tensor_A == random_tensor_B)
        RANDOM_SEED = 42              # the library's own generator: only the equality is printed
        torch.manual_seed(seed=RANDOM_SEED)
        random_tensor_C = torch.rand(3, 4)
        torch.random.manual_seed(seed=RANDOM_SEED)
        random_tensor_D = torch.rand(3, 4)
        print("Does Tensor C equal Tensor D? (anywhere)")
        display(random_tensor_C == random_tensor_D)
        display(torch.cuda.is_available())
        device = "cuda" if torch.cuda.is_available() else "cpu"
        display(device)
        display(torch.cuda.device_count())
        display(torch.backends.mps.is_available())
        tensor = torch.tensor([1, 2, 3])
        print(tensor, tensor.device)
        tensor_on_gpu = tensor.to(device)
        display(tensor_on_gpu)
        tensor_back_on_cpu = tensor_on_gpu.cpu().numpy()
        display(tensor_back_on_cpu)
        # the exercises' solutions
        t7, t17 = rand(7, 7), rand(1, 7)
        display(torch.matmul(t7, t17.T))
        ta, tb = rand(2, 3), rand(2, 3)
        out = torch.mm(ta, tb.T)
        display((out, out.shape))
        display((out.max(), out.min()))
        display((out.argmax(), out.argmin()))
        t1 = rand(1, 1, 1, 10)
        t2 = t1.squeeze()
        print(t1, t1.shape)
        print(t2, t2.shape)
        log("exercise", (out, t2))
    run_both(program)
