// tests/runtime: the autotuner <-> worker protocol (runtime/worker/worker_protocol.cpp), the worker binary's
// refusals (runtime/worker/worker_main.cpp) and the parent's handling of dead, silent and confused
// workers (runtime/worker/worker_client.cpp). CPU only: the worker is run with no usable driver.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "generator/families/transpose/transpose_family.hpp"
#include "runtime/worker/worker_client.hpp"
#include "runtime/worker/worker_protocol.hpp"
#include "swzjit/error.hpp"

extern char** environ;

using namespace swz::detail::worker;

namespace {

std::string worker_path() {
  const std::string tool = SWZ_TOOL_PATH;
  return tool.substr(0, tool.rfind('/')) + "/swz-worker";
}

struct Ran {
  int code = -1;
  std::string out, err;
};

std::string slurp(int fd) {
  std::string s;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      s.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  return s;
}

// Runs the worker with `input` on a pipe as stdin (or `stdin_fd` when >= 0), capturing stdout and stderr.
Ran run_worker(const std::string& input, int stdin_fd = -1) {
  int in[2], out[2], err[2];
  REQUIRE(pipe(in) == 0);
  REQUIRE(pipe(out) == 0);
  REQUIRE(pipe(err) == 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, stdin_fd >= 0 ? stdin_fd : in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) posix_spawn_file_actions_addclose(&fa, fd);
  std::string path = worker_path();
  char* argv[] = {&path[0], nullptr};
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, path.c_str(), &fa, nullptr, argv, environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  if (!input.empty()) CHECK(write(in[1], input.data(), input.size()) == static_cast<ssize_t>(input.size()));
  close(in[1]);
  Ran r;
  std::thread drain_err([&] { r.err = slurp(err[0]); });
  r.out = slurp(out[0]);
  drain_err.join();
  close(out[0]);
  close(err[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// Sets an environment variable for the lifetime of the object (children spawned meanwhile see it).
struct ScopedEnv {
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = getenv(name)) {
      had_ = true;
      old_ = old;
    }
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }
  const char* name_;
  bool had_ = false;
  std::string old_;
};

std::string temp_dir() {
  char tmpl[] = "/tmp/swz_worker_test_XXXXXX";
  const char* d = mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  return d;
}

std::string write_script(const std::string& dir, const std::string& name, const std::string& body) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  REQUIRE(chmod(path.c_str(), 0700) == 0);
  return path;
}

BenchJob sample_job() {
  BenchJob j;
  j.id = 0xFEEDFACE12345678ull;
  j.config = "f32,tile=32x32,threads=256,vec=4,smem=swizzle:5:0:5";
  j.kernel.image = std::string("\x7f" "ELF\0\x01\x02 binary \0 bytes", 20);
  j.kernel.is_ptx = false;
  j.kernel.arch = "sm_90";
  j.kernel.lowered_name = "_ZN3swz3tpl16transpose_kernelILi4ELi32EEEvNS0_15TransposeParamsE";
  j.grid[0] = 256;
  j.grid[1] = 65535;
  j.grid[2] = 3;
  j.block[0] = 256;
  j.dynamic_smem = 98304;
  return j;
}

void check_same(const BenchJob& a, const BenchJob& b) {
  CHECK(a.id == b.id);
  CHECK(a.config == b.config);
  CHECK(a.kernel.image == b.kernel.image);
  CHECK(a.kernel.is_ptx == b.kernel.is_ptx);
  CHECK(a.kernel.arch == b.kernel.arch);
  CHECK(a.kernel.lowered_name == b.kernel.lowered_name);
  for (int d = 0; d < 3; ++d) {
    CHECK(a.grid[d] == b.grid[d]);
    CHECK(a.block[d] == b.block[d]);
  }
  CHECK(a.dynamic_smem == b.dynamic_smem);
}

Frame frame_of(const std::string& bytes) {
  REQUIRE(bytes.size() >= kHeaderBytes);
  Frame f;
  std::uint64_t n = 0;
  decode_header(reinterpret_cast<const unsigned char*>(bytes.data()), &f.type, &n);
  REQUIRE(n == bytes.size() - kHeaderBytes);
  f.payload = bytes.substr(kHeaderBytes);
  return f;
}

}  // namespace

TEST_CASE("worker protocol: every message survives an encode/decode round trip") {
  HelloRequest hello;
  hello.device = 3;
  hello.kind = ProblemKind::Family;
  hello.family.definition = "family = t\n--- source\n#include \"transpose.cuh\"\n";
  hello.family.problem = "dtype=f16,rows=16384,cols=8192,ld_in=8200,ld_out=16400,batch=7,align_in=16,align_out=4";
  hello.family.seed = 0xC0FFEEu;
  const HelloRequest h2 = decode<HelloRequest>(frame_of(encode(hello)));
  CHECK(h2.device == 3);
  CHECK(h2.kind == ProblemKind::Family);
  CHECK(h2.family.definition == hello.family.definition);
  CHECK(h2.family.problem == hello.family.problem);
  CHECK(h2.family.seed == 0xC0FFEEu);

  HelloReply hr;
  hr.ok = false;
  hr.error_kind = static_cast<int>(swz::ErrorKind::NoDevice);
  hr.error = "no driver\nsecond line";
  hr.device_name = "NVIDIA H100 80GB HBM3";
  hr.arch = "sm_90";
  hr.sm_count = 132;
  hr.l2_bytes = 52428800;
  hr.init_ms = 123.25;
  const HelloReply hr2 = decode<HelloReply>(frame_of(encode(hr)));
  CHECK(!hr2.ok);
  CHECK(hr2.error_kind == hr.error_kind);
  CHECK(hr2.error == hr.error);
  CHECK(hr2.device_name == hr.device_name);
  CHECK(hr2.sm_count == 132);
  CHECK(hr2.l2_bytes == 52428800);
  CHECK(hr2.init_ms == 123.25);

  BenchRequest br;
  br.job = sample_job();
  br.timing = TimingSettings{2, 11, 333, 17.5};
  const BenchRequest br2 = decode<BenchRequest>(frame_of(encode(br)));
  check_same(br.job, br2.job);
  CHECK(br2.timing.warmup == 2);
  CHECK(br2.timing.min_reps == 11);
  CHECK(br2.timing.max_reps == 333);
  CHECK(br2.timing.target_ms == 17.5);

  BenchReply reply;
  reply.result = BenchResult{42, "wrong-result", "out[0][1][2] is wrong", 0.5, 0.25, 0.75, 57, true};
  const BenchReply reply2 = decode<BenchReply>(frame_of(encode(reply)));
  CHECK(reply2.result.id == 42);
  CHECK(reply2.result.status == "wrong-result");
  CHECK(reply2.result.reason == "out[0][1][2] is wrong");
  CHECK(reply2.result.median_ms == 0.5);
  CHECK(reply2.result.p20_ms == 0.25);
  CHECK(reply2.result.p80_ms == 0.75);
  CHECK(reply2.result.repetitions == 57);
  CHECK(reply2.result.worker_exiting);

  RetimeRequest rt;
  rt.jobs = {sample_job(), sample_job()};
  rt.jobs[1].id = 7;
  rt.jobs[1].kernel.is_ptx = true;
  rt.rounds = 12;
  rt.reps_per_round = 2;
  rt.warmup_rounds = 5;
  const RetimeRequest rt2 = decode<RetimeRequest>(frame_of(encode(rt)));
  REQUIRE(rt2.jobs.size() == 2);
  check_same(rt.jobs[0], rt2.jobs[0]);
  check_same(rt.jobs[1], rt2.jobs[1]);
  CHECK(rt2.rounds == 12);
  CHECK(rt2.reps_per_round == 2);
  CHECK(rt2.warmup_rounds == 5);

  RetimeReply rr;
  rr.results = {BenchResult{1, "ok", "", 1, 0.9, 1.1, 10, false}, BenchResult{2, "", "", 0, 0, 0, 0, false}};
  const RetimeReply rr2 = decode<RetimeReply>(frame_of(encode(rr)));
  REQUIRE(rr2.results.size() == 2);
  CHECK(rr2.results[0].status == "ok");
  CHECK(rr2.results[1].status.empty());

  SupportRequest sr;
  sr.check = sample_job().kernel;
  CHECK(decode<SupportRequest>(frame_of(encode(sr))).check.image == sr.check.image);
  SupportReply sp{true, 0, "", 3.5};
  CHECK(decode<SupportReply>(frame_of(encode(sp))).fill_ms == 3.5);
}

TEST_CASE("worker protocol: a family Hello, the reference kernel in Support and dynamic shared memory round trip") {
  HelloRequest hello;
  hello.device = 1;
  hello.family.definition = "family = hgemm\n";
  hello.family.problem = "in=f16,out=f32,a_mn=0,b_mn=1,m=512,n=384,k=256";
  hello.family.seed = 0x6E33u;
  const std::string bytes = encode(hello);
  const HelloRequest h2 = decode<HelloRequest>(frame_of(bytes));
  CHECK(h2.device == 1);
  CHECK(h2.kind == ProblemKind::Family);
  CHECK(h2.family.definition == hello.family.definition);
  CHECK(h2.family.problem == hello.family.problem);
  CHECK(h2.family.seed == 0x6E33u);
  // Kinds 0 (the transpose kind before protocol 6) and 1 (the GEMM kind before 10) are gone: refused like any
  // unknown kind, with the kind named.
  for (unsigned char kind : {0, 1, 7}) {
    Frame old_kind = frame_of(bytes);
    old_kind.payload[8] = kind;  // the u32 after the i64 device
    const std::string named = "problem kind " + std::to_string(kind);
    CHECK_THROWS_WITH_AS(decode<HelloRequest>(old_kind), doctest::Contains(named.c_str()), ProtocolError);
  }

  SupportRequest sr;
  sr.check = sample_job().kernel;
  sr.reference = sample_job().kernel;
  sr.reference.lowered_name = "_ZN3swz3tpl21gemm_reference_kernelILi0ELi2ELi1ELi1ELi1EEEvNS0_10GemmParamsE";
  sr.reference.is_ptx = true;
  const SupportRequest sr2 = decode<SupportRequest>(frame_of(encode(sr)));
  CHECK(sr2.check.lowered_name == sr.check.lowered_name);
  CHECK(sr2.reference.lowered_name == sr.reference.lowered_name);
  CHECK(sr2.reference.image == sr.reference.image);
  CHECK(sr2.reference.is_ptx);
  SupportRequest no_reference;
  no_reference.check = sample_job().kernel;
  CHECK(decode<SupportRequest>(frame_of(encode(no_reference))).reference.image.empty());

  BenchRequest br;
  br.job = sample_job();
  br.job.dynamic_smem = 200 * 1024;
  const BenchRequest br2 = decode<BenchRequest>(frame_of(encode(br)));
  CHECK(br2.job.dynamic_smem == 200u * 1024u);
  check_same(br.job, br2.job);
}

TEST_CASE("worker protocol: malformed frames and payloads are ProtocolErrors, never garbage") {
  const std::string good = encode(BenchReply{});
  // The wrong message type for the decoder.
  CHECK_THROWS_AS(decode<HelloReply>(frame_of(good)), ProtocolError);
  // A payload with a byte too many, or too few.
  Frame f = frame_of(good);
  f.payload += 'x';
  CHECK_THROWS_AS(decode<BenchReply>(f), ProtocolError);
  f = frame_of(good);
  f.payload.pop_back();
  CHECK_THROWS_AS(decode<BenchReply>(f), ProtocolError);
  // A string length that runs past the payload.
  Writer w;
  w.u64(1000);
  Reader r(w.bytes());
  CHECK_THROWS_AS(r.str(), ProtocolError);
  // A list count that cannot fit.
  Writer lw;
  lw.u64(1ull << 60);
  Frame lf;
  lf.type = MessageType::RetimeReply;
  lf.payload = lw.bytes();
  CHECK_THROWS_AS(decode<RetimeReply>(lf), ProtocolError);
  // Headers: bad magic, another version, an unknown type, an oversized payload.
  std::string h = encode_header(MessageType::Hello, 4);
  MessageType t;
  std::uint64_t n = 0;
  std::string bad = h;
  bad[0] ^= 0x55;
  CHECK_THROWS_WITH_AS(decode_header(reinterpret_cast<const unsigned char*>(bad.data()), &t, &n),
                       doctest::Contains("bad magic"), ProtocolError);
  bad = h;
  bad[4] = static_cast<char>(kProtocolVersion + 1);
  CHECK_THROWS_WITH_AS(decode_header(reinterpret_cast<const unsigned char*>(bad.data()), &t, &n),
                       doctest::Contains("SWZJIT_WORKER"), ProtocolError);
  bad = h;
  bad[6] = 99;
  CHECK_THROWS_AS(decode_header(reinterpret_cast<const unsigned char*>(bad.data()), &t, &n), ProtocolError);
  bad = encode_header(MessageType::Hello, kMaxPayloadBytes + 1);
  CHECK_THROWS_AS(decode_header(reinterpret_cast<const unsigned char*>(bad.data()), &t, &n), ProtocolError);
}

TEST_CASE("worker protocol: frames cross a socket; end of stream, truncation and silence are told apart") {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  BenchRequest br;
  br.job = sample_job();
  br.job.kernel.image.assign(3 << 20, 'z');  // bigger than a socket buffer: written while read
  std::thread writer([&] { CHECK(write_all(sv[1], encode(br) + encode(QuitRequest{}), 30.0)); });
  Frame f;
  REQUIRE(read_frame(sv[0], &f, 10.0) == ReadStatus::Ok);
  CHECK(decode<BenchRequest>(f).job.kernel.image == br.job.kernel.image);
  REQUIRE(read_frame(sv[0], &f, 10.0) == ReadStatus::Ok);
  CHECK(f.type == MessageType::Quit);
  writer.join();

  // Nothing arrives: a timeout, promptly.
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(read_frame(sv[0], &f, 0.2) == ReadStatus::Timeout);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));

  // Half a frame, then the writer goes away: a ProtocolError, not a hang or a short frame.
  const std::string half = encode(br).substr(0, 100);
  CHECK(write_all(sv[1], half, 5.0));
  close(sv[1]);
  CHECK_THROWS_AS(read_frame(sv[0], &f, 5.0), ProtocolError);
  close(sv[0]);

  // A clean end at a frame boundary is Eof; writing to a closed peer is false, not SIGPIPE.
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  close(sv[1]);
  CHECK(read_frame(sv[0], &f, 5.0) == ReadStatus::Eof);
  bool timed_out = true;
  CHECK_FALSE(write_all(sv[0], encode(QuitRequest{}), 5.0, &timed_out));
  CHECK_FALSE(timed_out);  // gone, not slow
  close(sv[0]);
}

TEST_CASE("worker protocol: a peer that never reads makes a write time out instead of blocking") {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  const std::string big(16 << 20, 'x');  // far more than a socket buffer; nobody reads sv[1]
  bool timed_out = false;
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_FALSE(write_all(sv[0], big, 0.3, &timed_out));
  CHECK(timed_out);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  // A frame that fits in the buffer goes at once, even with no time to wait.
  int sv2[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv2) == 0);
  CHECK(write_all(sv2[0], encode(QuitRequest{}), 0.0, &timed_out));
  CHECK_FALSE(timed_out);
  Frame f;
  CHECK(read_frame(sv2[1], &f, 5.0) == ReadStatus::Ok);
  CHECK(f.type == MessageType::Quit);
  for (int fd : {sv[0], sv[1], sv2[0], sv2[1]}) close(fd);
}

TEST_CASE("swz-worker refuses a terminal, explains itself and prints nothing on stdout") {
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(master >= 0);
  REQUIRE(grantpt(master) == 0);
  REQUIRE(unlockpt(master) == 0);
  const int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
  REQUIRE(slave >= 0);
  const Ran r = run_worker("", slave);
  close(slave);
  close(master);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("benchmark worker of libswzjit's autotuner") != std::string::npos);
  CHECK(r.err.find("SWZJIT_WORKER") != std::string::npos);
}

TEST_CASE("swz-worker rejects a stream that is not its protocol, and stops quietly at end of input") {
  Ran r = run_worker("hello, is this the autotuner?\n");
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("bad magic") != std::string::npos);

  r = run_worker(encode(HelloRequest{}).substr(0, 20));  // a frame cut short
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("ended inside") != std::string::npos);

  r = run_worker(encode(BenchReply{}));  // a reply is not a request
  CHECK(r.code == 2);
  CHECK(r.out.empty());

  r = run_worker("");
  CHECK(r.code == 0);
  CHECK(r.out.empty());
  CHECK(r.err.empty());

  r = run_worker(encode(QuitRequest{}));
  CHECK(r.code == 0);
  CHECK(r.out.empty());
}

TEST_CASE("swz-worker without a driver answers Hello with NoDevice and exits; the session throws it") {
  const ScopedEnv no_driver("SWZJIT_LIBCUDA", "/nonexistent/libcuda.so.1");
  HelloRequest hello;
  hello.family.definition = swz::detail::transpose_family().to_text();
  hello.family.problem = "dtype=f32,rows=64,cols=32,ld_in=32,ld_out=64,batch=1,stride_in=2048,stride_out=2048,"
                         "align_in=16,align_out=16";
  {
    WorkerProcess w(worker_path());
    REQUIRE(w.send(encode(hello), 30.0));
    Frame f;
    REQUIRE(w.receive(&f, 30.0) == ReadStatus::Ok);
    const HelloReply reply = decode<HelloReply>(f);
    CHECK_FALSE(reply.ok);
    CHECK(reply.error_kind == static_cast<int>(swz::ErrorKind::NoDevice));
    CHECK(reply.error.find("/nonexistent/libcuda.so.1") != std::string::npos);
    CHECK(w.receive(&f, 30.0) == ReadStatus::Eof);
    CHECK(w.wait_exit(10.0) == "exit code 1");
  }
  WorkerSession session(worker_path(), hello, 30.0);
  session.start();
  try {
    session.ensure_ready();
    FAIL("ensure_ready() should have thrown");
  } catch (const swz::Error& e) {
    CHECK(e.kind() == swz::ErrorKind::NoDevice);
    CHECK(std::string(e.what()).find("could not set up the GPU") != std::string::npos);
  }
}

TEST_CASE("a worker that never answers is killed after the timeout, restarted once, then reported") {
  const std::string dir = temp_dir();
  const std::string silent = write_script(dir, "silent-worker", "exec sleep 1000");
  WorkerSession session(silent, HelloRequest{}, 0.3);
  const auto t0 = std::chrono::steady_clock::now();
  session.start();
  CHECK_THROWS_WITH_AS(session.ensure_ready(), doctest::Contains("failed twice"), swz::Error);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(15));
  CHECK(session.restarts() == 1);

  // A "worker" that echoes its input answers Hello with a Hello: a protocol error, also restarted.
  const std::string echo = write_script(dir, "echo-worker", "exec cat");
  WorkerSession confused(echo, HelloRequest{}, 5.0);
  CHECK_THROWS_WITH_AS(confused.ensure_ready(), doctest::Contains("expected a HelloReply"), swz::Error);
  CHECK(confused.restarts() == 1);

  // One that exits at once: its exit status is in the message.
  const std::string dies = write_script(dir, "dying-worker", "exit 7");
  WorkerSession dying(dies, HelloRequest{}, 5.0);
  CHECK_THROWS_WITH_AS(dying.ensure_ready(), doctest::Contains("exit code 7"), swz::Error);
}

TEST_CASE("the worker is found through SWZJIT_WORKER, next to the program, or one directory up") {
  WorkerSettings s;
  s.self_exe = SWZ_TOOL_PATH;  // swz sits next to swz-worker in the build tree
  CHECK(find_worker(s) == worker_path());
  s.self_exe = worker_path().substr(0, worker_path().rfind('/')) + "/tests/some_test_binary";
  CHECK(find_worker(s) == worker_path());  // one directory up

  WorkerSettings nowhere;
  nowhere.self_exe = "/nonexistent/dir/prog";
  nowhere.build_path = "/nonexistent/build/swz-worker";
  nowhere.install_path = "/nonexistent/libexec/swz-worker";
  CHECK_THROWS_WITH_AS(find_worker(nowhere), doctest::Contains("SWZJIT_WORKER=/path/to/swz-worker"), swz::Error);
  try {
    find_worker(nowhere);
  } catch (const swz::Error& e) {
    CHECK(e.kind() == swz::ErrorKind::Io);
    CHECK(std::string(e.what()).find("/nonexistent/libexec/swz-worker") != std::string::npos);
  }

  WorkerSettings env = nowhere;
  env.env_path = worker_path();
  CHECK(find_worker(env) == worker_path());
  env.env_path = "/etc/passwd";  // exists, not executable: named, not silently skipped
  CHECK_THROWS_WITH_AS(find_worker(env), doctest::Contains("SWZJIT_WORKER=/etc/passwd"), swz::Error);
}

TEST_CASE("a candidate that hangs is a timeout, one that kills its worker is launch-failed; both restart it") {
  // A scripted stand-in for swz-worker: it replays pre-encoded replies, then does what the case needs.
  const std::string dir = temp_dir();
  HelloReply hello;
  hello.ok = true;
  hello.device_name = "scripted";
  SupportReply support;
  support.ok = true;
  BenchReply fine;
  fine.result = BenchResult{0, "ok", "", 1.0, 0.9, 1.1, 10, false};
  std::ofstream(dir + "/setup.bin", std::ios::binary) << encode(hello) << encode(support);
  std::ofstream(dir + "/fine.bin", std::ios::binary) << encode(fine);
  BenchReply sticky;
  sticky.result = BenchResult{0, "launch-failed", "CUDA_ERROR_ILLEGAL_ADDRESS", 0, 0, 0, 0, true};
  std::ofstream(dir + "/sticky.bin", std::ios::binary) << encode(sticky);
  // First run: one good answer, then silence (a hang). Later runs: a good answer, then death.
  const std::string script = write_script(
      dir, "scripted-worker",
      "cat " + dir + "/setup.bin " + dir + "/fine.bin\n"
      "if [ ! -e " + dir + "/started ]; then touch " + dir + "/started; exec sleep 1000; fi\n"
      // NOTE: the script answers without reading; it stays alive a moment so the client's requests are
      // written before it exits (a real worker reads each request before it answers), even under ASan.
      "if [ ! -e " + dir + "/second ]; then touch " + dir + "/second; cat " + dir + "/sticky.bin; sleep 1; exit 3; fi\n"
      "sleep 1; exit 9");
  WorkerSession session(script, HelloRequest{}, 10.0);
  SupportRequest s;
  s.check = sample_job().kernel;
  session.set_support(s);
  BenchRequest req;
  req.job = sample_job();
  req.job.id = 0;

  BenchResult r = session.bench(req, 5.0);
  CHECK(r.status == "ok");
  CHECK(session.hello_reply().device_name == "scripted");
  const auto t0 = std::chrono::steady_clock::now();
  r = session.bench(req, 0.5);  // the script sleeps: killed after the timeout
  CHECK(r.status == "timeout");
  CHECK(r.reason.find("killed") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(12));
  CHECK(session.restarts() == 0);  // restarted lazily, by the next job

  r = session.bench(req, 5.0);  // a fresh worker
  CHECK(r.status == "ok");
  CHECK(session.restarts() == 1);
  r = session.bench(req, 5.0);  // it reports a sticky error and exits
  CHECK(r.status == "launch-failed");
  CHECK(r.worker_exiting);
  r = session.bench(req, 5.0);  // restarted again
  CHECK(r.status == "ok");
  CHECK(session.restarts() == 2);
  r = session.bench(req, 5.0);  // this one dies without a word
  CHECK(r.status == "launch-failed");
  CHECK(r.reason.find("exit code 9") != std::string::npos);
}
