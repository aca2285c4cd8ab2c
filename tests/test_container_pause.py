"""docker pause on a busy machine: runc's cgroup-v1 freezer gives up ("unable to freeze") when the container's
JVM does not settle within milliseconds, and thaws the container again. A broker-pause fault failed a CI run
that way; the pause is now tried again. The engine's answers are played by a stand-in container here, because
a real freezer cannot be made to give up on demand; the Docker tests pause real containers."""

from __future__ import annotations

import docker.errors
import pytest

from harness.docker import cluster
from harness.docker.cluster import ContainerProcess

FREEZE_FAILED = "Cannot pause container f9bb: OCI runtime pause failed: unable to freeze: unknown"


class Container:
    """Answers pause() with the engine's error `failures` times, then pauses."""

    def __init__(self, failures: int, error: str = FREEZE_FAILED):
        self.failures, self.error, self.status, self.pauses = failures, error, "running", 0

    def reload(self) -> None:
        pass

    def pause(self) -> None:
        self.pauses += 1
        if self.pauses <= self.failures:
            raise docker.errors.APIError(f"500 Server Error: Internal Server Error ({self.error})")
        self.status = "paused"


class Node(ContainerProcess):
    name = "broker-1"

    def __init__(self, found: Container):
        self.found = found

    def container(self):
        return self.found


def test_a_pause_the_freezer_gave_up_on_is_tried_again_until_it_holds():
    found = Container(failures=3)
    Node(found).pause()
    assert (found.pauses, found.status) == (4, "paused")


def test_a_pause_that_never_freezes_fails_after_its_time_and_other_engine_errors_at_once(monkeypatch):
    monkeypatch.setattr(cluster, "FREEZE_TRIES_S", 0.5)
    never = Container(failures=10**6)
    with pytest.raises(docker.errors.APIError, match="unable to freeze"):
        Node(never).pause()
    assert 2 <= never.pauses <= 5 and never.status == "running"

    refused = Container(failures=1, error="Container broker-1 is restarting")
    with pytest.raises(docker.errors.APIError, match="restarting"):
        Node(refused).pause()
    assert refused.pauses == 1
