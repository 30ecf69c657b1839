// tests/package: uses the installed public API only; exits non-zero if anything is off.
#include <swzjit/swzjit.hpp>

#include <cstdio>

int main() {
  // Swizzle<3,3,3> applied to offset 8*64+8 (row 8 of a 64-element row, 16-byte chunk 1): XOR row bits.
  const auto offsets = swz::layout_offsets(swz::SwizzleSpec{1, 1, 1}, swz::LayoutSpec::row_major(8, 8));
  // seed 002: row 0 of Sw<1,1,1> o (8,8):(8,1) is 0 1 2 3 6 7 4 5
  const long long want[8] = {0, 1, 2, 3, 6, 7, 4, 5};
  for (int c = 0; c < 8; ++c) {
    if (offsets[c] != want[c]) {
      std::printf("consumer: wrong offset at column %d: %lld\n", c, offsets[c]);
      return 1;
    }
  }
  std::printf("consumer: ok (templates hash %s)\n", swz::templates_hash().c_str());
  return 0;
}
