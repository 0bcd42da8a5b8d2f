"""The peel of ``_kernels/strong.cu`` compiled for the CPU with
``tests/cuda_on_host.h`` (fibers for CUDA threads, warp collectives checked)
and run against the trim's passes by ``tests/strong_peel_host.cpp``: one-way
meshes, a chain with a cycle in it, random graphs with repeated entries,
self-loops, hubs and vertices that have a component before the peel."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from meshccl._gpu import loader

HERE = Path(__file__).resolve().parent


def test_peel_kernel_matches_the_trim(tmp_path):
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    for path in loader.kernel_dir().iterdir():
        if path.suffix in (".cu", ".cuh"):
            text = path.read_text().replace("asm volatile(", "asm_volatile(")
            (tmp_path / path.name).write_text(text)
    exe = tmp_path / "peel"
    out = subprocess.run([cxx, "-std=c++20", "-O1", "-w", f"-I{HERE}", f"-I{tmp_path}", "-o",
                          str(exe), str(HERE / "strong_peel_host.cpp")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-4000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
