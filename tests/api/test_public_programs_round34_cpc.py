"""Round-34 public programs, continued (``test_public_programs_round34.py`` has the round's notes):
jefflai108/Contrastive-Predictive-Coding-PyTorch's CPC run eagerly with torch and with tracegrad
(``parity.run_both``): ``CDCK2``'s strided ``Conv1d`` encoder and ``batch_first`` GRU
autoregressor, the InfoNCE loss over ``torch.empty`` buffers filled through numpy-integer indices
and a one-element index tensor, implicit-dimension ``nn.Softmax``/``nn.LogSoftmax``, the
repository's ``ScheduledOptim`` around an amsgrad Adam and its train/validation/snapshot loop. In a
file of its own: with Deep SVDD's shapes one file would take longer than a file may.
"""
import logging
import os
import re
import tempfile
import warnings

import numpy as np
import pytest
from parity import run_both, same_outcome, seeded

from tests.api.test_public_programs_round34 import _captured_logging, _np_init

torch = pytest.importorskip("torch")


# ---- jefflai108/Contrastive-Predictive-Coding-PyTorch ---------------------------------------------
def _cpc_classes(torch):
    """src/model/model.py's CDCK2, main.py's ScheduledOptim, src/data_reader/dataset.py's
    RawDataset, src/training_v1.py's train/snapshot and src/validation_v1.py's validation, at tiny
    widths: the encoder's 512 channels are 8 and the GRU's 256 units 6 throughout (the
    ``view(batch, 512)``/``view(batch, 256)`` reshapes and ``init_hidden`` included), the
    downsampling factor 160 kept. Three changes: ``torch.randint(self.seq_len/160-self.timestep,
    size=(1,))`` raises a TypeError in torch 2 (a float bound; checked in
    ``test_cpc_float_randint_bound``) and draws from torch's generator, so the time stamp is numpy's
    ``np.random.randint`` of the same bound made an int, as a LongTensor; ``init_hidden``'s
    ``use_gpu=True`` default calls ``.cuda()`` (an AssertionError without CUDA; checked too), so the
    loops pass ``use_gpu=False``; the h5py file is a dict of numpy utterances."""
    nn = torch.nn

    class CDCK2(nn.Module):
        def __init__(self, timestep, batch_size, seq_len):

            super(CDCK2, self).__init__()

            self.batch_size = batch_size
            self.seq_len = seq_len
            self.timestep = timestep
            self.encoder = nn.Sequential(  # downsampling factor = 160
                nn.Conv1d(1, 8, kernel_size=10, stride=5, padding=3, bias=False),
                nn.BatchNorm1d(8),
                nn.ReLU(inplace=True),
                nn.Conv1d(8, 8, kernel_size=8, stride=4, padding=2, bias=False),
                nn.BatchNorm1d(8),
                nn.ReLU(inplace=True),
                nn.Conv1d(8, 8, kernel_size=4, stride=2, padding=1, bias=False),
                nn.BatchNorm1d(8),
                nn.ReLU(inplace=True),
                nn.Conv1d(8, 8, kernel_size=4, stride=2, padding=1, bias=False),
                nn.BatchNorm1d(8),
                nn.ReLU(inplace=True),
                nn.Conv1d(8, 8, kernel_size=4, stride=2, padding=1, bias=False),
                nn.BatchNorm1d(8),
                nn.ReLU(inplace=True)
            )
            self.gru = nn.GRU(8, 6, num_layers=1, bidirectional=False, batch_first=True)
            self.Wk = nn.ModuleList([nn.Linear(6, 8) for i in range(timestep)])
            self.softmax = nn.Softmax()
            self.lsoftmax = nn.LogSoftmax()

            def _weights_init(m):
                if isinstance(m, nn.Linear):
                    nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')
                if isinstance(m, nn.Conv1d):
                    nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')
                elif isinstance(m, nn.BatchNorm1d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)

            # initialize gru
            for layer_p in self.gru._all_weights:
                for p in layer_p:
                    if 'weight' in p:
                        nn.init.kaiming_normal_(self.gru.__getattr__(p), mode='fan_out', nonlinearity='relu')

            self.apply(_weights_init)

        def init_hidden(self, batch_size, use_gpu=True):
            if use_gpu: return torch.zeros(1, batch_size, 6).cuda()
            else: return torch.zeros(1, batch_size, 6)

        def forward(self, x, hidden):
            batch = x.size()[0]
            t_samples = torch.from_numpy(np.random.randint(int(self.seq_len/160-self.timestep), size=(1,))).long()  # randomly pick time stamps
            # input sequence is N*C*L, e.g. 8*1*20480
            z = self.encoder(x)
            # encoded sequence is N*C*L, e.g. 8*512*128
            # reshape to N*L*C for GRU, e.g. 8*128*512
            z = z.transpose(1,2)
            nce = 0  # average over timestep and batch
            encode_samples = torch.empty((self.timestep,batch,8)).float()  # e.g. size 12*8*512
            for i in np.arange(1, self.timestep+1):
                encode_samples[i-1] = z[:,t_samples+i,:].view(batch,8)  # z_tk e.g. size 8*512
            forward_seq = z[:,:t_samples+1,:]  # e.g. size 8*100*512
            output, hidden = self.gru(forward_seq, hidden)  # output size e.g. 8*100*256
            c_t = output[:,t_samples,:].view(batch, 6)  # c_t e.g. size 8*256
            pred = torch.empty((self.timestep,batch,8)).float()  # e.g. size 12*8*512
            for i in np.arange(0, self.timestep):
                linear = self.Wk[i]
                pred[i] = linear(c_t)  # Wk*c_t e.g. size 8*512
            for i in np.arange(0, self.timestep):
                total = torch.mm(encode_samples[i], torch.transpose(pred[i],0,1))  # e.g. size 8*8
                correct = torch.sum(torch.eq(torch.argmax(self.softmax(total), dim=0), torch.arange(0, batch)))  # correct is a tensor
                nce += torch.sum(torch.diag(self.lsoftmax(total)))  # nce is a tensor
            nce /= -1.*batch*self.timestep
            accuracy = 1.*correct.item()/batch

            return accuracy, nce, hidden

        def predict(self, x, hidden):
            batch = x.size()[0]
            # input sequence is N*C*L, e.g. 8*1*20480
            z = self.encoder(x)
            # encoded sequence is N*C*L, e.g. 8*512*128
            # reshape to N*L*C for GRU, e.g. 8*128*512
            z = z.transpose(1,2)
            output, hidden = self.gru(z, hidden)  # output size e.g. 8*128*256

            return output, hidden  # return every frame

    class ScheduledOptim(object):
        """A simple wrapper class for learning rate scheduling"""

        def __init__(self, optimizer, n_warmup_steps):
            self.optimizer = optimizer
            self.d_model = 128
            self.n_warmup_steps = n_warmup_steps
            self.n_current_steps = 0
            self.delta = 1

        def state_dict(self):
            self.optimizer.state_dict()

        def step(self):
            """Step by the inner optimizer"""
            self.optimizer.step()

        def zero_grad(self):
            """Zero out the gradients by the inner optimizer"""
            self.optimizer.zero_grad()

        def increase_delta(self):
            self.delta *= 2

        def update_learning_rate(self):
            """Learning rate scheduling per step"""

            self.n_current_steps += self.delta
            new_lr = np.power(self.d_model, -0.5) * np.min([
                np.power(self.n_current_steps, -0.5),
                np.power(self.n_warmup_steps, -1.5) * self.n_current_steps])

            for param_group in self.optimizer.param_groups:
                param_group['lr'] = new_lr
            return new_lr

    class RawDataset(torch.utils.data.Dataset):
        def __init__(self, raw_file, list_file, audio_window):
            """ raw_file: train-clean-100.h5
                list_file: list/training.txt
                audio_window: 20480
            """
            self.raw_file = raw_file
            self.audio_window = audio_window
            self.utts = []

            temp = list_file

            self.h5f = raw_file
            for i in temp:  # sanity check
                utt_len = self.h5f[i].shape[0]
                if utt_len > audio_window:
                    self.utts.append(i)

        def __len__(self):
            """Denotes the total number of utterances
            """
            return len(self.utts)

        def __getitem__(self, index):
            utt_id = self.utts[index]  # get the utterance id
            utt_len = self.h5f[utt_id].shape[0]  # get the number of data points in the utterance
            index = np.random.randint(utt_len - self.audio_window + 1)  # get the index to read part of the utterance into memory

            return self.h5f[utt_id][index:index+self.audio_window]

    logger = logging.getLogger("cdc")

    def train(args, model, device, train_loader, optimizer, epoch, batch_size):
        model.train()
        for batch_idx, data in enumerate(train_loader):
            data = data.float().unsqueeze(1).to(device)  # add channel dimension
            optimizer.zero_grad()
            hidden = model.init_hidden(len(data), use_gpu=False)
            acc, loss, hidden = model(data, hidden)

            loss.backward()
            optimizer.step()
            lr = optimizer.update_learning_rate()
            if batch_idx % args.log_interval == 0:
                logger.info('Train Epoch: {} [{}/{} ({:.0f}%)]\tlr:{:.5f}\tAccuracy: {:.4f}\tLoss: {:.6f}'.format(
                    epoch, batch_idx * len(data), len(train_loader.dataset),
                    100. * batch_idx / len(train_loader), lr, acc, loss.item()))

    def snapshot(dir_path, run_name, state):
        snapshot_file = os.path.join(dir_path,
                                     run_name + '-model_best.pth')

        torch.save(state, snapshot_file)
        logger.info("Snapshot saved to {}\n".format(snapshot_file))

    def validation(args, model, device, data_loader, batch_size):
        logger.info("Starting Validation")
        model.eval()
        total_loss = 0
        total_acc = 0

        with torch.no_grad():
            for data in data_loader:
                data = data.float().unsqueeze(1).to(device)  # add channel dimension
                hidden = model.init_hidden(len(data), use_gpu=False)
                acc, loss, hidden = model(data, hidden)
                total_loss += len(data) * loss
                total_acc += len(data) * acc

        total_loss /= len(data_loader.dataset)  # average loss
        total_acc /= len(data_loader.dataset)  # average acc

        logger.info('===> Validation set: Average loss: {:.4f}\tAccuracy: {:.4f}\n'.format(
                    total_loss, total_acc))

        return total_acc, total_loss

    return dict(CDCK2=CDCK2, ScheduledOptim=ScheduledOptim, RawDataset=RawDataset, train=train,
                validation=validation, snapshot=snapshot)


def test_cpc_float_randint_bound():
    # model.py's ``torch.randint(self.seq_len/160-self.timestep, size=(1,))``: a float bound is a
    # TypeError in torch 2, and in tracegrad
    assert same_outcome(lambda m: m.randint(20480 / 160 - 12, size=(1,))) == ("raised", "TypeError")


def test_cpc_init_hidden_cuda_without_cuda():
    # ``init_hidden(batch_size, use_gpu=True)`` as train()/validation() call it: ``.cuda()`` on a
    # machine without CUDA is torch's AssertionError, and tracegrad's
    assert same_outcome(lambda m: m.zeros(1, 4, 6).cuda()) == ("raised", "AssertionError")


# main.py's main() at tiny sizes: timestep 2, audio window 640 (4 encoded frames), batch 4, 8
# training and 4 validation utterances of numpy noise (lengths 1000-1550), 2 epochs, 2 warm-up
# steps, log interval 1; the DataLoader's ``shuffle=True`` is False (its order comes from torch's
# generator), the convolution, GRU and predictor weights come from numpy after construction
# (kaiming_normal_ draws from torch's; the BatchNorms keep the program's constant 1/0), the ``logging`` records are printed with their timings blanked and the snapshot goes
# to a temporary directory. Python's and numpy's global streams are seeded for each run (the
# dataset's window offsets and the time stamps).
def test_cpc_cdck2_training():
    def program(torch, log):
        from timeit import default_timer as timer
        optim = torch.optim
        data = torch.utils.data
        classes = _cpc_classes(torch)
        restore = _captured_logging(log, "cdc")
        tmp = tempfile.mkdtemp()

        class args:
            timestep, batch_size, audio_window, epochs, n_warmup_steps, log_interval = 2, 4, 640, 2, 2, 1
            logging_dir = tmp
        run_name = "cdc"
        logger = logging.getLogger("cdc")
        rs = np.random.RandomState(5)
        raw = {"utt%d" % i: rs.standard_normal(1000 + 50 * i).astype(np.float32) for i in range(12)}
        train_list = ["utt%d" % i for i in range(8)] + ["short"]
        raw["short"] = np.zeros(900, np.float32)   # dropped by RawDataset's length check
        validation_list = ["utt%d" % i for i in range(8, 12)]
        try:
            with seeded(0), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                use_cuda = torch.cuda.is_available()
                print('use_cuda is', use_cuda)
                global_timer = timer()  # global timer
                device = torch.device("cuda" if use_cuda else "cpu")
                model = classes["CDCK2"](args.timestep, args.batch_size, args.audio_window).to(device)
                convs = [layer for layer in model.encoder if isinstance(layer, torch.nn.Conv1d)]
                for i, sub in enumerate(convs + [model.gru, model.Wk]):
                    _np_init(torch, sub, 10 + i, scale=0.4)
                params = {'num_workers': 0,
                          'pin_memory': False} if use_cuda else {}

                logger.info('===> loading train, validation and eval dataset')
                training_set = classes["RawDataset"](raw, train_list, args.audio_window)
                validation_set = classes["RawDataset"](raw, validation_list, args.audio_window)
                train_loader = data.DataLoader(training_set, batch_size=args.batch_size, shuffle=False, **params)
                validation_loader = data.DataLoader(validation_set, batch_size=args.batch_size, shuffle=False, **params)
                # nanxin optimizer
                optimizer = classes["ScheduledOptim"](
                    optim.Adam(
                        filter(lambda p: p.requires_grad, model.parameters()),
                        betas=(0.9, 0.98), eps=1e-09, weight_decay=1e-4, amsgrad=True),
                    args.n_warmup_steps)

                model_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
                logger.info('### Model summary below###\n {}\n'.format(str(model)))
                logger.info('===> Model total parameter: {}\n'.format(model_params))
                ## Start training
                best_acc = 0
                best_loss = np.inf
                best_epoch = -1
                for epoch in range(1, args.epochs + 1):
                    epoch_timer = timer()

                    classes["train"](args, model, device, train_loader, optimizer, epoch, args.batch_size)
                    val_acc, val_loss = classes["validation"](args, model, device, validation_loader, args.batch_size)
                    log("validation", [val_acc, val_loss])

                    # Save
                    if val_acc > best_acc:
                        best_acc = max(val_acc, best_acc)
                        classes["snapshot"](args.logging_dir, run_name, {
                            'epoch': epoch + 1,
                            'validation_acc': val_acc,
                            'state_dict': model.state_dict(),
                            'validation_loss': val_loss,
                            'optimizer': optimizer.state_dict(),
                        })
                        best_epoch = epoch + 1
                    elif epoch - best_epoch > 2:
                        optimizer.increase_delta()
                        best_epoch = epoch + 1

                    end_epoch_timer = timer()
                    logger.info("#### End epoch {}/{}, elapsed time: {}".format(epoch, args.epochs, end_epoch_timer - epoch_timer))
                end_global_timer = timer()
                logger.info("################## Success #########################")
                logger.info("Total elapsed time: %s" % (end_global_timer - global_timer))
                del best_loss
                # the predictors' biases cancel in the row-wise log-softmax (z_a . b is the same
                # for every column): their gradients are rounding noise around 0, which Adam's
                # eps=1e-9 turns into noise-signed steps, so they are left out (nothing reads them)
                log("params", [(k, v) for k, v in model.state_dict().items() if not re.match(r"Wk\.\d\.bias", k)])
                log("adam state", [(s["exp_avg"], s["max_exp_avg_sq"]) for p, s in optimizer.optimizer.state.items()
                                   if p.dim() > 1 or p.shape[0] != 8 or not any(p is w.bias for w in model.Wk)])
                log("lr", [optimizer.optimizer.param_groups[0]['lr'], optimizer.n_current_steps, optimizer.delta])
                saved = os.path.join(tmp, run_name + '-model_best.pth')
                if os.path.exists(saved):
                    state = torch.load(saved)
                    log("snapshot", [state['epoch'], state['validation_acc'], state['validation_loss'],
                                     state['optimizer'], list(state['state_dict'])])
                batch = torch.tensor(np.stack([raw[u][:640] for u in validation_list]))[:, None]
                output, hidden = model.predict(batch, model.init_hidden(4, use_gpu=False))
                log("predict", [output, hidden])
            log("warnings", sorted({(w.category.__name__, str(w.message)[:60]) for w in caught}))
        finally:
            restore()

    # the first step's gradients agree with torch's to ~1e-7; the amsgrad Adam's eps=1e-9 and
    # learning rates of ~0.03 make each step's size hang on the ratio of tiny first and second
    # moments, so the BatchNorm shifts drift ~1e-4 relative apart over the four steps
    run_both(program, rtol=1e-3, atol=1e-5)
