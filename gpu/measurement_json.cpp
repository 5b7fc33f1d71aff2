#include "gpu/measurement_json.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace kvscope::gpu {

namespace {

using nlohmann::json;

json pointToJson(const Measurement& m) {
    const DecodeShape& s = m.shape;
    const bool mla = s.kind == Attention::Mla;
    json p;
    p["variant"] = m.variant;
    p["attention"] = mla ? "mla" : "gqa";
    p["q_heads"] = s.qHeads;
    p["kv_heads"] = mla ? 1 : s.kvHeads;
    p["head_dim"] = mla ? s.kvLoraRank + s.ropeDim : s.headDim;
    if (mla) {
        p["kv_lora_rank"] = s.kvLoraRank;
        p["rope_dim"] = s.ropeDim;
    }
    p["context"] = s.context;
    p["batch"] = s.batch;
    p["kv_dtype"] = std::string(dtypeName(s.dtype));
    p["median_s"] = m.medianSeconds;
    p["bytes"] = m.bytes;
    p["flops"] = m.flops;
    p["bytes_per_s"] = m.bytesPerSecond;
    p["flop_per_s"] = m.flopPerSecond;
    p["intensity_flop_per_byte"] = m.intensityFlopPerByte;
    p["max_rel_error"] = m.maxRelError;
    p["kernel"] = m.kernel;
    p["splits"] = m.splits;
    p["repeats"] = m.repeats;
    return p;
}

/// Field readers: each failure becomes "path: rule" in *error.
struct Reader {
    std::string* error;
    bool failed = false;

    bool fail(const std::string& path, const std::string& rule) {
        if (!failed && error)
            *error = path + ": " + rule;
        failed = true;
        return false;
    }
    const json* field(const json& obj, const std::string& path, const char* key) {
        auto it = obj.find(key);
        if (it == obj.end()) {
            fail(path + key, "missing");
            return nullptr;
        }
        return &*it;
    }
    bool number(const json& obj, const std::string& path, const char* key, double* out,
                bool positive) {
        const json* v = field(obj, path, key);
        if (!v)
            return false;
        if (!v->is_number())
            return fail(path + key, "must be a number");
        const double x = v->get<double>();
        if (!std::isfinite(x) || x < 0 || (positive && x <= 0))
            return fail(path + key,
                        positive ? "must be a positive number" : "must be a non-negative number");
        *out = x;
        return true;
    }
    bool integer(const json& obj, const std::string& path, const char* key, std::int64_t* out) {
        const json* v = field(obj, path, key);
        if (!v)
            return false;
        if (!v->is_number_integer() || v->get<std::int64_t>() < 1)
            return fail(path + key, "must be a positive integer");
        *out = v->get<std::int64_t>();
        return true;
    }
    bool string(const json& obj, const std::string& path, const char* key, std::string* out) {
        const json* v = field(obj, path, key);
        if (!v)
            return false;
        if (!v->is_string())
            return fail(path + key, "must be a string");
        *out = v->get<std::string>();
        return true;
    }
};

} // namespace

std::string toJson(const MeasurementSet& set) {
    json j;
    j["backend"] = set.backend;
    j["device"] = set.device;
    if (!set.model.empty())
        j["model"] = set.model;
    json peaks = json::object();
    for (const auto& [k, v] : set.ceilings.peakFlopPerSecond)
        peaks[k] = v;
    j["ceilings"] = {{"read_bytes_per_s", set.ceilings.readBytesPerSecond},
                     {"peak_flop_per_s", peaks}};
    json points = json::array();
    for (const Measurement& m : set.points)
        if (m.ok)
            points.push_back(pointToJson(m));
    j["points"] = points;
    return j.dump(2) + "\n";
}

bool fromJson(const std::string& text, MeasurementSet* out, std::string* error) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::parse_error& e) {
        if (error) {
            std::string what = e.what();
            for (char& c : what)
                if (c == '\n')
                    c = ' ';
            *error = "not valid JSON: " + what;
        }
        return false;
    }
    Reader r{error};
    if (!j.is_object())
        return r.fail("(top level)", "must be an object");
    MeasurementSet set;
    if (!r.string(j, "", "backend", &set.backend) || !r.string(j, "", "device", &set.device))
        return false;
    if (auto it = j.find("model"); it != j.end()) {
        if (!it->is_string())
            return r.fail("model", "must be a string");
        set.model = it->get<std::string>();
    }
    const json* ceil = r.field(j, "", "ceilings");
    if (!ceil)
        return false;
    if (!ceil->is_object())
        return r.fail("ceilings", "must be an object");
    if (!r.number(*ceil, "ceilings.", "read_bytes_per_s", &set.ceilings.readBytesPerSecond, true))
        return false;
    const json* peaks = r.field(*ceil, "ceilings.", "peak_flop_per_s");
    if (!peaks)
        return false;
    if (!peaks->is_object())
        return r.fail("ceilings.peak_flop_per_s", "must be an object of dtype: FLOP/s");
    for (auto it = peaks->begin(); it != peaks->end(); ++it) {
        if (!parseDtype(it.key()))
            return r.fail("ceilings.peak_flop_per_s." + it.key(), "unknown dtype");
        double v = 0;
        if (!r.number(*peaks, "ceilings.peak_flop_per_s.", it.key().c_str(), &v, true))
            return false;
        set.ceilings.peakFlopPerSecond[std::string(dtypeName(*parseDtype(it.key())))] = v;
    }
    set.ceilings.ok = true;
    const json* points = r.field(j, "", "points");
    if (!points)
        return false;
    if (!points->is_array())
        return r.fail("points", "must be an array");
    for (std::size_t i = 0; i < points->size(); ++i) {
        const json& p = (*points)[i];
        const std::string path = "points[" + std::to_string(i) + "].";
        if (!p.is_object())
            return r.fail("points[" + std::to_string(i) + "]", "must be an object");
        Measurement m;
        DecodeShape& s = m.shape;
        std::string attention, dtype;
        std::int64_t headDim = 0;
        if (!r.string(p, path, "variant", &m.variant) ||
            !r.string(p, path, "attention", &attention))
            return false;
        if (attention == "mla")
            s.kind = Attention::Mla;
        else if (attention == "gqa")
            s.kind = Attention::Gqa;
        else
            return r.fail(path + "attention",
                          "must be \"gqa\" or \"mla\", got \"" + attention + "\"");
        if (!r.integer(p, path, "q_heads", &s.qHeads) ||
            !r.integer(p, path, "kv_heads", &s.kvHeads) ||
            !r.integer(p, path, "head_dim", &headDim) ||
            !r.integer(p, path, "context", &s.context) || !r.integer(p, path, "batch", &s.batch) ||
            !r.string(p, path, "kv_dtype", &dtype))
            return false;
        auto dt = parseDtype(dtype);
        if (!dt)
            return r.fail(path + "kv_dtype", "unknown dtype \"" + dtype + "\"");
        s.dtype = *dt;
        if (s.kind == Attention::Mla) {
            s.kvLoraRank = 512;
            s.ropeDim = 64;
            if (p.contains("kv_lora_rank") && !r.integer(p, path, "kv_lora_rank", &s.kvLoraRank))
                return false;
            if (p.contains("rope_dim") && !r.integer(p, path, "rope_dim", &s.ropeDim))
                return false;
            if (headDim != s.kvLoraRank + s.ropeDim)
                return r.fail(path + "head_dim", "must equal kv_lora_rank + rope_dim for mla");
            s.headDim = headDim;
        } else {
            s.headDim = headDim;
            if (s.qHeads % s.kvHeads != 0)
                return r.fail(path + "kv_heads", "must divide q_heads");
        }
        if (!r.number(p, path, "median_s", &m.medianSeconds, true) ||
            !r.number(p, path, "bytes", &m.bytes, true) ||
            !r.number(p, path, "flops", &m.flops, true) ||
            !r.number(p, path, "bytes_per_s", &m.bytesPerSecond, true) ||
            !r.number(p, path, "flop_per_s", &m.flopPerSecond, true) ||
            !r.number(p, path, "intensity_flop_per_byte", &m.intensityFlopPerByte, true) ||
            !r.number(p, path, "max_rel_error", &m.maxRelError, false))
            return false;
        if (auto it = p.find("kernel"); it != p.end() && it->is_string())
            m.kernel = it->get<std::string>();
        if (auto it = p.find("splits"); it != p.end() && it->is_number_integer())
            m.splits = it->get<int>();
        if (auto it = p.find("repeats"); it != p.end() && it->is_number_integer())
            m.repeats = it->get<int>();
        m.errorBound = errorBoundFor(s.dtype);
        m.ok = true;
        set.points.push_back(std::move(m));
    }
    *out = std::move(set);
    return true;
}

bool saveMeasurementJson(const MeasurementSet& set, const std::string& path, std::string* error) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) {
        if (error)
            *error = path + ": cannot open for writing";
        return false;
    }
    f << toJson(set);
    f.close();
    if (!f) {
        if (error)
            *error = path + ": write failed";
        return false;
    }
    return true;
}

bool loadMeasurementJson(const std::string& path, MeasurementSet* out, std::string* error) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        if (error)
            *error = path + ": cannot open for reading";
        return false;
    }
    std::ostringstream ss;
    ss << f.rdbuf();
    std::string why;
    if (!fromJson(ss.str(), out, &why)) {
        if (error)
            *error = path + ": " + why;
        return false;
    }
    return true;
}

} // namespace kvscope::gpu
