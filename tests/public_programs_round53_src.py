"""Sources of the round-53 public programs (tests/api/test_public_programs_round53.py and
tests/compile/test_public_patterns_round53.py), executed with ``torch`` bound to torch or
tracegrad by ``program(T, SRC)``. Kept as in their repositories apart from the ``import`` lines
(the names are given as globals: an ``import torch`` inside the source would bind real torch),
the ``.cuda()`` calls dropped and the omissions noted in place; see the test files for the
repositories, paths and licenses."""
import types

import numpy as np


def program(T, src, **extra):
    """Execute a program source with ``torch``/``nn``/``F``/``Parameter``/``optim`` from ``T``."""
    g = {"torch": T, "nn": T.nn, "F": T.nn.functional, "np": np, "Parameter": T.nn.Parameter,
         "optim": T.optim, "Variable": T.autograd.Variable}
    g.update(extra)
    exec(compile(src, "<public program>", "exec"), g)
    return types.SimpleNamespace(**g)


# g1910/HyperNetworks: hypernetwork_modules.py, resnet_blocks.py, primary_net.py (0087b80)
HYPERNET = '''
class HyperNetwork(nn.Module):

    def __init__(self, f_size = 3, z_dim = 64, out_size=16, in_size=16):
        super(HyperNetwork, self).__init__()
        self.z_dim = z_dim
        self.f_size = f_size
        self.out_size = out_size
        self.in_size = in_size

        self.w1 = Parameter(torch.fmod(torch.randn((self.z_dim, self.out_size*self.f_size*self.f_size)),2))
        self.b1 = Parameter(torch.fmod(torch.randn((self.out_size*self.f_size*self.f_size)),2))

        self.w2 = Parameter(torch.fmod(torch.randn((self.z_dim, self.in_size*self.z_dim)),2))
        self.b2 = Parameter(torch.fmod(torch.randn((self.in_size*self.z_dim)),2))

    def forward(self, z):

        h_in = torch.matmul(z, self.w2) + self.b2
        h_in = h_in.view(self.in_size, self.z_dim)

        h_final = torch.matmul(h_in, self.w1) + self.b1
        kernel = h_final.view(self.out_size, self.in_size, self.f_size, self.f_size)

        return kernel


class IdentityLayer(nn.Module):

    def forward(self, x):
        return x


class ResNetBlock(nn.Module):

    def __init__(self, in_size=16, out_size=16, downsample = False):
        super(ResNetBlock,self).__init__()
        self.out_size = out_size
        self.in_size = in_size
        if downsample:
            self.stride1 = 2
            self.reslayer = nn.Conv2d(in_channels=self.in_size, out_channels=self.out_size, stride=2, kernel_size=1)
        else:
            self.stride1 = 1
            self.reslayer = IdentityLayer()

        self.bn1 = nn.BatchNorm2d(out_size)
        self.bn2 = nn.BatchNorm2d(out_size)

    def forward(self, x, conv1_w, conv2_w):

        residual = self.reslayer(x)

        out = F.relu(self.bn1(F.conv2d(x, conv1_w, stride=self.stride1, padding=1)), inplace=True)
        out = self.bn2(F.conv2d(out, conv2_w, padding=1))

        out += residual

        out = F.relu(out)

        return out


class Embedding(nn.Module):

    def __init__(self, z_num, z_dim):
        super(Embedding, self).__init__()

        self.z_list = nn.ParameterList()
        self.z_num = z_num
        self.z_dim = z_dim

        h,k = self.z_num

        for i in range(h):
            for j in range(k):
                self.z_list.append(Parameter(torch.fmod(torch.randn(self.z_dim), 2)))

    def forward(self, hyper_net):
        ww = []
        h, k = self.z_num
        for i in range(h):
            w = []
            for j in range(k):
                w.append(hyper_net(self.z_list[i*k + j]))
            ww.append(torch.cat(w, dim=1))
        return torch.cat(ww, dim=0)


class PrimaryNetwork(nn.Module):

    def __init__(self, z_dim=64):
        super(PrimaryNetwork, self).__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)

        self.z_dim = z_dim
        self.hope = HyperNetwork(z_dim=self.z_dim)

        self.zs_size = [[1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1],
                        [2, 1], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2],
                        [4, 2], [4, 4], [4, 4], [4, 4], [4, 4], [4, 4], [4, 4], [4, 4], [4, 4], [4, 4], [4, 4], [4, 4]]

        self.filter_size = [[16,16], [16,16], [16,16], [16,16], [16,16], [16,16], [16,32], [32,32], [32,32], [32,32],
                            [32,32], [32,32], [32,64], [64,64], [64,64], [64,64], [64,64], [64,64]]

        self.res_net = nn.ModuleList()

        for i in range(18):
            down_sample = False
            if i > 5 and i % 6 == 0:
                down_sample = True
            self.res_net.append(ResNetBlock(self.filter_size[i][0], self.filter_size[i][1], downsample=down_sample))

        self.zs = nn.ModuleList()

        for i in range(36):
            self.zs.append(Embedding(self.zs_size[i], self.z_dim))

        self.global_avg = nn.AvgPool2d(8)
        self.final = nn.Linear(64,10)

    def forward(self, x):
        count = 0

        x = F.relu(self.bn1(self.conv1(x)))

        for i in range(18):
            # if i != 15 and i != 17:
            w1 = self.zs[2*i](self.hope)
            w2 = self.zs[2*i+1](self.hope)
            x = self.res_net[i](x, w1, w2)

        x = self.global_avg(x)
        x = self.final(x.view(-1,64))

        return x
'''

# g1910/HyperNetworks: train.py (0087b80), the body of the training loop and the end-of-epoch
# evaluation and checkpoint; the CIFAR-10 loaders replaced by ``trainloader``/``testloader``
# lists, ``.cuda()`` dropped, ``loss.data[0]`` (an IndexError on a 0-d tensor since torch 0.5)
# replaced by ``loss.item()``, prints kept out, ``torch.save`` to ``ckpt_path``.
HYPERNET_TRAIN = '''
def train_epoch(net, optimizer, lr_scheduler, criterion, trainloader, testloader, best_accuracy,
                ckpt_path, total_iter=0, epochs=0, print_freq=50):
    running_loss = 0.0
    losses = []

    for i, data in enumerate(trainloader, 0):

        inputs, labels = data

        inputs, labels = Variable(inputs), Variable(labels)

        optimizer.zero_grad()

        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()

        optimizer.step()
        lr_scheduler.step()

        running_loss += loss.item()
        losses.append(loss)
        if i % print_freq == (print_freq-1):
            running_loss = 0.0

        total_iter += 1

    epochs += 1

    correct = 0.
    total = 0.
    for tdata in testloader:
        timages, tlabels = tdata
        toutputs = net(Variable(timages))
        _, predicted = torch.max(toutputs.cpu().data, 1)
        total += tlabels.size(0)
        correct += (predicted == tlabels).sum()

    accuracy = (100. * correct) / total

    if accuracy > best_accuracy:
        state = {
            'net': net.state_dict(),
            'acc': accuracy
        }
        torch.save(state, ckpt_path)
        best_accuracy = accuracy
    return losses, running_loss, accuracy, best_accuracy, total_iter
'''

# LearnedVector/A-Hackers-AI-Voice-Assistant: VoiceAssistant/speechrecognition/neuralnet/model.py
# (c696ec7), dataset.py's collate_fn_padd (6a8dc8b), train.py's SpeechModule.step (9864ac8, the
# LightningModule base replaced by nn.Module and ``self.device`` by a "cpu" attribute) and
# decoder.py's DecodeGreedy (6a8dc8b; ``textprocess`` given as a global).
SPEECH = '''
class ActDropNormCNN1D(nn.Module):
    def __init__(self, n_feats, dropout, keep_shape=False):
        super(ActDropNormCNN1D, self).__init__()
        self.dropout = nn.Dropout(dropout)
        self.norm = nn.LayerNorm(n_feats)
        self.keep_shape = keep_shape

    def forward(self, x):
        x = x.transpose(1, 2)
        # x = self.norm(self.dropout(F.gelu(x)))
        x = self.dropout(F.gelu(self.norm(x)))
        if self.keep_shape:
            return x.transpose(1, 2)
        else:
            return x


class SpeechRecognition(nn.Module):
    hyper_parameters = {
        "num_classes": 29,
        "n_feats": 81,
        "dropout": 0.1,
        "hidden_size": 1024,
        "num_layers": 1
    }

    def __init__(self, hidden_size, num_classes, n_feats, num_layers, dropout):
        super(SpeechRecognition, self).__init__()
        self.num_layers = num_layers
        self.hidden_size = hidden_size
        self.cnn = nn.Sequential(
            nn.Conv1d(n_feats, n_feats, 10, 2, padding=10//2),
            ActDropNormCNN1D(n_feats, dropout),
        )
        self.dense = nn.Sequential(
            nn.Linear(n_feats, 128),
            nn.LayerNorm(128),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(128, 128),
            nn.LayerNorm(128),
            nn.GELU(),
            nn.Dropout(dropout),
        )
        self.lstm = nn.LSTM(input_size=128, hidden_size=hidden_size,
                            num_layers=num_layers, dropout=0.0,
                            bidirectional=False)
        self.layer_norm2 = nn.LayerNorm(hidden_size)
        self.dropout2 = nn.Dropout(dropout)
        self.final_fc = nn.Linear(hidden_size, num_classes)

    def _init_hidden(self, batch_size):
        n, hs = self.num_layers, self.hidden_size
        return (torch.zeros(n*1, batch_size, hs),
                torch.zeros(n*1, batch_size, hs))

    def forward(self, x, hidden):
        x = x.squeeze(1)  # batch, feature, time
        x = self.cnn(x) # batch, time, feature
        x = self.dense(x) # batch, time, feature
        x = x.transpose(0, 1) # time, batch, feature
        out, (hn, cn) = self.lstm(x, hidden)
        x = self.dropout2(F.gelu(self.layer_norm2(out)))  # (time, batch, n_class)
        return self.final_fc(x), (hn, cn)


def collate_fn_padd(data):
    spectrograms = []
    labels = []
    input_lengths = []
    label_lengths = []
    for (spectrogram, label, input_length, label_length) in data:
        if spectrogram is None:
            continue
        spectrograms.append(spectrogram.squeeze(0).transpose(0, 1))
        labels.append(torch.Tensor(label))
        input_lengths.append(input_length)
        label_lengths.append(label_length)

    spectrograms = nn.utils.rnn.pad_sequence(spectrograms, batch_first=True).unsqueeze(1).transpose(2, 3)
    labels = nn.utils.rnn.pad_sequence(labels, batch_first=True)
    input_lengths = input_lengths
    label_lengths = label_lengths
    return spectrograms, labels, input_lengths, label_lengths


class SpeechModule(nn.Module):

    def __init__(self, model, args):
        super(SpeechModule, self).__init__()
        self.model = model
        self.criterion = nn.CTCLoss(blank=28, zero_infinity=True)
        self.args = args
        self.device = "cpu"

    def forward(self, x, hidden):
        return self.model(x, hidden)

    def configure_optimizers(self):
        self.optimizer = optim.AdamW(self.model.parameters(), self.args.learning_rate)
        self.scheduler = optim.lr_scheduler.ReduceLROnPlateau(
                                        self.optimizer, mode='min',
                                        factor=0.50, patience=6)
        return [self.optimizer], [self.scheduler]

    def step(self, batch):
        spectrograms, labels, input_lengths, label_lengths = batch
        bs = spectrograms.shape[0]
        hidden = self.model._init_hidden(bs)
        hn, c0 = hidden[0].to(self.device), hidden[1].to(self.device)
        output, _ = self(spectrograms, (hn, c0))
        output = F.log_softmax(output, dim=2)
        loss = self.criterion(output, labels, input_lengths, label_lengths)
        return loss

    def training_step(self, batch, batch_idx):
        loss = self.step(batch)
        logs = {'loss': loss, 'lr': self.optimizer.param_groups[0]['lr'] }
        return {'loss': loss, 'log': logs}

    def validation_step(self, batch, batch_idx):
        loss = self.step(batch)
        return {'val_loss': loss}

    def validation_epoch_end(self, outputs):
        avg_loss = torch.stack([x['val_loss'] for x in outputs]).mean()
        self.scheduler.step(avg_loss)
        tensorboard_logs = {'val_loss': avg_loss}
        return {'val_loss': avg_loss, 'log': tensorboard_logs}


def DecodeGreedy(output, blank_label=28, collapse_repeated=True):
    arg_maxes = torch.argmax(output, dim=2).squeeze(1)
    decode = []
    for i, index in enumerate(arg_maxes):
        if index != blank_label:
            if collapse_repeated and i != 0 and index == arg_maxes[i -1]:
                continue
            decode.append(index.item())
    return textprocess.int_to_text_sequence(decode)
'''

# Deceptrax123/Differential-Equations-Using-Neural-Networks (MIT): 2ndorder_ode/model.py
# (a3b120a) and 2ndorder_ode/train.py (8c7b49d) without its __main__ block (the test sets
# ``model``, ``optimizer``, ``objective`` and ``epochs`` as the block does; ``print`` is a
# collector given as a global; ``hessian`` is imported there and never used).
ODE2 = '''
class Order2ODE(Module):
    def __init__(self):
        super(Order2ODE, self).__init__()

        self.linear1 = Linear(1, 20)
        self.linear2 = Linear(20, 1)

    def forward(self, x):
        x = self.linear1(x).sigmoid()
        x = self.linear2(x)

        return x


def y_trial(t):
    A0 = 0
    A1 = 1
    return A0+A1*t+(t**2)*model(t)


def analytic_derivative(t, y):
    A1 = 1
    return (-1/5*torch.exp(-t/5)*torch.cos(t))-(1/5*(A1+2*t*network_derivative(t) +
                                                (t**2)*network_derivative(t)))-y


def network_derivative(t):
    t.requires_grad = True
    z = model(t).sum()

    grad_f = grad(z, t)[0]

    return grad_f


def network_derivative_order_2(t):
    t.requires_grad = True
    z = model(t).sum()

    for j in range(2):
        grad_f = grad(z, t, create_graph=True)[0]
        z = grad_f.sum()

    return grad_f


def train():
    t = torch.tensor(np.linspace(0, 2, 100)
                     [:, None], dtype=torch.float32)
    t = t.view(t.size(0), 1)

    model.train(True)
    for epoch in range(epochs):
        network_der = 2*model(t)+4*t*network_derivative(t) + \\
            (t**2)*network_derivative_order_2(t)
        analytic_der = analytic_derivative(t, y_trial(t))

        optimizer.zero_grad()
        loss = objective(network_der, analytic_der)

        loss.backward()
        optimizer.step()

        print("Epoch: ", epoch)
        print("Loss: ", loss)

        if epoch == 0:
            sl = loss.item()

        if loss.item() < sl:
            sl = loss.item()
            torch.save(model.state_dict(), "2ndorder_ode/weights.pth")
'''

# Deceptrax123/Differential-Equations-Using-Neural-Networks (MIT): PDEs/model.py and
# PDEs/train.py (105b9a0) without the __main__ block and ``torch.manual_seed(32)`` (the weights
# are overwritten), ``print`` a collector as above; ``matplotlib`` is imported there, unused.
PDE = '''
class PDEModel(Module):
    def __init__(self):
        super(PDEModel, self).__init__()

        self.lin1 = Linear(in_features=2, out_features=10)
        self.lin2 = Linear(in_features=10, out_features=1)

    def forward(self, x, y):

        xy = torch.cat((x, y), dim=1)
        xy = self.lin1(xy).sigmoid()
        xy = self.lin2(xy)

        return xy


def dirchilet_boundary_func_derivative_x(x, y):
    x.requires_grad = True
    A = (((1-x)*y**3)+(x*(1+y**3)*torch.exp(torch.tensor(-1)))+((1-y)*x*(torch.exp(-x)-torch.exp(torch.tensor(-1))))
         + (y*((torch.exp(torch.tensor(-x))*(x+1))-(1-x-(2*x*torch.exp(torch.tensor(-1))))))).sum()

    for j in range(2):
        grad_f = grad(A, x, create_graph=True)[0]
        A = grad_f.sum()

    return grad_f


def dirchilet_boundary_func_derivative_y(x, y):
    y.requires_grad = True
    A = (((1-x)*y**3)+(x*(1+y**3)*torch.exp(torch.tensor(-1)))+((1-y)*x*(torch.exp(-x)-torch.exp(torch.tensor(-1))))
         + (y*((torch.exp(torch.tensor(-x))*(x+1))-(1-x-(2*x*torch.exp(torch.tensor(-1))))))).sum()

    for j in range(2):
        grad_f = grad(A, y, create_graph=True)[0]
        A = grad_f.sum()

    return grad_f


def network_derivative_y(x, y):
    y.requires_grad = True
    z = model(x, y).sum()

    grad_f = grad(z, y)[0]

    return grad_f


def network_derivative_y_order_2(x, y):
    y.requires_grad = True
    z = model(x, y).sum()

    for j in range(2):
        grad_f = grad(z, y, create_graph=True)[0]
        z = grad_f.sum()

    return grad_f


def network_derivative_x(x, y):
    x.requires_grad = True
    z = model(x, y).sum()

    grad_f = grad(z, x)[0]

    return grad_f


def network_derivative_x_order_2(x, y):
    x.requires_grad = True
    z = model(x, y).sum()

    for j in range(2):
        grad_f = grad(z, x, create_graph=True)[0]
        z = grad_f.sum()

    return grad_f


def f(x, y):
    # d^2w/dx^2+d^2w/dy^2=f(x,y)

    return torch.exp(-x)*((x-2)+(y**3)+(6*y))


def train():
    x = torch.tensor(np.linspace(0, 1, 100)[:, None], dtype=torch.float32)
    x = x.view(x.size(0), 1)

    y = torch.tensor(np.linspace(0, 1, 100)[:, None], dtype=torch.float32)
    y = y.view(y.size(0), 1)

    model.train(True)

    sl = 0
    for epoch in range(epochs):
        # Get all gradients
        network_deri_x = network_derivative_x(x, y)
        network_deri_x_order_2 = network_derivative_x_order_2(x, y)
        network_deri_y = network_derivative_y(x, y)
        network_deri_y_order_2 = network_derivative_y_order_2(x, y)
        dirchilet_x = dirchilet_boundary_func_derivative_x(x, y)
        dirchilet_y = dirchilet_boundary_func_derivative_y(x, y)

        laplacian_x = dirchilet_x-(y*(1-y))*(-2*model(x, y)+(2*(1-2*x)*network_deri_x) +
                                             (x*(1-x)*network_deri_x_order_2))

        laplacian_y = dirchilet_y-(x*(1-x))*(-2*model(x, y)+(2*(1-2*y)*network_deri_y) +
                                             (y*(1-y)*network_deri_y_order_2))

        # d^2w/dx^2+d^2w/dy^2
        laplacian = laplacian_x+laplacian_y

        # f(x,y)
        f_x_y = f(x, y)

        # Perform backpropagation
        optimizer.zero_grad()
        loss = objective(laplacian, f_x_y)

        loss.backward()
        optimizer.step()

        print("Epoch: ", epoch)
        print("Loss: ", loss.item())

        torch.save(model.state_dict(), "PDEs/weights.pth")
'''


def de_program(T, src, make_model, epochs=3):
    """Run a Deceptrax123 program as its ``__main__`` block does: the model, Adam(lr=1e-3),
    MSELoss and the epoch count as globals, ``print`` collecting what is printed."""
    printed = []
    p = program(T, src, Module=T.nn.Module, Linear=T.nn.Linear, grad=T.autograd.grad,
                print=lambda *a: printed.append(a))
    p.__dict__  # the namespace is a copy: the functions read the exec globals below
    g = p.train.__globals__
    g["model"] = make_model(p)
    g["optimizer"] = T.optim.Adam(params=g["model"].parameters(), lr=0.001, betas=(0.9, 0.999))
    g["objective"] = T.nn.MSELoss()
    g["epochs"] = epochs
    return p, g, printed
