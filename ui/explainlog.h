// Explain an engine's log: paste (or open) a vLLM or SGLang startup log and read kvscope's
// prediction beside each logged number, with the difference explained term by term; or open a
// folder of logs and read one row per log with the median and worst token error.
#pragma once

#include <QDialog>
#include <QStringList>

class QPlainTextEdit;
class QTableWidget;
class QLabel;
class QComboBox;
class QHBoxLayout;

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
    /// Folders of `org__Name.json` configs the logged model names are also looked up in.
    void setConfigDirs(const QStringList& dirs);
    /// Explains every *.log under `dir` (core's explainFolder): one row per log in the fleet
    /// table, the median and worst |tokens error| in the fleet line. False when `dir` is no folder.
    bool explainFolder(const QString& dir);
    QTableWidget* fleetTable() const { return fleet_; }
    QString fleetText() const;
    QString summaryText() const;
    QString statusText() const;

private:
    /// The results under the log: the fleet line and table, the summary, the terms, the notes.
    QWidget* buildResultPane(QWidget* parent);
    /// Open log, Open folder, the GPU choice, Explain and the status line.
    QHBoxLayout* buildControlsRow();

    QPlainTextEdit* text_ = nullptr;
    QComboBox* gpu_ = nullptr;
    QLabel* summary_ = nullptr;
    QLabel* notes_ = nullptr;
    QLabel* status_ = nullptr;
    QTableWidget* terms_ = nullptr;
    QTableWidget* fleet_ = nullptr;
    QLabel* fleetStats_ = nullptr;
    QStringList configDirs_;
};

} // namespace kvscope::ui
