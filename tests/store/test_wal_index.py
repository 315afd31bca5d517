"""Change marks read from SQLite's wal-index header (svcrest.store.wal_index), the fallback
to ``PRAGMA data_version``, and the rules that keep the mapping safe."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from svcrest.store import wal_index
from svcrest.store.sqlite import SqliteStore, StoreError
from tests.store.test_store_sqlite import marked_file as marked_file

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the wal-index is mapped on Linux only"
)

_CHILD_WRITE = (
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "c.execute('INSERT INTO marks VALUES (7)')\n"
    "c.close()"
)


def _shm_descriptors(path: str) -> int:
    """How many descriptors of this process refer to ``path``'s ``-shm`` file."""
    target = os.stat(path + "-shm")
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            found = os.stat(f"/proc/self/fd/{name}")
        except OSError:
            continue
        count += (found.st_dev, found.st_ino) == (target.st_dev, target.st_ino)
    return count


def _mapping_of(path: str) -> wal_index.WalIndex | None:
    """This process's mapping of ``path``'s wal-index, while one is registered."""
    target = os.stat(path + "-shm")
    return wal_index._mapped.get((target.st_dev, target.st_ino))


def _is_open_on(index: wal_index.WalIndex, path: str) -> bool:
    """Whether the mapping's descriptor is open, on ``path``'s ``-shm`` file."""
    opened, target = os.fstat(index.fd), os.stat(path + "-shm")
    return (opened.st_dev, opened.st_ino) == (target.st_dev, target.st_ino)


def _write(store: SqliteStore, value: int) -> None:
    with store.transaction() as conn:
        conn.execute("INSERT INTO marks VALUES (?)", (value,))


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "marks.db")


def test_a_file_store_on_linux_reads_the_wal_index(db_path: str) -> None:
    with SqliteStore(db_path) as store:
        assert store.change_mark_source == "wal-index"
    with SqliteStore(None) as memory:
        assert memory.change_mark_source == "memory"


def test_reads_leave_the_mark_and_every_commit_moves_it(
    marked_file: tuple[str, SqliteStore],
) -> None:
    _path, marked = marked_file
    first = marked.change_mark()
    assert first is not None
    assert marked.read_one("SELECT COUNT(*) FROM marks") == (0,)
    with marked.read() as conn:
        conn.execute("SELECT * FROM marks").fetchall()
    assert marked.change_mark() == first
    _write(marked, 1)
    second = marked.change_mark()
    assert second is not None and second > first
    assert marked.change_mark() == second


def test_a_rolled_back_transaction_leaves_the_wal_index_mark(db_path: str) -> None:
    """(``PRAGMA data_version`` counts the rolled-back row in ``total_changes`` and moves:
    a needless move, which only costs a refill of what was remembered.)"""
    with SqliteStore(db_path) as store:
        store.migrate("marks", ["CREATE TABLE marks (v INTEGER)"])
        first = store.change_mark()
        with pytest.raises(RuntimeError), store.transaction() as conn:
            conn.execute("INSERT INTO marks VALUES (1)")
            raise RuntimeError("undo")
        assert store.change_mark() == first


def test_a_commit_by_another_process_moves_the_mark(
    marked_file: tuple[str, SqliteStore],
) -> None:
    _path, marked = marked_file
    assert marked.path is not None
    first = marked.change_mark()
    subprocess.run([sys.executable, "-c", _CHILD_WRITE, marked.path], check=True, timeout=60)
    second = marked.change_mark()
    assert second is not None and first is not None and second > first
    assert marked.read_one("SELECT v FROM marks") == (7,)


def test_the_mark_is_unknown_inside_a_block_and_refused_once_closed(db_path: str) -> None:
    store = SqliteStore(db_path)
    with store.read():
        assert store.change_mark() is None
    with store.transaction():
        assert store.change_mark() is None
    assert isinstance(store.change_mark(), int)
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.change_mark()


def test_stores_of_one_database_share_one_mapping_until_the_last_closes(db_path: str) -> None:
    """SECURITY: closing a descriptor of the ``-shm`` file would drop every lock SQLite holds
    on it in this process, so the one mapping stays open while any store uses it."""
    first = SqliteStore(db_path)
    second = SqliteStore(db_path)
    index = _mapping_of(db_path)
    assert index is not None and index.users == 2
    first.close()
    assert _mapping_of(db_path) is index and index.users == 1
    assert _is_open_on(index, db_path)
    assert second.change_mark_source == "wal-index"
    before = second.change_mark()
    second.migrate("marks", ["CREATE TABLE marks (v INTEGER)"])
    after = second.change_mark()
    assert after is not None and before is not None and after > before
    second.close()
    assert index.users == 0 and index.mapping.closed
    assert not os.path.exists(db_path + "-shm")  # SQLite's last connection removed it


def test_a_store_closed_while_a_thread_reads_lets_go_when_the_thread_is_done(
    db_path: str,
) -> None:
    store = SqliteStore(db_path)
    index = _mapping_of(db_path)
    assert index is not None
    inside, leave = threading.Event(), threading.Event()

    def hold_a_read() -> None:
        with store.read():
            inside.set()
            leave.wait(30)

    worker = threading.Thread(target=hold_a_read)
    worker.start()
    assert inside.wait(30)
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.change_mark()
    # The reading connection is still open, so SQLite's locks must stay: our descriptor too.
    assert index.users == 1 and _is_open_on(index, db_path)
    leave.set()
    worker.join()
    assert index.users == 0 and index.mapping.closed
    assert not os.path.exists(db_path + "-shm")


def test_a_shm_file_that_sqlite_has_not_open_is_never_mapped(tmp_path: Path) -> None:
    """A stray ``-shm`` file (left by a crash, or beside a symbolic link) is not the one in
    use: nothing is opened, and the store would keep its PRAGMA."""
    path = str(tmp_path / "stray.db")
    Path(path + "-shm").write_bytes(b"\0" * 32768)
    assert wal_index.attach(path) is None
    assert _shm_descriptors(path) == 0


def test_an_unknown_header_is_not_read(db_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wal-index whose header is not the known format keeps the PRAGMA; the mapping is
    still let go only when the store closes."""
    monkeypatch.setattr(wal_index, "_INDEX_VERSION", 1)
    store = SqliteStore(db_path)
    assert store.change_mark_source == "data_version"
    store.migrate("marks", ["CREATE TABLE marks (v INTEGER)"])
    first = store.change_mark()
    _write(store, 3)
    second = store.change_mark()
    assert second is not None and first is not None and second > first
    index = _mapping_of(db_path)
    assert index is not None and _is_open_on(index, db_path)
    store.close()
    assert index.mapping.closed
    assert not os.path.exists(db_path + "-shm")


def _child_marks(path: str, answers: multiprocessing.queues.Queue[object]) -> None:
    store = _inherited[0]
    try:
        source = store.change_mark_source
        first = store.change_mark()
        _write(store, 9)
        second = store.change_mark()
        answers.put((source, first is not None and second is not None and second > first))
    except BaseException as exc:  # reported to the parent, which asserts
        answers.put(repr(exc))


_inherited: list[SqliteStore] = []


def test_a_forked_child_goes_back_to_the_pragma(db_path: str) -> None:
    store = SqliteStore(db_path)
    store.migrate("marks", ["CREATE TABLE marks (v INTEGER)"])
    assert store.change_mark_source == "wal-index"
    _inherited[:] = [store]
    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    child = context.Process(target=_child_marks, args=(db_path, answers))
    child.start()
    child.join(60)
    _inherited.clear()
    assert child.exitcode == 0
    assert answers.get(timeout=10) == ("data_version", True)
    # The parent still reads its mapping, and sees the child's commit.
    assert store.change_mark_source == "wal-index"
    before = store.change_mark()
    assert store.read_one("SELECT v FROM marks") == (9,)
    _write(store, 10)
    after = store.change_mark()
    assert after is not None and before is not None and after > before
    store.close()
