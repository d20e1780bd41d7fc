# The two commands of the README:
#   make demo   set up, then run the main job
#   make test   set up, then run the linter and the tests (on every claimed Python)
# Both create the virtual environment .venv and install hlc into it first.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup browser demo demo-quick test test-here test-slow lint clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/hlc check -q libraries/*.hl
	$(BIN)/hlc build libraries/sort.hl
	$(BIN)/python benchmarks/sort_demo.py build/sort

demo-quick: $(STAMP)
	$(BIN)/hlc build libraries/sort.hl --quick
	$(BIN)/python benchmarks/sort_demo.py build/sort

lint: $(STAMP)
	$(BIN)/ruff check .

# Headless Chromium for the report test (Debian packages; skipped, never
# failing, without root or apt-get: the test then skips with its reason).
browser:
	bash scripts/install-browser.sh

# The full suite here, then a subset on every other claimed CPython and on
# the lowest declared versions (scripts/test_matrix.py says which).
test: lint browser
	$(BIN)/python scripts/test_matrix.py

# The full suite on .venv's interpreter only.
test-here: lint browser
	$(BIN)/python -m pytest -q

# The end-to-end runs CI leaves out (marked slow): minutes each.
test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

clean:
	rm -rf $(VENV) $(VENV)-* build .pytest_cache .hypothesis .ruff_cache
