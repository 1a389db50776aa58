#pragma once
// What a user wants to know about a model before chatting with it: its name, what it is for
// (the card's first paragraph: "writes short children's stories; it continues whatever you
// write"), what it can do (dense or mixture of experts, size, context, quantisation, chat
// template) and the whole card text. The card comes from general.description in the file's
// metadata, else from a Markdown file beside the model: MODEL.md (same stem) or MODEL_CARD.md.
#include <cstdint>

#include <QString>
#include <QStringList>

namespace cflow {
class CflowFile;
struct GlobalHeader;
struct ModelParams;
} // namespace cflow

namespace cflow::ui {

struct ModelCard {
    QString name;            // general.name, else the file name
    QString purpose;         // the card's first paragraph as plain text ("" without a card)
    QString markdown;        // the whole card ("" without one)
    QString cardPath;        // the file it came from ("" from the metadata or none)
    QStringList capabilities;  // one line each: architecture, parameters, context, weights, template
};

inline constexpr qint64 kMaxCardBytes = 256 * 1024;  // a larger "card" is not one: it is not read

// Reads only small files beside modelPath; never throws. Blocking: call it off the GUI thread.
ModelCard read_model_card(const CflowFile& file, const QString& modelPath);

// Elements of every weight tensor implied by the header geometry (the tiles carry padding,
// so counting stored bytes would overstate small models).
uint64_t estimate_parameters(const GlobalHeader& header, const ModelParams& params);
QString human_count(uint64_t n);  // "4.47 M", "1.10 B"

} // namespace cflow::ui
