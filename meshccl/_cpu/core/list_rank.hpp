// List ranking on the CPU (meshccl.graph.list_rank): the sequential walk,
// Wylie's pointer jumping and Reid-Miller's random splitters, on
// std::thread.  meshccl/_cpu/list_rank.py describes the three methods; the
// GPU's twin is meshccl/_kernels/list_rank.cu, whose splitter hash (mix)
// this file repeats bit for bit, so both sides choose the same splitters.
//
// Every function works on nxt: succ with every tail (succ[i] == -1 or
// succ[i] == i) written as -1, built by prepare, which also records each
// element's predecessor (-1 for a head) and counts the values out of range
// and the repeated successors.  The methods then write rank[i] (the number
// of elements after i in its list) and, where tail is not null, tail[i]
// (the last element of i's list), and return false when some element lies
// on a cycle.  Parallel loops split [0, n) into one contiguous block per
// thread; the splitter walks, whose lengths vary, take chunks of splitters
// from a shared counter.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include "threads.hpp"
#endif

namespace meshccl {
namespace list_rank {

using i64 = std::int64_t;
using u64 = std::uint64_t;

// Error codes of rank (0: none); the Python side turns them into messages.
enum Code : int { OK = 0, OUT_OF_RANGE = 1, DUPLICATE = 2, CYCLE = 3 };

// An uninitialised array of n values (the methods write every entry they
// later read).  From 4 MiB on it is aligned to 2 MiB and asks for huge
// pages, as NumPy does for its arrays: the methods read at random places,
// and with 4 KiB pages most of those reads would also miss the TLB.
struct Free {
    void operator()(void* p) const noexcept { std::free(p); }
};
template <class T>
std::unique_ptr<T[], Free> scratch(i64 n) {
    const std::size_t bytes = sizeof(T) * std::size_t(std::max<i64>(n, 1));
    void* m = nullptr;
#if defined(__linux__)
    if (bytes >= (std::size_t(4) << 20)) {
        if (posix_memalign(&m, std::size_t(1) << 21, bytes) != 0) m = nullptr;
        if (m) madvise(m, bytes, MADV_HUGEPAGE);
    }
#endif
    if (!m && !(m = std::malloc(bytes))) throw std::bad_alloc();
    return std::unique_ptr<T[], Free>(static_cast<T*>(m));
}

// Threads worth starting for n elements: at most `threads`, and one per
// 16384 elements at least (a thread costs more than that much work).
inline int threads_for(i64 n, int threads) {
    const i64 useful = std::max<i64>(1, n / 16384);
    return int(std::max<i64>(1, std::min<i64>(threads, useful)));
}

using ::meshccl::threads::on_threads;

// Sum over T threads of f(lo, hi) on contiguous blocks of [0, n).
template <class F>
i64 blocks(i64 n, int T, F&& f) {
    if (T <= 1) return f(i64(0), n);
    std::vector<i64> part(std::size_t(T), 0);
    on_threads(T, [&](int s) {
        const i64 lo = n * s / T, hi = n * (s + 1) / T;
        part[std::size_t(s)] = f(lo, hi);
    });
    i64 total = 0;
    for (i64 p : part) total += p;
    return total;
}

// SplitMix64's finaliser (list_rank.cu's mix).
inline u64 mix(u64 x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// nxt and pred of succ; bad: the values outside [0, n) other than -1 (read
// as tails); dup: the elements whose successor another element also has
// (one or more when any repeats).  With several threads two elements with
// the same successor race for pred; each store is atomic, so one of them
// wins and the second pass finds the other.
inline void prepare(const i64* succ, i64 n, int threads, i64* nxt, i64* pred, i64& bad,
                    i64& dup) {
    const int T = threads_for(n, threads);
    blocks(n, T, [&](i64 lo, i64 hi) {
        for (i64 i = lo; i < hi; ++i) pred[i] = -1;
        return i64(0);
    });
    if (T == 1) {  // one pass: a second writer finds pred already set
        bad = dup = 0;
        for (i64 i = 0; i < n; ++i) {
            const i64 s = succ[i];
            if (s == -1 || s == i) {
                nxt[i] = -1;
            } else if (s < 0 || s >= n) {
                nxt[i] = -1;
                ++bad;
            } else {
                nxt[i] = s;
                if (pred[s] != -1) ++dup;
                pred[s] = i;
            }
        }
        return;
    }
    bad = blocks(n, T, [&](i64 lo, i64 hi) {
        i64 b = 0;
        for (i64 i = lo; i < hi; ++i) {
            const i64 s = succ[i];
            if (s == -1 || s == i) {
                nxt[i] = -1;
            } else if (s < 0 || s >= n) {
                nxt[i] = -1;
                ++b;
            } else {
                nxt[i] = s;
                __atomic_store_n(pred + s, i, __ATOMIC_RELAXED);
            }
        }
        return b;
    });
    dup = blocks(n, T, [&](i64 lo, i64 hi) {
        i64 d = 0;
        for (i64 i = lo; i < hi; ++i) {
            const i64 s = nxt[i];
            if (s >= 0 && pred[s] != i) ++d;
        }
        return d;
    });
}

// The sequential walk: each list from its head (pred == -1), its elements
// recorded in order, then ranked from the record.  Returns whether every
// element was reached (the others lie on cycles).
inline bool sequential(const i64* nxt, const i64* pred, i64 n, i64* rank, i64* tail) {
    auto order = scratch<i64>(n);
    i64 reached = 0;
    for (i64 h = 0; h < n; ++h) {
        if (pred[h] != -1) continue;
        i64 length = 0;
        for (i64 j = h; j != -1; j = nxt[j]) order[length++] = j;
        const i64 t = order[length - 1];
        for (i64 k = 0; k < length; ++k) rank[order[k]] = length - 1 - k;
        if (tail)
            for (i64 k = 0; k < length; ++k) tail[order[k]] = t;
        reached += length;
    }
    return reached == n;
}

// Wylie's pointer jumping over nxt (-1: an end) with element weights
// (null: 1 each): val[i] ends as the summed weight of the elements after i,
// P[i] as i's end.  Double-buffered rounds, val[i] += val[P[i]] and P[i] =
// P[P[i]], until a round moves no pointer or after ceil(log2 n) + 1 rounds;
// then every pointer must rest on a real end (nxt == -1), else the list had
// a cycle (on a cycle of length 2^k a pointer can rest on its own element,
// so the test reads nxt, not P).  val and P must hold n entries; returns
// whether no cycle was found.
inline bool jump(const i64* nxt, const i64* weight, i64 n, int threads, i64* val, i64* P) {
    const int T = threads_for(n, threads);
    auto P2 = scratch<i64>(n);
    auto val2 = scratch<i64>(n);
    blocks(n, T, [&](i64 lo, i64 hi) {
        for (i64 i = lo; i < hi; ++i) {
            const i64 s = nxt[i];
            P[i] = s < 0 ? i : s;
            val[i] = s < 0 ? 0 : (weight ? weight[s] : 1);
        }
        return i64(0);
    });
    int log2n = 0;
    while ((i64(1) << log2n) < n) ++log2n;
    const int rounds = std::max(1, log2n) + 1;
    i64 *p = P, *v = val, *q = P2.get(), *w = val2.get();
    for (int r = 0; r < rounds; ++r) {
        const i64 moved = blocks(n, T, [&](i64 lo, i64 hi) {
            i64 m = 0;
            for (i64 i = lo; i < hi; ++i) {
                const i64 a = p[i], b = p[a];
                q[i] = b;
                w[i] = v[i] + v[a];
                m += b != a;
            }
            return m;
        });
        std::swap(p, q);
        std::swap(v, w);
        if (moved == 0) break;
    }
    if (p != P) {  // the result sits in the second buffers: copy it back
        blocks(n, T, [&](i64 lo, i64 hi) {
            std::copy(p + lo, p + hi, P + lo);
            std::copy(v + lo, v + hi, val + lo);
            return i64(0);
        });
    }
    const i64 off = blocks(n, T, [&](i64 lo, i64 hi) {
        i64 b = 0;
        for (i64 i = lo; i < hi; ++i) b += nxt[P[i]] != -1;
        return b;
    });
    return off == 0;
}

// Wylie's method on the whole list: rank and (where not null) tail.
inline bool wylie(const i64* nxt, i64 n, int threads, i64* rank, i64* tail) {
    std::unique_ptr<i64[], Free> own;
    if (!tail) own = scratch<i64>(n);
    return jump(nxt, nullptr, n, threads, rank, tail ? tail : own.get());
}

// The random-splitter method.  Splitters: every head and every element
// whose hash of (seed, index) falls in a 1/spacing share.  Each walk goes
// from its splitter to the next splitter or to the tail, recording for
// every element it passes its owner (the splitter's number) and its local
// distance; the reduced list of splitters, weighted by the sublist lengths,
// is ranked by jump; a last pass adds each owner's offset.  An element no
// walk reached, or a reduced list that does not end at a real tail, lies
// on a cycle (a walk round a cycle stops at its own splitter).
inline bool splitters(const i64* nxt, const i64* pred, i64 n, int threads, u64 seed, u64 spacing,
                      i64* rank, i64* tail) {
    const int T = threads_for(n, threads);
    // the splitters, in index order: counted per block, then numbered
    std::vector<i64> start(std::size_t(T) + 1, 0);
    auto is_splitter = [&](i64 i) {
        const u64 h = mix(seed + u64(i + 1) * 0x9E3779B97F4A7C15ull);
        return pred[i] == -1 || h % spacing == 0;
    };
    auto owner = scratch<i64>(n);
    on_threads(T, [&](int s) {
        const i64 lo = n * s / T, hi = n * (s + 1) / T;
        i64 c = 0;
        for (i64 i = lo; i < hi; ++i) {
            owner[i] = is_splitter(i) ? -2 : -1;  // -2: a splitter, numbered below
            c += owner[i] == -2;
        }
        start[std::size_t(s) + 1] = c;
    });
    for (int s = 0; s < T; ++s) start[std::size_t(s) + 1] += start[std::size_t(s)];
    const i64 r = start[std::size_t(T)];
    auto S = scratch<i64>(r);
    on_threads(T, [&](int s) {
        const i64 lo = n * s / T, hi = n * (s + 1) / T;
        i64 t = start[std::size_t(s)];
        for (i64 i = lo; i < hi; ++i)
            if (owner[i] == -2) {
                S[t] = i;
                owner[i] = t++;
            }
    });
    auto local = scratch<i64>(n);
    auto rnxt = scratch<i64>(r), weight = scratch<i64>(r), rtail = scratch<i64>(r);
    // the walks: chunks of splitters from a shared counter (walk lengths vary)
    const i64 chunk = 64;
    std::atomic<i64> next{0};
    on_threads(threads_for(r * 16, threads), [&](int) {
        for (;;) {
            const i64 first = next.fetch_add(chunk, std::memory_order_relaxed);
            if (first >= r) break;
            const i64 last = std::min(r, first + chunk);
            for (i64 t = first; t < last; ++t) {
                i64 j = S[t], d = 0;
                rtail[t] = -1;
                for (;;) {
                    local[j] = d;
                    const i64 s = nxt[j];
                    if (s < 0) {
                        rnxt[t] = -1;
                        rtail[t] = j;
                        break;
                    }
                    const i64 o = owner[s];
                    if (o >= 0) {
                        rnxt[t] = o;
                        break;
                    }
                    owner[s] = t;
                    j = s;
                    ++d;
                }
                weight[t] = d + 1;
            }
        }
    });
    auto E = scratch<i64>(r), Pf = scratch<i64>(r);
    const bool ok = jump(rnxt.get(), weight.get(), r, threads, E.get(), Pf.get());
    const i64 lost = blocks(n, T, [&](i64 lo, i64 hi) {
        i64 l = 0;
        for (i64 i = lo; i < hi; ++i) {
            const i64 o = owner[i];
            if (o < 0) {
                ++l;
                continue;
            }
            rank[i] = E[o] + weight[o] - 1 - local[i];
            if (tail) tail[i] = rtail[Pf[o]];
        }
        return l;
    });
    return ok && lost == 0;
}

// The smallest element on a cycle of a successor array without repeats or
// values out of range, and the cycle's length; (-1, 0) when there is none.
inline std::pair<i64, i64> first_on_cycle(const i64* succ, i64 n) {
    std::vector<i64> pred(std::size_t(n), -1);
    for (i64 i = 0; i < n; ++i)
        if (succ[i] != -1 && succ[i] != i) pred[std::size_t(succ[i])] = i;
    std::vector<unsigned char> seen(std::size_t(n), 0);
    for (i64 h = 0; h < n; ++h) {
        if (pred[std::size_t(h)] != -1) continue;
        for (i64 j = h;;) {
            seen[std::size_t(j)] = 1;
            const i64 s = succ[j];
            if (s == -1 || s == j) break;
            j = s;
        }
    }
    for (i64 i = 0; i < n; ++i) {
        if (seen[std::size_t(i)]) continue;
        i64 length = 1;
        for (i64 j = succ[i]; j != i; j = succ[j]) ++length;
        return {i, length};
    }
    return {-1, 0};
}

}  // namespace list_rank
}  // namespace meshccl
