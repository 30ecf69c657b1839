// runtime: kernel resource usage read from a cubin's ELF sections, with no GPU and no driver
// (include/swzjit/jit.hpp, cubin_resources). Feeds `swz compile` and the tuner's pre-filter.
//
// What a cubin records (stable across the CUDA 11-13 toolchains this was checked against):
//   .symtab                 the kernel is a FUNC symbol named by its lowered name
//   .nv.info                records {u8 format, u8 attribute, u16 value-or-size, payload}; the
//                           per-kernel numbers are 8-byte payloads {u32 symbol index, u32 value}:
//                           EIATTR_REGCOUNT (0x2f) registers, EIATTR_FRAME_SIZE (0x11) local bytes
//   .nv.info.<kernel>       EIATTR_MAX_THREADS (0x05) {x, y, z} from __launch_bounds__
//   .nv.shared.<kernel>     NOBITS section sized to the kernel's static __shared__ data
//   .text.<kernel>          the kernel's machine code
// NOTE: for sm_90 and later the toolchain puts the 1 KiB system-reserved shared memory at the start
// of .nv.shared.<kernel> and marks it with a ".nv.shared.reserved.*" section; ptxas -v and the
// driver count only the user's part, so that 1 KiB is subtracted (tests/runtime/jit/nvrtc_test.cpp
// checks the result against ptxas's own report for every target).
#include <elf.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"

namespace swz {
namespace {

constexpr std::uint8_t kFormatSizedValue = 0x04;  // EIFMT_SVAL: u16 size, then `size` bytes
constexpr std::uint8_t kAttrMaxThreads = 0x05;
constexpr std::uint8_t kAttrFrameSize = 0x11;
constexpr std::uint8_t kAttrRegCount = 0x2f;
constexpr long long kReservedSmemBytes = 1024;

[[noreturn]] void bad_cubin(const std::string& why) { throw_invalid("not a usable cubin: " + why); }

// A bounds-checked view of the image: every read names what it was reading when it falls off.
class Bytes {
 public:
  explicit Bytes(const std::string& image) : data_(image.data()), size_(image.size()) {}
  template <class T>
  T read(std::uint64_t offset, const char* what) const {
    if (offset > size_ || size_ - offset < sizeof(T)) bad_cubin(std::string(what) + " lies outside the image");
    T value;
    std::memcpy(&value, data_ + offset, sizeof(T));
    return value;
  }
  std::string c_string(std::uint64_t offset, const char* what) const {
    if (offset >= size_) bad_cubin(std::string(what) + " lies outside the image");
    const void* nul = std::memchr(data_ + offset, '\0', size_ - offset);
    if (nul == nullptr) bad_cubin(std::string(what) + " is not terminated");
    return std::string(data_ + offset, static_cast<const char*>(nul));
  }
  void require(std::uint64_t offset, std::uint64_t length, const char* what) const {
    if (offset > size_ || size_ - offset < length) bad_cubin(std::string(what) + " lies outside the image");
  }

 private:
  const char* data_;
  std::size_t size_;
};

struct Section {
  std::string name;
  Elf64_Shdr header;
};

std::vector<Section> read_sections(const Bytes& bytes) {
  const auto ehdr = bytes.read<Elf64_Ehdr>(0, "the ELF header");
  if (std::memcmp(ehdr.e_ident, ELFMAG, SELFMAG) != 0) bad_cubin("no ELF magic");
  if (ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_ident[EI_DATA] != ELFDATA2LSB)
    bad_cubin("not a 64-bit little-endian ELF");
  if (ehdr.e_machine != EM_CUDA) bad_cubin("ELF machine is " + std::to_string(ehdr.e_machine) + ", not CUDA");
  if (ehdr.e_shentsize != sizeof(Elf64_Shdr)) bad_cubin("unexpected section header size");
  std::vector<Section> sections(ehdr.e_shnum);
  for (std::size_t i = 0; i < sections.size(); ++i)
    sections[i].header = bytes.read<Elf64_Shdr>(ehdr.e_shoff + i * sizeof(Elf64_Shdr), "a section header");
  if (ehdr.e_shstrndx >= sections.size()) bad_cubin("no section name table");
  const Elf64_Shdr& names = sections[ehdr.e_shstrndx].header;
  for (auto& section : sections) section.name = bytes.c_string(names.sh_offset + section.header.sh_name, "a section name");
  return sections;
}

const Section* find_section(const std::vector<Section>& sections, const std::string& name) {
  for (const auto& s : sections)
    if (s.name == name) return &s;
  return nullptr;
}

// Index of the FUNC symbol `name` in .symtab; lists the kernels that do exist when it is missing.
std::uint32_t find_function_symbol(const Bytes& bytes, const std::vector<Section>& sections, const std::string& name) {
  std::string kernels;
  for (const auto& symtab : sections) {
    if (symtab.header.sh_type != SHT_SYMTAB) continue;
    if (symtab.header.sh_link >= sections.size()) bad_cubin("symbol table without string table");
    const Elf64_Shdr& strtab = sections[symtab.header.sh_link].header;
    const std::uint64_t count = symtab.header.sh_size / sizeof(Elf64_Sym);
    for (std::uint64_t i = 0; i < count; ++i) {
      const auto sym = bytes.read<Elf64_Sym>(symtab.header.sh_offset + i * sizeof(Elf64_Sym), "a symbol");
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC) continue;
      const std::string sym_name = bytes.c_string(strtab.sh_offset + sym.st_name, "a symbol name");
      if (sym_name == name) return static_cast<std::uint32_t>(i);
      kernels += (kernels.empty() ? "" : ", ") + sym_name;
    }
  }
  throw_invalid("the cubin has no kernel named '" + name + "' (it has: " + (kernels.empty() ? "none" : kernels) + ")");
}

// Calls visit(attribute, payload offset, payload size) for every sized record of an .nv.info section.
template <class Visit>
void for_each_sized_attribute(const Bytes& bytes, const Section& section, Visit visit) {
  const std::uint64_t begin = section.header.sh_offset;
  const std::uint64_t end = begin + section.header.sh_size;
  bytes.require(begin, section.header.sh_size, section.name.c_str());
  std::uint64_t at = begin;
  while (at + 4 <= end) {
    const auto format = bytes.read<std::uint8_t>(at, "an attribute");
    const auto attribute = bytes.read<std::uint8_t>(at + 1, "an attribute");
    const auto value = bytes.read<std::uint16_t>(at + 2, "an attribute");
    at += 4;
    if (format == kFormatSizedValue) {
      if (at + value > end) bad_cubin("an attribute of " + section.name + " overruns its section");
      visit(attribute, at, value);
      at += value;
    }
  }
}

}  // namespace

CubinResources cubin_resources(const std::string& cubin, const std::string& lowered_name) {
  const Bytes bytes(cubin);
  const std::vector<Section> sections = read_sections(bytes);
  const std::uint32_t symbol = find_function_symbol(bytes, sections, lowered_name);

  CubinResources r;
  r.kernel = lowered_name;
  bool have_registers = false;
  // Per-kernel values keyed by symbol index; older toolchains put them in .nv.info.<kernel>.
  for (const bool per_kernel : {false, true}) {
    const Section* info = find_section(sections, per_kernel ? ".nv.info." + lowered_name : std::string(".nv.info"));
    if (info == nullptr) continue;
    for_each_sized_attribute(bytes, *info, [&](std::uint8_t attr, std::uint64_t at, std::uint16_t size) {
      if ((attr == kAttrRegCount || attr == kAttrFrameSize) && size == 8 &&
          bytes.read<std::uint32_t>(at, "an attribute") == symbol) {
        const auto value = static_cast<int>(bytes.read<std::uint32_t>(at + 4, "an attribute"));
        if (attr == kAttrRegCount) {
          r.registers = value;
          have_registers = true;
        } else {
          r.local_bytes = value;
        }
      } else if (attr == kAttrMaxThreads && size == 12 && per_kernel) {
        r.max_threads_per_block = static_cast<int>(bytes.read<std::uint32_t>(at, "max threads") *
                                                   bytes.read<std::uint32_t>(at + 4, "max threads") *
                                                   bytes.read<std::uint32_t>(at + 8, "max threads"));
      }
    });
  }
  if (!have_registers) bad_cubin("no register count recorded for '" + lowered_name + "'");

  if (const Section* shared = find_section(sections, ".nv.shared." + lowered_name)) {
    long long bytes_used = static_cast<long long>(shared->header.sh_size);
    bool has_reserved = false;
    for (const auto& s : sections) has_reserved = has_reserved || s.name.rfind(".nv.shared.reserved.", 0) == 0;
    if (has_reserved && bytes_used >= kReservedSmemBytes) bytes_used -= kReservedSmemBytes;
    r.static_smem_bytes = static_cast<int>(bytes_used);
  }
  if (const Section* text = find_section(sections, ".text." + lowered_name))
    r.code_bytes = static_cast<long long>(text->header.sh_size);
  return r;
}

CubinResources cubin_resources(const CompiledKernel& kernel) {
  if (kernel.is_ptx)
    throw Error(ErrorKind::Unsupported, "'" + kernel.lowered_name + "' was compiled to PTX for " + kernel.arch +
                                            " (NVRTC cannot emit a cubin for it): its registers and shared memory "
                                            "are known only after the driver loads it (Kernel::attributes())");
  return cubin_resources(kernel.image, kernel.lowered_name);
}

}  // namespace swz
