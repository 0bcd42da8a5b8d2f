// cuda_on_host.h -- enough of CUDA to run the image kernels on the CPU, for
// the emulation tests (tests/test_runs3d_kernels_emulated.py).
//
// A block is a set of fibers (ucontext), one per CUDA thread, that a
// scheduler resumes in turn; a fiber runs until it waits at a barrier, and
// blocks run one after another.  Warps are emulated faithfully enough to
// catch the faults that only a GPU would otherwise show:
//
// - every warp collective (shuffles, ballots, votes, __syncwarp) is a
//   barrier of the warp's 32 threads, and each lane names its call site
//   (file and line); when the non-exited lanes of the mask meet at
//   different call sites -- a collective under a branch that some lanes
//   skip, undefined on the GPU -- the launch is abandoned, returns 2 and
//   leaves a message naming both sites in emu::failure;
// (Its state has internal linkage: each library that includes this has its own.)
// - __syncthreads is first such a warp collective, then a barrier of the
//   block;
// - a lane that returns leaves both barriers (as an exited GPU thread).
//
// Dynamic shared memory is a heap block of exactly the launch's size, so
// that AddressSanitizer (when the library is built with it and loaded
// under it) sees an access past it; global memory is the caller's NumPy
// buffers.
#pragma once

#include <algorithm>
#include <atomic>
#include <ucontext.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__
using std::max;
using std::min;

struct uint4 { unsigned int x, y, z, w; };
struct uint2 { unsigned int x, y; };
struct int4 { int x, y, z, w; };
struct longlong2 { long long x, y; };
struct Dim { unsigned int x = 1, y = 1, z = 1; };
static Dim threadIdx, blockIdx;
static Dim blockDim, gridDim;

namespace {
namespace emu {
// A barrier of `live` fibers (those not yet returned): the last to arrive
// opens it (a new generation); the others give way to the scheduler until then.
struct Barrier {
    int live = 0, arrived = 0;
    unsigned gen = 0;
    void arrive_and_wait();
    void drop() {
        --live;
        if (arrived > 0 && arrived == live) {
            arrived = 0;
            ++gen;
        }
    }
};
struct Warp {
    Barrier bar;
    const char* file[32];
    int line[32];
    unsigned long long value[32];
    bool exited[32];
};
static Warp* warp = nullptr;
static Barrier* block = nullptr;
static int lane = 0;
static unsigned char* dynamic_shared = nullptr;
static ucontext_t scheduler;
static ucontext_t* running = nullptr;
// what stopped the last launch (empty: nothing)
static char failure[512] = "";

inline void yield() { swapcontext(running, &scheduler); }
inline void Barrier::arrive_and_wait() {
    const unsigned g = gen;
    if (++arrived == live) {
        arrived = 0;
        ++gen;
        return;
    }
    while (gen == g) yield();
}

// Every lane of the mask not yet exited at the same call site; each gets
// the 64-bit values all lanes put in, and the lanes that did (returned).
inline unsigned meet(const char* file, int line, unsigned mask, unsigned long long v,
                     unsigned long long (&all)[32]) {
    warp->file[lane] = file;
    warp->line[lane] = line;
    warp->value[lane] = v;
    warp->bar.arrive_and_wait();
    unsigned present = 0u;
    for (int l = 0; l < 32; ++l) {
        if (!((mask >> l) & 1u) || warp->exited[l]) continue;
        if (warp->line[l] != line || std::strcmp(warp->file[l], file) != 0) {
            std::snprintf(failure, sizeof failure,
                          "divergent warp collective: block (%u %u %u) lane %d at %s:%d, "
                          "lane %d at %s:%d",
                          blockIdx.x, blockIdx.y, blockIdx.z, lane, file, line, l,
                          warp->file[l], warp->line[l]);
            for (;;) yield();  // the scheduler abandons the launch
        }
        all[l] = warp->value[l];
        present |= 1u << l;
    }
    warp->bar.arrive_and_wait();
    return present;
}

template <typename T>
inline unsigned long long bits_of(T v) {
    unsigned long long b = 0;
    std::memcpy(&b, &v, sizeof(T));
    return b;
}
template <typename T>
inline T of_bits(unsigned long long b) {
    T v;
    std::memcpy(&v, &b, sizeof(T));
    return v;
}
template <typename T>
inline T shfl_from(const char* f, int l, unsigned mask, T v, int src) {
    unsigned long long all[32] = {};
    meet(f, l, mask, bits_of(v), all);
    return of_bits<T>(all[src & 31]);
}
inline unsigned ballot(const char* f, int l, unsigned mask, bool p) {
    unsigned long long all[32] = {};
    const unsigned present = meet(f, l, mask, p ? 1ull : 0ull, all);
    unsigned m = 0;
    for (int k = 0; k < 32; ++k)
        if (((present >> k) & 1u) && all[k]) m |= 1u << k;
    return m;
}
}  // namespace emu
}  // namespace

#define __shfl_sync(m, v, s) emu::shfl_from(__FILE__, __LINE__, (m), (v), (s))
#define __shfl_up_sync(m, v, d)                                                              \
    emu::shfl_from(__FILE__, __LINE__, (m), (v),                                            \
                   emu::lane >= (int)(d) ? emu::lane - (int)(d) : emu::lane)
#define __shfl_down_sync(m, v, d)                                                            \
    emu::shfl_from(__FILE__, __LINE__, (m), (v),                                            \
                   emu::lane + (int)(d) <= 31 ? emu::lane + (int)(d) : emu::lane)
#define __shfl_xor_sync(m, v, x) emu::shfl_from(__FILE__, __LINE__, (m), (v), emu::lane ^ (int)(x))
#define __ballot_sync(m, p) emu::ballot(__FILE__, __LINE__, (m), (p))
#define __all_sync(m, p) (emu::ballot(__FILE__, __LINE__, (m), !(p)) == 0u)
#define __any_sync(m, p) (emu::ballot(__FILE__, __LINE__, (m), (p)) != 0u)
#define __syncwarp(...) ((void)emu::ballot(__FILE__, __LINE__, 0xffffffffu, false))
#define __syncthreads()                                                                      \
    ((void)emu::ballot(__FILE__, __LINE__, 0xffffffffu, false), emu::block->arrive_and_wait())
#define __threadfence() ((void)0)
#define asm_volatile(...) ((void)0)

// (only the guarded unions of the graph kernels use these: not emulated)
inline unsigned __activemask() { std::abort(); }
template <typename T> inline unsigned __match_any_sync(unsigned, T) { std::abort(); }
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __ffs(unsigned v) { return __builtin_ffs((int)v); }
inline int __ffs(int v) { return __builtin_ffs(v); }
inline int __clz(unsigned v) { return v ? __builtin_clz(v) : 32; }
inline int __clz(int v) { return __clz((unsigned)v); }
inline unsigned __brev(unsigned v) {
    unsigned r = 0;
    for (int k = 0; k < 32; ++k) r |= ((v >> k) & 1u) << (31 - k);
    return r;
}
template <typename T> inline T __ldg(const T* p) { return *p; }
template <typename T> inline T __ldcg(const T* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
inline float __int_as_float(int v) { return emu::of_bits<float>((unsigned)v); }
inline unsigned __float_as_uint(float v) { return (unsigned)emu::bits_of(v); }
inline double __longlong_as_double(long long v) { return emu::of_bits<double>((unsigned long long)v); }
inline long long __double_as_longlong(double v) { return (long long)emu::bits_of(v); }
template <typename T> inline T atomicCAS(T* a, T expected, T desired) {
    __atomic_compare_exchange_n(a, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expected;
}
template <typename T> inline T atomicOr(T* a, T v) { return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); }
template <typename T> inline T atomicAdd(T* a, T v) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }
template <typename T> inline T atomicMin(T* a, T v) {
    T old = __atomic_load_n(a, __ATOMIC_SEQ_CST);
    while (v < old && !__atomic_compare_exchange_n(a, &old, v, false, __ATOMIC_SEQ_CST,
                                                   __ATOMIC_SEQ_CST)) {
    }
    return old;
}
// byte-wise SIMD of CUDA (on 4 one-byte lanes)
inline unsigned __vabsdiffu4(unsigned a, unsigned b) {
    unsigned r = 0;
    for (int k = 0; k < 32; k += 8) {
        const int x = (a >> k) & 255, y = (b >> k) & 255;
        r |= (unsigned)(x > y ? x - y : y - x) << k;
    }
    return r;
}
inline unsigned __vabsdiffs4(unsigned a, unsigned b) {
    unsigned r = 0;
    for (int k = 0; k < 32; k += 8) {
        const int x = (signed char)((a >> k) & 255), y = (signed char)((b >> k) & 255);
        r |= (unsigned)((x > y ? x - y : y - x) & 255) << k;
    }
    return r;
}
inline unsigned __vcmpleu4(unsigned a, unsigned b) {
    unsigned r = 0;
    for (int k = 0; k < 32; k += 8)
        if (((a >> k) & 255) <= ((b >> k) & 255)) r |= 255u << k;
    return r;
}

namespace {
namespace emu {
template <typename... A, std::size_t... I>
inline void call(void (*f)(A...), void** args, std::index_sequence<I...>) {
    f(*reinterpret_cast<std::remove_reference_t<A>*>(args[I])...);
}

// Run kernel f over grid x block (block: 1-D, a multiple of 32 threads)
// with `shared` bytes of dynamic shared memory.
struct Fiber {
    ucontext_t ctx;
    char* stack;
    bool done;
};
static void (*body)(unsigned) = nullptr;
static Fiber* fibers = nullptr;
inline void fiber_main(unsigned t) {
    body(t);
    fibers[t].done = true;
    warp->exited[lane] = true;
    warp->bar.drop();
    block->drop();
}

template <typename... A>
inline int launch(void (*f)(A...), const unsigned* grid, const unsigned* blk, unsigned shared,
                   void** args) {
    gridDim = Dim{grid[0], grid[1], grid[2]};
    blockDim = Dim{blk[0], 1, 1};
    const unsigned threads = blk[0], warps = threads / 32;
    if (threads % 32 != 0 || blk[1] != 1 || blk[2] != 1) {
        std::fprintf(stderr, "emulated launches take 1-D blocks of whole warps\n");
        std::abort();
    }
    failure[0] = '\0';
    constexpr std::size_t STACK = 1 << 18;
    std::vector<Fiber> fs(threads);
    for (auto& fb : fs) fb.stack = static_cast<char*>(std::malloc(STACK));
    fibers = fs.data();
    static void** the_args;
    static void (*the_f)(A...);
    the_args = args;
    the_f = f;
    body = [](unsigned) { call(the_f, the_args, std::index_sequence_for<A...>{}); };
    for (unsigned bz = 0; bz < grid[2]; ++bz)
        for (unsigned by = 0; by < grid[1]; ++by)
            for (unsigned bx = 0; bx < grid[0]; ++bx) {
                Barrier bar;
                bar.live = (int)threads;
                std::vector<Warp> ws(warps);
                for (auto& w : ws) {
                    w.bar.live = 32;
                    for (int l = 0; l < 32; ++l) w.exited[l] = false;
                }
                dynamic_shared = shared ? static_cast<unsigned char*>(std::malloc(shared)) : nullptr;
                if (shared) std::memset(dynamic_shared, 0xA5, shared);  // (not zeroed on a GPU)
                blockIdx = Dim{bx, by, bz};
                for (unsigned t = 0; t < threads; ++t) {
                    Fiber& fb = fs[t];
                    fb.done = false;
                    getcontext(&fb.ctx);
                    fb.ctx.uc_stack.ss_sp = fb.stack;
                    fb.ctx.uc_stack.ss_size = STACK;
                    fb.ctx.uc_link = &scheduler;
                    makecontext(&fb.ctx, (void (*)())fiber_main, 1, t);
                }
                for (unsigned left = threads; left && !failure[0];) {
                    left = 0;
                    for (unsigned t = 0; t < threads; ++t) {
                        if (fs[t].done) continue;
                        threadIdx = Dim{t, 0, 0};
                        warp = &ws[t / 32];
                        block = &bar;
                        lane = (int)(t % 32);
                        running = &fs[t].ctx;
                        swapcontext(&scheduler, &fs[t].ctx);
                        left += fs[t].done ? 0 : 1;
                    }
                }
                std::free(dynamic_shared);
                dynamic_shared = nullptr;
                if (failure[0]) {
                    for (auto& fb : fs) std::free(fb.stack);
                    return 2;
                }
            }
    for (auto& fb : fs) std::free(fb.stack);
    return 0;
}
}  // namespace emu
}  // namespace

extern "C" const char* meshccl_failure() { return emu::failure; }
