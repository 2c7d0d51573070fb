#pragma once
// The palettes the UI suites paint with: a light desktop's, and a dark one's (Breeze Dark).
#include <QColor>
#include <QPalette>

inline QPalette light_palette() {
    QPalette palette;
    palette.setColor(QPalette::Window, QColor(0xef, 0xef, 0xef));
    palette.setColor(QPalette::Base, Qt::white);
    palette.setColor(QPalette::Text, Qt::black);
    return palette;
}

// A dark desktop's palette (Breeze Dark's main colours).
inline QPalette dark_palette() {
    QPalette palette;
    palette.setColor(QPalette::Window, QColor(0x31, 0x36, 0x3b));
    palette.setColor(QPalette::WindowText, QColor(0xef, 0xf0, 0xf1));
    palette.setColor(QPalette::Base, QColor(0x23, 0x26, 0x29));
    palette.setColor(QPalette::AlternateBase, QColor(0x31, 0x36, 0x3b));
    palette.setColor(QPalette::Text, QColor(0xef, 0xf0, 0xf1));
    palette.setColor(QPalette::Button, QColor(0x31, 0x36, 0x3b));
    palette.setColor(QPalette::ButtonText, QColor(0xef, 0xf0, 0xf1));
    palette.setColor(QPalette::PlaceholderText, QColor(0xa0, 0xa0, 0xa0));
    palette.setColor(QPalette::Highlight, QColor(0x3d, 0xae, 0xe9));
    return palette;
}
