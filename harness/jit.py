"""The JIT modes of the JVMs the harness starts (Spark drivers, brokers), each chosen by an environment variable.

The harness's JVMs are killed and restarted all through a run and share two cores: "quick" (the default) runs C1
only, whose compilations are cheap and whose code is ready at once. A JVM that lives long gains from C2 on its
per-record code: "deferred" keeps C2 for what stays hot (ten times the usual invocations and loop iterations),
"full" is the JVM's default. Measured in docs/performance.md.
"""

from __future__ import annotations

import os

from harness.errors import HarnessError

JIT_MODES = {
    "deferred": [
        "-XX:Tier4InvocationThreshold=50000",
        "-XX:Tier4MinInvocationThreshold=6000",
        "-XX:Tier4CompileThreshold=150000",
        "-XX:Tier4BackEdgeThreshold=400000",
    ],
    "quick": ["-XX:TieredStopAtLevel=1"],  # C1 only
    "full": [],  # the JVM's defaults
}
QUICK = JIT_MODES["quick"]


def jit_options(variable: str) -> list[str]:
    """The JIT flags of the mode the environment `variable` names (deferred, quick or full; unset: quick); an
    unknown mode is an error."""
    mode = os.environ.get(variable, "quick")
    if mode not in JIT_MODES:
        raise HarnessError(f"{variable}={mode!r}: expected one of {', '.join(JIT_MODES)}")
    return JIT_MODES[mode]
