// Runs kvscope-cli (KVSCOPE_CLI_PATH) for the CLI-contract tests, and checks its error contract:
// exactly one stderr line that starts with "error: " and names what was wrong.
#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>
#include <QtTest/QtTest>

struct CliRun {
    bool finished = false;
    QProcess::ExitStatus status = QProcess::CrashExit;
    int exitCode = -1;
    QString out, err;
};

inline CliRun runCli(const QStringList& args, int timeoutMs = 120000) {
    QProcess p;
    p.start(QStringLiteral(KVSCOPE_CLI_PATH), args);
    CliRun r;
    r.finished = p.waitForFinished(timeoutMs);
    if (!r.finished) {
        p.kill();
        p.waitForFinished();
        return r;
    }
    r.status = p.exitStatus();
    r.exitCode = p.exitCode();
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

/// In a test function: the run ended normally with exactly one "error: ..." line containing
/// `needle` on stderr.
#define KVSCOPE_VERIFY_ONE_LINE_ERROR(run, needle)                                                 \
    do {                                                                                           \
        QVERIFY((run).finished);                                                                   \
        QCOMPARE((run).status, QProcess::NormalExit);                                              \
        const QStringList errLines_ = (run).err.trimmed().split(QLatin1Char('\n'));                \
        QCOMPARE(errLines_.size(), 1);                                                             \
        QVERIFY2((run).err.endsWith(QLatin1Char('\n')), qPrintable((run).err));                    \
        QVERIFY2(errLines_[0].startsWith(QStringLiteral("error: ")), qPrintable((run).err));       \
        QVERIFY2(errLines_[0].contains(needle), qPrintable((run).err));                            \
    } while (false)
