import torch


def noisy_gate(x):
    return torch.sigmoid(x) * x
