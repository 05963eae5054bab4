# Two commands set everything up on a fresh machine:
#   make book   -> .venv, vendored JS, HTML book in _build/html
#   make test   -> the same, then every test (unit, notebooks, build, browser)
# Everything the project needs is installed by these targets themselves.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
export PATH := $(CURDIR)/$(BIN):$(PATH)
export PYTHONHASHSEED := 0
# torch threads sleep instead of spinning when idle: much faster on a shared 2-core CPU
export OMP_WAIT_POLICY := PASSIVE
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
# Python keeps its bytecode cache (__pycache__/, git-ignored), even where the machine sets
# PYTHONDONTWRITEBYTECODE: without it every process compiles the course's modules again, and every
# pytest process rewrites the asserts of every test module and plugin again (a trivial pytest run
# took 2.3 s instead of 1.1 s; CONTRIBUTING, "While you work")
unexport PYTHONDONTWRITEBYTECODE
# The test runs and make train keep freed memory for reuse instead of handing it back to the system:
# glibc's malloc gives each large block (torch's tensors) pages of its own (mmap) and returns them on
# free, and each new tensor's pages were then faulted in and zeroed again by the kernel. Two unit-test
# modules: 18 s of system time -> 2 s, 30 s -> 22 s of wall time; peak memory 1.6 -> 2.0 GB; a step of
# the long People's Daily GPT on 2 threads: 0.28 s -> 0.23 s (CONTRIBUTING, "While you work").
# Only these: the notebooks and make bench run as a learner's would.
REUSE_MEMORY_TARGETS := check test scope-seconds portable-plain portable-avx2 train-check train-check-full train
$(REUSE_MEMORY_TARGETS): export MALLOC_MMAP_THRESHOLD_ := 1073741824
$(REUSE_MEMORY_TARGETS): export MALLOC_TRIM_THRESHOLD_ := 4294967296

.PHONY: book book-all check test scope-seconds test-portable portable-plain portable-avx2 train-check train-check-full train pdf serve api lab sync vendor vendor-refresh venv bench solutions assignments grade fuzz mutate clean help

PORT ?= 8001
# Opt-in, Linux: TORCH_INDEX=https://download.pytorch.org/whl/cpu installs the CPU-only torch wheel
# (~190 MB) instead of the default Linux wheel with its CUDA libraries (several GB); README, "Two commands".
TORCH_INDEX ?=
TORCH_PIN := $(shell grep -m1 '^torch==' requirements.txt)

NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tools/nbval_sanitize.cfg
NOTEBOOKS = $$($(PY) tools/toc.py notebooks)
# pytest on every core (pytest-xdist): a notebook, a test module or a class runs whole in one
# worker; the tests of browsers, servers and the built book share one (tests/conftest.py).
# `make test PARALLEL=` runs serially (a machine whose cores are busy with other work gains nothing).
PARALLEL := -n auto --dist loadscope
# `make book` is incremental (Sphinx re-reads only the pages that changed); a failed build forgets
# Sphinx's saved environment, so its warnings come back on the next run instead of hiding in the
# cache. `make book-all` builds every page (--all), as `make test` does under CI (see test:).
BOOK_BUILD := $(BIN)/jupyter-book build . -W -n --keep-going

help:
	@echo "make book    build the HTML book into _build/html (creates .venv first)"
	@echo "make book-all  build every page of the book from scratch (what make test does)"
	@echo "make check   while working: the tests and notebooks your changes can break, in parallel (BASE=rev)"
	@echo "make test    run every test: unit, notebooks (nbval), book build, browser"
	@echo "make scope-seconds  measure each test scope's time; make test starts the longest first"
	@echo "make test-portable  nbval on every notebook under other CPU kernel paths and thread counts"
	@echo "make pdf     one bilingual PDF of the book: _build/pdf/course.pdf"
	@echo "make train   re-make the trained checkpoints in data/checkpoints (NAMES=… for some)"
	@echo "make train-check-full  retrain every checkpoint whole and compare (long; CI checks prefixes)"
	@echo "make serve   serve the built book on http://127.0.0.1:8000"
	@echo "make api     the capstone as an HTTP service on http://127.0.0.1:$(PORT) (PORT=… to change)"
	@echo "make lab     open the chapters in JupyterLab (.md opens as a notebook)"
	@echo "make sync    re-execute every chapter and store its outputs in the .ipynb"
	@echo "make fuzz    the HTTP service fuzzed from its OpenAPI schema, 10x make test's cases (nightly)"
	@echo "make mutate  mutation score of the core (tools/mutate.py, mutmut; MUTANTS='course_lib.scratch.*' for some)"
	@echo "make bench   print timings: notebooks, book build, test suite, attention speed"
	@echo "make solutions  run every exercise's reference solution against its checker"
	@echo "make vendor-refresh  update vendor/ (MathJax, mermaid) from npm after changing package.json"
	@echo "make assignments  student notebooks (no solutions) and autograders in _build/assignments"
	@echo "make grade SUBMISSIONS=dir/  grade dir/<student>/<chapter>.ipynb into _build/assignments/grades.csv"

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt requirements-nodeps.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(if $(TORCH_INDEX),$(PY) -m pip install --quiet --no-deps --index-url $(TORCH_INDEX) "$(TORCH_PIN)")
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt
	@touch $@

# The offline book's JavaScript (MathJax 3, mermaid) is committed in vendor/ with its licences:
# no npm, no root. `make vendor-refresh` updates vendor/ from npm after a change to package.json.
vendor: _vendor/.stamp
_vendor/.stamp: vendor/MANIFEST.json tools/vendor.py | venv
	$(PY) tools/vendor.py
	@touch $@

vendor-refresh: venv
	@command -v npm >/dev/null || { echo "make vendor-refresh needs npm (Debian/Ubuntu: apt-get install npm; macOS: brew install node)"; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	$(PY) tools/vendor.py --refresh
	$(PY) tools/vendor.py
	@touch _vendor/.stamp

book-all: BOOK_ALL := --all
book book-all: venv vendor
	$(BOOK_BUILD) $(BOOK_ALL) || { rm -f _build/.doctrees/environment.pickle; exit 1; }
	@echo
	@echo "The book is in _build/html. Open it with either:"
	@echo "  make serve            then visit http://127.0.0.1:8000"
	@echo "  or open _build/html/index.html in your browser (works offline, from disk)"

pdf: venv
	@test -f _build/html/index.html || $(MAKE) book
	@fc-list | grep -qi "Noto Sans CJK" || if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && apt-get install -y -qq fonts-noto-cjk; \
	else \
	  echo "make pdf needs the Noto Sans CJK fonts. Install them, then run it again:"; \
	  echo "  Debian/Ubuntu: sudo apt-get install fonts-noto-cjk    macOS: brew install --cask font-noto-sans-cjk-sc"; \
	  exit 1; \
	fi
	$(PY) tools/pdf.py

serve:
	@test -f _build/html/index.html || $(MAKE) book
	$(PY) -m http.server --bind 127.0.0.1 --directory _build/html 8000

api: venv
	$(PY) -m course_lib.service --port $(PORT)

lab: venv
	@mkdir -p $(VENV)/share/jupyter/lab/settings
	@cp tools/jupyter/overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	$(BIN)/jupyter lab --notebook-dir=book --config=tools/jupyter/jupyter_server_config.py $(if $(filter 0,$(shell id -u)),--allow-root)

sync: venv
	$(PY) tools/sync.py $(FILES)

check: venv
	$(PY) tools/check.py $(if $(BASE),--base $(BASE))

# The book build (one core) runs beside the tests that do not read it; the tests of the built book
# (browsers, servers, _build: tests/conftest.py's serial scope) start when it is done (tools/test_all.py).
# The build is every page under CI, on a fresh clone, or when _ext/, _config.yml, _toc.yml, the
# packages or vendor/ changed since make test's last build; else only the pages that changed
# (Sphinx's cache, as make book). `make test BOOK_ALL=--all` builds every page.
test: venv vendor
	$(PY) tools/test_all.py --build "$(BOOK_BUILD) $(BOOK_ALL)" --all-unless-warm \
	  --pytest "$(BIN)/pytest -q $(PARALLEL)" -- tests $(NOTEBOOKS) $(NBVAL)

# The seconds each scope took in a parallel run (tests/scope_seconds.json): the longest start first
# in make test (tests/conftest.py, scope_order). Rerun it when a notebook or a test module grows.
scope-seconds: venv
	$(BIN)/pytest -q $(PARALLEL) --record-scope-seconds tests/scope_seconds.json tests $(NOTEBOOKS) $(NBVAL)

# A learner's CPU runs other kernels than this one: PyTorch's plain-C and AVX2
# paths, MKL without AVX-512, one thread or several. Every stored output must
# still match (CONTRIBUTING.md, "Reproducible on every CPU"), and retraining
# each checkpoint there must land within its tolerance.
# Its three parts are targets of their own, so that .ci/run can time each. train-check retrains a
# short recipe whole; a long one (check_prefix) is re-scored from its stored weights and only its
# first steps are retrained against the stored curve. train-check-full retrains every recipe whole
# (over an hour on 2 cores): run it after changing the training code or a long recipe.
test-portable: portable-plain portable-avx2 train-check
portable-plain: venv
	ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
	  $(BIN)/pytest -q $(PARALLEL) $(NOTEBOOKS) $(NBVAL)
portable-avx2: venv
	ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 OMP_NUM_THREADS=3 MKL_NUM_THREADS=3 \
	  $(BIN)/pytest -q $(PARALLEL) $(NOTEBOOKS) $(NBVAL)
train-check: venv
	ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
	  $(PY) tools/train.py --check --jobs 2
train-check-full: venv
	ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
	  $(PY) tools/train.py --check --full --jobs 2

train: venv
	$(PY) tools/train.py $(NAMES)
	@echo "Now re-sync the chapters that load them: make sync FILES=book/<chapter>.md"

# Nightly-sized fuzzing of the HTTP service (not in make test, which runs a tenth of it):
# schemathesis from the app's OpenAPI schema, in process; prints requests, seconds, failures
fuzz: venv
	COURSE_FUZZ_SCALE=10 OMP_NUM_THREADS=1 $(BIN)/pytest -q -s tests/unit/test_service_fuzz.py -k fuzz_every

# Mutation testing of the core the book's numbers rest on (tools/mutate.py, mutmut; not in make test or CI):
# one worker, hours for all of it; MUTANTS='course_lib.scratch.*' runs some, MUTATE_ARGS=--report only prints
mutate: venv
	$(PY) tools/mutate.py $(MUTATE_ARGS) $(MUTANTS)

bench: venv vendor
	$(PY) tools/bench.py

solutions: venv
	$(PY) tools/solutions.py

# For teachers (book/appendix/teachers.md): one student notebook per chapter, solutions removed,
# and its Otter-Grader autograder (CHAPTERS="ch02 ch03" for some); then grade what students hand in.
assignments: venv
	$(PY) tools/assignments.py $(CHAPTERS)

grade: venv
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=dir/   (dir/<student>/<chapter>.ipynb)"; exit 2; }
	@test -d _build/assignments/autograder || $(MAKE) assignments
	$(PY) tools/grade.py $(SUBMISSIONS) $(if $(JOBS),--jobs $(JOBS))


clean:
	rm -rf _build _vendor node_modules
