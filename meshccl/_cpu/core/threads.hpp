// threads.hpp -- the one way the compiled CPU core runs work on several
// threads: on_threads(T, f) calls f(0) .. f(T - 1), f(0) on the calling
// thread and the rest on std::threads started for the call and joined
// before it returns.  Threads are started per call rather than kept in a
// pool: a call's work (a slab of an image, a chunk of edges) is large next
// to a thread's start (tens of microseconds), and nothing outlives the call
// (no state between calls, nothing to shut down at exit or after fork).
#pragma once

#include <thread>
#include <utility>
#include <vector>

namespace meshccl {
namespace threads {

// Run f(s) for s in [0, T) on T threads (s = 0 on the calling one).
template <class F>
void on_threads(int T, F&& f) {
    std::vector<std::thread> pool;
    pool.reserve(std::size_t(T > 1 ? T - 1 : 0));
    for (int s = 1; s < T; ++s) pool.emplace_back([&f, s] { f(s); });
    f(0);
    for (auto& th : pool) th.join();
}

}  // namespace threads
}  // namespace meshccl
