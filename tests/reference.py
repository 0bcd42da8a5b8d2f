"""An independent reference labeller for any ndim (tests only).

For each distinct value, scipy.ndimage.label finds the components of the
cells holding it; components are then numbered by their first cell in raster
order.  Keys follow skimage: floats are truncated to integers first.
"""

import numpy as np
from scipy import ndimage


def reference_label(a, background=0, connectivity=None):
    a = np.asarray(a)
    if a.dtype == bool:
        keys = a.astype(np.int64)
        bg = 1 if background == 1 else 0
    else:
        keys = a.astype(np.int64)
        bg = 0 if background is None else int(background)
    if a.ndim == 0:
        return np.array(0 if keys == bg else 1)
    conn = a.ndim if connectivity is None else connectivity
    structure = ndimage.generate_binary_structure(a.ndim, conn)
    out = np.zeros(a.shape, dtype=np.int64)
    nxt = 0
    for v in np.unique(keys):
        if v == bg:
            continue
        lab, n = ndimage.label(keys == v, structure=structure)
        out[lab > 0] = lab[lab > 0] + nxt
        nxt += n
    # renumber by first occurrence in raster order
    flat = out.ravel()
    fg = flat > 0
    uniq, first = np.unique(flat[fg], return_index=True)
    order = np.argsort(first)
    mapping = np.zeros(nxt + 1, dtype=np.int64)
    mapping[uniq[order]] = np.arange(1, len(uniq) + 1)
    return mapping[out]
