#pragma once
// What a person reads when an endpoint fails: the cause in words and what to try, for each way a
// request goes wrong (a name that does not resolve, a refused connection, TLS, the key, a wrong path,
// time-outs, a cut stream, a malformed body, a response over the cap).
#include <string>
#include <string_view>

#include "cflow/base/result.h"
#include "cflow/remote/http_transport.h"

namespace cflow::remote {

// What to try, in the words of the front end that shows the message: the CLI's flags by default;
// the desktop names its dialog's fields instead.
struct DiagnosisHints {
    std::string api_key = "--api-key-env VAR names the variable holding it";  // after a 401
    std::string ca_file = "give its CA with --ca-file PEM";                   // an untrusted certificate
};

// A transport failure on `url`: "cannot resolve host 'x' (DNS): ...".
Error diagnose_transport(const TransportResult& result, std::string_view url, const HttpRequest& request,
                         const DiagnosisHints& hints = {});

// An HTTP error status; `body` is the first bytes of the answer (its error.message is quoted when
// it is OpenAI's error JSON).
Error diagnose_status(int status, std::string_view body, std::string_view url, const DiagnosisHints& hints = {});

} // namespace cflow::remote
