"""Fifth round of adversarial compiled-vs-eager programs: state changed between calls in ways
earlier rounds did not try (the default dtype, grad mode around the call, an optimizer's new
param group, a layer appended to a ModuleList, a global tensor rebound), double backward for a
gradient penalty, and Python side effects inside the step. Each runs eagerly and compiled
from the same state (``_harness.check_compiled``) and must agree after every call, or break
to eager (never a silently different result)."""
import pytest

import tracegrad
from ._harness import change, check_compiled, data, np_init


def _linear_step(mod, net, opt, loss_of=None):
    def step(x):
        opt.zero_grad()
        loss = (loss_of or (lambda out: out.pow(2).mean()))(net(x))
        loss.backward()
        opt.step()
        return loss
    return step


def new_param_group_program(mod, wrap):
    a, b = np_init(mod.nn.Linear(3, 2), mod), np_init(mod.nn.Linear(2, 1), mod, seed=1)
    opt = mod.optim.Adam(a.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = b(a(x)).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    def between(i):
        if i == 1:
            opt.add_param_group({"params": b.parameters(), "lr": 0.05})
    return wrap(step), {"a": a, "b": b, "opt": opt, "change": between}, lambda i: (data(mod, i, 4, 3),)


def test_param_group_added_between_calls():
    check_compiled(new_param_group_program, calls=4, between=change, torch_too=True)


def appended_layer_program(mod, wrap):
    layers = mod.nn.ModuleList([np_init(mod.nn.Linear(3, 3), mod)])
    opt = mod.optim.SGD(layers.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        for layer in layers:
            x = mod.tanh(layer(x))
        loss = x.pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    def between(i):
        if i == 1:
            layers.append(np_init(mod.nn.Linear(3, 3), mod, seed=5))
            opt.add_param_group({"params": layers[-1].parameters()})
    return wrap(step), {"layers": layers, "opt": opt, "change": between}, lambda i: (data(mod, i, 4, 3),)


def test_layer_appended_to_module_list_between_calls():
    check_compiled(appended_layer_program, calls=4, between=change, torch_too=True)


GLOBAL = {}


def global_tensor_program(mod, wrap):
    global W
    W = mod.tensor([[1.0, 2.0], [0.5, -1.0]])

    def step(x):
        return (x @ W).sum(0)

    def between(i):
        global W
        if i == 0:
            W = W * 2          # a new tensor bound to the global
        if i == 1:
            W.mul_(-1)         # in place
    return wrap(step), {"change": between}, lambda i: (data(mod, i, 3, 2),)


def test_global_tensor_rebound_and_changed_in_place():
    check_compiled(global_tensor_program, calls=4, between=change)


def grad_mode_program(mod, wrap):
    net = np_init(mod.nn.Linear(3, 2), mod)
    f = wrap(lambda x: net(x).sum())
    out = []

    def step(x):
        # the same compiled function called with grad on, under no_grad and under inference_mode
        y1 = f(x)
        with mod.no_grad():
            y2 = f(x)
        with mod.inference_mode():
            y3 = f(x)
        out.append((y1.requires_grad, y2.requires_grad, y3.requires_grad))
        y1.backward()
        return y1 + y2 + y3
    return step, {"net": net, "out": out}, lambda i: (data(mod, i, 4, 3),)


def test_grad_mode_around_the_compiled_call():
    run = check_compiled(grad_mode_program, calls=3, torch_too=True)
    assert run.state["out"][0] == (True, False, False)


def default_dtype_program(mod, wrap):
    def step(x):
        return (x * mod.ones(2)).sum() + mod.arange(3.0).sum(), mod.zeros(1).dtype

    def between(i):
        mod.set_default_dtype(mod.float64 if i == 0 else mod.float32)
    return wrap(step), {"change": between}, lambda i: (data(mod, i, 2),)


def test_default_dtype_changed_between_calls():
    try:
        check_compiled(default_dtype_program, calls=3, between=change)
    finally:
        tracegrad.set_default_dtype(tracegrad.float32)


def gradient_penalty_program(mod, wrap):
    critic = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Tanh(), mod.nn.Linear(4, 1)), mod)
    opt = mod.optim.Adam(critic.parameters(), lr=0.01)

    def step(real, fake, alpha):
        opt.zero_grad()
        inter = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
        out = critic(inter)
        g, = mod.autograd.grad(out, inter, grad_outputs=mod.ones_like(out), create_graph=True, retain_graph=True)
        gp = ((g.norm(2, dim=1) - 1) ** 2).mean()
        loss = critic(fake).mean() - critic(real).mean() + 10 * gp
        loss.backward()
        opt.step()
        return loss, gp
    return wrap(step), {"critic": critic, "opt": opt}, \
        lambda i: (data(mod, i, 4, 3), data(mod, i + 10, 4, 3), data(mod, i + 20, 4, 1).abs())


def test_wgan_gradient_penalty_double_backward():
    check_compiled(gradient_penalty_program, calls=3, torch_too=True, atol=1e-5)


def print_program(mod, wrap):
    net = np_init(mod.nn.Linear(2, 1), mod)
    seen = []

    def step(x):
        y = net(x)
        seen.append(str(y.detach().sum().tolist()))
        return y
    return wrap(step), {"net": net, "seen": seen}, lambda i: (data(mod, i, 3, 2),)


def test_value_taken_to_python_each_call():
    check_compiled(print_program, calls=3)


def counter_program(mod, wrap):
    net = np_init(mod.nn.Linear(2, 2), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    stats = {"calls": 0, "history": []}

    def step(x):
        stats["calls"] += 1
        opt.zero_grad()
        loss = net(x).pow(2).mean() * stats["calls"]
        loss.backward()
        opt.step()
        stats["history"].append(loss.detach())
        return loss
    return wrap(step), {"net": net, "opt": opt, "stats": stats}, lambda i: (data(mod, i, 3, 2),)


def test_counter_and_history_in_a_dict():
    run = check_compiled(counter_program, calls=4, torch_too=True)
    assert run.state["stats"]["calls"] == 4 and len(run.state["stats"]["history"]) == 4


def hook_each_call_program(mod, wrap):
    net = np_init(mod.nn.Linear(2, 2), mod)
    grads = []

    def step(x):
        h = net(x)
        h.register_hook(lambda g: grads.append(g.sum().detach()))
        h.sum().backward()
        return h
    return wrap(step), {"net": net, "grads": grads}, lambda i: (data(mod, i, 3, 2),)


def test_hook_registered_inside_every_call():
    run = check_compiled(hook_each_call_program, calls=3, torch_too=True)
    assert len(run.state["grads"]) == 3


def python_number_arg_program(mod, wrap):
    net = np_init(mod.nn.Linear(2, 2), mod)

    def step(x, scale, flag):
        y = net(x) * scale
        return y.relu() if flag else y
    return wrap(step), {"net": net}, lambda i: (data(mod, i, 3, 2), 0.5 * i, i % 2 == 0)


def test_python_number_and_flag_arguments():
    check_compiled(python_number_arg_program, calls=4, torch_too=True)


def eval_inside_program(mod, wrap):
    net = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.BatchNorm1d(4), mod.nn.Dropout(0.5), mod.nn.Linear(4, 1)), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.1)

    def step(x):
        net.train()
        opt.zero_grad()
        loss = net(x).pow(2).mean()
        loss.backward()
        opt.step()
        net.eval()
        with mod.no_grad():
            val = net(x).mean()
        return loss, val
    return wrap(step), {"net": net, "opt": opt}, lambda i: (data(mod, i, 5, 3),)


def test_train_then_eval_inside_the_step():
    check_compiled(eval_inside_program, calls=3)


def lbfgs_program(mod, wrap):
    net = np_init(mod.nn.Linear(3, 1), mod)
    opt = mod.optim.LBFGS(net.parameters(), lr=0.5, max_iter=3)

    def step(x, y):
        def closure():
            opt.zero_grad()
            loss = (net(x) - y).pow(2).mean()
            loss.backward()
            return loss
        return opt.step(closure)
    return wrap(step), {"net": net, "opt": opt}, lambda i: (data(mod, i, 6, 3), data(mod, i + 5, 6, 1))


def test_lbfgs_step_with_closure():
    check_compiled(lbfgs_program, calls=3, torch_too=True, atol=1e-5)


def exception_program(mod, wrap):
    net = np_init(mod.nn.Linear(2, 2), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.1)
    errors = []

    def step(x):
        opt.zero_grad()
        loss = net(x).pow(2).mean()
        loss.backward()
        opt.step()
        if x.shape[0] == 4:
            raise ValueError("bad batch")
        return loss

    def call(x):
        try:
            return f(x)
        except ValueError as e:
            errors.append(str(e))
            return None
    f = wrap(step)
    return call, {"net": net, "opt": opt, "errors": errors}, lambda i: (data(mod, i, 4 if i == 1 else 3, 2),)


def test_exception_after_the_update():
    # eagerly the update before the raise has happened; compiled must agree
    run = check_compiled(exception_program, calls=3)
    assert run.state["errors"] == ["bad batch"]


# ---- NOTE [tensors read by place] (guards.py): a read-only tensor found in one place of the
# function's Python state is read from that place on every call, not guarded by identity ----

def replay_memory_program(mod, wrap):
    policy = np_init(mod.nn.Linear(3, 2), mod)
    opt = mod.optim.SGD(policy.parameters(), lr=0.1)
    memory = []

    def update():
        states = mod.stack(memory)
        loss = policy(states).logsumexp(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    def collect(i):
        del memory[:]
        memory.extend(data(mod, i * 10 + k, 3) for k in range(2))     # new whole tensors
        return ()
    return wrap(update), {"policy": policy, "opt": opt}, collect


def test_replay_memory_of_new_whole_tensors_is_one_program():
    run = check_compiled(replay_memory_program, calls=4, torch_too=True)
    assert run.step.stats["traces"] == 1 and not run.step.stats["graph_breaks"], run.step.stats


def test_global_tensor_rebound_is_read_by_place():
    run = check_compiled(global_tensor_program, calls=4, between=change)
    assert run.step.stats["traces"] == 1, run.step.stats


def place_program(rebind):
    """``memory[0]`` is read by the step; ``rebind(mod, memory, extra, i)`` changes what the
    places hold between calls."""
    def make(mod, wrap):
        net = np_init(mod.nn.Linear(2, 2), mod)
        opt = mod.optim.SGD(net.parameters(), lr=0.1)
        memory = [data(mod, 50, 2, 2)]
        extra = {"alias": memory[0].detach(), "w": net.weight}

        def step(x):
            opt.zero_grad()
            loss = (net(x) * memory[0]).sum() + extra["alias"].sum() * 0.5
            loss.backward()
            opt.step()
            return loss, memory[0] * 1

        def between(i):
            rebind(mod, memory, extra, i)
        return wrap(step), {"net": net, "opt": opt, "change": between}, lambda i: (data(mod, i, 2, 2),)
    return make


def _new_tensor(mod, memory, extra, i):
    memory[0] = data(mod, 60 + i, 2, 2)         # its storage was shared with extra["alias"]


def _transposed_view(mod, memory, extra, i):
    memory[0] = memory[0].t()                   # the same storage, the same shape, other values


def _view_of_a_parameter(mod, memory, extra, i):
    memory[0] = extra["w"].detach()             # the storage the step writes (opt.step)


def _other_shape(mod, memory, extra, i):
    memory[0] = data(mod, 60 + i, 1, 2)


def _in_place(mod, memory, extra, i):
    memory[0].mul_(-1)
    extra["alias"] = data(mod, 70 + i, 2, 2)


@pytest.mark.parametrize("rebind", [_new_tensor, _transposed_view, _view_of_a_parameter, _other_shape, _in_place],
                         ids=lambda f: f.__name__.strip("_"))
def test_what_a_place_holds_between_calls(rebind):
    # equal to eager every call, whatever was bound there (followed, or traced again)
    check_compiled(place_program(rebind), calls=4, between=change)


def one_place_program(mod, wrap):
    memory = [data(mod, 50, 2, 2), None]

    def step(x):
        return x @ memory[0]

    def between(i):
        memory[0] = data(mod, 80 + i, 2, 2)
        if i == 1:
            memory[1] = memory[0]               # then held in two places: read by identity again
    return wrap(step), {"memory": memory, "change": between}, lambda i: (data(mod, i, 3, 2),)


def test_a_followed_place_then_shared():
    run = check_compiled(one_place_program, calls=4, between=change)
    assert run.step.stats["traces"] >= 1 and not run.step.stats["graph_breaks"], run.step.stats


def requires_grad_place_program(mod, wrap):
    w = [np_init(mod.nn.Linear(2, 2), mod).weight]
    opt = mod.optim.SGD(w, lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = (x @ w[0]).pow(2).sum()
        loss.backward()
        opt.step()
        return loss

    def between(i):
        if i == 1:
            w[0] = mod.nn.Parameter(data(mod, 90, 2, 2))     # not in the optimizer: not stepped
    return wrap(step), {"w": w, "opt": opt, "change": between}, lambda i: (data(mod, i, 3, 2),)


def test_a_parameter_place_rebound():
    check_compiled(requires_grad_place_program, calls=4, between=change, torch_too=True)


def views_program(rebind):
    """``memory`` holds views (rows) of one batch; the step reads them all."""
    def make(mod, wrap):
        net = np_init(mod.nn.Linear(3, 1), mod)
        opt = mod.optim.SGD(net.parameters(), lr=0.1)
        memory = list(data(mod, 40, 2, 3).unbind(0))
        keep = {}

        def step():
            opt.zero_grad()
            loss = net(mod.stack(memory)).pow(2).mean()
            loss.backward()
            opt.step()
            return loss

        def between(i):
            rebind(mod, memory, keep, i)
        return wrap(step), {"net": net, "opt": opt, "change": between}, lambda i: ()
    return make


def _rows_of_a_new_batch(mod, memory, keep, i):
    memory[:] = data(mod, 41 + i, 2, 3).unbind(0)


def _rows_of_two_batches(mod, memory, keep, i):
    memory[:] = [data(mod, 41 + i, 2, 3)[0], data(mod, 51 + i, 2, 3)[1]]    # no one storage


def _rows_swapped(mod, memory, keep, i):
    memory.reverse()                            # the same storage, other chains per place


def _columns_instead(mod, memory, keep, i):
    memory[:] = data(mod, 41 + i, 3, 2).unbind(1)


def _base_kept_and_changed(mod, memory, keep, i):
    keep["batch"] = b = data(mod, 41 + i, 2, 3)
    memory[:] = b.unbind(0)
    b.mul_(2)                                   # through the base, after the views were taken


@pytest.mark.parametrize("rebind", [_rows_of_a_new_batch, _rows_of_two_batches, _rows_swapped, _columns_instead,
                                    _base_kept_and_changed], ids=lambda f: f.__name__.strip("_"))
def test_views_in_places_between_calls(rebind):
    run = check_compiled(views_program(rebind), calls=4, between=change)
    if rebind is _rows_of_a_new_batch:
        assert run.step.stats["traces"] == 1, run.step.stats
    if rebind is _base_kept_and_changed:     # a base held elsewhere too: places read by identity
        assert run.step.stats["traces"] > 1, run.step.stats


def view_and_base_program(mod, wrap):
    batch = data(mod, 40, 2, 3)
    memory = list(batch.unbind(0))

    def step(x):
        # the base is read too (through its own place): then all three are followed together
        return (x * memory[0] + batch.sum(0)).sum()

    def between(i):
        nonlocal batch
        batch = data(mod, 41 + i, 2, 3)
        if i != 1:
            memory[:] = batch.unbind(0)         # at call 2 the rows are still the old batch's
    return wrap(step), {"change": between}, lambda i: (data(mod, i, 3),)


def test_view_and_its_base_in_places():
    run = check_compiled(view_and_base_program, calls=4, between=change)
    assert run.step.stats["traces"] == 2, run.step.stats     # call 2's rows and base differ


def frozen_base_program(mod, wrap):
    net = np_init(mod.nn.Linear(3, 3), mod)
    net.weight.requires_grad_(False)
    with mod.no_grad():
        memory = list(net.weight.unbind(0))     # rows of a parameter the step also reads
    opt = mod.optim.SGD([net.bias], lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = (net(x) * memory[0]).sum()
        loss.backward()
        opt.step()
        return loss

    def between(i):
        memory[:] = data(mod, 30 + i, 3, 3).unbind(0)
    return wrap(step), {"net": net, "opt": opt, "change": between}, lambda i: (data(mod, i, 2, 3),)


def test_rows_of_a_parameter_the_step_reads_too():
    # the weight's storage is read through the module as well: its rows' places are not followed
    check_compiled(frozen_base_program, calls=4, between=change, torch_too=True)
