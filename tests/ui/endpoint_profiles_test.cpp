// Endpoint profiles (issue 34): the store keeps them in order in an ini file, replaces by id,
// removes, and refuses an unreadable base URL with a message that names it; the identity a reply
// records reads back as "model @ host:port"; the test keychain answers later, as a real one.
#include <gtest/gtest.h>

#include <QFile>
#include <QCoreApplication>
#include <QTemporaryDir>

#include <optional>

#include "cflow/ui/remote/endpoint_profile.h"
#include "cflow/ui/remote/memory_secret_store.h"

namespace cflow::ui {
namespace {

EndpointProfile profile(const QString& name, const QString& url, const QString& model = {}) {
    EndpointProfile p;
    p.name = name;
    p.baseUrl = url;
    p.model = model;
    return p;
}

TEST(EndpointProfiles, RoundTripKeepsOrderAndEveryField) {
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    const QString ini = dir.filePath(QStringLiteral("profiles.ini"));
    EndpointProfileStore store(ini);
    EXPECT_TRUE(store.profiles().empty());

    EndpointProfile gpu = profile(QStringLiteral("GPU box"), QStringLiteral("http://10.0.0.2:8080/v1"), QStringLiteral("qwen"));
    gpu.caFile = QStringLiteral("/etc/ca.pem");
    gpu.readTimeoutS = 300;
    gpu.hasKey = true;
    const auto savedGpu = store.save(gpu);
    ASSERT_TRUE(savedGpu) << savedGpu.error();
    EXPECT_FALSE(savedGpu->id.isEmpty()) << "a new profile gets an id";
    const auto savedLaptop = store.save(profile(QStringLiteral("laptop"), QStringLiteral("https://laptop.lan/v1")));
    ASSERT_TRUE(savedLaptop) << savedLaptop.error();
    EXPECT_NE(savedGpu->id, savedLaptop->id);

    // A second store on the same file reads what the first wrote, in the order saved.
    const std::vector<EndpointProfile> read = EndpointProfileStore(ini).profiles();
    ASSERT_EQ(read.size(), 2u);
    EXPECT_EQ(read[0].id, savedGpu->id);
    EXPECT_EQ(read[0].name, QStringLiteral("GPU box"));
    EXPECT_EQ(read[0].baseUrl, QStringLiteral("http://10.0.0.2:8080/v1"));
    EXPECT_EQ(read[0].model, QStringLiteral("qwen"));
    EXPECT_EQ(read[0].caFile, QStringLiteral("/etc/ca.pem"));
    EXPECT_EQ(read[0].readTimeoutS, 300);
    EXPECT_TRUE(read[0].hasKey);
    EXPECT_EQ(read[1].name, QStringLiteral("laptop"));
    EXPECT_FALSE(read[1].hasKey);

    // Saving under an existing id replaces it in place.
    EndpointProfile renamed = read[0];
    renamed.name = QStringLiteral("big GPU box");
    ASSERT_TRUE(store.save(renamed));
    const std::vector<EndpointProfile> after = store.profiles();
    ASSERT_EQ(after.size(), 2u);
    EXPECT_EQ(after[0].name, QStringLiteral("big GPU box"));
    EXPECT_EQ(after[1].name, QStringLiteral("laptop"));

    store.remove(savedGpu->id);
    const std::vector<EndpointProfile> left = store.profiles();
    ASSERT_EQ(left.size(), 1u);
    EXPECT_EQ(left[0].id, savedLaptop->id);
    store.remove(QStringLiteral("no-such-id"));
    EXPECT_EQ(store.profiles().size(), 1u);
}

TEST(EndpointProfiles, AnUnreadableUrlIsRefusedWithAMessageAndNothingIsSaved) {
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    EndpointProfileStore store(dir.filePath(QStringLiteral("profiles.ini")));
    const auto saved = store.save(profile(QStringLiteral("typo"), QStringLiteral("htp//gpu-box:8080/v1")));
    ASSERT_FALSE(saved);
    EXPECT_NE(saved.error().find("htp//gpu-box:8080/v1"), std::string::npos) << saved.error();
    EXPECT_NE(saved.error().find("http://"), std::string::npos) << "says what is expected: " << saved.error();
    EXPECT_TRUE(store.profiles().empty());

    EndpointProfile noTimeout = profile(QStringLiteral("x"), QStringLiteral("http://h:1/v1"));
    noTimeout.readTimeoutS = 0;
    const auto refused = store.save(noTimeout);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().find("time-out"), std::string::npos) << refused.error();
}

TEST(EndpointProfiles, IdentityNamesUrlAndModelAndReadsBackAsALabel) {
    const EndpointProfile p = profile(QStringLiteral("GPU box"), QStringLiteral("http://10.0.0.2:8080/v1"), QStringLiteral("qwen#rev2"));
    const QString identity = endpoint_identity(p);
    EXPECT_EQ(identity, QStringLiteral("endpoint:http://10.0.0.2:8080/v1#qwen#rev2"));
    EXPECT_TRUE(is_endpoint_identity(identity));
    EXPECT_FALSE(is_endpoint_identity(QStringLiteral("/models/qwen.gguf")));
    EXPECT_EQ(endpoint_identity_label(identity), QStringLiteral("qwen#rev2 @ 10.0.0.2:8080"));
    EXPECT_EQ(endpoint_identity_label(endpoint_identity(profile({}, QStringLiteral("http://[::1]:9000/v1")))),
              QStringLiteral("[::1]:9000"));
    EXPECT_EQ(endpoint_identity_label(QStringLiteral("/models/qwen.gguf")), QStringLiteral("/models/qwen.gguf"));
}


// Callers must not rely on an answer inside the call: a real keychain answers over D-Bus.
TEST(EndpointProfiles, TheTestKeychainAnswersLaterNotInsideTheCall) {
    MemorySecretStore secrets;
    bool wrote = false;
    secrets.writeKey(QStringLiteral("p1"), QStringLiteral("sk-1"), [&](Status s) { wrote = s.ok(); });
    EXPECT_FALSE(wrote) << "answered synchronously";
    QCoreApplication::processEvents();
    EXPECT_TRUE(wrote);

    std::optional<Result<QString>> read;
    secrets.readKey(QStringLiteral("p1"), [&](Result<QString> key) { read.emplace(std::move(key)); });
    EXPECT_FALSE(read.has_value());
    QCoreApplication::processEvents();
    ASSERT_TRUE(read.has_value());
    ASSERT_TRUE(*read);
    EXPECT_EQ(**read, QStringLiteral("sk-1"));

    // A key never saved reads as none; a failing keychain says so, through the callback too.
    read.reset();
    secrets.readKey(QStringLiteral("p2"), [&](Result<QString> key) { read.emplace(std::move(key)); });
    QCoreApplication::processEvents();
    ASSERT_TRUE(read.has_value() && *read);
    EXPECT_TRUE((*read)->isEmpty());
    secrets.setFailure(QStringLiteral("the keychain is locked"));
    read.reset();
    secrets.readKey(QStringLiteral("p1"), [&](Result<QString> key) { read.emplace(std::move(key)); });
    EXPECT_FALSE(read.has_value());
    QCoreApplication::processEvents();
    ASSERT_TRUE(read.has_value());
    ASSERT_FALSE(*read);
    EXPECT_EQ(read->error(), "the keychain is locked");

    // A store destroyed before it answers drops the answer instead of calling into a gone caller.
    bool called = false;
    {
        MemorySecretStore shortLived;
        shortLived.deleteKey(QStringLiteral("p1"), [&](Status) { called = true; });
    }
    QCoreApplication::processEvents();
    EXPECT_FALSE(called);
}

} // namespace
} // namespace cflow::ui
