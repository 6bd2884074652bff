"""Bad input to the command line and what it costs: each refused in one line with exit 2, before
the work starts; signals stop the worker processes; a JoinGroup's cost grows linearly with its
protocols."""
from __future__ import annotations

from groupspec.impl.coordinator import GroupCoordinator


# -- a JoinGroup with many protocols -----------------------------------------------------------

def _join_calls(protocols: int, members: int = 2) -> int:
    """How many times the table asks for a protocol list's names while `members` members join
    with `protocols` protocols each and the join completes with the vote."""
    c = GroupCoordinator({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 10},
                         lifecycle=False)
    calls = [0]
    names = c._proto_names

    def counted(pl):
        calls[0] += 1
        return names(pl)
    c._proto_names = counted
    c.cfg_params["proto_names"] = counted
    names_list = [f"p{i}" for i in range(protocols)]
    got = []
    for k in range(members):
        order = names_list if k % 2 == 0 else names_list[::-1]
        c.send("JoinGroup", dict(group="g", member="", client=f"c{k}", session_timeout_ms=10_000,
                                 rebalance_timeout_ms=10_000, protocol_type="consumer", protocols=order,
                                 require_known_member_id=False), on_response=got.append)
    c.advance(1)
    assert [r["error"] for r in got] == ["NONE"] * members
    assert {r["protocol"] for r in got} <= {"p0", f"p{protocols - 1}"}
    return calls[0]


def test_join_with_many_protocols_is_linear_in_them():
    # the vote once took time cubic in the protocols: its candidates were recomputed inside
    # the count inside the quantifier over the candidates
    small, large = _join_calls(50), _join_calls(400)
    assert large <= 10 * small, (small, large)
