"""What `groupspec prove` shows: counterexamples to induction in words and as scenario
fragments, the result table, and the invariant catalog's proof column."""
from __future__ import annotations

import functools

import z3

from groupspec.spec.lang import NONE, Type
from groupspec.spec.schema import PARAM_TYPES, STATE_VARS, TRIGGER_BY_NAME

# member ids and other elements as a scenario writes them
_PREFIX = {"Member": "m", "Instance": "i", "Partition": "t0-", "Protocol": "proto", "ProtoList": "protos",
           "ProtocolType": "ptype"}


class ModelValues:
    """Values of a Z3 model in the spec's words: elements named m0, m1, ... (none: None)."""

    def __init__(self, model, reading):
        self.m, self.rd = model, reading
        self.names: dict = {}

    def elem(self, v, dom: str):
        if self.rd.sizes:
            i = self.m.eval(v, model_completion=True).as_long()
            return None if i == NONE else f"{_PREFIX[dom]}{i}"
        e = self.m.eval(v, model_completion=True)
        if e.eq(self.m.eval(self.rd.sorts.none[dom], model_completion=True)):
            return None
        return self._name(e, dom)

    def _name(self, e, dom: str) -> str:
        key = (dom, e.sexpr())
        if key not in self.names:
            self.names[key] = f"{_PREFIX[dom]}{sum(1 for d, _ in self.names if d == dom)}"
        return self.names[key]

    def universe(self, dom: str) -> list:
        if self.rd.sizes:
            return [z3.IntVal(i) for i in range(self.rd.sizes[dom])]
        srt = self.rd.sorts.sort[dom]
        u = self.m.get_universe(srt) or []
        none = self.m.eval(self.rd.sorts.none[dom], model_completion=True)
        return [e for e in u if not e.eq(none)]

    def value(self, v, t: Type):
        k = t.kind
        if k == "bool":
            return z3.is_true(self.m.eval(v, model_completion=True))
        if k == "int":
            return self.m.eval(v, model_completion=True).as_long()
        if k == "enum":
            i = self.m.eval(v, model_completion=True).as_long()
            return t.values[i] if 0 <= i < len(t.values) else i
        if k == "dom":
            return self.elem(v, t.name)
        if k == "record":
            return {f: self.value(x, ft) for f, x, ft in zip(t.values, v, t.args)}
        if k == "set":
            if self.rd.sizes:
                mask = self.m.eval(v, model_completion=True).as_long()
                return [f"{_PREFIX[t.key]}{i}" for i in range(self.rd.sizes[t.key]) if mask >> i & 1]
            return sorted(self.elem(e, t.key) for e in self.universe(t.key)
                          if z3.is_true(self.m.eval(z3.Select(v, e), model_completion=True)))
        if k == "map":
            out = {}
            for i, e in enumerate(self.universe(t.key)):
                x = v[i] if self.rd.sizes else z3.Select(v, e)
                val = self.value(x, t.value)
                if val != _plain_default(t.value):
                    out[self.elem(e, t.key) if not self.rd.sizes else f"{_PREFIX[t.key]}{i}"] = val
            return out
        return str(v)


def _plain_default(t: Type):
    from groupspec.spec.lang import default_of
    if t.kind == "set":
        return []
    if t.kind == "dom":
        return None
    if t.kind == "enum":
        return t.values[0]
    return default_of(t)


def _initial(v) -> object:
    if v.type.kind == "map":
        return {}
    if v.type.kind == "set":
        return []
    if v.type.kind == "dom":
        return None
    if v.type.kind == "enum":
        return v.type.values[v.initial]
    return v.initial


def describe_cti(inv, c, model, reading: str):
    from .prove import CTI
    mv = ModelValues(model, c.rd)
    pre = {v.name: mv.value(c.state[v.name], v.type) for v in STATE_VARS}
    post = {v.name: mv.value(c.post[v.name], v.type) for v in STATE_VARS}
    first = c.spec[0]
    trig = TRIGGER_BY_NAME[first.trigger]
    params = {}
    for n in trig.params:
        t = PARAM_TYPES[n]
        if t.kind != "fun" and not n.startswith("cfg_"):
            params[n] = mv.value(c.params[n], t)
    shown_pre = {k: v for k, v in pre.items() if v != _initial(_var(k)) or k in ("state", "generation")}
    changed = {k: v for k, v in post.items() if v != pre[k]}
    then = f", then its append completes: row {c.row.name!r}" if len(c.spec) == 3 else ""
    words = (f"Before: {_kv(shown_pre)}. Row {first.name!r} fires ({trig.name}: {_kv(params) or 'no parameters'}){then}. "
             f"After: {_kv(changed) or 'nothing changes'}. Then {inv.name} fails: {inv.meaning}")
    return CTI(c.name, reading, pre, params, post, words, scenario_fragment(first, pre, params, post),
               sorted(c.approx))


def _var(name: str):
    return next(v for v in STATE_VARS if v.name == name)


def _kv(d: dict) -> str:
    return ", ".join(f"{k}={_show(v)}" for k, v in d.items())


def _show(v) -> str:
    if isinstance(v, list):
        return "{" + ", ".join(map(str, v)) + "}"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_show(x)}" for k, x in v.items()) + "}"
    return "none" if v is None else str(v)


_SNAPSHOT = {"state": "state", "generation": "generation", "leader": "leader", "protocol": "protocol",
             "protocol_type": "protocol_type", "members": "members", "pending": "pending_members"}


def _snapshot(state: dict) -> list[str]:
    lines = ["- snapshot: g"]
    st = state["state"]
    lines.append(f"  state: {'null' if st == 'Absent' else st}")
    for k, key in _SNAPSHOT.items():
        if k == "state":
            continue
        v = state[k]
        lines.append(f"  {key}: {_yaml(v)}")
    if state.get("assignment"):
        lines.append("  assignment: {" + ", ".join(f"{m}: {_yaml(p)}" for m, p in state["assignment"].items()) + "}")
    return lines


def _yaml(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(map(str, v)) + "]"
    return "null" if v is None else str(v)


_COORD_EVENT = {"Load": "load", "Unload": "unload", "ExpireOffsets": "expire_offsets",
                "MarkDead": "{mark_dead: g}"}
_API = {"JoinGroup": "JoinGroup", "SyncGroup": "SyncGroup", "Heartbeat": "Heartbeat", "LeaveGroup": "LeaveGroup",
        "OffsetCommit": "OffsetCommit", "OffsetFetch": "OffsetFetch", "DescribeGroup": "DescribeGroups",
        "ListGroups": "ListGroups", "ListGroupsEntry": "ListGroups", "DeleteGroup": "DeleteGroups"}


def scenario_fragment(row, pre: dict, params: dict, post: dict) -> str:
    """The counterexample as steps of a conformance scenario: the state before as a snapshot
    (a fragment: no path to that state is claimed), the event that fires the row, the state after."""
    lines = [f"# counterexample to induction: row {row.name!r}",
             "# a fragment: the state before is a snapshot, no path to it is claimed"]
    lines += _snapshot(pre)
    trig = row.trigger
    if trig in _API or trig == "LeaveMember":
        lines.append(f"- send: {_API.get(trig, 'LeaveGroup')}")
        lines.append("  group: g")
        if trig == "LeaveMember":
            lines.append("  members: [{member: " + _yaml(params.get("member") or "") + "}]")
        elif "member" in params:
            lines.append(f"  member: {_yaml(params['member'] or '')!s}".replace("null", '""'))
        if params.get("instance"):
            lines.append(f"  instance: {params['instance']}")
        if "generation" in params:
            lines.append(f"  generation: {params['generation']}")
        if trig == "SyncGroup" and params.get("assignments"):
            lines.append("  assignments: {" + ", ".join(f"{m}: {_yaml(p)}"
                                                        for m, p in params["assignments"].items()) + "}")
    elif trig in _COORD_EVENT:
        lines.append(f"- coordinator: {_COORD_EVENT[trig]}")
    elif trig in ("StoreGroupDone", "StoreOffsetsDone"):
        lines.append(f"- storage: {{complete: {params.get('error', 'NONE')}}}")
    elif trig == "CompleteJoin":
        lines.append("# (the eager re-check of the pending join, after the previous request)")
    else:
        lines.append(f"- advance_ms: 0   # the {trig} timer fires"
                     + (f" for {params['timer_member']}" if params.get("timer_member") else ""))
    lines += _snapshot(post)
    return "\n".join(lines)


# -- the command's result ----------------------------------------------------------------

def run_induction(names: list[str] | None, strengthen: bool = True, bound: int = 2, timeout_s: float = 3.0,
                  budget_s: float = 60.0, presets: tuple[str, ...] = ("tiny", "small"), progress=None,
                  search: str = "vocabulary", engine: str = "both", spacer_budget_s: float = 60.0,
                  jobs: int = 1):
    """Prove the invariants named (all when None).  Returns (proofs, prover).

    More than one invariant: each is proved in a fresh process of its own, `jobs` at a time.
    Z3's answers depend on what was asked before in its context, and Z3 has crashed (a
    segmentation fault inside a solver) after some histories of queries and not others: a
    proof is then the same whether asked alone (`-i NAME`) or with the others, and a crash is
    the one invariant's `unknown`, not the run's end."""
    from .prove import INVARIANTS, WORK_PER_SECOND, Prover
    config = dict(query_work=int(timeout_s * WORK_PER_SECOND), strengthen=strengthen, bound=bound,
                  budget_s=budget_s, presets=tuple(presets), search=search, engine=engine,
                  spacer_budget_s=spacer_budget_s)
    prover = Prover(progress=progress, **config)
    invs = [i for i in INVARIANTS if names is None or i.name in names]
    if len(invs) < 2:
        return [prover.prove(i) for i in invs], prover
    return _isolated(functools.partial(Prover, **config), invs, jobs, progress), prover


def _isolated(make, invs: list, jobs: int, progress, start: str = "forkserver") -> list:
    """Each invariant proved by `make()` (a Prover) in a process of its own, `jobs` at a time.
    The processes are forked from a server that has only imported the prover ("forkserver"):
    each starts from the same Z3 context, whatever ran before in this one."""
    import multiprocessing as mp
    from multiprocessing.connection import wait
    from .prove import Proof
    ctx = mp.get_context(start)
    if start == "forkserver":
        ctx.set_forkserver_preload(["groupspec.checkers.prove"])
    todo, running, done = [(i, 0) for i in invs], {}, {}
    while todo or running:
        while todo and len(running) < jobs:
            inv, seed = todo.pop(0)
            if progress:
                progress(inv.name)
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_prove_one, args=(make, inv.name, seed, send), daemon=True)
            proc.start()
            send.close()
            running[recv] = (inv, seed, proc)
        for recv in wait(list(running)):
            inv, seed, proc = running.pop(recv)
            try:
                done[inv.name] = recv.recv()
                if seed:
                    done[inv.name].reason += f" (Spacer's random seed {seed}: Z3 crashed with the seeds before it)"
            except EOFError:     # the process ended without an answer
                proc.join()
                if proc.exitcode == -11 and seed + 1 < SPACER_SEEDS:
                    # Z3 4.16's Spacer crashes on some clause sets with one seed and not another
                    todo.append((inv, seed + 1))
                else:
                    done[inv.name] = Proof(inv.name, "unknown", "none", reason=(
                        f"the prover's process ended without an answer (exit code {proc.exitcode}"
                        + (f", a segmentation fault: Z3 crashed with Spacer's random seeds 0 to {seed}"
                           if proc.exitcode == -11 else "") + ")"))
            recv.close()
            proc.join()
    return [done[i.name] for i in invs]


SPACER_SEEDS = 3      # how many of Spacer's random seeds an invariant is tried with when Z3 crashes


def _prove_one(make, name: str, seed: int, send) -> None:
    from .prove import INVARIANTS
    prover = make(spacer_seed=seed)
    inv = next(i for i in INVARIANTS if i.name == name)
    prover.explore_samples(inv.scope)
    send.send(prover.prove(inv))
    send.close()


def exit_code(proofs) -> int:
    """0: nothing violated; 1: an invariant is violated (unknowns are listed with their reasons)."""
    return 1 if any(p.status == "violated" for p in proofs) else 0


def as_json(proofs, prover) -> dict:
    from .prove import CLOSED_WORLD, ENVIRONMENT
    pool = {lm.name: lm for scope in ("coordinator", "closed-world") for lm in prover.pool(scope)}
    used = sorted({n for p in proofs for n in p.lemmas})
    asm = list(ENVIRONMENT) + [a for v in CLOSED_WORLD.values() for a in v]
    return {"result": "violated" if exit_code(proofs) else "ok",
            "invariants": [p.as_json() for p in proofs],
            "lemmas": [{"name": n, "meaning": pool[n].meaning, "origin": pool[n].origin} for n in used if n in pool],
            "assumptions": [{"name": a.name, "meaning": a.meaning} for a in asm],
            "lemmas_checked_on": list(prover.presets)}


def print_table(console, proofs, prover) -> None:
    from rich.table import Table
    from .prove import CLOSED_WORLD, ENVIRONMENT
    t = Table(title="groupspec prove: induction over every row of the table (both coordinators, "
                    "group.coordinator.new.enable either way)")
    for col in ("invariant", "status", "method", "lemmas", "seconds"):
        t.add_column(col)
    colour = {"proved": "green", "proved up to N": "yellow", "violated": "red", "unknown": "magenta"}
    for p in proofs:
        status = p.status if p.status != "proved up to N" else f"proved up to N={p.bound}"
        t.add_row(p.name, f"[{colour[p.status]}]{status}[/]", p.method, str(len(p.lemmas)), f"{p.seconds:.2f}")
    console.print(t)
    for p in proofs:
        if p.reason:
            console.print(f"[bold]{p.name}[/]: {p.reason}", highlight=False)
        if p.cti and p.status != "proved":
            console.print("  " + p.cti.words, markup=False, highlight=False)
            console.print("  " + p.cti.scenario.replace("\n", "\n  "), markup=False, highlight=False)
    pool = {lm.name: lm for scope in ("coordinator", "closed-world") for lm in prover.pool(scope)}
    used = sorted({n for p in proofs for n in p.lemmas})
    if used:
        console.print(f"auxiliary lemmas ({len(used)}; each holds in every reachable state of "
                      f"{', '.join(prover.presets) or 'no world (not checked)'}):", highlight=False)
        for n in used:
            console.print(f"  {n}: {pool[n].meaning}" if n in pool else f"  {n}", markup=False, highlight=False)
    console.print("assumed of the environment: " + "; ".join(
        f"{a.name} ({a.meaning})" for a in list(ENVIRONMENT) + [a for v in CLOSED_WORLD.values() for a in v]),
        markup=False, highlight=False)
