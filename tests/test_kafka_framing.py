"""Kafka's frames both ways (checkers/kafka/framing.py): what a client writes a server reads back, and the
reverse, at every version of the group APIs; bytes that are not a frame are one line, never a traceback."""
from __future__ import annotations

import datetime

import pytest
from kio import index as kio_index
from kio.schema.errors import ErrorCode

from groupspec.checkers.kafka import framing, messages
from groupspec.spec.kafka import ACCEPTED_VERSIONS

JOIN = {"group": "g", "member": "m", "session_timeout_ms": 500, "rebalance_timeout_ms": 700,
        "protocol_type": "consumer", "protocols": ["range", {"name": "roundrobin", "metadata": "x"}]}
REQUESTS = {"JoinGroup": JOIN, "SyncGroup": {"group": "g", "member": "m", "generation": 3,
                                             "assignments": {"m": ["t-0", "t-1"]}},
            "Heartbeat": {"group": "g", "member": "m", "generation": 3},
            "LeaveGroup": {"group": "g", "member": "m"},
            "OffsetCommit": {"group": "g", "member": "m", "generation": 3, "offsets": {"t-0": 5}},
            "OffsetFetch": {"group": "g", "partitions": ["t-0"]}, "DescribeGroups": {"groups": ["g"]},
            "ListGroups": {}, "DeleteGroups": {"groups": ["g"]}}


def _versions(api: str) -> list[int]:
    """The versions the spec reads (those Kafka 3.9 accepts: spec/kafka.py) that kio's schemas define: kio's
    are Kafka 4's, which dropped OffsetCommit 0-1 and OffsetFetch 0 (a scenario naming one is refused as
    NotExpressible)."""
    lo, hi = ACCEPTED_VERSIONS[api]
    out = []
    for v in range(lo, hi + 1):
        try:
            messages.request_class(api, v)
            out.append(v)
        except messages.NotExpressible:
            assert (api, v) in {("OffsetCommit", 0), ("OffsetCommit", 1), ("OffsetFetch", 0)}, (api, v)
    return out


@pytest.mark.parametrize("api", sorted(REQUESTS))
def test_every_version_of_a_group_request_reads_back_as_written(api):
    for version in _versions(api):
        _, entity = messages.request(api, {**REQUESTS[api], "version": version})
        frame = framing.encode_request(entity, 41, "client-7")
        data = framing.take_frame(bytearray(frame))
        assert framing.peek_api(data) == (messages.API_KEYS[api], version, 41)
        header, back = framing.decode_request(data)
        assert back == entity and header.correlation_id == 41 and header.client_id == "client-7", (api, version)


@pytest.mark.parametrize("version", [0, 3, 9])
def test_a_response_reads_back_as_written_in_its_versions_header(version):
    cls = messages.response_class("JoinGroup", version)
    entity = messages.build(cls, {"error_code": ErrorCode.none, "generation_id": 2, "protocol_name": "range",
                                  "leader": "m", "member_id": "m",
                                  "members": [{"member_id": "m", "metadata": b"\x00\x01"}],
                                  "throttle_time": datetime.timedelta(0)})
    header, back = framing.decode_response(framing.take_frame(bytearray(framing.encode_response(entity, 9))), cls)
    assert back == entity and header.correlation_id == 9


def test_api_versions_answers_in_the_old_header_at_every_version():
    """Kafka answers ApiVersions with response header v0 even at its flexible versions (a client that does not
    know the server's versions must read the answer): the schema says so, and the frame follows it."""
    for version in range(4):
        cls = kio_index.load_response_schema(18, version)
        entity = messages.build(cls, {"error_code": ErrorCode.none, "api_keys": [],
                                      "throttle_time": datetime.timedelta(0)})
        frame = framing.take_frame(bytearray(framing.encode_response(entity, 5)))
        assert frame[:4] == (5).to_bytes(4, "big") and framing.decode_response(frame, cls)[1] == entity


def test_frames_arrive_in_pieces_and_back_to_back():
    _, a = messages.request("Heartbeat", REQUESTS["Heartbeat"])
    _, b = messages.request("ListGroups", {})
    stream = framing.encode_request(a, 1, None) + framing.encode_request(b, 2, None)
    buf = bytearray()
    got = []
    for byte in stream:                    # one byte at a time: no frame before it is whole
        buf.append(byte)
        data = framing.take_frame(buf)
        if data is not None:
            got.append(framing.decode_request(data)[1])
    assert got == [a, b] and not buf


@pytest.mark.parametrize("size", [0, -1, framing.MAX_FRAME + 1])
def test_a_size_no_frame_has_is_refused(size):
    with pytest.raises(framing.FrameError, match=f"size field is {size}, outside 1 to"):
        framing.take_frame(bytearray(size.to_bytes(4, "big", signed=True) + b"xx"))


@pytest.mark.parametrize("data,says", [
    (b"\x00\x0b\x00", "too short for a header"),
    ((999).to_bytes(2, "big") + b"\x00\x00" + b"\x00\x00\x00\x01", "API key 999 version 0 is not one"),
    ((11).to_bytes(2, "big") + (99).to_bytes(2, "big") + b"\x00\x00\x00\x01", "API key 11 version 99 is not one"),
    ((12).to_bytes(2, "big") + b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x05ab", "cannot be read as Kafka's"),
])
def test_bytes_that_are_no_request_are_one_line(data, says):
    with pytest.raises(framing.FrameError, match=says):
        framing.decode_request(data)


def test_trailing_bytes_after_a_request_are_refused():
    _, entity = messages.request("Heartbeat", REQUESTS["Heartbeat"])
    data = framing.take_frame(bytearray(framing.encode_request(entity, 1, None)))
    with pytest.raises(framing.FrameError, match="1 bytes more than its schema gives it"):
        framing.decode_request(data + b"\x00")


def _as_sent(api: str, req: dict, version: int) -> dict:
    """What a request says on the wire, in the contract's fields: `req` with the values the message fills in
    (an empty member id, the session timeout as the rebalance timeout of a version without one)."""
    out = {**req, "version": version}
    if api == "JoinGroup" and ("rebalance_timeout_ms" not in req or version == 0):
        out["rebalance_timeout_ms"] = req["session_timeout_ms"]
    return out


@pytest.mark.parametrize("api", sorted(REQUESTS))
def test_a_request_reads_back_in_the_contracts_fields_at_every_version(api):
    """messages.parse_request, a server's side, undoes messages.request, a client's, through the bytes."""
    for version in _versions(api):
        req = REQUESTS[api]
        if api == "LeaveGroup" and version >= 3:
            req = {"group": "g", "members": [{"member": "m"}, {"member": "", "instance": "i"}]}
        _, entity = messages.request(api, {**req, "version": version})
        _, back = framing.decode_request(framing.take_frame(bytearray(framing.encode_request(entity, 1, None))))
        assert messages.parse_request(api, back) == _as_sent(api, req, version), (api, version)


def test_metadata_bytes_that_are_not_utf8_stay_themselves():
    raw = b"\x00\x01\xff\xfe subscription"
    text = messages.decode_metadata(raw)
    assert messages.encode_metadata("consumer", text) == raw and messages.decode_metadata(b"") == ""


RESPONSES = {
    "JoinGroup": {"error": "NONE", "member": "m", "generation": 2, "leader": "m", "protocol": "range",
                  "members": ["m", "n"], "protocol_type": "consumer", "skip_assignment": False},
    "SyncGroup": {"error": "NONE", "assignment": ["t-0", "t-1"], "protocol_type": "consumer", "protocol": "range"},
    "Heartbeat": {"error": "REBALANCE_IN_PROGRESS"},
    "LeaveGroup": {"error": "NONE", "errors": ["NONE", "UNKNOWN_MEMBER_ID"]},
    "OffsetCommit": {"errors": {"t-0": "NONE", "u-3": "ILLEGAL_GENERATION"}},
    "OffsetFetch": {"error": "NONE", "offsets": {"t-0": 5, "t-1": -1}},
    "DescribeGroups": {"error": "NONE", "groups": [{"group": "g", "error": "NONE", "state": "Stable",
                                                   "protocol_type": "consumer", "protocol": "range",
                                                   "members": ["m", "n"]}]},
    "ListGroups": {"error": "NONE", "groups": [{"group": "g", "protocol_type": "consumer", "state": "Empty"}]},
    "DeleteGroups": {"error": "NONE", "errors": {"g": "NONE", "h": "GROUP_ID_NOT_FOUND"}},
}


@pytest.mark.parametrize("api", sorted(RESPONSES))
def test_a_response_a_server_builds_reads_back_as_the_contracts_at_every_version(api):
    """messages.build_response, a server's side, is undone by messages.response, a client's, through the bytes:
    every field the version carries comes back as given."""
    request = {"LeaveGroup": {"group": "g", "members": [{"member": "m"}, {"member": "x"}]},
               "OffsetFetch": {"group": "g", "partitions": None}, "JoinGroup": {"group": "g"}}.get(api, {})
    for version in _versions(api):
        want = RESPONSES[api]
        if api == "LeaveGroup" and version < 3:         # one member, no per-member errors
            want = {"error": "NONE"}
        if api == "ListGroups" and version < 4:         # no group states
            want = {**want, "groups": [{k: v for k, v in g.items() if k != "state"} for g in want["groups"]]}
        details = {"g": {"m": {"metadata": "sub-m", "instance": "i-m"}, "n": {"metadata": "sub-n", "instance": None}}}
        entity = messages.build_response(api, version, want, request, details)
        _, back = framing.decode_response(framing.take_frame(bytearray(framing.encode_response(entity, 3))),
                                          messages.response_class(api, version))
        got = messages.response(api, back)
        assert {k: v for k, v in want.items() if k in got} == {k: v for k, v in got.items() if k in want}, \
            (api, version, got)
        assert set(got) - set(want) <= {"errors"} and not set(want) - set(got) - {"protocol_type", "skip_assignment",
                                                                                    "protocol", "state"}, (api, version)
    if api == "JoinGroup":         # the leader learns its members' metadata
        assert [x.metadata for x in back.members] == [b"sub-m", b"sub-n"]
        assert [x.group_instance_id for x in back.members] == ["i-m", None]       # static members named
