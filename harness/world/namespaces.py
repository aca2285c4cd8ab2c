"""The Linux calls a job's world needs (unshare, mount), through libc: Python 3.11 has neither; and whether this
machine grants them."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import struct
import subprocess
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
SIOCSIFFLAGS = 0x8914
IFF_UP, IFF_LOOPBACK, IFF_RUNNING = 0x1, 0x8, 0x40

_libc = ctypes.CDLL(None, use_errno=True)


class Refused(OSError):
    """The kernel refused a namespace or a mount (not root, a container's seccomp filter, a sysctl)."""


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise Refused(code, f"{what}: {os.strerror(code)}")


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def mount(source: str, target: str, fstype: str | None = None, flags: int = 0, data: str | None = None) -> None:
    args = (
        source.encode(),
        target.encode(),
        fstype.encode() if fstype else None,
        flags,
        data.encode() if data else None,
    )
    _check(_libc.mount(*args), f"mount {target}")


def own_user(uid: int, gid: int) -> None:
    """In a new user namespace: be root there, mapped to the user one was (an unprivileged user's namespaces)."""
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"0 {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"0 {gid} 1")


def enter(flags: int) -> None:
    """unshare(flags), through a user namespace of its own where one is not root."""
    uid, gid = os.geteuid(), os.getegid()
    if uid == 0:
        unshare(flags)
        return
    unshare(flags | CLONE_NEWUSER)
    own_user(uid, gid)


def loopback_up() -> None:
    """A new network namespace's loopback is down: bring it up (what `ip link set lo up` does)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", IFF_UP | IFF_LOOPBACK | IFF_RUNNING, b"\0" * 14))


def probe() -> None:
    """In this process: a mount and a network namespace, a private mount tree, loopback up; Refused otherwise."""
    enter(CLONE_NEWNS | CLONE_NEWNET)
    mount("none", "/", None, MS_REC | MS_PRIVATE)
    try:
        loopback_up()
    except OSError as exc:
        raise Refused(exc.errno or errno.EPERM, f"loopback up: {exc.strerror}") from None


def refusal() -> str | None:
    """Why this machine refuses a job a world of its own (None: it grants one), tried in a process of its own."""
    done = subprocess.run([sys.executable, "-m", "harness.world.namespaces"], capture_output=True, text=True)
    if done.returncode == 0:
        return None
    return (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]


if __name__ == "__main__":
    try:
        probe()
    except (Refused, OSError) as exc:
        sys.exit(str(exc.strerror or exc))
