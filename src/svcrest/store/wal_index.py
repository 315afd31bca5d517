"""SQLite's wal-index header, read from shared memory: a commit by any process, seen without
a query.

Every connection to a database in WAL mode shares its *wal-index*, the ``-shm`` file beside
the database, mapped into each process. Each commit rewrites the index's header, two copies
of 48 bytes at offset 0 (a change counter bumped by every transaction, the last valid frame,
the frame checksum and the WAL's salts; the format is documented at
https://sqlite.org/walformat.html and kept stable because processes built with different
SQLite versions share it). Reading those 96 bytes from a mapping of the file costs ~0.15 µs,
against ~2 µs for ``PRAGMA data_version`` (a statement, and file-lock system calls to start
its read transaction) and ~1 µs more to take a pooled connection for it.

:func:`attach` maps the header of one database, once per process however many stores open
it; :meth:`WalIndex.header` reads it. A header that differs from the one read before means a
commit happened (or a checkpoint reset the log: a move without a write, which only costs a
cache refill); an unchanged header means no transaction committed in between.

SECURITY: what the caller must guarantee, and what this module checks.

- The file stays the one SQLite uses while it is mapped: SQLite deletes (or, for a process
  that finds itself the first, truncates) the ``-shm`` file only when no connection has the
  database open. The caller keeps a connection of its own open for as long as it reads the
  header (:class:`svcrest.store.sqlite.SqliteStore` holds one, after a first read, which
  opens the wal-index).
- The mapped file is the one SQLite has open: :func:`attach` maps a ``-shm`` file only when
  this process already holds a descriptor of the same file (Linux's ``/proc/self/fd``; on a
  system without it, or when the check fails, it maps nothing and the caller keeps its
  ``PRAGMA``). A stale ``-shm`` next to a symbolic link, say, is never read.
- The descriptor is never closed while SQLite may hold locks on the file: POSIX releases
  *all* of a process's ``fcntl`` locks on a file when *any* of its descriptors of that file
  is closed, and SQLite's wal-index locks are such locks. So one descriptor per file is
  shared by every store of the process that maps it, and closed only by :func:`detach` when
  the last of them has closed its connections. (A program that also opens the same database
  with its own ``sqlite3`` connections and keeps them after every svcrest store on it has
  closed should not rely on those connections' locks; SQLite's own documentation gives the
  same warning about any code that opens a database's files.)
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
import sys
import threading
from typing import Final

__all__ = ["HEADER_BYTES", "WalIndex", "attach", "detach", "forget_after_fork"]

#: Bytes read: both copies of the wal-index header (WalIndexHdr, 48 bytes each).
HEADER_BYTES: Final = 96
# The wal-index format version in the header's first field (SQLite 3.7.0's), in the
# machine's byte order like the whole wal-index.
_INDEX_VERSION: Final = 3007000
_HEADER_START = struct.Struct("=IIIB")  # iVersion, unused, iChange, isInit
_PROC_FDS: Final = "/proc/self/fd"


class WalIndex:
    """The mapped header of one database's wal-index (shared by this process's stores)."""

    __slots__ = ("fd", "key", "mapping", "users")

    def __init__(self, key: tuple[int, int], fd: int, mapping: mmap.mmap) -> None:
        #: The ``-shm`` file's (device, inode).
        self.key = key
        self.fd = fd
        #: The read-only mapping of the header; ``mapping[:HEADER_BYTES]`` reads it (PERF: a
        #: reader on the request path slices it directly).
        self.mapping = mapping
        #: Stores of this process that attached and have not detached yet.
        self.users = 1

    def header(self) -> bytes:
        """The header's 96 bytes as they are now."""
        return self.mapping[:HEADER_BYTES]

    def is_initialised(self) -> bool:
        """Whether the header is one this module understands: the known format version, the
        initialised flag set, and both copies alike."""
        header = self.header()
        version, _unused, _change, initialised = _HEADER_START.unpack_from(header)
        half = HEADER_BYTES // 2
        return version == _INDEX_VERSION and initialised == 1 and header[:half] == header[half:]

    def _close(self) -> None:
        self.mapping.close()
        os.close(self.fd)


# (device, inode) of a ``-shm`` file → its mapping. Bounded by the databases this process
# has open at once: an entry goes when the last store using it detaches.
_mapped: dict[tuple[int, int], WalIndex] = {}
_lock = threading.Lock()


def _held_by_this_process(key: tuple[int, int]) -> bool:
    """Whether a descriptor of this process already refers to the file ``key``."""
    try:
        names = os.listdir(_PROC_FDS)
    except OSError:
        return False
    for name in names:
        try:
            found = os.stat(f"{_PROC_FDS}/{name}")
        except OSError:  # closed meanwhile, or the listing's own descriptor
            continue
        if (found.st_dev, found.st_ino) == key:
            return True
    return False


def attach(database_path: str) -> WalIndex | None:
    """The wal-index header of the database at ``database_path`` (in WAL mode, opened by a
    connection of this process that has read from it), mapped read-only; None when it cannot
    be mapped safely (see the module's notes). Each call that returns a :class:`WalIndex` is
    matched by one :func:`detach`; the caller reads the header only while
    :meth:`WalIndex.is_initialised` holds."""
    if not sys.platform.startswith("linux"):
        return None
    shm_path = os.path.abspath(database_path) + "-shm"
    with _lock:
        try:
            found = os.stat(shm_path)
        except OSError:
            return None
        key = (found.st_dev, found.st_ino)
        known = _mapped.get(key)
        if known is not None:
            known.users += 1
            return known
        if not stat.S_ISREG(found.st_mode) or found.st_size < HEADER_BYTES:
            return None
        if not _held_by_this_process(key):
            return None
        fd = os.open(shm_path, os.O_RDONLY | os.O_CLOEXEC)
        # From here on the descriptor is never closed before the last detach (see the
        # module's notes).
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != key or opened.st_size < HEADER_BYTES:
            # The file changed between the look and the open (never in normal use).
            _never_closed.append(fd)
            return None
        mapping = mmap.mmap(fd, HEADER_BYTES, access=mmap.ACCESS_READ)
        index = _mapped[key] = WalIndex(key, fd, mapping)
        return index


#: Descriptors opened on a file that changed between the look and the open: never closed,
#: for the reason above (at most one per such race).
_never_closed: list[int] = []


def detach(index: WalIndex) -> None:
    """One user of ``index`` is done with it, having closed its connections to the
    database; the mapping and its descriptor are closed with the last user."""
    with _lock:
        index.users -= 1
        if index.users > 0 or _mapped.get(index.key) is not index:
            return
        del _mapped[index.key]
        index._close()


def forget_after_fork() -> None:
    """In a forked child: the parent's mappings are forgotten without closing their
    descriptors (the child's own SQLite connections may lock the same files)."""
    global _lock
    _lock = threading.Lock()
    _never_closed.extend(index.fd for index in _mapped.values())
    _mapped.clear()
