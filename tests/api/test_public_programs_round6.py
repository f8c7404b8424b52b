"""A sixth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round5.py``: each keeps its program's code at tiny sizes, with
numpy-seeded data and parameters (``init_params``/``randn``) in place of downloads and random
streams, and dropout at p=0 (dropout draws differ between the libraries). The full programs ran
unchanged through a ``torch`` -> tracegrad import alias (a meta-path finder) with tiny flags
and a stand-in ``torchvision`` (datasets of random images). Here the programs' ``import torch.x
as y`` lines are attribute lookups on the module under test.
"""
import math

import numpy as np
import pytest

from parity import init_params, randn, run_both

torch = pytest.importorskip("torch")


def _images(torch, n, shape, seed, classes=10):
    """A stand-in torchvision dataset: ``n`` uniform images of ``shape`` and integer labels, as a
    TensorDataset."""
    rs = np.random.RandomState(seed)
    x = torch.tensor(rs.rand(n, *shape).astype(np.float32))
    y = torch.tensor(rs.randint(0, classes, n))
    return torch.utils.data.TensorDataset(x, y)


def _mnist_main(torch, log, model, shape, lr, seed, log_interval):
    """pytorch/examples mnist/main.py's train and test functions and its main loop (mnist_rnn/
    main.py has the same): Adadelta stepped down by StepLR(step_size=1, gamma=0.7) over two
    epochs, DataLoaders of stand-in images of ``shape``."""
    F = torch.nn.functional

    def train(model, device, train_loader, optimizer, epoch):
        model.train()
        for batch_idx, (data, target) in enumerate(train_loader):
            data, target = data.to(device), target.to(device)
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            if batch_idx % log_interval == 0:
                print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                    epoch, batch_idx * len(data), len(train_loader.dataset),
                    100. * batch_idx / len(train_loader), loss.item()))

    def test(model, device, test_loader):
        model.eval()
        test_loss = 0
        correct = 0
        with torch.no_grad():
            for data, target in test_loader:
                data, target = data.to(device), target.to(device)
                output = model(data)
                test_loss += F.nll_loss(output, target, reduction='sum').item()  # sum up batch loss
                pred = output.argmax(dim=1, keepdim=True)  # get the index of the max log-probability
                correct += pred.eq(target.view_as(pred)).sum().item()
        test_loss /= len(test_loader.dataset)
        print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
            test_loss, correct, len(test_loader.dataset),
            100. * correct / len(test_loader.dataset)))

    device = torch.device("cpu")
    train_loader = torch.utils.data.DataLoader(_images(torch, 12, shape, seed), batch_size=4)
    # the test batch has the training batches' size: another size runs the model at new shapes
    test_loader = torch.utils.data.DataLoader(_images(torch, 4, shape, seed + 1), batch_size=4)
    model = init_params(torch, model.to(device), seed)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    for epoch in range(1, 3):
        train(model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
        scheduler.step()
        log("lr", scheduler.get_last_lr())
    return model


# pytorch/examples mnist/main.py (Conv2d/max_pool2d/flatten Net with log_softmax, Adadelta at
# lr=1.0 stepped down by StepLR(gamma=0.7), the train/test loops with their formatted prints over
# DataLoaders, torch.device("cpu")); 1x10x10 images, 4/8 channels, 16 hidden units
def test_examples_mnist():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional

        class Net(nn.Module):
            def __init__(self):
                super(Net, self).__init__()
                self.conv1 = nn.Conv2d(1, 4, 3, 1)
                self.conv2 = nn.Conv2d(4, 8, 3, 1)
                self.dropout1 = nn.Dropout(0.0)
                self.dropout2 = nn.Dropout(0.0)
                self.fc1 = nn.Linear(72, 16)
                self.fc2 = nn.Linear(16, 10)

            def forward(self, x):
                x = self.conv1(x)
                x = F.relu(x)
                x = self.conv2(x)
                x = F.relu(x)
                x = F.max_pool2d(x, 2)
                x = self.dropout1(x)
                x = torch.flatten(x, 1)
                x = self.fc1(x)
                x = F.relu(x)
                x = self.dropout2(x)
                x = self.fc2(x)
                output = F.log_softmax(x, dim=1)
                return output

        model = _mnist_main(torch, log, Net(), (1, 10, 10), 1.0, 0, log_interval=1)
        log("fc2", model.fc2.weight)
    run_both(program)


# pytorch/examples mnist_rnn/main.py (batch_first LSTM over image rows, the last step through
# BatchNorm1d, Dropout2d on a 2-D input, Adadelta + StepLR, the same train/test loops); 6x6
# images, hidden 64 -> 8
def test_examples_mnist_rnn():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional

        class Net(nn.Module):
            def __init__(self):
                super(Net, self).__init__()
                self.rnn = nn.LSTM(input_size=6, hidden_size=8, batch_first=True)
                self.batchnorm = nn.BatchNorm1d(8)
                self.dropout1 = nn.Dropout2d(0.0)
                self.dropout2 = nn.Dropout2d(0.0)
                self.fc1 = nn.Linear(8, 8)
                self.fc2 = nn.Linear(8, 10)

            def forward(self, input):
                input = input.reshape(-1, 6, 6)
                output, hidden = self.rnn(input)
                output = output[:, -1, :]
                output = self.batchnorm(output)
                output = self.dropout1(output)
                output = self.fc1(output)
                output = F.relu(output)
                output = self.dropout2(output)
                output = self.fc2(output)
                output = F.log_softmax(output, dim=1)
                return output

        model = _mnist_main(torch, log, Net(), (1, 6, 6), 0.1, 2, log_interval=2)
        log("running_var", model.batchnorm.running_var)
        log("num_batches_tracked", model.batchnorm.num_batches_tracked)
    run_both(program)


# pytorch/examples regression/main.py (polynomial features by torch.cat of x ** i, f(x) with
# b_target.item(), smooth_l1_loss, fc.zero_grad and param.data.add_(-0.1 * param.grad), the
# '{:+.2f}'.format of 0-d tensors in poly_desc); numpy batches, 40 batches at most
def test_examples_regression():
    def program(torch, log):
        F = torch.nn.functional
        POLY_DEGREE = 4
        W_target = randn(torch, (POLY_DEGREE, 1), 0) * 5
        b_target = randn(torch, (1,), 1) * 5

        def make_features(x):
            x = x.unsqueeze(1)
            return torch.cat([x ** i for i in range(1, POLY_DEGREE+1)], 1)

        def f(x):
            return x.mm(W_target) + b_target.item()

        def poly_desc(W, b):
            result = 'y = '
            for i, w in enumerate(W):
                result += '{:+.2f} x^{} '.format(w, i + 1)
            result += '{:+.2f}'.format(b[0])
            return result

        def get_batch(seed, batch_size=32):
            random = randn(torch, (batch_size,), seed, scale=0.5)
            x = make_features(random)
            y = f(x)
            return x, y

        fc = init_params(torch, torch.nn.Linear(W_target.size(0), 1), 2)
        for batch_idx in range(1, 41):
            batch_x, batch_y = get_batch(100 + batch_idx)
            fc.zero_grad()
            output = F.smooth_l1_loss(fc(batch_x), batch_y)
            loss = output.item()
            output.backward()
            for param in fc.parameters():
                param.data.add_(-0.1 * param.grad)
            if loss < 1e-3:
                break
        print('Loss: {:.4f} after {} batches'.format(loss, batch_idx))
        print('==> Learned function:\t' + poly_desc(fc.weight.view(-1), fc.bias))
        print('==> Actual function:\t' + poly_desc(W_target.view(-1), b_target))
    run_both(program)


# pytorch/examples vae/main.py (VAE with fc21/fc22 heads, reparameterize by exp(0.5*logvar), the
# sigmoid decoder, binary_cross_entropy(reduction='sum') + the KL term, Adam, train/test with
# their prints, the reconstruction comparison by torch.cat); 16-pixel images, 400/20 -> 8/2
# units, randn_like's eps from numpy
def test_examples_vae():
    def program(torch, log):
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim
        draws = iter(range(1000))

        class VAE(nn.Module):
            def __init__(self):
                super(VAE, self).__init__()
                self.fc1 = nn.Linear(16, 8)
                self.fc21 = nn.Linear(8, 2)
                self.fc22 = nn.Linear(8, 2)
                self.fc3 = nn.Linear(2, 8)
                self.fc4 = nn.Linear(8, 16)

            def encode(self, x):
                h1 = F.relu(self.fc1(x))
                return self.fc21(h1), self.fc22(h1)

            def reparameterize(self, mu, logvar):
                std = torch.exp(0.5*logvar)
                eps = randn(torch, std.shape, next(draws))
                return mu + eps*std

            def decode(self, z):
                h3 = F.relu(self.fc3(z))
                return torch.sigmoid(self.fc4(h3))

            def forward(self, x):
                mu, logvar = self.encode(x.view(-1, 16))
                z = self.reparameterize(mu, logvar)
                return self.decode(z), mu, logvar

        def loss_function(recon_x, x, mu, logvar):
            BCE = F.binary_cross_entropy(recon_x, x.view(-1, 16), reduction='sum')
            KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
            return BCE + KLD

        train_loader = torch.utils.data.DataLoader(_images(torch, 8, (1, 4, 4), 4), batch_size=4)
        test_loader = torch.utils.data.DataLoader(_images(torch, 4, (1, 4, 4), 5), batch_size=4)
        model = init_params(torch, VAE(), 3)
        optimizer = optim.Adam(model.parameters(), lr=1e-3)
        for epoch in range(1, 3):
            model.train()
            train_loss = 0
            for batch_idx, (data, _) in enumerate(train_loader):
                optimizer.zero_grad()
                recon_batch, mu, logvar = model(data)
                loss = loss_function(recon_batch, data, mu, logvar)
                loss.backward()
                train_loss += loss.item()
                optimizer.step()
                print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.4f}'.format(
                    epoch, batch_idx * len(data), len(train_loader.dataset),
                    100. * batch_idx / len(train_loader), loss.item() / len(data)))
            print('====> Epoch: {} Average loss: {:.4f}'.format(epoch, train_loss / len(train_loader.dataset)))
            model.eval()
            test_loss = 0
            with torch.no_grad():
                for i, (data, _) in enumerate(test_loader):
                    recon_batch, mu, logvar = model(data)
                    test_loss += loss_function(recon_batch, data, mu, logvar).item()
                    if i == 0:
                        n = min(data.size(0), 8)
                        comparison = torch.cat([data[:n], recon_batch.view(4, 1, 4, 4)[:n]])
                        log("comparison", comparison)
            test_loss /= len(test_loader.dataset)
            print('====> Test set loss: {:.4f}'.format(test_loss))
        with torch.no_grad():
            sample = randn(torch, (3, 2), 999).to("cpu")
            log("sample", model.decode(sample).cpu().view(3, 1, 4, 4))
    run_both(program)


def _module_level(cls, torch):
    """Give a class defined inside a program a module-level name (one per library), so that
    ``torch.save(model)`` can pickle its instances by reference as it does in the program."""
    name = f"_{cls.__name__}_{torch.__name__}"
    cls.__qualname__, cls.__module__ = name, __name__
    globals()[name] = cls
    return cls


# every split 4k + 1 rows long after batchify: each bptt batch has 4 steps (one shape to compile)
_WLM_TEXT = {"train": ["the cat sat on a mat", "a dog ran to the red house", "the cat"],
             "valid": ["a cat sat on the house", "the dog"],
             "test": ["the red cat sat", "a big dog ran"]}


def _wlm_corpus(torch, tmp_path):
    """pytorch/examples word_language_model/data.py (Dictionary, Corpus.tokenize: one
    torch.tensor(ids).type(torch.int64) per line, torch.cat of them) over tiny text files."""
    for split, lines in _WLM_TEXT.items():
        (tmp_path / f"{split}.txt").write_text("".join(f" {line} \n" for line in lines))

    class Dictionary(object):
        def __init__(self):
            self.word2idx = {}
            self.idx2word = []

        def add_word(self, word):
            if word not in self.word2idx:
                self.idx2word.append(word)
                self.word2idx[word] = len(self.idx2word) - 1
            return self.word2idx[word]

        def __len__(self):
            return len(self.idx2word)

    class Corpus(object):
        def __init__(self, path):
            self.dictionary = Dictionary()
            self.train = self.tokenize(path / 'train.txt')
            self.valid = self.tokenize(path / 'valid.txt')
            self.test = self.tokenize(path / 'test.txt')

        def tokenize(self, path):
            with open(path, 'r', encoding="utf8") as f:
                for line in f:
                    for word in line.split() + ['<eos>']:
                        self.dictionary.add_word(word)
            with open(path, 'r', encoding="utf8") as f:
                idss = []
                for line in f:
                    ids = [self.dictionary.word2idx[word] for word in line.split() + ['<eos>']]
                    idss.append(torch.tensor(ids).type(torch.int64))
                ids = torch.cat(idss)
            return ids
    return Corpus(tmp_path)


def _wlm_models(torch):
    """pytorch/examples word_language_model/model.py: RNNModel (tied decoder, init_weights by
    nn.init.uniform_/zeros_, init_hidden through weight.new_zeros), PositionalEncoding (pe
    written through 0::2/1::2 slices, a registered buffer) and TransformerModel, an nn.Transformer
    subclass whose mask is torch.log(torch.tril(ones)) and whose forward runs only self.encoder."""
    nn, F = torch.nn, torch.nn.functional

    class RNNModel(nn.Module):
        def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
            super(RNNModel, self).__init__()
            self.ntoken = ntoken
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            if rnn_type in ['LSTM', 'GRU']:
                self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
            else:
                nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
                self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
            self.decoder = nn.Linear(nhid, ntoken)
            if tie_weights:
                if nhid != ninp:
                    raise ValueError('When using the tied flag, nhid must be equal to emsize')
                self.decoder.weight = self.encoder.weight
            self.init_weights()
            self.rnn_type = rnn_type
            self.nhid = nhid
            self.nlayers = nlayers

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.encoder.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, input, hidden):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            output = self.drop(output)
            decoded = self.decoder(output)
            decoded = decoded.view(-1, self.ntoken)
            return F.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, bsz):
            weight = next(self.parameters())
            if self.rnn_type == 'LSTM':
                return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                        weight.new_zeros(self.nlayers, bsz, self.nhid))
            else:
                return weight.new_zeros(self.nlayers, bsz, self.nhid)

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, dropout=0.1, max_len=5000):
            super(PositionalEncoding, self).__init__()
            self.dropout = nn.Dropout(p=dropout)
            pe = torch.zeros(max_len, d_model)
            position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
            pe[:, 0::2] = torch.sin(position * div_term)
            pe[:, 1::2] = torch.cos(position * div_term)
            pe = pe.unsqueeze(0).transpose(0, 1)
            self.register_buffer('pe', pe)

        def forward(self, x):
            x = x + self.pe[:x.size(0), :]
            return self.dropout(x)

    class TransformerModel(nn.Transformer):
        def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
            super(TransformerModel, self).__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid,
                                                   num_encoder_layers=nlayers, dropout=dropout)
            self.model_type = 'Transformer'
            self.src_mask = None
            self.pos_encoder = PositionalEncoding(ninp, dropout, max_len=64)
            self.input_emb = nn.Embedding(ntoken, ninp)
            self.ninp = ninp
            self.decoder = nn.Linear(ninp, ntoken)
            self.init_weights()

        def _generate_square_subsequent_mask(self, sz):
            return torch.log(torch.tril(torch.ones(sz, sz)))

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, src, has_mask=True):
            if has_mask:
                device = src.device
                if self.src_mask is None or self.src_mask.size(0) != len(src):
                    mask = self._generate_square_subsequent_mask(len(src)).to(device)
                    self.src_mask = mask
            else:
                self.src_mask = None
            src = self.input_emb(src) * math.sqrt(self.ninp)
            src = self.pos_encoder(src)
            output = self.encoder(src, mask=self.src_mask)
            output = self.decoder(output)
            return F.log_softmax(output, dim=-1)
    return _module_level(RNNModel, torch), PositionalEncoding, TransformerModel


def _wlm_main(torch, log, corpus, model, is_transformer, save_path, safe_globals_of):
    """pytorch/examples word_language_model/main.py's batchify (narrow, view(bsz, -1).t()
    .contiguous()), get_batch, repackage_hidden, evaluate and train (clip_grad_norm_, the manual
    ``p.data.add_(p.grad, alpha=-lr)`` step, the formatted report), lr /= 4 on no improvement, the
    best model saved whole with torch.save and loaded back inside serialization.safe_globals."""
    nn = torch.nn
    bptt, batch_size, eval_batch_size, clip, log_interval = 4, 2, 2, 0.25, 2

    def batchify(data, bsz):
        nbatch = data.size(0) // bsz
        data = data.narrow(0, 0, nbatch * bsz)
        data = data.view(bsz, -1).t().contiguous()
        return data.to("cpu")

    train_data = batchify(corpus.train, batch_size)
    val_data = batchify(corpus.valid, eval_batch_size)
    test_data = batchify(corpus.test, eval_batch_size)
    ntokens = len(corpus.dictionary)
    criterion = nn.NLLLoss()

    def repackage_hidden(h):
        if isinstance(h, torch.Tensor):
            return h.detach()
        else:
            return tuple(repackage_hidden(v) for v in h)

    def get_batch(source, i):
        seq_len = min(bptt, len(source) - 1 - i)
        data = source[i:i+seq_len]
        target = source[i+1:i+1+seq_len].view(-1)
        return data, target

    def evaluate(data_source):
        model.eval()
        total_loss = 0.
        if not is_transformer:
            hidden = model.init_hidden(eval_batch_size)
        with torch.no_grad():
            for i in range(0, data_source.size(0) - 1, bptt):
                data, targets = get_batch(data_source, i)
                if is_transformer:
                    output = model(data)
                    output = output.view(-1, ntokens)
                else:
                    output, hidden = model(data, hidden)
                    hidden = repackage_hidden(hidden)
                total_loss += len(data) * criterion(output, targets).item()
        return total_loss / (len(data_source) - 1)

    def train():
        model.train()
        total_loss = 0.
        if not is_transformer:
            hidden = model.init_hidden(batch_size)
        for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
            data, targets = get_batch(train_data, i)
            model.zero_grad()
            if is_transformer:
                output = model(data)
                output = output.view(-1, ntokens)
            else:
                hidden = repackage_hidden(hidden)
                output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            total_loss += loss.item()
            if batch % log_interval == 0 and batch > 0:
                cur_loss = total_loss / log_interval
                print('| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | loss {:5.2f} | ppl {:8.2f}'.format(
                    epoch, batch, len(train_data) // bptt, lr, cur_loss, math.exp(cur_loss)))
                total_loss = 0

    lr = 5.0
    best_val_loss = None
    for epoch in range(1, 3):
        train()
        val_loss = evaluate(val_data)
        print('| end of epoch {:3d} | valid loss {:5.2f} | valid ppl {:8.2f}'.format(
            epoch, val_loss, math.exp(val_loss)))
        if not best_val_loss or val_loss < best_val_loss:
            with open(save_path, 'wb') as f:
                torch.save(model, f)
            best_val_loss = val_loss
        else:
            lr /= 4.0
    with open(save_path, 'rb') as f:
        with torch.serialization.safe_globals(safe_globals_of(torch)):
            model = torch.load(f)
    if not is_transformer:
        model.rnn.flatten_parameters()
    test_loss = evaluate(test_data)
    print('| End of training | test loss {:5.2f} | test ppl {:8.2f}'.format(test_loss, math.exp(test_loss)))
    log("decoder", model.decoder.weight)


# pytorch/examples word_language_model/{data,model,main}.py with --model LSTM --tied (the
# encoder and decoder share one Parameter; a 2-layer LSTM) and with --model RNN_TANH; emsize =
# nhid = 4, bptt 4, dropout 0
@pytest.mark.parametrize("rnn_type", ["LSTM", "RNN_TANH"])
def test_examples_word_language_model_rnn(tmp_path, rnn_type):
    def program(torch, log):
        corpus = _wlm_corpus(torch, tmp_path)
        RNNModel, _, _ = _wlm_models(torch)
        model = RNNModel(rnn_type, len(corpus.dictionary), 4, 4, 2, 0.0, tie_weights=True)
        init_params(torch, model, 4)
        m = torch.nn.modules

        def safe_globals(torch):
            return [RNNModel, m.dropout.Dropout, m.linear.Linear, m.rnn.GRU, m.rnn.LSTM, m.rnn.RNN,
                    m.sparse.Embedding]
        _wlm_main(torch, log, corpus, model, False, tmp_path / f"{torch.__name__}.pt", safe_globals)
        log("tied", model.decoder.weight is model.encoder.weight)
    run_both(program)


# pytorch/examples word_language_model with --model Transformer (TransformerModel above: the
# float -inf/0 causal mask as src mask of a TransformerEncoder, PositionalEncoding, the whole
# model saved and loaded inside safe_globals naming nn.functional.relu and
# NonDynamicallyQuantizableLinear); emsize 4, nhid 8, 2 heads, 1 layer, dropout 0
def test_examples_word_language_model_transformer(tmp_path):
    def program(torch, log):
        corpus = _wlm_corpus(torch, tmp_path)
        _, PositionalEncoding, TransformerModel = _wlm_models(torch)
        _module_level(PositionalEncoding, torch)
        _module_level(TransformerModel, torch)
        model = init_params(torch, TransformerModel(len(corpus.dictionary), 4, 2, 8, 1, 0.0), 5)
        m = torch.nn.modules

        def safe_globals(torch):
            return [PositionalEncoding, TransformerModel, torch.nn.functional.relu,
                    m.activation.MultiheadAttention, m.container.ModuleList, m.dropout.Dropout,
                    m.linear.Linear, m.linear.NonDynamicallyQuantizableLinear,
                    m.normalization.LayerNorm, m.sparse.Embedding, m.transformer.TransformerEncoder,
                    m.transformer.TransformerEncoderLayer]
        _wlm_main(torch, log, corpus, model, True, tmp_path / f"{torch.__name__}.pt", safe_globals)
        log("src_mask", model.src_mask)
    run_both(program)


# pytorch/examples mnist_forward_forward/main.py (Hinton's forward-forward: Layer subclasses
# nn.Linear with its own Adam and overrides ``train``, as Net does; labels written into the
# first pixels by ``x_[range(n), y] = x.max()``, goodness by pow(2).mean(1), log1p(exp(cat)),
# predict over the 10 overlays with Python's sum of tensors); 16-pixel images, dims [16, 8, 8],
# the random wrong labels of get_y_neg as (y + 1) % 10, "Loss:" lines logged (full float reprs)
def test_examples_mnist_forward_forward():
    def program(torch, log):
        nn = torch.nn
        Adam = torch.optim.Adam
        lr, threshold, epochs, log_interval = 0.03, 2.0, 4, 2

        def overlay_y_on_x(x, y, classes=10):
            x_ = x.clone()
            x_[:, :classes] *= 0.0
            x_[range(x.shape[0]), y] = x.max()
            return x_

        class Net(torch.nn.Module):
            def __init__(self, dims):
                super().__init__()
                self.layers = []
                for d in range(len(dims) - 1):
                    self.layers = self.layers + [init_params(torch, Layer(dims[d], dims[d + 1]), d)]

            def predict(self, x):
                goodness_per_label = []
                for label in range(10):
                    h = overlay_y_on_x(x, label)
                    goodness = []
                    for layer in self.layers:
                        h = layer(h)
                        goodness = goodness + [h.pow(2).mean(1)]
                    goodness_per_label += [sum(goodness).unsqueeze(1)]
                goodness_per_label = torch.cat(goodness_per_label, 1)
                return goodness_per_label.argmax(1)

            def train(self, x_pos, x_neg):
                h_pos, h_neg = x_pos, x_neg
                for i, layer in enumerate(self.layers):
                    print("training layer: ", i)
                    h_pos, h_neg = layer.train(h_pos, h_neg)

        class Layer(nn.Linear):
            def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
                super().__init__(in_features, out_features, bias, device, dtype)
                self.relu = torch.nn.ReLU()
                self.opt = Adam(self.parameters(), lr=lr)
                self.threshold = threshold
                self.num_epochs = epochs

            def forward(self, x):
                x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
                return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

            def train(self, x_pos, x_neg):
                for i in range(self.num_epochs):
                    g_pos = self.forward(x_pos).pow(2).mean(1)
                    g_neg = self.forward(x_neg).pow(2).mean(1)
                    loss = torch.log1p(
                        torch.exp(
                            torch.cat([-g_pos + self.threshold, g_neg - self.threshold])
                        )
                    ).mean()
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
                    if i % log_interval == 0:
                        log("Loss: ", loss.item())
                return self.forward(x_pos).detach(), self.forward(x_neg).detach()

        flatten = lambda x: torch.flatten(x)  # noqa: E731 -- the program's transforms.Lambda
        data = _images(torch, 12, (1, 4, 4), 6)
        loader = torch.utils.data.DataLoader(
            [(flatten(x), y) for x, y in data], batch_size=8)
        net = Net([16, 8, 8])
        x, y = next(iter(loader))
        x_pos = overlay_y_on_x(x, y)
        y_neg = (y + 1) % 10
        x_neg = overlay_y_on_x(x, y_neg)
        net.train(x_pos, x_neg)
        print("train error:", 1.0 - net.predict(x).eq(y).float().mean().item())
        log("predict", net.predict(x))
    run_both(program)


# pytorch/examples dcgan/main.py (Generator of ConvTranspose2d/BatchNorm2d/ReLU(True) from nz x 1
# x 1 to 64 x 64, Discriminator of Conv2d/LeakyReLU(0.2, inplace=True)/Sigmoid with
# output.view(-1, 1).squeeze(1), weights_init through apply and class-name matching, the printed
# nets, BCELoss against torch.full labels refilled by fill_, errD_real/errD_fake backwards, the
# generator step through the non-detached fake, the '%' formatted report, state_dict saves);
# ngf = ndf = 2, nz = 3, two batches of 2 fake images, noise and init_params in place of the
# normal_ draws
def test_examples_dcgan(tmp_path):
    def program(torch, log):
        nn, optim = torch.nn, torch.optim
        nz, ngf, ndf, nc = 3, 2, 2, 3

        def weights_init(m):
            classname = m.__class__.__name__
            if classname.find('Conv') != -1:
                torch.nn.init.normal_(m.weight, 0.0, 0.02)
            elif classname.find('BatchNorm') != -1:
                torch.nn.init.normal_(m.weight, 1.0, 0.02)
                torch.nn.init.zeros_(m.bias)

        class Generator(nn.Module):
            def __init__(self, ngpu):
                super(Generator, self).__init__()
                self.ngpu = ngpu
                self.main = nn.Sequential(
                    nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False),
                    nn.BatchNorm2d(ngf * 8),
                    nn.ReLU(True),
                    nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False),
                    nn.BatchNorm2d(ngf * 4),
                    nn.ReLU(True),
                    nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
                    nn.BatchNorm2d(ngf * 2),
                    nn.ReLU(True),
                    nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
                    nn.BatchNorm2d(ngf),
                    nn.ReLU(True),
                    nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
                    nn.Tanh()
                )

            def forward(self, input):
                if (input.is_cuda or input.is_xpu) and self.ngpu > 1:
                    output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
                else:
                    output = self.main(input)
                return output

        class Discriminator(nn.Module):
            def __init__(self, ngpu):
                super(Discriminator, self).__init__()
                self.ngpu = ngpu
                self.main = nn.Sequential(
                    nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
                    nn.LeakyReLU(0.2, inplace=True),
                    nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
                    nn.BatchNorm2d(ndf * 2),
                    nn.LeakyReLU(0.2, inplace=True),
                    nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False),
                    nn.BatchNorm2d(ndf * 4),
                    nn.LeakyReLU(0.2, inplace=True),
                    nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False),
                    nn.BatchNorm2d(ndf * 8),
                    nn.LeakyReLU(0.2, inplace=True),
                    nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False),
                    nn.Sigmoid()
                )

            def forward(self, input):
                if (input.is_cuda or input.is_xpu) and self.ngpu > 1:
                    output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
                else:
                    output = self.main(input)
                return output.view(-1, 1).squeeze(1)

        device = torch.device("cpu")
        netG = Generator(1).to(device)
        netG.apply(weights_init)
        init_params(torch, netG, 7)
        print(netG)
        netD = Discriminator(1).to(device)
        netD.apply(weights_init)
        init_params(torch, netD, 8)
        print(netD)
        criterion = nn.BCELoss()
        real_label, fake_label = 1, 0
        optimizerD = optim.Adam(netD.parameters(), lr=0.0002, betas=(0.5, 0.999))
        optimizerG = optim.Adam(netG.parameters(), lr=0.0002, betas=(0.5, 0.999))
        data = _images(torch, 4, (nc, 64, 64), 9)
        dataloader = torch.utils.data.DataLoader(data, batch_size=2)
        niter, epoch = 1, 0
        for i, data in enumerate(dataloader, 0):
            netD.zero_grad()
            real_cpu = data[0].to(device) * 2 - 1
            batch_size = real_cpu.size(0)
            label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=device)
            output = netD(real_cpu)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()
            noise = randn(torch, (batch_size, nz, 1, 1), 10 + i)
            fake = netG(noise)
            label.fill_(fake_label)
            output = netD(fake.detach())
            errD_fake = criterion(output, label)
            errD_fake.backward()
            D_G_z1 = output.mean().item()
            errD = errD_real + errD_fake
            optimizerD.step()
            netG.zero_grad()
            label.fill_(real_label)
            output = netD(fake)
            errG = criterion(output, label)
            errG.backward()
            D_G_z2 = output.mean().item()
            optimizerG.step()
            print('[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f'
                  % (epoch, niter, i, len(dataloader),
                     errD.item(), errG.item(), D_x, D_G_z1, D_G_z2))
        torch.save(netG.state_dict(), '%s/netG_epoch_%d.pth' % (tmp_path, epoch))
        netG.load_state_dict(torch.load('%s/netG_epoch_%d.pth' % (tmp_path, epoch)))
        log("fake", fake[:, :, :4, :4])
        log("netD running_mean", netD.main[3].running_mean)
    run_both(program)


# pytorch/examples fast_neural_style/neural_style/{transformer_net,utils,vgg,neural_style}.py
# (TransformerNet: ReflectionPad2d + Conv2d layers, InstanceNorm2d(affine=True), five residual
# blocks, UpsampleConvLayer through F.interpolate(mode='nearest', scale_factor=2); gram_matrix
# by bmm, normalize_batch through new_tensor and an in-place div_; Vgg16's four slices filled by
# add_module and frozen by requires_grad = False, a namedtuple of features; train's content and
# style losses, Adam, the formatted report and the state_dict save); 2 images of 3 x 8 x 8, and
# a VGG-16 layout of 4-channel convolutions in place of the pretrained torchvision one
def test_examples_fast_neural_style(tmp_path):
    def program(torch, log):
        from collections import namedtuple

        class TransformerNet(torch.nn.Module):
            def __init__(self):
                super(TransformerNet, self).__init__()
                self.conv1 = ConvLayer(3, 32, kernel_size=9, stride=1)
                self.in1 = torch.nn.InstanceNorm2d(32, affine=True)
                self.conv2 = ConvLayer(32, 64, kernel_size=3, stride=2)
                self.in2 = torch.nn.InstanceNorm2d(64, affine=True)
                self.conv3 = ConvLayer(64, 128, kernel_size=3, stride=2)
                self.in3 = torch.nn.InstanceNorm2d(128, affine=True)
                self.res1 = ResidualBlock(128)
                self.res2 = ResidualBlock(128)
                self.res3 = ResidualBlock(128)
                self.res4 = ResidualBlock(128)
                self.res5 = ResidualBlock(128)
                self.deconv1 = UpsampleConvLayer(128, 64, kernel_size=3, stride=1, upsample=2)
                self.in4 = torch.nn.InstanceNorm2d(64, affine=True)
                self.deconv2 = UpsampleConvLayer(64, 32, kernel_size=3, stride=1, upsample=2)
                self.in5 = torch.nn.InstanceNorm2d(32, affine=True)
                self.deconv3 = ConvLayer(32, 3, kernel_size=9, stride=1)
                self.relu = torch.nn.ReLU()

            def forward(self, X):
                y = self.relu(self.in1(self.conv1(X)))
                y = self.relu(self.in2(self.conv2(y)))
                y = self.relu(self.in3(self.conv3(y)))
                y = self.res1(y)
                y = self.res2(y)
                y = self.res3(y)
                y = self.res4(y)
                y = self.res5(y)
                y = self.relu(self.in4(self.deconv1(y)))
                y = self.relu(self.in5(self.deconv2(y)))
                y = self.deconv3(y)
                return y

        class ConvLayer(torch.nn.Module):
            def __init__(self, in_channels, out_channels, kernel_size, stride):
                super(ConvLayer, self).__init__()
                reflection_padding = kernel_size // 2
                self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
                self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

            def forward(self, x):
                out = self.reflection_pad(x)
                out = self.conv2d(out)
                return out

        class ResidualBlock(torch.nn.Module):
            def __init__(self, channels):
                super(ResidualBlock, self).__init__()
                self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
                self.in1 = torch.nn.InstanceNorm2d(channels, affine=True)
                self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
                self.in2 = torch.nn.InstanceNorm2d(channels, affine=True)
                self.relu = torch.nn.ReLU()

            def forward(self, x):
                residual = x
                out = self.relu(self.in1(self.conv1(x)))
                out = self.in2(self.conv2(out))
                out = out + residual
                return out

        class UpsampleConvLayer(torch.nn.Module):
            def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
                super(UpsampleConvLayer, self).__init__()
                self.upsample = upsample
                reflection_padding = kernel_size // 2
                self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
                self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

            def forward(self, x):
                x_in = x
                if self.upsample:
                    x_in = torch.nn.functional.interpolate(x_in, mode='nearest', scale_factor=self.upsample)
                out = self.reflection_pad(x_in)
                out = self.conv2d(out)
                return out

        def gram_matrix(y):
            (b, ch, h, w) = y.size()
            features = y.view(b, ch, w * h)
            features_t = features.transpose(1, 2)
            gram = features.bmm(features_t) / (ch * h * w)
            return gram

        def normalize_batch(batch):
            mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
            std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
            batch = batch.div_(255.0)
            return (batch - mean) / std

        def vgg16_features():
            nn, layers, c = torch.nn, [], 3
            for item in [4, 4, "M", 4, 4, "M", 4, 4, 4, "M", 4, 4, 4]:
                if item == "M":
                    layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
                else:
                    layers += [nn.Conv2d(c, item, kernel_size=3, padding=1), nn.ReLU(inplace=True)]
                    c = item
            return init_params(torch, nn.Sequential(*layers), 11)

        class Vgg16(torch.nn.Module):
            def __init__(self, requires_grad=False):
                super(Vgg16, self).__init__()
                vgg_pretrained_features = vgg16_features()
                self.slice1 = torch.nn.Sequential()
                self.slice2 = torch.nn.Sequential()
                self.slice3 = torch.nn.Sequential()
                self.slice4 = torch.nn.Sequential()
                for x in range(4):
                    self.slice1.add_module(str(x), vgg_pretrained_features[x])
                for x in range(4, 9):
                    self.slice2.add_module(str(x), vgg_pretrained_features[x])
                for x in range(9, 16):
                    self.slice3.add_module(str(x), vgg_pretrained_features[x])
                for x in range(16, 23):
                    self.slice4.add_module(str(x), vgg_pretrained_features[x])
                if not requires_grad:
                    for param in self.parameters():
                        param.requires_grad = False

            def forward(self, X):
                h = self.slice1(X)
                h_relu1_2 = h
                h = self.slice2(h)
                h_relu2_2 = h
                h = self.slice3(h)
                h_relu3_3 = h
                h = self.slice4(h)
                h_relu4_3 = h
                vgg_outputs = namedtuple("VggOutputs", ['relu1_2', 'relu2_2', 'relu3_3', 'relu4_3'])
                out = vgg_outputs(h_relu1_2, h_relu2_2, h_relu3_3, h_relu4_3)
                return out

        device = torch.device("cpu")
        content_weight, style_weight, batch_size = 1e5, 1e10, 2
        train_dataset = _images(torch, 2, (3, 8, 8), 12)
        train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=batch_size)
        transformer = init_params(torch, TransformerNet().to(device), 13, scale=0.05)
        optimizer = torch.optim.Adam(transformer.parameters(), 1e-3)
        mse_loss = torch.nn.MSELoss()
        vgg = Vgg16(requires_grad=False).to(device)
        style = (randn(torch, (3, 8, 8), 14).abs() * 255).clamp(0, 255)
        style = style.repeat(batch_size, 1, 1, 1).to(device)
        features_style = vgg(normalize_batch(style))
        gram_style = [gram_matrix(y) for y in features_style]
        transformer.train()
        agg_content_loss = 0.
        agg_style_loss = 0.
        count = 0
        for batch_id, (x, _) in enumerate(train_loader):
            x = x.mul(255)
            n_batch = len(x)
            count += n_batch
            optimizer.zero_grad()
            x = x.to(device)
            y = transformer(x)
            y = normalize_batch(y)
            x = normalize_batch(x)
            features_y = vgg(y)
            features_x = vgg(x)
            content_loss = content_weight * mse_loss(features_y.relu2_2, features_x.relu2_2)
            style_loss = 0.
            for ft_y, gm_s in zip(features_y, gram_style):
                gm_y = gram_matrix(ft_y)
                style_loss += mse_loss(gm_y, gm_s[:n_batch, :, :])
            style_loss *= style_weight
            total_loss = content_loss + style_loss
            total_loss.backward()
            optimizer.step()
            agg_content_loss += content_loss.item()
            agg_style_loss += style_loss.item()
            log("losses", [agg_content_loss, agg_style_loss])
        transformer.eval().cpu()
        torch.save(transformer.state_dict(), tmp_path / f"{torch.__name__}.model")
        # the gradients themselves carry float32 noise of ~1e-4 (1e10 style weight over
        # instance norms of 2 x 2 maps); Adam's first step is about lr * sign(grad)
        log("deconv3 weight", transformer.deconv3.conv2d.weight[:, :2, :3, :3])
        log("in1 weight", transformer.in1.weight)
    run_both(program)


def _nanogpt(torch):
    """karpathy/nanoGPT model.py: LayerNorm with an optional bias through F.layer_norm,
    CausalSelfAttention by F.scaled_dot_product_attention(is_causal=True) after a split of
    c_attn, GPT with weight tying, apply(_init_weights), the c_proj re-init, get_num_params,
    cross_entropy(ignore_index=-1), the ``x[:, [-1], :]`` list index, configure_optimizers
    (decay groups by p.dim(), the 'fused' probe through inspect.signature(torch.optim.AdamW))
    and generate (topk, ``logits[logits < v[:, [-1]]] = -float('Inf')``, multinomial)."""
    import inspect
    from dataclasses import dataclass
    nn, F = torch.nn, torch.nn.functional

    class LayerNorm(nn.Module):
        def __init__(self, ndim, bias):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(ndim))
            self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

        def forward(self, input):
            return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)

    class CausalSelfAttention(nn.Module):
        def __init__(self, config):
            super().__init__()
            assert config.n_embd % config.n_head == 0
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
            self.attn_dropout = nn.Dropout(config.dropout)
            self.resid_dropout = nn.Dropout(config.dropout)
            self.n_head = config.n_head
            self.n_embd = config.n_embd
            self.dropout = config.dropout
            self.flash = hasattr(torch.nn.functional, 'scaled_dot_product_attention')

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            y = torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0, is_causal=True)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            y = self.resid_dropout(self.c_proj(y))
            return y

    class MLP(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
            self.dropout = nn.Dropout(config.dropout)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
            self.attn = CausalSelfAttention(config)
            self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
            self.mlp = MLP(config)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            x = x + self.mlp(self.ln_2(x))
            return x

    @dataclass
    class GPTConfig:
        block_size: int = 1024
        vocab_size: int = 50304
        n_layer: int = 12
        n_head: int = 12
        n_embd: int = 768
        dropout: float = 0.0
        bias: bool = True

    class GPT(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=LayerNorm(config.n_embd, bias=config.bias),
            ))
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith('c_proj.weight'):
                    torch.nn.init.normal_(p, mean=0.0, std=0.02/math.sqrt(2 * config.n_layer))
            print("number of parameters: %.2fM" % (self.get_num_params()/1e6,))

        def get_num_params(self, non_embedding=True):
            n_params = sum(p.numel() for p in self.parameters())
            if non_embedding:
                n_params -= self.transformer.wpe.weight.numel()
            return n_params

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets=None):
            device = idx.device
            b, t = idx.size()
            assert t <= self.config.block_size
            pos = torch.arange(0, t, dtype=torch.long, device=device)
            tok_emb = self.transformer.wte(idx)
            pos_emb = self.transformer.wpe(pos)
            x = self.transformer.drop(tok_emb + pos_emb)
            for block in self.transformer.h:
                x = block(x)
            x = self.transformer.ln_f(x)
            if targets is not None:
                logits = self.lm_head(x)
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
            else:
                logits = self.lm_head(x[:, [-1], :])
                loss = None
            return logits, loss

        def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
            param_dict = {pn: p for pn, p in self.named_parameters()}
            param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
            decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
            nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
            optim_groups = [
                {'params': decay_params, 'weight_decay': weight_decay},
                {'params': nodecay_params, 'weight_decay': 0.0}
            ]
            num_decay_params = sum(p.numel() for p in decay_params)
            num_nodecay_params = sum(p.numel() for p in nodecay_params)
            print(f"num decayed parameter tensors: {len(decay_params)}, with {num_decay_params:,} parameters")
            print(f"num non-decayed parameter tensors: {len(nodecay_params)}, with {num_nodecay_params:,} parameters")
            fused_available = 'fused' in inspect.signature(torch.optim.AdamW).parameters
            use_fused = fused_available and device_type == 'cuda'
            extra_args = dict(fused=True) if use_fused else dict()
            optimizer = torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)
            print(f"using fused AdamW: {use_fused}")
            return optimizer

        @torch.no_grad()
        def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
            for _ in range(max_new_tokens):
                idx_cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size:]
                logits, _ = self(idx_cond)
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                    logits[logits < v[:, [-1]]] = -float('Inf')
                probs = F.softmax(logits, dim=-1)
                idx_next = torch.multinomial(probs, num_samples=1)
                idx = torch.cat((idx, idx_next), dim=1)
            return idx
    return GPTConfig, GPT


# karpathy/nanoGPT model.py (above) trained as train.py does (np.memmap-style uint16 data through
# torch.from_numpy(...astype(np.int64)) and torch.stack, estimate_loss under @torch.no_grad with
# losses[k] = loss.item(), get_lr's warmup and cosine decay written into param_groups, gradient
# accumulation through torch.cuda.amp.GradScaler(enabled=(dtype == 'float16')) -- disabled with
# a warning on a machine without CUDA --, unscale_, clip_grad_norm_, zero_grad(set_to_none=True),
# the checkpoint dict saved and resumed as sample.py does: the '_orig_mod.' prefix loop,
# load_state_dict, generate; top_k=1 makes multinomial's draw the argmax). n_layer 1, n_embd 8,
# block_size 8, fixed batch offsets in place of torch.randint; compile=False (train.py's
# torch.compile ran through the alias; torch's inductor costs a minute here)
def test_nanogpt_train_and_sample(tmp_path):
    def program(torch, log):
        import warnings
        from contextlib import nullcontext
        GPTConfig, GPT = _nanogpt(torch)
        rs = np.random.RandomState(15)
        train_bin = rs.randint(0, 20, 120).astype(np.uint16)
        val_bin = rs.randint(0, 20, 60).astype(np.uint16)
        offsets = iter(rs.randint(0, 50, 10 ** 3))
        block_size, batch_size, device, device_type = 8, 2, 'cpu', 'cpu'
        eval_iters, learning_rate, min_lr, warmup_iters, lr_decay_iters = 2, 1e-2, 1e-3, 2, 6
        gradient_accumulation_steps, grad_clip, eval_interval, always_save_checkpoint = 2, 1.0, 3, True
        dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16'
        ctx = nullcontext()

        def get_batch(split):
            data = train_bin if split == 'train' else val_bin
            ix = [next(offsets) for _ in range(batch_size)]
            x = torch.stack([torch.from_numpy((data[i:i+block_size]).astype(np.int64)) for i in ix])
            y = torch.stack([torch.from_numpy((data[i+1:i+1+block_size]).astype(np.int64)) for i in ix])
            x, y = x.to(device), y.to(device)
            return x, y

        model_args = dict(n_layer=1, n_head=2, n_embd=8, block_size=block_size, bias=False,
                          vocab_size=20, dropout=0.0)
        model = GPT(GPTConfig(**model_args))
        init_params(torch, model, 16)
        model.to(device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # GradScaler is enabled but CUDA is not available
            scaler = torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))
        optimizer = model.configure_optimizers(1e-1, learning_rate, (0.9, 0.95), device_type)

        @torch.no_grad()
        def estimate_loss():
            out = {}
            model.eval()
            for split in ['train', 'val']:
                losses = torch.zeros(eval_iters)
                for k in range(eval_iters):
                    X, Y = get_batch(split)
                    with ctx:
                        logits, loss = model(X, Y)
                    losses[k] = loss.item()
                out[split] = losses.mean()
            model.train()
            return out

        def get_lr(it):
            if it < warmup_iters:
                return learning_rate * (it + 1) / (warmup_iters + 1)
            if it > lr_decay_iters:
                return min_lr
            decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
            assert 0 <= decay_ratio <= 1
            coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
            return min_lr + coeff * (learning_rate - min_lr)

        X, Y = get_batch('train')
        raw_model = model
        iter_num, best_val_loss = 0, 1e9
        while True:
            lr = get_lr(iter_num)
            for param_group in optimizer.param_groups:
                param_group['lr'] = lr
            if iter_num % eval_interval == 0:
                losses = estimate_loss()
                print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
                if losses['val'] < best_val_loss or always_save_checkpoint:
                    best_val_loss = losses['val']
                    if iter_num > 0:
                        checkpoint = {
                            'model': raw_model.state_dict(),
                            'optimizer': optimizer.state_dict(),
                            'model_args': model_args,
                            'iter_num': iter_num,
                            'best_val_loss': best_val_loss,
                        }
                        torch.save(checkpoint, tmp_path / f'{torch.__name__}.pt')
            for micro_step in range(gradient_accumulation_steps):
                with ctx:
                    logits, loss = model(X, Y)
                    loss = loss / gradient_accumulation_steps
                X, Y = get_batch('train')
                scaler.scale(loss).backward()
            if grad_clip != 0.0:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            lossf = loss.item() * gradient_accumulation_steps
            print(f"iter {iter_num}: loss {lossf:.4f}")
            iter_num += 1
            if iter_num > 4:
                break
        # sample.py
        checkpoint = torch.load(tmp_path / f'{torch.__name__}.pt', map_location=device)
        log("resumed at", [checkpoint['iter_num'], checkpoint['best_val_loss']])
        gptconf = GPTConfig(**checkpoint['model_args'])
        model = GPT(gptconf)
        state_dict = checkpoint['model']
        unwanted_prefix = '_orig_mod.'
        for k, v in list(state_dict.items()):
            if k.startswith(unwanted_prefix):
                state_dict[k[len(unwanted_prefix):]] = state_dict.pop(k)
        model.load_state_dict(state_dict)
        model.eval()
        x = (torch.tensor([3, 1, 4], dtype=torch.long, device=device)[None, ...])
        with torch.no_grad():
            with ctx:
                y = model.generate(x, 1, temperature=0.8, top_k=1)    # each new length is a new set of programs
                log("sample", y[0].tolist())
        log("exp_avg_sq", checkpoint['optimizer']['state'][0]['exp_avg_sq'])
    run_both(program)


# pytorch/tutorials recipes_source/recipes/reasoning_about_shapes.py (meta-device tensors through
# a meta Conv2d printed, a 2**10 x 3 x 2**16 x 2**16 one too, Net built and its input made
# inside ``with torch.device("meta")``, a forward hook on every named module printing the module
# and output.shape) and module_load_state_dict_tips.py (torch.load(mmap=True), a module built on
# the meta device, load_state_dict(assign=True) and its printed result, the plain route); the
# timings it prints are left out
def test_tutorials_meta_shapes_and_assign_load(tmp_path):
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        t = torch.rand(2, 3, 10, 10, device="meta")
        conv = torch.nn.Conv2d(3, 5, 2, device="meta")
        out = conv(t)
        print(out)
        t_large = torch.rand(2**10, 3, 2**16, 2**16, device="meta")
        out = conv(t_large)
        print(out)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(3, 6, 5)
                self.pool = nn.MaxPool2d(2, 2)
                self.conv2 = nn.Conv2d(6, 16, 5)
                self.fc1 = nn.Linear(16 * 5 * 5, 120)
                self.fc2 = nn.Linear(120, 84)
                self.fc3 = nn.Linear(84, 10)

            def forward(self, x):
                x = self.pool(F.relu(self.conv1(x)))
                x = self.pool(F.relu(self.conv2(x)))
                x = torch.flatten(x, 1)
                x = F.relu(self.fc1(x))
                x = F.relu(self.fc2(x))
                x = self.fc3(x)
                return x

        def fw_hook(module, input, output):
            print(f"Shape of output to {module} is {output.shape}.")

        with torch.device("meta"):
            net = Net()
            inp = torch.randn((1024, 3, 32, 32))
        for name, layer in net.named_modules():
            layer.register_forward_hook(fw_hook)
        out = net(inp)
        log("out", [out.shape, out.device.type, out.requires_grad])

        class SomeModule(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.linears = nn.ModuleList([nn.Linear(1, 1) for i in range(10)])

            def forward(self, x):
                return self.linears(x)

        m = init_params(torch, SomeModule(), 17)
        path = tmp_path / f"{torch.__name__}.pth"
        torch.save(m.state_dict(), path)
        state_dict = torch.load(path, mmap=True)
        with torch.device('meta'):
            meta_m = SomeModule()
        print(meta_m.linears[0].weight.is_meta)
        print(meta_m.load_state_dict(state_dict, assign=True))
        w = meta_m.linears[3].weight
        log("assigned", [w, type(w).__name__, w.is_meta, w is state_dict["linears.3.weight"]])
        state_dict = torch.load(path)
        m = SomeModule()
        print(m.load_state_dict(state_dict))
        log("loaded", m.linears[9].bias)
    run_both(program)


# pytorch/tutorials intermediate_source/visualizing_gradients_tutorial.py (Net of fc_layer
# Sequentials with BatchNorm1d or Identity, forward hooks on every leaf module -- ``any(
# layer.children()) is False`` -- that register a tensor hook on each output, the hooks' grads
# collected in backward order, SGD momentum, get_grads' mean absolute gradient per layer);
# 6 x 4 x 4 inputs, hidden 128 -> 8, 3 epochs in place of 10
def test_tutorials_visualizing_gradients():
    def program(torch, log):
        nn, optim, F = torch.nn, torch.optim, torch.nn.functional

        def fc_layer(in_size, out_size, norm_layer):
            return nn.Sequential(nn.Linear(in_size, out_size), norm_layer(out_size), nn.Sigmoid())

        class Net(nn.Module):
            def __init__(self, in_size=4*4, hidden_size=8, out_size=10, num_layers=3, batchnorm=False):
                super().__init__()
                if batchnorm is False:
                    norm_layer = nn.Identity
                else:
                    norm_layer = nn.BatchNorm1d
                layers = []
                layers.append(fc_layer(in_size, hidden_size, norm_layer))
                for i in range(num_layers-1):
                    layers.append(fc_layer(hidden_size, hidden_size, norm_layer))
                layers.append(nn.Linear(hidden_size, out_size))
                self.layers = nn.Sequential(*layers)

            def forward(self, x):
                x = torch.flatten(x, 1)
                return self.layers(x)

        x = randn(torch, (6, 4, 4), 18)
        y = torch.tensor(np.random.RandomState(19).randint(0, 10, 6))
        model_bn = init_params(torch, Net(batchnorm=True, num_layers=3), 20)
        model_nobn = init_params(torch, Net(batchnorm=False, num_layers=3), 21)
        model_bn.train()
        model_nobn.train()
        optimizer_bn = optim.SGD(model_bn.parameters(), lr=0.01, momentum=0.9)
        optimizer_nobn = optim.SGD(model_nobn.parameters(), lr=0.01, momentum=0.9)
        print(model_bn.layers[0])
        print(model_nobn.layers[0])

        def hook_forward(module_name, grads, hook_backward):
            def hook(module, args, output):
                output.register_hook(hook_backward(module_name, grads))
            return hook

        def hook_backward(module_name, grads):
            def hook(grad):
                grads.append((module_name, grad))
            return hook

        def get_all_layers(model, hook_forward, hook_backward):
            layers = dict()
            grads = []
            for name, layer in model.named_modules():
                if any(layer.children()) is False:
                    layers[layer] = name
                    layer.register_forward_hook(hook_forward(name, grads, hook_backward))
            return layers, grads

        layers_bn, grads_bn = get_all_layers(model_bn, hook_forward, hook_backward)
        layers_nobn, grads_nobn = get_all_layers(model_nobn, hook_forward, hook_backward)
        log("layers", [list(layers_bn.values()), list(layers_nobn.values())])
        for epoch in range(3):
            grads_bn.clear()
            grads_nobn.clear()
            optimizer_bn.zero_grad()
            optimizer_nobn.zero_grad()
            y_pred_bn = model_bn(x)
            y_pred_nobn = model_nobn(x)
            loss_bn = F.cross_entropy(y_pred_bn, y)
            loss_nobn = F.cross_entropy(y_pred_nobn, y)
            loss_bn.backward()
            loss_nobn.backward()
            optimizer_bn.step()
            optimizer_nobn.step()
            log("losses", [loss_bn, loss_nobn])

        def get_grads(grads):
            layer_idx = []
            avg_grads = []
            for idx, (name, grad) in enumerate(grads):
                if grad is not None:
                    avg_grad = grad.abs().mean()
                    avg_grads.append(avg_grad)
                    layer_idx.append(len(grads) - 1 - idx)
            return layer_idx, avg_grads

        log("bn", get_grads(grads_bn))
        log("nobn", get_grads(grads_nobn))
        log("names", [name for name, _ in grads_bn])
    run_both(program)


# HarshTrivedi/packing-unpacking-pytorch-minimal-tutorial pad_packed_demo.py (a char vocabulary,
# Variable(torch.zeros(...)).long() filled row by row from LongTensors, sort(0, descending=True)
# and reindexing, pack_padded_sequence with lengths as a numpy array, a batch_first LSTM on the
# PackedSequence, pad_packed_sequence, ht[-1]), unixnme/variable_length_sequence example.py
# (pack_sequence of (L, 1) tensors, the printed PackedSequence, pad_packed_sequence's time-major
# result) and wangboyu-langya/bilstm-sentiment-analysis-twitter test.py (FloatTensor(...)
# .resize_(2, 3, 1), pack_padded_sequence with a list of lengths, a bidirectional batch_first RNN
# from h0, the unpacked pair printed); the module parameters and h0 from numpy, and the gradient
# of the unpacked output added. unixnme's padded result is logged, not printed: torch's
# pad_packed_sequence output has grad_fn CopySlices, tracegrad's IndexBackward0 (a gather)
def test_packed_sequence_demos():
    def program(torch, log):
        LongTensor, Embedding, LSTM = torch.LongTensor, torch.nn.Embedding, torch.nn.LSTM
        Variable = torch.autograd.Variable
        rnn_utils = nn_utils_rnn = torch.nn.utils.rnn
        pack_padded_sequence, pad_packed_sequence = rnn_utils.pack_padded_sequence, rnn_utils.pad_packed_sequence
        nn = torch.nn

        seqs = ['long_str', 'tiny', 'medium']
        vocab = ['<pad>'] + sorted([char for seq in seqs for char in seq])
        vectorized_seqs = [[vocab.index(tok) for tok in seq]for seq in seqs]
        embed = init_params(torch, Embedding(len(vocab), 4), 22, scale=1.0)
        lstm = init_params(torch, LSTM(input_size=4, hidden_size=5, batch_first=True), 23, scale=0.5)
        seq_lengths = LongTensor(list(map(len, vectorized_seqs)))
        seq_tensor = Variable(torch.zeros((len(vectorized_seqs), seq_lengths.max()))).long()
        for idx, (seq, seqlen) in enumerate(zip(vectorized_seqs, seq_lengths)):
            seq_tensor[idx, :seqlen] = LongTensor(seq)
        seq_lengths, perm_idx = seq_lengths.sort(0, descending=True)
        seq_tensor = seq_tensor[perm_idx]
        embedded_seq_tensor = embed(seq_tensor)
        packed_input = pack_padded_sequence(embedded_seq_tensor, seq_lengths.cpu().numpy(), batch_first=True)
        print(packed_input.batch_sizes, packed_input.data.shape)
        packed_output, (ht, ct) = lstm(packed_input)
        output, input_sizes = pad_packed_sequence(packed_output, batch_first=True)
        print(output)
        print(input_sizes)
        print(ht[-1])

        a = torch.Tensor([[1], [2], [3], [0]])
        b = torch.Tensor([[4], [5]])
        c = torch.Tensor([[6]])
        packed = rnn_utils.pack_sequence([a, b, c])
        print(packed)
        lstm = init_params(torch, nn.LSTM(1, 3), 24, scale=0.5)
        packed_output, (h, c) = lstm(packed)
        y = rnn_utils.pad_packed_sequence(packed_output)
        log("y", y)

        batch_size, hidden_size, n_layers, bidirectional = 2, 5, 1, True
        tensor_in = torch.FloatTensor([[1, 2, 3], [1, 0, 0]]).resize_(2, 3, 1)
        tensor_in = Variable(tensor_in)
        seq_lengths = [3, 1]
        pack = nn_utils_rnn.pack_padded_sequence(tensor_in, seq_lengths, batch_first=True)
        rnn = init_params(torch, nn.RNN(1, hidden_size, n_layers, batch_first=True, bidirectional=bidirectional), 25)
        h0 = Variable(randn(torch, (n_layers * 2, batch_size, hidden_size), 26))
        out, _ = rnn(pack, h0)
        unpacked = nn_utils_rnn.pad_packed_sequence(out, batch_first=True)
        print(unpacked[0].data.shape)
        print(unpacked[1])
        print('111', unpacked)
        unpacked[0].sum().backward()
        log("weight_hh_l0_reverse grad", rnn.weight_hh_l0_reverse.grad)
    run_both(program)


# pytorch/pytorch functorch/examples/lennard_jones/lennard_jones.py (linspace with
# requires_grad, torch.outer, energies by torch.stack(list(map(...))), forces from
# vmap(jacrev(model)) of a Tanh MLP, mse_loss, backward(retain_graph=True), Adam, the printed
# loss.cpu().item()); jacrev/vmap from torch.func (functorch's names for them), 20 points in
# place of linspace's default 100, 6 epochs logging every 5th. The forces' gradient reaches the
# model's parameters through vmap(jacrev(model)) (a transform of the module itself)
def test_functorch_lennard_jones():
    def program(torch, log):
        nn = torch.nn
        mse_loss = torch.nn.functional.mse_loss
        jacrev, vmap = torch.func.jacrev, torch.func.vmap
        sigma = 0.5
        epsilon = 4.

        def lennard_jones(r):
            return epsilon * ((sigma / r)**12 - (sigma / r)**6)

        def lennard_jones_force(r):
            return -epsilon * ((-12 * sigma**12 / r**13) + (6 * sigma**6 / r**7))

        r = torch.linspace(0.5, 2 * sigma, 20, requires_grad=True)
        drs = torch.outer(r, torch.tensor([1.0, 0, 0]))
        norms = torch.norm(drs, dim=1).reshape(-1, 1)
        training_energies = torch.stack(list(map(lennard_jones, norms))).reshape(-1, 1)
        training_forces = torch.stack([force * dr for force, dr in zip(map(lennard_jones_force, norms), drs)])
        model = init_params(torch, nn.Sequential(
            nn.Linear(1, 16),
            nn.Tanh(),
            nn.Linear(16, 16),
            nn.Tanh(),
            nn.Linear(16, 1)
        ), 27)

        def make_prediction(model, drs):
            norms = torch.norm(drs, dim=1).reshape(-1, 1)
            energies = model(norms)
            network_derivs = vmap(jacrev(model))(norms).squeeze(-1)
            forces = -network_derivs * drs / norms
            return energies, forces

        def loss_fn(energies, forces, predicted_energies, predicted_forces):
            return mse_loss(energies, predicted_energies) + 0.01 * mse_loss(forces, predicted_forces) / 3

        optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
        for epoch in range(6):
            optimiser.zero_grad()
            energies, forces = make_prediction(model, drs)
            loss = loss_fn(training_energies, training_forces, energies, forces)
            loss.backward(retain_graph=True)
            optimiser.step()
            if epoch % 5 == 0:
                log("loss", loss.cpu().item())
        log("r.grad", r.grad)
        log("fc0", model[0].weight)
    run_both(program)


# pytorch/pytorch functorch/examples/maml_regression/evjang_transforms.py (MAML on sine tasks:
# params as torch.Tensor(...).uniform_(...).requires_grad_() and zero_(), grad of the inner loss
# over a tuple of params inside vmap over tasks, ``sum(inner_losses) / len(inner_losses)``,
# Adam on the outer loss, '%.4f' % a 0-d tensor; the fine-tuning by autograd.grad(
# create_graph=True) and the test curve) and evjang.py (the same with autograd.grad(
# create_graph=True) per task in a Python loop); 40 hidden -> 8, 4 iterations, the tasks and the
# uniform_ draws from numpy (np.random.uniform as the program, under a fixed seed)
def test_functorch_maml_regression():
    def program(torch, log):
        F = torch.nn.functional
        grad, vmap = torch.func.grad, torch.func.vmap
        np.random.seed(28)
        H = 8

        def net(params, x):
            x = F.linear(x, params[0], params[1])
            x = F.relu(x)
            x = F.linear(x, params[2], params[3])
            x = F.relu(x)
            x = F.linear(x, params[4], params[5])
            return x

        def uniform(shape, lo, hi):
            return torch.tensor(np.random.uniform(lo, hi, shape).astype(np.float32))

        params = [
            torch.Tensor(H, 1).copy_(uniform((H, 1), -1., 1.)).requires_grad_(),
            torch.Tensor(H).zero_().requires_grad_(),
            torch.Tensor(H, H).copy_(uniform((H, H), -1. / math.sqrt(H), 1. / math.sqrt(H))).requires_grad_(),
            torch.Tensor(H).zero_().requires_grad_(),
            torch.Tensor(1, H).copy_(uniform((1, H), -1. / math.sqrt(H), 1. / math.sqrt(H))).requires_grad_(),
            torch.Tensor(1).zero_().requires_grad_(),
        ]

        def mse_loss(x, y):
            return torch.mean((x - y) ** 2)

        opt = torch.optim.Adam(params, lr=1e-3)
        alpha, K, num_tasks = 0.1, 5, 3
        losses = []

        def sample_tasks(outer_batch_size, inner_batch_size):
            As = []
            phases = []
            for _ in range(outer_batch_size):
                As.append(np.random.uniform(low=0.1, high=.5))
                phases.append(np.random.uniform(low=0., high=np.pi))

            def get_batch():
                xs, ys = [], []
                for A, phase in zip(As, phases):
                    x = np.random.uniform(low=-5., high=5., size=(inner_batch_size, 1))
                    y = A * np.sin(x + phase)
                    xs.append(x)
                    ys.append(y)
                return torch.tensor(np.array(xs), dtype=torch.float), torch.tensor(np.array(ys), dtype=torch.float)
            x1, y1 = get_batch()
            x2, y2 = get_batch()
            return x1, y1, x2, y2

        for it in range(4):
            loss2 = 0.0
            opt.zero_grad()

            def get_loss_for_task(x1, y1, x2, y2):
                def inner_loss(params, x1, y1):
                    f = net(params, x1)
                    loss = mse_loss(f, y1)
                    return loss

                grads = grad(inner_loss)(tuple(params), x1, y1)
                new_params = [(params[i] - alpha * grads[i]) for i in range(len(params))]
                v_f = net(new_params, x2)
                return mse_loss(v_f, y2)

            task = sample_tasks(num_tasks, K)
            inner_losses = vmap(get_loss_for_task)(task[0], task[1], task[2], task[3])
            loss2 = sum(inner_losses) / len(inner_losses)
            loss2.backward()
            opt.step()
            print('Iteration %d -- Outer Loss: %.4f' % (it, loss2))
            losses.append(loss2.detach())

        # evjang.py's outer step: autograd.grad(create_graph=True) task by task
        opt.zero_grad()
        x1, y1, x2, y2 = sample_tasks(num_tasks, K)
        loss2 = 0.0
        for i in range(num_tasks):
            f = net(params, x1[i])
            loss1 = mse_loss(f, y1[i])
            grads = torch.autograd.grad(loss1, params, create_graph=True)
            p2 = [(params[j] - alpha * grads[j]) for j in range(len(params))]
            loss2 = loss2 + mse_loss(net(p2, x2[i]), y2[i])
        loss2 = loss2 / num_tasks
        loss2.backward()
        log("outer grads", [p.grad for p in params])

        t_A = torch.tensor(0.3)
        t_b = torch.tensor(1.0)
        t_x = uniform((4, 1), -5, 5)
        t_y = t_A * torch.sin(t_x + t_b)
        opt.zero_grad()
        t_params = params
        for k in range(5):
            t_f = net(t_params, t_x)
            t_loss = F.l1_loss(t_f, t_y)
            grads = torch.autograd.grad(t_loss, t_params, create_graph=True)
            t_params = [(t_params[i] - alpha * grads[i]) for i in range(len(params))]
        test_x = torch.arange(-2 * math.pi, 2 * math.pi, step=0.5).unsqueeze(1)
        test_f = net(t_params, test_x)
        log("test_f", test_f.data.numpy())
        log("losses", losses)
    run_both(program)


# pytorch/pytorch functorch/examples/ensembling/parallel_train.py (make_spirals, MLPClassifier
# with log_softmax, train_step_fn: grad_and_value of a functional_call loss over a params dict,
# SGD written under no_grad into a new dict; step4 on the model's own named_parameters (which
# never change: it trains from them anew each step, as written), step6 through vmap(in_dims=(0,
# None, None)) over stack_module_state of two models); 20 points, hidden 32 -> 8, 3 steps each;
# randint/randn of make_spirals from numpy. The program prints the losses: their grad_fn is
# torch's NllLossBackward0, tracegrad's FuncTransformBackward (a transform is one node), so they
# are logged; and step6's later losses do not require grad in torch (the weights were made under
# no_grad inside the transform) but do in tracegrad (every output of the node does)
def test_functorch_parallel_train():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        functional_call, grad_and_value = torch.func.functional_call, torch.func.grad_and_value
        vmap, stack_module_state = torch.func.vmap, torch.func.stack_module_state
        DEVICE = "cpu"

        def make_spirals(n_samples, noise_std=0., rotations=1.):
            ts = torch.linspace(0, 1, n_samples, device=DEVICE)
            rs = ts ** 0.5
            thetas = rs * rotations * 2 * math.pi
            signs = torch.tensor(np.random.RandomState(29).randint(0, 2, (n_samples,)), device=DEVICE) * 2 - 1
            labels = (signs > 0).to(torch.long).to(DEVICE)
            xs = rs * signs * torch.cos(thetas) + randn(torch, (n_samples,), 30) * noise_std
            ys = rs * signs * torch.sin(thetas) + randn(torch, (n_samples,), 31) * noise_std
            points = torch.stack([xs, ys], dim=1)
            return points, labels

        points, labels = make_spirals(20, noise_std=0.05)

        class MLPClassifier(nn.Module):
            def __init__(self, hidden_dim=8, n_classes=2):
                super().__init__()
                self.hidden_dim = hidden_dim
                self.n_classes = n_classes
                self.fc1 = nn.Linear(2, self.hidden_dim)
                self.fc2 = nn.Linear(self.hidden_dim, self.n_classes)

            def forward(self, x):
                x = self.fc1(x)
                x = F.relu(x)
                x = self.fc2(x)
                x = F.log_softmax(x, -1)
                return x

        loss_fn = nn.NLLLoss()
        model = init_params(torch, MLPClassifier().to(DEVICE), 32)

        def train_step_fn(weights, batch, targets, lr=0.2):
            def compute_loss(weights, batch, targets):
                output = functional_call(model, weights, batch)
                loss = loss_fn(output, targets)
                return loss

            grad_weights, loss = grad_and_value(compute_loss)(weights, batch, targets)
            new_weights = {}
            with torch.no_grad():
                for key in grad_weights:
                    new_weights[key] = weights[key] - grad_weights[key] * lr
            return loss, new_weights

        for i in range(3):
            loss, weights = train_step_fn(dict(model.named_parameters()), points, labels)
            log("loss", loss)
        log("weights", weights)

        def init_fn(num_models):
            models = [init_params(torch, MLPClassifier().to(DEVICE), 33 + k) for k in range(num_models)]
            params, _ = stack_module_state(models)
            return params

        parallel_train_step_fn = vmap(train_step_fn, in_dims=(0, None, None))
        batched_weights = init_fn(num_models=2)
        for i in range(3):
            loss, batched_weights = parallel_train_step_fn(batched_weights, points, labels)
            log("losses", loss)
        log("batched_weights", batched_weights)
    run_both(program)
