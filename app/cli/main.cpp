// cflow: the headless command-line interface (convert, generate, chat, inspect, critical-path,
// tokenize, detokenize, template).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"

namespace {

constexpr const char* kUsage =
    "usage: cflow <command> [options]\n"
    "\n"
    "commands:\n"
    "  convert SRC -o OUT.cflow|OUT.vflow [--format cflow|vflow] [--quant q4_0|q8_0|f16|f32] [--embedding-quant Q]\n"
    "          [--tokenizer FILE] [--threads N]\n"
    "      SRC: a Hugging Face model folder, a .gguf file, or a llama2.c .bin (with --tokenizer tokenizer.bin)\n"
    "  generate [MODEL.cflow] -p PROMPT -n N [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R]\n"
    "           [--seed S] [--threads T] [--ctx N] [--load map|read] [--stats] [--trace-experts] [--telemetry-file F]\n"
    "           [--expert-fetch mapped|staged]   staged: direct-I/O expert reads overlapped with compute\n"
    "      prints the prompt and the generated text on stdout, statistics on stderr; without MODEL: the bundled\n"
    "      default model (default-model.cflow beside cflow or in ../share/cflow-studio)\n"
    "  perplexity MODEL.cflow -f TEXT [--ctx N] [--stride N] [--max-tokens N] [--threads N] [--load map|read] [--json]\n"
    "      perplexity of a text file with the model's own tokenizer: documents split at <|endoftext|> (else at\n"
    "      blank lines), each BOS text EOS; windows of --ctx tokens (default: the model's context) advanced by\n"
    "      --stride (default --ctx); every token after the first scored once\n"
    "  bench MODEL.cflow [--threads N] [--tokens N] [--warmup N]\n"
    "      decode speed from a file mapping and from anonymous memory vs the measured read bandwidth\n"
    "  chat [MODEL.cflow] [--system TEXT] [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R]\n"
    "       [--seed S] [--threads T] [--ctx N] [--show-prompt]\n"
    "      interactive chat through the model's chat template (stdin line by line); /reset, /system TEXT, /quit;\n"
    "      Ctrl-C stops a reply, Ctrl-D exits; --show-prompt prints each turn's rendered prompt on stderr\n"
    "  inspect MODEL.cflow [--json]\n"
    "      header, geometry, segments, metadata and file layout summary\n"
    "  critical-path MODEL.cflow [--json]\n"
    "  critical-path --d D --layers L --heads H [--kv-heads H] [--head-dim N] [--d-ff F] [--experts E --top-k K\n"
    "                --expert-hidden N] [--shared-expert-hidden N] [--dense-delay 1] [--expert-delay 2]\n"
    "                [--combine-style N|NAME] [--blocks B --iters N] [--json]\n"
    "      per-layer weight streams and the critical-path bandwidth B_naive, B_critical and the\n"
    "      reduction (MiB/token; paper section 4.5), at 0.5 byte/weight and, for a file, its actual bytes\n"
    "  tokenize MODEL_OR_VOCAB [--ids|--pieces] [--parse-special] [--add-special]\n"
    "      stdin (all of it, as bytes) -> token ids (or pieces) on one line; BOS/EOS only with --add-special\n"
    "      MODEL_OR_VOCAB: a .cflow/.vflow, a .gguf (vocab-only ones too) or a tokenizer.json\n"
    "  detokenize MODEL_OR_VOCAB\n"
    "      whitespace-separated token ids on stdin -> the text on stdout, exactly\n"
    "  template (MODEL | --template FILE.jinja) --messages MESSAGES.json [--no-generation-prompt] [--bos S] [--eos S]\n"
    "           [--kwargs JSON] [--tools TOOLS.json]\n"
    "      prints the rendered chat prompt exactly (MODEL's template and BOS/EOS unless overridden)\n";

} // namespace

int main(int argc, char** argv) {
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const std::string command = argv[1];
    std::vector<std::string> args(argv + 2, argv + argc);
    if (command == "convert") return cflow::cli::run_convert(args);
    if (command == "generate") return cflow::cli::run_generate(args);
    if (command == "inspect") return cflow::cli::run_inspect(args);
    if (command == "bench") return cflow::cli::run_bench(args);
    if (command == "critical-path") return cflow::cli::run_critical_path(args);
    if (command == "chat") return cflow::cli::run_chat(args);
    if (command == "perplexity") return cflow::cli::run_perplexity(args);
    if (command == "tokenize") return cflow::cli::run_tokenize(args);
    if (command == "detokenize") return cflow::cli::run_detokenize(args);
    if (command == "template") return cflow::cli::run_template(args);
    std::fprintf(stderr, "cflow: unknown command '%s' (try cflow --help)\n", command.c_str());
    return 2;
}
