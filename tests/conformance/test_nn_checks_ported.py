"""nn argument checks from PyTorch's test/test_nn.py and test/nn/ ported for the ``T`` fixture
(torch 2.13 is the oracle for every body); each test names its original."""
import numpy as np
import pytest


def test_one_hot(T):
    # TestNN.test_one_hot (test/test_nn.py): values, inferred/explicit classes, shapes, errors
    F = T.nn.functional
    v = T.tensor([3, 4, 1, 0])
    assert F.one_hot(v).tolist() == np.eye(5, dtype=int)[[3, 4, 1, 0]].tolist()
    assert F.one_hot(v, 6).tolist() == np.eye(6, dtype=int)[[3, 4, 1, 0]].tolist()
    assert F.one_hot(T.tensor([[3, 4], [1, 0]])).shape == (2, 2, 5)
    assert F.one_hot(T.tensor(4)).tolist() == [0, 0, 0, 0, 1]
    assert F.one_hot(T.empty([4, 0], dtype=T.long), 100).shape == (4, 0, 100)
    assert F.one_hot(v).dtype == T.int64
    with pytest.raises(RuntimeError):
        F.one_hot(T.empty([4, 0], dtype=T.long))
    with pytest.raises(RuntimeError):
        F.one_hot(T.tensor([3, 4, 1, 0]), -2)
    with pytest.raises(RuntimeError, match="non-negative"):
        F.one_hot(T.tensor([3, -1]), 5)
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        F.one_hot(T.tensor([3, 4, 1, 0]), 4)


@pytest.mark.parametrize("cls", ["MaxPool2d", "AvgPool2d"])
def test_pool2d_output_size_too_small(T, cls):
    # TestPoolingNN.test_MaxPool2d_output_size / test_AvgPool2d output size checks
    # (test/nn/test_pooling.py): a kernel that does not fit raises; padding that makes it fit
    # is accepted, with ceil_mode's last window kept only when it starts inside the input
    pool = getattr(T.nn, cls)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        pool(3)(T.ones(1, 1, 2, 2))
    assert tuple(pool(3, padding=1)(T.ones(1, 1, 2, 2)).shape) == (1, 1, 1, 1)
    assert tuple(pool(2, stride=2, ceil_mode=True)(T.ones(1, 1, 5, 5)).shape) == (1, 1, 3, 3)
    assert tuple(pool(2, stride=2)(T.ones(2, 5, 5)).shape) == (2, 2, 2)


def test_embedding_index_range(T):
    # TestEmbeddingNN.test_embedding_functional / test_embedding_dense_grad index checks
    # (test/nn/test_embedding.py): valid ids (any shape, int32 too) pick rows; the gradient
    # counts repeats; an id outside [0, num_embeddings) raises IndexError
    emb = T.nn.Embedding(4, 3)
    ids = T.tensor([[0, 2, 2], [3, 1, 0]])
    out = emb(ids)
    assert tuple(out.shape) == (2, 3, 3)
    out.sum().backward()
    assert emb.weight.grad[:, 0].tolist() == [2.0, 1.0, 2.0, 1.0]
    assert T.nn.functional.embedding(ids.int(), emb.weight).shape == out.shape
    for bad in ([4], [-1], [[0, 9]]):
        with pytest.raises(IndexError, match="index out of range"):
            emb(T.tensor(bad))


def test_parameter_requires_float(T):
    # TestNN.test_parameter_assignment-style / torch's "Only Tensors of floating point and
    # complex dtype can require gradients" for nn.Parameter
    with pytest.raises(RuntimeError, match="floating point"):
        T.nn.Parameter(T.tensor([1, 2]))
    p = T.nn.Parameter(T.tensor([1, 2]), requires_grad=False)
    assert not p.requires_grad and p.dtype == T.int64


def test_layer_norm_integer_input(T):
    # TestNN layer_norm dtype checks: integer input is not implemented for the kernel
    with pytest.raises(NotImplementedError, match="Long"):
        T.nn.functional.layer_norm(T.tensor([[1, 2, 3]]), (3,))
    with pytest.raises(RuntimeError, match="mixed dtype"):
        T.nn.LayerNorm(3)(T.tensor([[1, 2, 3]]))


def test_linear_rejects_0d(T):
    # TestNN.test_linear_autograd-family: Linear needs at least 1-D input
    with pytest.raises(RuntimeError, match="at least 1D"):
        T.nn.Linear(3, 2)(T.tensor(1.0))
    assert tuple(T.nn.Linear(3, 2)(T.ones(3)).shape) == (2,)
