"""A fifth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), as in
``test_public_programs_round4.py``: each keeps its program's code at tiny sizes (fewer epochs,
smaller hidden sizes), with numpy-seeded data and parameters (``init_params``/``randn``) in
place of downloads and random streams. The full programs ran unchanged through a ``torch`` ->
tracegrad import alias (a meta-path finder) with tiny flags and a stand-in ``torchvision``
(datasets of random images). Here the programs' ``import torch.x as y`` lines are attribute
lookups on the module under test.
"""
import numpy as np
import pytest

from parity import init_params, np_randn, randn, run_both

torch = pytest.importorskip("torch")


def _vocab(sentences):
    """graykode's ``list(set(words))`` vocabulary, sorted: set order is per process, and both
    runs must number the words alike."""
    return sorted(set(" ".join(sentences).split()))


def _dicts(sentences):
    """graykode's ``word_dict`` (word -> id) and ``number_dict`` (id -> word)."""
    word_list = _vocab(sentences)
    return {w: i for i, w in enumerate(word_list)}, {i: w for i, w in enumerate(word_list)}


def _train(torch, model, inputs, targets, steps, log, lr=0.001, call=None):
    """graykode's training loop: Adam, CrossEntropyLoss, ``steps`` epochs; logs each loss."""
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for epoch in range(steps):
        optimizer.zero_grad()
        output = call(model) if call else model(inputs)
        loss = criterion(output, targets)
        log("cost", loss)
        loss.backward()
        optimizer.step()


# graykode/nlp-tutorial 1-1.NNLM/NNLM.py (Embedding .view to n_step * m, tanh(d + H(X)),
# b + W(X) + U(tanh) with bare Parameters, LongTensor lists) and 1-2.Word2Vec/
# Word2Vec-Skipgram(Softmax).py (one-hot rows through torch.Tensor(list of arrays), W/WT
# Linear layers, the embedding read back as W[0][i].item()); fixed batches in place of
# np.random.choice
def test_graykode_nnlm_and_word2vec():
    def program(torch, log):
        nn = torch.nn
        sentences = ["i like dog", "i love coffee", "i hate milk"]
        word_dict, number_dict = _dicts(sentences)
        n_class, n_step, n_hidden, m = len(word_dict), 2, 2, 2

        class NNLM(nn.Module):
            def __init__(self):
                super(NNLM, self).__init__()
                self.C = nn.Embedding(n_class, m)
                self.H = nn.Linear(n_step * m, n_hidden, bias=False)
                self.d = nn.Parameter(torch.ones(n_hidden))
                self.U = nn.Linear(n_hidden, n_class, bias=False)
                self.W = nn.Linear(n_step * m, n_class, bias=False)
                self.b = nn.Parameter(torch.ones(n_class))

            def forward(self, X):
                X = self.C(X)
                X = X.view(-1, n_step * m)
                tanh = torch.tanh(self.d + self.H(X))
                output = self.b + self.W(X) + self.U(tanh)
                return output

        input_batch = torch.LongTensor([[word_dict[n] for n in sen.split()[:-1]] for sen in sentences])
        target_batch = torch.LongTensor([word_dict[sen.split()[-1]] for sen in sentences])
        model = init_params(torch, NNLM(), 0, scale=1.0)
        _train(torch, model, input_batch, target_batch, 5, log, lr=0.01)
        predict = model(input_batch).data.max(1, keepdim=True)[1]
        print([sen.split()[:2] for sen in sentences], '->', [number_dict[n.item()] for n in predict.squeeze()])

        sentences = ["apple banana fruit", "banana orange fruit", "orange banana fruit",
                     "dog cat animal", "cat monkey animal", "monkey dog animal"]
        word_sequence = " ".join(sentences).split()
        word_list = _vocab(sentences)
        word_dict = {w: i for i, w in enumerate(word_list)}
        voc_size, embedding_size = len(word_list), 2
        skip_grams = []
        for i in range(1, len(word_sequence) - 1):
            target = word_dict[word_sequence[i]]
            for w in [word_dict[word_sequence[i - 1]], word_dict[word_sequence[i + 1]]]:
                skip_grams.append([target, w])

        class Word2Vec(nn.Module):
            def __init__(self):
                super(Word2Vec, self).__init__()
                self.W = nn.Linear(voc_size, embedding_size, bias=False)
                self.WT = nn.Linear(embedding_size, voc_size, bias=False)

            def forward(self, X):
                return self.WT(self.W(X))

        model = init_params(torch, Word2Vec(), 1, scale=1.0)
        criterion = nn.CrossEntropyLoss()
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        for epoch in range(4):
            picks = [(2 * epoch + k) % len(skip_grams) for k in (0, 5)]
            input_batch = torch.Tensor([np.eye(voc_size)[skip_grams[i][0]] for i in picks])
            target_batch = torch.LongTensor([skip_grams[i][1] for i in picks])
            optimizer.zero_grad()
            loss = criterion(model(input_batch), target_batch)
            log("w2v cost", loss)
            loss.backward()
            optimizer.step()
        W, WT = model.parameters()
        log("embedding", [(W[0][i].item(), W[1][i].item()) for i in range(voc_size)])
    run_both(program)


# graykode/nlp-tutorial 2-1.TextCNN/TextCNN.py (Embedding -> unsqueeze(1) -> Conv2d over
# (size, embedding_size) windows in a ModuleList, a MaxPool2d built in forward, permute(0, 3,
# 2, 1), torch.cat on dim 3, torch.reshape with a list shape, ``predict[0][0] == 0`` as a Python
# condition) and 4-3.Bi-LSTM(Attention)/Bi-LSTM(Attention).py (bidirectional LSTM from zero
# states, final_state.view(-1, 2h, 1) bmm attention, softmax weights as .data.numpy())
def test_graykode_textcnn_and_bilstm_attention():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        sentences = ["i love you", "he loves me", "she likes baseball", "i hate you", "sorry for that", "this is awful"]
        labels = [1, 1, 1, 0, 0, 0]
        word_list = _vocab(sentences)
        word_dict = {w: i for i, w in enumerate(word_list)}
        vocab_size = len(word_dict)
        embedding_size, sequence_length, num_classes, filter_sizes, num_filters = 2, 3, 2, [2, 2, 2], 3

        class TextCNN(nn.Module):
            def __init__(self):
                super(TextCNN, self).__init__()
                self.num_filters_total = num_filters * len(filter_sizes)
                self.W = nn.Embedding(vocab_size, embedding_size)
                self.Weight = nn.Linear(self.num_filters_total, num_classes, bias=False)
                self.Bias = nn.Parameter(torch.ones([num_classes]))
                self.filter_list = nn.ModuleList([nn.Conv2d(1, num_filters, (size, embedding_size)) for size in filter_sizes])

            def forward(self, X):
                embedded_chars = self.W(X)
                embedded_chars = embedded_chars.unsqueeze(1)
                pooled_outputs = []
                for i, conv in enumerate(self.filter_list):
                    h = F.relu(conv(embedded_chars))
                    mp = nn.MaxPool2d((sequence_length - filter_sizes[i] + 1, 1))
                    pooled = mp(h).permute(0, 3, 2, 1)
                    pooled_outputs.append(pooled)
                h_pool = torch.cat(pooled_outputs, len(filter_sizes))
                h_pool_flat = torch.reshape(h_pool, [-1, self.num_filters_total])
                model = self.Weight(h_pool_flat) + self.Bias
                return model

        inputs = torch.LongTensor([np.asarray([word_dict[n] for n in sen.split()]) for sen in sentences])
        targets = torch.LongTensor([out for out in labels])
        test_text = 'sorry hate you'
        test_batch = torch.LongTensor([np.asarray([word_dict[n] for n in test_text.split()])])
        model = init_params(torch, TextCNN(), 2, scale=1.0)
        _train(torch, model, inputs, targets, 4, log, lr=0.01)
        predict = model(test_batch).data.max(1, keepdim=True)[1]
        log("textcnn logits", model(test_batch))
        if predict[0][0] == 0:
            print(test_text, "is Bad Mean...")
        else:
            print(test_text, "is Good Mean!!")

        embedding_dim, n_hidden = 2, 5

        class BiLSTM_Attention(nn.Module):
            def __init__(self):
                super(BiLSTM_Attention, self).__init__()
                self.embedding = nn.Embedding(vocab_size, embedding_dim)
                self.lstm = nn.LSTM(embedding_dim, n_hidden, bidirectional=True)
                self.out = nn.Linear(n_hidden * 2, num_classes)

            def attention_net(self, lstm_output, final_state):
                hidden = final_state.view(-1, n_hidden * 2, 1)
                attn_weights = torch.bmm(lstm_output, hidden).squeeze(2)
                soft_attn_weights = F.softmax(attn_weights, 1)
                context = torch.bmm(lstm_output.transpose(1, 2), soft_attn_weights.unsqueeze(2)).squeeze(2)
                return context, soft_attn_weights.data.numpy()

            def forward(self, X):
                input = self.embedding(X)
                input = input.permute(1, 0, 2)
                hidden_state = torch.zeros(1*2, len(X), n_hidden)
                cell_state = torch.zeros(1*2, len(X), n_hidden)
                output, (final_hidden_state, final_cell_state) = self.lstm(input, (hidden_state, cell_state))
                output = output.permute(1, 0, 2)
                attn_output, attention = self.attention_net(output, final_hidden_state)
                return self.out(attn_output), attention

        model = init_params(torch, BiLSTM_Attention(), 3, scale=1.0)
        _train(torch, model, inputs, targets, 4, log, lr=0.01, call=lambda m: m(inputs)[0])
        predict, attention = model(test_batch)
        log("attention", attention)
        log("bilstm logits", predict)
    run_both(program)


# graykode/nlp-tutorial 3-1.TextRNN/TextRNN.py (one-hot FloatTensor(list of np.eye rows) through
# nn.RNN from a zero hidden state, outputs[-1]), 3-2.TextLSTM/TextLSTM.py (LSTM with explicit
# (h, c), ``len(X)`` as the batch size) and 3-3.Bi-LSTM/Bi-LSTM.py (bidirectional LSTM over
# zero-padded prefixes); n_hidden 128 -> 8 in TextLSTM
def test_graykode_textrnn_textlstm_bilstm():
    def program(torch, log):
        nn = torch.nn
        sentences = ["i like dog", "i love coffee", "i hate milk"]
        word_dict, number_dict = _dicts(sentences)
        n_class, n_hidden, batch_size = len(word_dict), 5, len(sentences)

        class TextRNN(nn.Module):
            def __init__(self):
                super(TextRNN, self).__init__()
                self.rnn = nn.RNN(input_size=n_class, hidden_size=n_hidden)
                self.W = nn.Linear(n_hidden, n_class, bias=False)
                self.b = nn.Parameter(torch.ones([n_class]))

            def forward(self, hidden, X):
                X = X.transpose(0, 1)
                outputs, hidden = self.rnn(X, hidden)
                outputs = outputs[-1]
                model = self.W(outputs) + self.b
                return model

        input_batch = torch.FloatTensor(np.array([np.eye(n_class)[[word_dict[n] for n in sen.split()[:-1]]] for sen in sentences]))
        target_batch = torch.LongTensor([word_dict[sen.split()[-1]] for sen in sentences])
        model = init_params(torch, TextRNN(), 4, scale=1.0)
        _train(torch, model, None, target_batch, 4, log, lr=0.01,
               call=lambda m: m(torch.zeros(1, batch_size, n_hidden), input_batch))
        hidden = torch.zeros(1, batch_size, n_hidden)
        predict = model(hidden, input_batch).data.max(1, keepdim=True)[1]
        print([sen.split()[:2] for sen in sentences], '->', [number_dict[n.item()] for n in predict.squeeze()])

        char_arr = [c for c in 'abcdefghijklmnopqrstuvwxyz']
        word_dict = {n: i for i, n in enumerate(char_arr)}
        number_dict = {i: w for i, w in enumerate(char_arr)}
        n_class, n_hidden = len(word_dict), 8
        seq_data = ['make', 'need', 'coal', 'word', 'love', 'hate', 'live', 'home', 'hash', 'star']

        class TextLSTM(nn.Module):
            def __init__(self):
                super(TextLSTM, self).__init__()
                self.lstm = nn.LSTM(input_size=n_class, hidden_size=n_hidden)
                self.W = nn.Linear(n_hidden, n_class, bias=False)
                self.b = nn.Parameter(torch.ones([n_class]))

            def forward(self, X):
                input = X.transpose(0, 1)
                hidden_state = torch.zeros(1, len(X), n_hidden)
                cell_state = torch.zeros(1, len(X), n_hidden)
                outputs, (_, _) = self.lstm(input, (hidden_state, cell_state))
                outputs = outputs[-1]
                model = self.W(outputs) + self.b
                return model

        input_batch = torch.FloatTensor(np.array([np.eye(n_class)[[word_dict[n] for n in seq[:-1]]] for seq in seq_data]))
        target_batch = torch.LongTensor([word_dict[seq[-1]] for seq in seq_data])
        model = init_params(torch, TextLSTM(), 5, scale=1.0)
        _train(torch, model, input_batch, target_batch, 3, log, lr=0.01)
        predict = model(input_batch).data.max(1, keepdim=True)[1]
        print([sen[:3] for sen in seq_data], '->', [number_dict[n.item()] for n in predict.squeeze()])

        sentence = 'Lorem ipsum dolor sit amet consectetur adipisicing elit sed do'
        word_dict = {w: i for i, w in enumerate(sorted(set(sentence.split())))}
        number_dict = {i: w for w, i in word_dict.items()}
        n_class, n_hidden, max_len = len(word_dict), 5, len(sentence.split())

        class BiLSTM(nn.Module):
            def __init__(self):
                super(BiLSTM, self).__init__()
                self.lstm = nn.LSTM(input_size=n_class, hidden_size=n_hidden, bidirectional=True)
                self.W = nn.Linear(n_hidden * 2, n_class, bias=False)
                self.b = nn.Parameter(torch.ones([n_class]))

            def forward(self, X):
                input = X.transpose(0, 1)
                hidden_state = torch.zeros(1*2, len(X), n_hidden)
                cell_state = torch.zeros(1*2, len(X), n_hidden)
                outputs, (_, _) = self.lstm(input, (hidden_state, cell_state))
                outputs = outputs[-1]
                model = self.W(outputs) + self.b
                return model

        words = sentence.split()
        input_batch, target_batch = [], []
        for i, word in enumerate(words[:-1]):
            input = [word_dict[n] for n in words[:(i + 1)]]
            input = input + [0] * (max_len - len(input))
            input_batch.append(np.eye(n_class)[input])
            target_batch.append(word_dict[words[i + 1]])
        input_batch = torch.FloatTensor(np.array(input_batch))
        target_batch = torch.LongTensor(target_batch)
        model = init_params(torch, BiLSTM(), 6, scale=1.0)
        _train(torch, model, input_batch, target_batch, 3, log, lr=0.01)
        log("bilstm out", model(input_batch))
    run_both(program)


# graykode/nlp-tutorial 4-1.Seq2Seq/Seq2Seq.py (encoder/decoder nn.RNN(dropout=0.5) with one
# layer, the loss summed over the batch from ``loss = 0``, decoding by .data.max(2, keepdim=True))
# and 4-2.Seq2Seq(Attention)/Seq2Seq(Attention).py (attention scores written into
# torch.zeros(n_step) item by item from torch.dot, softmax without dim, outputs written into
# torch.empty rows, trained_attn as numpy); n_hidden 128 -> 8
def test_graykode_seq2seq_and_attention():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        n_step, n_hidden = 5, 8
        char_arr = [c for c in 'SEPabcdefghijklmnopqrstuvwxyz']
        num_dic = {n: i for i, n in enumerate(char_arr)}
        seq_data = [['man', 'women'], ['black', 'white'], ['king', 'queen'], ['girl', 'boy'], ['up', 'down'], ['high', 'low']]
        n_class, batch_size = len(num_dic), len(seq_data)
        input_batch, output_batch, target_batch = [], [], []
        for seq in seq_data:
            for i in range(2):
                seq[i] = seq[i] + 'P' * (n_step - len(seq[i]))
            input_batch.append(np.eye(n_class)[[num_dic[n] for n in seq[0]]])
            output_batch.append(np.eye(n_class)[[num_dic[n] for n in ('S' + seq[1])]])
            target_batch.append([num_dic[n] for n in (seq[1] + 'E')])
        input_batch, output_batch = torch.FloatTensor(np.array(input_batch)), torch.FloatTensor(np.array(output_batch))
        target_batch = torch.LongTensor(target_batch)

        class Seq2Seq(nn.Module):
            def __init__(self):
                super(Seq2Seq, self).__init__()
                self.enc_cell = nn.RNN(input_size=n_class, hidden_size=n_hidden, dropout=0.5)
                self.dec_cell = nn.RNN(input_size=n_class, hidden_size=n_hidden, dropout=0.5)
                self.fc = nn.Linear(n_hidden, n_class)

            def forward(self, enc_input, enc_hidden, dec_input):
                enc_input = enc_input.transpose(0, 1)
                dec_input = dec_input.transpose(0, 1)
                _, enc_states = self.enc_cell(enc_input, enc_hidden)
                outputs, _ = self.dec_cell(dec_input, enc_states)
                model = self.fc(outputs)
                return model

        model = init_params(torch, Seq2Seq(), 7, scale=1.0)
        criterion = nn.CrossEntropyLoss()
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        for epoch in range(2):
            hidden = torch.zeros(1, batch_size, n_hidden)
            optimizer.zero_grad()
            output = model(input_batch, hidden, output_batch)
            output = output.transpose(0, 1)
            loss = 0
            for i in range(0, len(target_batch)):
                loss += criterion(output[i], target_batch[i])
            log("cost", loss)
            loss.backward()
            optimizer.step()
        input_w = 'man' + 'P' * (n_step - 3)
        test_in = torch.FloatTensor(np.eye(n_class)[[num_dic[n] for n in input_w]]).unsqueeze(0)
        test_out = torch.FloatTensor(np.eye(n_class)[[num_dic[n] for n in 'S' + 'P' * n_step]]).unsqueeze(0)
        output = model(test_in, torch.zeros(1, 1, n_hidden), test_out)
        predict = output.data.max(2, keepdim=True)[1]
        print('man ->', [char_arr[i] for i in predict])

        sentences = ['ich mochte ein bier P', 'S i want a beer', 'i want a beer E']
        word_list = _vocab(sentences)
        word_dict = {w: i for i, w in enumerate(word_list)}
        number_dict = {i: w for i, w in enumerate(word_list)}
        n_class = len(word_dict)

        class Attention(nn.Module):
            def __init__(self):
                super(Attention, self).__init__()
                self.enc_cell = nn.RNN(input_size=n_class, hidden_size=n_hidden, dropout=0.5)
                self.dec_cell = nn.RNN(input_size=n_class, hidden_size=n_hidden, dropout=0.5)
                self.attn = nn.Linear(n_hidden, n_hidden)
                self.out = nn.Linear(n_hidden * 2, n_class)

            def forward(self, enc_inputs, hidden, dec_inputs):
                enc_inputs = enc_inputs.transpose(0, 1)
                dec_inputs = dec_inputs.transpose(0, 1)
                enc_outputs, enc_hidden = self.enc_cell(enc_inputs, hidden)
                trained_attn = []
                hidden = enc_hidden
                n_step = len(dec_inputs)
                model = torch.empty([n_step, 1, n_class])
                for i in range(n_step):
                    dec_output, hidden = self.dec_cell(dec_inputs[i].unsqueeze(0), hidden)
                    attn_weights = self.get_att_weight(dec_output, enc_outputs)
                    trained_attn.append(attn_weights.squeeze().data.numpy())
                    context = attn_weights.bmm(enc_outputs.transpose(0, 1))
                    dec_output = dec_output.squeeze(0)
                    context = context.squeeze(1)
                    model[i] = self.out(torch.cat((dec_output, context), 1))
                return model.transpose(0, 1).squeeze(0), trained_attn

            def get_att_weight(self, dec_output, enc_outputs):
                n_step = len(enc_outputs)
                attn_scores = torch.zeros(n_step)
                for i in range(n_step):
                    attn_scores[i] = self.get_att_score(dec_output, enc_outputs[i])
                return F.softmax(attn_scores).view(1, 1, -1)

            def get_att_score(self, dec_output, enc_output):
                score = self.attn(enc_output)
                return torch.dot(dec_output.view(-1), score.view(-1))

        input_batch = torch.FloatTensor(np.array([np.eye(n_class)[[word_dict[n] for n in sentences[0].split()]]]))
        output_batch = torch.FloatTensor(np.array([np.eye(n_class)[[word_dict[n] for n in sentences[1].split()]]]))
        target_batch = torch.LongTensor([[word_dict[n] for n in sentences[2].split()]])
        hidden = torch.zeros(1, 1, n_hidden)
        model = init_params(torch, Attention(), 8, scale=0.5)
        _train(torch, model, None, target_batch.squeeze(0), 2, log, lr=0.01,
               call=lambda m: m(input_batch, hidden, output_batch)[0])
        test_batch = torch.FloatTensor(np.array([np.eye(n_class)[[word_dict[n] for n in 'SPPPP']]]))
        predict, trained_attn = model(input_batch, hidden, test_batch)
        log("trained_attn", trained_attn)
        predict = predict.data.max(1, keepdim=True)[1]
        print(sentences[0], '->', [number_dict[n.item()] for n in predict.squeeze()])
    run_both(program)


def _init_trainable(torch, module, seed, scale=0.3):
    """``init_params`` over the parameters that require grad (frozen tables stay as built)."""
    rs = np.random.RandomState(seed)
    with torch.no_grad():
        for _, p in module.named_parameters():
            if p.requires_grad:
                p.copy_(torch.tensor(rs.uniform(-scale, scale, size=tuple(p.shape)).astype(np.float32)))
    return module


# graykode/nlp-tutorial 5-1.Transformer/Transformer.py (sinusoid table from numpy through
# Embedding.from_pretrained(freeze=True), pad masks by .data.eq(0).unsqueeze(1).expand, the
# subsequent mask from np.triu via from_numpy(...).byte(), torch.gt(bool + uint8, 0),
# masked_fill_ with -1e9, nn.Softmax(dim=-1)(...) built per call, Conv1d(kernel_size=1)
# feed-forward, LayerNorm residuals); d_model 512 -> 8, 6 layers -> 1, 8 heads -> 2
def test_graykode_transformer():
    def program(torch, log):
        nn = torch.nn
        sentences = ['ich mochte ein bier P', 'S i want a beer', 'i want a beer E']
        src_vocab = {'P': 0, 'ich': 1, 'mochte': 2, 'ein': 3, 'bier': 4}
        src_vocab_size = len(src_vocab)
        tgt_vocab = {'P': 0, 'i': 1, 'want': 2, 'a': 3, 'beer': 4, 'S': 5, 'E': 6}
        number_dict = {i: w for i, w in enumerate(tgt_vocab)}
        tgt_vocab_size = len(tgt_vocab)
        src_len = tgt_len = 5
        d_model, d_ff, d_k, n_layers, n_heads = 8, 16, 4, 1, 2
        d_v = d_k

        def get_sinusoid_encoding_table(n_position, d_model):
            def cal_angle(position, hid_idx):
                return position / np.power(10000, 2 * (hid_idx // 2) / d_model)

            def get_posi_angle_vec(position):
                return [cal_angle(position, hid_j) for hid_j in range(d_model)]

            sinusoid_table = np.array([get_posi_angle_vec(pos_i) for pos_i in range(n_position)])
            sinusoid_table[:, 0::2] = np.sin(sinusoid_table[:, 0::2])
            sinusoid_table[:, 1::2] = np.cos(sinusoid_table[:, 1::2])
            return torch.FloatTensor(sinusoid_table)

        def get_attn_pad_mask(seq_q, seq_k):
            batch_size, len_q = seq_q.size()
            batch_size, len_k = seq_k.size()
            pad_attn_mask = seq_k.data.eq(0).unsqueeze(1)
            return pad_attn_mask.expand(batch_size, len_q, len_k)

        def get_attn_subsequent_mask(seq):
            attn_shape = [seq.size(0), seq.size(1), seq.size(1)]
            subsequent_mask = np.triu(np.ones(attn_shape), k=1)
            subsequent_mask = torch.from_numpy(subsequent_mask).byte()
            return subsequent_mask

        class ScaledDotProductAttention(nn.Module):
            def forward(self, Q, K, V, attn_mask):
                scores = torch.matmul(Q, K.transpose(-1, -2)) / np.sqrt(d_k)
                scores.masked_fill_(attn_mask, -1e9)
                attn = nn.Softmax(dim=-1)(scores)
                context = torch.matmul(attn, V)
                return context, attn

        class MultiHeadAttention(nn.Module):
            def __init__(self):
                super(MultiHeadAttention, self).__init__()
                self.W_Q = nn.Linear(d_model, d_k * n_heads)
                self.W_K = nn.Linear(d_model, d_k * n_heads)
                self.W_V = nn.Linear(d_model, d_v * n_heads)
                self.linear = nn.Linear(n_heads * d_v, d_model)
                self.layer_norm = nn.LayerNorm(d_model)

            def forward(self, Q, K, V, attn_mask):
                residual, batch_size = Q, Q.size(0)
                q_s = self.W_Q(Q).view(batch_size, -1, n_heads, d_k).transpose(1, 2)
                k_s = self.W_K(K).view(batch_size, -1, n_heads, d_k).transpose(1, 2)
                v_s = self.W_V(V).view(batch_size, -1, n_heads, d_v).transpose(1, 2)
                attn_mask = attn_mask.unsqueeze(1).repeat(1, n_heads, 1, 1)
                context, attn = ScaledDotProductAttention()(q_s, k_s, v_s, attn_mask)
                context = context.transpose(1, 2).contiguous().view(batch_size, -1, n_heads * d_v)
                output = self.linear(context)
                return self.layer_norm(output + residual), attn

        class PoswiseFeedForwardNet(nn.Module):
            def __init__(self):
                super(PoswiseFeedForwardNet, self).__init__()
                self.conv1 = nn.Conv1d(in_channels=d_model, out_channels=d_ff, kernel_size=1)
                self.conv2 = nn.Conv1d(in_channels=d_ff, out_channels=d_model, kernel_size=1)
                self.layer_norm = nn.LayerNorm(d_model)

            def forward(self, inputs):
                residual = inputs
                output = nn.ReLU()(self.conv1(inputs.transpose(1, 2)))
                output = self.conv2(output).transpose(1, 2)
                return self.layer_norm(output + residual)

        class EncoderLayer(nn.Module):
            def __init__(self):
                super(EncoderLayer, self).__init__()
                self.enc_self_attn = MultiHeadAttention()
                self.pos_ffn = PoswiseFeedForwardNet()

            def forward(self, enc_inputs, enc_self_attn_mask):
                enc_outputs, attn = self.enc_self_attn(enc_inputs, enc_inputs, enc_inputs, enc_self_attn_mask)
                enc_outputs = self.pos_ffn(enc_outputs)
                return enc_outputs, attn

        class DecoderLayer(nn.Module):
            def __init__(self):
                super(DecoderLayer, self).__init__()
                self.dec_self_attn = MultiHeadAttention()
                self.dec_enc_attn = MultiHeadAttention()
                self.pos_ffn = PoswiseFeedForwardNet()

            def forward(self, dec_inputs, enc_outputs, dec_self_attn_mask, dec_enc_attn_mask):
                dec_outputs, dec_self_attn = self.dec_self_attn(dec_inputs, dec_inputs, dec_inputs, dec_self_attn_mask)
                dec_outputs, dec_enc_attn = self.dec_enc_attn(dec_outputs, enc_outputs, enc_outputs, dec_enc_attn_mask)
                dec_outputs = self.pos_ffn(dec_outputs)
                return dec_outputs, dec_self_attn, dec_enc_attn

        class Encoder(nn.Module):
            def __init__(self):
                super(Encoder, self).__init__()
                self.src_emb = nn.Embedding(src_vocab_size, d_model)
                self.pos_emb = nn.Embedding.from_pretrained(get_sinusoid_encoding_table(src_len+1, d_model), freeze=True)
                self.layers = nn.ModuleList([EncoderLayer() for _ in range(n_layers)])

            def forward(self, enc_inputs):
                enc_outputs = self.src_emb(enc_inputs) + self.pos_emb(torch.LongTensor([[1, 2, 3, 4, 0]]))
                enc_self_attn_mask = get_attn_pad_mask(enc_inputs, enc_inputs)
                enc_self_attns = []
                for layer in self.layers:
                    enc_outputs, enc_self_attn = layer(enc_outputs, enc_self_attn_mask)
                    enc_self_attns.append(enc_self_attn)
                return enc_outputs, enc_self_attns

        class Decoder(nn.Module):
            def __init__(self):
                super(Decoder, self).__init__()
                self.tgt_emb = nn.Embedding(tgt_vocab_size, d_model)
                self.pos_emb = nn.Embedding.from_pretrained(get_sinusoid_encoding_table(tgt_len+1, d_model), freeze=True)
                self.layers = nn.ModuleList([DecoderLayer() for _ in range(n_layers)])

            def forward(self, dec_inputs, enc_inputs, enc_outputs):
                dec_outputs = self.tgt_emb(dec_inputs) + self.pos_emb(torch.LongTensor([[5, 1, 2, 3, 4]]))
                dec_self_attn_pad_mask = get_attn_pad_mask(dec_inputs, dec_inputs)
                dec_self_attn_subsequent_mask = get_attn_subsequent_mask(dec_inputs)
                dec_self_attn_mask = torch.gt((dec_self_attn_pad_mask + dec_self_attn_subsequent_mask), 0)
                dec_enc_attn_mask = get_attn_pad_mask(dec_inputs, enc_inputs)
                dec_self_attns, dec_enc_attns = [], []
                for layer in self.layers:
                    dec_outputs, dec_self_attn, dec_enc_attn = layer(dec_outputs, enc_outputs, dec_self_attn_mask, dec_enc_attn_mask)
                    dec_self_attns.append(dec_self_attn)
                    dec_enc_attns.append(dec_enc_attn)
                return dec_outputs, dec_self_attns, dec_enc_attns

        class Transformer(nn.Module):
            def __init__(self):
                super(Transformer, self).__init__()
                self.encoder = Encoder()
                self.decoder = Decoder()
                self.projection = nn.Linear(d_model, tgt_vocab_size, bias=False)

            def forward(self, enc_inputs, dec_inputs):
                enc_outputs, enc_self_attns = self.encoder(enc_inputs)
                dec_outputs, dec_self_attns, dec_enc_attns = self.decoder(dec_inputs, enc_inputs, enc_outputs)
                dec_logits = self.projection(dec_outputs)
                return dec_logits.view(-1, dec_logits.size(-1)), enc_self_attns, dec_self_attns, dec_enc_attns

        enc_inputs = torch.LongTensor([[src_vocab[n] for n in sentences[0].split()]])
        dec_inputs = torch.LongTensor([[tgt_vocab[n] for n in sentences[1].split()]])
        target_batch = torch.LongTensor([[tgt_vocab[n] for n in sentences[2].split()]])
        model = _init_trainable(torch, Transformer(), 9, scale=0.5)
        _train(torch, model, None, target_batch.contiguous().view(-1), 3, log, lr=0.01,
               call=lambda m: m(enc_inputs, dec_inputs)[0])
        predict, enc_self_attns, dec_self_attns, dec_enc_attns = model(enc_inputs, dec_inputs)
        log("attns", [enc_self_attns[-1].squeeze(0)[0], dec_self_attns[-1].squeeze(0)[0].data.numpy(), dec_enc_attns[-1]])
        predict = predict.data.max(1, keepdim=True)[1]
        print(sentences[0], '->', [number_dict[n.item()] for n in predict.squeeze()])
    run_both(program)


class _Opt:
    """The argparse namespace of eriklindernoren's GAN scripts, at tiny sizes."""
    n_epochs, batch_size, lr, b1, b2, latent_dim, img_size, channels, n_critic = 1, 4, 0.0002, 0.5, 0.999, 8, 8, 1, 1


# eriklindernoren/PyTorch-GAN implementations/wgan_gp/wgan_gp.py (MLP generator with
# BatchNorm1d(out_feat, 0.8) -- eps 0.8 -- and inplace LeakyReLU, ``Tensor = torch.FloatTensor``
# built from numpy and from a shape then fill_, Variable, the gradient penalty through
# autograd.grad(create_graph=True, retain_graph=True, only_inputs=True) and gradients.norm(2,
# dim=1), d_loss backpropagating through it); widths 128..1024 -> 8..64, two batches
def test_pytorch_gan_wgan_gp():
    def program(torch, log):
        nn, autograd, Variable = torch.nn, torch.autograd, torch.autograd.Variable
        opt = _Opt()
        img_shape = (opt.channels, opt.img_size, opt.img_size)
        rs = np.random.RandomState(10)

        class Generator(nn.Module):
            def __init__(self):
                super(Generator, self).__init__()

                def block(in_feat, out_feat, normalize=True):
                    layers = [nn.Linear(in_feat, out_feat)]
                    if normalize:
                        layers.append(nn.BatchNorm1d(out_feat, 0.8))
                    layers.append(nn.LeakyReLU(0.2, inplace=True))
                    return layers

                self.model = nn.Sequential(
                    *block(opt.latent_dim, 8, normalize=False),
                    *block(8, 16),
                    *block(16, 32),
                    *block(32, 64),
                    nn.Linear(64, int(np.prod(img_shape))),
                    nn.Tanh()
                )

            def forward(self, z):
                img = self.model(z)
                img = img.view(img.shape[0], *img_shape)
                return img

        class Discriminator(nn.Module):
            def __init__(self):
                super(Discriminator, self).__init__()
                self.model = nn.Sequential(
                    nn.Linear(int(np.prod(img_shape)), 32),
                    nn.LeakyReLU(0.2, inplace=True),
                    nn.Linear(32, 16),
                    nn.LeakyReLU(0.2, inplace=True),
                    nn.Linear(16, 1),
                )

            def forward(self, img):
                img_flat = img.view(img.shape[0], -1)
                validity = self.model(img_flat)
                return validity

        lambda_gp = 10
        generator = init_params(torch, Generator(), 11)
        discriminator = init_params(torch, Discriminator(), 12)
        optimizer_G = torch.optim.Adam(generator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
        optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
        Tensor = torch.FloatTensor

        def compute_gradient_penalty(D, real_samples, fake_samples):
            alpha = Tensor(rs.random_sample((real_samples.size(0), 1, 1, 1)))
            interpolates = (alpha * real_samples + ((1 - alpha) * fake_samples)).requires_grad_(True)
            d_interpolates = D(interpolates)
            fake = Variable(Tensor(real_samples.shape[0], 1).fill_(1.0), requires_grad=False)
            gradients = autograd.grad(
                outputs=d_interpolates,
                inputs=interpolates,
                grad_outputs=fake,
                create_graph=True,
                retain_graph=True,
                only_inputs=True,
            )[0]
            gradients = gradients.view(gradients.size(0), -1)
            gradient_penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean()
            return gradient_penalty

        dataloader = [(torch.tensor(rs.rand(opt.batch_size, *img_shape).astype(np.float32) * 2 - 1), None)
                      for _ in range(2)]
        for epoch in range(opt.n_epochs):
            for i, (imgs, _) in enumerate(dataloader):
                real_imgs = Variable(imgs.type(Tensor))
                optimizer_D.zero_grad()
                z = Variable(Tensor(rs.normal(0, 1, (imgs.shape[0], opt.latent_dim))))
                fake_imgs = generator(z)
                real_validity = discriminator(real_imgs)
                fake_validity = discriminator(fake_imgs)
                gradient_penalty = compute_gradient_penalty(discriminator, real_imgs.data, fake_imgs.data)
                d_loss = -torch.mean(real_validity) + torch.mean(fake_validity) + lambda_gp * gradient_penalty
                d_loss.backward()
                optimizer_D.step()
                optimizer_G.zero_grad()
                if i % opt.n_critic == 0:
                    fake_imgs = generator(z)
                    fake_validity = discriminator(fake_imgs)
                    g_loss = -torch.mean(fake_validity)
                    g_loss.backward()
                    optimizer_G.step()
                    log("losses", [d_loss.item(), g_loss.item(), gradient_penalty])
        log("D grad", discriminator.model[0].weight.grad)
        log("G bn running_var", generator.model[3].running_var)
    run_both(program)


# eriklindernoren/PyTorch-GAN implementations/ebgan/ebgan.py (Upsample(scale_factor=2) + Conv2d +
# BatchNorm2d(c, 0.8) generator, an autoencoder discriminator returning (reconstruction,
# embedding), weights_init_normal through Module.apply and class-name matching, the pull-away
# term, ``(margin - d_loss_fake.data).item() > 0`` deciding whether ``d_loss +=`` runs);
# 128/64 channels -> 8/4, the normal_ init replaced by numpy-seeded parameters after apply
def test_pytorch_gan_ebgan():
    def program(torch, log):
        nn, Variable = torch.nn, torch.autograd.Variable
        opt = _Opt()
        rs = np.random.RandomState(13)

        def weights_init_normal(m):
            classname = m.__class__.__name__
            if classname.find("Conv") != -1:
                torch.nn.init.normal_(m.weight.data, 0.0, 0.02)
            elif classname.find("BatchNorm2d") != -1:
                torch.nn.init.normal_(m.weight.data, 1.0, 0.02)
                torch.nn.init.constant_(m.bias.data, 0.0)

        class Generator(nn.Module):
            def __init__(self):
                super(Generator, self).__init__()
                self.init_size = opt.img_size // 4
                self.l1 = nn.Sequential(nn.Linear(opt.latent_dim, 8 * self.init_size ** 2))
                self.conv_blocks = nn.Sequential(
                    nn.Upsample(scale_factor=2),
                    nn.Conv2d(8, 8, 3, stride=1, padding=1),
                    nn.BatchNorm2d(8, 0.8),
                    nn.LeakyReLU(0.2, inplace=True),
                    nn.Upsample(scale_factor=2),
                    nn.Conv2d(8, 4, 3, stride=1, padding=1),
                    nn.BatchNorm2d(4, 0.8),
                    nn.LeakyReLU(0.2, inplace=True),
                    nn.Conv2d(4, opt.channels, 3, stride=1, padding=1),
                    nn.Tanh(),
                )

            def forward(self, noise):
                out = self.l1(noise)
                out = out.view(out.shape[0], 8, self.init_size, self.init_size)
                img = self.conv_blocks(out)
                return img

        class Discriminator(nn.Module):
            def __init__(self):
                super(Discriminator, self).__init__()
                self.down = nn.Sequential(nn.Conv2d(opt.channels, 4, 3, 2, 1), nn.ReLU())
                self.down_size = opt.img_size // 2
                down_dim = 4 * (opt.img_size // 2) ** 2
                self.embedding = nn.Linear(down_dim, 32)
                self.fc = nn.Sequential(
                    nn.BatchNorm1d(32, 0.8),
                    nn.ReLU(inplace=True),
                    nn.Linear(32, down_dim),
                    nn.BatchNorm1d(down_dim),
                    nn.ReLU(inplace=True),
                )
                self.up = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(4, opt.channels, 3, 1, 1))

            def forward(self, img):
                out = self.down(img)
                embedding = self.embedding(out.view(out.size(0), -1))
                out = self.fc(embedding)
                out = self.up(out.view(out.size(0), 4, self.down_size, self.down_size))
                return out, embedding

        pixelwise_loss = nn.MSELoss()
        generator = Generator()
        discriminator = Discriminator()
        generator.apply(weights_init_normal)
        discriminator.apply(weights_init_normal)
        init_params(torch, generator, 14)
        init_params(torch, discriminator, 15)
        optimizer_G = torch.optim.Adam(generator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
        optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
        Tensor = torch.FloatTensor

        def pullaway_loss(embeddings):
            norm = torch.sqrt(torch.sum(embeddings ** 2, -1, keepdim=True))
            normalized_emb = embeddings / norm
            similarity = torch.matmul(normalized_emb, normalized_emb.transpose(1, 0))
            batch_size = embeddings.size(0)
            loss_pt = (torch.sum(similarity) - batch_size) / (batch_size * (batch_size - 1))
            return loss_pt

        lambda_pt = 0.1
        margin = max(1, opt.batch_size / 64.0)
        dataloader = [(torch.tensor(rs.rand(opt.batch_size, 1, 8, 8).astype(np.float32) * 2 - 1), None)
                      for _ in range(2)]
        for epoch in range(opt.n_epochs):
            for i, (imgs, _) in enumerate(dataloader):
                real_imgs = Variable(imgs.type(Tensor))
                optimizer_G.zero_grad()
                z = Variable(Tensor(rs.normal(0, 1, (imgs.shape[0], opt.latent_dim))))
                gen_imgs = generator(z)
                recon_imgs, img_embeddings = discriminator(gen_imgs)
                g_loss = pixelwise_loss(recon_imgs, gen_imgs.detach()) + lambda_pt * pullaway_loss(img_embeddings)
                g_loss.backward()
                optimizer_G.step()
                optimizer_D.zero_grad()
                real_recon, _ = discriminator(real_imgs)
                fake_recon, _ = discriminator(gen_imgs.detach())
                d_loss_real = pixelwise_loss(real_recon, real_imgs)
                d_loss_fake = pixelwise_loss(fake_recon, gen_imgs.detach())
                d_loss = d_loss_real
                if (margin - d_loss_fake.data).item() > 0:
                    d_loss += margin - d_loss_fake
                d_loss.backward()
                optimizer_D.step()
                log("losses", [d_loss.item(), g_loss.item()])
        log("gen_imgs", gen_imgs)
        log("D grads", [p.grad for p in discriminator.parameters()])
    run_both(program)


class _CharTokenizer:
    """A stand-in for tiktoken's gpt2 encoding (not installed): one id per character."""

    def __init__(self, text):
        self.chars = sorted(set(text))

    def encode(self, text, allowed_special=None):
        return [self.chars.index(c) for c in text]

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)


# rasbt/LLMs-from-scratch ch04/01_main-chapter-code/gpt.py (MultiHeadAttention with a
# registered triu mask buffer, .bool()[:n, :n], masked_fill_(-torch.inf), hand-written LayerNorm
# with var(unbiased=False) and tanh GELU with torch.sqrt(torch.tensor(2.0 / torch.pi)), GPTModel,
# generate_text_simple), ch05/01_main-chapter-code/gpt_generate.py (assign: Parameters from
# numpy arrays and their .T views after a shape check against torch.Size, load_weights_into_gpt
# over np.split c_attn blocks; generate with top_k through torch.where and the
# ``idx_next == eos_id`` None comparison) and gpt_train.py (GPTDatasetV1 sliding windows,
# DataLoader(drop_last=True), calc_loss_loader, evaluate_model, train_model_simple with AdamW);
# a character tokenizer in place of tiktoken, drop_rate 0 (dropout draws differ), shuffle=False
def test_rasbt_llms_from_scratch_gpt():
    def program(torch, log):
        nn = torch.nn
        Dataset, DataLoader = torch.utils.data.Dataset, torch.utils.data.DataLoader

        class MultiHeadAttention(nn.Module):
            def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
                super().__init__()
                assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
                self.d_out = d_out
                self.num_heads = num_heads
                self.head_dim = d_out // num_heads
                self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
                self.out_proj = nn.Linear(d_out, d_out)
                self.dropout = nn.Dropout(dropout)
                self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

            def forward(self, x):
                b, num_tokens, d_in = x.shape
                keys = self.W_key(x)
                queries = self.W_query(x)
                values = self.W_value(x)
                keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
                values = values.view(b, num_tokens, self.num_heads, self.head_dim)
                queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
                keys = keys.transpose(1, 2)
                queries = queries.transpose(1, 2)
                values = values.transpose(1, 2)
                attn_scores = queries @ keys.transpose(2, 3)
                mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
                attn_scores.masked_fill_(mask_bool, -torch.inf)
                attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
                attn_weights = self.dropout(attn_weights)
                context_vec = (attn_weights @ values).transpose(1, 2)
                context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
                context_vec = self.out_proj(context_vec)
                return context_vec

        class LayerNorm(nn.Module):
            def __init__(self, emb_dim):
                super().__init__()
                self.eps = 1e-5
                self.scale = nn.Parameter(torch.ones(emb_dim))
                self.shift = nn.Parameter(torch.zeros(emb_dim))

            def forward(self, x):
                mean = x.mean(dim=-1, keepdim=True)
                var = x.var(dim=-1, keepdim=True, unbiased=False)
                norm_x = (x - mean) / torch.sqrt(var + self.eps)
                return self.scale * norm_x + self.shift

        class GELU(nn.Module):
            def forward(self, x):
                return 0.5 * x * (1 + torch.tanh(
                    torch.sqrt(torch.tensor(2.0 / torch.pi)) *
                    (x + 0.044715 * torch.pow(x, 3))
                ))

        class FeedForward(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.layers = nn.Sequential(
                    nn.Linear(cfg["emb_dim"], 4 * cfg["emb_dim"]),
                    GELU(),
                    nn.Linear(4 * cfg["emb_dim"], cfg["emb_dim"]),
                )

            def forward(self, x):
                return self.layers(x)

        class TransformerBlock(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.att = MultiHeadAttention(
                    d_in=cfg["emb_dim"], d_out=cfg["emb_dim"], context_length=cfg["context_length"],
                    num_heads=cfg["n_heads"], dropout=cfg["drop_rate"], qkv_bias=cfg["qkv_bias"])
                self.ff = FeedForward(cfg)
                self.norm1 = LayerNorm(cfg["emb_dim"])
                self.norm2 = LayerNorm(cfg["emb_dim"])
                self.drop_shortcut = nn.Dropout(cfg["drop_rate"])

            def forward(self, x):
                shortcut = x
                x = self.norm1(x)
                x = self.att(x)
                x = self.drop_shortcut(x)
                x = x + shortcut
                shortcut = x
                x = self.norm2(x)
                x = self.ff(x)
                x = self.drop_shortcut(x)
                x = x + shortcut
                return x

        class GPTModel(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
                self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
                self.drop_emb = nn.Dropout(cfg["drop_rate"])
                self.trf_blocks = nn.Sequential(*[TransformerBlock(cfg) for _ in range(cfg["n_layers"])])
                self.final_norm = LayerNorm(cfg["emb_dim"])
                self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)

            def forward(self, in_idx):
                batch_size, seq_len = in_idx.shape
                tok_embeds = self.tok_emb(in_idx)
                pos_embeds = self.pos_emb(torch.arange(seq_len, device=in_idx.device))
                x = tok_embeds + pos_embeds
                x = self.drop_emb(x)
                x = self.trf_blocks(x)
                x = self.final_norm(x)
                logits = self.out_head(x)
                return logits

        def generate_text_simple(model, idx, max_new_tokens, context_size):
            for _ in range(max_new_tokens):
                idx_cond = idx[:, -context_size:]
                with torch.no_grad():
                    logits = model(idx_cond)
                logits = logits[:, -1, :]
                idx_next = torch.argmax(logits, dim=-1, keepdim=True)
                idx = torch.cat((idx, idx_next), dim=1)
            return idx

        def generate(model, idx, max_new_tokens, context_size, temperature=0.0, top_k=None, eos_id=None):
            for _ in range(max_new_tokens):
                idx_cond = idx[:, -context_size:]
                with torch.no_grad():
                    logits = model(idx_cond)
                logits = logits[:, -1, :]
                if top_k is not None:
                    top_logits, _ = torch.topk(logits, top_k)
                    min_val = top_logits[:, -1]
                    logits = torch.where(logits < min_val, torch.tensor(float("-inf")).to(logits.device), logits)
                idx_next = torch.argmax(logits, dim=-1, keepdim=True)
                if idx_next == eos_id:
                    break
                idx = torch.cat((idx, idx_next), dim=1)
            return idx

        def assign(left, right):
            if left.shape != right.shape:
                raise ValueError(f"Shape mismatch. Left: {left.shape}, Right: {right.shape}")
            return torch.nn.Parameter(torch.tensor(right))

        def load_weights_into_gpt(gpt, params):
            gpt.pos_emb.weight = assign(gpt.pos_emb.weight, params["wpe"])
            gpt.tok_emb.weight = assign(gpt.tok_emb.weight, params["wte"])
            for b in range(len(params["blocks"])):
                q_w, k_w, v_w = np.split((params["blocks"][b]["attn"]["c_attn"])["w"], 3, axis=-1)
                gpt.trf_blocks[b].att.W_query.weight = assign(gpt.trf_blocks[b].att.W_query.weight, q_w.T)
                gpt.trf_blocks[b].att.W_key.weight = assign(gpt.trf_blocks[b].att.W_key.weight, k_w.T)
                gpt.trf_blocks[b].att.W_value.weight = assign(gpt.trf_blocks[b].att.W_value.weight, v_w.T)
                q_b, k_b, v_b = np.split((params["blocks"][b]["attn"]["c_attn"])["b"], 3, axis=-1)
                gpt.trf_blocks[b].att.W_query.bias = assign(gpt.trf_blocks[b].att.W_query.bias, q_b)
                gpt.trf_blocks[b].att.W_key.bias = assign(gpt.trf_blocks[b].att.W_key.bias, k_b)
                gpt.trf_blocks[b].att.W_value.bias = assign(gpt.trf_blocks[b].att.W_value.bias, v_b)
                gpt.trf_blocks[b].att.out_proj.weight = assign(
                    gpt.trf_blocks[b].att.out_proj.weight, params["blocks"][b]["attn"]["c_proj"]["w"].T)
                gpt.trf_blocks[b].att.out_proj.bias = assign(
                    gpt.trf_blocks[b].att.out_proj.bias, params["blocks"][b]["attn"]["c_proj"]["b"])
                gpt.trf_blocks[b].ff.layers[0].weight = assign(
                    gpt.trf_blocks[b].ff.layers[0].weight, params["blocks"][b]["mlp"]["c_fc"]["w"].T)
                gpt.trf_blocks[b].ff.layers[0].bias = assign(
                    gpt.trf_blocks[b].ff.layers[0].bias, params["blocks"][b]["mlp"]["c_fc"]["b"])
                gpt.trf_blocks[b].ff.layers[2].weight = assign(
                    gpt.trf_blocks[b].ff.layers[2].weight, params["blocks"][b]["mlp"]["c_proj"]["w"].T)
                gpt.trf_blocks[b].ff.layers[2].bias = assign(
                    gpt.trf_blocks[b].ff.layers[2].bias, params["blocks"][b]["mlp"]["c_proj"]["b"])
                gpt.trf_blocks[b].norm1.scale = assign(gpt.trf_blocks[b].norm1.scale, params["blocks"][b]["ln_1"]["g"])
                gpt.trf_blocks[b].norm1.shift = assign(gpt.trf_blocks[b].norm1.shift, params["blocks"][b]["ln_1"]["b"])
                gpt.trf_blocks[b].norm2.scale = assign(gpt.trf_blocks[b].norm2.scale, params["blocks"][b]["ln_2"]["g"])
                gpt.trf_blocks[b].norm2.shift = assign(gpt.trf_blocks[b].norm2.shift, params["blocks"][b]["ln_2"]["b"])
            gpt.final_norm.scale = assign(gpt.final_norm.scale, params["g"])
            gpt.final_norm.shift = assign(gpt.final_norm.shift, params["b"])
            gpt.out_head.weight = assign(gpt.out_head.weight, params["wte"])

        class GPTDatasetV1(Dataset):
            def __init__(self, txt, tokenizer, max_length, stride):
                self.input_ids = []
                self.target_ids = []
                token_ids = tokenizer.encode(txt, allowed_special={"<|endoftext|>"})
                for i in range(0, len(token_ids) - max_length, stride):
                    input_chunk = token_ids[i:i + max_length]
                    target_chunk = token_ids[i + 1: i + max_length + 1]
                    self.input_ids.append(torch.tensor(input_chunk))
                    self.target_ids.append(torch.tensor(target_chunk))

            def __len__(self):
                return len(self.input_ids)

            def __getitem__(self, idx):
                return self.input_ids[idx], self.target_ids[idx]

        def calc_loss_batch(input_batch, target_batch, model, device):
            input_batch, target_batch = input_batch.to(device), target_batch.to(device)
            logits = model(input_batch)
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), target_batch.flatten())
            return loss

        def calc_loss_loader(data_loader, model, device, num_batches=None):
            total_loss = 0.
            if len(data_loader) == 0:
                return float("nan")
            elif num_batches is None:
                num_batches = len(data_loader)
            else:
                num_batches = min(num_batches, len(data_loader))
            for i, (input_batch, target_batch) in enumerate(data_loader):
                if i < num_batches:
                    loss = calc_loss_batch(input_batch, target_batch, model, device)
                    total_loss += loss.item()
                else:
                    break
            return total_loss / num_batches

        def evaluate_model(model, train_loader, val_loader, device, eval_iter):
            model.eval()
            with torch.no_grad():
                train_loss = calc_loss_loader(train_loader, model, device, num_batches=eval_iter)
                val_loss = calc_loss_loader(val_loader, model, device, num_batches=eval_iter)
            model.train()
            return train_loss, val_loss

        text = "every effort moves you forward, and every step counts."
        tokenizer = _CharTokenizer(text)
        cfg = {"vocab_size": len(tokenizer.chars), "context_length": 8, "emb_dim": 8, "n_heads": 2,
               "n_layers": 1, "drop_rate": 0.0, "qkv_bias": True}
        model = GPTModel(cfg)
        rs = np.random.RandomState(16)

        def w(*shape):
            return (rs.standard_normal(shape) * 0.3).astype(np.float32)

        E, V, C = cfg["emb_dim"], cfg["vocab_size"], cfg["context_length"]
        params = {"wpe": w(C, E), "wte": w(V, E), "g": w(E) + 1, "b": w(E), "blocks": [
            {"attn": {"c_attn": {"w": w(E, 3 * E), "b": w(3 * E)}, "c_proj": {"w": w(E, E), "b": w(E)}},
             "mlp": {"c_fc": {"w": w(E, 4 * E), "b": w(4 * E)}, "c_proj": {"w": w(4 * E, E), "b": w(E)}},
             "ln_1": {"g": w(E) + 1, "b": w(E)}, "ln_2": {"g": w(E) + 1, "b": w(E)}}
            for _ in range(cfg["n_layers"])]}
        load_weights_into_gpt(model, params)
        try:
            assign(model.tok_emb.weight, params["wpe"])
        except ValueError as e:
            print(e)
        model.eval()
        encoded = torch.tensor(tokenizer.encode("every e")).unsqueeze(0)
        out = generate_text_simple(model, encoded, 2, cfg["context_length"])
        print(tokenizer.decode(out.squeeze(0).tolist()))
        out = generate(model, encoded, 2, cfg["context_length"], top_k=3)
        print(tokenizer.decode(out.squeeze(0).tolist()))

        split = int(0.8 * len(text))
        train_loader = DataLoader(GPTDatasetV1(text[:split], tokenizer, 8, 8), batch_size=2, shuffle=False, drop_last=True)
        val_loader = DataLoader(GPTDatasetV1(text[split:], tokenizer, 8, 1), batch_size=2, shuffle=False, drop_last=False)
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.0004, weight_decay=0.1)
        tokens_seen, global_step = 0, -1
        model.train()
        for input_batch, target_batch in train_loader:
            optimizer.zero_grad()
            loss = calc_loss_batch(input_batch, target_batch, model, "cpu")
            loss.backward()
            optimizer.step()
            tokens_seen += input_batch.numel()
            global_step += 1
            if global_step % 2 == 0:
                train_loss, val_loss = evaluate_model(model, train_loader, val_loader, "cpu", 1)
                log("losses", [train_loss, val_loss, tokens_seen])
        log("out_head", model.out_head.weight)
        log("final_norm.scale grad", model.final_norm.scale.grad)
    run_both(program)


# aladdinpersson/Machine-Learning-Collection ML/Pytorch/Basics/pytorch_tensorbasics.py (f-string
# prints of a tensor, its device and shape; empty(...).normal_(mean=, std=)/.uniform_, linspace,
# bool/short/half/double conversions, add(out=) of int64 into float32, true_divide, add_ and +=
# of int into float, matrix_power, ``x1**x2`` broadcasting, max/min/sort results printed,
# boolean-mask and fancy indexing, unique, a transposed view's is_contiguous, chunk); numpy
# values in place of torch.rand, and the non-float32 conversions logged (tensor reprs spell
# their dtypes in the library's name)
def test_aladdinpersson_tensor_basics():
    def program(torch, log):
        device = "cuda" if torch.cuda.is_available() else "cpu"
        my_tensor = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.float32, device=device, requires_grad=True)
        print(f"Information about tensor: {my_tensor}")
        print(f"Device Tensor is on {my_tensor.device}")
        print(f"Shape of tensor {my_tensor.shape}")
        print(f"Requires gradient: {my_tensor.requires_grad}")
        x = torch.empty(size=(3, 3))
        x = torch.zeros((3, 3))
        x = torch.eye(5, 5)
        print(x)
        x = torch.arange(start=0, end=5, step=1)
        x = torch.linspace(start=0.1, end=1, steps=10)
        print(x)
        x = torch.empty(size=(1, 5)).normal_(mean=0, std=1)
        x = torch.empty(size=(1, 5)).uniform_(0, 1)
        log("uniform in [0, 1)", [x.shape, bool(((x >= 0) & (x < 1)).all())])
        x = torch.diag(torch.ones(3))
        tensor = torch.arange(4)
        print(f"Converted Boolean: {tensor.bool()}")
        log("conversions", [tensor.short(), tensor.long(), tensor.half(), tensor.float(), tensor.double()])
        np_array = np.zeros((5, 5))
        tensor = torch.from_numpy(np_array)
        log("numpy again", tensor.numpy())

        x = torch.tensor([1, 2, 3])
        y = torch.tensor([9, 8, 7])
        z1 = torch.empty(3)
        torch.add(x, y, out=z1)
        z2 = torch.add(x, y)
        print(z1, z2, x - y)
        print(torch.true_divide(x, y))
        t = torch.zeros(3)
        t.add_(x)
        t += x
        print(t, x.pow(2), x**2, x > 0, x < 0)
        x1, x2 = torch.tensor(np_randn((2, 5), 17)), torch.tensor(np_randn((5, 3), 18))
        log("mm", [torch.mm(x1, x2), x1.mm(x2)])
        matrix_exp = torch.tensor(np_randn((5, 5), 19, scale=0.5))
        log("matrix_power", matrix_exp.matrix_power(3))
        print(x * y, torch.dot(x, y))
        tensor1, tensor2 = torch.tensor(np_randn((4, 2, 3), 20)), torch.tensor(np_randn((4, 3, 2), 21))
        log("bmm", torch.bmm(tensor1, tensor2))
        x1 = torch.tensor(np.random.RandomState(22).rand(5, 5).astype(np.float32))
        x2 = torch.ones((1, 5))
        log("broadcast", [x1 - x2, x1**x2])
        sum_x = torch.sum(x, dim=0)
        values, indices = torch.max(x, dim=0)
        print(sum_x, values, indices)
        print(torch.min(x, dim=0))
        print(torch.abs(x), torch.argmax(x, dim=0), torch.argmin(x, dim=0), torch.mean(x.float(), dim=0))
        print(torch.eq(x, y))
        print(torch.sort(y, dim=0, descending=False))
        print(torch.clamp(x, min=0))
        x = torch.tensor([1, 0, 1, 1, 1], dtype=torch.bool)
        print(torch.any(x), torch.all(x))

        x = torch.tensor(np.random.RandomState(23).rand(10, 25).astype(np.float32))
        print(x[0].shape, x[:, 0].shape, x[2, 0:10].shape)
        x[0, 0] = 100
        log("assigned", x[0, :3])
        x = torch.arange(10)
        indices = [2, 5, 8]
        print(x[indices])
        x = torch.arange(15.).reshape(3, 5)
        rows = torch.tensor([1, 0])
        cols = torch.tensor([4, 0])
        print(x[rows, cols])
        x = torch.arange(10)
        print(x[(x < 2) | (x > 8)])
        print(x[x.remainder(2) == 0])
        print(torch.where(x > 5, x, x * 2))
        x = torch.tensor([0, 0, 1, 2, 2, 3, 4]).unique()
        print(x, x.ndimension())
        x = torch.arange(10)
        print(x.numel())

        x = torch.arange(9)
        x_3x3 = x.view(3, 3)
        x_3x3 = x.reshape(3, 3)
        y = x_3x3.t()
        print(y.is_contiguous())
        print(y.contiguous().view(9))
        x1, x2 = torch.arange(10.).view(2, 5), torch.arange(10., 20.).view(2, 5)
        print(torch.cat((x1, x2), dim=0).shape)
        print(torch.cat((x1, x2), dim=1).shape)
        z = x1.view(-1)
        batch = 64
        x = torch.zeros((batch, 2, 5))
        z = x.view(batch, -1)
        z = x.permute(0, 2, 1)
        print(z.shape)
        z = torch.chunk(x, chunks=2, dim=1)
        print(z[0].shape)
        print(z[1].shape)
        x = torch.arange(10)
        print(x.unsqueeze(0).shape)
        print(x.unsqueeze(1).shape)
        x = torch.arange(10).unsqueeze(0).unsqueeze(1)
        z = x.squeeze(1)
        print(z.shape)
    run_both(program)


# aladdinpersson/Machine-Learning-Collection ML/Pytorch/Basics/pytorch_rnn_gru_lstm.py (the
# RNN_LSTM it trains: an LSTM of num_layers=2 with batch_first=True from zero states moved with
# .to(device), every time step's output flattened into the Linear, Adam, check_accuracy under no_grad with
# ``num_correct += (predictions == y).sum()`` and float(num_correct) in an f-string); MNIST rows
# as 6x6 images, hidden_size 256 -> 4
def test_aladdinpersson_rnn_gru_lstm():
    def program(torch, log):
        nn, optim = torch.nn, torch.optim
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        input_size, hidden_size, num_layers, num_classes, sequence_length = 6, 4, 2, 10, 6

        class RNN_LSTM(nn.Module):
            def __init__(self, input_size, hidden_size, num_layers, num_classes):
                super(RNN_LSTM, self).__init__()
                self.hidden_size = hidden_size
                self.num_layers = num_layers
                self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
                self.fc = nn.Linear(hidden_size * sequence_length, num_classes)

            def forward(self, x):
                h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)
                c0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)
                out, _ = self.lstm(x, (h0, c0))
                out = out.reshape(out.shape[0], -1)
                out = self.fc(out)
                return out

        rs = np.random.RandomState(24)
        train_loader = [(torch.tensor(rs.rand(4, 1, 6, 6).astype(np.float32)), torch.tensor(rs.randint(0, 10, 4)))]

        def check_accuracy(loader, model):
            num_correct = 0
            num_samples = 0
            model.eval()
            with torch.no_grad():
                for x, y in loader:
                    x = x.to(device=device).squeeze(1)
                    y = y.to(device=device)
                    scores = model(x)
                    _, predictions = scores.max(1)
                    num_correct += (predictions == y).sum()
                    num_samples += predictions.size(0)
                print(f"Got {num_correct} / {num_samples} with accuracy {float(num_correct)/float(num_samples)*100:.2f}")
            model.train()

        for seed, cls in enumerate((RNN_LSTM,)):
            model = init_params(torch, cls(input_size, hidden_size, num_layers, num_classes).to(device), 25 + seed)
            criterion = nn.CrossEntropyLoss()
            optimizer = optim.Adam(model.parameters(), lr=0.005)
            for batch_idx, (data, targets) in enumerate(train_loader):
                data = data.to(device=device).squeeze(1)
                targets = targets.to(device=device)
                scores = model(data)
                loss = criterion(scores, targets)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                log(cls.__name__ + " loss", loss)
            log(cls.__name__ + " fc grad", model.fc.weight.grad)
            check_accuracy(train_loader, model)
    run_both(program)
