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

test: $(STAMP)
	bash .ci/postgres-up
	KOORD_REQUIRE_POSTGRES=1 $(VENV)/bin/pytest
