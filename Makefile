# The two set-up commands of README.md.  Each installs what it needs first.
PY ?= python3

.PHONY: demo test install

install:
	$(PY) -m pip install -q -e ".[test]"

# Label Hawick's spiral and a Cahn-Hilliard-like field (GPU if usable, else CPU).
demo: install
	$(PY) -m meshccl demo --out meshccl-demo

# The whole test suite (GPU tests are skipped where no GPU is usable), one
# worker per core: most of its time is numba compiling, which the workers
# share through numba's on-disk cache.
test: install
	$(PY) -m pytest -q -n auto --dist worksteal
