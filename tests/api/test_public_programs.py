"""Public PyTorch tutorials run eagerly with torch and with tracegrad (``parity.run_both``: every
logged value and everything printed must agree). Each program keeps its tutorial's code, with
smaller sizes, fewer iterations and numpy-seeded data in place of ``torch.randn`` and downloads.
The full tutorials ran unchanged through ``import torch`` -> tracegrad; see each test's source.
"""
import math
import random

import numpy as np
import pytest

import tracegrad
from parity import np_randn, randn, run_both

torch = pytest.importorskip("torch")


# pytorch/tutorials beginner_source/basics/tensorqs_tutorial.py
def test_tensors_tutorial_with_out_arguments():
    def program(torch, log):
        data = [[1, 2], [3, 4]]
        x_data = torch.tensor(data)
        x_np = torch.from_numpy(np.array(data))
        log("ones_like", torch.ones_like(x_data))
        tensor = torch.ones(4, 4)
        log("first row", tensor[0]), log("first col", tensor[:, 0]), log("last col", tensor[..., -1])
        tensor[:, 1] = 0
        log("cat", torch.cat([tensor, tensor, tensor], dim=1))
        y1 = tensor @ tensor.T
        y2 = tensor.matmul(tensor.T)
        y3 = torch.zeros(4, 4)
        torch.linalg.matmul(tensor, tensor.T, out=y3)
        z3 = torch.zeros(4, 8)
        r = torch.cat([tensor, tensor], dim=1, out=z3)
        log("out", [y1, y2, y3, z3, r is z3])
        agg = tensor.sum()
        log("item", (agg.item(), type(agg.item()).__name__))
        tensor.add_(5)
        log("add_", tensor)
        log("np", x_np.numpy())
    run_both(program)


# pytorch/tutorials beginner_source/basics/autogradqs_tutorial.py
def test_autograd_quickstart():
    def program(torch, log):
        x = torch.ones(5)
        y = torch.zeros(3)
        w = randn(torch, (5, 3), 0, requires_grad=True)
        b = randn(torch, (3,), 1, requires_grad=True)
        z = torch.matmul(x, w) + b
        loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
        log("grad_fns", (type(z.grad_fn).__name__, type(loss.grad_fn).__name__))
        loss.backward()
        log("grads", (w.grad, b.grad))
        with torch.no_grad():
            z = torch.matmul(x, w) + b
        log("no_grad", (z.requires_grad, (torch.matmul(x, w) + b).detach().requires_grad))
        inp = torch.eye(4, 5, requires_grad=True)
        out = (inp + 1).pow(2).t()
        out.backward(torch.ones_like(out), retain_graph=True)
        out.backward(torch.ones_like(out), retain_graph=True)
        log("second call", inp.grad)
        inp.grad.zero_()
        out.backward(torch.ones_like(out), retain_graph=True)
        log("after zeroing", inp.grad)
    run_both(program)


# pytorch/tutorials beginner_source/blitz/neural_networks_tutorial.py
def test_blitz_neural_networks_mse_with_integer_target_and_data_sub_():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(1, 2, 5)
                self.conv2 = nn.Conv2d(2, 3, 5)
                self.fc1 = nn.Linear(3 * 5 * 5, 12)
                self.fc3 = nn.Linear(12, 10)

            def forward(self, x):
                x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
                x = F.max_pool2d(F.relu(self.conv2(x)), 2)
                x = x.view(-1, self.num_flat_features(x))
                return self.fc3(F.relu(self.fc1(x)))

            def num_flat_features(self, x):
                num_features = 1
                for s in x.size()[1:]:
                    num_features *= s
                return num_features

        net = Net()
        with torch.no_grad():
            for i, p in enumerate(net.parameters()):
                p.copy_(randn(torch, tuple(p.shape), i, scale=0.2))
        input = randn(torch, (1, 1, 32, 32), 10)
        net.zero_grad()
        net(input).backward(randn(torch, (1, 10), 11))
        output = net(input)
        target = torch.arange(1, 11).view(1, -1)      # int64 target, as the tutorial
        criterion = nn.MSELoss()
        loss = criterion(output, target)
        log("loss", loss)
        log("graph", [loss.grad_fn.name(), loss.grad_fn.next_functions[0][0].name(),
                      loss.grad_fn.next_functions[0][0].next_functions[0][0].name()])
        net.zero_grad()
        log("bias grad before", net.conv1.bias.grad)
        loss.backward()
        log("bias grad after", net.conv1.bias.grad)
        for f in net.parameters():
            f.data.sub_(f.grad.data * 0.01)
        optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
        optimizer.zero_grad()
        loss = criterion(net(input), target)
        loss.backward()
        optimizer.step()
        log("after step", (loss, net.fc3.bias))
    run_both(program)


# pytorch/tutorials beginner_source/nn_tutorial.py (from-scratch part: range indexing, manual SGD)
def test_nn_tutorial_from_scratch_and_refactored():
    def program(torch, log):
        x_train = torch.tensor(np.random.RandomState(0).rand(20, 12).astype(np.float32))
        y_train = torch.tensor(np.random.RandomState(1).randint(0, 4, 20))
        n, c = x_train.shape
        weights = randn(torch, (12, 4), 2) / math.sqrt(12)
        weights.requires_grad_()
        bias = torch.zeros(4, requires_grad=True)

        def log_softmax(x):
            return x - x.exp().sum(-1).log().unsqueeze(-1)

        def model(xb):
            return log_softmax(xb @ weights + bias)

        def nll(input, target):
            return -input[range(target.shape[0]), target].mean()

        def accuracy(out, yb):
            return (torch.argmax(out, dim=1) == yb).float().mean()
        bs, lr = 8, 0.5
        for epoch in range(2):
            for i in range((n - 1) // bs + 1):
                xb, yb = x_train[i * bs:i * bs + bs], y_train[i * bs:i * bs + bs]
                loss = nll(model(xb), yb)
                loss.backward()
                with torch.no_grad():
                    weights -= weights.grad * lr
                    bias -= bias.grad * lr
                    weights.grad.zero_()
                    bias.grad.zero_()
        log("scratch", (nll(model(xb), yb), accuracy(model(xb), yb)))
        log("cross_entropy", torch.nn.functional.cross_entropy(xb @ weights + bias, yb))

        class Lambda(torch.nn.Module):
            def __init__(self, func):
                super().__init__()
                self.func = func

            def forward(self, x):
                return self.func(x)
        cnn = torch.nn.Sequential(Lambda(lambda x: x.view(-1, 1, 3, 4)),
                                  torch.nn.Conv2d(1, 4, kernel_size=3, stride=2, padding=1), torch.nn.ReLU(),
                                  torch.nn.AdaptiveAvgPool2d(1), Lambda(lambda x: x.view(x.size(0), -1)))
        with torch.no_grad():
            for i, p in enumerate(cnn.parameters()):
                p.copy_(randn(torch, tuple(p.shape), 20 + i))
        opt = torch.optim.SGD(cnn.parameters(), lr=0.1, momentum=0.9)
        train_dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_train, y_train), batch_size=bs)
        for xb, yb in train_dl:
            loss = torch.nn.functional.cross_entropy(cnn(xb), yb)
            loss.backward()
            opt.step()
            opt.zero_grad()
        log("cnn", loss)
    run_both(program)


# pytorch/tutorials beginner_source/examples_autograd/polynomial_custom_function.py and
# two_layer_net_custom_function.py
def test_custom_functions_legendre_and_relu_with_masked_grad_write():
    def program(torch, log):
        class LegendrePolynomial3(torch.autograd.Function):
            @staticmethod
            def forward(ctx, input):
                ctx.save_for_backward(input)
                return 0.5 * (5 * input ** 3 - 3 * input)

            @staticmethod
            def backward(ctx, grad_output):
                input, = ctx.saved_tensors
                return grad_output * 1.5 * (5 * input ** 2 - 1)

        class MyReLU(torch.autograd.Function):
            @staticmethod
            def forward(ctx, input):
                ctx.save_for_backward(input)
                return input.clamp(min=0)

            @staticmethod
            def backward(ctx, grad_output):
                input, = ctx.saved_tensors
                grad_input = grad_output.clone()
                grad_input[input < 0] = 0
                return grad_input
        x = torch.linspace(-math.pi, math.pi, 50)
        y = torch.sin(x)
        a = torch.full((), 0.0, requires_grad=True)
        b = torch.full((), -1.0, requires_grad=True)
        c = torch.full((), 0.0, requires_grad=True)
        d = torch.full((), 0.3, requires_grad=True)
        for t in range(3):
            P3 = LegendrePolynomial3.apply
            loss = (a + b * P3(c + d * x) - y).pow(2).sum()
            loss.backward()
            with torch.no_grad():
                for p in (a, b, c, d):
                    p -= 1e-4 * p.grad
                    p.grad = None
        log("legendre", (loss, a, b, c, d))
        xs, ys = randn(torch, (6, 5), 1), randn(torch, (6, 2), 2)
        w1, w2 = randn(torch, (5, 4), 3, requires_grad=True), randn(torch, (4, 2), 4, requires_grad=True)
        for t in range(3):
            loss = (MyReLU.apply(xs.mm(w1)).mm(w2) - ys).pow(2).sum()
            loss.backward()
            with torch.no_grad():
                w1 -= 1e-2 * w1.grad
                w2 -= 1e-2 * w2.grad
                w1.grad.zero_()
                w2.grad.zero_()
        log("relu", (loss, w1, w2))
    run_both(program)


# pytorch/tutorials beginner_source/examples_nn/dynamic_net.py and polynomial_optim.py
def test_dynamic_net_and_polynomial_rmsprop():
    def program(torch, log):
        rng = random.Random(0)

        class DynamicNet(torch.nn.Module):
            def __init__(self):
                super().__init__()
                for k, name in enumerate("abcde"):
                    setattr(self, name, torch.nn.Parameter(torch.tensor(float(np_randn((), k)))))

            def forward(self, x):
                y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
                for exp in range(4, rng.randint(4, 6)):
                    y = y + self.e * x ** exp
                return y
        x = torch.linspace(-math.pi, math.pi, 40)
        y = torch.sin(x)
        model = DynamicNet()
        criterion = torch.nn.MSELoss(reduction='sum')
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-6, momentum=0.9)
        for t in range(5):
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        log("dynamic", (loss, [p for p in model.parameters()]))
        xx = x.unsqueeze(-1).pow(torch.tensor([1, 2, 3]))
        poly = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
        with torch.no_grad():
            poly[0].weight.copy_(randn(torch, (1, 3), 7)), poly[0].bias.zero_()
        opt = torch.optim.RMSprop(poly.parameters(), lr=1e-3)
        for t in range(5):
            loss = criterion(poly(xx), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        linear_layer = poly[0]
        log("rmsprop", (loss, linear_layer.bias.item(), linear_layer.weight[:, 0].item()))
    run_both(program)


# pytorch/tutorials beginner_source/introyt/autogradyt_tutorial.py
def test_introyt_autograd_graph_walk_and_functional_api():
    def program(torch, log):
        a = torch.linspace(0., 2. * math.pi, steps=25, requires_grad=True)
        d = 2 * torch.sin(a) + 1
        out = d.sum()
        log("chain", [type(d.grad_fn).__name__,
                      [type(f).__name__ if f is not None else None for f, _ in d.grad_fn.next_functions],
                      [type(f).__name__ for f, _ in d.grad_fn.next_functions[0][0].next_functions]])
        out.backward()
        log("a.grad", a.grad)
        a = torch.ones(2, 3, requires_grad=True)
        b1 = 2 * a
        a.requires_grad = False
        log("flags", (b1.requires_grad, (2 * a).requires_grad))

        @torch.no_grad()
        def add_tensors2(x, y):
            return x + y
        log("decorated", add_tensors2(torch.ones(2, requires_grad=True), torch.ones(2)).requires_grad)
        try:
            torch.sin_(torch.linspace(0., 1., steps=3, requires_grad=True))
        except RuntimeError as e:
            log("sin_ on a leaf", "leaf Variable that requires grad" in str(e))
        x = randn(torch, (3,), 5, requires_grad=True)
        y = x * 2
        while y.data.norm() < 1000:
            y = y * 2
        y.backward(torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float))
        log("doubling", x.grad)

        def exp_adder(x, y):
            return 2 * x.exp() + 3 * y
        inputs = (randn(torch, (3,), 6), randn(torch, (3,), 7))
        log("jacobian", torch.autograd.functional.jacobian(exp_adder, inputs))

        def do_some_doubling(x):
            y = x * 2
            while y.data.norm() < 1000:
                y = y * 2
            return y
        log("vjp", torch.autograd.functional.vjp(do_some_doubling, randn(torch, (3,), 8),
                                                   v=torch.tensor([0.1, 1.0, 0.0001])))
    run_both(program)


# pytorch/tutorials intermediate_source/custom_function_conv_bn_tutorial.py: a fused conv + batch
# norm Function whose backward uses torch.nn.grad.conv2d_input
def test_fused_conv_bn_custom_function_with_nn_grad():
    def program(torch, log):
        F = torch.nn.functional

        def convolution_backward(grad_out, X, weight):
            grad_input = F.conv2d(X.transpose(0, 1), grad_out.transpose(0, 1)).transpose(0, 1)
            grad_X = torch.nn.grad.conv2d_input(X.shape, weight, grad_out)
            return grad_X, grad_input

        class Conv2D(torch.autograd.Function):
            @staticmethod
            def forward(ctx, X, weight):
                ctx.save_for_backward(X, weight)
                return F.conv2d(X, weight)

            @staticmethod
            def backward(ctx, grad_out):
                X, weight = ctx.saved_tensors
                return convolution_backward(grad_out, X, weight)

        def unsqueeze_all(t):
            return t[None, :, None, None]

        def batch_norm_backward(grad_out, X, sum, sqrt_var, N, eps):
            tmp = ((X - unsqueeze_all(sum) / N) * grad_out).sum(dim=(0, 2, 3))
            tmp *= -1
            d_denom = tmp / (sqrt_var + eps)**2
            d_var = d_denom / (2 * sqrt_var)
            d_mean_dx = grad_out / unsqueeze_all(sqrt_var + eps)
            d_mean_dx = unsqueeze_all(-d_mean_dx.sum(dim=(0, 2, 3)) / N)
            grad_input = X * unsqueeze_all(d_var * N)
            grad_input += unsqueeze_all(-d_var * sum)
            grad_input *= 2 / ((N - 1) * N)
            grad_input += d_mean_dx
            grad_input *= unsqueeze_all(sqrt_var + eps)
            grad_input += grad_out
            grad_input /= unsqueeze_all(sqrt_var + eps)
            return grad_input

        class FusedConvBN2DFunction(torch.autograd.Function):
            @staticmethod
            def forward(ctx, X, conv_weight, eps=1e-3):
                ctx.save_for_backward(X, conv_weight)
                X = F.conv2d(X, conv_weight)
                sum = X.sum(dim=(0, 2, 3))
                var = X.var(unbiased=True, dim=(0, 2, 3))
                N = X.numel() / X.size(1)
                sqrt_var = torch.sqrt(var)
                ctx.eps, ctx.sum, ctx.N, ctx.sqrt_var = eps, sum, N, sqrt_var
                out = X - unsqueeze_all(sum / N)
                out /= unsqueeze_all(sqrt_var + eps)
                return out

            @staticmethod
            def backward(ctx, grad_out):
                X, conv_weight, = ctx.saved_tensors
                X_conv_out = F.conv2d(X, conv_weight)
                grad_out = batch_norm_backward(grad_out, X_conv_out, ctx.sum, ctx.sqrt_var, ctx.N, ctx.eps)
                grad_X, grad_input = convolution_backward(grad_out, X, conv_weight)
                return grad_X, grad_input, None

        weight = randn(torch, (2, 3, 3, 3), 0, requires_grad=True, dtype=torch.double)
        X = randn(torch, (3, 3, 5, 5), 1, requires_grad=True, dtype=torch.double)
        log("gradcheck conv", torch.autograd.gradcheck(Conv2D.apply, (X, weight)))
        log("gradcheck fused", torch.autograd.gradcheck(FusedConvBN2DFunction.apply, (X, weight)))
        # FusedConvBN(nn.Module) training steps
        conv_weight = torch.nn.Parameter(randn(torch, (2, 1, 3, 3), 2))
        head = torch.nn.Linear(2 * 4 * 4, 3)
        with torch.no_grad():
            head.weight.copy_(randn(torch, (3, 32), 3, scale=0.2)), head.bias.zero_()
        opt = torch.optim.Adadelta([conv_weight, *head.parameters()], lr=1.0)
        for i in range(2):
            x, y = randn(torch, (4, 1, 6, 6), 10 + i), torch.tensor([0, 1, 2, 1])
            out = FusedConvBN2DFunction.apply(x, conv_weight, 1e-3)
            loss = F.nll_loss(F.log_softmax(head(F.relu(out).flatten(1)), dim=1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        log("train", (loss, conv_weight))
    run_both(program)
