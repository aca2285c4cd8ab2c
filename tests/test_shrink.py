"""Shrinking a failing fault schedule, on a synthetic judge (no Spark): the result is 1-minimal, simpler faults and
a shorter workload are kept only while the failure holds, a flaky failure is caught within k runs, another failure
is not this one, the trace is deterministic, and a spent budget returns the smallest schedule found so far."""

from __future__ import annotations

import random

from harness.chaos.shrink import reproduce, shrink

FAIL = ("end_to_end", "duplicated_in_state")
# Faults as the search draws them: (kind, target, moment); hashable.
KILL_EGRESS = ("kill-driver", "egress", "after-write")
NOISE = [
    ("kill-driver", "processor", "anytime"),
    ("broker-pause", "broker-1", "anytime"),
    ("network-delay", "ingress", "anytime"),
    ("kill-driver", "ingress", "anytime"),
    ("broker-kill", "broker-1", "anytime"),
]


def test_a_schedule_shrinks_to_the_one_fault_that_makes_the_failure():
    schedule = (*NOISE[:3], KILL_EGRESS, *NOISE[3:])

    def judge(candidate, seconds):
        return FAIL if KILL_EGRESS in candidate else None

    shrunk = shrink(schedule, 60, FAIL, judge, k=1)
    assert shrunk.schedule == (KILL_EGRESS,) and shrunk.complete
    assert all(step.kept == (KILL_EGRESS in step.schedule) for step in shrunk.trace)
    assert shrunk.workload_s == 7.5  # halved while it failed: 60 -> 30 -> 15 -> 7.5, the next below 5 s


def test_two_faults_needed_together_both_stay_and_the_result_is_one_minimal():
    needed = {NOISE[1], KILL_EGRESS}

    def judge(candidate, seconds):
        return FAIL if needed <= set(candidate) else None

    shrunk = shrink((*NOISE, KILL_EGRESS), 30, FAIL, judge, k=1)
    assert set(shrunk.schedule) == needed
    for drop in shrunk.schedule:  # 1-minimal: without any one of them it passes
        assert judge(tuple(f for f in shrunk.schedule if f != drop), 30) is None


def test_a_fault_is_made_simpler_and_the_workload_shorter_only_while_it_still_fails():
    def simplify(fault):
        kind, target, moment = fault
        return [(kind, target, "anytime"), ("kill-driver-sigterm", target, moment)] if kind == "kill-driver" else []

    def judge(candidate, seconds):  # a SIGTERM after the write fails too; at any moment it does not
        hit = any(f[1] == "egress" and f[2] == "after-write" for f in candidate)
        return FAIL if hit and seconds >= 12 else None

    shrunk = shrink((NOISE[0], KILL_EGRESS), 60, FAIL, judge, simplify, k=1, min_workload_s=5)
    assert shrunk.schedule == (("kill-driver-sigterm", "egress", "after-write"),)
    assert shrunk.workload_s == 15  # 60 -> 30 -> 15 fail; 7.5 passes
    assert [s.why for s in shrunk.trace if s.kept][-1] == "shorten"


def test_a_flaky_failure_counts_within_k_runs_and_another_failure_does_not():
    rng = random.Random(4)

    def judge(candidate, seconds):
        if KILL_EGRESS in candidate:
            return FAIL if rng.random() < 0.5 else None  # fails one run in two
        if NOISE[0] in candidate:
            return ("max_lost", "lost")  # a failure, but not this one
        return None

    shrunk = shrink((NOISE[0], KILL_EGRESS), 30, FAIL, judge, k=4, min_workload_s=30)
    assert shrunk.schedule == (KILL_EGRESS,)
    other = [s for s in shrunk.trace if s.schedule == (NOISE[0],)]
    assert other and not other[0].kept and other[0].signatures == (("max_lost", "lost"),) * 4
    assert 0.2 <= reproduce(shrunk.schedule, shrunk.workload_s, FAIL, judge, 40) <= 0.8


def test_the_same_schedule_and_judge_give_the_same_trace_and_a_spent_budget_keeps_the_best_so_far():
    def judge(candidate, seconds):
        return FAIL if KILL_EGRESS in candidate else None

    schedule = (*NOISE, KILL_EGRESS)
    first, again = (shrink(schedule, 40, FAIL, judge, k=1) for _ in range(2))
    assert first.trace == again.trace and first.runs == again.runs
    cut = shrink(schedule, 40, FAIL, judge, k=1, max_runs=2)
    assert not cut.complete and cut.runs == 2 and KILL_EGRESS in cut.schedule
    assert len(cut.schedule) <= len(schedule) and judge(cut.schedule, cut.workload_s) == FAIL


def test_a_failure_without_any_fault_shrinks_to_no_fault():
    shrunk = shrink((KILL_EGRESS,), 20, FAIL, lambda candidate, seconds: FAIL, k=1, min_workload_s=20)
    assert shrunk.schedule == ()  # the faults are not the cause
