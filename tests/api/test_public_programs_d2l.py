"""The training utilities of *Dive into Deep Learning* (d2l-ai/d2l-en, ``d2l/torch.py``) run
eagerly with torch and with tracegrad (``parity.run_both``: every logged value and everything
printed must agree). Many people learn PyTorch from these: linear and softmax regression from
scratch (``param.data.sub_``, ``param.grad.data.zero_()``, ``Accumulator`` of ``float(...)``),
LeNet through ``train_ch6`` (``net.apply`` with ``xavier_uniform_``, metrics under ``no_grad``),
the RNN from scratch of chapter 8 (one-hot inputs, ``state.detach_()`` between minibatches,
``grad_clipping``'s ``param.grad[:] *=``, ``predict_ch8``), the concise ``RNNModel`` over
``nn.GRU``/``nn.LSTM``, the seq2seq encoder with ``sequence_mask``'s ``X[~mask] = value`` and
``MaskedSoftmaxCELoss`` (a ``CrossEntropyLoss`` whose ``reduction`` is set in ``forward``),
GRU weights initialised through ``_flat_weights_names``/``_parameters``, ``masked_softmax`` with
``repeat_interleave``, dot-product/MLP/multi-head attention and the transformer encoder block,
word2vec's ``batchify`` collate function, the GAN's ``update_D``/``update_G`` and chapter 11's
``train_concise_ch11`` over several optimizers.

The functions are d2l's, kept as written; sizes are tiny (fewer hidden units, steps and
examples), data and parameters come from numpy (``randn``/``init_params``) instead of downloads
and random streams, and the plotting (``Animator``) is left out: where the code had to change,
the comment above the test says how.
"""
import math

import numpy as np
import pytest

from parity import init_params, randn, run_both

torch = pytest.importorskip("torch")


def _d2l(torch):
    """d2l's aliases (the end of d2l/torch.py, "Alias defined in config.ini") and its small
    helpers, over ``torch``."""
    from types import SimpleNamespace
    d2l = SimpleNamespace(
        ones=torch.ones, zeros=torch.zeros, tensor=torch.tensor, arange=torch.arange, tanh=torch.tanh,
        exp=torch.exp, log=torch.log, normal=torch.normal, matmul=torch.matmul, int32=torch.int32,
        float32=torch.float32, concat=torch.cat, stack=torch.stack,
        numpy=lambda x, *args, **kwargs: x.detach().numpy(*args, **kwargs),
        size=lambda x, *args, **kwargs: x.numel(*args, **kwargs),
        reshape=lambda x, *args, **kwargs: x.reshape(*args, **kwargs),
        to=lambda x, *args, **kwargs: x.to(*args, **kwargs),
        reduce_sum=lambda x, *args, **kwargs: x.sum(*args, **kwargs),
        argmax=lambda x, *args, **kwargs: x.argmax(*args, **kwargs),
        astype=lambda x, *args, **kwargs: x.type(*args, **kwargs),
        transpose=lambda x, *args, **kwargs: x.t(*args, **kwargs))

    class Accumulator:
        """For accumulating sums over `n` variables."""
        def __init__(self, n):
            self.data = [0.0] * n

        def add(self, *args):
            self.data = [a + float(b) for a, b in zip(self.data, args)]

        def reset(self):
            self.data = [0.0] * len(self.data)

        def __getitem__(self, idx):
            return self.data[idx]

    def accuracy(y_hat, y):
        """Compute the number of correct predictions."""
        if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
            y_hat = d2l.argmax(y_hat, axis=1)
        cmp = d2l.astype(y_hat, y.dtype) == y
        return float(d2l.reduce_sum(d2l.astype(cmp, y.dtype)))

    def grad_clipping(model, theta):
        """Clip the gradient."""
        if isinstance(model, torch.nn.Module):
            params = [p for p in model.parameters() if p.requires_grad]
        else:
            params = model.params
        norm = torch.sqrt(sum(torch.sum((p.grad ** 2)) for p in params))
        if norm > theta:
            for param in params:
                param.grad[:] *= theta / norm

    def sequence_mask(X, valid_len, value=0):
        """Mask irrelevant entries in sequences."""
        maxlen = X.size(1)
        mask = torch.arange((maxlen), dtype=torch.float32,
                            device=X.device)[None, :] < valid_len[:, None]
        X[~mask] = value
        return X

    def masked_softmax(X, valid_len):
        """Perform softmax by filtering out some elements."""
        # X: 3-D tensor, valid_len: 1-D or 2-D tensor
        nn = torch.nn
        if valid_len is None:
            return nn.functional.softmax(X, dim=-1)
        else:
            shape = X.shape
            if valid_len.dim() == 1:
                valid_len = torch.repeat_interleave(valid_len, repeats=shape[1],
                                                    dim=0)
            else:
                valid_len = valid_len.reshape(-1)
            # Fill masked elements with a large negative, whose exp is 0
            X = d2l.sequence_mask(X.reshape(-1, shape[-1]), valid_len, value=-1e6)
            return nn.functional.softmax(X.reshape(shape), dim=-1)

    def load_array(data_arrays, batch_size, is_train=True):
        """Construct a PyTorch data iterator."""
        dataset = torch.utils.data.TensorDataset(*data_arrays)
        return torch.utils.data.DataLoader(dataset, batch_size, shuffle=is_train)

    d2l.Accumulator, d2l.accuracy, d2l.grad_clipping = Accumulator, accuracy, grad_clipping
    d2l.sequence_mask, d2l.masked_softmax, d2l.load_array = sequence_mask, masked_softmax, load_array
    return d2l


# chapter_linear-networks/linear-regression-scratch.md: synthetic_data (its d2l.normal noise
# -> numpy data), linreg, squared_loss, sgd's ``param.data.sub_`` / ``param.grad.data.zero_()``,
# and the concise version's load_array (is_train=False: shuffling draws differ) with nn.Linear,
# MSELoss and SGD; 20 examples, 2 epochs; the epoch losses it prints with ``:f`` are logged
# (six decimals of a float32 near 18 show its last bit, where XLA's and ATen's sums may differ)
def test_d2l_linear_regression_scratch_and_concise():
    def program(torch, log):
        d2l = _d2l(torch)
        nn = torch.nn

        def linreg(X, w, b):
            """The linear regression model."""
            return d2l.matmul(X, w) + b

        def squared_loss(y_hat, y):
            """Squared loss."""
            return (y_hat - d2l.reshape(y, y_hat.shape)) ** 2 / 2

        def sgd(params, lr, batch_size):
            """Minibatch stochastic gradient descent."""
            for param in params:
                param.data.sub_(lr*param.grad/batch_size)
                param.grad.data.zero_()

        true_w, true_b = d2l.tensor([2, -3.4]), 4.2
        features = randn(torch, (20, 2), 1)
        labels = d2l.reshape(d2l.matmul(features, true_w) + true_b + randn(torch, (20,), 2, scale=0.01), (-1, 1))
        w = randn(torch, (2, 1), 3, scale=0.01).requires_grad_(True)
        b = torch.zeros(1, requires_grad=True)
        lr, batch_size, net, loss = 0.03, 5, linreg, squared_loss
        for epoch in range(2):
            for X, y in d2l.load_array((features, labels), batch_size, is_train=False):
                l = loss(net(X, w, b), y)
                l.sum().backward()
                sgd([w, b], lr, batch_size)
            with torch.no_grad():
                train_l = loss(net(features, w, b), labels)
                log(f'epoch {epoch + 1}, loss', float(train_l.mean()))
        log("w", w)
        log("b", b)
        log("w.grad", w.grad)

        net = nn.Sequential(nn.Linear(2, 1))
        net[0].weight.data.normal_(0, 0.01)
        net[0].weight.data.copy_(randn(torch, (1, 2), 4, scale=0.01))
        net[0].bias.data.fill_(0)
        loss = nn.MSELoss()
        trainer = torch.optim.SGD(net.parameters(), lr=0.03)
        for epoch in range(2):
            for X, y in d2l.load_array((features, labels), batch_size, is_train=False):
                l = loss(net(X), y)
                trainer.zero_grad()
                l.backward()
                trainer.step()
            l = loss(net(features), labels)
            log(f'epoch {epoch + 1}, loss', l)
        log("weight", net[0].weight.data)
        log("bias", net[0].bias.data)
    run_both(program)


# chapter_linear-networks/softmax-regression-scratch.md: softmax, cross_entropy by fancy
# indexing, net with reshape, train_epoch_ch3 with its custom updater (d2l.sgd) and with
# nn.CrossEntropyLoss + optim.SGD, evaluate_accuracy, accuracy through d2l.astype (``type``);
# 4 classes over 6 features, 12 examples, one epoch each
def test_d2l_softmax_regression_train_epoch_ch3():
    def program(torch, log):
        d2l = _d2l(torch)
        nn = torch.nn

        def softmax(X):
            X_exp = torch.exp(X)
            partition = X_exp.sum(1, keepdim=True)
            return X_exp / partition  # The broadcasting mechanism is applied here

        num_inputs, num_outputs = 6, 4
        W = randn(torch, (num_inputs, num_outputs), 5, scale=0.01).requires_grad_(True)
        b = torch.zeros(num_outputs, requires_grad=True)

        def net(X):
            return softmax(torch.matmul(X.reshape((-1, W.shape[0])), W) + b)

        def cross_entropy(y_hat, y):
            return - torch.log(y_hat[range(len(y_hat)), y])

        def sgd(params, lr, batch_size):
            for param in params:
                param.data.sub_(lr*param.grad/batch_size)
                param.grad.data.zero_()

        def evaluate_accuracy(net, data_iter):
            """Compute the accuracy for a model on a dataset."""
            if isinstance(net, torch.nn.Module):
                net.eval()  # Set the model to evaluation mode
            metric = d2l.Accumulator(2)  # No. of correct predictions, no. of predictions
            for _, (X, y) in enumerate(data_iter):
                metric.add(d2l.accuracy(net(X), y), d2l.size(y))
            return metric[0] / metric[1]

        def train_epoch_ch3(net, train_iter, loss, updater):
            """The training loop defined in Chapter 3."""
            # Set the model to training mode
            if isinstance(net, torch.nn.Module):
                net.train()
            # Sum of training loss, sum of training accuracy, no. of examples
            metric = d2l.Accumulator(3)
            for X, y in train_iter:
                # Compute gradients and update parameters
                y_hat = net(X)
                l = loss(y_hat, y)
                if isinstance(updater, torch.optim.Optimizer):
                    # Using PyTorch in-built optimizer & loss criterion
                    updater.zero_grad()
                    l.backward()
                    updater.step()
                    metric.add(float(l) * len(y), d2l.accuracy(y_hat, y),
                               y.size().numel())
                else:
                    # Using custom built optimizer & loss criterion
                    l.sum().backward()
                    updater(X.shape[0])
                    metric.add(float(l.sum()), d2l.accuracy(y_hat, y), y.numel())
            # Return training loss and training accuracy
            return metric[0] / metric[2], metric[1] / metric[2]

        X = randn(torch, (12, 2, 3), 6)
        y = torch.tensor(np.random.RandomState(7).randint(0, 4, 12))
        train_iter = d2l.load_array((X, y), 4, is_train=False)
        lr = 0.1

        def updater(batch_size):
            return sgd([W, b], lr, batch_size)
        log("scratch", train_epoch_ch3(net, train_iter, cross_entropy, updater))
        log("scratch acc", evaluate_accuracy(net, train_iter))
        log("W", W)

        net2 = nn.Sequential(nn.Flatten(), nn.Linear(6, 4))
        init_params(torch, net2, 8)
        loss = nn.CrossEntropyLoss(reduction='none')
        trainer = torch.optim.SGD(net2.parameters(), lr=0.1)
        loss_mean = nn.CrossEntropyLoss()
        log("concise", train_epoch_ch3(net2, train_iter, loss_mean, trainer))
        log("concise acc", evaluate_accuracy(net2, train_iter))
        log("none", loss(net2(X), y))
    run_both(program)


# chapter_convolutional-neural-networks/lenet.md: LeNet (sigmoid, AvgPool2d) trained by
# train_ch6 as written but for the Animator/Timer/prints of throughput; xavier_uniform_ through
# net.apply -> init_params after it (the uniform draws differ); 28x28 -> 12x12 inputs with the
# first Linear sized to match, 8 examples, one epoch of 2 minibatches, then evaluate_accuracy_gpu
def test_d2l_lenet_train_ch6():
    def program(torch, log):
        d2l = _d2l(torch)
        nn = torch.nn

        def evaluate_accuracy_gpu(net, data_iter, device=None):
            """Compute the accuracy for a model on a dataset using a GPU."""
            net.eval()  # Set the model to evaluation mode
            if not device:
                device = next(iter(net.parameters())).device
            # No. of correct predictions, no. of predictions
            metric = d2l.Accumulator(2)
            for X, y in data_iter:
                X, y = X.to(device), y.to(device)
                metric.add(d2l.accuracy(net(X), y), d2l.size(y))
            return metric[0] / metric[1]

        def train_ch6(net, train_iter, test_iter, num_epochs, lr, device):
            """Train a model with a GPU (defined in Chapter 6)."""
            def init_weights(m):
                if type(m) == nn.Linear or type(m) == nn.Conv2d:
                    torch.nn.init.xavier_uniform_(m.weight)
            net.apply(init_weights)
            init_params(torch, net, 9)
            print('training on', device)
            net.to(device)
            optimizer = torch.optim.SGD(net.parameters(), lr=lr)
            loss = nn.CrossEntropyLoss()
            num_batches = len(train_iter)
            for epoch in range(num_epochs):
                # Sum of training loss, sum of training accuracy, no. of examples
                metric = d2l.Accumulator(3)
                for i, (X, y) in enumerate(train_iter):
                    net.train()
                    optimizer.zero_grad()
                    X, y = X.to(device), y.to(device)
                    y_hat = net(X)
                    l = loss(y_hat, y)
                    l.backward()
                    optimizer.step()
                    with torch.no_grad():
                        metric.add(l * X.shape[0], d2l.accuracy(y_hat, y), X.shape[0])
                    train_l = metric[0]/metric[2]
                    train_acc = metric[1]/metric[2]
                test_acc = evaluate_accuracy_gpu(net, test_iter)
            print(f'loss {train_l:.3f}, train acc {train_acc:.3f}, '
                  f'test acc {test_acc:.3f}, {num_batches} batches')

        net = nn.Sequential(
            nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2),
            nn.Conv2d(6, 16, kernel_size=5), nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2),
            nn.Flatten(),
            nn.Linear(16, 12), nn.Sigmoid(),
            nn.Linear(12, 8), nn.Sigmoid(),
            nn.Linear(8, 10))
        X = randn(torch, (8, 1, 12, 12), 10)
        y = torch.tensor(np.random.RandomState(11).randint(0, 10, 8))
        train_iter = d2l.load_array((X, y), 4, is_train=False)
        train_ch6(net, train_iter, train_iter, 1, 0.9, torch.device('cpu'))
        for name, p in net.named_parameters():
            log(name, p)
    run_both(program)


# chapter_recurrent-neural-networks/rnn-scratch.md: get_params/init_rnn_state/rnn,
# RNNModelScratch (one-hot of X.T), train_epoch_ch8 with state.detach_() between sequential
# minibatches, grad_clipping, d2l.sgd as updater, predict_ch8; a 7-character vocabulary from
# a fixed string in place of the time machine, 16 hidden units, batch 2 x 5 steps, 2 epochs;
# normal draws of get_params -> numpy, the Timer left out
def test_d2l_rnn_from_scratch_train_ch8_and_predict():
    def program(torch, log):
        d2l = _d2l(torch)
        F = torch.nn.functional
        text = "the time traveller the time machine"
        idx_to_token = sorted(set(text))
        token_to_idx = {t: i for i, t in enumerate(idx_to_token)}
        corpus = [token_to_idx[c] for c in text]
        vocab_size, num_hiddens, device = len(idx_to_token), 16, torch.device('cpu')
        seeds = iter(range(100, 200))

        def get_params(vocab_size, num_hiddens, device):
            num_inputs = num_outputs = vocab_size

            def normal(shape):
                return randn(torch, shape, next(seeds), scale=0.01)

            # Hidden layer parameters
            W_xh = normal((num_inputs, num_hiddens))
            W_hh = normal((num_hiddens, num_hiddens))
            b_h = torch.zeros(num_hiddens, device=device)
            # Output layer parameters
            W_hq = normal((num_hiddens, num_outputs))
            b_q = torch.zeros(num_outputs, device=device)
            # Attach gradients
            params = [W_xh, W_hh, b_h, W_hq, b_q]
            for param in params:
                param.requires_grad_(True)
            return params

        def init_rnn_state(batch_size, num_hiddens, device):
            return (torch.zeros((batch_size, num_hiddens), device=device), )

        def rnn(inputs, state, params):
            # Here `inputs` shape: (`num_steps`, `batch_size`, `vocab_size`)
            W_xh, W_hh, b_h, W_hq, b_q = params
            H, = state
            outputs = []
            # Shape of `X`: (`batch_size`, `vocab_size`)
            for X in inputs:
                H = torch.tanh(torch.mm(X, W_xh) + torch.mm(H, W_hh) + b_h)
                Y = torch.mm(H, W_hq) + b_q
                outputs.append(Y)
            return torch.cat(outputs, dim=0), (H,)

        class RNNModelScratch:
            """A RNN Model implemented from scratch."""
            def __init__(self, vocab_size, num_hiddens, device,
                         get_params, init_state, forward_fn):
                self.vocab_size, self.num_hiddens = vocab_size, num_hiddens
                self.params = get_params(vocab_size, num_hiddens, device)
                self.init_state, self.forward_fn = init_state, forward_fn

            def __call__(self, X, state):
                X = F.one_hot(X.T, self.vocab_size).type(torch.float32)
                return self.forward_fn(X, state, self.params)

            def begin_state(self, batch_size, device):
                return self.init_state(batch_size, self.num_hiddens, device)

        def seq_data_iter_sequential(corpus, batch_size, num_steps, offset):
            """Generate a minibatch of subsequences using sequential partitioning."""
            num_tokens = ((len(corpus) - offset - 1) // batch_size) * batch_size
            Xs = d2l.tensor(corpus[offset: offset + num_tokens])
            Ys = d2l.tensor(corpus[offset + 1: offset + 1 + num_tokens])
            Xs, Ys = Xs.reshape(batch_size, -1), Ys.reshape(batch_size, -1)
            num_batches = Xs.shape[1] // num_steps
            for i in range(0, num_batches * num_steps, num_steps):
                X = Xs[:, i: i + num_steps]
                Y = Ys[:, i: i + num_steps]
                yield X, Y

        def sgd(params, lr, batch_size):
            for param in params:
                param.data.sub_(lr*param.grad/batch_size)
                param.grad.data.zero_()

        def predict_ch8(prefix, num_preds, model, device):
            """Generate new characters following the `prefix`."""
            state = model.begin_state(batch_size=1, device=device)
            outputs = [token_to_idx[prefix[0]]]
            get_input = lambda: d2l.reshape(d2l.tensor(
                [outputs[-1]], device=device), (1, 1))
            for y in prefix[1:]:  # Warm-up period
                _, state = model(get_input(), state)
                outputs.append(token_to_idx[y])
            for _ in range(num_preds):  # Predict `num_preds` steps
                y, state = model(get_input(), state)
                outputs.append(int(y.argmax(dim=1).reshape(1)))
            return ''.join([idx_to_token[i] for i in outputs])

        def train_epoch_ch8(model, train_iter, loss, updater, device,
                            use_random_iter):
            """Train a model within one epoch (defined in Chapter 8)."""
            state = None
            metric = d2l.Accumulator(2)  # Sum of training loss, no. of tokens
            for X, Y in train_iter:
                if state is None or use_random_iter:
                    state = model.begin_state(batch_size=X.shape[0], device=device)
                else:
                    if isinstance(model, torch.nn.Module) and not isinstance(state, tuple):
                        # `state` is a tensor for `nn.GRU`
                        state.detach_()
                    else:
                        for s in state:
                            s.detach_()
                y = Y.T.reshape(-1)
                X, y = X.to(device), y.to(device)
                y_hat, state = model(X, state)
                l = loss(y_hat, y.long()).mean()
                if isinstance(updater, torch.optim.Optimizer):
                    updater.zero_grad()
                    l.backward()
                    d2l.grad_clipping(model, 1)
                    updater.step()
                else:
                    l.backward()
                    d2l.grad_clipping(model, 1)
                    # Since the `mean` function has been invoked
                    updater(batch_size=1)
                metric.add(l * d2l.size(y), d2l.size(y))
            return math.exp(metric[0] / metric[1])

        net = RNNModelScratch(vocab_size, num_hiddens, device, get_params,
                              init_rnn_state, rnn)
        X = torch.arange(10).reshape((2, 5)) % vocab_size
        Y, new_state = net(X.to(device), net.begin_state(X.shape[0], device))
        log("shapes", (tuple(Y.shape), len(new_state), tuple(new_state[0].shape)))
        loss = torch.nn.CrossEntropyLoss()
        updater = lambda batch_size: sgd(net.params, 1, batch_size)
        for epoch in range(2):
            ppl = train_epoch_ch8(net, seq_data_iter_sequential(corpus, 2, 5, epoch), loss, updater, device, False)
            log("ppl", ppl)
        print(predict_ch8('time ', 6, net, device))
        for i, p in enumerate(net.params):
            log(f"param{i}", p)
    run_both(program, rtol=1e-4)


# chapter_recurrent-neural-networks/rnn-concise.md: RNNModel over nn.RNN, nn.GRU and a
# bidirectional nn.LSTM (begin_state's tuple), trained by train_epoch_ch8 with optim.SGD and
# grad_clipping's nn.Module branch; 6-token vocabulary, 8 hidden units, 2 minibatches, one-layer
# GRU
def test_d2l_rnn_concise_models():
    def program(torch, log):
        d2l = _d2l(torch)
        nn, F = torch.nn, torch.nn.functional

        class RNNModel(nn.Module):
            """The RNN model."""
            def __init__(self, rnn_layer, vocab_size, **kwargs):
                super(RNNModel, self).__init__(**kwargs)
                self.rnn = rnn_layer
                self.vocab_size = vocab_size
                self.num_hiddens = self.rnn.hidden_size
                # If the RNN is bidirectional (to be introduced later),
                # `num_directions` should be 2, else it should be 1.
                if not self.rnn.bidirectional:
                    self.num_directions = 1
                    self.linear = nn.Linear(self.num_hiddens, self.vocab_size)
                else:
                    self.num_directions = 2
                    self.linear = nn.Linear(self.num_hiddens * 2, self.vocab_size)

            def forward(self, inputs, state):
                X = F.one_hot(inputs.T.long(), self.vocab_size)
                X = X.to(torch.float32)
                Y, state = self.rnn(X, state)
                # The fully connected layer will first change the shape of `Y` to
                # (`num_steps` * `batch_size`, `num_hiddens`). Its output shape is
                # (`num_steps` * `batch_size`, `vocab_size`).
                output = self.linear(Y.reshape((-1, Y.shape[-1])))
                return output, state

            def begin_state(self, device, batch_size=1):
                if not isinstance(self.rnn, nn.LSTM):
                    # `nn.GRU` takes a tensor as hidden state
                    return torch.zeros((self.num_directions * self.rnn.num_layers,
                                        batch_size, self.num_hiddens),
                                       device=device)
                else:
                    # `nn.LSTM` takes a tuple of hidden states
                    return (torch.zeros((
                        self.num_directions * self.rnn.num_layers,
                        batch_size, self.num_hiddens), device=device),
                            torch.zeros((
                                self.num_directions * self.rnn.num_layers,
                                batch_size, self.num_hiddens), device=device))

        def train_epoch_ch8(model, train_iter, loss, updater, device):
            state = None
            metric = d2l.Accumulator(2)
            for X, Y in train_iter:
                if state is None:
                    state = model.begin_state(batch_size=X.shape[0], device=device)
                else:
                    if isinstance(model, nn.Module) and not isinstance(state, tuple):
                        state.detach_()
                    else:
                        for s in state:
                            s.detach_()
                y = Y.T.reshape(-1)
                y_hat, state = model(X, state)
                l = loss(y_hat, y.long()).mean()
                updater.zero_grad()
                l.backward()
                d2l.grad_clipping(model, 1)
                updater.step()
                metric.add(l * d2l.size(y), d2l.size(y))
            return math.exp(metric[0] / metric[1])

        vocab_size, device = 6, torch.device('cpu')
        rs = np.random.RandomState(12)
        batches = [(torch.tensor(rs.randint(0, 6, (2, 4))), torch.tensor(rs.randint(0, 6, (2, 4)))) for _ in range(2)]
        for name, layer in [("rnn", nn.RNN(vocab_size, 8)), ("gru", nn.GRU(vocab_size, 8)),
                            ("bilstm", nn.LSTM(vocab_size, 8, bidirectional=True))]:
            net = init_params(torch, RNNModel(layer, vocab_size=vocab_size), 13)
            updater = torch.optim.SGD(net.parameters(), 1)
            log(name + " ppl", train_epoch_ch8(net, batches, nn.CrossEntropyLoss(), updater, device))
            log(name + " linear", net.linear.weight)
    run_both(program, rtol=1e-4)


# chapter_recurrent-modern/seq2seq.md: Seq2SeqEncoder (Embedding + GRU), the chapter's
# Seq2SeqDecoder, EncoderDecoder, sequence_mask, MaskedSoftmaxCELoss, train_s2s_ch9's
# xavier init over ``_flat_weights_names``/``_parameters`` (then parameters from numpy: the
# uniform draws differ), teacher forcing with ``d2l.concat([bos, Y[:, :-1]], 1)``, the
# sum().backward() / grad_clipping / optimizer.step() loop (d2l's code has no zero_grad: the
# gradients accumulate, as written), and predict_s2s_ch9's greedy loop with ``.item()``; a
# 7-token vocabulary, 6-step sequences, one-layer GRUs, one epoch of 2 minibatches
def test_d2l_seq2seq_masked_softmax_ce_training():
    def program(torch, log):
        d2l = _d2l(torch)
        nn = torch.nn

        class Encoder(nn.Module):
            """The base encoder interface for the encoder-decoder architecture."""
            def __init__(self, **kwargs):
                super(Encoder, self).__init__(**kwargs)

            def forward(self, X, *args):
                raise NotImplementedError

        class Decoder(nn.Module):
            """The base decoder interface for the encoder-decoder architecture."""
            def __init__(self, **kwargs):
                super(Decoder, self).__init__(**kwargs)

            def init_state(self, enc_outputs, *args):
                raise NotImplementedError

            def forward(self, X, state):
                raise NotImplementedError

        class EncoderDecoder(nn.Module):
            """The base class for the encoder-decoder architecture."""
            def __init__(self, encoder, decoder, **kwargs):
                super(EncoderDecoder, self).__init__(**kwargs)
                self.encoder = encoder
                self.decoder = decoder

            def forward(self, enc_X, dec_X, *args):
                enc_outputs = self.encoder(enc_X, *args)
                dec_state = self.decoder.init_state(enc_outputs, *args)
                return self.decoder(dec_X, dec_state)

        class Seq2SeqEncoder(Encoder):
            """The RNN encoder for sequence to sequence learning."""
            def __init__(self, vocab_size, embed_size, num_hiddens, num_layers,
                         dropout=0, **kwargs):
                super(Seq2SeqEncoder, self).__init__(**kwargs)
                # Embedding layer
                self.embedding = nn.Embedding(vocab_size, embed_size)
                self.rnn = nn.GRU(embed_size, num_hiddens, num_layers,
                                  dropout=dropout)

            def forward(self, X, *args):
                # The output `X` shape: (`batch_size`, `num_steps`, `embed_size`)
                X = self.embedding(X)
                # In RNN models, the first axis corresponds to time steps
                X = X.permute(1, 0, 2)
                # When state is not mentioned, it defaults to zeros
                output, state = self.rnn(X)
                return output, state

        class Seq2SeqDecoder(Decoder):
            """The RNN decoder for sequence to sequence learning."""
            def __init__(self, vocab_size, embed_size, num_hiddens, num_layers,
                         dropout=0, **kwargs):
                super(Seq2SeqDecoder, self).__init__(**kwargs)
                self.embedding = nn.Embedding(vocab_size, embed_size)
                self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers,
                                  dropout=dropout)
                self.dense = nn.Linear(num_hiddens, vocab_size)

            def init_state(self, enc_outputs, *args):
                return enc_outputs[1]

            def forward(self, X, state):
                X = self.embedding(X).permute(1, 0, 2)
                # Broadcast `context` so it has the same `num_steps` as `X`
                context = state[-1].repeat(X.shape[0], 1, 1)
                X_and_context = torch.cat((X, context), 2)
                output, state = self.rnn(X_and_context, state)
                output = self.dense(output).permute(1, 0, 2)
                return output, state

        class MaskedSoftmaxCELoss(nn.CrossEntropyLoss):
            """The softmax cross-entropy loss with masks."""
            def forward(self, pred, label, valid_len):
                weights = torch.ones_like(label)
                weights = d2l.sequence_mask(weights, valid_len)
                self.reduction='none'
                unweighted_loss = super(MaskedSoftmaxCELoss, self).forward(
                    pred.permute(0, 2, 1), label)
                weighted_loss = (unweighted_loss * weights).mean(dim=1)
                return weighted_loss

        def train_s2s_ch9(model, data_iter, lr, num_epochs, bos_idx, device):
            """Train a model for sequence to sequence (defined in Chapter 9)."""
            def xavier_init_weights(m):
                if type(m) == nn.Linear:
                    torch.nn.init.xavier_uniform_(m.weight)
                if type(m) == nn.GRU:
                    for param in m._flat_weights_names:
                        if "weight" in param:
                            torch.nn.init.xavier_uniform_(m._parameters[param])
            model.apply(xavier_init_weights)
            init_params(torch, model, 14)
            model.to(device)
            optimizer = torch.optim.Adam(model.parameters(), lr=lr)
            loss = MaskedSoftmaxCELoss()
            model.train()
            for epoch in range(num_epochs):
                metric = d2l.Accumulator(2)  # Sum of training loss, no. of tokens
                for batch in data_iter:
                    X, X_valid_len, Y, Y_valid_len = [x.to(device) for x in batch]
                    bos = torch.tensor([bos_idx] * Y.shape[0],
                                       device=device).reshape(-1, 1)
                    dec_input = d2l.concat([bos, Y[:, :-1]], 1)  # Teacher forcing
                    Y_hat, _ = model(X, dec_input, X_valid_len)
                    l = loss(Y_hat, Y, Y_valid_len)
                    l.sum().backward()  # Make the loss scalar for `backward`
                    d2l.grad_clipping(model, 1)
                    num_tokens = Y_valid_len.sum()
                    optimizer.step()
                    with torch.no_grad():
                        metric.add(l.sum(), num_tokens)
                print(f'epoch {epoch + 1} loss {metric[0] / metric[1]:.3f}')

        def predict_s2s_ch9(model, src_tokens, num_steps, bos_idx, eos_idx, device):
            """Predict sequences (defined in Chapter 9)."""
            enc_valid_len = torch.tensor([len(src_tokens)], device=device)
            enc_X = torch.unsqueeze(
                torch.tensor(src_tokens, dtype=torch.long, device=device), dim=0)
            enc_outputs = model.encoder(enc_X, enc_valid_len)
            dec_state = model.decoder.init_state(enc_outputs, enc_valid_len)
            dec_X = torch.unsqueeze(torch.tensor(
                [bos_idx], dtype=torch.long, device=device), dim=0)
            output_seq = []
            for _ in range(num_steps):
                Y, dec_state = model.decoder(dec_X, dec_state)
                dec_X = Y.argmax(dim=2)
                pred = dec_X.squeeze(dim=0).type(torch.int32).item()
                if pred == eos_idx:
                    break
                output_seq.append(pred)
            return output_seq

        X = torch.zeros((4, 7), dtype=torch.long)
        log("masked", d2l.sequence_mask(torch.tensor([[1, 2, 3], [4, 5, 6]]), torch.tensor([1, 2])))
        loss = MaskedSoftmaxCELoss()
        log("ce", loss(torch.ones(3, 4, 10), torch.ones((3, 4), dtype=torch.long), torch.tensor([4, 2, 0])))
        encoder = Seq2SeqEncoder(vocab_size=7, embed_size=4, num_hiddens=6, num_layers=1)
        encoder.eval()
        output, state = encoder(X)
        log("enc shapes", (tuple(output.shape), tuple(state.shape)))
        rs = np.random.RandomState(15)
        batches = []
        for _ in range(2):
            src = torch.tensor(rs.randint(3, 7, (3, 6)))
            tgt = torch.tensor(rs.randint(3, 7, (3, 6)))
            batches.append((src, torch.tensor(rs.randint(2, 7, 3)), tgt, torch.tensor(rs.randint(2, 7, 3))))
        net = EncoderDecoder(Seq2SeqEncoder(7, 4, 6, 1), Seq2SeqDecoder(7, 4, 6, 1))
        train_s2s_ch9(net, batches, 0.005, 1, 1, torch.device('cpu'))
        net.eval()
        log("translation", predict_s2s_ch9(net, [3, 4, 5, 2], 5, 1, 2, torch.device('cpu')))
        for name, p in net.named_parameters():
            log(name, p)
    run_both(program, rtol=1e-4)


# chapter_attention-mechanisms: masked_softmax (1-D and 2-D valid lengths through
# repeat_interleave), DotProductAttention, MLPAttention, MultiHeadAttention with
# transpose_qkv/transpose_output, PositionWiseFFN, AddNorm and EncoderBlock, their gradients;
# dropout 0 (masks differ), tiny widths
def test_d2l_attention_and_transformer_encoder_block():
    def program(torch, log):
        d2l = _d2l(torch)
        nn = torch.nn

        class DotProductAttention(nn.Module):
            def __init__(self, dropout, **kwargs):
                super(DotProductAttention, self).__init__(**kwargs)
                self.dropout = nn.Dropout(dropout)

            def forward(self, query, key, value, valid_len=None):
                d = query.shape[-1]
                # Set transpose_b=True to swap the last two dimensions of key
                scores = torch.bmm(query, key.transpose(1,2)) / math.sqrt(d)
                attention_weights = self.dropout(d2l.masked_softmax(scores, valid_len))
                return torch.bmm(attention_weights, value)

        class MLPAttention(nn.Module):
            def __init__(self, key_size, query_size, units, dropout, **kwargs):
                super(MLPAttention, self).__init__(**kwargs)
                self.W_k = nn.Linear(key_size, units, bias=False)
                self.W_q = nn.Linear(query_size, units, bias=False)
                self.v = nn.Linear(units, 1, bias=False)
                self.dropout = nn.Dropout(dropout)

            def forward(self, query, key, value, valid_len):
                query, key = self.W_q(query), self.W_k(key)
                features = query.unsqueeze(2) + key.unsqueeze(1)
                features = torch.tanh(features)
                scores = self.v(features).squeeze(-1)
                attention_weights = self.dropout(d2l.masked_softmax(scores, valid_len))
                return torch.bmm(attention_weights, value)

        def transpose_qkv(X, num_heads):
            X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)
            X = X.permute(0, 2, 1, 3)
            output = X.reshape(-1, X.shape[2], X.shape[3])
            return output

        def transpose_output(X, num_heads):
            # A reversed version of `transpose_qkv`
            X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])
            X = X.permute(0, 2, 1, 3)
            return X.reshape(X.shape[0], X.shape[1], -1)

        class MultiHeadAttention(nn.Module):
            def __init__(self, key_size, query_size, value_size, num_hiddens,
                         num_heads, dropout, bias=False, **kwargs):
                super(MultiHeadAttention, self).__init__(**kwargs)
                self.num_heads = num_heads
                self.attention = DotProductAttention(dropout)
                self.W_q = nn.Linear(query_size, num_hiddens, bias=bias)
                self.W_k = nn.Linear(key_size, num_hiddens, bias=bias)
                self.W_v = nn.Linear(value_size, num_hiddens, bias=bias)
                self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

            def forward(self, query, key, value, valid_len):
                query = transpose_qkv(self.W_q(query), self.num_heads)
                key = transpose_qkv(self.W_k(key), self.num_heads)
                value = transpose_qkv(self.W_v(value), self.num_heads)
                if valid_len is not None:
                    valid_len = torch.repeat_interleave(
                        valid_len, repeats=self.num_heads, dim=0)
                output = self.attention(query, key, value, valid_len)
                output_concat = transpose_output(output, self.num_heads)
                return self.W_o(output_concat)

        class PositionWiseFFN(nn.Module):
            def __init__(self, ffn_num_input, ffn_num_hiddens, pw_num_outputs,
                         **kwargs):
                super(PositionWiseFFN, self).__init__(**kwargs)
                self.dense1 = nn.Linear(ffn_num_input, ffn_num_hiddens)
                self.relu = nn.ReLU()
                self.dense2 = nn.Linear(ffn_num_hiddens, pw_num_outputs)

            def forward(self, X):
                return self.dense2(self.relu(self.dense1(X)))

        class AddNorm(nn.Module):
            def __init__(self, normalized_shape, dropout, **kwargs):
                super(AddNorm, self).__init__(**kwargs)
                self.dropout = nn.Dropout(dropout)
                self.ln = nn.LayerNorm(normalized_shape)

            def forward(self, X, Y):
                return self.ln(self.dropout(Y) + X)

        class EncoderBlock(nn.Module):
            def __init__(self, key_size, query_size, value_size, num_hiddens,
                         norm_shape, ffn_num_input, ffn_num_hiddens, num_heads,
                         dropout, use_bias=False, **kwargs):
                super(EncoderBlock, self).__init__(**kwargs)
                self.attention = MultiHeadAttention(key_size, query_size, value_size,
                                                    num_hiddens, num_heads, dropout,
                                                    use_bias)
                self.addnorm1 = AddNorm(norm_shape, dropout)
                self.ffn = PositionWiseFFN(
                    ffn_num_input, ffn_num_hiddens, num_hiddens)
                self.addnorm2 = AddNorm(norm_shape, dropout)

            def forward(self, X, valid_len):
                Y = self.addnorm1(X, self.attention(X, X, X, valid_len))
                return self.addnorm2(Y, self.ffn(Y))

        scores = randn(torch, (2, 2, 4), 16)
        log("masked 1d", d2l.masked_softmax(scores, torch.tensor([2, 3])))
        log("masked 2d", d2l.masked_softmax(scores, torch.tensor([[1, 3], [2, 4]])))
        keys = torch.ones((2, 10, 2))
        values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
        atten = DotProductAttention(dropout=0.5)
        atten.eval()
        log("dot", atten(torch.ones((2, 1, 2)), keys, values, torch.tensor([2, 6])))
        mlp = init_params(torch, MLPAttention(key_size=2, query_size=2, units=8, dropout=0.1), 17)
        mlp.eval()
        log("mlp", mlp(torch.ones((2, 1, 2)), keys, values, torch.tensor([2, 6])))
        X = randn(torch, (2, 5, 8), 18, requires_grad=True)
        valid_len = torch.tensor([3, 2])
        block = init_params(torch, EncoderBlock(8, 8, 8, 8, [5, 8], 8, 16, 2, 0.0), 19)
        out = block(X, valid_len)
        log("block", out)
        (out * randn(torch, (2, 5, 8), 20)).sum().backward()
        log("dX", X.grad)
        for name, p in block.named_parameters():
            log(name + ".grad", p.grad)
    run_both(program)


# chapter_natural-language-processing-pretraining/word2vec-pretraining.md and
# word-embedding-dataset.md: batchify as a DataLoader collate_fn over a Dataset of
# (center, contexts, negatives), the skip-gram forward with two Embeddings and bmm,
# SigmoidBCELoss over binary_cross_entropy_with_logits with a mask, an Adam loop; 6 examples,
# vocabulary 8, embed size 4, batch 3, shuffle off (draws differ)
def test_d2l_word2vec_skip_gram_with_batchify():
    def program(torch, log):
        d2l = _d2l(torch)
        nn = torch.nn

        def batchify(data):
            max_len = max(len(c) + len(n) for _, c, n in data)
            centers, contexts_negatives, masks, labels = [], [], [], []
            for center, context, negative in data:
                cur_len = len(context) + len(negative)
                centers += [center]
                contexts_negatives += [context + negative + [0] * (max_len - cur_len)]
                masks += [[1] * cur_len + [0] * (max_len - cur_len)]
                labels += [[1] * len(context) + [0] * (max_len - len(context))]
            return (d2l.reshape(d2l.tensor(centers), (-1, 1)), d2l.tensor(contexts_negatives),
                    d2l.tensor(masks), d2l.tensor(labels))

        class PTBDataset(torch.utils.data.Dataset):
            def __init__(self, centers, contexts, negatives):
                assert len(centers) == len(contexts) == len(negatives)
                self.centers = centers
                self.contexts = contexts
                self.negatives = negatives

            def __getitem__(self, index):
                return (self.centers[index], self.contexts[index], self.negatives[index])

            def __len__(self):
                return len(self.centers)

        def skip_gram(center, contexts_and_negatives, embed_v, embed_u):
            v = embed_v(center)
            u = embed_u(contexts_and_negatives)
            pred = torch.bmm(v, u.permute(0, 2, 1))
            return pred

        class SigmoidBCELoss(nn.Module):
            # Binary cross-entropy loss with masking
            def __init__(self):
                super().__init__()

            def forward(self, inputs, target, mask=None):
                out = nn.functional.binary_cross_entropy_with_logits(
                    inputs, target, weight=mask, reduction="none")
                return out.mean(dim=1)

        rs = np.random.RandomState(21)
        centers = [int(c) for c in rs.randint(0, 8, 6)]
        contexts = [[int(v) for v in rs.randint(0, 8, n)] for n in (1, 2, 3, 2, 1, 2)]
        negatives = [[int(v) for v in rs.randint(0, 8, 2 * len(c))] for c in contexts]
        data_iter = torch.utils.data.DataLoader(PTBDataset(centers, contexts, negatives), 3, shuffle=False,
                                                collate_fn=batchify, num_workers=0)
        names = ['centers', 'contexts_negatives', 'masks', 'labels']
        for batch in data_iter:
            for name, data in zip(names, batch):
                log(name, data)
            break
        net = nn.Sequential(nn.Embedding(num_embeddings=8, embedding_dim=4),
                            nn.Embedding(num_embeddings=8, embedding_dim=4))
        init_params(torch, net, 22)
        loss = SigmoidBCELoss()
        optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
        metric = d2l.Accumulator(2)  # Sum of normalized losses, no. of normalized losses
        for epoch in range(2):
            for i, batch in enumerate(data_iter):
                optimizer.zero_grad()
                center, context_negative, mask, label = batch
                pred = skip_gram(center, context_negative, net[0], net[1])
                l = (loss(pred.reshape(label.shape).float(), label.float(), mask)
                     / mask.sum(axis=1) * mask.shape[1])
                l.sum().backward()
                optimizer.step()
                metric.add(l.sum(), l.numel())
            print(f'loss {metric[0] / metric[1]:.4f}')
        W = net[0].weight.data
        x = W[3]
        cos = torch.mv(W, x) / torch.sqrt(torch.sum(W * W, dim=1) * torch.sum(x * x) + 1e-9)
        log("cos", cos)
        log("topk", torch.topk(cos, k=3)[0])
    run_both(program)


# chapter_generative-adversarial-networks/gan.md: update_D/update_G as written (BCEWithLogits
# with reduction='sum', fake_X.detach(), two Adam trainers with their own param groups) on the
# chapter's linear generator/discriminator; 8 examples of 2 features, 2 epochs of 2 minibatches
def test_d2l_gan_update_d_and_update_g():
    def program(torch, log):
        d2l = _d2l(torch)
        nn = torch.nn

        def update_D(X, Z, net_D, net_G, loss, trainer_D):
            """Update discriminator."""
            batch_size = X.shape[0]
            ones = torch.ones((batch_size,), device=X.device)
            zeros = torch.zeros((batch_size,), device=X.device)
            trainer_D.zero_grad()
            real_Y = net_D(X)
            fake_X = net_G(Z)
            # Do not need to compute gradient for `net_G`, detach it from
            # computing gradients.
            fake_Y = net_D(fake_X.detach())
            loss_D = (loss(real_Y, ones.reshape(real_Y.shape)) +
                      loss(fake_Y, zeros.reshape(fake_Y.shape))) / 2
            loss_D.backward()
            trainer_D.step()
            return loss_D

        def update_G(Z, net_D, net_G, loss, trainer_G):
            """Update generator."""
            batch_size = Z.shape[0]
            ones = torch.ones((batch_size,), device=Z.device)
            trainer_G.zero_grad()
            # We could reuse `fake_X` from `update_D` to save computation
            fake_X = net_G(Z)
            # Recomputing `fake_Y` is needed since `net_D` is changed
            fake_Y = net_D(fake_X)
            loss_G = loss(fake_Y, ones.reshape(fake_Y.shape))
            loss_G.backward()
            trainer_G.step()
            return loss_G

        X = torch.matmul(randn(torch, (8, 2), 23), torch.tensor([[1, 2], [-0.1, 0.5]])) + torch.tensor([1, 2])
        data_iter = d2l.load_array((X,), 4, is_train=False)
        net_G = init_params(torch, nn.Sequential(nn.Linear(2, 2)), 24)
        net_D = init_params(torch, nn.Sequential(
            nn.Linear(2, 5), nn.Tanh(),
            nn.Linear(5, 3), nn.Tanh(),
            nn.Linear(3, 1)), 25)
        loss = nn.BCEWithLogitsLoss(reduction='sum')
        lr_D, lr_G, latent_dim = 0.05, 0.005, 2
        trainer_D = torch.optim.Adam(net_D.parameters(), lr=lr_D)
        trainer_G = torch.optim.Adam(net_G.parameters(), lr=lr_G)
        for epoch in range(2):
            metric = d2l.Accumulator(3)  # loss_D, loss_G, num_examples
            for i, (X,) in enumerate(data_iter):
                batch_size = X.shape[0]
                Z = randn(torch, (batch_size, latent_dim), 26 + 10 * epoch + i)
                metric.add(update_D(X, Z, net_D, net_G, loss, trainer_D),
                           update_G(Z, net_D, net_G, loss, trainer_G),
                           batch_size)
            loss_D, loss_G = metric[0]/metric[2], metric[1]/metric[2]
            print(f'loss_D {loss_D:.4f}, loss_G {loss_G:.4f}')
        log("G", net_G[0].weight)
        log("D", net_D[0].weight)
    run_both(program)


# chapter_optimization/minibatch-sgd.md: train_concise_ch11 as written (normal_ init through
# net.apply, then parameters from numpy; the Animator's evaluate_loss every 200 examples kept
# as a logged value) with SGD, Adagrad, RMSprop, Adadelta and Adam; 40 examples of 5 features
# in place of the airfoil data, batch 10, one epoch
def test_d2l_train_concise_ch11_optimizers():
    def program(torch, log):
        d2l = _d2l(torch)
        nn = torch.nn

        def evaluate_loss(net, data_iter, loss):
            """Evaluate the loss of a model on the given dataset."""
            metric = d2l.Accumulator(2)  # Sum of losses, no. of examples
            for X, y in data_iter:
                out = net(X)
                y = d2l.reshape(y, out.shape)
                l = loss(out, y)
                metric.add(d2l.reduce_sum(l), d2l.size(l))
            return metric[0] / metric[1]

        def train_concise_ch11(trainer_fn, hyperparams, data_iter, num_epochs=1):
            # Initialization
            net = nn.Sequential(nn.Linear(5, 1))

            def init_weights(m):
                if type(m) == nn.Linear:
                    torch.nn.init.normal_(m.weight, std=0.01)
            net.apply(init_weights)
            init_params(torch, net, 27, scale=0.01)
            optimizer = trainer_fn(net.parameters(), **hyperparams)
            loss = nn.MSELoss()
            n, points = 0, []
            for _ in range(num_epochs):
                for X, y in data_iter:
                    optimizer.zero_grad()
                    out = net(X)
                    y = y.reshape(out.shape)
                    l = loss(out, y)/2
                    l.backward()
                    optimizer.step()
                    n += X.shape[0]
                    if n % 20 == 0:
                        points.append(evaluate_loss(net, data_iter, loss)/2)
            print(f'loss: {points[-1]:.3f}')
            return points

        data = randn(torch, (40, 6), 28)
        data = (data - data.mean(axis=0)) / data.std(axis=0)
        data_iter = d2l.load_array((data[:, :-1], data[:, -1]), 10, is_train=False)
        for name, fn, hp in [("sgd", torch.optim.SGD, {'lr': 0.01}),
                             ("momentum", torch.optim.SGD, {'lr': 0.005, 'momentum': 0.9}),
                             ("adagrad", torch.optim.Adagrad, {'lr': 0.1}),
                             ("rmsprop", torch.optim.RMSprop, {'lr': 0.01, 'alpha': 0.9}),
                             ("adadelta", torch.optim.Adadelta, {'rho': 0.9}),
                             ("adam", torch.optim.Adam, {'lr': 0.01})]:
            log(name, train_concise_ch11(fn, hp, data_iter))
    run_both(program)
