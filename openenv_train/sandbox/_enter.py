"""Host-side step for a root caller: ``python -I -S _enter.py SPEC_JSON -- BWRAP_ARGV...``.

Stdlib only and never imported by the package. bwrap must run as an unprivileged uid, because the kernel
does not enforce RLIMIT_NPROC for uid 0. Paths that this uid cannot reach (a Python under ``/root``, say)
are bind-mounted, in a mount namespace private to this process, onto a small tmpfs at ``stage_dir``, from
where bwrap mounts them into the sandbox; the host's own mount table is never changed. Then it drops to
``uid``/``gid`` with no supplementary groups and execs bwrap.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

__all__ = ["main"]

_CLONE_NEWNS = 0x00020000
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_PRIVATE = 0x40000


def _check(result: int, what: str) -> None:
    if result != 0:
        sys.exit(f"sandbox: {what} failed: {os.strerror(ctypes.get_errno())}")


def _stage(stage_dir: str, sources: list[str]) -> None:
    """Bind ``sources[i]`` onto ``stage_dir/i`` in a private mount namespace of this process."""
    libc = ctypes.CDLL(None, use_errno=True)
    _check(libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "making the mount namespace private")
    _check(libc.mount(b"tmpfs", stage_dir.encode(), b"tmpfs", 0, b"mode=0755,size=64k"), f"mounting a tmpfs on {stage_dir}")
    for index, source in enumerate(sources):
        target = os.path.join(stage_dir, str(index))
        if os.path.isdir(source):
            os.mkdir(target)
        else:
            open(target, "x").close()
        _check(libc.mount(source.encode(), target.encode(), None, _MS_BIND | _MS_REC, None), f"bind-mounting {source}")


def main() -> None:
    """Entry point: stage, drop privileges, exec bwrap."""
    spec = json.loads(sys.argv[1])
    argv = sys.argv[3:]
    if spec["stage"]:
        _stage(spec["stage_dir"], spec["stage"])
    os.setgroups([])
    os.setresgid(spec["gid"], spec["gid"], spec["gid"])
    os.setresuid(spec["uid"], spec["uid"], spec["uid"])
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
