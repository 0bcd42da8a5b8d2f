"""Kernel arguments packed for the driver (meshccl/_gpu/launch.py): the
byte layout a launch plan hands to cuLaunchKernel, checked on the CPU (the
GPU suite runs the packed launches themselves, through every plan test)."""

import numpy as np
import pytest

from meshccl._gpu.launch import BONDS, LABELS, MASK, VALUES, Launch, pack_arguments


class FakeArray:
    """Stands in for a CuPy array: all packing reads is ``.data.ptr``."""

    class _Data:
        def __init__(self, ptr):
            self.ptr = ptr

    def __init__(self, ptr):
        self.data = self._Data(ptr)


def test_slots_hold_little_endian_bytes_and_addresses():
    args = (VALUES, LABELS, FakeArray(0x7F00_1234_5678), np.int32(-1), np.int64(2**40 + 3),
            np.uint8(255), np.int8(-2), np.uintp(0), np.float32(1.5), np.bool_(True),
            np.uint64(2**64 - 1))
    slots, iv, ip, im, ib = pack_arguments(args)
    assert im == () and ib == ()
    assert slots.dtype == np.uint64 and len(slots) == len(args)
    assert iv == (0,) and ip == (1,)
    assert slots[0] == 0 and slots[1] == 0  # written per call
    assert int(slots[2]) == 0x7F00_1234_5678
    raw = slots.tobytes()
    for k, a in enumerate(args[3:], start=3):
        n = a.dtype.itemsize
        # the kernel reads the parameter's first n bytes: the value itself
        assert raw[8 * k:8 * k + n] == a.tobytes(), (k, a)
        assert raw[8 * k + n:8 * k + 8] == b"\0" * (8 - n), (k, a)


def test_several_placeholders_and_no_arguments():
    slots, iv, ip, im, ib = pack_arguments((LABELS, np.int32(7), VALUES, LABELS, BONDS, MASK))
    assert iv == (2,) and ip == (0, 3) and ib == (4,) and im == (5,) and int(slots[1]) == 7
    slots, iv, ip, im, ib = pack_arguments(())
    assert len(slots) == 1 and iv == () and ip == () and im == () and ib == ()


@pytest.mark.parametrize("bad", [3, 2.0, "x", np.complex64(1), np.array([1, 2]), None])
def test_unpackable_arguments_raise(bad):
    """Python scalars, arrays on the host, complex numbers: TypeError, which
    the launch plan answers by launching through CuPy instead."""
    with pytest.raises(TypeError, match="cannot pack kernel argument"):
        pack_arguments((VALUES, bad))


def test_direct_call_substitutes_the_arrays():
    """Called directly, a Launch hands CuPy's kernel call the input and the
    labels where the placeholders stand, and returns its result."""
    seen = {}

    def kernel(grid, block, args, shared_mem=0):
        seen.update(grid=grid, block=block, args=args, shared_mem=shared_mem)

    launch = Launch(kernel, (4, 2), (256,), (VALUES, np.int32(5), LABELS), shared_mem=64,
                    result="N")
    assert launch("values", "labels") == "N"
    assert seen == {"grid": (4, 2), "block": (256,), "args": ("values", np.int32(5), "labels"),
                    "shared_mem": 64}


def test_chain_marks_kernels_that_may_start_early(monkeypatch):
    """pack_chain: a kernel right after a kernel may start early (where its
    `early` allows); the first kernel, and one after a memset, may not."""
    from meshccl._gpu import launch as L

    seen = []
    monkeypatch.setattr(L.Launch, "packed", lambda self, follows=False: seen.append(follows))
    monkeypatch.setattr(L.Memset, "packed", lambda self: seen.append("memset"))
    k = lambda early=True: Launch(None, (1,), (32,), (), early=early)  # noqa: E731
    L.pack_chain([("clear", L.Memset(None)), ("tile", k()), ("border", k(early=False)),
                  ("roots", k()), ("scan", k())])
    assert seen == ["memset", False, False, True, True]
    seen.clear()
    L.pack_chain([("tile", k()), ("border", k())])
    assert seen == [False, True]


def test_launch_config_layout_matches_cuda_h():
    """CUlaunchConfig and CUlaunchAttribute as cuda.h lays them out (64-bit):
    the stream at byte 32, the attributes at 40, their count at 48; an
    attribute's value at byte 8 of its 72."""
    import ctypes

    from meshccl._gpu.launch import _Attribute, _Config

    assert _Config.stream.offset == 32 and _Config.attrs.offset == 40
    assert _Config.num_attrs.offset == 48 and ctypes.sizeof(_Config) == 56
    assert _Attribute.value.offset == 8 and ctypes.sizeof(_Attribute) == 72


def test_tolerance_slot_holds_the_exact_integer_tolerance():
    """For integer values the kernels' ``double tol`` slot carries the 64
    bits of the floored, saturated integer tolerance (lattice.cuh reads them
    back as an unsigned integer); for floats, the tolerance as a double."""
    from meshccl._gpu.launch import tolerance_arg

    def bits(x):
        slots = pack_arguments((x,))[0]
        return int(slots[0])

    for dtype in (np.uint8, np.int16, np.int64, np.uint64, np.bool_):
        assert bits(tolerance_arg(dtype, 2**53 + 1)) == 2**53 + 1
        assert bits(tolerance_arg(dtype, 2**64 - 1)) == 2**64 - 1  # (a NaN as a double)
        assert bits(tolerance_arg(dtype, 2**63)) == 2**63  # (-0.0 as a double)
        assert bits(tolerance_arg(dtype, 2**80)) == 2**64 - 1
        assert bits(tolerance_arg(dtype, 1.99)) == 1
        assert bits(tolerance_arg(dtype, 0)) == 0
    assert tolerance_arg(np.float32, 0.25) == np.float64(0.25)
    assert tolerance_arg(np.float64, 2**53 + 1) == np.float64(2.0**53)
    assert tolerance_arg(np.uint8, None) == 0.0
