#pragma once
// Shared helpers for the test suites: asset paths, temp dirs.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace cflow::test {

// Sanitizer builds (tests/sanitizers/run.sh) run code 3-20x slower. The few tests that repeat one
// check hundreds of times run a sample of their cases there (the regular build runs them all):
// memory and race errors show on the sample, and the full sets would double the CI run.
// ThreadSanitizer is the slower of the two (5-15x, every access recorded): tests whose threads are
// the same on every kernel path run one path there.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kThreadSanitizedBuild = true;
#else
inline constexpr bool kThreadSanitizedBuild = false;
#endif
#else
inline constexpr bool kThreadSanitizedBuild = false;
#endif
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = kThreadSanitizedBuild;
#endif
#else
inline constexpr bool kSanitizedBuild = kThreadSanitizedBuild;
#endif

// ../shared beside the checkout (CFLOW_SHARED_DIR), or "" when absent.
std::filesystem::path shared_dir();
// shared_dir() / relative, or "" when ../shared is absent.
std::filesystem::path shared_asset(const std::string& relative);
// A fresh empty directory under the build tree, removed at process exit.
std::filesystem::path temp_dir(const std::string& name);
// "" where this process can create symbolic links, else why not (Windows without the privilege,
// wine: "Function not implemented").
std::string symlinks_unavailable();

} // namespace cflow::test

// Skips the current test with a clear message when ../shared (or one asset) is absent.
#define CFLOW_REQUIRE_ASSET(path_var, relative)                                                   \
    auto path_var = ::cflow::test::shared_asset(relative);                                        \
    if (path_var.empty() || !std::filesystem::exists(path_var))                                   \
        GTEST_SKIP() << "test asset '" << (relative) << "' not found: this test needs ../shared " \
                     << "(the shared assets checkout) beside the repository"

// Skips the current test, saying why, where symbolic links cannot be created.
#define CFLOW_REQUIRE_SYMLINKS()                                                                 \
    if (const std::string cflow_symlinks_why = ::cflow::test::symlinks_unavailable();            \
        !cflow_symlinks_why.empty())                                                              \
    GTEST_SKIP() << "symbolic links cannot be created here: " << cflow_symlinks_why
