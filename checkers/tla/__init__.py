"""TLA+: the closed world exported as a module, and TLC run on it."""
