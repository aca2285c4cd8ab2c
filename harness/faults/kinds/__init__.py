"""The built-in fault kinds, one module each; every module defines `KIND`, a harness.faults.FaultKind."""
