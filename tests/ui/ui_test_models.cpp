#include "ui_test_models.h"

#include <gtest/gtest.h>

#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::ui::test {

std::filesystem::path model_with_template(const std::string& name, const std::string& chatTemplate) {
    cflow::test::SyntheticSpec spec;
    spec.d_model = 64;
    spec.n_layers = 2;
    spec.vocab = 300;
    spec.max_seq_len = 1024;
    spec.seed = 11;
    cflow::SourceModel source = cflow::test::make_synthetic_model(spec);
    source.metadata.set("tokenizer.chat_template", chatTemplate);
    const auto out = cflow::test::temp_dir("ui_chat_models_" + name) / (name + ".cflow");
    cflow::ConvertOptions options;
    options.weight_quant = cflow::DType::Q8_0;
    options.threads = 2;
    auto report = cflow::convert_to_cflow(source, out.string(), options);
    if (!report) ADD_FAILURE() << "converting the synthetic model '" << name << "' failed: " << report.error();
    return out;
}

const std::filesystem::path& chatml_model() {
    static const std::filesystem::path path = model_with_template("chatml", kChatMlTemplate);
    return path;
}

} // namespace cflow::ui::test
