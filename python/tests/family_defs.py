# python/tests: user kernel families shared by the CPU and GPU family tests — a batched 32 x 32-tiled
# transpose through shared memory, plain or XOR-swizzled (SWIZZLE), with its shared-memory access map;
# and ACC_TEXT, out = alpha * row sums + beta * out with scalars and an inout buffer (as a GEMM's C).
import textwrap

NAME = "py_tile_transpose"

HEADER = textwrap.dedent("""\
    family = py_tile_transpose
    about = out[b] = in[b]^T through a 32 x 32 shared tile, plain or XOR-swizzled (a test family)
    dims = batch rows cols
    param ROWS = 4 8 16 ; default 8        # thread rows of a block
    param SWIZZLE = 0 1 ; default 1
    require = batch <= 65535
    require = ceil_div(rows, 32) <= 65535
    buffer in = f32 [batch * rows * cols] input
    buffer out = f32 [batch * cols * rows] output
    kernel = pyfam::tile_transpose<ROWS, SWIZZLE>(in, out, rows, cols)
    grid = max(1, ceil_div(cols, 32)), max(1, ceil_div(rows, 32)), max(1, batch)
    block = 32, ROWS
    reference = pyfam::transpose_reference(in, out, rows, cols)
    reference.grid = max(1, ceil_div(rows * cols, 256)), max(1, batch)
    reference.block = 256
    tolerance = 1e-6
    source_name = py_tile_transpose.cu
    """)

SOURCE = textwrap.dedent("""\
    namespace pyfam {
    // Tile element (row, col) lives at row * 32 + (col ^ row) when swizzled: a warp reading a tile
    // column then touches 32 different banks.
    template <int SWIZZLE>
    __device__ __forceinline__ int tile_offset(int row, int col) { return row * 32 + (col ^ (SWIZZLE ? row : 0)); }

    template <int ROWS, int SWIZZLE>
    __global__ void tile_transpose(const float* __restrict__ in, float* __restrict__ out, long long rows,
                                   long long cols) {
      __shared__ float tile[32 * 32];
      const long long b = blockIdx.z;
      in += b * rows * cols;
      out += b * rows * cols;
      const int tx = threadIdx.x;
      const long long r0 = (long long)blockIdx.y * 32, c0 = (long long)blockIdx.x * 32;
      for (int k = threadIdx.y; k < 32; k += ROWS) {
        const long long r = r0 + k, c = c0 + tx;
        if (r < rows && c < cols) tile[tile_offset<SWIZZLE>(k, tx)] = in[r * cols + c];
      }
      __syncthreads();
      for (int k = threadIdx.y; k < 32; k += ROWS) {
        const long long orow = c0 + k, ocol = r0 + tx;
        if (orow < cols && ocol < rows) out[orow * rows + ocol] = tile[tile_offset<SWIZZLE>(tx, k)];
      }
    }

    __global__ void transpose_reference(const float* in, float* out, long long rows, long long cols) {
      const long long b = blockIdx.y, i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
      if (i >= rows * cols) return;
      const long long r = i / cols, c = i % cols;
      out[b * rows * cols + c * rows + r] = in[b * rows * cols + i];
    }
    }  // namespace pyfam
    """)

# The definition with its source inline (register_family(text=TEXT)).
TEXT = HEADER + "--- source\n" + SOURCE


def write_files(folder):
    """The same family as a .family file naming its source file next to it; returns the .family path."""
    (folder / "py_tile_transpose.cuh").write_text(SOURCE)
    path = folder / "py_tile_transpose.family"
    path.write_text(HEADER + "source = py_tile_transpose.cuh\n")
    return path


def accesses(config):
    """Warp 0's shared-memory instructions (threadIdx.y = 0): a tile row store per pass, then a tile
    column load per pass, each as 32 lane byte addresses, from the kernel's own tile_offset."""
    rows, swizzle = config["ROWS"], config["SWIZZLE"]

    def offset(row, col):
        return row * 32 + (col ^ (row if swizzle else 0))

    out = []
    for k in range(0, 32, rows):
        out.append(("sts", [4 * offset(k, lane) for lane in range(32)], 4))
    for k in range(0, 32, rows):
        out.append(("lds", [4 * offset(lane, k) for lane in range(32)], 4))
    return out


ACC_NAME = "py_rowsum_acc"

# Scalars (alpha, beta: run(..., scalars={...})) and an inout buffer (read, then overwritten).
ACC_TEXT = textwrap.dedent("""\
    family = py_rowsum_acc
    about = out = alpha * row sums of in + beta * out, in place (a test family)
    dims = rows cols
    scalar alpha = 1.5
    scalar beta = 0.5
    param THREADS = 64 128 ; default 128
    buffer in = f32 [rows * cols] input
    buffer out = f32 [rows] inout
    kernel = pyacc::rowsum_acc<THREADS>(in, out, rows, cols, float:alpha, float:beta)
    grid = max(1, ceil_div(rows, THREADS))
    block = THREADS
    reference = pyacc::rowsum_acc_reference(in, out, rows, cols, float:alpha, double:beta)
    reference.grid = max(1, ceil_div(rows, 128))
    reference.block = 128
    tolerance = 1e-5
    source_name = py_rowsum_acc.cu
    --- source
    namespace pyacc {
    template <int THREADS>
    __global__ void rowsum_acc(const float* in, float* out, long long rows, long long cols, float alpha, float beta) {
      const long long r = static_cast<long long>(blockIdx.x) * THREADS + threadIdx.x;
      if (r >= rows) return;
      float s = 0.f;
      for (long long k = 0; k < cols; ++k) s += in[r * cols + k];
      out[r] = alpha * s + beta * out[r];
    }
    __global__ void rowsum_acc_reference(const float* in, float* out, long long rows, long long cols, float alpha,
                                         double beta) {
      const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
      if (r >= rows) return;
      double s = 0;
      for (long long k = 0; k < cols; ++k) s += in[r * cols + k];
      out[r] = static_cast<float>(alpha * s + beta * out[r]);
    }
    }  // namespace pyacc
    """)
