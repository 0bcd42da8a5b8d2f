// launch.cuh -- kernels of one chain that start before the one before ends.
//
// A plain image is labelled by a chain of five or six kernels (tile,
// border, in 3-D the z faces, piece roots, label pieces, label pass), each
// of which needs everything the one before it wrote.  Launched the ordinary way, a
// kernel's blocks are only sent to the multiprocessors once the kernel
// before has ended and its writes have been flushed, so every boundary
// costs the launch itself, the ramp up of the new kernel and the drain of
// the old one's last blocks -- microseconds each, several percent of a
// 0.15 ms call.
//
// From Hopper (sm_90) on, a kernel launched with the attribute
// "programmatic stream serialization" (meshccl/_gpu/launch.py does so for
// the kernels of a plan's chain that image_plain.py marks early: the numbering
// chain after the border kernels) may be sent out as soon as every block of
// the kernel before has said it may (griddepcontrol.launch_dependents).
// Its blocks then take the room the old kernel's finished blocks leave, and
// wait in griddepcontrol.wait until that kernel has ended and its memory is
// visible: the launch and the ramp up overlap the drain, the dependency
// stays whole.
//
// grid_entry() does both at the top of a kernel, before its first read of
// anything an earlier kernel wrote and before any early return: a kernel
// that could end without waiting might end before its predecessor, and the
// next one's wait would then cover only it.  It waits first and says "may"
// after: said first, the next kernel could be sent out while this one still
// waits, the one after it too, and a whole chain of waiting blocks would
// crowd the kernel that runs (that cost up to 10 %).  So only one kernel
// waits ahead, in the room the running one's last blocks leave.
// Launched the ordinary way, or on an older GPU, grid_entry() does nothing.
//
// thread_id() and thread_count() are a thread's index in the whole grid and
// the grid's size, for the grid-stride loops of the graph, list-ranking and
// strong-component kernels (64-bit: their loops run past 2^31 items).

#pragma once

namespace meshccl {

__device__ __forceinline__ void grid_entry() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ long long thread_id() {
    return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ long long thread_count() {
    return (long long)gridDim.x * blockDim.x;
}

}  // namespace meshccl
