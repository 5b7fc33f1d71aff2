// Compare: pin the current configuration as A, change to B, and read both side by side with
// the ratios core computes (per-rank bytes, tokens, concurrency, intensity, % of peak).
#pragma once

#include "core/features/compare.h"
#include "ui/appstate.h"

#include <QObject>
#include <QString>
#include <optional>

class QDockWidget;
class QLabel;
class QTableWidget;

namespace kvscope::ui {

class MainWindow;

class CompareController : public QObject {
    Q_OBJECT
public:
    explicit CompareController(MainWindow& w);

    /// Pins the window's current state as A.
    void pinCurrent();
    /// Pins a given state and its report as A (story steps with `compare_with`).
    void pin(const AppState& a, const kvscope::Report& report, const QString& title = {});
    void unpin();
    bool pinned() const { return a_.has_value(); }
    /// The comparison of A with the window's state (B); empty when nothing is pinned.
    const std::optional<kvscope::Comparison>& comparison() const { return comparison_; }
    /// The Compare dock and its table (rows in core's ratio order).
    QDockWidget* dock() const { return dock_; }
    QTableWidget* table() const { return table_; }
    /// The table as plain text (tests, the clipboard).
    QString text() const;

private:
    void refresh();

    MainWindow& w_;
    std::optional<AppState> a_;
    std::optional<kvscope::Report> aReport_;
    QString aTitle_;
    std::optional<kvscope::Comparison> comparison_;
    QDockWidget* dock_ = nullptr;
    QLabel* header_ = nullptr;
    QLabel* crossover_ = nullptr;
    QTableWidget* table_ = nullptr;
};

/// "Llama-3-70B · H100 SXM · TP=8 · 8,192 tokens" for a state.
QString stateTitle(const AppState& s);

} // namespace kvscope::ui
