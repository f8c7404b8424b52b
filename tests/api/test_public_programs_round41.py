"""A forty-first round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), from a repository no
earlier round used, tkipf/c-swm (Contrastively-trained Structured World Models, Kipf et al.
2020), all files at e944b24:

- ``modules.py``: ``ContrastiveSWM`` (object-slot CNN encoders ``EncoderCNNSmall`` and
  ``EncoderCNNMedium``, ``EncoderMLP`` over ``view(-1, num_objects, input_dim)``, the energy
  ``norm * diff.pow(2).sum(2).mean(1)`` and the contrastive hinge loss against states permuted by
  ``np.random.permutation``, ``torch.max(zeros, hinge - energy)``), ``TransitionGNN`` (a
  message-passing GNN: the fully connected edge list from ``(ones - eye).nonzero()``, ``repeat``,
  an ``arange(...).unsqueeze(-1).expand(...).contiguous().view(-1)`` offset added in place and a
  ``transpose`` to COO, cached on the module; edge features from ``node_attr[row]``,
  ``node_attr[col]``; node updates after ``unsorted_segment_sum``), ``DecoderCNNMedium``
  (``ConvTranspose2d`` with stride 5 and with padding 4, ``BatchNorm2d``) and ``DecoderMLP``
  (``ins.get_device()`` on a CPU tensor, -1, passed to ``.to``: torch's ``RuntimeError``).
- ``utils.py``: ``unsorted_segment_sum`` (``new_full`` and ``scatter_add_`` along dim 0 of an
  expanded index), ``to_one_hot`` (``zeros(...).scatter_(1, indices.unsqueeze(1), 1)``),
  ``weights_init`` through ``model.apply`` (``xavier_uniform_``/``zeros_`` on ``Conv2d``),
  ``pairwise_distance_matrix``, ``get_act_fn``, ``StateTransitionsDataset`` and ``PathDataset``
  (a replay buffer of per-episode dicts indexed by ``(episode, step)``).
- ``train.py``: the contrastive run (encoder ``small``) and the ``--decoder`` run (encoder
  ``medium``: ``torch.sigmoid(decoder(state))``, ``F.binary_cross_entropy(reduction='sum')``, the
  next-state reconstruction added with ``loss +=``, two Adam optimizers), the log lines, and
  ``torch.save(model.state_dict(), ...)`` of the best epoch.
- ``eval.py``: ``load_state_dict(torch.load(...))``, multi-step predictions through the transition
  model, the distance matrix with its diagonal prepended, numpy's ``lexsort`` per row and
  ``torch.from_numpy(...).long()``, Hits@1 (``(indices[:, :k] == labels).sum().item()``) and the
  MRR from ``match.max(1)`` over a bool tensor and ``torch.reciprocal(ranks.double() + 1)``,
  printed as a float64 tensor.

Changes, the same on both sides: the HDF5 replay buffers (``load_list_dict_h5py``) are seeded
numpy episodes of 3 x 20 x 20 images; sizes are tiny (hidden width 32, so encoders of 2 channels;
embeddings of 2, 3 object slots, 4 actions, batches of 4, 2 epochs; eval batches of 100 paths, the
script's size, with a partial last batch it skips); ``argparse`` parses a list; ``print`` is
``print`` rather than ``logger.info`` (the logging/FileHandler setup is left out), the loaders
have ``num_workers=0`` and ``shuffle=False`` (torch's and tracegrad's shuffling streams differ),
``__iter__().next()`` (Python 2, an ``AttributeError`` on both) is ``__iter__().__next__()``,
the Adam optimizers have ``eps=1e-6`` (see the comment in ``build``),
the checkpoint folder is a temporary directory, and parameters are overwritten from numpy after
``model.apply(utils.weights_init)``. The contrastive training step also runs under
``tracegrad.compile`` in ``tests/compile/test_public_patterns_round41.py``.
"""
import argparse
import os
import pickle
import tempfile
from collections import defaultdict
from types import SimpleNamespace

import numpy as np
import pytest
from parity import init_params, run_both, seeded

torch = pytest.importorskip("torch")

INPUT_SHAPE = (3, 20, 20)


def replay_buffer(n_episodes, n_steps, seed, action_dim=4, num_objects=3):
    """A seeded stand-in for the HDF5 replay buffers: per-episode dicts of ``obs``/``next_obs``
    images in [0, 1] and int64 actions."""
    rs = np.random.RandomState(seed)
    episodes = []
    for _ in range(n_episodes):
        obs = rs.uniform(0, 1, (n_steps + 1,) + INPUT_SHAPE).astype(np.float32)
        episodes.append({"obs": obs[:-1], "next_obs": obs[1:],
                         "action": rs.randint(0, action_dim * num_objects, n_steps)})
    return episodes


BUFFERS = {"shapes_train.h5": (2, 4, 0), "shapes_eval.h5": (130, 2, 1)}


def _program_classes(torch):
    nn = torch.nn
    data = torch.utils.data

    # ---- utils.py ----
    EPS = 1e-17

    def weights_init(m):
        if isinstance(m, nn.Conv2d):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)

    def load_list_dict_h5py(fname):
        # stand-in: the seeded numpy episodes of BUFFERS instead of an HDF5 file
        return replay_buffer(*BUFFERS[os.path.basename(fname)])

    def pairwise_distance_matrix(x, y):
        num_samples = x.size(0)
        dim = x.size(1)

        x = x.unsqueeze(1).expand(num_samples, num_samples, dim)
        y = y.unsqueeze(0).expand(num_samples, num_samples, dim)

        return torch.pow(x - y, 2).sum(2)

    def get_act_fn(act_fn):
        if act_fn == 'relu':
            return nn.ReLU()
        elif act_fn == 'leaky_relu':
            return nn.LeakyReLU()
        elif act_fn == 'elu':
            return nn.ELU()
        elif act_fn == 'sigmoid':
            return nn.Sigmoid()
        elif act_fn == 'softplus':
            return nn.Softplus()
        else:
            raise ValueError('Invalid argument for `act_fn`.')

    def to_one_hot(indices, max_index):
        """Get one-hot encoding of index tensors."""
        zeros = torch.zeros(
            indices.size()[0], max_index, dtype=torch.float32,
            device=indices.device)
        return zeros.scatter_(1, indices.unsqueeze(1), 1)

    def to_float(np_array):
        """Convert numpy array to float32."""
        return np.array(np_array, dtype=np.float32)

    def unsorted_segment_sum(tensor, segment_ids, num_segments):
        """Custom PyTorch op to replicate TensorFlow's `unsorted_segment_sum`."""
        result_shape = (num_segments, tensor.size(1))
        result = tensor.new_full(result_shape, 0)  # Init empty result tensor.
        segment_ids = segment_ids.unsqueeze(-1).expand(-1, tensor.size(1))
        result.scatter_add_(0, segment_ids, tensor)
        return result

    class StateTransitionsDataset(data.Dataset):
        """Create dataset of (o_t, a_t, o_{t+1}) transitions from replay buffer."""

        def __init__(self, hdf5_file):
            """
            Args:
                hdf5_file (string): Path to the hdf5 file that contains experience
                    buffer
            """
            self.experience_buffer = load_list_dict_h5py(hdf5_file)

            # Build table for conversion between linear idx -> episode/step idx
            self.idx2episode = list()
            step = 0
            for ep in range(len(self.experience_buffer)):
                num_steps = len(self.experience_buffer[ep]['action'])
                idx_tuple = [(ep, idx) for idx in range(num_steps)]
                self.idx2episode.extend(idx_tuple)
                step += num_steps

            self.num_steps = step

        def __len__(self):
            return self.num_steps

        def __getitem__(self, idx):
            ep, step = self.idx2episode[idx]

            obs = to_float(self.experience_buffer[ep]['obs'][step])
            action = self.experience_buffer[ep]['action'][step]
            next_obs = to_float(self.experience_buffer[ep]['next_obs'][step])

            return obs, action, next_obs

    class PathDataset(data.Dataset):
        """Create dataset of {(o_t, a_t)}_{t=1:N} paths from replay buffer.
        """

        def __init__(self, hdf5_file, path_length=5):
            """
            Args:
                hdf5_file (string): Path to the hdf5 file that contains experience
                    buffer
            """
            self.experience_buffer = load_list_dict_h5py(hdf5_file)
            self.path_length = path_length

        def __len__(self):
            return len(self.experience_buffer)

        def __getitem__(self, idx):
            observations = []
            actions = []
            for i in range(self.path_length):
                obs = to_float(self.experience_buffer[idx]['obs'][i])
                action = self.experience_buffer[idx]['action'][i]
                observations.append(obs)
                actions.append(action)
            obs = to_float(
                self.experience_buffer[idx]['next_obs'][self.path_length - 1])
            observations.append(obs)
            return observations, actions

    utils = SimpleNamespace(
        EPS=EPS, weights_init=weights_init, pairwise_distance_matrix=pairwise_distance_matrix,
        get_act_fn=get_act_fn, to_one_hot=to_one_hot, to_float=to_float,
        unsorted_segment_sum=unsorted_segment_sum,
        StateTransitionsDataset=StateTransitionsDataset, PathDataset=PathDataset)

    # ---- modules.py ----
    class ContrastiveSWM(nn.Module):
        """Main module for a Contrastively-trained Structured World Model (C-SWM).

        Args:
            embedding_dim: Dimensionality of abstract state space.
            input_dims: Shape of input observation.
            hidden_dim: Number of hidden units in encoder and transition model.
            action_dim: Dimensionality of action space.
            num_objects: Number of object slots.
        """
        def __init__(self, embedding_dim, input_dims, hidden_dim, action_dim,
                     num_objects, hinge=1., sigma=0.5, encoder='large',
                     ignore_action=False, copy_action=False):
            super(ContrastiveSWM, self).__init__()

            self.hidden_dim = hidden_dim
            self.embedding_dim = embedding_dim
            self.action_dim = action_dim
            self.num_objects = num_objects
            self.hinge = hinge
            self.sigma = sigma
            self.ignore_action = ignore_action
            self.copy_action = copy_action

            self.pos_loss = 0
            self.neg_loss = 0

            num_channels = input_dims[0]
            width_height = input_dims[1:]

            if encoder == 'small':
                self.obj_extractor = EncoderCNNSmall(
                    input_dim=num_channels,
                    hidden_dim=hidden_dim // 16,
                    num_objects=num_objects)
                # CNN image size changes
                width_height = np.array(width_height)
                width_height = width_height // 10
            elif encoder == 'medium':
                self.obj_extractor = EncoderCNNMedium(
                    input_dim=num_channels,
                    hidden_dim=hidden_dim // 16,
                    num_objects=num_objects)
                # CNN image size changes
                width_height = np.array(width_height)
                width_height = width_height // 5
            elif encoder == 'large':
                self.obj_extractor = EncoderCNNLarge(
                    input_dim=num_channels,
                    hidden_dim=hidden_dim // 16,
                    num_objects=num_objects)

            self.obj_encoder = EncoderMLP(
                input_dim=np.prod(width_height),
                hidden_dim=hidden_dim,
                output_dim=embedding_dim,
                num_objects=num_objects)

            self.transition_model = TransitionGNN(
                input_dim=embedding_dim,
                hidden_dim=hidden_dim,
                action_dim=action_dim,
                num_objects=num_objects,
                ignore_action=ignore_action,
                copy_action=copy_action)

            self.width = width_height[0]
            self.height = width_height[1]

        def energy(self, state, action, next_state, no_trans=False):
            """Energy function based on normalized squared L2 norm."""

            norm = 0.5 / (self.sigma**2)

            if no_trans:
                diff = state - next_state
            else:
                pred_trans = self.transition_model(state, action)
                diff = state + pred_trans - next_state

            return norm * diff.pow(2).sum(2).mean(1)

        def transition_loss(self, state, action, next_state):
            return self.energy(state, action, next_state).mean()

        def contrastive_loss(self, obs, action, next_obs):

            objs = self.obj_extractor(obs)
            next_objs = self.obj_extractor(next_obs)

            state = self.obj_encoder(objs)
            next_state = self.obj_encoder(next_objs)

            # Sample negative state across episodes at random
            batch_size = state.size(0)
            perm = np.random.permutation(batch_size)
            neg_state = state[perm]

            self.pos_loss = self.energy(state, action, next_state)
            zeros = torch.zeros_like(self.pos_loss)

            self.pos_loss = self.pos_loss.mean()
            self.neg_loss = torch.max(
                zeros, self.hinge - self.energy(
                    state, action, neg_state, no_trans=True)).mean()

            loss = self.pos_loss + self.neg_loss

            return loss

        def forward(self, obs):
            return self.obj_encoder(self.obj_extractor(obs))

    class TransitionGNN(torch.nn.Module):
        """GNN-based transition function."""
        def __init__(self, input_dim, hidden_dim, action_dim, num_objects,
                     ignore_action=False, copy_action=False, act_fn='relu'):
            super(TransitionGNN, self).__init__()

            self.input_dim = input_dim
            self.hidden_dim = hidden_dim
            self.num_objects = num_objects
            self.ignore_action = ignore_action
            self.copy_action = copy_action

            if self.ignore_action:
                self.action_dim = 0
            else:
                self.action_dim = action_dim

            self.edge_mlp = nn.Sequential(
                nn.Linear(input_dim*2, hidden_dim),
                utils.get_act_fn(act_fn),
                nn.Linear(hidden_dim, hidden_dim),
                nn.LayerNorm(hidden_dim),
                utils.get_act_fn(act_fn),
                nn.Linear(hidden_dim, hidden_dim))

            node_input_dim = hidden_dim + input_dim + self.action_dim

            self.node_mlp = nn.Sequential(
                nn.Linear(node_input_dim, hidden_dim),
                utils.get_act_fn(act_fn),
                nn.Linear(hidden_dim, hidden_dim),
                nn.LayerNorm(hidden_dim),
                utils.get_act_fn(act_fn),
                nn.Linear(hidden_dim, input_dim))

            self.edge_list = None
            self.batch_size = 0

        def _edge_model(self, source, target, edge_attr):
            del edge_attr  # Unused.
            out = torch.cat([source, target], dim=1)
            return self.edge_mlp(out)

        def _node_model(self, node_attr, edge_index, edge_attr):
            if edge_attr is not None:
                row, col = edge_index
                agg = utils.unsorted_segment_sum(
                    edge_attr, row, num_segments=node_attr.size(0))
                out = torch.cat([node_attr, agg], dim=1)
            else:
                out = node_attr
            return self.node_mlp(out)

        def _get_edge_list_fully_connected(self, batch_size, num_objects, cuda):
            # Only re-evaluate if necessary (e.g. if batch size changed).
            if self.edge_list is None or self.batch_size != batch_size:
                self.batch_size = batch_size

                # Create fully-connected adjacency matrix for single sample.
                adj_full = torch.ones(num_objects, num_objects)

                # Remove diagonal.
                adj_full -= torch.eye(num_objects)
                self.edge_list = adj_full.nonzero()

                # Copy `batch_size` times and add offset.
                self.edge_list = self.edge_list.repeat(batch_size, 1)
                offset = torch.arange(
                    0, batch_size * num_objects, num_objects).unsqueeze(-1)
                offset = offset.expand(batch_size, num_objects * (num_objects - 1))
                offset = offset.contiguous().view(-1)
                self.edge_list += offset.unsqueeze(-1)

                # Transpose to COO format -> Shape: [2, num_edges].
                self.edge_list = self.edge_list.transpose(0, 1)

                if cuda:
                    self.edge_list = self.edge_list.cuda()

            return self.edge_list

        def forward(self, states, action):

            cuda = states.is_cuda
            batch_size = states.size(0)
            num_nodes = states.size(1)

            # states: [batch_size (B), num_objects, embedding_dim]
            # node_attr: Flatten states tensor to [B * num_objects, embedding_dim]
            node_attr = states.view(-1, self.input_dim)

            edge_attr = None
            edge_index = None

            if num_nodes > 1:
                # edge_index: [B * (num_objects*[num_objects-1]), 2] edge list
                edge_index = self._get_edge_list_fully_connected(
                    batch_size, num_nodes, cuda)

                row, col = edge_index
                edge_attr = self._edge_model(
                    node_attr[row], node_attr[col], edge_attr)

            if not self.ignore_action:

                if self.copy_action:
                    action_vec = utils.to_one_hot(
                        action, self.action_dim).repeat(1, self.num_objects)
                    action_vec = action_vec.view(-1, self.action_dim)
                else:
                    action_vec = utils.to_one_hot(
                        action, self.action_dim * num_nodes)
                    action_vec = action_vec.view(-1, self.action_dim)

                # Attach action to each state
                node_attr = torch.cat([node_attr, action_vec], dim=-1)

            node_attr = self._node_model(
                node_attr, edge_index, edge_attr)

            # [batch_size, num_nodes, hidden_dim]
            return node_attr.view(batch_size, num_nodes, -1)

    class EncoderCNNSmall(nn.Module):
        """CNN encoder, maps observation to obj-specific feature maps."""

        def __init__(self, input_dim, hidden_dim, num_objects, act_fn='sigmoid',
                     act_fn_hid='relu'):
            super(EncoderCNNSmall, self).__init__()
            self.cnn1 = nn.Conv2d(
                input_dim, hidden_dim, (10, 10), stride=10)
            self.cnn2 = nn.Conv2d(hidden_dim, num_objects, (1, 1), stride=1)
            self.ln1 = nn.BatchNorm2d(hidden_dim)
            self.act1 = utils.get_act_fn(act_fn_hid)
            self.act2 = utils.get_act_fn(act_fn)

        def forward(self, obs):
            h = self.act1(self.ln1(self.cnn1(obs)))
            return self.act2(self.cnn2(h))

    class EncoderCNNMedium(nn.Module):
        """CNN encoder, maps observation to obj-specific feature maps."""

        def __init__(self, input_dim, hidden_dim, num_objects, act_fn='sigmoid',
                     act_fn_hid='leaky_relu'):
            super(EncoderCNNMedium, self).__init__()

            self.cnn1 = nn.Conv2d(
                input_dim, hidden_dim, (9, 9), padding=4)
            self.act1 = utils.get_act_fn(act_fn_hid)
            self.ln1 = nn.BatchNorm2d(hidden_dim)

            self.cnn2 = nn.Conv2d(
                hidden_dim, num_objects, (5, 5), stride=5)
            self.act2 = utils.get_act_fn(act_fn)

        def forward(self, obs):
            h = self.act1(self.ln1(self.cnn1(obs)))
            h = self.act2(self.cnn2(h))
            return h

    class EncoderCNNLarge(nn.Module):
        """CNN encoder, maps observation to obj-specific feature maps."""

        def __init__(self, input_dim, hidden_dim, num_objects, act_fn='sigmoid',
                     act_fn_hid='relu'):
            super(EncoderCNNLarge, self).__init__()

            self.cnn1 = nn.Conv2d(input_dim, hidden_dim, (3, 3), padding=1)
            self.act1 = utils.get_act_fn(act_fn_hid)
            self.ln1 = nn.BatchNorm2d(hidden_dim)

            self.cnn2 = nn.Conv2d(hidden_dim, hidden_dim, (3, 3), padding=1)
            self.act2 = utils.get_act_fn(act_fn_hid)
            self.ln2 = nn.BatchNorm2d(hidden_dim)

            self.cnn3 = nn.Conv2d(hidden_dim, hidden_dim, (3, 3), padding=1)
            self.act3 = utils.get_act_fn(act_fn_hid)
            self.ln3 = nn.BatchNorm2d(hidden_dim)

            self.cnn4 = nn.Conv2d(hidden_dim, num_objects, (3, 3), padding=1)
            self.act4 = utils.get_act_fn(act_fn)

        def forward(self, obs):
            h = self.act1(self.ln1(self.cnn1(obs)))
            h = self.act2(self.ln2(self.cnn2(h)))
            h = self.act3(self.ln3(self.cnn3(h)))
            return self.act4(self.cnn4(h))

    class EncoderMLP(nn.Module):
        """MLP encoder, maps observation to latent state."""

        def __init__(self, input_dim, output_dim, hidden_dim, num_objects,
                     act_fn='relu'):
            super(EncoderMLP, self).__init__()

            self.num_objects = num_objects
            self.input_dim = input_dim

            self.fc1 = nn.Linear(self.input_dim, hidden_dim)
            self.fc2 = nn.Linear(hidden_dim, hidden_dim)
            self.fc3 = nn.Linear(hidden_dim, output_dim)

            self.ln = nn.LayerNorm(hidden_dim)

            self.act1 = utils.get_act_fn(act_fn)
            self.act2 = utils.get_act_fn(act_fn)

        def forward(self, ins):
            h_flat = ins.view(-1, self.num_objects, self.input_dim)
            h = self.act1(self.fc1(h_flat))
            h = self.act2(self.ln(self.fc2(h)))
            return self.fc3(h)

    class DecoderMLP(nn.Module):
        """MLP decoder, maps latent state to image."""

        def __init__(self, input_dim, hidden_dim, num_objects, output_size,
                     act_fn='relu'):
            super(DecoderMLP, self).__init__()

            self.fc1 = nn.Linear(input_dim + num_objects, hidden_dim)
            self.fc2 = nn.Linear(hidden_dim, hidden_dim)
            self.fc3 = nn.Linear(hidden_dim, np.prod(output_size))

            self.input_dim = input_dim
            self.num_objects = num_objects
            self.output_size = output_size

            self.act1 = utils.get_act_fn(act_fn)
            self.act2 = utils.get_act_fn(act_fn)

        def forward(self, ins):
            obj_ids = torch.arange(self.num_objects)
            obj_ids = utils.to_one_hot(obj_ids, self.num_objects).unsqueeze(0)
            obj_ids = obj_ids.repeat((ins.size(0), 1, 1)).to(ins.get_device())

            h = torch.cat((ins, obj_ids), -1)
            h = self.act1(self.fc1(h))
            h = self.act2(self.fc2(h))
            h = self.fc3(h).sum(1)
            return h.view(-1, self.output_size[0], self.output_size[1],
                          self.output_size[2])

    class DecoderCNNMedium(nn.Module):
        """CNN decoder, maps latent state to image."""

        def __init__(self, input_dim, hidden_dim, num_objects, output_size,
                     act_fn='relu'):
            super(DecoderCNNMedium, self).__init__()

            width, height = output_size[1] // 5, output_size[2] // 5

            output_dim = width * height

            self.fc1 = nn.Linear(input_dim, hidden_dim)
            self.fc2 = nn.Linear(hidden_dim, hidden_dim)
            self.fc3 = nn.Linear(hidden_dim, output_dim)
            self.ln = nn.LayerNorm(hidden_dim)

            self.deconv1 = nn.ConvTranspose2d(num_objects, hidden_dim,
                                              kernel_size=5, stride=5)
            self.deconv2 = nn.ConvTranspose2d(hidden_dim, output_size[0],
                                              kernel_size=9, padding=4)

            self.ln1 = nn.BatchNorm2d(hidden_dim)

            self.input_dim = input_dim
            self.num_objects = num_objects
            self.map_size = output_size[0], width, height

            self.act1 = utils.get_act_fn(act_fn)
            self.act2 = utils.get_act_fn(act_fn)
            self.act3 = utils.get_act_fn(act_fn)

        def forward(self, ins):
            h = self.act1(self.fc1(ins))
            h = self.act2(self.ln(self.fc2(h)))
            h = self.fc3(h)

            h_conv = h.view(-1, self.num_objects, self.map_size[1],
                            self.map_size[2])
            h = self.act3(self.ln1(self.deconv1(h_conv)))
            return self.deconv2(h)

    modules = SimpleNamespace(
        ContrastiveSWM=ContrastiveSWM, TransitionGNN=TransitionGNN,
        EncoderCNNSmall=EncoderCNNSmall, EncoderCNNMedium=EncoderCNNMedium,
        EncoderCNNLarge=EncoderCNNLarge, EncoderMLP=EncoderMLP, DecoderMLP=DecoderMLP,
        DecoderCNNMedium=DecoderCNNMedium)
    return utils, modules


def train_parser():
    # train.py's arguments
    parser = argparse.ArgumentParser()
    parser.add_argument('--batch-size', type=int, default=1024,
                        help='Batch size.')
    parser.add_argument('--epochs', type=int, default=100,
                        help='Number of training epochs.')
    parser.add_argument('--learning-rate', type=float, default=5e-4,
                        help='Learning rate.')

    parser.add_argument('--encoder', type=str, default='small',
                        help='Object extrator CNN size (e.g., `small`).')
    parser.add_argument('--sigma', type=float, default=0.5,
                        help='Energy scale.')
    parser.add_argument('--hinge', type=float, default=1.,
                        help='Hinge threshold parameter.')

    parser.add_argument('--hidden-dim', type=int, default=512,
                        help='Number of hidden units in transition MLP.')
    parser.add_argument('--embedding-dim', type=int, default=2,
                        help='Dimensionality of embedding.')
    parser.add_argument('--action-dim', type=int, default=4,
                        help='Dimensionality of action space.')
    parser.add_argument('--num-objects', type=int, default=5,
                        help='Number of object slots in model.')
    parser.add_argument('--ignore-action', action='store_true', default=False,
                        help='Ignore action in GNN transition model.')
    parser.add_argument('--copy-action', action='store_true', default=False,
                        help='Apply same action to all object slots.')

    parser.add_argument('--decoder', action='store_true', default=False,
                        help='Train model using decoder and pixel-based loss.')

    parser.add_argument('--no-cuda', action='store_true', default=False,
                        help='Disable CUDA training.')
    parser.add_argument('--seed', type=int, default=42,
                        help='Random seed (default: 42).')
    parser.add_argument('--log-interval', type=int, default=20,
                        help='How many batches to wait before logging'
                             'training status.')
    parser.add_argument('--dataset', type=str,
                        default='data/shapes_train.h5',
                        help='Path to replay buffer.')
    parser.add_argument('--name', type=str, default='none',
                        help='Experiment name.')
    parser.add_argument('--save-folder', type=str,
                        default='checkpoints',
                        help='Path to checkpoints.')
    return parser


def build(torch, argv, seed=3):
    """train.py up to the optimizers: the dataset, the loader, the model (and the decoder with
    ``--decoder``), parameters overwritten from numpy after ``weights_init``."""
    utils, modules = _program_classes(torch)
    data = torch.utils.data
    args = train_parser().parse_args(argv)
    args.cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device('cuda' if args.cuda else 'cpu')

    dataset = utils.StateTransitionsDataset(
        hdf5_file=args.dataset)
    train_loader = data.DataLoader(
        dataset, batch_size=args.batch_size, shuffle=False, num_workers=0)

    # Get data sample
    obs = train_loader.__iter__().__next__()[0]
    input_shape = obs[0].size()

    model = modules.ContrastiveSWM(
        embedding_dim=args.embedding_dim,
        hidden_dim=args.hidden_dim,
        action_dim=args.action_dim,
        input_dims=input_shape,
        num_objects=args.num_objects,
        sigma=args.sigma,
        hinge=args.hinge,
        ignore_action=args.ignore_action,
        copy_action=args.copy_action,
        encoder=args.encoder).to(device)

    model.apply(utils.weights_init)
    init_params(torch, model, seed, scale=0.4)

    # eps 1e-6, not 1e-8: the encoders' conv biases feed BatchNorm, so their gradient is
    # exactly zero in exact arithmetic and the computed one float32 rounding noise (1e-11),
    # which Adam at eps 1e-8 turns into steps of about lr (and a few weight entries with
    # gradients near 1e-9 into steps that differ by a tenth of lr between torch and XLA)
    optimizer = torch.optim.Adam(
        model.parameters(),
        lr=args.learning_rate, eps=1e-6)

    decoder = optimizer_dec = None
    if args.decoder:
        if args.encoder == 'medium':
            decoder = modules.DecoderCNNMedium(
                input_dim=args.embedding_dim,
                num_objects=args.num_objects,
                hidden_dim=args.hidden_dim // 16,
                output_size=input_shape).to(device)
        decoder.apply(utils.weights_init)
        init_params(torch, decoder, seed + 1, scale=0.4)
        optimizer_dec = torch.optim.Adam(
            decoder.parameters(),
            lr=args.learning_rate, eps=1e-6)
    return SimpleNamespace(args=args, device=device, train_loader=train_loader, model=model,
                           optimizer=optimizer, decoder=decoder, optimizer_dec=optimizer_dec,
                           utils=utils, modules=modules, input_shape=input_shape)


def train(torch, argv, log):
    F = torch.nn.functional
    b = build(torch, argv)
    args, device, train_loader, model = b.args, b.device, b.train_loader, b.model
    optimizer, decoder, optimizer_dec = b.optimizer, b.decoder, b.optimizer_dec
    exp_name = args.name
    save_folder = '{}/{}/'.format(args.save_folder, exp_name)
    if not os.path.exists(save_folder):
        os.makedirs(save_folder)
    meta_file = os.path.join(save_folder, 'metadata.pkl')
    model_file = os.path.join(save_folder, 'model.pt')
    pickle.dump({'args': args}, open(meta_file, "wb"))
    log("input_shape", b.input_shape)
    log("edge_list before", model.transition_model.edge_list)

    # Train model.
    print('Starting model training...')
    step = 0
    best_loss = 1e9

    for epoch in range(1, args.epochs + 1):
        model.train()
        train_loss = 0

        for batch_idx, data_batch in enumerate(train_loader):
            data_batch = [tensor.to(device) for tensor in data_batch]
            optimizer.zero_grad()

            if args.decoder:
                optimizer_dec.zero_grad()
                obs, action, next_obs = data_batch
                objs = model.obj_extractor(obs)
                state = model.obj_encoder(objs)

                rec = torch.sigmoid(decoder(state))
                loss = F.binary_cross_entropy(
                    rec, obs, reduction='sum') / obs.size(0)

                next_state_pred = state + model.transition_model(state, action)
                next_rec = torch.sigmoid(decoder(next_state_pred))
                next_loss = F.binary_cross_entropy(
                    next_rec, next_obs,
                    reduction='sum') / obs.size(0)
                loss += next_loss
                log(f"rec{epoch}.{batch_idx}", rec[:, :, :3, :3])
            else:
                loss = model.contrastive_loss(*data_batch)
                log(f"pos_loss{epoch}.{batch_idx}", model.pos_loss)
                log(f"neg_loss{epoch}.{batch_idx}", model.neg_loss)

            loss.backward()
            train_loss += loss.item()
            optimizer.step()

            if args.decoder:
                optimizer_dec.step()
            log(f"loss{epoch}.{batch_idx}", loss)

            if batch_idx % args.log_interval == 0:
                print(
                    'Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                        epoch, batch_idx * len(data_batch[0]),
                        len(train_loader.dataset),
                        100. * batch_idx / len(train_loader),
                        loss.item() / len(data_batch[0])))

            step += 1

        avg_loss = train_loss / len(train_loader.dataset)
        print('====> Epoch: {} Average loss: {:.6f}'.format(
            epoch, avg_loss))

        if avg_loss < best_loss:
            best_loss = avg_loss
            torch.save(model.state_dict(), model_file)
    log("edge_list", model.transition_model.edge_list)
    for name, p in model.named_parameters():
        log("param " + name, p)
        log("grad " + name, p.grad)
    log("running_mean", model.obj_extractor.ln1.running_mean)
    if decoder is not None:
        for name, p in decoder.named_parameters():
            # deconv1's bias feeds BatchNorm: its gradient is rounding noise (see ``build``),
            # at the size of the summed BCE's gradients, so its Adam steps are too
            if name != "deconv1.bias":
                log("decoder param " + name, p)
    return b


def evaluate(torch, argv, log):
    """eval.py, reading the checkpoint ``train`` wrote."""
    utils, modules = _program_classes(torch)
    data = torch.utils.data

    parser = argparse.ArgumentParser()
    parser.add_argument('--save-folder', type=str,
                        default='checkpoints',
                        help='Path to checkpoints.')
    parser.add_argument('--num-steps', type=int, default=1,
                        help='Number of prediction steps to evaluate.')
    parser.add_argument('--dataset', type=str,
                        default='data/shapes_eval.h5',
                        help='Dataset string.')
    parser.add_argument('--no-cuda', action='store_true', default=False,
                        help='Disable CUDA training.')

    args_eval = parser.parse_args(argv)

    meta_file = os.path.join(args_eval.save_folder, 'metadata.pkl')
    model_file = os.path.join(args_eval.save_folder, 'model.pt')

    args = pickle.load(open(meta_file, 'rb'))['args']

    args.cuda = not args_eval.no_cuda and torch.cuda.is_available()
    args.batch_size = 100
    args.dataset = args_eval.dataset
    args.seed = 0

    device = torch.device('cuda' if args.cuda else 'cpu')

    dataset = utils.PathDataset(
        hdf5_file=args.dataset, path_length=args_eval.num_steps)
    eval_loader = data.DataLoader(
        dataset, batch_size=args.batch_size, shuffle=False, num_workers=0)

    # Get data sample
    obs = eval_loader.__iter__().__next__()[0]
    input_shape = obs[0][0].size()

    model = modules.ContrastiveSWM(
        embedding_dim=args.embedding_dim,
        hidden_dim=args.hidden_dim,
        action_dim=args.action_dim,
        input_dims=input_shape,
        num_objects=args.num_objects,
        sigma=args.sigma,
        hinge=args.hinge,
        ignore_action=args.ignore_action,
        copy_action=args.copy_action,
        encoder=args.encoder).to(device)

    model.load_state_dict(torch.load(model_file))
    model.eval()

    # topk = [1, 5, 10]
    topk = [1]
    hits_at = defaultdict(int)
    num_samples = 0
    rr_sum = 0

    pred_states = []
    next_states = []

    with torch.no_grad():

        for batch_idx, data_batch in enumerate(eval_loader):
            data_batch = [[t.to(
                device) for t in tensor] for tensor in data_batch]
            observations, actions = data_batch

            if observations[0].size(0) != args.batch_size:
                continue

            obs = observations[0]
            next_obs = observations[-1]

            state = model.obj_encoder(model.obj_extractor(obs))
            next_state = model.obj_encoder(model.obj_extractor(next_obs))

            pred_state = state
            for i in range(args_eval.num_steps):
                pred_trans = model.transition_model(pred_state, actions[i])
                pred_state = pred_state + pred_trans

            pred_states.append(pred_state.cpu())
            next_states.append(next_state.cpu())

        pred_state_cat = torch.cat(pred_states, dim=0)
        next_state_cat = torch.cat(next_states, dim=0)

        full_size = pred_state_cat.size(0)

        # Flatten object/feature dimensions
        next_state_flat = next_state_cat.view(full_size, -1)
        pred_state_flat = pred_state_cat.view(full_size, -1)

        dist_matrix = utils.pairwise_distance_matrix(
            next_state_flat, pred_state_flat)
        dist_matrix_diag = torch.diag(dist_matrix).unsqueeze(-1)
        dist_matrix_augmented = torch.cat(
            [dist_matrix_diag, dist_matrix], dim=1)

        # Workaround to get a stable sort in numpy.
        dist_np = dist_matrix_augmented.numpy()
        indices = []
        for row in dist_np:
            keys = (np.arange(len(row)), row)
            indices.append(np.lexsort(keys))
        indices = np.stack(indices, axis=0)
        indices = torch.from_numpy(indices).long()

        print('Processed {} batches of size {}'.format(
            batch_idx + 1, args.batch_size))

        labels = torch.zeros(
            indices.size(0), device=indices.device,
            dtype=torch.int64).unsqueeze(-1)

        num_samples += full_size
        print('Size of current topk evaluation batch: {}'.format(
            full_size))

        for k in topk:
            match = indices[:, :k] == labels
            num_matches = match.sum()
            hits_at[k] += num_matches.item()

        match = indices == labels
        _, ranks = match.max(1)

        reciprocal_ranks = torch.reciprocal(ranks.double() + 1)
        rr_sum += reciprocal_ranks.sum()

        pred_states = []
        next_states = []

    for k in topk:
        print('Hits @ {}: {}'.format(k, hits_at[k] / float(num_samples)))

    print('MRR: {}'.format(rr_sum / float(num_samples)))
    log("dist_matrix", dist_matrix[:6, :6])
    log("ranks", ranks)
    log("rr_sum", rr_sum)
    log("pred_state", pred_state[:5])


SIZES = ['--batch-size', '4', '--epochs', '2', '--hidden-dim', '32', '--num-objects', '3',
         '--log-interval', '1', '--dataset', 'data/shapes_train.h5', '--name', 'run']


def _program(mod, log):
    torch = mod
    with tempfile.TemporaryDirectory() as tmp, seeded(0):
        # train.py, contrastive (encoder 'small'), then eval.py on its checkpoint
        b = train(torch, SIZES + ['--save-folder', tmp], log)
        evaluate(torch, ['--save-folder', os.path.join(tmp, 'run'), '--num-steps', '2'], log)
        # the helpers on their own
        utils = b.utils
        log("one_hot", utils.to_one_hot(torch.tensor([2, 0, 1]), 4))
        e = torch.tensor([[1., 2.], [3., 4.], [5., 6.]], requires_grad=True)
        s = utils.unsorted_segment_sum(e, torch.tensor([1, 1, 0]), num_segments=3)
        s.pow(2).sum().backward()
        log("segment_sum", s)
        log("segment_sum grad_fn", s.grad_fn)
        log("segment_sum grad", e.grad)
        # DecoderMLP's ``.to(ins.get_device())`` is -1 on a CPU tensor
        dec = b.modules.DecoderMLP(2, 8, 3, (3, 4, 4))
        try:
            dec(torch.zeros(2, 3, 2))
        except RuntimeError as err:
            log("DecoderMLP error", type(err))
        # train.py --decoder (encoder 'medium')
        train(torch, SIZES + ['--save-folder', tmp, '--decoder', '--encoder', 'medium',
                              '--epochs', '1'], log)


def test_contrastive_structured_world_model():
    run_both(_program)


def _variants(mod, log):
    # modules.py's other paths: TransitionGNN with copy_action (the one-hot ``repeat``ed over the
    # slots) and ignore_action, one object slot (no edges: the repository's node MLP then
    # expects the aggregate it does not get, torch's shape RuntimeError, printed), the 'large'
    # encoder and the medium decoder alone, utils.pairwise_distance_matrix
    torch = mod
    utils, modules = _program_classes(torch)
    st = torch.tensor(np.random.RandomState(0).randn(3, 3, 2).astype(np.float32),
                      requires_grad=True)
    act = torch.tensor([0, 2, 3])
    for kw in (dict(copy_action=True), dict(ignore_action=True), dict()):
        g = init_params(torch, modules.TransitionGNN(2, 8, 4, 3, **kw), 1)
        out = g(st, act)
        out.sum().backward()
        log(f"gnn {kw}", [out, st.grad, g.edge_list])
        st.grad = None
    g1 = init_params(torch, modules.TransitionGNN(2, 8, 4, 1), 1)
    try:
        g1(st[:, :1].detach(), torch.tensor([1, 0, 3]))
    except RuntimeError as e:
        print(type(e).__name__, e)
    enc = init_params(torch, modules.EncoderCNNLarge(3, 2, 3), 2)
    x = torch.tensor(np.random.RandomState(1).rand(2, 3, 6, 6).astype(np.float32))
    y = enc(x)
    y.sum().backward()
    log("large encoder", [y, enc.cnn1.weight.grad, enc.ln3.running_var])
    dec = init_params(torch, modules.DecoderCNNMedium(2, 4, 3, (3, 10, 10)), 3)
    log("medium decoder", dec(torch.tensor(np.random.RandomState(2).randn(2, 3, 2)
                                           .astype(np.float32))))
    log("pairwise", utils.pairwise_distance_matrix(torch.arange(6.).view(3, 2),
                                                   torch.ones(3, 2)))


def test_cswm_module_variants():
    run_both(_variants)
