#include "cflow/server/api_error.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace cflow::server {

ApiError bad_request(std::string message, std::string param, std::string code) {
    return {400, "invalid_request_error", std::move(code), std::move(param), std::move(message)};
}
ApiError not_found(std::string message, std::string code) {
    return {404, "not_found_error", std::move(code), {}, std::move(message)};
}
ApiError unauthorized(std::string message) {
    return {401, "authentication_error", "invalid_api_key", {}, std::move(message)};
}
ApiError server_busy(std::string message) { return {503, "server_error", "server_busy", {}, std::move(message)}; }
ApiError server_error(std::string message) { return {500, "server_error", {}, {}, std::move(message)}; }

ApiError error_for_status(int status) {
    switch (status) {
    case 400: return bad_request("the request could not be parsed");
    case 404: return not_found("no such endpoint (try GET /v1/models, POST /v1/chat/completions, POST /v1/completions or POST /v1/messages)");
    case 405: return {405, "invalid_request_error", {}, {}, "method not allowed on this endpoint"};
    case 413: return {413, "invalid_request_error", "request_too_large", {}, "the request body is larger than the server accepts"};
    case 414: return {414, "invalid_request_error", {}, {}, "the request URI is too long"};
    default: break;
    }
    if (status >= 500) return {status, "server_error", {}, {}, "the server failed to answer the request"};
    return {status, "invalid_request_error", {}, {}, "the request was refused"};
}

std::string error_body(const ApiError& error) {
    const auto or_null = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
    nlohmann::json body = {{"error",
                            {{"message", error.message},
                             {"type", error.type},
                             {"param", or_null(error.param)},
                             {"code", or_null(error.code)}}}};
    return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace cflow::server
