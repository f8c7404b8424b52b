"""More public PyTorch programs run eagerly with torch and with tracegrad (``parity.run_both``:
every logged value and everything printed must agree). Each keeps its program's code, with tiny
sizes, few iterations, numpy-seeded data and numpy-made batch indices in place of downloads and
``torch.randint``/``torch.randn`` (random streams differ between the libraries); parameters are
overwritten with ``init_params`` after the program's own initialisation ran. The full programs
ran unchanged through ``import torch`` -> tracegrad (a meta-path alias) with tiny CLI flags.
"""
import random

import numpy as np
import pytest

from parity import init_params, np_randn, run_both

torch = pytest.importorskip("torch")


# pytorch/examples language_translation/src/model.py and main.py's train step, create_mask from
# language_translation/src/data.py (its torchtext data loading left out; main.py's greedy_decode
# also agreed with torch here, but costs a compile per decoded length, so it is left out)
def test_language_translation_transformer_with_masks():
    def program(torch, log):
        import math
        nn, F = torch.nn, torch.nn.functional
        DEVICE = torch.device("cpu")

        class PositionalEncoding(nn.Module):
            def __init__(self, emb_size, dropout, maxlen=5000):
                super(PositionalEncoding, self).__init__()
                den = torch.exp(- torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
                pos = torch.arange(0, maxlen).reshape(maxlen, 1)
                pos_embedding = torch.zeros((maxlen, emb_size))
                pos_embedding[:, 0::2] = torch.sin(pos * den)
                pos_embedding[:, 1::2] = torch.cos(pos * den)
                pos_embedding = pos_embedding.unsqueeze(-2)
                self.dropout = nn.Dropout(dropout)
                self.register_buffer("pos_embedding", pos_embedding)

            def forward(self, token_embedding):
                return self.dropout(token_embedding + self.pos_embedding[:token_embedding.size(0), :])

        class Translator(nn.Module):
            def __init__(self, num_encoder_layers, num_decoder_layers, embed_size, num_heads,
                         src_vocab_size, tgt_vocab_size, dim_feedforward, dropout):
                super(Translator, self).__init__()
                self.src_embedding = nn.Embedding(src_vocab_size, embed_size)
                self.tgt_embedding = nn.Embedding(tgt_vocab_size, embed_size)
                self.pos_enc = PositionalEncoding(embed_size, dropout)
                self.transformer = nn.Transformer(
                    d_model=embed_size, nhead=num_heads, num_encoder_layers=num_encoder_layers,
                    num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward,
                    dropout=dropout)
                self.ff = nn.Linear(embed_size, tgt_vocab_size)
                self._init_weights()

            def _init_weights(self):
                for p in self.parameters():
                    if p.dim() > 1:
                        nn.init.xavier_uniform_(p)

            def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask,
                        memory_key_padding_mask):
                src_emb = self.pos_enc(self.src_embedding(src))
                tgt_emb = self.pos_enc(self.tgt_embedding(trg))
                outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None,
                                        src_padding_mask, tgt_padding_mask, memory_key_padding_mask)
                return self.ff(outs)

            def encode(self, src, src_mask):
                return self.transformer.encoder(self.pos_enc(self.src_embedding(src)), src_mask)

            def decode(self, tgt, memory, tgt_mask):
                return self.transformer.decoder(self.pos_enc(self.tgt_embedding(tgt)), memory, tgt_mask)

        def generate_square_subsequent_mask(size, device):
            mask = (torch.triu(torch.ones((size, size), device=device)) == 1).transpose(0, 1)
            mask = mask.float().masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, float(0.0))
            return mask

        def create_mask(src, tgt, pad_idx, device):
            src_seq_len = src.shape[0]
            tgt_seq_len = tgt.shape[0]
            tgt_mask = generate_square_subsequent_mask(tgt_seq_len, device)
            src_mask = torch.zeros((src_seq_len, src_seq_len), device=device).type(torch.bool)
            src_padding_mask = (src == pad_idx).transpose(0, 1)
            tgt_padding_mask = (tgt == pad_idx).transpose(0, 1)
            return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask

        special_symbols = {"<unk>": 0, "<pad>": 1, "<bos>": 2, "<eos>": 3}
        model = Translator(num_encoder_layers=1, num_decoder_layers=1, embed_size=8, num_heads=2,
                           src_vocab_size=11, tgt_vocab_size=12, dim_feedforward=16, dropout=0.0)
        init_params(torch, model, 3)
        loss_fn = torch.nn.CrossEntropyLoss(ignore_index=special_symbols["<pad>"])
        optim = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
        rs = np.random.RandomState(4)
        for step in range(1):
            src = torch.tensor(rs.randint(4, 11, (5, 2)))
            tgt = torch.tensor(rs.randint(4, 12, (6, 2)))
            src[4, 1] = tgt[5, 0] = tgt[4, 0] = special_symbols["<pad>"]
            src, tgt = src.to(DEVICE), tgt.to(DEVICE)
            tgt_input = tgt[:-1, :]
            src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(
                src, tgt_input, special_symbols["<pad>"], DEVICE)
            logits = model(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask,
                           src_padding_mask)
            optim.zero_grad()
            tgt_out = tgt[1:, :]
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
            loss.backward()
            optim.step()
            log("loss", loss.item())
        log("grad", model.transformer.decoder.layers[0].multihead_attn.in_proj_weight.grad)
    run_both(program)


# pytorch/tutorials intermediate_source/seq2seq_translation_tutorial.py (EncoderRNN,
# AttnDecoderRNN, train with and without teacher forcing, evaluate)
def test_seq2seq_translation_attention_gru():
    def program(torch, log):
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim
        device = torch.device("cpu")
        SOS_token, EOS_token, MAX_LENGTH = 0, 1, 6

        class EncoderRNN(nn.Module):
            def __init__(self, input_size, hidden_size):
                super(EncoderRNN, self).__init__()
                self.hidden_size = hidden_size
                self.embedding = nn.Embedding(input_size, hidden_size)
                self.gru = nn.GRU(hidden_size, hidden_size)

            def forward(self, input, hidden):
                embedded = self.embedding(input).view(1, 1, -1)
                output = embedded
                output, hidden = self.gru(output, hidden)
                return output, hidden

            def initHidden(self):
                return torch.zeros(1, 1, self.hidden_size, device=device)

        class AttnDecoderRNN(nn.Module):
            def __init__(self, hidden_size, output_size, dropout_p=0.1, max_length=MAX_LENGTH):
                super(AttnDecoderRNN, self).__init__()
                self.hidden_size = hidden_size
                self.output_size = output_size
                self.dropout_p = dropout_p
                self.max_length = max_length
                self.embedding = nn.Embedding(self.output_size, self.hidden_size)
                self.attn = nn.Linear(self.hidden_size * 2, self.max_length)
                self.attn_combine = nn.Linear(self.hidden_size * 2, self.hidden_size)
                self.dropout = nn.Dropout(self.dropout_p)
                self.gru = nn.GRU(self.hidden_size, self.hidden_size)
                self.out = nn.Linear(self.hidden_size, self.output_size)

            def forward(self, input, hidden, encoder_outputs):
                embedded = self.embedding(input).view(1, 1, -1)
                embedded = self.dropout(embedded)
                attn_weights = F.softmax(self.attn(torch.cat((embedded[0], hidden[0]), 1)), dim=1)
                attn_applied = torch.bmm(attn_weights.unsqueeze(0), encoder_outputs.unsqueeze(0))
                output = torch.cat((embedded[0], attn_applied[0]), 1)
                output = self.attn_combine(output).unsqueeze(0)
                output = F.relu(output)
                output, hidden = self.gru(output, hidden)
                output = F.log_softmax(self.out(output[0]), dim=1)
                return output, hidden, attn_weights

        def train(input_tensor, target_tensor, encoder, decoder, encoder_optimizer,
                  decoder_optimizer, criterion, use_teacher_forcing, max_length=MAX_LENGTH):
            encoder_hidden = encoder.initHidden()
            encoder_optimizer.zero_grad()
            decoder_optimizer.zero_grad()
            input_length = input_tensor.size(0)
            target_length = target_tensor.size(0)
            encoder_outputs = torch.zeros(max_length, encoder.hidden_size, device=device)
            loss = 0
            for ei in range(input_length):
                encoder_output, encoder_hidden = encoder(input_tensor[ei], encoder_hidden)
                encoder_outputs[ei] = encoder_output[0, 0]
            decoder_input = torch.tensor([[SOS_token]], device=device)
            decoder_hidden = encoder_hidden
            if use_teacher_forcing:
                for di in range(target_length):
                    decoder_output, decoder_hidden, decoder_attention = decoder(
                        decoder_input, decoder_hidden, encoder_outputs)
                    loss += criterion(decoder_output, target_tensor[di])
                    decoder_input = target_tensor[di]
            else:
                for di in range(target_length):
                    decoder_output, decoder_hidden, decoder_attention = decoder(
                        decoder_input, decoder_hidden, encoder_outputs)
                    topv, topi = decoder_output.topk(1)
                    decoder_input = topi.squeeze().detach()
                    loss += criterion(decoder_output, target_tensor[di])
                    if decoder_input.item() == EOS_token:
                        break
            loss.backward()
            encoder_optimizer.step()
            decoder_optimizer.step()
            return loss.item() / target_length

        def evaluate(encoder, decoder, input_tensor, max_length=MAX_LENGTH):
            with torch.no_grad():
                input_length = input_tensor.size()[0]
                encoder_hidden = encoder.initHidden()
                encoder_outputs = torch.zeros(max_length, encoder.hidden_size, device=device)
                for ei in range(input_length):
                    encoder_output, encoder_hidden = encoder(input_tensor[ei], encoder_hidden)
                    encoder_outputs[ei] += encoder_output[0, 0]
                decoder_input = torch.tensor([[SOS_token]], device=device)
                decoder_hidden = encoder_hidden
                decoded_words = []
                decoder_attentions = torch.zeros(max_length, max_length)
                for di in range(max_length):
                    decoder_output, decoder_hidden, decoder_attention = decoder(
                        decoder_input, decoder_hidden, encoder_outputs)
                    decoder_attentions[di] = decoder_attention.data
                    topv, topi = decoder_output.data.topk(1)
                    if topi.item() == EOS_token:
                        decoded_words.append("<EOS>")
                        break
                    else:
                        decoded_words.append(topi.item())
                    decoder_input = topi.squeeze().detach()
                return decoded_words, decoder_attentions[:di + 1]

        hidden_size = 6
        encoder1 = EncoderRNN(7, hidden_size).to(device)
        attn_decoder1 = AttnDecoderRNN(hidden_size, 8, dropout_p=0.0).to(device)
        init_params(torch, encoder1, 5, scale=0.5)
        init_params(torch, attn_decoder1, 6, scale=0.5)
        encoder_optimizer = optim.SGD(encoder1.parameters(), lr=0.1)
        decoder_optimizer = optim.SGD(attn_decoder1.parameters(), lr=0.1)
        criterion = nn.NLLLoss()
        rs = np.random.RandomState(7)
        for it in range(3):
            inp = torch.tensor(list(rs.randint(2, 7, 3)) + [EOS_token], dtype=torch.long).view(-1, 1)
            tgt = torch.tensor(list(rs.randint(2, 8, 4)) + [EOS_token], dtype=torch.long).view(-1, 1)
            log("loss", train(inp, tgt, encoder1, attn_decoder1, encoder_optimizer,
                              decoder_optimizer, criterion, use_teacher_forcing=it % 2 == 0))
        words, attentions = evaluate(encoder1, attn_decoder1, inp)
        log("evaluate", (words, attentions))
    run_both(program)


# pytorch/tutorials intermediate_source/reinforcement_q_learning.py (ReplayMemory, DQN,
# optimize_model with a bool-mask write under no_grad, clip_grad_value_, the soft target update);
# the gym environment is replaced by numpy-made transitions and actions
def test_reinforcement_q_learning_optimize_model_and_soft_update():
    def program(torch, log):
        import math
        from collections import deque, namedtuple
        nn, optim = torch.nn, torch.optim
        device = torch.device("cpu")
        Transition = namedtuple("Transition", ("state", "action", "next_state", "reward"))

        class ReplayMemory(object):
            def __init__(self, capacity):
                self.memory = deque([], maxlen=capacity)

            def push(self, *args):
                self.memory.append(Transition(*args))

            def sample(self, batch_size):
                return random.sample(self.memory, batch_size)

            def __len__(self):
                return len(self.memory)

        class DQN(nn.Module):
            def __init__(self, n_observations, n_actions):
                super(DQN, self).__init__()
                self.layer1 = nn.Linear(n_observations, 16)
                self.layer2 = nn.Linear(16, 16)
                self.layer3 = nn.Linear(16, n_actions)

            def forward(self, x):
                x = F.relu(self.layer1(x))
                x = F.relu(self.layer2(x))
                return self.layer3(x)

        F = torch.nn.functional
        BATCH_SIZE, GAMMA, EPS_START, EPS_END, EPS_DECAY, TAU, LR = 4, 0.99, 0.9, 0.05, 1000, 0.005, 1e-4
        n_actions, n_observations = 2, 4
        policy_net = init_params(torch, DQN(n_observations, n_actions).to(device), 8)
        target_net = DQN(n_observations, n_actions).to(device)
        target_net.load_state_dict(policy_net.state_dict())
        optimizer = optim.AdamW(policy_net.parameters(), lr=LR, amsgrad=True)
        memory = ReplayMemory(10000)
        steps_done = 0
        rs = np.random.RandomState(9)

        def select_action(state, sample):
            nonlocal steps_done
            eps_threshold = EPS_END + (EPS_START - EPS_END) * math.exp(-1. * steps_done / EPS_DECAY)
            steps_done += 1
            if sample > eps_threshold:
                with torch.no_grad():
                    return policy_net(state).max(1).indices.view(1, 1)
            else:
                return torch.tensor([[int(rs.randint(n_actions))]], device=device, dtype=torch.long)

        def optimize_model():
            if len(memory) < BATCH_SIZE:
                return
            transitions = memory.sample(BATCH_SIZE)
            batch = Transition(*zip(*transitions))
            non_final_mask = torch.tensor(tuple(map(lambda s: s is not None, batch.next_state)),
                                          device=device, dtype=torch.bool)
            non_final_next_states = torch.cat([s for s in batch.next_state if s is not None])
            state_batch = torch.cat(batch.state)
            action_batch = torch.cat(batch.action)
            reward_batch = torch.cat(batch.reward)
            state_action_values = policy_net(state_batch).gather(1, action_batch)
            next_state_values = torch.zeros(BATCH_SIZE, device=device)
            with torch.no_grad():
                next_state_values[non_final_mask] = target_net(non_final_next_states).max(1).values
            expected_state_action_values = (next_state_values * GAMMA) + reward_batch
            criterion = nn.SmoothL1Loss()
            loss = criterion(state_action_values, expected_state_action_values.unsqueeze(1))
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
            optimizer.step()
            log("loss", loss)

        random.seed(0)
        state = torch.tensor(np_randn((n_observations,), 10), dtype=torch.float32, device=device).unsqueeze(0)
        for t in range(6):
            action = select_action(state, sample=[0.95, 0.01][t % 2])
            observation, reward = np_randn((n_observations,), 11 + t), 1.0
            terminated = t % 4 == 3
            reward = torch.tensor([reward], device=device)
            if terminated:
                next_state = None
            else:
                next_state = torch.tensor(observation, dtype=torch.float32, device=device).unsqueeze(0)
            memory.push(state, action, next_state, reward)
            state = next_state if next_state is not None else torch.zeros(1, n_observations)
            optimize_model()
            target_net_state_dict = target_net.state_dict()
            policy_net_state_dict = policy_net.state_dict()
            for key in policy_net_state_dict:
                target_net_state_dict[key] = policy_net_state_dict[key] * TAU + target_net_state_dict[key] * (1 - TAU)
            target_net.load_state_dict(target_net_state_dict)
        log("target", list(target_net.state_dict().values()))
    run_both(program)


# pytorch/tutorials intermediate_source/spatial_transformer_tutorial.py (affine_grid/grid_sample
# on the localisation net's theta, initialised to the identity; the test loop's
# size_average=False); run in eval mode so that dropout does not draw random numbers
def test_spatial_transformer_network():
    def program(torch, log):
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim

        class Net(nn.Module):
            def __init__(self):
                super(Net, self).__init__()
                self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
                self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
                self.conv2_drop = nn.Dropout2d()
                self.fc1 = nn.Linear(320, 50)
                self.fc2 = nn.Linear(50, 10)
                self.localization = nn.Sequential(
                    nn.Conv2d(1, 8, kernel_size=7), nn.MaxPool2d(2, stride=2), nn.ReLU(True),
                    nn.Conv2d(8, 10, kernel_size=5), nn.MaxPool2d(2, stride=2), nn.ReLU(True))
                self.fc_loc = nn.Sequential(nn.Linear(10 * 3 * 3, 32), nn.ReLU(True), nn.Linear(32, 3 * 2))

            def init_identity(self):
                self.fc_loc[2].weight.data.zero_()
                self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

            def stn(self, x):
                xs = self.localization(x)
                xs = xs.view(-1, 10 * 3 * 3)
                theta = self.fc_loc(xs)
                theta = theta.view(-1, 2, 3)
                grid = F.affine_grid(theta, x.size())
                return F.grid_sample(x, grid)

            def forward(self, x):
                x = self.stn(x)
                x = F.relu(F.max_pool2d(self.conv1(x), 2))
                x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
                x = x.view(-1, 320)
                x = F.relu(self.fc1(x))
                x = F.dropout(x, training=self.training)
                x = self.fc2(x)
                return F.log_softmax(x, dim=1)

        model = init_params(torch, Net(), 12, scale=0.2)
        model.init_identity()
        optimizer = optim.SGD(model.parameters(), lr=0.01)
        rs = np.random.RandomState(13)
        data = torch.tensor(rs.rand(2, 1, 28, 28).astype(np.float32))
        target = torch.tensor(rs.randint(0, 10, 2))
        model.eval()
        for step in range(2):
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            log("loss", loss)
        with torch.no_grad():
            test_loss, correct = 0, 0
            output = model(data)
            test_loss += F.nll_loss(output, target, size_average=False).item()
            pred = output.max(1, keepdim=True)[1]
            correct += pred.eq(target.view_as(pred)).sum().item()
            log("test", (test_loss, correct))
            log("theta", model.fc_loc(model.localization(data).view(-1, 10 * 3 * 3)))
    run_both(program)
