"""Label a 3-D volume of blobs at face (6-) and full (26-) connectivity.

Run with ``python examples/label_volume.py [SIDE]``.  Uses the GPU through
CuPy when one is usable, the CPU otherwise; the result matches
``skimage.measure.label`` either way.
"""

import sys
import time

import numpy as np

import meshccl
from meshccl.patterns import blobs


def main(side=128):
    """Build a ``side``-cubed blob volume, label it, and print the counts."""
    if meshccl.gpu_available():
        import cupy as xp
    else:
        xp = np
    volume = blobs((side, side, side), sigma=3.0, xp=xp)  # uint8, 0 = background
    where = "GPU (CuPy)" if xp is not np else "CPU (numba)"
    print(f"{side}^3 volume of blobs, {int(volume.sum())} foreground voxels, on the {where}")

    for connectivity in (1, 3):  # 1: faces only (6 neighbours), 3: 26 neighbours
        start = time.perf_counter()
        labels, num = meshccl.label(volume, connectivity=connectivity, return_num=True)
        ms = (time.perf_counter() - start) * 1e3  # first call includes compilation
        sizes = xp.bincount(labels.ravel())[1:]
        print(f"connectivity {connectivity}: {num} components, largest "
              f"{int(sizes.max()) if num else 0} voxels ({ms:.0f} ms)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 128)
