"""Waiting under load: a deadline scaled by what was measured, and a wait that says what it waited for."""

from __future__ import annotations

import pytest

from harness.errors import WaitTimeout
from harness.waiting import Patience, wait_for


def test_a_restart_is_given_more_time_where_the_first_start_was_slow():
    patience = Patience(floor_s=240.0)
    assert patience.timeout_s == 240.0  # nothing measured yet: the floor
    patience.measure(30.0)  # an idle machine started the drivers in 30 s: the floor still holds
    assert patience.timeout_s == 240.0
    patience.measure(100.0)  # a busy one took 100 s: a restart gets four times that
    assert patience.timeout_s == 400.0
    patience.measure(50.0)  # a quicker measure later does not shorten it
    assert patience.timeout_s == 400.0


def test_a_wait_that_gives_up_says_what_it_waited_for_and_why():
    with pytest.raises(WaitTimeout, match=r"^timed out after 0s waiting for the canary at every output$"):
        wait_for(lambda: False, timeout=0.05, interval=0.01, what="the canary at every output")
    with pytest.raises(WaitTimeout, match=r"^gave up waiting for the broker to answer: its process exited$"):
        wait_for(lambda: False, timeout=60, what="the broker to answer", abort=lambda: "its process exited")
