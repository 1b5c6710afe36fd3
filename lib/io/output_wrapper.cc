// OutputFileWrapper and OutputFsWrapper: plain forwarding. They live in io
// because forwarding the protected publishing steps needs PublishSteps,
// which nothing outside io uses.

#include <memory>
#include <string>
#include <utility>

#include "etpack/output.h"
#include "io/publish_steps.h"

namespace etpack {

OutputFileWrapper::OutputFileWrapper(std::unique_ptr<OutputFile> target)
    : target_(std::move(target)) {}

OutputFileWrapper::~OutputFileWrapper() = default;

const std::string& OutputFileWrapper::destination() const { return target_->destination(); }
const std::string& OutputFileWrapper::target() const { return target_->target(); }
bool OutputFileWrapper::Replaces(int fd) const { return target_->Replaces(fd); }
Status OutputFileWrapper::ReplaceOnly(int fd) { return target_->ReplaceOnly(fd); }
Status OutputFileWrapper::Reserve(uint64_t size) { return target_->Reserve(size); }
Result<bool> OutputFileWrapper::ReserveClone(const Source& source) {
  return target_->ReserveClone(source);
}
Status OutputFileWrapper::Write(uint64_t offset, const Source& source) {
  return target_->Write(offset, source);
}
uint64_t OutputFileWrapper::bytes_written() const { return target_->bytes_written(); }
uint64_t OutputFileWrapper::bytes_shared() const { return target_->bytes_shared(); }
Status OutputFileWrapper::Truncate(uint64_t size) { return target_->Truncate(size); }
Status OutputFileWrapper::Sync() { return target_->Sync(); }
Status OutputFileWrapper::Link() { return PublishSteps::Link(*target_); }
Status OutputFileWrapper::Rename() { return PublishSteps::Rename(*target_); }
void OutputFileWrapper::Unplace() { PublishSteps::Unplace(*target_); }
Status OutputFileWrapper::SyncDirectory() { return PublishSteps::SyncDirectory(*target_); }
bool OutputFileWrapper::replaced_existing() const {
  return PublishSteps::replaced_existing(*target_);
}
bool OutputFileWrapper::DestinationExists() const {
  return PublishSteps::DestinationExists(*target_);
}
Status OutputFileWrapper::Mark(const std::string& bytes) {
  return PublishSteps::Mark(*target_, bytes);
}
void OutputFileWrapper::Unmark(bool unit_placed) { PublishSteps::Unmark(*target_, unit_placed); }
std::string OutputFileWrapper::lock_directory() const {
  return PublishSteps::lock_directory(*target_);
}

Result<std::unique_ptr<OutputFile>> OutputFsWrapper::Create(const std::string& destination) {
  return target_->Create(destination);
}
Status OutputFsWrapper::MakeFolders(const std::string& dir) { return target_->MakeFolders(dir); }
Result<std::unique_ptr<UpdateLock>> OutputFsWrapper::LockForUpdate(const std::string& path,
                                                                   const CancelFn& cancel) {
  return target_->LockForUpdate(path, cancel);
}

}  // namespace etpack
