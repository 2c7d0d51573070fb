#pragma once
// Colours that follow the platform palette, light or dark. The painted views (the step diagram,
// the timeline, the device carving, the memory bars) and the log were drawn in greys and pale
// tints chosen on white; onPalette() carries such a colour over to the palette in use, and the
// charts take Qt Charts' dark theme when the palette is dark.
#include <QChart>
#include <QColor>
#include <QPalette>

namespace mirrorlab::ui {

// Whether the palette's window background is dark (its lightness under one half).
bool paletteIsDark(const QPalette& palette);

// A colour designed for black text on a white background, moved onto `palette`: its lightness is
// mapped from white..black onto the palette's Base..Text, hue and saturation kept. On a light
// palette with white Base and black Text it is the colour itself; on a dark one pale fills turn
// dark and dark greys turn light, so text stays readable on the boxes it was drawn on.
QColor onPalette(const QColor& designed_on_white, const QPalette& palette);

// Qt Charts' theme for the palette: ChartThemeDark on a dark palette, else ChartThemeLight.
QChart::ChartTheme chartTheme(const QPalette& palette);

}  // namespace mirrorlab::ui
