"""The engines that search a model (explicit-state, liveness, mutation testing), and the model interface
they search (model.py)."""
