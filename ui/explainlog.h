// Explain an engine's log: paste (or open) a vLLM or SGLang startup log and read kvscope's
// prediction beside each logged number, with the difference explained term by term.
#pragma once

#include <QDialog>

class QPlainTextEdit;
class QTableWidget;
class QLabel;
class QComboBox;

namespace kvscope::ui {

class ExplainLogDialog : public QDialog {
    Q_OBJECT
public:
    explicit ExplainLogDialog(QWidget* parent = nullptr);

    void setLogText(const QString& text);
    bool loadLogFile(const QString& path, QString* error = nullptr);
    /// Parses and explains the text; false and the status line when the log is refused.
    bool explain();
    QTableWidget* termsTable() const { return terms_; }
    QString summaryText() const;
    QString statusText() const;

private:
    QPlainTextEdit* text_ = nullptr;
    QComboBox* gpu_ = nullptr;
    QLabel* summary_ = nullptr;
    QLabel* notes_ = nullptr;
    QLabel* status_ = nullptr;
    QTableWidget* terms_ = nullptr;
};

} // namespace kvscope::ui
