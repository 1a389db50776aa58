// The conversion paths: the default output beside a writable source, else in the fallback;
// converter errors name the output, never its temporary file.
#include <unistd.h>

#include <QDir>

#include <gtest/gtest.h>

#include <fstream>

#include "cflow/ui/convert_paths.h"
#include "test_support.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::test::qpath;

TEST(ConvertPaths, DefaultOutputGoesBesideAWritableSourceElseToTheFallback) {
    const auto dir = cflow::test::temp_dir("convert_paths_default_output");
    const QString fallback = qpath(dir / "fallback");
    EXPECT_EQ(cflow::ui::default_convert_output_path(qpath(dir / "model.gguf"), fallback), qpath(dir / "model.cflow"));
    std::filesystem::create_directories(dir / "hf-model");
    EXPECT_EQ(cflow::ui::default_convert_output_path(qpath(dir / "hf-model"), fallback), qpath(dir / "hf-model.cflow"));
    EXPECT_EQ(cflow::ui::default_convert_output_path(QStringLiteral("/no/such/folder/model.gguf"), fallback),
              fallback + QStringLiteral("/model.cflow"));
    EXPECT_TRUE(cflow::ui::default_convert_output_path(QStringLiteral("/no/such/folder/model.gguf"))
                    .endsWith(QStringLiteral("/models/model.cflow")));
    if (geteuid() != 0) {  // root writes anywhere: a read-only folder only tells for others
        const auto readOnly = dir / "read-only";
        std::filesystem::create_directories(readOnly);
        std::filesystem::permissions(readOnly, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
        EXPECT_EQ(cflow::ui::default_convert_output_path(qpath(readOnly / "model.gguf"), fallback),
                  fallback + QStringLiteral("/model.cflow"));
        std::filesystem::permissions(readOnly, std::filesystem::perms::owner_all);
    }
}

TEST(ConvertPaths, ErrorsNameTheOutputNotItsTemporaryFile) {
    EXPECT_EQ(cflow::ui::user_facing_convert_error(QStringLiteral("/m/x.cflow.tmp-4711: disk full"),
                                                   QStringLiteral("/m/x.cflow")),
              QStringLiteral("/m/x.cflow: disk full"));
    EXPECT_EQ(cflow::ui::user_facing_convert_error(QStringLiteral("/m/y.cflow: bad"), QStringLiteral("/m/x.cflow")),
              QStringLiteral("/m/y.cflow: bad"));
}

} // namespace
