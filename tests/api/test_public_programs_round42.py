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
- ronghuaiyang/arcface-pytorch at 47ace80 (face recognition with margin softmax heads):
  ``models/metrics.py`` (``ArcMarginProduct`` with and without ``easy_margin``: ``F.linear`` of
  ``F.normalize``d features and weights, ``torch.where`` on the margin threshold, a one-hot made by
  ``scatter_`` and the in-place ``output *= self.s``; ``AddMarginProduct``; ``SphereProduct``: the
  deprecated ``nn.init.xavier_uniform``, the multiple-angle polynomials, ``cos_theta.data.acos()``,
  ``(-1.0) ** k`` of a tensor, ``torch.norm(input, 2, 1)``), ``models/focal_loss.py``,
  ``models/resnet.py`` (``IRBlock`` with ``PReLU`` and ``SEBlock``, whose ``channel // 16`` is 0 at
  these widths: zero-width ``Linear`` layers and their init warning; ``ResNetFace``'s init loop),
  ``train.py`` (``DataParallel`` on CPU, SGD/Adam over two parameter groups with weight decay,
  ``StepLR.step()`` called before ``optimizer.step()``: torch's warning, the accuracy by numpy
  ``argmax``, ``save_model``) and ``test.py`` (the ``module.``-prefixed state dict loaded into a
  new ``DataParallel``, ``get_featurs`` with flipped images, ``test_performance``).
- chenmingxiang110/Growing-Neural-Cellular-Automata at 2a84e16 (Mordvintsev et al. 2020):
  ``lib/CAModel.py`` (perception by depthwise ``F.conv2d`` with rotated Sobel kernels from numpy
  ``repeat``ed over channels, ``torch.cat`` with the state, ``transpose(1, 3)`` around the per-cell
  ``Linear`` layers, the stochastic update mask ``torch.rand([...]) > fire_rate``, the living masks
  from ``F.max_pool2d`` on a slice of a transposed tensor combined with ``&``, ``fc1``'s zeroed
  weight under ``no_grad``), ``lib/utils_vis.py`` (``SamplePool`` sampling and committing numpy
  slots, ``make_seed``, ``make_circle_masks``, ``to_rgb``, ``get_living_mask``) and
  ``training.ipynb``'s "Regenerating" run (pool batches ranked by ``torch.mean`` over a list of
  dims and ``argsort()[::-1]``, damage, ``F.mse_loss`` against a broadcast target and its
  warning, Adam with ``betas=(0.5, 0.5)``, ``ExponentialLR``).
- ermongroup/ncsn at 7f27f4a (score matching, Song & Ermon 2019): ``losses/sliced_sm.py`` (every
  sliced score matching loss: ``autograd.grad(..., create_graph=True)`` twice, then ``backward``
  through both, Rademacher/sphere/Gaussian projections, particles by ``unsqueeze(0).expand(...)
  .contiguous().view``, ``sigmas[labels]`` noise levels), ``losses/dsm.py`` (denoising score
  matching, plain and annealed), ``models/gmm.py`` (``GaussianDist`` with ``torch.range``'s
  deprecation warning and an ``ill_conditioned`` covariance written through a slice,
  ``GMMDistAnneal.score`` under ``enable_grad`` inside ``no_grad``, ``GMMDist``, ``Square``'s
  writes through a boolean mask and its negation, the ``GMM`` energy with ``F.log_softmax``'s
  implicit-dim warning and ``log_prob += ...``, ``Gaussian``) and ``runners/toy_runner.py``
  (``ToyRunner.train``'s loop, ``Ring.log_prob``, ``langevin_dynamics``,
  ``anneal_langevin_dynamics``, ``fisher_information``).

Changes, the same on both sides: sizes are tiny; ``attrib(convert=...)`` (removed from attrs) is
``attrib(converter=...)``; ``torch.randn`` draws come from one seeded numpy stream
(``parity.SeededTorch``), parameters and the memory bias are overwritten from numpy after
construction, and Python's/numpy's global streams are seeded for the data generator. ArcFace:
widths 4-16 instead of 64-512 on 16 x 16 images; ``device='cuda'`` (whose ``AssertionError`` on a
CPU build is logged) is the tensors' own device; the dropout has p=0 (the mask streams differ); the
SGD learning rate is 0.01 (0.1 with ``s=30`` amplifies float rounding tenfold a step); the data set
and the LFW images are seeded numpy arrays and the pair list a Python list. Cellular automata: 8
channels, 16 hidden units, an 8 x 8 seeded RGBA target padded by 2, a pool of 8, batches of 4, 3
to 5 CA steps, 5 iterations; the emoji file and the saved model are a seeded array and numpy
weights; the matplotlib display is the logged ``to_rgb`` arrays; ``torch.rand`` draws come from a
seeded numpy stream. NCSN: 16 hidden units, batches of 8 (training) and 6, 3 steps, a few Langevin
steps; ``torch.randn_like``/``rand``/``multinomial`` draws come from one seeded numpy stream; the
noise-conditional losses run on a small MLP with an embedding of the noise level instead of
``CondRefineNetDilated``; the plots are left out.
"""
import random
import warnings
from types import SimpleNamespace

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
    # RMSprop divides each step by the root of a running mean of squared gradients: a weight
    # whose gradients are near zero moves by lr whatever their size, so the last-bit rounding of
    # the CPU's kernels (AVX-512 against AVX2) shows as 2.2e-6 in a parameter after three batches
    run_both(_program_ntm_copy_task, atol=1e-5)


# ---- ronghuaiyang/arcface-pytorch -----------------------------------------------------------------
def _arcface(torch):
    """models/metrics.py, models/focal_loss.py and the IRBlock/SEBlock/ResNetFace of
    models/resnet.py, as written but for the widths (64/128/256/512 are 4/8/16/16 here, ``fc5``
    sized for 16 x 16 inputs) and the ``device='cuda'`` of the one-hot tensors (``cosine.device``,
    the commented-out alternative in the file)."""
    import math
    nn = torch.nn
    F = torch.nn.functional
    Parameter = torch.nn.Parameter

    # ---- models/metrics.py ----
    class ArcMarginProduct(nn.Module):
        r"""Implement of large margin arc distance: cos(theta + m)"""
        def __init__(self, in_features, out_features, s=30.0, m=0.50, easy_margin=False):
            super(ArcMarginProduct, self).__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.s = s
            self.m = m
            self.weight = Parameter(torch.FloatTensor(out_features, in_features))
            nn.init.xavier_uniform_(self.weight)

            self.easy_margin = easy_margin
            self.cos_m = math.cos(m)
            self.sin_m = math.sin(m)
            self.th = math.cos(math.pi - m)
            self.mm = math.sin(math.pi - m) * m

        def forward(self, input, label):
            # --------------------------- cos(theta) & phi(theta) ---------------------------
            cosine = F.linear(F.normalize(input), F.normalize(self.weight))
            sine = torch.sqrt(1.0 - torch.pow(cosine, 2))
            phi = cosine * self.cos_m - sine * self.sin_m
            if self.easy_margin:
                phi = torch.where(cosine > 0, phi, cosine)
            else:
                phi = torch.where(cosine > self.th, phi, cosine - self.mm)
            # --------------------------- convert label to one-hot ---------------------------
            one_hot = torch.zeros(cosine.size(), device=cosine.device)
            one_hot.scatter_(1, label.view(-1, 1).long(), 1)
            output = (one_hot * phi) + ((1.0 - one_hot) * cosine)
            output *= self.s

            return output

    class AddMarginProduct(nn.Module):
        r"""Implement of large margin cosine distance: cos(theta) - m"""

        def __init__(self, in_features, out_features, s=30.0, m=0.40):
            super(AddMarginProduct, self).__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.s = s
            self.m = m
            self.weight = Parameter(torch.FloatTensor(out_features, in_features))
            nn.init.xavier_uniform_(self.weight)

        def forward(self, input, label):
            cosine = F.linear(F.normalize(input), F.normalize(self.weight))
            phi = cosine - self.m
            one_hot = torch.zeros(cosine.size(), device=cosine.device)
            one_hot.scatter_(1, label.view(-1, 1).long(), 1)
            output = (one_hot * phi) + ((1.0 - one_hot) * cosine)
            output *= self.s

            return output

        def __repr__(self):
            return self.__class__.__name__ + '(' \
                   + 'in_features=' + str(self.in_features) \
                   + ', out_features=' + str(self.out_features) \
                   + ', s=' + str(self.s) \
                   + ', m=' + str(self.m) + ')'

    class SphereProduct(nn.Module):
        r"""Implement of large margin cosine distance: cos(m*theta)"""
        def __init__(self, in_features, out_features, m=4):
            super(SphereProduct, self).__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.m = m
            self.base = 1000.0
            self.gamma = 0.12
            self.power = 1
            self.LambdaMin = 5.0
            self.iter = 0
            self.weight = Parameter(torch.FloatTensor(out_features, in_features))
            nn.init.xavier_uniform(self.weight)

            # duplication formula
            self.mlambda = [
                lambda x: x ** 0,
                lambda x: x ** 1,
                lambda x: 2 * x ** 2 - 1,
                lambda x: 4 * x ** 3 - 3 * x,
                lambda x: 8 * x ** 4 - 8 * x ** 2 + 1,
                lambda x: 16 * x ** 5 - 20 * x ** 3 + 5 * x
            ]

        def forward(self, input, label):
            # lambda = max(lambda_min,base*(1+gamma*iteration)^(-power))
            self.iter += 1
            self.lamb = max(self.LambdaMin, self.base * (1 + self.gamma * self.iter) ** (-1 * self.power))

            cos_theta = F.linear(F.normalize(input), F.normalize(self.weight))
            cos_theta = cos_theta.clamp(-1, 1)
            cos_m_theta = self.mlambda[self.m](cos_theta)
            theta = cos_theta.data.acos()
            k = (self.m * theta / 3.14159265).floor()
            phi_theta = ((-1.0) ** k) * cos_m_theta - 2 * k
            NormOfFeature = torch.norm(input, 2, 1)

            one_hot = torch.zeros(cos_theta.size())
            one_hot = one_hot.cuda() if cos_theta.is_cuda else one_hot
            one_hot.scatter_(1, label.view(-1, 1), 1)

            output = (one_hot * (phi_theta - cos_theta) / (1 + self.lamb)) + cos_theta
            output *= NormOfFeature.view(-1, 1)

            return output

        def __repr__(self):
            return self.__class__.__name__ + '(' \
                   + 'in_features=' + str(self.in_features) \
                   + ', out_features=' + str(self.out_features) \
                   + ', m=' + str(self.m) + ')'

    # ---- models/focal_loss.py ----
    class FocalLoss(nn.Module):

        def __init__(self, gamma=0, eps=1e-7):
            super(FocalLoss, self).__init__()
            self.gamma = gamma
            self.eps = eps
            self.ce = torch.nn.CrossEntropyLoss()

        def forward(self, input, target):
            logp = self.ce(input, target)
            p = torch.exp(-logp)
            loss = (1 - p) ** self.gamma * logp
            return loss.mean()

    # ---- models/resnet.py ----
    def conv3x3(in_planes, out_planes, stride=1):
        """3x3 convolution with padding"""
        return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride,
                         padding=1, bias=False)

    class IRBlock(nn.Module):
        expansion = 1

        def __init__(self, inplanes, planes, stride=1, downsample=None, use_se=True):
            super(IRBlock, self).__init__()
            self.bn0 = nn.BatchNorm2d(inplanes)
            self.conv1 = conv3x3(inplanes, inplanes)
            self.bn1 = nn.BatchNorm2d(inplanes)
            self.prelu = nn.PReLU()
            self.conv2 = conv3x3(inplanes, planes, stride)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = downsample
            self.stride = stride
            self.use_se = use_se
            if self.use_se:
                self.se = SEBlock(planes)

        def forward(self, x):
            residual = x
            out = self.bn0(x)
            out = self.conv1(out)
            out = self.bn1(out)
            out = self.prelu(out)

            out = self.conv2(out)
            out = self.bn2(out)
            if self.use_se:
                out = self.se(out)

            if self.downsample is not None:
                residual = self.downsample(x)

            out += residual
            out = self.prelu(out)

            return out

    class SEBlock(nn.Module):
        def __init__(self, channel, reduction=16):
            super(SEBlock, self).__init__()
            self.avg_pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Sequential(
                    nn.Linear(channel, channel // reduction),
                    nn.PReLU(),
                    nn.Linear(channel // reduction, channel),
                    nn.Sigmoid()
            )

        def forward(self, x):
            b, c, _, _ = x.size()
            y = self.avg_pool(x).view(b, c)
            y = self.fc(y).view(b, c, 1, 1)
            return x * y

    class ResNetFace(nn.Module):
        def __init__(self, block, layers, use_se=True):
            self.inplanes = 4
            self.use_se = use_se
            super(ResNetFace, self).__init__()
            self.conv1 = nn.Conv2d(1, 4, kernel_size=3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(4)
            self.prelu = nn.PReLU()
            self.maxpool = nn.MaxPool2d(kernel_size=2, stride=2)
            self.layer1 = self._make_layer(block, 4, layers[0])
            self.layer2 = self._make_layer(block, 8, layers[1], stride=2)
            self.layer3 = self._make_layer(block, 16, layers[2], stride=2)
            self.layer4 = self._make_layer(block, 16, layers[3], stride=2)
            self.bn4 = nn.BatchNorm2d(16)
            self.dropout = nn.Dropout()
            self.fc5 = nn.Linear(16 * 1 * 1, 16)
            self.bn5 = nn.BatchNorm1d(16)

            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.xavier_normal_(m.weight)
                elif isinstance(m, nn.BatchNorm2d) or isinstance(m, nn.BatchNorm1d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.xavier_normal_(m.weight)
                    nn.init.constant_(m.bias, 0)

        def _make_layer(self, block, planes, blocks, stride=1):
            downsample = None
            if stride != 1 or self.inplanes != planes * block.expansion:
                downsample = nn.Sequential(
                    nn.Conv2d(self.inplanes, planes * block.expansion,
                              kernel_size=1, stride=stride, bias=False),
                    nn.BatchNorm2d(planes * block.expansion),
                )
            layers = []
            layers.append(block(self.inplanes, planes, stride, downsample, use_se=self.use_se))
            self.inplanes = planes
            for i in range(1, blocks):
                layers.append(block(self.inplanes, planes, use_se=self.use_se))

            return nn.Sequential(*layers)

        def forward(self, x):
            x = self.conv1(x)
            x = self.bn1(x)
            x = self.prelu(x)
            x = self.maxpool(x)

            x = self.layer1(x)
            x = self.layer2(x)
            x = self.layer3(x)
            x = self.layer4(x)
            x = self.bn4(x)
            x = self.dropout(x)
            x = x.view(x.size(0), -1)
            x = self.fc5(x)
            x = self.bn5(x)

            return x

    def resnet_face18(use_se=True, **kwargs):
        model = ResNetFace(IRBlock, [2, 2, 2, 2], use_se=use_se, **kwargs)
        return model

    return SimpleNamespace(ArcMarginProduct=ArcMarginProduct, AddMarginProduct=AddMarginProduct,
                           SphereProduct=SphereProduct, FocalLoss=FocalLoss,
                           resnet_face18=resnet_face18)


def _arcface_test_py(torch, images_by_path):
    """test.py's get_featurs, get_feature_dict, cosin_metric, cal_accuracy and test_performance,
    as written but for ``load_image`` (the cv2 read is a dict look-up) and the device (cpu)."""

    def load_image(img_path):
        image = images_by_path.get(img_path)
        if image is None:
            return None
        image = np.dstack((image, np.fliplr(image)))
        image = image.transpose((2, 0, 1))
        image = image[:, np.newaxis, :, :]
        image = image.astype(np.float32, copy=False)
        image -= 127.5
        image /= 127.5
        return image

    def get_featurs(model, test_list, batch_size=10):
        images = None
        features = None
        cnt = 0
        for i, img_path in enumerate(test_list):
            image = load_image(img_path)
            if image is None:
                print('read {} error'.format(img_path))

            if images is None:
                images = image
            else:
                images = np.concatenate((images, image), axis=0)

            if images.shape[0] % batch_size == 0 or i == len(test_list) - 1:
                cnt += 1

                data = torch.from_numpy(images)
                data = data.to(torch.device("cpu"))
                output = model(data)
                output = output.data.cpu().numpy()

                fe_1 = output[::2]
                fe_2 = output[1::2]
                feature = np.hstack((fe_1, fe_2))

                if features is None:
                    features = feature
                else:
                    features = np.vstack((features, feature))

                images = None

        return features, cnt

    def get_feature_dict(test_list, features):
        fe_dict = {}
        for i, each in enumerate(test_list):
            fe_dict[each] = features[i]
        return fe_dict

    def cosin_metric(x1, x2):
        return np.dot(x1, x2) / (np.linalg.norm(x1) * np.linalg.norm(x2))

    def cal_accuracy(y_score, y_true):
        y_score = np.asarray(y_score)
        y_true = np.asarray(y_true)
        best_acc = 0
        best_th = 0
        for i in range(len(y_score)):
            th = y_score[i]
            y_test = (y_score >= th)
            acc = np.mean((y_test == y_true).astype(int))
            if acc > best_acc:
                best_acc = acc
                best_th = th

        return (best_acc, best_th)

    def test_performance(fe_dict, pairs):
        sims = []
        labels = []
        for pair in pairs:
            splits = pair.split()
            fe_1 = fe_dict[splits[0]]
            fe_2 = fe_dict[splits[1]]
            label = int(splits[2])
            sim = cosin_metric(fe_1, fe_2)

            sims.append(sim)
            labels.append(label)

        acc, th = cal_accuracy(sims, labels)
        return acc, th

    return get_featurs, get_feature_dict, test_performance


def _program_arcface(mod, log):
    import os
    import tempfile
    torch = mod
    nn = torch.nn
    data = torch.utils.data
    m = _arcface(torch)
    rs = np.random.RandomState(0)
    num_classes, batch = 5, 4
    images = rs.uniform(-1, 1, (12, 1, 16, 16)).astype(np.float32)
    labels = rs.randint(0, num_classes, 12)
    train_dataset = data.TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))
    trainloader = data.DataLoader(train_dataset, batch_size=batch, shuffle=False, num_workers=0)
    print('{} train iters per epoch:'.format(len(trainloader)))

    try:  # the metrics' one-hot tensors as written: device='cuda'
        torch.zeros(2, 3, device='cuda')
    except AssertionError as e:
        log("cuda one_hot", type(e))

    runs = [("focal_loss", "arc_margin", False, "sgd"), ("ce", "arc_margin", True, "adam"),
            ("focal_loss", "add_margin", False, "sgd"), ("ce", "sphere", False, "sgd")]
    for loss_name, metric, easy_margin, opt_name in runs:
        if loss_name == 'focal_loss':
            criterion = m.FocalLoss(gamma=2)
        else:
            criterion = torch.nn.CrossEntropyLoss()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = m.resnet_face18(use_se=True)
            if metric == 'add_margin':
                metric_fc = m.AddMarginProduct(16, num_classes, s=30, m=0.35)
            elif metric == 'arc_margin':
                metric_fc = m.ArcMarginProduct(16, num_classes, s=30, m=0.5, easy_margin=easy_margin)
            else:
                metric_fc = m.SphereProduct(16, num_classes, m=4)
        log("init warnings", sorted({(w.category.__name__, str(w.message)[:40]) for w in caught}))
        init_params(torch, model, 1, scale=0.5)
        init_params(torch, metric_fc, 2)
        # the stand-in for the stream of dropout masks: none (torch's and tracegrad's differ)
        model.dropout.p = 0.0
        print(model)
        print(metric_fc)
        model.to(torch.device("cpu"))
        model = nn.DataParallel(model)
        metric_fc.to(torch.device("cpu"))
        metric_fc = nn.DataParallel(metric_fc)

        if opt_name == 'sgd':
            optimizer = torch.optim.SGD([{'params': model.parameters()}, {'params': metric_fc.parameters()}],
                                        lr=1e-2, weight_decay=5e-4)
        else:
            optimizer = torch.optim.Adam([{'params': model.parameters()}, {'params': metric_fc.parameters()}],
                                         lr=1e-2, weight_decay=5e-4)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.1)

        for i in range(2):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                scheduler.step()
            log("scheduler warnings", [w.category.__name__ for w in caught])

            model.train()
            for ii, batch_data in enumerate(trainloader):
                data_input, label = batch_data
                data_input = data_input.to(torch.device("cpu"))
                label = label.to(torch.device("cpu")).long()
                feature = model(data_input)
                output = metric_fc(feature, label)
                loss = criterion(output, label)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()

                output = output.data.cpu().numpy()
                output = np.argmax(output, axis=1)
                label = label.data.cpu().numpy()
                acc = np.mean((output == label).astype(int))
                print('train epoch {} iter {} loss {} acc {}'.format(i, ii, round(loss.item(), 4), acc))
                log("loss", loss)
                log("output", output)
        log("lr", [g["lr"] for g in optimizer.param_groups])
        # not bn4.bias nor fc5.bias: bn5 (training mode) removes any per-channel shift, so their
        # gradients are float noise around zero, which Adam scales into full-size steps
        for name, p in model.named_parameters():
            if name.startswith(("module.layer4.1.bn2", "module.fc5.weight", "module.bn5")):
                log(name, p)
        for name, p in metric_fc.named_parameters():
            log(name, p)
        log("bn5 running_var", model.module.bn5.running_var)

    # save_model, then test.py: DataParallel's state dict (``module.`` keys) loaded into a new one
    with tempfile.TemporaryDirectory() as tmp:
        save_name = os.path.join(tmp, 'resnet18' + '_' + str(1) + '.pth')
        torch.save(model.state_dict(), save_name)
        log("keys", list(model.state_dict())[:4])
        model2 = nn.DataParallel(m.resnet_face18(use_se=True))
        model2.load_state_dict(torch.load(save_name))
    model2.eval()
    get_featurs, get_feature_dict, test_performance = _arcface_test_py(
        torch, {f"p{i}.jpg": rs.uniform(0, 255, (16, 16)).astype(np.float32) for i in range(5)})
    identity_list = [f"p{i}.jpg" for i in range(5)]
    features, cnt = get_featurs(model2, identity_list, batch_size=4)
    print(features.shape, cnt)
    log("features", features)
    fe_dict = get_feature_dict(identity_list, features)
    pairs = ["p0.jpg p1.jpg 1", "p1.jpg p2.jpg 0", "p3.jpg p4.jpg 1", "p0.jpg p4.jpg 0"]
    acc, th = test_performance(fe_dict, pairs)
    # the briefly trained model maps these five random images to nearly one feature, so the
    # pairs' cosine similarities sit within a few float32 ulps of 1 and the threshold sweep's
    # accuracy is decided by rounding (a CI machine got 0.75 against torch's 0.5): compare the
    # similarities with the log's tolerance, and the accuracy only where their gaps decide it
    sims = [float(np.dot(fe_dict[a], fe_dict[b])
                  / (np.linalg.norm(fe_dict[a]) * np.linalg.norm(fe_dict[b])))
            for a, b, _ in (pair.split() for pair in pairs)]
    log("lfw sims", np.asarray(sims))
    gaps = np.diff(np.sort(sims))
    if gaps.size and gaps.min() > 1e-4:
        log("lfw acc", acc)
        log("lfw th", th)


def test_arcface_pytorch_margins_focal_loss_train_and_lfw_test():
    run_both(_program_arcface)


# ---- chenmingxiang110/Growing-Neural-Cellular-Automata --------------------------------------------
class _ListSizeSeededTorch(SeededTorch):
    """``parity.SeededTorch`` whose ``rand`` also takes the size as one list, as
    ``CAModel.update`` calls it (``torch.rand([n, h, w, 1])``)."""

    def rand(self, *size):
        if len(size) == 1 and isinstance(size[0], (list, tuple)):
            size = tuple(size[0])
        return super().rand(*size)


def _nca(torch):
    """lib/CAModel.py and lib/utils_vis.py, as written."""
    nn = torch.nn
    F = torch.nn.functional

    # ---- lib/CAModel.py ----
    class CAModel(nn.Module):
        def __init__(self, channel_n, fire_rate, device, hidden_size=128):
            super(CAModel, self).__init__()

            self.device = device
            self.channel_n = channel_n

            self.fc0 = nn.Linear(channel_n*3, hidden_size)
            self.fc1 = nn.Linear(hidden_size, channel_n, bias=False)
            with torch.no_grad():
                self.fc1.weight.zero_()

            self.fire_rate = fire_rate
            self.to(self.device)

        def alive(self, x):
            return F.max_pool2d(x[:, 3:4, :, :], kernel_size=3, stride=1, padding=1) > 0.1

        def perceive(self, x, angle):

            def _perceive_with(x, weight):
                conv_weights = torch.from_numpy(weight.astype(np.float32)).to(self.device)
                conv_weights = conv_weights.view(1,1,3,3).repeat(self.channel_n, 1, 1, 1)
                return F.conv2d(x, conv_weights, padding=1, groups=self.channel_n)

            dx = np.outer([1, 2, 1], [-1, 0, 1]) / 8.0  # Sobel filter
            dy = dx.T
            c = np.cos(angle*np.pi/180)
            s = np.sin(angle*np.pi/180)
            w1 = c*dx-s*dy
            w2 = s*dx+c*dy

            y1 = _perceive_with(x, w1)
            y2 = _perceive_with(x, w2)
            y = torch.cat((x,y1,y2),1)
            return y

        def update(self, x, fire_rate, angle):
            x = x.transpose(1,3)
            pre_life_mask = self.alive(x)

            dx = self.perceive(x, angle)
            dx = dx.transpose(1,3)
            dx = self.fc0(dx)
            dx = F.relu(dx)
            dx = self.fc1(dx)

            if fire_rate is None:
                fire_rate=self.fire_rate
            stochastic = torch.rand([dx.size(0),dx.size(1),dx.size(2),1])>fire_rate
            stochastic = stochastic.float().to(self.device)
            dx = dx * stochastic

            x = x+dx.transpose(1,3)

            post_life_mask = self.alive(x)
            life_mask = (pre_life_mask & post_life_mask).float()
            x = x * life_mask
            return x.transpose(1,3)

        def forward(self, x, steps=1, fire_rate=None, angle=0.0):
            for step in range(steps):
                x = self.update(x, fire_rate, angle)
            return x

    # ---- lib/utils_vis.py ----
    class SamplePool:
        def __init__(self, *, _parent=None, _parent_idx=None, **slots):
            self._parent = _parent
            self._parent_idx = _parent_idx
            self._slot_names = slots.keys()
            self._size = None
            for k, v in slots.items():
                if self._size is None:
                    self._size = len(v)
                assert self._size == len(v)
                setattr(self, k, np.asarray(v))

        def sample(self, n):
            idx = np.random.choice(self._size, n, False)
            batch = {k: getattr(self, k)[idx] for k in self._slot_names}
            batch = SamplePool(**batch, _parent=self, _parent_idx=idx)
            return batch

        def commit(self):
            for k in self._slot_names:
                getattr(self._parent, k)[self._parent_idx] = getattr(self, k)

    def to_alpha(x):
        return np.clip(x[..., 3:4], 0, 0.9999)

    def to_rgb(x):
        # assume rgb premultiplied by alpha
        rgb, a = x[..., :3], to_alpha(x)
        return np.clip(1.0-a+rgb, 0, 0.9999)

    def get_living_mask(x):
        return nn.MaxPool2d(3, stride=1, padding=1)(x[:, 3:4, :, :])>0.1

    def make_seed(shape, n_channels):
        seed = np.zeros([shape[0], shape[1], n_channels], np.float32)
        seed[shape[0]//2, shape[1]//2, 3:] = 1.0
        return seed

    def make_circle_masks(n, h, w):
        x = np.linspace(-1.0, 1.0, w)[None, None, :]
        y = np.linspace(-1.0, 1.0, h)[None, :, None]
        center = np.random.random([2, n, 1, 1])*1.0-0.5
        r = np.random.random([n, 1, 1])*0.3+0.1
        x, y = (x-center[0])/r, (y-center[1])/r
        mask = (x*x+y*y < 1.0).astype(np.float32)
        return mask

    return SimpleNamespace(CAModel=CAModel, SamplePool=SamplePool, to_rgb=to_rgb,
                           get_living_mask=get_living_mask, make_seed=make_seed,
                           make_circle_masks=make_circle_masks)


def _program_nca(mod, log):
    with seeded(0):
        _nca_training(mod, log)


def _nca_training(mod, log):
    """training.ipynb's set-up and training cells (the "Regenerating" experiment)."""
    torch = _ListSizeSeededTorch(mod, 0)
    optim = torch.optim
    F = torch.nn.functional
    m = _nca(torch)
    device = torch.device("cpu")

    CHANNEL_N = 8         # Number of CA state channels
    TARGET_PADDING = 2    # Number of pixels used to pad the target image border
    lr = 2e-3
    lr_gamma = 0.9999
    betas = (0.5, 0.5)
    n_epoch = 4
    BATCH_SIZE = 4
    POOL_SIZE = 8
    CELL_FIRE_RATE = 0.5
    EXPERIMENT_TYPE = "Regenerating"
    EXPERIMENT_MAP = {"Growing": 0, "Persistent": 1, "Regenerating": 2}
    EXPERIMENT_N = EXPERIMENT_MAP[EXPERIMENT_TYPE]
    USE_PATTERN_POOL = [0, 1, 1][EXPERIMENT_N]
    DAMAGE_N = [0, 0, 1][EXPERIMENT_N]  # Number of patterns to damage in a batch

    # load_emoji stand-in: a seeded 8 x 8 RGBA image with premultiplied alpha
    rs = np.random.RandomState(5)
    alpha = (rs.uniform(0, 1, (8, 8, 1)) > 0.4).astype(np.float32)
    target_img = np.concatenate([rs.uniform(0, 1, (8, 8, 3)).astype(np.float32) * alpha, alpha], -1)

    p = TARGET_PADDING
    pad_target = np.pad(target_img, [(p, p), (p, p), (0, 0)])
    h, w = pad_target.shape[:2]
    pad_target = np.expand_dims(pad_target, axis=0)
    pad_target = torch.from_numpy(pad_target.astype(np.float32)).to(device)

    seed = m.make_seed((h, w), CHANNEL_N)
    pool = m.SamplePool(x=np.repeat(seed[None, ...], POOL_SIZE, 0))
    batch = pool.sample(BATCH_SIZE).x

    ca = m.CAModel(CHANNEL_N, CELL_FIRE_RATE, device, hidden_size=16).to(device)
    log("fc1 zeroed", ca.fc1.weight)
    init_params(mod, ca, 6, scale=0.2)   # stands in for ca.load_state_dict(torch.load(model_path))

    optimizer = optim.Adam(ca.parameters(), lr=lr, betas=betas)
    scheduler = optim.lr_scheduler.ExponentialLR(optimizer, lr_gamma)

    loss_log = []

    def train(x, target, steps, optimizer, scheduler):
        x = ca(x, steps=steps)
        loss = F.mse_loss(x[:, :, :, :4], target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        return x, loss

    def loss_f(x, target):
        return torch.mean(torch.pow(x[..., :4]-target, 2), [-2,-3,-1])

    for i in range(n_epoch+1):
        if USE_PATTERN_POOL:
            batch = pool.sample(BATCH_SIZE)
            x0 = torch.from_numpy(batch.x.astype(np.float32)).to(device)
            loss_rank = loss_f(x0, pad_target).detach().cpu().numpy().argsort()[::-1]
            x0 = batch.x[loss_rank]
            x0[:1] = seed
            if DAMAGE_N:
                damage = 1.0-m.make_circle_masks(DAMAGE_N, h, w)[..., None]
                x0[-DAMAGE_N:] *= damage
        else:
            x0 = np.repeat(seed[None, ...], BATCH_SIZE, 0)
        x0 = torch.from_numpy(x0.astype(np.float32)).to(device)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x, loss = train(x0, pad_target, np.random.randint(3, 6), optimizer, scheduler)
        # mse_loss of a (4, ...) batch against the (1, ...) target: torch's broadcasting warning
        log("warnings", [(w.category.__name__, str(w.message)) for w in caught])

        if USE_PATTERN_POOL:
            batch.x[:] = x.detach().cpu().numpy()
            batch.commit()

        step_i = len(loss_log)
        loss_log.append(loss.item())

        if step_i % 2 == 0:
            print(step_i, "loss =", loss.item())
            log("rgb", m.to_rgb(x.detach().cpu().numpy()))
        log("loss", loss)
    log("pool", pool.x)
    log("lr", scheduler.get_last_lr())
    for name, p in ca.named_parameters():
        log(name, p)
        log(name + ".grad", p.grad)
    # a rotated perception grid and the living mask of the final states
    with torch.no_grad():
        y = ca(torch.from_numpy(pool.x[:2]), steps=2, fire_rate=0.0, angle=30.0)
    log("rotated", y)
    log("living", m.get_living_mask(y.transpose(1, 3)))


def test_growing_neural_cellular_automata_regenerating():
    run_both(_program_nca)


# ---- ermongroup/ncsn ------------------------------------------------------------------------------
class _NcsnSeededTorch(SeededTorch):
    """``parity.SeededTorch`` with ``multinomial`` (``GMMDist.sample``'s mixture draw) from the
    same seeded numpy stream."""

    def multinomial(self, probs, n, replacement=False):
        p = probs.detach().numpy().astype(np.float64)
        return self._mod.tensor(self._rs.choice(len(p), n, replace=replacement, p=p / p.sum()))


def _ncsn(torch):
    """losses/sliced_sm.py, losses/dsm.py, models/gmm.py (``GaussianDist``, ``GMMDistAnneal``,
    ``GMMDist``, ``Square``, ``GMM``, ``Gaussian``) and runners/toy_runner.py's ``Ring``,
    ``langevin_dynamics``, ``anneal_langevin_dynamics`` and ``fisher_information``, as written."""
    nn = torch.nn
    F = torch.nn.functional
    autograd = torch.autograd
    MultivariateNormal = torch.distributions.MultivariateNormal
    Normal = torch.distributions.Normal

    # ---- losses/sliced_sm.py ----
    def single_sliced_score_matching(energy_net, samples, noise=None, detach=False, noise_type='radermacher'):
        samples.requires_grad_(True)
        if noise is None:
            vectors = torch.randn_like(samples)
            if noise_type == 'radermacher':
                vectors = vectors.sign()
            elif noise_type == 'sphere':
                vectors = vectors / torch.norm(vectors, dim=-1, keepdim=True) * np.sqrt(vectors.shape[-1])
            elif noise_type == 'gaussian':
                pass
            else:
                raise ValueError("Noise type not implemented")
        else:
            vectors = noise

        logp = -energy_net(samples).sum()
        grad1 = autograd.grad(logp, samples, create_graph=True)[0]
        gradv = torch.sum(grad1 * vectors)
        loss1 = torch.sum(grad1 * vectors, dim=-1) ** 2 * 0.5
        if detach:
            loss1 = loss1.detach()
        grad2 = autograd.grad(gradv, samples, create_graph=True)[0]
        loss2 = torch.sum(vectors * grad2, dim=-1)
        if detach:
            loss2 = loss2.detach()

        loss = (loss1 + loss2).mean()
        return loss, grad1, grad2

    def partial_sliced_score_matching(energy_net, samples, noise=None, detach=False, noise_type='radermacher'):
        samples.requires_grad_(True)
        if noise is None:
            vectors = torch.randn_like(samples)
            if noise_type == 'radermacher':
                vectors = vectors.sign()
            elif noise_type == 'gaussian':
                pass
            else:
                raise ValueError("Noise type not implemented")
        else:
            vectors = noise

        logp = -energy_net(samples).sum()
        grad1 = autograd.grad(logp, samples, create_graph=True)[0]
        gradv = torch.sum(grad1 * vectors)
        loss1 = torch.norm(grad1, dim=-1) ** 2 * 0.5
        if detach:
            loss1 = loss1.detach()
        grad2 = autograd.grad(gradv, samples, create_graph=True)[0]
        loss2 = torch.sum(vectors * grad2, dim=-1)
        if detach:
            loss2 = loss2.detach()

        loss = (loss1 + loss2).mean()
        return loss, grad1, grad2

    def sliced_score_matching(energy_net, samples, n_particles=1):
        dup_samples = samples.unsqueeze(0).expand(n_particles, *samples.shape).contiguous().view(-1, *samples.shape[1:])
        dup_samples.requires_grad_(True)
        vectors = torch.randn_like(dup_samples)
        vectors = vectors / torch.norm(vectors, dim=-1, keepdim=True)

        logp = -energy_net(dup_samples).sum()
        grad1 = autograd.grad(logp, dup_samples, create_graph=True)[0]
        gradv = torch.sum(grad1 * vectors)
        loss1 = torch.sum(grad1 * vectors, dim=-1) ** 2 * 0.5
        grad2 = autograd.grad(gradv, dup_samples, create_graph=True)[0]
        loss2 = torch.sum(vectors * grad2, dim=-1)

        loss1 = loss1.view(n_particles, -1).mean(dim=0)
        loss2 = loss2.view(n_particles, -1).mean(dim=0)
        loss = loss1 + loss2
        return loss.mean(), loss1.mean(), loss2.mean()

    def sliced_score_matching_vr(energy_net, samples, n_particles=1):
        dup_samples = samples.unsqueeze(0).expand(n_particles, *samples.shape).contiguous().view(-1, *samples.shape[1:])
        dup_samples.requires_grad_(True)
        vectors = torch.randn_like(dup_samples)

        logp = -energy_net(dup_samples).sum()
        grad1 = autograd.grad(logp, dup_samples, create_graph=True)[0]
        loss1 = torch.sum(grad1 * grad1, dim=-1) / 2.
        gradv = torch.sum(grad1 * vectors)
        grad2 = autograd.grad(gradv, dup_samples, create_graph=True)[0]
        loss2 = torch.sum(vectors * grad2, dim=-1)

        loss1 = loss1.view(n_particles, -1).mean(dim=0)
        loss2 = loss2.view(n_particles, -1).mean(dim=0)

        loss = loss1 + loss2
        return loss.mean(), loss1.mean(), loss2.mean()

    def sliced_score_estimation(score_net, samples, n_particles=1):
        dup_samples = samples.unsqueeze(0).expand(n_particles, *samples.shape).contiguous().view(-1, *samples.shape[1:])
        dup_samples.requires_grad_(True)
        vectors = torch.randn_like(dup_samples)
        vectors = vectors / torch.norm(vectors, dim=-1, keepdim=True)

        grad1 = score_net(dup_samples)
        gradv = torch.sum(grad1 * vectors)
        loss1 = torch.sum(grad1 * vectors, dim=-1) ** 2 * 0.5
        grad2 = autograd.grad(gradv, dup_samples, create_graph=True)[0]
        loss2 = torch.sum(vectors * grad2, dim=-1)

        loss1 = loss1.view(n_particles, -1).mean(dim=0)
        loss2 = loss2.view(n_particles, -1).mean(dim=0)

        loss = loss1 + loss2
        return loss.mean(), loss1.mean(), loss2.mean()

    def sliced_score_estimation_vr(score_net, samples, n_particles=1):
        dup_samples = samples.unsqueeze(0).expand(n_particles, *samples.shape).contiguous().view(-1, *samples.shape[1:])
        dup_samples.requires_grad_(True)
        vectors = torch.randn_like(dup_samples)

        grad1 = score_net(dup_samples)
        gradv = torch.sum(grad1 * vectors)
        grad2 = autograd.grad(gradv, dup_samples, create_graph=True)[0]

        grad1 = grad1.view(dup_samples.shape[0], -1)
        loss1 = torch.sum(grad1 * grad1, dim=-1) / 2.

        loss2 = torch.sum((vectors * grad2).view(dup_samples.shape[0], -1), dim=-1)

        loss1 = loss1.view(n_particles, -1).mean(dim=0)
        loss2 = loss2.view(n_particles, -1).mean(dim=0)

        loss = loss1 + loss2
        return loss.mean(), loss1.mean(), loss2.mean()

    def anneal_sliced_score_estimation_vr(scorenet, samples, labels, sigmas, n_particles=1):
        used_sigmas = sigmas[labels].view(samples.shape[0], *([1] * len(samples.shape[1:])))
        perturbed_samples = samples + torch.randn_like(samples) * used_sigmas
        dup_samples = perturbed_samples.unsqueeze(0).expand(n_particles, *samples.shape).contiguous().view(-1,
                                                                                                           *samples.shape[
                                                                                                            1:])
        dup_labels = labels.unsqueeze(0).expand(n_particles, *labels.shape).contiguous().view(-1)
        dup_samples.requires_grad_(True)

        # use Rademacher
        vectors = torch.randn_like(dup_samples)

        grad1 = scorenet(dup_samples, dup_labels)
        gradv = torch.sum(grad1 * vectors)
        grad2 = autograd.grad(gradv, dup_samples, create_graph=True)[0]

        grad1 = grad1.view(dup_samples.shape[0], -1)
        loss1 = torch.sum(grad1 * grad1, dim=-1) / 2.

        loss2 = torch.sum((vectors * grad2).view(dup_samples.shape[0], -1), dim=-1)

        loss1 = loss1.view(n_particles, -1).mean(dim=0)
        loss2 = loss2.view(n_particles, -1).mean(dim=0)

        loss = (loss1 + loss2) * (used_sigmas.squeeze() ** 2)

        return loss.mean(dim=0)

    # ---- losses/dsm.py ----
    def dsm(energy_net, samples, sigma=1):
        samples.requires_grad_(True)
        vector = torch.randn_like(samples) * sigma
        perturbed_inputs = samples + vector
        logp = -energy_net(perturbed_inputs)
        dlogp = sigma ** 2 * autograd.grad(logp.sum(), perturbed_inputs, create_graph=True)[0]
        kernel = vector
        loss = torch.norm(dlogp + kernel, dim=-1) ** 2
        loss = loss.mean() / 2.

        return loss

    def dsm_score_estimation(scorenet, samples, sigma=0.01):
        perturbed_samples = samples + torch.randn_like(samples) * sigma
        target = - 1 / (sigma ** 2) * (perturbed_samples - samples)
        scores = scorenet(perturbed_samples)
        target = target.view(target.shape[0], -1)
        scores = scores.view(scores.shape[0], -1)
        loss = 1 / 2. * ((scores - target) ** 2).sum(dim=-1).mean(dim=0)

        return loss

    def anneal_dsm_score_estimation(scorenet, samples, labels, sigmas, anneal_power=2.):
        used_sigmas = sigmas[labels].view(samples.shape[0], *([1] * len(samples.shape[1:])))
        perturbed_samples = samples + torch.randn_like(samples) * used_sigmas
        target = - 1 / (used_sigmas ** 2) * (perturbed_samples - samples)
        scores = scorenet(perturbed_samples, labels)
        target = target.view(target.shape[0], -1)
        scores = scores.view(scores.shape[0], -1)
        loss = 1 / 2. * ((scores - target) ** 2).sum(dim=-1) * used_sigmas.squeeze() ** anneal_power

        return loss.mean(dim=0)

    # ---- models/gmm.py ----
    class GaussianDist(object):
        def __init__(self, dim, ill_conditioned):
            cov = torch.eye(dim)
            if ill_conditioned:
                cov[dim // 2:, dim // 2:] = 0.0001 * torch.eye(dim // 2)
            mean = torch.range(1, dim) / 10
            m = MultivariateNormal(mean, cov)
            self.gmm = m

        def sample(self, n):
            return self.gmm.sample(n)

        def log_pdf(self, x):
            return self.gmm.log_prob(x)

    class GMMDistAnneal(object):
        def __init__(self, dim):
            self.mix_probs = torch.tensor([0.8, 0.2])
            self.means = torch.stack([5 * torch.ones(dim), -torch.ones(dim) * 5], dim=0)
            self.sigma = 1

        def sample(self, n, sigma=1):
            n = n[0]
            mix_idx = torch.multinomial(self.mix_probs, n, replacement=True)
            means = self.means[mix_idx]
            return torch.randn_like(means) * sigma + means

        def log_prob(self, samples, sigma=1):
            logps = []
            for i in range(len(self.mix_probs)):
                logps.append((-((samples - self.means[i]) ** 2).sum(dim=-1) / (2 * sigma ** 2) - 0.5 * np.log(
                    2 * np.pi * sigma ** 2)) + self.mix_probs[i].log())
            logp = torch.logsumexp(torch.stack(logps, dim=0), dim=0)
            return logp

        def score(self, samples, sigma=1):
            with torch.enable_grad():
                samples = samples.detach()
                samples.requires_grad_(True)
                log_probs = self.log_prob(samples, sigma).sum()
                return autograd.grad(log_probs, samples)[0]

    class GMMDist(object):
        def __init__(self, dim):
            self.mix_probs = torch.tensor([0.8, 0.2])
            self.means = torch.stack([5 * torch.ones(dim), -torch.ones(dim) * 5], dim=0)
            self.sigma = 1
            self.std = torch.stack([torch.ones(dim) * self.sigma for i in range(len(self.mix_probs))], dim=0)

        def sample(self, n):
            n = n[0]
            mix_idx = torch.multinomial(self.mix_probs, n, replacement=True)
            means = self.means[mix_idx]
            stds = self.std[mix_idx]
            return torch.randn_like(means) * stds + means

        def log_prob(self, samples):
            logps = []
            for i in range(len(self.mix_probs)):
                logps.append((-((samples - self.means[i]) ** 2).sum(dim=-1) / (2 * self.sigma ** 2) - 0.5 * np.log(
                    2 * np.pi * self.sigma ** 2)) + self.mix_probs[i].log())
            logp = torch.logsumexp(torch.stack(logps, dim=0), dim=0)
            return logp

    class Square(object):
        def __init__(self, range=4.):
            self.range = range

        def sample(self, n):
            n = n[0]
            rands = torch.rand(n, 2)
            samples = (rands - 0.5) * self.range * 2
            return samples

        def log_prob(self, samples):
            range_th = torch.tensor(self.range)
            idx = (samples[:, 0] <= range_th) & (samples[:, 0] >= -range_th) & (samples[:, 1] <= range_th) & (samples[:, 1] >= -range_th)
            results = torch.zeros(samples.shape[0])
            results[~idx] = -1e10
            results[idx] = np.log(1 / (self.range * 2) ** 2)

            return results

    class GMM(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.mean = torch.randn(3, dim)
            self.mean[0, :] += 1
            self.mean[2, :] -= 1
            self.mean = nn.Parameter(self.mean)
            self.log_std = nn.Parameter(torch.randn(3, dim))
            self.mix_logits = nn.Parameter(torch.randn(3))

        def forward(self, X):
            energy = (X.unsqueeze(1) - self.mean) ** 2 / (2 * (2 * self.log_std).exp()) + np.log(
                2 * np.pi) / 2. + self.log_std
            log_prob = -energy.sum(dim=-1)
            mix_probs = F.log_softmax(self.mix_logits)
            log_prob += mix_probs
            log_prob = torch.logsumexp(log_prob, dim=-1)
            return log_prob

    class Gaussian(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.mean = nn.Parameter(torch.zeros(dim))
            self.log_std = nn.Parameter(torch.zeros(dim))

        def forward(self, X):
            energy = (X - self.mean) ** 2 / (2 * (2 * self.log_std).exp()) + np.log(2 * np.pi) / 2. + self.log_std
            log_prob = -energy
            return log_prob

    # ---- runners/toy_runner.py ----
    class Ring():
        def __init__(self, radius, width):
            self.radius = radius
            self.width = width
            self.r_dist = Normal(loc=radius, scale=width)

        def sample(self, sample_shape):
            theta = torch.rand(sample_shape) * np.pi * 2
            r = self.r_dist.sample(sample_shape)
            x = r * torch.cos(theta)
            y = r * torch.sin(theta)
            return torch.stack([x, y], dim=-1)

        def log_prob(self, inputs):
            r = torch.norm(inputs, dim=-1)
            return self.r_dist.log_prob(r) - torch.log(r * np.pi * 2)

    def langevin_dynamics(score, init, lr=0.1, step=1000):
        for i in range(step):
            current_lr = lr
            init = init + current_lr / 2 * score(init).detach()
            init = init + torch.randn_like(init) * np.sqrt(current_lr)
        return init

    def anneal_langevin_dynamics(score, init, sigmas, lr=0.1, n_steps_each=100):
        for sigma in sigmas:
            for i in range(n_steps_each):
                current_lr = lr * (sigma / sigmas[-1]) ** 2
                init = init + current_lr / 2 * score(init, sigma).detach()
                init = init + torch.randn_like(init) * np.sqrt(current_lr)

        return init

    def fisher_information(energy_net, data, teacher):
        data.requires_grad_(True)
        log_pdf_model = -energy_net(data)
        model_score = autograd.grad(log_pdf_model.sum(), data)[0]
        log_pdf_actual = teacher.log_prob(data)
        actual_score = autograd.grad(log_pdf_actual.sum(), data)[0]
        return 1 / 2 * ((model_score - actual_score) ** 2).sum(1).mean(0)

    return SimpleNamespace(**{k: v for k, v in locals().items() if not k.startswith("_")})


def _program_ncsn(mod, log):
    import warnings
    torch = _NcsnSeededTorch(mod, 0)
    nn = torch.nn
    optim = torch.optim
    m = _ncsn(torch)

    # ToyRunner.train: the score network trained by sliced score estimation (variance reduced)
    hidden_units = 16
    score = nn.Sequential(
        nn.Linear(2, hidden_units),
        nn.Softplus(),
        nn.Linear(hidden_units, hidden_units),
        nn.Softplus(),
        nn.Linear(hidden_units, 2),
    )
    init_params(mod, score, 1, scale=0.5)
    teacher = m.GMMDist(dim=2)
    optimizer = optim.Adam(score.parameters(), lr=0.01)
    for step in range(3):
        samples = teacher.sample((8,))
        loss, *_ = m.sliced_score_estimation_vr(score, samples, n_particles=1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print('step: {}, loss: {}'.format(step, loss.item()))
        log("loss", loss)
    for name, p in score.named_parameters():
        log(name, p)

    # every other score-matching loss on the trained network or an energy network (a double
    # backward through Softplus each), and their gradients
    energy = nn.Sequential(nn.Linear(2, hidden_units), nn.Softplus(), nn.Linear(hidden_units, 1))
    init_params(mod, energy, 2, scale=0.5)
    samples = teacher.sample((6,))
    for noise_type in ('radermacher', 'sphere', 'gaussian'):
        out = m.single_sliced_score_matching(energy, samples.detach().clone(), noise_type=noise_type)
        log("single ssm " + noise_type, list(out))
    try:
        m.single_sliced_score_matching(energy, samples.detach().clone(), noise_type='uniform')
    except ValueError as e:
        log("noise type", str(e))
    out = m.partial_sliced_score_matching(energy, samples.detach().clone(), detach=True)
    log("partial ssm detached", list(out))
    out = m.partial_sliced_score_matching(energy, samples.detach().clone(), noise_type='gaussian')
    log("partial ssm", list(out))
    for fn in (m.sliced_score_matching, m.sliced_score_matching_vr):
        energy.zero_grad()
        out = fn(energy, samples, n_particles=2)
        out[0].backward()
        log(fn.__name__, list(out))
        log(fn.__name__ + " grads", [p.grad for p in energy.parameters()])
    score.zero_grad()
    out = m.sliced_score_estimation(score, samples, n_particles=3)
    out[0].backward()
    log("sliced_score_estimation", list(out))
    log("sliced_score_estimation grads", [p.grad for p in score.parameters()])
    energy.zero_grad()
    loss = m.dsm(energy, samples.detach().clone(), sigma=0.5)
    loss.backward()
    log("dsm", loss)
    log("dsm grads", [p.grad for p in energy.parameters()])
    log("dsm_score_estimation", m.dsm_score_estimation(score, samples, sigma=0.1))

    # the noise-conditional losses, on a stand-in for CondRefineNetDilated: an MLP over the
    # samples and a learned embedding of the noise level
    class CondScore(nn.Module):
        def __init__(self, n_sigmas):
            super().__init__()
            self.embed = nn.Embedding(n_sigmas, hidden_units)
            self.fc0 = nn.Linear(2, hidden_units)
            self.fc1 = nn.Linear(hidden_units, 2)

        def forward(self, x, y):
            return self.fc1(nn.functional.softplus(self.fc0(x) * self.embed(y)))

    sigmas = torch.tensor(np.exp(np.linspace(np.log(1.0), np.log(0.01), 4))).float()
    cond = init_params(mod, CondScore(len(sigmas)), 3, scale=0.5)
    labels = torch.tensor([0, 3, 1, 2, 2, 0])
    for fn in (m.anneal_dsm_score_estimation, m.anneal_sliced_score_estimation_vr):
        cond.zero_grad()
        loss = fn(cond, samples, labels, sigmas)
        loss.backward()
        log(fn.__name__, loss)
        log(fn.__name__ + " grads", [p.grad for p in cond.parameters()])

    # densities: the Gaussian (torch.range's deprecation warning), Square's masked writes, Ring,
    # the GMM and Gaussian energy models (F.log_softmax without dim: its warning)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = m.GaussianDist(4, ill_conditioned=True)
        gmm = m.GMM(2)
        log_prob = gmm(samples)
    log("warnings", sorted({(w.category.__name__, str(w.message)[:50]) for w in caught}))
    log("gaussian log_pdf", g.log_pdf(torch.tensor(np.linspace(0, 1, 8).reshape(2, 4)).float()))
    log("gmm log_prob", log_prob)
    log("gaussian", m.Gaussian(2)(samples))
    square = m.Square(range=5.5)
    log("square", square.log_prob(teacher.sample((6,))))
    log("square sample", square.sample((3,)))
    ring = m.Ring(radius=3., width=0.5)
    log("ring", ring.log_prob(samples))
    log("fisher", m.fisher_information(energy, samples.detach().clone(), teacher))

    # Langevin dynamics with the learned scores and, annealed, with GMMDistAnneal's exact ones
    init = torch.rand(5, 2) * 16 - 8
    log("langevin", m.langevin_dynamics(score, init, lr=0.1, step=3))
    anneal = m.GMMDistAnneal(dim=2)
    log("anneal sample", anneal.sample((4,)))
    with torch.no_grad():
        out = m.anneal_langevin_dynamics(anneal.score, init, np.exp(np.linspace(np.log(20), 0., 3)),
                                         n_steps_each=2)
    log("annealed langevin", out)


def test_ncsn_score_matching_losses_and_langevin():
    run_both(_program_ncsn)
