#include "writer/stream_hash.h"

#include <algorithm>
#include <new>
#include <numeric>
#include <string>
#include <system_error>
#include <utility>

namespace etpack {

Result<size_t> StreamHashes::Add(uint64_t offset, uint64_t size, HashKind kind) {
  if (started_) return InvalidArgument("internal: a hashed range added after streaming began");
  ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<RunningHash> h, NewRunningHash(kind));
  ranges_.push_back({offset, offset + size, std::move(h), {}});
  return ranges_.size() - 1;
}

Status StreamHashes::Feed(uint64_t offset, const uint8_t* data, uint64_t n) {
  if (!started_) {
    started_ = true;
    order_.resize(ranges_.size());
    std::iota(order_.begin(), order_.end(), size_t{0});
    std::stable_sort(order_.begin(), order_.end(),
                     [&](size_t a, size_t b) { return ranges_[a].offset < ranges_[b].offset; });
  }
  if (offset < pos_) {
    return InvalidArgument("internal: bytes at " + std::to_string(offset) +
                           " hashed after bytes up to " + std::to_string(pos_));
  }
  if (offset > pos_) Span(pos_, nullptr, offset - pos_);
  Span(offset, data, n);
  pos_ = offset + n;
  return Status::OK();
}

void StreamHashes::Span(uint64_t offset, const uint8_t* data, uint64_t n) {
  const uint64_t end = offset + n;
  // Ranges open once the stream reaches them; an empty range at the
  // current position finishes at once.
  while (next_ < order_.size() && ranges_[order_[next_]].offset <= end) {
    active_.push_back(order_[next_++]);
  }
  for (size_t i = 0; i < active_.size();) {
    Range& r = ranges_[active_[i]];
    const uint64_t lo = std::max(offset, r.offset);
    const uint64_t hi = std::min(end, r.end);
    if (lo < hi) {
      if (data != nullptr) {
        r.hash->Update(data + (lo - offset), static_cast<size_t>(hi - lo));
      } else {
        r.hash->UpdateZeros(hi - lo);
      }
    }
    if (r.end <= end) {
      r.digest = r.hash->Finish();
      r.hash.reset();
      active_[i] = active_.back();
      active_.pop_back();
      continue;
    }
    ++i;
  }
}

HashThread::HashThread(StreamHashes& hashes) : hashes_(hashes) {
  try {
    thread_ = std::thread([this] { Run(); });
  } catch (const std::system_error&) {
    // No thread (a process at its limit): Feed hashes inline instead.
  }
}

HashThread::~HashThread() {
  {
    // Only an abandoned write leaves jobs here, and their bytes may be gone.
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.clear();
    stop_ = true;
  }
  work_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void HashThread::Feed(uint64_t offset, const uint8_t* data, uint64_t n) {
  if (!thread_.joinable()) {
    if (status_.ok()) status_ = hashes_.Feed(offset, data, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back({offset, data, n});
  }
  work_.notify_one();
}

Status HashThread::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return jobs_.empty() && !busy_; });
  return status_;
}

void HashThread::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stop_, and nothing left
    const Job job = jobs_.front();
    jobs_.pop_front();
    busy_ = true;
    const bool failed = !status_.ok();
    lock.unlock();
    // After a failure the rest is dropped: the write is already lost.
    Status s;
    try {
      if (!failed) s = hashes_.Feed(job.offset, job.data, job.n);
    } catch (const std::bad_alloc&) {
      // An exception would end the process from this thread.
      s = OutOfRange("out of memory while hashing");
    }
    lock.lock();
    if (!s.ok() && status_.ok()) status_ = std::move(s);
    busy_ = false;
    if (jobs_.empty()) idle_.notify_all();
  }
}

}  // namespace etpack
