// ordered_jobs.h (internal) — numbered jobs run by worker threads, their
// results handed over in job order on the calling thread: how frames are
// compressed and decompressed in parallel while the output is still
// written front to back through the output seam.
//
// Workers may run at most `slots` jobs ahead of the sink, each into its own
// slot, so memory is bounded by the slots whatever the job count.

#ifndef ETPACK_ARCHIVE_ORDERED_JOBS_H_
#define ETPACK_ARCHIVE_ORDERED_JOBS_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "etpack/status.h"

namespace etpack {

// Runs job(worker, i, &bytes) for i in [0, count) on `threads` workers and
// `slots` result buffers,
// where `worker` is each worker's own state, made by make_worker() on its
// thread (a zstd context, scratch buffers), and `bytes` the slot the job
// fills. sink(i, bytes) takes the results in order on the calling thread.
// Returns the first error in job order (a job's or the sink's); jobs after
// it are not started or their results are dropped. Running out of memory
// in a job (or making its worker) is kOutOfRange naming the job as
// name(i) gives it ("model.ptd: frame 3 [0, +8388608)").
// REQUIRES: threads >= 1, slots >= threads.
template <typename Worker>
Status RunOrderedJobs(size_t count, int threads, size_t slot_count,
                      const std::function<std::string(size_t)>& name,
                      const std::function<Worker()>& make_worker,
                      const std::function<Status(Worker&, size_t, std::vector<uint8_t>*)>& job,
                      const std::function<Status(size_t, const std::vector<uint8_t>&)>& sink) {
  struct Slot {
    std::vector<uint8_t> bytes;
    Status status;
    bool ready = false;
  };
  std::vector<Slot> slots(slot_count);
  std::mutex mu;
  std::condition_variable cv;
  size_t next = 0;   // the next job a worker takes
  size_t taken = 0;  // jobs the sink has taken
  bool stop = false;

  auto work = [&] {
    std::optional<Worker> worker;
    for (;;) {
      size_t i;
      {
        std::unique_lock<std::mutex> lock(mu);
        // A slot is free once the sink took the job that used it before.
        cv.wait(lock, [&] { return stop || next >= count || next < taken + slots.size(); });
        if (stop || next >= count) return;
        i = next++;
      }
      Slot& slot = slots[i % slots.size()];
      Status s;
      try {
        if (!worker) worker.emplace(make_worker());
        s = job(*worker, i, &slot.bytes);
      } catch (const std::bad_alloc&) {
        // An exception would end the process from this thread.
        s = OutOfRange(name(i) + ": out of memory (" + std::to_string(threads) +
                       " workers, each holding about a frame)");
      }
      std::lock_guard<std::mutex> lock(mu);
      slot.status = std::move(s);
      slot.ready = true;
      cv.notify_all();
    }
  };
  std::vector<std::thread> workers;
  Status result;
  try {
    for (int t = 0; t < threads; ++t) workers.emplace_back(work);
  } catch (const std::system_error&) {
    // Fewer threads than asked (a process at its limit); none at all is
    // an error rather than a hang.
    if (workers.empty()) result = OutOfRange("cannot start a worker thread");
  }
  for (size_t i = 0; result.ok() && i < count; ++i) {
    Slot& slot = slots[i % slots.size()];
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return slot.ready; });
    }
    result = slot.status;
    if (result.ok()) result = sink(i, slot.bytes);
    std::lock_guard<std::mutex> lock(mu);
    slot.ready = false;
    ++taken;
    cv.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
    cv.notify_all();
  }
  for (std::thread& w : workers) w.join();
  return result;
}

}  // namespace etpack

#endif  // ETPACK_ARCHIVE_ORDERED_JOBS_H_
