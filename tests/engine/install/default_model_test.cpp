// The bundled default model's search rule (engine/install/default_model.h): beside the
// executable first, then <exe dir>/../share/cflow-studio/, as a clean absolute path.
#include <filesystem>
#include <fstream>

#include "cflow/engine/install/default_model.h"
#include "cflow/engine/install/executable_dir.h"
#include "test_support.h"

namespace cflow::test {
namespace {

namespace fs = std::filesystem;

struct InstallTree {
    fs::path bin;    // where the executable would be
    fs::path share;  // <prefix>/share/cflow-studio
};

InstallTree make_install_tree(const std::string& name) {
    const fs::path root = temp_dir(name);
    InstallTree tree{root / "bin", root / "share" / "cflow-studio"};
    fs::create_directories(tree.bin);
    fs::create_directories(tree.share);
    return tree;
}

TEST(DefaultModel, CandidatesAreBesideTheExecutableThenInShare) {
    const auto candidates = default_model_candidates("/opt/cflow/bin");
    ASSERT_EQ(candidates.size(), 2u);
    EXPECT_EQ(fs::path(candidates[0]), fs::path("/opt/cflow/bin") / kDefaultModelFileName);
    EXPECT_EQ(fs::path(candidates[1]).lexically_normal(), fs::path("/opt/cflow/share/cflow-studio") / kDefaultModelFileName);
}

TEST(DefaultModel, AnUnknownExecutableFolderHasNoCandidates) {
    EXPECT_TRUE(default_model_candidates("").empty());
    EXPECT_FALSE(default_model_path(std::string()).has_value());
}

TEST(DefaultModel, NoneWhenNeitherPlaceHoldsIt) {
    const InstallTree tree = make_install_tree("default_model_none");
    EXPECT_FALSE(default_model_path(tree.bin.string()).has_value());
}

TEST(DefaultModel, FindsTheInstalledCopyInShareAsANormalPath) {
    const InstallTree tree = make_install_tree("default_model_share");
    std::ofstream(tree.share / kDefaultModelFileName) << "x";
    const auto found = default_model_path(tree.bin.string());
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(fs::path(*found), fs::absolute(tree.share / kDefaultModelFileName).lexically_normal());
    EXPECT_EQ(found->find(".."), std::string::npos) << *found;
}

TEST(DefaultModel, TheCopyBesideTheExecutableWins) {
    const InstallTree tree = make_install_tree("default_model_both");
    std::ofstream(tree.share / kDefaultModelFileName) << "x";
    std::ofstream(tree.bin / kDefaultModelFileName) << "x";
    const auto found = default_model_path(tree.bin.string());
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(fs::path(*found), fs::absolute(tree.bin / kDefaultModelFileName).lexically_normal());
}

TEST(DefaultModel, AFolderWithTheNameIsNotTheModel) {
    const InstallTree tree = make_install_tree("default_model_folder");
    fs::create_directories(tree.bin / kDefaultModelFileName);
    EXPECT_FALSE(default_model_path(tree.bin.string()).has_value());
}

// The zoo (bundled_models_dir): models/ with models.json beside a default-model candidate.
TEST(BundledModels, FindsTheInstalledZooInShareAsANormalPath) {
    const InstallTree tree = make_install_tree("bundled_models_share");
    fs::create_directories(tree.share / "models");
    std::ofstream(tree.share / "models" / kBundledModelsIndexName) << "{}";
    const auto found = bundled_models_dir(tree.bin.string());
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(fs::path(*found), fs::absolute(tree.share / "models").lexically_normal());
    EXPECT_EQ(found->find(".."), std::string::npos) << *found;
}

TEST(BundledModels, AModelsFolderWithoutItsIndexIsNotTheZoo) {
    const InstallTree tree = make_install_tree("bundled_models_no_index");
    fs::create_directories(tree.share / "models");
    std::ofstream(tree.share / "models" / "a.cflow") << "x";
    fs::create_directories(tree.bin / "models" / kBundledModelsIndexName);  // a folder by that name is no index
    EXPECT_FALSE(bundled_models_dir(tree.bin.string()).has_value());
    EXPECT_FALSE(bundled_models_dir(std::string()).has_value());
}

TEST(BundledModels, TheZooBesideTheExecutableWins) {
    const InstallTree tree = make_install_tree("bundled_models_both");
    for (const fs::path& dir : {tree.bin / "models", tree.share / "models"}) {
        fs::create_directories(dir);
        std::ofstream(dir / kBundledModelsIndexName) << "{}";
    }
    const auto found = bundled_models_dir(tree.bin.string());
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(fs::path(*found), fs::absolute(tree.bin / "models").lexically_normal());
}

TEST(ExecutableDir, IsTheFolderOfTheRunningTestBinary) {
    const std::string dir = executable_dir();
#if !defined(__linux__) && !defined(_WIN32)
    if (dir.empty()) GTEST_SKIP() << "executable_dir() knows only Linux and Windows";
#endif
    ASSERT_FALSE(dir.empty());
    EXPECT_TRUE(fs::is_directory(dir)) << dir;
    EXPECT_TRUE(fs::path(dir).is_absolute()) << dir;
}

} // namespace
} // namespace cflow::test
