"""Round 38 of public PyTorch programs (see ``test_public_programs_round38.py``): the
"Show, Attend and Tell" tutorial of sgrvinod/a-PyTorch-Tutorial-to-Image-Captioning, files
``models.py``, ``train.py``, ``utils.py`` and ``caption.py`` as stored at 01f749f, run eagerly with
torch and with tracegrad (``parity.run_both``):

- ``Encoder`` (children of a CNN sliced with ``[:-2]``, ``AdaptiveAvgPool2d``, ``fine_tune``
  switching ``requires_grad`` on ``children()[5:]``) and the optimizers built from
  ``filter(lambda p: p.requires_grad, ...)``;
- ``Attention`` and ``DecoderWithAttention``: captions sorted by length (``sort(descending=True)``,
  fancy indexing by ``sort_ind``), an ``nn.LSTMCell`` given ``decoder_layers`` (1) as its third,
  ``bias``, argument, the shrinking batch ``h[:batch_size_t]`` per step, a sigmoid gate, slice
  writes ``predictions[:batch_size_t, t, :] = preds``;
- ``train``/``validate``: ``pack_padded_sequence(..., batch_first=True)`` of scores and targets
  (the stored code unpacks the PackedSequence into two names, which raises ``ValueError`` with
  today's four-field PackedSequence on both sides; the rest uses ``.data``, the repository's later
  form), ``CrossEntropyLoss`` plus the doubly stochastic attention term, ``clip_gradient``
  (``param.grad.data.clamp_``), ``accuracy`` (``topk``/``eq``/``expand_as``), ``AverageMeter``,
  ``adjust_learning_rate``, references and hypotheses from ``tolist()``;
- ``caption_image_beam_search`` on the encoder's output: ``expand`` to the beam, ``topk`` over the
  flattened scores, ``top_k_words / vocab_size`` (a float tensor used as an index raises
  ``IndexError`` on both sides; the repository's later ``//`` runs the search), list-of-tensors
  ``max``/``index``, indexing with Python lists.

Changes, the same on both sides: the pretrained ResNet-101 is a tiny stand-in CNN (its last two
children dropped as in ``Encoder``), sizes are tiny (2 images of 8x8 with 2 captions each, 2x2 encoded, vocabulary of 9),
dropout is 0, parameters are overwritten from numpy, the data are seeded numpy images and captions
in an in-memory ``CaptionDataset``, the loaders do not shuffle, timing fields are not printed, the
image reading/resizing of ``caption.py`` and nltk's ``corpus_bleu`` are left out (validate returns
minus the loss), the beam search stops after 7 steps, the ``<end>`` score is raised before it so
beams complete, and the learning-rate decay runs after every epoch.
"""
import time

import numpy as np
import pytest
from parity import init_params, log_outcome, run_both

torch = pytest.importorskip("torch")


def _captioning(torch):
    nn = torch.nn
    F = torch.nn.functional
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def resnet101_stand_in():
        # torchvision's pretrained ResNet-101 in the repository: a tiny stack whose last two
        # children (pool, flatten) play avgpool and fc, which Encoder drops
        return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(4, 6, 1), nn.Conv2d(6, 6, 3, padding=1), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten())

    class Encoder(nn.Module):
        def __init__(self, encoded_image_size=14):
            super(Encoder, self).__init__()
            self.enc_image_size = encoded_image_size
            resnet = resnet101_stand_in()  # pretrained ImageNet ResNet-101
            modules = list(resnet.children())[:-2]
            self.resnet = nn.Sequential(*modules)
            self.adaptive_pool = nn.AdaptiveAvgPool2d((encoded_image_size, encoded_image_size))
            self.fine_tune()

        def forward(self, images):
            out = self.resnet(images)  # (batch_size, 2048, image_size/32, image_size/32)
            out = self.adaptive_pool(out)  # (batch_size, 2048, encoded_image_size, encoded_image_size)
            out = out.permute(0, 2, 3, 1)  # (batch_size, encoded_image_size, encoded_image_size, 2048)
            return out

        def fine_tune(self, fine_tune=True):
            for p in self.resnet.parameters():
                p.requires_grad = False
            # If fine-tuning, only fine-tune convolutional blocks 2 through 4
            for c in list(self.resnet.children())[5:]:
                for p in c.parameters():
                    p.requires_grad = fine_tune

    class Attention(nn.Module):
        def __init__(self, encoder_dim, decoder_dim, attention_dim):
            super(Attention, self).__init__()
            self.encoder_att = nn.Linear(encoder_dim, attention_dim)  # linear layer to transform encoded image
            self.decoder_att = nn.Linear(decoder_dim, attention_dim)  # linear layer to transform decoder's output
            self.full_att = nn.Linear(attention_dim, 1)  # linear layer to calculate values to be softmax-ed
            self.relu = nn.ReLU()
            self.softmax = nn.Softmax(dim=1)  # softmax layer to calculate weights

        def forward(self, encoder_out, decoder_hidden):
            att1 = self.encoder_att(encoder_out)  # (batch_size, num_pixels, attention_dim)
            att2 = self.decoder_att(decoder_hidden)  # (batch_size, attention_dim)
            att = self.full_att(self.relu(att1 + att2.unsqueeze(1))).squeeze(2)  # (batch_size, num_pixels)
            alpha = self.softmax(att)  # (batch_size, num_pixels)
            attention_weighted_encoding = (encoder_out * alpha.unsqueeze(2)).sum(dim=1)  # (batch_size, encoder_dim)
            return attention_weighted_encoding, alpha

    class DecoderWithAttention(nn.Module):
        def __init__(self, attention_dim, embed_dim, decoder_dim, vocab_size, decoder_layers=1, encoder_dim=2048,
                     dropout=0.5):
            super(DecoderWithAttention, self).__init__()
            self.encoder_dim = encoder_dim
            self.attention_dim = attention_dim
            self.embed_dim = embed_dim
            self.decoder_dim = decoder_dim
            self.vocab_size = vocab_size
            self.decoder_layers = decoder_layers
            self.dropout = dropout
            self.attention = Attention(encoder_dim, decoder_dim, attention_dim)  # attention network
            self.embedding = nn.Embedding(vocab_size, embed_dim)  # embedding layer
            self.dropout = nn.Dropout(p=self.dropout)
            self.decode_step = nn.LSTMCell(embed_dim + encoder_dim, decoder_dim, decoder_layers)  # decoding LSTMCell
            self.init_h = nn.Linear(encoder_dim, decoder_dim)  # linear layer to find initial hidden state of LSTMCell
            self.init_c = nn.Linear(encoder_dim, decoder_dim)  # linear layer to find initial cell state of LSTMCell
            self.f_beta = nn.Linear(decoder_dim, encoder_dim)  # linear layer to create a sigmoid-activated gate
            self.sigmoid = nn.Sigmoid()
            self.fc = nn.Linear(decoder_dim, vocab_size)  # linear layer to find scores over vocabulary
            self.init_weights()  # initialize some layers with the uniform distribution

        def init_weights(self):
            self.embedding.weight.data.uniform_(-0.1, 0.1)
            self.fc.bias.data.fill_(0)
            self.fc.weight.data.uniform_(-0.1, 0.1)

        def load_pretrained_embeddings(self, embeddings):
            self.embedding.weight = nn.Parameter(embeddings)

        def fine_tune_embeddings(self, fine_tune=True):
            for p in self.embedding.parameters():
                p.requires_grad = fine_tune

        def init_hidden_state(self, encoder_out):
            mean_encoder_out = encoder_out.mean(dim=1)
            h = self.init_h(mean_encoder_out)  # (batch_size, decoder_dim)
            c = self.init_c(mean_encoder_out)
            return h, c

        def forward(self, encoder_out, encoded_captions, caption_lengths):
            batch_size = encoder_out.size(0)
            encoder_dim = encoder_out.size(-1)
            vocab_size = self.vocab_size
            encoder_out = encoder_out.view(batch_size, -1, encoder_dim)  # (batch_size, num_pixels, encoder_dim)
            num_pixels = encoder_out.size(1)
            caption_lengths, sort_ind = caption_lengths.squeeze(1).sort(dim=0, descending=True)
            encoder_out = encoder_out[sort_ind]
            encoded_captions = encoded_captions[sort_ind]
            embeddings = self.embedding(encoded_captions)  # (batch_size, max_caption_length, embed_dim)
            h, c = self.init_hidden_state(encoder_out)  # (batch_size, decoder_dim)
            decode_lengths = (caption_lengths - 1).tolist()
            predictions = torch.zeros(batch_size, max(decode_lengths), vocab_size).to(device)
            alphas = torch.zeros(batch_size, max(decode_lengths), num_pixels).to(device)
            for t in range(max(decode_lengths)):
                batch_size_t = sum([l > t for l in decode_lengths])
                attention_weighted_encoding, alpha = self.attention(encoder_out[:batch_size_t],
                                                                    h[:batch_size_t])
                gate = self.sigmoid(self.f_beta(h[:batch_size_t]))  # gating scalar, (batch_size_t, encoder_dim)
                attention_weighted_encoding = gate * attention_weighted_encoding
                h, c = self.decode_step(
                    torch.cat([embeddings[:batch_size_t, t, :], attention_weighted_encoding], dim=1),
                    (h[:batch_size_t], c[:batch_size_t]))  # (batch_size_t, decoder_dim)
                preds = self.fc(self.dropout(h))  # (batch_size_t, vocab_size)
                predictions[:batch_size_t, t, :] = preds
                alphas[:batch_size_t, t, :] = alpha
            return predictions, encoded_captions, decode_lengths, alphas, sort_ind

    return Encoder, DecoderWithAttention, device


# ---- utils.py ----
def _utils(torch):
    def clip_gradient(optimizer, grad_clip):
        for group in optimizer.param_groups:
            for param in group['params']:
                if param.grad is not None:
                    param.grad.data.clamp_(-grad_clip, grad_clip)

    class AverageMeter(object):
        def __init__(self):
            self.reset()

        def reset(self):
            self.val = 0
            self.avg = 0
            self.sum = 0
            self.count = 0

        def update(self, val, n=1):
            self.val = val
            self.sum += val * n
            self.count += n
            self.avg = self.sum / self.count

    def adjust_learning_rate(optimizer, shrink_factor):
        print("\nDECAYING learning rate.")
        for param_group in optimizer.param_groups:
            param_group['lr'] = param_group['lr'] * shrink_factor
        print("The new learning rate is %f\n" % (optimizer.param_groups[0]['lr'],))

    def accuracy(scores, targets, k):
        batch_size = targets.size(0)
        _, ind = scores.topk(k, 1, True, True)
        correct = ind.eq(targets.view(-1, 1).expand_as(ind))
        correct_total = correct.view(-1).float().sum()  # 0D tensor
        return correct_total.item() * (100.0 / batch_size)

    return clip_gradient, AverageMeter, adjust_learning_rate, accuracy


WORD_MAP = {'a': 1, 'cat': 2, 'dog': 3, 'on': 4, 'mat': 5, '<unk>': 6, '<start>': 7, '<end>': 8, '<pad>': 0}


def _captions(n, cpi, max_len, seed):
    rs = np.random.RandomState(seed)
    imgs = rs.uniform(0, 1, (n, 3, 8, 8)).astype(np.float32)
    caps = np.zeros((n, cpi, max_len + 2), np.int64)
    lens = np.zeros((n, cpi), np.int64)
    for i in range(n):
        for j in range(cpi):
            L = rs.randint(1, max_len + 1)
            words = rs.randint(1, 7, L)
            enc = [7] + list(words) + [8] + [0] * (max_len - L)
            caps[i, j] = enc
            lens[i, j] = L + 2
    return imgs, caps, lens


def test_show_attend_tell_captioning():
    def program(torch, log):
        Encoder, DecoderWithAttention, device = _captioning(torch)
        clip_gradient, AverageMeter, adjust_learning_rate, accuracy = _utils(torch)
        nn = torch.nn
        F = torch.nn.functional
        pack_padded_sequence = torch.nn.utils.rnn.pack_padded_sequence
        word_map = WORD_MAP

        emb_dim, attention_dim, decoder_dim, decoder_layers, dropout = 4, 5, 5, 1, 0.0
        encoder_lr, decoder_lr, grad_clip, alpha_c, print_freq = 1e-4, 4e-4, 5., 1., 1
        fine_tune_encoder = True

        class CaptionDataset(torch.utils.data.Dataset):
            """datasets.py's CaptionDataset over in-memory arrays (images already in [0, 1])."""
            def __init__(self, split, seed):
                self.split = split
                self.cpi = 2
                self.imgs, caps, lens = _captions(2, self.cpi, 4, seed)
                self.captions = caps.reshape(-1, caps.shape[-1]).tolist()
                self.caplens = lens.reshape(-1).tolist()
                self.dataset_size = len(self.captions)

            def __getitem__(self, i):
                img = torch.FloatTensor(self.imgs[i // self.cpi])
                caption = torch.LongTensor(self.captions[i])
                caplen = torch.LongTensor([self.caplens[i]])
                if self.split == 'TRAIN':
                    return img, caption, caplen
                else:
                    all_captions = torch.LongTensor(
                        self.captions[((i // self.cpi) * self.cpi):(((i // self.cpi) * self.cpi) + self.cpi)])
                    return img, caption, caplen, all_captions

            def __len__(self):
                return self.dataset_size

        decoder = DecoderWithAttention(attention_dim=attention_dim, embed_dim=emb_dim, decoder_dim=decoder_dim,
                                       vocab_size=len(word_map), decoder_layers=decoder_layers,
                                       encoder_dim=6, dropout=dropout)
        init_params(torch, decoder, 0, scale=0.4)
        log("LSTMCell bias (decoder_layers=1 as bias)", decoder.decode_step.bias_ih is not None)
        decoder_optimizer = torch.optim.Adam(params=filter(lambda p: p.requires_grad, decoder.parameters()),
                                             lr=decoder_lr)
        encoder = Encoder(encoded_image_size=2)
        init_params(torch, encoder, 1, scale=0.4)
        encoder.fine_tune(fine_tune_encoder)
        log("encoder trainable", [n for n, p in encoder.named_parameters() if p.requires_grad])
        encoder_optimizer = torch.optim.Adam(params=filter(lambda p: p.requires_grad, encoder.parameters()),
                                             lr=encoder_lr) if fine_tune_encoder else None
        decoder = decoder.to(device)
        encoder = encoder.to(device)
        criterion = nn.CrossEntropyLoss().to(device)
        train_loader = torch.utils.data.DataLoader(CaptionDataset('TRAIN', 0), batch_size=4, shuffle=False)
        val_loader = torch.utils.data.DataLoader(CaptionDataset('VAL', 1), batch_size=4, shuffle=False)

        # the stored train.py unpacks the PackedSequence into two names (torch < 0.4's tuple)
        imgs, caps, caplens = next(iter(train_loader))
        scores, caps_sorted, decode_lengths, alphas, sort_ind = decoder(encoder(imgs), caps, caplens)
        log("decode_lengths", decode_lengths)
        log("sort_ind", sort_ind)
        log("predictions", scores)
        log("alphas", alphas)
        log_outcome(log, "scores, _ = pack_padded_sequence(...)",
                    lambda: [t for t in [None] for scores_, _ in [pack_padded_sequence(scores, decode_lengths, batch_first=True)]])
        packed = pack_padded_sequence(scores, decode_lengths, batch_first=True)
        log("packed batch_sizes", packed.batch_sizes)
        log("packed sorted_indices", packed.sorted_indices)

        def train(train_loader, encoder, decoder, criterion, encoder_optimizer, decoder_optimizer, epoch):
            decoder.train()  # train mode (dropout and batchnorm is used)
            encoder.train()
            batch_time = AverageMeter()  # forward prop. + back prop. time
            data_time = AverageMeter()  # data loading time
            losses = AverageMeter()  # loss (per word decoded)
            top5accs = AverageMeter()  # top5 accuracy
            start = time.time()
            for i, (imgs, caps, caplens) in enumerate(train_loader):
                data_time.update(time.time() - start)
                imgs = imgs.to(device)
                caps = caps.to(device)
                caplens = caplens.to(device)
                imgs = encoder(imgs)
                scores, caps_sorted, decode_lengths, alphas, sort_ind = decoder(imgs, caps, caplens)
                targets = caps_sorted[:, 1:]
                scores = pack_padded_sequence(scores, decode_lengths, batch_first=True).data
                targets = pack_padded_sequence(targets, decode_lengths, batch_first=True).data
                loss = criterion(scores, targets)
                loss += alpha_c * ((1. - alphas.sum(dim=1)) ** 2).mean()
                decoder_optimizer.zero_grad()
                if encoder_optimizer is not None:
                    encoder_optimizer.zero_grad()
                loss.backward()
                log("loss", loss)
                log("grad fc", decoder.fc.weight.grad)
                log("grad conv", encoder.resnet[5].weight.grad)
                log("frozen conv grad", encoder.resnet[0].weight.grad)
                if grad_clip is not None:
                    clip_gradient(decoder_optimizer, grad_clip)
                    if encoder_optimizer is not None:
                        clip_gradient(encoder_optimizer, grad_clip)
                decoder_optimizer.step()
                if encoder_optimizer is not None:
                    encoder_optimizer.step()
                top5 = accuracy(scores, targets, 5)
                losses.update(loss.item(), sum(decode_lengths))
                top5accs.update(top5, sum(decode_lengths))
                batch_time.update(time.time() - start)
                start = time.time()
                if i % print_freq == 0:
                    print('Epoch: [{0}][{1}/{2}]\t'
                          'Loss {loss.val:.4f} ({loss.avg:.4f})\t'
                          'Top-5 Accuracy {top5.val:.3f} ({top5.avg:.3f})'.format(epoch, i, len(train_loader),
                                                                                  loss=losses, top5=top5accs))

        def validate(val_loader, encoder, decoder, criterion):
            decoder.eval()  # eval mode (no dropout or batchnorm)
            if encoder is not None:
                encoder.eval()
            losses = AverageMeter()
            top5accs = AverageMeter()
            references = list()  # references (true captions) for calculating BLEU-4 score
            hypotheses = list()  # hypotheses (predictions)
            for i, (imgs, caps, caplens, allcaps) in enumerate(val_loader):
                imgs = imgs.to(device)
                caps = caps.to(device)
                caplens = caplens.to(device)
                if encoder is not None:
                    imgs = encoder(imgs)
                scores, caps_sorted, decode_lengths, alphas, sort_ind = decoder(imgs, caps, caplens)
                targets = caps_sorted[:, 1:]
                scores_copy = scores.clone()
                scores = pack_padded_sequence(scores, decode_lengths, batch_first=True).data
                targets = pack_padded_sequence(targets, decode_lengths, batch_first=True).data
                loss = criterion(scores, targets)
                loss += alpha_c * ((1. - alphas.sum(dim=1)) ** 2).mean()
                losses.update(loss.item(), sum(decode_lengths))
                top5 = accuracy(scores, targets, 5)
                top5accs.update(top5, sum(decode_lengths))
                if i % print_freq == 0:
                    print('Validation: [{0}/{1}]\t'
                          'Loss {loss.val:.4f} ({loss.avg:.4f})\t'
                          'Top-5 Accuracy {top5.val:.3f} ({top5.avg:.3f})\t'.format(i, len(val_loader),
                                                                                    loss=losses, top5=top5accs))
                allcaps = allcaps[sort_ind]  # because images were sorted in the decoder
                for j in range(allcaps.shape[0]):
                    img_caps = allcaps[j].tolist()
                    img_captions = list(
                        map(lambda c: [w for w in c if w not in {word_map['<start>'], word_map['<pad>']}],
                            img_caps))  # remove <start> and pads
                    references.append(img_captions)
                _, preds = torch.max(scores_copy, dim=2)
                preds = preds.tolist()
                temp_preds = list()
                for j, p in enumerate(preds):
                    temp_preds.append(preds[j][:decode_lengths[j]])  # remove pads
                preds = temp_preds
                hypotheses.extend(preds)
                assert len(references) == len(hypotheses)
            log("references", references)
            log("hypotheses", hypotheses)
            print('\n * LOSS - {loss.avg:.3f}, TOP-5 ACCURACY - {top5.avg:.3f}\n'.format(loss=losses, top5=top5accs))
            return -losses.avg    # corpus_bleu (nltk) in the repository

        best_bleu4, epochs_since_improvement = -1e9, 0
        for epoch in range(0, 2):
            if epochs_since_improvement > 0 and epochs_since_improvement % 1 == 0:
                adjust_learning_rate(decoder_optimizer, 0.8)
                if fine_tune_encoder:
                    adjust_learning_rate(encoder_optimizer, 0.8)
            train(train_loader=train_loader, encoder=encoder, decoder=decoder, criterion=criterion,
                  encoder_optimizer=encoder_optimizer, decoder_optimizer=decoder_optimizer, epoch=epoch)
            recent_bleu4 = validate(val_loader=val_loader, encoder=encoder, decoder=decoder, criterion=criterion)
            is_best = recent_bleu4 > best_bleu4
            best_bleu4 = max(recent_bleu4, best_bleu4)
            if not is_best:
                epochs_since_improvement += 1
                print("\nEpochs since last improvement: %d\n" % (epochs_since_improvement,))
            else:
                epochs_since_improvement = 1   # (0 in the repository: 1 here so the decay branch runs)
        log("running_mean", encoder.resnet[1].running_mean)

        # ---- caption.py: caption_image_beam_search, from the encoder's output on ----
        def caption_image_beam_search(encoder, decoder, image, word_map, beam_size=3, floor_div=False):
            k = beam_size
            vocab_size = len(word_map)
            image = image.unsqueeze(0)  # (1, 3, 256, 256)
            encoder_out = encoder(image)  # (1, enc_image_size, enc_image_size, encoder_dim)
            enc_image_size = encoder_out.size(1)
            encoder_dim = encoder_out.size(3)
            encoder_out = encoder_out.view(1, -1, encoder_dim)  # (1, num_pixels, encoder_dim)
            num_pixels = encoder_out.size(1)
            encoder_out = encoder_out.expand(k, num_pixels, encoder_dim)  # (k, num_pixels, encoder_dim)
            k_prev_words = torch.LongTensor([[word_map['<start>']]] * k).to(device)  # (k, 1)
            seqs = k_prev_words  # (k, 1)
            top_k_scores = torch.zeros(k, 1).to(device)  # (k, 1)
            seqs_alpha = torch.ones(k, 1, enc_image_size, enc_image_size).to(device)  # (k, 1, enc_image_size, enc_image_size)
            complete_seqs = list()
            complete_seqs_alpha = list()
            complete_seqs_scores = list()
            step = 1
            h, c = decoder.init_hidden_state(encoder_out)
            while True:
                embeddings = decoder.embedding(k_prev_words).squeeze(1)  # (s, embed_dim)
                awe, alpha = decoder.attention(encoder_out, h)  # (s, encoder_dim), (s, num_pixels)
                alpha = alpha.view(-1, enc_image_size, enc_image_size)  # (s, enc_image_size, enc_image_size)
                gate = decoder.sigmoid(decoder.f_beta(h))  # gating scalar, (s, encoder_dim)
                awe = gate * awe
                h, c = decoder.decode_step(torch.cat([embeddings, awe], dim=1), (h, c))  # (s, decoder_dim)
                scores = decoder.fc(h)  # (s, vocab_size)
                scores = F.log_softmax(scores, dim=1)
                scores = top_k_scores.expand_as(scores) + scores  # (s, vocab_size)
                if step == 1:
                    top_k_scores, top_k_words = scores[0].topk(k, 0, True, True)  # (s)
                else:
                    top_k_scores, top_k_words = scores.view(-1).topk(k, 0, True, True)  # (s)
                if floor_div:    # the repository's later fix
                    prev_word_inds = top_k_words // vocab_size  # (s)
                else:
                    prev_word_inds = top_k_words / vocab_size  # (s)
                next_word_inds = top_k_words % vocab_size  # (s)
                seqs = torch.cat([seqs[prev_word_inds], next_word_inds.unsqueeze(1)], dim=1)  # (s, step+1)
                seqs_alpha = torch.cat([seqs_alpha[prev_word_inds], alpha[prev_word_inds].unsqueeze(1)],
                                       dim=1)  # (s, step+1, enc_image_size, enc_image_size)
                incomplete_inds = [ind for ind, next_word in enumerate(next_word_inds) if
                                   next_word != word_map['<end>']]
                complete_inds = list(set(range(len(next_word_inds))) - set(incomplete_inds))
                if len(complete_inds) > 0:
                    complete_seqs.extend(seqs[complete_inds].tolist())
                    complete_seqs_alpha.extend(seqs_alpha[complete_inds].tolist())
                    complete_seqs_scores.extend(top_k_scores[complete_inds])
                k -= len(complete_inds)  # reduce beam length accordingly
                if k == 0:
                    break
                seqs = seqs[incomplete_inds]
                seqs_alpha = seqs_alpha[incomplete_inds]
                h = h[prev_word_inds[incomplete_inds]]
                c = c[prev_word_inds[incomplete_inds]]
                encoder_out = encoder_out[prev_word_inds[incomplete_inds]]
                top_k_scores = top_k_scores[incomplete_inds].unsqueeze(1)
                k_prev_words = next_word_inds[incomplete_inds].unsqueeze(1)
                if step > 6:     # 50 in the repository
                    break
                step += 1
            log("complete_seqs_scores", complete_seqs_scores)
            i = complete_seqs_scores.index(max(complete_seqs_scores))
            seq = complete_seqs[i]
            alphas = complete_seqs_alpha[i]
            return seq, alphas

        img = torch.FloatTensor(_captions(1, 1, 4, 5)[0][0])
        with torch.no_grad():
            encoder.eval()
            decoder.eval()
            # end word made likely so beams complete within the step limit
            decoder.fc.bias[word_map['<end>']] += 1.5
            log_outcome(log, "beam search (true division)", lambda: caption_image_beam_search(encoder, decoder, img, word_map))
            for beam in (1, 4):
                seq, alphas = caption_image_beam_search(encoder, decoder, img, word_map, beam_size=beam, floor_div=True)
                log("seq", seq)
                log("alphas", torch.FloatTensor(alphas))

    run_both(program)
