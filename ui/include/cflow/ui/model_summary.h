#pragma once
// A displayable summary of an opened .cflow file: the GlobalHeader and ModelParams fields,
// the size of every region and the metadata keys with shortened values. Pure data, built
// off the GUI thread and rendered by ModelHeaderView.
#include <vector>

#include <QString>

namespace cflow {
class CflowFile;
}

namespace cflow::ui {

struct SummaryField {
    QString name;   // the on-disk field name ("d_model") or metadata key ("general.name")
    QString value;  // human-readable, at most about kMaxValueChars characters
};

struct SummarySection {
    QString title;  // "File", "Global header", "Model parameters", "Regions", "Metadata"
    std::vector<SummaryField> fields;
};

using ModelSummary = std::vector<SummarySection>;

// Values longer than this (chat templates, token lists) are cut with an ellipsis.
inline constexpr int kMaxValueChars = 96;

ModelSummary summarize_model(const CflowFile& file);

} // namespace cflow::ui
