"""An eleventh round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round10.py``: sequence-to-sequence chatbots over packed bidirectional
GRUs, policy gradients through ``torch.distributions``, learning-rate range tests with
hand-written schedulers and gradient accumulation, stochastic weight averaging
(``swa_utils``), the ``nn_tutorial`` refactoring through ``TensorDataset``/``DataLoader``,
recommender models over ``EmbeddingBag``, custom samplers, iterable datasets, weight-normed
audio convolutions with a scripted activation, checkpoints saved to memory mid-training and
warm starts with ``strict=False``. Each keeps its program's code at tiny sizes (fewer
channels, steps and samples), with numpy-seeded data and parameters (``init_params``/
``randn``) in place of downloads and random streams (sampling, ``random.random``, dropout
masks); where a program's own code had to change, the comment above its test says how and why.
"""
import math

import numpy as np
import pytest

from parity import init_params, randn, run_both

torch = pytest.importorskip("torch")


# pytorch/tutorials beginner_source/chatbot_tutorial.py (zeroPadding through
# itertools.zip_longest, binaryMatrix, inputVar/outputVar with torch.LongTensor/BoolTensor of
# lists, EncoderRNN: a bidirectional GRU over pack_padded_sequence/pad_packed_sequence with the
# two directions summed, the Luong Attn module with its three score functions,
# LuongAttnDecoderRNN ('dot' scores as the tutorial trains it), maskNLLLoss's gather/masked_select, train() with and without teacher
# forcing, clip_grad_norm_, GreedySearchDecoder's torch.max/cat loop); a 9-word vocabulary,
# hidden_size 500 -> 6, a batch of 3 pairs, embedding dropout 0 (dropout draws differ),
# ``random.random() < teacher_forcing_ratio`` -> an argument; parameters from numpy
def test_pytorch_chatbot_tutorial():
    def program(torch, log):
        import itertools
        nn, F = torch.nn, torch.nn.functional
        device = torch.device("cpu")
        PAD_token, SOS_token, EOS_token = 0, 1, 2
        MAX_LENGTH = 10

        class Voc:
            def __init__(self, name):
                self.name = name
                self.word2index = {}
                self.word2count = {}
                self.index2word = {PAD_token: "PAD", SOS_token: "SOS", EOS_token: "EOS"}
                self.num_words = 3  # Count SOS, EOS, PAD

            def addSentence(self, sentence):
                for word in sentence.split(' '):
                    self.addWord(word)

            def addWord(self, word):
                if word not in self.word2index:
                    self.word2index[word] = self.num_words
                    self.word2count[word] = 1
                    self.index2word[self.num_words] = word
                    self.num_words += 1
                else:
                    self.word2count[word] += 1

        def indexesFromSentence(voc, sentence):
            return [voc.word2index[word] for word in sentence.split(' ')] + [EOS_token]

        def zeroPadding(l, fillvalue=PAD_token):
            return list(itertools.zip_longest(*l, fillvalue=fillvalue))

        def binaryMatrix(l, value=PAD_token):
            m = []
            for i, seq in enumerate(l):
                m.append([])
                for token in seq:
                    if token == PAD_token:
                        m[i].append(0)
                    else:
                        m[i].append(1)
            return m

        def inputVar(l, voc):
            indexes_batch = [indexesFromSentence(voc, sentence) for sentence in l]
            lengths = torch.tensor([len(indexes) for indexes in indexes_batch])
            padList = zeroPadding(indexes_batch)
            padVar = torch.LongTensor(padList)
            return padVar, lengths

        def outputVar(l, voc):
            indexes_batch = [indexesFromSentence(voc, sentence) for sentence in l]
            max_target_len = max([len(indexes) for indexes in indexes_batch])
            padList = zeroPadding(indexes_batch)
            mask = binaryMatrix(padList)
            mask = torch.BoolTensor(mask)
            padVar = torch.LongTensor(padList)
            return padVar, mask, max_target_len

        def batch2TrainData(voc, pair_batch):
            pair_batch.sort(key=lambda x: len(x[0].split(" ")), reverse=True)
            input_batch, output_batch = [], []
            for pair in pair_batch:
                input_batch.append(pair[0])
                output_batch.append(pair[1])
            inp, lengths = inputVar(input_batch, voc)
            output, mask, max_target_len = outputVar(output_batch, voc)
            return inp, lengths, output, mask, max_target_len

        class EncoderRNN(nn.Module):
            def __init__(self, hidden_size, embedding, n_layers=1, dropout=0):
                super(EncoderRNN, self).__init__()
                self.n_layers = n_layers
                self.hidden_size = hidden_size
                self.embedding = embedding
                self.gru = nn.GRU(hidden_size, hidden_size, n_layers,
                                  dropout=(0 if n_layers == 1 else dropout), bidirectional=True)

            def forward(self, input_seq, input_lengths, hidden=None):
                embedded = self.embedding(input_seq)
                packed = nn.utils.rnn.pack_padded_sequence(embedded, input_lengths)
                outputs, hidden = self.gru(packed, hidden)
                outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs)
                outputs = outputs[:, :, :self.hidden_size] + outputs[:, : ,self.hidden_size:]
                return outputs, hidden

        class Attn(nn.Module):
            def __init__(self, method, hidden_size):
                super(Attn, self).__init__()
                self.method = method
                if self.method not in ['dot', 'general', 'concat']:
                    raise ValueError(self.method, "is not an appropriate attention method.")
                self.hidden_size = hidden_size
                if self.method == 'general':
                    self.attn = nn.Linear(self.hidden_size, hidden_size)
                elif self.method == 'concat':
                    self.attn = nn.Linear(self.hidden_size * 2, hidden_size)
                    self.v = nn.Parameter(torch.FloatTensor(hidden_size))

            def dot_score(self, hidden, encoder_output):
                return torch.sum(hidden * encoder_output, dim=2)

            def general_score(self, hidden, encoder_output):
                energy = self.attn(encoder_output)
                return torch.sum(hidden * energy, dim=2)

            def concat_score(self, hidden, encoder_output):
                energy = self.attn(torch.cat((hidden.expand(encoder_output.size(0), -1, -1), encoder_output), 2)).tanh()
                return torch.sum(self.v * energy, dim=2)

            def forward(self, hidden, encoder_outputs):
                if self.method == 'general':
                    attn_energies = self.general_score(hidden, encoder_outputs)
                elif self.method == 'concat':
                    attn_energies = self.concat_score(hidden, encoder_outputs)
                elif self.method == 'dot':
                    attn_energies = self.dot_score(hidden, encoder_outputs)
                attn_energies = attn_energies.t()
                return F.softmax(attn_energies, dim=1).unsqueeze(1)

        class LuongAttnDecoderRNN(nn.Module):
            def __init__(self, attn_model, embedding, hidden_size, output_size, n_layers=1, dropout=0.1):
                super(LuongAttnDecoderRNN, self).__init__()
                self.attn_model = attn_model
                self.hidden_size = hidden_size
                self.output_size = output_size
                self.n_layers = n_layers
                self.dropout = dropout
                self.embedding = embedding
                self.embedding_dropout = nn.Dropout(dropout)
                self.gru = nn.GRU(hidden_size, hidden_size, n_layers, dropout=(0 if n_layers == 1 else dropout))
                self.concat = nn.Linear(hidden_size * 2, hidden_size)
                self.out = nn.Linear(hidden_size, output_size)
                self.attn = Attn(attn_model, hidden_size)

            def forward(self, input_step, last_hidden, encoder_outputs):
                embedded = self.embedding(input_step)
                embedded = self.embedding_dropout(embedded)
                rnn_output, hidden = self.gru(embedded, last_hidden)
                attn_weights = self.attn(rnn_output, encoder_outputs)
                context = attn_weights.bmm(encoder_outputs.transpose(0, 1))
                rnn_output = rnn_output.squeeze(0)
                context = context.squeeze(1)
                concat_input = torch.cat((rnn_output, context), 1)
                concat_output = torch.tanh(self.concat(concat_input))
                output = self.out(concat_output)
                output = F.softmax(output, dim=1)
                return output, hidden

        def maskNLLLoss(inp, target, mask):
            nTotal = mask.sum()
            crossEntropy = -torch.log(torch.gather(inp, 1, target.view(-1, 1)).squeeze(1))
            loss = crossEntropy.masked_select(mask).mean()
            loss = loss.to(device)
            return loss, nTotal.item()

        def train(input_variable, lengths, target_variable, mask, max_target_len, encoder, decoder, embedding,
                  encoder_optimizer, decoder_optimizer, batch_size, clip, use_teacher_forcing, max_length=MAX_LENGTH):
            encoder_optimizer.zero_grad()
            decoder_optimizer.zero_grad()
            input_variable = input_variable.to(device)
            lengths = lengths.to("cpu")
            target_variable = target_variable.to(device)
            mask = mask.to(device)
            loss = 0
            print_losses = []
            n_totals = 0
            encoder_outputs, encoder_hidden = encoder(input_variable, lengths)
            decoder_input = torch.LongTensor([[SOS_token for _ in range(batch_size)]])
            decoder_input = decoder_input.to(device)
            decoder_hidden = encoder_hidden[:decoder.n_layers]
            if use_teacher_forcing:
                for t in range(max_target_len):
                    decoder_output, decoder_hidden = decoder(
                        decoder_input, decoder_hidden, encoder_outputs
                    )
                    decoder_input = target_variable[t].view(1, -1)
                    mask_loss, nTotal = maskNLLLoss(decoder_output, target_variable[t], mask[t])
                    loss += mask_loss
                    print_losses.append(mask_loss.item() * nTotal)
                    n_totals += nTotal
            else:
                for t in range(max_target_len):
                    decoder_output, decoder_hidden = decoder(
                        decoder_input, decoder_hidden, encoder_outputs
                    )
                    _, topi = decoder_output.topk(1)
                    decoder_input = torch.LongTensor([[topi[i][0] for i in range(batch_size)]])
                    decoder_input = decoder_input.to(device)
                    mask_loss, nTotal = maskNLLLoss(decoder_output, target_variable[t], mask[t])
                    loss += mask_loss
                    print_losses.append(mask_loss.item() * nTotal)
                    n_totals += nTotal
            loss.backward()
            _ = nn.utils.clip_grad_norm_(encoder.parameters(), clip)
            _ = nn.utils.clip_grad_norm_(decoder.parameters(), clip)
            encoder_optimizer.step()
            decoder_optimizer.step()
            return sum(print_losses) / n_totals

        class GreedySearchDecoder(nn.Module):
            def __init__(self, encoder, decoder):
                super(GreedySearchDecoder, self).__init__()
                self.encoder = encoder
                self.decoder = decoder

            def forward(self, input_seq, input_length, max_length):
                encoder_outputs, encoder_hidden = self.encoder(input_seq, input_length)
                decoder_hidden = encoder_hidden[:decoder.n_layers]
                decoder_input = torch.ones(1, 1, device=device, dtype=torch.long) * SOS_token
                all_tokens = torch.zeros([0], device=device, dtype=torch.long)
                all_scores = torch.zeros([0], device=device)
                for _ in range(max_length):
                    decoder_output, decoder_hidden = self.decoder(decoder_input, decoder_hidden, encoder_outputs)
                    decoder_scores, decoder_input = torch.max(decoder_output, dim=1)
                    all_tokens = torch.cat((all_tokens, decoder_input), dim=0)
                    all_scores = torch.cat((all_scores, decoder_scores), dim=0)
                    decoder_input = torch.unsqueeze(decoder_input, 0)
                return all_tokens, all_scores

        pairs = [["hi there", "hello"], ["how are you today", "fine thanks"], ["bye", "see you"]]
        voc = Voc("toy")
        for p in pairs:
            voc.addSentence(p[0])
            voc.addSentence(p[1])
        hidden_size = 6
        embedding = nn.Embedding(voc.num_words, hidden_size)
        encoder = EncoderRNN(hidden_size, embedding, 1, 0)
        decoder = LuongAttnDecoderRNN('dot', embedding, hidden_size, voc.num_words, 1, 0)
        init_params(torch, encoder, 1)
        init_params(torch, decoder, 2)
        encoder.train()
        decoder.train()
        encoder_optimizer = torch.optim.Adam(encoder.parameters(), lr=0.0001)
        decoder_optimizer = torch.optim.Adam(decoder.parameters(), lr=0.0001 * 5.0)
        training_batch = batch2TrainData(voc, [p[:] for p in pairs])
        input_variable, lengths, target_variable, mask, max_target_len = training_batch
        log("batch", [input_variable, lengths, target_variable, mask, max_target_len])
        for it, forcing in enumerate([True, False]):
            loss = train(input_variable, lengths, target_variable, mask, max_target_len, encoder,
                         decoder, embedding, encoder_optimizer, decoder_optimizer, 3, 50.0, forcing)
            print("Iteration: {}; Percent complete: {:.1f}%; Average loss: {:.4f}".format(it, it / 3 * 100, loss))
            log("loss", loss)
        encoder.eval()
        decoder.eval()
        searcher = GreedySearchDecoder(encoder, decoder)
        indexes_batch = [indexesFromSentence(voc, "how are you")]
        lengths = torch.tensor([len(indexes) for indexes in indexes_batch])
        input_batch = torch.LongTensor(indexes_batch).transpose(0, 1)
        tokens, scores = searcher(input_batch, lengths, 2)
        log("tokens", tokens)
        log("scores", scores)
        log("words", [voc.index2word[token.item()] for token in tokens])
    run_both(program)


# pytorch/examples reinforcement_learning/reinforce.py (Policy with a softmax head, Categorical
# over its probs, saved log_probs, finish_episode's discounted returns in a deque passed to
# torch.tensor, normalised by std + eps, torch.cat of the per-step losses, the running reward
# print); the gym episodes -> numpy-made states, actions and rewards (m.sample() draws differ),
# 128 hidden units -> 8, Dropout(p=0.6) kept but the policy in eval mode (dropout draws differ)
def test_pytorch_examples_reinforce():
    def program(torch, log):
        from collections import deque
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim
        Categorical = torch.distributions.Categorical
        gamma, log_interval = 0.99, 1

        class Policy(nn.Module):
            def __init__(self):
                super(Policy, self).__init__()
                self.affine1 = nn.Linear(4, 8)
                self.dropout = nn.Dropout(p=0.6)
                self.affine2 = nn.Linear(8, 2)

                self.saved_log_probs = []
                self.rewards = []

            def forward(self, x):
                x = self.affine1(x)
                x = self.dropout(x)
                x = F.relu(x)
                action_scores = self.affine2(x)
                return F.softmax(action_scores, dim=1)

        policy = init_params(torch, Policy(), 0, scale=0.5)
        policy.eval()
        optimizer = optim.Adam(policy.parameters(), lr=1e-2)
        eps = np.finfo(np.float32).eps.item()
        rs = np.random.RandomState(0)

        def select_action(state, sampled):
            state = torch.from_numpy(state).float().unsqueeze(0)
            probs = policy(state)
            m = Categorical(probs)
            action = torch.tensor([sampled])
            policy.saved_log_probs.append(m.log_prob(action))
            log("entropy", m.entropy())
            return action.item()

        def finish_episode():
            R = 0
            policy_loss = []
            returns = deque()
            for r in policy.rewards[::-1]:
                R = r + gamma * R
                returns.appendleft(R)
            returns = torch.tensor(returns)
            returns = (returns - returns.mean()) / (returns.std() + eps)
            for log_prob, R in zip(policy.saved_log_probs, returns):
                policy_loss.append(-log_prob * R)
            optimizer.zero_grad()
            policy_loss = torch.cat(policy_loss).sum()
            policy_loss.backward()
            optimizer.step()
            del policy.rewards[:]
            del policy.saved_log_probs[:]
            return policy_loss

        running_reward = 10
        for i_episode in range(1, 4):
            state, ep_reward = rs.randn(4), 0
            for t in range(1, 5):
                action = select_action(state, int(rs.randint(2)))
                state, reward = rs.randn(4), 1.0
                policy.rewards.append(reward)
                ep_reward += reward
            running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
            log("policy_loss", finish_episode())
            if i_episode % log_interval == 0:
                print('Episode {}\tLast reward: {:.2f}\tAverage reward: {:.2f}'.format(
                      i_episode, ep_reward, running_reward))
        log("params", list(policy.parameters()))
    run_both(program)


# davidtvs/pytorch-lr-finder torch_lr_finder/lr_finder.py (TrainDataLoaderIter/ValDataLoaderIter
# over DataLoaders with auto reset, LRFinder's StateCacher of deep-copied state_dicts, the
# _LRScheduler subclasses LinearLR/ExponentialLR with get_lr from last_epoch, range_test's
# smoothing and divergence check, gradient accumulation with ``loss /= accumulation_steps``
# and ``total_loss += loss``, _validate under no_grad, reset() through load_state_dict); tqdm,
# matplotlib, apex and the file cache left out (plot's np.gradient suggestion kept as a
# function), PYTORCH_VERSION checks resolved to the current branch; a Linear(3, 2) classifier on
# 12 numpy samples
def test_lr_finder_range_test():
    def program(torch, log):
        import copy
        _LRScheduler = torch.optim.lr_scheduler._LRScheduler
        DataLoader, TensorDataset = torch.utils.data.DataLoader, torch.utils.data.TensorDataset

        class DataLoaderIter(object):
            def __init__(self, data_loader):
                self.data_loader = data_loader
                self._iterator = iter(data_loader)

            @property
            def dataset(self):
                return self.data_loader.dataset

            def inputs_labels_from_batch(self, batch_data):
                if not isinstance(batch_data, list) and not isinstance(batch_data, tuple):
                    raise ValueError(
                        "Your batch type is not supported: {}. Please inherit from "
                        "`TrainDataLoaderIter` or `ValDataLoaderIter` and override the "
                        "`inputs_labels_from_batch` method.".format(type(batch_data))
                    )
                inputs, labels, *_ = batch_data
                return inputs, labels

            def __iter__(self):
                return self

            def __next__(self):
                batch = next(self._iterator)
                return self.inputs_labels_from_batch(batch)

        class TrainDataLoaderIter(DataLoaderIter):
            def __init__(self, data_loader, auto_reset=True):
                super().__init__(data_loader)
                self.auto_reset = auto_reset

            def __next__(self):
                try:
                    batch = next(self._iterator)
                    inputs, labels = self.inputs_labels_from_batch(batch)
                except StopIteration:
                    if not self.auto_reset:
                        raise
                    self._iterator = iter(self.data_loader)
                    batch = next(self._iterator)
                    inputs, labels = self.inputs_labels_from_batch(batch)
                return inputs, labels

        class ValDataLoaderIter(DataLoaderIter):
            def __init__(self, data_loader):
                super().__init__(data_loader)
                self.run_limit = len(self.data_loader)
                self.run_counter = 0

            def __iter__(self):
                if self.run_counter >= self.run_limit:
                    self._iterator = iter(self.data_loader)
                    self.run_counter = 0
                return self

            def __next__(self):
                self.run_counter += 1
                return super(ValDataLoaderIter, self).__next__()

        class LinearLR(_LRScheduler):
            def __init__(self, optimizer, end_lr, num_iter, last_epoch=-1):
                self.end_lr = end_lr
                if num_iter <= 1:
                    raise ValueError("`num_iter` must be larger than 1")
                self.num_iter = num_iter
                super(LinearLR, self).__init__(optimizer, last_epoch)

            def get_lr(self):
                r = self.last_epoch / (self.num_iter - 1)
                return [base_lr + r * (self.end_lr - base_lr) for base_lr in self.base_lrs]

        class ExponentialLR(_LRScheduler):
            def __init__(self, optimizer, end_lr, num_iter, last_epoch=-1):
                self.end_lr = end_lr
                if num_iter <= 1:
                    raise ValueError("`num_iter` must be larger than 1")
                self.num_iter = num_iter
                super(ExponentialLR, self).__init__(optimizer, last_epoch)

            def get_lr(self):
                r = self.last_epoch / (self.num_iter - 1)
                return [base_lr * (self.end_lr / base_lr) ** r for base_lr in self.base_lrs]

        class StateCacher(object):
            def __init__(self, in_memory, cache_dir=None):
                self.in_memory = in_memory
                self.cache_dir = cache_dir
                self.cached = {}

            def store(self, key, state_dict):
                self.cached.update({key: copy.deepcopy(state_dict)})

            def retrieve(self, key):
                if key not in self.cached:
                    raise KeyError("Target {} was not cached.".format(key))
                return self.cached.get(key)

        class LRFinder(object):
            def __init__(self, model, optimizer, criterion, device=None, memory_cache=True):
                self.optimizer = optimizer
                self._check_for_scheduler()
                self.model = model
                self.criterion = criterion
                self.history = {"lr": [], "loss": []}
                self.best_loss = None
                self.memory_cache = memory_cache
                self.model_device = next(self.model.parameters()).device
                self.state_cacher = StateCacher(memory_cache)
                self.state_cacher.store("model", self.model.state_dict())
                self.state_cacher.store("optimizer", self.optimizer.state_dict())
                if device:
                    self.device = device
                else:
                    self.device = self.model_device

            def reset(self):
                self.model.load_state_dict(self.state_cacher.retrieve("model"))
                self.optimizer.load_state_dict(self.state_cacher.retrieve("optimizer"))
                self.model.to(self.model_device)

            def range_test(self, train_loader, val_loader=None, start_lr=None, end_lr=10,
                           num_iter=100, step_mode="exp", smooth_f=0.05, diverge_th=5,
                           accumulation_steps=1, non_blocking_transfer=True):
                self.history = {"lr": [], "loss": []}
                self.best_loss = None
                self.model.to(self.device)
                self._check_for_scheduler()
                if start_lr:
                    self._set_learning_rate(start_lr)
                if step_mode.lower() == "exp":
                    lr_schedule = ExponentialLR(self.optimizer, end_lr, num_iter)
                elif step_mode.lower() == "linear":
                    lr_schedule = LinearLR(self.optimizer, end_lr, num_iter)
                else:
                    raise ValueError("expected one of (exp, linear), got {}".format(step_mode))
                if smooth_f < 0 or smooth_f >= 1:
                    raise ValueError("smooth_f is outside the range [0, 1[")
                if isinstance(train_loader, DataLoader):
                    train_iter = TrainDataLoaderIter(train_loader)
                elif isinstance(train_loader, TrainDataLoaderIter):
                    train_iter = train_loader
                else:
                    raise ValueError("`train_loader` has unsupported type")
                if val_loader:
                    if isinstance(val_loader, DataLoader):
                        val_iter = ValDataLoaderIter(val_loader)
                    elif isinstance(val_loader, ValDataLoaderIter):
                        val_iter = val_loader
                for iteration in range(num_iter):
                    loss = self._train_batch(train_iter, accumulation_steps,
                                             non_blocking_transfer=non_blocking_transfer)
                    if val_loader:
                        loss = self._validate(val_iter, non_blocking_transfer=non_blocking_transfer)
                    self.history["lr"].append(lr_schedule.get_lr()[0])
                    lr_schedule.step()
                    if iteration == 0:
                        self.best_loss = loss
                    else:
                        if smooth_f > 0:
                            loss = smooth_f * loss + (1 - smooth_f) * self.history["loss"][-1]
                        if loss < self.best_loss:
                            self.best_loss = loss
                    self.history["loss"].append(loss)
                    if loss > diverge_th * self.best_loss:
                        print("Stopping early, the loss has diverged")
                        break
                print("Learning rate search finished. See the graph with {finder_name}.plot()")

            def _set_learning_rate(self, new_lrs):
                if not isinstance(new_lrs, list):
                    new_lrs = [new_lrs] * len(self.optimizer.param_groups)
                for param_group, new_lr in zip(self.optimizer.param_groups, new_lrs):
                    param_group["lr"] = new_lr

            def _check_for_scheduler(self):
                for param_group in self.optimizer.param_groups:
                    if "initial_lr" in param_group:
                        raise RuntimeError("Optimizer already has a scheduler attached to it")

            def _train_batch(self, train_iter, accumulation_steps, non_blocking_transfer=True):
                self.model.train()
                total_loss = None
                self.optimizer.zero_grad()
                for i in range(accumulation_steps):
                    inputs, labels = next(train_iter)
                    inputs, labels = self._move_to_device(inputs, labels, non_blocking=non_blocking_transfer)
                    outputs = self.model(inputs)
                    loss = self.criterion(outputs, labels)
                    loss /= accumulation_steps
                    loss.backward()
                    if total_loss is None:
                        total_loss = loss
                    else:
                        total_loss += loss
                self.optimizer.step()
                return total_loss.item()

            def _move_to_device(self, inputs, labels, non_blocking=True):
                def move(obj, device, non_blocking=True):
                    if hasattr(obj, "to"):
                        return obj.to(device, non_blocking=non_blocking)
                    elif isinstance(obj, tuple):
                        return tuple(move(o, device, non_blocking) for o in obj)
                    elif isinstance(obj, list):
                        return [move(o, device, non_blocking) for o in obj]
                    elif isinstance(obj, dict):
                        return {k: move(o, device, non_blocking) for k, o in obj.items()}
                    else:
                        return obj
                inputs = move(inputs, self.device, non_blocking=non_blocking)
                labels = move(labels, self.device, non_blocking=non_blocking)
                return inputs, labels

            def _validate(self, val_iter, non_blocking_transfer=True):
                running_loss = 0
                self.model.eval()
                with torch.no_grad():
                    for inputs, labels in val_iter:
                        inputs, labels = self._move_to_device(inputs, labels, non_blocking=non_blocking_transfer)
                        outputs = self.model(inputs)
                        loss = self.criterion(outputs, labels)
                        running_loss += loss.item() * len(labels)
                return running_loss / len(val_iter.dataset)

        def suggestion(finder, skip_start=1, skip_end=1):
            lrs = finder.history["lr"][skip_start:-skip_end]
            losses = finder.history["loss"][skip_start:-skip_end]
            min_grad_idx = (np.gradient(np.array(losses))).argmin()
            print("Suggested LR: {:.2E}".format(lrs[min_grad_idx]))
            return lrs[min_grad_idx]

        rs = np.random.RandomState(0)
        x = torch.tensor(rs.randn(12, 3).astype(np.float32))
        y = torch.tensor(rs.randint(0, 2, size=12))
        train_loader = DataLoader(TensorDataset(x[:8], y[:8]), batch_size=2)
        val_loader = DataLoader(TensorDataset(x[8:], y[8:]), batch_size=2)
        model = init_params(torch, torch.nn.Linear(3, 2), 1)
        criterion = torch.nn.CrossEntropyLoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
        lr_finder = LRFinder(model, optimizer, criterion, device="cpu")
        lr_finder.range_test(train_loader, end_lr=100, num_iter=6, accumulation_steps=2)
        log("exp_history", lr_finder.history)
        log("suggested", suggestion(lr_finder))
        lr_finder.reset()
        log("reset_params", list(model.parameters()))
        log("reset_opt", optimizer.state_dict())
        lr_finder.range_test(train_loader, val_loader=val_loader, end_lr=1, num_iter=4,
                             step_mode="linear")
        log("linear_history", lr_finder.history)
        lr_finder.reset()
        try:
            LRFinder(model, torch.optim.SGD(model.parameters(), lr=0.1), criterion).range_test(
                train_loader, smooth_f=1.5, num_iter=3)
        except ValueError as e:
            log("smooth_error", str(e))
    run_both(program)


# facebookresearch/dlrm dlrm_s_pytorch.py (DLRM_Net: create_mlp's numpy-drawn Xavier weights
# assigned through ``LL.weight.data = torch.tensor(W, requires_grad=True)``, create_emb's
# per-table np.random seeds and ``nn.EmbeddingBag(n, m, mode="sum", sparse=True, _weight=...)``
# with the numpy state saved and restored, apply_emb with offsets, interact_features' "dot"
# (bmm of T with its transpose, the custom li/lj lower-triangle gather) and "cat", the
# sequential_forward path, loss_threshold clamping); BCELoss and SGD as the program trains
# (sparse embedding gradients); the distributed/parallel/QR/MD branches left out;
# ln_emb [4, 3, 5], m_spa 2, ln_bot 3-4-2, ln_top 8-4-1 (7-4-1 for "cat"), batches of 3
def test_dlrm_embedding_bag_interactions():
    def program(torch, log):
        nn = torch.nn

        class DLRM_Net(nn.Module):
            def create_mlp(self, ln, sigmoid_layer):
                layers = nn.ModuleList()
                for i in range(0, ln.size - 1):
                    n = ln[i]
                    m = ln[i + 1]
                    LL = nn.Linear(int(n), int(m), bias=True)
                    mean = 0.0  # std_dev = np.sqrt(variance)
                    std_dev = np.sqrt(2 / (m + n))  # np.sqrt(1 / m) # np.sqrt(1 / n)
                    W = np.random.normal(mean, std_dev, size=(m, n)).astype(np.float32)
                    std_dev = np.sqrt(1 / m)  # np.sqrt(2 / (m + 1))
                    bt = np.random.normal(mean, std_dev, size=m).astype(np.float32)
                    LL.weight.data = torch.tensor(W, requires_grad=True)
                    LL.bias.data = torch.tensor(bt, requires_grad=True)
                    layers.append(LL)
                    if i == sigmoid_layer:
                        layers.append(nn.Sigmoid())
                    else:
                        layers.append(nn.ReLU())
                return torch.nn.Sequential(*layers)

            def create_emb(self, m, ln):
                emb_l = nn.ModuleList()
                np_rand_state = np.random.get_state()
                for i in range(0, ln.size):
                    np.random.seed(self.l_emb_seeds[i])
                    n = ln[i]
                    W = np.random.uniform(
                        low=-np.sqrt(1 / n), high=np.sqrt(1 / n), size=(n, m)
                    ).astype(np.float32)
                    EE = nn.EmbeddingBag(n, m, mode="sum", sparse=True, _weight=torch.tensor(W, requires_grad=True))
                    emb_l.append(EE)
                np.random.set_state(np_rand_state)
                return emb_l

            def __init__(self, m_spa=None, ln_emb=None, ln_bot=None, ln_top=None,
                         arch_interaction_op=None, arch_interaction_itself=False,
                         sigmoid_bot=-1, sigmoid_top=-1, loss_threshold=0.0, ndevices=-1):
                super(DLRM_Net, self).__init__()
                self.ndevices = ndevices
                self.output_d = 0
                self.arch_interaction_op = arch_interaction_op
                self.arch_interaction_itself = arch_interaction_itself
                self.loss_threshold = loss_threshold
                self.l_emb_seeds = np.random.randint(low=0, high=100000, size=len(ln_emb))
                if ndevices <= 1:
                    self.emb_l = self.create_emb(m_spa, ln_emb)
                self.bot_l = self.create_mlp(ln_bot, sigmoid_bot)
                self.top_l = self.create_mlp(ln_top, sigmoid_top)

            def apply_mlp(self, x, layers):
                return layers(x)

            def apply_emb(self, lS_o, lS_i, emb_l):
                ly = []
                for k, sparse_index_group_batch in enumerate(lS_i):
                    sparse_offset_group_batch = lS_o[k]
                    E = emb_l[k]
                    V = E(sparse_index_group_batch, sparse_offset_group_batch)
                    ly.append(V)
                return ly

            def interact_features(self, x, ly):
                if self.arch_interaction_op == "dot":
                    (batch_size, d) = x.shape
                    T = torch.cat([x] + ly, dim=1).view((batch_size, -1, d))
                    Z = torch.bmm(T, torch.transpose(T, 1, 2))
                    _, ni, nj = Z.shape
                    offset = 1 if self.arch_interaction_itself else 0
                    li = torch.tensor([i for i in range(ni) for j in range(i + offset)])
                    lj = torch.tensor([j for i in range(nj) for j in range(i + offset)])
                    Zflat = Z[:, li, lj]
                    R = torch.cat([x] + [Zflat], dim=1)
                elif self.arch_interaction_op == "cat":
                    R = torch.cat([x] + ly, dim=1)
                return R

            def forward(self, dense_x, lS_o, lS_i):
                return self.sequential_forward(dense_x, lS_o, lS_i)

            def sequential_forward(self, dense_x, lS_o, lS_i):
                x = self.apply_mlp(dense_x, self.bot_l)
                ly = self.apply_emb(lS_o, lS_i, self.emb_l)
                z = self.interact_features(x, ly)
                p = self.apply_mlp(z, self.top_l)
                if 0.0 < self.loss_threshold and self.loss_threshold < 1.0:
                    z = torch.clamp(p, min=self.loss_threshold, max=(1.0 - self.loss_threshold))
                else:
                    z = p
                return z

        ln_emb = np.array([4, 3, 5])
        rs = np.random.RandomState(5)
        # one batch of 3 samples: per table a flat index list with offsets (bags of 1-2 ids)
        lS_o = [torch.tensor([0, 1, 3]), torch.tensor([0, 2, 3]), torch.tensor([0, 1, 2])]
        lS_i = [torch.tensor(rs.randint(0, n, size=k)) for n, k in zip(ln_emb, (4, 4, 3))]
        X = torch.tensor(rs.rand(3, 3).astype(np.float32))
        T = torch.tensor([[1.0], [0.0], [1.0]])
        for op, ln_top, thr in (("dot", [8, 4, 1], 0.0), ("cat", [8, 4, 1], 0.02)):
            np.random.seed(123)
            dlrm = DLRM_Net(2, ln_emb, np.array([3, 4, 2]), np.array(ln_top), op,
                            arch_interaction_itself=(op == "cat"), sigmoid_top=len(ln_top) - 2,
                            loss_threshold=thr)
            loss_fn = torch.nn.BCELoss(reduction="mean")
            optimizer = torch.optim.SGD(dlrm.parameters(), lr=0.1)
            for j in range(2):
                Z = dlrm(X, lS_o, lS_i)
                E = loss_fn(Z, T)
                optimizer.zero_grad()
                E.backward()
                log(op + "_emb_grad_sparse", dlrm.emb_l[0].weight.grad.is_sparse)
                log(op + "_emb_grad", dlrm.emb_l[0].weight.grad.to_dense())
                optimizer.step()
                S = Z.detach().cpu().numpy()
                A = np.sum((np.round(S, 0) == T.numpy()).astype(np.uint8))
                print("Finished {} it {}, loss {:.6f}, accuracy {:3.3f} %".format(op, j, E.detach().cpu().numpy(), A / 3 * 100))
                log(op + "_Z", Z)
            log(op + "_params", list(dlrm.parameters()))
    run_both(program)


# pytorch/pytorch torch/optim/swa_utils.py (the AveragedModel/SWALR docstring recipe: an SWA
# average updated after swa_start with SWALR's annealing and CosineAnnealingLR before, update_bn
# over the loader at the end, predictions through the averaged model; the EMA variant through
# get_ema_multi_avg_fn with use_buffers=True and the custom avg_fn form); a Linear/BatchNorm1d
# net on numpy data, 300 epochs -> 6 with swa_start 3, T_max 6, anneal_epochs 2
def test_swa_utils_docstring_recipe():
    def program(torch, log):
        nn = torch.nn
        AveragedModel, SWALR = torch.optim.swa_utils.AveragedModel, torch.optim.swa_utils.SWALR
        rs = np.random.RandomState(0)
        data = [(torch.tensor(rs.randn(4, 3).astype(np.float32)),
                 torch.tensor(rs.randn(4, 1).astype(np.float32))) for _ in range(2)]
        loader = torch.utils.data.DataLoader(data, batch_size=None)
        model = init_params(torch, nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(),
                                                 nn.Linear(4, 1)), 0)
        loss_fn = nn.MSELoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        swa_model = torch.optim.swa_utils.AveragedModel(model)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=6)
        swa_start = 3
        swa_scheduler = SWALR(optimizer, swa_lr=0.05, anneal_epochs=2)
        ema_model = torch.optim.swa_utils.AveragedModel(
            model, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.9), use_buffers=True)
        ema_avg = lambda averaged_model_parameter, model_parameter, num_averaged: \
            0.1 * averaged_model_parameter + 0.9 * model_parameter
        custom_model = torch.optim.swa_utils.AveragedModel(model, avg_fn=ema_avg)
        for i in range(6):
            for input, target in loader:
                optimizer.zero_grad()
                loss_fn(model(input), target).backward()
                optimizer.step()
                ema_model.update_parameters(model)
            custom_model.update_parameters(model)
            if i > swa_start:
                swa_model.update_parameters(model)
                swa_scheduler.step()
            else:
                scheduler.step()
            log("lr", optimizer.param_groups[0]["lr"])
        log("n_averaged", [swa_model.n_averaged, ema_model.n_averaged, custom_model.n_averaged])
        log("bn_before", [swa_model.module[1].running_mean, swa_model.module[1].running_var])
        torch.optim.swa_utils.update_bn(loader, swa_model)
        log("bn_after", [swa_model.module[1].running_mean, swa_model.module[1].running_var,
                         swa_model.module[1].num_batches_tracked])
        test_input = data[0][0]
        log("swa_preds", swa_model(test_input))
        ema_model.eval()
        log("ema_preds", ema_model(test_input))
        log("custom_params", list(custom_model.parameters()))
        log("swa_state", list(swa_model.state_dict().keys()))
        log("sched", swa_scheduler.state_dict())
    run_both(program)


# pytorch/tutorials beginner_source/nn_tutorial.py (the refactoring half: Mnist_Logistic with
# nn.Parameter(torch.randn(784, 10) / math.sqrt(784)), accuracy by argmax, TensorDataset and
# DataLoader, loss_batch returning ``loss.item(), len(xb)``, fit's ``zip(*[...])`` validation
# with np.multiply/np.sum, get_data, the CNN through a Lambda module and F.avg_pool2d, then
# nn.Sequential with Lambda preprocess, AdaptiveAvgPool2d(1) and WrappedDataLoader); MNIST ->
# 16 numpy 8x8 images of 4 classes, 784 -> 64, 16/10 channels -> 4, shuffle=True -> False
# (random order differs), torch.randn -> numpy-seeded values; fit's ``print(epoch, val_loss)``
# logged instead (full float reprs differ in the last bit after SGD at lr 0.5)
def test_nn_tutorial_refactoring():
    def program(torch, log):
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim
        TensorDataset, DataLoader = torch.utils.data.TensorDataset, torch.utils.data.DataLoader
        dev = torch.device("cpu")
        rs = np.random.RandomState(0)
        x_train, y_train, x_valid, y_valid = map(
            torch.tensor, (rs.rand(16, 64).astype(np.float32), rs.randint(0, 4, size=16),
                           rs.rand(8, 64).astype(np.float32), rs.randint(0, 4, size=8)))
        n, c = x_train.shape
        bs, lr, epochs = 4, 0.5, 2
        loss_func = F.cross_entropy

        def accuracy(out, yb):
            preds = torch.argmax(out, dim=1)
            return (preds == yb).float().mean()

        class Mnist_Logistic(nn.Module):
            def __init__(self):
                super().__init__()
                self.weights = nn.Parameter(randn(torch, (64, 4), 0) / math.sqrt(64))
                self.bias = nn.Parameter(torch.zeros(4))

            def forward(self, xb):
                return xb @ self.weights + self.bias

        def loss_batch(model, loss_func, xb, yb, opt=None):
            loss = loss_func(model(xb), yb)
            if opt is not None:
                loss.backward()
                opt.step()
                opt.zero_grad()
            return loss.item(), len(xb)

        def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
            for epoch in range(epochs):
                model.train()
                for xb, yb in train_dl:
                    loss_batch(model, loss_func, xb, yb, opt)
                model.eval()
                with torch.no_grad():
                    losses, nums = zip(
                        *[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl]
                    )
                val_loss = np.sum(np.multiply(losses, nums)) / np.sum(nums)
                log("epoch_val_loss", (epoch, val_loss))

        def get_data(train_ds, valid_ds, bs):
            return (
                DataLoader(train_ds, batch_size=bs, shuffle=False),
                DataLoader(valid_ds, batch_size=bs * 2),
            )

        train_ds = TensorDataset(x_train, y_train)
        valid_ds = TensorDataset(x_valid, y_valid)
        train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
        model = Mnist_Logistic()
        opt = optim.SGD(model.parameters(), lr=lr)
        fit(epochs, model, loss_func, opt, train_dl, valid_dl)
        log("logistic_acc", accuracy(model(x_valid), y_valid))

        class Lambda(nn.Module):
            def __init__(self, func):
                super().__init__()
                self.func = func

            def forward(self, x):
                return self.func(x)

        def preprocess(x, y):
            return x.view(-1, 1, 8, 8).to(dev), y.to(dev)

        class WrappedDataLoader:
            def __init__(self, dl, func):
                self.dl = dl
                self.func = func

            def __len__(self):
                return len(self.dl)

            def __iter__(self):
                for b in self.dl:
                    yield (self.func(*b))

        train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
        train_dl = WrappedDataLoader(train_dl, preprocess)
        valid_dl = WrappedDataLoader(valid_dl, preprocess)
        model = nn.Sequential(
            nn.Conv2d(1, 4, kernel_size=3, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(4, 4, kernel_size=3, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(4, 4, kernel_size=3, stride=2, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            Lambda(lambda x: x.view(x.size(0), -1)),
        )
        init_params(torch, model, 1, scale=0.5)
        model.to(dev)
        opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        fit(epochs, model, loss_func, opt, train_dl, valid_dl)
        log("cnn_params", list(model.parameters()))
        log("len", len(train_dl))
    run_both(program)


# PetrochukM/PyTorch-NLP torchnlp/samplers/sorted_sampler.py and bucket_batch_sampler.py
# (SortedSampler's sort of (index, key) pairs, BucketBatchSampler subclassing BatchSampler
# with a bucket BatchSampler and SubsetRandomSampler over sorted batches) driving a DataLoader
# with a padding collate_fn; the torch docs' IterableDataset recipe (MyIterableDataset with
# get_worker_info) and random_split/Subset/ConcatDataset. The SubsetRandomSampler's and
# random_split's orders come from the generators (streams differ), so the test compares the
# sorted batches and the split sizes and contents, not their order. SortedSampler's
# ``super().__init__(data)`` raises TypeError in torch now (checked), so the rest runs with
# ``super().__init__()`` in its place
def test_torchnlp_bucket_batch_sampler_and_datasets():
    def program(torch, log):
        BatchSampler = torch.utils.data.sampler.BatchSampler
        SubsetRandomSampler = torch.utils.data.sampler.SubsetRandomSampler
        Sampler = torch.utils.data.sampler.Sampler
        pad_sequence = torch.nn.utils.rnn.pad_sequence

        def identity(x):
            return x

        class OldSortedSampler(Sampler):
            def __init__(self, data, sort_key=identity):
                super().__init__(data)

        try:   # torch 2.2 dropped Sampler's data_source argument
            OldSortedSampler([1, 2])
        except TypeError as e:
            log("old_sampler_init", type(e).__name__)

        class SortedSampler(Sampler):
            def __init__(self, data, sort_key=identity):
                super().__init__()
                self.data = data
                self.sort_key = sort_key
                zip_ = [(i, self.sort_key(row)) for i, row in enumerate(self.data)]
                zip_ = sorted(zip_, key=lambda r: r[1])
                self.sorted_indexes = [item[0] for item in zip_]

            def __iter__(self):
                return iter(self.sorted_indexes)

            def __len__(self):
                return len(self.data)

        class BucketBatchSampler(BatchSampler):
            def __init__(self,
                         sampler,
                         batch_size,
                         drop_last,
                         sort_key=identity,
                         bucket_size_multiplier=100):
                super().__init__(sampler, batch_size, drop_last)
                self.sort_key = sort_key
                _bucket_size = batch_size * bucket_size_multiplier
                if hasattr(sampler, "__len__"):
                    _bucket_size = min(_bucket_size, len(sampler))
                self.bucket_sampler = BatchSampler(sampler, _bucket_size, False)

            def __iter__(self):
                for bucket in self.bucket_sampler:
                    sorted_sampler = SortedSampler(bucket, self.sort_key)
                    for batch in SubsetRandomSampler(
                            list(BatchSampler(sorted_sampler, self.batch_size, self.drop_last))):
                        yield [bucket[i] for i in batch]

            def __len__(self):
                if self.drop_last:
                    return len(self.sampler) // self.batch_size
                else:
                    return math.ceil(len(self.sampler) / self.batch_size)

        rs = np.random.RandomState(0)
        lengths = [int(k) for k in rs.randint(1, 6, size=10)]
        data = [torch.arange(k) * (i + 1) for i, k in enumerate(lengths)]
        sampler = torch.utils.data.SequentialSampler(data)
        bbs = BucketBatchSampler(sampler, batch_size=3, drop_last=False,
                                 sort_key=lambda i: lengths[i], bucket_size_multiplier=2)
        batches = list(bbs)
        log("bucket_batches", sorted(sorted(b) for b in batches))
        log("len", [len(bbs), len(BucketBatchSampler(sampler, 3, True))])

        def collate(batch):
            return pad_sequence(batch, batch_first=True), torch.tensor([len(b) for b in batch])

        loader = torch.utils.data.DataLoader(data, batch_sampler=bbs, collate_fn=collate)
        seen = []
        for padded, lens in loader:
            seen.append((padded.sum().item(), tuple(sorted(lens.tolist())), padded.shape[1]))
        log("padded", sorted(seen))

        class MyIterableDataset(torch.utils.data.IterableDataset):
            def __init__(self, start, end):
                super(MyIterableDataset).__init__()
                assert end > start, "this example code only works with end >= start"
                self.start = start
                self.end = end

            def __iter__(self):
                worker_info = torch.utils.data.get_worker_info()
                if worker_info is None:  # single-process data loading, return the full iterator
                    iter_start = self.start
                    iter_end = self.end
                else:  # in a worker process
                    per_worker = int(math.ceil((self.end - self.start) / float(worker_info.num_workers)))
                    worker_id = worker_info.id
                    iter_start = self.start + worker_id * per_worker
                    iter_end = min(iter_start + per_worker, self.end)
                return iter(range(iter_start, iter_end))

        ds = MyIterableDataset(start=3, end=7)
        log("iterable", list(torch.utils.data.DataLoader(ds, num_workers=0)))
        log("iterable_b2", list(torch.utils.data.DataLoader(ds, batch_size=3)))
        chained = torch.utils.data.ChainDataset([ds, MyIterableDataset(10, 12)])
        log("chained", list(chained))

        full = torch.utils.data.TensorDataset(torch.arange(10.0), torch.arange(10))
        train, val = torch.utils.data.random_split(full, [0.7, 0.3],
                                                   generator=torch.Generator().manual_seed(42))
        log("split_sizes", [len(train), len(val), type(train).__name__])
        log("split_union", sorted(train.indices + val.indices))
        sub = torch.utils.data.Subset(full, [1, 3, 5])
        cat = torch.utils.data.ConcatDataset([sub, torch.utils.data.Subset(full, [0, 9])])
        log("concat", [len(cat), cat.cumulative_sizes, cat[3], cat[1]])
        log("concat_loader", list(torch.utils.data.DataLoader(cat, batch_size=2)))
        try:
            cat[7]
        except Exception as e:
            log("concat_error", type(e).__name__)
    run_both(program)


# ikostrikov/pytorch-a2c-ppo-acktr-gail a2c_ppo_acktr/distributions.py (the standard
# distributions monkey-patched: FixedCategorical.sample/log_probs/mode, FixedNormal.log_probs/
# entropy/mode, FixedBernoulli; the Categorical/DiagGaussian/Bernoulli heads with utils.py's
# init(orthogonal_, constant_) and AddBias) and algo/ppo.py's PPO.update (normalised advantages,
# the clipped surrogate, the clipped value loss, clip_grad_norm_, Adam with eps) for the
# Categorical and DiagGaussian heads (the Bernoulli head's patches evaluated once); the policy
# network -> one Linear base, rollouts -> numpy-made minibatches through a BatchSampler over a
# SequentialSampler (SubsetRandomSampler draws differ), the orthogonal_ draws -> numpy-seeded
# parameters after construction; the patched methods are restored afterwards (they are global)
def test_a2c_ppo_distributions_and_update():
    def program(torch, log):
        nn, optim = torch.nn, torch.optim
        saved = {cls: dict(vars(cls)) for cls in (torch.distributions.Categorical,
                                                   torch.distributions.Normal,
                                                   torch.distributions.Bernoulli)}
        try:
            FixedCategorical = torch.distributions.Categorical

            old_sample = FixedCategorical.sample
            FixedCategorical.sample = lambda self: old_sample(self).unsqueeze(-1)

            log_prob_cat = FixedCategorical.log_prob
            FixedCategorical.log_probs = lambda self, actions: log_prob_cat(self, actions.squeeze(-1)).view(actions.size(0), -1).sum(-1).unsqueeze(-1)

            FixedCategorical.mode = lambda self: self.probs.argmax(dim=-1, keepdim=True)

            FixedNormal = torch.distributions.Normal

            log_prob_normal = FixedNormal.log_prob
            FixedNormal.log_probs = lambda self, actions: log_prob_normal(self, actions).sum(-1, keepdim=True)

            normal_entropy = FixedNormal.entropy
            FixedNormal.entropy = lambda self: normal_entropy(self).sum(-1)

            FixedNormal.mode = lambda self: self.mean

            FixedBernoulli = torch.distributions.Bernoulli

            log_prob_bernoulli = FixedBernoulli.log_prob
            FixedBernoulli.log_probs = lambda self, actions: log_prob_bernoulli(self, actions).view(actions.size(0), -1).sum(-1).unsqueeze(-1)

            bernoulli_entropy = FixedBernoulli.entropy
            FixedBernoulli.entropy = lambda self: bernoulli_entropy(self).sum(-1)
            FixedBernoulli.mode = lambda self: torch.gt(self.probs, 0.5).float()

            class AddBias(nn.Module):
                def __init__(self, bias):
                    super(AddBias, self).__init__()
                    self._bias = nn.Parameter(bias.unsqueeze(1))

                def forward(self, x):
                    if x.dim() == 2:
                        bias = self._bias.t().view(1, -1)
                    else:
                        bias = self._bias.t().view(1, -1, 1, 1)
                    return x + bias

            def init(module, weight_init, bias_init, gain=1):
                weight_init(module.weight.data, gain=gain)
                bias_init(module.bias.data)
                return module

            class Categorical(nn.Module):
                def __init__(self, num_inputs, num_outputs):
                    super(Categorical, self).__init__()
                    init_ = lambda m: init(m,
                        nn.init.orthogonal_,
                        lambda x: nn.init.constant_(x, 0),
                        gain=0.01)
                    self.linear = init_(nn.Linear(num_inputs, num_outputs))

                def forward(self, x):
                    x = self.linear(x)
                    return FixedCategorical(logits=x)

            class DiagGaussian(nn.Module):
                def __init__(self, num_inputs, num_outputs):
                    super(DiagGaussian, self).__init__()
                    init_ = lambda m: init(m,
                        nn.init.orthogonal_,
                        lambda x: nn.init.constant_(x, 0))
                    self.fc_mean = init_(nn.Linear(num_inputs, num_outputs))
                    self.logstd = AddBias(torch.zeros(num_outputs))

                def forward(self, x):
                    action_mean = self.fc_mean(x)
                    zeros = torch.zeros(action_mean.size())
                    if x.is_cuda:
                        zeros = zeros.cuda()
                    action_logstd = self.logstd(zeros)
                    return FixedNormal(action_mean, action_logstd.exp())

            class Bernoulli(nn.Module):
                def __init__(self, num_inputs, num_outputs):
                    super(Bernoulli, self).__init__()
                    init_ = lambda m: init(m,
                        nn.init.orthogonal_,
                        lambda x: nn.init.constant_(x, 0))
                    self.linear = init_(nn.Linear(num_inputs, num_outputs))

                def forward(self, x):
                    x = self.linear(x)
                    return FixedBernoulli(logits=x)

            class ActorCritic(nn.Module):   # Policy with an MLPBase condensed to one layer
                def __init__(self, dist):
                    super().__init__()
                    self.base = nn.Sequential(nn.Linear(3, 4), nn.Tanh())
                    self.critic_linear = nn.Linear(4, 1)
                    self.dist = dist
                    self.is_recurrent = False

                def evaluate_actions(self, inputs, rnn_hxs, masks, action):
                    actor_features = self.base(inputs)
                    value = self.critic_linear(actor_features)
                    dist = self.dist(actor_features)
                    action_log_probs = dist.log_probs(action)
                    dist_entropy = dist.entropy().mean()
                    return value, action_log_probs, dist_entropy, rnn_hxs

            class PPO():
                def __init__(self, actor_critic, clip_param, ppo_epoch, num_mini_batch,
                             value_loss_coef, entropy_coef, lr=None, eps=None,
                             max_grad_norm=None, use_clipped_value_loss=True):
                    self.actor_critic = actor_critic
                    self.clip_param = clip_param
                    self.ppo_epoch = ppo_epoch
                    self.num_mini_batch = num_mini_batch
                    self.value_loss_coef = value_loss_coef
                    self.entropy_coef = entropy_coef
                    self.max_grad_norm = max_grad_norm
                    self.use_clipped_value_loss = use_clipped_value_loss
                    self.optimizer = optim.Adam(actor_critic.parameters(), lr=lr, eps=eps)

                def update(self, rollouts):
                    advantages = rollouts.returns[:-1] - rollouts.value_preds[:-1]
                    advantages = (advantages - advantages.mean()) / (
                        advantages.std() + 1e-5)
                    value_loss_epoch = 0
                    action_loss_epoch = 0
                    dist_entropy_epoch = 0
                    for e in range(self.ppo_epoch):
                        data_generator = rollouts.feed_forward_generator(
                            advantages, self.num_mini_batch)
                        for sample in data_generator:
                            obs_batch, recurrent_hidden_states_batch, actions_batch, \
                               value_preds_batch, return_batch, masks_batch, old_action_log_probs_batch, \
                                    adv_targ = sample
                            values, action_log_probs, dist_entropy, _ = self.actor_critic.evaluate_actions(
                                obs_batch, recurrent_hidden_states_batch, masks_batch,
                                actions_batch)
                            ratio = torch.exp(action_log_probs -
                                              old_action_log_probs_batch)
                            surr1 = ratio * adv_targ
                            surr2 = torch.clamp(ratio, 1.0 - self.clip_param,
                                                1.0 + self.clip_param) * adv_targ
                            action_loss = -torch.min(surr1, surr2).mean()
                            if self.use_clipped_value_loss:
                                value_pred_clipped = value_preds_batch + \
                                    (values - value_preds_batch).clamp(-self.clip_param, self.clip_param)
                                value_losses = (values - return_batch).pow(2)
                                value_losses_clipped = (
                                    value_pred_clipped - return_batch).pow(2)
                                value_loss = torch.max(value_losses, value_losses_clipped).mean()
                            else:
                                value_loss = (return_batch - values).pow(2).mean()
                            self.optimizer.zero_grad()
                            (value_loss * self.value_loss_coef + action_loss -
                             dist_entropy * self.entropy_coef).backward()
                            nn.utils.clip_grad_norm_(self.actor_critic.parameters(),
                                                     self.max_grad_norm)
                            self.optimizer.step()
                            value_loss_epoch += value_loss.item()
                            action_loss_epoch += action_loss.item()
                            dist_entropy_epoch += dist_entropy.item()
                    num_updates = self.ppo_epoch * self.num_mini_batch
                    value_loss_epoch /= num_updates
                    action_loss_epoch /= num_updates
                    dist_entropy_epoch /= num_updates
                    return value_loss_epoch, action_loss_epoch, dist_entropy_epoch

            BatchSampler = torch.utils.data.sampler.BatchSampler
            SequentialSampler = torch.utils.data.sampler.SequentialSampler

            class Rollouts:   # RolloutStorage's feed_forward_generator over numpy-made steps
                def __init__(self, rs, actions):
                    n = 6
                    t = lambda a: torch.tensor(np.asarray(a, dtype=np.float32))
                    self.obs = t(rs.randn(n, 3))
                    self.actions = actions
                    self.value_preds = t(rs.randn(n + 1, 1))
                    self.returns = t(rs.randn(n + 1, 1))
                    self.masks = torch.ones(n, 1)
                    self.action_log_probs = t(rs.randn(n, 1) * 0.1 - 1.0)

                def feed_forward_generator(self, advantages, num_mini_batch):
                    batch_size = self.obs.size(0)
                    mini_batch_size = batch_size // num_mini_batch
                    sampler = BatchSampler(SequentialSampler(range(batch_size)),
                                           mini_batch_size, drop_last=True)
                    for indices in sampler:
                        yield (self.obs[indices], None, self.actions[indices],
                               self.value_preds[:-1][indices], self.returns[:-1][indices],
                               self.masks[indices], self.action_log_probs[indices],
                               advantages[indices])

            rs = np.random.RandomState(0)
            heads = [(Categorical(4, 2), torch.tensor(rs.randint(0, 2, size=(6, 1)))),
                     (DiagGaussian(4, 2), torch.tensor(rs.randn(6, 2).astype(np.float32)))]
            bern = init_params(torch, Bernoulli(4, 2), 5)(torch.ones(2, 4))   # Bernoulli's patches
            log("bernoulli", [bern.mode(), bern.entropy(), bern.log_probs(torch.ones(2, 2))])
            for k, (head, actions) in enumerate(heads):
                ac = init_params(torch, ActorCritic(head), k, scale=0.5)
                dist = ac.dist(ac.base(torch.ones(2, 3)))
                log("mode%d" % k, dist.mode())
                log("entropy%d" % k, dist.entropy())
                agent = PPO(ac, 0.2, 1, 2, 0.5, 0.01, lr=7e-3, eps=1e-5, max_grad_norm=0.5,
                            use_clipped_value_loss=(k != 1))
                log("update%d" % k, agent.update(Rollouts(rs, actions)))
                log("params%d" % k, list(ac.parameters()))
            log("sample_shape", list(torch.distributions.Categorical(logits=torch.zeros(2, 3)).sample().shape))
        finally:
            for cls, attrs in saved.items():
                for name in ("sample", "log_probs", "mode", "entropy"):
                    if name in attrs:
                        setattr(cls, name, attrs[name])
                    elif name in vars(cls):
                        delattr(cls, name)
    run_both(program)


# descriptinc/descript-audio-codec dac/nn/layers.py (PaddedConv1d/PaddedConvTranspose1d over
# ``weight_norm`` from torch.nn.utils with causal and centred padding, the trims of the
# transposed convolution, WNConv1d/WNConvTranspose1d factories, the ``@torch.jit.script`` snake
# activation with reshape/reciprocal/sin.pow, Snake1d, the power-aware RMSNorm) in dac/model/
# dac.py's ResidualUnit arrangement, two Adam steps on an L1 loss; 2->4 channels, 16 samples
def test_descript_audio_codec_layers():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        import warnings
        weight_norm = torch.nn.utils.weight_norm

        class RMSNorm(nn.Module):
            def __init__(self, dim: int, eps: float = 1e-6):
                super().__init__()
                self.scale = nn.Parameter(math.sqrt(eps) * torch.ones(1, dim, 1))
                self.eps = eps

            def forward(self, x):
                power = x[:, :1, :] * self.scale[:, :1, :]
                content = x[:, 1:, :]
                if content.shape[1] == 0:
                    return power
                content = content * torch.rsqrt(content.pow(2).mean(dim=1, keepdim=True) + self.eps)
                content = content * self.scale[:, 1:, :]
                return torch.cat([power, content], dim=1)

        class PaddedConv1d(nn.Module):
            def __init__(self, *args, **kwargs):
                super().__init__()
                kwargs.pop('padding', None)
                causal = kwargs.pop('causal', False)
                padding = (kwargs.get('kernel_size', 1) - 1) * kwargs.get('dilation', 1) - kwargs.get('stride', 1) + 1
                self.padding = (
                    padding if causal else padding // 2,
                    0 if causal else padding // 2
                )
                self.conv = weight_norm(nn.Conv1d(*args, **kwargs))

            def forward(self, x):
                x = F.pad(x, self.padding)
                return self.conv(x)

        class PaddedConvTranspose1d(nn.Module):
            def __init__(self, *args, **kwargs):
                super().__init__()
                kwargs.pop('padding', None)
                causal = kwargs.pop('causal', False)
                padding = (kwargs.get('kernel_size', 1) - 1) * kwargs.get('dilation', 1) - kwargs.get('stride', 1) + 1
                self.trim_left = 0 if causal else padding // 2
                self.trim_right = padding if causal else padding // 2
                self.conv = weight_norm(nn.ConvTranspose1d(*args, **kwargs))

            def forward(self, x):
                x = self.conv(x)
                if self.trim_right > 0:
                    return x[..., self.trim_left:-self.trim_right]
                return x[..., self.trim_left:]

        def WNConv1d(*args, **kwargs):
            return PaddedConv1d(*args, **kwargs)

        def WNConvTranspose1d(*args, **kwargs):
            return PaddedConvTranspose1d(*args, **kwargs)

        @torch.jit.script
        def snake(x, alpha):
            shape = x.shape
            x = x.reshape(shape[0], shape[1], -1)
            x = x + (alpha + 1e-9).reciprocal() * torch.sin(alpha * x).pow(2)
            x = x.reshape(shape)
            return x

        class Snake1d(nn.Module):
            def __init__(self, channels):
                super().__init__()
                self.alpha = nn.Parameter(torch.ones(1, channels, 1))

            def forward(self, x):
                return snake(x, self.alpha)

        class ResidualUnit(nn.Module):
            def __init__(self, dim: int = 16, dilation: int = 1, causal: bool = False):
                super().__init__()
                self.block = nn.Sequential(
                    Snake1d(dim),
                    WNConv1d(dim, dim, kernel_size=7, dilation=dilation, causal=causal),
                    Snake1d(dim),
                    WNConv1d(dim, dim, kernel_size=1),
                )

            def forward(self, x):
                y = self.block(x)
                pad = (x.shape[-1] - y.shape[-1]) // 2
                if pad > 0:
                    x = x[..., pad:-pad]
                return x + y

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # nn.utils.weight_norm's deprecation warning
            model = nn.Sequential(
                WNConv1d(2, 4, kernel_size=3, causal=True),
                ResidualUnit(4, dilation=2),
                RMSNorm(4),
                WNConvTranspose1d(4, 2, kernel_size=3, causal=True),
            )

        init_params(torch, model, 0, scale=0.4)
        log("names", [n for n, _ in model.named_parameters()])
        x = randn(torch, (2, 2, 16), 1)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(2):
            y = model(x)
            loss = F.l1_loss(y, x)
            opt.zero_grad()
            loss.backward()
            opt.step()
            log("loss", loss)
        log("y", y)
        log("grads", [p.grad for p in model.parameters()])
        log("snake", snake(x, torch.full((1, 2, 1), 0.5)))
    run_both(program)


# pytorch/tutorials recipes_source/recipes/saving_and_loading_a_general_checkpoint.py (Net, a
# dict of epoch/model_state_dict/optimizer_state_dict/loss saved and loaded, model.train()
# after loading) and warmstarting_model_using_parameters_from_a_different_model.py (netB
# loading netA's state_dict with strict=False, the missing/unexpected keys), here mid-training:
# the checkpoint goes to an io.BytesIO, training continues, the reloaded copy resumes and must
# match (the state_dict's ``_metadata`` included); 32x32 CIFAR images -> 3x8x8, 6/16 channels -> 2/3, fc widths 120/84 -> 8/6
def test_general_checkpoint_and_warmstart():
    def program(torch, log):
        import io
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim

        class Net(nn.Module):
            def __init__(self):
                super(Net, self).__init__()
                self.conv1 = nn.Conv2d(3, 2, 3)
                self.pool = nn.MaxPool2d(2, 2)
                self.conv2 = nn.Conv2d(2, 3, 2)
                self.fc1 = nn.Linear(3 * 1 * 1, 8)
                self.fc2 = nn.Linear(8, 6)
                self.fc3 = nn.Linear(6, 10)

            def forward(self, x):
                x = self.pool(F.relu(self.conv1(x)))
                x = self.pool(F.relu(self.conv2(x)))
                x = x.view(-1, 3 * 1 * 1)
                x = F.relu(self.fc1(x))
                x = F.relu(self.fc2(x))
                x = self.fc3(x)
                return x

        net = init_params(torch, Net(), 0, scale=0.5)
        optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        criterion = nn.CrossEntropyLoss()
        rs = np.random.RandomState(0)
        batches = [(torch.tensor(rs.randn(2, 3, 8, 8).astype(np.float32)),
                    torch.tensor(rs.randint(0, 10, size=2))) for _ in range(3)]

        def train_step(net, optimizer, inputs, labels):
            optimizer.zero_grad()
            loss = criterion(net(inputs), labels)
            loss.backward()
            optimizer.step()
            return loss

        for inputs, labels in batches[:1]:
            loss = train_step(net, optimizer, inputs, labels)
        EPOCH = 5
        PATH = io.BytesIO()
        LOSS = 0.4
        torch.save({
                    'epoch': EPOCH,
                    'model_state_dict': net.state_dict(),
                    'optimizer_state_dict': optimizer.state_dict(),
                    'loss': LOSS,
                    }, PATH)
        for inputs, labels in batches[1:]:
            log("loss_first", train_step(net, optimizer, inputs, labels))

        PATH.seek(0)
        model = Net()
        optimizer2 = optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
        checkpoint = torch.load(PATH, weights_only=True)
        model.load_state_dict(checkpoint['model_state_dict'])
        optimizer2.load_state_dict(checkpoint['optimizer_state_dict'])
        epoch = checkpoint['epoch']
        loss = checkpoint['loss']
        log("restored", [epoch, loss, optimizer2.param_groups[0]["lr"]])
        # the state_dict's module versions (an OrderedDict attribute) come back as saved
        log("metadata", checkpoint['model_state_dict']._metadata)
        model.train()
        for inputs, labels in batches[1:]:
            log("loss_resumed", train_step(model, optimizer2, inputs, labels))
        log("same_after_resume", [torch.allclose(a, b) for a, b in zip(net.parameters(), model.parameters())])

        class NetB(nn.Module):
            def __init__(self):
                super(NetB, self).__init__()
                self.conv1 = nn.Conv2d(3, 2, 3)
                self.pool = nn.MaxPool2d(2, 2)
                self.conv2 = nn.Conv2d(2, 3, 2)
                self.fc1 = nn.Linear(3 * 1 * 1, 8)
                self.fc2 = nn.Linear(8, 6)
                self.fc4 = nn.Linear(6, 4)

        PATH = io.BytesIO()
        torch.save(net.state_dict(), PATH)
        PATH.seek(0)
        netB = NetB()
        result = netB.load_state_dict(torch.load(PATH, weights_only=True), strict=False)
        log("warmstart_keys", [sorted(result.missing_keys), sorted(result.unexpected_keys)])
        log("warm_conv1", netB.conv1.weight)
        try:
            PATH.seek(0)
            NetB().load_state_dict(torch.load(PATH, weights_only=True))
        except RuntimeError as e:
            log("strict_error", type(e).__name__)
    run_both(program)


# pytorch/tutorials intermediate_source/char_rnn_generation_tutorial.py (the RNN with a
# category input: cat of category/input/hidden, i2h/i2o/o2o, Dropout(0.1), LogSoftmax;
# categoryTensor/inputTensor one-hots by item assignment, targetTensor's LongTensor with the EOS
# index, train() with ``target_line_tensor.unsqueeze_(-1)``, ``loss = torch.Tensor([0])``
# accumulated in place, the manual ``p.data.add_(p.grad.data, alpha=-learning_rate)`` update,
# sample()'s topk under no_grad indexing a str with a tensor); 2 categories of 3 names over a
# 7-letter alphabet, hidden 128 -> 6, lr 0.0005 -> 0.05, the RNN in eval mode (dropout draws
# differ); the random training pairs -> a fixed cycle
def test_char_rnn_generation_tutorial():
    def program(torch, log):
        nn = torch.nn
        all_letters = "abcde'"
        n_letters = len(all_letters) + 1  # Plus EOS marker
        category_lines = {"x": ["abc", "bad", "cab"], "y": ["dee", "ed", "e'a"]}
        all_categories = list(category_lines)
        n_categories = len(all_categories)

        class RNN(nn.Module):
            def __init__(self, input_size, hidden_size, output_size):
                super(RNN, self).__init__()
                self.hidden_size = hidden_size

                self.i2h = nn.Linear(n_categories + input_size + hidden_size, hidden_size)
                self.i2o = nn.Linear(n_categories + input_size + hidden_size, output_size)
                self.o2o = nn.Linear(hidden_size + output_size, output_size)
                self.dropout = nn.Dropout(0.1)
                self.softmax = nn.LogSoftmax(dim=1)

            def forward(self, category, input, hidden):
                input_combined = torch.cat((category, input, hidden), 1)
                hidden = self.i2h(input_combined)
                output = self.i2o(input_combined)
                output_combined = torch.cat((hidden, output), 1)
                output = self.o2o(output_combined)
                output = self.dropout(output)
                output = self.softmax(output)
                return output, hidden

            def initHidden(self):
                return torch.zeros(1, self.hidden_size)

        def categoryTensor(category):
            li = all_categories.index(category)
            tensor = torch.zeros(1, n_categories)
            tensor[0][li] = 1
            return tensor

        def inputTensor(line):
            tensor = torch.zeros(len(line), 1, n_letters)
            for li in range(len(line)):
                letter = line[li]
                tensor[li][0][all_letters.find(letter)] = 1
            return tensor

        def targetTensor(line):
            letter_indexes = [all_letters.find(line[li]) for li in range(1, len(line))]
            letter_indexes.append(n_letters - 1) # EOS
            return torch.LongTensor(letter_indexes)

        criterion = nn.NLLLoss()
        learning_rate = 0.05
        rnn = init_params(torch, RNN(n_letters, 6, n_letters), 0, scale=0.5)
        rnn.eval()

        def train(category_tensor, input_line_tensor, target_line_tensor):
            target_line_tensor.unsqueeze_(-1)
            hidden = rnn.initHidden()
            rnn.zero_grad()
            loss = torch.Tensor([0]) # you can also just simply use ``loss = 0``
            for i in range(input_line_tensor.size(0)):
                output, hidden = rnn(category_tensor, input_line_tensor[i], hidden)
                l = criterion(output, target_line_tensor[i])
                loss += l
            loss.backward()
            for p in rnn.parameters():
                p.data.add_(p.grad.data, alpha=-learning_rate)
            return output, loss.item() / input_line_tensor.size(0)

        max_length = 4

        def sample(category, start_letter='A'):
            with torch.no_grad():  # no need to track history in sampling
                category_tensor = categoryTensor(category)
                input = inputTensor(start_letter)
                hidden = rnn.initHidden()
                output_name = start_letter
                for i in range(max_length):
                    output, hidden = rnn(category_tensor, input[0], hidden)
                    topv, topi = output.topk(1)
                    topi = topi[0][0]
                    if topi == n_letters - 1:
                        break
                    else:
                        letter = all_letters[topi]
                        output_name += letter
                    input = inputTensor(letter)
                return output_name

        total_loss = 0
        for it, (category, line) in enumerate([("x", "abc"), ("y", "dee"), ("x", "cab"), ("y", "ed")]):
            output, loss = train(categoryTensor(category), inputTensor(line), targetTensor(line))
            total_loss += loss
            log("loss", loss)
        log("output", output)
        log("samples", [sample("x", "a"), sample("y", "d"), sample("y", "e")])
        log("params", list(rnn.parameters()))
    run_both(program)


# Learning-rate schedules as training scripts build them: the OneCycleLR docstring recipe
# (pytorch/pytorch torch/optim/lr_scheduler.py: SGD with momentum, steps_per_epoch from
# len(data_loader), cycled momentum; the linear-anneal, three-phase and Adam-betas variants),
# huggingface/transformers src/transformers/optimization.py's get_linear_schedule_with_warmup
# and get_cosine_schedule_with_warmup (LambdaLR over functools.partial lambdas), and a
# SequentialLR of LinearLR warmup then CosineAnnealingLR; each scheduler's state_dict saved to
# an io.BytesIO mid-run and loaded into a fresh one that must continue identically
def test_lr_schedules_onecycle_and_warmup():
    def program(torch, log):
        import io
        from functools import partial
        LambdaLR = torch.optim.lr_scheduler.LambdaLR

        def _get_linear_schedule_with_warmup_lr_lambda(current_step: int, *, num_warmup_steps: int, num_training_steps: int):
            if current_step < num_warmup_steps:
                return float(current_step) / float(max(1, num_warmup_steps))
            return max(0.0, float(num_training_steps - current_step) / float(max(1, num_training_steps - num_warmup_steps)))

        def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, last_epoch=-1):
            lr_lambda = partial(
                _get_linear_schedule_with_warmup_lr_lambda,
                num_warmup_steps=num_warmup_steps,
                num_training_steps=num_training_steps,
            )
            return LambdaLR(optimizer, lr_lambda, last_epoch)

        def _get_cosine_schedule_with_warmup_lr_lambda(
            current_step: int, *, num_warmup_steps: int, num_training_steps: int, num_cycles: float
        ):
            if current_step < num_warmup_steps:
                return float(current_step) / float(max(1, num_warmup_steps))
            progress = float(current_step - num_warmup_steps) / float(max(1, num_training_steps - num_warmup_steps))
            return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))

        def get_cosine_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, num_cycles=0.5, last_epoch=-1):
            lr_lambda = partial(
                _get_cosine_schedule_with_warmup_lr_lambda,
                num_warmup_steps=num_warmup_steps,
                num_training_steps=num_training_steps,
                num_cycles=num_cycles,
            )
            return LambdaLR(optimizer, lr_lambda, last_epoch)

        data_loader = torch.utils.data.DataLoader(list(range(6)), batch_size=2)
        w = torch.nn.Parameter(torch.ones(2))
        makers = {
            "onecycle": lambda: (lambda opt: torch.optim.lr_scheduler.OneCycleLR(
                opt, max_lr=0.01, steps_per_epoch=len(data_loader), epochs=4),
                lambda: torch.optim.SGD([w], lr=1e-4, momentum=0.9)),
            "onecycle_linear3": lambda: (lambda opt: torch.optim.lr_scheduler.OneCycleLR(
                opt, max_lr=[0.1], total_steps=12, anneal_strategy="linear", three_phase=True,
                pct_start=0.25, div_factor=10.0, final_div_factor=100.0),
                lambda: torch.optim.Adam([w], lr=1e-3, betas=(0.9, 0.99))),
            "hf_linear": lambda: (lambda opt: get_linear_schedule_with_warmup(opt, 3, 12),
                                  lambda: torch.optim.AdamW([w], lr=5e-3)),
            "hf_cosine": lambda: (lambda opt: get_cosine_schedule_with_warmup(opt, 2, 12),
                                  lambda: torch.optim.AdamW([w], lr=5e-3)),
            "sequential": lambda: (lambda opt: torch.optim.lr_scheduler.SequentialLR(
                opt, [torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3),
                      torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=9, eta_min=1e-5)],
                milestones=[3]),
                lambda: torch.optim.SGD([w], lr=0.1)),
        }
        for name, make in makers.items():
            make_sched, make_opt = make()
            optimizer = make_opt()
            scheduler = make_sched(optimizer)
            lrs, moms, buf = [], [], None
            for epoch in range(4):
                for batch in data_loader:
                    optimizer.step()
                    scheduler.step()
                    g = optimizer.param_groups[0]
                    lrs.append(g["lr"])
                    moms.append(g.get("momentum", g.get("betas")))
                if epoch == 1:
                    buf = io.BytesIO()
                    torch.save(scheduler.state_dict(), buf)
                    saved_at = len(lrs)
            log(name + "_lrs", lrs)
            log(name + "_moms", moms)
            log(name + "_last", scheduler.get_last_lr())
            buf.seek(0)
            opt2 = make_opt()
            sched2 = make_sched(opt2)
            sched2.load_state_dict(torch.load(buf, weights_only=False))
            for g in opt2.param_groups:
                g["lr"] = sched2.get_last_lr()[0]
            resumed = []
            for _ in range(len(lrs) - saved_at):
                opt2.step()
                sched2.step()
                resumed.append(opt2.param_groups[0]["lr"])
            log(name + "_resumed", resumed)
    run_both(program)


# Operators with Python and numpy operands, as programs write them (``[0] * n`` with a tensor
# count, ``"-" * width``, ``x / np_array``, ``weights @ np_vector``, ``1 / np_array`` from the
# left): torch's binary operators turn a TypeError into NotImplemented, so Python tries the other
# operand (sequence repetition through ``__index__``, numpy with ``__array_wrap__``) and anything
# else ends in Python's own TypeError
@pytest.mark.parametrize("expr", [
    "[0] * t.tensor(3)", "(0,) * t.tensor(2)", "'ab' * t.tensor(2)", "t.tensor(2) * 'ab'",
    "t.ones(2) / np.ones(2)", "t.ones(2, 2) @ np.ones(2)", "t.ones(2) ** np.ones(2)",
    "t.ones(2) // np.ones(2)", "t.ones(2) % np.ones(2)", "np.ones(2) / t.ones(2)",
    "t.ones(2, dtype=t.int64) & np.ones(2, dtype=np.int64)", "t.ones(2) < np.ones(2)",
    "t.ones(2) + None", "t.ones(2) @ None", "t.ones(2) ** 'a'", "t.tensor([1, 2]) << [1]",
    "t.tensor([1., 2.]) + [1, 2]", "t.tensor([1., 2.]) * (1, 2)", "t.ones(2) > 'a'",
    "np.ones(2) * t.ones(2)", "t.ones(2).__truediv__(np.ones(2))", "t.ones(2).__rmul__([1])"])
def test_operator_operands_python_and_numpy(expr):
    from parity import same_outcome
    same_outcome(lambda t: eval(expr, {"t": t, "np": np}))


# pytorch/examples gcn/main.py (GraphConv over torch.mm and torch.spmm with a xavier_normal_
# kernel, GCN with log_softmax; load_cora's pipeline on sparse tensors: features scaled by a
# ``torch.diag(1 / rowsum).to_sparse()`` product with the inf entries zeroed, np.unique labels,
# the int64 sparse_coo_tensor adjacency, ``torch.eye(V) + adj_mat``, torch.sum over a dim,
# ``degree_mat @ adj_mat @ degree_mat``, features.to_sparse(); train_iter/test with index
# masks, Adam with weight_decay, the f-string progress line without the timing); the Cora
# files -> a numpy-made string table of 8 papers with 5 binary features and 3 classes plus
# 9 citations, the randperm split -> fixed index lists, dropout 0 (draws differ), the kernels
# -> numpy-seeded values after construction, 3 epochs
def test_pytorch_examples_gcn():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        Adam = torch.optim.Adam

        class GraphConv(nn.Module):
            def __init__(self, input_dim, output_dim, use_bias=False):
                super(GraphConv, self).__init__()
                self.kernel = nn.Parameter(torch.Tensor(input_dim, output_dim))
                nn.init.xavier_normal_(self.kernel) # Initialize the weights using Xavier initialization
                self.bias = None
                if use_bias:
                    self.bias = nn.Parameter(torch.Tensor(output_dim))
                    nn.init.zeros_(self.bias) # Initialize the bias to zeros

            def forward(self, input_tensor, adj_mat):
                support = torch.mm(input_tensor, self.kernel) # Matrix multiplication between input and weight matrix
                output = torch.spmm(adj_mat, support) # Sparse matrix multiplication between adjacency matrix and support
                if self.bias is not None:
                    output = output + self.bias
                return output

        class GCN(nn.Module):
            def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1):
                super(GCN, self).__init__()
                self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
                self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
                self.dropout = nn.Dropout(dropout_p)

            def forward(self, input_tensor, adj_mat):
                x = self.gc1(input_tensor, adj_mat)
                x = F.relu(x) # Apply ReLU activation function
                x = self.dropout(x) # Apply dropout regularization
                x = self.gc2(x, adj_mat)
                return F.log_softmax(x, dim=1)

        rs = np.random.RandomState(0)
        ids = np.array([31, 7, 12, 99, 45, 3, 18, 60])
        feats = rs.randint(0, 2, size=(8, 5))
        feats[2] = 0                                   # a paper with no words: 1/0 = inf, zeroed
        names = np.array(["Theory", "Neural_Networks", "Rule_Learning"])[rs.randint(0, 3, size=8)]
        content_tensor = np.concatenate([ids[:, None].astype(str), feats.astype(str), names[:, None]], 1)
        cites_tensor = ids[np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 6], [6, 7], [7, 0], [1, 5]])].astype(np.int32)

        def load_cora(device='cpu'):
            features = torch.FloatTensor(content_tensor[:, 1:-1].astype(np.int32)) # Extract feature values
            scale_vector = torch.sum(features, dim=1) # Compute sum of features for each node
            scale_vector = 1 / scale_vector # Compute reciprocal of the sums
            scale_vector[scale_vector == float('inf')] = 0 # Handle division by zero cases
            scale_vector = torch.diag(scale_vector).to_sparse() # Convert the scale vector to a sparse diagonal matrix
            features = scale_vector @ features # Scale the features using the scale vector
            classes, labels = np.unique(content_tensor[:, -1], return_inverse=True) # Extract unique classes and map labels to indices
            labels = torch.LongTensor(labels) # Convert labels to a tensor
            idx = content_tensor[:, 0].astype(np.int32) # Extract node indices
            idx_map = {id: pos for pos, id in enumerate(idx)} # Create a dictionary to map indices to positions
            edges = np.array(
                list(map(lambda edge: [idx_map[edge[0]], idx_map[edge[1]]],
                    cites_tensor)), dtype=np.int32)
            V = len(idx) # Number of nodes
            E = edges.shape[0] # Number of edges
            adj_mat = torch.sparse_coo_tensor(edges.T, torch.ones(E), (V, V), dtype=torch.int64) # Create the initial adjacency matrix as a sparse tensor
            adj_mat = torch.eye(V) + adj_mat # Add self-loops to the adjacency matrix
            degree_mat = torch.sum(adj_mat, dim=1) # Compute the sum of each row in the adjacency matrix (degree matrix)
            degree_mat = torch.sqrt(1 / degree_mat) # Compute the reciprocal square root of the degrees
            degree_mat[degree_mat == float('inf')] = 0 # Handle division by zero cases
            degree_mat = torch.diag(degree_mat).to_sparse() # Convert the degree matrix to a sparse diagonal matrix
            adj_mat = degree_mat @ adj_mat @ degree_mat # Apply the renormalization trick
            return features.to_sparse().to(device), labels.to(device), adj_mat.to_sparse().to(device)

        def train_iter(epoch, model, optimizer, criterion, input, target, mask_train, mask_val, print_every=10):
            model.train()
            optimizer.zero_grad()
            output = model(*input)
            loss = criterion(output[mask_train], target[mask_train]) # Compute the loss using the training mask
            loss.backward()
            optimizer.step()
            loss_train, acc_train = test(model, criterion, input, target, mask_train)
            loss_val, acc_val = test(model, criterion, input, target, mask_val)
            if epoch % print_every == 0:
                print(f'Epoch: {epoch:04d} loss_train: {loss_train:.4f} acc_train: {acc_train:.4f} loss_val: {loss_val:.4f} acc_val: {acc_val:.4f}')

        def test(model, criterion, input, target, mask):
            model.eval()
            with torch.no_grad():
                output = model(*input)
                output, target = output[mask], target[mask]
                loss = criterion(output, target)
                acc = (output.argmax(dim=1) == target).float().sum() / len(target)
            return loss.item(), acc.item()

        features, labels, adj_mat = load_cora()
        log("data", [features.to_dense(), labels, adj_mat.to_dense(), features.is_sparse, adj_mat.layout == torch.sparse_coo])
        idx = torch.tensor([4, 0, 6, 2, 7, 1, 5, 3])
        idx_test, idx_val, idx_train = idx[:2], idx[2:4], idx[4:]
        gcn = GCN(features.shape[1], 4, labels.max().item() + 1, True, 0.0)
        init_params(torch, gcn, 0, scale=0.6)
        optimizer = Adam(gcn.parameters(), lr=0.01, weight_decay=5e-4)
        criterion = nn.NLLLoss()
        for epoch in range(3):
            train_iter(epoch + 1, gcn, optimizer, criterion, (features, adj_mat), labels, idx_train, idx_val, 1)
        loss_test, acc_test = test(gcn, criterion, (features, adj_mat), labels, idx_test)
        print(f'Test set results: loss {loss_test:.4f} accuracy {acc_test:.4f}')
        log("params", list(gcn.parameters()))
    run_both(program)


# pytorch/tutorials intermediate_source/char_rnn_classification_tutorial.py, the older version
# (Variable everywhere, lineToTensor one-hots by item assignment, the RNN of i2h/i2o with
# LogSoftmax, categoryFromOutput's ``output.data.topk(1)`` indexing a list with a tensor,
# train()'s deprecated ``p.data.add_(-learning_rate, p.grad.data)`` and ``loss.data[0]``,
# the confusion matrix filled by ``confusion[category_i][guess_i] += 1`` and row-normalised,
# predict()'s topk with ``'(%.2f) %s' % (value, ...)`` of 0-d tensors); 3 categories of 2 names
# over an 8-letter alphabet, n_hidden 128 -> 5, randomTrainingExample -> a fixed cycle, 100000
# iterations -> 6, the timing in the progress line and matplotlib left out. ``loss.data[0]``
# raises IndexError in torch now (checked), so the rest runs with ``loss.item()`` in its place
def test_char_rnn_classification_tutorial_old_idioms():
    def program(torch, log):
        nn = torch.nn
        Variable = torch.autograd.Variable
        all_letters = "abcdefg'"
        n_letters = len(all_letters)
        category_lines = {"A": ["bad", "cafe"], "B": ["ebb", "gag'"], "C": ["fade", "deaf"]}
        all_categories = list(category_lines)
        n_categories = len(all_categories)

        def letterToIndex(letter):
            return all_letters.find(letter)

        def lineToTensor(line):
            tensor = torch.zeros(len(line), 1, n_letters)
            for li, letter in enumerate(line):
                tensor[li][0][letterToIndex(letter)] = 1
            return tensor

        class RNN(nn.Module):
            def __init__(self, input_size, hidden_size, output_size):
                super(RNN, self).__init__()
                self.hidden_size = hidden_size
                self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
                self.i2o = nn.Linear(input_size + hidden_size, output_size)
                self.softmax = nn.LogSoftmax(dim=1)

            def forward(self, input, hidden):
                combined = torch.cat((input, hidden), 1)
                hidden = self.i2h(combined)
                output = self.i2o(combined)
                output = self.softmax(output)
                return output, hidden

            def initHidden(self):
                return Variable(torch.zeros(1, self.hidden_size))

        n_hidden = 5
        rnn = init_params(torch, RNN(n_letters, n_hidden, n_categories), 0, scale=0.5)

        def categoryFromOutput(output):
            top_n, top_i = output.data.topk(1) # Tensor out of Variable with .data
            category_i = top_i[0][0]
            return all_categories[category_i], category_i

        criterion = nn.NLLLoss()
        learning_rate = 0.05

        def train(category_tensor, line_tensor, old=False):
            hidden = rnn.initHidden()
            rnn.zero_grad()
            for i in range(line_tensor.size()[0]):
                output, hidden = rnn(line_tensor[i], hidden)
            loss = criterion(output, category_tensor)
            loss.backward()
            for p in rnn.parameters():
                p.data.add_(p.grad.data, alpha=-learning_rate)
            return output, (loss.data[0] if old else loss.item())

        examples = [(c, line) for c in all_categories for line in category_lines[c]]

        def trainingExample(k):
            category, line = examples[k % len(examples)]
            category_tensor = Variable(torch.LongTensor([all_categories.index(category)]))
            line_tensor = Variable(lineToTensor(line))
            return category, line, category_tensor, line_tensor

        try:
            train(*trainingExample(0)[2:], old=True)
        except IndexError as e:
            log("loss_data_0", type(e).__name__)
        try:   # the deprecated add_(Number, Tensor) overload
            rnn.i2h.weight.data.clone().add_(-learning_rate, rnn.i2h.weight.grad.data)
            log("add_number_tensor", "ok")
        except TypeError as e:
            log("add_number_tensor", type(e).__name__)
        current_loss = 0
        for iter in range(1, 7):
            category, line, category_tensor, line_tensor = trainingExample(iter)
            output, loss = train(category_tensor, line_tensor)
            current_loss += loss
            guess, guess_i = categoryFromOutput(output)
            correct = '✓' if guess == category else '✗ (%s)' % category
            print('%d %d%% %.4f %s / %s %s' % (iter, iter / 6 * 100, loss, line, guess, correct))
        confusion = torch.zeros(n_categories, n_categories)

        def evaluate(line_tensor):
            hidden = rnn.initHidden()
            for i in range(line_tensor.size()[0]):
                output, hidden = rnn(line_tensor[i], hidden)
            return output

        for i in range(len(examples)):
            category, line, category_tensor, line_tensor = trainingExample(i)
            output = evaluate(line_tensor)
            guess, guess_i = categoryFromOutput(output)
            category_i = all_categories.index(category)
            confusion[category_i][guess_i] += 1
        for i in range(n_categories):
            confusion[i] = confusion[i] / confusion[i].sum()
        log("confusion", confusion)

        def predict(input_line, n_predictions=3):
            print('\n> %s' % input_line)
            output = evaluate(Variable(lineToTensor(input_line)))
            topv, topi = output.data.topk(n_predictions, 1, True)
            predictions = []
            for i in range(n_predictions):
                value = topv[0][i]
                category_index = topi[0][i]
                print('(%.2f) %s' % (value, all_categories[category_index]))
                predictions.append([value, all_categories[category_index]])
            return predictions

        log("predict", predict('face'))
        log("params", list(rnn.parameters()))
    run_both(program)
