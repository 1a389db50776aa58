// The one rule for what a model path holds (model_path_kind.h): a folder, a magic in the first
// bytes, else the name; and the places that follow it (open_source_model, the converter's
// general.source_format).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/model_path_kind.h"
#include "cflow/formats/source_model.h"
#include "source_writers.h"
#include "test_support.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

// Text long enough to hold any magic, starting with `head`.
std::vector<uint8_t> file_starting_with(const std::string& head) { return bytes_of(head + std::string(24, '.')); }

ModelPathKind sniff(const fs::path& path) { return sniff_model_path(path.string()); }

TEST(ModelPathKind, AMissingPathAndAFolder) {
    const fs::path dir = test::temp_dir("kind_missing_folder");
    EXPECT_EQ(sniff(dir / "absent.gguf"), ModelPathKind::Missing);
    EXPECT_EQ(sniff(dir), ModelPathKind::HfFolder);
}

TEST(ModelPathKind, TheMagicDecidesWhateverTheName) {
    const fs::path dir = test::temp_dir("kind_magic");
    test::write_bytes(dir / "weights.dat", file_starting_with("GGUF"));
    EXPECT_EQ(sniff(dir / "weights.dat"), ModelPathKind::Gguf);
    test::write_bytes(dir / "model.bin", file_starting_with(std::string("CFLOW\0\0\0", 8)));
    EXPECT_EQ(sniff(dir / "model.bin"), ModelPathKind::Cflow);
    test::write_bytes(dir / "model.gguf", file_starting_with(std::string("VFLOW\0\0\0", 8)));
    EXPECT_EQ(sniff(dir / "model.gguf"), ModelPathKind::Vflow);
    std::vector<uint8_t> v1;
    test::put<uint32_t>(v1, 0x616b3432u);  // llama2.c v1 export: "ak42" as a little-endian u32
    v1.resize(64);
    test::write_bytes(dir / "checkpoint.pt", v1);
    EXPECT_EQ(sniff(dir / "checkpoint.pt"), ModelPathKind::Llama2c);
}

TEST(ModelPathKind, WithoutAMagicTheNameDecidesIgnoringCase) {
    const fs::path dir = test::temp_dir("kind_name");
    const struct {
        const char* name;
        ModelPathKind kind;
    } cases[] = {
        {"x.GGUF", ModelPathKind::Gguf},
        {"model.safetensors", ModelPathKind::Safetensors},
        {"model.safetensors.index.json", ModelPathKind::Safetensors},
        {"broken.cflow", ModelPathKind::Cflow},
        {"broken.Vflow", ModelPathKind::Vflow},
        {"stories15M.bin", ModelPathKind::Llama2c},
        {"notes.txt", ModelPathKind::Unknown},
        {"README", ModelPathKind::Unknown},
    };
    for (const auto& c : cases) {
        test::write_bytes(dir / c.name, file_starting_with("no magic here"));
        EXPECT_EQ(sniff(dir / c.name), c.kind) << c.name;
    }
    test::write_bytes(dir / "empty.cflow", {});
    EXPECT_EQ(sniff(dir / "empty.cflow"), ModelPathKind::Cflow);
}

TEST(ModelPathKind, TheNameAloneNeedsNoFile) {
    EXPECT_EQ(model_kind_from_name("/nowhere/out.VFLOW"), ModelPathKind::Vflow);
    EXPECT_EQ(model_kind_from_name("out.cflow"), ModelPathKind::Cflow);
    EXPECT_EQ(model_kind_from_name("out"), ModelPathKind::Unknown);
}

TEST(ModelPathKind, WhatEachKindIsFor) {
    for (ModelPathKind kind : {ModelPathKind::HfFolder, ModelPathKind::Safetensors, ModelPathKind::Gguf,
                               ModelPathKind::Llama2c}) {
        EXPECT_TRUE(is_convertible_source(kind)) << int(kind);
        EXPECT_FALSE(is_cflow_container(kind)) << int(kind);
    }
    for (ModelPathKind kind : {ModelPathKind::Cflow, ModelPathKind::Vflow}) {
        EXPECT_TRUE(is_cflow_container(kind)) << int(kind);
        EXPECT_FALSE(is_convertible_source(kind)) << int(kind);
    }
    for (ModelPathKind kind : {ModelPathKind::Missing, ModelPathKind::Unknown}) {
        EXPECT_FALSE(is_cflow_container(kind)) << int(kind);
        EXPECT_FALSE(is_convertible_source(kind)) << int(kind);
    }
    EXPECT_STREQ(source_format_name(ModelPathKind::HfFolder), "safetensors");
    EXPECT_STREQ(source_format_name(ModelPathKind::Safetensors), "safetensors");
    EXPECT_STREQ(source_format_name(ModelPathKind::Gguf), "gguf");
    EXPECT_STREQ(source_format_name(ModelPathKind::Llama2c), "llama2c");
    EXPECT_STREQ(source_format_name(ModelPathKind::Cflow), "");
    EXPECT_STREQ(source_format_name(ModelPathKind::Unknown), "");
}

TEST(ModelPathKind, OpenSourceModelRefusesACflowModel) {
    const fs::path dir = test::temp_dir("kind_open_cflow");
    test::write_bytes(dir / "model.cflow", file_starting_with(std::string("CFLOW\0\0\0", 8)));
    auto opened = open_source_model((dir / "model.cflow").string());
    ASSERT_FALSE(opened.ok());
    EXPECT_EQ(opened.kind(), ErrorKind::InvalidInput) << opened.error();
    EXPECT_NE(opened.error().find("model.cflow: already a .cflow/.vflow model"), std::string::npos) << opened.error();
}

TEST(ModelPathKind, AnUnplacedFileIsTriedAsALlama2cCheckpoint) {
    const fs::path dir = test::temp_dir("kind_open_unknown");
    test::write_bytes(dir / "weights.pt", file_starting_with("no magic here"));
    auto opened = open_source_model((dir / "weights.pt").string());
    ASSERT_FALSE(opened.ok());
    EXPECT_NE(opened.error().find("needs its tokenizer.bin"), std::string::npos) << opened.error();
}

TEST(ModelPathKind, TheConverterNamesTheSourceFormatByTheSameRule) {
    CFLOW_REQUIRE_ASSET(gguf, "assets/models/llama2c-stories260K/stories260K.gguf");
    const fs::path dir = test::temp_dir("kind_source_format");
    fs::copy_file(gguf, dir / "renamed.weights");  // no .gguf name: only the magic says what it is
    auto source = open_source_model((dir / "renamed.weights").string());
    ASSERT_TRUE(source.ok()) << source.error();
    ConvertOptions options;
    options.weight_quant = DType::Q8_0;
    auto converted = convert_to_cflow(*source, (dir / "out.cflow").string(), options);
    ASSERT_TRUE(converted.ok()) << converted.error();
    auto file = CflowFile::open((dir / "out.cflow").string());
    ASSERT_TRUE(file.ok()) << file.error();
    EXPECT_EQ((*file)->metadata().get_string("general.source_format"), "gguf");
}

} // namespace
} // namespace cflow
