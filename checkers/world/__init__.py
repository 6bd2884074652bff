"""The closed world's interpretations: its presets, the clients' rows, the world as a state space the
engines search (tuples), as Z3 terms for bounded model checking, and a counterexample replayed through it."""
