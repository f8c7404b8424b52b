"""Sources of the round-62 public programs (tests/api/test_public_programs_round62.py and
tests/compile/test_public_patterns_round62.py), executed with ``torch`` bound to torch or
tracegrad by ``program(T, SRC)``. Kept as in their repositories apart from the ``import`` lines
(the names are given as globals) and the changes noted in place; see the test files for the
repositories, paths, commits and licenses (MIT, and two without a license file)."""
import argparse
import json
import os
import time

import public_programs_round61_src as _r61


def program(T, src, **extra):
    """Execute a program source with round 61's globals (``torch``, ``nn``, ``F``, ``optim``,
    ``Variable``, ``np``, ``math``, ...) plus the names these programs import (``argparse``,
    ``os``, ``json``, ``time``, ``DataLoader``)."""
    names = {"argparse": argparse, "os": os, "json": json, "time": time,
             "DataLoader": T.utils.data.DataLoader}
    return _r61.program(T, src, **{**names, **extra})


# timomernick/pytorch-capsule (no license file) capsule_conv_layer.py, capsule_layer.py and
# capsule_network.py at d2e9aa8, in that order, ``.cuda()`` dropped from the three
# ``Variable(torch.zeros(...)).cuda()``; ``vutils`` (torchvision.utils) is a global
CAPSNET = r'''
#
# Dynamic Routing Between Capsules
# https://arxiv.org/pdf/1710.09829.pdf
#



class CapsuleConvLayer(nn.Module):
    def __init__(self, in_channels, out_channels):
        super(CapsuleConvLayer, self).__init__()

        self.conv0 = nn.Conv2d(in_channels=in_channels,
                               out_channels=out_channels,
                               kernel_size=9, # fixme constant
                               stride=1,
                               bias=True)

        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.conv0(x))


#
# Dynamic Routing Between Capsules
# https://arxiv.org/pdf/1710.09829.pdf
#



class ConvUnit(nn.Module):
    def __init__(self, in_channels):
        super(ConvUnit, self).__init__()

        self.conv0 = nn.Conv2d(in_channels=in_channels,
                               out_channels=32,  # fixme constant
                               kernel_size=9,  # fixme constant
                               stride=2, # fixme constant
                               bias=True)

    def forward(self, x):
        return self.conv0(x)

class CapsuleLayer(nn.Module):
    def __init__(self, in_units, in_channels, num_units, unit_size, use_routing):
        super(CapsuleLayer, self).__init__()

        self.in_units = in_units
        self.in_channels = in_channels
        self.num_units = num_units
        self.use_routing = use_routing

        if self.use_routing:
            # In the paper, the deeper capsule layer(s) with capsule inputs (DigitCaps) use a special routing algorithm
            # that uses this weight matrix.
            self.W = nn.Parameter(torch.randn(1, in_channels, num_units, unit_size, in_units))
        else:
            # The first convolutional capsule layer (PrimaryCapsules in the paper) does not perform routing.
            # Instead, it is composed of several convolutional units, each of which sees the full input.
            # It is implemented as a normal convolutional layer with a special nonlinearity (squash()).
            def create_conv_unit(unit_idx):
                unit = ConvUnit(in_channels=in_channels)
                self.add_module("unit_" + str(unit_idx), unit)
                return unit
            self.units = [create_conv_unit(i) for i in range(self.num_units)]

    @staticmethod
    def squash(s):
        # This is equation 1 from the paper.
        mag_sq = torch.sum(s**2, dim=2, keepdim=True)
        mag = torch.sqrt(mag_sq)
        s = (mag_sq / (1.0 + mag_sq)) * (s / mag)
        return s

    def forward(self, x):
        if self.use_routing:
            return self.routing(x)
        else:
            return self.no_routing(x)

    def no_routing(self, x):
        # Get output for each unit.
        # Each will be (batch, channels, height, width).
        u = [self.units[i](x) for i in range(self.num_units)]

        # Stack all unit outputs (batch, unit, channels, height, width).
        u = torch.stack(u, dim=1)

        # Flatten to (batch, unit, output).
        u = u.view(x.size(0), self.num_units, -1)

        # Return squashed outputs.
        return CapsuleLayer.squash(u)

    def routing(self, x):
        batch_size = x.size(0)

        # (batch, in_units, features) -> (batch, features, in_units)
        x = x.transpose(1, 2)

        # (batch, features, in_units) -> (batch, features, num_units, in_units, 1)
        x = torch.stack([x] * self.num_units, dim=2).unsqueeze(4)

        # (batch, features, in_units, unit_size, num_units)
        W = torch.cat([self.W] * batch_size, dim=0)

        # Transform inputs by weight matrix.
        # (batch_size, features, num_units, unit_size, 1)
        u_hat = torch.matmul(W, x)

        # Initialize routing logits to zero.
        b_ij = Variable(torch.zeros(1, self.in_channels, self.num_units, 1))

        # Iterative routing.
        num_iterations = 3
        for iteration in range(num_iterations):
            # Convert routing logits to softmax.
            # (batch, features, num_units, 1, 1)
            c_ij = F.softmax(b_ij)
            c_ij = torch.cat([c_ij] * batch_size, dim=0).unsqueeze(4)

            # Apply routing (c_ij) to weighted inputs (u_hat).
            # (batch_size, 1, num_units, unit_size, 1)
            s_j = (c_ij * u_hat).sum(dim=1, keepdim=True)

            # (batch_size, 1, num_units, unit_size, 1)
            v_j = CapsuleLayer.squash(s_j)

            # (batch_size, features, num_units, unit_size, 1)
            v_j1 = torch.cat([v_j] * self.in_channels, dim=1)

            # (1, features, num_units, 1)
            u_vj1 = torch.matmul(u_hat.transpose(3, 4), v_j1).squeeze(4).mean(dim=0, keepdim=True)

            # Update b_ij (routing)
            b_ij = b_ij + u_vj1

        return v_j.squeeze(1)


#
# Dynamic Routing Between Capsules
# https://arxiv.org/pdf/1710.09829.pdf
#




class CapsuleNetwork(nn.Module):
    def __init__(self,
                 image_width,
                 image_height,
                 image_channels,
                 conv_inputs,
                 conv_outputs,
                 num_primary_units,
                 primary_unit_size,
                 num_output_units,
                 output_unit_size):
        super(CapsuleNetwork, self).__init__()

        self.reconstructed_image_count = 0

        self.image_channels = image_channels
        self.image_width = image_width
        self.image_height = image_height

        self.conv1 = CapsuleConvLayer(in_channels=conv_inputs,
                                      out_channels=conv_outputs)

        self.primary = CapsuleLayer(in_units=0,
                                    in_channels=conv_outputs,
                                    num_units=num_primary_units,
                                    unit_size=primary_unit_size,
                                    use_routing=False)

        self.digits = CapsuleLayer(in_units=num_primary_units,
                                   in_channels=primary_unit_size,
                                   num_units=num_output_units,
                                   unit_size=output_unit_size,
                                   use_routing=True)

        reconstruction_size = image_width * image_height * image_channels
        self.reconstruct0 = nn.Linear(num_output_units*output_unit_size, int((reconstruction_size * 2) / 3))
        self.reconstruct1 = nn.Linear(int((reconstruction_size * 2) / 3), int((reconstruction_size * 3) / 2))
        self.reconstruct2 = nn.Linear(int((reconstruction_size * 3) / 2), reconstruction_size)

        self.relu = nn.ReLU(inplace=True)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        return self.digits(self.primary(self.conv1(x)))

    def loss(self, images, input, target, size_average=True):
        return self.margin_loss(input, target, size_average) + self.reconstruction_loss(images, input, size_average)

    def margin_loss(self, input, target, size_average=True):
        batch_size = input.size(0)

        # ||vc|| from the paper.
        v_mag = torch.sqrt((input**2).sum(dim=2, keepdim=True))

        # Calculate left and right max() terms from equation 4 in the paper.
        zero = Variable(torch.zeros(1))
        m_plus = 0.9
        m_minus = 0.1
        max_l = torch.max(m_plus - v_mag, zero).view(batch_size, -1)**2
        max_r = torch.max(v_mag - m_minus, zero).view(batch_size, -1)**2

        # This is equation 4 from the paper.
        loss_lambda = 0.5
        T_c = target
        L_c = T_c * max_l + loss_lambda * (1.0 - T_c) * max_r
        L_c = L_c.sum(dim=1)

        if size_average:
            L_c = L_c.mean()

        return L_c

    def reconstruction_loss(self, images, input, size_average=True):
        # Get the lengths of capsule outputs.
        v_mag = torch.sqrt((input**2).sum(dim=2))

        # Get index of longest capsule output.
        _, v_max_index = v_mag.max(dim=1)
        v_max_index = v_max_index.data

        # Use just the winning capsule's representation (and zeros for other capsules) to reconstruct input image.
        batch_size = input.size(0)
        all_masked = [None] * batch_size
        for batch_idx in range(batch_size):
            # Get one sample from the batch.
            input_batch = input[batch_idx]

            # Copy only the maximum capsule index from this batch sample.
            # This masks out (leaves as zero) the other capsules in this sample.
            batch_masked = Variable(torch.zeros(input_batch.size()))
            batch_masked[v_max_index[batch_idx]] = input_batch[v_max_index[batch_idx]]
            all_masked[batch_idx] = batch_masked

        # Stack masked capsules over the batch dimension.
        masked = torch.stack(all_masked, dim=0)

        # Reconstruct input image.
        masked = masked.view(input.size(0), -1)
        output = self.relu(self.reconstruct0(masked))
        output = self.relu(self.reconstruct1(output))
        output = self.sigmoid(self.reconstruct2(output))
        output = output.view(-1, self.image_channels, self.image_height, self.image_width)

        # Save reconstructed images occasionally.
        if self.reconstructed_image_count % 10 == 0:
            if output.size(1) == 2:
                # handle two-channel images
                zeros = torch.zeros(output.size(0), 1, output.size(2), output.size(3))
                output_image = torch.cat([zeros, output.data.cpu()], dim=1)
            else:
                # assume RGB or grayscale
                output_image = output.data.cpu()
            vutils.save_image(output_image, "reconstruction.png")
        self.reconstructed_image_count += 1

        # The reconstruction loss is the sum squared difference between the input image and reconstructed image.
        # Multiplied by a small number so it doesn't dominate the margin (class) loss.
        error = (output - images).view(output.size(0), -1)
        error = error**2
        error = torch.sum(error, dim=1) * 0.0005

        # Average over batch
        if size_average:
            error = error.mean()

        return error
'''

# timomernick/pytorch-capsule main.py at d2e9aa8 from its "Create capsule network" section on (the
# settings and the torchvision MNIST loaders before it are globals), ``.cuda()`` dropped from
# ``CapsuleNetwork(...).cuda()`` and the four ``Variable(...).cuda()``
CAPSNET_MAIN = r'''
#
# Create capsule network.
#

conv_inputs = 1
conv_outputs = 256
num_primary_units = 8
primary_unit_size = 32 * 6 * 6  # fixme get from conv2d
output_unit_size = 16

network = CapsuleNetwork(image_width=28,
                         image_height=28,
                         image_channels=1,
                         conv_inputs=conv_inputs,
                         conv_outputs=conv_outputs,
                         num_primary_units=num_primary_units,
                         primary_unit_size=primary_unit_size,
                         num_output_units=10, # one for each MNIST digit
                         output_unit_size=output_unit_size)
print(network)


# Converts batches of class indices to classes of one-hot vectors.
def to_one_hot(x, length):
    batch_size = x.size(0)
    x_one_hot = torch.zeros(batch_size, length)
    for i in range(batch_size):
        x_one_hot[i, x[i]] = 1.0
    return x_one_hot

# This is the test function from the basic Pytorch MNIST example, but adapted to use the capsule network.
# https://github.com/pytorch/examples/blob/master/mnist/main.py
def test():
    network.eval()
    test_loss = 0
    correct = 0
    for data, target in test_loader:
        target_indices = target
        target_one_hot = to_one_hot(target_indices, length=network.digits.num_units)

        data, target = Variable(data, volatile=True), Variable(target_one_hot)

        output = network(data)

        test_loss += network.loss(data, output, target, size_average=False).data[0] # sum up batch loss

        v_mag = torch.sqrt((output**2).sum(dim=2, keepdim=True))

        pred = v_mag.data.max(1, keepdim=True)[1].cpu()

        correct += pred.eq(target_indices.view_as(pred)).sum()

    test_loss /= len(test_loader.dataset)
    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss,
        correct,
        len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))


# This is the train function from the basic Pytorch MNIST example, but adapted to use the capsule network.
# https://github.com/pytorch/examples/blob/master/mnist/main.py
def train(epoch):
    optimizer = optim.Adam(network.parameters(), lr=learning_rate)

    last_loss = None
    log_interval = 1
    network.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        target_one_hot = to_one_hot(target, length=network.digits.num_units)

        data, target = Variable(data), Variable(target_one_hot)

        optimizer.zero_grad()

        output = network(data)

        loss = network.loss(data, output, target)
        loss.backward()
        last_loss = loss.data[0]

        optimizer.step()

        if batch_idx % log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch,
                batch_idx * len(data),
                len(train_loader.dataset),
                100. * batch_idx / len(train_loader),
                loss.data[0]))

        if last_loss < early_stop_loss:
            break

    return last_loss


num_epochs = 10
for epoch in range(1, num_epochs + 1):
    last_loss = train(epoch)
    test()
    if last_loss < early_stop_loss:
        break
'''

# wonbeomjang/Knowledge-Distilling-PyTorch (MIT) models.py at 4475879 (``resnet``, ``densenet``,
# ``vgg``, ``tqdm`` and ``AverageMeter`` are globals)
KD_MODELS = r'''
def conv_block(in_channels, out_channels, batch_norm=True):
    block = nn.Sequential(nn.Conv2d(in_channels, out_channels, 3, 1, 1),
                          nn.ReLU(),
                          nn.BatchNorm2d(out_channels))
    return block


class SimpleModel(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.features = nn.Sequential(conv_block(3, 32),
                                      nn.MaxPool2d(2),
                                      conv_block(32, 64),
                                      conv_block(64, 64),
                                      nn.MaxPool2d(2),
                                      conv_block(64, 128),
                                      conv_block(128, 128),
                                      nn.AdaptiveAvgPool2d(7))
        self.classifier = nn.Sequential(nn.Linear(7 * 7 * 128, 1024),
                                        nn.Dropout(),
                                        nn.Linear(1024, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


class Model(nn.Module):
    def __init__(self, num_classes, param, epoch=0):
        super(Model, self).__init__()
        if param.model_name == "resnet18":
            self.net = resnet.resnet18(pretrained=True)
        elif param.model_name == "resnet34":
            self.net = resnet.resnet34(pretrained=True)
        elif param.model_name == "resnet50":
            self.net = resnet.resnet50(pretrained=True)
        elif param.model_name == "resnet101":
            self.net = resnet.resnet101(pretrained=True)
        elif param.model_name == "resnet152":
            self.net = resnet.resnet152(pretrained=True)
        elif param.model_name == "densenet121":
            self.net = densenet.densenet121(pretrained=True)
        elif param.model_name == "vgg11":
            self.net = vgg.vgg11_bn(pretrained=True)
        elif param.model_name == "vggb13":
            self.net = vgg.vgg13_bn(pretrained=True)
        elif param.model_name == "vggb13":
            self.net = vgg.vgg19_bn(pretrained=True)
        else:
            self.net = SimpleModel(num_classes)

        if 'resnet' in param.model_name:
            in_feature = self.net.fc.in_features
            self.net.fc = nn.Linear(in_feature, num_classes)
        if 'densenet' in param.model_name:
            in_feature = self.net.classifier.in_features
            self.net.classifier = nn.Linear(in_feature, num_classes)
        if 'vgg11' in param.model_name:
            self.net.classifier = nn.Sequential(
                nn.Linear(512 * 7 * 7, 4096),
                nn.ReLU(True),
                nn.Dropout(),
                nn.Linear(4096, 4096),
                nn.ReLU(True),
                nn.Dropout(),
                nn.Linear(4096, num_classes),
            )

        self.device = 'cuda:0' if torch.cuda.is_available() else 'cpu'
        self.param = param
        self.epoch = epoch
        self.to(self.device)

    def forward(self, x):
        return self.net(x)

    def train_model(self, data_loader, criterion, optimizer, teacher_preds, param):
        self.train()
        loss_avg = AverageMeter()
        acc_avg = AverageMeter()
        loss_avg.reset()
        acc_avg.reset()

        for step, (images, targets) in enumerate(tqdm(data_loader, desc=f'Train Epoch {self.epoch}')):
            images: torch.Tensor = images.to(self.device)
            targets: torch.Tensor = targets.to(self.device)

            preds: torch.Tensor = self.forward(images)
            loss: torch.Tensor = criterion(preds, targets, torch.from_numpy(teacher_preds[step]).type_as(preds), param)

            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

            preds = preds.argmax(dim=1)
            loss_avg.update(loss.mean().item())
            acc_avg.update((preds == targets).sum().item() / images.shape[0])
        self.epoch += 1

        return loss_avg.avg, acc_avg.avg

    def validate_model(self, data_loader, criterion, teacher_preds, param):
        with torch.no_grad():
            self.eval()
            loss_avg = AverageMeter()
            acc_avg = AverageMeter()
            loss_avg.reset()
            acc_avg.reset()

            for step, (images, targets) in enumerate(tqdm(data_loader, desc=f'Validation Epoch {self.epoch}')):
                images: torch.Tensor = images.to(self.device)
                targets: torch.Tensor = targets.to(self.device)

                preds: torch.Tensor = self.forward(images)
                loss: torch.Tensor = criterion(preds, targets, torch.from_numpy(teacher_preds[step]).to(self.device),
                                               param)

                preds = preds.argmax(dim=1)
                loss_avg.update(loss.mean().item())
                acc_avg.update((preds == targets).sum().item() / images.shape[0])

            return loss_avg.avg, acc_avg.avg

    def predict_image(self, image: torch.Tensor):
        device = 'cuda:0' if torch.cuda.is_available() else 'cpu'
        self.eval()
        self.to(device)

        pred: torch.Tensor = self.forward(image)
        pred = pred.argmax(dim=1)

        return pred

    def fetch_output(self, data_loader):
        self.eval()
        results = []

        for images, targets in tqdm(data_loader, desc=f'Fetch answer'):
            images = images.to(self.device)
            results += [self.forward(images).detach().cpu().numpy()]

        return results

    def load_params(self, path):
        if not os.path.exists(path):
            print(f"[*] There is no params in {path}")
            return
        self.load_state_dict(torch.load(path, map_location=self.device))
'''

# wonbeomjang/Knowledge-Distilling-PyTorch loss.py at 4475879
KD_LOSS = r'''
def loss_kd(preds, labels, teacher_preds, params):
    T = params.temperature
    alpha = params.alpha
    loss = F.kl_div(F.log_softmax(preds / T, dim=1), F.softmax(teacher_preds / T, dim=1),
                    reduction='batchmean') * T * T * alpha + F.cross_entropy(preds, labels) * (1. - alpha)
    return loss
'''

# wonbeomjang/Knowledge-Distilling-PyTorch utils.py at 4475879
KD_UTILS = r'''
class AverageMeter:
    """Computes and stores the average and current value"""
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



class Params:
    """Class that loads hyperparameters from a json file.
    Example:
    ```
    params = Params(json_path)
    print(params.learning_rate)
    params.learning_rate = 0.5  # change the value of learning_rate in params
    ```
    """

    def __init__(self, json_path):
        with open(json_path) as f:
            params = json.load(f)
            self.__dict__.update(params)

    def save(self, json_path):
        with open(json_path, 'w') as f:
            json.dump(self.__dict__, f, indent=4)

    def update(self, json_path):
        """Loads parameters from json file"""
        with open(json_path) as f:
            params = json.load(f)
            self.__dict__.update(params)

    @property
    def dict(self):
        """Gives dict-like access to Params instance by `params.dict['learning_rate']"""
        return self.__dict__
'''

# wonbeomjang/Knowledge-Distilling-PyTorch train.py at 4475879 (``SummaryWriter``, ``tqdm``,
# ``Model``, ``loss_kd``, ``get_loader`` and ``Params`` are globals)
KD_TRAIN = r'''
torch.manual_seed(0)

parser = argparse.ArgumentParser()
parser.add_argument('--image_size', type=int, default=224, help='the height / width of the input image to network')
parser.add_argument('--params_dir', type=str, default="params", help='the directory of hyper parameters')
parser.add_argument('-m', '--model_name', type=str, default='base', help='the name of backbone network')
parser.add_argument('-t', '--teacher_name', type=str, default=None, help='the name of backbone network')
parser.add_argument('--log_path', type=str, default='logs', help="directory to save train log")
parser.add_argument('--epoch', type=int, default=0, help='value of current epoch')
parser.add_argument('--num_epoch', type=int, default=90, help='the number of epoch in train')
parser.add_argument('--decay_epoch', type=int, default=30, help='the number of decay epoch in train')
parser.add_argument('--checkpoint_dir', type=str, default='checkpoints', help="path to saved models (to continue training)")
parser.add_argument('--num_classes', type=int, default=100, help='the number of classes')
parser.add_argument('--dataset', type=str, default='cifar100', help='the name of dataset')
parser.add_argument('--is_distill', type=bool, default=True)
args = parser.parse_args()

if __name__ == '__main__':
    student_params = Params(os.path.join(args.params_dir, f'{args.model_name}.json'))
    if args.teacher_name is None:
        teacher_params = Params(os.path.join(args.params_dir, f'{student_params.teacher_name}.json'))
    else:
        teacher_params = Params(os.path.join(args.params_dir, f'{args.teacher_name}.json'))

    student = Model(args.num_classes, student_params, args.epoch)
    student.load_params(os.path.join(args.checkpoint_dir, args.dataset, student_params.model_name, f'{args.epoch-1}.pth'))

    teacher = Model(args.num_classes, teacher_params)
    teacher.load_params(os.path.join(args.checkpoint_dir, args.dataset, teacher_params.model_name, f'final.pth'))

    summary_title = f'{student_params.teacher_name}_teaches_{student_params.model_name} '

    if not os.path.exists(os.path.join(args.checkpoint_dir, args.dataset, student_params.model_name)):
        os.makedirs(os.path.join(args.checkpoint_dir, args.dataset, student_params.model_name))
    if not os.path.exists(args.log_path):
        os.makedirs(args.log_path)
    writer = SummaryWriter(args.log_path)

    criterion = loss_kd
    optimizer = torch.optim.Adam(student.parameters(), student_params.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, args.decay_epoch)
    train_loader, validation_loader = get_loader(args.image_size, student_params.batch_size, args.dataset)
    scheduler.step(args.epoch)

    teacher_train_ans = teacher.fetch_output(train_loader)
    teacher_val_ans = teacher.fetch_output(validation_loader)

    for iter in range(args.epoch, args.num_epoch):
        train_loss, train_acc = student.train_model(train_loader, criterion, optimizer, teacher_train_ans, student_params)
        validation_loss, validation_acc = student.validate_model(validation_loader, criterion, teacher_val_ans, student_params)
        writer.add_scalars(f'{summary_title}/Loss', {'train': train_loss, 'val': validation_loss}, iter)
        writer.add_scalars(f'{summary_title}/Accuracy', {'train': train_acc, 'val': validation_acc}, iter)
        torch.save(student.state_dict(), os.path.join(args.checkpoint_dir, args.dataset, student_params.model_name, f'{iter}.pth'))
        scheduler.step()
'''

# leftthomas/SimCLR (no license file) model.py at 45357c5 (``resnet50`` is a global)
SIMCLR_MODEL = r'''
class Model(nn.Module):
    def __init__(self, feature_dim=128):
        super(Model, self).__init__()

        self.f = []
        for name, module in resnet50().named_children():
            if name == 'conv1':
                module = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
            if not isinstance(module, nn.Linear) and not isinstance(module, nn.MaxPool2d):
                self.f.append(module)
        # encoder
        self.f = nn.Sequential(*self.f)
        # projection head
        self.g = nn.Sequential(nn.Linear(2048, 512, bias=False), nn.BatchNorm1d(512),
                               nn.ReLU(inplace=True), nn.Linear(512, feature_dim, bias=True))

    def forward(self, x):
        x = self.f(x)
        feature = torch.flatten(x, start_dim=1)
        out = self.g(feature)
        return F.normalize(feature, dim=-1), F.normalize(out, dim=-1)
'''

# leftthomas/SimCLR main.py at 1e4dc8e, ``.cuda(non_blocking=True)`` dropped from the
# five data moves (``tqdm``, ``utils``, ``Model``, ``pd``, ``profile``, ``clever_format`` are globals; the
# ``__main__`` block does not run)
SIMCLR_MAIN = r'''
# train for one epoch to learn unique features
def train(net, data_loader, train_optimizer):
    net.train()
    total_loss, total_num, train_bar = 0.0, 0, tqdm(data_loader)
    for pos_1, pos_2, target in train_bar:
        pos_1, pos_2 = pos_1, pos_2
        feature_1, out_1 = net(pos_1)
        feature_2, out_2 = net(pos_2)
        # [2*B, D]
        out = torch.cat([out_1, out_2], dim=0)
        # [2*B, 2*B]
        sim_matrix = torch.exp(torch.mm(out, out.t().contiguous()) / temperature)
        mask = (torch.ones_like(sim_matrix) - torch.eye(2 * batch_size, device=sim_matrix.device)).bool()
        # [2*B, 2*B-1]
        sim_matrix = sim_matrix.masked_select(mask).view(2 * batch_size, -1)

        # compute loss
        pos_sim = torch.exp(torch.sum(out_1 * out_2, dim=-1) / temperature)
        # [2*B]
        pos_sim = torch.cat([pos_sim, pos_sim], dim=0)
        loss = (- torch.log(pos_sim / sim_matrix.sum(dim=-1))).mean()
        train_optimizer.zero_grad()
        loss.backward()
        train_optimizer.step()

        total_num += batch_size
        total_loss += loss.item() * batch_size
        train_bar.set_description('Train Epoch: [{}/{}] Loss: {:.4f}'.format(epoch, epochs, total_loss / total_num))

    return total_loss / total_num


# test for one epoch, use weighted knn to find the most similar images' label to assign the test image
def test(net, memory_data_loader, test_data_loader):
    net.eval()
    total_top1, total_top5, total_num, feature_bank = 0.0, 0.0, 0, []
    with torch.no_grad():
        # generate feature bank
        for data, _, target in tqdm(memory_data_loader, desc='Feature extracting'):
            feature, out = net(data)
            feature_bank.append(feature)
        # [D, N]
        feature_bank = torch.cat(feature_bank, dim=0).t().contiguous()
        # [N]
        feature_labels = torch.tensor(memory_data_loader.dataset.targets, device=feature_bank.device)
        # loop test data to predict the label by weighted knn search
        test_bar = tqdm(test_data_loader)
        for data, _, target in test_bar:
            data, target = data, target
            feature, out = net(data)

            total_num += data.size(0)
            # compute cos similarity between each feature vector and feature bank ---> [B, N]
            sim_matrix = torch.mm(feature, feature_bank)
            # [B, K]
            sim_weight, sim_indices = sim_matrix.topk(k=k, dim=-1)
            # [B, K]
            sim_labels = torch.gather(feature_labels.expand(data.size(0), -1), dim=-1, index=sim_indices)
            sim_weight = (sim_weight / temperature).exp()

            # counts for each class
            one_hot_label = torch.zeros(data.size(0) * k, c, device=sim_labels.device)
            # [B*K, C]
            one_hot_label = one_hot_label.scatter(dim=-1, index=sim_labels.view(-1, 1), value=1.0)
            # weighted score ---> [B, C]
            pred_scores = torch.sum(one_hot_label.view(data.size(0), -1, c) * sim_weight.unsqueeze(dim=-1), dim=1)

            pred_labels = pred_scores.argsort(dim=-1, descending=True)
            total_top1 += torch.sum((pred_labels[:, :1] == target.unsqueeze(dim=-1)).any(dim=-1).float()).item()
            total_top5 += torch.sum((pred_labels[:, :5] == target.unsqueeze(dim=-1)).any(dim=-1).float()).item()
            test_bar.set_description('Test Epoch: [{}/{}] Acc@1:{:.2f}% Acc@5:{:.2f}%'
                                     .format(epoch, epochs, total_top1 / total_num * 100, total_top5 / total_num * 100))

    return total_top1 / total_num * 100, total_top5 / total_num * 100


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description='Train SimCLR')
    parser.add_argument('--feature_dim', default=128, type=int, help='Feature dim for latent vector')
    parser.add_argument('--temperature', default=0.5, type=float, help='Temperature used in softmax')
    parser.add_argument('--k', default=200, type=int, help='Top k most similar images used to predict the label')
    parser.add_argument('--batch_size', default=512, type=int, help='Number of images in each mini-batch')
    parser.add_argument('--epochs', default=500, type=int, help='Number of sweeps over the dataset to train')

    # args parse
    args = parser.parse_args()
    feature_dim, temperature, k = args.feature_dim, args.temperature, args.k
    batch_size, epochs = args.batch_size, args.epochs

    # data prepare
    train_data = utils.CIFAR10Pair(root='data', train=True, transform=utils.train_transform, download=True)
    train_loader = DataLoader(train_data, batch_size=batch_size, shuffle=True, num_workers=16, pin_memory=True,
                              drop_last=True)
    memory_data = utils.CIFAR10Pair(root='data', train=True, transform=utils.test_transform, download=True)
    memory_loader = DataLoader(memory_data, batch_size=batch_size, shuffle=False, num_workers=16, pin_memory=True)
    test_data = utils.CIFAR10Pair(root='data', train=False, transform=utils.test_transform, download=True)
    test_loader = DataLoader(test_data, batch_size=batch_size, shuffle=False, num_workers=16, pin_memory=True)

    # model setup and optimizer config
    model = Model(feature_dim)
    flops, params = profile(model, inputs=(torch.randn(1, 3, 32, 32),))
    flops, params = clever_format([flops, params])
    print('# Model Params: {} FLOPs: {}'.format(params, flops))
    optimizer = optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-6)
    c = len(memory_data.classes)

    # training loop
    results = {'train_loss': [], 'test_acc@1': [], 'test_acc@5': []}
    save_name_pre = '{}_{}_{}_{}_{}'.format(feature_dim, temperature, k, batch_size, epochs)
    if not os.path.exists('results'):
        os.mkdir('results')
    best_acc = 0.0
    for epoch in range(1, epochs + 1):
        train_loss = train(model, train_loader, optimizer)
        results['train_loss'].append(train_loss)
        test_acc_1, test_acc_5 = test(model, memory_loader, test_loader)
        results['test_acc@1'].append(test_acc_1)
        results['test_acc@5'].append(test_acc_5)
        # save statistics
        data_frame = pd.DataFrame(data=results, index=range(1, epoch + 1))
        data_frame.to_csv('results/{}_statistics.csv'.format(save_name_pre), index_label='epoch')
        if test_acc_1 > best_acc:
            best_acc = test_acc_1
            torch.save(model.state_dict(), 'results/{}_model.pth'.format(save_name_pre))
'''

# FarhanRah/Taxi-Fare-Prediction (no license file) TabularModel.py at 305c955
TAXI_MODEL = r'''
class TabularModel(nn.Module):

    def __init__(self, emb_szs, n_cont, out_sz, layers, p=0.5):
        super().__init__()
        self.embeds = nn.ModuleList([nn.Embedding(ni, nf) for ni, nf in emb_szs])
        self.emb_drop = nn.Dropout(p)
        self.bn_cont = nn.BatchNorm1d(n_cont)

        layer_list = []
        n_emb = sum((nf for ni, nf in emb_szs))
        n_in = n_emb + n_cont

        for i in layers:
            layer_list.append(nn.Linear(n_in, i))
            layer_list.append(nn.ReLU(inplace=True))
            layer_list.append(nn.BatchNorm1d(i))
            layer_list.append(nn.Dropout(p))
            n_in = i
        layer_list.append(nn.Linear(layers[-1], out_sz))

        self.layers = nn.Sequential(*layer_list)

    def forward(self, x_cat, x_cont):
        embeddings = []

        for i, e in enumerate(self.embeds):
            embeddings.append(e(x_cat[:, i]))

        x = torch.cat(embeddings, 1)
        x = self.emb_drop(x)

        x_cont = self.bn_cont(x_cont)
        x = torch.cat([x, x_cont], 1)
        x = self.layers(x)

        return x
'''

# FarhanRah/Taxi-Fare-Prediction main.py at 9779165 from "Separate data into categorical or
# continuous columns" on (the pandas reading and feature engineering before it left out: ``df``
# is a global)
TAXI_MAIN = r'''
# Separate data into categorical or continuous columns
cat_cols = ['hour', 'am_or_pm', 'weekday']
cont_cols = ['pickup_latitude', 'pickup_longitude', 'dropoff_latitude', 'dropoff_longitude', 'passenger_count', 'dist_km']
y_col = ['fare_amount']

for cat in cat_cols:
    df[cat] = df[cat].astype('category')

# Merge each of the types of columns and convert them into tensors
hr = df['hour'].cat.codes.values
ampm = df['am_or_pm'].cat.codes.values
wkdy = df['weekday'].cat.codes.values

cats = np.stack([hr, ampm, wkdy], axis=1)
cats = torch.tensor(cats, dtype=torch.int64)

conts = np.stack([df[cont].values for cont in cont_cols], axis=1)
conts = torch.tensor(conts, dtype=torch.float)

y = torch.tensor(df[y_col].values, dtype=torch.float)

# Set up the embedding size
cats_size = [len(df[cat].cat.categories) for cat in cat_cols]
embed_size = [(size, min(50, (size+1)//2)) for size in cats_size]

# Set up the model
model = TabularModel(embed_size, conts.shape[1], 1, [200, 100], p=0.4)

# Set the loss function and the optimizer
criterion = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)

# Split the data in to train and test
batch_size = 60000
test_size = int(batch_size * 0.2)

cat_train = cats[:batch_size-test_size]
cat_test = cats[batch_size-test_size:batch_size]
con_train = conts[:batch_size-test_size]
con_test = conts[batch_size-test_size:batch_size]
y_train = y[:batch_size-test_size]
y_test = y[batch_size-test_size:batch_size]

# Train the data
epochs = 300
losses = []
start_time = time.time()

for i in range(epochs):
    i += 1
    y_pred = model.forward(cat_train, con_train)
    loss = torch.sqrt(criterion(y_pred, y_train))  # Root Mean Square Error (RMSE)
    losses.append(loss)

    if i % 25 == 1:
        print(f'Epoch: {i:3}  Loss: {loss.item():10.8f}')

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print(f'Duration: {(time.time() - start_time):.0f} seconds.')

# Test the data
with torch.no_grad():
    y_val = model(cat_test, con_test)
    loss = torch.sqrt(criterion(y_val, y_test))

print(f'Root Mean Square Error: {loss:.8f}')

# Making sure to save the model only after the training has happened
if len(losses) == epochs:
    torch.save(model.state_dict(), 'TaxiFareRegressionModel.pt')
else:
    print('Model has not been trained. Consider loading a trained model instead.')
'''

# seanie12/real-nvp (no license file) models.py at acf839e
RNVP_MODELS = r'''
class CouplingLayer(nn.Module):
    def __init__(self, dim, hidden_dim, parity):
        super(CouplingLayer, self).__init__()
        self.dim = dim
        self.parity = parity
        self.scale = nn.Sequential(nn.Linear(dim//2, hidden_dim),
                                   nn.LeakyReLU(),
                                   nn.Linear(hidden_dim, dim//2))
        self.translate = nn.Sequential(nn.Linear(dim//2, hidden_dim),
                                   nn.LeakyReLU(),
                                   nn.Linear(hidden_dim, dim//2))

    def forward(self, x):
        x0, x1 = x[:, ::2], x[:, 1::2]
        if self.parity:
            x0, x1 = x1, x0
        z0 = x0
        s = self.scale(x0)
        t = self.translate(x0)
        z1 = torch.exp(s) * x1 + t
        if self.parity:
            z0, z1 = z1, z0
        z = torch.cat([z0, z1], dim=1)
        log_det = torch.sum(s, dim=1)

        return z, log_det

    def backward(self, z):
        z0, z1 = z[:, ::2], z[:, 1::2]
        if self.parity:
            z0, z1 = z1, z0
        x0 = z0
        s = self.scale(z0)
        t = self.translate(z0)
        x1 = (z1 - t) * torch.exp(-s)
        if self.parity:
            x0, x1 = x1, x0
        x = torch.cat([x0, x1], dim=1)
        log_det = torch.sum(-s, dim=1)

        return x, log_det


class NormalizingFlow(nn.Module):
    def __init__(self, flows):
        super(NormalizingFlow, self).__init__()
        self.flows = nn.ModuleList(flows)

    def forward(self, x):
        batch_size = x.size(0)
        log_det = torch.zeros(batch_size).to(x.device)
        zs = [x]
        for flow in self.flows:
            x, ld = flow.forward(x)
            log_det += ld
            zs.append(x)
        return zs, log_det

    def backward(self, z):
        batch_size = z.size(0)
        log_det = torch.zeros(batch_size).to(z.device)
        xs = [z]
        for flow in self.flows[::-1]:
            z, ld = flow.backward(z)
            log_det += ld
            xs.append(z)
        return xs, log_det


class NormalizingFlowModel(nn.Module):
    def __init__(self, prior, flows):
        super(NormalizingFlowModel, self).__init__()
        self.prior = prior
        self.flow = NormalizingFlow(flows)

    def forward(self, x):
        zs, log_det = self.flow.forward(x)
        prior_log_prob = self.prior.log_prob(zs[-1])
        
        return zs, prior_log_prob, log_det

    def backward(self, z):
        xs, log_det = self.flow.backward(z)
        return xs, log_det

    def sample(self, num_samples):
        device = next(self.flow.parameters())
        z = self.prior.sample((num_samples,)).to(device)
        xs, _ = self.flow.backward(z)
        return xs
'''

# seanie12/real-nvp main.py at acf839e (``plt``, ``DatasetMoons``, ``MultivariateNormal``, the model
# classes and ``datasets``/``transforms`` are globals)
RNVP_MAIN = r'''
def main(args):
    device = torch.cuda.current_device()
    if args.cpu:
        device = "cpu"
    prior = MultivariateNormal(torch.zeros(2).to(device),
                               torch.eye(2).to(device))
    d = DatasetMoons()

    flows = [CouplingLayer(args.input_dim, args.hidden_dim, parity=i % 2)
             for i in range(args.num_blocks)]
    model = NormalizingFlowModel(prior, flows)
    optimizer = optim.Adam(model.parameters(), args.lr)
    model = model.to(device)
    model.train()
    
    for epoch in range(0, args.epochs+1):
        x = d.sample(128)
        x = x.to(device)
        zs, prior_logprob, log_det = model(x)
        logprob = prior_logprob + log_det
        loss = -torch.sum(logprob)

        model.zero_grad()
        loss.backward()
        optimizer.step()
        if epoch % 100 == 0:
            print(loss.item())
    model.eval()
    x = d.sample(128)
    x = x.to(device)
    with torch.no_grad():
        zs, prior_logprob, log_det = model(x)
    z = zs[-1]

    x = x.detach().cpu().numpy()
    z = z.detach().cpu().numpy()
    p = model.prior.sample([128, 2]).squeeze(1).cpu()

    plt.figure(figsize=(10, 5))
    plt.subplot(121)
    plt.scatter(p[:, 0], p[:, 1], c='g', s=5)
    plt.scatter(z[:, 0], z[:, 1], c='r', s=5)
    plt.scatter(x[:, 0], x[:, 1], c='b', s=5)
    plt.legend(['prior', 'x->z', 'data'])
    plt.axis('scaled')
    plt.title('x -> z')

    with torch.no_grad():
        zs = model.sample(128*8)
    z = zs[-1]
    z = z.detach().cpu().numpy()
    plt.subplot(122)
    plt.scatter(x[:, 0], x[:, 1], c='b', s=5, alpha=0.5)
    plt.scatter(z[:, 0], z[:, 1], c='r', s=5, alpha=0.5)
    plt.legend(['data', 'z->x'])
    plt.axis('scaled')
    plt.title('z -> x')
    plt.savefig("./figures/fig.png")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--num_blocks", type=int, default=5)
    parser.add_argument("--input_dim", type=int, default=2)
    parser.add_argument("--max_grad_norm", type=float, default=5.0)
    parser.add_argument("--hidden_dim", type=int, default=24)
    args = parser.parse_args()

    main(args)
'''
