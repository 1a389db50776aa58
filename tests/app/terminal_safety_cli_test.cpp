// Strings a model file supplies reach the terminal escaped: an ESC sequence in general.name
// (a window-title or colour sequence, or the one-byte C1 CSI) printed raw by `cflow generate`
// would drive the user's terminal.
#include "cflow/formats/converter.h"
#include "cli_runner.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

TEST(TerminalSafetyCli, ControlCharactersInTheModelNameAreEscaped) {
    SyntheticSpec spec;
    auto source = make_synthetic_model(spec);
    source.metadata.set("general.name", std::string("evil\x1b]0;pwned\x07\x1b[31mred\xc2\x9b" "2J caf\xc3\xa9"));
    const std::string model = (temp_dir("terminal") / "evil.cflow").string();
    ConvertOptions options;
    options.weight_quant = DType::F32;
    auto converted = convert_to_cflow(source, model, options);
    ASSERT_TRUE(converted.ok()) << converted.error();

    const auto r = run_cflow({"generate", model, "-p", "hi", "-n", "2", "--temp", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\x07'), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("\xc2\x9b"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("model evil\\x1b]0;pwned\\x07\\x1b[31mred\\x9b2J caf\xc3\xa9 |"), std::string::npos)
        << "printable UTF-8 stays as it is: " << r.err;
}

} // namespace
} // namespace cflow::test
