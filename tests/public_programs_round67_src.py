"""Sources of the round-67 public programs (tests/api/test_public_programs_round67.py and
tests/compile/test_public_patterns_round67.py), executed with ``torch`` bound to torch or
tracegrad by ``program(T, SRC)``. Kept as in their repositories apart from the ``import`` lines
(the names are given as globals) and the changes noted in place; see the test files for the
repositories, paths, commits and licenses."""
import public_programs_round66_src as _r66

module = _r66.module


def program(T, src, **extra):
    """Execute a program source with round 66's globals (``torch``, ``nn``, ``F``, ``optim``,
    ``np``, ``math``, ``Tensor``, ``DataLoader``, ...)."""
    return _r66.program(T, src, **extra)


# YiHsiu7893/CPA-Project (no license file) Vit.py at 516d99b: its functions and classes, but
# for its imports (``np``, ``tqdm``, ``Adam``, ``CrossEntropyLoss``, ``DataLoader``, ``MNIST``
# and ``ToTensor`` are globals the tests give)
VIT = r'''
np.random.seed(0)
# 為了保證模型結果的可復現，需要每一次初始化的參數都固定不變，因此引入隨機種子
# 參數值是多少沒差
torch.manual_seed(0)

EPOCHS = 5
BATCH_SIZE = 128
LR = 0.005

def patchify(images, n_patches):
    n, c, h, w = images.shape

    patches = torch.zeros(n, n_patches ** 2, h * w * c // n_patches ** 2)
    patch_size = h // n_patches

    for idx, image in enumerate(images):
        for i in range(n_patches):
            for j in range(n_patches):
                patch = image[:, i * patch_size: (i + 1) * patch_size, j * patch_size: (j + 1) * patch_size]
                patches[idx, i * n_patches + j] = patch.flatten()
    return patches
    
def get_positional_embeddings(sequence_length, d):
    result = torch.ones(sequence_length, d)
    for i in range(sequence_length):
        for j in range(d):
            result[i][j] = np.sin(i / (10000 ** (j / d))) if j % 2 == 0 else np.cos(i / (10000 ** ((j - 1) / d)))
    return result

# Multi-Head Attention
class MSA(nn.Module):
    def __init__(self, d, n_heads=2):
        super(MSA, self).__init__()
        self.d = d
        self.n_heads = n_heads

        d_head = int(d / n_heads)
        self.q_mappings = nn.ModuleList([nn.Linear(d_head, d_head) for _ in range(self.n_heads)])
        self.k_mappings = nn.ModuleList([nn.Linear(d_head, d_head) for _ in range(self.n_heads)])
        self.v_mappings = nn.ModuleList([nn.Linear(d_head, d_head) for _ in range(self.n_heads)])
        self.d_head = d_head
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, sequences):
        # Sequences has shape (N, seq_length, token_dim)
        # We go into shape    (N, seq_length, n_heads, token_dim / n_heads)
        # And come back to    (N, seq_length, item_dim)  (through concatenation)
        result = []
        for sequence in sequences:
            seq_result = []
            for head in range(self.n_heads):
                q_mapping = self.q_mappings[head]
                k_mapping = self.k_mappings[head]
                v_mapping = self.v_mappings[head]

                seq = sequence[:, head * self.d_head: (head + 1) * self.d_head]
                q, k, v = q_mapping(seq), k_mapping(seq), v_mapping(seq)

                attention = self.softmax(q @ k.T / (self.d_head ** 0.5))
                seq_result.append(attention @ v)
            result.append(torch.hstack(seq_result))
        return torch.cat([torch.unsqueeze(r, dim=0) for r in result])

# define block in Vit
class ViTBlock(nn.Module):
    def __init__(self, hidden_d, n_heads, mlp_ratio=4):
        super(ViTBlock, self).__init__()
        self.hidden_d = hidden_d
        self.n_heads = n_heads

        self.norm1 = nn.LayerNorm(hidden_d)
        self.mhsa = MSA(hidden_d, n_heads)
        self.norm2 = nn.LayerNorm(hidden_d)
        self.mlp = nn.Sequential(
            nn.Linear(hidden_d, mlp_ratio * hidden_d),
            nn.GELU(),
            nn.Linear(mlp_ratio * hidden_d, hidden_d)
        )

    def forward(self, x):
        out = x + self.mhsa(self.norm1(x))
        out = out + self.mlp(self.norm2(out))
        return out    

# define ViT
class ViT(nn.Module):
    def __init__(self, chw, n_patches=7, n_blocks=2, hidden_d=8, n_heads=2, out_d=10):
        # Super constructor
        super(ViT, self).__init__()
            
        # Attributes
        self.chw = chw # ( C , H , W )
        self.n_patches = n_patches
        self.n_blocks = n_blocks
        self.n_heads = n_heads
        self.hidden_d = hidden_d
            
        # Input and patches sizes
        self.patch_size = (chw[1] / n_patches, chw[2] / n_patches)

         # 1) Linear mapper
        self.input_d = int(chw[0] * self.patch_size[0] * self.patch_size[1])
        self.linear_mapper = nn.Linear(self.input_d, self.hidden_d)
            
        # 2) Learnable classification token
        self.class_token = nn.Parameter(torch.rand(1, self.hidden_d))
            
        # 3) Positional embedding
        self.register_buffer('positional_embeddings', get_positional_embeddings(n_patches ** 2 + 1, hidden_d), persistent=False)
            
        # 4) Transformer encoder blocks
        self.blocks = nn.ModuleList([ViTBlock(hidden_d, n_heads) for _ in range(n_blocks)])
            
        # 5) Classification MLPk
        self.mlp = nn.Sequential(
            nn.Linear(self.hidden_d, out_d),
            nn.Softmax(dim=-1)
        )
    
    def forward(self, images):
        # Dividing images into patches
        n, c, h, w = images.shape
        patches = patchify(images, self.n_patches).to(self.positional_embeddings.device)
            
        # Running linear layer tokenization
        # Map the vector corresponding to each patch to the hidden size dimension
        tokens = self.linear_mapper(patches)
            
        # Adding classification token to the tokens
        tokens = torch.cat((self.class_token.expand(n, 1, -1), tokens), dim=1)
            
        # Adding positional embedding
        out = tokens + self.positional_embeddings.repeat(n, 1, 1)
            
        # Transformer Blocks
        for block in self.blocks:
            out = block(out)
                
        # Getting the classification token only
        out = out[:, 0]
            
        return self.mlp(out) # Map to output dimension, output category distribution  
'''

# YiHsiu7893/CPA-Project Vit.py at 516d99b: its main part, whole (its last print's format
# "%.2f%" is incomplete: a ValueError after the test loop, with torch as with tracegrad)
VIT_MAIN = r'''
# Main function
# Loading data
train_data = MNIST(root='./mnist', train=True, download=True, transform=ToTensor())
test_data = MNIST(root='./mnist', train=False, download=True, transform=ToTensor())

train_loader = DataLoader(train_data, shuffle=True, batch_size=BATCH_SIZE)
test_loader = DataLoader(test_data, shuffle=False, batch_size=BATCH_SIZE)

# Defining model
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
#print("Using device: ", device, f"({torch.cuda.get_device_name(device)})" if torch.cuda.is_available() else "")
model = ViT((1, 28, 28), n_patches=7, n_blocks=2, hidden_d=8, n_heads=2, out_d=10).to(device)

# Training loop
optimizer = Adam(model.parameters(), lr=LR)
loss_func = CrossEntropyLoss()

for epoch in range(EPOCHS):
    train_loss = 0.0
    for batch in tqdm(train_loader, desc=f"Epoch {epoch + 1} in training", leave=False):
        x, y = batch
        y_hat = model(x)
        loss = loss_func(y_hat, y)

        train_loss += loss.detach().item() / len(train_loader)

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    print("Epoch %d/%d loss: %.2f" % (epoch+1, EPOCHS, train_loss))

# Test loop
with torch.no_grad():
    correct, total = 0, 0
    test_loss = 0.0
    for batch in tqdm(test_loader, desc="Testing"):
        x, y = batch
        y_hat = model(x)
        loss = loss_func(y_hat, y)
        test_loss += loss.detach().item() / len(test_loader)

        correct += torch.sum(torch.argmax(y_hat, dim=1) == y).detach().item()
        total += len(x)
    print("Test loss: %.2f" % (test_loss))
    print("Test accuracy: %.2f%" % (correct / total * 100))    
'''

# nadaselham/Hybrid-CNN-TCN (MIT) models/tcn.py at 88f20ce, whole but for its import (its
# train.py is a placeholder loop: the tests write the loop)
TCN = r'''
class Chomp1d(nn.Module):
    def __init__(self, chomp_size):
        super().__init__()
        self.chomp_size = chomp_size

    def forward(self, x):
        return x[:, :, :-self.chomp_size].contiguous()

class TemporalBlock(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, stride, dilation, padding, dropout):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(in_ch, out_ch, kernel_size, stride=stride, padding=padding, dilation=dilation),
            Chomp1d(padding),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Conv1d(out_ch, out_ch, kernel_size, stride=stride, padding=padding, dilation=dilation),
            Chomp1d(padding),
            nn.ReLU(),
            nn.Dropout(dropout)
        )
        self.downsample = nn.Conv1d(in_ch, out_ch, 1) if in_ch != out_ch else None
        self.relu = nn.ReLU()

    def forward(self, x):
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(out + res)

class TemporalConvNet(nn.Module):
    def __init__(self, input_size, num_channels, kernel_size=3, dropout=0.25):
        super().__init__()
        layers = []
        for i, out_ch in enumerate(num_channels):
            in_ch = input_size if i == 0 else num_channels[i - 1]
            dilation = 2 ** i
            padding = (kernel_size - 1) * dilation
            layers.append(TemporalBlock(in_ch, out_ch, kernel_size, 1, dilation, padding, dropout))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)
'''

# albashawalid05-netizen/neural-ode-vs-resnet (no license file) src/models.py at dc0354e, whole
# but for its imports (``odeint``, torchdiffeq's, is a stand-in the tests give: a fixed-step RK4)
NODE_MODELS = r'''
class MLP(nn.Module):
    def __init__(self, in_dim, hidden_dim, out_dim, depth=3):
        super().__init__()
        layers = []
        d = in_dim
        for _ in range(depth - 1):
            layers += [nn.Linear(d, hidden_dim), nn.ReLU()]
            d = hidden_dim
        layers += [nn.Linear(d, out_dim)]
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class ResNetStep(nn.Module):
    """
    Discrete-time baseline: predicts next state using residual MLP:
      x_{t+1} = x_t + f(x_t)
    """
    def __init__(self, state_dim=2, hidden_dim=64):
        super().__init__()
        self.f = MLP(state_dim, hidden_dim, state_dim, depth=3)

    def forward(self, x0, steps):
        # x0: [B, 2], returns [B, steps, 2]
        xs = []
        x = x0
        for _ in range(steps):
            x = x + self.f(x)
            xs.append(x)
        return torch.stack(xs, dim=1)


class ODEFunc(nn.Module):
    """
    Continuous dynamics: dx/dt = f(x, t) but we ignore t in f for simplicity.
    """
    def __init__(self, state_dim=2, hidden_dim=64):
        super().__init__()
        self.f = MLP(state_dim, hidden_dim, state_dim, depth=3)

    def forward(self, t, x):
        return self.f(x)


class NeuralODEModel(nn.Module):
    def __init__(self, state_dim=2, hidden_dim=64, solver="rk4", rtol=1e-4, atol=1e-4):
        super().__init__()
        self.func = ODEFunc(state_dim, hidden_dim)
        self.solver = solver
        self.rtol = rtol
        self.atol = atol

    def forward(self, x0, t):
        """
        x0: [B, 2]
        t:  [T] increasing times
        returns: [B, T, 2]
        """
        # odeint returns [T, B, 2]
        traj = odeint(self.func, x0, t, method=self.solver, rtol=self.rtol, atol=self.atol)
        return traj.permute(1, 0, 2)
'''

# albashawalid05-netizen/neural-ode-vs-resnet src/train.py at dc0354e: ``masked_mse``,
# ``evaluate`` and ``train_one`` (``main`` reads a YAML config and writes JSON files; ``tqdm`` is
# a global the tests give)
NODE_TRAIN = r'''
def masked_mse(pred, target, mask):
    """
    pred/target: [B, T, 2]
    mask: [B, T, 1] where 1 observed, 0 missing
    """
    m = mask
    diff2 = (pred - target) ** 2  # [B, T, 2]
    diff2 = diff2 * m  # broadcast on last dim
    denom = torch.clamp(m.sum() * pred.shape[-1], min=1.0)
    return diff2.sum() / denom


@torch.no_grad()
def evaluate(model, val_loader, t, device):
    model.eval()
    losses = []
    for x, m in val_loader:
        x = x.to(device)
        m = m.to(device)
        x0 = x[:, 0, :]  # [B,2]
        T = x.shape[1]
        if isinstance(model, NeuralODEModel):
            pred = model(x0, t.to(device))  # [B,T,2]
        else:
            pred = torch.cat([x0.unsqueeze(1), model(x0, T - 1)], dim=1)  # include t0
        loss = masked_mse(pred, x, m)
        losses.append(loss.item())
    return float(sum(losses) / max(len(losses), 1))


def train_one(model, train_loader, val_loader, t, device, epochs=15, lr=1e-3):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    best_val = 1e9
    history = {"train": [], "val": []}

    for ep in range(1, epochs + 1):
        model.train()
        train_losses = []
        for x, m in tqdm(train_loader, desc=f"epoch {ep}/{epochs}", leave=False):
            x = x.to(device)
            m = m.to(device)
            x0 = x[:, 0, :]
            T = x.shape[1]

            if isinstance(model, NeuralODEModel):
                pred = model(x0, t.to(device))  # [B,T,2]
            else:
                pred = torch.cat([x0.unsqueeze(1), model(x0, T - 1)], dim=1)

            loss = masked_mse(pred, x, m)

            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            train_losses.append(loss.item())

        train_loss = float(sum(train_losses) / max(len(train_losses), 1))
        val_loss = evaluate(model, val_loader, t, device)

        history["train"].append(train_loss)
        history["val"].append(val_loss)

        if val_loss < best_val:
            best_val = val_loss

    return best_val, history
'''
