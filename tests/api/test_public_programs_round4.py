"""A fourth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), as in
``test_public_programs_round3.py``: each keeps its program's code at tiny sizes, with
numpy-seeded data and parameters (``init_params``/``randn``) in place of downloads and random
streams. The full programs ran unchanged through a ``torch`` -> tracegrad import alias with
tiny flags and a stand-in ``torchvision`` (datasets of random images). Here the programs'
``import torch.x as y`` lines are attribute lookups on the module under test.
"""
import os

import numpy as np
import pytest

from parity import init_params, np_randn, randn, run_both

torch = pytest.importorskip("torch")


def _images(torch, n, shape, classes, seed):
    """A stand-in torchvision dataset as a DataLoader would batch it: (images, labels)."""
    rs = np.random.RandomState(seed)
    return (torch.tensor(rs.rand(n, *shape).astype(np.float32)),
            torch.tensor(rs.randint(0, classes, n)))


# yunjey/pytorch-tutorial tutorials/01-basics/pytorch_basics/main.py (sections 1-3: autograd of
# w * x + b, a Linear layer trained one SGD step by hand-read grads, numpy round trips; section 7:
# save/load of a model's state_dict)
def test_yunjey_pytorch_basics(tmp_path):
    def program(torch, log):
        nn = torch.nn
        x = torch.tensor(1., requires_grad=True)
        w = torch.tensor(2., requires_grad=True)
        b = torch.tensor(3., requires_grad=True)
        y = w * x + b
        y.backward()
        print(x.grad)
        print(w.grad)
        print(b.grad)
        x = randn(torch, (10, 3), 0)
        y = randn(torch, (10, 2), 1)
        linear = init_params(torch, nn.Linear(3, 2), 2)
        print('w: ', linear.weight.shape)
        print('b: ', linear.bias.shape)
        criterion = nn.MSELoss()
        optimizer = torch.optim.SGD(linear.parameters(), lr=0.01)
        pred = linear(x)
        loss = criterion(pred, y)
        print('loss: ', round(loss.item(), 4))
        loss.backward()
        log("dL/dw", linear.weight.grad)
        log("dL/db", linear.bias.grad)
        optimizer.step()
        pred = linear(x)
        loss = criterion(pred, y)
        log("loss after 1 step optimization", loss.item())
        x = np.array([[1, 2], [3, 4]])
        y = torch.from_numpy(x)
        z = y.numpy()
        log("numpy", [y, z])
        torch.save(linear.state_dict(), os.path.join(str(tmp_path), 'params.ckpt'))
        linear2 = nn.Linear(3, 2)
        linear2.load_state_dict(torch.load(os.path.join(str(tmp_path), 'params.ckpt')))
        log("reloaded", linear2(torch.ones(1, 3)))
    run_both(program)


# yunjey/pytorch-tutorial tutorials/01-basics/linear_regression/main.py (numpy data through
# from_numpy, 60 epochs of SGD printing every 5th loss) and logistic_regression/main.py (Linear on
# flattened MNIST images, CrossEntropyLoss, torch.max accuracy under no_grad)
def test_yunjey_linear_and_logistic_regression():
    def program(torch, log):
        nn = torch.nn
        x_train = np.array([[3.3], [4.4], [5.5], [6.71], [6.93], [4.168], [9.779], [6.182], [7.59], [2.167],
                            [7.042], [10.791], [5.313], [7.997], [3.1]], dtype=np.float32)
        y_train = np.array([[1.7], [2.76], [2.09], [3.19], [1.694], [1.573], [3.366], [2.596], [2.53], [1.221],
                            [2.827], [3.465], [1.65], [2.904], [1.3]], dtype=np.float32)
        model = init_params(torch, nn.Linear(1, 1), 3)
        criterion = nn.MSELoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
        num_epochs = 20
        for epoch in range(num_epochs):
            inputs = torch.from_numpy(x_train)
            targets = torch.from_numpy(y_train)
            outputs = model(inputs)
            loss = criterion(outputs, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if (epoch+1) % 5 == 0:
                print('Epoch [{}/{}], Loss: {:.4f}'.format(epoch+1, num_epochs, loss.item()))
        predicted = model(torch.from_numpy(x_train)).detach().numpy()
        log("predicted", predicted)

        input_size, num_classes = 784, 10
        model = init_params(torch, nn.Linear(input_size, num_classes), 4, scale=0.05)
        criterion = nn.CrossEntropyLoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
        images, labels = _images(torch, 8, (1, 28, 28), 10, 5)
        for i in range(2):
            images_ = images.reshape(-1, input_size)
            outputs = model(images_)
            loss = criterion(outputs, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            log("loss", loss.item())
        with torch.no_grad():
            correct = 0
            total = 0
            outputs = model(images.reshape(-1, input_size))
            _, predicted = torch.max(outputs.data, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum()
            print('Accuracy of the model on the 10000 test images: {} %'.format(100 * correct / total))
    run_both(program)


# yunjey/pytorch-tutorial tutorials/02-intermediate/convolutional_neural_network/main.py (ConvNet:
# Conv2d/BatchNorm2d/ReLU/MaxPool2d twice, Adam; eval-mode accuracy) and deep_residual_network/
# main.py (ResidualBlock with downsample, make_layer, ``out += residual`` after inplace ReLU,
# AvgPool2d(8), update_lr on param_groups); layers [1, 1, 1] in place of [2, 2, 2]
def test_yunjey_convnet_and_resnet():
    def program(torch, log):
        nn = torch.nn

        class ConvNet(nn.Module):
            def __init__(self, num_classes=10):
                super(ConvNet, self).__init__()
                self.layer1 = nn.Sequential(
                    nn.Conv2d(1, 16, kernel_size=5, stride=1, padding=2),
                    nn.BatchNorm2d(16),
                    nn.ReLU(),
                    nn.MaxPool2d(kernel_size=2, stride=2))
                self.layer2 = nn.Sequential(
                    nn.Conv2d(16, 32, kernel_size=5, stride=1, padding=2),
                    nn.BatchNorm2d(32),
                    nn.ReLU(),
                    nn.MaxPool2d(kernel_size=2, stride=2))
                self.fc = nn.Linear(7*7*32, num_classes)

            def forward(self, x):
                out = self.layer1(x)
                out = self.layer2(out)
                out = out.reshape(out.size(0), -1)
                out = self.fc(out)
                return out

        model = init_params(torch, ConvNet(10), 6, scale=0.1)
        criterion = nn.CrossEntropyLoss()
        optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
        images, labels = _images(torch, 4, (1, 28, 28), 10, 7)
        outputs = model(images)
        loss = criterion(outputs, labels)
        optimizer.zero_grad()
        loss.backward()
        # no optimizer.step(): the conv biases feeding BatchNorm have a gradient that is zero up
        # to rounding, which Adam scales to +-lr, so the step's sign there is rounding noise
        log("convnet loss", loss.item())
        log("grads", [model.layer2[0].weight.grad, model.layer1[1].weight.grad, model.fc.bias.grad])
        log("running_mean", model.layer1[1].running_mean)
        model.eval()
        with torch.no_grad():
            log("eval outputs", model(images))

        def conv3x3(in_channels, out_channels, stride=1):
            return nn.Conv2d(in_channels, out_channels, kernel_size=3,
                             stride=stride, padding=1, bias=False)

        class ResidualBlock(nn.Module):
            def __init__(self, in_channels, out_channels, stride=1, downsample=None):
                super(ResidualBlock, self).__init__()
                self.conv1 = conv3x3(in_channels, out_channels, stride)
                self.bn1 = nn.BatchNorm2d(out_channels)
                self.relu = nn.ReLU(inplace=True)
                self.conv2 = conv3x3(out_channels, out_channels)
                self.bn2 = nn.BatchNorm2d(out_channels)
                self.downsample = downsample

            def forward(self, x):
                residual = x
                out = self.conv1(x)
                out = self.bn1(out)
                out = self.relu(out)
                out = self.conv2(out)
                out = self.bn2(out)
                if self.downsample:
                    residual = self.downsample(x)
                out += residual
                out = self.relu(out)
                return out

        class ResNet(nn.Module):
            def __init__(self, block, layers, num_classes=10):
                super(ResNet, self).__init__()
                self.in_channels = 16
                self.conv = conv3x3(3, 16)
                self.bn = nn.BatchNorm2d(16)
                self.relu = nn.ReLU(inplace=True)
                self.layer1 = self.make_layer(block, 16, layers[0])
                self.layer2 = self.make_layer(block, 32, layers[1], 2)
                self.layer3 = self.make_layer(block, 64, layers[2], 2)
                self.avg_pool = nn.AvgPool2d(8)
                self.fc = nn.Linear(64, num_classes)

            def make_layer(self, block, out_channels, blocks, stride=1):
                downsample = None
                if (stride != 1) or (self.in_channels != out_channels):
                    downsample = nn.Sequential(
                        conv3x3(self.in_channels, out_channels, stride=stride),
                        nn.BatchNorm2d(out_channels))
                layers = []
                layers.append(block(self.in_channels, out_channels, stride, downsample))
                self.in_channels = out_channels
                for i in range(1, blocks):
                    layers.append(block(out_channels, out_channels))
                return nn.Sequential(*layers)

            def forward(self, x):
                out = self.conv(x)
                out = self.bn(out)
                out = self.relu(out)
                out = self.layer1(out)
                out = self.layer2(out)
                out = self.layer3(out)
                out = self.avg_pool(out)
                out = out.view(out.size(0), -1)
                out = self.fc(out)
                return out

        model = init_params(torch, ResNet(ResidualBlock, [1, 1, 1]), 8, scale=0.1)
        criterion = nn.CrossEntropyLoss()
        learning_rate = 0.001
        optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

        def update_lr(optimizer, lr):
            for param_group in optimizer.param_groups:
                param_group['lr'] = lr
        images, labels = _images(torch, 2, (3, 32, 32), 10, 9)
        curr_lr = learning_rate
        for epoch in range(2):
            outputs = model(images)
            loss = criterion(outputs, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            log("resnet loss", loss.item())
            curr_lr /= 3
            update_lr(optimizer, curr_lr)
        log("lr", optimizer.param_groups[0]["lr"])
        log("fc grad", model.fc.weight.grad)
        log("num_batches_tracked", model.layer2[0].downsample[1].num_batches_tracked)
    run_both(program)


# yunjey/pytorch-tutorial tutorials/02-intermediate/recurrent_neural_network/main.py and
# bidirectional_recurrent_neural_network/main.py (images as sequences through a batch_first
# (bidirectional) LSTM from zero states, the last time step classified)
def test_yunjey_rnn_and_birnn():
    def program(torch, log):
        nn = torch.nn
        sequence_length, input_size, hidden_size, num_layers, num_classes = 6, 5, 4, 2, 3

        class RNN(nn.Module):
            def __init__(self, input_size, hidden_size, num_layers, num_classes):
                super(RNN, self).__init__()
                self.hidden_size = hidden_size
                self.num_layers = num_layers
                self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
                self.fc = nn.Linear(hidden_size, num_classes)

            def forward(self, x):
                h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size)
                c0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size)
                out, _ = self.lstm(x, (h0, c0))
                out = self.fc(out[:, -1, :])
                return out

        class BiRNN(nn.Module):
            def __init__(self, input_size, hidden_size, num_layers, num_classes):
                super(BiRNN, self).__init__()
                self.hidden_size = hidden_size
                self.num_layers = num_layers
                self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, bidirectional=True)
                self.fc = nn.Linear(hidden_size*2, num_classes)

            def forward(self, x):
                h0 = torch.zeros(self.num_layers*2, x.size(0), self.hidden_size)
                c0 = torch.zeros(self.num_layers*2, x.size(0), self.hidden_size)
                out, _ = self.lstm(x, (h0, c0))
                out = self.fc(out[:, -1, :])
                return out

        images, labels = _images(torch, 4, (1, sequence_length, input_size), num_classes, 10)
        for i, cls in enumerate((RNN, BiRNN)):
            model = init_params(torch, cls(input_size, hidden_size, num_layers, num_classes), 11 + i)
            criterion = nn.CrossEntropyLoss()
            optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
            for step in range(2):
                x = images.reshape(-1, sequence_length, input_size)
                outputs = model(x)
                loss = criterion(outputs, labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                log(cls.__name__ + " loss", loss.item())
            with torch.no_grad():
                _, predicted = torch.max(model(x).data, 1)
                log("predicted", predicted)
    run_both(program)


# yunjey/pytorch-tutorial tutorials/02-intermediate/language_model/main.py and data_utils.py
# (Corpus filling a LongTensor(tokens) item by item, view(batch_size, -1); RNNLM with truncated
# backpropagation through detached states, clip_grad_norm_, perplexity print; sampling loop
# with input.fill_ under no_grad, argmax in place of multinomial)
def test_yunjey_language_model(tmp_path):
    def program(torch, log):
        nn = torch.nn
        clip_grad_norm_ = torch.nn.utils.clip_grad_norm_
        path = os.path.join(str(tmp_path), "train.txt")
        rs = np.random.RandomState(12)
        words = "the cat sat on a mat dog ran".split()
        with open(path, "w") as f:
            f.write("\n".join(" ".join(rs.choice(words, 6)) for _ in range(12)))

        class Dictionary(object):
            def __init__(self):
                self.word2idx = {}
                self.idx2word = {}
                self.idx = 0

            def add_word(self, word):
                if word not in self.word2idx:
                    self.word2idx[word] = self.idx
                    self.idx2word[self.idx] = word
                    self.idx += 1

            def __len__(self):
                return len(self.word2idx)

        class Corpus(object):
            def __init__(self):
                self.dictionary = Dictionary()

            def get_data(self, path, batch_size=20):
                with open(path, 'r') as f:
                    tokens = 0
                    for line in f:
                        words = line.split() + ['<eos>']
                        tokens += len(words)
                        for word in words:
                            self.dictionary.add_word(word)
                ids = torch.LongTensor(tokens)
                token = 0
                with open(path, 'r') as f:
                    for line in f:
                        words = line.split() + ['<eos>']
                        for word in words:
                            ids[token] = self.dictionary.word2idx[word]
                            token += 1
                num_batches = ids.size(0) // batch_size
                ids = ids[:num_batches*batch_size]
                return ids.view(batch_size, -1)

        embed_size, hidden_size, num_layers, batch_size, seq_length = 8, 16, 1, 4, 5
        corpus = Corpus()
        ids = corpus.get_data(path, batch_size)
        vocab_size = len(corpus.dictionary)
        num_batches = ids.size(1) // seq_length
        log("ids", ids)

        class RNNLM(nn.Module):
            def __init__(self, vocab_size, embed_size, hidden_size, num_layers):
                super(RNNLM, self).__init__()
                self.embed = nn.Embedding(vocab_size, embed_size)
                self.lstm = nn.LSTM(embed_size, hidden_size, num_layers, batch_first=True)
                self.linear = nn.Linear(hidden_size, vocab_size)

            def forward(self, x, h):
                x = self.embed(x)
                out, (h, c) = self.lstm(x, h)
                out = out.reshape(out.size(0)*out.size(1), out.size(2))
                out = self.linear(out)
                return out, (h, c)

        model = init_params(torch, RNNLM(vocab_size, embed_size, hidden_size, num_layers), 13)
        criterion = nn.CrossEntropyLoss()
        optimizer = torch.optim.Adam(model.parameters(), lr=0.002)

        def detach(states):
            return [state.detach() for state in states]
        states = (torch.zeros(num_layers, batch_size, hidden_size),
                  torch.zeros(num_layers, batch_size, hidden_size))
        for i in range(0, ids.size(1) - seq_length, seq_length):
            inputs = ids[:, i:i+seq_length]
            targets = ids[:, (i+1):(i+1)+seq_length]
            states = detach(states)
            outputs, states = model(inputs, states)
            loss = criterion(outputs, targets.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            step = (i+1) // seq_length
            print('Step[{}/{}], Loss: {:.4f}, Perplexity: {:5.2f}'
                  .format(step, num_batches, loss.item(), np.exp(loss.item())))
        with torch.no_grad():
            state = (torch.zeros(num_layers, 1, hidden_size), torch.zeros(num_layers, 1, hidden_size))
            input = torch.tensor([[0]])
            sampled = []
            for i in range(5):
                output, state = model(input, state)
                word_id = output.exp().argmax().item()
                input.fill_(word_id)
                sampled.append(corpus.dictionary.idx2word[word_id])
            log("sampled", sampled)
    run_both(program)


# yunjey/pytorch-tutorial tutorials/03-advanced/generative_adversarial_network/main.py
# (Discriminator/Generator MLPs with LeakyReLU/Tanh, BCELoss with ones/zeros labels, reset_grad
# of both optimizers, the generator's loss through D, denorm and clamp); noise from numpy
def test_yunjey_gan():
    def program(torch, log):
        nn = torch.nn
        latent_size, hidden_size, image_size, batch_size = 6, 16, 12, 4
        D = nn.Sequential(
            nn.Linear(image_size, hidden_size),
            nn.LeakyReLU(0.2),
            nn.Linear(hidden_size, hidden_size),
            nn.LeakyReLU(0.2),
            nn.Linear(hidden_size, 1),
            nn.Sigmoid())
        G = nn.Sequential(
            nn.Linear(latent_size, hidden_size),
            nn.ReLU(),
            nn.Linear(hidden_size, hidden_size),
            nn.ReLU(),
            nn.Linear(hidden_size, image_size),
            nn.Tanh())
        init_params(torch, D, 14)
        init_params(torch, G, 15)
        criterion = nn.BCELoss()
        d_optimizer = torch.optim.Adam(D.parameters(), lr=0.0002)
        g_optimizer = torch.optim.Adam(G.parameters(), lr=0.0002)

        def denorm(x):
            out = (x + 1) / 2
            return out.clamp(0, 1)

        def reset_grad():
            d_optimizer.zero_grad()
            g_optimizer.zero_grad()
        images = torch.tensor(np.random.RandomState(16).rand(batch_size, image_size).astype(np.float32) * 2 - 1)
        for i in range(2):
            real_labels = torch.ones(batch_size, 1)
            fake_labels = torch.zeros(batch_size, 1)
            outputs = D(images)
            d_loss_real = criterion(outputs, real_labels)
            real_score = outputs
            z = randn(torch, (batch_size, latent_size), 17 + i)
            fake_images = G(z)
            outputs = D(fake_images)
            d_loss_fake = criterion(outputs, fake_labels)
            fake_score = outputs
            d_loss = d_loss_real + d_loss_fake
            reset_grad()
            d_loss.backward()
            d_optimizer.step()
            z = randn(torch, (batch_size, latent_size), 27 + i)
            fake_images = G(z)
            outputs = D(fake_images)
            g_loss = criterion(outputs, real_labels)
            reset_grad()
            g_loss.backward()
            g_optimizer.step()
            print('d_loss: {:.4f}, g_loss: {:.4f}, D(x): {:.2f}, D(G(z)): {:.2f}'
                  .format(d_loss.item(), g_loss.item(), real_score.mean().item(), fake_score.mean().item()))
        fake_images = fake_images.reshape(fake_images.size(0), 1, 3, 4)
        log("denorm", denorm(fake_images))
    run_both(program)


# MorvanZhou/PyTorch-Tutorial tutorial-contents/301_regression.py, 302_classification.py and
# 303_build_nn_quickly.py (a Net class and the same net as a Sequential, their printed reprs,
# torch.normal class clusters (numpy noise here), max(F.softmax(out), 1)[1] accuracy)
def test_morvan_regression_classification_build_quickly():
    def program(torch, log):
        F = torch.nn.functional
        x = torch.unsqueeze(torch.linspace(-1, 1, 20), dim=1)
        y = x.pow(2) + 0.2*torch.tensor(np.random.RandomState(18).rand(20, 1).astype(np.float32))

        class Net(torch.nn.Module):
            def __init__(self, n_feature, n_hidden, n_output):
                super(Net, self).__init__()
                self.hidden = torch.nn.Linear(n_feature, n_hidden)
                self.predict = torch.nn.Linear(n_hidden, n_output)

            def forward(self, x):
                x = F.relu(self.hidden(x))
                x = self.predict(x)
                return x

        net = init_params(torch, Net(n_feature=1, n_hidden=10, n_output=1), 19)
        print(net)
        optimizer = torch.optim.SGD(net.parameters(), lr=0.2)
        loss_func = torch.nn.MSELoss()
        for t in range(5):
            prediction = net(x)
            loss = loss_func(prediction, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print('Loss=%.4f' % loss.data.numpy())

        n_data = torch.ones(10, 2)
        noise = np_randn((20, 2), 20)
        x0 = torch.normal(2*n_data, 1) * 0 + 2*n_data + torch.tensor(noise[:10])
        y0 = torch.zeros(10)
        x1 = -2*n_data + torch.tensor(noise[10:])
        y1 = torch.ones(10)
        x = torch.cat((x0, x1), 0).type(torch.FloatTensor)
        y = torch.cat((y0, y1), ).type(torch.LongTensor)
        net = init_params(torch, Net(n_feature=2, n_hidden=10, n_output=2), 21)
        net2 = torch.nn.Sequential(
            torch.nn.Linear(2, 10),
            torch.nn.ReLU(),
            torch.nn.Linear(10, 2)
        )
        print(net2)
        optimizer = torch.optim.SGD(net.parameters(), lr=0.02)
        loss_func = torch.nn.CrossEntropyLoss()
        for t in range(5):
            out = net(x)
            loss = loss_func(out, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            prediction = torch.max(F.softmax(out, dim=1), 1)[1]
            pred_y = prediction.data.numpy().squeeze()
            target_y = y.data.numpy()
            accuracy = sum(pred_y == target_y)/200.
            print('Accuracy=%.2f' % accuracy)
        log("loss", loss)
    run_both(program)


# MorvanZhou/PyTorch-Tutorial tutorial-contents/304_save_reload.py (the entire net pickled with
# torch.save and loaded back; the program as written fails in torch >= 2.6 at the load, whose
# default became weights_only=True, in both libraries alike: weights_only=False here) and the
# state_dict route
def test_morvan_save_reload(tmp_path):
    def program(torch, log):
        x = torch.unsqueeze(torch.linspace(-1, 1, 20), dim=1)
        y = x.pow(2) + 0.2*torch.tensor(np.random.RandomState(22).rand(20, 1).astype(np.float32))
        net_pkl, params_pkl = os.path.join(str(tmp_path), 'net.pkl'), os.path.join(str(tmp_path), 'net_params.pkl')

        def save():
            net1 = torch.nn.Sequential(
                torch.nn.Linear(1, 10),
                torch.nn.ReLU(),
                torch.nn.Linear(10, 1)
            )
            init_params(torch, net1, 23)
            optimizer = torch.optim.SGD(net1.parameters(), lr=0.5)
            loss_func = torch.nn.MSELoss()
            for t in range(5):
                prediction = net1(x)
                loss = loss_func(prediction, y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            torch.save(net1, net_pkl)
            torch.save(net1.state_dict(), params_pkl)
            log("net1", net1(x))

        def restore_net():
            try:
                torch.load(net_pkl)
            except Exception as e:  # noqa: BLE001 -- the class is logged
                log("weights_only load", type(e).__name__)
            net2 = torch.load(net_pkl, weights_only=False)
            log("net2 type", type(net2).__name__)
            log("net2", net2(x))

        def restore_params():
            net3 = torch.nn.Sequential(
                torch.nn.Linear(1, 10),
                torch.nn.ReLU(),
                torch.nn.Linear(10, 1)
            )
            net3.load_state_dict(torch.load(params_pkl))
            log("net3", net3(x))
        save()
        restore_net()
        restore_params()
    run_both(program)


# MorvanZhou/PyTorch-Tutorial tutorial-contents/305_batch_train.py and 306_optimizer.py
# (TensorDataset + DataLoader batches, the last one short; four nets trained side by side with
# SGD, SGD momentum, RMSprop(alpha=0.9), Adam(betas=(0.9, 0.99)), loss.data.numpy() history);
# shuffle=False and num_workers=0 (random order differs between the libraries)
def test_morvan_batch_train_and_optimizers():
    def program(torch, log):
        Data = torch.utils.data
        F = torch.nn.functional
        x = torch.linspace(1, 10, 10)
        y = torch.linspace(10, 1, 10)
        torch_dataset = Data.TensorDataset(x, y)
        loader = Data.DataLoader(dataset=torch_dataset, batch_size=4, shuffle=False, num_workers=0)
        for epoch in range(2):
            for step, (batch_x, batch_y) in enumerate(loader):
                print('Epoch: ', epoch, '| Step: ', step, '| batch x: ',
                      batch_x.numpy(), '| batch y: ', batch_y.numpy())

        LR, BATCH_SIZE, EPOCH = 0.01, 8, 1
        x = torch.unsqueeze(torch.linspace(-1, 1, 20), dim=1)
        y = x.pow(2) + 0.1*torch.tensor(np_randn((20, 1), 24))
        torch_dataset = Data.TensorDataset(x, y)
        loader = Data.DataLoader(dataset=torch_dataset, batch_size=BATCH_SIZE, shuffle=False, num_workers=0,)

        class Net(torch.nn.Module):
            def __init__(self):
                super(Net, self).__init__()
                self.hidden = torch.nn.Linear(1, 20)
                self.predict = torch.nn.Linear(20, 1)

            def forward(self, x):
                x = F.relu(self.hidden(x))
                x = self.predict(x)
                return x
        net_SGD, net_Momentum, net_RMSprop, net_Adam = (init_params(torch, Net(), 25) for _ in range(4))
        nets = [net_SGD, net_Momentum, net_RMSprop, net_Adam]
        opt_SGD = torch.optim.SGD(net_SGD.parameters(), lr=LR)
        opt_Momentum = torch.optim.SGD(net_Momentum.parameters(), lr=LR, momentum=0.8)
        opt_RMSprop = torch.optim.RMSprop(net_RMSprop.parameters(), lr=LR, alpha=0.9)
        opt_Adam = torch.optim.Adam(net_Adam.parameters(), lr=LR, betas=(0.9, 0.99))
        optimizers = [opt_SGD, opt_Momentum, opt_RMSprop, opt_Adam]
        loss_func = torch.nn.MSELoss()
        losses_his = [[], [], [], []]
        for epoch in range(EPOCH):
            for step, (b_x, b_y) in enumerate(loader):
                for net, opt, l_his in zip(nets, optimizers, losses_his):
                    output = net(b_x)
                    loss = loss_func(output, b_y)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    l_his.append(loss.data.numpy())
        log("losses", losses_his)
    run_both(program)


# MorvanZhou/PyTorch-Tutorial tutorial-contents/403_RNN_regressor.py (nn.RNN batch_first with the
# hidden state carried across steps and repacked through ``.data``, a Linear applied per time
# step and stacked) and 402_RNN_classifier.py's ``rnn(x, None)`` LSTM
def test_morvan_rnn_regressor_and_classifier():
    def program(torch, log):
        nn = torch.nn
        TIME_STEP, INPUT_SIZE, LR = 10, 1, 0.02

        class RNN(nn.Module):
            def __init__(self):
                super(RNN, self).__init__()
                self.rnn = nn.RNN(
                    input_size=INPUT_SIZE,
                    hidden_size=8,
                    num_layers=1,
                    batch_first=True,
                )
                self.out = nn.Linear(8, 1)

            def forward(self, x, h_state):
                r_out, h_state = self.rnn(x, h_state)
                outs = []
                for time_step in range(r_out.size(1)):
                    outs.append(self.out(r_out[:, time_step, :]))
                return torch.stack(outs, dim=1), h_state

        rnn = init_params(torch, RNN(), 26)
        optimizer = torch.optim.Adam(rnn.parameters(), lr=LR)
        loss_func = nn.MSELoss()
        h_state = None
        for step in range(3):
            start, end = step * np.pi, (step+1)*np.pi
            steps = np.linspace(start, end, TIME_STEP, dtype=np.float32, endpoint=False)
            x_np = np.sin(steps)
            y_np = np.cos(steps)
            x = torch.from_numpy(x_np[np.newaxis, :, np.newaxis])
            y = torch.from_numpy(y_np[np.newaxis, :, np.newaxis])
            prediction, h_state = rnn(x, h_state)
            h_state = h_state.data
            loss = loss_func(prediction, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            log("loss", loss)
        log("h_state", [h_state, h_state.requires_grad, h_state.grad_fn])

        class RNNC(nn.Module):
            def __init__(self):
                super(RNNC, self).__init__()
                self.rnn = nn.LSTM(input_size=7, hidden_size=8, num_layers=1, batch_first=True)
                self.out = nn.Linear(8, 10)

            def forward(self, x):
                r_out, (h_n, h_c) = self.rnn(x, None)
                out = self.out(r_out[:, -1, :])
                return out
        rnn = init_params(torch, RNNC(), 27)
        x, b_y = _images(torch, 3, (7, 7), 10, 28)
        output = rnn(x.view(-1, 7, 7))
        loss = nn.CrossEntropyLoss()(output, b_y)
        loss.backward()
        log("classifier", [output, loss, rnn.rnn.weight_hh_l0.grad])
        pred_y = torch.max(output, 1)[1].data.numpy()
        log("pred_y", pred_y)
    run_both(program)


# MorvanZhou/PyTorch-Tutorial tutorial-contents/504_batch_normalization.py (layers registered
# through setattr while also kept in plain lists, init.normal_/init.constant_ with a bad bias,
# BatchNorm1d(momentum=0.5) on the input and every hidden layer, torch.tanh as the activation,
# both nets in eval mode for the test pass) and 503_dropout.py (Dropout nets in eval mode)
def test_morvan_batch_normalization_and_dropout():
    def program(torch, log):
        nn, init = torch.nn, torch.nn.init
        N_HIDDEN, ACTIVATION, B_INIT, LR = 3, torch.tanh, -0.2, 0.03
        x = np.linspace(-7, 10, 16)[:, np.newaxis]
        y = np.square(x) - 5 + np.random.RandomState(29).normal(0, 2, x.shape)
        train_x, train_y = torch.from_numpy(x).float(), torch.from_numpy(y).float()

        class Net(nn.Module):
            def __init__(self, batch_normalization=False):
                super(Net, self).__init__()
                self.do_bn = batch_normalization
                self.fcs = []
                self.bns = []
                self.bn_input = nn.BatchNorm1d(1, momentum=0.5)
                for i in range(N_HIDDEN):
                    input_size = 1 if i == 0 else 10
                    fc = nn.Linear(input_size, 10)
                    setattr(self, 'fc%i' % i, fc)
                    self._set_init(fc)
                    self.fcs.append(fc)
                    if self.do_bn:
                        bn = nn.BatchNorm1d(10, momentum=0.5)
                        setattr(self, 'bn%i' % i, bn)
                        self.bns.append(bn)
                self.predict = nn.Linear(10, 1)
                self._set_init(self.predict)

            def _set_init(self, layer):
                init.normal_(layer.weight, mean=0., std=.1)
                init.constant_(layer.bias, B_INIT)

            def forward(self, x):
                pre_activation = [x]
                if self.do_bn:
                    x = self.bn_input(x)
                layer_input = [x]
                for i in range(N_HIDDEN):
                    x = self.fcs[i](x)
                    pre_activation.append(x)
                    if self.do_bn:
                        x = self.bns[i](x)
                    x = ACTIVATION(x)
                    layer_input.append(x)
                out = self.predict(x)
                return out, layer_input, pre_activation

        nets = [Net(batch_normalization=False), Net(batch_normalization=True)]
        for i, net in enumerate(nets):
            with torch.no_grad():   # the normal_ draws differ: same weights on both sides
                for name, p in net.named_parameters():
                    if name.endswith("weight") and not name.startswith("bn"):
                        p.copy_(torch.tensor(np_randn(tuple(p.shape), 30 + i, 0.1)))
            log("bias", net.fc0.bias)
            log("modules", [name for name, _ in net.named_children()])
        opts = [torch.optim.Adam(net.parameters(), lr=LR) for net in nets]
        loss_func = torch.nn.MSELoss()
        for step in range(2):
            b_x, b_y = train_x[step * 8:(step + 1) * 8], train_y[step * 8:(step + 1) * 8]
            for net, opt in zip(nets, opts):
                pred, _, _ = net(b_x)
                loss = loss_func(pred, b_y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                log("loss", loss)
        [net.eval() for net in nets]
        preds = [net(train_x)[0] for net in nets]
        # the BN net's hidden biases get a gradient that is zero up to rounding, which Adam scales
        # to +-lr: its eval output carries that noise, so only the plain net's is compared
        log("preds", preds[0])
        log("running_var", [nets[1].bn0.running_var, nets[1].bn_input.running_mean])

        net_dropped = torch.nn.Sequential(
            torch.nn.Linear(1, 30),
            torch.nn.Dropout(0.5),
            torch.nn.ReLU(),
            torch.nn.Linear(30, 1),
        )
        init_params(torch, net_dropped, 32)
        net_dropped.eval()
        log("dropout eval", net_dropped(train_x[:4]))
        net_dropped.train()
        log("training", [m.training for m in net_dropped])
    run_both(program)


# MorvanZhou/PyTorch-Tutorial tutorial-contents/404_autoencoder.py (Linear/Tanh encoder to 3
# features, Sigmoid decoder, MSE between decoded and input, the encoded codes under no_grad)
def test_morvan_autoencoder():
    def program(torch, log):
        nn = torch.nn

        class AutoEncoder(nn.Module):
            def __init__(self):
                super(AutoEncoder, self).__init__()
                self.encoder = nn.Sequential(
                    nn.Linear(28*28, 16),
                    nn.Tanh(),
                    nn.Linear(16, 12),
                    nn.Tanh(),
                    nn.Linear(12, 3),
                )
                self.decoder = nn.Sequential(
                    nn.Linear(3, 12),
                    nn.Tanh(),
                    nn.Linear(12, 16),
                    nn.Tanh(),
                    nn.Linear(16, 28*28),
                    nn.Sigmoid(),
                )

            def forward(self, x):
                encoded = self.encoder(x)
                decoded = self.decoder(encoded)
                return encoded, decoded
        autoencoder = init_params(torch, AutoEncoder(), 33, scale=0.1)
        optimizer = torch.optim.Adam(autoencoder.parameters(), lr=0.005)
        loss_func = nn.MSELoss()
        x, b_label = _images(torch, 4, (28, 28), 10, 34)
        for step in range(2):
            b_x = x.view(-1, 28*28)
            b_y = x.view(-1, 28*28)
            encoded, decoded = autoencoder(b_x)
            loss = loss_func(decoded, b_y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print('train loss: %.4f' % loss.data.numpy())
        view_data = x[:2].view(-1, 28*28).type(torch.FloatTensor)/255.
        encoded_data, _ = autoencoder(view_data)
        log("encoded", encoded_data)
    run_both(program)


# pytorch/tutorials beginner_source/blitz/autograd_tutorial.py (Q = 3a^3 - b^2 with an external
# gradient, requires_grad of results, freezing a model and replacing its head so only the new
# head is trained); a small stand-in for resnet18 (torchvision is not a dependency)
def test_blitz_autograd_tutorial():
    def program(torch, log):
        nn, optim = torch.nn, torch.optim
        a = torch.tensor([2., 3.], requires_grad=True)
        b = torch.tensor([6., 4.], requires_grad=True)
        Q = 3*a**3 - b**2
        external_grad = torch.tensor([1., 1.])
        Q.backward(gradient=external_grad)
        print(9*a**2 == a.grad)
        print(-2*b == b.grad)
        x = torch.rand(5, 5)
        y = torch.rand(5, 5)
        z = torch.rand((5, 5), requires_grad=True)
        a = x + y
        print(f"Does `a` require gradients?: {a.requires_grad}")
        b = x + z
        print(f"Does `b` require gradients?: {b.requires_grad}")

        class Model(nn.Module):   # resnet18's shape: features, then .fc(512 -> 1000)
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(3, 8, 3, stride=4)
                self.avgpool = nn.AdaptiveAvgPool2d(1)
                self.fc = nn.Linear(8, 1000)

            def forward(self, x):
                return self.fc(torch.flatten(self.avgpool(self.conv1(x)), 1))
        model = init_params(torch, Model(), 35, scale=0.1)
        data = randn(torch, (1, 3, 16, 16), 36)
        labels = torch.tensor(np.random.RandomState(37).rand(1, 1000).astype(np.float32))
        prediction = model(data)
        loss = (prediction - labels).sum()
        loss.backward()
        optim_ = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
        optim_.step()
        log("after step", model.conv1.weight)
        for param in model.parameters():
            param.requires_grad = False
        model.fc = init_params(torch, nn.Linear(8, 10), 38)
        optimizer = optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
        out = model(data).sum()
        out.backward()
        log("frozen grads", [p.grad is None for p in model.parameters()])
        log("head grad", model.fc.weight.grad)
        optimizer.step()
        log("head", model.fc.bias)
    run_both(program)


# pytorch/tutorials beginner_source/examples_tensor/polynomial_tensor.py (hand-written gradients
# of a cubic fit), examples_nn/polynomial_nn.py (Linear(3, 1) after x.unsqueeze(-1).pow(p),
# Flatten(0, 1), the update under no_grad over model.parameters()), polynomial_optim.py
# (RMSprop) and polynomial_module.py (four scalar Parameters, a custom ``string()``)
def test_polynomial_examples():
    def program(torch, log):
        import math
        dtype = torch.float
        x = torch.linspace(-math.pi, math.pi, 50, dtype=dtype)
        y = torch.sin(x)
        a, b, c, d = (torch.tensor(v, dtype=dtype) for v in np_randn((4,), 39))
        learning_rate = 1e-6
        for t in range(3):
            y_pred = a + b * x + c * x ** 2 + d * x ** 3
            loss = (y_pred - y).pow(2).sum().item()
            grad_y_pred = 2.0 * (y_pred - y)
            grad_a = grad_y_pred.sum()
            grad_b = (grad_y_pred * x).sum()
            grad_c = (grad_y_pred * x ** 2).sum()
            grad_d = (grad_y_pred * x ** 3).sum()
            a -= learning_rate * grad_a
            b -= learning_rate * grad_b
            c -= learning_rate * grad_c
            d -= learning_rate * grad_d
            log("tensor loss", loss)
        print(f'Result: y = {a.item():.4f} + {b.item():.4f} x + {c.item():.4f} x^2 + {d.item():.4f} x^3')

        p = torch.tensor([1, 2, 3])
        xx = x.unsqueeze(-1).pow(p)
        model = torch.nn.Sequential(
            torch.nn.Linear(3, 1),
            torch.nn.Flatten(0, 1)
        )
        init_params(torch, model, 40)
        loss_fn = torch.nn.MSELoss(reduction='sum')
        for t in range(3):
            y_pred = model(xx)
            loss = loss_fn(y_pred, y)
            model.zero_grad()
            loss.backward()
            with torch.no_grad():
                for param in model.parameters():
                    param -= learning_rate * param.grad
            log("nn loss", loss.item())
        linear_layer = model[0]
        print(f'Result: y = {linear_layer.bias.item():.4f} + {linear_layer.weight[:, 0].item():.4f} x + '
              f'{linear_layer.weight[:, 1].item():.4f} x^2 + {linear_layer.weight[:, 2].item():.4f} x^3')

        init_params(torch, model, 41)
        optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
        for t in range(3):
            y_pred = model(xx)
            loss = loss_fn(y_pred, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            log("optim loss", loss.item())

        class Polynomial3(torch.nn.Module):
            def __init__(self):
                super().__init__()
                vals = np_randn((4,), 42)
                self.a = torch.nn.Parameter(torch.tensor(vals[0]))
                self.b = torch.nn.Parameter(torch.tensor(vals[1]))
                self.c = torch.nn.Parameter(torch.tensor(vals[2]))
                self.d = torch.nn.Parameter(torch.tensor(vals[3]))

            def forward(self, x):
                return self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3

            def string(self):
                return f'y = {self.a.item():.5f} + {self.b.item():.5f} x + {self.c.item():.5f} x^2 + {self.d.item():.5f} x^3'
        model = Polynomial3()
        criterion = torch.nn.MSELoss(reduction='sum')
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
        for t in range(3):
            y_pred = model(x)
            loss = criterion(y_pred, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f'Result: {model.string()}')
        log("module params", [p.shape for p in model.parameters()])
    run_both(program)


# pytorch/tutorials beginner_source/nlp/deep_learning_tutorial.py (BoWClassifier over
# make_bow_vector/make_target, log_softmax + NLLLoss, SGD, the per-word weight column printed
# before and after training) and nlp/pytorch_tutorial.py's view/cat/requires_grad tour
def test_nlp_bag_of_words_classifier():
    def program(torch, log):
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim
        data = [("me gusta comer en la cafeteria".split(), "SPANISH"),
                ("Give it to me".split(), "ENGLISH"),
                ("No creo que sea una buena idea".split(), "SPANISH"),
                ("No it is not a good idea to get lost at sea".split(), "ENGLISH")]
        test_data = [("Yo creo que si".split(), "SPANISH"),
                     ("it is lost on me".split(), "ENGLISH")]
        word_to_ix = {}
        for sent, _ in data + test_data:
            for word in sent:
                if word not in word_to_ix:
                    word_to_ix[word] = len(word_to_ix)
        VOCAB_SIZE = len(word_to_ix)
        NUM_LABELS = 2

        class BoWClassifier(nn.Module):
            def __init__(self, num_labels, vocab_size):
                super(BoWClassifier, self).__init__()
                self.linear = nn.Linear(vocab_size, num_labels)

            def forward(self, bow_vec):
                return F.log_softmax(self.linear(bow_vec), dim=1)

        def make_bow_vector(sentence, word_to_ix):
            vec = torch.zeros(len(word_to_ix))
            for word in sentence:
                vec[word_to_ix[word]] += 1
            return vec.view(1, -1)

        def make_target(label, label_to_ix):
            return torch.LongTensor([label_to_ix[label]])
        model = init_params(torch, BoWClassifier(NUM_LABELS, VOCAB_SIZE), 43)
        for param in model.parameters():
            print(param.shape)
        label_to_ix = {"SPANISH": 0, "ENGLISH": 1}
        with torch.no_grad():
            for instance, label in test_data:
                bow_vec = make_bow_vector(instance, word_to_ix)
                log_probs = model(bow_vec)
                log("before", log_probs)
        log("creo before", next(model.parameters())[:, word_to_ix["creo"]])
        loss_function = nn.NLLLoss()
        optimizer = optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(5):
            for instance, label in data:
                model.zero_grad()
                bow_vec = make_bow_vector(instance, word_to_ix)
                target = make_target(label, label_to_ix)
                log_probs = model(bow_vec)
                loss = loss_function(log_probs, target)
                loss.backward()
                optimizer.step()
        with torch.no_grad():
            for instance, label in test_data:
                log("after", model(make_bow_vector(instance, word_to_ix)))
        log("creo after", next(model.parameters())[:, word_to_ix["creo"]])

        x = torch.tensor(np.arange(24.0, dtype=np.float32).reshape(2, 3, 4))
        log("view", [x.view(2, 12), x.view(2, -1)])
        x_1 = torch.tensor(np.ones((2, 5), np.float32))
        y_1 = torch.tensor(np.zeros((3, 5), np.float32))
        log("cat", torch.cat([x_1, y_1]))
        x = torch.tensor([1., 2., 3], requires_grad=True)
        y = torch.tensor([4., 5., 6], requires_grad=True)
        z = x + y
        log("z.grad_fn", z.grad_fn)   # the program prints them: object addresses differ run to run
        s = z.sum()
        log("s.grad_fn", s.grad_fn)
        s.backward()
        print(x.grad)
        x = torch.ones(2, 2)
        y = torch.ones(2, 2)
        print(x.requires_grad, y.requires_grad)
        z = x + y
        print(z.grad_fn)
        x = x.requires_grad_()
        y = y.requires_grad_()
        z = x + y
        log("z.grad_fn", z.grad_fn)
        print(z.requires_grad)
        new_z = z.detach()
        print(new_z.grad_fn)
        print(x.requires_grad)
        print((x ** 2).requires_grad)
        with torch.no_grad():
            print((x ** 2).requires_grad)
    run_both(program)


# pytorch/tutorials beginner_source/nlp/word_embeddings_tutorial.py (NGramLanguageModeler:
# Embedding(...).view((1, -1)), log_softmax, NLLLoss, model.zero_grad, the total loss per epoch;
# the CBOW context windows) and nlp/sequence_models_tutorial.py (an LSTM run step by step and
# on the whole sequence; LSTMTagger trained with NLLLoss)
def test_nlp_ngram_and_lstm_tagger():
    def program(torch, log):
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim
        CONTEXT_SIZE, EMBEDDING_DIM = 2, 4
        test_sentence = """When forty winters shall besiege thy brow,
        And dig deep trenches in thy beauty's field,
        Thy youth's proud livery so gazed on now,""".split()
        ngrams = [
            (
                [test_sentence[i - j - 1] for j in range(CONTEXT_SIZE)],
                test_sentence[i]
            )
            for i in range(CONTEXT_SIZE, len(test_sentence))
        ]
        print(ngrams[:3])
        vocab = sorted(set(test_sentence))
        word_to_ix = {word: i for i, word in enumerate(vocab)}

        class NGramLanguageModeler(nn.Module):
            def __init__(self, vocab_size, embedding_dim, context_size):
                super(NGramLanguageModeler, self).__init__()
                self.embeddings = nn.Embedding(vocab_size, embedding_dim)
                self.linear1 = nn.Linear(context_size * embedding_dim, 16)
                self.linear2 = nn.Linear(16, vocab_size)

            def forward(self, inputs):
                embeds = self.embeddings(inputs).view((1, -1))
                out = F.relu(self.linear1(embeds))
                out = self.linear2(out)
                log_probs = F.log_softmax(out, dim=1)
                return log_probs
        losses = []
        loss_function = nn.NLLLoss()
        model = init_params(torch, NGramLanguageModeler(len(vocab), EMBEDDING_DIM, CONTEXT_SIZE), 44)
        optimizer = optim.SGD(model.parameters(), lr=0.001)
        for epoch in range(2):
            total_loss = 0
            for context, target in ngrams:
                context_idxs = torch.tensor([word_to_ix[w] for w in context], dtype=torch.long)
                model.zero_grad()
                log_probs = model(context_idxs)
                loss = loss_function(log_probs, torch.tensor([word_to_ix[target]], dtype=torch.long))
                loss.backward()
                optimizer.step()
                total_loss += loss.item()
            losses.append(total_loss)
        log("losses", losses)
        log("beauty", model.embeddings.weight[word_to_ix["beauty's"]])

        lstm = init_params(torch, nn.LSTM(3, 3), 45)
        inputs = [randn(torch, (1, 3), 46 + k) for k in range(5)]
        hidden = (randn(torch, (1, 1, 3), 51), randn(torch, (1, 1, 3), 52))
        for i in inputs:
            out, hidden = lstm(i.view(1, 1, -1), hidden)
        log("stepwise", [out, hidden])
        inputs = torch.cat(inputs).view(len(inputs), 1, -1)
        hidden = (randn(torch, (1, 1, 3), 51), randn(torch, (1, 1, 3), 52))
        out, hidden = lstm(inputs, hidden)
        log("whole", [out, hidden])

        def prepare_sequence(seq, to_ix):
            idxs = [to_ix[w] for w in seq]
            return torch.tensor(idxs, dtype=torch.long)
        training_data = [
            ("The dog ate the apple".split(), ["DET", "NN", "V", "DET", "NN"]),
            ("Everybody read that book".split(), ["NN", "V", "DET", "NN"])
        ]
        word_to_ix = {}
        for sent, tags in training_data:
            for word in sent:
                if word not in word_to_ix:
                    word_to_ix[word] = len(word_to_ix)
        tag_to_ix = {"DET": 0, "NN": 1, "V": 2}

        class LSTMTagger(nn.Module):
            def __init__(self, embedding_dim, hidden_dim, vocab_size, tagset_size):
                super(LSTMTagger, self).__init__()
                self.hidden_dim = hidden_dim
                self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)
                self.lstm = nn.LSTM(embedding_dim, hidden_dim)
                self.hidden2tag = nn.Linear(hidden_dim, tagset_size)

            def forward(self, sentence):
                embeds = self.word_embeddings(sentence)
                lstm_out, _ = self.lstm(embeds.view(len(sentence), 1, -1))
                tag_space = self.hidden2tag(lstm_out.view(len(sentence), -1))
                tag_scores = F.log_softmax(tag_space, dim=1)
                return tag_scores
        model = init_params(torch, LSTMTagger(6, 6, len(word_to_ix), len(tag_to_ix)), 53)
        loss_function = nn.NLLLoss()
        optimizer = optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            for sentence, tags in training_data:
                model.zero_grad()
                sentence_in = prepare_sequence(sentence, word_to_ix)
                targets = prepare_sequence(tags, tag_to_ix)
                tag_scores = model(sentence_in)
                loss = loss_function(tag_scores, targets)
                loss.backward()
                optimizer.step()
        with torch.no_grad():
            inputs = prepare_sequence(training_data[0][0], word_to_ix)
            log("tag_scores", model(inputs))
    run_both(program)


# pytorch/tutorials beginner_source/nlp/advanced_tutorial.py (BiLSTM-CRF: the forward algorithm
# with log_sum_exp over expanded views, the gold path score indexing transitions by tensors,
# Viterbi decoding with Python back pointers, nn.Parameter rows written through ``.data``,
# SGD with weight_decay); the random initial states from numpy
def test_nlp_bilstm_crf():
    def program(torch, log):
        nn, optim = torch.nn, torch.optim

        def argmax(vec):
            _, idx = torch.max(vec, 1)
            return idx.item()

        def prepare_sequence(seq, to_ix):
            idxs = [to_ix[w] for w in seq]
            return torch.tensor(idxs, dtype=torch.long)

        def log_sum_exp(vec):
            max_score = vec[0, argmax(vec)]
            max_score_broadcast = max_score.view(1, -1).expand(1, vec.size()[1])
            return max_score + \
                torch.log(torch.sum(torch.exp(vec - max_score_broadcast)))
        START_TAG, STOP_TAG = "<START>", "<STOP>"

        class BiLSTM_CRF(nn.Module):
            def __init__(self, vocab_size, tag_to_ix, embedding_dim, hidden_dim):
                super(BiLSTM_CRF, self).__init__()
                self.embedding_dim = embedding_dim
                self.hidden_dim = hidden_dim
                self.vocab_size = vocab_size
                self.tag_to_ix = tag_to_ix
                self.tagset_size = len(tag_to_ix)
                self.word_embeds = nn.Embedding(vocab_size, embedding_dim)
                self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2,
                                    num_layers=1, bidirectional=True)
                self.hidden2tag = nn.Linear(hidden_dim, self.tagset_size)
                self.transitions = nn.Parameter(
                    randn(torch, (self.tagset_size, self.tagset_size), 54))
                self.transitions.data[tag_to_ix[START_TAG], :] = -10000
                self.transitions.data[:, tag_to_ix[STOP_TAG]] = -10000
                self.hidden = self.init_hidden()

            def init_hidden(self):
                return (randn(torch, (2, 1, self.hidden_dim // 2), 55),
                        randn(torch, (2, 1, self.hidden_dim // 2), 56))

            def _forward_alg(self, feats):
                init_alphas = torch.full((1, self.tagset_size), -10000.)
                init_alphas[0][self.tag_to_ix[START_TAG]] = 0.
                forward_var = init_alphas
                for feat in feats:
                    alphas_t = []
                    for next_tag in range(self.tagset_size):
                        emit_score = feat[next_tag].view(
                            1, -1).expand(1, self.tagset_size)
                        trans_score = self.transitions[next_tag].view(1, -1)
                        next_tag_var = forward_var + trans_score + emit_score
                        alphas_t.append(log_sum_exp(next_tag_var).view(1))
                    forward_var = torch.cat(alphas_t).view(1, -1)
                terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
                alpha = log_sum_exp(terminal_var)
                return alpha

            def _get_lstm_features(self, sentence):
                self.hidden = self.init_hidden()
                embeds = self.word_embeds(sentence).view(len(sentence), 1, -1)
                lstm_out, self.hidden = self.lstm(embeds, self.hidden)
                lstm_out = lstm_out.view(len(sentence), self.hidden_dim)
                lstm_feats = self.hidden2tag(lstm_out)
                return lstm_feats

            def _score_sentence(self, feats, tags):
                score = torch.zeros(1)
                tags = torch.cat([torch.tensor([self.tag_to_ix[START_TAG]], dtype=torch.long), tags])
                for i, feat in enumerate(feats):
                    score = score + \
                        self.transitions[tags[i + 1], tags[i]] + feat[tags[i + 1]]
                score = score + self.transitions[self.tag_to_ix[STOP_TAG], tags[-1]]
                return score

            def _viterbi_decode(self, feats):
                backpointers = []
                init_vvars = torch.full((1, self.tagset_size), -10000.)
                init_vvars[0][self.tag_to_ix[START_TAG]] = 0
                forward_var = init_vvars
                for feat in feats:
                    bptrs_t = []
                    viterbivars_t = []
                    for next_tag in range(self.tagset_size):
                        next_tag_var = forward_var + self.transitions[next_tag]
                        best_tag_id = argmax(next_tag_var)
                        bptrs_t.append(best_tag_id)
                        viterbivars_t.append(next_tag_var[0][best_tag_id].view(1))
                    forward_var = (torch.cat(viterbivars_t) + feat).view(1, -1)
                    backpointers.append(bptrs_t)
                terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
                best_tag_id = argmax(terminal_var)
                path_score = terminal_var[0][best_tag_id]
                best_path = [best_tag_id]
                for bptrs_t in reversed(backpointers):
                    best_tag_id = bptrs_t[best_tag_id]
                    best_path.append(best_tag_id)
                start = best_path.pop()
                assert start == self.tag_to_ix[START_TAG]
                best_path.reverse()
                return path_score, best_path

            def neg_log_likelihood(self, sentence, tags):
                feats = self._get_lstm_features(sentence)
                forward_score = self._forward_alg(feats)
                gold_score = self._score_sentence(feats, tags)
                return forward_score - gold_score

            def forward(self, sentence):
                lstm_feats = self._get_lstm_features(sentence)
                score, tag_seq = self._viterbi_decode(lstm_feats)
                return score, tag_seq
        training_data = [(
            "the wall street journal reported today that apple corporation made money".split(),
            "B I I I O O O B I O O".split()
        ), (
            "georgia tech is a university in georgia".split(),
            "B I O O O O B".split()
        )]
        word_to_ix = {}
        for sentence, tags in training_data:
            for word in sentence:
                if word not in word_to_ix:
                    word_to_ix[word] = len(word_to_ix)
        tag_to_ix = {"B": 0, "I": 1, "O": 2, START_TAG: 3, STOP_TAG: 4}
        model = BiLSTM_CRF(len(word_to_ix), tag_to_ix, 5, 4)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name != "transitions":
                    p.copy_(torch.tensor(np.random.RandomState(len(name)).uniform(-0.5, 0.5, tuple(p.shape))
                                         .astype(np.float32)))
        optimizer = optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-4)
        with torch.no_grad():
            precheck_sent = prepare_sequence(training_data[0][0], word_to_ix)
            log("precheck", model(precheck_sent))
        for epoch in range(1):
            for sentence, tags in training_data:
                model.zero_grad()
                sentence_in = prepare_sequence(sentence, word_to_ix)
                targets = torch.tensor([tag_to_ix[t] for t in tags], dtype=torch.long)
                loss = model.neg_log_likelihood(sentence_in, targets)
                loss.backward()
                optimizer.step()
                log("nll", loss)
        log("transitions grad", model.transitions.grad)
        with torch.no_grad():
            log("trained", model(precheck_sent))
    run_both(program)


# pytorch/tutorials recipes_source/recipes/what_is_state_dict.py (model and optimizer
# state_dict sizes and keys printed), saving_and_loading_a_general_checkpoint.py (epoch,
# model/optimizer state and loss in one dict; model.train() after loading),
# warmstarting_model_using_parameters_from_a_different_model.py (load_state_dict(strict=False)
# into a bigger net: its missing keys) and zeroing_out_gradients.py (optimizer.zero_grad per
# minibatch, running loss print)
def test_state_dict_recipes(tmp_path):
    def program(torch, log):
        nn, optim, F = torch.nn, torch.optim, torch.nn.functional

        class Net(nn.Module):
            def __init__(self):
                super(Net, self).__init__()
                self.conv1 = nn.Conv2d(3, 6, 5)
                self.pool = nn.MaxPool2d(2, 2)
                self.conv2 = nn.Conv2d(6, 16, 5)
                self.fc1 = nn.Linear(16 * 5 * 5, 12)
                self.fc2 = nn.Linear(12, 8)
                self.fc3 = nn.Linear(8, 10)

            def forward(self, x):
                x = self.pool(F.relu(self.conv1(x)))
                x = self.pool(F.relu(self.conv2(x)))
                x = x.view(-1, 16 * 5 * 5)
                x = F.relu(self.fc1(x))
                x = F.relu(self.fc2(x))
                x = self.fc3(x)
                return x
        net = init_params(torch, Net(), 57, scale=0.1)
        optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
        print("Model's state_dict:")
        for param_tensor in net.state_dict():
            print(param_tensor, "\t", net.state_dict()[param_tensor].size())
        print()
        print("Optimizer's state_dict:")
        for var_name in optimizer.state_dict():
            print(var_name, "\t", optimizer.state_dict()[var_name])

        criterion = nn.CrossEntropyLoss()
        inputs, labels = _images(torch, 4, (3, 32, 32), 10, 58)
        running_loss = 0.0
        for i in range(2):
            optimizer.zero_grad()
            outputs = net(inputs[2 * i:2 * i + 2])
            loss = criterion(outputs, labels[2 * i:2 * i + 2])
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
        print('[%d, %5d] loss: %.3f' % (1, 2, running_loss / 2))

        PATH = os.path.join(str(tmp_path), "model.pt")
        EPOCH, LOSS = 5, 0.4
        torch.save({
                    'epoch': EPOCH,
                    'model_state_dict': net.state_dict(),
                    'optimizer_state_dict': optimizer.state_dict(),
                    'loss': LOSS,
                    }, PATH)
        model = Net()
        optimizer = optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
        checkpoint = torch.load(PATH)
        model.load_state_dict(checkpoint['model_state_dict'])
        optimizer.load_state_dict(checkpoint['optimizer_state_dict'])
        epoch = checkpoint['epoch']
        loss = checkpoint['loss']
        model.train()
        log("checkpoint", [epoch, loss, optimizer.state_dict()["state"][0]["momentum_buffer"]])
        optimizer.zero_grad()
        criterion(model(inputs), labels).backward()
        optimizer.step()
        log("resumed", model.fc3.bias)

        class NetB(Net):
            def __init__(self):
                super(NetB, self).__init__()
                self.fc4 = nn.Linear(10, 2)
        PATH = os.path.join(str(tmp_path), "net_a.pt")
        torch.save(net.state_dict(), PATH)
        netB = NetB()
        result = netB.load_state_dict(torch.load(PATH), strict=False)
        log("warmstart", [list(result.missing_keys), list(result.unexpected_keys)])
        log("fc1", netB.fc1.weight)
        try:
            NetB().load_state_dict(torch.load(PATH))
        except Exception as e:  # noqa: BLE001 -- the class is logged
            log("strict", type(e).__name__)
    run_both(program)


# pytorch/tutorials beginner_source/basics/quickstart_tutorial.py and optimization_tutorial.py
# (NeuralNetwork: Flatten + Linear/ReLU stack; train_loop/test_loop over DataLoaders of a
# stand-in FashionMNIST, size/num_batches bookkeeping, argmax(1) accuracy, the printed report;
# model.eval() and no_grad for the test pass) and buildmodel_tutorial.py (the printed model,
# named_parameters sizes, Softmax(dim=1) predictions)
def test_basics_quickstart_and_optimization():
    def program(torch, log):
        nn = torch.nn
        DataLoader, TensorDataset = torch.utils.data.DataLoader, torch.utils.data.TensorDataset
        x, y = _images(torch, 12, (1, 28, 28), 10, 59)
        training_data, test_data = TensorDataset(x[:8], y[:8]), TensorDataset(x[8:], y[8:])
        batch_size = 4
        train_dataloader = DataLoader(training_data, batch_size=batch_size)
        test_dataloader = DataLoader(test_data, batch_size=batch_size)
        for X, y in test_dataloader:
            print(f"Shape of X [N, C, H, W]: {X.shape}")
            print(f"Shape of y: {y.shape}")
            log("y.dtype", y.dtype)   # printed, tracegrad says tracegrad.int64: test_dtype_prints_as_torch
            break

        class NeuralNetwork(nn.Module):
            def __init__(self):
                super().__init__()
                self.flatten = nn.Flatten()
                self.linear_relu_stack = nn.Sequential(
                    nn.Linear(28*28, 16),
                    nn.ReLU(),
                    nn.Linear(16, 16),
                    nn.ReLU(),
                    nn.Linear(16, 10)
                )

            def forward(self, x):
                x = self.flatten(x)
                logits = self.linear_relu_stack(x)
                return logits
        model = init_params(torch, NeuralNetwork(), 60, scale=0.1)
        print(model)
        X = torch.tensor(np.random.RandomState(61).rand(1, 28, 28).astype(np.float32))
        logits = model(X)
        pred_probab = nn.Softmax(dim=1)(logits)
        y_pred = pred_probab.argmax(1)
        print(f"Predicted class: {y_pred}")
        for name, param in model.named_parameters():
            print(f"Layer: {name} | Size: {param.size()}")
        loss_fn = nn.CrossEntropyLoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

        def train_loop(dataloader, model, loss_fn, optimizer):
            size = len(dataloader.dataset)
            model.train()
            for batch, (X, y) in enumerate(dataloader):
                pred = model(X)
                loss = loss_fn(pred, y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                loss, current = loss.item(), batch * batch_size + len(X)
                log("loss", loss)   # printed to 6 decimals, which float32 rounding can flip
                print(f"[{current:>5d}/{size:>5d}]")

        def test_loop(dataloader, model, loss_fn):
            model.eval()
            size = len(dataloader.dataset)
            num_batches = len(dataloader)
            test_loss, correct = 0, 0
            with torch.no_grad():
                for X, y in dataloader:
                    pred = model(X)
                    test_loss += loss_fn(pred, y).item()
                    correct += (pred.argmax(1) == y).type(torch.float).sum().item()
            test_loss /= num_batches
            correct /= size
            print(f"Test Error: \n Accuracy: {(100*correct):>0.1f}%")
            log("Avg loss", test_loss)
        epochs = 2
        for t in range(epochs):
            print(f"Epoch {t+1}\n-------------------------------")
            train_loop(train_dataloader, model, loss_fn, optimizer)
            test_loop(test_dataloader, model, loss_fn)
        print("Done!")
    run_both(program)


# pytorch/tutorials intermediate_source/jacobians_hessians.py (jacobian rows from autograd.grad
# against vmap(vjp_fn), jacrev over argnums, jacfwd, hessian, and the batched jacobian through
# vmap(jacrev); D=8 in place of 16, and the hessian's jacfwd(jacrev) twin is left out for time);
# its ``assert torch.allclose(ft_jacobian, jacobian)`` needs the two derivative paths of tanh to
# agree to the last bits
@pytest.mark.xfail(strict=True, reason="tanh's backward is torch's 1 - y*y (optimizer trajectories match torch's); "
                   "XLA fuses it into an fma in the jitted eager backward but not in torch.func's whole-function "
                   "trace, so the two derivative paths differ in the 4th digit near |y| = 1")
def test_jacobians_hessians_tutorial():
    def program(torch, log):
        F = torch.nn.functional
        from functools import partial
        vmap, vjp, jacrev, jacfwd, hessian = (torch.func.vmap, torch.func.vjp, torch.func.jacrev,
                                              torch.func.jacfwd, torch.func.hessian)

        def predict(weight, bias, x):
            return F.linear(x, weight, bias).tanh()
        D = 8
        weight = randn(torch, (D, D), 62)
        bias = randn(torch, (D,), 63)
        x = randn(torch, (D,), 64)

        def compute_jac(xp):
            jacobian_rows = [torch.autograd.grad(predict(weight, bias, xp), xp, vec)[0]
                             for vec in unit_vectors]
            return torch.stack(jacobian_rows)
        xp = x.clone().requires_grad_()
        unit_vectors = torch.eye(D)
        jacobian = compute_jac(xp)
        print(jacobian.shape)
        _, vjp_fn = vjp(partial(predict, weight, bias), x)
        ft_jacobian, = vmap(vjp_fn)(unit_vectors)
        assert torch.allclose(ft_jacobian, jacobian)
        ft_jacobian = jacrev(predict, argnums=2)(weight, bias, x)
        assert torch.allclose(ft_jacobian, jacobian)
        ft_jac_weight, ft_jac_bias = jacrev(predict, argnums=(0, 1))(weight, bias, x)
        log("jac bias", ft_jac_bias)
        log("jac weight", ft_jac_weight[3])
        jacfwd_jacobian = jacfwd(predict, argnums=2)(weight, bias, x)
        assert torch.allclose(jacfwd_jacobian, jacobian)
        hess_api = hessian(predict, argnums=2)(weight, bias, x)
        # hessian values are not compared: near saturation they magnify the last-ulp difference
        # of the two libraries' tanh (XLA's CPU tanh is ~1e-7 off, torch's ~3e-8) to ~1%
        log("hessian shape", hess_api.shape)
        batch_size, Dout = 4, 3
        weight = randn(torch, (Dout, D), 65)
        x = randn(torch, (batch_size, D), 66)
        compute_batch_jacobian = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))
        batch_jacobian0 = compute_batch_jacobian(weight, bias[:Dout], x)

        def predict_with_output_summed(weight, bias, x):
            return predict(weight, bias, x).sum(0)
        batch_jacobian1 = jacrev(predict_with_output_summed, argnums=2)(weight, bias[:Dout], x).movedim(1, 0)
        assert torch.allclose(batch_jacobian0, batch_jacobian1)
        log("batch jacobian", batch_jacobian0)
    run_both(program)


# beginner_source/basics/quickstart_tutorial.py prints ``f"... {y.dtype}"``: torch shows
# ``torch.int64``, tracegrad ``tracegrad.int64`` (dtype reprs are tracegrad's own by design;
# run_both compares printed text with the library's name normalised, the rest must match)
def test_dtype_prints_as_torch():
    def program(torch, log):
        y = torch.tensor([1, 2])
        print(f"Shape of y: {y.shape} {y.dtype}")
    run_both(program)
