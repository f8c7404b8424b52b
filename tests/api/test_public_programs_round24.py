"""A twenty-fourth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round23.py``, from repositories no earlier round used:

- hmcalister/Hopfield-Network-PyTorch: the dense associative memory (Krotov & Hopfield 2016)
  ``ModernHopfieldNetwork`` with its ``RectifiedPolynomialInteractionFunction``: direct memory
  storage and ``relaxStates`` (``torch.tile``, per-neuron slice writes ``t[d, a:b] = 1``, the
  advanced-index write ``X[idx[:, None], items] = Y`` under ``@torch.no_grad()``, ``torch.sign``,
  ``torch.all`` as the loop's stop test), and ``learnMemories`` (float64 leaf memories,
  ``torch.chunk`` neuron batches, ``torch.max(..., axis=0).values``, the masked write
  ``m[m < precision] = precision``, ``self.memories -= ...`` and ``clamp_`` on a leaf under
  ``no_grad``, ``.grad = None``), with the example script's ``measureSimilarities``;
- esceptico/perceiver-io: ``PerceiverIO`` (``PerceiverEncoder``'s trainable latents
  ``repeat(batch_size, 1, 1)`` into a ``CrossAttention``, a weight-shared ``SelfAttention`` block
  run ``num_blocks`` times, the ``MultiHeadAttention`` with ``x.view(*dims, seq, heads, hd)``
  star-unpacked sizes, ``transpose(-3, -2)``, ``torch.finfo(dtype).min`` additive masks) with its
  ``ProjectionDecoder``, trained for classification with SGD; the masked path's
  ``masked_fill(1 - mask, ...)`` refuses a non-bool mask on both sides.

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters in place of
downloads and random streams; where a program's own code had to change, the comment above its
test says how and why.
"""
from typing import Callable

import numpy as np
import pytest

from parity import init_params, printer, run_both

torch = pytest.importorskip("torch")


class _Seeded:
    """The program's ``torch`` with its random draws (``rand``, ``randperm``, ``bernoulli``) taken
    from one numpy stream, so that torch and tracegrad see the same numbers; everything else is
    the module itself."""

    def __init__(self, mod, seed):
        self._mod = mod
        self._rs = np.random.RandomState(seed)

    def __getattr__(self, name):
        return getattr(self._mod, name)

    def rand(self, size, requires_grad=False, device=None, dtype=None):
        arr = self._rs.uniform(0, 1, size)
        return self._mod.tensor(arr, dtype=dtype or self._mod.float32, device=device,
                                requires_grad=requires_grad)

    def randperm(self, n):
        return self._mod.tensor(self._rs.permutation(n))

    def bernoulli(self, p):
        draw = self._rs.uniform(0, 1, tuple(p.shape)) < p.numpy()
        return self._mod.tensor(draw.astype(np.float32)).to(p.dtype)


def _tqdm(it, **kw):
    """tqdm stand-in (progress bars write to stderr at random times)."""
    class _Bar:
        def __iter__(self):
            return iter(it)

        def set_postfix(self, *a, **k):
            pass

        def update(self, *a, **k):
            pass
    return _Bar()


# ---- hmcalister/Hopfield-Network-PyTorch ---------------------------------------------------------
def _hopfield_module(torch, print):
    """HopfieldNetworkPyTorch/ModernHopfieldNetwork/ModernHopfieldNetwork.py,
    InteractionFunction/{AbstractInteractionFunction,RectifiedPolynomialInteractionFunction}.py and
    utils/utils.py, unchanged but for docstrings (``tqdm`` is a silent stand-in, ``print`` logs)."""
    from abc import abstractmethod, ABC
    tqdm = _tqdm

    class AbstractInteractionFunction(ABC):

        def __init__(self, n: int):
            self.n = n

        @abstractmethod
        def __call__(self, X: torch.Tensor) -> torch.Tensor:
            pass

    class RectifiedPolynomialInteractionFunction(AbstractInteractionFunction):

        def __init__(self, n: int):
            super().__init__(n)

        def __call__(self, X: torch.Tensor) -> torch.Tensor:
            return torch.where(X<=0, X, X**self.n)

    def createBipolarStates(dimension: int, numStates: int) -> torch.Tensor:
        X = 0.5*torch.ones(size=(dimension, numStates))
        X = 2*torch.bernoulli(X)-1
        return X

    class ModernHopfieldNetwork():

        def __init__(self, dimension: int, nMemories: int, torchDevice: str, interactionFunction: AbstractInteractionFunction, itemBatchSize: int = None, neuronBatchSize: int = None):
            self.dimension = dimension
            self.memories = torch.rand(size=(self.dimension, nMemories), requires_grad=True, device=torchDevice, dtype=torch.float64)
            self.memories.clamp(-1,1)
            self.interactionFunction = interactionFunction

            self.itemBatchSize = itemBatchSize
            self.neuronBatchSize = neuronBatchSize

        def setItemBatchSize(self, itemBatchSize: int) :
            self.itemBatchSize = itemBatchSize

        def setNeuronBatchSize(self, neuronBatchSize: int) :
            self.neuronBatchSize = neuronBatchSize

        def setMemories(self, memories: torch.Tensor):
            if memories.shape != self.memories.shape:
                raise ValueError("memories should have shape (network.dimension, nMemories)")
            self.memories = memories.requires_grad_().to(self.memories.device)

        def learnMemories(self, X: torch.Tensor,
                            maxEpochs: int = 100,
                            initialLearningRate: float = 0.1,
                            learningRateDecay: float = 1.0,
                            momentum: float = 0.0,
                            initialTemperature: float = 100,
                            finalTemperature: float = 100,
                            errorPower: int = 1,
                            precision: float = 1.0e-30,
                            neuronMask: torch.Tensor = None,
                            verbose: int = 2,
                          ):
            # The neurons to train, either masked by the function call or all neurons
            neuronMask = neuronMask if neuronMask is not None else torch.arange(self.dimension)
            # The size of neuron-wise batches. If not passed, use all neurons in one batch
            neuronBatchSize = self.neuronBatchSize if self.neuronBatchSize is not None else self.dimension
            numNeuronBatches = np.ceil(neuronMask.shape[0] / neuronBatchSize).astype(int)
            # Get the neuron batches, sets of indices to train at once
            neuronBatches = torch.chunk(neuronMask, numNeuronBatches)

            # A tensor of all item indices
            itemIndices = torch.arange(X.shape[1])
            # The size of the item-wise batches. If not passed, use all items in one batch
            itemBatchSize = self.itemBatchSize if self.itemBatchSize is not None else X.shape[1]
            numItemBatches = np.ceil(itemIndices.shape[0] / itemBatchSize).astype(int)

            history = []
            interactionVertex = self.interactionFunction.n
            memoryGrads = torch.zeros_like(self.memories).to(self.memories.device)
            epochProgressbar = tqdm(range(maxEpochs), desc="Epoch", disable=(verbose!=1))
            for epoch in range(maxEpochs):
                epochTotalLoss = 0

                # Shuffle the learned items so we are not learning the exact same batches each epoch
                shuffledIndices = torch.randperm(X.shape[1])
                X = X[:, shuffledIndices]

                learningRate = initialLearningRate*learningRateDecay**epoch
                temperature = initialTemperature + (finalTemperature-initialTemperature) * epoch/maxEpochs

                # Determine the value of beta for this epoch
                beta = 1/(temperature)

                itemBatches = torch.chunk(X, numItemBatches, dim=1)
                for itemBatchIndex in range(numItemBatches):
                    itemBatch = itemBatches[itemBatchIndex].detach()
                    currentItemBatchSize = itemBatch.shape[1]

                    itemBatchLoss = 0
                    for neuronBatchIndex in range(numNeuronBatches):
                        neuronIndices = neuronBatches[neuronBatchIndex].detach()
                        neuronBatchNumIndices = neuronIndices.shape[0]

                        tiledBatchClampOn = torch.tile(itemBatch, (1,neuronBatchNumIndices))
                        tiledBatchClampOff = torch.clone(tiledBatchClampOn)
                        for i, d in enumerate(neuronIndices):
                            tiledBatchClampOn[d,i*currentItemBatchSize:(i+1)*currentItemBatchSize] = 1
                            tiledBatchClampOff[d,i*currentItemBatchSize:(i+1)*currentItemBatchSize] = -1
                        onSimilarity = self.interactionFunction(beta*(self.memories.T @ tiledBatchClampOn))
                        offSimilarity = self.interactionFunction(beta*(self.memories.T @ tiledBatchClampOff))
                        Y = torch.tanh(torch.sum(onSimilarity-offSimilarity, axis=0)).reshape([neuronBatchNumIndices, currentItemBatchSize])

                        neuronBatchLoss = torch.sum((Y - itemBatch[neuronIndices])**(2*errorPower))
                        itemBatchLoss += neuronBatchLoss

                    itemBatchLoss.backward()
                    with torch.no_grad():
                        epochGrads = self.memories.grad
                        memoryGrads = momentum * memoryGrads + epochGrads
                        maxGradMagnitude = torch.max(torch.abs(memoryGrads), axis=0).values.reshape(1, self.memories.shape[1])
                        maxGradMagnitude[maxGradMagnitude<precision] = precision
                        maxGradMagnitudeTiled = torch.tile(maxGradMagnitude, (self.dimension, 1))
                        self.memories -= learningRate * memoryGrads / maxGradMagnitudeTiled
                        self.memories = self.memories.clamp_(-1,1)
                        self.memories.grad = None
                        epochTotalLoss += itemBatchLoss.item() / (neuronMask.shape[0] * itemIndices.shape[0])

                history.append(epochTotalLoss)
                if verbose==1:
                    epochProgressbar.set_postfix({"Loss": f"{history[-1]:4e}"})
                    epochProgressbar.update()
                if verbose==2:
                    print(f"Epoch {epoch:04}: Loss {history[-1]}")

            return history

        @torch.no_grad()
        def energy(self, X: torch.Tensor) -> torch.Tensor:
            return -self.interactionFunction(torch.sum(self.memories.T @ X, axis=0))

        @torch.no_grad()
        def stepStates(self, X: torch.Tensor, neuronMask: torch.Tensor = None, activationFunction: Callable = torch.sign):
            neuronMask = neuronMask if neuronMask is not None else torch.arange(self.dimension)
            neuronBatchSize = self.neuronBatchSize if self.neuronBatchSize is not None else self.dimension
            numNeuronBatches = np.ceil(neuronMask.shape[0] / neuronBatchSize).astype(int)
            neuronIndexBatches = torch.chunk(neuronMask, numNeuronBatches)

            itemIndices = torch.arange(X.shape[1])
            itemBatchSize = self.itemBatchSize if self.itemBatchSize is not None else X.shape[1]
            numItemBatches = np.ceil(itemIndices.shape[0] / itemBatchSize).astype(int)
            itemIndexBatches = torch.chunk(itemIndices, numItemBatches)

            for itemBatchIndices in itemIndexBatches:
                itemBatchIndices = itemBatchIndices.detach()
                currentItemBatchSize = itemBatchIndices.shape[0]
                items = X[:, itemBatchIndices]

                for neuronBatchIndices in neuronIndexBatches:
                    neuronBatchIndices = neuronBatchIndices.detach()
                    neuronBatchNumIndices = neuronBatchIndices.shape[0]

                    tiledBatchClampOn = torch.tile(items, (1,neuronBatchNumIndices))
                    tiledBatchClampOff = torch.clone(tiledBatchClampOn)
                    for i, d in enumerate(neuronBatchIndices):
                        tiledBatchClampOn[d,i*currentItemBatchSize:(i+1)*currentItemBatchSize] = 1
                        tiledBatchClampOff[d,i*currentItemBatchSize:(i+1)*currentItemBatchSize] = -1
                    onSimilarity = self.interactionFunction(self.memories.T @ tiledBatchClampOn)
                    offSimilarity = self.interactionFunction(self.memories.T @ tiledBatchClampOff)

                    Y = activationFunction(torch.sum(onSimilarity-offSimilarity, axis=0))
                    Y = torch.reshape(Y, [neuronBatchNumIndices, currentItemBatchSize])
                    X[neuronBatchIndices[:, None], itemBatchIndices] = Y

        @torch.no_grad()
        def relaxStates(self, X: torch.Tensor, maxIterations: int = 100, neuronMask: torch.Tensor = None, verbose: bool = False):
            for _ in tqdm(range(maxIterations), desc="Relax States", disable=not verbose):
                X_prev = X.clone()
                self.stepStates(X, neuronMask)
                if torch.all(X_prev == X):
                    break

    return RectifiedPolynomialInteractionFunction, createBipolarStates, ModernHopfieldNetwork


# examples/modernHopfield.py at tiny sizes (dimension 4, 2 memories, 3 learned states, 3 probe
# states, 3 epochs, neuron batches of 2, ``relaxStates(x, maxIterations=4)``: the learned memories'
# states oscillate, and the default 100 sweeps would only repeat them). Changed: the learned run also gets float64 states: the
# example passes float32 states to a network whose learned memories are float64 (``torch.rand(...,
# dtype=torch.float64)``), and ``memories.T @ states`` refuses the mix: that call is logged as an
# outcome first. ``device`` is "cpu".
def test_hmcalister_modern_hopfield_network():
    def program(mod, log):
        torch = _Seeded(mod, 24)
        print = printer(log)
        RectifiedPolynomialInteractionFunction, createBipolarStates, ModernHopfieldNetwork = _hopfield_module(torch, print)
        device = "cpu"

        def measureSimilarities(learnedStates, states, trialStr):
            similarities = torch.abs(learnedStates.T @ states)
            mostSimilar = torch.max(similarities, axis=0).values / x.shape[0]
            print(trialStr)
            print("\tFinal State Average Similarity to Memory:\t", torch.mean(mostSimilar).item())
            print("\tFinal State Average Standard Deviation of Similarity:\t", torch.std(mostSimilar).item())

        dimension, nMemories, nLearnedStates, nStates = 4, 2, 3, 3
        interactionVertex, temperature = 3, 4
        itemBatchSize, neuronBatchSize = None, 2

        learnedStates = createBipolarStates(dimension, nLearnedStates).to(device)
        X = createBipolarStates(dimension, nStates).to(device)
        log("states", (learnedStates, X))
        interactionFunc = RectifiedPolynomialInteractionFunction(n=interactionVertex)

        x = X.clone()
        measureSimilarities(learnedStates, x, "Initial Similarity")

        # Direct Memory Storage
        network = ModernHopfieldNetwork(dimension, nLearnedStates, device, interactionFunc, itemBatchSize, neuronBatchSize)
        network.setMemories(learnedStates)
        log("direct memories", (network.memories.requires_grad, network.memories.is_leaf,
                                network.memories is learnedStates))
        x = X.clone()
        network.relaxStates(x, maxIterations=4)
        log("direct relaxed", (x, network.energy(x)))
        measureSimilarities(learnedStates, x, "Direct Memory Storage")
        try:
            network.setMemories(X)
        except ValueError as e:
            log("bad shape", str(e))

        # Learned Memories
        network = ModernHopfieldNetwork(dimension, nMemories, device, interactionFunc, itemBatchSize, neuronBatchSize)
        log("initial memories", (network.memories, network.memories.dtype))
        try:
            network.learnMemories(learnedStates, maxEpochs=1, verbose=0)
        except RuntimeError:
            log("float32 states", "RuntimeError")
        log("grad after failure", network.memories.grad)
        history = network.learnMemories(learnedStates.double(),
                                        maxEpochs = 3,
                                        initialLearningRate = 1e-1,
                                        learningRateDecay = 0.999,
                                        momentum = 0.6,
                                        initialTemperature=temperature,
                                        finalTemperature=temperature / 2,
                                        errorPower = 2,
                                        verbose=2
                                    )
        m = network.memories
        log("learned", (history, m, m.requires_grad, m.is_leaf, m.grad, m.grad_fn))

        x = X.clone().double()
        network.relaxStates(x, maxIterations=4)
        log("learned relaxed", (x, network.energy(x)))
        measureSimilarities(learnedStates.double(), x, "Learned Memory Storage")

    run_both(program)


# ---- esceptico/perceiver-io ---------------------------------------------------------------------
def _perceiver_module(torch):
    """src/perceiver_io/{attention,encoder,decoders,perceiver}.py, unchanged but for docstrings
    (``PerceiverDecoder``/``ClassificationDecoder`` left out: they pass a ``head_dim`` this
    version of ``CrossAttention`` does not take)."""
    from abc import ABCMeta, abstractmethod
    from typing import Optional
    nn = torch.nn

    class MultiHeadAttention(nn.Module):
        def __init__(self, kv_dim: int, q_dim: int, *, qk_out_dim: Optional[int] = None,
                     v_out_dim: Optional[int] = None, output_dim: Optional[int] = None,
                     num_heads: int = 1, dropout: float = 0.0):
            super().__init__()

            if qk_out_dim is None:
                qk_out_dim = q_dim
            if v_out_dim is None:
                v_out_dim = qk_out_dim
            if output_dim is None:
                output_dim = v_out_dim

            self.num_heads = num_heads
            self.qk_head_dim = qk_out_dim // num_heads
            self.v_head_dim = v_out_dim // num_heads

            self.k = nn.Linear(kv_dim, qk_out_dim)
            self.q = nn.Linear(q_dim, qk_out_dim)
            self.v = nn.Linear(kv_dim, v_out_dim)
            self.projection = nn.Linear(v_out_dim, output_dim)
            self.dropout = nn.Dropout(dropout)
            self.scale = self.qk_head_dim ** -0.5

        def transform_for_scores(self, x: torch.Tensor, head_dim: int):
            # (..., seq_len, dim) -> (..., n_heads, seq_len, head_dim)
            *dims, seq, hid = x.size()
            x = x.view(*dims, seq, self.num_heads, head_dim)
            return x.transpose(-3, -2)

        def forward(self, inputs_kv: torch.Tensor, inputs_q: torch.Tensor,
                    attention_mask: Optional[torch.Tensor] = None):
            keys, queries, values = self.k(inputs_kv), self.q(inputs_q), self.v(inputs_kv)
            keys = self.transform_for_scores(keys, self.qk_head_dim)
            queries = self.transform_for_scores(queries, self.qk_head_dim)
            values = self.transform_for_scores(values, self.v_head_dim)
            attention = (queries @ keys.transpose(-2, -1) * self.scale)
            if attention_mask is not None:
                min_value = torch.finfo(attention.dtype).min
                extended_mask = (1 - attention_mask) * min_value
                attention = attention + extended_mask
            attention = attention.softmax(dim=-1)
            attention = self.dropout(attention)
            if attention_mask is not None:
                attention = attention.masked_fill(1 - attention_mask, value=0)
            weighted = attention @ values
            # (..., n_heads, seq_len, head_dim) -> (..., seq_len, hid)
            *dims, n_heads, seq, hid = weighted.size()
            weighted = weighted.transpose(-3, -2)
            weighted = weighted.reshape(*dims, seq, n_heads * hid)
            return self.projection(weighted)

    class FeedForward(nn.Module):
        def __init__(self, dim: int, widening_factor: int = 4, dropout: float = 0.0):
            super().__init__()
            self.mlp = nn.Sequential(
                nn.Linear(dim, dim * widening_factor),
                nn.GELU(),
                nn.Linear(dim * widening_factor, dim),
                nn.Dropout(dropout)
            )

        def forward(self, x: torch.Tensor):
            return self.mlp(x)

    class SelfAttention(nn.Module):
        def __init__(self, *, hidden_dim: int, qk_out_dim: Optional[int] = None,
                     v_out_dim: Optional[int] = None, widening_factor: int = 4, num_heads: int = 1,
                     dropout: float = 0.0, attention_dropout: float = 0.0):
            super().__init__()
            self.layer_norm = nn.LayerNorm(hidden_dim)
            self.qkv_layer_norm = nn.LayerNorm(hidden_dim)
            self.attention = MultiHeadAttention(
                kv_dim=hidden_dim,
                q_dim=hidden_dim,
                qk_out_dim=qk_out_dim,
                v_out_dim=v_out_dim,
                output_dim=hidden_dim,
                num_heads=num_heads,
                dropout=attention_dropout
            )
            self.dropout = nn.Dropout(dropout)
            self.mlp = FeedForward(hidden_dim, widening_factor, dropout)

        def forward(self, x: torch.Tensor, attention_mask: Optional[torch.Tensor] = None):
            x_norm = self.layer_norm(x)
            attention = self.attention(
                inputs_kv=x_norm,
                inputs_q=x_norm,
                attention_mask=attention_mask
            )
            attention = self.dropout(attention)
            x = x + attention
            x = x + self.mlp(self.qkv_layer_norm(x))
            return x

    class CrossAttention(nn.Module):
        def __init__(self, *, kv_dim: int, q_dim: int, qk_out_dim: Optional[int] = None,
                     v_out_dim: Optional[int] = None, widening_factor: int = 1, num_heads: int = 1,
                     use_query_residual: bool = True, dropout: float = 0.0,
                     attention_dropout: float = 0.0):
            super().__init__()
            self.use_query_residual = use_query_residual
            self.kv_layer_norm = nn.LayerNorm(kv_dim)
            self.q_layer_norm = nn.LayerNorm(q_dim)
            self.qkv_layer_norm = nn.LayerNorm(q_dim)
            self.attention = MultiHeadAttention(
                kv_dim=kv_dim,
                q_dim=q_dim,
                qk_out_dim=qk_out_dim,
                v_out_dim=v_out_dim,
                output_dim=q_dim,
                num_heads=num_heads,
                dropout=attention_dropout
            )
            self.dropout = nn.Dropout(dropout)
            self.mlp = FeedForward(q_dim, widening_factor, dropout)

        def forward(self, inputs_kv: torch.Tensor, inputs_q: torch.Tensor,
                    attention_mask: Optional[torch.Tensor] = None):
            attention = self.attention(
                inputs_kv=self.kv_layer_norm(inputs_kv),
                inputs_q=self.q_layer_norm(inputs_q),
                attention_mask=attention_mask
            )
            attention = self.dropout(attention)
            if self.use_query_residual:
                x = inputs_q + attention
            else:
                x = attention
            x = x + self.mlp(self.qkv_layer_norm(x))
            return x

    class PerceiverEncoder(nn.Module):
        def __init__(self, num_latents: int, latent_dim: int, input_dim: int,
                     num_self_attn_per_block: int = 2, num_blocks: int = 4,
                     qk_out_dim: Optional[int] = None, v_out_dim: Optional[int] = None,
                     num_cross_attn_heads: int = 1, num_self_attn_heads: int = 8,
                     cross_attn_widening_factor: int = 1, self_attn_widening_factor: int = 1,
                     use_query_residual: bool = True, dropout: float = 0.0,
                     cross_attention_dropout: float = 0.0, self_attention_dropout: float = 0.0):
            super().__init__()
            self.num_blocks = num_blocks

            self.latents = nn.Parameter(torch.randn(num_latents, latent_dim))
            self.cross_attn = CrossAttention(
                kv_dim=input_dim,
                q_dim=latent_dim,
                widening_factor=cross_attn_widening_factor,
                num_heads=num_cross_attn_heads,
                qk_out_dim=qk_out_dim,
                v_out_dim=v_out_dim,
                use_query_residual=use_query_residual,
                dropout=dropout,
                attention_dropout=cross_attention_dropout
            )
            self.self_attention_block = nn.ModuleList([
                SelfAttention(
                    hidden_dim=latent_dim,
                    widening_factor=self_attn_widening_factor,
                    num_heads=num_self_attn_heads,
                    qk_out_dim=qk_out_dim,
                    v_out_dim=v_out_dim,
                    dropout=dropout,
                    attention_dropout=self_attention_dropout
                ) for _ in range(num_self_attn_per_block)
            ])

        def forward(self, x: torch.Tensor, kv_mask: Optional[torch.Tensor] = None):
            batch_size = x.size(0)
            if kv_mask is not None:
                kv_mask = kv_mask[:, None, None, :]

            latents = self.cross_attn(
                inputs_kv=x,
                inputs_q=self.latents.repeat(batch_size, 1, 1),
                attention_mask=kv_mask
            )
            for _ in range(self.num_blocks):
                for self_attn_layer in self.self_attention_block:
                    latents = self_attn_layer(latents)
            return latents

    class BasePerceiverDecoder(nn.Module, metaclass=ABCMeta):
        @abstractmethod
        def forward(self, *, query: torch.Tensor, latents: torch.Tensor,
                    q_mask: Optional[torch.Tensor] = None):
            return NotImplementedError

    class ProjectionDecoder(BasePerceiverDecoder):
        def __init__(self, latent_dim: int, num_classes: int):
            super().__init__()
            self.projection = nn.Linear(latent_dim, num_classes)

        def forward(self, *, query: torch.Tensor, latents: torch.Tensor,
                    q_mask: Optional[torch.Tensor] = None):
            latents = latents.mean(dim=1)
            logits = self.projection(latents)
            return logits

    class PerceiverIO(nn.Module):
        def __init__(self, encoder: PerceiverEncoder, decoder: BasePerceiverDecoder):
            super().__init__()
            self.encoder = encoder
            self.decoder = decoder

        def forward(self, inputs: torch.Tensor, query: Optional[torch.Tensor] = None,
                    input_mask: Optional[torch.Tensor] = None,
                    query_mask: Optional[torch.Tensor] = None):
            latents = self.encoder(inputs, kv_mask=input_mask)
            outputs = self.decoder(
                query=query,
                latents=latents,
                q_mask=query_mask
            )
            return outputs

    return PerceiverEncoder, ProjectionDecoder, PerceiverIO


# test1.py's construction at tiny sizes (4 latents of width 8, inputs (2, 4, 8): the cross-
# and self-attention share shapes, so programs; 2 heads each, one self-attention layer run in 2
# weight-shared blocks, 3 classes) with a ProjectionDecoder, trained
# two SGD steps on cross-entropy (the repository's train scripts use pytorch-lightning; plain SGD
# keeps the test cheap: its update is one program per parameter chunk); numpy inputs and
# parameters (``init_params``) in place of ``randn``.
def test_esceptico_perceiver_io_classifier():
    def program(torch, log):
        PerceiverEncoder, ProjectionDecoder, PerceiverIO = _perceiver_module(torch)
        encoder = PerceiverEncoder(num_latents=4, latent_dim=8, input_dim=8, num_self_attn_per_block=1,
                                   num_blocks=2, num_cross_attn_heads=2, num_self_attn_heads=2)
        model = init_params(torch, PerceiverIO(encoder, ProjectionDecoder(latent_dim=8, num_classes=3)), 24)
        log("params", [(n, tuple(p.shape)) for n, p in model.named_parameters()])
        rs = np.random.RandomState(5)
        inputs = torch.tensor(rs.standard_normal((2, 4, 8)).astype(np.float32))
        labels = torch.tensor([2, 0])
        mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.uint8)
        try:
            model(inputs, input_mask=mask)
        except RuntimeError as e:
            log("masked", ("RuntimeError", "boolean masks" in str(e)))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(2):
            opt.zero_grad()
            logits = model(inputs)
            loss = torch.nn.functional.cross_entropy(logits, labels)
            loss.backward()
            log("step", (logits, loss, type(loss.grad_fn).__name__, encoder.latents.grad,
                         encoder.self_attention_block[0].attention.q.weight.grad,
                         encoder.cross_attn.kv_layer_norm.bias.grad))
            opt.step()
        log("latents", encoder.latents)

    run_both(program)


def test_chunk_and_split_size_arguments():
    # ModernHopfieldNetwork passes ``np.ceil(...).astype(int)`` (a numpy int) to torch.chunk:
    # chunk takes any __index__ count but a bool; split takes a one-element tensor (read with
    # int()) but refuses a numpy int or a float size, naming split_with_sizes
    import tracegrad

    def outcome(mod, fn):
        try:
            return [p.tolist() for p in fn(mod, mod.arange(7))]
        except TypeError as e:
            return ("TypeError", str(e).split("(")[0])

    cases = [lambda m, t: m.chunk(t, np.int64(3)), lambda m, t: t.chunk(m.tensor(2)),
             lambda m, t: t.chunk(True), lambda m, t: m.chunk(t, 2.0),
             lambda m, t: t.split(m.tensor([3])), lambda m, t: m.split(t, m.tensor(4)),
             lambda m, t: m.split(t, np.int32(3)), lambda m, t: t.split(2.0),
             lambda m, t: m.split(t, [np.int64(5), 2])]
    for fn in cases:
        assert outcome(tracegrad, fn) == outcome(torch, fn)
