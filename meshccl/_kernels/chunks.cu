// chunks.cu -- the device work of meshccl.dask.label on one chunk, between
// labelling it and renumbering it (meshccl/_gpu/chunks.py launches these).
//
// A chunk labelled alone carries local labels 1..n in the chunk's raster
// order.  The Dask graph joins chunks by global *ids*: the global flat
// (C-order) index of each local label's first cell.  Everything below works
// on flat indices with the chunk's shape passed as data, so one kernel
// serves any number of axes.
//
// - meshccl_chunk_first: the ids.  A label's first cell has no earlier
//   neighbour of its own label along any axis (that neighbour would come
//   first), so only such *candidate* cells bid, by an atomicMin of their
//   global index on their label's slot.  The chunk's first cell of a label
//   is the candidate of smallest index, and the global order of a chunk's
//   cells is its local order, so the minimum is the id.  For smooth regions
//   the candidates are the leading corners of each piece: few atomics.
//   The slots start at all ones (a memset) and every label 1..n has cells,
//   so every slot is written.
// - meshccl_chunk_layer: one layer of the chunk (its first or last along an
//   axis), written contiguously with that axis first: the values (copied as
//   raw words of their width, read through the input's element strides),
//   the ids of the cells' labels (-1 on the background) and the mask.
//   The faces between chunks are built from these layers only.
// - meshccl_slab_rep and meshccl_slab_pairs: a slab across a face (the
//   layers of two chunks, labelled again by meshccl.label) holds slab
//   labels s and ids.  meshccl_slab_rep lets every labelled cell write its
//   id into rep[s] (any writer may win: one id of the slab component);
//   meshccl_slab_pairs then emits (id, rep[s]) where they differ, skipping a
//   cell whose pair is the one the cell before it emitted (runs along the
//   slab's rows would repeat it), appended through an atomic counter.  The
//   host drops the remaining repeats; two ids that share a slab label are
//   connected in the whole array.
// - meshccl_chunk_renumber: out[i] = table[labels[i]], the chunk's local
//   labels through its table (local label -> global label, entry 0: 0).

#include "launch.cuh"

// geo: shape[ndim], start[ndim] (the chunk's corner in the array),
// stride[ndim] (the array's C-order strides, in cells)
template <typename L>
__global__ void meshccl_chunk_first(const L* __restrict__ labels, long long cells, int ndim,
                                    const long long* __restrict__ geo,
                                    unsigned long long* __restrict__ ids) {
    meshccl::grid_entry();
    for (long long i = meshccl::thread_id(); i < cells; i += meshccl::thread_count()) {
        const L l = labels[i];
        if (l <= 0) continue;
        long long rest = i, step = 1, g = 0;
        bool first = true;
        for (int k = ndim - 1; k >= 0; --k) {
            const long long n = geo[k];
            const long long c = rest % n;
            rest /= n;
            if (c > 0 && labels[i - step] == l) {
                first = false;
                break;
            }
            g += (c + geo[ndim + k]) * geo[2 * ndim + k];
            step *= n;
        }
        if (first) atomicMin(ids + (l - 1), (unsigned long long)g);
    }
}

// geo: shape[ndim], the values' element strides[ndim], the mask's[ndim];
// the labels are C-contiguous.  The layer is index `at` along `axis`; its m
// cells are written in C order of the other axes.
template <typename V, typename L>
__global__ void meshccl_chunk_layer(const V* __restrict__ values,
                                    const unsigned char* __restrict__ mask,
                                    const L* __restrict__ labels,
                                    const long long* __restrict__ ids, int ndim,
                                    const long long* __restrict__ geo, int axis, long long at,
                                    long long m, V* __restrict__ out_values,
                                    long long* __restrict__ out_ids,
                                    unsigned char* __restrict__ out_mask) {
    meshccl::grid_entry();
    for (long long o = meshccl::thread_id(); o < m; o += meshccl::thread_count()) {
        long long rest = o, step = 1, li = 0, vi = 0, mi = 0;
        for (int k = ndim - 1; k >= 0; --k) {
            const long long n = geo[k];
            long long c = at;
            if (k != axis) {
                c = rest % n;
                rest /= n;
            }
            li += c * step;
            vi += c * geo[ndim + k];
            mi += c * geo[2 * ndim + k];
            step *= n;
        }
        out_values[o] = values[vi];
        const L l = labels[li];
        out_ids[o] = l > 0 ? ids[l - 1] : -1;
        if (mask != nullptr) out_mask[o] = mask[mi];
    }
}

template <typename S>
__global__ void meshccl_slab_rep(const S* __restrict__ s, const long long* __restrict__ ids,
                                 long long n, long long* __restrict__ rep) {
    meshccl::grid_entry();
    for (long long i = meshccl::thread_id(); i < n; i += meshccl::thread_count()) {
        const S k = s[i];
        if (k > 0) rep[k] = ids[i];
    }
}

// out: pairs (id, one id of its slab component), two words each, appended
// at *count (which the caller zeroes; it may hold earlier slabs' pairs)
template <typename S>
__global__ void meshccl_slab_pairs(const S* __restrict__ s, const long long* __restrict__ ids,
                                   long long n, const long long* __restrict__ rep,
                                   long long* __restrict__ out,
                                   unsigned long long* __restrict__ count) {
    meshccl::grid_entry();
    for (long long i = meshccl::thread_id(); i < n; i += meshccl::thread_count()) {
        const S k = s[i];
        if (k <= 0) continue;
        const long long a = ids[i], b = rep[k];
        if (a == b) continue;
        if (i > 0 && s[i - 1] == k && ids[i - 1] == a) continue;
        const unsigned long long at = atomicAdd(count, 1ull);
        out[2 * at] = a;
        out[2 * at + 1] = b;
    }
}

template <typename L>
__global__ void meshccl_chunk_renumber(const L* __restrict__ labels, long long n,
                                       const long long* __restrict__ table,
                                       long long* __restrict__ out) {
    meshccl::grid_entry();
    for (long long i = meshccl::thread_id(); i < n; i += meshccl::thread_count())
        out[i] = table[labels[i]];
}

#ifdef MESHCCL_INSTANTIATE_ALL
// Used by CI (nvcc, no GPU) to compile every instantiation the loader may ask for.
#define MESHCCL_CHUNKS_L(L)                                                                  \
    template __global__ void meshccl_chunk_first<L>(const L*, long long, int,              \
                                                      const long long*, unsigned long long*); \
    template __global__ void meshccl_slab_rep<L>(const L*, const long long*, long long,      \
                                                  long long*);                                \
    template __global__ void meshccl_slab_pairs<L>(const L*, const long long*, long long,    \
                                                    const long long*, long long*,             \
                                                    unsigned long long*);                     \
    template __global__ void meshccl_chunk_renumber<L>(const L*, long long, const long long*, \
                                                        long long*);
#define MESHCCL_CHUNKS_VL(V, L)                                                              \
    template __global__ void meshccl_chunk_layer<V, L>(                                      \
        const V*, const unsigned char*, const L*, const long long*, int, const long long*,   \
        int, long long, long long, V*, long long*, unsigned char*);
MESHCCL_CHUNKS_L(int)
MESHCCL_CHUNKS_L(long long)
#define MESHCCL_CHUNKS_V(V) MESHCCL_CHUNKS_VL(V, int) MESHCCL_CHUNKS_VL(V, long long)
MESHCCL_CHUNKS_V(unsigned char)
MESHCCL_CHUNKS_V(unsigned short)
MESHCCL_CHUNKS_V(unsigned int)
MESHCCL_CHUNKS_V(unsigned long long)
#undef MESHCCL_CHUNKS_V
#undef MESHCCL_CHUNKS_VL
#undef MESHCCL_CHUNKS_L
#endif
