"""A job's world of its own: a network and a mount namespace in which the addresses and paths the job names reach
what the run gives it (the brokers through relays on loopback, the run's folders through mounts), the team's
folder and the machine's left as they were. `enter` is the process the job runs under; the runner prepares its
spec (harness/runner/world.py) from the scenario's `world` (harness/scenario/world.py)."""
