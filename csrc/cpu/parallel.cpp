// morphaug's helper threads for parallel_over (parallel.h).
//
// A job is a count of chunks behind an atomic counter. The calling thread
// posts it, then claims chunks itself until none is left; a helper that wakes
// claims chunks of the newest job the same way and finds none when it comes
// late. The caller then waits only for the chunks that helpers claimed (it
// spins, yielding its core). So no thread ever waits for one that has not
// started, and a job never depends on a helper to finish.
//
// Helpers are created on first use, as many as the largest job asked for
// (torch's thread count less one), and a job takes no more of them than it
// asked for. After a job a helper spins for a short while (a launcher's
// passes follow one another within microseconds), then sleeps until the next.
// A forked child (a DataLoader worker) starts without threads: it forgets the
// parent's helpers and creates its own when it needs them.
#include "parallel.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#endif

namespace morphaug {
namespace {

thread_local bool running_chunk = false;

struct Job {
  const std::function<void(int64_t, int64_t)>* body;  // read only by the thread that claimed a chunk
  int64_t count, chunk, chunks;
  int helpers;  // helpers that may join
  std::atomic<int64_t> next{0}, finished{0};
  std::atomic<int> joined{0};
  std::mutex error_mutex;
  std::exception_ptr error;

  // Claims and runs chunks until none is left.
  void work() {
    running_chunk = true;
    for (int64_t c; (c = next.fetch_add(1, std::memory_order_relaxed)) < chunks;) {
      try {
        (*body)(c * chunk, std::min(count, (c + 1) * chunk));
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
      finished.fetch_add(1, std::memory_order_release);
    }
    running_chunk = false;
  }
};

class Helpers {
 public:
  static Helpers& get() {
    static std::once_flag registered;
    std::call_once(registered, [] {
#if defined(__unix__) || defined(__APPLE__)
      pthread_atfork(nullptr, nullptr, [] { instance_ = nullptr; });  // the parent's helpers stay behind
#endif
    });
    Helpers* helpers = instance_.load(std::memory_order_acquire);
    if (helpers == nullptr) {
      Helpers* fresh = new Helpers();  // never deleted: its threads live as long as the process
      if (instance_.compare_exchange_strong(helpers, fresh)) {
        helpers = fresh;
      } else {
        delete fresh;  // another thread made one first (no thread started yet)
      }
    }
    return *helpers;
  }

  // Hands `job` to the helpers (creating them up to job->helpers).
  void post(const std::shared_ptr<Job>& job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (static_cast<int>(threads_.size()) < job->helpers) threads_.emplace_back([this] { loop(); });
      job_ = job;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
  }

 private:
  void loop() {
    uint64_t seen = 0;
    for (;;) {
      if (!spin_for_job(seen)) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
      }
      std::shared_ptr<Job> job;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        seen = generation_.load(std::memory_order_relaxed);
        job = job_;
      }
      if (job && job->joined.fetch_add(1, std::memory_order_relaxed) < job->helpers) job->work();
    }
  }

  // Whether a job newer than `seen` was posted within the spin time.
  bool spin_for_job(uint64_t seen) const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    do {
      for (int i = 0; i < 256; ++i) {
        if (generation_.load(std::memory_order_acquire) != seen) return true;
      }
      std::this_thread::yield();
    } while (std::chrono::steady_clock::now() < until);
    return false;
  }

  static std::atomic<Helpers*> instance_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::shared_ptr<Job> job_;
  std::vector<std::thread> threads_;
};

std::atomic<Helpers*> Helpers::instance_{nullptr};

}  // namespace

bool in_chunk() { return running_chunk; }

void run_chunks(int64_t count, int64_t chunk, int helpers, const std::function<void(int64_t, int64_t)>& body) {
  auto job = std::make_shared<Job>();
  job->body = &body;
  job->count = count;
  job->chunk = chunk;
  job->chunks = (count + chunk - 1) / chunk;
  job->helpers = helpers;
  Helpers::get().post(job);
  job->work();
  while (job->finished.load(std::memory_order_acquire) < job->chunks) std::this_thread::yield();
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace morphaug
