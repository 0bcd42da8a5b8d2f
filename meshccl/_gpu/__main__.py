"""``python -m meshccl._gpu``: print the GPU image path's table of chains
(:data:`meshccl._gpu.chains.TABLE`) as Markdown; with ``--write PATH``,
replace the table between the markers in that document instead
(``docs/architecture.md``)."""

import sys

from meshccl._gpu import chains

if sys.argv[1:2] == ["--write"] and len(sys.argv) == 3:
    chains.write(sys.argv[2])
elif len(sys.argv) == 1:
    print(chains.markdown())
else:
    sys.exit("usage: python -m meshccl._gpu [--write PATH]")
