// cflow: the headless command-line interface (convert, generate, chat, serve, inspect, critical-path,
// tokenize, detokenize, template, synth).
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"

namespace {

constexpr const char* kUsage =
    "usage: cflow <command> [options]\n"
    "       cflow --version\n"
    "\n"
    "commands:\n"
    "  convert SRC -o OUT.cflow|OUT.vflow [--format cflow|vflow] [--keep-every-type] [--quant q4_k|q5_k|q6_k|q4_0|q8_0|f16|f32] [--embedding-quant Q]\n"
    "          [--attention-quant Q] [--ffn-quant Q] [--expert-quant Q] [--output-quant Q] [--tokenizer FILE]\n"
    "          [--threads N] [--validate [--sample TEXT]] | --preflight [-o OUT] [--json]\n"
    "      SRC: a Hugging Face model folder, a .gguf file (F32/F16/BF16, Q4_0/Q4_1/Q5_0/Q5_1/Q8_0,\n"
    "      Q2_K..Q8_K, IQ4_NL), or a llama2.c .bin\n"
    "      (with --tokenizer tokenizer.bin); --preflight only reports (architecture, parameters, tokenizer, output\n"
    "      size per quantisation, disk, memory, decode speed here; exit 2 when it cannot be converted);\n"
    "      --validate checks the result against the source in F32 (tokenizer, template, smoke generation,\n"
    "      top-1 agreement, KL) and saves OUT.report.json / OUT.report.md beside it (exit 3 on a failed verdict)\n"
    "      A GGUF keeps its quantised matrices' own types (Q8_0/Q4_0/Q4_K/Q5_K/Q6_K re-tiled bit for bit, and the\n"
    "      F16/F32 matrices a quantised file leaves unquantised stay so; an unquantised file's matrices get --quant,\n"
    "      default q4_0) unless a --*quant option asks to re-quantise everything. Q2_K/Q3_K/IQ4_XS become Q6_K and\n"
    "      Q4_1/Q5_0/Q5_1/IQ4_NL Q8_0 (listed): they have no fast kernels yet; --keep-every-type keeps their blocks\n"
    "      too (exact, but those matrices run on a slow path)\n"
    "  generate [MODEL.cflow] -p PROMPT -n N [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R]\n"
    "           [--seed S] [--threads T] [--ctx N] [--load auto|map|read|lanes] [--stats] [--trace-experts] [--telemetry-file F]\n"
    "           [--expert-fetch mapped|sync|staged] [--cache-mib M|fit] [--io-backend auto|uring|overlapped|threads]\n"
    "           [--kv-cache f16|f32]\n"
    "      sync: direct-I/O expert reads waited for at the routing layer; staged: the same reads\n"
    "      overlapped with the layers up to the injection layer; --cache-mib: a RAM cache of M MiB of\n"
    "      experts for sync/staged (fit: half the free memory less the model's resident bytes, at most\n"
    "      the expert bank); --io-backend: how sync/staged reads reach the OS (auto: io_uring on Linux,\n"
    "      overlapped I/O on Windows, reader threads where that cannot start); --kv-cache: f16 (the default\n"
    "      of generate, chat, serve and bench) halves the KV cache's memory, f32 keeps it exact (the default of\n"
    "      logits and perplexity)\n"
    "      prints the prompt and the generated text on stdout, statistics on stderr; without MODEL: the bundled\n"
    "      default model (default-model.cflow beside cflow or in ../share/cflow-studio)\n"
    "  perplexity MODEL.cflow -f TEXT [--ctx N] [--stride N] [--max-tokens N] [--threads N] [--load auto|map|read|lanes]\n"
    "             [--kv-cache f32|f16] [--json]\n"
    "      perplexity of a text file with the model's own tokenizer: documents split at <|endoftext|> (else at\n"
    "      blank lines), each BOS text EOS; windows of --ctx tokens (default: the model's context) advanced by\n"
    "      --stride (default --ctx); every token after the first scored once\n"
    "  bench MODEL.cflow [--threads N] [--prompt-tokens P] [--tokens N] [--warmup N] [--kv-cache f16|f32] [--json]\n"
    "      prefill speed over a P-token prompt (batched) and decode speed, from a file mapping and from\n"
    "      anonymous memory, vs the read bandwidth measured in the same run\n"
    "  bench experts MODEL.cflow [--threads N] [--tokens N] [--warmup N] [--rounds R] [--fetch-threads N]\n"
    "                [--cache-mib M|fit] [--io-backend auto|uring|overlapped|threads] [--json]\n"
    "      the expert-fetch arms mapped, sync and staged alternated: tok/s, compute, stall and I/O ms/token, and\n"
    "      staged's predicted speedup over sync, (C+IO)/max(C,IO), next to the measured one (JSON: one line per arm);\n"
    "      --cache-mib gives sync and staged a RAM expert cache each (fit: half of fit's size each, as both are\n"
    "      held at once): hit rate, expert bytes read and saved per token; --io-backend: how sync and staged\n"
    "      read (each line names the backend that ran, io_backend; the sync line its read bandwidth)\n"
    "  chat [MODEL.cflow] [--system TEXT] [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R]\n"
    "       [--seed S] [--threads T] [--ctx N] [--kv-cache f16|f32] [--expert-fetch mapped|sync|staged]\n"
    "       [--cache-mib M|fit] [--io-backend auto|uring|overlapped|threads] [--show-prompt]\n"
    "       [--template model|chatml|llama2|llama3|gemma|plain|FILE.jinja] [--context-policy stop|drop-oldest|sliding-window]\n"
    "       [--thinking on|off]\n"
    "      interactive chat through the model's chat template (stdin line by line); /reset, /system TEXT, /quit;\n"
    "      Ctrl-C stops a reply, Ctrl-D exits; --show-prompt prints each turn's rendered prompt on stderr;\n"
    "      --template picks another template, --context-policy what a conversation too long for the context\n"
    "      loses (stop: the message is refused; drop-oldest: the oldest turns; sliding-window: the oldest tokens);\n"
    "      --thinking sets enable_thinking for templates that read it (Qwen3, SmolLM3: off answers without reasoning)\n"
    "  serve [MODEL.cflow] [--host 127.0.0.1] [--port 8080] [--api-key KEY] [--threads T] [--ctx N] [--parallel N]\n"
    "        [--queue N] [--kv-cache f16|f32] [--template ...] [--context-policy ...] [--max-body-mib N]\n"
    "        [--expert-fetch mapped|sync|staged] [--cache-mib M|fit] [--io-backend auto|uring|overlapped|threads]\n"
    "        [--load auto|map|read|lanes]\n"
    "      a local OpenAI-compatible server: GET /v1/models, POST /v1/chat/completions, POST /v1/completions\n"
    "      (stream: true as server-sent events); --parallel sessions answer at once, --queue more wait;\n"
    "      binds 127.0.0.1 unless --host says otherwise; without MODEL: the bundled default model;\n"
    "      --cache-mib is the whole server's expert cache, shared out equally between the --parallel slots\n"
    "  logits [MODEL.cflow] -p PROMPT [--prompt-file F | --ids IDS] [--top N] [--json] [--out FILE.f32] [--isa NAME] [--threads T]\n"
    "      the next-token logits after the prompt (tokenised as tokenize --add-special does): the top N ids,\n"
    "      logits and probabilities; --out writes the whole vector as raw little-endian float32 (vocab_size\n"
    "      values, nothing else); --ids: the prompt as token ids instead; --isa scalar is the f32 reference path\n"
    "  scorecard [--json] [--quick] [--claim N] [--threads N] [--resources DIR]\n"
    "      the paper's eight claims measured on this machine: figures, method and verdict (proven, refuted,\n"
    "      inconclusive, not measurable here) per claim, then Table 4.1 from DIR/training/RESULTS.md (DIR: the\n"
    "      folder with default-model.cflow and models/; default: the bundled model's); synthetic models are\n"
    "      generated in a temporary folder; --json: one JSON array of the claim objects\n"
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
    "      prints the rendered chat prompt exactly (MODEL's template and BOS/EOS unless overridden)\n"
    "  synth [--preset dense-1b|moe-1b] [--d N] [--d-ff N] [--layers N] [--experts N] [--top-k N]\n"
    "        [--expert-hidden N] [--heads N] [--kv-heads N] [--vocab N] [--dense-delay N] [--expert-delay N]\n"
    "        [--combine-style N|NAME] [--quant q4_0|q8_0|q4_k_m] [--seed S] [--router-skew S] -o OUT.cflow [--gguf OUT.gguf]\n"
    "      a seeded random-weight llama model (weights generated as Q4_0/Q8_0 blocks) as .cflow and, with\n"
    "      --gguf, the same tensors as a GGUF that llama.cpp loads: benchmarks on bit-identical weights.\n"
    "      dense-1b: d 2048, 22 layers, ffn 5632, 32/4 heads, vocab 32000; moe-1b: d 2048, 16 layers,\n"
    "      8 experts of 1408, top-2; flags override a preset, without one --d, --layers, --heads and\n"
    "      --d-ff or --experts (with --top-k, --expert-hidden) are required; --router-skew S (0..64, default 0)\n"
    "      scales expert e's router row by 1 + S*(E-1-e)/(E-1), so low-numbered experts win top-k more often\n"
    "      (a skewed routing, as trained routers have, for expert-cache benchmarks)\n";

// Runs one subcommand and returns its exit code; nullopt when `command` names none.
std::optional<int> dispatch(const std::string& command, const std::vector<std::string>& args) {
    if (command == "convert") return cflow::cli::run_convert(args);
    if (command == "generate") return cflow::cli::run_generate(args);
    if (command == "logits") return cflow::cli::run_logits(args);
    if (command == "inspect") return cflow::cli::run_inspect(args);
    if (command == "bench") return cflow::cli::run_bench(args);
    if (command == "critical-path") return cflow::cli::run_critical_path(args);
    if (command == "chat") return cflow::cli::run_chat(args);
    if (command == "perplexity") return cflow::cli::run_perplexity(args);
    if (command == "tokenize") return cflow::cli::run_tokenize(args);
    if (command == "detokenize") return cflow::cli::run_detokenize(args);
    if (command == "template") return cflow::cli::run_template(args);
    if (command == "synth") return cflow::cli::run_synth(args);
    if (command == "serve") return cflow::cli::run_serve(args);
    if (command == "scorecard") return cflow::cli::run_scorecard(args);
    return std::nullopt;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (std::strcmp(argv[1], "--version") == 0) {
        if (argc > 2) {
            std::fprintf(stderr, "cflow: --version takes no arguments\n");
            return 2;
        }
        std::printf("cflow %s\n", CFLOW_VERSION);
        return 0;
    }
    const std::string command = argv[1];
    std::optional<int> code;
    // The libraries report their own failures as Result errors; what still escapes here is an
    // allocation in the command's own code (argument vectors, output strings) or a bug. Either
    // way the user gets the one-line "cflow <command>: ..." message and a failing exit status
    // instead of std::terminate's abort and core dump.
    try {
        code = dispatch(command, std::vector<std::string>(argv + 2, argv + argc));
    } catch (const std::bad_alloc&) {
        return cflow::cli::fail(command, "out of memory");
    } catch (const std::exception& e) {
        return cflow::cli::fail(command, std::string("internal error: ") + e.what());
    } catch (...) {  // not derived from std::exception: still one line, not std::terminate
        return cflow::cli::fail(command, "internal error: an unknown exception");
    }
    if (code) return *code;
    std::fprintf(stderr, "cflow: unknown command '%s' (try cflow --help)\n", command.c_str());
    return 2;
}
