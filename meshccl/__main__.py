"""``python -m meshccl``: the same program as the ``meshccl`` command."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
