"""A forty-second round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), from repositories no
earlier round used:

- loudinthecloud/pytorch-ntm at 3c64937 (a Neural Turing Machine on the copy task):
  ``ntm/memory.py`` (``register_buffer`` of an uninitialised ``torch.Tensor(N, M)`` filled by
  ``nn.init.uniform_``, the memory reset by ``clone().repeat``, batched outer-product writes through
  ``matmul`` of ``unsqueeze``d vectors, content addressing with ``F.cosine_similarity`` of a
  broadcast key, the circular shift written row by row into ``torch.zeros(wg.size())`` with
  ``result[b] = _convolve(...)`` (``torch.cat`` of wrapped ends and ``F.conv1d``), sharpening by a
  tensor power), ``ntm/head.py`` (``_split_cols`` at ``np.cumsum`` bounds, ``F.softplus``,
  ``F.sigmoid``), ``ntm/controller.py`` (an ``nn.LSTM`` whose initial state is a learned
  parameter repeated over the batch), ``ntm/ntm.py`` (read biases registered as buffers from
  ``.data`` and kept in a Python list too: the list entry aliases the buffer),
  ``ntm/aio.py`` (one memory module shared by the heads and the wrapper), ``tasks/copytask.py``
  (the ``attrs`` parameter and training classes, the generator of bit sequences written into a
  zeros tensor through slices) and ``train.py`` (``train_batch``: outputs written with
  ``y_out[i], _ = net()``, ``nn.BCELoss``, ``clip_grads`` by ``p.grad.data.clamp_``, RMSprop with
  momentum, ``apply_`` of a Python function to binarise; ``evaluate``'s ``loss.data[0]``, an
  ``IndexError`` on a 0-dim tensor since torch 0.4, logged).

Changes, the same on both sides: sizes are tiny; ``attrib(convert=...)`` (removed from attrs) is
``attrib(converter=...)``; ``torch.randn`` draws come from one seeded numpy stream
(``parity.SeededTorch``), parameters and the memory bias are overwritten from numpy after
construction, and Python's/numpy's global streams are seeded for the data generator.
"""
import random

import numpy as np
import pytest
from parity import SeededTorch, init_params, run_both, seeded

torch = pytest.importorskip("torch")


# ---- loudinthecloud/pytorch-ntm -------------------------------------------------------------------
def _ntm(torch):
    """ntm/{memory,head,controller,ntm,aio}.py and tasks/copytask.py, as written but for the
    attrs ``converter`` spelling."""
    from attr import Factory, attrib, attrs
    nn = torch.nn
    F = torch.nn.functional
    Parameter = torch.nn.Parameter
    optim = torch.optim

    # ---- ntm/memory.py ----
    def _convolve(w, s):
        """Circular convolution implementation."""
        assert s.size(0) == 3
        t = torch.cat([w[-1:], w, w[:1]])
        c = F.conv1d(t.view(1, 1, -1), s.view(1, 1, -1)).view(-1)
        return c

    class NTMMemory(nn.Module):
        """Memory bank for NTM."""
        def __init__(self, N, M):
            super(NTMMemory, self).__init__()

            self.N = N
            self.M = M

            # The memory bias allows the heads to learn how to initially address
            # memory locations by content
            self.register_buffer('mem_bias', torch.Tensor(N, M))

            # Initialize memory bias
            stdev = 1 / (np.sqrt(N + M))
            nn.init.uniform_(self.mem_bias, -stdev, stdev)

        def reset(self, batch_size):
            """Initialize memory from bias, for start-of-sequence."""
            self.batch_size = batch_size
            self.memory = self.mem_bias.clone().repeat(batch_size, 1, 1)

        def size(self):
            return self.N, self.M

        def read(self, w):
            """Read from memory (according to section 3.1)."""
            return torch.matmul(w.unsqueeze(1), self.memory).squeeze(1)

        def write(self, w, e, a):
            """write to memory (according to section 3.2)."""
            self.prev_mem = self.memory
            self.memory = torch.Tensor(self.batch_size, self.N, self.M)
            erase = torch.matmul(w.unsqueeze(-1), e.unsqueeze(1))
            add = torch.matmul(w.unsqueeze(-1), a.unsqueeze(1))
            self.memory = self.prev_mem * (1 - erase) + add

        def address(self, k, β, g, s, γ, w_prev):
            """NTM Addressing (according to section 3.3)."""
            # Content focus
            wc = self._similarity(k, β)

            # Location focus
            wg = self._interpolate(w_prev, wc, g)
            ŵ = self._shift(wg, s)
            w = self._sharpen(ŵ, γ)

            return w

        def _similarity(self, k, β):
            k = k.view(self.batch_size, 1, -1)
            w = F.softmax(β * F.cosine_similarity(self.memory + 1e-16, k + 1e-16, dim=-1), dim=1)
            return w

        def _interpolate(self, w_prev, wc, g):
            return g * wc + (1 - g) * w_prev

        def _shift(self, wg, s):
            result = torch.zeros(wg.size())
            for b in range(self.batch_size):
                result[b] = _convolve(wg[b], s[b])
            return result

        def _sharpen(self, ŵ, γ):
            w = ŵ ** γ
            w = torch.div(w, torch.sum(w, dim=1).view(-1, 1) + 1e-16)
            return w

    # ---- ntm/head.py ----
    def _split_cols(mat, lengths):
        """Split a 2D matrix to variable length columns."""
        assert mat.size()[1] == sum(lengths), "Lengths must be summed to num columns"
        l = np.cumsum([0] + lengths)  # noqa: E741
        results = []
        for s, e in zip(l[:-1], l[1:]):
            results += [mat[:, s:e]]
        return results

    class NTMHeadBase(nn.Module):
        """An NTM Read/Write Head."""

        def __init__(self, memory, controller_size):
            super(NTMHeadBase, self).__init__()

            self.memory = memory
            self.N, self.M = memory.size()
            self.controller_size = controller_size

        def _address_memory(self, k, β, g, s, γ, w_prev):
            # Handle Activations
            k = k.clone()
            β = F.softplus(β)
            g = F.sigmoid(g)
            s = F.softmax(s, dim=1)
            γ = 1 + F.softplus(γ)

            w = self.memory.address(k, β, g, s, γ, w_prev)

            return w

    class NTMReadHead(NTMHeadBase):
        def __init__(self, memory, controller_size):
            super(NTMReadHead, self).__init__(memory, controller_size)

            # Corresponding to k, β, g, s, γ sizes from the paper
            self.read_lengths = [self.M, 1, 1, 3, 1]
            self.fc_read = nn.Linear(controller_size, sum(self.read_lengths))
            self.reset_parameters()

        def create_new_state(self, batch_size):
            # The state holds the previous time step address weightings
            return torch.zeros(batch_size, self.N)

        def reset_parameters(self):
            # Initialize the linear layers
            nn.init.xavier_uniform_(self.fc_read.weight, gain=1.4)
            nn.init.normal_(self.fc_read.bias, std=0.01)

        def is_read_head(self):
            return True

        def forward(self, embeddings, w_prev):
            o = self.fc_read(embeddings)
            k, β, g, s, γ = _split_cols(o, self.read_lengths)

            # Read from memory
            w = self._address_memory(k, β, g, s, γ, w_prev)
            r = self.memory.read(w)

            return r, w

    class NTMWriteHead(NTMHeadBase):
        def __init__(self, memory, controller_size):
            super(NTMWriteHead, self).__init__(memory, controller_size)

            # Corresponding to k, β, g, s, γ, e, a sizes from the paper
            self.write_lengths = [self.M, 1, 1, 3, 1, self.M, self.M]
            self.fc_write = nn.Linear(controller_size, sum(self.write_lengths))
            self.reset_parameters()

        def create_new_state(self, batch_size):
            return torch.zeros(batch_size, self.N)

        def reset_parameters(self):
            # Initialize the linear layers
            nn.init.xavier_uniform_(self.fc_write.weight, gain=1.4)
            nn.init.normal_(self.fc_write.bias, std=0.01)

        def is_read_head(self):
            return False

        def forward(self, embeddings, w_prev):
            o = self.fc_write(embeddings)
            k, β, g, s, γ, e, a = _split_cols(o, self.write_lengths)

            # e should be in [0, 1]
            e = F.sigmoid(e)

            # Write to memory
            w = self._address_memory(k, β, g, s, γ, w_prev)
            self.memory.write(w, e, a)

            return w

    # ---- ntm/controller.py ----
    class LSTMController(nn.Module):
        """An NTM controller based on LSTM."""
        def __init__(self, num_inputs, num_outputs, num_layers):
            super(LSTMController, self).__init__()

            self.num_inputs = num_inputs
            self.num_outputs = num_outputs
            self.num_layers = num_layers

            self.lstm = nn.LSTM(input_size=num_inputs,
                                hidden_size=num_outputs,
                                num_layers=num_layers)

            # The hidden state is a learned parameter
            self.lstm_h_bias = Parameter(torch.randn(self.num_layers, 1, self.num_outputs) * 0.05)
            self.lstm_c_bias = Parameter(torch.randn(self.num_layers, 1, self.num_outputs) * 0.05)

            self.reset_parameters()

        def create_new_state(self, batch_size):
            # Dimension: (num_layers * num_directions, batch, hidden_size)
            lstm_h = self.lstm_h_bias.clone().repeat(1, batch_size, 1)
            lstm_c = self.lstm_c_bias.clone().repeat(1, batch_size, 1)
            return lstm_h, lstm_c

        def reset_parameters(self):
            for p in self.lstm.parameters():
                if p.dim() == 1:
                    nn.init.constant_(p, 0)
                else:
                    stdev = 5 / (np.sqrt(self.num_inputs + self.num_outputs))
                    nn.init.uniform_(p, -stdev, stdev)

        def size(self):
            return self.num_inputs, self.num_outputs

        def forward(self, x, prev_state):
            x = x.unsqueeze(0)
            outp, state = self.lstm(x, prev_state)
            return outp.squeeze(0), state

    # ---- ntm/ntm.py ----
    class NTM(nn.Module):
        """A Neural Turing Machine."""
        def __init__(self, num_inputs, num_outputs, controller, memory, heads):
            super(NTM, self).__init__()

            # Save arguments
            self.num_inputs = num_inputs
            self.num_outputs = num_outputs
            self.controller = controller
            self.memory = memory
            self.heads = heads

            self.N, self.M = memory.size()
            _, self.controller_size = controller.size()

            # Initialize the initial previous read values to random biases
            self.num_read_heads = 0
            self.init_r = []
            for head in heads:
                if head.is_read_head():
                    init_r_bias = torch.randn(1, self.M) * 0.01
                    self.register_buffer("read{}_bias".format(self.num_read_heads), init_r_bias.data)
                    self.init_r += [init_r_bias]
                    self.num_read_heads += 1

            assert self.num_read_heads > 0, "heads list must contain at least a single read head"

            # Initialize a fully connected layer to produce the actual output:
            #   [controller_output; previous_reads ] -> output
            self.fc = nn.Linear(self.controller_size + self.num_read_heads * self.M, num_outputs)
            self.reset_parameters()

        def create_new_state(self, batch_size):
            init_r = [r.clone().repeat(batch_size, 1) for r in self.init_r]
            controller_state = self.controller.create_new_state(batch_size)
            heads_state = [head.create_new_state(batch_size) for head in self.heads]

            return init_r, controller_state, heads_state

        def reset_parameters(self):
            # Initialize the linear layer
            nn.init.xavier_uniform_(self.fc.weight, gain=1)
            nn.init.normal_(self.fc.bias, std=0.01)

        def forward(self, x, prev_state):
            # Unpack the previous state
            prev_reads, prev_controller_state, prev_heads_states = prev_state

            # Use the controller to get an embeddings
            inp = torch.cat([x] + prev_reads, dim=1)
            controller_outp, controller_state = self.controller(inp, prev_controller_state)

            # Read/Write from the list of heads
            reads = []
            heads_states = []
            for head, prev_head_state in zip(self.heads, prev_heads_states):
                if head.is_read_head():
                    r, head_state = head(controller_outp, prev_head_state)
                    reads += [r]
                else:
                    head_state = head(controller_outp, prev_head_state)
                heads_states += [head_state]

            # Generate Output
            inp2 = torch.cat([controller_outp] + reads, dim=1)
            o = F.sigmoid(self.fc(inp2))

            # Pack the current state
            state = (reads, controller_state, heads_states)

            return o, state

    # ---- ntm/aio.py ----
    class EncapsulatedNTM(nn.Module):

        def __init__(self, num_inputs, num_outputs,
                     controller_size, controller_layers, num_heads, N, M):
            super(EncapsulatedNTM, self).__init__()

            # Save args
            self.num_inputs = num_inputs
            self.num_outputs = num_outputs
            self.controller_size = controller_size
            self.controller_layers = controller_layers
            self.num_heads = num_heads
            self.N = N
            self.M = M

            # Create the NTM components
            memory = NTMMemory(N, M)
            controller = LSTMController(num_inputs + M*num_heads, controller_size, controller_layers)
            heads = nn.ModuleList([])
            for i in range(num_heads):
                heads += [
                    NTMReadHead(memory, controller_size),
                    NTMWriteHead(memory, controller_size)
                ]

            self.ntm = NTM(num_inputs, num_outputs, controller, memory, heads)
            self.memory = memory

        def init_sequence(self, batch_size):
            """Initializing the state."""
            self.batch_size = batch_size
            self.memory.reset(batch_size)
            self.previous_state = self.ntm.create_new_state(batch_size)

        def forward(self, x=None):
            if x is None:
                x = torch.zeros(self.batch_size, self.num_inputs)

            o, self.previous_state = self.ntm(x, self.previous_state)
            return o, self.previous_state

        def calculate_num_params(self):
            """Returns the total number of parameters."""
            num_params = 0
            for p in self.parameters():
                num_params += p.data.view(-1).size(0)
            return num_params

    # ---- tasks/copytask.py ----
    def dataloader(num_batches, batch_size, seq_width, min_len, max_len):
        """Generator of random sequences for the copy task."""
        for batch_num in range(num_batches):

            # All batches have the same sequence length
            seq_len = random.randint(min_len, max_len)
            seq = np.random.binomial(1, 0.5, (seq_len, batch_size, seq_width))
            seq = torch.from_numpy(seq)

            # The input includes an additional channel used for the delimiter
            inp = torch.zeros(seq_len + 1, batch_size, seq_width + 1)
            inp[:seq_len, :, :seq_width] = seq
            inp[seq_len, :, seq_width] = 1.0  # delimiter in our control channel
            outp = seq.clone()

            yield batch_num+1, inp.float(), outp.float()

    @attrs
    class CopyTaskParams(object):
        name = attrib(default="copy-task")
        controller_size = attrib(default=100, converter=int)
        controller_layers = attrib(default=1, converter=int)
        num_heads = attrib(default=1, converter=int)
        sequence_width = attrib(default=8, converter=int)
        sequence_min_len = attrib(default=1, converter=int)
        sequence_max_len = attrib(default=20, converter=int)
        memory_n = attrib(default=128, converter=int)
        memory_m = attrib(default=20, converter=int)
        num_batches = attrib(default=50000, converter=int)
        batch_size = attrib(default=1, converter=int)
        rmsprop_lr = attrib(default=1e-4, converter=float)
        rmsprop_momentum = attrib(default=0.9, converter=float)
        rmsprop_alpha = attrib(default=0.95, converter=float)

    @attrs
    class CopyTaskModelTraining(object):
        params = attrib(default=Factory(CopyTaskParams))
        net = attrib()
        dataloader = attrib()
        criterion = attrib()
        optimizer = attrib()

        @net.default
        def default_net(self):
            # We have 1 additional input for the delimiter which is passed on a
            # separate "control" channel
            net = EncapsulatedNTM(self.params.sequence_width + 1, self.params.sequence_width,
                                  self.params.controller_size, self.params.controller_layers,
                                  self.params.num_heads,
                                  self.params.memory_n, self.params.memory_m)
            return net

        @dataloader.default
        def default_dataloader(self):
            return dataloader(self.params.num_batches, self.params.batch_size,
                              self.params.sequence_width,
                              self.params.sequence_min_len, self.params.sequence_max_len)

        @criterion.default
        def default_criterion(self):
            return nn.BCELoss()

        @optimizer.default
        def default_optimizer(self):
            return optim.RMSprop(self.net.parameters(),
                                 momentum=self.params.rmsprop_momentum,
                                 alpha=self.params.rmsprop_alpha,
                                 lr=self.params.rmsprop_lr)

    return CopyTaskParams, CopyTaskModelTraining


def _ntm_train(torch):
    """train.py's clip_grads, train_batch and evaluate, as written."""

    def clip_grads(net):
        """Gradient clipping to the range [10, 10]."""
        parameters = list(filter(lambda p: p.grad is not None, net.parameters()))
        for p in parameters:
            p.grad.data.clamp_(-10, 10)

    def train_batch(net, criterion, optimizer, X, Y):
        """Trains a single batch."""
        optimizer.zero_grad()
        inp_seq_len = X.size(0)
        outp_seq_len, batch_size, _ = Y.size()

        # New sequence
        net.init_sequence(batch_size)

        # Feed the sequence + delimiter
        for i in range(inp_seq_len):
            net(X[i])

        # Read the output (no input given)
        y_out = torch.zeros(Y.size())
        for i in range(outp_seq_len):
            y_out[i], _ = net()

        loss = criterion(y_out, Y)
        loss.backward()
        clip_grads(net)
        optimizer.step()

        y_out_binarized = y_out.clone().data
        y_out_binarized.apply_(lambda x: 0 if x < 0.5 else 1)

        # The cost is the number of error bits per sequence
        cost = torch.sum(torch.abs(y_out_binarized - Y.data))

        return loss.item(), cost.item() / batch_size

    def evaluate(net, criterion, X, Y):
        """Evaluate a single batch (without training)."""
        inp_seq_len = X.size(0)
        outp_seq_len, batch_size, _ = Y.size()

        # New sequence
        net.init_sequence(batch_size)

        # Feed the sequence + delimiter
        states = []
        for i in range(inp_seq_len):
            o, state = net(X[i])
            states += [state]

        # Read the output (no input given)
        y_out = torch.zeros(Y.size())
        for i in range(outp_seq_len):
            y_out[i], state = net()
            states += [state]

        loss = criterion(y_out, Y)

        y_out_binarized = y_out.clone().data
        y_out_binarized.apply_(lambda x: 0 if x < 0.5 else 1)

        # The cost is the number of error bits per sequence
        cost = torch.sum(torch.abs(y_out_binarized - Y.data))

        result = {
            'loss': loss.data[0],
            'cost': cost / batch_size,
            'y_out': y_out,
            'y_out_binarized': y_out_binarized,
            'states': states
        }

        return result

    return train_batch, evaluate


def _program_ntm_copy_task(mod, log):
    with seeded(0):
        _ntm_copy_task(mod, log)


def _ntm_copy_task(mod, log):
    torch = SeededTorch(mod, 0)
    CopyTaskParams, CopyTaskModelTraining = _ntm(torch)
    train_batch, evaluate = _ntm_train(torch)

    params = CopyTaskParams(controller_size="6", sequence_width=3, sequence_min_len=1,
                            sequence_max_len=3, memory_n=5, memory_m=4, num_batches=3,
                            batch_size=2, rmsprop_lr=1e-2)
    model = CopyTaskModelTraining(params=params)
    net = model.net
    init_params(mod, net, 1)
    rs = np.random.RandomState(2)
    with mod.no_grad():
        for name, b in net.named_buffers():
            b.copy_(mod.tensor(rs.uniform(-0.3, 0.3, tuple(b.shape)).astype(np.float32)))
    # the read bias was registered from ``.data``: the list entry is the same storage
    log("init_r aliases the buffer", net.ntm.init_r[0])
    log("buffers", [n for n, _ in net.named_buffers()])
    log("parameters", [(n, tuple(p.shape)) for n, p in net.named_parameters()])
    log("num params", net.calculate_num_params())
    log("memory shared", net.ntm.heads[0].memory is net.memory is net.ntm.heads[1].memory)

    for batch_num, x, y in model.dataloader:
        loss, cost = train_batch(model.net, model.criterion, model.optimizer, x, y)
        log("batch", batch_num)
        log("loss", loss)
        log("cost", cost)
        log("memory", net.memory.memory)
    for name, p in net.named_parameters():
        log(name, p)
        log(name + ".grad", p.grad)

    _, x, y = next(model.default_dataloader())
    try:
        evaluate(net, model.criterion, x, y)
    except IndexError as e:
        log("evaluate", type(e))
        log("message", str(e))
    # the rest of evaluate, past the old indexing
    with mod.no_grad():
        net.init_sequence(x.size(1))
        for i in range(x.size(0)):
            net(x[i])
        y_out = torch.zeros(y.size())
        for i in range(y.size(0)):
            y_out[i], state = net()
    log("y_out", y_out)
    log("read weights", state[2][0])
    log("controller state", list(state[1]))


def test_pytorch_ntm_copy_task():
    run_both(_program_ntm_copy_task)
