// The report's one field list (core/features/report_fields.h): every number the text report
// prints is in `size --json`, every scalar number of the JSON is a row of the list, and the
// CSV / Markdown export shows the list's rows (tst_report_gui.cpp: the PDF rows and the numbers
// panel). Cases are real models: the presets and the 2026 fixture configs.
#include "core/features/compare.h"
#include "core/features/export.h"
#include "core/features/report_fields.h"
#include "core/format.h"
#include "core/model/gpu.h"
#include "core/model/presets.h"
#include "testutils.h"

#include <QRegularExpression>
#include <QtTest/QtTest>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

using namespace kvscope;
using nlohmann::json;

namespace {

/// Every numeric leaf of `j` with its key path ("pool.breakdown.2.bytes"), and every string.
void walk(const json& j, const std::string& path, std::vector<std::pair<std::string, double>>& nums,
          std::vector<std::string>& strings) {
    if (j.is_object()) {
        for (const auto& [k, v] : j.items())
            walk(v, path.empty() ? k : path + "." + k, nums, strings);
    } else if (j.is_array()) {
        for (std::size_t i = 0; i < j.size(); ++i)
            walk(j[i], path + "." + std::to_string(i), nums, strings);
    } else if (j.is_number()) {
        nums.emplace_back(path, j.get<double>());
    } else if (j.is_string()) {
        strings.push_back(j.get<std::string>());
    }
}

/// Multiplier of a unit as the text report prints it.
double unitScale(const QString& space, const QString& unit) {
    static const QHash<QString, double> spaced = {{QStringLiteral("B"), 1},
                                                  {QStringLiteral("KiB"), 1024.0},
                                                  {QStringLiteral("MiB"), 1 << 20},
                                                  {QStringLiteral("GiB"), 1 << 30},
                                                  {QStringLiteral("TiB"), 1099511627776.0},
                                                  {QStringLiteral("GB"), 1e9},
                                                  {QStringLiteral("TFLOP/s"), 1e12},
                                                  {QStringLiteral("PFLOP/s"), 1e15},
                                                  {QStringLiteral("GFLOP/s"), 1e9},
                                                  {QStringLiteral("MFLOP/s"), 1e6},
                                                  {QStringLiteral("TFLOP"), 1e12},
                                                  {QStringLiteral("TB/s"), 1e12},
                                                  {QStringLiteral("GB/s"), 1e9},
                                                  {QStringLiteral("MB/s"), 1e6},
                                                  {QStringLiteral("ms"), 1e-3}};
    static const QHash<QString, double> attached = {
        {QStringLiteral("%"), 0.01}, {QStringLiteral("x"), 1},   {QStringLiteral("T"), 1e12},
        {QStringLiteral("B"), 1e9},  {QStringLiteral("M"), 1e6}, {QStringLiteral("K"), 1e3}};
    if (unit.isEmpty())
        return 1;
    return space.isEmpty() ? attached.value(unit, 1) : spaced.value(unit, 1);
}

/// The numbers of `text` that no numeric leaf of the JSON carries (at the printed precision).
QStringList numbersMissingFromJson(std::string text, const json& j) {
    std::vector<std::pair<std::string, double>> nums;
    std::vector<std::string> strings;
    walk(j, "", nums, strings);
    // Names, provenance, rules and log lines are in the JSON as strings: take them out of the
    // text first, longest first, and the formulas the notes quote.
    for (const char* formula : {"2 h_rank (2r + d_rope) / (b (r + d_rope))", "2 g_rank / b",
                                "(16-bit)", "window - 1 + max_num_batched_tokens"})
        strings.emplace_back(formula);
    std::sort(strings.begin(), strings.end(),
              [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
    for (const std::string& s : strings) {
        if (s.size() < 3)
            continue;
        for (std::size_t at = text.find(s); at != std::string::npos; at = text.find(s, at))
            text.replace(at, s.size(), " | ");
    }
    static const QRegularExpression number(QStringLiteral(
        R"((?<![\w.:])(-?\d[\d,]*(?:\.\d+)?)(?:( )(KiB|MiB|GiB|TiB|TFLOP/s|PFLOP/s|GFLOP/s|)"
        R"(MFLOP/s|TFLOP|TB/s|GB/s|MB/s|GB|ms|B)|(%|x|T|B|M|K))?(?![\w]))"));
    QStringList missing;
    auto it = number.globalMatch(QString::fromStdString(text));
    while (it.hasNext()) {
        const auto mt = it.next();
        QString digits = mt.captured(1);
        const QString unit = mt.captured(3).isEmpty() ? mt.captured(4) : mt.captured(3);
        const double scale = unitScale(mt.captured(2), unit);
        const int dot = static_cast<int>(digits.indexOf(QLatin1Char('.')));
        const int decimals = dot < 0 ? 0 : static_cast<int>(digits.size()) - dot - 1;
        const double shown = std::fabs(digits.remove(QLatin1Char(',')).toDouble()) * scale;
        const double tol = 0.5 * std::pow(10.0, -decimals) * scale * 1.0001 + 1e-9 * shown;
        const bool found = std::any_of(nums.begin(), nums.end(), [&](const auto& n) {
            return std::fabs(std::fabs(n.second) - shown) <= tol;
        });
        if (!found)
            missing << mt.captured(0);
    }
    return missing;
}

} // namespace

class TestReport : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void textNumbersAreInJson_data();
    void textNumbersAreInJson();
    void jsonNumbersAreFieldRows_data() { textNumbersAreInJson_data(); }
    void jsonNumbersAreFieldRows();
    void jsonCarriesTheDriftedNumbers();
    void fp8WhatIfTextAndExportAgree();
    void oneRatioPhraser_data();
    void oneRatioPhraser();
    void exportRowsAreFieldRows();
    void layerGroupBytes_data();
    void layerGroupBytes();
    void l2FromTheGpuPresets();
};

void TestReport::textNumbersAreInJson_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("gpu");
    QTest::addColumn<int>("tp");
    QTest::newRow("llama-3-70b tp8") << "llama-3-70b"
                                     << "h100-sxm" << 8;
    QTest::newRow("deepseek-v3 tp16") << "deepseek-v3"
                                      << "h200" << 16;
    QTest::newRow("gemma-3-27b tp2") << "2026:google__gemma-3-27b-it.json"
                                     << "h100-sxm" << 2;
    QTest::newRow("gpt-oss-20b tp1") << "2026:openai__gpt-oss-20b.json"
                                     << "h100-sxm" << 1;
    QTest::newRow("nemotron-h tp8") << "2026:nvidia__Nemotron-H-56B-Base-8K.json"
                                    << "h200" << 8;
    QTest::newRow("qwen3.5 tp2") << "2026:Qwen__Qwen3.5-35B-A3B.json"
                                 << "b200" << 2;
}

void TestReport::textNumbersAreInJson() {
    QFETCH(QString, model);
    QFETCH(QString, gpu);
    QFETCH(int, tp);
    const ModelSpec m = test::modelRef(model);
    const GpuSpec g = test::gpu(gpu.toLatin1().constData());
    const Report r = test::evalAt(m, g, tp);
    const std::string text = textReport(m, g, r);
    const json j = json::parse(jsonReport(m, g, r));
    const QStringList missing = numbersMissingFromJson(text, j);
    QVERIFY2(missing.isEmpty(), qPrintable(missing.join(QStringLiteral(", ")) +
                                           QStringLiteral("\n\n") + QString::fromStdString(text)));
}

void TestReport::jsonNumbersAreFieldRows() {
    QFETCH(QString, model);
    QFETCH(QString, gpu);
    QFETCH(int, tp);
    const ModelSpec m = test::modelRef(model);
    const GpuSpec g = test::gpu(gpu.toLatin1().constData());
    const Report r = test::evalAt(m, g, tp);
    const auto fields = reportFields(r, &m, &g);
    std::set<std::string> keys;
    for (const ReportField& f : fields) {
        QVERIFY2(keys.insert(f.key).second, f.key.c_str());
        if (!f.alsoAt.empty())
            keys.insert(f.alsoAt);
    }
    const json j = json::parse(jsonReport(m, g, r));
    std::vector<std::pair<std::string, double>> nums;
    std::vector<std::string> strings;
    walk(j, "", nums, strings);
    // Every scalar number of the JSON is a row of the list, at the row's value.
    // (A layer group's list of layer indices is a list, not a number of the report.)
    static const std::regex layerList(R"(model\.layer_groups\.\d+\.layers\.\d+)");
    for (const auto& [path, value] : nums) {
        if (std::regex_match(path, layerList))
            continue;
        QVERIFY2(keys.count(path), path.c_str());
    }
    for (const ReportField& f : fields) {
        std::string pointer = "/" + f.key;
        std::replace(pointer.begin(), pointer.end(), '.', '/');
        const json& v = j.at(json::json_pointer(pointer));
        if (!f.value) {
            QVERIFY2(v.is_null(), f.key.c_str());
            continue;
        }
        QVERIFY2(f.integer ? v.is_number_integer() : v.is_number(), f.key.c_str());
        QVERIFY2(std::fabs(v.get<double>() - *f.value) <= 0.5, f.key.c_str());
    }
    // Export names are unique too (CSV rows, story fields).
    std::set<std::string> names;
    for (const ReportField& f : fields)
        QVERIFY2(names.insert(f.name).second, f.name.c_str());
}

void TestReport::jsonCarriesTheDriftedNumbers() {
    // `size --json` lacked the group size, the token count vLLM logs as an integer and the
    // pool's CUDA-context term, which the text report and the numbers panel showed.
    const ModelSpec m = test::modelRef(QStringLiteral("llama-3-70b"));
    const GpuSpec g = test::gpu("h100-sxm");
    const Report r = test::evalAt(m, g, 8);
    const json j = json::parse(jsonReport(m, g, r));
    QCOMPARE(j.at("group_size").get<double>(), 8.0); // 64 / 8
    QVERIFY(j.at("vllm_tokens").is_number_integer());
    QString logged = QString::fromStdString(r.vllmLogTokens); // "GPU KV cache size: N tokens"
    logged = logged.section(QLatin1Char(':'), 1).section(QLatin1Char(' '), 1, 1);
    logged.remove(QLatin1Char(','));
    QCOMPARE(j.at("vllm_tokens").get<std::int64_t>(), logged.toLongLong());
    QVERIFY(j.at("/pool/cuda_context_bytes"_json_pointer).is_number_integer());
    QVERIFY(r.pool.cudaContextBytes > 0);
    QCOMPARE(j.at("/pool/cuda_context_bytes"_json_pointer).get<std::int64_t>(),
             r.pool.cudaContextBytes);
    QCOMPARE(j.at("/pool/non_torch_bytes"_json_pointer).get<std::int64_t>(),
             r.pool.nonTorchBytes());
    // Each pool term's bytes sit next to its rule.
    const auto& terms = j.at("/pool/breakdown"_json_pointer);
    QCOMPARE(terms.size(), r.pool.terms.size());
    for (std::size_t i = 0; i < terms.size(); ++i)
        QCOMPARE(terms[i].at("bytes").get<std::int64_t>(), r.pool.terms[i].bytes);
}

void TestReport::fp8WhatIfTextAndExportAgree() {
    // Llama-3-8B as an fp8 checkpoint in 128 × 128 blocks (one fp32 scale each), h_kv 8 → 4:
    // k_proj + v_proj per layer 2 · (1024 · 4096 + 8·32·4) = 8,390,656 B, what-if
    // 2 · (512 · 4096 + 4·32·4) = 4,195,328 B; × 32 layers = −134,250,496 B.
    auto m = test::llama3_8bFp8Blocks();
    QVERIFY(m.ok());
    const GpuSpec g = test::gpu("h100-sxm");
    Deployment d;
    d.kvHeads = 4;
    auto r = evaluate(m.value(), g, d);
    QVERIFY(r.ok());
    const auto fields = reportFields(r.value(), &m.value(), &g);
    const ReportField* bytes = findField(fields, "kv_proj_weight_bytes_vs_checkpoint");
    const ReportField* params = findField(fields, "kv_proj_params_vs_checkpoint");
    QVERIFY(bytes && params);
    QCOMPARE(*bytes->value, -134250496.0);
    QCOMPARE(*params->value, -32.0 * 2 * 512 * 4096);
    const std::string text = textReport(m.value(), g, r.value());
    const std::string human = formatFieldHuman(*bytes); // "-128 MiB"
    QVERIFY2(text.find(human + " fp8;") != std::string::npos, text.c_str());
    QVERIFY2(text.find("-" + humanCount(32.0 * 2 * 512 * 4096) + " params") != std::string::npos,
             text.c_str());
    const std::string md = reportMarkdown(m.value(), g, r.value());
    QVERIFY(md.find("| " + bytes->label + " | " + human + " |") != std::string::npos);
    const std::string csv = reportCsv(m.value(), g, r.value());
    QVERIFY(csv.find("\nkv_proj_weight_bytes_vs_checkpoint,") != std::string::npos);
    QVERIFY(csv.find(",-134250496,B\n") != std::string::npos);
    const json j = json::parse(jsonReport(m.value(), g, r.value()));
    QCOMPARE(j.at("kv_proj_weight_bytes_vs_checkpoint").get<std::int64_t>(), -134250496LL);
}

void TestReport::oneRatioPhraser_data() {
    QTest::addColumn<double>("ratio");
    QTest::addColumn<bool>("same");
    QTest::addColumn<QString>("phrase");
    // The panel used to say small changes as a percentage below ×1.5 ("0.6% fewer") and the
    // compare table as a factor with a 0.5% "same" band: one threshold now.
    QTest::newRow("0.4% is the same") << 1.004 << true << "same tokens held";
    QTest::newRow("0.6% is a change") << 1.006 << false << "×1.01 more tokens held";
    QTest::newRow("×1.3, not 30%") << 1.3 << false << "×1.3 more tokens held";
    QTest::newRow("an eighth") << 0.125 << false << "×8 fewer tokens held";
}

void TestReport::oneRatioPhraser() {
    QFETCH(double, ratio);
    QFETCH(bool, same);
    QFETCH(QString, phrase);
    QCOMPARE(sameRatio(ratio), same);
    QCOMPARE(QString::fromStdString(phraseRatio(ratio, "tokens held", "more", "fewer")), phrase);
}

void TestReport::exportRowsAreFieldRows() {
    const ModelSpec m = test::modelRef(QStringLiteral("2026:google__gemma-3-27b-it.json"));
    const GpuSpec g = test::gpu("h100-sxm");
    const Report r = test::evalAt(m, g, 2, 32768);
    const auto fields = reportFields(r, &m, &g);
    const auto numbers = reportNumbers(m, g, r);
    QCOMPARE(numbers.size(), fields.size());
    const std::string csv = reportCsv(m, g, r);
    const std::string md = reportMarkdown(m, g, r);
    for (std::size_t i = 0; i < fields.size(); ++i) {
        const ReportField& f = fields[i];
        QCOMPARE(numbers[i].key, f.name);
        QCOMPARE(numbers[i].path, f.key);
        QCOMPARE(numbers[i].label, f.label);
        QCOMPARE(formatNumberHuman(numbers[i]), formatFieldHuman(f));
        const std::string line = "\n" + f.name + "," + csvField(f.label) + "," +
                                 formatFieldPlain(f) + "," + csvField(f.unit) + "\n";
        QVERIFY2(csv.find(line) != std::string::npos, line.c_str());
        const std::string cell =
            "| " + markdownCell(f.label) + " | " + markdownCell(formatFieldHuman(f)) + " |";
        QVERIFY2(md.find(cell) != std::string::npos, cell.c_str());
    }
    // The report-only list (what stories quote) is the list without model or GPU rows.
    const auto reportOnly = reportNumbers(r);
    QVERIFY(reportOnly.size() < numbers.size());
    for (const auto& n : reportOnly)
        QCOMPARE(reportNumber(r, n.key).value_or(-1), n.value);
}

void TestReport::layerGroupBytes_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("tp");
    QTest::addColumn<qint64>("context");
    QTest::addColumn<qint64>("growing");
    QTest::addColumn<qint64>("capped");
    QTest::addColumn<qint64>("fixed");
    // Gemma-3-27B (62 layers: 52 sliding at 1,024, 10 full; 16 KV heads of 128, bf16) at TP 2
    // and 32k: full 10 · 8 heads · 2 · 128 · 2 B · 32,768 = 1,342,177,280 B; sliding capped at
    // 1,024 tokens: 52 · 4,096 · 1,024 = 218,103,808 B.
    QTest::newRow("gemma-3-27b") << "2026:google__gemma-3-27b-it.json" << 2 << 32768LL
                                 << 1342177280LL << 218103808LL << 0LL;
    // gpt-oss-20b (12 sliding at 128, 12 full; 8 KV heads of 64, bf16 → 2,048 B per token per
    // layer) at TP 1 and 8k: full 12 · 2,048 · 8,192, sliding 12 · 2,048 · 128.
    QTest::newRow("gpt-oss-20b") << "2026:openai__gpt-oss-20b.json" << 1 << 8192LL
                                 << 12LL * 2048 * 8192 << 12LL * 2048 * 128 << 0LL;
    // Nemotron-H-56B at TP 8 (tst_layers' perRankState): 10 attention layers × 512 B × 8,192
    // grow, 54 mamba layers × 1,063,936 B of state are fixed.
    QTest::newRow("nemotron-h") << "2026:nvidia__Nemotron-H-56B-Base-8K.json" << 8 << 8192LL
                                << 10LL * 512 * 8192 << 0LL << 54LL * 1063936;
    // Qwen3.5-35B-A3B at TP 1: 30 linear layers of 2,146,304 B state (tst_layers), 10 full.
    QTest::newRow("qwen3.5") << "2026:Qwen__Qwen3.5-35B-A3B.json" << 1 << 8192LL << -1LL << 0LL
                             << 30LL * 2146304;
}

void TestReport::layerGroupBytes() {
    QFETCH(QString, model);
    QFETCH(int, tp);
    QFETCH(qint64, context);
    QFETCH(qint64, growing);
    QFETCH(qint64, capped);
    QFETCH(qint64, fixed);
    const ModelSpec m = test::modelRef(model);
    const GpuSpec g = test::gpu("h200");
    const Report r = test::evalAt(m, g, tp, context);
    const auto fields = reportFields(r, &m, &g);
    std::int64_t sums[3] = {0, 0, 0};
    for (std::size_t i = 0; i < m.layerGroups.size(); ++i) {
        const char* parts[] = {"growing_bytes_per_rank", "capped_bytes_per_rank",
                               "fixed_bytes_per_rank"};
        for (int k = 0; k < 3; ++k) {
            const ReportField* f = findField(fields, layerGroupKey(i, parts[k]));
            QVERIFY2(f && f->value, parts[k]);
            QCOMPARE(f->section, std::string("Layer groups"));
            sums[k] += std::llround(*f->value);
        }
    }
    if (growing >= 0)
        QCOMPARE(sums[0], growing);
    QCOMPARE(sums[1], capped);
    QCOMPARE(sums[2], fixed);
    // The groups' shares add up to the request per rank.
    QCOMPARE(sums[0] + sums[1] + sums[2], r.requestBytesPerRank);
}

void TestReport::l2FromTheGpuPresets() {
    // NVIDIA's architecture whitepapers: H100 (SXM5 and PCIe) 50 MB, A100 40 MB.
    QCOMPARE(test::gpu("h100-sxm").l2MiB.value_or(0), 50.0);
    QCOMPARE(test::gpu("h200").l2MiB.value_or(0), 50.0);
    QCOMPARE(test::gpu("a100-80gb").l2MiB.value_or(0), 40.0);
    for (const auto& p : gpuPresets()) {
        const GpuSpec g = test::gpu(p.id.c_str());
        QVERIFY2(!g.l2MiB || !g.l2Source.empty(), p.id.c_str()); // a figure names its source
    }
    // Unknown stays unknown: null in the JSON, "—" shown.
    const GpuSpec b200 = test::gpu("b200");
    QVERIFY(!b200.l2MiB);
    const ModelSpec m = test::modelRef(QStringLiteral("llama-3-70b"));
    const Report r = test::evalAt(m, b200, 8);
    const auto fields = reportFields(r, &m, &b200);
    QCOMPARE(formatFieldHuman(*findField(fields, "gpu.l2_mib")), std::string("—"));
    QVERIFY(json::parse(jsonReport(m, b200, r)).at("/gpu/l2_mib"_json_pointer).is_null());
    const GpuSpec h100 = test::gpu("h100-sxm");
    const auto f100 = reportFields(test::evalAt(m, h100, 8), &m, &h100);
    QCOMPARE(formatFieldHuman(*findField(f100, "gpu.l2_mib")), std::string("50 MiB"));
    auto bad = parseGpuJson(
        R"({"memory_gb": 80, "bandwidth_tb_s": 3.35, "bf16_tflops": 989.4, "fp32_tflops": 66.9,
            "l2_mib": -1})",
        "x");
    QVERIFY(!bad.ok());
    QCOMPARE(QString::fromStdString(bad.error().message()),
             QStringLiteral("l2_mib: must be a positive number"));
}

QTEST_MAIN(TestReport)
#include "tst_report.moc"
