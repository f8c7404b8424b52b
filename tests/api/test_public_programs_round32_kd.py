"""Round-32 public programs, continued (``test_public_programs_round32.py`` has the round's notes):
pytorch/tutorials ``beginner_source/knowledge_distillation_tutorial.py`` run eagerly with torch and
with tracegrad (``parity.run_both``): a teacher in ``eval()`` under ``no_grad`` and a student
trained on ``-sum(softmax(t/T) * log_softmax(s/T)) / batch * T**2`` plus cross-entropy, and the
hidden-representation variant (``avg_pool1d`` of the teacher's flattened features,
``nn.CosineEmbeddingLoss`` with a ones target), with the tutorial's ``test`` /
``test_multiple_outputs`` accuracy loops. Dropout probabilities are 0 (the two libraries' masks
come from different generators).
"""
import numpy as np
import pytest
from parity import run_both

from tests.api.test_public_programs_round32 import _np_init

torch = pytest.importorskip("torch")


# ---- pytorch/tutorials knowledge_distillation_tutorial.py --------------------------------------
def _kd_classes(torch):
    """The tutorial's DeepNN/LightNN and their Cosine variants at tiny widths (teacher convs 3 ->
    4 -> 4 -> 4 -> 4, student 3 -> 2 -> 2 on 8x8 images, so the teacher's flattened features
    are 16 and the student's 8, as the tutorial's 2048 and 1024; classifier widths 6 and 4;
    ``Dropout(0.1)`` -> ``Dropout(0.0)``)."""
    nn = torch.nn

    class DeepNN(nn.Module):
        def __init__(self, num_classes=10):
            super(DeepNN, self).__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 4, kernel_size=3, padding=1),
                nn.ReLU(),
                nn.Conv2d(4, 4, kernel_size=3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(kernel_size=2, stride=2),
                nn.Conv2d(4, 4, kernel_size=3, padding=1),
                nn.ReLU(),
                nn.Conv2d(4, 4, kernel_size=3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(kernel_size=2, stride=2),
            )
            self.classifier = nn.Sequential(
                nn.Linear(16, 6),
                nn.ReLU(),
                nn.Dropout(0.0),
                nn.Linear(6, num_classes)
            )

        def forward(self, x):
            x = self.features(x)
            x = torch.flatten(x, 1)
            x = self.classifier(x)
            return x

    class LightNN(nn.Module):
        def __init__(self, num_classes=10):
            super(LightNN, self).__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 2, kernel_size=3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(kernel_size=2, stride=2),
                nn.Conv2d(2, 2, kernel_size=3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(kernel_size=2, stride=2),
            )
            self.classifier = nn.Sequential(
                nn.Linear(8, 4),
                nn.ReLU(),
                nn.Dropout(0.0),
                nn.Linear(4, num_classes)
            )

        def forward(self, x):
            x = self.features(x)
            x = torch.flatten(x, 1)
            x = self.classifier(x)
            return x

    class ModifiedDeepNNCosine(DeepNN):
        # the tutorial repeats DeepNN's __init__ verbatim; only forward differs
        def forward(self, x):
            x = self.features(x)
            flattened_conv_output = torch.flatten(x, 1)
            x = self.classifier(flattened_conv_output)
            flattened_conv_output_after_pooling = torch.nn.functional.avg_pool1d(flattened_conv_output, 2)
            return x, flattened_conv_output_after_pooling

    class ModifiedLightNNCosine(LightNN):
        def forward(self, x):
            x = self.features(x)
            flattened_conv_output = torch.flatten(x, 1)
            x = self.classifier(flattened_conv_output)
            return x, flattened_conv_output

    return DeepNN, LightNN, ModifiedDeepNNCosine, ModifiedLightNNCosine


def _kd_loader(torch, seed, n=6, batch_size=3):
    """CIFAR-10 stand-in: ``n`` normalised 3x8x8 images and labels of 4 classes in a
    ``DataLoader`` (unshuffled: the order would come from torch's generator)."""
    rs = np.random.RandomState(seed)
    x = torch.tensor(rs.standard_normal((n, 3, 8, 8)).astype(np.float32))
    y = torch.tensor(rs.randint(0, 4, n))
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=batch_size, shuffle=False)


def _kd_functions(torch, log):
    """The tutorial's train, test, train_knowledge_distillation, train_cosine_loss and
    test_multiple_outputs, unchanged but for a ``log`` of each batch's loss."""
    nn, optim = torch.nn, torch.optim

    def train(model, train_loader, epochs, learning_rate, device):
        criterion = nn.CrossEntropyLoss()
        optimizer = optim.Adam(model.parameters(), lr=learning_rate)
        model.to(device)
        model.train()
        for epoch in range(epochs):
            running_loss = 0.0
            for inputs, labels in train_loader:
                inputs, labels = inputs.to(device), labels.to(device)
                optimizer.zero_grad()
                outputs = model(inputs)
                loss = criterion(outputs, labels)
                loss.backward()
                optimizer.step()
                running_loss += loss.item()
            print(f"Epoch {epoch+1}/{epochs}, Loss: {running_loss / len(train_loader)}")

    def test(model, test_loader, device):
        model.to(device)
        model.eval()
        correct = 0
        total = 0
        with torch.no_grad():
            for inputs, labels in test_loader:
                inputs, labels = inputs.to(device), labels.to(device)
                outputs = model(inputs)
                _, predicted = torch.max(outputs.data, 1)
                total += labels.size(0)
                correct += (predicted == labels).sum().item()
        accuracy = 100 * correct / total
        print(f"Test Accuracy: {accuracy:.2f}%")
        return accuracy

    def train_knowledge_distillation(teacher, student, train_loader, epochs, learning_rate, T,
                                     soft_target_loss_weight, ce_loss_weight, device):
        ce_loss = nn.CrossEntropyLoss()
        optimizer = optim.Adam(student.parameters(), lr=learning_rate)
        teacher.to(device)
        student.to(device)
        teacher.eval()  # Teacher set to evaluation mode
        student.train()  # Student to train mode
        for epoch in range(epochs):
            running_loss = 0.0
            for inputs, labels in train_loader:
                inputs, labels = inputs.to(device), labels.to(device)
                optimizer.zero_grad()
                with torch.no_grad():
                    teacher_logits = teacher(inputs)
                student_logits = student(inputs)
                soft_targets = nn.functional.softmax(teacher_logits / T, dim=-1)
                soft_prob = nn.functional.log_softmax(student_logits / T, dim=-1)
                soft_targets_loss = -torch.sum(soft_targets * soft_prob) / soft_prob.size()[0] * (T**2)
                label_loss = ce_loss(student_logits, labels)
                loss = soft_target_loss_weight * soft_targets_loss + ce_loss_weight * label_loss
                loss.backward()
                optimizer.step()
                running_loss += loss.item()
                log("kd", [teacher_logits.requires_grad, soft_targets_loss, label_loss, loss.grad_fn])
            print(f"Epoch {epoch+1}/{epochs}, Loss: {running_loss / len(train_loader)}")

    def train_cosine_loss(teacher, student, train_loader, epochs, learning_rate, hidden_rep_loss_weight,
                          ce_loss_weight, device):
        ce_loss = nn.CrossEntropyLoss()
        cosine_loss = nn.CosineEmbeddingLoss()
        optimizer = optim.Adam(student.parameters(), lr=learning_rate)
        teacher.to(device)
        student.to(device)
        teacher.eval()  # Teacher set to evaluation mode
        student.train()  # Student to train mode
        for epoch in range(epochs):
            running_loss = 0.0
            for inputs, labels in train_loader:
                inputs, labels = inputs.to(device), labels.to(device)
                optimizer.zero_grad()
                with torch.no_grad():
                    _, teacher_hidden_representation = teacher(inputs)
                student_logits, student_hidden_representation = student(inputs)
                hidden_rep_loss = cosine_loss(student_hidden_representation, teacher_hidden_representation,
                                              target=torch.ones(inputs.size(0)).to(device))
                label_loss = ce_loss(student_logits, labels)
                loss = hidden_rep_loss_weight * hidden_rep_loss + ce_loss_weight * label_loss
                loss.backward()
                optimizer.step()
                running_loss += loss.item()
                log("cosine", [teacher_hidden_representation, hidden_rep_loss, label_loss])
            print(f"Epoch {epoch+1}/{epochs}, Loss: {running_loss / len(train_loader)}")

    def test_multiple_outputs(model, test_loader, device):
        model.to(device)
        model.eval()
        correct = 0
        total = 0
        with torch.no_grad():
            for inputs, labels in test_loader:
                inputs, labels = inputs.to(device), labels.to(device)
                outputs, _ = model(inputs)  # In this line we disregard the second tensor of the tuple
                _, predicted = torch.max(outputs.data, 1)
                total += labels.size(0)
                correct += (predicted == labels).sum().item()
        accuracy = 100 * correct / total
        print(f"Test Accuracy: {accuracy:.2f}%")
        return accuracy

    return train, test, train_knowledge_distillation, train_cosine_loss, test_multiple_outputs


# The tutorial's script: ``torch.manual_seed(42)`` inits become numpy-seeded ones (the same seed
# for the two student copies, as the tutorial's point is that they start equal), the teacher's
# own ``train`` run is left out (its numpy weights stand in for a trained teacher: the student's
# ``train`` runs the same function, and the teacher's backward would only add compiles), 2 epochs of 2
# batches of 3 in place of 10 epochs of CIFAR-10, 4 classes, the teacher's weights loaded into
# the Cosine variant with ``load_state_dict`` as the tutorial does.
def test_pytorch_tutorial_knowledge_distillation():
    def program(torch, log):
        device = torch.device("cpu")
        DeepNN, LightNN, ModifiedDeepNNCosine, ModifiedLightNNCosine = _kd_classes(torch)
        train, test, train_knowledge_distillation, train_cosine_loss, test_multiple_outputs = \
            _kd_functions(torch, log)
        train_loader, test_loader = _kd_loader(torch, 0), _kd_loader(torch, 1)

        nn_deep = _np_init(torch, DeepNN(num_classes=4), 42, scale=0.6)
        test_accuracy_deep = test(nn_deep, test_loader, device)
        nn_light = _np_init(torch, LightNN(num_classes=4), 7)
        new_nn_light = _np_init(torch, LightNN(num_classes=4), 7)
        print("Norm of 1st layer of nn_light:", torch.norm(nn_light.features[0].weight).item())
        print("Norm of 1st layer of new_nn_light:", torch.norm(new_nn_light.features[0].weight).item())
        total_params_deep = "{:,}".format(sum(p.numel() for p in nn_deep.parameters()))
        print(f"DeepNN parameters: {total_params_deep}")
        total_params_light = "{:,}".format(sum(p.numel() for p in nn_light.parameters()))
        print(f"LightNN parameters: {total_params_light}")

        train(nn_light, train_loader, epochs=2, learning_rate=0.01, device=device)
        test_accuracy_light_ce = test(nn_light, test_loader, device)
        print(f"Teacher accuracy: {test_accuracy_deep:.2f}%")
        print(f"Student accuracy: {test_accuracy_light_ce:.2f}%")

        train_knowledge_distillation(teacher=nn_deep, student=new_nn_light, train_loader=train_loader, epochs=2,
                                     learning_rate=0.01, T=2, soft_target_loss_weight=0.25, ce_loss_weight=0.75,
                                     device=device)
        test_accuracy_light_ce_and_kd = test(new_nn_light, test_loader, device)
        print(f"Student accuracy without teacher: {test_accuracy_light_ce:.2f}%")
        print(f"Student accuracy with CE + KD: {test_accuracy_light_ce_and_kd:.2f}%")
        log("kd student", list(new_nn_light.parameters()))
        log("teacher unchanged", [p.grad is None for p in nn_deep.parameters()])

        modified_nn_deep = ModifiedDeepNNCosine(num_classes=4)
        modified_nn_deep.load_state_dict(nn_deep.state_dict())
        print("Norm of 1st layer for deep_nn:", torch.norm(nn_deep.features[0].weight).item())
        print("Norm of 1st layer for modified_deep_nn:", torch.norm(modified_nn_deep.features[0].weight).item())
        modified_light_nn = _np_init(torch, ModifiedLightNNCosine(num_classes=4), 7)
        print("Norm of 1st layer:", torch.norm(modified_light_nn.features[0].weight).item())
        train_cosine_loss(teacher=modified_nn_deep, student=modified_light_nn, train_loader=train_loader, epochs=2,
                          learning_rate=0.01, hidden_rep_loss_weight=0.25, ce_loss_weight=0.75, device=device)
        test_accuracy_light_ce_and_cosine_loss = test_multiple_outputs(modified_light_nn, test_loader, device)
        log("accuracies", [test_accuracy_deep, test_accuracy_light_ce, test_accuracy_light_ce_and_kd,
                           test_accuracy_light_ce_and_cosine_loss])
        log("cosine student", list(modified_light_nn.parameters()))

    run_both(program, rtol=1e-4, atol=1e-5)
