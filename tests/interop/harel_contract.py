"""harel 0.9's own transport contract (`harel.testing`), run by tests/interop.rs on harel's
SqliteTransport, LibsqlTransport and AsyncSqliteTransport over files that this library
prepared first, from another process: each holds a delayed message due years from now,
keys (one of an acked message), a message published inside an application transaction,
the application's own table and a paused group with a message. harel must pass its
contract on them as on a fresh file, and never hand out the delayed message nor the paused one.

    python harel_contract.py DIRECTORY PREPARE...

PREPARE is the command that prepares the file named by HAREL_TEST_DB in its environment.
"""

import asyncio
import itertools
import os
import sqlite3
import subprocess
import sys

from harel.engine.aio_transport import AsyncSqliteTransport
from harel.engine.transport import LibsqlTransport, SqliteTransport
from harel.testing import assert_async_transport_contract, assert_transport_contract

directory, prepare = sys.argv[1], sys.argv[2:]
numbers = itertools.count()
prepared = []


def prepared_file() -> str:
    path = os.path.join(directory, f"contract-{next(numbers)}.db")
    subprocess.run(prepare, env={**os.environ, "HAREL_TEST_DB": path}, check=True, capture_output=True)
    prepared.append(path)
    return path


assert_transport_contract(lambda clock: SqliteTransport(prepared_file(), clock=clock), timing=True, priorities=True)
assert_transport_contract(lambda clock: LibsqlTransport(prepared_file(), clock=clock), timing=True, priorities=True)
asyncio.run(
    assert_async_transport_contract(
        lambda clock: AsyncSqliteTransport.create(prepared_file(), clock=clock), timing=True, priorities=True
    )
)
for path in prepared:
    with sqlite3.connect(path) as db:
        delayed = db.execute(
            "SELECT count(*) FROM harel_transport_messages WHERE group_id = 'ours-delayed' AND locked_by = '__delayed__'"
        ).fetchone()[0]
        assert delayed == 1, f"{path}: the delayed message was handed out or changed"
        paused = db.execute("SELECT count(*) FROM harel_transport_messages WHERE group_id = 'ours-paused'").fetchone()[0]
        assert paused == 1, f"{path}: the paused group's message was handed out"
print(f"harel's contract passed on {len(prepared)} prepared files", flush=True)
