// cflow_bench_tokenizer: encode throughput of every tokenizer family on 1 MB of English prose and
// 1 MB of mixed scripts. Usage: cflow_bench_tokenizer [shared-assets-dir]   (default: ../shared)
#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cflow/engine/tokenizer/tokenizer.h"
#include "cflow/formats/gguf.h"

namespace {

constexpr size_t kTextBytes = size_t{1} << 20;

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// source repeated (whole copies, then a prefix cut at a character boundary) to exactly about `bytes`.
std::string repeat_to(const std::string& source, size_t bytes) {
    std::string out;
    if (source.empty()) return out;
    out.reserve(bytes + 4);
    while (out.size() < bytes) out += source;
    size_t cut = bytes;
    while (cut < out.size() && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) ++cut;
    out.resize(cut);
    return out;
}

// Mixed scripts: llama.cpp's tokenizer test strings (Cyrillic, Khmer, emoji, CJK, code) plus a few sentences.
std::string mixed_scripts(const std::filesystem::path& shared) {
    static const std::string kSeparator = "\n__ggml_vocab_test__\n";
    const std::string inputs = read_file(shared / "assets/tokenizer-vocab-gguf/llama.cpp/ggml-vocab-gpt-2.gguf.inp");
    std::string text;
    size_t start = 0;
    for (size_t at = inputs.find(kSeparator); at != std::string::npos; at = inputs.find(kSeparator, start)) {
        text.append(inputs, start, at - start);
        text.push_back('\n');
        start = at + kSeparator.size();
    }
    text += "Привет, мир! Γειά σου Κόσμε. こんにちは世界。你好，世界！안녕하세요 세계. مرحبا بالعالم. שלום עולם. "
            "नमस्ते दुनिया। Xin chào thế giới. 🌍🚀✨ int main() { return 0; }\n";
    return text;
}

struct Vocab {
    const char* label;
    const char* relative_path;
};

} // namespace

int main(int argc, char** argv) {
    const std::filesystem::path shared = argc > 1 ? std::filesystem::path(argv[1]) : std::filesystem::path(CFLOW_SHARED_DIR);
    const std::string english_source = read_file(shared / "assets/corpora/wikitext-2-raw-test/wiki.test.raw");
    if (english_source.empty()) {
        std::fprintf(stderr, "cannot read the English corpus under %s (pass the shared assets folder)\n", shared.string().c_str());
        return 1;
    }
    const std::string english = repeat_to(english_source, kTextBytes);
    const std::string mixed = repeat_to(mixed_scripts(shared), kTextBytes);

    const std::vector<Vocab> vocabs = {
        {"stories260K (SPM)", "assets/models/llama2c-stories260K/stories260K.gguf"},
        {"llama-spm (SPM)", "assets/tokenizer-vocab-gguf/llama.cpp/ggml-vocab-llama-spm.gguf"},
        {"phi-3 (SPM)", "assets/tokenizer-vocab-gguf/llama.cpp/ggml-vocab-phi-3.gguf"},
        {"gpt-2 (BPE)", "assets/tokenizer-vocab-gguf/llama.cpp/ggml-vocab-gpt-2.gguf"},
        {"falcon (BPE)", "assets/tokenizer-vocab-gguf/llama.cpp/ggml-vocab-falcon.gguf"},
        {"starcoder (BPE)", "assets/tokenizer-vocab-gguf/llama.cpp/ggml-vocab-starcoder.gguf"},
        {"deepseek-coder (BPE)", "assets/tokenizer-vocab-gguf/llama.cpp/ggml-vocab-deepseek-coder.gguf"},
        {"deepseek-llm (BPE)", "assets/tokenizer-vocab-gguf/llama.cpp/ggml-vocab-deepseek-llm.gguf"},
        {"bert-bge (WordPiece)", "assets/tokenizer-vocab-gguf/llama.cpp/ggml-vocab-bert-bge.gguf"},
    };

    // MB/s by wall clock and by process CPU time (the CPU figure is the one to compare on a busy machine).
    std::printf("%-22s %10s %10s %10s %10s %10s %10s\n", "tokenizer", "en MB/s", "en cpu", "en tokens", "mix MB/s",
                "mix cpu", "mix tokens");
    for (const Vocab& vocab : vocabs) {
        auto gguf = cflow::read_gguf((shared / vocab.relative_path).string());
        if (!gguf) {
            std::printf("%-22s skipped: %s\n", vocab.label, gguf.error().c_str());
            continue;
        }
        auto tokenizer = cflow::Tokenizer::from_metadata(gguf->metadata);
        if (!tokenizer) {
            std::printf("%-22s skipped: %s\n", vocab.label, tokenizer.error().c_str());
            continue;
        }
        double wall_rates[2] = {0, 0};
        double cpu_rates[2] = {0, 0};
        size_t counts[2] = {0, 0};
        const std::string* texts[2] = {&english, &mixed};
        for (int t = 0; t < 2; ++t) {
            const double megabytes = static_cast<double>(texts[t]->size()) / (1024.0 * 1024.0);
            const std::clock_t cpu_start = std::clock();
            const auto start = std::chrono::steady_clock::now();
            const auto ids = (*tokenizer)->encode(*texts[t], false);
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            const double cpu_seconds = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
            counts[t] = ids.size();
            wall_rates[t] = seconds > 0 ? megabytes / seconds : 0;
            cpu_rates[t] = cpu_seconds > 0 ? megabytes / cpu_seconds : 0;
        }
        std::printf("%-22s %10.2f %10.2f %10zu %10.2f %10.2f %10zu\n", vocab.label, wall_rates[0], cpu_rates[0], counts[0],
                    wall_rates[1], cpu_rates[1], counts[1]);
    }
    return 0;
}
