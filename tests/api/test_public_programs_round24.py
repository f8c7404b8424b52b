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
  ``no_grad``, ``.grad = None``), with the example script's ``measureSimilarities``.

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters in place of
downloads and random streams; where a program's own code had to change, the comment above its
test says how and why.
"""
import re
from typing import Callable

import numpy as np
import pytest

from parity import run_both

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


def _printer(log):
    """A ``print`` for programs that print full-precision floats: logs the printed words, numbers
    as floats (so they compare with tolerances instead of digit by digit)."""
    def print_(*args):
        words = re.split(r"[\s,:]+", " ".join(str(a) for a in args).strip())
        out = []
        for w in words:
            try:
                out.append(float(w))
            except ValueError:
                out.append(w)
        log("printed", out)
    return print_


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
        print = _printer(log)
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
