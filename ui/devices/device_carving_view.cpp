#include "ui/devices/device_carving_view.h"

#include <QHelpEvent>
#include <QLinearGradient>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>

#include <algorithm>
#include <numeric>

#include "core/backend/arena.h"
#include "ui/common/format.h"
#include "ui/common/theme.h"

namespace mirrorlab::ui {

namespace {

constexpr int kMargin = 6;
constexpr int kBarHeight = 26;
constexpr int kGap = 4;
constexpr int kRowGap = 14;
constexpr int kSwatch = 12;
constexpr int kLegendSpacing = 16;

// Tableau 10: distinct hues that stay readable next to each other.
QColor segment_colour(int index) {
    static const QColor colours[] = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0x59, 0xa1, 0x4f),
                                     QColor(0xb0, 0x7a, 0xa1), QColor(0x76, 0xb7, 0xb2), QColor(0xed, 0xc9, 0x48),
                                     QColor(0xe1, 0x57, 0x59), QColor(0xff, 0x9d, 0xa7), QColor(0x9c, 0x75, 0x5f),
                                     QColor(0xba, 0xb0, 0xac)};
    return colours[index % 10];
}

QColor text_on(const QColor& background) {
    const double luminance = 0.299 * background.redF() + 0.587 * background.greenF() + 0.114 * background.blueF();
    return luminance > 0.6 ? QColor(0x20, 0x20, 0x20) : QColor(Qt::white);
}

// Limits are chosen in MB (MiB, as TensorFlow's memory_limit), so they read back as typed.
QString limit_text(std::int64_t bytes) {
    if (bytes % kBytesPerMiB == 0) return DeviceCarvingView::tr("%1 MB").arg(bytes / kBytesPerMiB);
    return bytes_text(bytes);
}

enum class Fill { Solid, Hatched, Growth, Unused, Overflow };

// A bar piece or legend swatch as its fill says; greys and pale tints follow the palette.
void fill_piece(QPainter& painter, const QRectF& r, const QColor& colour, Fill fill, const QPalette& palette) {
    switch (fill) {
        case Fill::Solid: painter.fillRect(r, colour); break;
        case Fill::Unused: painter.fillRect(r, onPalette(colour, palette)); break;
        case Fill::Hatched:
            painter.fillRect(r, onPalette(QColor(0xf2, 0xf2, 0xf2), palette));
            painter.fillRect(r, QBrush(onPalette(colour, palette), Qt::BDiagPattern));
            break;
        case Fill::Growth: {
            QLinearGradient gradient(r.topLeft(), r.topRight());
            gradient.setColorAt(0.0, colour);
            gradient.setColorAt(1.0, colour.lighter(170));
            painter.fillRect(r, gradient);
            break;
        }
        case Fill::Overflow: painter.fillRect(r, colour); break;
    }
}

}  // namespace

struct DeviceCarvingView::LegendItem {
    QRect swatch;
    QRect text_rect;
    QColor colour;
    Fill fill = Fill::Solid;
    QString text;
    QString tooltip;
};

struct DeviceCarvingView::LayoutRow {
    struct Piece {
        QRectF rect;
        QColor colour;
        Fill fill = Fill::Solid;
        QString inner;    // drawn inside when it fits
        QString tooltip;
    };
    QRect title_rect;
    QString title;
    bool used = false;
    QRect bar;
    std::vector<Piece> pieces;
    int physical_end_x = -1;  // > 0 when the limits overrun the physical memory
    QRectF overflow;          // the part of the bar beyond the physical memory
    std::vector<LegendItem> legend;
};

struct DeviceCarvingView::Layout {
    using Piece = LayoutRow::Piece;
    using LegendItem = DeviceCarvingView::LegendItem;
    using Row = LayoutRow;
    std::vector<Row> rows;
    int height = 0;
};

DeviceCarvingView::DeviceCarvingView(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("deviceCarving"));
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    setMouseTracking(true);
}

DeviceCarvingView::~DeviceCarvingView() = default;

void DeviceCarvingView::setDevices(std::vector<CarvedDevice> devices) {
    devices_ = std::move(devices);
    updateGeometry();
    update();
}

QSize DeviceCarvingView::sizeHint() const { return {520, heightForWidth(520)}; }

QSize DeviceCarvingView::minimumSizeHint() const { return {240, heightForWidth(240)}; }

int DeviceCarvingView::heightForWidth(int width) const { return layoutFor(width).height; }

void DeviceCarvingView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    // The legend wraps, so the height follows the width.
    updateGeometry();
}

DeviceCarvingView::Layout DeviceCarvingView::layoutFor(int width) const {
    Layout layout;
    const QFontMetrics metrics(font());
    QFont bold = font();
    bold.setBold(true);
    const QFontMetrics bold_metrics(bold);
    const int left = kMargin, right = std::max(width - kMargin, left + 40);
    const int line = std::max(metrics.height(), kSwatch) + 4;
    int y = kMargin;

    if (devices_.empty()) {
        layout.height = kMargin * 2 + line;
        return layout;
    }

    for (const CarvedDevice& device : devices_) {
        Layout::Row row;
        row.used = device.used;
        row.title = device.total_bytes > 0
                        ? tr("%1 · %2 · %3").arg(device.id, device.name, bytes_text(device.total_bytes))
                        : tr("%1 · %2 · memory size unknown").arg(device.id, device.name);
        if (!device.used) row.title = tr("%1 (not used)").arg(row.title);
        row.title = bold_metrics.elidedText(row.title, Qt::ElideRight, right - left);
        row.title_rect = QRect(left, y, right - left, bold_metrics.height());
        y += bold_metrics.height() + kGap;
        row.bar = QRect(left, y, right - left, kBarHeight);
        y += kBarHeight + kGap;

        std::vector<Layout::LegendItem> items;
        const QRectF bar(row.bar);
        const QString names = device.logical_names.join(QStringLiteral(", "));
        if (!device.used || device.logical_names.isEmpty()) {
            row.pieces.push_back({bar, QColor(0xd8, 0xd8, 0xd8), Fill::Unused, tr("not used"),
                                  tr("%1 is not used by this configuration").arg(device.id)});
        } else if (device.mode == MemoryMode::Virtual) {
            carveVirtual(device, row, items);
        } else if (device.mode == MemoryMode::Growth) {
            const QString text = tr("%1 grows on demand (no limit)").arg(names);
            row.pieces.push_back({bar, segment_colour(0), Fill::Growth, text,
                                  tr("%1 allocates memory as it needs it, up to all of %2").arg(names, device.id)});
            items.push_back({{}, {}, segment_colour(0), Fill::Growth, text, {}});
        } else {
            const QString text = device.logical_names.size() == 1
                                     ? tr("%1 · all memory, no limit").arg(names)
                                     : tr("%1 share all memory (no limit)").arg(names);
            row.pieces.push_back({bar, segment_colour(0), Fill::Solid, text, text});
            items.push_back({{}, {}, segment_colour(0), Fill::Solid, text, {}});
        }

        const int line_top = flowLegend(items, left, right, y);
        row.legend = std::move(items);
        y = (row.legend.empty() ? y : line_top + line) + kRowGap;
        layout.rows.push_back(std::move(row));
    }
    layout.height = y - kRowGap + kMargin;
    return layout;
}

// A device split into virtual devices: one piece per limit, to scale, then what is left over (hatched)
// or how far the limits overrun the physical memory.
void DeviceCarvingView::carveVirtual(const CarvedDevice& device, LayoutRow& row, std::vector<LegendItem>& items) const {
    const QRectF bar(row.bar);
    const std::int64_t allocated =
        std::accumulate(device.limit_bytes.begin(), device.limit_bytes.end(), std::int64_t{0});
    const std::int64_t scale = std::max<std::int64_t>({device.total_bytes, allocated, 1});
    double x = bar.left();
    for (std::size_t i = 0; i < device.limit_bytes.size(); ++i) {
        const std::int64_t limit = device.limit_bytes[i];
        const double w = std::max(1.0, bar.width() * static_cast<double>(limit) / static_cast<double>(scale));
        const QString name = i < static_cast<std::size_t>(device.logical_names.size())
                                 ? device.logical_names[static_cast<int>(i)]
                                 : QString();
        const QColor colour = segment_colour(static_cast<int>(i));
        QString tooltip = tr("%1: memory limit %2").arg(name, limit_text(limit));
        if (device.total_bytes > 0) {
            tooltip += tr(" (%1 % of %2)")
                           .arg(100.0 * static_cast<double>(limit) / static_cast<double>(device.total_bytes), 0,
                                'f', 1)
                           .arg(bytes_text(device.total_bytes));
        }
        row.pieces.push_back({QRectF(x, bar.top(), std::min(w, bar.right() + 1 - x), bar.height()), colour,
                              Fill::Solid, tr("%1 · %2").arg(name, limit_text(limit)), tooltip});
        items.push_back({{}, {}, colour, Fill::Solid, tr("%1 · %2").arg(name, limit_text(limit)), tooltip});
        x += w;
    }
    if (device.total_bytes > allocated) {
        const std::int64_t rest = device.total_bytes - allocated;
        const QString text = tr("unallocated %1").arg(bytes_text(rest));
        row.pieces.push_back({QRectF(x, bar.top(), std::max(0.0, bar.right() + 1 - x), bar.height()),
                              QColor(0x90, 0x90, 0x90), Fill::Hatched, text,
                              tr("%1 of %2 is not given to any virtual device")
                                  .arg(bytes_text(rest), device.id)});
        items.push_back({{}, {}, QColor(0x90, 0x90, 0x90), Fill::Hatched, text, {}});
    } else if (device.total_bytes > 0 && allocated > device.total_bytes) {
        row.physical_end_x = static_cast<int>(
            bar.left() + bar.width() * static_cast<double>(device.total_bytes) / static_cast<double>(scale));
        const QString text = tr("over by %1: the limits add up to more than %2 has")
                                 .arg(bytes_text(allocated - device.total_bytes), device.id);
        row.overflow = QRectF(row.physical_end_x, bar.top(), bar.right() + 1 - row.physical_end_x, bar.height());
        items.push_back({{}, {}, QColor(0xc0, 0x00, 0x20), Fill::Overflow, text, {}});
    }
}

// Places the legend's items left to right from `top`, wrapping between `left` and `right`; returns
// the top of its last line.
int DeviceCarvingView::flowLegend(std::vector<LegendItem>& items, int left, int right, int top) const {
    const QFontMetrics metrics(font());
    const int line = std::max(metrics.height(), kSwatch) + 4;
    int x = left;
    int line_top = top;
    for (auto& item : items) {
        int text_width = metrics.horizontalAdvance(item.text);
        const int full = kSwatch + 4 + text_width;
        if (x > left && x + full > right) {
            x = left;
            line_top += line;
        }
        int text_height = line;
        if (x + full > right) {
            // Too long for one line: the item takes whole lines and wraps its text.
            text_width = right - x - kSwatch - 4;
            const QRect wrapped = metrics.boundingRect(QRect(0, 0, text_width, 10000), Qt::TextWordWrap, item.text);
            text_height = std::max(line, wrapped.height() + 4);
        }
        item.swatch = QRect(x, line_top + (line - kSwatch) / 2, kSwatch, kSwatch);
        item.text_rect = QRect(x + kSwatch + 4, line_top, text_width + 1, text_height);
        x += kSwatch + 4 + text_width + kLegendSpacing;
        if (text_height > line) {
            x = right;  // the next item starts a new line
            line_top += text_height - line;
        }
    }
    return line_top;
}

void DeviceCarvingView::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    painter.setRenderHint(QPainter::Antialiasing, false);
    const Layout layout = layoutFor(width());
    if (layout.rows.empty()) {
        painter.setPen(palette().color(QPalette::PlaceholderText));
        painter.drawText(rect().adjusted(kMargin, kMargin, -kMargin, -kMargin), Qt::AlignLeft | Qt::AlignTop,
                         tr("No physical devices"));
        return;
    }
    QFont bold = font();
    bold.setBold(true);
    for (const auto& row : layout.rows) {
        painter.setFont(bold);
        painter.setPen(row.used ? palette().color(QPalette::WindowText) : palette().color(QPalette::PlaceholderText));
        painter.drawText(row.title_rect, Qt::AlignLeft | Qt::AlignVCenter, row.title);
        painter.setFont(font());
        drawBar(painter, row);
        drawLegend(painter, row);
    }
}

// The bar: its pieces, what overruns the physical memory crossed out, the labels that fit, a frame.
void DeviceCarvingView::drawBar(QPainter& painter, const LayoutRow& row) const {
    const QFontMetrics metrics(font());
    // Greys chosen on white, on this palette (ui/common/theme.h); the devices' own colours stay.
    auto ink = [this](const QColor& designed_on_white) { return onPalette(designed_on_white, palette()); };
    for (const auto& piece : row.pieces) {
        fill_piece(painter, piece.rect, piece.colour, piece.fill, palette());
        // Separate neighbouring virtual devices.
        if (piece.fill == Fill::Solid && piece.rect.left() > row.bar.left()) {
            painter.setPen(QPen(Qt::white, 1));
            painter.drawLine(QPointF(piece.rect.left(), piece.rect.top()),
                             QPointF(piece.rect.left(), piece.rect.bottom()));
        }
    }
    if (row.physical_end_x > 0) {
        // What does not fit in the physical memory is crossed out in red, under the labels.
        painter.fillRect(row.overflow, QBrush(QColor(0xc0, 0x00, 0x20, 150), Qt::DiagCrossPattern));
        painter.setPen(QPen(QColor(0xc0, 0x00, 0x20), 3));
        painter.drawLine(row.physical_end_x, row.bar.top() - 3, row.physical_end_x, row.bar.top());
        painter.drawLine(row.physical_end_x, row.bar.bottom(), row.physical_end_x, row.bar.bottom() + 3);
    }
    for (const auto& piece : row.pieces) {
        // The label goes inside only when it fits; the legend always names everything.
        const QRectF inner = piece.rect.adjusted(4, 0, -4, 0);
        QString label = piece.inner;
        if (metrics.horizontalAdvance(label) > inner.width()) {
            const int dot = label.indexOf(QStringLiteral(" · "));
            label = dot > 0 ? label.mid(dot + 3) : QString();
            if (metrics.horizontalAdvance(label) > inner.width()) label.clear();
        }
        if (label.isEmpty()) continue;
        const QColor background = piece.fill == Fill::Hatched  ? ink(QColor(0xf2, 0xf2, 0xf2))
                                  : piece.fill == Fill::Unused ? ink(piece.colour)
                                                               : piece.colour;
        const bool crossed = row.physical_end_x > 0 && piece.rect.right() > row.physical_end_x;
        if (piece.fill == Fill::Hatched || crossed) {
            // A plate under the text keeps it readable over hatching.
            const int w = metrics.horizontalAdvance(label) + 6;
            const QRectF plate(inner.left() + (inner.width() - w) / 2, inner.center().y() - metrics.height() / 2.0, w,
                               metrics.height());
            painter.fillRect(plate, background);
        }
        painter.setPen(piece.fill == Fill::Unused ? ink(QColor(0x60, 0x60, 0x60)) : text_on(background));
        painter.drawText(inner, Qt::AlignCenter, label);
    }
    painter.setPen(QPen(ink(QColor(0x70, 0x70, 0x70)), 1));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(QRectF(row.bar).adjusted(0, 0, -1, -1));
}

void DeviceCarvingView::drawLegend(QPainter& painter, const LayoutRow& row) const {
    const QColor text_colour = palette().color(QPalette::WindowText);
    for (const auto& item : row.legend) {
        if (item.fill == Fill::Overflow) {
            painter.setPen(QPen(item.colour, 3));
            painter.drawLine(item.swatch.center().x(), item.swatch.top(), item.swatch.center().x(),
                             item.swatch.bottom());
        } else {
            fill_piece(painter, QRectF(item.swatch), item.colour, item.fill, palette());
            painter.setPen(QPen(onPalette(QColor(0x70, 0x70, 0x70), palette()), 1));
            painter.drawRect(QRectF(item.swatch).adjusted(0, 0, -1, -1));
        }
        painter.setPen(item.fill == Fill::Overflow ? item.colour : text_colour);
        painter.drawText(item.text_rect.adjusted(0, 2, 0, 0), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap,
                         item.text);
    }
}

bool DeviceCarvingView::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        const auto* help = static_cast<QHelpEvent*>(event);
        const Layout layout = layoutFor(width());
        for (const auto& row : layout.rows) {
            for (const auto& piece : row.pieces) {
                if (piece.rect.contains(help->pos()) && !piece.tooltip.isEmpty()) {
                    QToolTip::showText(help->globalPos(), piece.tooltip, this);
                    return true;
                }
            }
            for (const auto& item : row.legend) {
                if ((item.swatch.contains(help->pos()) || item.text_rect.contains(help->pos())) && !item.tooltip.isEmpty()) {
                    QToolTip::showText(help->globalPos(), item.tooltip, this);
                    return true;
                }
            }
        }
        QToolTip::hideText();
        event->ignore();
        return true;
    }
    return QWidget::event(event);
}

}  // namespace mirrorlab::ui
