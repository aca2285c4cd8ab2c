"""Seeded fault schedules: reproducible, bounded by the duration, jittered within limits."""

from harness.chaos.schedule import plan
from harness.scenario.fault_rules import FaultRule

RULES = [
    FaultRule("kill-driver", "processor", start_s=10, every_s=20, jitter_s=5, times=5, params={"signal": "SIGKILL"}),
    FaultRule("broker-pause", "broker-2", start_s=30, params={"pause_s": 5}),
]


def test_same_seed_same_schedule_twice():
    assert plan(RULES, seed=7, duration_s=120) == plan(RULES, seed=7, duration_s=120)


def test_other_seed_other_times_same_shape():
    a, b = plan(RULES, seed=7, duration_s=120), plan(RULES, seed=8, duration_s=120)
    assert [f.at_s for f in a] != [f.at_s for f in b]
    assert [(f.kind, f.target) for f in sorted(a, key=lambda f: f.rule_index)] == [
        (f.kind, f.target) for f in sorted(b, key=lambda f: f.rule_index)
    ]


def test_jitter_bounds_order_and_duration():
    firings = plan(RULES, seed=3, duration_s=60)
    kills = [f for f in firings if f.kind == "kill-driver"]
    assert len(kills) == 3  # nominal 10, 30, 50 fit in 60 s; 70 and 90 do not
    for n, f in enumerate(kills):
        assert abs(f.at_s - (10 + 20 * n)) <= 5
    assert [f.at_s for f in firings] == sorted(f.at_s for f in firings)
    assert [f for f in firings if f.kind == "broker-pause"][0].params == {"pause_s": 5}


def test_a_one_off_rule_fires_once():
    assert len(plan([FaultRule("redeploy", "egress", start_s=5, times=3)], seed=1, duration_s=100)) == 1


def test_a_repeating_rule_without_times_fires_until_the_end():
    rule = FaultRule("kill-driver", "egress", start_s=5, every_s=10, times=None)
    assert [f.at_s for f in plan([rule], seed=3, duration_s=50)] == [5, 15, 25, 35, 45]


def test_whole_run_faults_are_not_scheduled():
    assert plan([FaultRule("executor-crash", "processor", params={"probability": 0.1})], seed=1, duration_s=60) == []
