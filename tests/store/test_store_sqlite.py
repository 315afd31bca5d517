"""SqliteStore: locations, transactions, migrations, options and multi-process safety."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from svcrest.store import open_store
from svcrest.store import sqlite as sqlite_module
from svcrest.store.sqlite import SqliteStore, StoreError, retry_while_locked


@pytest.fixture
def memory_store() -> Iterator[SqliteStore]:
    store = SqliteStore(None)
    yield store
    store.close()


@pytest.fixture
def file_store(tmp_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(str(tmp_path / "site.db"))
    yield store
    store.close()


@pytest.mark.parametrize(
    "location", [None, "", ":memory:", "sqlite://", "sqlite:///:memory:"], ids=repr
)
def test_memory_locations(location: str | None) -> None:
    with SqliteStore(location) as store:
        assert store.path is None
        assert store.add_option("k", "v") == "v"


def test_path_and_url_locations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "var").mkdir()
    with SqliteStore("sqlite:///var/rel.db") as store:
        assert store.path == "var/rel.db"
        store.add_option("where", "relative")
    assert (tmp_path / "var" / "rel.db").is_file()
    absolute = tmp_path / "abs.db"
    with SqliteStore(f"sqlite:///{absolute}") as store:
        assert store.path == str(absolute)
        store.add_option("where", "absolute")
    with SqliteStore(str(absolute)) as store:
        assert store.get_option("where") == "absolute"


def test_file_store_pragmas(file_store: SqliteStore) -> None:
    with file_store.read() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA busy_timeout").fetchone() == (5000,)
        assert conn.execute("PRAGMA foreign_keys").fetchone() == (1,)


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("/no/such/dir/site.db", "store directory '/no/such/dir' does not exist"),
        ("sqlite:////no/such/dir/site.db", "store directory '/no/such/dir' does not exist"),
        ("sqlite:///", "has no database path"),
        ("sqlite:relative.db", "malformed store URL 'sqlite:relative.db'"),
        ("postgres://host/db", "unsupported store URL scheme 'postgres'"),
        ("bad\x00name.db", "NUL character"),
    ],
    ids=["missing-dir", "missing-dir-url", "url-without-path", "no-slashes", "scheme", "nul"],
)
def test_bad_locations(location: str, message: str) -> None:
    with pytest.raises(StoreError, match=message.replace("(", r"\(")):
        SqliteStore(location)


def test_open_errors_are_store_errors(tmp_path: Path) -> None:
    not_a_db = tmp_path / "garbage.db"
    not_a_db.write_bytes(b"this is not a database file, just text" * 100)
    with pytest.raises(StoreError, match="cannot open store"):
        SqliteStore(str(not_a_db))
    with pytest.raises(StoreError, match="cannot open store"):
        SqliteStore(str(tmp_path))  # a directory
    assert issubclass(StoreError, ValueError)


def test_sqlite_errors_while_opening_are_store_errors(tmp_path: Path) -> None:
    path = tmp_path / "foreign.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_versions (unrelated TEXT)")  # another program's table
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"cannot open store .*no such column: version"):
        SqliteStore(str(path))


def test_open_store_passes_stores_through(tmp_path: Path) -> None:
    with SqliteStore(None) as store:
        assert open_store(store) is store
    with open_store(str(tmp_path / "x.db")) as store:
        assert isinstance(store, SqliteStore)
        assert store.path == str(tmp_path / "x.db")
        assert store.dialect == "sqlite"
    with open_store(None) as store:
        assert isinstance(store, SqliteStore)
        assert store.path is None


def test_transaction_commits_and_rolls_back(memory_store: SqliteStore) -> None:
    memory_store.migrate("t", ["CREATE TABLE items (name TEXT)"])
    with memory_store.transaction() as conn:
        conn.execute("INSERT INTO items VALUES ('kept')")
    with pytest.raises(RuntimeError, match="boom"), memory_store.transaction() as conn:
        conn.execute("INSERT INTO items VALUES ('lost')")
        raise RuntimeError("boom")
    with memory_store.read() as conn:
        assert conn.execute("SELECT name FROM items").fetchall() == [("kept",)]


def test_nested_transaction_is_a_savepoint(file_store: SqliteStore) -> None:
    file_store.migrate("t", ["CREATE TABLE items (name TEXT)"])
    with file_store.transaction() as outer:
        outer.execute("INSERT INTO items VALUES ('outer')")
        with pytest.raises(KeyError), file_store.transaction() as inner:
            assert inner is outer
            inner.execute("INSERT INTO items VALUES ('inner')")
            raise KeyError("undo inner only")
        with file_store.read() as reader:
            assert reader is outer
            assert reader.execute("SELECT COUNT(*) FROM items").fetchone() == (1,)
    with file_store.read() as conn:
        assert conn.execute("SELECT name FROM items").fetchall() == [("outer",)]


def test_transaction_inside_read_is_refused(file_store: SqliteStore) -> None:
    with (
        file_store.read(),
        pytest.raises(StoreError, match=r"transaction\(\) inside read\(\)"),
        file_store.transaction(),
    ):
        pass  # pragma: no cover - never entered
    with file_store.transaction() as conn:  # the thread is usable afterwards
        conn.execute("SELECT 1")


def test_migrate_applies_each_step_once(file_store: SqliteStore) -> None:
    steps = [
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT);"
        " INSERT INTO notes (title) VALUES ('semi;colon')",
        "ALTER TABLE notes ADD COLUMN body TEXT NOT NULL DEFAULT ''",
    ]
    assert file_store.migrate("notes", steps[:1]) == 1
    assert file_store.migrate("notes", steps[:1]) == 1
    assert file_store.migrate("notes", steps) == 2
    assert file_store.migrate("notes", steps) == 2
    with file_store.read() as conn:
        assert conn.execute("SELECT id, title, body FROM notes").fetchall() == [
            (1, "semi;colon", "")
        ]
        versions = conn.execute(
            "SELECT component, version FROM schema_versions ORDER BY component"
        ).fetchall()
    assert versions == [("notes", 2), ("store", 1)]


def test_migrate_failed_step_changes_nothing(memory_store: SqliteStore) -> None:
    with pytest.raises(sqlite3.OperationalError):
        memory_store.migrate("bad", ["CREATE TABLE ok (x)", "CREATE TABLE ok (x)"])
    with memory_store.read() as conn:
        tables = conn.execute("SELECT name FROM sqlite_master WHERE name = 'ok'").fetchall()
        version = conn.execute(
            "SELECT version FROM schema_versions WHERE component = 'bad'"
        ).fetchone()
    assert tables == []
    assert version is None


def test_migrate_refuses_newer_schema(memory_store: SqliteStore) -> None:
    memory_store.migrate("c", ["CREATE TABLE a (x)", "CREATE TABLE b (x)"])
    with pytest.raises(StoreError, match="'c' is at version 2, newer than the 1 steps"):
        memory_store.migrate("c", ["CREATE TABLE a (x)"])
    with pytest.raises(ValueError, match="non-empty component"):
        memory_store.migrate("", [])


def test_options(memory_store: SqliteStore) -> None:
    assert memory_store.get_option("color") is None
    assert memory_store.add_option("color", "blue") == "blue"
    assert memory_store.add_option("color", "red") == "blue"
    assert memory_store.get_option("color") == "blue"


def test_two_instances_on_one_file_agree(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    stores = [SqliteStore(path) for _ in range(8)]
    barrier = threading.Barrier(len(stores))
    results: list[str] = []

    def race(index: int) -> None:
        barrier.wait()
        results.append(stores[index].add_option("secret", f"candidate-{index}"))

    threads = [threading.Thread(target=race, args=(i,)) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in stores:
        store.close()
    assert len(results) == 8
    assert len(set(results)) == 1
    assert results[0].startswith("candidate-")


_CHILD = """
import sys
from svcrest.store.sqlite import SqliteStore
store = SqliteStore(sys.argv[1])
store.migrate("race", ["CREATE TABLE hits (n INTEGER)", "INSERT INTO hits VALUES (1)"])
print(store.add_option("secret", sys.argv[2]))
store.close()
"""


def test_processes_starting_at_once_migrate_once_and_share_the_secret(tmp_path: Path) -> None:
    path = str(tmp_path / "multi.db")
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, path, f"secret-{i}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    outputs = [child.communicate(timeout=60) for child in children]
    assert [child.returncode for child in children] == [0, 0, 0, 0], outputs
    secrets = {out.strip() for out, _err in outputs}
    assert len(secrets) == 1
    with SqliteStore(path) as store:
        assert store.get_option("secret") in secrets
        with store.read() as conn:
            assert conn.execute("SELECT COUNT(*) FROM hits").fetchone() == (1,)


def test_threads_share_one_memory_database(memory_store: SqliteStore) -> None:
    memory_store.migrate("t", ["CREATE TABLE n (v INTEGER)"])

    def insert(value: int) -> None:
        for _ in range(20):
            with memory_store.transaction() as conn:
                conn.execute("INSERT INTO n VALUES (?)", (value,))

    threads = [threading.Thread(target=insert, args=(i,)) for i in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with memory_store.read() as conn:
        assert conn.execute("SELECT COUNT(*), SUM(v) FROM n").fetchone() == (100, 200)


def test_threads_on_a_file_store(file_store: SqliteStore) -> None:
    file_store.migrate("t", ["CREATE TABLE n (v INTEGER)"])
    errors: list[BaseException] = []

    def work(value: int) -> None:
        try:
            for _ in range(20):
                with file_store.transaction() as conn:
                    conn.execute("INSERT INTO n VALUES (?)", (value,))
                with file_store.read() as conn:
                    conn.execute("SELECT COUNT(*) FROM n").fetchone()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with file_store.read() as conn:
        assert conn.execute("SELECT COUNT(*), SUM(v) FROM n").fetchone() == (120, 300)


def test_foreign_keys_enforced(memory_store: SqliteStore) -> None:
    memory_store.migrate(
        "fk",
        [
            "CREATE TABLE parent (id INTEGER PRIMARY KEY);"
            "CREATE TABLE child (parent_id INTEGER REFERENCES parent (id))"
        ],
    )
    with pytest.raises(sqlite3.IntegrityError), memory_store.transaction() as conn:
        conn.execute("INSERT INTO child VALUES (42)")


def test_closed_store_refuses_use(tmp_path: Path) -> None:
    for store in (SqliteStore(None), SqliteStore(str(tmp_path / "c.db"))):
        assert store.closed is False
        store.close()
        store.close()  # idempotent
        assert store.closed is True
        with pytest.raises(StoreError, match="the store is closed"):
            store.get_option("x")


def test_close_inside_a_block_is_refused(memory_store: SqliteStore) -> None:
    with (
        memory_store.read(),
        pytest.raises(StoreError, match=r"close\(\) called inside a read\(\)"),
    ):
        memory_store.close()
    assert memory_store.closed is False


class _FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_switching_to_wal_waits_while_another_process_holds_the_lock() -> None:
    clock = _FakeClock()
    attempts: list[float] = []

    def switch() -> None:
        attempts.append(clock.now)
        if len(attempts) < 4:
            raise sqlite3.OperationalError("database is locked")

    retry_while_locked(switch, 5.0, clock=clock, sleep=clock.sleep)
    assert len(attempts) == 4
    assert attempts[-1] == pytest.approx(0.03)


def test_a_lock_held_past_the_timeout_or_another_error_propagates() -> None:
    clock = _FakeClock()
    calls: list[int] = []

    def locked() -> None:
        calls.append(1)
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        retry_while_locked(locked, 0.05, clock=clock, sleep=clock.sleep)
    assert len(calls) == 6  # at 0, 10, 20, 30, 40 and 50 ms

    def broken() -> None:
        calls.append(2)
        raise sqlite3.OperationalError("no such table: x")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        retry_while_locked(broken, 5.0, clock=clock, sleep=clock.sleep)
    assert calls.count(2) == 1


# -- change_mark: whether anything was written since ----------------------------------------


def _write(store: SqliteStore, value: int) -> None:
    with store.transaction() as conn:
        conn.execute("INSERT INTO marks VALUES (?)", (value,))


@pytest.fixture(params=["wal-index", "data_version"])
def marked_file(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, SqliteStore]]:
    """A file store whose change marks come from each source in turn (the wal-index header
    where it can be mapped, ``PRAGMA data_version`` otherwise)."""
    if request.param == "wal-index" and not sys.platform.startswith("linux"):
        pytest.skip("the wal-index is mapped on Linux only")
    if request.param == "data_version":
        monkeypatch.setattr(sqlite_module, "attach", lambda path: None)
    path = str(tmp_path / "marks.db")
    store = SqliteStore(path)
    store.migrate("marks", ["CREATE TABLE marks (v INTEGER)"])
    assert store.change_mark_source == request.param
    yield path, store
    store.close()


def test_change_mark_holds_while_nothing_is_written(marked_file: tuple[str, SqliteStore]) -> None:
    _path, store = marked_file
    first = store.change_mark()
    assert isinstance(first, int)
    assert store.change_mark() == first
    assert store.read_one("SELECT COUNT(*) FROM marks") == (0,)
    with store.read() as conn:
        conn.execute("SELECT * FROM marks").fetchall()
    assert store.change_mark() == first


def test_change_mark_moves_after_a_write_of_this_store(
    marked_file: tuple[str, SqliteStore], memory_store: SqliteStore
) -> None:
    _path, store = marked_file
    memory_store.migrate("marks", ["CREATE TABLE marks (v INTEGER)"])
    for each in (store, memory_store):
        before = each.change_mark()
        _write(each, 1)
        after = each.change_mark()
        assert after is not None and before is not None and after > before
        assert each.change_mark() == after


def test_change_mark_moves_after_a_write_on_another_connection(
    marked_file: tuple[str, SqliteStore],
) -> None:
    path, store = marked_file
    before = store.change_mark()
    with SqliteStore(path) as other:
        _write(other, 2)
    after = store.change_mark()
    assert after is not None and before is not None and after > before


def test_change_mark_moves_after_a_write_by_another_process(
    marked_file: tuple[str, SqliteStore],
) -> None:
    path, store = marked_file
    before = store.change_mark()
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('INSERT INTO marks VALUES (3)')",
            path,
        ],
        check=True,
        timeout=60,
    )
    after = store.change_mark()
    assert after is not None and before is not None and after > before


def test_change_mark_moves_for_a_write_made_on_a_pooled_connection(
    marked_file: tuple[str, SqliteStore],
) -> None:
    """A write by another thread, on a connection of the same pool, moves the mark for the
    connection this thread gets next, whichever it is."""
    _path, store = marked_file
    before = store.change_mark()
    worker = threading.Thread(target=_write, args=(store, 4))
    worker.start()
    worker.join()
    after = store.change_mark()
    assert after is not None and before is not None and after > before


def test_change_mark_is_unknown_inside_a_block(marked_file: tuple[str, SqliteStore]) -> None:
    _path, store = marked_file
    with store.read():
        assert store.change_mark() is None
    with store.transaction():
        assert store.change_mark() is None
    assert isinstance(store.change_mark(), int)


def test_change_mark_of_a_memory_store_follows_its_one_connection(
    memory_store: SqliteStore,
) -> None:
    """The in-memory database's only connection makes every write: a write from another
    thread, committed or still open, moves the mark; a closed store refuses."""
    memory_store.migrate("marks", ["CREATE TABLE marks (v INTEGER)"])
    first = memory_store.change_mark()
    assert memory_store.change_mark() == first
    worker = threading.Thread(target=_write, args=(memory_store, 5))
    worker.start()
    worker.join()
    second = memory_store.change_mark()
    assert second is not None and first is not None and second > first
    memory_store.close()
    with pytest.raises(StoreError, match="closed"):
        memory_store.change_mark()


@pytest.fixture(params=["wal-index", "data_version", "memory"])
def each_source(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[SqliteStore]:
    """A store of each source of change marks: a file with its wal-index mapped, a file
    without (``PRAGMA data_version``), and an in-memory store."""
    if request.param == "wal-index" and not sys.platform.startswith("linux"):
        pytest.skip("the wal-index is mapped on Linux only")
    if request.param == "data_version":
        monkeypatch.setattr(sqlite_module, "attach", lambda path: None)
    store = SqliteStore(None if request.param == "memory" else str(tmp_path / "source.db"))
    store.migrate("marks", ["CREATE TABLE marks (v INTEGER)"])
    assert store.change_mark_source == request.param
    yield store
    store.close()


def test_the_source_of_change_marks_is_chosen_once_at_open(
    each_source: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each source reads on its own: only a store without a mapped wal-index asks the
    PRAGMA, and the source stays across reads, writes and blocks."""
    store = each_source
    source = store.change_mark_source
    pragma_read = sqlite_module._DataVersionMarks.read
    pragma_reads: list[SqliteStore] = []

    def counted(self: object, of: SqliteStore) -> int | None:
        pragma_reads.append(of)
        return pragma_read(sqlite_module._DATA_VERSION_MARKS, of)

    monkeypatch.setattr(sqlite_module._DataVersionMarks, "read", counted)
    first = store.change_mark()
    assert store.change_mark() == first
    _write(store, 1)
    with store.read():
        assert store.change_mark() is None
    second = store.change_mark()
    assert first is not None and second is not None and second > first
    assert store.change_mark_source == source
    assert len(pragma_reads) == (3 if source == "data_version" else 0)


def test_a_closed_store_refuses_change_marks_from_every_source(each_source: SqliteStore) -> None:
    each_source.close()
    with pytest.raises(StoreError, match="closed"):
        each_source.change_mark()
    # A file store lets its wal-index go when it closes: the PRAGMA (which refuses too).
    memory = each_source.path is None
    assert each_source.change_mark_source == ("memory" if memory else "data_version")


def test_a_change_mark_function_taken_early_follows_the_store(each_source: SqliteStore) -> None:
    """``store.change_mark`` taken once (as the cookie check does) answers as the method
    does, also after the store's source is replaced (a fork, a close)."""
    store = each_source
    mark = store.change_mark
    first = mark()
    assert mark() == first == store.change_mark()
    _write(store, 1)
    second = mark()
    assert first is not None and second is not None and second > first
    with store.read():
        assert mark() is None
    if store.change_mark_source == "wal-index":
        store._forget_wal_after_fork()  # as in a forked child: the PRAGMA from now on
        assert store.change_mark_source == "data_version"
        moved = mark()  # the PRAGMA's first look may move it (never back)
        assert moved is not None and moved >= second
        assert mark() == moved
        _write(store, 2)
        third = mark()
        assert third is not None and third > moved
    store.close()
    with pytest.raises(StoreError, match="closed"):
        mark()


def _each_kind(tmp_path: Path) -> list[SqliteStore]:
    stores = [SqliteStore(None), SqliteStore(str(tmp_path / "one.db"))]
    for store in stores:
        store.migrate("t", ["CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)"])
        with store.transaction() as conn:
            conn.executemany("INSERT INTO items VALUES (?, ?)", [(1, "a"), (2, "b")])
    return stores


_READS = [
    ("SELECT name FROM items WHERE id = ?", (1,)),
    ("SELECT id, name FROM items WHERE id = ?", (2,)),
    ("SELECT name FROM items WHERE id = ?", (3,)),
    ("SELECT COUNT(*) FROM items", ()),
]


def test_read_one_answers_as_a_read_block_and_gives_its_connection_back(tmp_path: Path) -> None:
    for store in _each_kind(tmp_path):
        for sql, params in _READS:
            with store.read() as conn:
                expected = conn.execute(sql, params).fetchone()
            assert store.read_one(sql, params) == expected
            assert store._local.conn is None
            if store.path is None:  # the memory store's one connection free again
                assert store._memory_lock.acquire(blocking=False)
                store._memory_lock.release()
            else:  # the pooled connection back in the pool, reused by the next read
                assert len(store._idle) == 1
                pooled = store._idle[0]
                store.read_one("SELECT 1")
                assert store._idle == [pooled]
        assert store.read_one("SELECT name FROM items WHERE id = ?", (1,)) == ("a",)
        assert store.read_one("SELECT name FROM items WHERE id = ?", (9,)) is None
        store.close()


def test_read_one_gives_its_connection_back_when_the_statement_fails(tmp_path: Path) -> None:
    for store in _each_kind(tmp_path):
        with pytest.raises(sqlite3.OperationalError) as in_block, store.read() as conn:
            conn.execute("SELECT x FROM nowhere").fetchone()
        with pytest.raises(sqlite3.OperationalError) as alone:
            store.read_one("SELECT x FROM nowhere")
        assert str(alone.value) == str(in_block.value) == "no such table: nowhere"
        assert store._local.conn is None
        if store.path is None:
            assert store._memory_lock.acquire(blocking=False)
            store._memory_lock.release()
        else:
            assert len(store._idle) == 1
        assert store.read_one("SELECT COUNT(*) FROM items") == (2,)
        store.close()


def test_read_one_inside_a_block_reads_the_blocks_connection(tmp_path: Path) -> None:
    store, other = SqliteStore(str(tmp_path / "s.db")), None
    store.migrate("t", ["CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)"])
    other = SqliteStore(str(tmp_path / "s.db"))
    with store.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM items").fetchone() == (0,)
        with other.transaction() as writer:  # after the block's snapshot began
            writer.execute("INSERT INTO items VALUES (1, 'late')")
        depth = store._local.depth
        assert store.read_one("SELECT COUNT(*) FROM items") == (0,)  # the block's snapshot
        with pytest.raises(sqlite3.OperationalError, match="no such table"):
            store.read_one("SELECT * FROM nowhere")
        assert store._local.conn is conn and store._local.depth == depth
    assert store.read_one("SELECT COUNT(*) FROM items") == (1,)
    with store.transaction() as conn:
        conn.execute("INSERT INTO items VALUES (2, 'own')")
        assert store.read_one("SELECT COUNT(*) FROM items") == (2,)  # its own write seen
        assert store._local.conn is conn and store._local.depth == 0
    assert store._local.conn is None
    other.close()
    store.close()


def test_read_one_of_a_closed_store_is_refused(tmp_path: Path) -> None:
    for store in (SqliteStore(None), SqliteStore(str(tmp_path / "c.db"))):
        store.close()
        with pytest.raises(StoreError, match="the store is closed"):
            store.read_one("SELECT 1")
        assert store._local.conn is None


def test_read_one_takes_no_context_manager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # PERF: the checkout written out (five Python calls a read saved); it answers as above.
    stores = _each_kind(tmp_path)

    def refused(self: SqliteStore) -> None:
        raise AssertionError("read_one went through _checkout")

    monkeypatch.setattr(SqliteStore, "_checkout", refused)
    for store in stores:
        assert store.read_one("SELECT name FROM items WHERE id = ?", (2,)) == ("b",)
        with store.read():
            assert store.read_one("SELECT COUNT(*) FROM items") == (2,)
        store.close()
