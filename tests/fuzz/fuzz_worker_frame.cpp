// tests/fuzz: the autotuner's worker protocol (runtime/worker/worker_protocol.hpp) on arbitrary bytes:
// the frame header, every message's decoder, and read_frame() over a pipe. A decoded message must
// encode to bytes that decode to the same encoding (the protocol carries no slack).
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/worker/worker_protocol.hpp"

namespace w = swz::detail::worker;

namespace {

template <class M>
void decode_as(const std::string& payload) {
  w::Frame frame;
  frame.type = M::kType;
  frame.payload = payload;
  M message;
  try {
    message = w::decode<M>(frame);
  } catch (const w::ProtocolError&) {
    return;
  }
  const std::string once = w::encode(message);
  w::Frame again;
  std::uint64_t bytes = 0;
  w::decode_header(reinterpret_cast<const unsigned char*>(once.data()), &again.type, &bytes);
  if (again.type != M::kType || bytes != once.size() - w::kHeaderBytes) {
    std::fprintf(stderr, "fuzz_worker_frame: encode() wrote a header that does not describe its payload\n");
    std::abort();
  }
  again.payload = once.substr(w::kHeaderBytes);
  const std::string twice = w::encode(w::decode<M>(again));
  if (twice != once) {
    std::fprintf(stderr, "fuzz_worker_frame: %s does not survive encode/decode\n", w::to_string(M::kType));
    std::abort();
  }
}

void decode_any(const std::string& payload) {
  decode_as<w::HelloRequest>(payload);
  decode_as<w::HelloReply>(payload);
  decode_as<w::SupportRequest>(payload);
  decode_as<w::SupportReply>(payload);
  decode_as<w::BenchRequest>(payload);
  decode_as<w::BenchReply>(payload);
  decode_as<w::RetimeRequest>(payload);
  decode_as<w::RetimeReply>(payload);
  decode_as<w::QuitRequest>(payload);
}

// Frames as the worker and the client read them: from a file descriptor, until the stream ends.
void read_stream(const std::uint8_t* data, std::size_t size) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) std::abort();
  std::size_t written = 0;
  while (written < size) {  // size <= 64 KiB: the pipe holds it all
    const ssize_t n = ::write(fds[1], data + written, size - written);
    if (n <= 0) std::abort();
    written += static_cast<std::size_t>(n);
  }
  ::close(fds[1]);
  try {
    for (int frames = 0; frames < 64; ++frames) {
      w::Frame frame;
      // No deadline: the writer is closed, so every read ends (a hang is libFuzzer's -timeout). With
      // one, the time read_frame spends zeroing an announced payload of up to 256 MiB before reading
      // it counts against the deadline, and a loaded machine reports Timeout instead of the stream's end
      // (corpus/worker_frame/large_payload_closed_stream).
      const w::ReadStatus status = w::read_frame(fds[0], &frame, -1);
      if (status == w::ReadStatus::Eof) break;
      if (status == w::ReadStatus::Timeout) {
        std::fprintf(stderr, "fuzz_worker_frame: read_frame without a deadline timed out\n");
        std::abort();
      }
      decode_any(frame.payload);
    }
  } catch (const w::ProtocolError&) {
  }
  ::close(fds[0]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 65536) return -1;
  if (size >= w::kHeaderBytes) {
    w::MessageType type;
    std::uint64_t bytes = 0;
    try {
      w::decode_header(data, &type, &bytes);
      if (bytes > w::kMaxPayloadBytes) {
        std::fprintf(stderr, "fuzz_worker_frame: decode_header accepted a %llu-byte payload\n",
                     static_cast<unsigned long long>(bytes));
        std::abort();
      }
    } catch (const w::ProtocolError&) {
    }
    decode_any(std::string(reinterpret_cast<const char*>(data) + w::kHeaderBytes, size - w::kHeaderBytes));
  }
  read_stream(data, size);
  return 0;
}
