// The hand-over between the producing thread and the writer: one piece at a
// time, so the producer is never more than a piece ahead and memory is what
// the producer itself holds.

#include "archive/pushed_stream.h"

#include <condition_variable>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <utility>

namespace etpack {
namespace {

class Pushed final : public ByteStream {
 public:
  Pushed(std::string name, uint64_t max_size, uint64_t work,
         std::function<Status(const PutFn&)> produce)
      : name_(std::move(name)), max_size_(max_size), work_(work), produce_(std::move(produce)) {}

  ~Pushed() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

  std::string Describe() const override { return name_; }
  uint64_t max_size() const override { return max_size_; }
  uint64_t work() const override { return work_; }

  Result<Piece> Next() override {
    if (!started_) {
      started_ = true;
      try {
        thread_ = std::thread([this] { Run(); });
      } catch (const std::system_error&) {
        return OutOfRange(name_ + ": cannot start a thread");
      }
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (holding_) {  // the piece handed over last is written
      holding_ = false;
      offered_ = false;
      cv_.notify_all();
    }
    cv_.wait(lock, [&] { return offered_ || done_; });
    if (offered_) {
      holding_ = true;
      return Piece{MemorySource(data_, size_), work_done_};
    }
    if (!status_.ok()) return status_;
    return Piece{};
  }

 private:
  void Run() {
    const PutFn put = [this](const uint8_t* data, uint64_t n, uint64_t work) -> Status {
      std::unique_lock<std::mutex> lock(mu_);
      data_ = data;
      size_ = n;
      work_done_ = work;
      offered_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return !offered_ || stopped_; });
      if (stopped_) return Status(Code::kIoError, name_ + ": the writer stopped reading");
      return Status::OK();
    };
    Status s;
    try {
      s = produce_(put);
    } catch (const std::bad_alloc&) {  // an exception would end the process here
      s = OutOfRange(name_ + ": out of memory");
    }
    std::lock_guard<std::mutex> lock(mu_);
    status_ = std::move(s);
    done_ = true;
    cv_.notify_all();
  }

  const std::string name_;
  const uint64_t max_size_;
  const uint64_t work_;
  const std::function<Status(const PutFn&)> produce_;
  std::thread thread_;
  bool started_ = false;  // writer's thread only
  bool holding_ = false;  // the writer has the offered piece (writer's thread only)

  std::mutex mu_;
  std::condition_variable cv_;
  bool offered_ = false;  // a piece waits for the writer (or is being written)
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t work_done_ = 0;
  bool done_ = false;     // produce returned status_
  bool stopped_ = false;  // the stream is being destroyed
  Status status_;
};

}  // namespace

std::shared_ptr<ByteStream> PushedStream(std::string name, uint64_t max_size, uint64_t work,
                                         std::function<Status(const PutFn&)> produce) {
  return std::make_shared<Pushed>(std::move(name), max_size, work, std::move(produce));
}

}  // namespace etpack
