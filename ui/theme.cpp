#include "ui/theme.h"

#include <QApplication>
#include <QPalette>
#include <QStyleFactory>
#include <QWidget>
#include <array>

namespace kvscope::ui {

namespace {
ThemeMode g_mode = ThemeMode::Light;

QPalette lightPalette() {
    QPalette p;
    p.setColor(QPalette::Window, QColor(0xf6, 0xf7, 0xf9));
    p.setColor(QPalette::WindowText, QColor(0x1f, 0x23, 0x28));
    p.setColor(QPalette::Base, QColor(0xff, 0xff, 0xff));
    p.setColor(QPalette::AlternateBase, QColor(0xee, 0xf0, 0xf3));
    p.setColor(QPalette::Text, QColor(0x1f, 0x23, 0x28));
    p.setColor(QPalette::Button, QColor(0xec, 0xee, 0xf1));
    p.setColor(QPalette::ButtonText, QColor(0x1f, 0x23, 0x28));
    p.setColor(QPalette::Highlight, QColor(0x00, 0x72, 0xb2));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::ToolTipBase, QColor(0xff, 0xff, 0xf0));
    p.setColor(QPalette::ToolTipText, QColor(0x1f, 0x23, 0x28));
    p.setColor(QPalette::PlaceholderText, QColor(0x6a, 0x73, 0x7d));
    p.setColor(QPalette::Mid, QColor(0xc8, 0xcc, 0xd2));
    p.setColor(QPalette::Dark, QColor(0x9a, 0xa0, 0xa8));
    p.setColor(QPalette::Light, Qt::white);
    p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x9a, 0xa0, 0xa8));
    p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x9a, 0xa0, 0xa8));
    p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x9a, 0xa0, 0xa8));
    return p;
}

QPalette darkPalette() {
    QPalette p;
    p.setColor(QPalette::Window, QColor(0x1e, 0x21, 0x26));
    p.setColor(QPalette::WindowText, QColor(0xe6, 0xe8, 0xeb));
    p.setColor(QPalette::Base, QColor(0x16, 0x18, 0x1c));
    p.setColor(QPalette::AlternateBase, QColor(0x26, 0x2a, 0x30));
    p.setColor(QPalette::Text, QColor(0xe6, 0xe8, 0xeb));
    p.setColor(QPalette::Button, QColor(0x2b, 0x2f, 0x36));
    p.setColor(QPalette::ButtonText, QColor(0xe6, 0xe8, 0xeb));
    p.setColor(QPalette::Highlight, QColor(0x56, 0xb4, 0xe9));
    p.setColor(QPalette::HighlightedText, QColor(0x10, 0x12, 0x14));
    p.setColor(QPalette::ToolTipBase, QColor(0x2b, 0x2f, 0x36));
    p.setColor(QPalette::ToolTipText, QColor(0xe6, 0xe8, 0xeb));
    p.setColor(QPalette::PlaceholderText, QColor(0x8b, 0x93, 0x9c));
    p.setColor(QPalette::Mid, QColor(0x44, 0x4a, 0x52));
    p.setColor(QPalette::Dark, QColor(0x10, 0x12, 0x14));
    p.setColor(QPalette::Light, QColor(0x3a, 0x3f, 0x46));
    p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x6a, 0x70, 0x78));
    p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x6a, 0x70, 0x78));
    p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x6a, 0x70, 0x78));
    return p;
}

// Okabe-Ito, ordered so neighbouring ranks contrast and yellow comes late.
constexpr std::array<QRgb, 8> kOkabeIto = {0x0072b2, 0xe69f00, 0x009e73, 0xd55e00,
                                           0x56b4e9, 0xcc79a7, 0xf0e442, 0x999999};
} // namespace

void applyTheme(ThemeMode mode) {
    g_mode = mode;
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    QApplication::setPalette(mode == ThemeMode::Dark ? darkPalette() : lightPalette());
}

ThemeMode currentTheme() {
    return g_mode;
}

QString toString(ThemeMode mode) {
    return mode == ThemeMode::Dark ? QStringLiteral("dark") : QStringLiteral("light");
}

bool isDark(const QWidget* w) {
    const QColor bg =
        w ? w->palette().color(QPalette::Window) : QApplication::palette().color(QPalette::Window);
    return bg.lightnessF() < 0.5;
}

QColor rankColor(int rank, bool dark) {
    const int n = static_cast<int>(kOkabeIto.size());
    QColor c = QColor::fromRgb(kOkabeIto[static_cast<std::size_t>(rank % n)]);
    if ((rank / n) % 2 == 1)
        c = dark ? c.darker(135) : c.lighter(135);
    return c;
}

QColor seriesColor(int index, bool dark) {
    return rankColor(index, dark);
}

QColor accentColor(bool dark) {
    return dark ? QColor(0xff, 0x6b, 0x5a) : QColor(0xc0, 0x39, 0x2b);
}
QColor warningColor(bool dark) {
    return dark ? QColor(0xf0, 0xb4, 0x29) : QColor(0xb3, 0x6b, 0x00);
}
QColor errorColor(bool dark) {
    return dark ? QColor(0xff, 0x6b, 0x6b) : QColor(0xb0, 0x1e, 0x1e);
}

QColor mutedText(const QWidget* w) {
    return w->palette().color(QPalette::PlaceholderText);
}

QFont scaledFont(const QFont& base, double factor, bool bold) {
    QFont f = base;
    if (f.pointSizeF() > 0)
        f.setPointSizeF(f.pointSizeF() * factor);
    else
        f.setPixelSize(static_cast<int>(f.pixelSize() * factor));
    f.setBold(bold);
    return f;
}

} // namespace kvscope::ui
