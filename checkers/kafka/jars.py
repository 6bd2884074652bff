"""Kafka's jars and the driver built on them: what setup fetches, where it keeps them, how a target finds them.

Each Kafka line the project runs (`LINES`) is pinned to one release.
`fetch` resolves it with Maven (its POM in `jvm/`: the broker, and what the
in-process driver and a broker's server.log need) into a cache beside the
virtualenv, `.venv/share/groupspec/kafka/<release>/lib`, with a Maven
repository of its own beside it (`m2/`), so that a second setup fetches
nothing and everything runs offline afterwards.  `build` compiles the
driver (`jvm/common` and the line's own folder) against those jars.
`GROUPSPEC_KAFKA_HOME` moves the cache.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from groupspec.checkers.paths import REPO

JVM = Path(__file__).resolve().parent / "jvm"


@dataclass(frozen=True)
class Line:
    name: str           # what users write: 3.9, 4.0
    release: str        # the pinned Kafka release
    factory: str        # the driver's target for this line (jvm/<folder>)
    folder: str         # the line's own driver sources and POM
    coordinator: str    # which coordinator serves classic groups in process

    @property
    def pom(self) -> Path:
        return JVM / f"{self.folder}.pom.xml"


LINES: dict[str, Line] = {
    "3.9": Line("3.9", "3.9.2", "groupspec.driver.Scala39$Factory", "kafka-3.9",
                "the Scala GroupCoordinator (kafka.coordinator.group), behind GroupCoordinatorAdapter"),
    "4.0": Line("4.0", "4.0.2", "groupspec.driver.Java40$Factory", "kafka-4.0",
                "the Java group coordinator (org.apache.kafka.coordinator.group), behind GroupCoordinatorService"),
}


class KafkaSetupError(RuntimeError):
    """Kafka's jars cannot be fetched or built, or are not there (one line: what, and what to do)."""


def home() -> Path:
    given = os.environ.get("GROUPSPEC_KAFKA_HOME")
    return Path(given) if given else REPO / ".venv" / "share" / "groupspec" / "kafka"


def line(name: str) -> Line:
    got = LINES.get(name)
    if got is None:
        raise KafkaSetupError(f"Kafka {name!r}: not a line this project runs; use one of {', '.join(LINES)}")
    return got


def lib(ln: Line) -> Path:
    return home() / ln.release / "lib"


def classes(ln: Line) -> Path:
    return home() / ln.release / "classes"


def _sources(ln: Line) -> list[Path]:
    return sorted([*(JVM / "common").rglob("*.java"), *(JVM / ln.folder).rglob("*.java")])


def _fetch_stamp(ln: Line) -> str:
    return hashlib.sha256(ln.pom.read_bytes()).hexdigest()


def _build_stamp(ln: Line) -> str:
    h = hashlib.sha256(_fetch_stamp(ln).encode())
    for s in _sources(ln):
        h.update(str(s.relative_to(JVM)).encode() + b"\0" + s.read_bytes())
    return h.hexdigest()


def _stamped(path: Path, want: str) -> bool:
    return path.is_file() and path.read_text().strip() == want


def fetched(ln: Line) -> bool:
    """The line's jars are in the cache, fetched with today's POM."""
    return _stamped(home() / ln.release / "fetched", _fetch_stamp(ln)) and any(lib(ln).glob("kafka_2.13-*.jar"))


def built(ln: Line) -> bool:
    """The driver is compiled from today's sources."""
    return _stamped(home() / ln.release / "built", _build_stamp(ln))


def classpath(ln: Line, driver: bool = True) -> str:
    """The JVM classpath for `ln` (the driver's classes first); KafkaSetupError if setup has not made it."""
    if not any(lib(ln).glob("kafka_2.13-*.jar")):
        raise KafkaSetupError(f"Kafka {ln.release}'s jars are not in {lib(ln)}: run .ci/setup (or `groupspec kafka "
                              f"setup --version {ln.name}`) with Maven Central reachable")
    jars = sorted(str(j) for j in lib(ln).glob("*.jar"))
    if driver:
        if not (classes(ln) / "groupspec" / "driver" / "Main.class").is_file():
            raise KafkaSetupError(f"the Kafka {ln.release} driver is not built in {classes(ln)}: run .ci/setup (or "
                                  f"`groupspec kafka setup --version {ln.name}`)")
        jars.insert(0, str(classes(ln)))
    return os.pathsep.join(jars)


def java() -> str:
    found = shutil.which("java")
    if not found:
        raise KafkaSetupError("no `java` on PATH: Kafka needs Java 17 (Debian: apt-get install openjdk-17-jre-headless)")
    return found


def setup(ln: Line, log=print) -> bool:
    """Fetch and build what `ln` lacks; True if anything was done."""
    done = False
    if not fetched(ln):
        fetch(ln, log)
        (home() / ln.release / "fetched").write_text(_fetch_stamp(ln) + "\n")
        done = True
    if not built(ln):
        build(ln, log)
        (home() / ln.release / "built").write_text(_build_stamp(ln) + "\n")
        done = True
    return done


def ensure_built(ln: Line) -> None:
    """Before a driver starts: the jars must be there (setup fetches them); the driver is rebuilt, offline, if
    its sources changed since."""
    if not fetched(ln):
        classpath(ln, driver=False)       # says what is missing, and how to fetch it
        raise KafkaSetupError(f"Kafka {ln.release}'s jars in {lib(ln)} were fetched with another POM: run .ci/setup "
                              f"(or `groupspec kafka setup --version {ln.name}`)")
    if not built(ln):
        build(ln, log=lambda *_: None)
        (home() / ln.release / "built").write_text(_build_stamp(ln) + "\n")


def fetch(ln: Line, log=print) -> None:
    mvn = shutil.which("mvn")
    if not mvn:
        raise KafkaSetupError("no `mvn` on PATH: Maven fetches Kafka's jars (Debian: apt-get install maven)")
    target = lib(ln)
    repo = home() / "m2"
    log(f"groupspec setup: fetching Kafka {ln.release} with Maven into {target}")
    staging = target.with_name("lib.partial")
    shutil.rmtree(staging, ignore_errors=True)
    cmd = [mvn, "-q", "-B", "-f", str(ln.pom), f"-Dmaven.repo.local={repo}", "dependency:copy-dependencies",
           f"-DoutputDirectory={staging}", "-DincludeScope=runtime"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        tail = " ".join((run.stdout + run.stderr).split())[-400:]
        shutil.rmtree(staging, ignore_errors=True)
        raise KafkaSetupError(f"Maven could not fetch Kafka {ln.release} ({tail}); Maven Central must be reachable "
                              f"once: offline, copy a machine's {home()} here (or point GROUPSPEC_KAFKA_HOME at one)")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)


def build(ln: Line, log=print) -> None:
    javac = shutil.which("javac")
    if not javac:
        raise KafkaSetupError("no `javac` on PATH: the driver is compiled against Kafka's jars (Debian: apt-get "
                              "install openjdk-17-jdk-headless)")
    # compiled beside, then swapped in: a driver running from the old classes keeps whole folders to load from
    out = classes(ln)
    fresh = out.with_name(f"classes.{os.getpid()}")
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir(parents=True)
    cmd = [javac, "-nowarn", "-XDsuppressNotes", "-d", str(fresh), "-cp", classpath(ln, driver=False),
           *map(str, _sources(ln))]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        shutil.rmtree(fresh, ignore_errors=True)
        errors = [x for x in run.stderr.splitlines() if "error:" in x][:3]
        raise KafkaSetupError(f"the Kafka {ln.release} driver did not compile: {' | '.join(errors) or run.stderr[-300:]}")
    old = out.with_name(f"classes.old.{os.getpid()}")
    if out.exists():
        out.rename(old)
    fresh.rename(out)
    shutil.rmtree(old, ignore_errors=True)
    log(f"groupspec setup: built the Kafka {ln.release} driver ({ln.coordinator})")
