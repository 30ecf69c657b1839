// runtime: where a cache export is written (runtime/cache/cache_transfer.cpp): only ever a new regular file
// renamed into place; a symbolic link, FIFO or device at the path is refused unless asked for.
#pragma once

#include <string>

namespace swz {
namespace detail {

/// Where export_to() puts its file.
struct ExportTarget {
  std::string final_path;      ///< the file to replace (a followed symbolic link's target), or the FIFO/device
  std::string temp_directory;  ///< where the file is built: final_path's directory, so rename() is atomic
  std::string temp_stem;       ///< the temporary file's name prefix
  bool stream = false;         ///< copy the finished bytes into final_path (a FIFO or character device)
};

/// Decides how to write `path`. Throws swz::Error(Io) for a directory, a block device or socket, or
/// (without `allow_special`) a symbolic link, FIFO or character device, saying what to do.
ExportTarget export_target(const std::string& path, bool allow_special);

/// A new, empty, private (0600) file made with mkstemp; removed on destruction unless published.
class TempFile {
 public:
  TempFile(const std::string& directory, const std::string& stem);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::string& path() const { return path_; }
  /// rename() over `final_path`, or (stream) copy the bytes into it with bounded waits.
  void publish(const std::string& final_path, bool stream);

  /// Longest a FIFO or device may go without accepting bytes before the export gives up.
  static constexpr int kStreamStallMs = 30000;

 private:
  std::string path_;
  bool published_ = false;
};

}  // namespace detail
}  // namespace swz
