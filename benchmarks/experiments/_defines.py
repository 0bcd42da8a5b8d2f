"""Compile the kernels with extra #defines (experiments on compile-time
knobs): every source the loader reads gets them first, and the loader's
caches are cleared so that the next launch compiles afresh."""
import _common  # noqa: F401  (sys.path)
from _common import recompile
from meshccl._gpu import loader

_source = loader.source


def use(**defines):
    text = "".join(f"#define {k} {v}\n" for k, v in defines.items())
    loader.source = lambda filename: text + _source(filename)
    recompile()
