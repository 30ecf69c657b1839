// tools: reading a transpose config from the command line (see transpose_args.hpp).
#include "transpose_args.hpp"

#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"

namespace swz {
namespace cli {

std::string transpose_config_help() {
  // Per dtype, the fields of the default config (what read_transpose_config starts from).
  std::string tile, threads, vec, raster;
  for (const DType t : {DType::F32, DType::F16, DType::BF16}) {
    const TransposeConfig c = default_transpose_config(t, 16);
    const std::string sep = t == DType::F32 ? "" : ", ", name = to_string(t) + " ";
    tile += sep + name + std::to_string(c.tile_rows) + "x" + std::to_string(c.tile_cols);
    threads += sep + name + std::to_string(c.threads);
    vec += sep + name + std::to_string(c.vec);
    raster += sep + name + std::to_string(c.raster);
  }
  return "config (either one string or separate options; unspecified fields take the dtype's default\n"
         "config, default_transpose_config, whose fields are the defaults below):\n"
         "  --config STR      DTYPE,tile=RxC,threads=N,vec=V,smem=plain|pad:P|swizzle:B:M:S\n"
         "                    e.g. f32,tile=64x64,threads=256,vec=4,smem=swizzle:2:0:6\n"
         "  --dtype T         f32|f16|bf16 (default f32)\n"
         "  --tile RxC        input tile rows x cols, powers of two (default: " + tile + ")\n"
         "  --threads N       threads per block (the block size), multiple of 32 (default: " + threads + ")\n"
         "  --vec V           elements per global access, V * elem bytes <= 16 (default: " + vec + ")\n"
         "  --smem L          plain | pad[:P] | swizzle[:B:M:S][+B:M:S]; without parameters a conflict-free\n"
         "                    pad / swizzle (or composition of two) is chosen by static bank analysis\n"
         "                    (default swizzle)\n"
         "  --pair            2-byte types: shared words hold two input rows (2x2 transposed in registers)\n"
         "  --raster 0|1      0: consecutive blocks walk along input rows; 1: along output rows\n"
         "                    (default: " + raster + ")\n"
         "  --cache default|cs  cache operator of the global loads and stores, cs = streaming (default default)\n";
}

void expect_family(Args& args, const char* command) {
  const auto family = args.next_positional();
  if (!family) throw UsageError(std::string("missing kernel family (usage: swz ") + command + " transpose ...)");
  if (*family != "transpose")
    throw UsageError("family '" + *family + "' is not supported by swz " + command + " (supported: transpose, gemm)");
}

TransposeConfig read_transpose_config(Args& args, const std::string& dtype_fallback) {
  const auto config = args.value("config");
  const auto dtype = args.value("dtype");
  const auto tile = args.value("tile");
  const auto threads = args.value("threads");
  const auto vec = args.value("vec");
  const auto smem = args.value("smem");
  const bool pair = args.flag("pair");
  const auto raster = args.value("raster");
  const auto cache = args.value("cache");
  if (config) {
    if (tile || threads || vec || smem || pair || raster || cache)
      throw UsageError("--config cannot be combined with --tile/--threads/--vec/--smem/--pair/--raster/--cache");
    TransposeConfig c = TransposeConfig::parse(*config);
    if (dtype && parse_dtype(*dtype) != c.dtype)
      throw UsageError("--dtype " + *dtype + " contradicts --config's dtype " + to_string(c.dtype));
    return c;
  }
  const DType t = parse_dtype(dtype ? *dtype : dtype_fallback);
  TransposeConfig c = default_transpose_config(t, 16);
  if (tile) {
    const auto x = tile->find('x');
    if (x == std::string::npos) throw UsageError("--tile: '" + *tile + "' is not RxC (e.g. 64x64)");
    c.tile_rows = static_cast<int>(parse_int("--tile", tile->substr(0, x), 1, 256));
    c.tile_cols = static_cast<int>(parse_int("--tile", tile->substr(x + 1), 1, 256));
  }
  if (threads) c.threads = static_cast<int>(parse_int("--threads", *threads, 32, 1024));
  if (vec) c.vec = static_cast<int>(parse_int("--vec", *vec, 1, 16));
  c.pair = pair;
  if (raster) c.raster = static_cast<int>(parse_int("--raster", *raster, 0, 1));
  if (cache) c.streaming = parse_choice("--cache", *cache, {"default", "cs"}) == "cs";
  std::string layout = smem ? *smem : "swizzle";
  // NOTE: --smem is spliced into a config text below; a ',' or '=' would smuggle in other fields
  // ("swizzle:2:0:5,tile=32x32" changed the tile, issue 10 item 7).
  if (layout.find_first_of(",=") != std::string::npos)
    throw UsageError("--smem: '" + layout + "' is not plain | pad[:P] | swizzle[:B:M:S][+B:M:S] (no ',' or '=': "
                     "give other fields with their own options)");
  const auto colon = layout.find(':');
  const std::string kind = parse_choice("--smem", layout.substr(0, colon), {"plain", "pad", "swizzle"});
  c.swizzle = c.swizzle2 = SwizzleSpec{};
  c.pad = 0;
  if (kind == "plain") {
    if (colon != std::string::npos) throw UsageError("--smem: plain takes no parameters");
    c.smem = SmemLayout::Plain;
  } else if (colon == std::string::npos) {
    // Validate the shape first so the error names the real problem, then pick the parameter.
    c.smem = SmemLayout::Plain;
    c.validate();
    const bool ok = kind == "pad" ? transpose_choose_pad(c) : transpose_choose_swizzle(c);
    if (!ok) throw UsageError("--smem: no conflict-free " + kind + " exists for this shape; give parameters explicitly");
  } else {
    // Explicit parameters: the canonical text of this shape with the given layout, parsed as a whole.
    c.smem = SmemLayout::Plain;
    std::string text = c.to_string();
    text.replace(text.find("smem=plain"), 10, "smem=" + layout);
    return TransposeConfig::parse(text);
  }
  c.validate();
  return c;
}

}  // namespace cli
}  // namespace swz
