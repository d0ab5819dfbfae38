"""The swap of harel's SQLite and libSQL transports for `harel_transport.harel`'s, in every
interpreter of a harel test run: `test_harel_suite.py` installs this file as
``sitecustomize.py`` on that run's PYTHONPATH, so the pytest process and every worker
process harel's tests start import harel with the drop-in's classes in its place.

Every module of harel already imported that holds one of harel's four classes gets the
drop-in's in its stead; the modules imported later read the patched packages."""

from __future__ import annotations

import sys
from typing import Dict


def swap() -> Dict[type, type]:
    import harel.engine.aio_transport as aio
    import harel.engine.transport as sync

    from harel_transport import harel as ours

    classes: Dict[type, type] = {
        sync.SqliteTransport: ours.SqliteTransport,
        sync.LibsqlTransport: ours.LibsqlTransport,
        aio.AsyncSqliteTransport: ours.AsyncSqliteTransport,
        aio.AsyncLibsqlTransport: ours.AsyncLibsqlTransport,
    }
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "harel" or name.startswith("harel.")):
            continue
        for attr, value in list(vars(module).items()):
            if isinstance(value, type) and value in classes:
                setattr(module, attr, classes[value])
    return classes


swap()
