# streamfs: `make demo` runs the whole pipeline once; `make test` runs the whole test suite.
# Both set up everything they need (virtualenv, Apache Kafka jars from Maven Central).
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin

.PHONY: venv constraints test demo bench compose-smoke broker-start broker-stop clean

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[test,eval,io]'
	touch $@

venv: $(VENV)/.installed

# after an upgrade the suite passed with: the versions `make venv` and the image install
constraints: venv
	{ sed -n '/^#/p' constraints.txt; $(BIN)/pip freeze --exclude-editable | grep -v '^pyflakes=='; } \
		> constraints.txt.new && mv constraints.txt.new constraints.txt

test: venv
	bash ops/kafka/broker.sh fetch
	$(BIN)/pytest

demo: venv
	bash ops/demo.sh

bench: venv
	$(BIN)/streamfs bench

# needs a running Docker engine (README, Docker); installs nothing
compose-smoke:
	bash ops/compose-smoke.sh all

broker-start:
	bash ops/kafka/broker.sh start

broker-stop:
	bash ops/kafka/broker.sh stop

clean:
	bash ops/kafka/broker.sh stop || true
	rm -rf .run .pytest_cache .hypothesis
