#include "ui/common/theme.h"

#include <algorithm>

namespace mirrorlab::ui {

bool paletteIsDark(const QPalette& palette) {
    return palette.color(QPalette::Window).lightnessF() < 0.5;
}

QColor onPalette(const QColor& designed_on_white, const QPalette& palette) {
    const double base = palette.color(QPalette::Base).lightnessF();
    const double text = palette.color(QPalette::Text).lightnessF();
    const double lightness =
        std::clamp(text + designed_on_white.lightnessF() * (base - text), 0.0, 1.0);
    QColor moved = QColor::fromHslF(designed_on_white.hslHueF(), designed_on_white.hslSaturationF(),
                                    lightness, designed_on_white.alphaF());
    return moved;
}

QChart::ChartTheme chartTheme(const QPalette& palette) {
    return paletteIsDark(palette) ? QChart::ChartThemeDark : QChart::ChartThemeLight;
}

}  // namespace mirrorlab::ui
