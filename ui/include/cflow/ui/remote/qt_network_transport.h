#pragma once
// cflow::remote::HttpTransport on Qt Network, for the desktop app (issue 34): the same protocol
// code as `cflow chat --endpoint` (cflow_remote), with Qt's TLS backend (OpenSSL on Linux,
// Schannel on Windows) and proxy-free, HTTP/1.1-only, redirect-reporting requests, so that it
// behaves as the cpp-httplib transport does and the two are tested against the same servers.
//
// send() blocks its calling thread: it makes a QNetworkAccessManager on that thread and runs a
// local QEventLoop until the response ends. Call it from a worker thread (the engine worker),
// never the GUI thread, whose events it would hold up. A QCoreApplication must exist. The local
// loop also delivers the calling thread's other queued events while it waits: a worker that calls
// send() sees its own queued slots run inside it, re-entrantly. Stop a reply with the CancelToken
// that RemoteClient checks per chunk, and start no other request from such a slot.
#include <memory>

#include "cflow/base/cancel.h"
#include "cflow/remote/http_transport.h"

namespace cflow::ui {

// cancel (optional, must outlive the transport): also checked every 50 ms while an exchange waits,
// so a Stop ends it while the server sends nothing (RemoteClient checks its token per chunk only);
// the exchange then ends as a callback's cancel does (TransportFailure::Cancelled).
std::unique_ptr<cflow::remote::HttpTransport> make_qt_network_transport(const CancelToken* cancel = nullptr);

} // namespace cflow::ui
