#include "gpu/measure_table.h"

#include <cstdio>

namespace kvscope::gpu {

std::string fmt(const char* f, double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, x);
    return buf;
}

std::string pad(std::string s, std::size_t w, bool right) {
    if (s.size() >= w)
        return s;
    return right ? std::string(w - s.size(), ' ') + s : s + std::string(w - s.size(), ' ');
}

namespace {

double readOf(const Measurement& m, const Ceilings& global) {
    return m.readCeiling() > 0 ? m.readCeiling() : global.readBytesPerSecond;
}

std::string shapeColumns(const std::string& variant, const DecodeShape& s) {
    const bool mla = s.kind == Attention::Mla;
    return pad(variant, 8, false) + pad(std::to_string(s.qHeads), 5) +
           pad(mla ? "-" : std::to_string(s.kvHeads), 5) +
           pad(std::to_string(mla ? s.kvLoraRank + s.ropeDim : s.headDim), 5) +
           pad(std::to_string(s.context), 8) + pad(std::to_string(s.batch), 5) +
           pad(std::string(dtypeName(s.dtype)), 9);
}

} // namespace

RoofPlacement placePoint(const Measurement& m, const Ceilings& global) {
    const double peak = m.peakCeiling() > 0 ? m.peakCeiling() : global.peakFor(m.shape.dtype);
    return placeOnRoof(m, readOf(m, global), peak);
}

std::string formatCeilings(const Ceilings& c, KvDtype dtype) {
    std::string out = "read ceiling " + fmt("%.1f", c.readBytesPerSecond / 1e9) + " GB/s (" +
                      c.readKernel + ")\n";
    if (c.readFamily.size() > 1) {
        out += "  next best:";
        for (std::size_t i = 1; i < std::min<std::size_t>(4, c.readFamily.size()); ++i)
            out += " " + c.readFamily[i].kernel + " " + fmt("%.1f", c.readFamily[i].value / 1e9) +
                   (i + 1 < 4 ? "," : "");
        out += " GB/s; worst " + c.readFamily.back().kernel + " " +
               fmt("%.1f", c.readFamily.back().value / 1e9) + " GB/s\n";
    }
    if (c.l2ReadBytesPerSecond > 0 || c.l3ReadBytesPerSecond > 0) {
        out += "cache-resident reads:";
        if (c.l2ReadBytesPerSecond > 0)
            out += " L2 " + fmt("%.1f", c.l2ReadBytesPerSecond / 1e9) + " GB/s";
        if (c.l3ReadBytesPerSecond > 0)
            out += std::string(c.l2ReadBytesPerSecond > 0 ? "," : "") + " L3 " +
                   fmt("%.1f", c.l3ReadBytesPerSecond / 1e9) + " GB/s";
        out += "\n";
    }
    const std::string key(dtypeName(dtype));
    out += "peak " + fmt("%.3f", c.peakFor(dtype) / 1e12) + " TFLOP/s for " + key + " KV";
    if (auto it = c.peakKernelFor.find(key); it != c.peakKernelFor.end())
        out += " (" + it->second + "; " + c.peakKernel + ")";
    else if (!c.peakKernel.empty())
        out += " (" + c.peakKernel + ")";
    return out + "\n";
}

std::string measureTableHeader() {
    return pad("variant", 8, false) + pad("h", 5) + pad("h_kv", 5) + pad("d", 5) + pad("S", 8) +
           pad("B", 5) + pad("dtype", 9) + pad("splits", 7) + pad("min us", 10) +
           pad("median us", 11) + pad("max us", 10) + pad("spread", 8) + pad("GB/s", 8) +
           pad("GFLOP/s", 9) + pad("FLOP/B", 8) + pad("ceil GB/s", 10) + pad("%read", 7) +
           pad("%roof", 7) + pad("bound", 9) + pad("err", 9) + "  flag\n";
}

std::string measureTableRow(const std::string& variant, const DecodeShape& shape,
                            const Measurement* m, const std::string& note, const Ceilings& global) {
    std::string row = shapeColumns(variant, shape);
    if (!m)
        return row + "  " + note + "\n";
    const RoofPlacement r = placePoint(*m, global);
    row +=
        pad(std::to_string(m->splits), 7) + pad(fmt("%.1f", m->minSeconds * 1e6), 10) +
        pad(fmt("%.1f", m->medianSeconds * 1e6), 11) + pad(fmt("%.1f", m->maxSeconds * 1e6), 10) +
        pad(fmt("%.0f%%", 100.0 * m->spread()), 8) + pad(fmt("%.1f", m->bytesPerSecond / 1e9), 8) +
        pad(fmt("%.1f", m->flopPerSecond / 1e9), 9) + pad(fmt("%.1f", m->intensityFlopPerByte), 8) +
        pad(fmt("%.1f", readOf(*m, global) / 1e9), 10) +
        pad(fmt("%.0f%%", 100.0 * r.fractionRead), 7) +
        pad(fmt("%.0f%%", 100.0 * r.fractionRoof), 7) +
        pad(r.computeBound ? "compute" : "memory", 9) + pad(fmt("%.1e", m->maxRelError), 9);
    std::string flag;
    if (r.aboveCeiling)
        flag = "ABOVE-CEILING";
    if (m->unstable)
        flag += flag.empty() ? "unstable" : ",unstable";
    return row + "  " + flag + "\n";
}

std::string measureTableFooter(const std::vector<Measurement>& points, const Ceilings& global) {
    int above = 0, unstable = 0;
    for (const Measurement& m : points) {
        above += placePoint(m, global).aboveCeiling ? 1 : 0;
        unstable += m.unstable ? 1 : 0;
    }
    std::string out =
        "\nmin / median / max us: fastest, median and slowest of the timed repeats; spread: (max - "
        "min) / median (over 50%, or ceilings before and after more than 20% apart: timed again). "
        "ceil GB/s: the read ceiling paired with the repeats (before every repeat and after the "
        "last, one piece of the same bytes read by the family's best kernels in turn; each "
        "repeat against the fastest of the piece after it and the two before it; without "
        "pieces, the max of the "
        "ceilings right before and after the point). "
        "%read = achieved bytes/s over it (with pieces, the median of the repeats' fractions); "
        "%roof = achieved FLOP/s over min(peak for the dtype, "
        "intensity x read ceiling); bound: which of the two is lower. Bytes count the KV read "
        "once plus Q in and O out.\n";
    if (above)
        out += "warning: " + std::to_string(above) + " point(s) above their ceiling by more than " +
               fmt("%.0f", 100 * kCeilingTolerance) +
               "% (ABOVE-CEILING): a ceiling a kernel beats is not a ceiling; a bug in the "
               "ceilings or the counts.\n";
    if (unstable)
        out += "warning: " + std::to_string(unstable) +
               " point(s) unstable: the repeats' spread or the ceilings before/after stayed too "
               "wide on every attempt; do not trust them, rerun when the machine is quiet.\n";
    return out;
}

} // namespace kvscope::gpu
