"""Seed 003 (003_a00eb2de7e55d386.txt): tensors and dtypes, nn.Module (named_*,
children/modules, model creation and __call__), eval/no_grad, CrossEntropyLoss,
tensor ops the note uses (view, size, nonzero, sort, percentile, where, cat, max,
topk, dot/mv/mm), .data vs detach, DataLoader/Dataset, training, optimizer
attributes and methods, weight decay, Dropout/BatchNorm, torch.save/load of state
dicts, fine-tuning, and module forward/backward hooks (register_forward_hook,
register_backward_hook, register_full_backward_hook).

Each ``program(torch, log)`` keeps the note's code; randn is replaced by
deterministic inputs, torchvision datasets/models by small in-test equivalents,
CUDA and distributed training are dropped.
"""

import copy
import os
import tempfile

import numpy as np

from parity import grad_fn_name, init_params, np_randn, randn, run_both


# ---------------------------------------------------------------- 1.2 / 2.2 tensors and dtypes

def program_dtypes(torch, log):
    for name in ("float16", "float32", "float64", "uint8", "int8", "int16", "int32",
                 "int64", "bool"):
        dt = getattr(torch, name)
        t = torch.tensor([1, 0, 2], dtype=dt)
        log(name, t)
        log(name + " is_floating_point", t.is_floating_point())
    log("default float", torch.tensor([1.0]).dtype)
    log("default int (labels)", torch.tensor([1, 2]).dtype)
    log("bool tensor", torch.tensor([True, False]).dtype)
    log("get_default_dtype", torch.get_default_dtype())
    log("float + int", (torch.tensor([1.0]) + torch.tensor([2])).dtype)
    log("int / int", (torch.tensor([3]) / torch.tensor([2])))
    log("int // int", (torch.tensor([3]) // torch.tensor([2])))
    log("float32 + float64", (torch.tensor([1.0]) + torch.tensor([1.0], dtype=torch.float64)).dtype)
    log("int + python float", (torch.tensor([1]) + 1.5))
    log(".long()", torch.tensor([1.7, -1.7]).long())
    log(".float()", torch.tensor([1, 2]).float())
    log(".double()", torch.tensor([1, 2]).double())
    log(".half()", torch.tensor([1.0]).half())
    log(".to(int32)", torch.tensor([1.9]).to(torch.int32))
    log("FloatTensor from Tensor()", torch.Tensor([1, 2, 3]))


def test_dtypes():
    run_both(program_dtypes)


def program_tensor_construction(torch, log):
    a = torch.tensor([[1., -1.], [1., -1.]])
    print(a)
    b = torch.tensor(np.array([[1, 2, 3], [4, 5, 6]]))
    print(b)
    log("a", a)
    log("b", b)
    log("range", torch.range(1, 4))      # deprecated but present; inclusive end
    log("arange", torch.arange(1, 4))
    log("chunk", list(torch.chunk(torch.arange(7), 3)))
    log("add", torch.add(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0]), alpha=2))
    log("rand shape", torch.rand(2, 3).shape)
    n = torch.normal(torch.zeros(3), torch.ones(3))
    log("normal shape/dtype", [n.shape, n.dtype])
    log("normal(mean, std, size) shape", torch.normal(2.0, 3.0, size=(2, 2)).shape)
    r = torch.rand(1000)
    log("rand in [0, 1)", bool(((r >= 0) & (r < 1)).all()))


def test_tensor_construction():
    run_both(program_tensor_construction)


# ---------------------------------------------------------------- 2.1 nn.Module

def _lenet(torch):
    nn = torch.nn
    F = torch.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.conv1 = nn.Conv2d(3, 6, 5, bias=False)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(6, 16, 5, bias=False)
            self.fc1 = nn.Linear(16 * 5 * 5, 120, bias=False)
            self.fc2 = nn.Linear(120, 84, bias=False)
            self.fc3 = nn.Linear(84, 10, bias=False)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
            x = x.view(-1, 16 * 5 * 5)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            x = self.fc3(x)
            return x

    return Net


def program_lenet(torch, log):
    device = torch.device("cpu")
    Net = _lenet(torch)
    net = Net().to(device)
    init_params(torch, net, seed=0, scale=0.2)
    print(net)
    log("named_parameters", [(n, list(p.shape)) for n, p in net.named_parameters()])
    x = randn(torch, (2, 3, 32, 32), seed=1)
    out = net(x)
    log("out", out)
    log("out.grad_fn", grad_fn_name(out))
    out.sum().backward()
    log("conv1.weight.grad", net.conv1.weight.grad)
    log("fc1.weight.grad", net.fc1.weight.grad)
    # __call__ runs forward
    log("forward == __call__", bool(torch.equal(net.forward(x), net(x))))


def test_lenet():
    run_both(program_lenet)


def program_module_iterators(torch, log):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv_b = nn.Conv2d(2, 2, 1)
            self.bn = nn.BatchNorm2d(2)

    model = nn.Sequential()
    model.add_module("stage_1", nn.Sequential(Block(), nn.ReLU()))
    model.add_module("head", nn.Linear(2, 3))
    shared = nn.ReLU()
    model.add_module("act1", shared)
    model.add_module("act2", shared)    # same module twice: named_modules dedups
    for name, param in model.named_parameters():
        param.requires_grad = not name.startswith("stage_1")
    log("named_parameters", [(n, p.requires_grad) for n, p in model.named_parameters()])
    log("named_modules", [(n, type(m).__name__) for n, m in model.named_modules()])
    log("named_children", [(n, type(m).__name__) for n, m in model.named_children()])
    log("children", [type(m).__name__ for m in model.children()])
    log("modules", [type(m).__name__ for m in model.modules()])
    log("named_buffers", [n for n, _ in model.named_buffers()])
    log("state_dict keys", list(model.state_dict().keys()))
    print(model)
    log("model[0][0] is Block", type(model[0][0]).__name__)
    log("len", len(model))

    # a Module without parameters (the ViT stub)
    class ViT(nn.Module):
        def __init__(self, name=None, pretrained=False, patches=16, dim=768):
            super().__init__()

        def forward(self, x):
            return x
    v = ViT()
    log("ViT params", list(v.parameters()))
    print(v)


def test_module_iterators():
    run_both(program_module_iterators)


def program_model_call(torch, log):
    # __init__ builds submodules; net(inputs) -> __call__ -> forward
    nn = torch.nn
    calls = []

    class Conv2dQuantizer(nn.Conv2d):
        def __init__(self, *args, **kwargs):
            super(Conv2dQuantizer, self).__init__(*args, **kwargs)
            calls.append("__init__")

        def forward(self, input):
            calls.append("forward")
            w = (self.weight * 4).round() / 4
            return self._conv_forward(input, w, self.bias)

    m = Conv2dQuantizer(1, 2, 3, padding=1)
    init_params(torch, m, seed=3)
    x = randn(torch, (1, 1, 4, 4), seed=4)
    out = m(x)
    log("calls", calls)
    log("out", out)
    log("isinstance Conv2d", isinstance(m, nn.Conv2d))
    criterion = nn.CrossEntropyLoss()
    loss = criterion(out.view(1, -1)[:, :5], torch.tensor([2]))
    loss.backward()
    log("loss", loss)
    log("bias.grad", m.bias.grad)
    log("weight.grad (round has zero grad)", m.weight.grad)


def test_model_call():
    run_both(program_model_call)


def program_eval_and_no_grad(torch, log):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Dropout(0.5), nn.Linear(4, 2))
    init_params(torch, model, seed=5)
    x = randn(torch, (6, 4), seed=6)
    log("training default", [m.training for m in model.modules()])
    model.train()
    _ = model[1](model[0](x))   # BN in train mode: batch stats, running stats updated
    log("running_mean after train step", model[1].running_mean)
    log("running_var after train step", model[1].running_var)
    log("num_batches_tracked", model[1].num_batches_tracked)
    r = model.eval()
    log("eval returns self", r is model)
    log("training after eval", [m.training for m in model.modules()])
    out1 = model(x)
    out2 = model(x)
    log("eval deterministic", bool(torch.equal(out1, out2)))
    log("eval out", out1)
    log("running_mean unchanged in eval", model[1].running_mean)
    with torch.no_grad():
        y = model(x)
    log("no_grad requires_grad", y.requires_grad)
    log("no_grad grad_fn", y.grad_fn)
    log("outside requires_grad", model(x).requires_grad)
    model.train(False)
    log("train(False)", model.training)
    model.train()
    log("train()", [m.training for m in model.modules()])

    # dropout in train mode: zeros or x / (1 - p)
    d = nn.Dropout(p=0.5)
    inp = torch.ones(1000)
    o = d(inp)
    log("dropout values in {0, 2}", bool(((o == 0) | (o == 2)).all()))
    log("dropout kept some and dropped some", bool((o == 0).any()) and bool((o == 2).any()))
    d.eval()
    log("dropout eval identity", bool(torch.equal(d(inp), inp)))


def test_eval_and_no_grad():
    run_both(program_eval_and_no_grad)


def program_cross_entropy(torch, log):
    nn = torch.nn
    logits = randn(torch, (5, 4), seed=7, requires_grad=True)
    target = torch.tensor([0, 3, 1, 1, 2])
    ce = nn.CrossEntropyLoss()(logits, target)
    nll = nn.NLLLoss()(nn.LogSoftmax(dim=1)(logits), target)
    log("ce", ce)
    log("nll(logsoftmax)", nll)
    log("ce grad_fn", grad_fn_name(ce))
    g1, = torch.autograd.grad(ce, logits)
    g2, = torch.autograd.grad(nll, logits)
    log("grad ce", g1)
    log("grads equal", bool(torch.allclose(g1, g2, atol=1e-6)))
    log("reduction none", nn.CrossEntropyLoss(reduction="none")(logits, target))
    log("reduction sum", nn.CrossEntropyLoss(reduction="sum")(logits, target))
    log("functional", torch.nn.functional.cross_entropy(logits, target))
    try:
        nn.CrossEntropyLoss()(logits, target.float())
        log("float target of class indices shape", "ok")
    except Exception as e:
        log("float target of class indices shape", type(e).__name__)


def test_cross_entropy():
    run_both(program_cross_entropy)


# ---------------------------------------------------------------- 2.2.1 - 2.2.3 tensor ops

def program_view_and_size(torch, log):
    grad_output = randn(torch, (2, 3, 4), seed=8)
    g = grad_output.view(-1)
    log("view(-1)", g.shape)
    data = grad_output
    shape = data.shape
    log("shape", shape)
    log("shape type is tuple", isinstance(shape, tuple))
    data = data.view(data.shape[0], -1)
    log("view(shape[0], -1)", data.shape)
    x = randn(torch, (4, 4), seed=9)
    print(x.size())
    y = x.view(16)
    print(y.size())
    z = x.view(-1, 8)
    print(z.size())
    log("z", z)
    # views share storage
    z[0, 0] = 100.0
    log("x[0, 0] after writing the view", x[0, 0])
    input = (randn(torch, (3, 5), seed=10),)
    log("input[0].size(0)", input[0].size(0))
    log("input[0].size(1)", input[0].size(1))
    log("size(-1)", input[0].size(-1))
    try:
        x.t().view(16)
        log("view of non-contiguous", "ok")
    except Exception as e:
        log("view of non-contiguous", type(e).__name__)
    log("reshape of non-contiguous", x.t().reshape(16))
    try:
        x.view(5, -1)
        log("bad view", "ok")
    except Exception as e:
        log("bad view", type(e).__name__)


def test_view_and_size():
    run_both(program_view_and_size)


def program_nonzero_sort_percentile(torch, log):
    t = torch.Tensor([1, 2, 3])
    print((t == 2).nonzero(as_tuple=True)[0])
    log("nonzero as_tuple", (t == 2).nonzero(as_tuple=True))
    log("nonzero", (torch.tensor([[0, 1], [2, 0]]) != 0).nonzero())
    grad_output = torch.tensor([0.5, -1.0, 3.0, 0.25, 2.0, -0.5, 1.5, 0.0])
    grad_output_sorted, grad_output_indices = torch.sort(grad_output)
    log("sorted", grad_output_sorted)
    log("indices", grad_output_indices)
    r = grad_output.sort(descending=True)
    log("namedtuple fields", [r.values, r.indices])
    grad_output_sorted = grad_output_sorted.double()
    log("double dtype", grad_output_sorted.dtype)
    log("np.percentile(tensor, 75)", float(np.percentile(grad_output, 75)))
    log("np.asarray dtype", str(np.asarray(grad_output).dtype))
    max_75 = np.percentile(grad_output_sorted, 87.5)
    min_75 = np.percentile(grad_output_sorted, 12.5)
    grad_output_sorted = torch.where(grad_output_sorted > max_75, 0., grad_output_sorted)
    grad_output_sorted = torch.where(grad_output_sorted < min_75, 0., grad_output_sorted)
    log("where with percentiles", grad_output_sorted)
    log("quantile", torch.quantile(grad_output, 0.75))


def test_nonzero_sort_percentile():
    run_both(program_nonzero_sort_percentile)


def program_where_cat(torch, log):
    x = randn(torch, (3, 2), seed=11)
    y = torch.ones(3, 2)
    log("where", torch.where(x > 0, x, y))
    log("where scalar", torch.where(x > 0.5, 0., x))
    log("where cond only", torch.where(x > 0))
    # remove i-th element
    i = 2
    T = torch.tensor([1, 2, 3, 4, 5])
    T = torch.cat([T[0:i], T[i + 1:-1]])
    log("cat", T)
    log("cat dim 1", torch.cat([y, y], dim=1).shape)
    log("stack", torch.stack([y, y]).shape)
    # where is differentiable w.r.t. the chosen branch
    a = randn(torch, (4,), seed=12, requires_grad=True)
    out = torch.where(a > 0, a * 2, a * 3).sum()
    out.backward()
    log("where grad", a.grad)


def test_where_cat():
    run_both(program_where_cat)


def program_max_abs_unsqueeze(torch, log):
    tensor = randn(torch, (2, 3, 5), seed=13)
    x_max, _ = tensor.view(-1, tensor.shape[tensor.dim() - 1]).abs().max(1)
    log("x_max", x_max)
    log("argmax", _)
    x_max = x_max.unsqueeze(1)
    log("unsqueeze shape", x_max.shape)
    log("dim", tensor.dim())
    log("max()", tensor.max())
    log("max(dim, keepdim)", tensor.max(dim=2, keepdim=True).values.shape)
    log("min(1)", list(tensor.min(1)))
    a = torch.tensor([1.0, 2.0, 3.0])
    b = torch.tensor([4.0, -5.0, 6.0])
    M = torch.tensor(np_randn((2, 3), 14))
    log("dot", torch.dot(a, b))
    log("mv", torch.mv(M, a))
    log("mm", torch.mm(M, M.t()))
    try:
        torch.dot(M, M)
        log("dot 2-D", "ok")
    except Exception as e:
        log("dot 2-D", type(e).__name__)


def test_max_abs_unsqueeze():
    run_both(program_max_abs_unsqueeze)


def program_topk_numel(torch, log):
    data = randn(torch, (2, 256), seed=15)
    K = torch.numel(data) // data.shape[0] * 4 // 256
    log("K", K)
    _, index = torch.topk(data.abs(), K, dim=-1, largest=True, sorted=False)
    # sorted=False leaves the order unspecified: compare as sets
    log("topk index (as set)", index.sort(dim=-1).values)
    log("topk values (as set)", _.sort(dim=-1).values)
    v, i = torch.topk(data, 3)
    log("topk sorted values", v)
    log("topk sorted indices", i)
    log("smallest", torch.topk(data, 2, largest=False).values)
    log("numel", torch.numel(data))
    log("Tensor.numel", data.numel())


def test_topk_numel():
    run_both(program_topk_numel)


def program_data_vs_detach(torch, log):
    # "detach()和data生成的都是无梯度的纯tensor ... 共享一块数据内存"
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    d = a.detach()
    dd = a.data
    log("detach requires_grad", d.requires_grad)
    log(".data requires_grad", dd.requires_grad)
    log("detach is_leaf", d.is_leaf)
    log(".data is_leaf", dd.is_leaf)
    d[0] = 10.0
    log("a after detach write", a)
    dd[1] = 20.0
    log("a after .data write", a)
    log("a still leaf requiring grad", [a.is_leaf, a.requires_grad])


def test_data_vs_detach():
    run_both(program_data_vs_detach)


# ---------------------------------------------------------------- 2.4 data

def _dataset_cls(torch):
    Dataset = torch.utils.data.Dataset

    class RangeDataset(Dataset):
        def __init__(self, n):
            self.x = torch.tensor(np_randn((n, 3), 16))
            self.y = torch.tensor([i % 4 for i in range(n)])

        def __len__(self):
            return len(self.y)

        def __getitem__(self, idx):
            return self.x[idx], self.y[idx]
    return RangeDataset


def program_dataloader(torch, log):
    DataLoader = torch.utils.data.DataLoader
    RangeDataset = _dataset_cls(torch)
    ds = RangeDataset(10)
    log("len(ds)", len(ds))
    x0, y0 = ds[0]
    log("item", [x0, y0])

    loader = DataLoader(ds, batch_size=4, shuffle=False, num_workers=0)
    log("len(loader)", len(loader))
    for i, (xb, yb) in enumerate(loader):
        log(f"batch {i} x", xb)
        log(f"batch {i} y", yb)
    loader = DataLoader(ds, batch_size=4, drop_last=True)
    log("drop_last len", len(loader))
    log("drop_last sizes", [len(b[1]) for b in loader])

    # shuffle: a permutation of the data each epoch (the order itself comes from
    # each library's own RNG, so only the multiset is compared)
    torch.manual_seed(0)
    loader = DataLoader(ds, batch_size=3, shuffle=True)
    for epoch in range(2):
        seen = []
        sizes = []
        for xb, yb in loader:
            sizes.append(len(yb))
            seen.extend(xb[:, 0].tolist())
        log(f"epoch {epoch} sizes", sizes)
        log(f"epoch {epoch} samples (sorted)", sorted(seen))

    # default collate of python numbers / dicts / numpy arrays
    class Dicts(torch.utils.data.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"a": i, "b": float(i) / 2, "c": np.array([i, i + 1], dtype=np.float32),
                    "name": f"s{i}"}

    batch = next(iter(DataLoader(Dicts(), batch_size=5)))
    log("collate keys", list(batch.keys()))
    log("collate int", batch["a"])
    log("collate float", batch["b"])
    log("collate ndarray", batch["c"])
    log("collate str", batch["name"])

    # custom collate_fn, batch_size=None, sampler / batch_sampler
    loader = DataLoader(ds, batch_size=5, collate_fn=lambda items: len(items))
    log("custom collate", list(loader))
    loader = DataLoader(ds, batch_size=None)
    first = next(iter(loader))
    log("batch_size=None", [first[0], first[1]])
    sampler = torch.utils.data.SequentialSampler(ds)
    bs = torch.utils.data.BatchSampler(sampler, batch_size=4, drop_last=False)
    log("batch_sampler", list(bs))
    loader = DataLoader(ds, batch_sampler=bs)
    log("with batch_sampler", [b[1] for b in loader])
    sub = torch.utils.data.Subset(ds, [1, 3, 5])
    log("subset", [sub[i][1] for i in range(len(sub))])
    tds = torch.utils.data.TensorDataset(torch.arange(6.0).view(3, 2), torch.tensor([0, 1, 0]))
    log("TensorDataset", [list(b) for b in DataLoader(tds, batch_size=2)])


def test_dataloader():
    run_both(program_dataloader)


def program_epochs_iterations(torch, log):
    # batch_size = 128, |x| = 1024 -> 8 iterations per epoch; weights carry over
    # between epochs
    DataLoader = torch.utils.data.DataLoader
    TensorDataset = torch.utils.data.TensorDataset
    nn = torch.nn
    X = torch.tensor(np_randn((1024, 4), 17))
    Y = torch.tensor((np_randn((1024,), 18) > 0).astype(np.int64))
    loader = DataLoader(TensorDataset(X, Y), batch_size=128, shuffle=False)
    log("iterations per epoch", len(loader))
    model = nn.Linear(4, 2)
    init_params(torch, model, seed=19)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9, weight_decay=1e-4)
    epoch_losses = []
    iterations = 0
    for epoch in range(3):
        total = 0.0
        for inputs, targets in loader:
            outputs = model(inputs)
            loss = criterion(outputs, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            iterations += 1
        epoch_losses.append(total / len(loader))
    log("iterations", iterations)
    log("epoch losses", epoch_losses)
    log("weight", model.weight)
    with torch.no_grad():
        acc = (model(X).argmax(1) == Y).float().mean()
    log("accuracy", acc)


def test_epochs_iterations():
    run_both(program_epochs_iterations)


# ---------------------------------------------------------------- 2.5 / 2.6 optimizer

def program_optimizer_attributes(torch, log):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))
    init_params(torch, model, seed=21)
    opt = torch.optim.SGD(model[0].parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)
    log("defaults subset", [opt.defaults[k] for k in ("lr", "momentum", "weight_decay")])
    log("param_groups is list", isinstance(opt.param_groups, list))
    g = opt.param_groups[0]
    log("group keys present", [k in g for k in ("params", "lr", "momentum", "weight_decay")])
    log("group values", [g["lr"], g["momentum"], g["weight_decay"]])
    log("n params in group", len(g["params"]))
    log("state empty before step", len(opt.state))
    log("optimizer has _step_count", hasattr(opt, "_step_count"))

    opt.add_param_group({"params": model[2].parameters(), "lr": 0.01})
    log("n groups", len(opt.param_groups))
    log("new group inherits momentum", opt.param_groups[1]["momentum"])
    try:
        opt.add_param_group({"params": model[2].parameters()})
        log("same params twice", "ok")
    except Exception as e:
        log("same params twice", type(e).__name__)

    x = randn(torch, (4, 3), seed=22)
    for _ in range(2):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
    log("state size", len(opt.state))
    log("momentum_buffer", opt.state[model[0].weight]["momentum_buffer"])
    log("weights", [p for p in model.parameters()])
    sd = opt.state_dict()
    log("state_dict keys", sorted(sd.keys()))
    log("state_dict params", [grp["params"] for grp in sd["param_groups"]])
    log("state_dict state keys", sorted(sd["state"].keys()))
    log("state_dict lr", [grp["lr"] for grp in sd["param_groups"]])

    # load_state_dict restores hyperparameters and buffers
    model2 = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))
    model2.load_state_dict(model.state_dict())
    opt2 = torch.optim.SGD(model2[0].parameters(), lr=0.5, momentum=0.9, weight_decay=0.01)
    opt2.add_param_group({"params": model2[2].parameters(), "lr": 0.5})
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))  # (a plain state_dict aliases buffers)
    log("loaded lrs", [grp["lr"] for grp in opt2.param_groups])
    log("loaded buffer", opt2.state[model2[0].weight]["momentum_buffer"])
    for o, m in ((opt, model), (opt2, model2)):
        o.zero_grad()
        m(x).pow(2).mean().backward()
        o.step()
    log("continue identically", all(bool(torch.allclose(a, b)) for a, b in
                                    zip(model.parameters(), model2.parameters())))

    # lr schedule
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
    lrs = []
    for _ in range(5):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
    log("StepLR lrs", lrs)
    log("group lr after schedule", [grp["lr"] for grp in opt.param_groups])
    log("last_epoch", sched.last_epoch)


def test_optimizer_attributes():
    run_both(program_optimizer_attributes)


def program_weight_decay(torch, log):
    w = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    w2 = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    opt = torch.optim.SGD([w], lr=0.1, weight_decay=0.5)
    opt_plain = torch.optim.SGD([w2], lr=0.1)
    for o, p in ((opt, w), (opt_plain, w2)):
        o.zero_grad()
        (p * torch.tensor([3.0, 4.0])).sum().backward()
        o.step()
    log("with weight_decay", w)    # w - lr * (g + wd * w)
    log("without", w2)
    log("grad not modified by weight decay", w.grad)
    a = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    b = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    oa = torch.optim.Adam([a], lr=0.1, weight_decay=0.5)
    ob = torch.optim.AdamW([b], lr=0.1, weight_decay=0.5)
    for _ in range(3):
        for o, p in ((oa, a), (ob, b)):
            o.zero_grad()
            (p * p).sum().backward()
            o.step()
    log("Adam (L2) weight decay", a)
    log("AdamW (decoupled) weight decay", b)


def test_weight_decay():
    run_both(program_weight_decay)


def program_batchnorm(torch, log):
    nn = torch.nn
    bn = nn.BatchNorm1d(3)
    x = randn(torch, (8, 3), seed=23, scale=3.0)
    x = x + torch.tensor([1.0, -2.0, 5.0])
    y = bn(x)
    log("mean ~ 0", y.mean(0))
    log("std (biased) ~ 1", y.var(0, unbiased=False))
    log("y", y)
    log("running_mean", bn.running_mean)
    log("running_var (unbiased)", bn.running_var)
    log("affine params", [n for n, _ in bn.named_parameters()])
    log("buffers", [n for n, _ in bn.named_buffers()])
    y.pow(3).sum().backward()
    log("weight.grad", bn.weight.grad)
    log("bias.grad", bn.bias.grad)
    bn.eval()
    log("eval y", bn(x))
    bn2 = nn.BatchNorm2d(2, affine=False, track_running_stats=False)
    z = randn(torch, (2, 2, 3, 3), seed=24)
    log("bn2d no stats", bn2(z))
    log("bn2d buffers", [n for n, _ in bn2.named_buffers()])


def test_batchnorm():
    run_both(program_batchnorm)


# ---------------------------------------------------------------- 2.7 save / load / fine-tune

def program_save_load_state_dict(torch, log):
    Net = _lenet(torch)
    net = Net()
    init_params(torch, net, seed=25, scale=0.2)
    x = randn(torch, (1, 3, 32, 32), seed=26)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "net.pt")
        torch.save(net.state_dict(), path)
        state_dict = torch.load(path)
        log("keys", list(state_dict.keys()))
        log("shapes", [list(v.shape) for v in state_dict.values()])
        net2 = Net()
        net2.load_state_dict(state_dict)
        log("same output", bool(torch.equal(net(x), net2(x))))
        log("loaded value", net2.fc3.weight)
        # strict loading reports problems
        bad = dict(state_dict)
        bad.pop("fc3.weight")
        try:
            net2.load_state_dict(bad)
            log("missing key strict", "ok")
        except Exception as e:
            log("missing key strict", type(e).__name__)
        res = net2.load_state_dict(bad, strict=False)
        log("missing key non-strict", list(res.missing_keys))
        bad["fc3.weight"] = torch.zeros(3, 3)
        try:
            net2.load_state_dict(bad)
            log("wrong shape", "ok")
        except Exception as e:
            log("wrong shape", type(e).__name__)
        # state_dict tensors are detached and share storage with the parameters
        sd = net.state_dict()
        log("state_dict requires_grad", sd["fc3.weight"].requires_grad)
        with torch.no_grad():
            net.fc3.weight.fill_(1.0)
        log("state_dict aliases parameter", sd["fc3.weight"][0, :3])
        # optimizer state dict round trip through a file
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        net(x).sum().backward()
        opt.step()
        p2 = os.path.join(d, "opt.pt")
        torch.save(opt.state_dict(), p2)
        osd = torch.load(p2)
        log("opt state keys", sorted(osd["state"].keys()))
        log("opt state step", osd["state"][0]["step"])
        log("opt exp_avg", osd["state"][4]["exp_avg"])
        log("opt lr", osd["param_groups"][0]["lr"])


def test_save_load_state_dict():
    run_both(program_save_load_state_dict)


def program_fine_tuning(torch, log):
    nn = torch.nn

    def make():
        return nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 10))

    pretrained = make()
    init_params(torch, pretrained, seed=27)
    pretrained_state = pretrained.state_dict()
    model = make()
    model.load_state_dict(pretrained_state)              # 1. load pre-trained weights
    model[3] = nn.Linear(4 * 4 * 4, 3)                    # 2. replace the output layer
    init_params(torch, model[3], seed=28)
    for p in model[0].parameters():                       # 3a. freeze the features
        p.requires_grad = False
    log("requires_grad", [(n, p.requires_grad) for n, p in model.named_parameters()])
    x = randn(torch, (5, 1, 6, 6), seed=29)
    y = torch.tensor([0, 1, 2, 1, 0])
    opt = torch.optim.SGD(filter(lambda p: p.requires_grad, model.parameters()), lr=0.1)
    before = [p.detach().clone() for p in model.parameters()]
    loss = nn.CrossEntropyLoss()(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    log("changed", [not bool(torch.equal(a, b)) for a, b in zip(before, model.parameters())])
    log("frozen grads", [p.grad for p in model[0].parameters()])

    # 3b. parameter groups: smaller lr (here 0) for the feature extractor
    model2 = make()
    model2.load_state_dict(pretrained_state)
    model2[3] = nn.Linear(4 * 4 * 4, 3)
    init_params(torch, model2[3], seed=28)
    opt2 = torch.optim.SGD([{"params": model2[0].parameters(), "lr": 0.0},
                            {"params": model2[3].parameters()}], lr=0.1, momentum=0.9)
    before = [p.detach().clone() for p in model2.parameters()]
    loss2 = nn.CrossEntropyLoss()(model2(x), y)
    opt2.zero_grad()
    loss2.backward()
    opt2.step()
    log("changed (lr=0 group)", [not bool(torch.equal(a, b)) for a, b in zip(before, model2.parameters())])
    log("feature grads exist", [p.grad is not None for p in model2[0].parameters()])
    log("head weight", model2[3].weight)


def test_fine_tuning():
    run_both(program_fine_tuning)


# ---------------------------------------------------------------- 4. hooks

def program_register_hook_intermediate(torch, log):
    x = torch.Tensor([0, 1, 2, 3]).requires_grad_()
    y = torch.Tensor([4, 5, 6, 7]).requires_grad_()
    w = torch.Tensor([1, 2, 3, 4]).requires_grad_()
    z = x + y       # 中间变量
    grads = []
    z.register_hook(lambda grad: print(grad))
    z.register_hook(lambda grad: grads.append(grad))
    o = w.matmul(z)
    o.backward()
    log("z grad via hook", grads[0])
    log("x.grad", x.grad)
    log("w.grad", w.grad)
    log("o", o)
    log("o.grad_fn", grad_fn_name(o))


def test_register_hook_intermediate():
    run_both(program_register_hook_intermediate)


def _hook_model(torch):
    nn = torch.nn

    class Model(nn.Module):
        def __init__(self):
            super(Model, self).__init__()
            self.fc1 = nn.Linear(3, 4)
            self.relu1 = nn.ReLU()
            self.fc2 = nn.Linear(4, 1)
            self.initialize()

        def initialize(self):
            with torch.no_grad():
                self.fc1.weight = torch.nn.Parameter(
                    torch.Tensor([[1., 2., 3.],
                                  [-4., -5., -6.],
                                  [7., 8., 9.],
                                  [-10., -11., -12.]]))

                self.fc1.bias = torch.nn.Parameter(torch.Tensor([1.0, 2.0, 3.0, 4.0]))
                self.fc2.weight = torch.nn.Parameter(torch.Tensor([[1.0, 2.0, 3.0, 4.0]]))
                self.fc2.bias = torch.nn.Parameter(torch.Tensor([1.0]))

        def forward(self, x):
            o = self.fc1(x)
            o = self.relu1(o)
            o = self.fc2(o)
            return o
    return Model


def program_forward_hooks_all_children(torch, log):
    Model = _hook_model(torch)
    total_feature_out = []
    total_feature_in = []

    model = Model()

    def hook_fn_forward(module, input, output):
        print(module)  # 用于区分模块
        print('input', input)
        print('output', output)
        total_feature_out.append(output)
        total_feature_in.append(input)

    for name, module in model.named_children():
        module.register_forward_hook(hook_fn_forward)

    x = torch.Tensor([[1.0, 1.0, 1.0]]).requires_grad_()
    o = model(x)
    o.backward()

    print('==========Saved inputs and outputs==========')
    for idx in range(len(total_feature_in)):
        print('input: ', total_feature_in[idx])
        print('output: ', total_feature_out[idx])
    log("input types", [type(i).__name__ for i in total_feature_in])
    log("x.grad", x.grad)
    log("fc1.weight.grad", model.fc1.weight.grad)
    log("params are leaves", [p.is_leaf for p in model.parameters()])


def test_forward_hooks_all_children():
    run_both(program_forward_hooks_all_children)


def program_legacy_backward_hook(torch, log):
    # module.register_backward_hook (the non-"full" hook the note uses): for a
    # single-node module its grad_input are the grads of the module's last
    # autograd node's inputs (Linear: bias, input, weight.t()).
    Model = _hook_model(torch)
    total_grad_out = []
    total_grad_in = []

    model = Model()

    def hook_fn_backward(module, grad_input, grad_output):
        print(module)
        print('grad_output', grad_output)
        print('grad_input', grad_input)
        total_grad_out.append(grad_output)
        total_grad_in.append(grad_input)

    for name, module in model.named_children():
        module.register_backward_hook(hook_fn_backward)

    x = torch.Tensor([[1.0, 1.0, 1.0]]).requires_grad_()
    o = model(x)
    o.backward()

    print('==========Saved inputs and outputs==========')
    for idx in range(len(total_grad_in)):
        print('input: ', total_grad_in[idx])
        print('output: ', total_grad_out[idx])
    log("grad_input lengths", [len(g) for g in total_grad_in])
    log("grad_input shapes", [[None if t is None else list(t.shape) for t in g] for g in total_grad_in])
    log("x.grad", x.grad)


def test_legacy_backward_hook():
    run_both(program_legacy_backward_hook)


def program_full_backward_hook(torch, log):
    # The modern equivalent: grad_input are the grads w.r.t. the module's inputs.
    Model = _hook_model(torch)
    model = Model()
    order = []

    def hook_fn_backward(module, grad_input, grad_output):
        print(module)
        print('grad_output', grad_output)
        print('grad_input', grad_input)
        order.append(type(module).__name__)

    for name, module in model.named_children():
        module.register_full_backward_hook(hook_fn_backward)

    x = torch.Tensor([[1.0, 1.0, 1.0]]).requires_grad_()
    o = model(x)
    o.backward()
    log("order (reverse of forward)", order)
    log("x.grad", x.grad)

    # without requires_grad on x, the first layer's grad_input is (None,)
    model.zero_grad()
    order.clear()
    model(torch.Tensor([[1.0, 1.0, 1.0]])).backward()
    log("order without input grad", order)


def test_full_backward_hook():
    run_both(program_full_backward_hook)


def program_backward_hook_batch(torch, log):
    # "batchsize > 1 时, 对 bias 的梯度处理不同": check today's torch for Linear and
    # Conv2d with batch 2, legacy and full hooks.
    nn = torch.nn
    lin = nn.Linear(3, 2)
    conv = nn.Conv2d(1, 2, 2)
    init_params(torch, lin, seed=30)
    init_params(torch, conv, seed=31)
    shapes = []

    def hook(module, grad_input, grad_output):
        shapes.append((type(module).__name__,
                       [None if g is None else list(g.shape) for g in grad_input],
                       [list(g.shape) for g in grad_output]))

    hl = lin.register_backward_hook(hook)
    hc = conv.register_backward_hook(hook)
    x = randn(torch, (2, 3), seed=32, requires_grad=True)
    lin(x).sum().backward()
    xi = randn(torch, (2, 1, 3, 3), seed=33, requires_grad=True)
    conv(xi).sum().backward()
    log("legacy shapes", [list(s) for s in shapes])
    hl.remove()
    hc.remove()
    shapes.clear()
    try:
        lin.register_full_backward_hook(hook)
        lin(x).sum().backward()
        log("mixing legacy and full hooks", "ok")
    except Exception as e:
        log("mixing legacy and full hooks", type(e).__name__)
    lin = nn.Linear(3, 2)
    conv = nn.Conv2d(1, 2, 2)
    init_params(torch, lin, seed=30)
    init_params(torch, conv, seed=31)
    shapes.clear()
    lin.register_full_backward_hook(hook)
    conv.register_full_backward_hook(hook)
    lin(x).sum().backward()
    conv(xi).sum().backward()
    log("full shapes", [list(s) for s in shapes])
    log("lin.bias.grad (summed over batch)", lin.bias.grad)
    log("conv.bias.grad (summed over batch)", conv.bias.grad)
    log("weight grad shapes equal weight shapes",
        [list(lin.weight.grad.shape) == list(lin.weight.shape),
         list(conv.weight.grad.shape) == list(conv.weight.shape)])


def test_backward_hook_batch():
    run_both(program_backward_hook_batch)
