"""Sources of the round-64 public programs (tests/api/test_public_programs_round64.py and
tests/compile/test_public_patterns_round64.py), executed with ``torch`` bound to torch or
tracegrad by ``program(T, SRC)``. Kept as in their repositories apart from the ``import`` lines
(the names are given as globals) and the changes noted in place; see the test files for the
repositories, paths, commits and licenses (MIT)."""
import logging
import types
from functools import wraps

import public_programs_round63_src as _r63


def transforms_stub(T):
    """A stand-in for ``torchvision.transforms`` (not installed): each transform the BYOL file
    names builds an ``nn.Identity`` of ``T``. Only its default augmentation uses them, and the
    tests pass their own ``augment_fn``."""
    def ident(*args, **kwargs):
        return T.nn.Identity()
    names = ("ColorJitter", "RandomGrayscale", "RandomHorizontalFlip", "GaussianBlur",
             "RandomResizedCrop", "Normalize")
    return types.SimpleNamespace(**{n: ident for n in names})


def program(T, src, **extra):
    """Execute a program source with round 63's globals (``torch``, ``nn``, ``F``, ``optim``,
    ``np``, ``math``, ``copy``, ``random``, ``json``, ``os``, ``DataLoader``, ...) plus the names
    these programs import (``wraps``, ``logging``, ``clip_grad_norm_``, torchvision's
    ``transforms as T``)."""
    names = {"wraps": wraps, "logging": logging, "clip_grad_norm_": T.nn.utils.clip_grad_norm_}
    # the earlier rounds' globals, from running an empty source; ``T`` is added here because it
    # is also the name of their module parameter
    g = {**vars(_r63.program(T, "", **names)), "T": transforms_stub(T), **extra}
    exec(compile(src, "<public program>", "exec"), g)
    return types.SimpleNamespace(**g)


# carlosfranzreb/skipgram (MIT) skipgram/model.py at 27f54c7, whole
SKIPGRAM_MODEL = r'''
""" Implementation of the Skip-gram model with neg. sampling. """


class Skipgram(nn.Module):
  def __init__(self, n_words, n_dims):
    """ Initializes the model.
    n_words (int): no. of words in the vocabulary.
    n_dims (int): no. of dimensions of each word.
    """
    super(Skipgram, self).__init__()
    self.n_words = n_words
    self.n_dims = n_dims
    self.input_vectors = nn.Embedding(n_words, n_dims)
    self.output_vectors = nn.Embedding(n_words, n_dims)
    self.input_vectors.weight.data.uniform_(-1, 1)
    self.output_vectors.weight.data.uniform_(-1, 1)

  def forward(self, input_idx, output_idx, neg_idx):
    """ Computes the forward pass.
    input_idx (tensor of size N): indices of the center words.
    output_idx (tensor of size N): indices of the context words.
    neg_idx (tensor of size (N x k)): indices of negative samples.
    * N is the batch size.
    * k is the no. of neg. samples per input-output pair.
    """
    in_vecs = self.input_vectors(input_idx).unsqueeze(1)
    out_vecs = self.output_vectors(output_idx).unsqueeze(2)
    neg_vecs = -self.output_vectors(neg_idx).transpose(1, 2)
    prob = F.logsigmoid(torch.bmm(in_vecs, out_vecs).squeeze())
    noise = F.logsigmoid(torch.bmm(in_vecs, neg_vecs).squeeze())
    if noise.ndim == 1:  # there is only one sample in the batch
      return prob + noise.sum()
    else:
      return torch.mean(prob + noise.sum(dim=1))
'''

# carlosfranzreb/skipgram (MIT) skipgram/train.py at 27f54c7, but for its two
# ``from skipgram... import`` lines (``Dataset`` and ``Skipgram`` are globals)
SKIPGRAM_TRAIN = r'''
""" Train the skip-gram model. """


class ModelTrainer:
  def __init__(self, run_id, model, dataset):
    """ Initialize the trainer. 
    run_id (int): ID of this training run; used to save embeddings.
    model (torch.nn): model to be trained.
    dataset (torch's Dataset): dataset to be used. """
    self.run_id = run_id
    self.model = model
    self.dataset = dataset
    self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    self.model.to(self.device)

  def train(self, batch_size, n_epochs, lr):
    optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
    for epoch in range(1, n_epochs+1):
      loader = DataLoader(self.dataset, batch_size=batch_size)
      self.cnt, self.current_loss = 0, 0  # for last 100 batches
      self.epoch_cnt, self.epoch_loss = 0, 0  # for epoch
      logging.info(f'Starting epoch {epoch}')
      for batch in loader:
        optimizer.zero_grad()
        loss = -self.model(*[t.to(self.device) for t in batch])
        loss.backward()
        clip_grad_norm_(self.model.parameters(), max_norm=5)
        optimizer.step()
        self.cnt += 1
        self.current_loss -= loss
        if self.cnt % 100 == 0:
          self.log_loss()
      self.log_loss(epoch=epoch)
      self.dataset.reset()
  
  def log_loss(self, epoch=-1):
    """ If epoch=-1: log avg. loss of the last 100 batches. Before resetting
    the cnt and current_loss, add them to the totals for the epoch.
    Else: epoch has ended - log its avg. loss, set all counters to zero
    and call save_embeddings(). """
    self.epoch_loss -= self.current_loss
    self.epoch_cnt += self.cnt
    if epoch > 0:
      avg_loss = self.epoch_loss / self.epoch_cnt
      logging.info(f'Avg. loss of epoch {epoch}: {avg_loss}')
      self.epoch_loss = 0
      self.epoch_cnt = 0
      self.save_embeddings(epoch)
    else:
      avg_loss = self.current_loss / self.cnt
      logging.info(f'Avg. loss in the last 100 batches: {avg_loss}')
    self.cnt = 0
    self.current_loss = 0
  
  def save_embeddings(self, epoch):
    """ Save the embeddings of the model as a dict with the words as keys and
    the embeddings as values. The file should be named
    'epoch_{epoch}', in the 'run_id' folder. """
    folder = f'skipgram/embeddings/{self.run_id}'
    if not os.path.exists(folder):
      os.mkdir(folder)
    if not os.path.exists(f'{folder}/entries.json'):
      json.dump(self.dataset.vocab.entries, open(f'{folder}/entries.json', 'w'))
    torch.save(self.model.state_dict(), f'{folder}/epoch_{epoch}.pt')
      

def init_training(run_id, vocab_file, data_file, neg_samples, window,
    n_dims, batch_size=32, n_epochs=5, lr=.002):
  """ Configure logging, log the parameters of this training procedure and
  initialize training. """
  logging.info('Training embeddings with the following parameters:')
  logging.info(f'Vocab file: {vocab_file}')
  logging.info(f'Data file: {data_file}')
  logging.info(f'No. of negative samples: {neg_samples}')
  logging.info(f'No. of context words at each side: {window}')
  logging.info(f'Batch size: {batch_size}')
  logging.info(f'No. of dimensions of the embeddings: {n_dims}')
  dataset = Dataset( vocab_file, data_file, k=neg_samples, w=window)
  logging.info(f'Dataset has {dataset.vocab.n_words} words\n\n')
  model = Skipgram(dataset.vocab.n_words, n_dims)
  trainer = ModelTrainer(run_id, model, dataset)
  trainer.train(batch_size, n_epochs, lr)
'''

# lucidrains/byol-pytorch (MIT, its setup.py) byol_pytorch/byol_pytorch.py at 6717204, but for its
# import lines (``copy``, ``random``, ``wraps``, ``torch``, ``nn``, ``F`` and torchvision's
# ``transforms as T`` are globals)
BYOL = r'''
# helper functions

def default(val, def_val):
    return def_val if val is None else val

def flatten(t):
    return t.reshape(t.shape[0], -1)

def singleton(cache_key):
    def inner_fn(fn):
        @wraps(fn)
        def wrapper(self, *args, **kwargs):
            instance = getattr(self, cache_key)
            if instance is not None:
                return instance

            instance = fn(self, *args, **kwargs)
            setattr(self, cache_key, instance)
            return instance
        return wrapper
    return inner_fn

def get_module_device(module):
    return next(module.parameters()).device

def set_requires_grad(model, val):
    for p in model.parameters():
        p.requires_grad = val

# loss fn

def loss_fn(x, y):
    x = F.normalize(x, dim=-1, p=2)
    y = F.normalize(y, dim=-1, p=2)
    return 2 - 2 * (x * y).sum(dim=-1)

# augmentation utils

class RandomApply(nn.Module):
    def __init__(self, fn, p):
        super().__init__()
        self.fn = fn
        self.p = p
    def forward(self, x):
        if random.random() > self.p:
            return x
        return self.fn(x)

# exponential moving average

class EMA():
    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def update_average(self, old, new):
        if old is None:
            return new
        return old * self.beta + (1 - self.beta) * new

def update_moving_average(ema_updater, ma_model, current_model):
    for current_params, ma_params in zip(current_model.parameters(), ma_model.parameters()):
        old_weight, up_weight = ma_params.data, current_params.data
        ma_params.data = ema_updater.update_average(old_weight, up_weight)

# MLP class for projector and predictor

def MLP(dim, projection_size, hidden_size=4096):
    return nn.Sequential(
        nn.Linear(dim, hidden_size),
        nn.BatchNorm1d(hidden_size),
        nn.ReLU(inplace=True),
        nn.Linear(hidden_size, projection_size)
    )

def SimSiamMLP(dim, projection_size, hidden_size=4096):
    return nn.Sequential(
        nn.Linear(dim, hidden_size, bias=False),
        nn.BatchNorm1d(hidden_size),
        nn.ReLU(inplace=True),
        nn.Linear(hidden_size, hidden_size, bias=False),
        nn.BatchNorm1d(hidden_size),
        nn.ReLU(inplace=True),
        nn.Linear(hidden_size, projection_size, bias=False),
        nn.BatchNorm1d(projection_size, affine=False)
    )

# a wrapper class for the base neural network
# will manage the interception of the hidden layer output
# and pipe it into the projecter and predictor nets

class NetWrapper(nn.Module):
    def __init__(self, net, projection_size, projection_hidden_size, layer = -2, use_simsiam_mlp = False):
        super().__init__()
        self.net = net
        self.layer = layer

        self.projector = None
        self.projection_size = projection_size
        self.projection_hidden_size = projection_hidden_size

        self.use_simsiam_mlp = use_simsiam_mlp

        self.hidden = {}
        self.hook_registered = False

    def _find_layer(self):
        if type(self.layer) == str:
            modules = dict([*self.net.named_modules()])
            return modules.get(self.layer, None)
        elif type(self.layer) == int:
            children = [*self.net.children()]
            return children[self.layer]
        return None

    def _hook(self, _, input, output):
        device = input[0].device
        self.hidden[device] = flatten(output)

    def _register_hook(self):
        layer = self._find_layer()
        assert layer is not None, f'hidden layer ({self.layer}) not found'
        handle = layer.register_forward_hook(self._hook)
        self.hook_registered = True

    @singleton('projector')
    def _get_projector(self, hidden):
        _, dim = hidden.shape
        create_mlp_fn = MLP if not self.use_simsiam_mlp else SimSiamMLP
        projector = create_mlp_fn(dim, self.projection_size, self.projection_hidden_size)
        return projector.to(hidden)

    def get_representation(self, x):
        if self.layer == -1:
            return self.net(x)

        if not self.hook_registered:
            self._register_hook()

        self.hidden.clear()
        _ = self.net(x)
        hidden = self.hidden[x.device]
        self.hidden.clear()

        assert hidden is not None, f'hidden layer {self.layer} never emitted an output'
        return hidden

    def forward(self, x, return_projection = True):
        representation = self.get_representation(x)

        if not return_projection:
            return representation

        projector = self._get_projector(representation)
        projection = projector(representation)
        return projection, representation

# main class

class BYOL(nn.Module):
    def __init__(
        self,
        net,
        image_size,
        hidden_layer = -2,
        projection_size = 256,
        projection_hidden_size = 4096,
        augment_fn = None,
        augment_fn2 = None,
        moving_average_decay = 0.99,
        use_momentum = True
    ):
        super().__init__()
        self.net = net

        # default SimCLR augmentation

        DEFAULT_AUG = torch.nn.Sequential(
            RandomApply(
                T.ColorJitter(0.8, 0.8, 0.8, 0.2),
                p = 0.3
            ),
            T.RandomGrayscale(p=0.2),
            T.RandomHorizontalFlip(),
            RandomApply(
                T.GaussianBlur((3, 3), (1.0, 2.0)),
                p = 0.2
            ),
            T.RandomResizedCrop((image_size, image_size)),
            T.Normalize(
                mean=torch.tensor([0.485, 0.456, 0.406]),
                std=torch.tensor([0.229, 0.224, 0.225])),
        )

        self.augment1 = default(augment_fn, DEFAULT_AUG)
        self.augment2 = default(augment_fn2, self.augment1)

        self.online_encoder = NetWrapper(net, projection_size, projection_hidden_size, layer=hidden_layer, use_simsiam_mlp=not use_momentum)

        self.use_momentum = use_momentum
        self.target_encoder = None
        self.target_ema_updater = EMA(moving_average_decay)

        self.online_predictor = MLP(projection_size, projection_size, projection_hidden_size)

        # get device of network and make wrapper same device
        device = get_module_device(net)
        self.to(device)

        # send a mock image tensor to instantiate singleton parameters
        self.forward(torch.randn(2, 3, image_size, image_size, device=device))

    @singleton('target_encoder')
    def _get_target_encoder(self):
        target_encoder = copy.deepcopy(self.online_encoder)
        set_requires_grad(target_encoder, False)
        return target_encoder

    def reset_moving_average(self):
        del self.target_encoder
        self.target_encoder = None

    def update_moving_average(self):
        assert self.use_momentum, 'you do not need to update the moving average, since you have turned off momentum for the target encoder'
        assert self.target_encoder is not None, 'target encoder has not been created yet'
        update_moving_average(self.target_ema_updater, self.target_encoder, self.online_encoder)

    def forward(
        self,
        x,
        return_embedding = False,
        return_projection = True
    ):
        assert not (self.training and x.shape[0] == 1), 'you must have greater than 1 sample when training, due to the batchnorm in the projection layer'

        if return_embedding:
            return self.online_encoder(x, return_projection = return_projection)

        image_one, image_two = self.augment1(x), self.augment2(x)

        online_proj_one, _ = self.online_encoder(image_one)
        online_proj_two, _ = self.online_encoder(image_two)

        online_pred_one = self.online_predictor(online_proj_one)
        online_pred_two = self.online_predictor(online_proj_two)

        with torch.no_grad():
            target_encoder = self._get_target_encoder() if self.use_momentum else self.online_encoder
            target_proj_one, _ = target_encoder(image_one)
            target_proj_two, _ = target_encoder(image_two)
            target_proj_one.detach_()
            target_proj_two.detach_()

        loss_one = loss_fn(online_pred_one, target_proj_two.detach())
        loss_two = loss_fn(online_pred_two, target_proj_one.detach())

        loss = loss_one + loss_two
        return loss.mean()
'''

# mcmahon-lab/Physics-Aware-Training (no license file) ode_utils.py at 6dc5bec, but for its
# ``import torch`` (a global): a hand-written fixed-step RK4 solver
ODE_UTILS = r'''
############## code for solving ODEs with pytorch ###################
# The following code will solve ODEs with the 4th order Runge–Kutta (RK4) method


def rk_loop(ode, x, dt, *args):
    """
    This functions runs the internal loop of the RK4 method
    """
    k1 = ode(x, *args)
    k2 = ode(x+dt*k1/2, *args)
    k3 = ode(x+dt*k2/2, *args)
    k4 = ode(x+dt*k3, *args)
    return x + (dt/6.0)*(k1 + 2*k2 + 2*k3 + k4)

def make_ode_map(ode, Nt, dt):
    """
    The output of this function is the ode_map function, which takes
    in the initial condition x and returns the final state of the 
    ODE after evolving by time Nt*dt. 
    """
    def ode_map(x, *args):
        for i in range(Nt):
            x = rk_loop(ode, x, dt, *args)
        return x
    return ode_map

def ode_map_all_points(ode, x0, Nt, dt, *args):
    """
    This function solves an ODE and also returns the 
    intermediate state vectors during the ODE evolution.
    This is a non-essential function that is only used
    to visualize the dynamics of the model after training.
    """
    xlist = torch.empty([Nt, *x0.shape]).to(x0.device)
    x = x0
    for i in range(Nt):
        x = rk_loop(ode, x, dt, *args)
        xlist[i] = x
    return xlist
'''

# mcmahon-lab/Physics-Aware-Training (no license file) pat.py at 6dc5bec, but for its
# ``import torch``: physics-aware training's custom autograd function (the forward pass on the
# "physical system", the backward pass a vector-Jacobian product of a digital model)
PAT = r'''
#this code is used to construct the custom autograd function for PAT
def make_pat_func(f_forward, f_backward):
    """
    A function that constructs and returns the custom autograd function for physics−aware training.

    Parameters:
    f_forward: The function that is applied in the forward pass.
    Typically, the computation is performed on a physical system that is connected and controlled by
    the computer that performs the training loop. For this expandable code, we use a simulation for convenience.
    f_backward: The function that is employed in the backward pass to propagate estimators of gradients.

    Returns:
    f_pat: The custom autograd function for physics−aware training.
    
    Note:
    The arguments for f_forward, f_backward, f_pat are left quite generic. 
    For the demo code, it follows the form of f_forward(x, theta_1, theta_2)
    where x is the input data and theta_1 and theta_2 are two different parameters of this function
    """
    class func(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args): 
            ctx.save_for_backward(*args)
            return f_forward(*args)
        def backward(ctx, grad_output):
            args = ctx.saved_tensors
            torch.set_grad_enabled(True)
            y = torch.autograd.functional.vjp(f_backward, args, v=grad_output)
            torch.set_grad_enabled(False)
            return y[1]
    return func.apply
'''
