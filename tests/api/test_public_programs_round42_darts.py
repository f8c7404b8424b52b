"""Round 42's second file of public PyTorch programs, run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), from a repository no
earlier round used, quark0/darts at f276dd3 (Differentiable Architecture Search, Liu et al. 2019):

- ``cnn/operations.py`` (``OPS``: ``Zero`` by ``x.mul(0.)`` of a strided slice, pooling with
  ``count_include_pad=False``, separable and dilated depthwise convolutions, ``FactorizedReduce``
  with ``torch.cat`` of two strided 1x1 convolutions, one of a ``[:, :, 1:, 1:]`` slice) and
  ``cnn/genotypes.py``.
- ``cnn/model_search.py``: ``MixedOp`` (a Python ``sum`` of softmax-weighted ops, starting from
  the int 0), ``Cell``, ``Network`` with architecture weights made by
  ``Variable(1e-3*torch.randn(...), requires_grad=True)`` kept in a list (no ``Parameter``),
  ``new()`` copying them through ``.data.copy_``, and ``genotype()`` (softmax to numpy, sorted
  edges, a ``namedtuple`` printed with its ``range`` fields).
- ``cnn/architect.py``: the first-order step and the unrolled one: ``torch.autograd.grad`` of the
  training loss over all weights flattened by ``_concat``, SGD's ``momentum_buffer`` state read
  back (a bare ``except`` when there is none), ``theta.sub(eta, moment+dtheta)`` (the deprecated
  ``sub(Number, Tensor)`` overload), a new model loaded from ``theta`` slices through
  ``state_dict().update``/``load_state_dict``, the unrolled model's ``.grad``s, the
  finite-difference Hessian-vector product (``p.data.add_(R, v)`` with a 0-dim tensor ``R``,
  ``sub_(2*R, v)``, two ``autograd.grad`` calls over the list of architecture weights,
  ``(x-y).div_(2*R)``), ``g.data.sub_(eta, ig.data)`` and ``v.grad = Variable(g.data)``, then
  Adam with ``betas=(0.5, 0.999)`` and weight decay on the architecture weights.
- ``cnn/train_search.py`` (``train``/``infer``: ``nn.utils.clip_grad_norm``, the deprecated name;
  ``CosineAnnealingLR`` with a float ``T_max`` stepped before the optimizer, ``get_lr()``'s
  warning; the softmaxed alphas printed with their ``grad_fn``) and ``cnn/utils.py``
  (``AvgrageMeter``, ``accuracy``, ``count_parameters_in_MB``: ``np.sum`` of a generator, a
  ``TypeError`` in numpy 2, logged, then the builtin ``sum``).

Changes, the same on both sides: ``.cuda()`` and ``.cuda(async=True)`` (a syntax error since
Python 3.7) are left out, the ``logging`` calls are ``print``, ``loss.data[0]`` is ``.item()``;
sizes are tiny (2 initial channels, 3 layers, so one normal and two reduction cells, 8 x 8
images, batches of 4, two epochs: a first-order step, then an unrolled one, ``args.unrolled``
set per epoch); CIFAR-10 is 8 seeded images and the ``SubsetRandomSampler``s are the index
lists; ``torch.randn`` draws come from a seeded numpy stream (``parity.SeededTorch``) and the
weights are overwritten from numpy after construction.
"""
from types import SimpleNamespace

import numpy as np
import pytest
from parity import SeededTorch, init_params, run_both

torch = pytest.importorskip("torch")


# ---- quark0/darts ---------------------------------------------------------------------------------
def _darts(torch):
    """cnn/operations.py, cnn/genotypes.py (``Genotype``, ``PRIMITIVES``), cnn/model_search.py,
    cnn/architect.py and cnn/utils.py's ``AvgrageMeter``/``accuracy``/``count_parameters_in_MB``,
    as written but for the ``.cuda()`` calls (left out: CPU)."""
    from collections import namedtuple
    nn = torch.nn
    F = torch.nn.functional
    Variable = torch.autograd.Variable

    # ---- cnn/operations.py ----
    OPS = {
      'none' : lambda C, stride, affine: Zero(stride),
      'avg_pool_3x3' : lambda C, stride, affine: nn.AvgPool2d(3, stride=stride, padding=1, count_include_pad=False),
      'max_pool_3x3' : lambda C, stride, affine: nn.MaxPool2d(3, stride=stride, padding=1),
      'skip_connect' : lambda C, stride, affine: Identity() if stride == 1 else FactorizedReduce(C, C, affine=affine),
      'sep_conv_3x3' : lambda C, stride, affine: SepConv(C, C, 3, stride, 1, affine=affine),
      'sep_conv_5x5' : lambda C, stride, affine: SepConv(C, C, 5, stride, 2, affine=affine),
      'sep_conv_7x7' : lambda C, stride, affine: SepConv(C, C, 7, stride, 3, affine=affine),
      'dil_conv_3x3' : lambda C, stride, affine: DilConv(C, C, 3, stride, 2, 2, affine=affine),
      'dil_conv_5x5' : lambda C, stride, affine: DilConv(C, C, 5, stride, 4, 2, affine=affine),
    }

    class ReLUConvBN(nn.Module):

      def __init__(self, C_in, C_out, kernel_size, stride, padding, affine=True):
        super(ReLUConvBN, self).__init__()
        self.op = nn.Sequential(
          nn.ReLU(inplace=False),
          nn.Conv2d(C_in, C_out, kernel_size, stride=stride, padding=padding, bias=False),
          nn.BatchNorm2d(C_out, affine=affine)
        )

      def forward(self, x):
        return self.op(x)

    class DilConv(nn.Module):

      def __init__(self, C_in, C_out, kernel_size, stride, padding, dilation, affine=True):
        super(DilConv, self).__init__()
        self.op = nn.Sequential(
          nn.ReLU(inplace=False),
          nn.Conv2d(C_in, C_in, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, groups=C_in, bias=False),
          nn.Conv2d(C_in, C_out, kernel_size=1, padding=0, bias=False),
          nn.BatchNorm2d(C_out, affine=affine),
          )

      def forward(self, x):
        return self.op(x)

    class SepConv(nn.Module):

      def __init__(self, C_in, C_out, kernel_size, stride, padding, affine=True):
        super(SepConv, self).__init__()
        self.op = nn.Sequential(
          nn.ReLU(inplace=False),
          nn.Conv2d(C_in, C_in, kernel_size=kernel_size, stride=stride, padding=padding, groups=C_in, bias=False),
          nn.Conv2d(C_in, C_in, kernel_size=1, padding=0, bias=False),
          nn.BatchNorm2d(C_in, affine=affine),
          nn.ReLU(inplace=False),
          nn.Conv2d(C_in, C_in, kernel_size=kernel_size, stride=1, padding=padding, groups=C_in, bias=False),
          nn.Conv2d(C_in, C_out, kernel_size=1, padding=0, bias=False),
          nn.BatchNorm2d(C_out, affine=affine),
          )

      def forward(self, x):
        return self.op(x)

    class Identity(nn.Module):

      def __init__(self):
        super(Identity, self).__init__()

      def forward(self, x):
        return x

    class Zero(nn.Module):

      def __init__(self, stride):
        super(Zero, self).__init__()
        self.stride = stride

      def forward(self, x):
        if self.stride == 1:
          return x.mul(0.)
        return x[:,:,::self.stride,::self.stride].mul(0.)

    class FactorizedReduce(nn.Module):

      def __init__(self, C_in, C_out, affine=True):
        super(FactorizedReduce, self).__init__()
        assert C_out % 2 == 0
        self.relu = nn.ReLU(inplace=False)
        self.conv_1 = nn.Conv2d(C_in, C_out // 2, 1, stride=2, padding=0, bias=False)
        self.conv_2 = nn.Conv2d(C_in, C_out // 2, 1, stride=2, padding=0, bias=False)
        self.bn = nn.BatchNorm2d(C_out, affine=affine)

      def forward(self, x):
        x = self.relu(x)
        out = torch.cat([self.conv_1(x), self.conv_2(x[:,:,1:,1:])], dim=1)
        out = self.bn(out)
        return out

    # ---- cnn/genotypes.py ----
    Genotype = namedtuple('Genotype', 'normal normal_concat reduce reduce_concat')

    PRIMITIVES = [
        'none',
        'max_pool_3x3',
        'avg_pool_3x3',
        'skip_connect',
        'sep_conv_3x3',
        'sep_conv_5x5',
        'dil_conv_3x3',
        'dil_conv_5x5'
    ]

    # ---- cnn/model_search.py ----
    class MixedOp(nn.Module):

      def __init__(self, C, stride):
        super(MixedOp, self).__init__()
        self._ops = nn.ModuleList()
        for primitive in PRIMITIVES:
          op = OPS[primitive](C, stride, False)
          if 'pool' in primitive:
            op = nn.Sequential(op, nn.BatchNorm2d(C, affine=False))
          self._ops.append(op)

      def forward(self, x, weights):
        return sum(w * op(x) for w, op in zip(weights, self._ops))

    class Cell(nn.Module):

      def __init__(self, steps, multiplier, C_prev_prev, C_prev, C, reduction, reduction_prev):
        super(Cell, self).__init__()
        self.reduction = reduction

        if reduction_prev:
          self.preprocess0 = FactorizedReduce(C_prev_prev, C, affine=False)
        else:
          self.preprocess0 = ReLUConvBN(C_prev_prev, C, 1, 1, 0, affine=False)
        self.preprocess1 = ReLUConvBN(C_prev, C, 1, 1, 0, affine=False)
        self._steps = steps
        self._multiplier = multiplier

        self._ops = nn.ModuleList()
        self._bns = nn.ModuleList()
        for i in range(self._steps):
          for j in range(2+i):
            stride = 2 if reduction and j < 2 else 1
            op = MixedOp(C, stride)
            self._ops.append(op)

      def forward(self, s0, s1, weights):
        s0 = self.preprocess0(s0)
        s1 = self.preprocess1(s1)

        states = [s0, s1]
        offset = 0
        for i in range(self._steps):
          s = sum(self._ops[offset+j](h, weights[offset+j]) for j, h in enumerate(states))
          offset += len(states)
          states.append(s)

        return torch.cat(states[-self._multiplier:], dim=1)

    class Network(nn.Module):

      def __init__(self, C, num_classes, layers, criterion, steps=4, multiplier=4, stem_multiplier=3):
        super(Network, self).__init__()
        self._C = C
        self._num_classes = num_classes
        self._layers = layers
        self._criterion = criterion
        self._steps = steps
        self._multiplier = multiplier

        C_curr = stem_multiplier*C
        self.stem = nn.Sequential(
          nn.Conv2d(3, C_curr, 3, padding=1, bias=False),
          nn.BatchNorm2d(C_curr)
        )

        C_prev_prev, C_prev, C_curr = C_curr, C_curr, C
        self.cells = nn.ModuleList()
        reduction_prev = False
        for i in range(layers):
          if i in [layers//3, 2*layers//3]:
            C_curr *= 2
            reduction = True
          else:
            reduction = False
          cell = Cell(steps, multiplier, C_prev_prev, C_prev, C_curr, reduction, reduction_prev)
          reduction_prev = reduction
          self.cells += [cell]
          C_prev_prev, C_prev = C_prev, multiplier*C_curr

        self.global_pooling = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(C_prev, num_classes)

        self._initialize_alphas()

      def new(self):
        model_new = Network(self._C, self._num_classes, self._layers, self._criterion)
        for x, y in zip(model_new.arch_parameters(), self.arch_parameters()):
            x.data.copy_(y.data)
        return model_new

      def forward(self, input):
        s0 = s1 = self.stem(input)
        for i, cell in enumerate(self.cells):
          if cell.reduction:
            weights = F.softmax(self.alphas_reduce, dim=-1)
          else:
            weights = F.softmax(self.alphas_normal, dim=-1)
          s0, s1 = s1, cell(s0, s1, weights)
        out = self.global_pooling(s1)
        logits = self.classifier(out.view(out.size(0),-1))
        return logits

      def _loss(self, input, target):
        logits = self(input)
        return self._criterion(logits, target)

      def _initialize_alphas(self):
        k = sum(1 for i in range(self._steps) for n in range(2+i))
        num_ops = len(PRIMITIVES)

        self.alphas_normal = Variable(1e-3*torch.randn(k, num_ops), requires_grad=True)
        self.alphas_reduce = Variable(1e-3*torch.randn(k, num_ops), requires_grad=True)
        self._arch_parameters = [
          self.alphas_normal,
          self.alphas_reduce,
        ]

      def arch_parameters(self):
        return self._arch_parameters

      def genotype(self):

        def _parse(weights):
          gene = []
          n = 2
          start = 0
          for i in range(self._steps):
            end = start + n
            W = weights[start:end].copy()
            edges = sorted(range(i + 2), key=lambda x: -max(W[x][k] for k in range(len(W[x])) if k != PRIMITIVES.index('none')))[:2]
            for j in edges:
              k_best = None
              for k in range(len(W[j])):
                if k != PRIMITIVES.index('none'):
                  if k_best is None or W[j][k] > W[j][k_best]:
                    k_best = k
              gene.append((PRIMITIVES[k_best], j))
            start = end
            n += 1
          return gene

        gene_normal = _parse(F.softmax(self.alphas_normal, dim=-1).data.cpu().numpy())
        gene_reduce = _parse(F.softmax(self.alphas_reduce, dim=-1).data.cpu().numpy())

        concat = range(2+self._steps-self._multiplier, self._steps+2)
        genotype = Genotype(
          normal=gene_normal, normal_concat=concat,
          reduce=gene_reduce, reduce_concat=concat
        )
        return genotype

    # ---- cnn/architect.py ----
    def _concat(xs):
      return torch.cat([x.view(-1) for x in xs])

    class Architect(object):

      def __init__(self, model, args):
        self.network_momentum = args.momentum
        self.network_weight_decay = args.weight_decay
        self.model = model
        self.optimizer = torch.optim.Adam(self.model.arch_parameters(),
            lr=args.arch_learning_rate, betas=(0.5, 0.999), weight_decay=args.arch_weight_decay)

      def _compute_unrolled_model(self, input, target, eta, network_optimizer):
        loss = self.model._loss(input, target)
        theta = _concat(self.model.parameters()).data
        try:
          moment = _concat(network_optimizer.state[v]['momentum_buffer'] for v in self.model.parameters()).mul_(self.network_momentum)
        except:  # noqa: E722
          moment = torch.zeros_like(theta)
        dtheta = _concat(torch.autograd.grad(loss, self.model.parameters())).data + self.network_weight_decay*theta
        unrolled_model = self._construct_model_from_theta(theta.sub(eta, moment+dtheta))
        return unrolled_model

      def step(self, input_train, target_train, input_valid, target_valid, eta, network_optimizer, unrolled):
        self.optimizer.zero_grad()
        if unrolled:
            self._backward_step_unrolled(input_train, target_train, input_valid, target_valid, eta, network_optimizer)
        else:
            self._backward_step(input_valid, target_valid)
        self.optimizer.step()

      def _backward_step(self, input_valid, target_valid):
        loss = self.model._loss(input_valid, target_valid)
        loss.backward()

      def _backward_step_unrolled(self, input_train, target_train, input_valid, target_valid, eta, network_optimizer):
        unrolled_model = self._compute_unrolled_model(input_train, target_train, eta, network_optimizer)
        unrolled_loss = unrolled_model._loss(input_valid, target_valid)

        unrolled_loss.backward()
        dalpha = [v.grad for v in unrolled_model.arch_parameters()]
        vector = [v.grad.data for v in unrolled_model.parameters()]
        implicit_grads = self._hessian_vector_product(vector, input_train, target_train)

        for g, ig in zip(dalpha, implicit_grads):
          g.data.sub_(eta, ig.data)

        for v, g in zip(self.model.arch_parameters(), dalpha):
          if v.grad is None:
            v.grad = Variable(g.data)
          else:
            v.grad.data.copy_(g.data)

      def _construct_model_from_theta(self, theta):
        model_new = self.model.new()
        model_dict = self.model.state_dict()

        params, offset = {}, 0
        for k, v in self.model.named_parameters():
          v_length = np.prod(v.size())
          params[k] = theta[offset: offset+v_length].view(v.size())
          offset += v_length

        assert offset == len(theta)
        model_dict.update(params)
        model_new.load_state_dict(model_dict)
        return model_new

      def _hessian_vector_product(self, vector, input, target, r=1e-2):
        R = r / _concat(vector).norm()
        for p, v in zip(self.model.parameters(), vector):
          p.data.add_(R, v)
        loss = self.model._loss(input, target)
        grads_p = torch.autograd.grad(loss, self.model.arch_parameters())

        for p, v in zip(self.model.parameters(), vector):
          p.data.sub_(2*R, v)
        loss = self.model._loss(input, target)
        grads_n = torch.autograd.grad(loss, self.model.arch_parameters())

        for p, v in zip(self.model.parameters(), vector):
          p.data.add_(R, v)

        return [(x-y).div_(2*R) for x, y in zip(grads_p, grads_n)]

    # ---- cnn/utils.py ----
    class AvgrageMeter(object):

      def __init__(self):
        self.reset()

      def reset(self):
        self.avg = 0
        self.sum = 0
        self.cnt = 0

      def update(self, val, n=1):
        self.sum += val * n
        self.cnt += n
        self.avg = self.sum / self.cnt

    def accuracy(output, target, topk=(1,)):
      maxk = max(topk)
      batch_size = target.size(0)

      _, pred = output.topk(maxk, 1, True, True)
      pred = pred.t()
      correct = pred.eq(target.view(1, -1).expand_as(pred))

      res = []
      for k in topk:
        correct_k = correct[:k].view(-1).float().sum(0)
        res.append(correct_k.mul_(100.0/batch_size))
      return res

    def count_parameters_in_MB(model):
      return np.sum(np.prod(v.size()) for name, v in model.named_parameters() if "auxiliary" not in name)/1e6

    return SimpleNamespace(Network=Network, Architect=Architect, AvgrageMeter=AvgrageMeter,
                           accuracy=accuracy, count_parameters_in_MB=count_parameters_in_MB)


def _darts_train_search(torch, d, args, log):
    """cnn/train_search.py's train and infer, as written but for the ``.cuda(async=True)`` calls
    (a syntax error since Python 3.7; left out with the other ``.cuda()``), ``loss.data[0]``
    (``.item()``: see the NTM program for the old indexing's error) and top-5 (``accuracy``'s
    ``correct[:5].view(-1)`` of a transposed comparison raises in torch >= 1.5 and not in
    tracegrad: the strict xfails ``test_pytorch_examples_imagenet_old_accuracy_view_raises`` and
    ``test_supcontrast_accuracy_top2_view_of_transposed_eq`` hold that known gap)."""
    nn = torch.nn
    Variable = torch.autograd.Variable

    def train(train_queue, valid_queue, model, architect, criterion, optimizer, lr):
      objs = d.AvgrageMeter()
      top1 = d.AvgrageMeter()

      for step, (input, target) in enumerate(train_queue):
        model.train()
        n = input.size(0)

        input = Variable(input, requires_grad=False)
        target = Variable(target, requires_grad=False)

        # get a random minibatch from the search queue with replacement
        input_search, target_search = next(iter(valid_queue))
        input_search = Variable(input_search, requires_grad=False)
        target_search = Variable(target_search, requires_grad=False)

        architect.step(input, target, input_search, target_search, lr, optimizer, unrolled=args.unrolled)
        log("alphas grad", [a.grad for a in model.arch_parameters()])

        optimizer.zero_grad()
        logits = model(input)
        loss = criterion(logits, target)

        loss.backward()
        nn.utils.clip_grad_norm(model.parameters(), args.grad_clip)
        optimizer.step()

        prec1, = d.accuracy(logits, target, topk=(1,))
        objs.update(loss.item(), n)
        top1.update(prec1.item(), n)
        log("loss", loss)
        if step % args.report_freq == 0:
          print('train %03d %e %f' % (step, objs.avg, top1.avg))

      return top1.avg, objs.avg

    def infer(valid_queue, model, criterion):
      objs = d.AvgrageMeter()
      top1 = d.AvgrageMeter()
      model.eval()

      for step, (input, target) in enumerate(valid_queue):
        with torch.no_grad():
          logits = model(input)
          loss = criterion(logits, target)

        prec1, = d.accuracy(logits, target, topk=(1,))
        n = input.size(0)
        objs.update(loss.item(), n)
        top1.update(prec1.item(), n)

        if step % args.report_freq == 0:
          print('valid %03d %e %f' % (step, objs.avg, top1.avg))

      return top1.avg, objs.avg

    return train, infer


def _program_darts_search(mod, log):
    import argparse
    import warnings
    torch = SeededTorch(mod, 0)
    nn = torch.nn
    F = torch.nn.functional
    d = _darts(torch)
    parser = argparse.ArgumentParser("cifar")
    parser.add_argument('--batch_size', type=int, default=64)
    parser.add_argument('--learning_rate', type=float, default=0.025)
    parser.add_argument('--learning_rate_min', type=float, default=0.001)
    parser.add_argument('--momentum', type=float, default=0.9)
    parser.add_argument('--weight_decay', type=float, default=3e-4)
    parser.add_argument('--report_freq', type=float, default=50)
    parser.add_argument('--epochs', type=int, default=50)
    parser.add_argument('--init_channels', type=int, default=16)
    parser.add_argument('--layers', type=int, default=8)
    parser.add_argument('--grad_clip', type=float, default=5)
    parser.add_argument('--train_portion', type=float, default=0.5)
    parser.add_argument('--unrolled', action='store_true', default=False)
    parser.add_argument('--arch_learning_rate', type=float, default=3e-4)
    parser.add_argument('--arch_weight_decay', type=float, default=1e-3)
    argv = ['--batch_size', '4', '--epochs', '2', '--init_channels', '2', '--layers', '3',
            '--report_freq', '1', '--arch_learning_rate', '0.1', '--unrolled']
    args = parser.parse_args(argv)
    CIFAR_CLASSES = 10

    criterion = nn.CrossEntropyLoss()
    model = d.Network(args.init_channels, CIFAR_CLASSES, args.layers, criterion)
    init_params(mod, model, 3, scale=0.5)
    try:  # numpy 2 refuses np.sum of a generator
      print("param size = %fMB" % d.count_parameters_in_MB(model))
    except TypeError as e:
      log("count_parameters_in_MB", type(e))
    print("param size = %fMB" % (sum(np.prod(v.size()) for name, v in model.named_parameters()
                                     if "auxiliary" not in name) / 1e6))

    optimizer = torch.optim.SGD(
        model.parameters(),
        args.learning_rate,
        momentum=args.momentum,
        weight_decay=args.weight_decay)

    # CIFAR-10 stand-in: 8 seeded 8 x 8 images; the SubsetRandomSamplers are the index lists
    rs = np.random.RandomState(4)
    train_data = torch.utils.data.TensorDataset(
        torch.tensor(rs.normal(0, 1, (8, 3, 8, 8)), dtype=torch.get_default_dtype()),
        torch.from_numpy(rs.randint(0, CIFAR_CLASSES, 8)))
    num_train = len(train_data)
    indices = list(range(num_train))
    split = int(np.floor(args.train_portion * num_train))
    train_queue = torch.utils.data.DataLoader(
        train_data, batch_size=args.batch_size, sampler=indices[:split], num_workers=0)
    valid_queue = torch.utils.data.DataLoader(
        train_data, batch_size=args.batch_size, sampler=indices[split:num_train], num_workers=0)

    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(
          optimizer, float(args.epochs), eta_min=args.learning_rate_min)

    architect = d.Architect(model, args)
    train, infer = _darts_train_search(torch, d, args, log)

    for epoch in range(args.epochs):
      # a first-order step, then the unrolled (second-order) one, over SGD's momentum buffers
      args.unrolled = epoch == 1
      with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scheduler.step()
        lr = scheduler.get_lr()[0]
      log("warnings", sorted({w.category.__name__ for w in caught}))
      print('epoch %d lr %e' % (epoch, lr))

      genotype = model.genotype()
      print('genotype = %s' % (genotype,))

      print(F.softmax(model.alphas_normal, dim=-1))
      print(F.softmax(model.alphas_reduce, dim=-1))

      with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train_acc, train_obj = train(train_queue, valid_queue, model, architect, criterion, optimizer, lr)
      # the deprecated add_/sub_(Number, Tensor) overloads and clip_grad_norm
      log("train warnings", sorted({w.category.__name__ for w in caught}))
      print('train_acc %f' % train_acc)

      valid_acc, valid_obj = infer(valid_queue, model, criterion)
      print('valid_acc %f' % valid_acc)
      log("alphas", model.arch_parameters())
    for name, p in list(model.named_parameters())[:3] + list(model.named_parameters())[-2:]:
      log(name, p)


def test_darts_search_architect_unrolled_and_first_order():
    # rtol 1e-4: the architecture gradient's finite-difference Hessian-vector product divides
    # the difference of two gradients by 2R = 0.02 / |v|, which turns float32 rounding of 1e-7
    # into about 3e-5 (run in float64 the two sides agree to 3e-7)
    run_both(_program_darts_search, rtol=1e-4, atol=1e-5)
