// Which model a logged name means: a bundled preset, a config in a folder of
// `org__Name.json` copies (the fixtures' layout), or the Hugging Face cache.
#include "core/engines/explain_log.h"
#include "core/model/presets.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace kvscope {

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

/// Lower case, every run of other characters one '-': "Llama-3.1_405B" → "llama-3-1-405b".
std::string normalizeName(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (std::isalnum(static_cast<unsigned char>(c)))
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        else if (!out.empty() && out.back() != '-')
            out += '-';
    }
    while (!out.empty() && out.back() == '-')
        out.pop_back();
    return out;
}

/// ".../models--org--Name/snapshots/<rev>" → "org/Name"; trailing slashes dropped.
std::string repoOf(const std::string& logged) {
    std::string repo = logged;
    while (!repo.empty() && repo.back() == '/')
        repo.pop_back();
    if (auto p = repo.find("models--"); p != std::string::npos) {
        std::string rest = repo.substr(p + 8);
        rest = rest.substr(0, rest.find('/'));
        if (auto sep = rest.find("--"); sep != std::string::npos)
            rest = rest.substr(0, sep) + "/" + rest.substr(sep + 2);
        repo = rest;
    }
    return repo;
}

/// The model's own name with chat/instruct and quantization suffixes dropped, normalised:
/// "RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a8" → "qwen2-5-7b".
std::string baseKey(const std::string& repo) {
    std::string name =
        lower(repo.substr(repo.rfind('/') == std::string::npos ? 0 : repo.rfind('/') + 1));
    static const char* suffixes[] = {"-instruct",
                                     "-chat",
                                     "-hf",
                                     "-base",
                                     "-it",
                                     "-fp8",
                                     "-awq",
                                     "-gptq",
                                     "-int4",
                                     "-int8",
                                     "-w8a8",
                                     "-dynamic",
                                     "-quantized.w8a8",
                                     "-quantized.w4a16",
                                     "-quantized.w4a4"};
    for (bool again = true; again;) {
        again = false;
        for (const char* s : suffixes) {
            const std::string suf = s;
            if (name.size() > suf.size() &&
                name.compare(name.size() - suf.size(), suf.size(), suf) == 0) {
                name.resize(name.size() - suf.size());
                again = true;
            }
        }
    }
    if (name.rfind("meta-", 0) == 0)
        name = name.substr(5);
    return normalizeName(name);
}

/// A config in `dir` named like the repo ("org__Name.json"), or with the same base name.
std::string findInConfigDir(const std::string& dir, const std::string& repo) {
    namespace fs = std::filesystem;
    std::error_code ec;
    std::string exact = repo;
    std::replace(exact.begin(), exact.end(), '/', '_');
    std::string byBase;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string file = entry.path().filename().string();
        if (entry.path().extension() != ".json")
            continue;
        std::string stem = entry.path().stem().string();
        if (auto sep = stem.find("__"); sep != std::string::npos) {
            if (lower(stem.substr(0, sep) + "_" + stem.substr(sep + 2)) == lower(exact))
                return entry.path().string();
            stem = stem.substr(sep + 2);
        }
        if (byBase.empty() && baseKey(stem) == baseKey(repo))
            byBase = entry.path().string();
    }
    return byBase;
}

/// The "8b" / "70b" size token of a normalised name, if any.
std::string sizeToken(const std::string& key) {
    std::string best;
    std::size_t start = 0;
    while (start <= key.size()) {
        std::size_t end = key.find('-', start);
        if (end == std::string::npos)
            end = key.size();
        const std::string tok = key.substr(start, end - start);
        if (tok.size() >= 2 && tok.back() == 'b' &&
            std::all_of(tok.begin(), tok.end() - 1, [](char c) { return std::isdigit(c); }))
            best = tok;
        start = end + 1;
    }
    return best;
}

/// The preset closest to a logged name: a shared normalised prefix of 4+ characters, the same
/// parameter-size token ("8b") weighing more than a longer prefix.
std::string closestPreset(const std::string& key) {
    std::string best;
    std::size_t bestScore = 0;
    const std::string size = sizeToken(key);
    for (const auto& p : modelPresets()) {
        const std::string cand = normalizeName(p.id);
        std::size_t n = 0;
        while (n < cand.size() && n < key.size() && cand[n] == key[n])
            ++n;
        if (n < 4)
            continue;
        const std::size_t score = n + (!size.empty() && sizeToken(cand) == size ? 100 : 0);
        if (score > bestScore) {
            bestScore = score;
            best = p.id;
        }
    }
    return best;
}

} // namespace

Result<std::string> matchModelName(const std::string& logged,
                                   const std::vector<std::string>& configDirs) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!logged.empty() && (fs::is_regular_file(fs::path(logged) / "config.json", ec) ||
                            (fs::is_regular_file(logged, ec) && logged.size() > 5 &&
                             logged.compare(logged.size() - 5, 5, ".json") == 0)))
        return logged;
    const std::string repo = repoOf(logged);
    const std::string key = baseKey(repo);
    std::string best;
    std::size_t bestLen = 0;
    for (const auto& p : modelPresets()) {
        for (const std::string& cand : {normalizeName(p.id), normalizeName(p.title)}) {
            if (cand.empty())
                continue;
            if (cand == key)
                return p.id;
            // "deepseek-v3-0324" is a revision of "deepseek-v3"; "llama-2-70b" is not "llama-2-7b".
            if (key.size() > cand.size() && key.compare(0, cand.size(), cand) == 0 &&
                key[cand.size()] == '-' && cand.size() > bestLen) {
                best = p.id;
                bestLen = cand.size();
            }
        }
    }
    for (const std::string& dir : configDirs)
        if (std::string path = findInConfigDir(dir, repo); !path.empty())
            return path;
    if (!best.empty())
        return best;
    for (const auto& hf : findHuggingFaceConfigs())
        if (lower(hf.repoId) == lower(repo))
            return hf.path;
    const std::string near = closestPreset(key);
    return makeError("model",
                     "'" + logged +
                         "' matches no preset, no config in --configs and nothing in the "
                         "Hugging Face cache; pass --model " +
                         (near.empty() ? std::string("<preset id>") : near + " (closest preset)") +
                         " or --model <path to its config.json>");
}

Result<std::string> matchModelName(const std::string& logged) {
    return matchModelName(logged, {});
}

} // namespace kvscope
