"""Whether the disk cache's folders and files can be trusted with code cuforge loads, checked
through handles: a folder is opened once (never followed through a link inside the cache),
checked with ``fstat``, and what lies in it is reached from that handle (``dir_fd``), so the
folder checked is the folder used, even if its path is renamed or re-pointed meanwhile.

The rules, as OpenSSH's for ``~/.ssh`` (``StrictModes``):

- the cache's own folders and files (the configured folder, ``v2``, ``entries``, ``entries/<xx>``,
  ``tmp``, ``locks`` and the entries) are this user's and writable by no one else; inside the
  cache, a symbolic link is refused;
- each folder on the way to it, from ``/``, is owned by root or this user and writable by no
  one else, except a sticky folder (``/tmp``) owned by root or this user: there others can add
  names but not rename or remove ours, and the next component must pass these rules too;
- a symbolic link on the way is followed only when owned by root or this user (its owner can
  re-point it).

Where ``os.open`` takes no ``dir_fd`` (Windows, whose ACLs keep a profile folder private), a
folder is its path and nothing is checked.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

HANDLES = hasattr(os, "O_NOFOLLOW") and os.open in os.supports_dir_fd
NO_LINKS = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NO_LINKS
# On the way to the cache, a handle that needs no read permission (a folder may be 0711): fstat
# and the *at calls take it
WALK_FLAGS = DIR_FLAGS & ~os.O_RDONLY | getattr(os, "O_PATH", os.O_RDONLY)
FILE_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | NO_LINKS  # (a FIFO would block an open without it)
MAX_LINKS = 40  # as the kernel's path walk

Folder = int | str  # a handle, or a path where there are no handles


class UntrustedCacheError(OSError):
    """A folder or file of the cache that another user could have planted code in, or could
    swap: ``path`` names it, ``fix`` says what to do."""

    def __init__(self, path: str, reason: str, fix: str):
        super().__init__(reason)
        self.path, self.fix = path, fix

    def __str__(self) -> str:
        return str(self.args[0])


def at(folder: Folder, name: str) -> tuple[str, dict[str, int]]:
    """``name`` in ``folder`` as arguments of an ``os`` call: (name, dir_fd=handle), or a path."""
    return (name, {"dir_fd": folder}) if isinstance(folder, int) else (os.path.join(folder, name), {})


def close(folder: Folder) -> None:
    if isinstance(folder, int):
        os.close(folder)


REMOVE = "remove it (python -m cuforge cache clear removes every entry); cuforge makes it again, owner-only"


def check_own(fd: int, path: str, *, fix: str = REMOVE) -> os.stat_result:
    """The ``fstat`` of a folder or file of the cache; raises UntrustedCacheError unless it is
    this user's and writable by no one else."""
    st = os.fstat(fd)
    if hasattr(os, "geteuid"):
        uid = os.geteuid()
        if st.st_uid != uid:
            raise UntrustedCacheError(path, f"{path} is owned by uid {st.st_uid}, not by this user (uid {uid})", fix)
        if st.st_mode & 0o022:
            raise UntrustedCacheError(path, f"{path} is writable by group or others (mode {st.st_mode & 0o777:o})", fix)
    return st


def _check_on_the_way(fd: int, path: str) -> None:
    """A folder on the way to the cache: owned by root or this user, writable by no one else
    unless sticky."""
    st = os.fstat(fd)
    uid = os.geteuid()
    if st.st_uid not in (0, uid):
        raise UntrustedCacheError(path, f"{path}, on the way to the cache, is owned by uid {st.st_uid}, neither root nor "
                                        f"this user (uid {uid}), who could swap the cache for another folder",
                                  "keep the cache under folders owned by root or by you")  # fmt: skip
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise UntrustedCacheError(path, f"{path}, on the way to the cache, is writable by group or others (mode "
                                        f"{st.st_mode & 0o777:o}), who could swap the cache for another folder",
                                  f"chmod go-w {path}")  # fmt: skip


def _link(parent: int, name: str, path: str) -> str:
    """The target of link ``name`` on the way to the cache, when root or this user owns it;
    NotADirectoryError when ``name`` is neither a folder nor a link."""
    st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    if not stat.S_ISLNK(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "Not a directory", path)
    if st.st_uid not in (0, os.geteuid()):
        raise UntrustedCacheError(path, f"{path} is a symbolic link owned by uid {st.st_uid}, who could point it at "
                                        f"another folder", f"replace the link {path} with the folder it names")  # fmt: skip
    return os.readlink(name, dir_fd=parent)


def _is_link(parent: int, name: str) -> bool:
    return stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)


def _mkdir(parent: Folder, name: str) -> None:
    name, kw = at(parent, name)
    with contextlib.suppress(FileExistsError):  # (made meanwhile by another process: checked when opened)
        os.mkdir(name, 0o700, **kw)  # (the umask can only take bits away)


def open_root(path: str) -> Folder:
    """A handle on the cache's folder ``path``, made owner-only (with any missing parent) if
    absent, reached from ``/`` one component at a time by the rules above (``path`` itself
    must be this user's own). Raises UntrustedCacheError, or OSError when it cannot be made."""
    path = os.path.abspath(path)
    if not HANDLES:
        os.makedirs(path, exist_ok=True)
        return path
    todo = [p for p in path.split(os.sep) if p][::-1]  # the next component last
    stack = [(os.open(os.sep, WALK_FLAGS), os.sep)]  # the folders walked through, the last one current
    links = 0
    try:
        _check_on_the_way(*stack[0])
        while todo:
            name = todo.pop()
            parent, where = stack[-1]
            if name in (".", ".."):  # (from a link's target)
                if name == ".." and len(stack) > 1:
                    os.close(stack.pop()[0])
                continue
            here = os.path.join(where, name)
            try:
                fd = os.open(name, WALK_FLAGS, dir_fd=parent)
            except FileNotFoundError:
                _mkdir(parent, name)
                fd = os.open(name, WALK_FLAGS, dir_fd=parent)
            except OSError as exc:
                if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise
                target, links = _link(parent, name, here), links + 1
                if links > MAX_LINKS:
                    raise OSError(errno.ELOOP, "Too many levels of symbolic links", path) from None
                if os.path.isabs(target):
                    while len(stack) > 1:
                        os.close(stack.pop()[0])
                todo.extend([p for p in target.split(os.sep) if p][::-1])
                continue
            stack.append((fd, here))
            if todo:  # (the last: checked as the cache's own, below)
                _check_on_the_way(fd, here)
        check_own(stack[-1][0], path, fix=f"chmod 700 {path} (and chown it to yourself)")
    except BaseException:
        for fd, _ in stack:
            os.close(fd)
        raise
    for fd, _ in stack[:-1]:
        os.close(fd)
    return stack[-1][0]


def open_folder(parent: Folder, name: str, path: str, *, create: bool, fix: str = REMOVE) -> Folder:
    """Folder ``name`` of the cache's folder ``parent`` (``path`` names it in messages): not a
    link, this user's, writable by no one else; made owner-only when missing and ``create``
    (else FileNotFoundError). NotADirectoryError when it is a file."""
    if not HANDLES:
        target = os.path.join(str(parent), name)
        if create:
            os.makedirs(target, exist_ok=True)
        elif not os.path.isdir(target):
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", target)
        return target
    assert isinstance(parent, int)
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
        _mkdir(parent, name)
        fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP) and _is_link(parent, name):
            raise UntrustedCacheError(path, f"{path} is a symbolic link, which the cache does not follow", fix) from None
        raise
    try:
        check_own(fd, path, fix=fix)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(folder: Folder, name: str, path: str) -> tuple[int, os.stat_result]:
    """Entry file ``name`` of ``folder`` opened for reading, and its ``fstat``: not a link, this
    user's, writable by no one else. IsADirectoryError for a folder in its place."""
    target, kw = at(folder, name)
    try:
        fd = os.open(target, FILE_FLAGS, **kw)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UntrustedCacheError(path, f"{path} is a symbolic link, which the cache does not follow", REMOVE) from None
        raise
    try:
        st = check_own(fd, path)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
        if not stat.S_ISREG(st.st_mode):
            raise UntrustedCacheError(path, f"{path} is not a regular file", REMOVE)
    except BaseException:
        os.close(fd)
        raise
    return fd, st
