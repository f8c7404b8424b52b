"""Round-19 public programs (``tests/api/test_public_programs_round19.py`` runs them whole and
eagerly against torch), each condensed to its model, loss, optimizer and training step and run
compiled == eager (and == torch where the step draws no random numbers) with the harness (tiny
sizes, numpy data):

- gordicaleksa/pytorch-GAT GATLayerImp3: edge-index ``index_select`` lifting, the neighbourhood
  softmax and aggregation by ``scatter_add_`` into ``torch.zeros(size)`` over ``expand_as``
  indices, skip projection, in-place ``+=`` on the aggregated features, Adam with weight decay:
  one trace, no break;
- kmkurn/pytorch-crf: the CRF negative log-likelihood step (fancy-indexed ``emissions[i,
  torch.arange(b), tags[i]]``, ``logsumexp`` recursion, ``torch.where`` on a ``uint8`` mask);
  ``_validate``'s ``mask[0].all()`` in a Python ``if`` is data-dependent, so a step given a mask
  breaks there while the same step without a mask (``ones_like``) traces whole;
- timbmg/VAE-CVAE-MNIST: the CVAE step with the program's own ``torch.randn_like`` noise (so
  compiled == eager only, the generator state included) and ``idx2onehot``'s ``scatter_``;
  its ``assert torch.max(idx).item() < n`` reads a value, a break.
"""
import numpy as np
import pytest

from ._harness import check_compiled, data, labels, np_init


# ---- gordicaleksa/pytorch-GAT models/definitions/GAT.py (GATLayerImp3) --------------------------
def _gat(mod):
    nn = mod.nn

    class GATLayerImp3(nn.Module):   # GATLayer + GATLayerImp3 merged; dropout and logging dropped
        src_nodes_dim = 0
        trg_nodes_dim = 1
        nodes_dim = 0
        head_dim = 1

        def __init__(self, num_in_features, num_out_features, num_of_heads, concat=True, activation=nn.ELU(),
                     add_skip_connection=True, bias=True):
            super().__init__()
            self.num_of_heads = num_of_heads
            self.num_out_features = num_out_features
            self.concat = concat
            self.add_skip_connection = add_skip_connection
            self.linear_proj = nn.Linear(num_in_features, num_of_heads * num_out_features, bias=False)
            self.scoring_fn_target = nn.Parameter(mod.Tensor(1, num_of_heads, num_out_features))
            self.scoring_fn_source = nn.Parameter(mod.Tensor(1, num_of_heads, num_out_features))
            if bias and concat:
                self.bias = nn.Parameter(mod.Tensor(num_of_heads * num_out_features))
            elif bias and not concat:
                self.bias = nn.Parameter(mod.Tensor(num_out_features))
            else:
                self.register_parameter('bias', None)
            if add_skip_connection:
                self.skip_proj = nn.Linear(num_in_features, num_of_heads * num_out_features, bias=False)
            else:
                self.register_parameter('skip_proj', None)
            self.leakyReLU = nn.LeakyReLU(0.2)
            self.activation = activation

        def forward(self, data):
            in_nodes_features, edge_index = data
            num_of_nodes = in_nodes_features.shape[self.nodes_dim]
            assert edge_index.shape[0] == 2, f'Expected edge index with shape=(2,E) got {edge_index.shape}'
            nodes_features_proj = self.linear_proj(in_nodes_features).view(-1, self.num_of_heads, self.num_out_features)
            scores_source = (nodes_features_proj * self.scoring_fn_source).sum(dim=-1)
            scores_target = (nodes_features_proj * self.scoring_fn_target).sum(dim=-1)
            src_nodes_index = edge_index[self.src_nodes_dim]
            trg_nodes_index = edge_index[self.trg_nodes_dim]
            scores_source_lifted = scores_source.index_select(self.nodes_dim, src_nodes_index)
            scores_target_lifted = scores_target.index_select(self.nodes_dim, trg_nodes_index)
            nodes_features_proj_lifted = nodes_features_proj.index_select(self.nodes_dim, src_nodes_index)
            scores_per_edge = self.leakyReLU(scores_source_lifted + scores_target_lifted)

            # neighborhood_aware_softmax + sum_edge_scores_neighborhood_aware
            scores_per_edge = scores_per_edge - scores_per_edge.max()
            exp_scores_per_edge = scores_per_edge.exp()
            trg_index_broadcasted = self.explicit_broadcast(trg_nodes_index, exp_scores_per_edge)
            size = list(exp_scores_per_edge.shape)
            size[self.nodes_dim] = num_of_nodes
            neighborhood_sums = mod.zeros(size, dtype=exp_scores_per_edge.dtype, device=exp_scores_per_edge.device)
            neighborhood_sums.scatter_add_(self.nodes_dim, trg_index_broadcasted, exp_scores_per_edge)
            denominator = neighborhood_sums.index_select(self.nodes_dim, trg_nodes_index)
            attentions_per_edge = (exp_scores_per_edge / (denominator + 1e-16)).unsqueeze(-1)

            # aggregate_neighbors
            weighted = nodes_features_proj_lifted * attentions_per_edge
            size = list(weighted.shape)
            size[self.nodes_dim] = num_of_nodes
            out_nodes_features = mod.zeros(size, dtype=in_nodes_features.dtype, device=in_nodes_features.device)
            trg_index_broadcasted = self.explicit_broadcast(trg_nodes_index, weighted)
            out_nodes_features.scatter_add_(self.nodes_dim, trg_index_broadcasted, weighted)

            # skip_concat_bias
            if self.add_skip_connection:
                if out_nodes_features.shape[-1] == in_nodes_features.shape[-1]:
                    out_nodes_features += in_nodes_features.unsqueeze(1)
                else:
                    out_nodes_features += self.skip_proj(in_nodes_features).view(-1, self.num_of_heads, self.num_out_features)
            if self.concat:
                out_nodes_features = out_nodes_features.view(-1, self.num_of_heads * self.num_out_features)
            else:
                out_nodes_features = out_nodes_features.mean(dim=self.head_dim)
            if self.bias is not None:
                out_nodes_features += self.bias
            out = out_nodes_features if self.activation is None else self.activation(out_nodes_features)
            return (out, edge_index)

        def explicit_broadcast(self, this, other):
            for _ in range(this.dim(), other.dim()):
                this = this.unsqueeze(-1)
            return this.expand_as(other)

    return nn.Sequential(GATLayerImp3(5, 4, 2), GATLayerImp3(8, 3, 1, concat=False, activation=None))


def test_gat_imp3_scatter_add_step():
    edges = [(0, 1), (1, 0), (1, 2), (2, 3), (3, 1), (4, 5), (5, 4), (2, 5)] + [(i, i) for i in range(6)]
    edge_np = np.array(edges, dtype=np.int64).T

    def make(mod, wrap):
        gat = np_init(_gat(mod), mod, seed=8, scale=0.5)
        opt = mod.optim.Adam(gat.parameters(), lr=5e-3, weight_decay=5e-4)
        loss_fn = mod.nn.CrossEntropyLoss(reduction='mean')
        edge_index = mod.tensor(edge_np)
        train_indices = mod.arange(0, 4, dtype=mod.long)

        def step(x, y):
            scores = gat((x, edge_index))[0].index_select(0, train_indices)
            loss = loss_fn(scores, y.index_select(0, train_indices))
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss, mod.argmax(scores, dim=-1)

        return wrap(step), {"gat": gat, "opt": opt}, lambda i: (data(mod, i, 6, 5), labels(mod, i, 6, 3))

    run = check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1, run.step.stats


# ---- kmkurn/pytorch-crf torchcrf/__init__.py ------------------------------------------------------
def _crf(mod):
    nn = mod.nn

    class CRF(nn.Module):   # batch_first=True; decode and the reductions but 'mean' dropped
        def __init__(self, num_tags):
            super().__init__()
            self.num_tags = num_tags
            self.start_transitions = nn.Parameter(mod.empty(num_tags))
            self.end_transitions = nn.Parameter(mod.empty(num_tags))
            self.transitions = nn.Parameter(mod.empty(num_tags, num_tags))

        def forward(self, emissions, tags, mask=None):
            self._validate(emissions, tags=tags, mask=mask)
            if mask is None:
                mask = mod.ones_like(tags, dtype=mod.uint8)
            emissions = emissions.transpose(0, 1)
            tags = tags.transpose(0, 1)
            mask = mask.transpose(0, 1)
            llh = self._compute_score(emissions, tags, mask) - self._compute_normalizer(emissions, mask)
            return llh.mean()

        def _validate(self, emissions, tags=None, mask=None):
            if emissions.dim() != 3:
                raise ValueError(f'emissions must have dimension of 3, got {emissions.dim()}')
            if tags is not None and emissions.shape[:2] != tags.shape:
                raise ValueError('the first two dimensions of emissions and tags must match')
            if mask is not None:
                if not mask[:, 0].all():
                    raise ValueError('mask of the first timestep must all be on')

        def _compute_score(self, emissions, tags, mask):
            seq_length, batch_size = tags.shape
            mask = mask.float()
            score = self.start_transitions[tags[0]]
            score += emissions[0, mod.arange(batch_size), tags[0]]
            for i in range(1, seq_length):
                score += self.transitions[tags[i - 1], tags[i]] * mask[i]
                score += emissions[i, mod.arange(batch_size), tags[i]] * mask[i]
            seq_ends = mask.long().sum(dim=0) - 1
            last_tags = tags[seq_ends, mod.arange(batch_size)]
            score += self.end_transitions[last_tags]
            return score

        def _compute_normalizer(self, emissions, mask):
            seq_length = emissions.size(0)
            score = self.start_transitions + emissions[0]
            for i in range(1, seq_length):
                next_score = score.unsqueeze(2) + self.transitions + emissions[i].unsqueeze(1)
                next_score = mod.logsumexp(next_score, dim=1)
                score = mod.where(mask[i].unsqueeze(1), next_score, score)
            score += self.end_transitions
            return mod.logsumexp(score, dim=1)

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(7, 4)
            self.proj = nn.Linear(4, 5)
            self.crf = CRF(5)

    return Tagger()


@pytest.mark.parametrize("masked", [True, False], ids=["mask", "no_mask"])
def test_crf_nll_step(masked):
    rs = np.random.RandomState(3)
    words_np, tags_np = rs.randint(0, 7, size=(3, 3, 4)), rs.randint(0, 5, size=(3, 3, 4))
    mask_np = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 0]], dtype=np.uint8)

    def make(mod, wrap):
        model = np_init(_crf(mod), mod, seed=11, scale=0.5)
        opt = mod.optim.Adam(model.parameters(), lr=0.1)

        def step(words, tags, mask):
            emissions = model.proj(mod.tanh(model.emb(words)))
            loss = -model.crf(emissions, tags, mask=mask)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss

        return wrap(step), {"model": model, "opt": opt}, lambda i: (
            mod.tensor(words_np[i]), mod.tensor(tags_np[i]), mod.tensor(mask_np) if masked else None)

    run = check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    breaks = run.step.stats["graph_breaks"]
    if masked:   # ``if not mask[:, 0].all()``: every call runs eagerly, as torch.compile breaks there
        assert breaks and "bool()" in breaks[0][0], run.step.stats
        assert run.step.stats["eager_calls"] == 3, run.step.stats
    else:        # the uint8 ``torch.where`` warns once per process, not on every call: no break
        assert not breaks and run.step.stats["traces"] == 1, run.step.stats


# ---- timbmg/VAE-CVAE-MNIST models.py + utils.py + train.py ---------------------------------------
def _cvae(mod):
    nn = mod.nn

    def idx2onehot(idx, n):
        assert mod.max(idx).item() < n
        if idx.dim() == 1:
            idx = idx.unsqueeze(1)
        onehot = mod.zeros(idx.size(0), n).to(idx.device)
        onehot.scatter_(1, idx, 1)
        return onehot

    class CVAE(nn.Module):   # Encoder/Decoder folded in, conditional=True
        def __init__(self, enc_sizes, latent_size, dec_sizes, num_labels=10):
            super().__init__()
            enc_sizes = [enc_sizes[0] + num_labels] + enc_sizes[1:]
            self.enc = nn.Sequential()
            for i, (a, b) in enumerate(zip(enc_sizes[:-1], enc_sizes[1:])):
                self.enc.add_module(name="L{:d}".format(i), module=nn.Linear(a, b))
                self.enc.add_module(name="A{:d}".format(i), module=nn.ReLU())
            self.linear_means = nn.Linear(enc_sizes[-1], latent_size)
            self.linear_log_var = nn.Linear(enc_sizes[-1], latent_size)
            self.dec = nn.Sequential()
            for i, (a, b) in enumerate(zip([latent_size + num_labels] + dec_sizes[:-1], dec_sizes)):
                self.dec.add_module(name="L{:d}".format(i), module=nn.Linear(a, b))
                if i + 1 < len(dec_sizes):
                    self.dec.add_module(name="A{:d}".format(i), module=nn.ReLU())
                else:
                    self.dec.add_module(name="sigmoid", module=nn.Sigmoid())

        def forward(self, x, c):
            x = x.view(-1, 4*4)
            h = self.enc(mod.cat((x, idx2onehot(c, n=10)), dim=-1))
            means, log_var = self.linear_means(h), self.linear_log_var(h)
            std = mod.exp(0.5 * log_var)
            eps = mod.randn_like(std)
            z = means + eps * std
            return self.dec(mod.cat((z, idx2onehot(c, n=10)), dim=-1)), means, log_var, z

    return CVAE([16, 8], 2, [8, 16])


def test_cvae_randn_like_step():
    def make(mod, wrap):
        vae = np_init(_cvae(mod), mod, seed=5)
        opt = mod.optim.Adam(vae.parameters(), lr=0.01)

        def loss_fn(recon_x, x, mean, log_var):
            BCE = mod.nn.functional.binary_cross_entropy(recon_x.view(-1, 4*4), x.view(-1, 4*4), reduction='sum')
            KLD = -0.5 * mod.sum(1 + log_var - mean.pow(2) - log_var.exp())
            return (BCE + KLD) / x.size(0)

        def step(x, y):
            recon_x, mean, log_var, z = vae(x, y)
            loss = loss_fn(recon_x, x, mean, log_var)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss, z

        return wrap(step), {"vae": vae, "opt": opt}, lambda i: (
            data(mod, i, 3, 1, 4, 4).sigmoid(), labels(mod, i, 3, 10))

    run = check_compiled(make, calls=3, rtol=1e-4, atol=1e-5)
    breaks = run.step.stats["graph_breaks"]
    assert breaks and "item()" in breaks[0][0], run.step.stats
