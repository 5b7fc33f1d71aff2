#include "gpu/measurement_json.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

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
    p["min_s"] = m.minSeconds;
    p["max_s"] = m.maxSeconds;
    p["attempts"] = m.attempts;
    p["unstable"] = m.unstable;
    p["input_sets"] = m.inputSets;
    p["input_set_bytes"] = m.inputSetBytes;
    if (m.readCeiling() > 0) {
        p["read_ceiling_before_bytes_per_s"] = m.readCeilingBefore;
        p["read_ceiling_after_bytes_per_s"] = m.readCeilingAfter;
        p["peak_before_flop_per_s"] = m.peakBefore;
        p["peak_after_flop_per_s"] = m.peakAfter;
        p["read_ceiling_kernel"] = m.readCeilingKernel;
    }
    if (m.readCeilingPaired > 0) {
        p["read_ceiling_paired_bytes_per_s"] = m.readCeilingPaired;
        p["paired_pieces"] = m.pairedPieces;
    }
    return p;
}

/// The point against its own ceilings (measured around it) when it has them, else the set's.
json placementToJson(const Measurement& m, const Ceilings& c) {
    const double read = m.readCeiling() > 0 ? m.readCeiling() : c.readBytesPerSecond;
    const double peak = m.peakCeiling() > 0 ? m.peakCeiling() : c.peakFor(m.shape.dtype);
    const RoofPlacement r = placeOnRoof(m, read, peak); // as placePoint() in measure_table
    return {{"read_ceiling_bytes_per_s", read},   {"peak_flop_per_s", peak},
            {"roof_flop_per_s", r.roof},          {"fraction_of_read", r.fractionRead},
            {"fraction_of_roof", r.fractionRoof}, {"bound", r.computeBound ? "compute" : "memory"},
            {"above_ceiling", r.aboveCeiling}};
}

json familyToJson(const std::vector<Ceilings::FamilyMember>& family, const char* unit) {
    json out = json::array();
    for (const auto& f : family)
        out.push_back({{"kernel", f.kernel}, {unit, f.value}});
    return out;
}

json ceilingsToJson(const Ceilings& c) {
    json peaks = json::object(), winners = json::object();
    for (const auto& [k, v] : c.peakFlopPerSecond)
        peaks[k] = v;
    for (const auto& [k, v] : c.peakKernelFor)
        winners[k] = v;
    json j = {{"read_bytes_per_s", c.readBytesPerSecond}, {"peak_flop_per_s", peaks}};
    if (!c.readKernel.empty())
        j["read_kernel"] = c.readKernel;
    if (!c.peakKernel.empty())
        j["peak_kernel"] = c.peakKernel;
    if (!winners.empty())
        j["peak_kernel_for"] = winners;
    if (c.l2ReadBytesPerSecond > 0)
        j["l2_read_bytes_per_s"] = c.l2ReadBytesPerSecond;
    if (c.l3ReadBytesPerSecond > 0)
        j["l3_read_bytes_per_s"] = c.l3ReadBytesPerSecond;
    if (!c.readFamily.empty())
        j["read_family"] = familyToJson(c.readFamily, "bytes_per_s");
    if (!c.peakFamily.empty())
        j["peak_family"] = familyToJson(c.peakFamily, "flop_per_s");
    return j;
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

/// An optional non-negative number: absent leaves *out, present must be valid.
bool optionalNumber(const json& obj, const std::string& path, const char* key, Reader& r,
                    double* out) {
    return !obj.contains(key) || r.number(obj, path, key, out, false);
}

std::string optionalString(const json& obj, const char* key) {
    auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// The fields added with the ceiling families and the per-point ceilings: optional, so older
/// files still load.
bool readCeilingExtras(const json& ceil, Reader& r, Ceilings* c) {
    if (!optionalNumber(ceil, "ceilings.", "l2_read_bytes_per_s", r, &c->l2ReadBytesPerSecond) ||
        !optionalNumber(ceil, "ceilings.", "l3_read_bytes_per_s", r, &c->l3ReadBytesPerSecond))
        return false;
    c->readKernel = optionalString(ceil, "read_kernel");
    c->peakKernel = optionalString(ceil, "peak_kernel");
    if (auto it = ceil.find("peak_kernel_for"); it != ceil.end() && it->is_object())
        for (auto w = it->begin(); w != it->end(); ++w)
            if (w->is_string())
                c->peakKernelFor[w.key()] = w->get<std::string>();
    for (auto [key, unit, family] : {std::tuple{"read_family", "bytes_per_s", &c->readFamily},
                                     std::tuple{"peak_family", "flop_per_s", &c->peakFamily}}) {
        auto it = ceil.find(key);
        if (it == ceil.end())
            continue;
        if (!it->is_array())
            return r.fail(std::string("ceilings.") + key, "must be an array");
        for (std::size_t i = 0; i < it->size(); ++i) {
            const std::string path =
                std::string("ceilings.") + key + "[" + std::to_string(i) + "].";
            Ceilings::FamilyMember f;
            if (!(*it)[i].is_object() || !r.string((*it)[i], path, "kernel", &f.kernel) ||
                !r.number((*it)[i], path, unit, &f.value, false))
                return r.fail(path + unit,
                              "must be an object with kernel and " + std::string(unit));
            family->push_back(f);
        }
    }
    return true;
}

bool readPointExtras(const json& p, const std::string& path, Reader& r, Measurement* m) {
    if (!optionalNumber(p, path, "min_s", r, &m->minSeconds) ||
        !optionalNumber(p, path, "max_s", r, &m->maxSeconds) ||
        !optionalNumber(p, path, "input_set_bytes", r, &m->inputSetBytes) ||
        !optionalNumber(p, path, "read_ceiling_before_bytes_per_s", r, &m->readCeilingBefore) ||
        !optionalNumber(p, path, "read_ceiling_after_bytes_per_s", r, &m->readCeilingAfter) ||
        !optionalNumber(p, path, "peak_before_flop_per_s", r, &m->peakBefore) ||
        !optionalNumber(p, path, "peak_after_flop_per_s", r, &m->peakAfter) ||
        !optionalNumber(p, path, "read_ceiling_paired_bytes_per_s", r, &m->readCeilingPaired))
        return false;
    if (auto it = p.find("attempts"); it != p.end() && it->is_number_integer())
        m->attempts = it->get<int>();
    if (auto it = p.find("paired_pieces"); it != p.end() && it->is_number_integer())
        m->pairedPieces = it->get<int>();
    if (auto it = p.find("input_sets"); it != p.end() && it->is_number_integer())
        m->inputSets = it->get<int>();
    if (auto it = p.find("unstable"); it != p.end() && it->is_boolean())
        m->unstable = it->get<bool>();
    m->readCeilingKernel = optionalString(p, "read_ceiling_kernel");
    return true;
}

/// One element of "points"; path is "points[i].".
bool readPoint(const json& p, const std::string& path, Reader& r, Measurement* m) {
    DecodeShape& s = m->shape;
    std::string attention, dtype;
    std::int64_t headDim = 0;
    if (!r.string(p, path, "variant", &m->variant) || !r.string(p, path, "attention", &attention))
        return false;
    if (attention == "mla")
        s.kind = Attention::Mla;
    else if (attention == "gqa")
        s.kind = Attention::Gqa;
    else
        return r.fail(path + "attention", "must be \"gqa\" or \"mla\", got \"" + attention + "\"");
    if (!r.integer(p, path, "q_heads", &s.qHeads) || !r.integer(p, path, "kv_heads", &s.kvHeads) ||
        !r.integer(p, path, "head_dim", &headDim) || !r.integer(p, path, "context", &s.context) ||
        !r.integer(p, path, "batch", &s.batch) || !r.string(p, path, "kv_dtype", &dtype))
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
    if (!r.number(p, path, "median_s", &m->medianSeconds, true) ||
        !r.number(p, path, "bytes", &m->bytes, true) ||
        !r.number(p, path, "flops", &m->flops, true) ||
        !r.number(p, path, "bytes_per_s", &m->bytesPerSecond, true) ||
        !r.number(p, path, "flop_per_s", &m->flopPerSecond, true) ||
        !r.number(p, path, "intensity_flop_per_byte", &m->intensityFlopPerByte, true) ||
        !r.number(p, path, "max_rel_error", &m->maxRelError, false))
        return false;
    if (auto it = p.find("kernel"); it != p.end() && it->is_string())
        m->kernel = it->get<std::string>();
    if (auto it = p.find("splits"); it != p.end() && it->is_number_integer())
        m->splits = it->get<int>();
    if (auto it = p.find("repeats"); it != p.end() && it->is_number_integer())
        m->repeats = it->get<int>();
    if (!readPointExtras(p, path, r, m))
        return false;
    m->errorBound = errorBoundFor(s.dtype);
    m->ok = true;
    return true;
}

json stepToJson(const StepMeasurement& m) {
    const StepShape& s = m.shape;
    json p;
    p["layers"] = s.layers;
    p["model_layers"] = s.modelLayers;
    p["hidden"] = s.hidden;
    p["q_heads"] = s.qHeads;
    p["kv_heads"] = s.kvHeads;
    p["head_dim"] = s.headDim;
    p["intermediate"] = s.intermediate;
    p["gated"] = s.gated;
    p["batch"] = s.batch;
    p["context"] = s.context;
    p["kv_dtype"] = std::string(dtypeName(s.kvDtype));
    p["kernel"] = m.kernel;
    p["min_s"] = m.minSeconds;
    p["median_s"] = m.medianSeconds;
    p["max_s"] = m.maxSeconds;
    p["repeats"] = m.repeats;
    p["weight_bytes"] = m.counts.weightBytes;
    p["kv_bytes"] = m.counts.kvBytes;
    p["activation_bytes"] = m.counts.activationBytes;
    p["bytes"] = m.counts.bytes;
    p["gemm_flops"] = m.counts.gemmFlops;
    p["attention_flops"] = m.counts.attentionFlops;
    p["flops"] = m.counts.flops;
    p["read_ceiling_bytes_per_s"] = m.readCeiling;
    p["peak_flop_per_s"] = m.peak;
    p["roof_s"] = m.roofSeconds;
    p["fraction_of_roof"] = m.fractionOfRoof;
    p["bound"] = m.computeBound ? "compute" : "memory";
    p["above_roof"] = m.aboveRoof;
    p["weight_sets"] = m.weightSets;
    p["resident_bytes"] = m.residentBytes;
    p["scaled_s"] = m.scaledSeconds();
    return p;
}

/// One element of "steps"; path is "steps[i].".
bool readStep(const json& p, const std::string& path, Reader& r, StepMeasurement* m) {
    StepShape& s = m->shape;
    std::string dtype;
    if (!r.integer(p, path, "layers", &s.layers) ||
        !r.integer(p, path, "model_layers", &s.modelLayers) ||
        !r.integer(p, path, "hidden", &s.hidden) || !r.integer(p, path, "q_heads", &s.qHeads) ||
        !r.integer(p, path, "kv_heads", &s.kvHeads) ||
        !r.integer(p, path, "head_dim", &s.headDim) ||
        !r.integer(p, path, "intermediate", &s.intermediate) ||
        !r.integer(p, path, "batch", &s.batch) || !r.integer(p, path, "context", &s.context) ||
        !r.string(p, path, "kv_dtype", &dtype))
        return false;
    if (auto it = p.find("gated"); it != p.end()) {
        if (!it->is_boolean())
            return r.fail(path + "gated", "must be true or false");
        s.gated = it->get<bool>();
    }
    auto dt = parseDtype(dtype);
    if (!dt)
        return r.fail(path + "kv_dtype", "unknown dtype \"" + dtype + "\"");
    s.kvDtype = *dt;
    if (auto e = validateStepShape(s); !e.empty())
        return r.fail(path.substr(0, path.size() - 1), e);
    if (!r.number(p, path, "median_s", &m->medianSeconds, true) ||
        !r.number(p, path, "roof_s", &m->roofSeconds, true))
        return false;
    m->minSeconds = m->maxSeconds = m->medianSeconds;
    if (!optionalNumber(p, path, "min_s", r, &m->minSeconds) ||
        !optionalNumber(p, path, "max_s", r, &m->maxSeconds) ||
        !optionalNumber(p, path, "read_ceiling_bytes_per_s", r, &m->readCeiling) ||
        !optionalNumber(p, path, "peak_flop_per_s", r, &m->peak) ||
        !optionalNumber(p, path, "resident_bytes", r, &m->residentBytes))
        return false;
    m->kernel = optionalString(p, "kernel");
    m->counts = countStep(s);
    m->bytesPerSecond = m->counts.bytes / m->medianSeconds;
    m->flopPerSecond = m->counts.flops / m->medianSeconds;
    m->fractionOfRoof = m->roofSeconds / m->medianSeconds;
    m->computeBound = optionalString(p, "bound") == "compute";
    m->aboveRoof = m->fractionOfRoof > 1.0 + kCeilingTolerance;
    m->ok = true;
    return true;
}

} // namespace

std::string toJson(const MeasurementSet& set) {
    json j;
    j["backend"] = set.backend;
    j["device"] = set.device;
    if (!set.model.empty())
        j["model"] = set.model;
    j["ceilings"] = ceilingsToJson(set.ceilings);
    json points = json::array();
    for (const Measurement& m : set.points)
        if (m.ok) {
            json p = pointToJson(m);
            p["placement"] = placementToJson(m, set.ceilings);
            points.push_back(p);
        }
    j["points"] = points;
    if (!set.steps.empty()) {
        json steps = json::array();
        for (const StepMeasurement& m : set.steps)
            if (m.ok)
                steps.push_back(stepToJson(m));
        j["steps"] = steps;
    }
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
    if (!readCeilingExtras(*ceil, r, &set.ceilings))
        return false;
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
        if (!readPoint(p, path, r, &m))
            return false;
        set.points.push_back(std::move(m));
    }
    if (auto it = j.find("steps"); it != j.end()) {
        if (!it->is_array())
            return r.fail("steps", "must be an array");
        for (std::size_t i = 0; i < it->size(); ++i) {
            const json& p = (*it)[i];
            const std::string path = "steps[" + std::to_string(i) + "].";
            if (!p.is_object())
                return r.fail("steps[" + std::to_string(i) + "]", "must be an object");
            StepMeasurement m;
            if (!readStep(p, path, r, &m))
                return false;
            set.steps.push_back(std::move(m));
        }
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
