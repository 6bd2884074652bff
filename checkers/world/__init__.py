"""The closed world's interpretations: its presets (presets.py), the clients' rows (clients.py), the world as a
state space the engines search, in tuples (state_space.py), as Z3 terms for bounded model checking (bmc.py), and
a TLC or ITF counterexample replayed through it (itf_replay.py)."""
