"""Sources of the round-63 public programs (tests/api/test_public_programs_round63.py and
tests/compile/test_public_patterns_round63.py), executed with ``torch`` bound to torch or
tracegrad by ``program(T, SRC)``. Kept as in their repositories apart from the ``import`` lines
(the names are given as globals) and the changes noted in place; see the test files for the
repositories, paths, commits and licenses (MIT, and two without a license file)."""
import csv

import public_programs_round62_src as _r62


def program(T, src, **extra):
    """Execute a program source with round 62's globals (``torch``, ``nn``, ``F``, ``optim``,
    ``np``, ``math``, ``DataLoader``, ...) plus the names these programs import (``csv``,
    ``Dataset``, ``TensorDataset``, ``pad_sequence``)."""
    data = T.utils.data
    names = {"csv": csv, "Dataset": data.Dataset, "TensorDataset": data.TensorDataset,
             "pad_sequence": T.nn.utils.rnn.pad_sequence}
    return _r62.program(T, src, **{**names, **extra})


# MaximeVandegar/Papers-in-100-Lines-of-Code (MIT)
# Masked_Autoregressive_Flow_for_Density_Estimation/maf.py at 96abe72 up to its ``__main__``
# block (which loads MNIST from keras, trains a 784-dimensional flow on "cuda" for 101 epochs and
# plots: the tests drive its loop body at tiny sizes)
MAF_MV = r'''
def create_mask(in_deg, out_deg):
    return (in_deg[None, :] <= out_deg[:, None]).float()

def std_normal_logprob(z):
    D = z.shape[1]
    return -0.5 * (z**2).sum(dim=1) - 0.5 * D * math.log(2 * math.pi)

class BatchNorm(nn.Module):
    def __init__(self, features, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.beta = nn.Parameter(torch.zeros(1, features))
        self.gamma = nn.Parameter(torch.zeros(1, features))
        self.register_buffer("mean", torch.zeros(1, features))
        self.register_buffer("var",  torch.ones(1, features))
        # accumulators for calibration (collecting statistics from full training data)
        self._collecting = False
        self.register_buffer("_sum",   torch.zeros(1, features))
        self.register_buffer("_sum_of_square", torch.zeros(1, features))
        self.register_buffer("_count", torch.zeros(1, 1))

    def begin_calibration(self):
        self._collecting = True
        self._sum.zero_()
        self._sum_of_square.zero_()
        self._count.zero_()

    def end_calibration(self):
        total = self._count.item()
        if total > 0:
            mean = self._sum / total
            var = (self._sum_of_square / total) - mean**2
            var.clamp_(min=self.eps)
            self.mean.copy_(mean)
            self.var.copy_(var)
        self._collecting = False

    def _compute_batch_stats(self, x):
        m = x.mean(0, keepdim=True)
        v = x.var(0, unbiased=False, keepdim=True)
        return m, v

    def forward(self, x):
        if self._collecting:
            self._sum += x.sum(0, keepdim=True)
            self._sum_of_square += (x**2).sum(0, keepdim=True)
            self._count += torch.tensor([[x.size(0)]], dtype=x.dtype, device=x.device)
            m, v = self._compute_batch_stats(x)
        elif self.training:
            m, v = self._compute_batch_stats(x)
        else:
            m, v = self.mean, self.var

        u = (x - m) * torch.rsqrt(v + self.eps) * torch.exp(self.gamma) + self.beta
        ld = (self.gamma - 0.5 * torch.log(v + self.eps)).sum(dim=1).expand(x.size(0))
        return u, ld

    def inverse(self, u):
        m, v = self.mean, self.var
        x = (u - self.beta) * torch.sqrt(v + self.eps) * torch.exp(-self.gamma) + m
        return x

class MaskedLinear(nn.Linear):
    def __init__(self, in_features, out_features, mask, bias=True):
        super().__init__(in_features, out_features, bias)
        self.register_buffer("mask", mask)

    def forward(self, x):
        return F.linear(x, self.weight * self.mask, self.bias)

class MADE(nn.Module):
    def __init__(self, features, hidden_features, hidden_layers=2):
        super().__init__()
        self.features = features
        self.hidden_layers = hidden_layers

        ordering = torch.arange(features) + 1  # degrees in {1..D}
        self.hidden_degrees = []  # Hidden degrees in {1..D-1}
        for _ in range(hidden_layers):
            deg = torch.randint(1, features, (hidden_features,))  # [1, D-1]
            self.hidden_degrees.append(deg)
        out_deg = torch.cat([ordering - 1, ordering - 1], dim=0)  # for mean and log_scale

        layers = [MaskedLinear(features, hidden_features, create_mask(ordering, self.hidden_degrees[0])), nn.ReLU()]
        for i in range(hidden_layers-1):
            layers += [MaskedLinear(hidden_features, hidden_features,
                                    create_mask(self.hidden_degrees[i], self.hidden_degrees[i+1])), nn.ReLU()]
        layers.append(MaskedLinear(hidden_features, 2*features, create_mask(self.hidden_degrees[-1], out_deg)))
        self.net = nn.Sequential(*layers)

    def forward(self, y):
        shift, log_scale = self.net(y).chunk(2, dim=1)
        z = (y - shift) * torch.exp(-log_scale)
        ld = -log_scale.sum(dim=1)
        return z, ld

    def inverse(self, z):
        y = torch.zeros_like(z)
        for j in range(self.features):
            shift, log_scale = self.net(y).chunk(2, dim=1)
            y[:, j] = shift[:, j] + z[:, j] * torch.exp(log_scale[:, j].clamp(-10.0, 10.0))
        return y

class ReversePermutation(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.register_buffer("perm", torch.arange(features-1, -1, -1).long())

    def forward(self, x):
        return x[:, self.perm], torch.zeros(x.size(0), device=x.device)

    def inverse(self, x):
        return x[:, self.perm]


class MAF(nn.Module):
    def __init__(self, features, hidden_features, num_layers=10, hidden_layers=2):
        super().__init__()
        self.transforms = nn.ModuleList()
        for i in range(num_layers):
            self.transforms.append(MADE(features, hidden_features, hidden_layers))
            self.transforms.append(BatchNorm(features))
            if i < num_layers - 1:
                self.transforms.append(ReversePermutation(features))

    def forward_and_logdet(self, y):
        z, ld_sum = y, torch.zeros(y.size(0), device=y.device)
        for t in self.transforms:
            z, ld = t(z)
            ld_sum += ld
        return z, ld_sum

    def invert(self, z):
        x = z
        for t in reversed(self.transforms):
            x = t.inverse(x)
        return x

    def begin_calibration(self):
        for t in self.transforms:
            if isinstance(t, BatchNorm):
                t.begin_calibration()

    def end_calibration(self):
        for t in self.transforms:
            if isinstance(t, BatchNorm):
                t.end_calibration()

class LogitTransform1d(nn.Module):
    def __init__(self, alpha=0.05):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, reverse=False):
        B, D = x.shape
        if not reverse:
            a = self.alpha
            s = a + (1 - 2*a) * x
            s = s.clamp(1e-12, 1-1e-12)
            y = torch.log(s) - torch.log(1 - s)
            ld = (math.log(1 - 2 * a) * D) - (torch.log(s) + torch.log(1 - s)).sum(dim=1)
            return y, ld
        else:
            s = torch.sigmoid(x)
            a = self.alpha
            x = (s - a) / (1 - 2 * a)
            s = s.clamp(1e-12, 1-1e-12)
            ld = -(math.log(1 - 2 * a) * D) + (torch.log(s) + torch.log(1 - s)).sum(dim=1)
            return x, ld
'''

# aniruddh93/flow_models (no license file) maf.py at d4e5152, whole
MAF_AN = r'''
# Implementation of Masked Auto-regressive Flow (MAF) model trained on moons dataset.
# MAF is implemented using 5 flows, each flow modelled as Masked Auto-regressive Density Estimator (MADE)
# with one hidden layer.



class MaskedLinear(nn.Linear):
    """Implements a linear layer with masking."""

    def __init__(self, input_size, output_size, mask):
        super().__init__(input_size, output_size)
        self.register_buffer("mask", mask)

    def forward(self, x):
        return F.linear(x, self.mask * self.weight, self.bias)
    

class PermuteLayer(nn.Module):
    """Flips ordering of input and returns it.
    An extra output of all zeros is returned so that number of outputs between
    MADE and PermuteLayer are same, so that they can be chained sequentially.
    """

    def __init__(self):
        super().__init__()

    def forward(self, input):
        return torch.flip(input, -1)
    
    def inverse(self, input):
        return torch.flip(input, [-1]), torch.zeros(input.shape[0], 1)
    
    

class MADE(nn.Module):
    """Implements single layer of MADE."""

    def __init__(self, n_hidden, input_size, hidden_size):
        super().__init__()
        self.input_size = input_size
        masks = self.create_masks(n_hidden, input_size, hidden_size)
        layers = [MaskedLinear(input_size, hidden_size, masks[0])]

        for idx in range(n_hidden - 1):
            l = MaskedLinear(hidden_size, hidden_size, masks[idx + 1])
            layers.append(l)

        l = MaskedLinear(hidden_size, 2*input_size, masks[-1])
        layers.append(l)

        self.net = nn.Sequential(*layers)


    def create_masks(self, n_hidden, input_size, hidden_size):
        # input activation
        # indices refers to index assigned to node
        indices = [torch.arange(0, input_size)]

        # hidden activation
        for h in range(n_hidden):
            # (input_size -1) since we don't want input to be copied to output
            t = (h + torch.arange(0, hidden_size)) % (input_size - 1)    
            indices.append(t)

        # output activation
        t = torch.arange(0, 2*input_size)
        indices.append(t)

        # for temp in range(len(indices)):
        #     print(f'indices[{temp}]: {indices[temp]}')

        # generate masks 
        # if index of output <= index of input then mask = 1, otherwise mask = 0
        d_in = indices[:-1]
        d_out = indices[1:]
        masks = []

        for i in range(n_hidden + 1):
            m = (d_out[i].unsqueeze(-1) >= d_in[i].unsqueeze(0)).float()
            masks.append(m)

        return masks
    

    def inverse(self, x):
        """Defines the inverse function for MADE : z = (x-mu)* exp(-sigma)"""

        t = self.net(x)
        mu = t[:, :self.input_size]
        sigma = t[:, self.input_size:]
        z = (x - mu) * torch.exp(-sigma)
        log_det = -torch.sum(sigma, dim=-1)
        return z, log_det
    
    
    def forward(self, z):
        """Defines the forward function for MADE: x = mu + z*exp(sigma)"""

        x = torch.zeros_like(z)

        for i in range(self.input_size):
            t = self.net(x)
            mu = t[:, :self.input_size]
            sigma = t[:, self.input_size:]
            x = mu + z * torch.exp(sigma)

        return x
    

class MAF(nn.Module):
    """Implementation of Masked Auto-regressive Flow (MAF) using multiple flow networks."""

    def __init__(self, num_flows, input_size, hidden_size, n_hidden):
        super().__init__()
        self.flows = []
        self.input_size = input_size

        for _ in range(num_flows - 1):
            self.flows.append(MADE(n_hidden, input_size, hidden_size))
            self.flows.append(PermuteLayer())

        self.flows.append(MADE(n_hidden, input_size, hidden_size))
        self.flow_model = nn.Sequential(*self.flows)
        self.base_dist = torch.distributions.normal.Normal(0, 1)

    
    def log_prob(self, x):
        batch_size = x.shape[0]
        sum_log_det = torch.zeros(batch_size, dtype=torch.float)

        for flow in self.flow_model:
            z, log_det = flow.inverse(x)
            sum_log_det += torch.squeeze(log_det)
            x = z

        first_term = torch.sum(self.base_dist.log_prob(x), dim=-1)
        final_logprob = torch.sum(first_term + sum_log_det) / batch_size
        return final_logprob
    
    
    def loss(self, x):
        return -self.log_prob(x)
    
    
    def sample(self, batch_size=1):
        z = torch.randn(batch_size, self.input_size)

        for flow in self.flow_model:
            z = flow.forward(z)

        return z.numpy()


        
class MoonsDataset(Dataset):
    """Moons dataset from Kaggle (created using make_moons() api from Sklearn).
    Contains the (x,y) positions of two non-intersecting semi-circles.
    """

    def __init__(self, path, is_train: bool):
        super().__init__()
        self.path = path
        self.train_split = 0.8
        self.is_train = is_train
        
        with open(path, 'r', newline='') as csv_file:
            reader = csv.DictReader(csv_file)
            self.rows = list(reader)

    
    def __len__(self):
        if self.is_train:
            return int(self.train_split * len(self.rows))
        else:
            return int((1 - self.train_split) * len(self.rows))
        
    
    def __getitem__(self, index):
        if not self.is_train:
            index = int(self.train_split * len(self.rows)) + 1 + index
            
        row = self.rows[index]
        return torch.tensor([float(row['X1']), float(row['X2'])], dtype=torch.float)
    

def train(maf: MAF, path: str, batch_size: int, num_epochs: int):
    maf.train()
    train_dataset = MoonsDataset(path, is_train=True)
    train_dataloader = DataLoader(train_dataset, batch_size, shuffle=True)
    optimizer = torch.optim.Adam(maf.parameters(), lr=1e-3)

    val_dataset = MoonsDataset(path, is_train=False)
    val_dataloader = DataLoader(val_dataset, batch_size, shuffle=True)
    
    for epoch in range(num_epochs):
        # train
        for batch, x in enumerate(train_dataloader):
            optimizer.zero_grad()
            loss = maf.loss(x)
            print(f'epoch: {epoch} batch: {batch}, train_loss: {loss}')
            
            loss.backward()
            optimizer.step()

        # validation
        maf.eval()
        loss = 0.0
        for batch, x in enumerate(val_dataloader):
            loss += maf.loss(x)

        loss = loss / len(val_dataloader)
        print(f'val_loss: {loss}')
        
        

def main():
    # model params
    input_size = 2
    hidden_size = 10
    n_hidden = 1
    num_flows = 5

    # training params
    data_path = '/kaggle/input/sklearn-moons-data-set/cluster_moons.csv'
    batch_size = 4
    num_epochs = 2

    maf = MAF(num_flows, input_size, hidden_size, n_hidden)
    train(maf, path, batch_size, num_epochs)


    

if __name__ == "__main__":
    main()

'''

# gabinho991/CS598 (no license file) model/attention.py, model/encoder.py, model/decoder.py and
# model/seq2seq.py at 707a66f, in that order
S2S_MODEL = r'''
class Attention(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.attn = nn.Linear(hidden_size * 3, hidden_size)
        self.v = nn.Parameter(torch.rand(hidden_size))

    def forward(self, hidden, encoder_outputs):
        src_len = encoder_outputs.shape[0]
        hidden = hidden.repeat(src_len, 1, 1)
        energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
        energy = energy.permute(1, 2, 0)
        v = self.v.repeat(encoder_outputs.shape[1], 1).unsqueeze(1)
        attn_weights = torch.bmm(v, energy).squeeze(1)
        return F.softmax(attn_weights, dim=1)
class Encoder(nn.Module):
    def __init__(self, input_dim, emb_dim, hid_dim):
        super().__init__()
        self.embedding = nn.Embedding(input_dim, emb_dim)
        self.rnn = nn.LSTM(emb_dim, hid_dim, bidirectional=True)
        self.fc = nn.Linear(hid_dim * 2, hid_dim)

    def forward(self, src):
        embedded = self.embedding(src)
        outputs, (hidden, cell) = self.rnn(embedded)
        hidden = self.fc(torch.cat((hidden[-2], hidden[-1]), dim=1)).unsqueeze(0)
        return outputs, hidden

class Decoder(nn.Module):
    def __init__(self, output_dim, emb_dim, hid_dim, attention):
        super().__init__()
        self.embedding = nn.Embedding(output_dim, emb_dim)
        self.rnn = nn.LSTM(emb_dim + hid_dim * 2, hid_dim)
        self.fc_out = nn.Linear(hid_dim * 3, output_dim)
        self.attention = attention

    def forward(self, input, hidden, encoder_outputs):
        input = input.unsqueeze(0)
        embedded = self.embedding(input)
        attn_weights = self.attention(hidden, encoder_outputs)
        attn_applied = torch.bmm(attn_weights.unsqueeze(1), encoder_outputs.permute(1, 0, 2))
        rnn_input = torch.cat((embedded, attn_applied.permute(1, 0, 2)), dim=2)
        output, (hidden, cell) = self.rnn(rnn_input, (hidden, torch.zeros_like(hidden)))
        output = self.fc_out(torch.cat((output.squeeze(0), attn_applied.squeeze(1)), dim=1))
        return output, hidden

class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, src, trg, teacher_forcing_ratio=0.5):
        batch_size, trg_len = trg.shape
        outputs = []
        encoder_outputs, hidden = self.encoder(src)
        input = trg[0, :]
        for t in range(1, trg_len):
            output, hidden = self.decoder(input, hidden, encoder_outputs)
            outputs.append(output)
            top1 = output.argmax(1)
            input = trg[t] if torch.rand(1).item() < teacher_forcing_ratio else top1
        return torch.stack(outputs)
'''

# gabinho991/CS598 train.py at 707a66f from "# Model" on (the JSON data, the vocabularies, the
# ``pad_sequence`` collate and the hyperparameters before it are globals: ``loader``,
# ``INPUT_DIM``, ``OUTPUT_DIM``, ``EMB_DIM``, ``HID_DIM``, ``EPOCHS``, ``DEVICE``; the model
# classes too)
S2S_TRAIN = r'''
# Model
attention = Attention(HID_DIM)
encoder = Encoder(INPUT_DIM, EMB_DIM, HID_DIM)
decoder = Decoder(OUTPUT_DIM, EMB_DIM, HID_DIM, attention)
model = Seq2Seq(encoder, decoder).to(DEVICE)

optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
criterion = nn.CrossEntropyLoss(ignore_index=0)

# Training loop
for epoch in range(EPOCHS):
    model.train()
    epoch_loss = 0
    for src, trg in loader:
        optimizer.zero_grad()
        output = model(src, trg)
        output = output.view(-1, OUTPUT_DIM)
        trg_flat = trg[1:].reshape(-1)
        loss = criterion(output, trg_flat)
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()
    print(f"Epoch {epoch+1}: Loss = {epoch_loss:.4f}")
'''

# MaximeVandegar/Papers-in-100-Lines-of-Code (MIT)
# Optimizing_Millions_of_Hyperparameters_by_Implicit_Differentiation/gradient_based_HO.py at
# 44039de from ``class MLP`` to its ``__main__`` block (the seed, keras' MNIST split into
# ``trainX``/``trainY``/``valX``/``valY`` and the plotting are left out: the data are globals)
HYPER = r'''
class MLP(nn.Module):
    def __init__(self, input_dim=784, output_dim=10):
        super(MLP, self).__init__()
        self.layers = nn.Sequential(
            nn.Linear(input_dim, input_dim),
            nn.ELU(),
            nn.Linear(input_dim, output_dim)
        )

    def forward(self, x):
        return self.layers(x)


class WeightDecay(nn.Module):
    def __init__(self, model, device):
        super(WeightDecay, self).__init__()
        self.positive_constraint = torch.nn.Softplus()

        # Set a weight decay for each parameter in the input model
        idx = 0
        self.parameter_dict = {}
        for m in model.parameters():
            self.parameter_dict[str(idx)] = torch.nn.Parameter(torch.rand(m.shape, device=device))
            idx += 1
        self.params = torch.nn.ParameterDict(self.parameter_dict)

    def forward(self, model):
        regularization = 0.
        for coefficients, weights in zip(self.parameters(), model.parameters()):
            regularization += (self.positive_constraint(coefficients) * weights ** 2).sum()
        return regularization


def compute_loss(x, label, model, weight_decay):
    predictions = model(x)
    return torch.nn.CrossEntropyLoss()(predictions, label) + weight_decay(model)


@torch.no_grad()
def compute_pred(x, label, model):
    predictions = model(x)
    predictions = predictions.argmax(1)
    return ((predictions == label).sum() / predictions.shape[0]).item()


def gradient_based_ho(nb_epochs=int(10e3), N=50, device='cpu', batch_size=32):
    model = MLP(input_dim=784, output_dim=10).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)

    meta_model = WeightDecay(model, device)
    meta_optimizer = torch.optim.RMSprop(meta_model.parameters(), lr=.1)

    accuracies = {'training': [], 'validation': []}

    for epoch in tqdm(range(nb_epochs)):  # Outer optimization loop
        for k in range(N):  # Inner optimization loop

            batch_idx = torch.randperm(trainX.shape[0])[:batch_size]
            training_loss = compute_loss(trainX[batch_idx].to(device), trainY[batch_idx].to(device), model, meta_model)

            # Update w
            optimizer.zero_grad()
            training_loss.backward()
            optimizer.step()

        training_loss = compute_loss(trainX.to(device), trainY.to(device), model, meta_model)
        validation_loss = compute_loss(valX.to(device), valY.to(device), model, meta_model)

        accuracies['training'].append(compute_pred(trainX.to(device), trainY.to(device), model))
        accuracies['validation'].append(compute_pred(valX.to(device), valY.to(device), model))

        hyper_grads = hypergradient(validation_loss, training_loss, meta_model.parameters, model.parameters)

        meta_optimizer.zero_grad()
        for p, g in zip(meta_model.parameters(), hyper_grads):
            p.grad = g
        meta_optimizer.step()

    return accuracies


def hypergradient(validation_loss: torch.Tensor, training_loss: torch.Tensor, lambda_: torch.Generator,
                  w: torch.Generator):
    # List[torch.Tensor]. v1[i].shape = w[i].shape
    v1 = torch.autograd.grad(validation_loss, w(), retain_graph=True)

    d_train_d_w = torch.autograd.grad(training_loss, w(), create_graph=True)
    # List[torch.Tensor]. v2[i].shape = w[i].shape
    v2 = approxInverseHVP(v1, d_train_d_w, w)

    # List[torch.Tensor]. v3[i].shape = lambda_[i].shape
    v3 = torch.autograd.grad(d_train_d_w, lambda_(), grad_outputs=v2, retain_graph=True, )

    d_val_d_lambda = torch.autograd.grad(validation_loss, lambda_())
    return [d - v for d, v in zip(d_val_d_lambda, v3)]


def approxInverseHVP(v: Tuple[torch.Tensor], f: Tuple[torch.Tensor], w: torch.Generator, i=3, alpha=.1):
    p = v

    for j in range(i):
        grad = torch.autograd.grad(f, w(), grad_outputs=v, retain_graph=True)
        v = [v_ - alpha * g for v_, g in zip(v, grad)]
        p = [p_ + v_ for p_, v_ in zip(p, v)]  # p += v (Typo in the arxiv version of the paper)

    return p
'''

# MaximeVandegar/Papers-in-100-Lines-of-Code (MIT)
# Variational_Inference_with_Normalizing_Flows/Flows.py at 4740d2d from ``torch.manual_seed(0)``
# to its ``__main__`` block (which trains flows of 2, 8 and 32 layers for 20000 epochs of 4096
# draws on "cuda" and plots a 1000x1000 grid: the tests drive ``train`` and the plots at tiny
# sizes; ``device`` and ``plt`` are globals)
PLANAR = r'''torch.manual_seed(0)

def gaussian_log_pdf(z):
    """
    Arguments:
    ----------
        - z: a batch of m data points (size: m x data_dim)
    """
    return -.5 * (torch.log(torch.tensor([math.pi * 2], device=z.device)) + z ** 2).sum(1)

class PlanarFlow(nn.Module):

    def __init__(self, data_dim):
        super().__init__()

        self.u = nn.Parameter(torch.rand(data_dim))
        self.w = nn.Parameter(torch.rand(data_dim))
        self.b = nn.Parameter(torch.rand(1))
        self.h = nn.Tanh()
        self.h_prime = lambda z: (1 - self.h(z) ** 2)

    def constrained_u(self):
        """
        Constrain the parameters u to ensure invertibility
        """
        wu = torch.matmul(self.w.T, self.u)
        m = lambda x: -1 + torch.log(1 + torch.exp(x))
        return self.u + (m(wu) - wu) * (self.w / (torch.norm(self.w) ** 2 + 1e-15))

    def forward(self, z):
        u = self.constrained_u()
        hidden_units = torch.matmul(self.w.T, z.T) + self.b
        x = z + u.unsqueeze(0) * self.h(hidden_units).unsqueeze(-1)
        psi = self.h_prime(hidden_units).unsqueeze(0) * self.w.unsqueeze(-1)
        log_det = torch.log((1 + torch.matmul(u.T, psi)).abs() + 1e-15)
        return x, log_det

class NormalizingFlow(nn.Module):

    def __init__(self, flow_length, data_dim):
        super().__init__()

        self.layers = nn.Sequential(
            *(PlanarFlow(data_dim) for _ in range(flow_length)))

    def forward(self, z):
        log_jacobians = 0
        for layer in self.layers:
            z, log_jacobian = layer(z)
            log_jacobians += log_jacobian
        return z, log_jacobians

def train(flow, optimizer, nb_epochs, log_density, batch_size, data_dim):
    losses = []
    for epoch in tqdm(range(nb_epochs)):
        # Generate new samples from the flow
        z0 = torch.randn(batch_size, data_dim).to(device)
        zk, log_jacobian = flow(z0)

        # Evaluate the true and approximated densities
        flow_log_density = gaussian_log_pdf(z0) - log_jacobian
        exact_log_density = log_density(zk).to(device)

        # Compute the loss
        reverse_kl_divergence = (flow_log_density - exact_log_density).mean()
        optimizer.zero_grad()
        loss = reverse_kl_divergence
        loss.backward()
        optimizer.step()

        losses.append(loss.item())
    return losses

def plot_flow_density(flow, ax, lims=np.array([[-4, 4], [-4, 4]]), cmap="coolwarm", title=None,
                      nb_point_per_dimension=1000):
    # Sample broadly from the latent space
    latent_space_boundaries = np.array([[-15, 15], [-15, 15]]);
    xx, yy = np.meshgrid(
        np.linspace(latent_space_boundaries[0][0], latent_space_boundaries[0][1], nb_point_per_dimension),
        np.linspace(latent_space_boundaries[1][0], latent_space_boundaries[1][1], nb_point_per_dimension))
    z = torch.tensor(np.concatenate((xx.reshape(-1, 1), yy.reshape(-1, 1)), axis=1), dtype=torch.float)
    # Generate data points and evaluate their densities
    zk, log_jacobian = flow(z.to(device))
    final_log_prob = gaussian_log_pdf(z) - log_jacobian.cpu()
    qk = torch.exp(final_log_prob)

    ax.set_xlim(lims[0][0], lims[0][1]); ax.set_ylim(lims[1][0], lims[1][1])
    ax.pcolormesh(
        zk[:, 0].detach().data.cpu().reshape(nb_point_per_dimension, nb_point_per_dimension),
        zk[:, 1].detach().data.cpu().reshape(nb_point_per_dimension, nb_point_per_dimension) * -1,
        qk.detach().data.reshape(nb_point_per_dimension, nb_point_per_dimension),
        cmap=cmap,
        rasterized=True,
    )
    if title is not None:
        plt.title(title, fontsize=22)

def plot_exact_density(ax, exact_log_density, lims=np.array([[-4, 4], [-4, 4]]), nb_point_per_dimension=100,
                       cmap="coolwarm", title=None):
    xx, yy = np.meshgrid(np.linspace(lims[0][0], lims[0][1], nb_point_per_dimension),
                         np.linspace(lims[1][0], lims[1][1], nb_point_per_dimension))
    z = torch.tensor(np.concatenate((xx.reshape(-1, 1), yy.reshape(-1, 1)), axis=1))
    density = torch.exp(exact_log_density(z)).reshape(nb_point_per_dimension, nb_point_per_dimension)
    ax.imshow(density, extent=([lims[0][0], lims[0][1], lims[1][0], lims[1][1]]), cmap=cmap)
    if title is not None:
        plt.title(title, fontsize=22)

w1 = lambda z: torch.sin((2 * np.pi * z[:, 0]) / 4)
w2 = lambda z: 3 * torch.exp(-(((z[:, 0] - 1) / 0.6) ** 2) / 2)
w3 = lambda z: 3 * 1 / (1 + torch.exp(- ((z[:, 0] - 1) / 0.3)))
# Energy functions
U1 = lambda z: (((torch.sqrt(z[:, 0] ** 2 + z[:, 1] ** 2) - 2) / 0.4) ** 2) / 2 - torch.log(
    1e-15 + (torch.exp(-(((z[:, 0] - 2) / 0.6) ** 2) / 2) + torch.exp(-(((z[:, 0] + 2) / 0.6) ** 2) / 2)))
U2 = lambda z: (((z[:, 1] - w1(z)) / 0.4) ** 2) / 2
U3 = lambda z: - torch.log(1e-15 + torch.exp(-(((z[:, 1] - w1(z)) / 0.35) ** 2) / 2) + torch.exp(
    -(((z[:, 1] - w1(z) + w2(z)) / 0.35) ** 2) / 2))
U4 = lambda z: - torch.log(1e-15 + torch.exp(-(((z[:, 1] - w1(z)) / 0.4) ** 2) / 2) + torch.exp(
    -(((z[:, 1] - w1(z) + w3(z)) / 0.35) ** 2) / 2))
'''

# MaximeVandegar/Papers-in-100-Lines-of-Code (MIT)
# Model_Agnostic_Meta_Learning_for_Fast_Adaptation_of_Deep_Networks/maml.py at 0a3f41e up to its
# ``__main__`` block (70000 meta-epochs on "cuda" and plots: the tests make its parameters and
# drive ``maml``, the fine-tuning and the predictions at tiny sizes; ``grad`` is a global)
MAML = r'''
def mlp(x, params):
    h = torch.relu(torch.nn.functional.linear(x, params[0], bias=params[1]))
    h = torch.relu(torch.nn.functional.linear(h, params[2], bias=params[3]))
    return torch.nn.functional.linear(h, params[4], bias=params[5])


class Task:

    def __init__(self, a, b):
        self.a = a
        self.b = b

    def sample(self, K):
        x = torch.rand((K, 1)) * 10 - 5  # Sample x in [-5, 5]
        y = self.a * torch.sin(x + self.b)
        loss_fct = nn.MSELoss()
        return x, y, loss_fct


@torch.no_grad()
def sample_task():
    a = torch.rand(1).item() * 4.9 + .1  # Sample the amplitude in [0.1, 5.0]
    b = torch.rand(1).item() * np.pi  # Sample the phase in [0, pi]
    return Task(a, b)


def perform_k_training_steps(params, task, batch_size, inner_training_steps, alpha, device='cpu'):
    for epoch in range(inner_training_steps):
        x_batch, target, loss_fct = task.sample(batch_size)
        loss = loss_fct(mlp(x_batch.to(device), params), target.to(device))

        for p in params:  # Zero grad
            p.grad = None
        gradients = grad(loss, params)
        for p, g in zip(params, gradients):  # Grad step
            p.data -= alpha * g
    return params


def maml(p_model, meta_optimizer, inner_training_steps, nb_epochs, batch_size_K, alpha, nb_tasks=10, device='cpu'):
    """
    Algorithm from https://arxiv.org/pdf/1703.03400v3.pdf (MAML for Few-Shot Supervised Learning)
    """
    training_loss = []
    for epoch in tqdm(range(nb_epochs)):  # Line 2 in the pseudocode

        theta_i_prime = []
        D_i_prime = []

        # Sample batch of tasks
        tasks = [sample_task() for _ in range(nb_tasks)]  # Line 3 in the pseudocode
        for task in tasks:
            theta_i_prime.append(perform_k_training_steps([p.clone() for p in p_model], task, batch_size_K,
                                                          inner_training_steps, alpha, device=device))
            # Sample data points Di' for the meta-update (line 8 in the pseudocode)
            x, y, loss_fct = task.sample(25)
            D_i_prime.append((x, y, loss_fct))

        # Meta update
        meta_optimizer.zero_grad()
        batch_training_loss = []
        for i in range(nb_tasks):
            x, y, loss_fct = D_i_prime[i]
            f_theta_prime = theta_i_prime[i]
            # Compute \nabla_theta L(f_theta_i_prime) for task ti
            loss = loss_fct(mlp(x.to(device), f_theta_prime), y.to(device))
            loss.backward()
            batch_training_loss.append(loss.item())

        meta_optimizer.step()  # Line 10 in the pseudocode
        training_loss.append(np.mean(batch_training_loss))
    return training_loss
'''

# MaximeVandegar/Papers-in-100-Lines-of-Code (MIT) On_First_Order_Meta_Learning_Algorithms/reptile.py
# at 4e5082f, whole (its last block tests ``__name__ == 'main'``: it never runs as a script)
REPTILE = r'''

class MLP(nn.Module):

    def __init__(self, input_dim=1, hidden_dim=64, output_dim=1):
        super(MLP, self).__init__()

        self.network = nn.Sequential(
            nn.Linear(input_dim, hidden_dim), nn.Tanh(),
            nn.Linear(hidden_dim, hidden_dim), nn.Tanh(),
            nn.Linear(hidden_dim, output_dim),
        )

    def forward(self, noise):
        return self.network(noise)


def reptile(model, nb_iterations: int, sample_task: Callable, perform_k_training_steps: Callable, k=1, epsilon=0.1):
    for _ in tqdm(range(nb_iterations)):

        task = sample_task()
        phi_tilde = perform_k_training_steps(copy.deepcopy(model), task, k)

        # Update phi
        with torch.no_grad():
            for p, g in zip(model.parameters(), phi_tilde):
                p += epsilon * (g - p)


@torch.no_grad()
def sample_task():
    a = torch.rand(1).item() * 4.9 + .1  # Sample a in [0.1, 5.0]
    b = torch.rand(1).item() * 2 * np.pi  # Sample b in [0, 2pi]

    x = torch.linspace(-5, 5, 50)
    y = a * torch.sin(x + b)

    loss_fct = nn.MSELoss()

    return x, y, loss_fct


def perform_k_training_steps(model, task, k, batch_size=10):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)

    train_x, train_y, loss_fct = task
    for epoch in range(k * train_x.shape[0] // batch_size):
        ind = torch.randperm(train_x.shape[0])[:batch_size]
        x_batch = train_x[ind].unsqueeze(-1)
        target = train_y[ind].unsqueeze(-1)

        loss = loss_fct(model(x_batch), target)

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    # Return the new weights after training
    return [p for p in model.parameters()]


if __name__ == 'main':
    model = MLP()
    reptile(model, 30000, sample_task, perform_k_training_steps)

    with torch.no_grad():
        x = torch.linspace(-5, 5, 50).unsqueeze(-1)
        y_pred_before = model(x)
        new_task = sample_task()
        true_x, true_y, _ = new_task

    # Perform 32 training steps on the new task
    perform_k_training_steps(model, new_task, 32)
    y_pred_after = model(x)

    plt.plot(x.numpy(), y_pred_before.numpy(), label='Before')
    plt.plot(x.numpy(), y_pred_after.data.numpy(), label='After')
    plt.plot(true_x.numpy(), true_y.numpy(), label='True')
    plt.legend(fontsize=11)
    plt.savefig('Imgs/Demonstration_of_reptile.png')
'''
