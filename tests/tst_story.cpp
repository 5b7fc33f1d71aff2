// Story files: the chapter's story parses and every quoted number is what core computes;
// broken stories fail with one line naming the step and field; the cursor clamps.
#include "core/features/story.h"

#include <QProcess>
#include <QTest>
#include <cmath>

using namespace kvscope;

namespace {

/// A one-step story around `state` (a JSON object body) and optional extra step fields.
std::string oneStep(const std::string& state, const std::string& extra = {}) {
    return R"({"title": "t", "steps": [{"title": "s", "caption": "162 requests", "state": )" +
           state + extra + "}]}";
}

} // namespace

class TestStory : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void chapterParsesAndVerifies() {
        auto story = loadBuiltinStory("chapter");
        QVERIFY2(story.ok(), story.ok() ? "" : story.error().message().c_str());
        QCOMPARE(story->steps.size(), std::size_t(10));
        auto ok = verifyStory(story.value());
        QVERIFY2(ok.ok(), ok.ok() ? "" : ok.error().message().c_str());
        QVERIFY(std::find(builtinStories().begin(), builtinStories().end(), "chapter") !=
                builtinStories().end());
    }

    void chapterKeyNumbers_data() {
        QTest::addColumn<int>("step");
        QTest::addColumn<QString>("field");
        QTest::addColumn<double>("expected");
        QTest::addColumn<double>("tolerance");
        // The chapter's numbers (docs/formulas.md §7), restated here independently of the JSON.
        QTest::newRow("mha 20 GiB conversation") << 0 << "request_bytes" << 21474836480.0 << 0.0;
        QTest::newRow("mha 20 requests") << 0 << "max_concurrency" << 20.0 << 0.0;
        QTest::newRow("mqa 40 KiB per rank at tp8")
            << 1 << "cell_bytes_per_token_per_rank" << 40960.0 << 0.0;
        QTest::newRow("gqa8 162 requests") << 2 << "max_concurrency" << 162.0 << 0.0;
        QTest::newRow("gqa8 320 KiB") << 2 << "cell_bytes_per_token" << 327680.0 << 0.0;
        QTest::newRow("gqa8 intensity 8") << 3 << "intensity_flop_per_byte" << 8.0 << 1e-9;
        QTest::newRow("gqa8 2.7% of peak") << 3 << "attainable_fraction_of_peak" << 0.027 << 0.0005;
        QTest::newRow("17.5 GiB of K/V weights")
            << 4 << "compare.kv_proj_weight_bytes_vs_checkpoint" << 17.5 * 1073741824.0 << 0.0;
        QTest::newRow("llama3-8b tp16 replicates") << 5 << "kv_copies" << 2.0 << 0.0;
        QTest::newRow("deepseek-v3 68.6 KiB")
            << 6 << "cell_bytes_per_token_per_rank" << 70272.0 << 0.0;
        QTest::newRow("mla intensity tp1 242")
            << 6 << "compare.intensity_flop_per_byte" << 242.0 << 0.5;
        QTest::newRow("mla intensity tp16 15") << 6 << "intensity_flop_per_byte" << 15.0 << 0.5;
        QTest::newRow("gqa 1,048,576 tokens at 40 GiB")
            << 7 << "compare.tokens_capacity" << 1048576.0 << 0.0;
        QTest::newRow("mla 611,191 tokens at 40 GiB") << 7 << "tokens_capacity" << 611191.0 << 0.0;
        QTest::newRow("crossover 4.66") << 7 << "crossover" << 4.66 << 0.005;
        QTest::newRow("dcp8 37 requests at 128k") << 8 << "max_concurrency" << 37.0 << 0.0;
        // "Halving KV bytes again when KV is 10% of the step's traffic buys 5%": GQA-8 at
        // batch 6, TP 2 reads KV at 10.4% of the step; h_kv 4 takes 16.23 ms to 15.39 ms.
        QTest::newRow("kv 10% of the step") << 9 << "compare.step_kv_fraction" << 0.10 << 0.005;
        QTest::newRow("gqa8 step 16.23 ms")
            << 9 << "compare.step_time_lower_bound_s" << 0.01623 << 0.00001;
        QTest::newRow("gqa16 step 15.39 ms")
            << 9 << "step_time_lower_bound_s" << 0.01539 << 0.00001;
    }
    void chapterKeyNumbers() {
        QFETCH(int, step);
        QFETCH(QString, field);
        QFETCH(double, expected);
        QFETCH(double, tolerance);
        auto story = loadBuiltinStory("chapter");
        QVERIFY(story.ok());
        auto ev = evaluateStep(story->steps.at(std::size_t(step)));
        QVERIFY2(ev.ok(), ev.ok() ? "" : ev.error().message().c_str());
        auto v = keyNumberValue(ev.value(), field.toStdString());
        QVERIFY2(v.ok(), v.ok() ? "" : v.error().message().c_str());
        QVERIFY2(std::fabs(v.value() - expected) <= tolerance,
                 qPrintable(QStringLiteral("%1 = %2").arg(field).arg(v.value(), 0, 'f', 4)));
    }

    void everyCaptionQuotesItsNumbers() {
        auto story = loadBuiltinStory("chapter");
        QVERIFY(story.ok());
        for (const auto& step : story->steps) {
            QVERIFY2(!step.keyNumbers.empty(), step.title.c_str());
            QVERIFY(step.caption.size() < 600); // a caption, not an essay
            for (const auto& k : step.keyNumbers)
                if (!k.text.empty())
                    QVERIFY2(step.caption.find(k.text) != std::string::npos, k.text.c_str());
        }
    }

    // A step title that names a variant ("GQA-8: ...") names the one its state evaluates to,
    // by the GQA paper's convention (GQA-G has G = h_kv KV groups).
    void titlesNameTheStepsVariant() {
        auto story = loadBuiltinStory("chapter");
        QVERIFY(story.ok());
        int named = 0;
        for (const auto& step : story->steps) {
            const auto colon = step.title.find(':');
            if (colon == std::string::npos)
                continue;
            const std::string head = step.title.substr(0, colon);
            if (head != "MHA" && head != "MQA" && head.rfind("GQA-", 0) != 0)
                continue;
            auto ev = evaluateStep(step);
            QVERIFY2(ev.ok(), step.title.c_str());
            QCOMPARE(ev->report.variant, head);
            if (head.rfind("GQA-", 0) == 0)
                QCOMPARE(head, "GQA-" + std::to_string(ev->report.kvHeads));
            ++named;
        }
        QVERIFY(named >= 3); // MHA, MQA and GQA-8 open the chapter
    }

    void teacherStoryFile() {
        auto story = loadStoryFile(KVSCOPE_TEST_DATA_DIR "/stories/teacher.json");
        QVERIFY2(story.ok(), story.ok() ? "" : story.error().message().c_str());
        QCOMPARE(story->steps.size(), std::size_t(2));
        QVERIFY(story->steps[1].state.deployment.kvDtype == KvDtype::FP8);
        QCOMPARE(story->steps[0].highlight.view, std::string("cell"));
        QVERIFY(verifyStory(story.value()).ok());
    }

    void brokenStoryFile() {
        auto story = loadStoryFile(KVSCOPE_TEST_DATA_DIR "/stories/broken_tp.json");
        QVERIFY(!story.ok());
        QCOMPARE(QString::fromStdString(story.error().message()),
                 QStringLiteral("steps[1].tp: must be a positive integer"));
    }

    void brokenStories_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("expectedPrefix");
        QTest::newRow("not json") << "{\"title\": "
                                  << "story: ";
        QTest::newRow("not an object") << "[1, 2]"
                                       << "story: ";
        QTest::newRow("no title") << R"({"steps": []})"
                                  << "title: missing";
        QTest::newRow("no steps") << R"({"title": "t"})"
                                  << "steps: missing";
        QTest::newRow("empty steps") << R"({"title": "t", "steps": []})"
                                     << "steps: must be";
        QTest::newRow("unknown root field") << R"({"title": "t", "stepz": []})"
                                            << "stepz: unknown";
        QTest::newRow("tp string")
            << QString::fromStdString(oneStep(R"({"model": "llama-3-8b", "tp": "8"})"))
            << "steps[0].tp: must be a positive integer";
        QTest::newRow("tp zero") << QString::fromStdString(
                                        oneStep(R"({"model": "llama-3-8b", "tp": 0})"))
                                 << "steps[0].tp: must be a positive integer";
        QTest::newRow("tp fraction")
            << QString::fromStdString(oneStep(R"({"model": "llama-3-8b", "tp": 2.5})"))
            << "steps[0].tp: must be a positive integer";
        QTest::newRow("tp breaks the engine rule")
            << QString::fromStdString(oneStep(R"({"model": "llama-3-70b", "tp": 3})"))
            << "steps[0].tp: ";
        QTest::newRow("unknown model")
            << QString::fromStdString(oneStep(R"({"model": "no-such-model"})"))
            << "steps[0].model: ";
        QTest::newRow("unknown gpu")
            << QString::fromStdString(oneStep(R"({"model": "llama-3-8b", "gpu": "h900"})"))
            << "steps[0].gpu: ";
        QTest::newRow("typo in a state key")
            << QString::fromStdString(oneStep(R"({"model": "llama-3-8b", "tpp": 2})"))
            << "steps[0].tpp: unknown field";
        QTest::newRow("latent on a GQA model")
            << QString::fromStdString(oneStep(R"({"model": "llama-3-8b", "h_kv": "latent"})"))
            << "steps[0].h_kv: ";
        QTest::newRow("util above 1")
            << QString::fromStdString(oneStep(R"({"model": "llama-3-8b", "util": 1.5})"))
            << "steps[0].util: ";
        QTest::newRow("bad kv dtype")
            << QString::fromStdString(oneStep(R"({"model": "llama-3-8b", "kv_dtype": "int3"})"))
            << "steps[0].kv_dtype: ";
        QTest::newRow("missing state")
            << R"({"title": "t", "steps": [{"title": "s", "caption": "c"}]})"
            << "steps[0].state: missing";
        QTest::newRow("missing caption")
            << R"({"title": "t", "steps": [{"title": "s", "state": {}}]})"
            << "steps[0].caption: missing";
        QTest::newRow("bad compare_with")
            << QString::fromStdString(
                   oneStep(R"({"model": "llama-3-8b"})", R"(, "compare_with": {"tp": -1})"))
            << "steps[0].compare_with.tp: must be a positive integer";
        QTest::newRow("unknown highlight view")
            << QString::fromStdString(
                   oneStep(R"({"model": "llama-3-8b"})", R"(, "highlight": {"view": "pie"})"))
            << "steps[0].highlight.view: must be one of";
        QTest::newRow("key number text not in caption")
            << QString::fromStdString(oneStep(
                   R"({"model": "llama-3-8b"})",
                   R"(, "key_numbers": [{"field": "max_concurrency", "value": 1, "text": "99"}])"))
            << "steps[0].key_numbers[0].text: ";
        QTest::newRow("key number needs compare_with")
            << QString::fromStdString(
                   oneStep(R"({"model": "llama-3-8b"})",
                           R"(, "key_numbers": [{"field": "crossover", "value": 4.66}])"))
            << "steps[0].key_numbers[0].field: ";
        QTest::newRow("unknown key number")
            << QString::fromStdString(
                   oneStep(R"({"model": "llama-3-8b"})",
                           R"(, "key_numbers": [{"field": "vibes", "value": 1}])"))
            << "steps[0].key_numbers[0].field: unknown number";
    }
    void brokenStories() {
        QFETCH(QString, json);
        QFETCH(QString, expectedPrefix);
        auto story = parseStory(json.toStdString());
        QVERIFY(!story.ok());
        const QString msg = QString::fromStdString(story.error().message());
        QVERIFY2(msg.startsWith(expectedPrefix), qPrintable(msg));
        QVERIFY(!msg.contains(QLatin1Char('\n')));
    }

    void wrongKeyNumberFailsVerification() {
        auto story = parseStory(oneStep(
            R"({"model": "llama-3-70b", "tp": 8, "pool_model": "datasheet"})",
            R"(, "key_numbers": [{"field": "max_concurrency", "value": 161, "text": "162"}])"));
        QVERIFY2(story.ok(), story.ok() ? "" : story.error().message().c_str());
        auto ok = verifyStory(story.value());
        QVERIFY(!ok.ok());
        QVERIFY2(ok.error().message().rfind("steps[0].key_numbers[0]", 0) == 0,
                 ok.error().message().c_str());
    }

    void cursorStepping_data() {
        QTest::addColumn<int>("count");
        QTest::addColumn<QString>("moves");
        QTest::addColumn<int>("expected");
        QTest::newRow("next twice") << 9 << "nn" << 2;
        QTest::newRow("prev at first stays") << 9 << "p" << 0;
        QTest::newRow("next past last clamps") << 3 << "nnnnn" << 2;
        QTest::newRow("last then prev") << 9 << "lp" << 7;
        QTest::newRow("last then first") << 9 << "lf" << 0;
        QTest::newRow("goto beyond clamps") << 9 << "g" << 8;
        QTest::newRow("empty story") << 0 << "nlpg" << 0;
        QTest::newRow("single step") << 1 << "nnl" << 0;
    }
    void cursorStepping() {
        QFETCH(int, count);
        QFETCH(QString, moves);
        QFETCH(int, expected);
        StoryCursor c(static_cast<std::size_t>(count));
        for (QChar m : moves) {
            switch (m.toLatin1()) {
            case 'n':
                c.next();
                break;
            case 'p':
                c.prev();
                break;
            case 'f':
                c.first();
                break;
            case 'l':
                c.last();
                break;
            case 'g':
                c.goTo(1000);
                break;
            }
        }
        QCOMPARE(int(c.index()), expected);
        if (count > 0) {
            QCOMPARE(c.atLast(), int(c.index()) == count - 1);
            QCOMPARE(c.atFirst(), c.index() == 0);
        }
    }

    void cursorReportsChanges() {
        StoryCursor c(3);
        QVERIFY(!c.prev());
        QVERIFY(c.next());
        QVERIFY(c.next());
        QVERIFY(!c.next());
        QVERIFY(c.first());
        QVERIFY(!c.first());
    }
};

QTEST_GUILESS_MAIN(TestStory)
#include "tst_story.moc"
