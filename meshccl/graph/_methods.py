"""The graph methods, in one table read by the API, the CPU and the GPU backend.

Each :class:`Method` says what the layers above the kernels need to know
about one ``method=`` of :func:`meshccl.graph.connected_components`: its
aliases, the compression rules it takes (default first; none for a method
without union-find), whether it iterates to a fixed point (so
``max_iterations=`` applies), whether the GPU may check CuPy CSR input
beside it (its kernels read rows only through a clamped copy of indptr),
and for the union-find rules the ``UnionRule`` code of
``kernels/unionfind.cuh`` (the CPU twin uses the same codes).

This module imports nothing of meshccl: the backends read it without
importing the API.
"""

from __future__ import annotations

from typing import NamedTuple


class Method(NamedTuple):
    """One entry of :data:`TABLE`."""

    name: str
    #: other names accepted for it
    aliases: tuple = ()
    #: compression rules accepted, the default first; () for no union-find
    compression: tuple = ("halving",)
    #: iterates until nothing changes (``max_iterations`` caps the passes)
    iterative: bool = False
    #: CuPy CSR input is checked on a side stream beside the method
    deferred_check: bool = False
    #: enum UnionRule of kernels/unionfind.cuh, for the union-find rules
    rule: int | None = None


_UF = ("halving", "none", "splitting", "full")

#: every method, in the order the documentation lists them
TABLE = (
    Method("auto"),                                   # the backend's rule
    # union-find over every stored edge with GConn's union rules
    Method("unionfind", ("async",), _UF, rule=0),     # Union-Async, the core's rule
    Method("rem-cas", (), ("splicing", "none", "halving", "splitting"), rule=1),
    Method("early", (), _UF, rule=2),
    Method("hooks", (), _UF, rule=3),
    Method("jtb", (), ("splitting", "none"), rule=4),
    Method("ecl", deferred_check=True),               # ECL-CC
    Method("tiles", deferred_check=True),             # shared-memory tiles, then the rest
    # samplers, then the finish pass
    Method("kout", deferred_check=True),
    Method("hb", deferred_check=True),
    Method("bfs-sample"),
    # iterative, without union-find
    Method("sv", compression=(), iterative=True),      # Shiloach-Vishkin
    Method("edge-lp", compression=(), iterative=True),  # Hawick et al.'s kernels 1-3
    Method("vertex-lp", compression=(), iterative=True),
    Method("bfs-cc", ("bfs",), compression=(), iterative=True),
)

_BY_NAME = {name: m for m in TABLE for name in (m.name, *m.aliases)}

#: every accepted ``method=`` value, aliases included
METHODS = tuple(_BY_NAME)
#: compression rules each accepted name takes (default first)
COMPRESSION = {name: m.compression for name, m in _BY_NAME.items()}
#: names of the iterative methods (``max_iterations=`` applies)
ITERATIVE = tuple(name for name, m in _BY_NAME.items() if m.iterative)
#: methods whose CuPy CSR input is checked beside them on the GPU
DEFERRED_CHECK_METHODS = tuple(m.name for m in TABLE if m.deferred_check)
#: union rule code of each union-find name (enum UnionRule of unionfind.cuh)
RULES = {name: m.rule for name, m in _BY_NAME.items() if m.rule is not None}
#: enum Compression of kernels/unionfind.cuh
COMPRESS_CODE = {"none": 0, "halving": 1, "splitting": 2, "full": 3, "splicing": 4}


def canonical(method: str) -> str:
    """The table's name for ``method`` (an alias resolved); KeyError if unknown.

    >>> canonical("bfs"), canonical("ecl")
    ('bfs-cc', 'ecl')
    """
    return _BY_NAME[method].name


def check_method(method) -> str:
    """``method`` if it is one of :data:`METHODS`, else a ValueError naming it."""
    if not isinstance(method, str) or method not in _BY_NAME:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return method


def check_compression(method: str, compression):
    """The compression rule ``method`` runs with (its default for None);
    a ValueError naming both for a combination it does not take.

    >>> check_compression("rem-cas", None), check_compression("unionfind", "full")
    ('splicing', 'full')
    >>> check_compression("sv", "halving")
    Traceback (most recent call last):
    ...
    ValueError: method='sv' uses no union-find, so it takes no compression (got compression='halving')
    """
    valid = COMPRESSION[method]
    if compression is None:
        return valid[0] if valid else None
    if compression not in COMPRESS_CODE:
        raise ValueError(f"compression must be None or one of {tuple(COMPRESS_CODE)}, "
                         f"got {compression!r}")
    if compression not in valid:
        if not valid:
            raise ValueError(f"method={method!r} uses no union-find, so it takes no "
                             f"compression (got compression={compression!r})")
        raise ValueError(f"method={method!r} takes compression in {valid}, "
                         f"got {compression!r}")
    return compression
