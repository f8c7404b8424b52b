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

from parity import init_params, np_randn, randn, run_both

torch = pytest.importorskip("torch")


def _images(torch, n, shape, seed, classes=10):
    """A stand-in torchvision dataset: ``n`` uniform images of ``shape`` and integer labels, as a
    TensorDataset."""
    rs = np.random.RandomState(seed)
    x = torch.tensor(rs.rand(n, *shape).astype(np.float32))
    y = torch.tensor(rs.randint(0, classes, n))
    return torch.utils.data.TensorDataset(x, y)


def _mnist_loops(torch, F, log_interval=1):
    """pytorch/examples mnist/main.py's train and test functions (mnist_rnn/main.py has the same
    two with a dry_run break in test)."""
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
    return train, test


# pytorch/examples mnist/main.py (Conv2d/max_pool2d/flatten Net with log_softmax, Adadelta at
# lr=1.0 stepped down by StepLR(gamma=0.7), the train/test loops with their formatted prints over
# DataLoaders, torch.device("cpu")); 1x10x10 images, 4/8 channels, 16 hidden units
def test_examples_mnist():
    def program(torch, log):
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim
        StepLR = torch.optim.lr_scheduler.StepLR

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

        train, test = _mnist_loops(torch, F)
        device = torch.device("cpu")
        train_loader = torch.utils.data.DataLoader(_images(torch, 12, (1, 10, 10), 0), batch_size=4)
        test_loader = torch.utils.data.DataLoader(_images(torch, 8, (1, 10, 10), 1), batch_size=5)
        model = init_params(torch, Net().to(device), 0)
        optimizer = optim.Adadelta(model.parameters(), lr=1.0)
        scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
        for epoch in range(1, 3):
            train(model, device, train_loader, optimizer, epoch)
            test(model, device, test_loader)
            scheduler.step()
            log("lr", scheduler.get_last_lr())
        log("fc2", model.fc2.weight)
    run_both(program)


# pytorch/examples mnist_rnn/main.py (batch_first LSTM over image rows, the last step through
# BatchNorm1d, Dropout2d on a 2-D input, Adadelta + StepLR, the same train/test loops); 6x6
# images, hidden 64 -> 8
def test_examples_mnist_rnn():
    def program(torch, log):
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim
        StepLR = torch.optim.lr_scheduler.StepLR

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

        train, test = _mnist_loops(torch, F, log_interval=2)
        device = torch.device("cpu")
        train_loader = torch.utils.data.DataLoader(_images(torch, 12, (1, 6, 6), 2), batch_size=4)
        test_loader = torch.utils.data.DataLoader(_images(torch, 6, (1, 6, 6), 3), batch_size=6)
        model = init_params(torch, Net().to(device), 1)
        optimizer = optim.Adadelta(model.parameters(), lr=0.1)
        scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
        for epoch in range(1, 3):
            train(model, device, train_loader, optimizer, epoch)
            test(model, device, test_loader)
            scheduler.step()
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
