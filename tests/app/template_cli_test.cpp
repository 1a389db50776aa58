// `cflow template`: renders llama.cpp's chat-template conformance cases exactly, takes a model's
// template and BOS/EOS from its metadata, falls back visibly when a model has none, and fails
// with one line naming the file (and the template line/column) on bad input.
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cflow/formats/converter.h"
#include "cli_runner.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

constexpr const char* kCasesDir = "assets/chat-templates/llama.cpp-test-chat-template/";

std::string write_template_file(const std::filesystem::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
    return path.string();
}

struct CaseFiles {
    nlohmann::json spec;
    std::string template_path;
    std::string messages_path;
};

CaseFiles write_case(const std::filesystem::path& case_json, const std::filesystem::path& dir) {
    CaseFiles files;
    std::ifstream in(case_json);
    files.spec = nlohmann::json::parse(in);
    files.template_path = write_template_file(dir / "template.jinja", files.spec["template"].get<std::string>());
    files.messages_path = write_template_file(dir / "messages.json", files.spec["messages"].dump());
    return files;
}

std::string synthetic_model_with_template(const std::filesystem::path& dir, const std::string* chat_template) {
    SyntheticSpec spec;
    SourceModel source = make_synthetic_model(spec);
    if (chat_template) source.metadata.set("tokenizer.chat_template", *chat_template);
    else source.metadata.erase("tokenizer.chat_template");
    const std::string out = (dir / "model.cflow").string();
    ConvertOptions options;
    options.weight_quant = DType::F32;
    auto converted = convert_to_cflow(source, out, options);
    EXPECT_TRUE(converted.ok()) << (converted.ok() ? "" : converted.error());
    return out;
}

class TemplateCase : public ::testing::TestWithParam<const char*> {};

TEST_P(TemplateCase, RendersExpectedJinjaOutputExactly) {
    CFLOW_REQUIRE_ASSET(case_json, std::string(kCasesDir) + GetParam() + ".json");
    const auto files = write_case(case_json, temp_dir("template-case"));
    std::vector<std::string> args{"template", "--template", files.template_path, "--messages", files.messages_path,
                                  "--bos", files.spec["bos_token"].get<std::string>(),
                                  "--eos", files.spec["eos_token"].get<std::string>()};
    if (!files.spec["add_generation_prompt"].get<bool>()) args.push_back("--no-generation-prompt");
    auto r = run_cflow(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, files.spec["expected_output_jinja"].get<std::string>());
    EXPECT_TRUE(r.err.empty()) << r.err;
}

INSTANTIATE_TEST_SUITE_P(LlamaCpp, TemplateCase,
                         ::testing::Values("00_teknium_OpenHermes-2.5-Mistral-7B", "04_mlabonne_AlphaMonarch-7B",
                                           "12_Llama-3"),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                             return std::string("case") + std::string(param_info.param).substr(0, 2);
                         });

// 100,000 nested arrays as --messages or --kwargs crashed in a recursive JSON dump; now one line.
TEST(TemplateCli, DeeplyNestedJsonEndsWithOneLine) {
    const auto dir = temp_dir("template-deep");
    const auto tmpl = (dir / "t.jinja").string();
    std::ofstream(tmpl) << "{{ messages | length }}";
    const auto deep = (dir / "deep.json").string();
    std::ofstream(deep) << std::string(100000, '[') << std::string(100000, ']');
    expect_one_line_failure(run_cflow({"template", "--template", tmpl, "--messages", deep}), "levels deep");
    expect_one_line_failure(run_cflow({"template", "--template", tmpl, "--messages", deep, "--kwargs",
                                       std::string(1000, '[') + std::string(1000, ']')}),
                            "levels deep");
}

TEST(TemplateCli, NoGenerationPromptDropsTheAssistantHeader) {
    CFLOW_REQUIRE_ASSET(case_json, std::string(kCasesDir) + "00_teknium_OpenHermes-2.5-Mistral-7B.json");
    const auto files = write_case(case_json, temp_dir("template-nogen"));
    auto r = run_cflow({"template", "--template", files.template_path, "--messages", files.messages_path,
                        "--no-generation-prompt"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string expected = files.spec["expected_output_jinja"].get<std::string>();
    const std::string header = "<|im_start|>assistant\n";
    ASSERT_EQ(expected.substr(expected.size() - header.size()), header);
    expected.resize(expected.size() - header.size());
    EXPECT_EQ(r.out, expected);
}

TEST(TemplateCli, ModelTemplateAndSpecialTokensComeFromMetadata) {
    const auto dir = temp_dir("template-model");
    const std::string source = "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}"
                               "{% if add_generation_prompt %}[assistant]{% endif %}";
    const std::string model = synthetic_model_with_template(dir, &source);
    const std::string messages = write_template_file(dir / "m.json", R"([{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}])");
    auto r = run_cflow({"template", model, "--messages", messages});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "<s>[user] hi</s>[assistant] yo</s>[assistant]");  // the synthetic vocabulary's <s> and </s>
    auto overridden = run_cflow({"template", model, "--messages", messages, "--bos", "B", "--eos", "E", "--no-generation-prompt"});
    EXPECT_EQ(overridden.out, "B[user] hiE[assistant] yoE") << overridden.err;
}

TEST(TemplateCli, KwargsAndToolsBecomeVariables) {
    const auto dir = temp_dir("template-vars");
    const std::string tmpl = write_template_file(dir / "t.jinja",
                                        "{% if enable_thinking %}think{% else %}plain{% endif %}:{{ tools | length }}:"
                                        "{{ tools[1].name }}:{{ messages[0].content }}");
    const std::string messages = write_template_file(dir / "m.json", R"([{"role":"user","content":"q"}])");
    const std::string tools = write_template_file(dir / "tools.json", R"([{"name":"search"},{"name":"calc"}])");
    auto r = run_cflow({"template", "--template", tmpl, "--messages", messages, "--tools", tools,
                        "--kwargs", R"({"enable_thinking": true})"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "think:2:calc:q");
    auto off = run_cflow({"template", "--template", tmpl, "--messages", messages, "--tools", tools,
                          "--kwargs", R"({"enable_thinking": false})"});
    EXPECT_EQ(off.out, "plain:2:calc:q") << off.err;
}

TEST(TemplateCli, ModelWithoutTemplateUsesVisibleFallback) {
    const auto dir = temp_dir("template-fallback");
    const std::string model = synthetic_model_with_template(dir, nullptr);
    const std::string messages = write_template_file(dir / "m.json", R"([{"role":"system","content":"be brief"},{"role":"user","content":"Hello"}])");
    auto r = run_cflow({"template", model, "--messages", messages});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "system: be brief\nuser: Hello\nassistant: ");
    EXPECT_NE(r.err.find("model has no chat template; using the plain 'role: content' fallback"), std::string::npos) << r.err;
    auto no_prompt = run_cflow({"template", model, "--messages", messages, "--no-generation-prompt"});
    EXPECT_EQ(no_prompt.out, "system: be brief\nuser: Hello\n");
}

TEST(TemplateCli, BadInputsFailWithOneLine) {
    const auto dir = temp_dir("template-bad");
    const std::string good_template = write_template_file(dir / "ok.jinja", "{% for m in messages %}{{ m.content }}{% endfor %}");
    const std::string messages = write_template_file(dir / "m.json", R"([{"role":"user","content":"q"}])");
    expect_one_line_failure(run_cflow({"template", "--template", "/nonexistent/t.jinja", "--messages", messages}),
                            "/nonexistent/t.jinja");
    expect_one_line_failure(run_cflow({"template", "--template", good_template, "--messages", "/nonexistent/m.json"}),
                            "/nonexistent/m.json");
    expect_one_line_failure(run_cflow({"template", "/nonexistent/model.cflow", "--messages", messages}), "/nonexistent/model.cflow");
    const std::string malformed = write_template_file(dir / "bad.json", "[{\"role\": \"user\", \"content\": ");
    expect_one_line_failure(run_cflow({"template", "--template", good_template, "--messages", malformed}), "bad.json");
    const std::string not_array = write_template_file(dir / "obj.json", R"({"role":"user"})");
    expect_one_line_failure(run_cflow({"template", "--template", good_template, "--messages", not_array}), "array");
    // A syntax error on line 2: the message names the file, the line and the column.
    const std::string broken = write_template_file(dir / "broken.jinja", "{% for m in messages %}\n{{ m.content }{% endfor %}");
    auto r = run_cflow({"template", "--template", broken, "--messages", messages});
    expect_one_line_failure(r, "broken.jinja");
    EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("column"), std::string::npos) << r.err;
    expect_one_line_failure(run_cflow({"template", "--messages", messages}), "MODEL");
    expect_one_line_failure(run_cflow({"template", "--template", good_template}), "--messages");
}

} // namespace
} // namespace cflow::test
