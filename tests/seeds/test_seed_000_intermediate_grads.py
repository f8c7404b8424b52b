"""Seed 000 (000_de4cf1c5fa4e8eb5.txt): intermediate gradients (retain_grad,
autograd.grad with create_graph, register_hook + handle.remove), named_parameters
grads, checkpoint / checkpoint_sequential and preserve_rng_state.

Each ``program(torch, log)`` keeps the seed's code; randn is replaced by
deterministic inputs.  See tests/parity.py for what is compared.
"""


from parity import grad_fn_name, init_params, randn, run_both

# ---------------------------------------------------------------- 1. retain_grad

def program_retain_grad(torch, log):
    x = torch.ones((2, 2), requires_grad=True)
    print(x.is_leaf)

    y = x * 2
    y.retain_grad()
    z = y ** 2

    z.backward(torch.ones_like(z))
    print(x.grad)
    print(y.grad)       # not None

    log("x.is_leaf", x.is_leaf)
    log("y.is_leaf", y.is_leaf)
    log("y.retains_grad", y.retains_grad)
    log("z.retains_grad", z.retains_grad)
    log("y.grad_fn", grad_fn_name(y))
    log("z.grad_fn", grad_fn_name(z))
    log("x.grad", x.grad)
    log("y.grad", y.grad)
    log("y.grad.requires_grad", y.grad.requires_grad)


def test_retain_grad():
    run_both(program_retain_grad)


def program_retain_grad_accumulates(torch, log):
    # retain_grad'ed non-leaf .grad accumulates across backward calls, like a leaf's
    x = torch.ones((2, 2), requires_grad=True)
    y = x * 2
    y.retain_grad()
    z = (y ** 2).sum()
    z.backward(retain_graph=True)
    log("y.grad 1", y.grad)
    z.backward()
    log("y.grad 2", y.grad)
    log("x.grad 2", x.grad)
    y.retain_grad()  # calling it twice is a no-op
    log("y.retains_grad", y.retains_grad)
    try:
        x.retain_grad()  # leaf: no-op, no error
        log("leaf retain_grad", "ok")
    except Exception as e:
        log("leaf retain_grad", type(e).__name__)
    log("x.retains_grad", x.retains_grad)


def test_retain_grad_accumulates():
    run_both(program_retain_grad_accumulates)


# ---------------------------------------------------------------- 2. autograd.grad

def program_autograd_grad(torch, log):
    x = torch.ones((2, 2), requires_grad=True)
    print(x.is_leaf)

    y = x * 2  # (the seed forgot this line)
    z = y ** 2
    t = z.mean()
    x_res = torch.autograd.grad(t, x, create_graph=True)[0]
    print(x_res)
    y_res = torch.autograd.grad(t, y, create_graph=True)[0]
    print(y_res)

    log("x_res", x_res)
    log("x_res.requires_grad", x_res.requires_grad)
    log("x_res.is_leaf", x_res.is_leaf)
    # which node heads a double-backward graph is a detail of torch's derivative
    # formulas; only that one exists is compared
    log("x_res.grad_fn is not None", x_res.grad_fn is not None)
    log("y_res", y_res)
    log("y_res.requires_grad", y_res.requires_grad)
    log("y_res.grad_fn is not None", y_res.grad_fn is not None)
    # autograd.grad does not touch .grad
    log("x.grad", x.grad)
    # create_graph=True: the result is differentiable again (second order)
    xx = torch.autograd.grad(x_res.sum(), x)[0]
    log("d(sum dt/dx)/dx", xx)
    log("x.grad after 2nd order", x.grad)


def test_autograd_grad_create_graph():
    run_both(program_autograd_grad)


def program_autograd_grad_scalar_only(torch, log):
    # "torch.autograd.grad() 只能对 Scalar output 计算梯度" unless grad_outputs is given
    x = torch.ones((2, 2), requires_grad=True)
    z = (x * 2) ** 2
    try:
        torch.autograd.grad(z, x)
        log("non-scalar grad", "ok")
    except Exception as e:
        log("non-scalar grad", type(e).__name__)
    g = torch.autograd.grad(z, x, grad_outputs=torch.ones_like(z))[0]
    log("with grad_outputs", g)
    log("requires_grad without create_graph", g.requires_grad)
    # the graph was freed (retain_graph defaults to create_graph=False)
    try:
        torch.autograd.grad(z, x, grad_outputs=torch.ones_like(z))
        log("second grad", "ok")
    except Exception as e:
        log("second grad", type(e).__name__)
    # several inputs, one unused
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    c = torch.tensor([5.0], requires_grad=True)
    out = (a * b).sum()
    try:
        torch.autograd.grad(out, [a, c], retain_graph=True)
        log("unused input", "ok")
    except Exception as e:
        log("unused input", type(e).__name__)
    ga, gc = torch.autograd.grad(out, [a, c], allow_unused=True)
    log("ga", ga)
    log("gc", gc)


def test_autograd_grad_scalar_only():
    run_both(program_autograd_grad_scalar_only)


# ---------------------------------------------------------------- 3. register_hook

def program_register_hook_seed(torch, log):
    # The seed's code, bug included: `global global_feat` means the hook's
    # assignment to global_grad is local, so the outer value stays 0.0 --
    # exactly what the note observed ("获取到的还是 global_grad 原始的数值").
    state = {"global_grad": 0.0}

    def extract_grad(grad):
        print('current grad: ', grad)
        global_grad = grad  # noqa: F841  (local, as in the seed)
        return grad

    x = torch.ones((2, 2), requires_grad=True)
    print(x.is_leaf)

    y = x * 2
    z = y ** 2
    t = z.mean()

    y_hook = y.register_hook(extract_grad)
    t.backward()
    print('y grad: ', state["global_grad"])
    print('x grad: ', x.grad)

    y_hook.remove()
    log("global_grad", state["global_grad"])
    log("x.grad", x.grad)
    log("y.grad", y.grad)  # hooks do not populate .grad


def test_register_hook_seed():
    run_both(program_register_hook_seed)


def program_register_hook_capture(torch, log):
    # The fixed version: the hook really captures the intermediate gradient.
    captured = []
    calls = []

    def extract_grad(grad):
        calls.append("hook")
        captured.append(grad)
        return grad

    x = torch.ones((2, 2), requires_grad=True)
    y = x * 2
    z = y ** 2
    t = z.mean()
    y_hook = y.register_hook(extract_grad)
    t.backward(retain_graph=True)
    log("calls", list(calls))
    log("captured y grad", captured[0])
    log("captured requires_grad", captured[0].requires_grad)
    log("x.grad", x.grad)

    # the handle removes the hook: a second backward does not call it
    y_hook.remove()
    t.backward()
    log("calls after remove", list(calls))
    log("x.grad accumulated", x.grad)
    y_hook.remove()  # removing twice is harmless
    log("removed twice", "ok")


def test_register_hook_capture_and_remove():
    run_both(program_register_hook_capture)


def program_register_hook_on_leaf_requires_grad_false(torch, log):
    t = torch.ones(2)
    try:
        t.register_hook(lambda g: g)
        log("hook on requires_grad=False", "ok")
    except Exception as e:
        log("hook on requires_grad=False", type(e).__name__)


def test_register_hook_needs_requires_grad():
    run_both(program_register_hook_on_leaf_requires_grad_false)


# ---------------------------------------------------------------- 4. named_parameters grads

def program_named_parameters_grads(torch, log):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    init_params(torch, model, seed=0)
    x = randn(torch, (5, 3), seed=1)
    for name, param in model.named_parameters():
        log(name + " grad before", param.grad)
    loss = model(x).pow(2).sum()
    loss.backward()
    # ...
    for name, param in model.named_parameters():
        print(name)
        log("name", name)
        log(name + ".grad", param.grad)          # 真实梯度，param.grad 是一个 Tensor
        log(name + ".data.grad", param.data.grad)  # None
        log(name + ".data.requires_grad", param.data.requires_grad)
        log(name + ".is_leaf", param.is_leaf)
        log(name + " type", type(param).__name__)


def test_named_parameters_grads():
    run_both(program_named_parameters_grads)


# ---------------------------------------------------------------- 5. checkpoint

def program_checkpoint_basic(torch, log):
    nn = torch.nn
    layer = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 4))
    init_params(torch, layer, seed=3)
    x = randn(torch, (2, 4), seed=4, requires_grad=True)

    out = torch.utils.checkpoint.checkpoint(layer, x, use_reentrant=False)
    log("out", out)
    log("out.requires_grad", out.requires_grad)
    out.sum().backward()
    grads = [p.grad.clone() for p in layer.parameters()] + [x.grad.clone()]
    for p in layer.parameters():
        p.grad = None
    x.grad = None
    layer(x).sum().backward()
    ref = [p.grad for p in layer.parameters()] + [x.grad]
    for i, (g, r) in enumerate(zip(grads, ref)):
        log(f"grad {i}", g)
        log(f"grad {i} == no checkpoint", bool(torch.allclose(g, r)))


def test_checkpoint_basic():
    run_both(program_checkpoint_basic)


def _grad_mode_probe(torch, fn, modes):
    def wrapped(*args):
        modes.append(torch.is_grad_enabled())
        return fn(*args)
    return wrapped


def program_checkpoint_reentrant_no_grad(torch, log):
    # "function 前向计算时是在 torch.no_grad() 里面执行的" and "输出包含在 list/dict 里，
    # 即使是 Tensor，也不会被计算 gradients" -- the reentrant variant.
    x = randn(torch, (3,), seed=5, requires_grad=True)
    modes = []

    def fn(t):
        modes.append(torch.is_grad_enabled())
        return t.sin(), [t * 2], {"k": t * 3}, "not a tensor"

    out, in_list, in_dict, s = torch.utils.checkpoint.checkpoint(fn, x, use_reentrant=True)
    log("modes in forward", list(modes))
    log("out.requires_grad", out.requires_grad)
    log("list item requires_grad", in_list[0].requires_grad)
    log("dict item requires_grad", in_dict["k"].requires_grad)
    log("non-tensor output", s)
    out.sum().backward()
    log("modes after backward (recompute)", list(modes))
    log("x.grad", x.grad)


def test_checkpoint_reentrant_no_grad():
    run_both(program_checkpoint_reentrant_no_grad)


def program_checkpoint_nonreentrant_containers(torch, log):
    # today's default recommendation (use_reentrant=False): tensors inside
    # containers are differentiable too.
    x = randn(torch, (3,), seed=5, requires_grad=True)

    def fn(t):
        return t.sin(), [t * 2], {"k": t * 3}, "not a tensor"

    out, in_list, in_dict, s = torch.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)
    log("out.requires_grad", out.requires_grad)
    log("list item requires_grad", in_list[0].requires_grad)
    log("dict item requires_grad", in_dict["k"].requires_grad)
    log("non-tensor output", s)
    (out.sum() + in_list[0].sum() + in_dict["k"].sum()).backward()
    log("x.grad", x.grad)


def test_checkpoint_nonreentrant_containers():
    run_both(program_checkpoint_nonreentrant_containers)


def program_checkpoint_preserve_rng_state(torch, log):
    # Dropout inside the checkpointed function: with preserve_rng_state=True the
    # recomputation sees the same mask, so grads equal an un-checkpointed run that
    # starts from the same seed.  (Masks themselves differ between torch and
    # tracegrad; only the consistency within each library is compared.)
    nn = torch.nn
    block = nn.Sequential(nn.Linear(6, 6), nn.Dropout(p=0.5), nn.Linear(6, 6))
    init_params(torch, block, seed=7)
    x = randn(torch, (4, 6), seed=8, requires_grad=True)

    for use_reentrant in (True, False):
        torch.manual_seed(123)
        out = torch.utils.checkpoint.checkpoint(block, x, preserve_rng_state=True,
                                                use_reentrant=use_reentrant)
        out.sum().backward()
        g_ckpt = [p.grad.clone() for p in block.parameters()] + [x.grad.clone()]
        block.zero_grad()
        x.grad = None

        torch.manual_seed(123)
        out_ref = block(x)
        out_ref.sum().backward()
        g_ref = [p.grad.clone() for p in block.parameters()] + [x.grad.clone()]
        block.zero_grad()
        x.grad = None
        log(f"reentrant={use_reentrant} out == plain", bool(torch.allclose(out, out_ref)))
        log(f"reentrant={use_reentrant} grads == plain",
            all(bool(torch.allclose(a, b)) for a, b in zip(g_ckpt, g_ref)))

    # preserve_rng_state=False is accepted (no RNG ops here, so results are exact)
    block.eval()
    out = torch.utils.checkpoint.checkpoint(block, x, preserve_rng_state=False,
                                            use_reentrant=False)
    out.sum().backward()
    log("eval out", out)
    log("eval x.grad", x.grad)


def test_checkpoint_preserve_rng_state():
    run_both(program_checkpoint_preserve_rng_state)


def program_checkpoint_closure_xbert(torch, log):
    # The Albef/xbert pattern: a closure passes extra non-tensor / None arguments.
    nn = torch.nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(4, 4)

        def forward(self, hidden_states, attention_mask=None, head_mask=None,
                    encoder_hidden_states=None, encoder_attention_mask=None,
                    past_key_value=None, output_attentions=False):
            h = self.dense(hidden_states)
            if attention_mask is not None:
                h = h * attention_mask
            if encoder_hidden_states is not None:
                h = h + encoder_hidden_states * encoder_attention_mask
            attn = h.softmax(-1) if output_attentions else None
            return (h.tanh(), attn)

    layer_module = Layer()
    init_params(torch, layer_module, seed=9)
    past_key_value = None
    output_attentions = True

    def create_custom_forward(module):
        def custom_forward(*inputs):
            return module(*inputs, past_key_value, output_attentions)
        return custom_forward

    hidden_states = randn(torch, (2, 4), seed=10, requires_grad=True)
    attention_mask = torch.tensor([[1.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 1.0]])
    layer_head_mask = None
    encoder_hidden_states = randn(torch, (2, 4), seed=11, requires_grad=True)
    encoder_attention_mask = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 1.0, 1.0]])

    layer_outputs = torch.utils.checkpoint.checkpoint(
        create_custom_forward(layer_module),
        hidden_states,
        attention_mask,
        layer_head_mask,
        encoder_hidden_states,
        encoder_attention_mask,
        use_reentrant=False,
    )
    log("n outputs", len(layer_outputs))
    log("out0", layer_outputs[0])
    log("out1", layer_outputs[1])
    (layer_outputs[0].sum() + (layer_outputs[1] * layer_outputs[1]).sum()).backward()
    log("hidden_states.grad", hidden_states.grad)
    log("encoder_hidden_states.grad", encoder_hidden_states.grad)
    log("dense.weight.grad", layer_module.dense.weight.grad)


def test_checkpoint_closure_xbert():
    run_both(program_checkpoint_closure_xbert)


def program_checkpoint_sequential(torch, log):
    nn = torch.nn
    from_ckpt = torch.utils.checkpoint.checkpoint_sequential
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(),
                          nn.Linear(8, 3), nn.Sigmoid())
    init_params(torch, model, seed=12)
    input_var = randn(torch, (4, 5), seed=13, requires_grad=True)
    chunks = 2
    out = from_ckpt(model, chunks, input_var, use_reentrant=False)
    log("out", out)
    log("out.requires_grad", out.requires_grad)
    out.sum().backward()
    g_ckpt = [p.grad.clone() for p in model.parameters()] + [input_var.grad.clone()]
    model.zero_grad()
    input_var.grad = None
    model(input_var).sum().backward()
    g_ref = [p.grad for p in model.parameters()] + [input_var.grad]
    for i, (a, b) in enumerate(zip(g_ckpt, g_ref)):
        log(f"grad {i}", a)
        log(f"grad {i} == plain", bool(torch.allclose(a, b)))
    # reentrant variant, 3 segments
    model.zero_grad()
    input_var.grad = None
    out = from_ckpt(model, 3, input_var, use_reentrant=True)
    out.sum().backward()
    log("reentrant input grad", input_var.grad)
    log("reentrant weight grad", model[0].weight.grad)


def test_checkpoint_sequential():
    run_both(program_checkpoint_sequential)
