// The identity a reply records for an endpoint, and its short label (endpoint_profile.h).
#include "cflow/ui/remote/endpoint_profile.h"

#include <QUrl>

namespace cflow::ui {

namespace {
constexpr QStringView kEndpointIdentityPrefix = u"endpoint:";
}

QString endpoint_identity(const EndpointProfile& profile) {
    return kEndpointIdentityPrefix.toString() + profile.baseUrl + u'#' + profile.model;
}

bool is_endpoint_identity(const QString& modelPath) {
    return modelPath.startsWith(kEndpointIdentityPrefix) && modelPath.contains(u'#');
}

QString endpoint_identity_label(const QString& identity) {
    if (!is_endpoint_identity(identity)) return identity;
    const QString rest = identity.mid(kEndpointIdentityPrefix.size());
    // The model id may itself hold '#' ("org/model#rev"); the URL part never does (a fragment is
    // not part of a base URL), so the first '#' splits them.
    const qsizetype hash = rest.indexOf(u'#');
    const QString url = rest.left(hash);
    const QString model = rest.mid(hash + 1);
    const QUrl parsed(url);
    QString where = parsed.host();
    if (where.contains(u':')) where = u'[' + where + u']';  // an IPv6 literal
    if (where.isEmpty()) where = url;
    if (parsed.port() >= 0) where += u':' + QString::number(parsed.port());
    return model.isEmpty() ? where : model + QStringLiteral(" @ ") + where;
}

} // namespace cflow::ui
