#pragma once
// The process's CPU pool limited to `threads` while this lives (0: left as it is), the limit it had
// back afterwards: tests that take the CPU backend's one-thread paths on a machine with more cores.
#include "core/util/thread_pool.h"

namespace mirrorlab::testsupport {

class ScopedThreadLimit {
public:
    explicit ScopedThreadLimit(int threads) : saved_(ThreadPool::instance().limit()) {
        if (threads > 0) ThreadPool::instance().set_limit(threads);
    }
    ~ScopedThreadLimit() { ThreadPool::instance().set_limit(saved_); }
    ScopedThreadLimit(const ScopedThreadLimit&) = delete;
    ScopedThreadLimit& operator=(const ScopedThreadLimit&) = delete;

private:
    int saved_;
};

}  // namespace mirrorlab::testsupport
