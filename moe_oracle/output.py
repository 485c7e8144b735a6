"""The one writer of output files (``matrix --docs``, ``plan --examples``, ``matrix --output``).

Every failure to write (a full disk, a read-only or ``/proc`` target, a file where a directory is needed, a
name longer than the file system allows, no permission) is one exit-2 line naming the target, the system's
reason and the fix, never a traceback. A file is written next to its target and renamed over it, so a
failed write never leaves a half-written file behind.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from moe_oracle.errors import BadInputError, excerpt

#: The fix offered for each system reason a write fails with (the rest get :data:`_FIX_OTHER`).
_FIXES = {
    errno.ENOSPC: "free space on that file system or choose another target",
    errno.EDQUOT: "free space on that file system or choose another target",
    errno.EROFS: "choose a target on a writable file system",
    errno.EACCES: "choose a target you may write to",
    errno.EPERM: "choose a target you may write to",
    errno.ENAMETOOLONG: "choose a shorter file name (most file systems allow 255 bytes per name)",
    errno.ENOTDIR: "choose a directory (a part of the path is a file)",
    errno.EEXIST: "choose a directory (that path is a file or a device)",
    errno.EISDIR: "choose a file name, not a directory",
    errno.ENOENT: "choose a target whose parent directory exists",
}
_FIX_OTHER = "choose a writable target"


class OutputError(BadInputError):
    """An output target that cannot be written (exit 2)."""


def output_error(target: str | Path, exc: OSError, what: str) -> OutputError:
    """The one-line error for ``exc`` raised while writing ``what`` to ``target``."""
    reason = exc.strerror or type(exc).__name__
    code = errno.errorcode.get(exc.errno or 0, "")
    return OutputError(
        f"{what} {excerpt(str(target))}: cannot write: {reason}" + (f" ({code})" if code else ""),
        fix=_FIXES.get(exc.errno or 0, _FIX_OTHER),
    )


def ensure_directory(directory: str | Path, what: str) -> Path:
    """``directory``, created with its parents when missing; exit 2 when that is impossible."""
    path = Path(directory)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError(f"{what} {excerpt(str(path))}: is not a directory", fix=_FIXES[errno.EEXIST]) from None
    except OSError as exc:
        raise output_error(path, exc, what) from None
    return path


def write_text_file(path: str | Path, text: str, what: str) -> Path:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` through a temporary file renamed over it.

    ``what`` names the option the target came from (``--docs``) for the error line. A target that is not
    a regular file (``/dev/full``, ``/proc/x``) is written in place, so that its own error surfaces.
    """
    target = Path(path)
    data = text.encode("utf-8")
    try:
        if target.exists() and not target.is_file():
            if target.is_dir():
                raise OSError(errno.EISDIR, os.strerror(errno.EISDIR))
            with open(target, "wb") as handle:
                handle.write(data)
            return target
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:64]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            if target.exists():
                os.chmod(temp, target.stat().st_mode & 0o777)
            else:
                os.chmod(temp, 0o666 & ~_umask())
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise output_error(target, exc, what) from None
    return target


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


__all__ = ["OutputError", "ensure_directory", "output_error", "write_text_file"]
