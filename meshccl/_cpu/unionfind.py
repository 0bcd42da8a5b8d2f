"""The union-find core for the CPU: the numba twin of ``kernels/unionfind.cuh``.

Parents always point to smaller indices; find() halves the path; unite()
hooks the larger root under the smaller, so each component's root is its
smallest index.  Serial code needs no compare-and-swap: the hook is a store.
"""

from numba import njit


@njit(cache=True, inline="always")
def find(P, x):
    p = P[x]
    while p != x:
        g = P[p]
        if g == p:
            return p
        P[x] = g
        x = g
        p = P[x]
    return x


@njit(cache=True, inline="always")
def unite(P, a, b):
    a = find(P, a)
    b = find(P, b)
    if a < b:
        P[b] = a
    elif b < a:
        P[a] = b


@njit(cache=True)
def relabel(P):
    """Flatten the forest and number roots 1..N in index order, in place.

    Background holds -1 and becomes 0.  Returns N.  Parents are smaller
    indices, so one forward pass flattens (the parent is already flat) and a
    second one numbers the roots (a running count is the serial prefix sum).
    """
    n = P.shape[0]
    for i in range(n):
        p = P[i]
        if p >= 0 and p != i:
            P[i] = P[p]
    count = 0
    for i in range(n):
        p = P[i]
        if p < 0:
            P[i] = 0
        elif p == i:
            count += 1
            P[i] = count
        else:
            P[i] = P[p]
    return count
