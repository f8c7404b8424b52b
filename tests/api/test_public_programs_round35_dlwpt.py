"""The thirty-fifth round's notebooks from deep-learning-with-pytorch/dlwpt-code (see
``test_public_programs_round35.py`` for the round), run with torch and with tracegrad through
``parity.run_both``: everything printed must be torch's text and every logged value agree.

- ``p1ch3/1_tensors.ipynb``: storages printed element by element, ``storage()`` writes seen by
  the tensor, offsets, strides, contiguity, dtype casts, slicing, the NumPy bridge;
- ``p1ch5/1_parameter_estimation.ipynb``: after ``torch.set_printoptions(edgeitems=2)``, a
  hand-written gradient descent on the thermometer readings, one run diverging (parameters
  printed in scientific notation until the loss is ``inf``), losses printed with ``'%f'``;
- ``p1ch5/2_autograd.ipynb`` and ``p1ch5/3_optimizers.ipynb``: the same fit through autograd,
  ``SGD`` and ``Adam`` (the optimizer printed), a train/validation split under ``no_grad`` and
  ``set_grad_enabled``.

Changes to the notebooks: ``torch.randn``/``randperm`` draw from a seeded numpy stream, a cell's
last expression is printed with ``repr``, ``dir(optim)`` is shown for the names the notebook
printed, ``id(storage) == id(storage)`` compares ``data_ptr()`` (ids of freed temporaries),
``h5py``, file saves and CUDA cells are left out, ``float(loss)`` reads ``loss.detach()`` (torch
warns for a tensor that requires grad) and epoch counts are cut to 100, printed every 50.
"""
import warnings

import numpy as np
import pytest
from parity import run_both

torch = pytest.importorskip("torch")


def _display(v):
    """What a notebook shows for a cell's last expression."""
    print(repr(v))


def _randn(torch, seed, *size):
    """``torch.randn(*size)`` from a seeded numpy stream."""
    return torch.tensor(np.random.RandomState(seed).standard_normal(size), dtype=torch.float32)


# ---- deep-learning-with-pytorch/dlwpt-code p1ch3/1_tensors.ipynb ---------------------------------
def test_dlwpt_p1ch3_tensors_notebook():
    def program(torch, log):
        display = _display
        warnings.simplefilter("ignore")     # TypedStorage is deprecated (torch warns once)
        a = [1.0, 2.0, 1.0]
        display(a[0])
        a[2] = 3.0
        display(a)
        a = torch.ones(3)
        display(a)
        display(a[1])
        display(float(a[1]))
        a[2] = 2.0
        display(a)
        points = torch.zeros(6)
        points[0] = 1.0
        points[1] = 4.0
        points[2] = 2.0
        points[3] = 1.0
        points[4] = 3.0
        points[5] = 5.0
        display(points)
        points = torch.tensor([1.0, 4.0, 2.0, 1.0, 3.0, 5.0])
        display(points)
        display((float(points[0]), float(points[1])))
        points = torch.tensor([[1.0, 4.0], [2.0, 1.0], [3.0, 5.0]])
        display(points)
        display(points.shape)
        points = torch.zeros(3, 2)
        display(points)
        points = torch.FloatTensor([[1.0, 4.0], [2.0, 1.0], [3.0, 5.0]])
        display(points)
        display(points[0, 1])
        display(points[0])
        points = torch.tensor([[1.0, 4.0], [2.0, 1.0], [3.0, 5.0]])
        display(points.storage())
        points_storage = points.storage()
        display(points_storage[0])
        display(points.storage()[1])
        points = torch.tensor([[1.0, 4.0], [2.0, 1.0], [3.0, 5.0]])
        points_storage = points.storage()
        points_storage[0] = 2.0
        display(points)
        points = torch.tensor([[1.0, 4.0], [2.0, 1.0], [3.0, 5.0]])
        second_point = points[1]
        display(second_point.storage_offset())
        display(second_point.size())
        display(second_point.shape)
        display(points.stride())
        display(second_point.stride())
        second_point[0] = 10.0
        display(points)
        points = torch.tensor([[1.0, 4.0], [2.0, 1.0], [3.0, 5.0]])
        second_point = points[1].clone()
        second_point[0] = 10.0
        display(points)
        points_t = points.t()
        display(points_t)
        display(points.storage().data_ptr() == points_t.storage().data_ptr())   # id(...) == id(...)
        display(points.stride())
        display(points_t.stride())
        some_tensor = torch.ones(3, 4, 5)
        some_tensor_t = some_tensor.transpose(0, 2)
        display(some_tensor.shape)
        display(some_tensor_t.shape)
        display(some_tensor.stride())
        display(some_tensor_t.stride())
        display(points.is_contiguous())
        display(points_t.is_contiguous())
        display(points_t.storage())
        display(points_t.stride())
        points_t_cont = points_t.contiguous()
        display(points_t_cont)
        display(points_t_cont.stride())
        display(points_t_cont.storage())
        double_points = torch.ones(10, 2, dtype=torch.double)
        short_points = torch.tensor([[1, 2], [3, 4]], dtype=torch.short)
        display(short_points.dtype)
        display((short_points, double_points))
        double_points = torch.zeros(10, 2).double()
        short_points = torch.ones(10, 2).short()
        double_points = torch.zeros(10, 2).to(torch.double)
        short_points = torch.ones(10, 2).to(dtype=torch.short)
        display((double_points.dtype, short_points.dtype))
        points = _randn(torch, 5, 10, 2)
        short_points = points.type(torch.short)
        display(short_points)
        points = torch.tensor([[1.0, 4.0], [2.0, 1.0], [3.0, 4.0]])
        display(points[1:])
        display(points[1:, :])
        display(points[1:, 0])
        display(points[None])
        points = torch.ones(3, 4)
        points_np = points.numpy()
        display(points_np)
        points = torch.from_numpy(points_np)
        a = torch.ones(3, 2)
        a_t = torch.transpose(a, 0, 1)
        display((a.shape, a_t.shape))
        a = torch.ones(3, 2)
        a_t = a.transpose(0, 1)
        display((a.shape, a_t.shape))
        a = torch.ones(3, 2)
        a.zero_()
        display(a)
    with warnings.catch_warnings():
        run_both(program)


# ---- deep-learning-with-pytorch/dlwpt-code p1ch5 (parameter estimation, autograd, optimizers) ----
def _thermometer(torch):
    t_c = [0.5, 14.0, 15.0, 28.0, 11.0, 8.0, 3.0, -4.0, 6.0, 13.0, 21.0]
    t_u = [35.7, 55.9, 58.2, 81.9, 56.3, 48.9, 33.9, 21.8, 48.4, 60.4, 68.4]
    return torch.tensor(t_c), torch.tensor(t_u)


def _model(t_u, w, b):
    return w * t_u + b


def _loss_fn(t_p, t_c):
    squared_diffs = (t_p - t_c)**2
    return squared_diffs.mean()


def test_dlwpt_p1ch5_parameter_estimation_notebook():
    def program(torch, log):
        display, model, loss_fn = _display, _model, _loss_fn
        torch.set_printoptions(edgeitems=2)
        t_c, t_u = _thermometer(torch)
        w = torch.ones(())
        b = torch.zeros(())
        t_p = model(t_u, w, b)
        display(t_p)
        loss = loss_fn(t_p, t_c)
        display(loss)
        x = torch.ones(())
        y = torch.ones(3, 1)
        z = torch.ones(1, 3)
        a = torch.ones(2, 1, 1)
        print(f"shapes: x: {x.shape}, y: {y.shape}, z: {z.shape}, a: {a.shape}")
        print("x * y:", (x * y).shape)
        print("y * z:", (y * z).shape)
        print("y * z * a:", (y * z * a).shape)
        delta = 0.1
        loss_rate_of_change_w = \
            (loss_fn(model(t_u, w + delta, b), t_c) -
             loss_fn(model(t_u, w - delta, b), t_c)) / (2.0 * delta)
        learning_rate = 1e-2
        w = w - learning_rate * loss_rate_of_change_w
        loss_rate_of_change_b = \
            (loss_fn(model(t_u, w, b + delta), t_c) -
             loss_fn(model(t_u, w, b - delta), t_c)) / (2.0 * delta)
        b = b - learning_rate * loss_rate_of_change_b
        display((w, b))

        def dloss_fn(t_p, t_c):
            dsq_diffs = 2 * (t_p - t_c) / t_p.size(0)
            return dsq_diffs

        def dmodel_dw(t_u, w, b):
            return t_u

        def dmodel_db(t_u, w, b):
            return 1.0

        def grad_fn(t_u, t_c, t_p, w, b):
            dloss_dtp = dloss_fn(t_p, t_c)
            dloss_dw = dloss_dtp * dmodel_dw(t_u, w, b)
            dloss_db = dloss_dtp * dmodel_db(t_u, w, b)
            return torch.stack([dloss_dw.sum(), dloss_db.sum()])

        def training_loop(n_epochs, learning_rate, params, t_u, t_c, print_params=True):
            for epoch in range(1, n_epochs + 1):
                w, b = params
                t_p = model(t_u, w, b)
                loss = loss_fn(t_p, t_c)
                grad = grad_fn(t_u, t_c, t_p, w, b)
                params = params - learning_rate * grad
                if epoch in {1, 2, 3, 10, 11, 99, 100, 4000, 5000}:
                    print('Epoch %d, Loss %f' % (epoch, float(loss)))
                    if print_params:
                        print('    Params:', params)
                        print('    Grad:  ', grad)
                if epoch in {4, 12, 101}:
                    print('...')
                if not torch.isfinite(loss).all():
                    break
            return params

        # lr 1e-2 on the raw readings diverges: the parameters print in scientific notation
        display(training_loop(n_epochs=100, learning_rate=1e-2, params=torch.tensor([1.0, 0.0]), t_u=t_u, t_c=t_c))
        display(training_loop(n_epochs=100, learning_rate=1e-4, params=torch.tensor([1.0, 0.0]), t_u=t_u, t_c=t_c))
        t_un = 0.1 * t_u
        params = training_loop(n_epochs=100, learning_rate=1e-2, params=torch.tensor([1.0, 0.0]), t_u=t_un, t_c=t_c)
        display(params)
        log("params", params)
    run_both(program)


def test_dlwpt_p1ch5_autograd_and_optimizers_notebooks():
    def program(torch, log):
        display, model, loss_fn = _display, _model, _loss_fn
        torch.set_printoptions(edgeitems=2)
        t_c, t_u = _thermometer(torch)
        t_un = 0.1 * t_u
        # 2_autograd.ipynb
        params = torch.tensor([1.0, 0.0], requires_grad=True)
        display(params.grad is None)
        loss = loss_fn(model(t_u, *params), t_c)
        loss.backward()
        display(params.grad)
        if params.grad is not None:
            params.grad.zero_()

        def training_loop(n_epochs, learning_rate, params, t_u, t_c):
            for epoch in range(1, n_epochs + 1):
                if params.grad is not None:
                    params.grad.zero_()
                t_p = model(t_u, *params)
                loss = loss_fn(t_p, t_c)
                loss.backward()
                with torch.no_grad():
                    params -= learning_rate * params.grad
                if epoch % 50 == 0:
                    print('Epoch %d, Loss %f' % (epoch, float(loss.detach())))
            return params

        display(training_loop(n_epochs=100, learning_rate=1e-2,
                              params=torch.tensor([1.0, 0.0], requires_grad=True), t_u=t_un, t_c=t_c))
        # 3_optimizers.ipynb
        optim = torch.optim
        print([n for n in ("ASGD", "Adadelta", "Adagrad", "Adam", "Adamax", "LBFGS", "Optimizer", "RMSprop",
                           "Rprop", "SGD", "SparseAdam", "lr_scheduler") if n in dir(optim)])    # dir(optim)
        params = torch.tensor([1.0, 0.0], requires_grad=True)
        learning_rate = 1e-5
        optimizer = optim.SGD([params], lr=learning_rate)
        t_p = model(t_u, *params)
        loss = loss_fn(t_p, t_c)
        loss.backward()
        optimizer.step()
        display(params)
        params = torch.tensor([1.0, 0.0], requires_grad=True)
        learning_rate = 1e-2
        optimizer = optim.SGD([params], lr=learning_rate)
        t_p = model(t_un, *params)
        loss = loss_fn(t_p, t_c)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        display(params)

        def training_loop(n_epochs, optimizer, params, t_u, t_c):
            for epoch in range(1, n_epochs + 1):
                t_p = model(t_u, *params)
                loss = loss_fn(t_p, t_c)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if epoch % 50 == 0:
                    print('Epoch %d, Loss %f' % (epoch, float(loss.detach())))
            return params

        params = torch.tensor([1.0, 0.0], requires_grad=True)
        optimizer = optim.SGD([params], lr=1e-2)
        display(training_loop(n_epochs=100, optimizer=optimizer, params=params, t_u=t_un, t_c=t_c))
        params = torch.tensor([1.0, 0.0], requires_grad=True)
        optimizer = optim.Adam([params], lr=1e-1)
        display(training_loop(n_epochs=100, optimizer=optimizer, params=params, t_u=t_u, t_c=t_c))
        print(optimizer)
        log("adam", params)
        n_samples = t_u.shape[0]
        n_val = int(0.2 * n_samples)
        shuffled_indices = torch.tensor(np.random.RandomState(3).permutation(n_samples))   # torch.randperm
        train_indices = shuffled_indices[:-n_val]
        val_indices = shuffled_indices[-n_val:]
        display((train_indices, val_indices))
        train_t_u = t_u[train_indices]
        train_t_c = t_c[train_indices]
        val_t_u = t_u[val_indices]
        val_t_c = t_c[val_indices]
        train_t_un = 0.1 * train_t_u
        val_t_un = 0.1 * val_t_u

        def training_loop(n_epochs, optimizer, params, train_t_u, val_t_u, train_t_c, val_t_c):
            for epoch in range(1, n_epochs + 1):
                train_t_p = model(train_t_u, *params)
                train_loss = loss_fn(train_t_p, train_t_c)
                with torch.no_grad():
                    val_t_p = model(val_t_u, *params)
                    val_loss = loss_fn(val_t_p, val_t_c)
                    assert val_loss.requires_grad == False  # noqa: E712 (the notebook's words)
                optimizer.zero_grad()
                train_loss.backward()
                optimizer.step()
                if epoch <= 3 or epoch % 50 == 0:
                    print('Epoch {}, Training loss {}, Validation loss {}'.format(
                        epoch, float(train_loss.detach()), float(val_loss)))
            return params

        params = torch.tensor([1.0, 0.0], requires_grad=True)
        optimizer = optim.SGD([params], lr=1e-2)
        display(training_loop(n_epochs=100, optimizer=optimizer, params=params, train_t_u=train_t_un,
                              val_t_u=val_t_un, train_t_c=train_t_c, val_t_c=val_t_c))

        def calc_forward(t_u, t_c, is_train):
            with torch.set_grad_enabled(is_train):
                t_p = model(t_u, *params)
                loss = loss_fn(t_p, t_c)
            return loss
        display((calc_forward(train_t_un, train_t_c, True), calc_forward(val_t_un, val_t_c, False)))
        log("split fit", params)
    run_both(program)
