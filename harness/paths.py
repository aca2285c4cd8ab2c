"""Where the harness finds what it ships (scenarios, the jars' poms, Dockerfiles) and where it keeps what it fetches
and builds (jars, other Sparks' environments, Docker image staging): the same from a clone and from an installed
wheel.

Shipped files are in harness/shipped/: links to the clone's folders (scenarios/, jars/, docker/), which a wheel
carries as files. The cache is HARNESS_CACHE when set; in a clone its .cache/; else the user's cache folder
($XDG_CACHE_HOME or ~/.cache)/spark-kafka-harness: never site-packages or the working folder.
"""

from __future__ import annotations

import os
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parent.parent  # the folder holding the harness, pipelines and contract
SHIPPED = Path(__file__).resolve().parent / "shipped"
DISTRIBUTION = "spark-kafka-harness"


def shipped(name: str) -> Path:
    """A folder the harness ships: scenarios, jars (the poms), docker (the Dockerfiles); in a clone, its own folder
    (the link resolved, so paths name the files a user edits)."""
    return (SHIPPED / name).resolve()


def in_clone() -> bool:
    """Running from a source tree (make, an editable install) rather than an installed wheel."""
    return (SOURCE_ROOT / "pyproject.toml").is_file()


def cache_dir() -> Path:
    if os.environ.get("HARNESS_CACHE"):
        return Path(os.environ["HARNESS_CACHE"])
    if in_clone():
        return SOURCE_ROOT / ".cache"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / DISTRIBUTION
