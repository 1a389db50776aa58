// A model folder's text files must be its own: a chat_template.jinja or tokenizer.json that is
// a symbolic link out of the folder (to /etc/passwd, say) is refused with its target named,
// rather than embedded in the converted model. Links of the Hugging Face hub cache
// (snapshots/<rev>/file -> ../../blobs/<hash>) and links inside the folder still read.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cflow/formats/hf_tokenizer_files.h"
#include "source_writers.h"
#include "test_support.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;

const char* kTinyTokenizer = R"({"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]},"added_tokens":[]})";

TEST(ModelFolder, AChatTemplateLinkedOutOfTheFolderIsRefusedNamingItsTarget) {
    CFLOW_REQUIRE_SYMLINKS();
    const fs::path root = test::temp_dir("folder_link_out");
    const fs::path secret = root / "elsewhere" / "secret.txt";
    fs::create_directories(secret.parent_path());
    test::write_text(secret, "root:x:0:0:root:/root:/bin/bash\n");
    const fs::path model = root / "model";
    fs::create_directories(model);
    test::write_text(model / "tokenizer.json", kTinyTokenizer);
    fs::create_symlink(secret, model / "chat_template.jinja");

    auto r = read_hf_tokenizer((model / "tokenizer.json").string());
    ASSERT_FALSE(r.ok()) << "the linked file was embedded";
    EXPECT_EQ(r.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(r.error().find("chat_template.jinja: leads to " + fs::canonical(secret).string()), std::string::npos)
        << r.error();
    EXPECT_NE(r.error().find("outside the model folder"), std::string::npos) << r.error();
}

TEST(ModelFolder, ATokenizerLinkedOutOfTheFolderIsRefused) {
    CFLOW_REQUIRE_SYMLINKS();
    const fs::path root = test::temp_dir("folder_tokenizer_out");
    fs::create_directories(root / "other");
    test::write_text(root / "other" / "tokenizer.json", kTinyTokenizer);
    fs::create_directories(root / "model");
    fs::create_symlink(root / "other" / "tokenizer.json", root / "model" / "tokenizer.json");
    auto r = read_hf_tokenizer((root / "model" / "tokenizer.json").string());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("outside the model folder"), std::string::npos) << r.error();
}

TEST(ModelFolder, AnUnreadableChatTemplateIsAnErrorNotAMissingTemplate) {
    const fs::path model = test::temp_dir("folder_template_dir");
    test::write_text(model / "tokenizer.json", kTinyTokenizer);
    fs::create_directories(model / "chat_template.jinja");  // a folder where a file should be
    auto r = read_hf_tokenizer((model / "tokenizer.json").string());
    ASSERT_FALSE(r.ok()) << "a model without its template was produced silently";
    EXPECT_NE(r.error().find("chat_template.jinja"), std::string::npos) << r.error();
}

TEST(ModelFolder, HubCacheLinksAndLinksInsideTheFolderRead) {
    CFLOW_REQUIRE_SYMLINKS();
    // models--org--name/snapshots/<rev>/{tokenizer.json, chat_template.jinja} -> ../../blobs/<hash>
    const fs::path cache = test::temp_dir("folder_hub_cache") / "models--org--tiny";
    const fs::path snapshot = cache / "snapshots" / "0123abcd";
    fs::create_directories(cache / "blobs");
    fs::create_directories(snapshot);
    test::write_text(cache / "blobs" / "1111", kTinyTokenizer);
    test::write_text(cache / "blobs" / "2222", "{{ messages[0]['content'] }}");
    fs::create_symlink("../../blobs/1111", snapshot / "tokenizer.json");
    fs::create_symlink("../../blobs/2222", snapshot / "chat_template.jinja");
    auto hub = read_hf_tokenizer((snapshot / "tokenizer.json").string());
    ASSERT_TRUE(hub.ok()) << hub.error();
    const auto tmpl = hub->get_string("tokenizer.chat_template");
    ASSERT_TRUE(tmpl.has_value());
    EXPECT_EQ(*tmpl, "{{ messages[0]['content'] }}");

    const fs::path model = test::temp_dir("folder_link_inside");
    test::write_text(model / "tokenizer.json", kTinyTokenizer);
    fs::create_directories(model / "templates");
    test::write_text(model / "templates" / "chat.jinja", "{{ 1 }}");
    fs::create_symlink("templates/chat.jinja", model / "chat_template.jinja");
    auto inside = read_hf_tokenizer((model / "tokenizer.json").string());
    ASSERT_TRUE(inside.ok()) << inside.error();
    ASSERT_TRUE(inside->get_string("tokenizer.chat_template").has_value());
}

} // namespace
} // namespace cflow
