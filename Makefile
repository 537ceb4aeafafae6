# The two commands of the README:  `make demo`  and  `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.fxla-installed

.PHONY: demo test docs bench clean

$(STAMP): pyproject.toml constraints.txt setup.py runtime/_fastcall.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -c constraints.txt -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

test: $(STAMP)
	$(PY) -m pytest -q tests
	$(VENV)/bin/lit -sv lit_tests

# make bench BENCH_ARGS="--quick" | "--models gpt2,bert" | "--markdown docs/performance.md" (see benchmarks/run.py -h)
bench: $(STAMP)
	$(PY) benchmarks/run.py $(BENCH_ARGS)

docs: $(STAMP)
	$(PY) -m fxla.dialects.fxla.docs > docs/dialect.md
	$(PY) -m fxla.lowering.coverage_doc > docs/ops.md
	$(PY) -m fxla.tools.apidoc > docs/api.md

clean:
	rm -rf $(VENV) build lit_tests/Output
