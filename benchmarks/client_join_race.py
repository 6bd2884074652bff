"""kafka-python 3.0.12's lost join, counted: a lone consumer against `groupspec serve`, again and again, each run
waiting for it to hold every partition (docs/serve.md, "A client bug the real-client tests met").

    .venv/bin/python benchmarks/client_join_race.py [--runs 60] [--busy 3] [--kind kafka-python]
                                                    [--no-metadata-fetch]

Each run starts `groupspec serve --port 0 --topics t:6` and one consumer (tests/serve_clients/pyclient.py: group
g, range, 6 s session, 500 ms heartbeat) and waits up to 20 s for it to hold t-0..t-5.  A run that does not is a
hang: its consumer's threads are dumped to its stderr, kept under --keep with the server's trace.  --busy N
spins N processes for the whole loop (the race needs a loaded machine: under the test suite's load, or this).
--no-metadata-fetch makes the consumer poll right after subscribing, as the tests' consumers did before the
workaround, without fetching the topic's metadata first: that is when kafka-python 3.0.12 loses the join.  Prints one JSON object: runs, hangs,
the runs that hung, seconds.  To see whether a newer kafka-python still needs the workaround, run it with
--no-metadata-fetch after upgrading: hangs 0 in a few hundred runs says it no longer does.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CLIENT = REPO / "tests" / "serve_clients" / "pyclient.py"
ALL = [f'"t-{i}"' for i in range(6)]


def _spin(until: float) -> None:
    while time.time() < until:
        pass


def one(run: int, a, keep: Path) -> bool:
    """True if the consumer came to hold every partition within 20 s."""
    where = keep / f"run-{run}"
    where.mkdir(parents=True, exist_ok=True)
    server = subprocess.Popen([sys.executable, "-m", "groupspec.checkers.cli", "serve", "--port", "0", "--topics",
                               "t:6", "--config", "group.initial.rebalance.delay.ms=0", "--trace",
                               str(where / "trace.jsonl")], stderr=subprocess.PIPE, text=True)
    port = int(re.search(r"127\.0\.0\.1:(\d+)", server.stderr.readline())[1])
    threading.Thread(target=lambda: server.stderr.read(), daemon=True).start()
    lines: list[str] = []
    with open(where / "client.stderr", "w") as err:
        client = subprocess.Popen([sys.executable, str(CLIENT), "--kind", a.kind, "--bootstrap", f"127.0.0.1:{port}",
                                   "--group", "g", "--topics", "t", "--client-id", "c1", "--assignor", "range",
                                   "--session-ms", "6000", "--heartbeat-ms", "500", "--poll-ms", "10000"]
                                  + (["--no-metadata-fetch"] if a.no_metadata_fetch else []),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
    threading.Thread(target=lambda: lines.extend(client.stdout), daemon=True).start()
    deadline, held = time.monotonic() + 20, False
    while not held and time.monotonic() < deadline:
        held = any('"assigned"' in x and all(p in x for p in ALL) for x in list(lines))
        time.sleep(0.1)
    if not held:
        client.send_signal(signal.SIGUSR1)      # its threads' stacks, to its stderr
        time.sleep(1)
    for p in (client, server):
        p.kill()
        p.wait()
    if held:
        shutil.rmtree(where)
    return held


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=60)
    p.add_argument("--busy", type=int, default=3, help="processes spinning for the whole loop")
    p.add_argument("--kind", default="kafka-python", choices=["kafka-python", "confluent", "aiokafka"])
    p.add_argument("--no-metadata-fetch", action="store_true")
    p.add_argument("--keep", type=Path, default=Path("/tmp/client_join_race"), help="where hung runs are kept")
    a = p.parse_args()
    started = time.monotonic()
    spinners = [multiprocessing.Process(target=_spin, args=(time.time() + 24 * 3600,), daemon=True)
                for _ in range(a.busy)]
    for s in spinners:
        s.start()
    try:
        hung = [run for run in range(a.runs) if not one(run, a, a.keep)]
    finally:
        for s in spinners:
            s.kill()
    print(json.dumps({"kind": a.kind, "no_metadata_fetch": a.no_metadata_fetch, "runs": a.runs, "busy": a.busy,
                      "hangs": len(hung), "hung_runs": hung, "kept": str(a.keep) if hung else None,
                      "seconds": round(time.monotonic() - started, 1)}))


if __name__ == "__main__":
    main()
