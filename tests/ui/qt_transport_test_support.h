#pragma once
// Helpers of the Qt Network transport's tests: RemoteClients on either transport with the same
// settings (so a message can be compared word for word), and running a call on a QThread, as the
// desktop runs the transport on its engine worker thread.
#include <QCoreApplication>
#include <QThread>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "cflow/remote/httplib_transport.h"
#include "cflow/remote/remote_client.h"
#include "cflow/ui/remote/qt_network_transport.h"

namespace cflow::qt_transport_test {

enum class Transport { Qt, Httplib };

inline const char* transport_name(Transport t) { return t == Transport::Qt ? "Qt Network" : "cpp-httplib"; }

inline std::shared_ptr<remote::HttpTransport> make_transport(Transport t) {
    if (t == Transport::Qt) return std::shared_ptr<remote::HttpTransport>(ui::make_qt_network_transport());
    return std::shared_ptr<remote::HttpTransport>(remote::make_httplib_transport());
}

inline remote::RemoteClient client_on(Transport t, const std::string& base_url, uint32_t read_timeout_ms = 10'000,
                                      const std::string& ca_file = {}) {
    remote::EndpointConfig config;
    config.base_url = base_url;
    config.read_timeout_ms = read_timeout_ms;
    config.connect_timeout_ms = 2'000;
    config.ca_file = ca_file;
    return remote::RemoteClient(config, make_transport(t));
}

inline remote::RemoteChatRequest hello() {
    remote::RemoteChatRequest request;
    request.model = "test";
    request.messages = {{"user", "hi"}};
    return request;
}

// What a call on a worker QThread returned, and whether it really ran off the GUI thread.
template <class T>
struct WorkerResult {
    std::optional<T> value;
    bool ran_off_gui_thread = false;
};

// Runs fn() on a fresh QThread (its own event dispatcher, as the engine worker's) and waits.
template <class F>
auto on_worker_thread(F fn) {
    WorkerResult<decltype(fn())> out;
    std::unique_ptr<QThread> thread(QThread::create([&] {
        out.ran_off_gui_thread = QThread::currentThread() != QCoreApplication::instance()->thread();
        out.value.emplace(fn());
    }));
    thread->start();
    thread->wait();
    return out;
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace cflow::qt_transport_test
