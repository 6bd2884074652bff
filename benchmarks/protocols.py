"""JoinGroup cost against the number of protocols each member offers.

    .venv/bin/python benchmarks/protocols.py [--protocols 100,200,400,800] [--members 2,8]
                                             [--targets spec,runtime]

Prints one JSON object.  For each number of protocols P and members M, a scenario: M members
join a new group (no member id required), each offering P protocols (even members in one order,
odd members in the reverse order, so the vote ties and the spec target explores both winners),
the initial delay expires, the join completes with the protocol vote, and every JoinGroup is
answered with generation 1.  `seconds_per_join` is the run's time over M.  The cost should grow
linearly with P: the table computes the vote's candidates and the largest vote once per firing,
and the coordinator translates each protocol list once.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

from groupspec.checkers.scenarios.report import run_files


def scenario(protocols: int, members: int) -> str:
    names = [f"p{i}" for i in range(protocols)]
    lines = ["scenarios:", f"  - scenario: {members}-members-join-with-{protocols}-protocols",
             "    config: {group.min.session.timeout.ms: 10, group.max.session.timeout.ms: 600000, "
             f"group.max.size: {members}, group.initial.rebalance.delay.ms: 50}}",
             "    steps:"]
    for k in range(members):
        order = names if k % 2 == 0 else names[::-1]
        lines.append(f"      - {{send: JoinGroup, id: j{k}, group: g, member: '', client: c{k}, "
                     "session_timeout_ms: 10000, rebalance_timeout_ms: 500, protocol_type: consumer, "
                     f"protocols: [{', '.join(order)}], require_known_member_id: false}}")
    lines.append("      - {advance_ms: 100}")
    winners = "p0" if members % 2 else None      # an odd group: p0 has one vote more
    for k in range(members):
        lines.append(f"      - {{expect: j{k}, error: NONE, generation: 1"
                     f"{', protocol: ' + winners if winners else ''}}}")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--protocols", default="100,200,400,800")
    ap.add_argument("--members", default="2,8")
    ap.add_argument("--targets", default="spec,runtime")
    args = ap.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for members in [int(x) for x in args.members.split(",")]:
            for protocols in [int(x) for x in args.protocols.split(",")]:
                f = Path(tmp) / f"p{protocols}-m{members}.yaml"
                f.write_text(scenario(protocols, members))
                for target in args.targets.split(","):
                    start = time.perf_counter()
                    run = run_files([f], target)
                    secs = time.perf_counter() - start
                    if run.passed != 1:
                        sys.exit(f"{f.name} on {target}: {[r.message for r in run.results]}")
                    runs.append({"target": target, "members": members, "protocols": protocols,
                                 "seconds": round(secs, 4), "seconds_per_join": round(secs / members, 5)})
    print(json.dumps({"benchmark": "protocols", "python": platform.python_version(), "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
