// tools: `swz`, the command-line front end of libswzjit; dispatches to tools/cmd_*.cpp.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "commands.hpp"
#include "swzjit/error.hpp"
#include "swzjit/version.hpp"

namespace {

using swz::cli::Command;

std::vector<const Command*> all_commands() {
  return {
      &swz::cli::layout_command(),
      &swz::cli::bank_command(),
      &swz::cli::solve_command(),
      &swz::cli::gen_command(),
      &swz::cli::compile_command(),
      &swz::cli::analyze_command(),
      &swz::cli::run_command(),
      &swz::cli::autotune_command(),
      &swz::cli::family_command(),
      &swz::cli::info_command(),
      &swz::cli::cache_command(),
  };
}

void print_main_help() {
  std::printf(
      "swz: generate, analyze, compile, tune and cache CUDA kernels with XOR-swizzled shared memory\n\n"
      "usage: swz <command> [options]      swz <command> --help for a command's options\n"
      "       swz --version                 the libswzjit version\n\n"
      "commands:\n");
  for (const Command* c : all_commands()) std::printf("  %-10s %s\n", c->name, c->summary);
  std::printf(
      "\nexit codes: 0 success, 2 bad usage (the message names the argument), 1 any other error\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
      std::string(argv[1]) == "help") {
    print_main_help();
    return argc < 2 ? 2 : 0;
  }
  const std::string name = argv[1];
  if (name == "--version" || name == "-V" || name == "version") {
    // NOTE: the library's version, which can differ from the headers' with a shared libswzjit.
    std::printf("swz %s (libswzjit %s)\n", SWZJIT_VERSION_STRING, swz::version());
    return 0;
  }
  const Command* cmd = nullptr;
  for (const Command* c : all_commands())
    if (name == c->name) cmd = c;
  if (!cmd) {
    std::fprintf(stderr, "swz: unknown command '%s' (see swz --help)\n", name.c_str());
    return 2;
  }
  std::vector<std::string> words(argv + 2, argv + argc);
  try {
    swz::cli::take_global_options(words);
  } catch (const swz::cli::UsageError& e) {
    std::fprintf(stderr, "swz %s: error: %s\n", cmd->name, e.what());
    return 2;
  }
  swz::cli::Args args(words);
  if (args.wants_help()) {
    const std::string help = cmd->make_help ? cmd->make_help() : std::string(cmd->help);
    std::printf("%s", help.c_str());
    return 0;
  }
  try {
    return cmd->run(args);
  } catch (const swz::cli::UsageError& e) {
    std::fprintf(stderr, "swz %s: error: %s\n", cmd->name, e.what());
    return 2;
  } catch (const swz::Error& e) {
    std::fprintf(stderr, "swz %s: %s: %s\n", cmd->name, swz::to_string(e.kind()), e.what());
    if (e.kind() == swz::ErrorKind::Compile && !e.compile_log().empty())
      std::fprintf(stderr, "--- NVRTC log ---\n%s\n", e.compile_log().c_str());
    return e.kind() == swz::ErrorKind::InvalidArgument ? 2 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "swz %s: error: %s\n", cmd->name, e.what());
    return 1;
  }
}
