"""Adapters that misbehave as a user's adapter might, for `groupspec conform` (tests/test_newer_commands.py):
each is the runtime coordinator with one method that raises or answers in the wrong shape, or a factory or
attribute that cannot be used.  The adapter's promise (checkers/conform/adapter.py): what an implementation
raises or answers wrongly during a run is a divergence; an adapter that cannot be made or used at all is one
line and exit 2."""
from __future__ import annotations

import os
import signal

from groupspec.checkers.conform.adapter import CoordinatorAdapter, Unsupported, runtime


class _Runtime(CoordinatorAdapter):
    def __init__(self, config: dict):
        super().__init__(runtime(config).coord)


class close_raises(_Runtime):
    def close(self):
        raise RuntimeError("close broke")


_made = [0]


class close_raises_after_the_first(_Runtime):
    """Closes the adapter the command makes to check the factory, then fails every run's close."""

    def close(self):
        _made[0] += 1
        if _made[0] > 1:
            raise RuntimeError("close broke")


class snapshot_raises(_Runtime):
    def snapshot(self, group):
        raise RuntimeError("snapshot broke")


class answered_raises(_Runtime):
    def answered(self):
        raise RuntimeError("answered broke")


class answered_none(_Runtime):
    def answered(self):
        return None


class answered_not_pairs(_Runtime):
    def answered(self):
        return [1]


class snapshot_a_list(_Runtime):
    def snapshot(self, group):
        return [1, 2]


class unsupported_an_int(_Runtime):
    unsupported = 5


class fixed_config_invalid(_Runtime):
    fixed_config = {"group.max.size": -1}


class fixed_config_not_a_dict(_Runtime):
    fixed_config = 5


def factory_fails_on_a_config(config):
    if config.get("group.max.size") == 2:
        raise RuntimeError("no group.max.size 2")
    return runtime(config)


def factory_refuses_every_config_drawn(config):
    if config.get("group.max.session.timeout.ms") != 1_800_000:
        raise Unsupported("only the default group.max.session.timeout.ms")
    return runtime(config)


class lies_then_is_stopped(_Runtime):
    """A Heartbeat during a rebalance answers NONE (a divergence, found within a few hundred requests), and
    the process gets `SIGNAL` at the `AT`-th request of the run: while the divergence is being shrunk."""
    SIGNAL, AT = signal.SIGTERM, 400
    sent = 0

    def send(self, api, request, request_id):
        type(self).sent += 1
        if type(self).sent == self.AT:
            os.kill(os.getpid(), self.SIGNAL)
        resp = super().send(api, request, request_id)
        if api == "Heartbeat" and resp and resp.get("error") == "REBALANCE_IN_PROGRESS":
            resp = {**resp, "error": "NONE"}
        return resp
