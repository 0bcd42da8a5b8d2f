// philox.cuh -- Philox4x32 (Salmon, Moraes, Dror and Shaw, SC11) for the
// simulation kernels: four 32-bit words from a 128-bit counter and a 64-bit
// key.  Each round multiplies words 0 and 2 by 0xD2511F53 and 0xCD9E8D57,
// keeps the low halves as the new words 3 and 1, and xors the high halves
// with the other two words and the key; the key grows by the Weyl
// increments 0x9E3779B9 and 0xBB67AE85 before every round but the first.
// The same rounds as meshccl/sim/random.py's NumPy code; the CuPy side of
// random.words() and the kernels of ising.cu draw through meshccl_philox,
// and so does its NumPy side, compiled into the CPU core
// (meshccl/_cpu/core/philox_words.cpp).  The body is plain C (the high half
// of a 32 x 32-bit product: __umulhi on the device, a 64-bit product on the
// host), so the host build and the tests compile it too.
#pragma once

#ifndef __CUDACC__
#define MESHCCL_PHILOX_FN static inline
MESHCCL_PHILOX_FN unsigned int meshccl_umulhi(unsigned int a, unsigned int b) {
    return (unsigned int)(((unsigned long long)a * b) >> 32);
}
#else
#define MESHCCL_PHILOX_FN __device__ __forceinline__
#define meshccl_umulhi __umulhi
#endif

// Rounds of the simulators (Philox4x32-10, the published default; random.ROUNDS).
#define MESHCCL_PHILOX_ROUNDS 10

// The four words of counter (c0, c1, c2, c3) and key (k0, k1) after `rounds`
// rounds (a constant at the call unrolls the loop).
MESHCCL_PHILOX_FN void meshccl_philox(unsigned int c0, unsigned int c1, unsigned int c2,
                                      unsigned int c3, unsigned int k0, unsigned int k1,
                                      int rounds, unsigned int r[4]) {
    unsigned int x0 = c0, x1 = c1, x2 = c2, x3 = c3;
#if defined(__CUDACC__)
#pragma unroll
#endif
    for (int i = 0; i < rounds; ++i) {
        if (i > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const unsigned int hi0 = meshccl_umulhi(0xD2511F53u, x0), lo0 = 0xD2511F53u * x0;
        const unsigned int hi1 = meshccl_umulhi(0xCD9E8D57u, x2), lo1 = 0xCD9E8D57u * x2;
        x0 = hi1 ^ x1 ^ k0;
        x1 = lo1;
        x2 = hi0 ^ x3 ^ k1;
        x3 = lo0;
    }
    r[0] = x0;
    r[1] = x1;
    r[2] = x2;
    r[3] = x3;
}
