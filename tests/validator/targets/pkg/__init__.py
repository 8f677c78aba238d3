"""A package target: model.py imports its helpers relatively."""
