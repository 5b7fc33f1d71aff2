// A small persistent thread pool for the CPU engine: the caller is one of the threads, work
// items are handed out by an atomic counter.
// Between jobs the workers spin for a short while (spinTime()) before they sleep, and the caller
// spins for the workers to finish before it sleeps: a measured decode step is 0.3-10 ms, and on
// this project's VM a condition-variable round trip (wake a worker, then be woken by it) took 16-96
// us (median 72 us, NOTES.md "eighteenth session"), up to a fifth of a GQA-2 or MQA point. OpenMP
// runtimes (GOMP_SPINCOUNT, OMP_WAIT_POLICY) and llama.cpp's thread pool wait the same way; a pool
// left idle for longer than that costs no CPU.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kvscope::gpu::detail::cpu {

class ThreadPool {
public:
    /// How long an idle thread polls before it sleeps: 2 ms, or KVSCOPE_CPU_SPIN_US (0: sleep at
    /// once, as a plain condition-variable pool; for A/B).
    static std::chrono::microseconds spinTime() {
        static const std::chrono::microseconds t = [] {
            const char* e = std::getenv("KVSCOPE_CPU_SPIN_US");
            return std::chrono::microseconds(e ? std::max(0l, std::atol(e)) : 2000l);
        }();
        return t;
    }

    explicit ThreadPool(unsigned threads) {
        for (unsigned i = 1; i < threads; ++i)
            workers_.emplace_back([this] { workerLoop(); });
    }
    ~ThreadPool() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_.store(true);
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
        bool sleepers = false;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            job_ = &fn;
            count_ = n;
            next_.store(0);
            busy_.store(unsigned(workers_.size()));
            generation_.fetch_add(1, std::memory_order_release);
            sleepers = sleeping_ > 0;
        }
        if (sleepers)
            wake_.notify_all();
        drain();
        if (!spinUntil([this] { return busy_.load(std::memory_order_acquire) == 0; })) {
            std::unique_lock<std::mutex> lock(mutex_);
            done_.wait(lock, [this] { return busy_.load() == 0; });
        }
        job_ = nullptr;
    }

private:
    static void pause() {
#if defined(__x86_64__) || defined(__i386__)
        _mm_pause();
#else
        std::this_thread::yield();
#endif
    }
    /// Polls `ready` for up to spinTime(); whether it became true.
    template <class Ready> static bool spinUntil(Ready ready) {
        const auto end = std::chrono::steady_clock::now() + spinTime();
        for (;;) {
            for (int i = 0; i < 64; ++i) {
                if (ready())
                    return true;
                pause();
            }
            if (std::chrono::steady_clock::now() > end)
                return ready();
        }
    }
    void drain() {
        for (std::int64_t i; (i = next_.fetch_add(1)) < count_;)
            (*job_)(i);
    }
    void workerLoop() {
        std::uint64_t seen = 0;
        const auto posted = [&] {
            return stop_.load() || generation_.load(std::memory_order_acquire) != seen;
        };
        for (;;) {
            if (!spinUntil(posted)) {
                std::unique_lock<std::mutex> lock(mutex_);
                ++sleeping_;
                wake_.wait(lock, posted);
                --sleeping_;
            }
            if (stop_.load())
                return;
            seen = generation_.load(std::memory_order_acquire);
            drain();
            // The last worker out wakes a caller that stopped spinning; the notify under the
            // mutex cannot fall between the caller's check and its wait.
            if (busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
                std::lock_guard<std::mutex> lock(mutex_);
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
    std::atomic<unsigned> busy_{0};
    std::atomic<std::uint64_t> generation_{0};
    std::atomic<bool> stop_{false};
    int sleeping_ = 0; // workers waiting on wake_ (under mutex_)
};

} // namespace kvscope::gpu::detail::cpu
