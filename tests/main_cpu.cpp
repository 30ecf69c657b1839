// tests: entry point of the CPU suite (runs in CI with no GPU and no driver).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
