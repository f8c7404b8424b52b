"""Round 39 (see ``test_public_programs_round39.py``): the BinaryNet MLP of DingKe/pytorch_workplace
(``binary/``), run eagerly with torch and with tracegrad (``parity.run_both``):

- ``binary/functions.py`` (at 3782867): ``BinarizeF``, a static ``torch.autograd.Function`` whose
  forward fills ``input.new(input.size())`` through boolean-mask assignments and whose backward is
  the straight-through ``grad_output.clone()``; ``binarize = BinarizeF.apply``.
- ``binary/modules.py`` (at 3782867): ``BinaryTanh`` (``nn.Hardtanh`` then ``binarize``) and
  ``BinaryLinear(nn.Linear)`` with its own ``reset_parameters`` (Glorot ``weight.data.uniform_``,
  ``bias.data.zero_()``, and a ``lr_scale`` attribute set on the weight ``Parameter``).
- ``binary/adam.py`` (at 003840d): a hand-written ``Optimizer`` subclass using the deprecated
  scalar-first overloads ``grad.add(wd, p.data)``, ``add_(1 - beta1, grad)``,
  ``addcmul_(1 - beta2, grad, grad)``, ``p.data.addcdiv_(-step_size, exp_avg, denom)``, state from
  ``grad.new().resize_as_(grad).zero_()`` and the per-parameter ``getattr(p, 'lr_scale', 1)``.
- ``binary/mlp.py`` (at 003840d): the ``MLP`` (``setattr``/``getattr`` layers of ``BinaryLinear``
  without bias, ``BatchNorm1d(momentum=0.9, eps=1e-6)``, ``BinaryTanh``, ``Dropout``), its training
  loop with ``clip_weight`` (``p.data.clamp_``), the per-epoch ``adjust_learning_rate`` and the
  evaluation loop (``torch.max(outputs.data, 1)``, ``correct += (predicted == labels).sum()``,
  ``'%d %%' % (100 * correct / total)`` of a tensor).

Changes, the same on both sides: sizes are tiny (16 inputs, 12 hidden units, 4 classes, 3 epochs
of 4 batches; one hidden layer, mlp.py's default: with two, the first BatchNorm's bias gradient is
zero in exact arithmetic, as the second BatchNorm removes any constant shift, so both libraries
feed Adam rounding noise of 1e-8 and its update amplifies that to different parameters), the
data are a seeded numpy problem in place of MNIST, the dropout probabilities are 0 (the libraries' random streams differ), parameters are overwritten from numpy
after construction, ``Variable`` is kept, and ``loss.data[0]`` (an IndexError on a 0-d tensor
since torch 0.4, in both libraries) is ``loss.item()``; ``torch.save`` is left out.
"""
import math

import numpy as np
import pytest
from parity import init_params, run_both

torch = pytest.importorskip("torch")


def _binary(torch):
    nn, F = torch.nn, torch.nn.functional
    Function = torch.autograd.Function
    Optimizer = torch.optim.Optimizer

    class BinarizeF(Function):

        @staticmethod
        def forward(cxt, input):
            output = input.new(input.size())
            output[input >= 0] = 1
            output[input < 0] = -1
            return output

        @staticmethod
        def backward(cxt, grad_output):
            grad_input = grad_output.clone()
            return grad_input

    # aliases
    binarize = BinarizeF.apply

    class BinaryTanh(nn.Module):
        def __init__(self):
            super(BinaryTanh, self).__init__()
            self.hardtanh = nn.Hardtanh()

        def forward(self, input):
            output = self.hardtanh(input)
            output = binarize(output)
            return output

    class BinaryLinear(nn.Linear):

        def forward(self, input):
            binary_weight = binarize(self.weight)
            if self.bias is None:
                return F.linear(input, binary_weight)
            else:
                return F.linear(input, binary_weight, self.bias)

        def reset_parameters(self):
            # Glorot initialization
            in_features, out_features = self.weight.size()
            stdv = math.sqrt(1.5 / (in_features + out_features))
            self.weight.data.uniform_(-stdv, stdv)
            if self.bias is not None:
                self.bias.data.zero_()

            self.weight.lr_scale = 1. / stdv

    class Adam(Optimizer):

        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                     weight_decay=0):
            defaults = dict(lr=lr, betas=betas, eps=eps,
                            weight_decay=weight_decay)
            super(Adam, self).__init__(params, defaults)

        def step(self, closure=None):
            loss = None
            if closure is not None:
                loss = closure()

            for group in self.param_groups:
                for p in group['params']:
                    if p.grad is None:
                        continue
                    grad = p.grad.data
                    state = self.state[p]

                    # State initialization
                    if len(state) == 0:
                        state['step'] = 0
                        # Exponential moving average of gradient values
                        state['exp_avg'] = grad.new().resize_as_(grad).zero_()
                        # Exponential moving average of squared gradient values
                        state['exp_avg_sq'] = grad.new().resize_as_(grad).zero_()

                    exp_avg, exp_avg_sq = state['exp_avg'], state['exp_avg_sq']
                    beta1, beta2 = group['betas']

                    state['step'] += 1

                    if group['weight_decay'] != 0:
                        grad = grad.add(group['weight_decay'], p.data)

                    # Decay the first and second moment running average coefficient
                    exp_avg.mul_(beta1).add_(1 - beta1, grad)
                    exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)

                    denom = exp_avg_sq.sqrt().add_(group['eps'])

                    bias_correction1 = 1 - beta1 ** state['step']
                    bias_correction2 = 1 - beta2 ** state['step']
                    lr = group['lr'] * getattr(p, 'lr_scale', 1)
                    step_size = lr * math.sqrt(bias_correction2) / bias_correction1

                    p.data.addcdiv_(-step_size, exp_avg, denom)

            return loss

    return binarize, BinaryLinear, BinaryTanh, Adam


@pytest.mark.parametrize("weight_decay", [0, 1e-3])
def test_binarynet_mlp_train_and_eval(weight_decay):
    def program(mod, log):
        torch = mod
        nn = torch.nn
        Variable = torch.autograd.Variable
        binarize, BinaryLinear, BinaryTanh, Adam = _binary(torch)

        # Hyper Parameters
        input_size = 16
        hidden_size = 12
        num_layers = 1
        num_classes = 4
        num_epochs = 3
        batch_size = 8

        lr_start = 1e-3
        lr_end = 1e-4
        lr_decay = (lr_end / lr_start)**(1. / num_epochs)

        drop_in = 0.0
        drop_hid = 0.0

        momentum = 0.9
        eps = 1e-6

        rs = np.random.RandomState(0)
        centers = rs.randn(num_classes, input_size)
        def make(n):
            labels = rs.randint(0, num_classes, n)
            images = centers[labels] + 0.8 * rs.randn(n, input_size)
            return (torch.tensor(images.astype(np.float32)), torch.tensor(labels))
        train_x, train_y = make(32)
        test_x, test_y = make(16)
        train_loader = [(train_x[i:i + batch_size], train_y[i:i + batch_size]) for i in range(0, 32, batch_size)]
        test_loader = [(test_x[i:i + batch_size], test_y[i:i + batch_size]) for i in range(0, 16, batch_size)]

        # Neural Network Model
        class MLP(nn.Module):
            def __init__(self, input_size, hidden_size, num_classes, num_layers=1):
                super(MLP, self).__init__()
                self.num_layers = num_layers

                self.p_in = nn.Dropout(p=drop_in)
                for i in range(1, self.num_layers+1):
                    in_features = input_size if i == 1 else hidden_size
                    out_features = hidden_size
                    layer = nn.Sequential(
                        BinaryLinear(in_features, out_features, bias=False),
                        nn.BatchNorm1d(out_features, momentum=momentum, eps=eps),
                        BinaryTanh(),
                        nn.Dropout(p=drop_hid))
                    setattr(self, 'layer{}'.format(i), layer)
                self.fc = BinaryLinear(hidden_size, num_classes, bias=False)

            def forward(self, x):
                out = self.p_in(x)
                for i in range(1, self.num_layers+1):
                    out = getattr(self, 'layer{}'.format(i))(out)
                out = self.fc(out)
                return out

        mlp = MLP(input_size, hidden_size, num_classes, num_layers=num_layers)
        log("lr_scale", [round(getattr(p, "lr_scale", 1), 6) for p in mlp.parameters()])
        init_params(torch, mlp, 5, scale=0.8)

        # Loss and Optimizer
        criterion = nn.CrossEntropyLoss()
        optimizer = Adam(mlp.parameters(), lr=lr_start, weight_decay=weight_decay)

        def clip_weight(parameters):
            for p in parameters:
                p = p.data
                p.clamp_(-1., 1.)

        # learning rate schedule
        def adjust_learning_rate(optimizer):
            for param_group in optimizer.param_groups:
                lr = param_group['lr']
                lr = lr * lr_decay
                param_group['lr'] = lr

        # Train the Model
        for epoch in range(num_epochs):
            for i, (images, labels) in enumerate(train_loader):
                # Convert torch tensor to Variable
                images = Variable(images.view(-1, input_size))
                labels = Variable(labels)

                # Forward + Backward + Optimize
                optimizer.zero_grad()  # zero the gradient buffer
                outputs = mlp(images)
                loss = criterion(outputs, labels)
                loss.backward()
                optimizer.step()

                clip_weight(mlp.parameters())

                if (i+1) % 2 == 0:
                    print ('Epoch [%d/%d], Step [%d/%d], Loss: %.4f'
                           %(epoch+1, num_epochs, i+1, 32//batch_size, loss.item()))
                log("loss", loss)

            adjust_learning_rate(optimizer)

            # Test the Model
            mlp.eval()
            correct = 0
            total = 0
            for images, labels in test_loader:
                images = Variable(images.view(-1, input_size))
                outputs = mlp(images)
                _, predicted = torch.max(outputs.data, 1)
                total += labels.size(0)
                correct += (predicted == labels).sum()

            print('Accuracy of the network on the test images: %d %%' % (100 * correct / total))
            log("correct", correct)

            mlp.train()

        for name, p in mlp.named_parameters():
            log("param " + name, p)
            log("grad " + name, p.grad)
        for name, b in mlp.named_buffers():
            log("buffer " + name, b)
        log("state", [(s["step"], s["exp_avg"], s["exp_avg_sq"]) for s in optimizer.state.values()])
        log("lr", optimizer.param_groups[0]["lr"])

        # the Function itself: values, straight-through gradient, grad_fn name
        w = torch.tensor([[-0.5, 0.0, 2.0], [0.3, -1e-8, -3.0]], requires_grad=True)
        b = binarize(w)
        (b * torch.arange(6.).view(2, 3)).sum().backward()
        log("binarize", (b, w.grad, type(b.grad_fn).__name__.replace("Backward", "")))
        h = BinaryTanh()(w)
        log("binary tanh", h)

    run_both(program)
