#pragma once
// HttpTransport on Debian's cpp-httplib: http and https (OpenSSL; HttpRequest::ca_file or the
// system's CAs), one connection per request, the host name resolved first so that a name that does
// not resolve is told apart from a refused connection.
#include <memory>

#include "cflow/remote/http_transport.h"

namespace cflow::remote {

std::unique_ptr<HttpTransport> make_httplib_transport();

} // namespace cflow::remote
