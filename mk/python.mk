# The Python package (bindings/python, `harel-transport`, import harel_transport): `make
# wheel` builds its wheel with the library inside; `make test-python` installs a wheel
# (PY_TEST_WHEEL: that one, or in `make test` the manylinux2014 wheel of `make dist`) into a
# venv of its own and runs the tests there, from a temporary directory outside the
# repository with PYTHONPATH and HAREL_TRANSPORT_LIB unset, so nothing of the build tree
# can be imported or loaded; `make bench-python` runs the Python-level benchmark.
.PHONY: wheel test-python bench-python python-tracing-worker
SUITES += test-python

PY_DIR       := bindings/python
PY_BUILD     := $(BUILD)/python
PY_STAGE     := $(PY_BUILD)/stage
PY_DIST      := $(PY_BUILD)/dist
PY_TOOLS     := $(PY_BUILD)/tools
PY_TEST_VENV := $(PY_BUILD)/venv
PY_BENCH_VENV := $(PY_BUILD)/bench-venv
# ctypes, so no CPython ABI: one wheel for every Python 3 on linux x86_64. Its platform tag
# (setup.py reads it from HAREL_WHEEL_PLAT): mk/dist.mk's make sets the manylinux2014 tags.
PY_PLAT      := linux_x86_64
PY_WHEEL     := $(PY_DIST)/harel_transport-$(VERSION)-py3-none-$(PY_PLAT).whl
# The wheel the tests install (test-python; python-tracing-worker, for test-tracing), its
# platform tag (tests/test_install.py checks the wheel's) and the target that builds it: run
# alone, `make wheel`'s, of the release library, so trying a change needs no portable build;
# in `make test` (TEST_ON_DIST, Makefile), the wheel a release ships, mk/dist.mk's, which
# test-dist builds anyway: no second wheel.
PY_TEST_PLAT  = $(if $(TEST_ON_DIST),$(WHEEL_PLAT),$(PY_PLAT))
PY_TEST_WHEEL = $(if $(TEST_ON_DIST),$(DIST_DIR),$(PY_DIST))/harel_transport-$(VERSION)-py3-none-$(PY_TEST_PLAT).whl
PY_TEST_BUILD := $(if $(TEST_ON_DIST),dist-once,wheel)
STRIP        ?= strip

# What builds the wheel (setuptools from PyPI), and what the tests run on: harel, and what
# harel's own suite needs (test_harel_suite.py runs it): its libsql extra, its dev group's
# test packages and the clients of the backends its unit tests fake; prometheus_client,
# which the metrics example (bindings/python/examples) exports with; and pytest-timeout, for
# PY_TEST_TIMEOUT; opentelemetry-api (the package's [opentelemetry] extra) and
# opentelemetry-sdk, whose in-memory exporter the tracing tests and
# bindings/python/tools/tracing_worker.py (the cross-language trace test's worker) read.
PY_BUILD_REQS := setuptools==75.8.0
PY_TEST_REQS  := harel==0.9.0 pytest==8.3.4 pytest-asyncio==1.3.0 libsql==0.1.11 \
	fakeredis==2.41.0 lupa==2.8 redis==8.1.0 mongomock==4.3.0 pymongo==4.20.1 motor==3.7.1 \
	moto==5.2.4 boto3==1.40.61 aioboto3==15.5.0 aiomoto==0.5.8 "psycopg[binary]==3.3.9" \
	psycopg-pool==3.3.3 httpx==0.28.1 requests==2.34.2 pygls==1.3.1 textual==8.2.8 \
	prometheus_client==0.21.1 pytest-timeout==2.4.0 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2
# Seconds a test may run: a hang fails within minutes, naming the test (in the stacks
# pytest-timeout prints), instead of at CI's own timeout. The thread method, because the
# signal one cannot end a test stuck in a C call. test_harel_suite.py's run of harel's
# suite sets its own.
PY_TEST_TIMEOUT := 300
# The bench's peers: harel's LibsqlTransport (libsql), RedisTransport (redis) and
# PostgresTransport (psycopg), as harel's extras name them.
PY_BENCH_REQS := harel==0.9.0 libsql==0.1.11 "redis>=5,<9" "psycopg[binary]>=3,<4"

$(PY_TOOLS)/.ready: mk/python.mk
	rm -rf $(PY_TOOLS)
	$(PYTHON) -m venv $(PY_TOOLS)
	$(PY_TOOLS)/bin/pip install --quiet $(PY_BUILD_REQS)
	touch $@

# The wheel: a staged copy of bindings/python with the release library (stripped) at
# harel_transport/_lib/libharel_transport.so.$(ABI_VERSION), built by pip with the tools'
# setuptools. The package's version must be the library's.
wheel: $(LIB_TARGET) $(PY_TOOLS)/.ready
	@v=$$(sed -n 's/^__version__ = "\(.*\)"/\1/p' $(PY_DIR)/harel_transport/_version.py); \
		if [ "$$v" != "$(VERSION)" ]; then \
			echo "$(PY_DIR)/harel_transport/_version.py has $$v, Cargo.toml $(VERSION): make them agree"; exit 1; fi
	rm -rf $(PY_STAGE)
	mkdir -p $(PY_STAGE)/harel_transport/_lib $(PY_STAGE)/harel_transport/_methods $(PY_DIST)
	cp $(PY_DIR)/pyproject.toml $(PY_DIR)/setup.py $(PY_DIR)/README.md $(PY_STAGE)/
	cp $(PY_DIR)/harel_transport/*.py $(PY_DIR)/harel_transport/py.typed $(PY_STAGE)/harel_transport/
	cp $(PY_DIR)/harel_transport/_methods/*.py $(PY_STAGE)/harel_transport/_methods/
	$(STRIP) --strip-unneeded -o $(PY_STAGE)/harel_transport/_lib/libharel_transport.so.$(ABI_VERSION) $(LIB_SO)
	rm -f $(PY_DIST)/harel_transport-*.whl
	HAREL_WHEEL_PLAT='$(PY_PLAT)' $(PY_TOOLS)/bin/pip wheel --quiet --no-deps --no-build-isolation --wheel-dir $(PY_DIST) $(PY_STAGE)
	@test -f $(PY_WHEEL) || { echo "expected $(PY_WHEEL); made:"; ls $(PY_DIST); exit 1; }
	@echo "built $(PY_WHEEL)"

$(PY_TEST_VENV)/.ready: mk/python.mk
	rm -rf $(PY_TEST_VENV)
	$(PYTHON) -m venv $(PY_TEST_VENV)
	$(PY_TEST_VENV)/bin/pip install --quiet $(PY_TEST_REQS)
	touch $@

# The suite runs on a copy of bindings/python/tests (and examples/, which a test imports, and
# tools/, whose tracing worker a test runs) in a temporary directory: the package comes only from the wheel installed in the venv. HAREL_PY_STRICT=1 makes conftest.py fail
# a run that collected nothing or skipped anything. pytest-asyncio is harel's suite's
# (asyncio_mode=auto), which runs in a pytest of its own: ours runs its loops itself.
test-python: $(PY_TEST_BUILD) $(PY_TEST_VENV)/.ready
	$(PY_TEST_VENV)/bin/pip install --quiet --no-deps --force-reinstall $(PY_TEST_WHEEL)
	@run=$$(mktemp -d) && cp -r $(PY_DIR)/tests $$run/tests && cp -r $(PY_DIR)/examples $$run/examples && \
		cp -r $(PY_DIR)/tools $$run/tools && \
		cd $$run && env -u PYTHONPATH -u HAREL_TRANSPORT_LIB HAREL_PY_STRICT=1 HAREL_WHEEL_PLAT='$(PY_TEST_PLAT)' \
		$(CURDIR)/$(PY_TEST_VENV)/bin/python -m pytest -p no:cacheprovider -p no:asyncio -q \
		--timeout=$(PY_TEST_TIMEOUT) --timeout-method=thread tests; \
		status=$$?; cd / && rm -rf $$run; exit $$status

# The cross-language trace test's Python worker (tests/tracing/run.py runs it):
#   $(PY_TEST_VENV)/bin/python $(PY_DIR)/tools/tracing_worker.py --queue Q --prefix harel \
#       --spans FILE --key python --count N
# This puts the tests' wheel into the test venv, which has opentelemetry-sdk.
python-tracing-worker: $(PY_TEST_BUILD) $(PY_TEST_VENV)/.ready
	$(PY_TEST_VENV)/bin/pip install --quiet --no-deps --force-reinstall $(PY_TEST_WHEEL)

$(PY_BENCH_VENV)/.ready: mk/python.mk
	rm -rf $(PY_BENCH_VENV)
	$(PYTHON) -m venv $(PY_BENCH_VENV)
	$(PY_BENCH_VENV)/bin/pip install --quiet $(PY_BENCH_REQS)
	touch $@

# The Python-level benchmark: this package (from the wheel) against harel's
# LibsqlTransport, SqliteTransport, RedisTransport (a redis-server it starts) and
# PostgresTransport (a PostgreSQL it starts), one harness, one event size. As root it
# installs redis-server and postgresql with apt-get when they are missing.
bench-python: wheel $(PY_BENCH_VENV)/.ready
	$(PY_BENCH_VENV)/bin/pip install --quiet --no-deps --force-reinstall $(PY_WHEEL)
	@run=$$(mktemp -d) && cp $(PY_DIR)/bench/bench.py $$run/ && cd $$run && \
		env -u PYTHONPATH -u HAREL_TRANSPORT_LIB \
		$(CURDIR)/$(PY_BENCH_VENV)/bin/python bench.py; \
		status=$$?; cd / && rm -rf $$run; exit $$status
