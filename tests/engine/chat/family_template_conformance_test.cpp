// Issue 31: each supported family's real chat template, on the shared conversations of
// family_conversations.json (system, multi-turn, tools, thinking; add_generation_prompt true and
// false), renders byte for byte as Python jinja2 renders it in transformers' setup, or fails
// where jinja2 fails. The jinja2 renderings come from render_family_templates.py, which ctest's
// fixture family_templates_render runs with /usr/bin/python3 (python3-jinja2) into
// <build>/family-templates/expected.json; the templates are read from ../shared.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cflow/engine/chat/chat_template.h"
#include "test_support.h"

namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

std::string read_file_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

fs::path expectations_path() {
    if (const char* env = std::getenv("CFLOW_FAMILY_TEMPLATES_EXPECTED"); env && *env) return env;
    return fs::path(CFLOW_BINARY_DIR) / "family-templates" / "expected.json";
}

// Where two renderings part, with a little context either side (escaped, one line).
std::string first_difference(const std::string& got, const std::string& want) {
    size_t i = 0;
    while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
    auto window = [i](const std::string& s) {
        const size_t from = i > 40 ? i - 40 : 0;
        return json(s.substr(from, std::min<size_t>(s.size() - std::min(s.size(), from), 100))).dump();
    };
    return "first difference at byte " + std::to_string(i) + " (engine " + std::to_string(got.size()) + " bytes, jinja2 " +
           std::to_string(want.size()) + ")\n  engine: " + window(got) + "\n  jinja2: " + window(want);
}

struct FamilyTally {
    int cases = 0;
    int equal = 0;
    int errors = 0;  // cases where jinja2 raises and the engine must fail too
};

TEST(FamilyTemplateConformance, EveryFamilyRendersAsJinja2) {
    CFLOW_REQUIRE_ASSET(shared_templates, "assets/chat-templates/llama.cpp-models-templates");
    CFLOW_REQUIRE_ASSET(shared_configs, "assets/tokenizers/configs-only");
    const fs::path expected_file = expectations_path();
    if (!fs::exists(expected_file))
        GTEST_SKIP() << "no jinja2 renderings at " << expected_file
                     << ": ctest's fixture family_templates_render writes them with /usr/bin/python3 and Python jinja2 "
                        "(apt-get install python3-jinja2); by hand: python3 tests/engine/chat/render_family_templates.py "
                     << expected_file;
    const json doc = json::parse(read_file_text(expected_file));
    const json conversations =
        json::parse(read_file_text(fs::path(CFLOW_SOURCE_DIR) / "tests/engine/chat/family_conversations.json"));
    ASSERT_EQ(doc["conversations"], conversations)
        << expected_file << " was rendered from another family_conversations.json: run ctest (or the script) again";

    const json& now = conversations["fixed_now"];
    cflow::TemplateTime fixed_now{now["year"].get<int>(),   now["month"].get<int>(),  now["day"].get<int>(),
                                  now["hour"].get<int>(),   now["minute"].get<int>(), now["second"].get<int>()};

    // As many renderings as the conversations file asks for: one per add_generation_prompt value.
    size_t expected_count = 0;
    for (const auto& family : conversations["families"])
        for (const auto& c : family["cases"]) expected_count += c.contains("add_generation_prompt") ? 1 : 2;
    ASSERT_EQ(doc["cases"].size(), expected_count);

    std::vector<std::string> order;
    std::map<std::string, FamilyTally> tally;
    std::map<std::string, cflow::ChatTemplate> compiled;
    for (const auto& c : doc["cases"]) {
        const std::string family = c["family"].get<std::string>();
        const std::string id = c["id"].get<std::string>();
        if (!tally.count(family)) order.push_back(family);
        FamilyTally& t = tally[family];
        ++t.cases;

        auto it = compiled.find(family);
        if (it == compiled.end()) {
            std::string source = read_file_text(cflow::test::shared_asset(c["template"].get<std::string>()));
            if (!c["template_key"].is_null()) source = json::parse(source)[c["template_key"].get<std::string>()].get<std::string>();
            auto tmpl = cflow::ChatTemplate::compile(source);
            ASSERT_TRUE(tmpl.ok()) << family << ": " << tmpl.error();
            it = compiled.emplace(family, std::move(*tmpl)).first;
        }

        cflow::TemplateOptions options;
        options.add_generation_prompt = c["add_generation_prompt"].get<bool>();
        options.bos_token = c["bos_token"].is_null() ? "" : c["bos_token"].get<std::string>();
        options.eos_token = c["eos_token"].is_null() ? "" : c["eos_token"].get<std::string>();
        if (!c["tools"].is_null()) options.tools_json = c["tools"].dump();
        if (!c["kwargs"].empty()) options.extra_kwargs_json = c["kwargs"].dump();
        options.now = fixed_now;
        auto out = it->second.render(c["messages"].dump(), options);

        if (!c["error"].is_null()) {
            ++t.errors;
            const std::string error = c["error"].get<std::string>();
            if (out.ok()) {
                ADD_FAILURE() << id << ": jinja2 raises (" << error << ") but the engine rendered:\n" << *out;
                continue;
            }
            // raise_exception(message) must reach the caller with its message.
            const std::string raised = "TemplateError: ";
            if (error.rfind(raised, 0) == 0) {
                EXPECT_NE(out.error().find(error.substr(raised.size())), std::string::npos)
                    << id << ": jinja2 raised " << error << "\nthe engine: " << out.error();
            }
            ++t.equal;
            continue;
        }
        if (!out.ok()) {
            ADD_FAILURE() << id << ": the engine failed where jinja2 renders: " << out.error();
            continue;
        }
        const std::string want = c["expected"].get<std::string>();
        if (*out == want) {
            ++t.equal;
        } else {
            ADD_FAILURE() << id << ": " << first_difference(*out, want);
        }
    }

    int cases = 0, equal = 0;
    for (const std::string& family : order) {
        const FamilyTally& t = tally[family];
        std::printf("[ family-template ] %-30s %2d/%2d as jinja2 %s (%d of them errors in both)\n", family.c_str(), t.equal,
                    t.cases, doc["jinja2_version"].get<std::string>().c_str(), t.errors);
        cases += t.cases;
        equal += t.equal;
    }
    std::printf("[ family-template ] all: %d/%d\n", equal, cases);
    EXPECT_EQ(equal, cases);
}

} // namespace
