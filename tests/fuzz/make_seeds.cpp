// tests/fuzz: writes seeds from the library's own writers, run by hand when a format changes (the files
// are committed): valid worker-protocol frames, one message a file, for fuzz_worker_frame, and a small
// cache export with a row of every table for fuzz_cache_import:
//   fuzz_make_seeds tests/fuzz/corpus/worker_frame tests/fuzz/corpus/cache_import
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "runtime/worker/worker_protocol.hpp"
#include "swzjit/cache.hpp"
#include "swzjit/family.hpp"

namespace w = swz::detail::worker;

namespace {

w::KernelImage image(const std::string& name) {
  w::KernelImage k;
  k.image = std::string("\x7f" "ELF", 4) + std::string(60, '\0');  // the decoder never looks inside
  k.arch = "sm_90";
  k.lowered_name = name;
  return k;
}

w::BenchJob job(std::uint64_t id, bool split) {
  w::BenchJob j;
  j.id = id;
  j.config = split ? "BM=64,BN=64,BK=32,WM=32,WN=32,STAGES=3,VEC=8,RASTER=8,SPLIT=4,SWA_B=2,SWA_M=3,SWA_S=3,SWB_B=2,"
                     "SWB_M=3,SWB_S=3"
                   : "f32,tile=64x64,threads=256,vec=4,smem=swizzle:3:2:5";
  j.kernel = image(split ? "_Z5hgemmv" : "_Z9transposev");
  j.grid[0] = 128;
  j.grid[1] = 64;
  j.grid[2] = split ? 4 : 1;
  j.block[0] = 256;
  j.dynamic_smem = split ? 49152 : 0;
  return j;
}

w::BenchResult result(std::uint64_t id, const char* status) {
  w::BenchResult r;
  r.id = id;
  r.status = status;
  r.reason = std::string(status) == "ok" ? "" : "mismatch at (3, 7)";
  r.median_ms = 0.125;
  r.p20_ms = 0.12;
  r.p80_ms = 0.13;
  r.repetitions = 100;
  return r;
}

int write_file(const std::string& dir, const char* name, const std::string& bytes) {
  const std::string path = dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f) != 0) {
    std::fprintf(stderr, "fuzz_make_seeds: cannot write %s\n", path.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

// One kernel (a fake image: the cache never looks inside), one tuning problem with two candidates
// and a winner, exported as the tool would.
int write_cache_seed(const std::string& path) {
  char tmpl[] = "/tmp/swz_make_seeds_XXXXXX";
  if (!::mkdtemp(tmpl)) return 1;
  {
    swz::CacheSettings settings;
    settings.directory = tmpl;
    swz::Cache cache(settings);
    swz::KernelKey key;
    key.templates_hash = swz::content_hash("templates");
    key.name_expression = "swz::tpl::transpose_kernel<4, 32, 32, 256, 4, 0, 0, 2, 3, 5, 0, 0, 0, 0, 0, 0>";
    key.nvrtc_version = "13.0";
    key.options = {"--std=c++17", "-default-device"};
    key.arch = "sm_90";
    swz::KernelEntry entry;
    entry.image = std::string("\x7f" "ELF", 4) + std::string(120, 'x');
    entry.lowered_name = "_Z19transpose_kernelv";
    entry.threads = 256;
    entry.registers = 32;
    cache.store(key, entry);
    swz::TuningProblemKey problem;
    problem.operation = "transpose";
    problem.problem = "f32,4096x4096,align16";
    problem.device_name = "NVIDIA H100 80GB HBM3";
    problem.arch = "sm_90";
    problem.sm_count = 132;
    problem.nvrtc_version = "13.0";
    problem.templates_hash = key.templates_hash;
    swz::CandidateResult ok;
    ok.config = "f32,tile=32x32,threads=256,vec=4,smem=swizzle:5:0:5";
    ok.status = "ok";
    ok.median_ms = 0.25;
    ok.p20_ms = 0.24;
    ok.p80_ms = 0.26;
    ok.repetitions = 50;
    cache.store_candidate(problem, ok);
    swz::CandidateResult failed;
    failed.config = "f32,tile=64x64,threads=256,vec=4,smem=plain";
    failed.status = "wrong-result";
    failed.reason = "mismatch at (0, 1)";
    cache.store_candidate(problem, failed);
    cache.store_winner(problem, swz::search_space_hash({ok.config, failed.config}), ok.config, 0.25);
    std::filesystem::remove(path);
    cache.export_to(path);
  }
  std::error_code ec;
  std::filesystem::remove_all(tmpl, ec);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fuzz_make_seeds WORKER_FRAME_DIR CACHE_IMPORT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  int bad = write_cache_seed(std::string(argv[2]) + "/made_export.db");

  // A transpose is the built-in family "transpose" on the wire (protocol 6).
  w::HelloRequest hello_t;
  hello_t.kind = w::ProblemKind::Family;
  hello_t.family.definition = swz::get_family("transpose")->def().to_text();
  hello_t.family.problem = "dtype=f32,rows=4096,cols=2048,ld_in=2048,ld_out=4096,batch=1,stride_in=8388608,"
                           "stride_out=8388608,align_in=16,align_out=16";
  hello_t.family.seed = 7;
  bad |= write_file(dir, "hello_transpose", w::encode(hello_t));

  // The mma.sync GEMM is the built-in family "hgemm" on the wire (protocol 10).
  w::HelloRequest hello_g;
  hello_g.kind = w::ProblemKind::Family;
  hello_g.family.definition = swz::get_family("hgemm")->def().to_text();
  hello_g.family.problem = "in=f16,out=f16,a_mn=0,b_mn=0,m=512,n=512,k=512,lda=512,ldb=512,ldc=512,batch=2,"
                           "stride_a=262144,stride_b=262144,stride_c=262144,align_a=16,align_b=16";
  hello_g.family.seed = 7;
  bad |= write_file(dir, "hello_gemm", w::encode(hello_g));

  w::HelloReply hello_reply;
  hello_reply.ok = true;
  hello_reply.device_name = "NVIDIA H100 80GB HBM3";
  hello_reply.arch = "sm_90";
  hello_reply.sm_count = 132;
  hello_reply.l2_bytes = 52428800;
  hello_reply.init_ms = 180.5;
  bad |= write_file(dir, "hello_reply", w::encode(hello_reply));

  w::SupportRequest support;
  support.check = image("_Z5checkv");
  support.reference = image("_Z9referencev");
  bad |= write_file(dir, "support", w::encode(support));

  w::SupportReply support_reply;
  support_reply.ok = false;
  support_reply.error_kind = 5;
  support_reply.error = "cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE";
  bad |= write_file(dir, "support_reply", w::encode(support_reply));

  w::BenchRequest bench;
  bench.job = job(1, false);
  bad |= write_file(dir, "bench", w::encode(bench));

  w::BenchReply bench_reply;
  bench_reply.result = result(1, "ok");
  bad |= write_file(dir, "bench_reply", w::encode(bench_reply));

  w::RetimeRequest retime;
  retime.jobs = {job(1, false), job(2, true)};
  retime.rounds = 10;
  retime.reps_per_round = 2;
  bad |= write_file(dir, "retime", w::encode(retime));

  w::RetimeReply retime_reply;
  retime_reply.results = {result(1, "ok"), result(2, "wrong-result")};
  retime_reply.results[1].worker_exiting = true;
  bad |= write_file(dir, "retime_reply", w::encode(retime_reply));

  bad |= write_file(dir, "quit", w::encode(w::QuitRequest{}));
  // Two frames back to back, as they travel on the socket.
  bad |= write_file(dir, "stream", w::encode(bench) + w::encode(w::QuitRequest{}));
  return bad;
}
