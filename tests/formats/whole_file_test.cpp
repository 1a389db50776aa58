// Hostile inputs that used to hang or fill memory end at once with a clear error: a FIFO given
// as any input (it blocked forever in open()), a device such as /dev/zero (read without end),
// a directory, and files over the size cap of their kind.
#include <gtest/gtest.h>

#include <fstream>

#include "cflow/formats/mapped_file.h"
#include "cflow/formats/source_model.h"
#include "cflow/formats/whole_file.h"
#include "test_support.h"

#if !defined(_WIN32)
#include <sys/stat.h>
#endif

namespace cflow {
namespace {

#if !defined(_WIN32)
std::string make_fifo(const std::string& name) {
    const auto path = (test::temp_dir("whole_file_fifo") / name).string();
    std::remove(path.c_str());
    EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
    return path;
}

TEST(WholeFile, FifoIsRefusedWithoutBlocking) {
    const std::string fifo = make_fifo("input.json");
    auto text = read_whole_file(fifo, kMaxJsonConfigBytes, "a config.json");
    ASSERT_FALSE(text.ok());
    EXPECT_EQ(text.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(text.error().find("FIFO"), std::string::npos) << text.error();
    EXPECT_NE(text.error().find(fifo), std::string::npos) << text.error();
    EXPECT_FALSE(require_regular_file(fifo).ok());

    auto mapped = MappedFile::open(fifo);
    ASSERT_FALSE(mapped.ok());
    EXPECT_EQ(mapped.kind(), ErrorKind::InvalidInput) << mapped.error();
    auto read = MappedFile::open(fifo, LoadMode::ReadAnon);
    ASSERT_FALSE(read.ok());
}

TEST(WholeFile, HfFolderWithAFifoConfigEndsWithAnError) {
    const auto dir = test::temp_dir("whole_file_hf_fifo");
    const auto config = (dir / "config.json").string();
    std::remove(config.c_str());
    ASSERT_EQ(::mkfifo(config.c_str(), 0600), 0);
    std::ofstream(dir / "model.safetensors") << "x";
    auto model = open_source_model(dir.string());
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.error().find("config.json"), std::string::npos) << model.error();
}

TEST(WholeFile, DevicesAndDirectoriesAreRefused) {
    auto zero = read_whole_file("/dev/zero", kMaxTokenizerJsonBytes, "a tokenizer JSON file");
    ASSERT_FALSE(zero.ok());
    EXPECT_NE(zero.error().find("character device"), std::string::npos) << zero.error();
    auto dir = read_whole_file(test::temp_dir("whole_file_dir").string(), kMaxJsonConfigBytes, "a config.json");
    ASSERT_FALSE(dir.ok());
    EXPECT_NE(dir.error().find("directory"), std::string::npos) << dir.error();
}
#endif

TEST(WholeFile, SizeCapNamesTheFileAndTheLimit) {
    const auto path = (test::temp_dir("whole_file_cap") / "big.json").string();
    std::ofstream(path) << std::string(2048, ' ') << "{}";
    auto capped = read_whole_file(path, 1024, "a config.json");
    ASSERT_FALSE(capped.ok());
    EXPECT_EQ(capped.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(capped.error().find("1024-byte limit for a config.json"), std::string::npos) << capped.error();
    auto whole = read_whole_file(path, 4096, "a config.json");
    ASSERT_TRUE(whole.ok()) << whole.error();
    EXPECT_EQ(whole->size(), 2050u);
    auto missing = read_whole_file(path + ".missing", 4096, "a config.json");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.kind(), ErrorKind::Io);
}

} // namespace
} // namespace cflow
