// choose_load_options (--load auto, the desktop app's load): the lanes layout exactly where the
// selected kernel path walks it, the file fits in memory and experts stay mapped; otherwise the
// file mapping, with the reason said. A model loaded with the choice runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cflow/engine/forward/load_policy.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/kernels/kernels.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;

const std::string kDefaultModel = (fs::path(CFLOW_SOURCE_DIR) / "resources" / "default-model.cflow").string();

TEST(LoadPolicy, LanesExactlyWhereTheSelectedKernelsWalkThem) {
    const LoadChoice choice = choose_load_options(kDefaultModel, false);
    const bool walksLanes = active_kernels().tile_matvec_quantized_lanes != nullptr;
    EXPECT_EQ(choice.options.lanes, walksLanes) << choice.reason;
    EXPECT_EQ(choice.name, walksLanes ? "lanes" : "map");
    EXPECT_EQ(choice.options.mode, LoadMode::Map) << "lanes pairs with the mapping for what it does not rearrange";
    EXPECT_NE(choice.reason.find(std::string(isa_name(active_kernels().isa))), std::string::npos)
        << "the reason names the kernel path: " << choice.reason;
    std::printf("[ info ] %s: %s (%s)\n", kDefaultModel.c_str(), choice.name.c_str(), choice.reason.c_str());

    auto model = Model::load(kDefaultModel, choice.options);
    ASSERT_TRUE(model.ok()) << model.error();
    auto session = Session::create(model.value(), {});
    ASSERT_TRUE(session.ok()) << session.error();
    auto logits = (*session)->step(1);
    ASSERT_TRUE(logits.ok()) << logits.error();
}

TEST(LoadPolicy, StreamedExpertsAndUnreadableFilesStayMapped) {
    const LoadChoice streamed = choose_load_options(kDefaultModel, true);
    EXPECT_FALSE(streamed.options.lanes);
    EXPECT_EQ(streamed.name, "map");
    if (active_kernels().tile_matvec_quantized_lanes) {
        EXPECT_NE(streamed.reason.find("experts"), std::string::npos) << streamed.reason;
    }
    const LoadChoice missing = choose_load_options("/nonexistent/model.cflow", false);
    EXPECT_FALSE(missing.options.lanes);
    EXPECT_EQ(missing.name, "map") << "Model::load then reports the missing file itself";
}

// The lanes copy needs the file's size again in anonymous memory; where an automatic choice runs
// out of it, the model loads mapped and the choice says why. A lanes load the user asked for fails.
TEST(LoadPolicy, AnAutomaticLanesChoiceThatRunsOutOfMemoryLoadsMapped) {
    std::vector<bool> lanesAsked;
    const ModelLoader lanesOutOfMemory = [&](const std::string& path, const LoadOptions& options)
        -> Result<std::shared_ptr<const Model>> {
        lanesAsked.push_back(options.lanes);
        if (options.lanes) return make_error(ErrorKind::OutOfMemory, path + ": out of memory while rearranging tiles");
        return Model::load(path, options);
    };
    LoadChoice automatic{LoadOptions{}, "lanes", "the kernels walk the lanes layout", true};
    automatic.options.lanes = true;
    auto model = load_model(kDefaultModel, automatic, lanesOutOfMemory);
    ASSERT_TRUE(model.ok()) << model.error();
    EXPECT_EQ(lanesAsked, (std::vector<bool>{true, false}));
    EXPECT_EQ(automatic.name, "map");
    EXPECT_FALSE(automatic.options.lanes);
    EXPECT_NE(automatic.reason.find("the lanes copy did not fit"), std::string::npos) << automatic.reason;
    EXPECT_NE(automatic.reason.find("out of memory while rearranging tiles"), std::string::npos) << automatic.reason;
    EXPECT_FALSE((*model)->lanes_base());

    lanesAsked.clear();
    LoadChoice named{LoadOptions{}, "lanes", "--load lanes", false};
    named.options.lanes = true;
    auto refused = load_model(kDefaultModel, named, lanesOutOfMemory);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.kind(), ErrorKind::OutOfMemory);
    EXPECT_EQ(lanesAsked, (std::vector<bool>{true})) << "a named --load lanes is not silently replaced";
    EXPECT_EQ(named.name, "lanes");
}

} // namespace
} // namespace cflow
