# The two set-up commands of the README. Both create .venv on first use.
PYTHON ?= python3.11
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: up test

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	touch $(STAMP)

up: $(STAMP)
	$(VENV)/bin/koord up

# PostgreSQL and Prometheus (installed from Debian's packages when missing), the Kafka jars (fetched with
# Maven) and kube-apiserver and etcd (built with Go; both cached in ~/.cache/koordstream) are set up by the
# tests' own files; all are required here, not skipped. Two test processes, as the suite waits on brokers more than
# it computes (tests/conftest.py says which tests share a process); then, alone, the tests that measure the host.
TEST_ENV := KOORD_REQUIRE_POSTGRES=1 KOORD_REQUIRE_KAFKA=1 KOORD_REQUIRE_KUBE=1 KOORD_REQUIRE_PROMETHEUS=1 \
	KOORD_TEST_POSTGRES_URL=postgresql+psycopg2://postgres@127.0.0.1:$${KOORD_PG_PORT:-55432}/test

test: $(STAMP)
	bash .ci/postgres-up
	bash .ci/prometheus-up
	$(TEST_ENV) $(VENV)/bin/pytest -n 2 -m "not measures"
	$(TEST_ENV) $(VENV)/bin/pytest -m measures tests/node_agent tests/integration/test_qos_loop.py tests/integration/test_yarn_qos.py tests/integration/test_real_node.py tests/integration/test_real_node_cli.py
