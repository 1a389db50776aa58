#pragma once
// Texts bundled with the app for the comparison's perplexity and agreement: short, in the style
// of the stories the zoo models were trained on (resources/training), so scoring them takes
// seconds and the numbers mean something for those models. The user may pick any file instead.
#include <vector>

#include <QString>

namespace cflow::ui {

struct TextSample {
    QString name;  // shown in the wizard and saved with the run ("bundled: …")
    QString text;  // documents separated by blank lines (split_documents)
};

const std::vector<TextSample>& bundled_text_samples();

} // namespace cflow::ui
