"""A Java truststore (JKS or PKCS12, as seed 004's keytool makes) read into PEM, which every client reads.

The Python clients cannot open a JKS file, so the harness asks the JDK's keytool for the certificates once, at
the start of a run. The store's password reaches keytool in its environment (`-storepass:env`), never on its
command line; the PEM holds public certificates only.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from harness import jars
from harness.errors import HarnessError

PASSWORD_VARIABLE = "HARNESS_TRUSTSTORE_PASSWORD"
CERTIFICATE = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)


def truststore_pem(store: Path, password: str | None, out: Path) -> Path:
    """The certificates of `store` written to `out` as PEM."""
    keytool = Path(jars.java_executable()).with_name("keytool")
    argv = [str(keytool), "-list", "-rfc", "-keystore", str(store)]
    env = dict(os.environ)
    if password is not None:
        argv += ["-storepass:env", PASSWORD_VARIABLE]
        env[PASSWORD_VARIABLE] = password
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise HarnessError(f"kafka.truststore: cannot run {keytool} ({exc.strerror})") from None
    except subprocess.TimeoutExpired:
        raise HarnessError(f"kafka.truststore: {keytool} did not list {store} within 60 s") from None
    found = CERTIFICATE.findall(done.stdout)
    if done.returncode != 0 or not found:
        reason = next(
            (line for line in (done.stdout + done.stderr).splitlines() if "error" in line.lower()),
            "no certificate in it",
        )
        raise HarnessError(f"kafka.truststore: {store} could not be read: {reason.strip()[:200]}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(found) + "\n")
    return out
