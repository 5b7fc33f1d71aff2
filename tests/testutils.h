// What the Qt tests share: where the fixtures are, and loaders that stop the test at once when
// a bundled preset or a real fixture does not load (the assertions after them then read the
// values without ok() checks). Core-only: a test linking just kvscope_core can include it.
//
// The build defines (tests/CMakeLists.txt, kvscope_add_qtest):
//   KVSCOPE_FIXTURES_ROOT      ../shared/fixtures, or tests/fixtures in a checkout without it
//   KVSCOPE_FIXTURES_DIR       its configs/ folder;  KVSCOPE_FIXTURES_2026_DIR  its configs-2026/
//   KVSCOPE_SOURCE_DIR         the repository (tests/data holds the logs and their configs)
#pragma once

#include "core/law/law.h"
#include "core/model/model.h"
#include "core/model/presets.h"

#include <QString>
#include <QtGlobal>
#include <string>
#include <vector>

namespace kvscope::test {

/// A fixture under the fixtures root: "configs-2026/x.json", "configs-logged/x.json",
/// "configs/x.json".
inline std::string fixture(const QString& rel) {
    return (QStringLiteral(KVSCOPE_FIXTURES_ROOT "/") + rel).toStdString();
}

/// tests/data: the engine logs, their logged configs, stories.
inline QString testDataDir() {
    return QStringLiteral(KVSCOPE_SOURCE_DIR "/tests/data");
}

/// The folders an engine log's model config is looked up in: the configs the logs were
/// recorded with, then the 2026 configs kept in the repository.
inline std::vector<std::string> logConfigDirs() {
    return {(testDataDir() + QStringLiteral("/configs-logged")).toStdString(),
            KVSCOPE_SOURCE_DIR "/tests/fixtures/configs-2026"};
}

/// A bundled model preset (or any reference loadModel takes); fatal when it does not load.
inline ModelSpec model(const char* id) {
    auto m = loadModel(id);
    if (!m.ok())
        qFatal("preset %s: %s", id, m.error().message().c_str());
    return m.value();
}

/// A bundled GPU preset; fatal when it does not load.
inline GpuSpec gpu(const char* id) {
    auto g = loadGpu(id);
    if (!g.ok())
        qFatal("gpu %s: %s", id, g.error().message().c_str());
    return g.value();
}

/// evaluate() on a deployment the test knows is valid; fatal otherwise.
inline Report eval(const ModelSpec& m, const GpuSpec& g, const Deployment& d) {
    auto r = evaluate(m, g, d);
    if (!r.ok())
        qFatal("evaluate: %s", r.error().message().c_str());
    return r.value();
}

/// A model as the report tests name it: a preset id, or "2026:<file>" for a config in the 2026
/// fixtures; fatal when it does not load.
inline ModelSpec modelRef(const QString& ref) {
    const std::string path =
        ref.startsWith(QLatin1String("2026:"))
            ? (QStringLiteral(KVSCOPE_FIXTURES_2026_DIR "/") + ref.mid(5)).toStdString()
            : ref.toStdString();
    auto m = ref.startsWith(QLatin1String("2026:")) ? loadModelConfigFile(path) : loadModel(path);
    if (!m.ok())
        qFatal("%s: %s", qPrintable(ref), m.error().message().c_str());
    return m.value();
}

/// evaluate() at `tp` ranks and `context` tokens, every other knob at its default; fatal when
/// refused.
inline Report evalAt(const ModelSpec& m, const GpuSpec& g, std::int64_t tp,
                     std::int64_t context = 8192) {
    Deployment d;
    d.tp = tp;
    d.context = context;
    return eval(m, g, d);
}

/// Strict UTF-8 check (no overlongs, no surrogates), so an error line is printable anywhere.
inline bool validUtf8(const std::string& s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto b = static_cast<unsigned char>(s[i]);
        int len = b < 0x80                   ? 1
                  : (b >= 0xC2 && b <= 0xDF) ? 2
                  : (b >= 0xE0 && b <= 0xEF) ? 3
                  : (b >= 0xF0 && b <= 0xF4) ? 4
                                             : 0;
        if (len == 0 || i + static_cast<std::size_t>(len) > s.size())
            return false;
        unsigned cp = len == 1 ? b : b & (0x7F >> len);
        for (int k = 1; k < len; ++k) {
            const auto c = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
            if ((c & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (c & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += static_cast<std::size_t>(len);
    }
    return true;
}

/// Llama-3-8B (L 32, d 4096, h_kv 8, d_h 128) as an fp8 checkpoint in 128 × 128 blocks with one
/// fp32 scale each (the quantization_config of Qwen3-8B-FP8 and DeepSeek-V3).
inline Result<ModelSpec> llama3_8bFp8Blocks() {
    return parseModelConfig(R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
        "max_position_embeddings": 8192, "torch_dtype": "bfloat16",
        "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic",
                                "weight_block_size": [128, 128]}})",
                            "llama-3-8b-fp8");
}

} // namespace kvscope::test
