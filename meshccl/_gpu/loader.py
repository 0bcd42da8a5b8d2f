"""The one kernel loader.

Kernels live in ``meshccl/_kernels/*.cu`` (shipped inside the wheel as the package
``meshccl._kernels``).  They are compiled with NVRTC through CuPy on first
use -- never at import -- for the template instantiations asked for, and
cached per device; CuPy also keeps the compiled binary in its on-disk cache,
so a new process only loads it.  That cache is keyed on the source text,
not on the headers it includes, so the text starts with a digest of every
header (``_kernels/*.cuh``): a changed header compiles anew rather than
loading a stale binary.  A ``#line`` directive makes compiler messages name
the real file.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import threading
from pathlib import Path

_C_TYPES = {
    "bool": "unsigned char",
    "uint8": "unsigned char",
    "uint16": "unsigned short",
    "uint32": "unsigned int",
    "uint64": "unsigned long long",
    "int8": "signed char",
    "int16": "short",
    "int32": "int",
    "int64": "long long",
    "float32": "float",
    "float64": "double",
}


_C_TYPE_OF = {}


def settled(value):
    """``value``, device arrays just made on the current stream, once their
    copies have run: for arrays kept in a per-device cache, which a thread
    on another stream may read at once.  Inside a stream capture nothing
    runs, so nothing waits."""
    import cupy

    stream = cupy.cuda.get_current_stream()
    if not stream.is_capturing():
        stream.synchronize()
    return value


def c_type(dtype) -> str:
    """C++ spelling of a NumPy dtype for template arguments (a dict lookup
    after the first call per dtype object: a GPU graph call asks about 15
    times, and numpy's dtype.name is slow)."""
    try:
        return _C_TYPE_OF[dtype]
    except (KeyError, TypeError):
        import numpy as np

        name = _C_TYPES[np.dtype(dtype).name]
    try:
        _C_TYPE_OF[dtype] = name
    except TypeError:  # an unhashable spelling of a dtype
        pass
    return name


@functools.lru_cache(maxsize=None)
def kernel_dir() -> Path:
    """Folder holding the ``.cu`` / ``.cuh`` sources: ``meshccl/_kernels``,
    inside the package (installed or editable), and nowhere else."""
    path = Path(str(importlib.resources.files("meshccl._kernels")))
    if not (path / "unionfind.cuh").is_file():
        raise FileNotFoundError(f"meshccl's CUDA sources are missing from {path}")
    return path


@functools.lru_cache(maxsize=None)
def headers_digest() -> str:
    """SHA-1 over the names and contents of the kernel headers (``*.cuh``)."""
    h = hashlib.sha1()
    for p in sorted(kernel_dir().glob("*.cuh")):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def source(filename: str) -> str:
    """The text NVRTC compiles: the headers' digest (for CuPy's cache), then
    the file."""
    path = kernel_dir() / filename
    return f'// headers {headers_digest()}\n#line 1 "{path}"\n' + path.read_text()


def _module(device_id: int, filename: str, names: tuple):
    import cupy

    return cupy.RawModule(
        code=source(filename),
        options=("-std=c++17", f"-I{kernel_dir()}"),
        name_expressions=list(names),
    )


def kernels(filename: str, *names: str) -> tuple:
    """Return the compiled kernels ``names`` (template name expressions) of a file."""
    import cupy

    return _functions(cupy.cuda.Device().id, filename, names)


#: the kernel objects of each (device, file, names), and one lock per key
#: being compiled
_FUNCTIONS = {}
_COMPILING = {}
_COMPILING_LOCK = threading.Lock()


def _functions(device_id: int, filename: str, names: tuple) -> tuple:
    """The kernel objects, compiled and looked up once per device (a graph
    call asks for about 15 per call: looking them up each time was host time
    the GPU waited for).  Threads that ask for the same module at once (a
    threaded Dask scheduler labelling its first chunks) wait for one
    compilation instead of each running its own; other modules compile
    meanwhile."""
    key = (device_id, filename, names)
    found = _FUNCTIONS.get(key)
    if found is not None:
        return found
    with _COMPILING_LOCK:
        lock = _COMPILING.setdefault(key, threading.Lock())
    with lock:
        found = _FUNCTIONS.get(key)
        if found is None:
            mod = _module(device_id, filename, names)
            found = tuple(mod.get_function(n) for n in names)
            _FUNCTIONS[key] = found
    return found
