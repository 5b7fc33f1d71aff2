// A small persistent thread pool for the CPU engine: the caller is one of the threads, work
// items are handed out by an atomic counter.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kvscope::gpu::detail::cpu {

class ThreadPool {
public:
    explicit ThreadPool(unsigned threads) {
        for (unsigned i = 1; i < threads; ++i)
            workers_.emplace_back([this] { workerLoop(); });
    }
    ~ThreadPool() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        for (auto& t : workers_)
            t.join();
    }
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;
    unsigned size() const { return unsigned(workers_.size()) + 1; }

    /// Runs fn(i) for i in [0, n) on every thread (the caller included); returns when done.
    void parallelFor(std::int64_t n, const std::function<void(std::int64_t)>& fn) {
        if (n <= 0)
            return;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            job_ = &fn;
            count_ = n;
            next_.store(0);
            busy_ = unsigned(workers_.size());
            ++generation_;
        }
        wake_.notify_all();
        drain();
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [this] { return busy_ == 0; });
        job_ = nullptr;
    }

private:
    void drain() {
        for (std::int64_t i; (i = next_.fetch_add(1)) < count_;)
            (*job_)(i);
    }
    void workerLoop() {
        std::uint64_t seen = 0;
        for (;;) {
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
                if (stop_)
                    return;
                seen = generation_;
            }
            drain();
            {
                std::lock_guard<std::mutex> lock(mutex_);
                if (--busy_ == 0)
                    done_.notify_one();
            }
        }
    }

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    const std::function<void(std::int64_t)>* job_ = nullptr;
    std::int64_t count_ = 0;
    std::atomic<std::int64_t> next_{0};
    unsigned busy_ = 0;
    std::uint64_t generation_ = 0;
    bool stop_ = false;
};

} // namespace kvscope::gpu::detail::cpu
