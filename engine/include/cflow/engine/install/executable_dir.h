#pragma once
// The folder of the running executable, where the build and the installers put the files the
// program looks for at run time (default_model.h). One file per OS in src/install/platform/.
#include <string>

namespace cflow {

// As UTF-8 (on Windows too); empty when the OS does not say (POSIX other than Linux: no /proc/self/exe).
std::string executable_dir();

} // namespace cflow
