"""harel's own test suite (its transport contract, its engine tests and every other test
file of its sdist) against the drop-in at its defaults.

The wheel of harel has no tests: its sdist, of the version installed here, is fetched from
PyPI with pip into a temporary directory, and its suite is run there by pytest in a
process of its own, as harel runs it (its pytest settings; its tests that need a server
stack deselected by them), on the harel installed here. `harel_swap.py` is that run's
sitecustomize, so every interpreter of the run (harel's worker subprocesses too) builds
the drop-in's classes where harel's tests build harel's.

`DIFFERENT` are the tests of what the drop-in does otherwise by design (README, "The harel
drop-in"): each must fail, for its reason. Every other test must pass, and the only
skips are harel's own (doc blocks it does not run)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path
from typing import Dict, Tuple

import pytest

from conftest import child_env

#: A test (junit's classname::name) -> (why the drop-in differs, what its failure says).
DIFFERENT: Dict[str, Tuple[str, str]] = {
    "test.unit.engine.aio.test_async_sqlite::test_transport_ops_on_one_connection_do_not_interleave_transactions": (
        "after its checks of the queue (which pass), it reads harel's private aiosqlite connection",
        "object has no attribute '_conn'",
    ),
    "test.unit.engine.test_schema::test_the_sqlite_backends_create_exactly_the_described_schema": (
        "the queue's schema has tables (dead letters, keys, pauses), columns, indexes and triggers harel's has not",
        # pytest lists a few of the extra names, in the set's (hash-seeded) order: which ones varies
        "Extra items in the left set:",
    ),
    "test.unit.engine.test_schema::test_without_create_schema_nothing_is_created": (
        "create_schema=False on a file without the tables is refused at open (harel's fails at its first call)",
        "create_schema is off, and the table acme_wf_transport_messages",
    ),
    "test.unit.engine.test_schema::test_without_create_schema_it_runs_on_the_schema_a_migration_applied": (
        "harel's schema lacks what the queue needs: refused at open, naming it (schema_upgrade_sql adds it)",
        "create_schema is off, and the table acme_wf_transport_dead, the table acme_wf_transport_limits,",
    ),
    "test.unit.engine.test_schema::test_two_prefixes_share_one_sqlite_file": (
        "harel's SqliteStore and the transport on one file in one process: the hazard, refused at open",
        "another SQLite library in this process has this file open",
    ),
    "test.unit.docs.test_docs_examples::test_doc_examples_run[docs/guide/upgrading.md]": (
        "the upgrade guide's example opens harel's SqliteStore and the transport on one file: the hazard",
        "another SQLite library in this process has this file open",
    ),
}
#: harel's own skips: its doc test skips a page without a block it runs.
HARELS_SKIP = "no runnable python blocks"


@pytest.fixture(scope="module")
def harel_sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """harel's sdist, of the installed version, unpacked."""
    where = tmp_path_factory.mktemp("harel-sdist")
    spec = f"harel=={version('harel')}"
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:", spec, "-d", str(where)],
        check=True,
        capture_output=True,
        env=child_env(),
        timeout=300,
    )
    (archive,) = where.glob("harel-*.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(where, filter="data")
    (root,) = (p for p in where.iterdir() if p.is_dir())
    return root


def swapped_env(site: Path) -> dict:
    shutil.copy(Path(__file__).with_name("harel_swap.py"), site / "sitecustomize.py")
    return dict(child_env(), PYTHONPATH=str(site))


def test_the_run_builds_the_drop_ins_classes(tmp_path):
    script = (
        "import harel.engine.transport as t, harel.engine.aio_transport as a, harel.worker as w\n"
        "print(t.SqliteTransport.__module__, t.LibsqlTransport.__module__, a.AsyncSqliteTransport.__module__,"
        " a.AsyncLibsqlTransport.__module__, w.SqliteTransport.__module__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], env=swapped_env(tmp_path), capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["harel_transport.harel"] * 5


#: harel's suite runs as this many pytest processes at once, each on its share of the test
#: files: most of its time is one core's, and CI has two.
RUNS = 2


def harels_test_files(root: Path) -> list:
    """harel's test files (its settings' testpaths, pytest's default file names), sorted."""
    return sorted(p.relative_to(root).as_posix() for p in (root / "test").rglob("test_*.py"))


# Past mk/python.mk's limit per test: the whole of harel's suite (a few minutes), bounded by the
# runs' own timeout and the sdist's download; each of its tests has a limit of its own, below.
@pytest.mark.timeout(1800 + 300)
def test_harels_own_suite_passes_on_the_drop_in(harel_sdist, tmp_path):
    files = harels_test_files(harel_sdist)
    assert len(files) > 100, f"harel 0.9.0's sdist has 110 test files: {len(files)}"
    env = swapped_env(tmp_path)
    runs = []
    for n in range(RUNS):
        report = tmp_path / f"junit-{n}.xml"
        command = [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
            # a hung test fails (pytest-timeout, from the venv), named in the report
            "--timeout=300",
            # harel's own modules, from site-packages, not the sdist's src (its settings put it first)
            "-o", "pythonpath=test deploy",
            # the swap imports harel before pytest starts: it can't rewrite harel's asserts
            "-W", "ignore::pytest.PytestAssertRewriteWarning",
            *files[n::RUNS],
        ]
        proc = subprocess.Popen(
            command, cwd=harel_sdist, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        runs.append((report, proc))
    outcomes: Dict[str, Tuple[str, str]] = {}
    tails = []
    for report, proc in runs:
        try:
            output, _ = proc.communicate(timeout=1800)
        finally:
            proc.kill()
        tails.append(output[-3000:])
        assert report.exists(), output[-6000:]
        for case in ET.parse(report).iter("testcase"):
            name = f"{case.get('classname')}::{case.get('name')}"
            found = [child for child in case if child.tag in ("failure", "error", "skipped")]
            outcome = found[0].tag if found else "passed"
            detail = f"{found[0].get('message') or ''}\n{found[0].text or ''}" if found else ""
            outcomes[name] = (outcome, detail)
    failed = {name: detail for name, (outcome, detail) in outcomes.items() if outcome in ("failure", "error")}
    skipped = {name: detail for name, (outcome, detail) in outcomes.items() if outcome == "skipped"}
    passed = [name for name, (outcome, _) in outcomes.items() if outcome == "passed"]
    print(f"harel's suite on the drop-in: {len(passed)} passed, {len(failed)} failed as expected, {len(skipped)} skipped")

    unexpected = {name: detail[:2000] for name, detail in failed.items() if name not in DIFFERENT}
    assert not unexpected, unexpected
    for name, (why, says) in DIFFERENT.items():
        assert name in failed, f"{name} ({why}) did not fail: {outcomes.get(name, ('not run', ''))[0]}"
        assert says in failed[name], f"{name} failed otherwise than for {why!r}:\n{failed[name][:2000]}"
    assert all(HARELS_SKIP in detail for detail in skipped.values()), skipped
    assert len(passed) > 1000, f"{len(passed)} passed: not harel's whole suite (harel 0.9.0's passes 1,021)\n{tails}"
