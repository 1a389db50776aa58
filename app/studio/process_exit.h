#pragma once
// How cflow-studio's process ends once main's objects are gone (the window, the engine thread,
// the database and QApplication destroyed in order, the log shut down).
//
// On Windows ExitProcess first kills every thread still alive (Qt's and the system's helpers) and
// then runs each DLL's detach code; under wine 8 that detach code blocked for good in 3 of 22
// self-test runs (inside libstdc++-6.dll's PROCESS_DETACH, after the self-test had passed), a
// lock taken by a killed thread being the likely cause. Nothing of the user's is left to save at
// that point, so Windows ends the process directly after flushing stdio; POSIX returns normally.
namespace cflow::studio {

// The process's exit status; on Windows the call does not return.
int end_process(int status);

} // namespace cflow::studio
