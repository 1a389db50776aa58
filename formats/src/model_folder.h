#pragma once
// The files of a Hugging Face model folder (config.json, tokenizer files, chat template,
// weight shards) must be the folder's own: a symbolic link out of it (chat_template.jinja ->
// /etc/passwd) would embed an unrelated file in a model the user may go on to share.
// The Hugging Face hub cache links every file of snapshots/<revision>/ to ../../blobs/<hash>;
// those links stay inside the model's cache folder and are accepted.
#include <filesystem>

#include "cflow/base/result.h"

namespace cflow::hf {

// Success when `file` (a path inside `folder`, which need not exist yet) resolves to a
// place inside `folder`, or, for a hub snapshot folder, inside its cache's blobs/ folder.
// InvalidInput names the file, where it leads and why it is refused.
Status require_inside_model_folder(const std::filesystem::path& folder, const std::filesystem::path& file);

} // namespace cflow::hf
