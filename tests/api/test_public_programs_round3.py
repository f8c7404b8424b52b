"""A third round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree). As in
``test_public_programs_more.py``: each keeps its program's code at tiny sizes, with numpy-seeded
data and parameters (``init_params``) in place of downloads and random streams; the full
programs ran unchanged through a ``torch`` -> tracegrad import alias with tiny flags (the
reinforcement-learning ones against a stand-in CartPole, gat against a generated Cora). Here the
programs' ``import torch.x as y`` lines are attribute lookups on the module under test (an
import statement would bring real torch into the tracegrad run).
"""
import importlib

import numpy as np
import pytest

from parity import init_params, np_randn, run_both

torch = pytest.importorskip("torch")


# pytorch/examples time_sequence_prediction/train.py (LSTMCell pair in float64, LBFGS closure,
# prediction of the future under no_grad); data as generate_sine_wave.py makes it, smaller
def test_time_sequence_prediction_lbfgs():
    def program(torch, log):
        nn, optim = torch.nn, torch.optim

        class Sequence(nn.Module):
            def __init__(self):
                super(Sequence, self).__init__()
                self.lstm1 = nn.LSTMCell(1, 51)
                self.lstm2 = nn.LSTMCell(51, 51)
                self.linear = nn.Linear(51, 1)

            def forward(self, input, future=0):
                outputs = []
                h_t = torch.zeros(input.size(0), 51, dtype=torch.double)
                c_t = torch.zeros(input.size(0), 51, dtype=torch.double)
                h_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)
                c_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)
                for input_t in input.split(1, dim=1):
                    h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                    h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                    output = self.linear(h_t2)
                    outputs += [output]
                for i in range(future):
                    h_t, c_t = self.lstm1(output, (h_t, c_t))
                    h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                    output = self.linear(h_t2)
                    outputs += [output]
                outputs = torch.cat(outputs, dim=1)
                return outputs

        rs = np.random.RandomState(2)
        T, L, N = 20, 5, 4
        x = np.empty((N, L), "int64")
        x[:] = np.array(range(L)) + rs.randint(-4 * T, 4 * T, N).reshape(N, 1)
        data = np.sin(x / 1.0 / T).astype("float64")
        input = torch.from_numpy(data[2:, :-1])
        target = torch.from_numpy(data[2:, 1:])
        test_input = torch.from_numpy(data[:2, :-1])
        test_target = torch.from_numpy(data[:2, 1:])
        seq = Sequence()
        seq.double()
        init_params(torch, seq, 0)
        criterion = nn.MSELoss()
        optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=2)
        for i in range(1):
            def closure():
                optimizer.zero_grad()
                out = seq(input)
                loss = criterion(out, target)
                log("loss", loss.item())
                loss.backward()
                return loss
            optimizer.step(closure)
            with torch.no_grad():
                future = 3
                pred = seq(test_input, future=future)
                loss = criterion(pred[:, :-future], test_target)
                log("test loss", loss.item())
                log("y", pred.detach().numpy())
    run_both(program)


# pytorch/examples reinforcement_learning/actor_critic.py (Policy with two heads, SavedAction,
# finish_episode: normalised returns, smooth_l1_loss on the value, Adam); actions chosen by
# numpy instead of Categorical.sample (random streams differ), log_prob of them as the program
def test_actor_critic_finish_episode():
    def program(torch, log):
        from collections import namedtuple
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim
        Categorical = torch.distributions.Categorical
        SavedAction = namedtuple("SavedAction", ["log_prob", "value"])
        gamma = 0.99

        class Policy(nn.Module):
            def __init__(self):
                super(Policy, self).__init__()
                self.affine1 = nn.Linear(4, 16)
                self.action_head = nn.Linear(16, 2)
                self.value_head = nn.Linear(16, 1)
                self.saved_actions = []
                self.rewards = []

            def forward(self, x):
                x = F.relu(self.affine1(x))
                action_prob = F.softmax(self.action_head(x), dim=-1)
                state_values = self.value_head(x)
                return action_prob, state_values

        model = init_params(torch, Policy(), 1)
        optimizer = optim.Adam(model.parameters(), lr=3e-2)
        eps = np.finfo(np.float32).eps.item()
        rs = np.random.RandomState(3)

        def select_action(state, action):
            state = torch.from_numpy(state).float()
            probs, state_value = model(state)
            m = Categorical(probs)
            action = torch.tensor(action)
            model.saved_actions.append(SavedAction(m.log_prob(action), state_value))
            return action.item()

        def finish_episode():
            R = 0
            saved_actions = model.saved_actions
            policy_losses = []
            value_losses = []
            returns = []
            for r in model.rewards[::-1]:
                R = r + gamma * R
                returns.insert(0, R)
            returns = torch.tensor(returns)
            returns = (returns - returns.mean()) / (returns.std() + eps)
            for (log_prob, value), R in zip(saved_actions, returns):
                advantage = R - value.item()
                policy_losses.append(-log_prob * advantage)
                value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))
            optimizer.zero_grad()
            loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
            loss.backward()
            optimizer.step()
            log("loss", loss)
            del model.rewards[:]
            del model.saved_actions[:]

        for episode in range(1):
            for t in range(4):
                select_action(rs.uniform(-0.05, 0.05, 4), int(rs.randint(2)))
                model.rewards.append(1.0)
            finish_episode()
        log("w", model.action_head.weight)
    run_both(program)


# pytorch/tutorials intermediate_source/per_sample_grads.py (grad of functional_call under
# vmap against a loop of autograd.grad; the result dict is zipped with parameters(), so its
# keys must come in named_parameters order, not sorted)
def test_per_sample_grads_tutorial():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        functional_call, vmap, grad = torch.func.functional_call, torch.func.vmap, torch.func.grad

        class SimpleCNN(nn.Module):
            def __init__(self):
                super(SimpleCNN, self).__init__()
                self.conv1 = nn.Conv2d(1, 4, 3, 1)
                self.fc1 = nn.Linear(16, 8)
                self.fc2 = nn.Linear(8, 10)

            def forward(self, x):
                x = F.relu(self.conv1(x))
                x = F.max_pool2d(x, 2)
                x = torch.flatten(x, 1)
                x = F.relu(self.fc1(x))
                return F.log_softmax(self.fc2(x), dim=1)

        def loss_fn(predictions, targets):
            return F.nll_loss(predictions, targets)

        batch_size = 2
        data = torch.tensor(np_randn((batch_size, 1, 6, 6), 0))
        targets = torch.tensor(np.random.RandomState(1).randint(0, 10, (batch_size,)))
        model = init_params(torch, SimpleCNN(), 2, scale=0.5)

        def compute_grad(sample, target):
            prediction = model(sample.unsqueeze(0))
            return torch.autograd.grad(loss_fn(prediction, target.unsqueeze(0)), list(model.parameters()))

        sample_grads = zip(*[compute_grad(data[i], targets[i]) for i in range(batch_size)])
        per_sample_grads = [torch.stack(shards) for shards in sample_grads]
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}

        def compute_loss(params, buffers, sample, target):
            predictions = functional_call(model, (params, buffers), (sample.unsqueeze(0),))
            return loss_fn(predictions, target.unsqueeze(0))

        ft_compute_sample_grad = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))
        ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)
        log("keys", list(ft_per_sample_grads))
        for per_sample_grad, ft_per_sample_grad in zip(per_sample_grads, ft_per_sample_grads.values()):
            assert torch.allclose(per_sample_grad, ft_per_sample_grad, atol=3e-3, rtol=1e-5)
            log("g", ft_per_sample_grad)
    run_both(program)


# pytorch/tutorials intermediate_source/neural_tangent_kernels.py (jacobian contraction of
# vmap(jacrev(functional_call)) dicts, and the NTK-vector-product way through vjp/jvp)
def test_neural_tangent_kernels_tutorial():
    def program(torch, log):
        nn = torch.nn
        func = torch.func
        functional_call, vmap, vjp, jvp, jacrev = func.functional_call, func.vmap, func.vjp, func.jvp, func.jacrev

        class CNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(2, 3, (3, 3))
                self.fc = nn.Linear(3 * 2 * 2, 2)

            def forward(self, x):
                x = self.conv1(x).relu()
                return self.fc(x.flatten(1))

        net = init_params(torch, CNN(), 4, scale=0.5)
        net.eval()
        params = {k: v.detach() for k, v in net.named_parameters()}
        x_train = torch.tensor(np_randn((3, 2, 4, 4), 5))
        x_test = torch.tensor(np_randn((2, 2, 4, 4), 6))

        def fnet_single(params, x):
            return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)

        def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, compute):
            jac1 = vmap(jacrev(fnet_single), (None, 0))(params, x1)
            jac1 = [j.flatten(2) for j in jac1.values()]
            jac2 = vmap(jacrev(fnet_single), (None, 0))(params, x2)
            jac2 = [j.flatten(2) for j in jac2.values()]
            einsum_expr = {"full": "Naf,Mbf->NMab", "trace": "Naf,Maf->NM", "diagonal": "Naf,Maf->NMa"}[compute]
            result = torch.stack([torch.einsum(einsum_expr, j1, j2) for j1, j2 in zip(jac1, jac2)])
            return result.sum(0)

        def empirical_ntk_ntk_vps(func, params, x1, x2, compute="full"):
            def get_ntk(x1, x2):
                def func_x1(params):
                    return func(params, x1)

                def func_x2(params):
                    return func(params, x2)

                output, vjp_fn = vjp(func_x1, params)

                def get_ntk_slice(vec):
                    vjps = vjp_fn(vec)
                    _, jvps = jvp(func_x2, (params,), vjps)
                    return jvps
                basis = torch.eye(output.numel(), dtype=output.dtype, device=output.device).view(output.numel(), -1)
                return vmap(get_ntk_slice)(basis)
            result = vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x2)
            return result if compute == "full" else torch.einsum("NMKK->NM", result)

        for compute in ("full",):
            a = empirical_ntk_jacobian_contraction(fnet_single, params, x_test, x_train, compute)
            b = empirical_ntk_ntk_vps(fnet_single, params, x_test, x_train, compute)
            assert torch.allclose(a, b, atol=1e-5)
            log(compute, a)
    run_both(program)


# pytorch/tutorials intermediate_source/pruning_tutorial.py (torch.nn.utils.prune: l1 and
# ln-structured pruning of one layer, the pruning history container, state_dict keys, remove,
# pruning by layer type, global_unstructured, a custom BasePruningMethod); random_unstructured
# is left out (random streams differ)
def test_pruning_tutorial():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        prune = importlib.import_module(torch.__name__ + ".nn.utils.prune")

        class LeNet(nn.Module):
            def __init__(self):
                super(LeNet, self).__init__()
                self.conv1 = nn.Conv2d(1, 6, 3)
                self.conv2 = nn.Conv2d(6, 4, 3)
                self.fc1 = nn.Linear(4, 12)
                self.fc2 = nn.Linear(12, 10)

            def forward(self, x):
                x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
                x = F.max_pool2d(F.relu(self.conv2(x)), 2)
                x = x.flatten(start_dim=1)
                return self.fc2(F.relu(self.fc1(x)))

        model = init_params(torch, LeNet(), 7)
        module = model.conv1
        prune.l1_unstructured(module, name="weight", amount=0.3)
        log("params", [n for n, _ in module.named_parameters()])
        log("buffers", dict(module.named_buffers()))
        log("weight", module.weight)
        log("weight is a parameter", isinstance(module.weight, nn.Parameter))
        log("weight grad_fn", module.weight.grad_fn)
        prune.l1_unstructured(module, name="bias", amount=3)
        log("hooks", [type(h).__name__ for h in module._forward_pre_hooks.values()])
        prune.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)
        log("weight", module.weight)
        for hook in module._forward_pre_hooks.values():
            if hook._tensor_name == "weight":
                break
        log("history", [type(h).__name__ for h in hook])
        log("state_dict", list(model.state_dict().keys()))
        out = model(torch.tensor(np_randn((2, 1, 12, 12), 8)))
        out.sum().backward()
        log("out", out)
        log("grads", [module.weight_orig.grad, module.bias_orig.grad])
        prune.remove(module, "weight")
        log("after remove", ([n for n, _ in module.named_parameters()], [n for n, _ in module.named_buffers()]))
        log("weight", module.weight)

        new_model = init_params(torch, LeNet(), 9)
        for name, module in new_model.named_modules():
            if isinstance(module, torch.nn.Conv2d):
                prune.l1_unstructured(module, name="weight", amount=0.2)
            elif isinstance(module, torch.nn.Linear):
                prune.l1_unstructured(module, name="weight", amount=0.4)
        log("masks", list(dict(new_model.named_buffers()).keys()))

        model = init_params(torch, LeNet(), 10)
        parameters_to_prune = ((model.conv1, "weight"), (model.conv2, "weight"), (model.fc1, "weight"),
                               (model.fc2, "weight"))
        prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured, amount=0.2)
        for m, _ in parameters_to_prune:
            print("Sparsity: {:.2f}%".format(100. * float(torch.sum(m.weight == 0)) / float(m.weight.nelement())))
        log("is_pruned", prune.is_pruned(model))

        class FooBarPruningMethod(prune.BasePruningMethod):
            PRUNING_TYPE = "unstructured"

            def compute_mask(self, t, default_mask):
                mask = default_mask.clone()
                mask.flatten()[::2] = 0
                return mask

        def foobar_unstructured(module, name):
            FooBarPruningMethod.apply(module, name)
            return module

        foobar_unstructured(model.fc2, name="bias")
        log("foobar mask", model.fc2.bias_mask)
    run_both(program)


def test_pruning_errors_match_torch():
    def program(torch, log):
        prune = importlib.import_module(torch.__name__ + ".nn.utils.prune")
        for bad in (lambda m: prune.l1_unstructured(m, "weight", amount=-1),
                    lambda m: prune.l1_unstructured(m, "weight", amount=1.5),
                    lambda m: prune.l1_unstructured(m, "weight", amount="a"),
                    lambda m: prune.l1_unstructured(m, "weight", amount=100),
                    lambda m: prune.ln_structured(m, "bias", amount=1, n=2, dim=0),
                    lambda m: prune.remove(m, "weight"),
                    lambda m: prune.global_unstructured([(m, "weight")], prune.LnStructured, amount=1, n=1),
                    lambda m: prune.global_unstructured(3, prune.L1Unstructured, amount=1)):
            m = torch.nn.Linear(3, 2)
            try:
                bad(m)
                log("raised", None)
            except Exception as e:  # noqa: BLE001 -- the class is the observation
                log("raised", type(e).__name__)
            log("params left", [n for n, _ in m.named_parameters()])
    run_both(program)


# pytorch/tutorials intermediate_source/forward_ad_usage.py (dual_level/make_dual/unpack_dual,
# a module's parameters swapped for dual tensors, functional_call, a custom Function's jvp)
def test_forward_ad_usage_tutorial():
    def program(torch, log):
        fwAD = torch.autograd.forward_ad
        nn = torch.nn
        primal = torch.tensor(np_randn((3, 3), 11))
        tangent = torch.tensor(np_randn((3, 3), 12))
        with fwAD.dual_level():
            dual_input = fwAD.make_dual(primal, tangent)
            assert fwAD.unpack_dual(dual_input).tangent is tangent
            plain_tensor = torch.tensor(np_randn((3, 3), 13))
            dual_output = dual_input ** 2 + plain_tensor ** 2
            log("jvp", fwAD.unpack_dual(dual_output).tangent)
        log("outside", fwAD.unpack_dual(dual_output).tangent)

        model = init_params(torch, nn.Linear(5, 5), 14)
        input = torch.tensor(np_randn((4, 5), 15))
        params = {name: p for name, p in model.named_parameters()}
        tangents = {name: torch.tensor(np_randn(tuple(p.shape), 16)) for name, p in params.items()}
        with fwAD.dual_level():
            for name, p in params.items():
                delattr(model, name)
                setattr(model, name, fwAD.make_dual(p, tangents[name]))
            jvp = fwAD.unpack_dual(model(input)).tangent
        functional_call = torch.func.functional_call
        model = nn.Linear(5, 5)
        with fwAD.dual_level():
            dual_params = {name: fwAD.make_dual(p, tangents[name]) for name, p in params.items()}
            jvp2 = fwAD.unpack_dual(functional_call(model, dual_params, input)).tangent
        assert torch.allclose(jvp, jvp2)
        log("module jvp", jvp)

        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, foo):
                result = torch.exp(foo)
                ctx.result = result
                return result

            @staticmethod
            def jvp(ctx, gI):
                gO = gI * ctx.result
                del ctx.result
                return gO

        primal = torch.tensor(np_randn((3, 3), 17), dtype=torch.float64, requires_grad=True)
        tangent = torch.tensor(np_randn((3, 3), 18), dtype=torch.float64)
        with fwAD.dual_level():
            jvp = fwAD.unpack_dual(Fn.apply(fwAD.make_dual(primal, tangent))).tangent
        log("function jvp", jvp)
        log("gradcheck", torch.autograd.gradcheck(Fn.apply, (primal,), check_forward_ad=True,
                                                  check_backward_ad=False, check_undefined_grad=False,
                                                  check_batched_grad=False))
    run_both(program)


# pytorch/tutorials intermediate_source/optimizer_step_in_backward_tutorial.py (one optimizer
# per parameter stepped from register_post_accumulate_grad_hook; .grad is None afterwards)
def test_optimizer_step_in_backward_tutorial():
    def program(torch, log):
        nn = torch.nn
        model = init_params(torch, nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)), 19)
        optimizer_dict = {p: torch.optim.Adam([p], foreach=False) for p in model.parameters()}

        def optimizer_hook(parameter) -> None:
            optimizer_dict[parameter].step()
            optimizer_dict[parameter].zero_grad()

        for p in model.parameters():
            p.register_post_accumulate_grad_hook(optimizer_hook)
        rs = np.random.RandomState(20)
        for _ in range(2):
            fake_image = torch.tensor(rs.rand(2, 6).astype("float32"))
            fake_label = torch.tensor(rs.rand(2, 3).astype("float32"))
            loss = nn.CrossEntropyLoss()(model(fake_image), fake_label)
            loss.backward()
            log("loss", loss.item())
        log("grads", [p.grad for p in model.parameters()])
        log("weights", list(model.parameters()))
    run_both(program)


# pytorch/tutorials intermediate_source/parametrizations.py (Symmetric/Skew/CayleyMap/matrix
# exponential parametrizations, chained, cached(), right_inverse on assignment, removal)
def test_parametrizations_tutorial():
    def program(torch, log):
        nn = torch.nn
        parametrize = torch.nn.utils.parametrize

        class Symmetric(nn.Module):
            def forward(self, X):
                return X.triu() + X.triu(1).transpose(-1, -2)

        class Skew(nn.Module):
            def forward(self, X):
                A = X.triu(1)
                return A - A.transpose(-1, -2)

            def right_inverse(self, A):
                return A.triu(1)

        class CayleyMap(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.register_buffer("Id", torch.eye(n))

            def forward(self, X):
                return torch.linalg.solve(self.Id - X, self.Id + X)

        class MatrixExponential(nn.Module):
            def forward(self, X):
                return torch.matrix_exp(X)

        class NoisyParametrization(nn.Module):
            def forward(self, X):
                print("Computing the Parametrization")
                return X

        layer = init_params(torch, nn.Linear(3, 3), 21)
        parametrize.register_parametrization(layer, "weight", Symmetric())
        log("symmetric", layer.weight)
        print(layer)
        log("names", [n for n, _ in layer.named_parameters()])
        layer = init_params(torch, nn.Linear(4, 4), 22)
        parametrize.register_parametrization(layer, "weight", NoisyParametrization())
        foo = layer.weight + layer.weight.T
        with parametrize.cached():
            foo = layer.weight + layer.weight.T
        log("foo", foo)
        layer = init_params(torch, nn.Linear(3, 3), 23)
        parametrize.register_parametrization(layer, "weight", Skew())
        parametrize.register_parametrization(layer, "weight", CayleyMap(3))
        X = layer.weight
        log("orthogonal", torch.dist(X.T @ X, torch.eye(3)) < 1e-5)
        log("dist node", torch.dist(X.T @ X, torch.eye(3)).grad_fn)
        layer = init_params(torch, nn.Linear(3, 3), 24)
        parametrize.register_parametrization(layer, "weight", Symmetric())
        parametrize.register_parametrization(layer, "weight", MatrixExponential())
        log("spd", torch.linalg.eigvalsh(layer.weight))
        layer = nn.Linear(3, 3)
        parametrize.register_parametrization(layer, "weight", Skew())
        X = torch.tensor(np_randn((3, 3), 25))
        X = X - X.T
        layer.weight = X
        log("assigned", torch.dist(layer.weight, X))
        layer = init_params(torch, nn.Linear(3, 3), 26)
        parametrize.register_parametrization(layer, "weight", Skew())
        parametrize.remove_parametrizations(layer, "weight")
        log("removed", layer.weight)
        layer = init_params(torch, nn.Linear(3, 3), 27)
        parametrize.register_parametrization(layer, "weight", Skew())
        parametrize.remove_parametrizations(layer, "weight", leave_parametrized=False)
        log("removed unparametrized", layer.weight)
    run_both(program)


# pytorch/tutorials intermediate_source/autograd_saved_tensors_hooks_tutorial.py (_saved_*
# attributes, pack/unpack hooks, _raw_saved_*.register_hooks, a hooks subclass used as a
# context manager (``with ... as h`` binds None), save_on_cpu)
def test_saved_tensors_hooks_tutorial():
    def program(torch, log):
        nn = torch.nn
        x = torch.tensor(np_randn((5,), 28), requires_grad=True)
        y = x.pow(2)
        log("saved self is x", y.grad_fn._saved_self is x)
        y = x.exp()
        log("saved result equal", y.equal(y.grad_fn._saved_result))
        log("saved result is y", y is y.grad_fn._saved_result)

        def pack_hook(x):
            print("Packing", x)
            return x

        def unpack_hook(x):
            print("Unpacking", x)
            return x

        a = torch.ones(5, requires_grad=True)
        b = torch.ones(5, requires_grad=True) * 2
        with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
            y = a * b
        y.sum().backward()

        x = torch.tensor(np_randn((5,), 29), requires_grad=True)
        y = x.pow(2)
        y.grad_fn._raw_saved_self.register_hooks(lambda x: x * 2, lambda x: x)
        log("hooked saved self", y.grad_fn._saved_self)
        y.sum().backward()
        log("grad through the hooked saved tensor", x.grad)
        try:
            y.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: x)
        except RuntimeError as e:
            log("twice", type(e).__name__)

        storage = {}

        def pack_to_store(tensor):
            name = len(storage)
            storage[name] = tensor.clone()
            return name

        model = init_params(torch, nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2)), 30)
        inp = torch.tensor(np_randn((3, 4), 31))
        with torch.autograd.graph.saved_tensors_hooks(pack_to_store, lambda name: storage[name]):
            out = model(inp)
        log("stored", len(storage))
        out.sum().backward()
        log("grad", model[0].weight.grad)
        with torch.autograd.graph.save_on_cpu(pin_memory=False) as h:
            out = model(inp)
        log("save_on_cpu binds", h)
        out.sum().backward()
        log("grad", model[2].weight.grad)
    run_both(program)


# pytorch/tutorials intermediate_source/custom_function_double_backward_tutorial.py (Square,
# Exp, Sinh with extra outputs, gradgradcheck catching a non-saved intermediate, Cube with a
# custom backward Function)
def test_custom_function_double_backward_tutorial():
    def program(torch, log):
        class Exp(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                result = torch.exp(x)
                ctx.save_for_backward(result)
                return result

            @staticmethod
            def backward(ctx, grad_out):
                result, = ctx.saved_tensors
                return result * grad_out

        class SinhBad(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                expx = torch.exp(x)
                expnegx = torch.exp(-x)
                ctx.expx = expx
                ctx.expnegx = expnegx
                return (expx - expnegx) / 2

            @staticmethod
            def backward(ctx, grad_out):
                return grad_out * (ctx.expx + ctx.expnegx) / 2

        class Cube(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, grad_out):
                x, = ctx.saved_tensors
                return CubeBackward.apply(grad_out, x)

        class CubeBackward(torch.autograd.Function):
            @staticmethod
            def forward(ctx, grad_out, x):
                ctx.save_for_backward(x, grad_out)
                return grad_out * 3 * x ** 2

            @staticmethod
            def backward(ctx, grad_out):
                x, sav_grad_out = ctx.saved_tensors
                return grad_out * 3 * x ** 2, grad_out * sav_grad_out * 6 * x

        x = torch.tensor(np_randn((2, 2), 32), dtype=torch.double, requires_grad=True)
        log("exp", torch.autograd.gradgradcheck(Exp.apply, x))
        try:
            torch.autograd.gradgradcheck(SinhBad.apply, x)
            log("sinh bad", None)
        except RuntimeError as e:
            log("sinh bad", type(e).__name__)
        x = torch.tensor(2., requires_grad=True, dtype=torch.double)
        log("cube", torch.autograd.gradgradcheck(Cube.apply, x))
        g, = torch.autograd.grad(Cube.apply(x), x, create_graph=True)
        log("g", g)
        log("g node", type(g.grad_fn).__name__)
        log("gg", torch.autograd.grad(g, x))
    run_both(program)


# karpathy/micrograd test/test_engine.py (the torch side of test_sanity_check and test_more_ops)
def test_micrograd_engine_torch_side():
    def program(torch, log):
        x = torch.Tensor([-4.0]).double()
        x.requires_grad = True
        z = 2 * x + 2 + x
        q = z.relu() + z * x
        h = (z * z).relu()
        y = h + q + q * x
        y.backward()
        log("sanity", (y.data.item(), x.grad.item()))

        a = torch.Tensor([-4.0]).double()
        b = torch.Tensor([2.0]).double()
        a.requires_grad = True
        b.requires_grad = True
        c = a + b
        d = a * b + b**3
        c = c + c + 1
        c = c + 1 + c + (-a)
        d = d + d * 2 + (b + a).relu()
        d = d + 3 * d + (b - a).relu()
        e = c - d
        f = e**2
        g = f / 2.0
        g = g + 10.0 / f
        g.backward()
        log("more ops", (g.data.item(), a.grad.item(), b.grad.item()))
    run_both(program)


# pytorch/tutorials beginner_source/text_sentiment_ngrams_tutorial.py (EmbeddingBag with offsets
# from a collate of variable-length texts, SGD lr=5, clip_grad_norm_, StepLR; a fake vocab in
# place of torchtext), intermediate_source/char_rnn_classification_tutorial.py (one-hot
# lineToTensor, nn.RNN classifier, summed NLL loss over a batch) and
# beginner_source/fgsm_tutorial.py (sign of the input gradient, clamp, denorm)
def test_text_sentiment_char_rnn_and_fgsm():
    def program(torch, log):
        import string
        nn, F = torch.nn, torch.nn.functional

        class TextClassificationModel(nn.Module):
            def __init__(self, vocab_size, embed_dim, num_class):
                super(TextClassificationModel, self).__init__()
                self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
                self.fc = nn.Linear(embed_dim, num_class)

            def forward(self, text, offsets):
                return self.fc(self.embedding(text, offsets))

        model = init_params(torch, TextClassificationModel(20, 8, 4), 33, scale=1.0)
        vocab = lambda x: [ord(c) % 20 for c in x.split()[0]] + [len(w) % 20 for w in x.split()]  # noqa: E731
        label_list, text_list, offsets = [], [], [0]
        for _label, _text in [(1, "hello world foo"), (3, "a bb ccc dddd"), (0, "x")]:
            label_list.append(_label)
            processed_text = torch.tensor(vocab(_text), dtype=torch.int64)
            text_list.append(processed_text)
            offsets.append(processed_text.size(0))
        label_list = torch.tensor(label_list, dtype=torch.int64)
        offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
        text_list = torch.cat(text_list)
        criterion = torch.nn.CrossEntropyLoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=5)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
        for _ in range(2):
            optimizer.zero_grad()
            predicted_label = model(text_list, offsets)
            loss = criterion(predicted_label, label_list)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            log("text", (loss.item(), (predicted_label.argmax(1) == label_list).sum().item()))
            scheduler.step()

        class CharRNN(nn.Module):
            def __init__(self, input_size, hidden_size, output_size):
                super(CharRNN, self).__init__()
                self.rnn = nn.RNN(input_size, hidden_size)
                self.h2o = nn.Linear(hidden_size, output_size)
                self.softmax = nn.LogSoftmax(dim=1)

            def forward(self, line_tensor):
                rnn_out, hidden = self.rnn(line_tensor)
                return self.softmax(self.h2o(hidden[0]))

        allowed_characters = string.ascii_letters + " .,;'" + "_"
        n_letters = len(allowed_characters)

        def lineToTensor(line):
            tensor = torch.zeros(len(line), 1, n_letters)
            for li, letter in enumerate(line):
                idx = allowed_characters.find(letter if letter in allowed_characters else "_")
                tensor[li][0][idx] = 1
            return tensor

        rnn = init_params(torch, CharRNN(n_letters, 8, 3), 34)
        optimizer = torch.optim.SGD(rnn.parameters(), lr=0.15)
        criterion = nn.NLLLoss()
        for names, labels in [(["Ann", "Bo"], [0, 1]), (["Cyd", "Dee"], [2, 0])]:
            rnn.zero_grad()
            batch_loss = 0
            for name, label in zip(names, labels):
                batch_loss += criterion(rnn(lineToTensor(name)), torch.tensor([label], dtype=torch.long))
            batch_loss.backward()
            nn.utils.clip_grad_norm_(rnn.parameters(), 3)
            optimizer.step()
            optimizer.zero_grad()
            log("char rnn", batch_loss.item() / len(names))

        def fgsm_attack(image, epsilon, data_grad):
            return torch.clamp(image + epsilon * data_grad.sign(), 0, 1)

        def denorm(batch, mean=[0.1307], std=[0.3081]):
            mean, std = torch.tensor(mean), torch.tensor(std)
            return batch * std.view(1, -1, 1, 1) + mean.view(1, -1, 1, 1)

        net = init_params(torch, nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(144, 10),
                                               nn.LogSoftmax(dim=1)), 35)
        net.eval()
        for epsilon in [0, .05, .3]:
            data = torch.tensor(np.random.RandomState(36).rand(1, 1, 8, 8).astype("float32"))
            data.requires_grad = True
            output = net(data)
            loss = F.nll_loss(output, torch.tensor([3]))
            net.zero_grad()
            loss.backward()
            perturbed = fgsm_attack(denorm(data), epsilon, data.grad.data)
            final_pred = net((perturbed - 0.1307) / 0.3081).max(1, keepdim=True)[1]
            log("fgsm", (final_pred.item(), perturbed.squeeze().detach().cpu().numpy()))
    run_both(program)


# pytorch/examples gat/main.py's load_cora tensor pipeline (FloatTensor features scaled by a
# sparse diagonal with 1/0 -> inf -> 0, an int64 sparse_coo_tensor adjacency plus eye); a
# generated graph in place of Cora. Its GAT model and training step are in
# tests/compile/test_public_patterns_more.py (gat_program)
def test_gat_load_cora_pipeline():
    def program(torch, log):
        rs = np.random.RandomState(38)
        V, E = 9, 14
        content = (rs.rand(V, 5) < 0.4).astype(np.int32)
        content[0] = 0                                   # a node without features
        features = torch.FloatTensor(content)
        scale_vector = torch.sum(features, dim=1)
        scale_vector = 1 / scale_vector
        scale_vector[scale_vector == float("inf")] = 0
        scale_vector = torch.diag(scale_vector).to_sparse()
        features = scale_vector @ features
        classes, labels = np.unique(np.array(["b", "a", "c", "a", "b", "c", "c", "a", "b"]), return_inverse=True)
        labels = torch.LongTensor(labels)
        edges = rs.randint(0, V, (E, 2)).astype(np.int32)
        adj_mat = torch.sparse_coo_tensor(edges.T, torch.ones(E), (V, V), dtype=torch.int64)
        adj_mat = torch.eye(V) + adj_mat
        log("features", features)
        log("labels", (labels, labels.max().item() + 1))
        log("adj", (adj_mat, adj_mat.layout == torch.strided))
        e = torch.tensor(np_randn((2, V, V), 39))
        log("masked", torch.where(adj_mat > 0, e, -9e16 * torch.ones_like(e)).softmax(dim=-1))
    run_both(program)


# karpathy/nn-zero-to-hero lectures/makemore/makemore_part4_backprop.ipynb (the MLP with a
# hand-written BatchNorm, retain_grad on every intermediate, the manual backprop "Exercise 1"
# and the fused cross-entropy gradient of "Exercise 2"; NumPy names as the notebook writes them:
# counts.sum(1, keepdims=True)); the exact/approximate flags of its cmp() depend on float
# rounding, so the gradients themselves are compared
def test_nn_zero_to_hero_manual_backprop():
    def program(torch, log):
        F = torch.nn.functional
        rs = np.random.RandomState(40)
        n_embd, n_hidden, vocab_size, block_size, n = 3, 6, 7, 3, 5
        C = torch.tensor(rs.randn(vocab_size, n_embd).astype("float32"))
        W1 = torch.tensor(rs.randn(n_embd * block_size, n_hidden).astype("float32"))
        W1 = W1 * (5 / 3) / ((n_embd * block_size) ** 0.5)
        b1 = torch.tensor(rs.randn(n_hidden).astype("float32")) * 0.1
        W2 = torch.tensor(rs.randn(n_hidden, vocab_size).astype("float32")) * 0.1
        b2 = torch.tensor(rs.randn(vocab_size).astype("float32")) * 0.1
        bngain = torch.tensor(rs.randn(1, n_hidden).astype("float32")) * 0.1 + 1.0
        bnbias = torch.tensor(rs.randn(1, n_hidden).astype("float32")) * 0.1
        parameters = [C, W1, b1, W2, b2, bngain, bnbias]
        for p in parameters:
            p.requires_grad = True
        Xb = torch.tensor(rs.randint(0, vocab_size, (n, block_size)))
        Yb = torch.tensor(rs.randint(0, vocab_size, (n,)))
        emb = C[Xb]
        embcat = emb.view(emb.shape[0], -1)
        hprebn = embcat @ W1 + b1
        bnmeani = 1 / n * hprebn.sum(0, keepdim=True)
        bndiff = hprebn - bnmeani
        bndiff2 = bndiff ** 2
        bnvar = 1 / (n - 1) * (bndiff2).sum(0, keepdim=True)
        bnvar_inv = (bnvar + 1e-5) ** -0.5
        bnraw = bndiff * bnvar_inv
        hpreact = bngain * bnraw + bnbias
        h = torch.tanh(hpreact)
        logits = h @ W2 + b2
        logit_maxes = logits.max(1, keepdim=True).values
        norm_logits = logits - logit_maxes
        counts = norm_logits.exp()
        counts_sum = counts.sum(1, keepdims=True)
        counts_sum_inv = counts_sum ** -1
        probs = counts * counts_sum_inv
        logprobs = probs.log()
        loss = -logprobs[range(n), Yb].mean()
        for t in [logprobs, probs, counts, counts_sum, counts_sum_inv, norm_logits, logit_maxes, logits, h,
                  hpreact, bnraw, bnvar_inv, bnvar, bndiff2, bndiff, hprebn, bnmeani, embcat, emb]:
            t.retain_grad()
        loss.backward()
        log("loss", loss)
        dlogprobs = torch.zeros_like(logprobs)
        dlogprobs[range(n), Yb] = -1.0 / n
        dprobs = (1.0 / probs) * dlogprobs
        dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)
        dcounts = counts_sum_inv * dprobs
        dcounts_sum = (-counts_sum ** -2) * dcounts_sum_inv
        dcounts += torch.ones_like(counts) * dcounts_sum
        dnorm_logits = counts * dcounts
        dlogits = dnorm_logits.clone()
        dlogit_maxes = (-dnorm_logits).sum(1, keepdim=True)
        dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes
        dh = dlogits @ W2.T
        dhpreact = (1.0 - h ** 2) * dh
        dbnraw = bngain * dhpreact
        dbndiff = bnvar_inv * dbnraw
        dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)
        dbnvar = (-0.5 * (bnvar + 1e-5) ** -1.5) * dbnvar_inv
        dbndiff2 = (1.0 / (n - 1)) * torch.ones_like(bndiff2) * dbnvar
        dbndiff += (2 * bndiff) * dbndiff2
        dhprebn = dbndiff.clone()
        dbnmeani = (-dbndiff).sum(0)
        dhprebn += 1.0 / n * (torch.ones_like(hprebn) * dbnmeani)
        demb = (dhprebn @ W1.T).view(emb.shape)
        dC = torch.zeros_like(C)
        for k in range(Xb.shape[0]):
            for j in range(Xb.shape[1]):
                dC[Xb[k, j]] += demb[k, j]
        for name, dt, t in [("logits", dlogits, logits), ("hprebn", dhprebn, hprebn), ("C", dC, C)]:
            log(name, (dt, t.grad, torch.allclose(dt, t.grad)))
        dlogits = F.softmax(logits, 1)
        dlogits[range(n), Yb] -= 1
        dlogits /= n
        log("fused", (dlogits, torch.allclose(dlogits, logits.grad)))
        log("fast loss", F.cross_entropy(logits, Yb))
    run_both(program)


# pytorch/tutorials intermediate_source/ensembling.py: stack_module_state + functional_call
# under vmap over a copy of the model moved to the 'meta' device
def test_ensembling_tutorial_meta_base_model():
    def program(torch, log):
        import copy
        stack_module_state, functional_call = torch.func.stack_module_state, torch.func.functional_call
        models = [init_params(torch, torch.nn.Linear(4, 3), s) for s in range(3)]
        params, buffers = stack_module_state(models)
        base_model = copy.deepcopy(models[0]).to("meta")
        minibatch = torch.tensor(np_randn((2, 4), 37))
        out = torch.vmap(lambda p, b, x: functional_call(base_model, (p, b), (x,)), in_dims=(0, 0, None))(
            params, buffers, minibatch)
        log("out", out)
    run_both(program)
