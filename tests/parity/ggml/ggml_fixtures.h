#pragma once
// Where tests/reference/make_ggml_fixtures.py wrote its fixtures (the ctest fixture
// ggml_fixtures_generate sets CFLOW_GGML_FIXTURES_DIR; by hand, the build's ggml-fixtures),
// and the skip-or-fail rule for a missing one.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

namespace cflow::test {

inline std::filesystem::path ggml_fixtures_dir() {
    if (const char* env = std::getenv("CFLOW_GGML_FIXTURES_DIR"); env && *env) return env;
    return CFLOW_GGML_FIXTURES_DIR;
}

// Why `relative` (inside the fixtures folder) is unusable, "" when it is there. *skip: the
// generator could not run here (no torch), rather than ran and left the file out.
inline std::string ggml_fixture_missing(const std::string& relative, bool* skip) {
    const std::filesystem::path path = ggml_fixtures_dir() / relative;
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) return "";
    *skip = !CFLOW_REFERENCE_TORCH || !std::filesystem::is_directory(ggml_fixtures_dir(), ec);
    if (!CFLOW_REFERENCE_TORCH)
        return "ggml fixtures not generated: " CFLOW_REFERENCE_PYTHON " could not import torch when CMake was "
               "configured (tests/reference/make_ggml_fixtures.py needs numpy and torch); point "
               "CFLOW_GGML_FIXTURES_DIR at pre-generated fixtures to run this test";
    if (*skip)
        return "ggml fixtures not found in '" + ggml_fixtures_dir().string() +
               "': run through ctest (fixture ggml_fixtures_generate) or " CFLOW_REFERENCE_PYTHON
               " tests/reference/make_ggml_fixtures.py " + ggml_fixtures_dir().string();
    return path.string() + " is missing";
}

} // namespace cflow::test

#define CFLOW_REQUIRE_GGML_FIXTURE(relative)                                  \
    do {                                                                      \
        bool skip_ = false;                                                   \
        const std::string why_ = ::cflow::test::ggml_fixture_missing(relative, &skip_); \
        if (!why_.empty()) {                                                  \
            if (skip_) GTEST_SKIP() << why_;                                  \
            FAIL() << why_;                                                   \
        }                                                                     \
    } while (0)
