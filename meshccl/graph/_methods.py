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
    #: a sampling phase, then the finish pass over the rest
    sampler: bool = False
    #: one line for the user's table
    summary: str = ""


_UF = ("halving", "none", "splitting", "full")

#: every method, in the order the documentation lists them
TABLE = (
    Method("auto", summary="the backend's rule (see connected_components)"),
    Method("unionfind", ("async",), _UF, rule=0,
           summary="union-find over every stored edge (GConn's Union-Async)"),
    Method("rem-cas", (), ("splicing", "none", "halving", "splitting"), rule=1,
           summary="Rem's algorithm with a CAS hook (GConn)"),
    Method("early", (), _UF, rule=2,
           summary="both finds walk up together and stop where they meet (GConn)"),
    Method("hooks", (), _UF, rule=3,
           summary="the hook CAS goes to an auxiliary array (GConn)"),
    Method("jtb", (), ("splitting", "none"), rule=4,
           summary="Jayanti-Tarjan-Boix-Adsera randomized linking (GConn)"),
    Method("ecl", deferred_check=True,
           summary="ECL-CC: first smaller neighbour, then hooks by degree bucket"),
    Method("kout", deferred_check=True, sampler=True,
           summary="k-out sampling (Afforest), then the finish pass"),
    Method("hb", deferred_check=True, sampler=True,
           summary="hook-based sampling, then the finish pass"),
    Method("bfs-sample", sampler=True,
           summary="breadth-first-search sampling, then the finish pass"),
    Method("sv", compression=(), iterative=True,
           summary="Shiloach-Vishkin (Dehne's GPU formulation)"),
    Method("edge-lp", compression=(), iterative=True,
           summary="Hawick et al.'s kernel 1: label propagation over the edges"),
    Method("vertex-lp", compression=(), iterative=True,
           summary="Hawick et al.'s kernel 2: propagation from a vertex frontier"),
    Method("bfs-cc", ("bfs",), compression=(), iterative=True,
           summary="Hawick et al.'s kernel 3: a breadth-first search per component"),
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
    """The table's name for ``method`` (an alias resolved); KeyError if unknown."""
    return _BY_NAME[method].name


def check_method(method) -> str:
    """``method`` if it is one of :data:`METHODS`, else a ValueError naming it."""
    if not isinstance(method, str) or method not in _BY_NAME:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return method


def check_compression(method: str, compression):
    """The compression rule ``method`` runs with (its default for None);
    a ValueError naming both for a combination it does not take."""
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
