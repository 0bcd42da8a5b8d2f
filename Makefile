# The two set-up commands of README.md, and the pictures of docs/img/.  Each
# installs what it needs first: the build tools, then meshccl itself, editable, its C++ CPU core compiled
# in build/ (kept, so a second install rebuilds only what changed; a C++17
# compiler must be on the machine).
PY ?= python3

.PHONY: demo test install figures figures-check

install:
	$(PY) -m pip install -q "scikit-build-core>=0.10" "nanobind>=2.0" "cmake>=3.18" ninja
	$(PY) -m pip install -q --no-build-isolation -e ".[test]"

# Label Hawick's spiral and a Cahn-Hilliard-like field (GPU if usable, else CPU).
demo: install
	$(PY) -m meshccl demo --out meshccl-demo

# The whole test suite (GPU tests are skipped where no GPU is usable), one
# worker per core.
test: install
	$(PY) -m pytest -q -n auto --dist worksteal

# Every picture in docs/img/ (with its table and number file) from the
# current code, on the CPU, fixed seeds: about 75 s on 2 cores.
figures: install
	$(PY) docs/make_figures.py

# Regenerate the pictures' numbers into a temporary folder and compare them
# with the committed ones (CI): exit status 1 and a list of differences.
figures-check: install
	$(PY) docs/make_figures.py --check
