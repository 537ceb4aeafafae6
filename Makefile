# The two commands of the README:  `make demo`  and  `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.fxla-installed

.PHONY: demo test docs bench fuzz zoo clean

# pip's editable install, then a finder put first on sys.meta_path so that a folder named fxla next to a
# script cannot shadow the package (see utils/install_finder.py)
$(STAMP): pyproject.toml constraints.txt setup.py runtime/_fastcall.c utils/install_finder.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -c constraints.txt -e '.[test]'
	$(PY) utils/install_finder.py
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

# pytest on every CPU (pytest-xdist, at most 4 workers: each holds torch, jax and compiled models and keeps to its
# own share of the cores); the slow (cross-process, big-model) tests go first, see tests/conftest.py.  lit imports
# torch and jax once (lit.cfg.py).
test: $(STAMP)
	$(PY) -m pytest -q -n auto --maxprocesses 4 --dist load tests
	$(VENV)/bin/lit -sv lit_tests

# make bench BENCH_ARGS="--quick" | "--models gpt2,bert" | "--markdown docs/performance.md" (see benchmarks/run.py -h)
bench: $(STAMP)
	$(PY) benchmarks/run.py $(BENCH_ARGS)

# The long fuzz runs (CI runs short seeded ones in tests/test_fuzz_diff.py and tests/test_opt_fuzz.py):
# make fuzz FUZZ_SEED=7 FUZZ_SECONDS=1800
FUZZ_SEED    ?= 1
FUZZ_SECONDS ?= 600
fuzz: $(STAMP)
	$(PY) utils/fuzz_diff.py --seed $(FUZZ_SEED) --seconds $(FUZZ_SECONDS)
	$(PY) utils/fuzz_opt.py --seed $(FUZZ_SEED) --seconds $(FUZZ_SECONDS)

# Every model of utils/zoo through fxla.compile, torch.compile(backend="fxla") and export/load, against eager;
# a full run rewrites docs/zoo.md (about an hour on 2 cores). make zoo ZOO_ARGS="--models hf --routes compile"
zoo: $(STAMP)
	$(PY) -m utils.zoo.run $(ZOO_ARGS)

docs: $(STAMP)
	$(PY) -m fxla.dialects.fxla.docs > docs/dialect.md
	$(PY) -m fxla.lowering.coverage_doc > docs/ops.md
	$(PY) -m fxla.tools.apidoc > docs/api.md

clean:
	rm -rf $(VENV) build lit_tests/Output
