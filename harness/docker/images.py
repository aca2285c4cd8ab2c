"""The images the Docker backend runs, built on this machine: no registry is needed.

    harness/base:<suite>-java<N>   Debian (debootstrap --variant=minbase, from the mirror apt uses) with a jlink
                                   runtime of the JDK that runs the harness, at /opt/java
    harness/kafka:<version>        the base with a Kafka version's jars (jars/kafka/pom.xml, as the embedded cluster
                                   runs them: harness.cluster.releases)
                                   and docker/kafka/start.sh; its build context is the repository
    harness/runner:py<X.Y>         the base with this Python at its own path, for docker-compose.yml's harness
                                   service (the repository and its .venv are mounted at their own path)

The base and the runner are staged under .cache/docker/<image>/ (a root file system, a Python), with
docker/runner/'s Dockerfile. An image carries the hash of what it was built from in a label: a changed pom, JDK or
Dockerfile builds it again, an unchanged one is reused.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness import jars
from harness.cluster import releases
from harness.cluster.config import LOG4J2_FILE
from harness.errors import HarnessError
from harness.paths import SOURCE_ROOT, cache_dir, shipped

DOCKER_DIR = shipped("docker")
STAGING = cache_dir() / "docker"
SOURCE_LABEL = "harness.built-from"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
# What Kafka, Spark (4.0 adds jdk.incubator.vector) and the JAAS/TLS of secured clusters need from the JDK, and
# jstack (jdk.jcmd: a hanging driver's threads); nothing for a compiler.
JAVA_MODULES = (
    "java.se",
    "jdk.unsupported",
    "jdk.crypto.ec",
    "jdk.crypto.cryptoki",
    "jdk.management",
    "jdk.security.auth",
    "jdk.security.jgss",
    "jdk.zipfs",
    "jdk.naming.dns",
    "jdk.localedata",
    "jdk.incubator.vector",
    "jdk.jfr",
    "jdk.jcmd",
)
# The runner image's copies of the libraries this Python links (docker/runner/Dockerfile's LD_LIBRARY_PATH); the C
# library's own come from the base.
PYTHON_LIBS = Path("/opt/harness/python-libs")
GLIBC_LIBRARIES = ("libc.so", "libm.so", "libpthread.so", "libdl.so", "librt.so", "libresolv.so", "ld-linux")
# A Debian suite the debootstrap of this machine knows, when /etc/os-release names none.
FALLBACK_SUITE = "bookworm"


@dataclass(frozen=True)
class Image:
    """One image: its tag, and the hash of what it is built from."""

    name: str  # base | kafka | runner
    tag: str
    source: str
    build_args: tuple[tuple[str, str], ...] = ()  # beyond the base's tag (the Kafka image's jar folder)

    def current(self, client) -> bool:
        found = find(client, self.tag)
        return found is not None and found.labels.get(SOURCE_LABEL) == self.source


def find(client, tag: str):
    import docker.errors

    try:
        return client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None


def _digest(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _java_home() -> Path:
    return Path(os.path.realpath(jars.java_executable())).parent.parent


def _java_release() -> str:
    """The JDK's release file (its version and build), or its path when it has none."""
    path = _java_home() / "release"
    return path.read_text(errors="replace") if path.is_file() else str(_java_home())


def _java_feature() -> str:
    found = re.search(r'JAVA_VERSION="(\d+)', _java_release())
    return found.group(1) if found else "17"


def debian_source() -> tuple[str, str]:
    """(mirror, suite): the mirror apt uses (HARNESS_DEBIAN_MIRROR overrides) and this machine's Debian suite."""
    mirror = os.environ.get("HARNESS_DEBIAN_MIRROR")
    if not mirror:
        for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
            text = (
                path.read_text(errors="replace")
                if path.is_file() and not path.name.endswith("disabled-by-farm")
                else ""
            )
            found = re.search(r"(?:URIs:\s*|^deb\s+(?:\[[^]]*\]\s+)?)(https?://\S+/debian)\s", text + "\n", re.M)
            if found:
                mirror = found.group(1)
                break
    suite = ""
    if Path("/etc/os-release").is_file():
        found = re.search(r"^VERSION_CODENAME=(\w+)", Path("/etc/os-release").read_text(), re.M)
        suite = found.group(1) if found else ""
    return mirror or DEFAULT_MIRROR, suite or FALLBACK_SUITE


def base_image() -> Image:
    mirror, suite = debian_source()
    return Image(
        "base", f"harness/base:{suite}-java{_java_feature()}", _digest(mirror, suite, JAVA_MODULES, _java_release())
    )


def kafka_image(version: str | None = None) -> Image:
    """The brokers' image of Kafka `version` (harness.cluster.releases; the harness's own when None)."""
    spec = releases.jar_set(version)
    folder = jars.set_dir(spec)
    files = sorted(p.name for p in jars.jar_set(spec))
    return Image(
        "kafka",
        f"harness/kafka:{jars.version_in(spec, 'kafka_2.13')}",
        _digest(base_image().source, files, _context_text("kafka"), LOG4J2_FILE.read_text()),
        (("JARS", str(folder.relative_to(SOURCE_ROOT)) if folder.is_relative_to(SOURCE_ROOT) else str(folder)),),
    )


def runner_image() -> Image:
    return Image(
        "runner",
        f"harness/runner:py{sys.version_info.major}.{sys.version_info.minor}",
        _digest(base_image().source, sys.base_prefix, platform.python_version(), _context_text("runner")),
    )


IMAGES: dict[str, Callable[[], Image]] = {"base": base_image, "kafka": kafka_image, "runner": runner_image}


def _context_text(name: str) -> list[str]:
    return [p.read_text() for p in sorted((DOCKER_DIR / name).iterdir()) if p.is_file()]


def ensure(
    engine,
    names: tuple[str, ...] = ("base", "kafka"),
    say: Callable[[str], None] = print,
    force: bool = False,
    kafka_version: str | None = None,
) -> list[Image]:
    """Build each named image that is missing or out of date (the base first; the Kafka image of `kafka_version`);
    return them all."""
    wanted = [
        kafka_image(kafka_version) if name == "kafka" else IMAGES[name]()
        for name in ("base", "kafka", "runner")
        if name in names or name == "base"
    ]
    for image in wanted:
        if not force and image.current(engine):
            continue
        t0 = time.monotonic()
        say(f"building {image.tag} ...")
        BUILDERS[image.name](engine, image)
        built = find(engine, image.tag)
        say(f"built {image.tag}: {built.attrs['Size'] / 1e6:.0f} MB in {time.monotonic() - t0:.0f}s")
    return wanted


def ensure_kafka(engine, say: Callable[[str], None] = print, version: str | None = None) -> str:
    """The tag of Kafka `version`'s image, it and the base built first when missing or out of date (its jars
    fetched first, as the embedded cluster fetches another version's)."""
    if version is not None and version != releases.default_version():
        jars.fetch((releases.jar_set(version),))
    return ensure(engine, ("base", "kafka"), say, kafka_version=version)[-1].tag


def _build_base(engine, image: Image) -> None:
    """debootstrap a minimal Debian, add a jlink runtime of this JDK at /opt/java, and import it."""
    if os.geteuid() != 0:
        raise HarnessError("building the base image needs root (debootstrap): run `harness images build` as root")
    debootstrap = shutil.which("debootstrap") or (
        "/usr/sbin/debootstrap" if Path("/usr/sbin/debootstrap").exists() else None
    )
    if not debootstrap:
        raise HarnessError("debootstrap not found: install it (apt-get install debootstrap) to build the base image")
    jlink = _java_home() / "bin" / "jlink"
    if not jlink.is_file() or not (_java_home() / "jmods").is_dir():
        raise HarnessError(
            f"{_java_home()} has no jlink and jmods: a JDK (not a JRE) is needed to build the base image"
        )
    mirror, suite = debian_source()
    stage = _fresh(STAGING / "base")
    rootfs = stage / "rootfs"
    try:
        _run([debootstrap, "--variant=minbase", suite, str(rootfs), mirror], "debootstrap")
        _run(
            [
                str(jlink),
                "--add-modules",
                ",".join(JAVA_MODULES),
                "--strip-debug",
                "--no-header-files",
                "--no-man-pages",
                "--output",
                str(rootfs / "opt" / "java"),
            ],
            "jlink",
        )
        tarball = stage / "rootfs.tar"
        _run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tarball), "."], "tar")
        repository, tag = image.tag.split(":")
        engine.api.import_image_from_file(
            str(tarball),
            repository=repository,
            tag=tag,
            changes=[
                "ENV JAVA_HOME=/opt/java",
                "ENV PATH=/opt/java/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                f"LABEL {SOURCE_LABEL}={image.source}",
            ],
        )
    finally:
        _remove_rootfs(stage)


def _remove_rootfs(stage: Path) -> None:
    """Remove a staged root file system, after unmounting anything a failed debootstrap left mounted in it (its
    /proc, /sys, or a bind of /dev): removing through a mount would reach the host's own files."""
    mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    for point in sorted((m for m in mounts if m.startswith(f"{stage}/")), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)
    if any(line.split()[1].startswith(f"{stage}/") for line in Path("/proc/self/mounts").read_text().splitlines()):
        raise HarnessError(f"{stage}: still mounted after a failed debootstrap; unmount it and remove it by hand")
    shutil.rmtree(stage, ignore_errors=True)


def _docker_build(engine, image: Image, context: Path, dockerfile: Path) -> None:
    """docker build FROM the base image, one line if it fails."""
    import docker.errors

    try:
        engine.images.build(
            path=str(context),
            dockerfile=str(dockerfile.relative_to(context)),
            tag=image.tag,
            rm=True,
            forcerm=True,
            buildargs={"BASE": base_image().tag, **dict(image.build_args)},
            labels={SOURCE_LABEL: image.source},
        )
    except docker.errors.BuildError as exc:
        lines = [str(step.get("stream", step.get("error", ""))).strip() for step in exc.build_log]
        raise HarnessError(f"building {image.tag} failed: {[line for line in lines if line][-1:] or exc.msg}") from None


def _build_kafka(engine, image: Image) -> None:
    """The repository is the context (.dockerignore keeps it to the Kafka jars and what the Dockerfile copies)."""
    _docker_build(engine, image, SOURCE_ROOT, DOCKER_DIR / "kafka" / "Dockerfile")


def _build_runner(engine, image: Image) -> None:
    """docker/runner/ with this Python staged next to it (it lives outside the repository)."""
    stage = _fresh(STAGING / image.name)
    try:
        shutil.copy2(DOCKER_DIR / "runner" / "Dockerfile", stage / "Dockerfile")
        _stage_python(stage)
        _docker_build(engine, image, stage, stage / "Dockerfile")
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _stage_python(stage: Path) -> None:
    """This Python's installation, at its own path, without its site-packages (the .venv brings those), and the
    shared libraries it and its extension modules link (but the C library's own: the base's), in PYTHON_LIBS."""
    prefix = Path(sys.base_prefix)
    target = stage / "python" / prefix.relative_to("/")
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    skip = {prefix / "lib" / version / "site-packages", prefix / "lib" / version / "test"}
    shutil.copytree(
        prefix,
        target,
        symlinks=True,
        ignore=lambda folder, names: [n for n in names if Path(folder) / n in skip or n == "__pycache__"],
    )
    (target / "lib" / version / "site-packages").mkdir(exist_ok=True)
    libs = stage / "python" / PYTHON_LIBS.relative_to("/")
    libs.mkdir(parents=True)
    for library in _linked_libraries(
        [Path(sys.executable).resolve(), *(prefix / "lib" / version / "lib-dynload").glob("*.so")]
    ):
        if not library.is_relative_to(prefix):
            shutil.copy2(library.resolve(), libs / library.name)


def _linked_libraries(binaries: list[Path]) -> set[Path]:
    """What `ldd` resolves for these binaries, without the C library's own and without Tk's (no display here)."""
    found = set()
    for binary in binaries:
        if binary.name.startswith("_tkinter"):
            continue
        result = subprocess.run(["ldd", str(binary)], capture_output=True, text=True)
        for match in re.finditer(r"=>\s*(/\S+)", result.stdout):
            library = Path(match.group(1))
            if not library.name.startswith(GLIBC_LIBRARIES):
                found.add(library)
    return found


BUILDERS = {"base": _build_base, "kafka": _build_kafka, "runner": _build_runner}


def _fresh(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def _run(argv: list[str], what: str) -> None:
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        lines = [line for line in (result.stderr + result.stdout).splitlines() if line.strip()]
        raise HarnessError(f"{what} failed (exit {result.returncode}): {lines[-1] if lines else 'no output'}")
