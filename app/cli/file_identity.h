#pragma once
// Whether two paths name one file: by identity (device + inode, through hard and symbolic links)
// when both exist, else by their canonical names. Commands use it so no input is ever an output.
#include <string>

namespace cflow::cli {

bool is_same_file(const std::string& a, const std::string& b);

} // namespace cflow::cli
