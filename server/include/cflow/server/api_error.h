#pragma once
// An OpenAI-style API error: the HTTP status and the {"error": {...}} object clients parse
// (message, type, param, code), so an SDK raises the matching exception class.
#include <optional>
#include <string>

namespace cflow::server {

struct ApiError {
    int status = 400;
    std::string type = "invalid_request_error";  // invalid_request_error, authentication_error, not_found_error, server_error
    std::string code;                            // "" = null; e.g. invalid_api_key, model_not_found, context_length_exceeded
    std::string param;                           // "" = null; the request field at fault
    std::string message;
};

ApiError bad_request(std::string message, std::string param = {}, std::string code = {});
ApiError not_found(std::string message, std::string code = {});
ApiError unauthorized(std::string message);
ApiError server_busy(std::string message);
ApiError server_error(std::string message);
// The standard message for a status that arrived without one (httplib's own 413, 404 routes, ...).
ApiError error_for_status(int status);

// {"error": {"message": ..., "type": ..., "param": ..., "code": ...}} as one line of JSON.
std::string error_body(const ApiError& error);

} // namespace cflow::server
