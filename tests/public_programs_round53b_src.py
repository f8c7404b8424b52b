"""Sources of the round-53 (second set) public programs (tests/api/test_public_programs_round53b.py
and tests/compile/test_public_patterns_round53b.py), executed with ``torch`` bound to torch or
tracegrad by ``program(T, SRC)``. Kept as in their repositories apart from the omissions noted
in place; see the test files for the repositories and paths."""
import math
import types

import numpy as np


def program(T, src):
    """Execute a program source with ``torch``/``nn``/``F`` from ``T``."""
    g = {"torch": T, "nn": T.nn, "F": T.nn.functional, "np": np, "math": math,
         "Variable": T.autograd.Variable}
    exec(compile(src, "<public program>", "exec"), g)
    return types.SimpleNamespace(**g)


# zhykoties/TimeSeries model/net.py: Net.__init__/forward and loss_fn (test()/metrics omitted)
DEEPAR = '''
class Net(nn.Module):
    def __init__(self, params):
        super(Net, self).__init__()
        self.params = params
        self.embedding = nn.Embedding(params.num_class, params.embedding_dim)

        self.lstm = nn.LSTM(input_size=1+params.cov_dim+params.embedding_dim,
                            hidden_size=params.lstm_hidden_dim,
                            num_layers=params.lstm_layers,
                            bias=True,
                            batch_first=False,
                            dropout=params.lstm_dropout)
        for names in self.lstm._all_weights:
            for name in filter(lambda n: "bias" in n, names):
                bias = getattr(self.lstm, name)
                n = bias.size(0)
                start, end = n // 4, n // 2
                bias.data[start:end].fill_(1.)

        self.relu = nn.ReLU()
        self.distribution_mu = nn.Linear(params.lstm_hidden_dim * params.lstm_layers, 1)
        self.distribution_presigma = nn.Linear(params.lstm_hidden_dim * params.lstm_layers, 1)
        self.distribution_sigma = nn.Softplus()

    def forward(self, x, idx, hidden, cell):
        onehot_embed = self.embedding(idx)
        lstm_input = torch.cat((x, onehot_embed), dim=2)
        output, (hidden, cell) = self.lstm(lstm_input, (hidden, cell))
        hidden_permute = hidden.permute(1, 2, 0).contiguous().view(hidden.shape[1], -1)
        pre_sigma = self.distribution_presigma(hidden_permute)
        mu = self.distribution_mu(hidden_permute)
        sigma = self.distribution_sigma(pre_sigma)
        return torch.squeeze(mu), torch.squeeze(sigma), hidden, cell

    def init_hidden(self, input_size):
        return torch.zeros(self.params.lstm_layers, input_size, self.params.lstm_hidden_dim, device=self.params.device)

    def init_cell(self, input_size):
        return torch.zeros(self.params.lstm_layers, input_size, self.params.lstm_hidden_dim, device=self.params.device)


def loss_fn(mu: Variable, sigma: Variable, labels: Variable):
    zero_index = (labels != 0)
    distribution = torch.distributions.normal.Normal(mu[zero_index], sigma[zero_index])
    likelihood = distribution.log_prob(labels[zero_index])
    return -torch.mean(likelihood)


# train.py's train(): one batch of its loop (the DataLoader loop, evaluate and logging omitted;
# returns the loss per time step as train() does)
def train_step(model, optimizer, loss_fn, train_batch, idx, labels_batch, params):
    optimizer.zero_grad()
    batch_size = train_batch.shape[0]

    train_batch = train_batch.permute(1, 0, 2).to(torch.float32).to(params.device)  # not scaled
    labels_batch = labels_batch.permute(1, 0).to(torch.float32).to(params.device)
    idx = idx.unsqueeze(0).to(params.device)

    loss = torch.zeros(1, device=params.device)
    hidden = model.init_hidden(batch_size)
    cell = model.init_cell(batch_size)

    for t in range(params.train_window):
        zero_index = (train_batch[t, :, 0] == 0)
        if t > 0 and torch.sum(zero_index) > 0:
            train_batch[t, zero_index, 0] = mu[zero_index]
        mu, sigma, hidden, cell = model(train_batch[t].unsqueeze_(0).clone(), idx, hidden, cell)
        loss += loss_fn(mu, sigma, labels_batch[t])

    loss.backward()
    optimizer.step()
    loss = loss.item() / params.train_window
    return loss
'''

# hmf17/snn_starter SpikingModel.py (the file subclasses the module torch.autograd.function,
# which raises TypeError on torch itself; the class torch.autograd.Function is meant)
SNN_STARTER = '''
thresh = 0.25 # neuronal threshold
lens = 0.5 # hyper-parameters of approximate function
decay = 0.2 # decay constants

class ActFun(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.gt(thresh).float()

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        temp = abs(input - thresh) < lens
        return grad_input * temp.float()
act_fun = ActFun.apply
def mem_update(ops, x, mem, spike):
    mem = mem * decay * (1. - spike) + ops(x)
    spike = act_fun(mem)  # act_fun : approximation firing function
    return mem, spike
'''

# rory-bedford/connectome-snns src/optimisation/surrogate_gradients.py (docstrings omitted)
SURR_GRAD = '''
class SurrGradSpike(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, scale):
        ctx.save_for_backward(input)
        ctx.scale = scale
        out = torch.zeros_like(input)
        out[input > 0] = 1.0
        return out

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad = grad_input / (ctx.scale * torch.abs(input) + 1.0) ** 2
        return grad, None
'''
