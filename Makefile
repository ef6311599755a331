# fedlib: the two commands of the README are `make figures` and `make test`.
# Both create/refresh .venv with Python 3 + pip only; torch is pinned to the CPU build that this
# kind of machine serves (override with `make TORCH_SPEC=torch==X.Y.Z ...` elsewhere).

PYTHON     ?= python3
VENV       ?= .venv
TORCH_SPEC ?= torch==2.13.0
PROFILE    ?= quick
NOTEBOOKS  := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
BIN        := $(VENV)/bin
STAMP      := $(VENV)/.installed

NB         ?=
# Debian's Fashion-MNIST (target fashion-mnist) and the notebooks whose runs need it
FASHION_MNIST     := /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
FASHION_NOTEBOOKS := 07_fedacs_experiments 08_amplified_fedavg

.PHONY: venv figures results campaign verify test test-slow lint sync lab docs chromium fashion-mnist clean-results help

help:
	@echo "make figures [PROFILE=quick|paper] [NB=01_participation_delays]  execute every notebook (or NB; papermill), write figures/"
	@echo "make results NB=02_fedsum_main [PROFILE=quick]  compute the runs of one notebook into its store"
	@echo "make campaign NB=02_fedsum_main [PROFILE=paper] [DEVICE=cuda] [BUDGET_MIN=12] [GRAPHS=1] [COMPILED_DRAWS=1] [CLIENTS_INNERMOST=1] [GROUPED_LAYOUT=1]  runs in order, in a budget"
	@echo "make verify NB=02_fedsum_main [SAMPLE=10]  replay the first rounds of a store's runs"
	@echo "make test                           pytest: unit tests + nbval on the notebooks + the site in chromium"
	@echo "make docs                           build the static site into build/site (nothing executed)"
	@echo "make test-slow                      the slow tests (FedSUM on the real MNIST, long stand-in runs)"
	@echo "make lab                            open the notebooks in JupyterLab"
	@echo "make sync                           jupytext --sync the .py/.ipynb pairs"
	@echo "make fashion-mnist                  install Debian's dataset-fashion-mnist where missing (root)"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[dev,cluster,flower,docs]"
	touch $(STAMP)

venv: $(STAMP)

# quick profile: execute in place, so the committed notebooks carry the outputs nbval checks.
# other profiles: pass the profile, keep the executed copies under results/notebooks/, compute
# nothing (FEDLIB_NO_COMPUTE=1: paper runs need a GPU): a notebook renders what its store holds and
# says what is missing; a notebook with no stored run is skipped; last, what the stores lack.
# NB=<name>: that notebook only. Each pair is synced first (jupytext --sync: the newer file is the
# source), so an edit of the .py is what runs and is never overwritten by the executed .ipynb. A
# notebook's summary cell reads the ledger as it was before the notebook ran: a quick notebook
# whose ledger rows changed is executed a second time, so that its summary says what it wrote.
FIGURE_NOTEBOOKS := $(if $(NB),notebooks/$(NB).ipynb,$(NOTEBOOKS))
figures: $(STAMP) fashion-mnist
	@case "$(PROFILE)" in quick|paper) ;; smoke) echo "PROFILE: smoke runs compute into a temporary store and render nothing to keep; run one with papermill -p profile smoke (README, \"Profiles\")"; exit 2;; \
	  *) echo "PROFILE: must be quick or paper, got '$(PROFILE)'"; exit 2;; esac
	@test -z "$(NB)" -o -f "notebooks/$(NB).ipynb" || { echo "NB: no notebook notebooks/$(NB).ipynb; the notebooks: $(notdir $(basename $(NOTEBOOKS)))"; exit 2; }
	@left=""; before=$$(mktemp); trap 'rm -f $$before' EXIT; cp figures/claims_ledger.csv $$before 2>/dev/null; \
	for nb in $(FIGURE_NOTEBOOKS); do \
	  name=$$(basename $$nb .ipynb); \
	  echo "== $$name ($(PROFILE))"; \
	  $(BIN)/jupytext --sync "notebooks/$$name.py" --quiet || exit 1; \
	  if [ "$(PROFILE)" = "quick" ]; then \
	    $(BIN)/papermill "$$nb" "$$nb" -k python3 --cwd notebooks --no-progress-bar || exit 1; \
	    $(BIN)/python -m fedlib strip "$$nb" || exit 1; \
	    if ! $(BIN)/python -m fedlib ledger-same $$before figures/claims_ledger.csv $$name; then \
	      echo "$$name: its ledger rows changed: executed again, so that its summary reads them"; \
	      $(BIN)/papermill "$$nb" "$$nb" -k python3 --cwd notebooks --no-progress-bar || exit 1; \
	      $(BIN)/python -m fedlib strip "$$nb" || exit 1; \
	    fi; \
	    $(BIN)/jupytext --sync "notebooks/$$name.py" --quiet || exit 1; \
	  elif [ -d results/$$name ] && [ -z "$$(ls results/$$name/$(PROFILE) 2>/dev/null)" ]; then \
	    echo "$$name: no run stored at the $(PROFILE) profile: nothing to render (make results NB=$$name PROFILE=$(PROFILE) computes it$$(case $$name in 02_*|03_*|05_*|08_*) echo "; on a GPU: make campaign NB=$$name";; esac))"; \
	  else \
	    mkdir -p results/notebooks; \
	    FEDLIB_NO_COMPUTE=1 $(BIN)/papermill "$$nb" "results/notebooks/$$name-$(PROFILE).ipynb" \
	      -k python3 --cwd notebooks -p profile $(PROFILE) --no-progress-bar --log-output >results/notebooks/$$name-$(PROFILE).log 2>&1 \
	      && { if grep -q "^missing:" results/notebooks/$$name-$(PROFILE).log; then \
	             echo "$$name: rendered what its store holds into results/notebooks/$$name-$(PROFILE).ipynb; left out:"; \
	             grep -E "^missing:" results/notebooks/$$name-$(PROFILE).log | sed 's/^/  /'; left="$$left $$name"; \
	           else echo "$$name: rendered whole into results/notebooks/$$name-$(PROFILE).ipynb"; fi; } \
	      || { echo "$$name: rendered up to its first missing run (results/notebooks/$$name-$(PROFILE).ipynb; log beside it):"; \
	           grep -E "^missing:|^ValueError" results/notebooks/$$name-$(PROFILE).log | sed 's/^/  /' | tail -8; left="$$left $$name"; }; \
	  fi; \
	done; \
	campaigns=$$(for n in $$left; do case $$n in 02_*|03_*|05_*|08_*) echo $$n;; esac; done); \
	if [ -n "$$campaigns" ]; then echo "== what the $(PROFILE) stores lack (make campaign computes it in order):"; \
	  $(BIN)/python -m fedlib campaign $$campaigns --profile $(PROFILE) --list $(if $(filter paper,$(PROFILE)),--device cuda); fi

# compute (or complete) the results store of one notebook: results/$(NB)/$(PROFILE)/. Sweeps resume
# from the store, so an interrupted run continues where it stopped. The executed notebook is kept
# under results/notebooks/ (figures of non-quick profiles go there too, never into figures/).
results: $(STAMP) $(if $(filter $(FASHION_NOTEBOOKS),$(NB)),fashion-mnist)
	@test -n "$(NB)" || { echo "usage: make results NB=<notebook name, e.g. 02_fedsum_main> [PROFILE=quick]"; exit 2; }
	@test -f "notebooks/$(NB).ipynb" || { echo "NB: no notebook notebooks/$(NB).ipynb; the notebooks: $(notdir $(basename $(NOTEBOOKS)))"; exit 2; }
	mkdir -p results/notebooks
	$(BIN)/papermill "notebooks/$(NB).ipynb" "results/notebooks/$(NB)-$(PROFILE).ipynb" -k python3 \
	  --cwd notebooks -p profile $(PROFILE)

# a notebook's runs at a profile (default paper) into its store in the order that matters, inside
# BUDGET_MIN minutes of DEVICE (one GPU window): never starts a run it cannot finish, seals what
# finished (commit results/$(NB)/$(PROFILE)/), resumes on the next call, prints what is left
# NB: one notebook, several ("02_fedsum_main 08_amplified_fedavg", taken in the order 02, 08, 05, 03)
# or all; GRAPHS=1: CUDA-graph local steps (after benchmarks/gpu_check.py showed them bit-equal);
# COMPILED_DRAWS=1: keyed draws by a torch.compile'd keyed.step_draws (after the check's compiled-draws row said True);
# CLIENTS_INNERMOST=1: the clients innermost (after the check's row "clients innermost for the campaign" said True);
# GROUPED_LAYOUT=1: a SimpleCNN's gradients in the grouped layout (after the row "grouped layout for the campaign" said True);
# DEVICES="cuda:0 cuda:1" (or "cpu cpu"): one process per device, runs in parallel (instead of DEVICE)
campaign: $(STAMP) $(if $(filter all $(FASHION_NOTEBOOKS),$(NB)),fashion-mnist)
	@test -n "$(NB)" || { echo "usage: make campaign NB=02_fedsum_main|\"02_fedsum_main 08_amplified_fedavg\"|all [PROFILE=paper] [DEVICE=cuda] [BUDGET_MIN=12] [GRAPHS=1] [COMPILED_DRAWS=1] [CLIENTS_INNERMOST=1] [GROUPED_LAYOUT=1] [DEVICES=\"cuda:0 cuda:1\"]"; exit 2; }
	@for f in "GRAPHS=$(GRAPHS)" "COMPILED_DRAWS=$(COMPILED_DRAWS)" "CLIENTS_INNERMOST=$(CLIENTS_INNERMOST)" "GROUPED_LAYOUT=$(GROUPED_LAYOUT)"; do \
	  case "$${f#*=}" in ""|0|1) ;; *) echo "$${f%%=*}: must be 0 or 1, got '$${f#*=}'"; exit 2;; esac; done
	$(BIN)/python -m fedlib campaign $(NB) --profile $(if $(filter command line environment,$(origin PROFILE)),$(PROFILE),paper) $(if $(DEVICE),--device $(DEVICE)) $(if $(DEVICES),--devices $(DEVICES)) \
	  --budget-min $(or $(BUDGET_MIN),12) $(if $(filter 1,$(GRAPHS)),--graphs) $(if $(filter 1,$(COMPILED_DRAWS)),--compiled-draws) $(if $(filter 1,$(CLIENTS_INNERMOST)),--clients-innermost) $(if $(filter 1,$(GROUPED_LAYOUT)),--grouped-layout)

# replay the first rounds of the runs of a notebook's store (all, or SAMPLE of them with every
# algorithm at least once); exits non-zero if any no longer reproduces
verify: $(STAMP)
	@test -n "$(NB)" || { echo "usage: make verify NB=<notebook name> [PROFILE=quick] [SAMPLE=k]"; exit 2; }
	$(BIN)/python -m fedlib verify results/$(NB)/$(PROFILE) $(if $(SAMPLE),--sample $(SAMPLE))

# datasets for replaying stored runs (fedlib.verify) and the slow tests: $FEDLIB_DATA if set, else
# ../shared/data when that folder exists (tests that need a dataset skip without one); a relative
# path is taken from the project's folder (the notebooks run in notebooks/: papermill --cwd)
FEDLIB_DATA ?= $(wildcard $(CURDIR)/../shared/data)
ifneq ($(strip $(FEDLIB_DATA)),)
override FEDLIB_DATA := $(if $(filter /% ~%,$(FEDLIB_DATA)),$(FEDLIB_DATA),$(abspath $(FEDLIB_DATA)))
export FEDLIB_DATA
endif

# FEDLIB_NO_COMPUTE=1: notebooks under nbval read their committed stores and never train silently.
# TEST_WORKERS pytest-xdist processes (2: the 2 cores of the CI machine); --dist loadscope keeps
# each notebook's cells, and each test file, in one process, in order (0: no xdist)
TEST_WORKERS ?= 2
test: $(STAMP) docs chromium fashion-mnist
	$(BIN)/ruff check fedlib tests notebooks/*.py benchmarks docs
	out=$$(mktemp -d) && FEDLIB_OUT_ROOT=$$out FEDLIB_NO_COMPUTE=1 FEDLIB_REQUIRE_SITE=1 \
	  $(BIN)/python -m pytest -q -m "not slow" \
	  $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadscope) \
	  -p no:logging tests --nbval --nbval-current-env $(NOTEBOOKS); rc=$$?; rm -rf $$out; exit $$rc

# the companion as a static site: the committed notebooks (outputs rendered, nothing executed), the
# README's pages, the claims ledger and the API reference; sphinx -W, so any warning fails the build
docs: $(STAMP)
	$(BIN)/python docs/build.py --out build/site
	@echo "site: build/site/index.html"

# Debian's chromium for the browser test of the site (root on this project's machines)
# (or name another chromium build with CHROMIUM=/path/to/chromium)
chromium:
	@test -n "$$CHROMIUM" || command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser test"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  { echo "chromium: could not install Debian's package (needs root); install chromium or set CHROMIUM"; exit 1; }; }

# Debian's Fashion-MNIST (the dataset of Wang & Ji 2022's experiments) where it is missing: fedlib.data
# reads it from the package's folder without configuration (root on this project's machines); files
# under $FEDLIB_DATA/FashionMNIST/raw/ do as well. Needed by the tests, and by the notebooks that run on it
fashion-mnist:
	@test -f $(FASHION_MNIST) || ls "$${FEDLIB_DATA:-/nonexistent}"/FashionMNIST/raw/train-images-idx3-ubyte* >/dev/null 2>&1 || { \
	  echo "installing Debian's dataset-fashion-mnist (Fashion-MNIST, for the tests and notebook 08)"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist >/dev/null; } || \
	  { echo "fashion-mnist: could not install Debian's package dataset-fashion-mnist (needs root); install it or put FashionMNIST/raw/*-ubyte.gz under FEDLIB_DATA"; exit 1; }; }

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow tests

lint: $(STAMP)
	$(BIN)/ruff check fedlib tests notebooks/*.py benchmarks docs

sync: $(STAMP)
	$(BIN)/jupytext --sync notebooks/*.ipynb

lab: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[dev,lab]"
	$(BIN)/jupyter lab notebooks/ $(if $(filter 0,$(shell id -u)),--allow-root)

clean-results:
	rm -rf results/
