#include "ui_test_models.h"

#include <QCoreApplication>
#include <QSettings>

#include <gtest/gtest.h>

#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::ui::test {

std::filesystem::path model_with_template(const std::string& name, const std::string& chatTemplate,
                                          uint32_t experts, uint32_t contextLength) {
    cflow::test::SyntheticSpec spec;
    spec.d_model = 64;
    spec.n_layers = 2;
    spec.vocab = 300;
    spec.max_seq_len = contextLength;
    spec.seed = 11;
    if (experts > 0) {
        spec.n_experts = experts;
        spec.top_k = 2;
        spec.expert_d_ff = 32;
    }
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

const std::filesystem::path& moe_chatml_model() {
    static const std::filesystem::path path = model_with_template("moe_chatml", kChatMlTemplate, 4);
    return path;
}

ScopedDb::ScopedDb(const std::string& name)
    : path(qpath(cflow::test::temp_dir(name) / "studio.sqlite")), previous(qgetenv("CFLOW_STUDIO_DB")) {
    qputenv("CFLOW_STUDIO_DB", path.toUtf8());
}

ScopedDb::~ScopedDb() { qputenv("CFLOW_STUDIO_DB", previous); }

IsolatedSettings::IsolatedSettings(const std::string& name) : previous(QCoreApplication::organizationName()) {
    QCoreApplication::setOrganizationName(
        QStringLiteral("cflow-test-%1-%2").arg(QString::fromStdString(name)).arg(QCoreApplication::applicationPid()));
    QSettings().clear();
}

IsolatedSettings::~IsolatedSettings() {
    QSettings().clear();
    QCoreApplication::setOrganizationName(previous);
}

} // namespace cflow::ui::test
