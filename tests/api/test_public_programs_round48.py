"""A forty-eighth round of public PyTorch programs run with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), from repositories no
earlier round used, then their training steps under ``tracegrad.compile`` against tracegrad eager
and torch:

- laiguokun/LSTNet (MIT; Lai et al. 2018), ``utils.py`` at 8d9b206 (``Data_utility``: ``np.loadtxt``
  of a csv, ``X[i,:,:] = torch.from_numpy(float64 rows)`` into float32 zeros, ``normal_std``'s
  tensor times a numpy float, ``get_batches`` by ``torch.randperm``/``LongTensor(range(n))``
  indices, ``Variable``), ``Optim.py`` at bc61d03 (the gradient norm by ``math.pow(p.grad.data
  .norm(), 2)``, ``p.grad.data.mul_(shrinkage)``), ``models/LSTNet.py`` at 0c7ea2f (a ``(Ck, m)``
  ``Conv2d``, ``squeeze``, ``permute(...).contiguous()``, two ``GRU``s, the skip-RNN's
  ``view``/``permute`` regrouping, the highway ``x[:, -hw:, :]``, ``F.sigmoid``) and ``main.py``'s
  ``train``/``evaluate`` at 001bec3 (``L1Loss(size_average=False)``: torch's deprecation warning;
  numpy correlation of ``.data.cpu().numpy()``); the 0.3-era ``loss.data[0]`` (IndexError) and
  argparse's float ``--skip`` (a float size: TypeError) are logged errors.

- dasguptar/treelstm.pytorch (MIT; Tai et al. 2015 Child-Sum Tree-LSTM): ``treelstm/model.py`` and
  ``trainer.py`` at de9605c, ``dataset.py``/``metrics.py`` at a67c470, ``utils.map_label_to_target``
  at 08a8e11, ``tree.py`` at 38c9f4b: ``SICKDataset`` reading token/parent/similarity files into
  ``Tree`` objects (``deepcopy`` of trees and tensors per item), the recursive ``ChildSumTreeLSTM``
  (``inputs[0].detach().new(1, mem).fill_(0.).requires_grad_()`` leaf states, ``zip(*map(...))``
  and ``torch.cat`` of the children's states, ``torch.split``, ``repeat``), ``Similarity``
  (``torch.abs(torch.add(l, -r))``, ``log_softmax``), ``KLDivLoss()`` (torch's ``reduction='mean'``
  warning), ``Adagrad`` with weight decay, or the ``sparse=True`` embedding's sparse gradient,
  ``Trainer.train`` stepping every ``batchsize`` pairs and ``test`` under ``no_grad``
  (``torch.dot(indices, torch.exp(output))``), Pearson/MSE metrics of ``deepcopy``s.

- chingyaoc/ggnn.pytorch (MIT; Li et al. 2016 gated graph sequence networks), ``model.py`` at
  4e76cb9, ``utils/train.py``/``test.py`` at 19b8bf2, ``utils/data/*`` at 9825b04: ``bAbIDataset``
  parsing a graph file into numpy adjacency matrices, the ``DataLoader`` subclass collating them
  into float64 batches, ``GGNN`` (``add_module`` by name and the ``AttrProxy`` index-to-attribute
  trick, ``.data.normal_``/``.data.fill_`` initialisation, ``torch.stack(...).transpose(0, 1)``,
  ``bmm`` with the in/out halves of the adjacency, the GRU-like ``Propogator``), ``net.double()``,
  ``print(net)``, ``CrossEntropyLoss`` and ``Adam``; the test's accuracy formats a 0-dim tensor.

- d-li14/octconv.pytorch, ``octconv.py`` and ``oct_resnet.py``'s ``Bottleneck`` at 89cd90d (the
  stored snapshot has no license file; embedded for testing only; Chen et al. 2019 Octave
  convolution): ``OctaveConv``'s high/low-frequency branches (``AvgPool2d`` down, ``Upsample``
  nearest up, ``type(x) is tuple``), ``Conv_BN``/``Conv_BN_ACT`` (in-place ``ReLU``), the
  bottleneck's ``x_h += identity_h``, built into three OctResNet-style stages (alpha_in=0 first,
  a stride-2 stage, the alpha_out=0 output stage), trained with momentum SGD in train mode.

- kuc2477/pytorch-memn2n (no license file in the stored snapshot; embedded for testing only;
  Sukhbaatar et al. 2015 end-to-end memory networks), ``encs.py``, ``model.py``, ``utils.py``,
  ``train.py`` at 343c809: ``from torch.cuda import FloatTensor`` at import and
  ``Tensor(e, s).type(CudaTensor if cuda else Tensor)``, the position encoding written item by
  item, ``Tensor(range(n)).type(LongTensor)``, ``Memory`` modules sharing embeddings across hops
  (adjacent and layer-wise tying, ``functools.partial(F.linear, weight=...)``), ``F.softmax``
  without ``dim`` (torch's warning), ``MultiStepLR.step(epoch)`` (deprecated),
  ``nn.utils.clip_grad_norm`` (deprecated), checkpoints by ``torch.save``/``shutil.copy``/
  ``torch.load`` and ``load_state_dict``.

- iamtrask/NALU-pytorch (no license file in the stored snapshot; embedded for testing only;
  Trask et al. 2018), ``models/nac.py``, ``nalu.py``, ``models.py`` and ``function_learning.py`` at
  42165bb: ``Parameter(torch.Tensor(o, i))`` then ``kaiming_uniform_``, ``NAC``'s
  ``Parameter(F.tanh(W_hat) * F.sigmoid(M_hat))`` (whose ``W_hat``/``M_hat`` then feed nothing),
  ``NALU``'s ``exp(linear(log(|x| + eps)))`` gate, ``generate_data``'s ``random.sample`` sums and
  ``torch.FloatTensor`` of a list of 0-dim tensor pairs, ``mse_loss`` training and its log line.

Changes, the same on both sides: sizes are tiny (LSTNet: 3 series of 40 steps, window 8, 4 conv
channels, GRUs of 5 and 3; TreeLSTM: 5 sentence pairs over 12 words, 4/5/3 dims; GGNN: 8 graphs of
5 nodes, state 4, 2 propagation steps; OctConv: 8 channels, 8 x 8 images; MemN2N: 12 words,
4 sentences of 5, 6 dims, 3 hops; NALU: 12 numbers, 2 layers), epochs 1-3, dropout 0, weights
overwritten from numpy after construction, ``torch.randperm`` shuffles drawn from a seeded numpy
stream (``_SeededPerm``) or left in order, the ``.data[0]`` reads of 0-dim losses as ``.item()``,
progress bars and plots left out. Each section notes its own.
"""
import types
import warnings

import numpy as np
import pytest

from parity import SeededTorch, get_torch, init_params, np_randn, printer, run_both, seeded

import tracegrad

# ---- laiguokun/LSTNet ---------------------------------------------------------------------------
def _lstnet_modules(torch):
    # ``utils.py`` at 8d9b206, ``Optim.py`` at bc61d03, ``models/LSTNet.py`` at 0c7ea2f (MIT)
    import math
    nn = torch.nn
    F = torch.nn.functional
    optim = torch.optim
    from_autograd = torch.autograd
    Variable = from_autograd.Variable

    def normal_std(x):
        return x.std() * np.sqrt((len(x) - 1.)/(len(x)))

    class Data_utility(object):
        # train and valid is the ratio of training set and validation set. test = 1 - train - valid
        def __init__(self, file_name, train, valid, cuda, horizon, window, normalize = 2):
            self.cuda = cuda;
            self.P = window;
            self.h = horizon
            fin = open(file_name);
            self.rawdat = np.loadtxt(fin,delimiter=',');
            self.dat = np.zeros(self.rawdat.shape);
            self.n, self.m = self.dat.shape;
            self.normalize = 2
            self.scale = np.ones(self.m);
            self._normalized(normalize);
            self._split(int(train * self.n), int((train+valid) * self.n), self.n);

            self.scale = torch.from_numpy(self.scale).float();
            tmp = self.test[1] * self.scale.expand(self.test[1].size(0), self.m);

            if self.cuda:
                self.scale = self.scale.cuda();
            self.scale = Variable(self.scale);

            self.rse = normal_std(tmp);
            self.rae = torch.mean(torch.abs(tmp - torch.mean(tmp)));

        def _normalized(self, normalize):
            #normalized by the maximum value of entire matrix.

            if (normalize == 0):
                self.dat = self.rawdat

            if (normalize == 1):
                self.dat = self.rawdat / np.max(self.rawdat);

            #normlized by the maximum value of each row(sensor).
            if (normalize == 2):
                for i in range(self.m):
                    self.scale[i] = np.max(np.abs(self.rawdat[:,i]));
                    self.dat[:,i] = self.rawdat[:,i] / np.max(np.abs(self.rawdat[:,i]));


        def _split(self, train, valid, test):

            train_set = range(self.P+self.h-1, train);
            valid_set = range(train, valid);
            test_set = range(valid, self.n);
            self.train = self._batchify(train_set, self.h);
            self.valid = self._batchify(valid_set, self.h);
            self.test = self._batchify(test_set, self.h);


        def _batchify(self, idx_set, horizon):

            n = len(idx_set);
            X = torch.zeros((n,self.P,self.m));
            Y = torch.zeros((n,self.m));

            for i in range(n):
                end = idx_set[i] - self.h + 1;
                start = end - self.P;
                X[i,:,:] = torch.from_numpy(self.dat[start:end, :]);
                Y[i,:] = torch.from_numpy(self.dat[idx_set[i], :]);

            return [X, Y];

        def get_batches(self, inputs, targets, batch_size, shuffle=True):
            length = len(inputs)
            if shuffle:
                index = torch.randperm(length)
            else:
                index = torch.LongTensor(range(length))
            start_idx = 0
            while (start_idx < length):
                end_idx = min(length, start_idx + batch_size)
                excerpt = index[start_idx:end_idx]
                X = inputs[excerpt]; Y = targets[excerpt];
                if (self.cuda):
                    X = X.cuda();
                    Y = Y.cuda();
                yield Variable(X), Variable(Y);
                start_idx += batch_size

    class Optim(object):

        def _makeOptimizer(self):
            if self.method == 'sgd':
                self.optimizer = optim.SGD(self.params, lr=self.lr)
            elif self.method == 'adagrad':
                self.optimizer = optim.Adagrad(self.params, lr=self.lr)
            elif self.method == 'adadelta':
                self.optimizer = optim.Adadelta(self.params, lr=self.lr)
            elif self.method == 'adam':
                self.optimizer = optim.Adam(self.params, lr=self.lr)
            else:
                raise RuntimeError("Invalid optim method: " + self.method)

        def __init__(self, params, method, lr, max_grad_norm, lr_decay=1, start_decay_at=None):
            self.params = list(params)  # careful: params may be a generator
            self.last_ppl = None
            self.lr = lr
            self.max_grad_norm = max_grad_norm
            self.method = method
            self.lr_decay = lr_decay
            self.start_decay_at = start_decay_at
            self.start_decay = False

            self._makeOptimizer()

        def step(self):
            # Compute gradients norm.
            grad_norm = 0
            for param in self.params:
                grad_norm += math.pow(param.grad.data.norm(), 2)

            grad_norm = math.sqrt(grad_norm)
            if grad_norm > 0:
                shrinkage = self.max_grad_norm / grad_norm
            else:
                shrinkage = 1.

            for param in self.params:
                if shrinkage < 1:
                    param.grad.data.mul_(shrinkage)

            self.optimizer.step()
            return grad_norm

    class Model(nn.Module):
        def __init__(self, args, data):
            super(Model, self).__init__()
            self.use_cuda = args.cuda
            self.P = args.window;
            self.m = data.m
            self.hidR = args.hidRNN;
            self.hidC = args.hidCNN;
            self.hidS = args.hidSkip;
            self.Ck = args.CNN_kernel;
            self.skip = args.skip;
            self.pt = int((self.P - self.Ck)/self.skip)
            self.hw = args.highway_window
            self.conv1 = nn.Conv2d(1, self.hidC, kernel_size = (self.Ck, self.m));
            self.GRU1 = nn.GRU(self.hidC, self.hidR);
            self.dropout = nn.Dropout(p = args.dropout);
            if (self.skip > 0):
                self.GRUskip = nn.GRU(self.hidC, self.hidS);
                self.linear1 = nn.Linear(self.hidR + self.skip * self.hidS, self.m);
            else:
                self.linear1 = nn.Linear(self.hidR, self.m);
            if (self.hw > 0):
                self.highway = nn.Linear(self.hw, 1);
            self.output = None;
            if (args.output_fun == 'sigmoid'):
                self.output = F.sigmoid;
            if (args.output_fun == 'tanh'):
                self.output = F.tanh;

        def forward(self, x):
            batch_size = x.size(0);

            #CNN
            c = x.view(-1, 1, self.P, self.m);
            c = F.relu(self.conv1(c));
            c = self.dropout(c);
            c = torch.squeeze(c, 3);

            # RNN
            r = c.permute(2, 0, 1).contiguous();
            _, r = self.GRU1(r);
            r = self.dropout(torch.squeeze(r,0));


            #skip-rnn

            if (self.skip > 0):
                s = c[:,:, int(-self.pt * self.skip):].contiguous();
                s = s.view(batch_size, self.hidC, self.pt, self.skip);
                s = s.permute(2,0,3,1).contiguous();
                s = s.view(self.pt, batch_size * self.skip, self.hidC);
                _, s = self.GRUskip(s);
                s = s.view(batch_size, self.skip * self.hidS);
                s = self.dropout(s);
                r = torch.cat((r,s),1);

            res = self.linear1(r);

            #highway
            if (self.hw > 0):
                z = x[:, -self.hw:, :];
                z = z.permute(0,2,1).contiguous().view(-1, self.hw);
                z = self.highway(z);
                z = z.view(-1,self.m);
                res = res + z;

            if (self.output):
                res = self.output(res);
            return res;

    # ``main.py`` at 001bec3: ``evaluate`` and ``train`` (``loss.data[0]`` of the PyTorch 0.3 era:
    # ``.item()`` here, ``_lstnet_train_0_3`` below keeps the original and logs its error)
    def evaluate(data, X, Y, model, evaluateL2, evaluateL1, batch_size):
        model.eval();
        total_loss = 0;
        total_loss_l1 = 0;
        n_samples = 0;
        predict = None;
        test = None;

        for X, Y in data.get_batches(X, Y, batch_size, False):
            output = model(X);
            if predict is None:
                predict = output;
                test = Y;
            else:
                predict = torch.cat((predict,output));
                test = torch.cat((test, Y));

            scale = data.scale.expand(output.size(0), data.m)
            total_loss += evaluateL2(output * scale, Y * scale).item()
            total_loss_l1 += evaluateL1(output * scale, Y * scale).item()
            n_samples += (output.size(0) * data.m);
        rse = math.sqrt(total_loss / n_samples)/data.rse
        rae = (total_loss_l1/n_samples)/data.rae

        predict = predict.data.cpu().numpy();
        Ytest = test.data.cpu().numpy();
        sigma_p = (predict).std(axis = 0);
        sigma_g = (Ytest).std(axis = 0);
        mean_p = predict.mean(axis = 0)
        mean_g = Ytest.mean(axis = 0)
        index = (sigma_g!=0);
        correlation = ((predict - mean_p) * (Ytest - mean_g)).mean(axis = 0)/(sigma_p * sigma_g);
        correlation = (correlation[index]).mean();
        return rse, rae, correlation;

    def train(data, X, Y, model, criterion, optim, batch_size):
        model.train();
        total_loss = 0;
        n_samples = 0;
        for X, Y in data.get_batches(X, Y, batch_size, True):
            model.zero_grad();
            output = model(X);
            scale = data.scale.expand(output.size(0), data.m)
            loss = criterion(output * scale, Y * scale);
            loss.backward();
            grad_norm = optim.step();
            total_loss += loss.item();
            n_samples += (output.size(0) * data.m);
        return total_loss / n_samples

    return types.SimpleNamespace(Data_utility=Data_utility, Optim=Optim, Model=Model,
                                 evaluate=evaluate, train=train, normal_std=normal_std)


class _SeededPerm(SeededTorch):
    """``SeededTorch`` with ``randperm`` from the same numpy stream (the shuffles of LSTNet's
    ``get_batches`` and TreeLSTM's ``Trainer.train``)."""

    def randperm(self, n, **kw):
        return self._mod.tensor(self._rs.permutation(n), dtype=self._mod.long)


def _lstnet_csv(path):
    # a stand-in for the electricity/solar csv files: 3 sensors, 40 time steps, positive values
    t = np.arange(40)[:, None]
    rs = np.random.RandomState(11)
    dat = 2.0 + np.sin(t / 3.0 + np.arange(3)) * np.array([1.0, 3.0, 0.5]) + rs.uniform(0, 0.3, (40, 3))
    np.savetxt(path, dat, delimiter=",")


LSTNET_ARGS = dict(cuda=False, window=8, hidRNN=5, hidCNN=4, hidSkip=3, CNN_kernel=3, skip=2,
                   highway_window=3, dropout=0.0, output_fun="sigmoid", horizon=2, clip=1.0,
                   lr=0.01, batch_size=8)


def _lstnet_setup(torch, path, optim_name="adam"):
    import argparse
    L = _lstnet_modules(torch)
    args = argparse.Namespace(**LSTNET_ARGS)
    Data = L.Data_utility(path, 0.6, 0.2, args.cuda, args.horizon, args.window, 2)
    model = L.Model(args, Data)
    init_params(torch, model, 3)
    criterion = torch.nn.L1Loss(size_average=False)
    optim = L.Optim(model.parameters(), optim_name, args.lr, args.clip)
    return L, args, Data, model, criterion, optim


def _lstnet_program(path):
    def program(torch, log):
        torch = _SeededPerm(torch, 5)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            L, args, Data, model, criterion, optim = _lstnet_setup(torch, path)
        # (``open`` without ``close`` adds a ResourceWarning whenever the collector runs)
        log("size_average warning", any(w.category is UserWarning for w in caught))
        log("rse", Data.rse)
        log("rae", Data.rae)
        log("train X", Data.train[0])
        log("valid Y", Data.valid[1])
        log("scale", Data.scale)
        nParams = sum([p.nelement() for p in model.parameters()])
        print('* number of parameters: %d' % nParams)
        evaluateL2 = torch.nn.MSELoss(size_average=False)
        evaluateL1 = torch.nn.L1Loss(size_average=False)
        for epoch in range(1, 3):
            train_loss = L.train(Data, Data.train[0], Data.train[1], model, criterion, optim,
                                 args.batch_size)
            val_loss, val_rae, val_corr = L.evaluate(Data, Data.valid[0], Data.valid[1], model,
                                                     evaluateL2, evaluateL1, args.batch_size)
            log("epoch", [train_loss, val_loss, val_rae, float(val_corr)])
        for n, p in model.named_parameters():
            log(n, p)
            log(n + ".grad", p.grad)
        # PyTorch 0.3's ``loss.data[0]`` on a 0-dim loss: IndexError, naming ``item()``
        loss = criterion(model(Data.test[0]), Data.test[1])
        try:
            loss.data[0]
        except IndexError as e:
            log("data[0]", ["IndexError", "item()" in str(e)])
        # ``args.skip`` is a ``float`` in the repository's argparse: a float size is a TypeError
        args2 = argparse_ns(dict(LSTNET_ARGS, skip=2.0))
        try:
            L.Model(args2, Data)
        except TypeError as e:
            log("float skip", "TypeError")
    return program


def argparse_ns(d):
    import argparse
    return argparse.Namespace(**d)


def test_lstnet_program(tmp_path):
    path = str(tmp_path / "data.txt")
    _lstnet_csv(path)
    run_both(_lstnet_program(path))


def _lstnet_step_runs(T, path, compiled, clip_by_optim=True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        L, args, Data, model, criterion, optim = _lstnet_setup(T, path)

    def step(X, Y):
        # the body of ``main.py``'s ``train`` loop
        model.zero_grad()
        output = model(X)
        scale = Data.scale.expand(output.size(0), Data.m)
        loss = criterion(output * scale, Y * scale)
        loss.backward()
        if clip_by_optim:
            optim.step()
        else:
            optim.optimizer.step()
        return loss, output

    if compiled:
        step = T.compile(step)
    out = []
    X, Y = Data.train
    for i in range(3):
        lo = 4 * i % len(X)
        loss, o = step(X[lo:lo + 4], Y[lo:lo + 4])
        out.append((loss.detach().numpy(), o.detach().numpy()))
    params = {n: p.detach().numpy() for n, p in model.named_parameters()}
    grads = {n: p.grad.numpy() for n, p in model.named_parameters()}
    return out, params, grads, step


def _same_runs(a, b, rtol, atol):
    for (la, ca), (lb, cb) in zip(a[0], b[0]):
        np.testing.assert_allclose(la, lb, rtol=rtol, atol=atol)
        np.testing.assert_allclose(ca, cb, rtol=rtol, atol=atol)
    for d in (1, 2):
        for n in a[d]:
            np.testing.assert_allclose(a[d][n], b[d][n], rtol=rtol, atol=atol, err_msg=n)


@pytest.mark.parametrize("clip_by_optim", [True, False])
def test_lstnet_train_step_compiled(tmp_path, clip_by_optim):
    path = str(tmp_path / "data.txt")
    _lstnet_csv(path)
    torch = get_torch()
    ref = _lstnet_step_runs(torch, path, False, clip_by_optim)
    eager = _lstnet_step_runs(tracegrad, path, False, clip_by_optim)
    comp = _lstnet_step_runs(tracegrad, path, True, clip_by_optim)
    # float32 over 3 Adam steps against torch's conv/GRU kernels: 1e-4; compiled against eager: 1e-5
    _same_runs(ref, eager, 1e-4, 1e-5)
    _same_runs(eager, comp, 1e-5, 1e-6)
    stats = comp[3].stats
    if clip_by_optim:
        # ``Optim.step``'s ``math.pow(param.grad.data.norm(), 2)`` takes each norm out to Python:
        # torch.compile splits the graph there; tracegrad runs the step eagerly (same values)
        assert [b[0].startswith("item()") for b in stats["graph_breaks"]] == [True], stats
    else:
        # the batch is a row-major slice of ``Data.train[0]`` (a view argument): the highway's
        # ``x[:, -hw:, :].permute(0, 2, 1).contiguous()`` asks its layout inside the trace
        assert stats["graph_breaks"] == [] and stats["traces"] == 1, stats


# ---- dasguptar/treelstm.pytorch -----------------------------------------------------------------
def _treelstm_modules(torch):
    # ``treelstm/model.py``, ``trainer.py`` at de9605c, ``dataset.py``, ``metrics.py`` at a67c470,
    # ``utils.map_label_to_target`` at 08a8e11, ``tree.py`` at 38c9f4b (MIT); ``tqdm`` is the
    # identity here, ``Constants.PAD`` is 0 (the repository's), ``Vocab`` a stand-in dictionary
    import math
    import os
    from copy import deepcopy
    nn = torch.nn
    F = torch.nn.functional
    data = torch.utils.data

    def tqdm(it, desc=None):
        return it

    class Constants:
        PAD = 0
        UNK_WORD = '<unk>'

    # tree object from stanfordnlp/treelstm
    class Tree(object):
        def __init__(self):
            self.parent = None
            self.num_children = 0
            self.children = list()

        def add_child(self,child):
            child.parent = self
            self.num_children += 1
            self.children.append(child)

        def size(self):
            if getattr(self,'_size'):
                return self._size
            count = 1
            for i in range(self.num_children):
                count += self.children[i].size()
            self._size = count
            return self._size

        def depth(self):
            if getattr(self,'_depth'):
                return self._depth
            count = 0
            if self.num_children>0:
                for i in range(self.num_children):
                    child_depth = self.children[i].depth()
                    if child_depth>count:
                        count = child_depth
                count += 1
            self._depth = count
            return self._depth

    # Dataset class for SICK dataset
    class SICKDataset(data.Dataset):
        def __init__(self, path, vocab, num_classes):
            super(SICKDataset, self).__init__()
            self.vocab = vocab
            self.num_classes = num_classes

            self.lsentences = self.read_sentences(os.path.join(path, 'a.toks'))
            self.rsentences = self.read_sentences(os.path.join(path, 'b.toks'))

            self.ltrees = self.read_trees(os.path.join(path, 'a.parents'))
            self.rtrees = self.read_trees(os.path.join(path, 'b.parents'))

            self.labels = self.read_labels(os.path.join(path, 'sim.txt'))

            self.size = self.labels.size(0)

        def __len__(self):
            return self.size

        def __getitem__(self, index):
            ltree = deepcopy(self.ltrees[index])
            rtree = deepcopy(self.rtrees[index])
            lsent = deepcopy(self.lsentences[index])
            rsent = deepcopy(self.rsentences[index])
            label = deepcopy(self.labels[index])
            return (ltree, lsent, rtree, rsent, label)

        def read_sentences(self, filename):
            with open(filename, 'r') as f:
                sentences = [self.read_sentence(line) for line in tqdm(f.readlines())]
            return sentences

        def read_sentence(self, line):
            indices = self.vocab.convertToIdx(line.split(), Constants.UNK_WORD)
            return torch.LongTensor(indices)

        def read_trees(self, filename):
            with open(filename, 'r') as f:
                trees = [self.read_tree(line) for line in tqdm(f.readlines())]
            return trees

        def read_tree(self, line):
            parents = list(map(int, line.split()))
            trees = dict()
            root = None
            for i in range(1, len(parents) + 1):
                if i - 1 not in trees.keys() and parents[i - 1] != -1:
                    idx = i
                    prev = None
                    while True:
                        parent = parents[idx - 1]
                        if parent == -1:
                            break
                        tree = Tree()
                        if prev is not None:
                            tree.add_child(prev)
                        trees[idx - 1] = tree
                        tree.idx = idx - 1
                        if parent - 1 in trees.keys():
                            trees[parent - 1].add_child(tree)
                            break
                        elif parent == 0:
                            root = tree
                            break
                        else:
                            prev = tree
                            idx = parent
            return root

        def read_labels(self, filename):
            with open(filename, 'r') as f:
                labels = list(map(lambda x: float(x), f.readlines()))
                labels = torch.Tensor(labels)
            return labels

    # module for childsumtreelstm
    class ChildSumTreeLSTM(nn.Module):
        def __init__(self, in_dim, mem_dim):
            super(ChildSumTreeLSTM, self).__init__()
            self.in_dim = in_dim
            self.mem_dim = mem_dim
            self.ioux = nn.Linear(self.in_dim, 3 * self.mem_dim)
            self.iouh = nn.Linear(self.mem_dim, 3 * self.mem_dim)
            self.fx = nn.Linear(self.in_dim, self.mem_dim)
            self.fh = nn.Linear(self.mem_dim, self.mem_dim)

        def node_forward(self, inputs, child_c, child_h):
            child_h_sum = torch.sum(child_h, dim=0, keepdim=True)

            iou = self.ioux(inputs) + self.iouh(child_h_sum)
            i, o, u = torch.split(iou, iou.size(1) // 3, dim=1)
            i, o, u = F.sigmoid(i), F.sigmoid(o), F.tanh(u)

            f = F.sigmoid(
                self.fh(child_h) +
                self.fx(inputs).repeat(len(child_h), 1)
            )
            fc = torch.mul(f, child_c)

            c = torch.mul(i, u) + torch.sum(fc, dim=0, keepdim=True)
            h = torch.mul(o, F.tanh(c))
            return c, h

        def forward(self, tree, inputs):
            for idx in range(tree.num_children):
                self.forward(tree.children[idx], inputs)

            if tree.num_children == 0:
                child_c = inputs[0].detach().new(1, self.mem_dim).fill_(0.).requires_grad_()
                child_h = inputs[0].detach().new(1, self.mem_dim).fill_(0.).requires_grad_()
            else:
                child_c, child_h = zip(* map(lambda x: x.state, tree.children))
                child_c, child_h = torch.cat(child_c, dim=0), torch.cat(child_h, dim=0)

            tree.state = self.node_forward(inputs[tree.idx], child_c, child_h)
            return tree.state

    # module for distance-angle similarity
    class Similarity(nn.Module):
        def __init__(self, mem_dim, hidden_dim, num_classes):
            super(Similarity, self).__init__()
            self.mem_dim = mem_dim
            self.hidden_dim = hidden_dim
            self.num_classes = num_classes
            self.wh = nn.Linear(2 * self.mem_dim, self.hidden_dim)
            self.wp = nn.Linear(self.hidden_dim, self.num_classes)

        def forward(self, lvec, rvec):
            mult_dist = torch.mul(lvec, rvec)
            abs_dist = torch.abs(torch.add(lvec, -rvec))
            vec_dist = torch.cat((mult_dist, abs_dist), 1)

            out = F.sigmoid(self.wh(vec_dist))
            out = F.log_softmax(self.wp(out), dim=1)
            return out

    # putting the whole model together
    class SimilarityTreeLSTM(nn.Module):
        def __init__(self, vocab_size, in_dim, mem_dim, hidden_dim, num_classes, sparsity, freeze):
            super(SimilarityTreeLSTM, self).__init__()
            self.emb = nn.Embedding(vocab_size, in_dim, padding_idx=Constants.PAD, sparse=sparsity)
            if freeze:
                self.emb.weight.requires_grad = False
            self.childsumtreelstm = ChildSumTreeLSTM(in_dim, mem_dim)
            self.similarity = Similarity(mem_dim, hidden_dim, num_classes)

        def forward(self, ltree, linputs, rtree, rinputs):
            linputs = self.emb(linputs)
            rinputs = self.emb(rinputs)
            lstate, lhidden = self.childsumtreelstm(ltree, linputs)
            rstate, rhidden = self.childsumtreelstm(rtree, rinputs)
            output = self.similarity(lstate, rstate)
            return output

    # mapping from scalar to vector
    def map_label_to_target(label, num_classes):
        target = torch.zeros(1, num_classes)
        ceil = int(math.ceil(label))
        floor = int(math.floor(label))
        if ceil == floor:
            target[0][floor-1] = 1
        else:
            target[0][floor-1] = ceil - label
            target[0][ceil-1] = label - floor
        return target

    utils = types.SimpleNamespace(map_label_to_target=map_label_to_target)

    class Trainer(object):
        def __init__(self, args, model, criterion, optimizer, device):
            super(Trainer, self).__init__()
            self.args = args
            self.model = model
            self.criterion = criterion
            self.optimizer = optimizer
            self.device = device
            self.epoch = 0

        # helper function for training
        def train(self, dataset):
            self.model.train()
            self.optimizer.zero_grad()
            total_loss = 0.0
            indices = torch.randperm(len(dataset), dtype=torch.long, device='cpu')
            for idx in tqdm(range(len(dataset)), desc='Training epoch ' + str(self.epoch + 1) + ''):
                ltree, linput, rtree, rinput, label = dataset[indices[idx]]
                target = utils.map_label_to_target(label, dataset.num_classes)
                linput, rinput = linput.to(self.device), rinput.to(self.device)
                target = target.to(self.device)
                output = self.model(ltree, linput, rtree, rinput)
                loss = self.criterion(output, target)
                total_loss += loss.item()
                loss.backward()
                if idx % self.args.batchsize == 0 and idx > 0:
                    self.optimizer.step()
                    self.optimizer.zero_grad()
            self.epoch += 1
            return total_loss / len(dataset)

        # helper function for testing
        def test(self, dataset):
            self.model.eval()
            with torch.no_grad():
                total_loss = 0.0
                predictions = torch.zeros(len(dataset), dtype=torch.float, device='cpu')
                indices = torch.arange(1, dataset.num_classes + 1, dtype=torch.float, device='cpu')
                for idx in tqdm(range(len(dataset)), desc='Testing epoch  ' + str(self.epoch) + ''):
                    ltree, linput, rtree, rinput, label = dataset[idx]
                    target = utils.map_label_to_target(label, dataset.num_classes)
                    linput, rinput = linput.to(self.device), rinput.to(self.device)
                    target = target.to(self.device)
                    output = self.model(ltree, linput, rtree, rinput)
                    loss = self.criterion(output, target)
                    total_loss += loss.item()
                    output = output.squeeze().to('cpu')
                    predictions[idx] = torch.dot(indices, torch.exp(output))
            return total_loss / len(dataset), predictions

    class Metrics():
        def __init__(self, num_classes):
            self.num_classes = num_classes

        def pearson(self, predictions, labels):
            x = deepcopy(predictions)
            y = deepcopy(labels)
            x = (x - x.mean()) / x.std()
            y = (y - y.mean()) / y.std()
            return torch.mean(torch.mul(x, y))

        def mse(self, predictions, labels):
            x = deepcopy(predictions)
            y = deepcopy(labels)
            return torch.mean((x - y) ** 2)

    return types.SimpleNamespace(SICKDataset=SICKDataset, SimilarityTreeLSTM=SimilarityTreeLSTM,
                                 Trainer=Trainer, Metrics=Metrics, Tree=Tree, utils=utils)


class _Vocab:
    """A stand-in for the repository's ``Vocab``: ``convertToIdx`` by a fixed word list."""

    def __init__(self, words):
        self.labelToIdx = {w: i for i, w in enumerate(words)}

    def size(self):
        return len(self.labelToIdx)

    def convertToIdx(self, labels, unkWord):
        unk = self.labelToIdx[unkWord]
        return [self.labelToIdx.get(w, unk) for w in labels]


_TREE_WORDS = ["<blank>", "<unk>", "a", "man", "is", "playing", "guitar", "dog", "runs", "the", "cat", "sleeps"]
# sentence pairs with dependency parents (1-based, 0: the root), SICK relatedness in [1, 5]
_TREE_SPLIT = [
    ("a man is playing guitar", "2 4 4 0 4", "the dog runs", "2 3 0", "4.5"),
    ("the cat sleeps", "2 3 0", "a dog sleeps", "2 3 0", "3.2"),
    ("a dog is playing", "2 4 4 0", "the man runs a guitar", "2 3 0 5 3", "1.0"),
    ("the man sleeps", "2 3 0", "a cat is playing guitar", "2 4 4 0 4", "2.6"),
    ("a man runs", "2 3 0", "a man runs", "2 3 0", "5.0"),
]


def _treelstm_files(root):
    import os
    for split, rows in (("train", _TREE_SPLIT), ("dev", _TREE_SPLIT[::-1][:3])):
        d = os.path.join(root, split)
        os.makedirs(d, exist_ok=True)
        cols = list(zip(*rows))
        for name, col in zip(("a.toks", "a.parents", "b.toks", "b.parents", "sim.txt"), cols):
            with open(os.path.join(d, name), "w") as f:
                f.write("\n".join(col) + "\n")


def _treelstm_setup(torch, root, sparse=False, optim_name="adagrad"):
    import argparse
    import os
    M = _treelstm_modules(torch)
    vocab = _Vocab(_TREE_WORDS)
    train_dataset = M.SICKDataset(os.path.join(root, "train/"), vocab, 5)
    dev_dataset = M.SICKDataset(os.path.join(root, "dev/"), vocab, 5)
    # the repository's main: input_dim 300, mem_dim 150, hidden_dim 50 (4, 5 and 3 here)
    model = M.SimilarityTreeLSTM(vocab.size(), 4, 5, 3, 5, sparse, False)
    init_params(torch, model, 7)
    emb = torch.tensor(np_randn((vocab.size(), 4), 8, 0.5))
    for idx in range(2):
        emb[idx].zero_()
    model.emb.weight.data.copy_(emb)
    criterion = torch.nn.KLDivLoss()
    params = filter(lambda p: p.requires_grad, model.parameters())
    if optim_name == "adagrad":
        optimizer = torch.optim.Adagrad(params, lr=0.05, weight_decay=0 if sparse else 1e-4)
    else:
        optimizer = torch.optim.SGD(params, lr=0.1)
    args = argparse.Namespace(batchsize=2)
    trainer = M.Trainer(args, model, criterion, optimizer, torch.device("cpu"))
    return M, train_dataset, dev_dataset, model, trainer


def _treelstm_program(root, sparse):
    def program(torch, log):
        torch = _SeededPerm(torch, 9)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            M, train_dataset, dev_dataset, model, trainer = _treelstm_setup(torch, root, sparse)
            metrics = M.Metrics(5)
            tree = train_dataset.ltrees[0]
            # (``Tree.size``/``depth`` read ``_size``/``_depth`` that nothing sets: not called)
            log("tree", [tree.num_children, tree.idx, [c.idx for c in tree.children]])
            log("labels", train_dataset.labels)
            log("sentence 0", train_dataset.lsentences[0])
            log("target 3.2", M.utils.map_label_to_target(3.2, 5))
            for epoch in range(2):
                train_loss = trainer.train(train_dataset)
                train_loss, train_pred = trainer.test(train_dataset)
                dev_loss, dev_pred = trainer.test(dev_dataset)
                log("epoch", [train_loss, dev_loss])
                log("train_pred", train_pred)
                log("pearson", metrics.pearson(dev_pred, dev_dataset.labels))
                log("mse", metrics.mse(train_pred, train_dataset.labels))
        # KLDivLoss's default reduction='mean' warns (torch's UserWarning, batchmean advice)
        # (torch's "Sparse invariant checks are implicitly disabled" from Adagrad's
        # ``sparse_coo_tensor`` is a once-per-process C++ warning: whether it shows depends on
        # what ran earlier in the process, so it is left out)
        log("warned", sorted({str(w.message)[:40] for w in caught if w.category is UserWarning
                              and "invariant checks" not in str(w.message)}))
        for n, p in model.named_parameters():
            log(n, p)
            g = p.grad
            log(n + ".grad", None if g is None else (g.to_dense() if g.is_sparse else g))
    return program


@pytest.mark.parametrize("sparse", [False, True])
def test_treelstm_program(tmp_path, sparse):
    _treelstm_files(str(tmp_path))
    # float32 over 2 epochs of Adagrad; the Pearson correlation of 3 dev predictions divides by
    # their small standard deviation, which amplifies rounding: 1e-4
    run_both(_treelstm_program(str(tmp_path), sparse), rtol=1e-4, atol=1e-5)


def _treelstm_step_runs(T, root, compiled):
    M, train_dataset, _, model, trainer = _treelstm_setup(T, root)
    criterion, optimizer = trainer.criterion, trainer.optimizer

    def step(ltree, linput, rtree, rinput, target):
        # ``Trainer.train``'s body for one pair, stepping every pair
        optimizer.zero_grad()
        output = model(ltree, linput, rtree, rinput)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()
        return loss, output

    if compiled:
        step = T.compile(step)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for idx in [0, 1, 0, 4, 1]:
            ltree, linput, rtree, rinput, label = train_dataset[idx]
            target = M.utils.map_label_to_target(label, train_dataset.num_classes)
            loss, o = step(ltree, linput, rtree, rinput, target)
            out.append((loss.detach().numpy(), o.detach().numpy()))
    params = {n: p.detach().numpy() for n, p in model.named_parameters()}
    grads = {n: p.grad.numpy() for n, p in model.named_parameters()}
    return out, params, grads, step


def test_treelstm_train_step_compiled(tmp_path):
    root = str(tmp_path)
    _treelstm_files(root)
    torch = get_torch()
    ref = _treelstm_step_runs(torch, root, False)
    eager = _treelstm_step_runs(tracegrad, root, False)
    comp = _treelstm_step_runs(tracegrad, root, True)
    # float32 over 5 Adagrad steps: 1e-5 against torch; compiled against eager: 1e-5
    _same_runs(ref, eager, 1e-5, 1e-6)
    _same_runs(eager, comp, 1e-5, 1e-6)
    # ``ChildSumTreeLSTM.forward`` stores ``tree.state`` on the argument's tree nodes: a Python
    # side effect on an argument, so tracegrad runs the step eagerly; torch.compile splits it into
    # 6 graphs too (``requires_grad_()`` of the leaf states leaks out of a graph, ``backward``)
    stats = comp[3].stats
    assert stats["traces"] == 0 and stats["eager_calls"] == 5, stats
    assert ["argument 0.state" in b[0] for b in stats["graph_breaks"]] == [True], stats


# ---- chingyaoc/ggnn.pytorch ---------------------------------------------------------------------
def _ggnn_modules(torch):
    # ``model.py`` at 4e76cb9, ``utils/train.py``/``utils/test.py`` at 19b8bf2,
    # ``utils/data/dataset.py`` and ``utils/data/dataloader.py`` at 9825b04 (MIT)
    nn = torch.nn
    Variable = torch.autograd.Variable
    DataLoader = torch.utils.data.DataLoader

    class AttrProxy(object):
        """
        Translates index lookups into attribute lookups.
        To implement some trick which able to use list of nn.Module in a nn.Module
        see https://discuss.pytorch.org/t/list-of-nn-module-in-a-nn-module/219/2
        """
        def __init__(self, module, prefix):
            self.module = module
            self.prefix = prefix

        def __getitem__(self, i):
            return getattr(self.module, self.prefix + str(i))

    class Propogator(nn.Module):
        """
        Gated Propogator for GGNN
        Using LSTM gating mechanism
        """
        def __init__(self, state_dim, n_node, n_edge_types):
            super(Propogator, self).__init__()

            self.n_node = n_node
            self.n_edge_types = n_edge_types

            self.reset_gate = nn.Sequential(
                nn.Linear(state_dim*3, state_dim),
                nn.Sigmoid()
            )
            self.update_gate = nn.Sequential(
                nn.Linear(state_dim*3, state_dim),
                nn.Sigmoid()
            )
            self.tansform = nn.Sequential(
                nn.Linear(state_dim*3, state_dim),
                nn.Tanh()
            )

        def forward(self, state_in, state_out, state_cur, A):
            A_in = A[:, :, :self.n_node*self.n_edge_types]
            A_out = A[:, :, self.n_node*self.n_edge_types:]

            a_in = torch.bmm(A_in, state_in)
            a_out = torch.bmm(A_out, state_out)
            a = torch.cat((a_in, a_out, state_cur), 2)

            r = self.reset_gate(a)
            z = self.update_gate(a)
            joined_input = torch.cat((a_in, a_out, r * state_cur), 2)
            h_hat = self.tansform(joined_input)

            output = (1 - z) * state_cur + z * h_hat

            return output

    class GGNN(nn.Module):
        """
        Gated Graph Sequence Neural Networks (GGNN)
        Mode: SelectNode
        Implementation based on https://arxiv.org/abs/1511.05493
        """
        def __init__(self, opt):
            super(GGNN, self).__init__()

            # (the repository's ``assert (cond, 'message')`` of a tuple is always true and a
            # SyntaxWarning at compile time: left out)

            self.state_dim = opt.state_dim
            self.annotation_dim = opt.annotation_dim
            self.n_edge_types = opt.n_edge_types
            self.n_node = opt.n_node
            self.n_steps = opt.n_steps

            for i in range(self.n_edge_types):
                in_fc = nn.Linear(self.state_dim, self.state_dim)
                out_fc = nn.Linear(self.state_dim, self.state_dim)
                self.add_module("in_{}".format(i), in_fc)
                self.add_module("out_{}".format(i), out_fc)

            self.in_fcs = AttrProxy(self, "in_")
            self.out_fcs = AttrProxy(self, "out_")

            self.propogator = Propogator(self.state_dim, self.n_node, self.n_edge_types)

            self.out = nn.Sequential(
                nn.Linear(self.state_dim + self.annotation_dim, self.state_dim),
                nn.Tanh(),
                nn.Linear(self.state_dim, 1)
            )

            self._initialization()

        def _initialization(self):
            for m in self.modules():
                if isinstance(m, nn.Linear):
                    m.weight.data.normal_(0.0, 0.02)
                    m.bias.data.fill_(0)

        def forward(self, input, annotation, A):
            prop_state = input

            for i_step in range(self.n_steps):
                in_states = []
                out_states = []
                for i in range(self.n_edge_types):
                    in_states.append(self.in_fcs[i](prop_state))
                    out_states.append(self.out_fcs[i](prop_state))
                in_states = torch.stack(in_states).transpose(0, 1).contiguous()
                in_states = in_states.view(-1, self.n_node*self.n_edge_types, self.state_dim)
                out_states = torch.stack(out_states).transpose(0, 1).contiguous()
                out_states = out_states.view(-1, self.n_node*self.n_edge_types, self.state_dim)

                prop_state = self.propogator(in_states, out_states, prop_state, A)

            join_state = torch.cat((prop_state, annotation), 2)

            output = self.out(join_state)
            output = output.sum(2)

            return output

    def train(epoch, dataloader, net, criterion, optimizer, opt):
        net.train()
        for i, (adj_matrix, annotation, target) in enumerate(dataloader, 0):
            net.zero_grad()

            padding = torch.zeros(len(annotation), opt.n_node, opt.state_dim - opt.annotation_dim).double()
            init_input = torch.cat((annotation, padding), 2)
            if opt.cuda:
                init_input = init_input.cuda()
                adj_matrix = adj_matrix.cuda()
                annotation = annotation.cuda()
                target = target.cuda()

            init_input = Variable(init_input)
            adj_matrix = Variable(adj_matrix)
            annotation = Variable(annotation)
            target = Variable(target)

            output = net(init_input, annotation, adj_matrix)

            loss = criterion(output, target)

            loss.backward()
            optimizer.step()

            if i % int(len(dataloader) / 10 + 1) == 0 and opt.verbal:
                print('[%d/%d][%d/%d] Loss: %.4f' % (epoch, opt.niter, i, len(dataloader), loss.data[0]))

    # ``criterion(output, target).data[0]``: ``.item()`` here (a 0-dim tensor has no index 0)
    def test(dataloader, net, criterion, optimizer, opt):
        test_loss = 0
        correct = 0
        net.eval()
        for i, (adj_matrix, annotation, target) in enumerate(dataloader, 0):
            padding = torch.zeros(len(annotation), opt.n_node, opt.state_dim - opt.annotation_dim).double()
            init_input = torch.cat((annotation, padding), 2)
            if opt.cuda:
                init_input = init_input.cuda()
                adj_matrix = adj_matrix.cuda()
                annotation = annotation.cuda()
                target = target.cuda()

            init_input = Variable(init_input)
            adj_matrix = Variable(adj_matrix)
            annotation = Variable(annotation)
            target = Variable(target)

            output = net(init_input, annotation, adj_matrix)

            test_loss += criterion(output, target).item()
            pred = output.data.max(1, keepdim=True)[1]

            correct += pred.eq(target.data.view_as(pred)).cpu().sum()

        test_loss /= len(dataloader.dataset)
        print('Test set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)'.format(
            test_loss, correct, len(dataloader.dataset),
            100. * correct / len(dataloader.dataset)))

    def load_graphs_from_file(file_name):
        data_list = []
        edge_list = []
        target_list = []
        with open(file_name,'r') as f:
            for line in f:
                if len(line.strip()) == 0:
                    data_list.append([edge_list,target_list])
                    edge_list = []
                    target_list = []
                else:
                    digits = []
                    line_tokens = line.split(" ")
                    if line_tokens[0] == "?":
                        for i in range(1, len(line_tokens)):
                            digits.append(int(line_tokens[i]))
                        target_list.append(digits)
                    else:
                        for i in range(len(line_tokens)):
                            digits.append(int(line_tokens[i]))
                        edge_list.append(digits)
        return data_list

    def find_max_edge_id(data_list):
        max_edge_id = 0
        for data in data_list:
            edges = data[0]
            for item in edges:
                if item[1] > max_edge_id:
                    max_edge_id = item[1]
        return max_edge_id

    def find_max_node_id(data_list):
        max_node_id = 0
        for data in data_list:
            edges = data[0]
            for item in edges:
                if item[0] > max_node_id:
                    max_node_id = item[0]
                if item[2] > max_node_id:
                    max_node_id = item[2]
        return max_node_id

    def find_max_task_id(data_list):
        max_node_id = 0
        for data in data_list:
            targe = data[1]
            for item in targe:
                if item[0] > max_node_id:
                    max_node_id = item[0]
        return max_node_id

    def split_set(data_list):
        n_examples = len(data_list)
        idx = range(n_examples)
        train = idx[:50]
        val = idx[-50:]
        return np.array(data_list)[train],np.array(data_list)[val]

    def data_list_to_standard_data_seq(data_list, n_annotation_dim):
        n_nodes = find_max_node_id(data_list)
        n_tasks = find_max_task_id(data_list)
        task_data_list = []
        for i in range(n_tasks):
            task_data_list.append([])
        for item in data_list:
            edge_list = item[0]
            target_list = item[1]
            for target in target_list:
                task_type = target[0]
                task_output = target[-1]
                annotation = np.zeros([n_nodes, n_annotation_dim])
                annotation[target[1]-1][0] = 1
                task_data_list[task_type-1].append([edge_list, annotation, task_output])
        return task_data_list

    def create_adjacency_matrix(edges, n_nodes, n_edge_types):
        a = np.zeros([n_nodes, n_nodes * n_edge_types * 2])
        for edge in edges:
            src_idx = edge[0]
            e_type = edge[1]
            tgt_idx = edge[2]
            a[tgt_idx-1][(e_type - 1) * n_nodes + src_idx - 1] =  1
            a[src_idx-1][(e_type - 1 + n_edge_types) * n_nodes + tgt_idx - 1] =  1
        return a

    class bAbIDataset():
        """
        Load bAbI tasks for GGNN
        """
        def __init__(self, path, task_id, is_train):

            all_data = load_graphs_from_file(path)
            self.n_edge_types =  find_max_edge_id(all_data)
            self.n_tasks = find_max_task_id(all_data)
            self.n_node = find_max_node_id(all_data)

            all_task_train_data, all_task_val_data = split_set(all_data)

            if is_train:
                self.all_task_train_data = data_list_to_standard_data_seq(all_task_train_data, 1)
                self.data = self.all_task_train_data[task_id]
            else:
                self.all_task_val_data = data_list_to_standard_data_seq(all_task_val_data, 1)
                self.data = self.all_task_val_data[task_id]

        def __getitem__(self, index):
            am = create_adjacency_matrix(self.data[index][0], self.n_node, self.n_edge_types)
            annotation = self.data[index][1]
            target = self.data[index][2] - 1
            return am, annotation, target

        def __len__(self):
            return len(self.data)

    class bAbIDataloader(DataLoader):

        def __init__(self, *args, **kwargs):
            super(bAbIDataloader, self).__init__(*args, **kwargs)

    return types.SimpleNamespace(GGNN=GGNN, train=train, test=test, bAbIDataset=bAbIDataset,
                                 bAbIDataloader=bAbIDataloader)


def _ggnn_file(path):
    # a stand-in for ``babi_data/processed_1/train/4_graphs.txt``: 8 graphs (train and validation sets
    # both take all: ``[:50]``, ``[-50:]``) of 3 edges over
    # 5 nodes, 2 edge types, 3 questions each ("? task node answer"): as many questions as edges,
    # so that ``split_set``'s ``np.array(data_list)`` is not ragged (a ValueError in numpy >= 1.24)
    rs = np.random.RandomState(21)
    lines = []
    for _ in range(8):
        nodes = rs.permutation(5) + 1
        for k in range(3):
            lines.append(f"{nodes[k]} {rs.randint(1, 3)} {nodes[k + 1]}")
        for k in range(3):
            lines.append(f"? 1 {nodes[k]} {nodes[rs.randint(0, 5)]}")
        lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _ggnn_setup(torch, path, n_steps=2):
    import argparse
    G = _ggnn_modules(torch)
    opt = argparse.Namespace(task_id=4, question_id=0, workers=0, batchSize=10, state_dim=4,
                             n_steps=n_steps, niter=2, lr=0.01, cuda=False, verbal=False)
    train_dataset = G.bAbIDataset(path, opt.question_id, True)
    # ``shuffle=True`` in the repository (a torch.randperm draw): in order here
    train_dataloader = G.bAbIDataloader(train_dataset, batch_size=opt.batchSize, shuffle=False, num_workers=0)
    test_dataset = G.bAbIDataset(path, opt.question_id, False)
    test_dataloader = G.bAbIDataloader(test_dataset, batch_size=opt.batchSize, shuffle=False, num_workers=0)
    opt.annotation_dim = 1  # for bAbI
    opt.n_edge_types = train_dataset.n_edge_types
    opt.n_node = train_dataset.n_node
    net = G.GGNN(opt)
    net.double()
    init_params(torch, net, 13, scale=0.5)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(net.parameters(), lr=opt.lr)
    return G, opt, train_dataloader, test_dataloader, net, criterion, optimizer


def _ggnn_program(path):
    def program(torch, log):
        G, opt, train_dataloader, test_dataloader, net, criterion, optimizer = _ggnn_setup(torch, path)
        print(net)
        log("dtypes", [p.dtype for p in net.parameters()])
        adj, ann, target = next(iter(train_dataloader))
        log("batch", [adj, ann, target])
        for epoch in range(0, opt.niter):
            G.train(epoch, train_dataloader, net, criterion, optimizer, opt)
            G.test(test_dataloader, net, criterion, optimizer, opt)
        for n, p in net.named_parameters():
            log(n, p)
            log(n + ".grad", p.grad)
    return program


def test_ggnn_program(tmp_path):
    path = str(tmp_path / "4_graphs.txt")
    _ggnn_file(path)
    # float64 throughout (``net.double()``): the default log tolerance holds
    run_both(_ggnn_program(path))


def _ggnn_step_runs(T, path, compiled):
    G, opt, train_dataloader, _, net, criterion, optimizer = _ggnn_setup(T, path)

    def step(adj_matrix, annotation, target):
        # ``utils/train.py``'s loop body
        net.zero_grad()
        padding = T.zeros(len(annotation), opt.n_node, opt.state_dim - opt.annotation_dim).double()
        init_input = T.cat((annotation, padding), 2)
        output = net(init_input, annotation, adj_matrix)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()
        return loss, output

    if compiled:
        step = T.compile(step)
    out = []
    for epoch in range(1):
        for adj, ann, target in train_dataloader:
            loss, o = step(adj, ann, target)
            out.append((loss.detach().numpy(), o.detach().numpy()))
    params = {n: p.detach().numpy() for n, p in net.named_parameters()}
    grads = {n: p.grad.numpy() for n, p in net.named_parameters()}
    return out, params, grads, step


def test_ggnn_train_step_compiled(tmp_path):
    path = str(tmp_path / "4_graphs.txt")
    _ggnn_file(path)
    torch = get_torch()
    ref = _ggnn_step_runs(torch, path, False)
    eager = _ggnn_step_runs(tracegrad, path, False)
    comp = _ggnn_step_runs(tracegrad, path, True)
    # float64 over 3 Adam steps, whose first steps move each weight by about lr whatever the
    # gradient's size (tiny gradients' rounding shows at 1e-10): 1e-8
    _same_runs(ref, eager, 1e-8, 1e-10)
    _same_runs(eager, comp, 1e-8, 1e-10)
    # (the last batch of 4 is a second shape: a second program)
    stats = comp[3].stats
    assert stats["graph_breaks"] == [] and stats["traces"] == 2, stats


# ---- d-li14/octconv.pytorch ---------------------------------------------------------------------
def _octconv_modules(torch):
    # ``octconv.py`` and ``oct_resnet.py``'s ``Bottleneck`` at 89cd90d (the stored snapshot has
    # no license file; embedded for testing only)
    nn = torch.nn

    class OctaveConv(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, alpha_in=0.5, alpha_out=0.5, stride=1, padding=0, dilation=1,
                     groups=1, bias=False):
            super(OctaveConv, self).__init__()
            self.downsample = nn.AvgPool2d(kernel_size=(2, 2), stride=2)
            self.upsample = nn.Upsample(scale_factor=2, mode='nearest')
            assert stride == 1 or stride == 2, "Stride should be 1 or 2."
            self.stride = stride
            assert 0 <= alpha_in <= 1 and 0 <= alpha_out <= 1, "Alphas should be in the interval from 0 to 1."
            self.alpha_in, self.alpha_out = alpha_in, alpha_out
            self.conv_l2l = None if alpha_in == 0 or alpha_out == 0 else \
                            nn.Conv2d(int(alpha_in * in_channels), int(alpha_out * out_channels),
                                      kernel_size, 1, padding, dilation, groups, bias)
            self.conv_l2h = None if alpha_in == 0 or alpha_out == 1 else \
                            nn.Conv2d(int(alpha_in * in_channels), out_channels - int(alpha_out * out_channels),
                                      kernel_size, 1, padding, dilation, groups, bias)
            self.conv_h2l = None if alpha_in == 1 or alpha_out == 0 else \
                            nn.Conv2d(in_channels - int(alpha_in * in_channels), int(alpha_out * out_channels),
                                      kernel_size, 1, padding, dilation, groups, bias)
            self.conv_h2h = None if alpha_in == 1 or alpha_out == 1 else \
                            nn.Conv2d(in_channels - int(alpha_in * in_channels), out_channels - int(alpha_out * out_channels),
                                      kernel_size, 1, padding, dilation, groups, bias)

        def forward(self, x):
            x_h, x_l = x if type(x) is tuple else (x, None)

            if x_h is not None:
                x_h = self.downsample(x_h) if self.stride == 2 else x_h
                x_h2h = self.conv_h2h(x_h)
                x_h2l = self.conv_h2l(self.downsample(x_h)) if self.alpha_out > 0 else None
            if x_l is not None:
                x_l2h = self.conv_l2h(x_l)
                x_l2h = self.upsample(x_l2h) if self.stride == 1 else x_l2h
                x_l2l = self.downsample(x_l) if self.stride == 2 else x_l
                x_l2l = self.conv_l2l(x_l2l) if self.alpha_out > 0 else None
                x_h = x_l2h + x_h2h
                x_l = x_h2l + x_l2l if x_h2l is not None and x_l2l is not None else None
                return x_h, x_l
            else:
                return x_h2h, x_h2l

    class Conv_BN(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, alpha_in=0.5, alpha_out=0.5, stride=1, padding=0, dilation=1,
                     groups=1, bias=False, norm_layer=nn.BatchNorm2d):
            super(Conv_BN, self).__init__()
            self.conv = OctaveConv(in_channels, out_channels, kernel_size, alpha_in, alpha_out, stride, padding, dilation,
                                   groups, bias)
            self.bn_h = None if alpha_out == 1 else norm_layer(int(out_channels * (1 - alpha_out)))
            self.bn_l = None if alpha_out == 0 else norm_layer(int(out_channels * alpha_out))

        def forward(self, x):
            x_h, x_l = self.conv(x)
            x_h = self.bn_h(x_h)
            x_l = self.bn_l(x_l) if x_l is not None else None
            return x_h, x_l

    class Conv_BN_ACT(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, alpha_in=0.5, alpha_out=0.5, stride=1, padding=0, dilation=1,
                     groups=1, bias=False, norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU):
            super(Conv_BN_ACT, self).__init__()
            self.conv = OctaveConv(in_channels, out_channels, kernel_size, alpha_in, alpha_out, stride, padding, dilation,
                                   groups, bias)
            self.bn_h = None if alpha_out == 1 else norm_layer(int(out_channels * (1 - alpha_out)))
            self.bn_l = None if alpha_out == 0 else norm_layer(int(out_channels * alpha_out))
            self.act = activation_layer(inplace=True)

        def forward(self, x):
            x_h, x_l = self.conv(x)
            x_h = self.act(self.bn_h(x_h))
            x_l = self.act(self.bn_l(x_l)) if x_l is not None else None
            return x_h, x_l

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1,
                     base_width=64, alpha_in=0.5, alpha_out=0.5, norm_layer=None, output=False):
            super(Bottleneck, self).__init__()
            if norm_layer is None:
                norm_layer = nn.BatchNorm2d
            width = int(planes * (base_width / 64.)) * groups
            # Both self.conv2 and self.downsample layers downsample the input when stride != 1
            self.conv1 = Conv_BN_ACT(inplanes, width, kernel_size=1, alpha_in=alpha_in, alpha_out=alpha_out, norm_layer=norm_layer)
            self.conv2 = Conv_BN_ACT(width, width, kernel_size=3, stride=stride, padding=1, groups=groups, norm_layer=norm_layer,
                                     alpha_in=0 if output else 0.5, alpha_out=0 if output else 0.5)
            self.conv3 = Conv_BN(width, planes * self.expansion, kernel_size=1, norm_layer=norm_layer,
                                 alpha_in=0 if output else 0.5, alpha_out=0 if output else 0.5)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = downsample
            self.stride = stride

        def forward(self, x):
            identity_h = x[0] if type(x) is tuple else x
            identity_l = x[1] if type(x) is tuple else None

            x_h, x_l = self.conv1(x)
            x_h, x_l = self.conv2((x_h, x_l))
            x_h, x_l = self.conv3((x_h, x_l))

            if self.downsample is not None:
                identity_h, identity_l = self.downsample(x)

            x_h += identity_h
            x_l = x_l + identity_l if identity_l is not None else None

            x_h = self.relu(x_h)
            x_l = self.relu(x_l) if x_l is not None else None

            return x_h, x_l

    return types.SimpleNamespace(OctaveConv=OctaveConv, Conv_BN=Conv_BN, Conv_BN_ACT=Conv_BN_ACT,
                                 Bottleneck=Bottleneck)


def _oct_net(torch):
    # ``OctResNet``'s stages as its ``_make_layer`` builds them (alpha_in=0 first; a stride-2
    # stage; the output stage with alpha_out=0), one Bottleneck each, at 8 channels
    # (``OctResNet`` itself starts at 64 and ends at 2048 channels: too big for this test)
    O = _octconv_modules(torch)
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, kernel_size=3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(8)
            self.relu = nn.ReLU(inplace=True)
            self.layer1 = nn.Sequential(O.Bottleneck(8, 2, 1, nn.Sequential(O.Conv_BN(8, 8, kernel_size=1, alpha_in=0)),
                                                     alpha_in=0))
            self.layer2 = nn.Sequential(O.Bottleneck(8, 2, 2, nn.Sequential(O.Conv_BN(8, 8, kernel_size=1, stride=2))))
            self.layer3 = nn.Sequential(O.Bottleneck(8, 2, 1, nn.Sequential(O.Conv_BN(8, 8, kernel_size=1, alpha_out=0)),
                                                     alpha_out=0, output=True))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(8, 3)

        def forward(self, x):
            x = self.relu(self.bn1(self.conv1(x)))
            x_h, x_l = self.layer1(x)
            x_h, x_l = self.layer2((x_h, x_l))
            x_h, x_l = self.layer3((x_h, x_l))
            x = self.avgpool(x_h)
            x = x.view(x.size(0), -1)
            return self.fc(x)

    net = Net()
    init_params(torch, net, 17, scale=0.5)
    return O, net


def _oct_batch(i):
    rs = np.random.RandomState(30 + i)
    return rs.standard_normal((2, 3, 8, 8)).astype(np.float32), rs.randint(0, 3, size=(2,))


def _octconv_program(torch, log):
    O, net = _oct_net(torch)
    # the OctaveConv forms alone: high-only in, both out; both in at stride 2; both in, high out
    conv = O.OctaveConv(4, 4, 3, alpha_in=0, padding=1)
    init_params(torch, conv, 18)
    x = torch.tensor(_oct_batch(9)[0][:, :3].repeat(2, 1)[:, :4])
    h, l = conv(x)
    log("h2h/h2l", [h, l])
    conv2 = O.OctaveConv(4, 4, 3, stride=2, padding=1)
    init_params(torch, conv2, 19)
    log("stride 2", list(conv2((h, l))))
    print(net.layer2)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    net.train()
    for i in range(3):
        x, y = _oct_batch(i)
        output = net(torch.from_numpy(x))
        loss = criterion(output, torch.from_numpy(y))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        log("loss", loss)
    net.eval()
    with torch.no_grad():
        log("eval", net(torch.from_numpy(_oct_batch(5)[0])))
    for n, p in net.named_parameters():
        log(n, p)
        log(n + ".grad", p.grad)
    for n, b in net.named_buffers():
        log(n, b)


def test_octconv_program():
    # float32 over 3 SGD steps through 3 bottlenecks with batch statistics of 2 x 8 x 8 images
    # (2 x 2 at the low frequency): 1e-4
    run_both(_octconv_program, rtol=1e-4, atol=1e-5)


def _octconv_step_runs(T, compiled):
    _, net = _oct_net(T)
    criterion = T.nn.CrossEntropyLoss()
    optimizer = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)

    def step(x, y):
        output = net(x)
        loss = criterion(output, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss, output

    if compiled:
        step = T.compile(step)
    out = []
    for i in range(3):
        x, y = _oct_batch(i)
        loss, o = step(T.from_numpy(x), T.from_numpy(y))
        out.append((loss.detach().numpy(), o.detach().numpy()))
    params = {n: p.detach().numpy() for n, p in net.named_parameters()}
    params.update({n: b.numpy() for n, b in net.named_buffers()})
    grads = {n: p.grad.numpy() for n, p in net.named_parameters()}
    return out, params, grads, step


def test_octconv_train_step_compiled():
    torch = get_torch()
    ref = _octconv_step_runs(torch, False)
    eager = _octconv_step_runs(tracegrad, False)
    comp = _octconv_step_runs(tracegrad, True)
    # as the eager test against torch: 1e-4; XLA's fused compiled program against eager: 1e-5
    _same_runs(ref, eager, 1e-4, 1e-5)
    _same_runs(eager, comp, 1e-5, 1e-6)
    stats = comp[3].stats
    assert stats["graph_breaks"] == [] and stats["traces"] == 1, stats


# ---- kuc2477/pytorch-memn2n ---------------------------------------------------------------------
def _memn2n_modules(torch):
    # ``encs.py``, ``model.py``, ``utils.py`` and ``train.py`` at 343c809 (the stored snapshot has
    # no license file; embedded for testing only). ``train``: the ``tqdm`` progress bar and the
    # visdom plots (``visual``) left out; ``.data[0]`` of 0-dim tensors: ``.item()``;
    # ``get_data_loader``'s ``shuffle=True`` (a torch.randperm draw): False
    import os
    import shutil
    from functools import partial as part
    nn = torch.nn
    F = torch.nn.functional
    optim = torch.optim
    MultiStepLR = torch.optim.lr_scheduler.MultiStepLR
    Variable = torch.autograd.Variable
    Tensor, LongTensor = torch.Tensor, torch.LongTensor
    CudaTensor, CudaLongTensor = torch.cuda.FloatTensor, torch.cuda.LongTensor
    DataLoader = torch.utils.data.DataLoader
    default_collate = torch.utils.data.dataloader.default_collate

    def position_encoding(embedding_size, sentence_size, cuda=False):
        dt = CudaTensor if cuda else Tensor
        encoding = Tensor(embedding_size, sentence_size).type(dt)
        encoding = Variable(encoding)

        for i, j in [(i, j) for
                     i in range(embedding_size) for
                     j in range(sentence_size)]:
            encoding[i, j] = (
                ((i+1) - (embedding_size+1)/2) *
                ((j+1) - (sentence_size+1)/2)
            )
        encoding *= 4 / (embedding_size * sentence_size)
        encoding[:, -1] = 1.
        return encoding.t()

    def temporal_encoding(memory_size, embedding, cuda=False):
        dt = CudaLongTensor if cuda else LongTensor
        time = Tensor(range(memory_size)).type(dt)
        time = Variable(time)
        return embedding(time)

    encs = types.SimpleNamespace(position_encoding=position_encoding, temporal_encoding=temporal_encoding)

    class CudaCheckableMixin(object):
        @property
        def is_cuda(self):
            # Simple hack to see if the module is built with CUDA parameters.
            if hasattr(self, '__cuda_flag_cache'):
                return self.__cuda_flag_cache
            self.__cuda_flag_cache = next(self.parameters()).is_cuda
            return self.__cuda_flag_cache

    class Memory(CudaCheckableMixin, nn.Module):
        def __init__(self,
                     vocabulary_size,
                     embedding_size,
                     sentence_size,
                     memory_size,
                     embedding=None,
                     temporal_embedding=None,):
            super().__init__()
            # Memory configurations.
            self.vocabulary_size = vocabulary_size
            self.embedding_size = embedding_size
            self.sentence_size = sentence_size
            self.memory_size = memory_size

            # Memory Embeddings.
            self.embedding = (
                embedding or
                nn.Embedding(vocabulary_size, embedding_size)
            )
            self.temporal_embedding = (
                temporal_embedding or
                nn.Embedding(memory_size, embedding_size)
            )

        def _embed(self, x):
            return self\
                .embedding(x.view(-1, self.sentence_size))\
                .view(
                    -1,
                    self.memory_size,
                    self.sentence_size,
                    self.embedding_size
                )

        def forward(self, x):
            position_encoding = encs.position_encoding(
                self.embedding_size,
                self.sentence_size,
                cuda=self.is_cuda,
            )
            temporal_encoding = encs.temporal_encoding(
                self.memory_size,
                self.temporal_embedding,
                cuda=self.is_cuda,
            )
            return (position_encoding * self._embed(x)).sum(2) + temporal_encoding

    class MemN2N(CudaCheckableMixin, nn.Module):
        WEIGHT_TYING_SCHEMES = ADJACENT, LAYER_WISE, _ = (
            'adjacent', 'layerwise', None
        )

        def __init__(self,
                     vocabulary_hash,
                     vocabulary_size,
                     embedding_size,
                     sentence_size, memory_size, hops=3,
                     weight_tying_scheme=ADJACENT):
            # Model Configurations.
            super().__init__()
            self.vocabulary_hash = vocabulary_hash
            self.vocabulary_size = vocabulary_size
            self.embedding_size = embedding_size
            self.sentence_size = sentence_size
            self.memory_size = memory_size
            self.hops = hops
            self.weight_tying_scheme = weight_tying_scheme

            # Validate Configurations.
            assert self.weight_tying_scheme in self.WEIGHT_TYING_SCHEMES, (
                'Available weight tying schemes are: {schemes}'
                .format(schemes=self.WEIGHT_TYING_SCHEMES)
            )

            # Memories.
            self.A_memories = nn.ModuleList()
            self.C_memories = nn.ModuleList()
            for i in range(hops):
                # Check if there's any previous memory layer.
                y = i > 0
                A_prev = self.A_memories[i-1] if y else None
                C_prev = self.C_memories[i-1] if y else None

                # 2.2.1. Adjacent Weight Tying
                if self.tied_adjacent:
                    A_embedding = C_prev.embedding if y else None
                    C_embedding = None
                    A_temporal_embedding = C_prev.temporal_embedding if y else None
                    C_temporal_embedding = None
                # 2.2.2. Layer-Wise Weight Tying
                elif self.tied_layers:
                    A_embedding = A_prev.embedding if y else None
                    C_embedding = C_prev.embedding if y else None
                    A_temporal_embedding = A_prev.temporal_embedding if y else None
                    C_temporal_embedding = C_prev.temporal_embedding if y else None
                # No Weight Tying
                else:
                    A_embedding = None
                    C_embedding = None
                    A_temporal_embedding = None
                    C_temporal_embedding = None

                self.A_memories.append(Memory(
                    self.vocabulary_size,
                    self.embedding_size,
                    self.sentence_size,
                    self.memory_size,
                    embedding=A_embedding,
                    temporal_embedding=A_temporal_embedding,
                ))
                self.C_memories.append(Memory(
                    self.vocabulary_size,
                    self.embedding_size,
                    self.sentence_size,
                    self.memory_size,
                    embedding=C_embedding,
                    temporal_embedding=C_temporal_embedding
                ))

            # Affine layer & Query embedding layer.
            if self.tied_adjacent:
                deepest_embedding = self.C_memories[-1].embedding
                first_embedding = self.A_memories[0].embedding
                self.linear = part(F.linear, weight=deepest_embedding.weight)
                self.query_embedding = first_embedding
            else:
                self.linear = nn.Linear(self.embedding_size, self.vocabulary_size)
                self.query_embedding = nn.Embedding(
                    self.vocabulary_size,
                    self.embedding_size
                )

        def forward(self, x, q, return_encoded=False):
            # Encode the very first query.
            u = self._embed_query(q)
            # Reason through the memories.
            for A, C in zip(self.A_memories, self.C_memories):
                m = A(x)
                c = C(x)
                p = self._match_between_query_and_input_memory(u, m)
                o = self._response_from_output_memory(p, c)
                u = o + u
            # Return the encoded features or estimated scores of the vocabulary.
            return o + u if return_encoded else self.linear(o + u)

        def _embed_query(self, q):
            position_encoding = encs.position_encoding(
                self.embedding_size,
                self.sentence_size,
                cuda=self.is_cuda,
            )
            return (position_encoding * self.query_embedding(q)).sum(1)

        def _match_between_query_and_input_memory(self, u, m):
            return F.softmax((m * u.unsqueeze(1).expand_as(m)).sum(2))

        def _response_from_output_memory(self, p, c):
            return (p.unsqueeze(2).expand_as(c) * c).sum(1)

        @property
        def name(self):
            return (
                'MemN2N'
                '-{hops}hops{weight_tying_scheme}'
                '-{vocabulary_size}vocab-{sentence_size}len-{memory_size}mem'
                '-{embedding_size}emb-{vocabulary_hash}'
            ).format(
                hops=self.hops,
                weight_tying_scheme=(
                    '-'+self.weight_tying_scheme if self.weight_tying_scheme else
                    ''
                ),
                vocabulary_size=self.vocabulary_size,
                sentence_size=self.sentence_size,
                memory_size=self.memory_size,
                embedding_size=self.embedding_size,
                vocabulary_hash=self.vocabulary_hash,
            )

        @property
        def tied_adjacent(self):
            return self.weight_tying_scheme == self.ADJACENT

        @property
        def tied_layers(self):
            return self.weight_tying_scheme == self.LAYER_WISE

    def get_data_loader(dataset, batch_size, cuda=False, collate_fn=None):

        return DataLoader(
            dataset, batch_size=batch_size,
            shuffle=False, collate_fn=(collate_fn or default_collate),
            **({'num_workers': 2, 'pin_memory': True} if cuda else {})
        )

    def save_checkpoint(model, model_dir, epoch, precision, best=True):
        path = os.path.join(model_dir, model.name)
        path_best = os.path.join(model_dir, '{}-best'.format(model.name))

        # save the checkpoint.
        if not os.path.exists(model_dir):
            os.makedirs(model_dir)
        torch.save({
            'state': model.state_dict(),
            'epoch': epoch,
            'precision': precision,
        }, path)

        # override the best model if it's the best.
        if best:
            shutil.copy(path, path_best)
            print('=> updated the best model of {name} at {path}'.format(
                name=model.name, path=os.path.basename(path_best)
            ))

        # notify that we successfully saved the checkpoint.
        print('=> saved the model {name} to {path}'.format(
            name=model.name, path=os.path.basename(path)
        ))

    def load_checkpoint(model, model_dir, best=True):
        path = os.path.join(model_dir, model.name)
        path_best = os.path.join(model_dir, '{}-best'.format(model.name))

        # load the checkpoint.
        checkpoint = torch.load(path_best if best else path)
        print('=> loaded checkpoint of {name} from {path}'.format(
            name=model.name, path=os.path.basename(path_best if best else path)
        ))

        # load parameters and return the checkpoint's epoch and precision.
        model.load_state_dict(checkpoint['state'])
        epoch = checkpoint['epoch']
        precision = checkpoint['precision']
        return epoch, precision

    def validate(model, dataset, test_size=256,
                 cuda=False, collate_fn=None, verbose=True):
        data_loader = get_data_loader(
            dataset, 32, collate_fn=collate_fn, cuda=cuda
        )
        total_tested = 0
        total_correct = 0
        for x, q, a in data_loader:
            # break on test size.
            if total_tested >= test_size:
                break
            # test the model.
            x = Variable(x).cuda() if cuda else Variable(x)
            q = Variable(q).cuda() if cuda else Variable(q)
            a = Variable(a).cuda() if cuda else Variable(a)
            scores = model(x, q)
            _, predicted = scores.max(1)
            # update statistics.
            total_correct += (predicted == a).sum().item()
            total_tested += len(x)

        precision = total_correct / total_tested
        if verbose:
            print('=> precision: {:.3f}'.format(precision))
        return precision

    def train(model, train_dataset, test_dataset=None, collate_fn=None,
              model_dir='models', lr=1e-3, lr_decay=.1,
              lr_decay_epochs=None, weight_decay=1e-04, grad_clip_norm=10.,
              batch_size=32, test_size=256, epochs=5,
              eval_log_interval=30,
              gradient_log_interval=50,
              loss_log_interval=30,
              checkpoint_interval=500,
              resume_best=False,
              resume_latest=False,
              cuda=True, log=None):
        criterion = nn.CrossEntropyLoss()
        optimizer = optim.Adam(
            model.parameters(),
            lr=lr, weight_decay=weight_decay,
        )
        scheduler = MultiStepLR(optimizer, lr_decay_epochs, gamma=lr_decay)

        model.train()
        epoch_start = 1
        best_precision = 0

        if resume_best or resume_latest:
            epoch_start, best_precision = load_checkpoint(
                model, model_dir, best=resume_best
            )

        for epoch in range(epoch_start, epochs+1):
            scheduler.step(epoch-1)
            data_loader = get_data_loader(
                train_dataset, batch_size,
                cuda=cuda, collate_fn=collate_fn
            )
            data_stream = enumerate(data_loader, 1)

            for batch_index, (x, q, a) in data_stream:
                # where are we?
                data_size = len(x)
                dataset_size = len(data_loader.dataset)
                dataset_batches = len(data_loader)
                iteration = (
                    (epoch-1)*(dataset_size // batch_size) +
                    batch_index + 1
                )

                x = Variable(x).cuda() if cuda else Variable(x)
                q = Variable(q).cuda() if cuda else Variable(q)
                a = Variable(a).cuda() if cuda else Variable(a)

                optimizer.zero_grad()
                scores = model(x, q)
                loss = criterion(scores, a)
                loss.backward()

                _, predicted = scores.max(1)
                precision = (predicted == a).sum().item() / data_size

                if grad_clip_norm:
                    nn.utils.clip_grad_norm(model.parameters(), grad_clip_norm)
                optimizer.step()

                # update & display statistics.
                log("description", (
                    'epoch: {epoch}/{epochs} | '
                    'total iteration: {iteration} | '
                    'progress: [{trained}/{total}] ({progress:.0f}%) | '
                    'prec: {prec:.4} | '
                    'loss: {loss:.4} '
                ).format(
                    epoch=epoch,
                    epochs=epochs,
                    iteration=iteration,
                    trained=(batch_index+1)*batch_size,
                    total=dataset_size,
                    progress=(100.*(batch_index+1)/dataset_batches),
                    prec=precision,
                    loss=loss.item(),
                ))

                # Send gradient norms to the visdom server.
                if iteration % gradient_log_interval == 0:
                    names, gradients = zip(*[
                        (n, p.grad.norm().data) for
                        n, p in model.named_parameters()
                    ])
                    log("gradient l2 norms", list(zip(names, gradients)))

                if iteration % checkpoint_interval == 0:
                    # notify that we've reached to a new checkpoint.
                    print()
                    print()
                    print('#############')
                    print('# checkpoint!')
                    print('#############')
                    print()

                    # test the model.
                    model_precision = validate(
                        model, test_dataset or train_dataset,
                        test_size=test_size, cuda=cuda,
                        collate_fn=collate_fn, verbose=True
                    )

                    # update best precision if needed.
                    is_best = model_precision > best_precision
                    best_precision = max(model_precision, best_precision)

                    # save the checkpoint.
                    save_checkpoint(
                        model, model_dir, epoch,
                        model_precision, best=is_best
                    )
                    print()

    return types.SimpleNamespace(MemN2N=MemN2N, train=train, validate=validate,
                                 load_checkpoint=load_checkpoint, encs=encs)


def _memn2n_data(torch, n, seed):
    # a stand-in for the bAbI dataset: stories of 4 sentences of 5 word ids (0 pads), a query of
    # 5 ids, an answer among the 12 words
    rs = np.random.RandomState(seed)
    x = rs.randint(0, 12, size=(n, 4, 5))
    q = rs.randint(0, 12, size=(n, 5))
    a = x[np.arange(n), rs.randint(0, 4, size=n), 0]
    return [(torch.from_numpy(x[i]), torch.from_numpy(q[i]), int(a[i])) for i in range(n)]


def _memn2n_program(model_dir, scheme):
    def program(torch, log):
        import os
        model_dir_ = os.path.join(model_dir, torch.__name__)    # one folder per run
        M = _memn2n_modules(torch)
        pr = printer(log)    # the progress line's numbers compared with tolerances

        def train_log(key, value):
            pr(value) if key == "description" else log(key, value)

        model = M.MemN2N("h0", 12, 6, 5, 4, hops=3, weight_tying_scheme=scheme)
        init_params(torch, model, 23, scale=0.4)
        log("name", model.name)
        log("parameters", [n for n, _ in model.named_parameters()])
        log("position_encoding", M.encs.position_encoding(6, 5))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            M.train(model, _memn2n_data(torch, 10, 1), _memn2n_data(torch, 6, 2), model_dir=model_dir_,
                    lr=0.05, lr_decay_epochs=[2], batch_size=4, epochs=2, gradient_log_interval=2,
                    checkpoint_interval=3, cuda=False, log=train_log)
        # the implicit softmax dim, ``clip_grad_norm`` (no underscore), ``scheduler.step(epoch)``
        log("warnings", sorted({w.category.__name__ + ": " + str(w.message)[:30] for w in caught
                                if "softmax" in str(w.message) or "clip_grad_norm" in str(w.message)
                                or "epoch parameter" in str(w.message)}))
        for n, p in model.named_parameters():
            log(n, p)
        fresh = M.MemN2N("h0", 12, 6, 5, 4, hops=3, weight_tying_scheme=scheme)
        epoch, precision = M.load_checkpoint(fresh, model_dir_, best=False)
        log("checkpoint", [epoch, precision])
        with torch.no_grad():
            x, q, _ = _memn2n_data(torch, 1, 3)[0]
            log("resumed", fresh(x[None], q[None]))
            log("encoded", fresh(x[None], q[None], return_encoded=True))
    return program


@pytest.mark.parametrize("scheme", ["adjacent", "layerwise"])
def test_memn2n_program(tmp_path, scheme):
    # float32 over 5 Adam steps of three hops of softmax attention: 1e-4
    run_both(_memn2n_program(str(tmp_path / "models"), scheme), rtol=1e-4, atol=1e-5)


def _memn2n_step_runs(T, compiled):
    M = _memn2n_modules(T)
    model = M.MemN2N("h0", 12, 6, 5, 4, hops=3)
    init_params(T, model, 23, scale=0.4)
    criterion = T.nn.CrossEntropyLoss()
    optimizer = T.optim.Adam(model.parameters(), lr=0.05, weight_decay=1e-4)

    def step(x, q, a):
        # ``train.py``'s loop body
        optimizer.zero_grad()
        scores = model(x, q)
        loss = criterion(scores, a)
        loss.backward()
        T.nn.utils.clip_grad_norm_(model.parameters(), 10.)
        optimizer.step()
        return loss, scores

    if compiled:
        step = T.compile(step)
    out = []
    loader = T.utils.data.DataLoader(_memn2n_data(T, 12, 1), batch_size=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for x, q, a in loader:
            loss, o = step(x, q, a)
            out.append((loss.detach().numpy(), o.detach().numpy()))
    params = {n: p.detach().numpy() for n, p in model.named_parameters()}
    grads = {n: p.grad.numpy() for n, p in model.named_parameters()}
    return out, params, grads, step


def test_memn2n_train_step_compiled():
    torch = get_torch()
    ref = _memn2n_step_runs(torch, False)
    eager = _memn2n_step_runs(tracegrad, False)
    comp = _memn2n_step_runs(tracegrad, True)
    # float32 over 3 Adam steps: 1e-4 against torch; compiled against eager: 1e-5
    _same_runs(ref, eager, 1e-4, 1e-5)
    _same_runs(eager, comp, 1e-5, 1e-6)
    # the position encoding's 30 item writes into ``Tensor(6, 5)`` are constants of the program
    stats = comp[3].stats
    assert stats["graph_breaks"] == [] and stats["traces"] == 1, stats


# ---- iamtrask/NALU-pytorch ----------------------------------------------------------------------
def _nalu_modules(torch, print=print):
    # ``models/nac.py``, ``models/nalu.py``, ``models/models.py``'s ``MultiLayerNAC``/
    # ``MultiLayerNALU`` and ``function_learning.py``'s ``ARITHMETIC_FUNCTIONS``,
    # ``generate_data``, ``train``, ``test`` at 42165bb (the stored snapshot has no license file;
    # embedded for testing only). ``generate_data``'s draw ``torch.FloatTensor(dim).uniform_(*support)``
    # comes from a numpy stream (``_nalu_uniform``); ``MultiLayerNet`` (``activation is 'none'``, a
    # SyntaxWarning) is left out
    import math
    import random
    nn = torch.nn
    init = torch.nn.init
    F = torch.nn.functional
    Parameter = torch.nn.parameter.Parameter

    ARITHMETIC_FUNCTIONS = {
        'add': lambda x, y: x + y,
        'sub': lambda x, y: x - y,
        'mul': lambda x, y: x * y,
        'div': lambda x, y: x / y,
        'squared': lambda x, y: torch.pow(x, 2),
    }

    class NAC(nn.Module):
        """A Neural Accumulator [1].

        NAC supports the ability to accumulate quantities
        additively which is a desirable inductive bias for
        linear extrapolation.

        Attributes:
            in_features: size of the input sample.
            out_features: size of the output sample.

        Sources:
            [1]: https://arxiv.org/abs/1808.00508
        """
        def __init__(self, in_features, out_features):
            super().__init__()
            self.in_features = in_features
            self.out_features = out_features

            self.W_hat = Parameter(torch.Tensor(out_features, in_features))
            self.M_hat = Parameter(torch.Tensor(out_features, in_features))
            self.W = Parameter(F.tanh(self.W_hat) * F.sigmoid(self.M_hat))
            self.register_parameter('bias', None)

            init.kaiming_uniform_(self.W_hat, a=math.sqrt(5))
            init.kaiming_uniform_(self.M_hat, a=math.sqrt(5))

        def forward(self, input):
            return F.linear(input, self.W, self.bias)

        def extra_repr(self):
            return 'in_features={}, out_features={}'.format(
                self.in_features, self.out_features
            )

    class NALU(nn.Module):
        """A Neural Arithmetic Logic Unit [1].

        NALU uses 2 NACs with tied weights to support
        multiplicative extrapolation.

        Attributes:
            in_features: size of the input sample.
            out_features: size of the output sample.

        Sources:
            [1]: https://arxiv.org/abs/1808.00508
        """
        def __init__(self, in_features, out_features):
            super().__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.eps = 1e-10

            self.G = Parameter(torch.Tensor(out_features, in_features))
            self.W = Parameter(torch.Tensor(out_features, in_features))
            self.nac = NAC(in_features, out_features)

            init.kaiming_uniform_(self.G, a=math.sqrt(5))
            init.kaiming_uniform_(self.W, a=math.sqrt(5))

        def forward(self, input):
            a = self.nac(input)
            g = F.sigmoid(F.linear(input, self.G, None))
            add_sub = g * a
            log_input = torch.log(torch.abs(input) + self.eps)
            m = torch.exp(F.linear(log_input, self.W, None))
            mul_div = (1 - g) * m
            y = add_sub + mul_div
            return y

        def extra_repr(self):
            return 'in_features={}, out_features={}'.format(
                self.in_features, self.out_features
            )

    class MultiLayerNAC(nn.Module):
        def __init__(self, num_layers, in_dim, hidden_dim, out_dim):
            super().__init__()
            self.num_layers = num_layers
            self.in_dim = in_dim
            self.hidden_dim = hidden_dim
            self.out_dim = out_dim

            layers = []
            layers.append(NAC(in_dim, hidden_dim))
            for i in range(num_layers - 2):
                layers.append(NAC(hidden_dim, hidden_dim))
            layers.append(NAC(hidden_dim, out_dim))

            self.model = nn.Sequential(*layers)

        def forward(self, x):
            out = self.model(x)
            return out

    class MultiLayerNALU(nn.Module):
        def __init__(self, num_layers, in_dim, hidden_dim, out_dim):
            super().__init__()
            self.num_layers = num_layers
            self.in_dim = in_dim
            self.hidden_dim = hidden_dim
            self.out_dim = out_dim

            layers = []
            layers.append(NALU(in_dim, hidden_dim))
            for i in range(num_layers - 2):
                layers.append(NALU(hidden_dim, hidden_dim))
            layers.append(NALU(hidden_dim, out_dim))

            self.model = nn.Sequential(*layers)

        def forward(self, x):
            out = self.model(x)
            return out

    def generate_data(num_train, num_test, dim, num_sum, fn, support):
        data = _nalu_uniform(torch, dim, *support).unsqueeze_(1)
        X, y = [], []
        for i in range(num_train + num_test):
            idx_a = random.sample(range(dim), num_sum)
            idx_b = random.sample([x for x in range(dim) if x not in idx_a], num_sum)
            a, b = data[idx_a].sum(), data[idx_b].sum()
            X.append([a, b])
            y.append(fn(a, b))
        X = torch.FloatTensor(X)
        y = torch.FloatTensor(y).unsqueeze_(1)
        indices = list(range(num_train + num_test))
        np.random.shuffle(indices)
        X_train, y_train = X[indices[num_test:]], y[indices[num_test:]]
        X_test, y_test = X[indices[:num_test]], y[indices[:num_test]]
        return X_train, y_train, X_test, y_test

    def train(model, optimizer, data, target, num_iters):
        for i in range(num_iters):
            out = model(data)
            loss = F.mse_loss(out, target)
            mea = torch.mean(torch.abs(target - out))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if i % 1000 == 0:
                print("\t{}/{}: loss: {:.7f} - mea: {:.7f}".format(
                    i+1, num_iters, loss.item(), mea.item())
                )

    def test(model, data, target):
        with torch.no_grad():
            out = model(data)
            return torch.abs(target - out)

    return types.SimpleNamespace(ARITHMETIC_FUNCTIONS=ARITHMETIC_FUNCTIONS, MultiLayerNAC=MultiLayerNAC,
                                 MultiLayerNALU=MultiLayerNALU, NALU=NALU, generate_data=generate_data,
                                 train=train, test=test)


def _nalu_uniform(torch, dim, lo, hi):
    return torch.tensor(np.random.uniform(lo, hi, size=dim).astype(np.float32))


def _nalu_program(torch, log):
    N = _nalu_modules(torch, print=printer(log))
    with seeded(4):
        # ('squared' trains the NALU towards targets up to 100: after 12 steps float32 rounding
        # has moved torch's and tracegrad's gradients 0.4% off the float64 ones, where both agree)
        for fn_str in ("add", "mul"):
            X_train, y_train, X_test, y_test = N.generate_data(
                num_train=20, num_test=5, dim=12, num_sum=2, fn=N.ARITHMETIC_FUNCTIONS[fn_str],
                support=[-5, 5])
            log(fn_str + " data", [X_train, y_train, X_test])
            for cls in (N.MultiLayerNAC, N.MultiLayerNALU):
                net = cls(num_layers=2, in_dim=2, hidden_dim=2, out_dim=1)
                init_params(torch, net, 5, scale=0.5)
                optim = torch.optim.Adam(net.parameters(), lr=1e-2)
                N.train(net, optim, X_train, y_train, 12)
                log("test mse", N.test(net, X_test, y_test).mean().item())
                for n, p in net.named_parameters():
                    log(n, p)
                    log(n + ".grad", p.grad)
    print(N.NALU(2, 3))


def test_nalu_program():
    # float32 through exp/log over 12 Adam steps: 1e-4
    run_both(_nalu_program, rtol=1e-4, atol=1e-5)


def _nalu_step_runs(T, compiled):
    N = _nalu_modules(T)
    with seeded(4):
        X_train, y_train, _, _ = N.generate_data(num_train=20, num_test=5, dim=12, num_sum=2,
                                                 fn=N.ARITHMETIC_FUNCTIONS["mul"], support=[-5, 5])
    net = N.MultiLayerNALU(num_layers=3, in_dim=2, hidden_dim=2, out_dim=1)
    init_params(T, net, 5, scale=0.5)
    optimizer = T.optim.Adam(net.parameters(), lr=1e-2)
    F = T.nn.functional

    def step(data, target):
        # ``function_learning.train``'s loop body
        out = net(data)
        loss = F.mse_loss(out, target)
        mea = T.mean(T.abs(target - out))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss, mea

    if compiled:
        step = T.compile(step)
    out = []
    for i in range(4):
        loss, mea = step(X_train, y_train)
        out.append((loss.detach().numpy(), mea.detach().numpy()))
    params = {n: p.detach().numpy() for n, p in net.named_parameters()}
    # the NACs' W_hat/M_hat feed nothing (``W`` is its own parameter): their grads stay None
    grads = {n: p.grad.numpy() for n, p in net.named_parameters() if p.grad is not None}
    return out, params, grads, step


def test_nalu_train_step_compiled():
    torch = get_torch()
    ref = _nalu_step_runs(torch, False)
    eager = _nalu_step_runs(tracegrad, False)
    comp = _nalu_step_runs(tracegrad, True)
    assert sorted(ref[2]) == sorted(eager[2]) == sorted(comp[2])
    # float32 through exp(W @ log|x|) over 4 Adam steps: 1e-4 against torch; compiled: 1e-5
    _same_runs(ref, eager, 1e-4, 1e-5)
    _same_runs(eager, comp, 1e-5, 1e-6)
    stats = comp[3].stats
    assert stats["graph_breaks"] == [] and stats["traces"] == 1, stats
