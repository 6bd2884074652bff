"""Inductive proofs of the coordinator invariants (`groupspec prove`).

For an invariant Inv of the catalog and every row of the table, Z3 is asked
whether Inv ∧ row ⇒ Inv′: the row's guard, post-state and outputs come from
`symbolic.row_relation`, read either over uninterpreted sorts
(`spec/unbounded.py`: for any number of members, instance ids, partitions and
protocols) or over fixed domain sizes (`spec/symbolic.py`: "up to N").  No
row is written again here.

Where Inv alone is not inductive, the strengthening is searched
automatically: Houdini over the catalog's state invariants and over
candidate lemmas generated from the schema's variables (templates over member
sets, the group's states, member-keyed maps) and their forms about the logged
record.  The candidates are first sifted by the states the explicit checker
reaches in small worlds (`SAMPLE_WORLDS`), so Z3 spends its queries on lemmas
that may be invariants; Houdini then starts from those about the invariant's
own variables and widens that vocabulary by the variables of the candidates a
counterexample to induction breaks (`Prover._widening`), keeping the largest
subset that is inductive as a whole.  The lemmas a proof used are the unsat
cores of its queries, closed under the lemmas those needed in turn.  Where
Houdini finds no proof, Z3's Spacer, a second engine on constrained Horn
clauses over the same rows, searches for an inductive relation of its own
(`chc.py`; for fixed sizes).  A settled invariant, which holds between requests
only, is proved over the world's step instead: every step ends in the eager
CompleteJoin, and each of its outcomes must leave it true (`settled.py`).

What the table leaves to its environment is assumed, in words and as terms
(`ENVIRONMENT`): a fresh member id is one never issued; a request's member id
is one the group knows; a loaded record is one a coordinator wrote (the record
lemmas, checked at every row that appends a group record, and on the blank
record); a timer fires only when armed (`table.ENABLED`).  Closed-world
invariants add what the clients guarantee (`CLOSED_WORLD`).

Every query has a limit; `unknown` is reported as unknown, never as proved.  The
limits and the search's budget are counted in Z3's resource units, not seconds
(`Work`), so a loaded machine proves what a quiet one does.  (Z3 5.x crashes in
its model-based quantifier instantiation when such a limit runs out, Z3Prover/z3
issue 10385: pyproject.toml keeps Z3 below 5.)

The modules, from the bottom up (each imports only those above it):

* ``obligations.py``: the budget of Z3 work, the environment's assumptions, the candidate lemmas;
* ``results.py``: a proof, a counterexample to induction, a model's values;
* ``readings.py``: the table read for Z3 (unbounded or fixed sizes), a row's context and its goal;
* ``reached.py``: the states the explicit checker reaches, which sift and refute lemmas;
* ``houdini.py``: the induction queries and Houdini's search;
* ``chc.py``: Spacer on the table's Horn clauses;
* ``settled.py``: a settled invariant by induction over the world's step (a row, then the eager rule);
* ``describe.py``: a counterexample to induction in the spec's words and as a scenario fragment;
* ``prover.py``: the prover, one invariant at a time;
* ``command.py``: what ``groupspec prove`` prints, the proofs run each in a process of its own (which
  ends with the command, however it ends), and Z3 interrupted by SIGTERM and Ctrl-C.
"""
