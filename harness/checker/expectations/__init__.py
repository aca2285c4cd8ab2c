"""The expectations a scenario may state, one module each (kinds/): how its value is read from the scenario, and
how it is judged from what the checker found. The scenario reads them through `kinds()`
(harness/scenario/expectations.py), pipeline.json keeps the values given, and the expectations step judges them
(harness/checker/expect.py)."""
