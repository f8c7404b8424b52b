"""Round 36's marblet/vgae program (``models/vgae.py``, ``models/gcn.py``, ``utils/data_utils.py``,
``train.py``), in its own file for the time limit; the round's notes are in
``test_public_programs_round36.py``.
"""
import numpy as np
import pytest
from parity import SeededTorch, init_params, run_both, seeded

torch = pytest.importorskip("torch")


# ---- marblet/vgae --------------------------------------------------------------------------------
def _vgae_classes(torch):
    import networkx as nx
    from sklearn.metrics import average_precision_score, roc_auc_score
    nn, F = torch.nn, torch.nn.functional

    def add_self_loops(edge_list, size):
        i = torch.arange(size, dtype=torch.int64).view(1, -1)
        self_loops = torch.cat((i, i), dim=0)
        edge_list = torch.cat((edge_list, self_loops), dim=1)
        return edge_list

    def get_degree(edge_list):
        row, col = edge_list
        deg = torch.bincount(row)
        return deg

    def normalize_adj(edge_list):
        deg = get_degree(edge_list)
        row, col = edge_list
        deg_inv_sqrt = torch.pow(deg.to(torch.float), -0.5)
        deg_inv_sqrt[deg_inv_sqrt == float('inf')] = 0.0
        weight = torch.ones(edge_list.size(1))
        v = deg_inv_sqrt[row] * weight * deg_inv_sqrt[col]
        norm_adj = torch.sparse.FloatTensor(edge_list, v)
        return norm_adj

    def split_edges(G, val_ratio, test_ratio):
        edges = np.array([[u, v] for u, v in G.edges()])
        np.random.shuffle(edges)
        E = edges.shape[0]
        n_val_edges = int(E * val_ratio)
        n_test_edges = int(E * test_ratio)
        val_edges = torch.LongTensor(edges[:n_val_edges]).t()
        test_edges = torch.LongTensor(edges[n_val_edges: n_val_edges + n_test_edges]).t()
        train_edges = torch.LongTensor(edges[n_val_edges + n_test_edges:]).t()
        return train_edges, val_edges, test_edges

    def load_karate_data():
        G = nx.karate_club_graph()
        N = G.number_of_nodes()
        features = torch.eye(N)
        label_map = {'Mr. Hi': 0, 'Officer': 1}
        labels = torch.tensor([label_map[G.nodes()[i]['club']] for i in range(N)])
        coo_adj = nx.to_scipy_sparse_array(G, weight=None).tocoo()
        edge_list = torch.from_numpy(np.vstack((coo_adj.row, coo_adj.col)).astype(np.int64))
        edge_list = add_self_loops(edge_list, G.number_of_nodes())
        adj = normalize_adj(edge_list)
        adjmat = torch.FloatTensor(nx.to_numpy_array(G, weight=None) + np.eye(N))

        return adj, edge_list, features, labels, adjmat, G

    class Data(object):
        def __init__(self, dataset_str: str):
            data = load_karate_data()
            adj, edge_list, features, labels, adjmat, G = data

            self.adj = adj
            self.edge_list = edge_list
            self.features = features
            self.labels = labels
            self.adjmat = adjmat
            self.G = G
            self.num_nodes = features.size(0)
            self.num_features = features.size(1)
            self.num_classes = int(torch.max(labels)) + 1

            # For Embedding Training
            N = features.size(0)
            E = edge_list.size(1)
            self.pos_weight = torch.tensor((N * N) / E - 1)
            self.norm = (N * N) / ((N * N - E) * 2)

        def to(self, device):
            self.adj = self.adj.to(device)
            self.edge_list = self.edge_list.to(device)
            self.features = self.features.to(device)
            self.labels = self.labels.to(device)
            self.adjmat = self.adjmat.to(device)

    class LinkPredData(Data):
        def __init__(self, dataset_str, val_ratio=0.05, test_ratio=0.1, seed=None):
            super(LinkPredData, self).__init__(dataset_str)
            train_edges, val_edges, test_edges = split_edges(self.G, val_ratio, test_ratio)
            negative_edges = torch.stack(torch.where(self.adjmat == 0))

            # Update edge_list and adj to train edge_list, adj, and adjmat
            edge_list = torch.cat([train_edges, torch.stack([train_edges[1], train_edges[0]])], dim=1)
            self.edge_list = add_self_loops(edge_list, self.num_nodes)
            self.adj = normalize_adj(self.edge_list)
            self.adjmat = torch.where(self.adj.to_dense() > 0, torch.tensor(1.), torch.tensor(0.))

            neg_idx = np.random.choice(negative_edges.size(1), val_edges.size(1) + test_edges.size(1))

            self.val_edges = val_edges
            self.neg_val_edges = negative_edges[:, neg_idx[:val_edges.size(1)]]
            self.test_edges = test_edges
            self.neg_test_edges = negative_edges[:, neg_idx[val_edges.size(1):]]

            # For Link Prediction Training
            N = self.features.size(0)
            E = self.edge_list.size(1)
            self.pos_weight = torch.tensor((N * N - E) / E)
            self.norm = (N * N) / ((N * N - E) * 2)

        def to(self, device):
            super().to(device)
            self.val_edges = self.val_edges.to(device)
            self.neg_val_edges = self.neg_val_edges.to(device)
            self.test_edges = self.test_edges.to(device)
            self.neg_test_edges = self.neg_test_edges.to(device)

    class GCNConv(nn.Module):
        def __init__(self, in_features, out_features, bias=True):
            super(GCNConv, self).__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.weight = nn.Parameter(torch.FloatTensor(in_features, out_features))
            if bias:
                self.bias = nn.Parameter(torch.FloatTensor(out_features))
            else:
                self.register_parameter('bias', None)
            self.reset_parameters()

        def reset_parameters(self):
            nn.init.xavier_uniform_(self.weight.data, gain=1.414)
            if self.bias is not None:
                self.bias.data.fill_(0)

        def forward(self, x, adj):
            x = torch.matmul(x, self.weight)
            x = torch.spmm(adj, x)
            if self.bias is not None:
                x += self.bias
            return x

    def reparameterize(mu, logvar, training):
        if training:
            std = torch.exp(logvar)
            eps = torch.randn_like(std)
            return mu + std * eps
        else:
            return mu

    class VGAE(nn.Module):
        def __init__(self, data, nhid=32, latent_dim=16):
            super(VGAE, self).__init__()
            self.encoder = Encoder(data, nhid, latent_dim, bias=False)
            self.decoder = Decoder()

        def reset_parameters(self):
            self.encoder.reset_parameters()

        def recon_loss(self, data, output):
            adj_recon = output['adj_recon']
            return data.norm * F.binary_cross_entropy_with_logits(adj_recon, data.adjmat, pos_weight=data.pos_weight)

        def loss_function(self, data, output):
            recon_loss = self.recon_loss(data, output)
            mu, logvar = output['mu'], output['logvar']
            kl = - 1 / (2 * data.num_nodes) * torch.mean(torch.sum(
                1 + 2 * logvar - mu.pow(2) - logvar.exp().pow(2), 1))
            return recon_loss + kl

        def forward(self, data):
            mu, logvar = self.encoder(data)
            z = reparameterize(mu, logvar, self.training)
            adj_recon = self.decoder(z)
            return {'adj_recon': adj_recon, 'z': z, 'mu': mu, 'logvar': logvar}

    class Encoder(nn.Module):
        def __init__(self, data, nhid, latent_dim, bias=True):
            super(Encoder, self).__init__()
            nfeat = data.num_features
            self.gc1 = GCNConv(nfeat, nhid, bias)
            self.gc_mu = GCNConv(nhid, latent_dim, bias)
            self.gc_logvar = GCNConv(nhid, latent_dim, bias)

        def reset_parameters(self):
            self.gc1.reset_parameters()
            self.gc_mu.reset_parameters()
            self.gc_logvar.reset_parameters()

        def forward(self, data):
            x, adj = data.features, data.adj
            x = F.relu(self.gc1(x, adj))
            mu, logvar = self.gc_mu(x, adj), self.gc_logvar(x, adj)
            return mu, logvar

    class Decoder(nn.Module):
        def __init__(self):
            super(Decoder, self).__init__()

        def forward(self, z):
            adj = torch.mm(z, z.t())
            return adj

    def linkpred_score(z, pos_edges, neg_edges):
        pos_score = torch.sigmoid(torch.sum(z[pos_edges[0]] * z[pos_edges[1]], dim=1))
        neg_score = torch.sigmoid(torch.sum(z[neg_edges[0]] * z[neg_edges[1]], dim=1))
        pred_score = torch.cat([pos_score, neg_score]).cpu().numpy()
        true_score = np.hstack([np.ones(pos_score.size(0)), np.zeros(neg_score.size(0))])
        roc_score = roc_auc_score(true_score, pred_score)
        ap_score = average_precision_score(true_score, pred_score)
        return roc_score, ap_score

    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

    class Trainer(object):
        def __init__(self, model, data, lr, weight_decay, epochs, verbose=True):
            self.model = model
            self.optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
            self.data = data
            self.epochs = epochs
            self.verbose = verbose

            self.model.to(device).reset_parameters()
            self.data.to(device)

        def train(self):
            model, optimizer, data = self.model, self.optimizer, self.data
            model.train()
            optimizer.zero_grad()
            output = model(data)
            loss = model.loss_function(data, output)
            loss.backward()
            optimizer.step()

        def evaluate(self):
            model, data = self.model, self.data
            model.eval()

            with torch.no_grad():
                output = model(data)

            return self.score_function(output)

        def run(self, log):
            # tqdm's postfix goes to ``log``
            for _ in range(1, self.epochs + 1):
                self.train()
                evals = self.evaluate()
                log("evals", evals)

            with torch.no_grad():
                output = self.model(self.data)
            return output

    class LinkPredTrainer(Trainer):
        def score_function(self, output):
            model, data = self.model, self.data
            loss = model.loss_function(data, output)
            val_roc, val_ap = linkpred_score(output['z'], data.val_edges, data.neg_val_edges)
            test_roc, test_ap = linkpred_score(output['z'], data.test_edges, data.neg_test_edges)

            return {'loss': float(loss), 'val_roc': val_roc, 'val_ac': val_ap, 'test_roc': test_roc, 'test_ap': test_ap}

    return LinkPredData, VGAE, LinkPredTrainer, normalize_adj


# main.py's link prediction with the VGAE on the karate club (34 nodes; nhid 8, latent 4), 3
# epochs at lr 0.01 and weight_decay 5e-4; the edge split and negative sampling from numpy's
# global stream seeded alike; the weights set from numpy after ``reset_parameters`` (xavier
# draws from torch's stream); ``randn_like`` from a seeded numpy stream.
def test_vgae_link_prediction():
    def program(mod, log):
        T = SeededTorch(mod, 11)
        LinkPredData, VGAE, LinkPredTrainer, normalize_adj = _vgae_classes(T)
        with seeded(0):
            data = LinkPredData('karate')
        log("data", [data.edge_list, data.adjmat, data.pos_weight, data.norm, data.val_edges,
                     data.neg_test_edges, data.num_classes])
        log("adj", [data.adj.to_dense(), data.adj.is_sparse, str(data.adj.layout).split(".")[-1],
                    data.adj._nnz()])
        model = VGAE(data, nhid=8, latent_dim=4)
        trainer = LinkPredTrainer(model, data, 0.01, 5e-4, 3)
        init_params(mod, model, 6, scale=0.3)
        output = trainer.run(log)
        log("output", output)
        log("grads", [p.grad for p in model.parameters()])

    run_both(program)
