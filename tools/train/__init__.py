"""Training small LaCT models on the CPU or a GPU (README.md): data, the training loop (train.py), export,
evaluation and the campaign scripts."""
