"""A helper module used by libuse.py; the fixed arm replaces it (--fixed-module helperlib)."""
import torch


def noisy_gate(x):
    print("gating")
    return torch.sigmoid(x) * x
