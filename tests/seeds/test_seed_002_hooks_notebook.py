"""Seed 002 (002_4b2ca43702fb688b.txt): a notebook on hooks -- tensor hooks
(print / modify / order), hook firing rules and order, module forward/backward
hooks, feature extraction, gradient clipping with hooks, saved-tensor hooks,
save_on_cpu and saving saved tensors to disk.

Each ``program(torch, log)`` keeps the notebook's code; randn is replaced by
deterministic inputs, torchvision's resnet18 by a small ResNet-shaped module built
here, torchviz is dropped.  Printed output is compared too (see tests/parity.py).
"""

import gc
import os
import tempfile
import uuid

from parity import init_params, np_randn, randn, run_both


def _wbx(torch):
    # In[3]: torch.manual_seed(2); w = randn(5); b = randn(3); x = ones(3, 5)
    w = randn(torch, (5,), seed=2, requires_grad=True)
    b = randn(torch, (3,), seed=3, requires_grad=True)
    x = torch.ones((3, 5))
    return w, b, x


# ---------------------------------------------------------------- I.1 print intermediate grads

def program_retain_grad_vs_hook(torch, log):
    def printgrad(grad):
        return print(grad)

    # In[3]: without a hook we need retain_grad
    w, b, x = _wbx(torch)
    y = x @ w + b
    loss = (y ** 2).sum()
    y.retain_grad()
    loss.backward()
    print(y.grad)
    log("y.grad", y.grad)

    # In[4]: with a hook we don't
    w, b, x = _wbx(torch)
    y = x @ w + b
    loss = (y ** 2).sum()
    h = y.register_hook(printgrad)
    log("handle has remove", callable(getattr(h, "remove", None)))
    loss.backward()
    log("w.grad", w.grad)
    log("b.grad", b.grad)


def test_retain_grad_vs_hook():
    run_both(program_retain_grad_vs_hook)


# ---------------------------------------------------------------- I.2 modify gradients

def program_modify_grad(torch, log):
    def printgrad(grad):
        return print(grad)

    def doublegrad(grad):
        return grad * 2

    # In[6]: original
    w, b, x = _wbx(torch)
    y = x @ w + b
    loss = (y ** 2).sum()
    y.register_hook(printgrad)
    loss.backward()
    print('w:', w.grad)
    log("In[6] w.grad", w.grad)

    # In[7]: changing y.grad after backward does not propagate
    w, b, x = _wbx(torch)
    y = x @ w + b
    loss = (y ** 2).sum()
    y.retain_grad()
    loss.backward()
    y.grad *= 2
    print('y:', y.grad)
    print('w:', w.grad)
    log("In[7] y.grad", y.grad)
    log("In[7] w.grad", w.grad)

    # In[8]: a hook's return value replaces the grad for the rest of backward;
    # hooks on one tensor run in registration order
    w, b, x = _wbx(torch)
    y = x @ w + b
    loss = (y ** 2).sum()
    y.register_hook(doublegrad)  # hook for gradient manipulation
    y.register_hook(printgrad)   # hook for print
    loss.backward()
    print('w:', w.grad)
    log("In[8] w.grad", w.grad)
    log("In[8] b.grad", b.grad)

    # a hook + retain_grad: .grad sees the hook-modified value
    w, b, x = _wbx(torch)
    y = x @ w + b
    y.retain_grad()
    y.register_hook(doublegrad)
    (y ** 2).sum().backward()
    log("retain_grad after modifying hook", y.grad)


def test_modify_grad():
    run_both(program_modify_grad)


# ---------------------------------------------------------------- I.3 TestNet

def _testnet_cls(torch, with_hooks):
    nn = torch.nn

    class TestNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 10, 2, stride=2)
            self.relu = nn.ReLU()
            self.flatten = lambda x: x.view(-1)
            self.fc = nn.Linear(160, 5)

        def forward(self, x):
            if not with_hooks:
                x = self.relu(self.conv(x))
                return self.fc(self.flatten(x))
            x = self.conv(x)

            x = self.relu(x)
            # 设置hook：让x.grad >= 0
            x.register_hook(lambda grad: torch.clamp(grad, min=0))

            x.register_hook(lambda grad: print('size of relu output:', grad.shape))
            # 再加一个hook确认有没有x.grad是负值
            x.register_hook(lambda grad: print('any grad < 0?',
                                               bool((grad < 0).any())))
            x = self.flatten(x)
            y = self.fc(x)
            return y
    return TestNet


def program_testnet(torch, log):
    TestNet = _testnet_cls(torch, with_hooks=False)
    x = randn(torch, (1, 3, 8, 8), seed=2)
    net = TestNet()
    init_params(torch, net, seed=20)
    out = net(x)
    loss = (1 - out).mean()
    loss.backward()

    print(out.shape)
    # bias_grad in linear layer should be -1/out.shape
    print('bias_grad in linear layer:', net.fc.bias.grad)
    log("out", out)
    log("conv.weight.grad", net.conv.weight.grad)
    log("named_parameters", [n for n, _ in net.named_parameters()])


def test_testnet():
    run_both(program_testnet)


def program_testnet_hooks(torch, log):
    TestNet = _testnet_cls(torch, with_hooks=True)
    x = randn(torch, (1, 3, 8, 8), seed=2)
    net = TestNet()
    init_params(torch, net, seed=20)

    # 在model外部，给参数tenosr设置hook: 这里将linear层中bias的梯度改为0
    for name, param in net.named_parameters():
        if 'fc' in name and 'bias' in name:
            param.register_hook(lambda grad: torch.zeros(grad.shape))

    out = net(x)
    loss = (1 - out).mean()
    loss.backward()

    # 确认bias的grad成功改成了全0
    print('bias_grad in linear layer:', net.fc.bias.grad)
    log("fc.bias.grad", net.fc.bias.grad)
    log("conv.weight.grad", net.conv.weight.grad)
    log("conv.bias.grad", net.conv.bias.grad)
    log("fc.weight.grad", net.fc.weight.grad)


def test_testnet_hooks():
    run_both(program_testnet_hooks)


# ---------------------------------------------------------------- hook firing rules

def program_hook_fired_for_autograd_grad_inputs(torch, log):
    # A tensor passed as `inputs` to autograd.grad: its tensor hooks fire, its
    # grad_fn (and the Node pre-hooks on it) does not run.
    events = []
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    z = (y ** 2).sum()
    y.register_hook(lambda g: events.append("y tensor hook"))
    y.grad_fn.register_prehook(lambda gO: events.append("y.grad_fn prehook"))
    y.grad_fn.register_hook(lambda gI, gO: events.append("y.grad_fn post hook"))
    x.register_hook(lambda g: events.append("x tensor hook"))
    gy, = torch.autograd.grad(z, y, retain_graph=True)
    log("gy", gy)
    log("events for grad(z, y)", list(events))
    events.clear()
    gx, = torch.autograd.grad(z, x)
    log("gx", gx)
    log("events for grad(z, x)", list(events))
    log("x.grad untouched", x.grad)


def test_hook_fired_for_autograd_grad_inputs():
    run_both(program_hook_fired_for_autograd_grad_inputs)


def program_post_accumulate_grad_hook(torch, log):
    events = []
    x = torch.tensor([1.0, 2.0], requires_grad=True)

    def tensor_hook(g):
        events.append(("tensor hook", g.tolist()))

    def post_acc(t):
        # receives the tensor itself, after .grad was accumulated
        events.append(("post accumulate", t is x, t.grad.tolist()))

    x.register_hook(tensor_hook)
    h = x.register_post_accumulate_grad_hook(post_acc)
    out = (x * 2).sum() + (x * x).sum()   # x used twice: hooks still run once
    out.backward()
    log("events 1", [list(e) for e in events])
    events.clear()
    (x * 5).sum().backward()
    log("events 2 (accumulating)", [list(e) for e in events])
    log("x.grad", x.grad)
    h.remove()
    events.clear()
    (x * 5).sum().backward()
    log("events after remove", [list(e) for e in events])
    # only on leaves
    y = x * 2
    try:
        y.register_post_accumulate_grad_hook(post_acc)
        log("post-accumulate hook on non-leaf", "ok")
    except Exception as e:
        log("post-accumulate hook on non-leaf", type(e).__name__)
    # not run by autograd.grad (nothing is accumulated)
    events.clear()
    x.register_post_accumulate_grad_hook(post_acc)
    torch.autograd.grad((x * 3).sum(), x)
    log("events for autograd.grad", [list(e) for e in events])


def test_post_accumulate_grad_hook():
    run_both(program_post_accumulate_grad_hook)


def program_hook_order(torch, log):
    # 1. tensor hooks 2. Node pre-hooks 3. retain_grad .grad update 4. Node
    # 5. post-accumulate-grad hooks on leaves 6. Node post-hooks; same type ->
    # registration order.
    events = []
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2           # MulBackward0
    z = y.sin()
    loss = z.sum()

    def state():
        return "y.grad set" if y.grad is not None else "y.grad None"

    y.retain_grad()
    y.register_hook(lambda g: events.append("y hook A, " + state()))
    y.register_hook(lambda g: events.append("y hook B, " + state()))
    y.grad_fn.register_prehook(lambda gO: events.append("y.grad_fn prehook 1, " + state()))
    y.grad_fn.register_prehook(lambda gO: events.append("y.grad_fn prehook 2"))
    y.grad_fn.register_hook(lambda gI, gO: events.append("y.grad_fn posthook, " + state()))
    z.grad_fn.register_hook(lambda gI, gO: events.append("z.grad_fn posthook"))
    z.grad_fn.register_prehook(lambda gO: events.append("z.grad_fn prehook"))
    x.register_hook(lambda g: events.append("x hook"))
    x.register_post_accumulate_grad_hook(lambda t: events.append("x post-accumulate"))
    acc = y.grad_fn.next_functions[0][0]
    log("acc node", type(acc).__name__)
    acc.register_prehook(lambda gO: events.append("AccumulateGrad prehook"))
    acc.register_hook(lambda gI, gO: events.append("AccumulateGrad posthook"))
    loss.backward()
    log("events", events)
    log("y.grad", y.grad)
    log("x.grad", x.grad)


def test_hook_order():
    run_both(program_hook_order)


def program_node_hooks_modify(torch, log):
    seen = []
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    out = (y * 2).sum()

    def pre(grad_outputs):
        seen.append(("pre", [g.tolist() for g in grad_outputs]))
        return (grad_outputs[0] * 10,)

    def post(grad_inputs, grad_outputs):
        seen.append(("post gI", [None if g is None else g.tolist() for g in grad_inputs]))
        seen.append(("post gO", [g.tolist() for g in grad_outputs]))
        return (grad_inputs[0] + 1, grad_inputs[1])  # x * x: MulBackward0 has two

    h1 = y.grad_fn.register_prehook(pre)
    h2 = y.grad_fn.register_hook(post)
    out.backward(retain_graph=True)
    log("seen", [list(s) for s in seen])
    log("x.grad", x.grad)
    h1.remove()
    h2.remove()
    x.grad = None
    out.backward()
    log("x.grad after removing node hooks", x.grad)


def test_node_hooks_modify():
    run_both(program_node_hooks_modify)


# ---------------------------------------------------------------- II.2 module hooks on nn.Linear

def program_module_hooks_linear(torch, log):
    nn = torch.nn
    m = nn.Linear(3, 3)
    init_params(torch, m, seed=1)
    x = randn(torch, (2, 3), seed=1, requires_grad=True)

    def forward_pre_hook(m, inputs):  # 注，inputs都是wrapped成tuple类型的
        input = inputs[0]
        return input + 1.

    def forward_hook(m, inputs, output):  # inputs都wrapped成tuple，output按原类型传
        return output + inputs[0]

    print(format(m(x)))
    forward_pre_hook_handle = m.register_forward_pre_hook(forward_pre_hook)
    print(format(m(x)))
    forward_hook_handle = m.register_forward_hook(forward_hook)
    print(format(m(x)))
    forward_pre_hook_handle.remove()
    forward_hook_handle.remove()
    print(format(m(x)))

    def backward_hook(m, grad_inputs, grad_outputs):
        new_grad_inputs = [torch.ones_like(gi) * 42. for gi in grad_inputs]
        return new_grad_inputs

    m(x).sum().backward()
    print(format(x.grad))
    log("x.grad", x.grad)

    m.zero_grad()
    x.grad.zero_()
    log("weight.grad after zero_grad", m.weight.grad)

    backward_hook_handle = m.register_full_backward_hook(backward_hook)
    m(x).sum().backward()
    print(format(x.grad))
    log("x.grad with hook", x.grad)
    log("weight.grad with hook (not replaced)", m.weight.grad)

    backward_hook_handle.remove()
    m.zero_grad()
    x.grad.zero_()
    m(x).sum().backward()
    print(format(x.grad))
    log("x.grad after remove", x.grad)


def test_module_hooks_linear():
    run_both(program_module_hooks_linear)


def program_module_backward_hook_args(torch, log):
    nn = torch.nn
    m = nn.Linear(3, 2)
    init_params(torch, m, seed=4)
    x = randn(torch, (2, 3), seed=5, requires_grad=True)
    seen = []

    def bwd_pre(mod, grad_output):
        seen.append(("pre", type(grad_output).__name__, len(grad_output)))
        log("pre grad_output", grad_output[0])
        return (grad_output[0] * 3,)

    def bwd(mod, grad_input, grad_output):
        seen.append(("full", type(grad_input).__name__, len(grad_input), len(grad_output)))
        log("full grad_input", grad_input[0])
        log("full grad_output (after pre hook)", grad_output[0])

    m.register_full_backward_pre_hook(bwd_pre)
    m.register_full_backward_hook(bwd)
    (m(x) * torch.tensor([1.0, -1.0])).sum().backward()
    log("seen", [list(s) for s in seen])
    log("x.grad", x.grad)
    log("weight.grad (pre hook scaled)", m.weight.grad)

    # input not requiring grad -> grad_input is (None,)
    seen.clear()
    m.zero_grad()
    m(x.detach()).sum().backward()
    log("seen no input grad", [list(s) for s in seen])


def test_module_backward_hook_args():
    run_both(program_module_backward_hook_args)


def program_forward_hook_features(torch, log):
    nn = torch.nn
    F = torch.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 2)
            self.pool = nn.AdaptiveAvgPool2d((4, 4))
            self.fc = nn.Linear(8 * 4 * 4, 1)

        def forward(self, x):
            x = F.relu(self.conv(x))
            x = self.pool(x)
            x = x.view(x.shape[0], -1)
            x = self.fc(x)
            return x

    features = {}

    def hook_func(model, input, output):
        features['feature'] = output.detach()

    net = Net()
    init_params(torch, net, seed=6)
    net.pool.register_forward_hook(hook_func)

    x = randn(torch, (1, 3, 10, 10), seed=7)
    output = net(x)
    print(features['feature'].shape)
    log("feature", features['feature'])
    log("feature.requires_grad", features['feature'].requires_grad)
    log("output", output)
    log("output.grad_fn", type(output.grad_fn).__name__)


def test_forward_hook_features():
    run_both(program_forward_hook_features)


# ---------------------------------------------------------------- II.3 resnet-like scenarios

def _small_resnet(torch, num_classes=10):
    """A small stand-in for torchvision's resnet18 with the same named children."""
    nn = torch.nn

    def stage(cin, cout, stride):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU())

    class SmallResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, kernel_size=7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(4)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            self.layer1 = stage(4, 4, 1)
            self.layer2 = stage(4, 8, 2)
            self.layer3 = stage(8, 8, 2)
            self.layer4 = stage(8, 16, 2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(16, num_classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            x = torch.flatten(self.avgpool(x), 1)
            return self.fc(x)

    return SmallResNet()


def program_verbose_net(torch, log):
    nn = torch.nn

    class VerboseNet(nn.Module):
        def __init__(self, model: nn.Module):
            super().__init__()
            self.model = model

            for name, layer in self.model.named_children():
                layer.__name__ = name
                layer.register_forward_hook(
                    lambda layer, _, output: print(f"new --->: {layer.__name__}: {output.shape}")
                )

        def forward(self, x: torch.Tensor):
            return self.model(x)

    model = _small_resnet(torch)
    init_params(torch, model, seed=8)
    verbose_resnet = VerboseNet(model)
    dummy_input = torch.ones(10, 3, 28, 28)
    _ = verbose_resnet(dummy_input)
    log("out shape", _.shape)
    log("children", [n for n, _c in verbose_resnet.named_children()])
    log("model children", [n for n, _c in model.named_children()])


def test_verbose_net():
    run_both(program_verbose_net)


def program_feature_extraction(torch, log):
    nn = torch.nn

    class FeatureExt(nn.Module):
        def __init__(self, model, layers):
            super().__init__()
            self.model = model
            self.layers = layers
            self._features = {layer: torch.empty(0) for layer in layers}

            for layer_i in layers:
                layer = dict([*self.model.named_modules()])[layer_i]
                layer.register_forward_hook(self.save_outputs_hook(layer_i))

        def save_outputs_hook(self, layer_i):
            def fn(_, __, output):
                self._features[layer_i] = output
            return fn

        def forward(self, x):
            _ = self.model(x)
            return self._features

    res18 = _small_resnet(torch)
    init_params(torch, res18, seed=9)
    names = [n for n, _ in res18.named_modules()]
    log("named_modules", names)
    log("first named_module is root", names[0] == "")
    log("named_modules[5] type", type([*res18.named_modules()][5][1]).__name__)
    res18_feats = FeatureExt(res18, layers=['layer4', 'avgpool', 'layer2.0'])
    log("empty placeholder", res18_feats._features['layer4'])
    dummy_input = randn(torch, (2, 3, 28, 28), seed=10)
    fests = res18_feats(dummy_input)
    for name, output in fests.items():
        print(name, '->', output.shape)
        log(name, output)
        log(name + " requires_grad", output.requires_grad)


def test_feature_extraction():
    run_both(program_feature_extraction)


def _clip_grad(model, floor, cap):
    for parameter in model.parameters():
        parameter.register_hook(lambda grad: grad.clamp_(floor, cap))
    return model


def program_clip_grad_hooks(torch, log):
    nn = torch.nn

    class AffineReluAffine(nn.Module):
        def __init__(self, in_features, hidden_features, out_features):
            super().__init__()
            self.fc1 = nn.Linear(in_features, hidden_features)
            self.relu = nn.ReLU()
            self.fc2 = nn.Linear(hidden_features, out_features)

        def forward(self, x):
            x = self.fc1(x)
            x = self.relu(x)
            x = self.fc2(x)
            return x

    model = AffineReluAffine(100, 200, 5)
    init_params(torch, model, seed=11, scale=0.1)
    clipped_dummy_model = _clip_grad(model, floor=-1, cap=1)
    input_tensor = randn(torch, (1, 100), seed=20)
    output = clipped_dummy_model(input_tensor)
    loss = output.sum()
    loss.backward()
    print(clipped_dummy_model.fc2.bias.grad[:5])
    log("fc2.bias.grad", clipped_dummy_model.fc2.bias.grad)
    log("fc2.weight.grad max", clipped_dummy_model.fc2.weight.grad.max())
    log("fc2.weight.grad min", clipped_dummy_model.fc2.weight.grad.min())
    log("fc1.weight.grad", clipped_dummy_model.fc1.weight.grad)


def test_clip_grad_hooks():
    run_both(program_clip_grad_hooks)


def program_clip_grad_resnet(torch, log):
    clipped_resnet = _clip_grad(_small_resnet(torch), -0.1, 0.1)
    init_params(torch, clipped_resnet, seed=12)
    # keep |pred| away from 0 (log and 1/pred are ill-conditioned there); half the
    # classes negative so that, as with the seed's resnet, the loss is nan but the
    # gradients are finite
    with torch.no_grad():
        clipped_resnet.fc.bias.copy_(torch.tensor([2.0, -2.0] * 5))
    dummy_input = randn(torch, (4, 3, 28, 28), seed=13)
    pred = clipped_resnet(dummy_input)
    loss = pred.log().mean()      # log of negative logits is nan; its grad is finite
    loss.backward()
    log("loss", loss)
    log("fc.bias.grad[:5]", clipped_resnet.fc.bias.grad[:5])
    log("all grads within [-0.1, 0.1]",
        all(bool(((p.grad >= -0.1) & (p.grad <= 0.1)).all()) for p in clipped_resnet.parameters()))
    log("conv1.weight.grad", clipped_resnet.conv1.weight.grad)
    log("bn1 running_mean", clipped_resnet.bn1.running_mean)
    log("bn1 num_batches_tracked", clipped_resnet.bn1.num_batches_tracked)


def test_clip_grad_resnet():
    run_both(program_clip_grad_resnet)


# ---------------------------------------------------------------- III. saved tensors hooks

def program_saved_tensors_hooks_print(torch, log):
    def pack(x):
        print('packing:', x)
        return x

    def unpack(x):
        print('unpacking:', x)
        return x

    a = torch.ones(5, requires_grad=True)
    b = torch.ones(5, requires_grad=True) * 2

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = a * b

    y.sum().backward()
    log("a.grad", a.grad)
    # hooks apply only inside the with-block
    b = torch.ones(5, requires_grad=True) * 2
    z = a * b
    z.sum().backward()
    log("a.grad 2", a.grad)


def test_saved_tensors_hooks_print():
    run_both(program_saved_tensors_hooks_print)


def program_saved_tensors_hooks_saved_attrs(torch, log):
    events = []

    def pack(x):
        events.append("pack")
        return x

    def unpack(x):
        events.append("unpack")
        return x

    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = a * b
    log("events after forward", list(events))
    log("_saved_self", y.grad_fn._saved_self)
    log("_saved_other", y.grad_fn._saved_other)
    log("events after attribute access", list(events))
    y.sum().backward()
    log("events after backward", list(events))
    try:
        y.grad_fn._saved_self
        log("saved after backward", "ok")
    except Exception as e:
        log("saved after backward", type(e).__name__)


def test_saved_tensors_hooks_saved_attrs():
    run_both(program_saved_tensors_hooks_saved_attrs)


def program_saved_tensors_hooks_scale(torch, log):
    # 例2.1: pack/unpack can change what is stored, as long as unpack(pack(x)) == x
    def pack(x):
        print('packing:', x * 4)
        return x * 4

    def unpack(x):
        print('unpacking:', x / 4)
        return x / 4

    x = torch.tensor([0.8033, 0.1748, 0.0890], requires_grad=True)
    print('x =', x)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x ** 2

    y.sum().backward()
    log("x.grad.equal(x * 2)", x.grad.equal(x * 2))


def test_saved_tensors_hooks_scale():
    run_both(program_saved_tensors_hooks_scale)


def program_saved_tensors_hooks_index(torch, log):
    # 例2.2: store an index into a list
    storage = []

    def pack(x):
        storage.append(x)
        return len(storage) - 1

    def unpack(ind):
        return storage[ind]

    x = randn(torch, (3,), seed=3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x ** 2

    y.sum().backward()
    log("x.grad.equal(x * 2)", x.grad.equal(x * 2))
    log("n stored", len(storage))
    # nested hooks: the innermost pair applies
    outer, inner = [], []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: outer.append(1) or t, lambda t: t):
        with torch.autograd.graph.saved_tensors_hooks(lambda t: inner.append(1) or t, lambda t: t):
            z = x.sin()
        w = x.cos()
    log("inner packs", len(inner))
    log("outer packs", len(outer))
    (z + w).sum().backward()


def test_saved_tensors_hooks_index():
    run_both(program_saved_tensors_hooks_index)


def program_saved_tensors_hooks_cpu(torch, log):
    # 例3: saving tensors to cpu by hand
    def pack(x):
        return (x.device, x.cpu())

    def unpack(package):
        device, x = package
        return x.to(device)

    x = randn(torch, (3,), seed=3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x ** 2

    y.sum().backward()
    log("allclose", torch.allclose(x.grad, (2 * x)))
    log("device type", str(x.device))


def test_saved_tensors_hooks_cpu():
    run_both(program_saved_tensors_hooks_cpu)


def program_save_on_cpu(torch, log):
    nn = torch.nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(randn(torch, (5,), seed=30))

        def forward(self, x):
            with torch.autograd.graph.save_on_cpu(pin_memory=True):
                return self.w * x

    x = randn(torch, (5,), seed=31)
    model = Model()
    loss = model(x).sum()
    loss.backward()
    log("w.grad", model.w.grad)

    class SaveToCpu(nn.Module):
        def __init__(self, module):
            super().__init__()
            self.module = module

        def forward(self, *args, **kwargs):
            with torch.autograd.graph.save_on_cpu(pin_memory=True):
                return self.module(*args, **kwargs)

    model = nn.Sequential(
        nn.Linear(10, 100),
        nn.ReLU(),
        SaveToCpu(nn.Linear(100, 100)),
        nn.ReLU(),
        nn.Linear(100, 10),
    )
    init_params(torch, model, seed=32, scale=0.1)
    x = randn(torch, (10,), seed=33)
    loss = model(x).sum()
    loss.backward()
    log("loss", loss)
    log("named_parameters", [n for n, _ in model.named_parameters()])
    log("2.module.weight.grad", model[2].module.weight.grad)
    log("0.weight.grad", model[0].weight.grad)


def test_save_on_cpu():
    run_both(program_save_on_cpu)


def program_save_to_disk_wrong_way(torch, log):
    tmp_dir_obj = tempfile.TemporaryDirectory()
    tmp_dir = tmp_dir_obj.name

    def pack_hook(tensor):
        name = os.path.join(tmp_dir, str(uuid.uuid4()))
        torch.save(tensor, name)
        return name

    def unpack_hook(name):
        tensor = torch.load(name)
        os.remove(name)  # 如果这里remove，那么unpack就不能被call第二次
        return tensor

    x = torch.ones(5, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        y = x.pow(2)
    log("files after forward", len(os.listdir(tmp_dir)))
    print(y.grad_fn._saved_self)      # 每执行一次就会unpack一次
    try:
        print(y.grad_fn._saved_self)  # 第二次会失败
        print("Double access succeeded!")
    except Exception as e:
        print("Double access failed!")
        log("exception", type(e).__name__)
    log("files after access", len(os.listdir(tmp_dir)))
    tmp_dir_obj.cleanup()


def test_save_to_disk_wrong_way():
    run_both(program_save_to_disk_wrong_way)


def program_save_to_disk_self_deleting(torch, log):
    tmp_dir_obj = tempfile.TemporaryDirectory()
    tmp_dir = tmp_dir_obj.name

    class SelfDeletingTempFile():
        def __init__(self):
            self.name = os.path.join(tmp_dir, str(uuid.uuid4()))

        def __del__(self):
            os.remove(self.name)

    def pack_hook(tensor):
        temp_file = SelfDeletingTempFile()
        torch.save(tensor, temp_file.name)
        return temp_file

    def unpack_hook(temp_file):
        return torch.load(temp_file.name)

    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        y = x.pow(2)
    log("files after forward", len(os.listdir(tmp_dir)))
    log("_saved_self", y.grad_fn._saved_self)
    log("_saved_self again", y.grad_fn._saved_self)   # the right way survives re-access
    y.sum().backward()
    gc.collect()
    log("x.grad", x.grad)
    # pytorch frees the saved data after backward -> the files delete themselves
    log("files after backward", len(os.listdir(tmp_dir)))
    tmp_dir_obj.cleanup()


def test_save_to_disk_self_deleting():
    run_both(program_save_to_disk_self_deleting)


def program_save_to_disk_threshold(torch, log):
    nn = torch.nn
    tmp_dir_obj = tempfile.TemporaryDirectory()
    tmp_dir = tmp_dir_obj.name

    class SelfDeletingTempFile():
        def __init__(self):
            self.name = os.path.join(tmp_dir, str(uuid.uuid4()))

        def __del__(self):
            os.remove(self.name)

    SAVE_ON_DISK_THRESHOLD = 1000

    def pack_hook(x):
        if x.numel() < SAVE_ON_DISK_THRESHOLD:
            return x
        temp_file = SelfDeletingTempFile()
        torch.save(x, temp_file.name)   # (the seed wrote `tensor`, an undefined name)
        return temp_file

    def unpack_hook(tensor_or_sctf):
        if isinstance(tensor_or_sctf, torch.Tensor):
            return tensor_or_sctf
        return torch.load(tensor_or_sctf.name)

    class SaveToDisk(nn.Module):
        def __init__(self, module):
            super().__init__()
            self.module = module

        def forward(self, *args, **kwargs):
            with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
                return self.module(*args, **kwargs)

    inner = nn.Sequential(nn.Linear(50, 40), nn.Tanh(), nn.Linear(40, 3))
    init_params(torch, inner, seed=40, scale=0.1)
    net = SaveToDisk(inner)
    x = randn(torch, (30, 50), seed=41)   # 1500 elements: saved to disk
    out = net(x)
    gc.collect()
    log("files after forward", len(os.listdir(tmp_dir)))
    out.sum().backward()
    gc.collect()
    log("files after backward", len(os.listdir(tmp_dir)))
    log("0.weight.grad", inner[0].weight.grad)
    log("2.weight.grad", inner[2].weight.grad)
    tmp_dir_obj.cleanup()


def test_save_to_disk_threshold():
    run_both(program_save_to_disk_threshold)


def program_save_to_disk_data_parallel(torch, log):
    # net = nn.DataParallel(SaveToDisk(Model())): the hooks live inside forward, so
    # they apply in whichever thread runs the module (on CPU DataParallel just
    # calls the module).
    nn = torch.nn
    packed = []

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(randn(torch, (5,), seed=30))

        def forward(self, x):
            return self.w * x

    class SaveToDisk(nn.Module):
        def __init__(self, module):
            super().__init__()
            self.module = module

        def forward(self, *args, **kwargs):
            with torch.autograd.graph.saved_tensors_hooks(
                    lambda t: packed.append(tuple(t.shape)) or t, lambda t: t):
                return self.module(*args, **kwargs)

    net = nn.DataParallel(SaveToDisk(Model()))
    log("wrapped type", type(net.module).__name__)
    log("named_parameters", [n for n, _ in net.named_parameters()])
    x = randn(torch, (5,), seed=31)
    out = net(x)
    out.sum().backward()
    log("packed", packed)
    log("w.grad", net.module.module.w.grad)


def test_save_to_disk_data_parallel():
    run_both(program_save_to_disk_data_parallel)


def program_torch_save_load_tensor(torch, log):
    # torch.save / torch.load of a single tensor and of a state_dict (used by the
    # disk hooks above); only loaded values are compared, not file bytes.
    nn = torch.nn
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "t")
        t = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        torch.save(t, p)
        u = torch.load(p)
        log("loaded", u)
        log("loaded requires_grad", u.requires_grad)
        log("loaded is_leaf", u.is_leaf)
        log("loaded dtype", u.dtype)
        i = torch.tensor([1, 2, 3])
        torch.save(i, p)
        log("loaded int", torch.load(p))
        m = nn.Linear(3, 2)
        init_params(torch, m, seed=50)
        torch.save(m.state_dict(), p)
        sd = torch.load(p)
        log("state_dict keys", list(sd.keys()))
        m2 = nn.Linear(3, 2)
        r = m2.load_state_dict(sd)
        log("missing/unexpected", [list(r.missing_keys), list(r.unexpected_keys)])
        log("weights equal", bool(torch.equal(m.weight, m2.weight)))
        log("loaded param requires_grad", m2.weight.requires_grad)
        log("loaded state_dict tensor requires_grad", sd["weight"].requires_grad)


def test_torch_save_load_tensor():
    run_both(program_torch_save_load_tensor)
