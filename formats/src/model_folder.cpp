#include "model_folder.h"

#include <system_error>

namespace cflow::hf {

namespace fs = std::filesystem;

namespace {

// Is `inner` equal to or below `outer`? Both are canonical, so a lexical prefix test is exact.
bool is_within(const fs::path& inner, const fs::path& outer) {
    auto o = outer.begin();
    auto i = inner.begin();
    for (; o != outer.end(); ++o, ++i) {
        if (o->empty()) continue;  // a trailing separator
        if (i == inner.end() || *i != *o) return false;
    }
    return true;
}

} // namespace

Status require_inside_model_folder(const fs::path& folder, const fs::path& file) {
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(file, ec))) return Status::success();  // absence is the caller's case
    const fs::path real_folder = fs::weakly_canonical(folder, ec);
    if (ec) return make_error(ErrorKind::Io, folder.string() + ": cannot resolve the folder: " + ec.message());
    const fs::path real_file = fs::weakly_canonical(file, ec);
    if (ec) return make_error(ErrorKind::Io, file.string() + ": cannot resolve the path: " + ec.message());
    if (is_within(real_file, real_folder)) return Status::success();
    // Hub cache: models--org--name/snapshots/<revision>/<file> -> models--org--name/blobs/<hash>.
    if (real_folder.has_parent_path() && real_folder.parent_path().filename() == "snapshots") {
        const fs::path blobs = real_folder.parent_path().parent_path() / "blobs";
        if (is_within(real_file, blobs)) return Status::success();
    }
    return make_error(ErrorKind::InvalidInput,
                      file.string() + ": leads to " + real_file.string() + ", outside the model folder " +
                          real_folder.string() +
                          "; refused so that no unrelated file ends up in the model (copy the file into the folder to use it)");
}

} // namespace cflow::hf
