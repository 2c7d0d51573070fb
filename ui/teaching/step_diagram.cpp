#include "ui/teaching/step_diagram.h"

#include <QFontDatabase>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

#include "core/model/model.h"
#include "ui/common/format.h"
#include "ui/common/theme.h"

namespace mirrorlab::ui {

namespace {

constexpr int kMargin = 10;
constexpr int kColumnGap = 28;
constexpr int kMaxColumnWidth = 280;

const QColor kAccent(0x4e, 0x79, 0xa7);
const QColor kAccentLight(0xdb, 0xe6, 0xf1);
const QColor kExchange(0xe1, 0x57, 0x59);
const QColor kUpdate(0x59, 0xa1, 0x4f);
const QColor kIdle(0x9a, 0x9a, 0x9a);
const QColor kBox(0xf7, 0xf7, 0xf7);
const QColor kGood(0x2e, 0x7d, 0x32);
const QColor kBad(0xc6, 0x28, 0x28);
const std::array<QColor, 2> kShardColours = {QColor(0xa9, 0xc4, 0xe0), QColor(0xc9, 0xda, 0xec)};

QString ms_text(double ms) {
    return StepView::tr("%1 ms").arg(ms, 0, 'f', ms < 10 ? 2 : 1);
}

QString number_text(double value) {
    if (!std::isfinite(value)) return QStringLiteral("—");
    return QString::number(value, 'g', 5);
}

QString checksum_hex(std::uint64_t checksum) { return QStringLiteral("%1").arg(checksum, 16, 16, QLatin1Char('0')); }

void draw_arrow(QPainter& painter, const QPainterPath& path, const QColor& colour, double width, bool dashed) {
    QPen pen(colour, width, dashed ? Qt::DashLine : Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin);
    painter.setPen(pen);
    painter.setBrush(Qt::NoBrush);
    painter.drawPath(path);
    // Arrowhead along the path's last direction.
    const QPointF tip = path.pointAtPercent(1.0);
    const QPointF before = path.pointAtPercent(0.97);
    const double angle = std::atan2(tip.y() - before.y(), tip.x() - before.x());
    const double size = 5.0 + width;
    QPolygonF head;
    head << tip << tip - QPointF(size * std::cos(angle - 0.45), size * std::sin(angle - 0.45))
         << tip - QPointF(size * std::cos(angle + 0.45), size * std::sin(angle + 0.45));
    painter.setPen(Qt::NoPen);
    painter.setBrush(colour);
    painter.drawPolygon(head);
}

QPainterPath line_path(QPointF from, QPointF to) {
    QPainterPath path(from);
    path.lineTo(to);
    return path;
}

}  // namespace

StepDiagram::StepDiagram(const StepView* view, QWidget* parent) : QWidget(parent), view_(view) {
    setObjectName(QStringLiteral("stepDiagram"));
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Base);  // white on a light palette, dark on a dark one
}

bool StepDiagram::lit(StepView::Stage stage) const {
    const auto played = view_->playedStages();
    return std::find(played.begin(), played.end(), stage) != played.end();
}

QColor StepDiagram::stageColour(StepView::Stage stage, const QColor& active) const {
    return current(stage) ? active : lit(stage) ? active.lighter(140) : ink(kIdle);
}

QColor StepDiagram::ink(const QColor& designed_on_white) const { return onPalette(designed_on_white, palette()); }

void StepDiagram::drawStages(QPainter& painter, QRectF area, const StepEndEvent* step) const {
    const std::vector<StepView::Stage> all = {StepView::Stage::CopyModel, StepView::Stage::SplitBatch,
                                              StepView::Stage::LocalGradients, StepView::Stage::AllReduce,
                                              StepView::Stage::Update, StepView::Stage::WaitForEveryone};
    const auto sequence = view_->stageSequence();
    const double gap = 6.0;
    const double width = (area.width() - gap * (all.size() - 1)) / static_cast<double>(all.size());
    QFont bold = font();
    bold.setBold(true);
    for (std::size_t i = 0; i < all.size(); ++i) {
        const StepView::Stage stage = all[i];
        const QRectF pill(area.left() + i * (width + gap), area.top(), width, area.height());
        const bool in_step = std::find(sequence.begin(), sequence.end(), stage) != sequence.end();
        const bool is_current = current(stage);
        QColor fill = is_current ? kAccent : lit(stage) ? ink(kAccentLight) : ink(QColor(0xf2, 0xf2, 0xf2));
        painter.setPen(QPen(in_step || !step ? kAccent : ink(QColor(0xcc, 0xcc, 0xcc)), is_current ? 2 : 1));
        painter.setBrush(fill);
        painter.drawRoundedRect(pill.adjusted(0.5, 0.5, -0.5, -0.5), 6, 6);
        const QColor text = is_current ? Qt::white : in_step || !step ? ink(QColor(0x20, 0x20, 0x20)) : ink(QColor(0x90, 0x90, 0x90));
        painter.setPen(text);
        painter.setFont(bold);
        const QRectF top(pill.left() + 4, pill.top() + 3, pill.width() - 8, pill.height() / 2 - 2);
        painter.drawText(top, Qt::AlignCenter,
                         painter.fontMetrics().elidedText(QStringLiteral("%1  %2").arg(i + 1).arg(StepView::stageName(stage)),
                                                          Qt::ElideRight, static_cast<int>(top.width())));
        painter.setFont(font());
        QString value;
        if (!step) {
            value = QStringLiteral("—");
        } else if (!in_step) {
            value = StepView::tr("not needed");
        } else if (stage == StepView::Stage::CopyModel && StepView::stageMs(*step, stage) == 0.0) {
            value = StepView::tr("already in place");
        } else {
            value = ms_text(StepView::stageMs(*step, stage));
        }
        const QRectF bottom(pill.left() + 4, pill.center().y(), pill.width() - 8, pill.height() / 2 - 3);
        painter.drawText(bottom, Qt::AlignCenter, painter.fontMetrics().elidedText(value, Qt::ElideRight, static_cast<int>(bottom.width())));
    }
}

void StepDiagram::drawExchange(QPainter& painter, const std::vector<QRectF>& boxes, QRectF region,
                               const StepEndEvent& step) const {
    const bool active = current(StepView::Stage::AllReduce);
    const Pen pen{stageColour(StepView::Stage::AllReduce, kExchange), active ? 2.6 : 1.6, active};
    const double line = fontMetrics().height();
    painter.setFont(font());
    QString caption;
    const std::vector<int> workers = workerOfReplicas(view_->runInfo());
    if (!workers.empty() && workers.size() == step.replicas.size()) {
        caption = drawWorkers(painter, boxes, region, pen, step, workers);
    } else if (step.all_reduce == "ring") {
        caption = drawRing(painter, boxes, region, pen, step);
    } else if (step.all_reduce == "reduce_to_one_device" || step.all_reduce == "nccl") {
        caption = drawGather(painter, boxes, region, pen, step);
    } else {
        caption = StepView::tr("One replica: its gradient already is the gradient of the whole batch; nothing to exchange.");
    }
    painter.setPen(active ? ink(kExchange.darker(130)) : ink(QColor(0x40, 0x40, 0x40)));
    const QRectF caption_rect(region.left(), region.bottom() - 2 * line, region.width(), 2 * line);
    painter.drawText(caption_rect, Qt::AlignHCenter | Qt::AlignBottom | Qt::TextWordWrap, caption);
}

QString StepDiagram::drawRing(QPainter& painter, const std::vector<QRectF>& boxes, QRectF region, const Pen& pen,
                              const StepEndEvent& step) const {
    const int n = static_cast<int>(boxes.size());
    const double line = fontMetrics().height();
    const QColor& colour = pen.colour;
    const double width = pen.width;
    const QString per_replica = bytes_text(step.allreduce_bytes_per_replica);
    const QString total = bytes_text(step.allreduce_bytes_total);
    // Each replica adds its left neighbour's chunk into its own, around the ring: N-1 steps of
    // reduce-scatter, then N-1 steps of all-gather.
    for (int i = 0; i < n; ++i) {
        const int next = (i + 1) % n;
        const QRectF& a = boxes[static_cast<std::size_t>(i)];
        const QRectF& b = boxes[static_cast<std::size_t>(next)];
        QPainterPath path;
        if (next == i + 1) {
            const QPointF from(a.right() - a.width() * 0.18, a.bottom() + 2);
            const QPointF to(b.left() + b.width() * 0.18, b.bottom() + 2);
            path.moveTo(from);
            const double dip = std::max(34.0, (region.height() - 2.2 * line) * 0.4);
            path.cubicTo(from + QPointF(0, dip), to + QPointF(0, dip), to);
        } else {  // the wrap-around: from the last replica back to the first, below the others
            const QPointF from(a.center().x(), a.bottom() + 2);
            const QPointF to(b.center().x(), b.bottom() + 2);
            const double depth = region.height() - 2.2 * line;
            path.moveTo(from);
            path.cubicTo(from + QPointF(0, depth), to + QPointF(0, depth), to);
        }
        draw_arrow(painter, path, colour, width, false);
    }
    return StepView::tr("Ring all-reduce: %1 reduce-scatter + %1 all-gather steps around the ring; each replica "
                        "sends %2 per training step, %3 in all")
        .arg(n - 1)
        .arg(per_replica, total);
}

std::vector<int> StepDiagram::workerOfReplicas(const TrainBeginEvent& begin) {
    static const std::string prefix = "/job:worker/task:";
    std::vector<int> workers;
    for (const std::string& device : begin.devices) {
        if (device.rfind(prefix, 0) != 0) return {};
        workers.push_back(std::atoi(device.c_str() + prefix.size()));
    }
    if (workers.empty() || workers.front() == workers.back()) return {};  // one worker: the usual picture
    return workers;
}

QString StepDiagram::workersCaption(const StepEndEvent& step, const std::vector<int>& workers) {
    const int worker_count = workers.empty() ? 1 : workers.back() + 1;
    const int replicas = static_cast<int>(workers.size());
    const int per_worker = std::max(1, replicas / std::max(1, worker_count));
    const std::int64_t buffer = step.allreduce_buffer_bytes > 0 ? step.allreduce_buffer_bytes : step.gradient_bytes;
    const std::int64_t received = static_cast<std::int64_t>(worker_count - 1) * per_worker * buffer;
    return StepView::tr("Two levels: inside each worker its %n replica gradient(s) go into one buffer (%1 each, shared "
                        "memory); across the %2 workers MPI_Allgather brings every worker the others' (%3 received per "
                        "worker, %4 in all); each worker then adds all %5 in one process's replica order: the same "
                        "sums, bit for bit.",
                        nullptr, per_worker)
        .arg(bytes_text(buffer))
        .arg(worker_count)
        .arg(bytes_text(received), bytes_text(received * worker_count))
        .arg(replicas);
}

// Level 1: each replica's gradient down into its worker's buffer; level 2: the buffers exchanged
// between neighbouring workers (an all-gather); then the folded sum back up (dashed).
QString StepDiagram::drawWorkers(QPainter& painter, const std::vector<QRectF>& boxes, QRectF region, const Pen& pen,
                                 const StepEndEvent& step, const std::vector<int>& workers) const {
    const QFontMetrics metrics = fontMetrics();
    const double line = metrics.height();
    const double box_height = 1.8 * line;
    const double top = region.top() + std::max(28.0, (region.height() - 2 * line - box_height) * 0.45);
    std::vector<QRectF> buffers;
    for (std::size_t i = 0; i < boxes.size(); ++i) {
        const auto worker = static_cast<std::size_t>(workers[i]);
        if (worker >= buffers.size()) buffers.resize(worker + 1);
        const QRectF under(boxes[i].left(), top, boxes[i].width(), box_height);
        buffers[worker] = buffers[worker].isNull() ? under : buffers[worker].united(under);
        const QPointF in_start(boxes[i].center().x() - 8, boxes[i].bottom() + 2);
        const QPointF out_end(boxes[i].center().x() + 8, boxes[i].bottom() + 2);
        draw_arrow(painter, line_path(in_start, QPointF(in_start.x(), top - 1)), pen.colour, pen.width, false);
        draw_arrow(painter, line_path(QPointF(out_end.x(), top - 1), out_end), pen.colour, pen.width, true);
    }
    // Room between neighbouring workers' boxes for the exchange's arrows.
    for (std::size_t w = 0; w < buffers.size(); ++w) {
        if (w > 0) buffers[w].setLeft(buffers[w].left() + 24);
        if (w + 1 < buffers.size()) buffers[w].setRight(buffers[w].right() - 24);
    }
    for (std::size_t w = 0; w < buffers.size(); ++w) {
        painter.setPen(QPen(pen.colour, pen.active ? 2 : 1));
        painter.setBrush(pen.active ? ink(QColor(0xfb, 0xe3, 0xe3)) : ink(QColor(0xfa, 0xf4, 0xf4)));
        painter.drawRoundedRect(buffers[w], 5, 5);
        painter.setPen(ink(QColor(0x20, 0x20, 0x20)));
        painter.drawText(buffers[w].adjusted(6, 0, -6, 0), Qt::AlignCenter,
                         metrics.elidedText(StepView::tr("worker %1: Σ in replica order").arg(w), Qt::ElideRight,
                                            static_cast<int>(buffers[w].width() - 12)));
        if (w + 1 < buffers.size()) {  // the all-gather between neighbouring workers, both ways
            const double y = buffers[w].center().y();
            draw_arrow(painter, line_path(QPointF(buffers[w].right() + 2, y - 4), QPointF(buffers[w + 1].left() - 2, y - 4)),
                       pen.colour, pen.width, false);
            draw_arrow(painter, line_path(QPointF(buffers[w + 1].left() - 2, y + 4), QPointF(buffers[w].right() + 2, y + 4)),
                       pen.colour, pen.width, false);
            painter.setPen(ink(QColor(0x40, 0x40, 0x40)));
            painter.drawText(QRectF(buffers[w].right() - 60, y - 4 - line * 1.4, buffers[w + 1].left() - buffers[w].right() + 120, line),
                             Qt::AlignCenter, QStringLiteral("MPI"));
        }
    }
    return workersCaption(step, workers);
}

// Reduce to one device then broadcast (arrows into a box under replica 0 and back out), or NCCL
// (every replica into one box and back).
QString StepDiagram::drawGather(QPainter& painter, const std::vector<QRectF>& boxes, QRectF region, const Pen& pen,
                                const StepEndEvent& step) const {
    const int n = static_cast<int>(boxes.size());
    const QFontMetrics metrics = fontMetrics();
    const double line = metrics.height();
    const QColor& colour = pen.colour;
    const double width = pen.width;
    const bool active = pen.active;
    const QString per_replica = bytes_text(step.allreduce_bytes_per_replica);
    const QString total = bytes_text(step.allreduce_bytes_total);
    const bool nccl = step.all_reduce == "nccl";
    const double box_height = 1.8 * line;
    const double top = region.top() + std::max(28.0, (region.height() - 2 * line - box_height) * 0.45);
    QRectF target;
    if (nccl) {  // one box all replicas send into and receive from
        target = QRectF(boxes.front().left(), top, boxes.back().right() - boxes.front().left(), box_height);
    } else {  // the sum runs on replica 0's device: a box under it
        target = QRectF(boxes.front().left(), top, std::min(boxes.front().width(), 220.0), box_height);
    }
    for (int i = 0; i < n; ++i) {
        const QRectF& box = boxes[static_cast<std::size_t>(i)];
        const QPointF in_start(box.center().x() - 8, box.bottom() + 2);
        const QPointF out_end(box.center().x() + 8, box.bottom() + 2);
        if (nccl || i == 0) {  // straight down into the box below and back up
            draw_arrow(painter, line_path(in_start, QPointF(in_start.x(), top - 1)), colour, width, false);
            draw_arrow(painter, line_path(QPointF(out_end.x(), top - 1), out_end), colour, width, true);
            continue;
        }
        // Down, then along to the reducing device; the sum comes back along a lower lane.
        const double in_lane = target.center().y() - 5, out_lane = target.center().y() + 5;
        QPainterPath in(in_start);
        in.lineTo(in_start.x(), in_lane);
        in.lineTo(target.right() + 1, in_lane);
        QPainterPath out(QPointF(target.right() + 1, out_lane));
        out.lineTo(out_end.x(), out_lane);
        out.lineTo(out_end);
        draw_arrow(painter, in, colour, width, false);
        draw_arrow(painter, out, colour, width, true);
    }
    painter.setPen(QPen(colour, active ? 2 : 1));
    painter.setBrush(active ? ink(QColor(0xfb, 0xe3, 0xe3)) : ink(QColor(0xfa, 0xf4, 0xf4)));
    painter.drawRoundedRect(target, 5, 5);
    painter.setPen(ink(QColor(0x20, 0x20, 0x20)));
    const QString device = view_->runInfo().devices.empty() ? QString() : QString::fromStdString(view_->runInfo().devices.front());
    const QString label = nccl ? StepView::tr("NCCL: the GPUs sum the gradients among themselves")
                               : StepView::tr("Σ sum on %1").arg(device);
    painter.drawText(target.adjusted(6, 0, -6, 0), Qt::AlignCenter,
                     metrics.elidedText(label, Qt::ElideRight, static_cast<int>(target.width() - 12)));
    return nccl ? StepView::tr("NCCL all-reduce (solid: gradients in, dashed: the sum back out); each GPU sends "
                               "%1, %2 in all")
                      .arg(per_replica, total)
                : StepView::tr("Reduce to one device, then broadcast (solid: gradients in, dashed: the sum back "
                               "out); %1 moved in all")
                      .arg(total);
}

void StepDiagram::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    painter.setRenderHint(QPainter::Antialiasing);
    const double line = fontMetrics().height() + 1;
    const QRectF area = QRectF(rect()).adjusted(kMargin, kMargin, -kMargin, -kMargin);
    const StepEndEvent* step = view_->shownStep();

    const double stage_height = 2 * line + 10;
    drawStages(painter, QRectF(area.left(), area.top(), area.width(), stage_height), step);
    double y = area.top() + stage_height + 12;
    if (!step) {
        painter.setPen(palette().color(QPalette::PlaceholderText));
        painter.drawText(QRectF(area.left(), y, area.width(), area.bottom() - y), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap,
                         StepView::tr("No step yet. Start a run (with Slow motion on to walk through it one step at a "
                                      "time): the global batch, its shards, each replica and the gradient exchange "
                                      "appear here with the step's real numbers."));
        return;
    }

    const Layout layout = layoutFor(*step, area, y);
    std::vector<QPointF> shard_centres;
    y = drawBatch(painter, layout, *step, y, shard_centres);
    for (int i = 0; i < layout.replicas; ++i) {  // shards travel to their replicas
        const QPointF from = shard_centres[static_cast<std::size_t>(i)] + QPointF(0, 2);
        const QPointF to(layout.columnX(i) + layout.column_width / 2, y + layout.arrow_height - 2);
        QPainterPath path(from);
        path.cubicTo(from + QPointF(0, layout.arrow_height / 2), to - QPointF(0, layout.arrow_height / 2), to);
        const bool splitting = current(StepView::Stage::SplitBatch);
        draw_arrow(painter, path, stageColour(StepView::Stage::SplitBatch, kAccent), splitting ? 2.4 : 1.4, false);
    }
    y += layout.arrow_height + 2;
    const std::vector<QRectF> boxes = drawReplicas(painter, layout, *step, y);
    y += layout.box_height;
    drawExchange(painter, boxes, QRectF(layout.columns_left, y, layout.columns_width, layout.exchange_height), *step);
    y += layout.exchange_height + 8;
    y = drawUpdates(painter, layout, *step, y);
    drawBarrier(painter, layout, *step, y);
}

StepDiagram::Layout StepDiagram::layoutFor(const StepEndEvent& step, QRectF area, double top) const {
    // Heights of the rows below the stages; the arrows and the exchange take spare height (up to a
    // point), so the drawing fills a tall dock without spreading thin.
    Layout layout;
    layout.line = fontMetrics().height() + 1;
    const double line = layout.line;
    layout.bar_height = line + 6;
    layout.box_height = 8 * line + 12;  // eight lines of text per replica
    layout.update_height = 2 * line + 8;
    layout.arrow_height = 26;
    layout.exchange_height = std::max(4.5 * line, 96.0);
    const bool has_optimizer = !view_->optimizerText().isEmpty();
    const double natural = (line + 2) + layout.bar_height + (layout.arrow_height + 2) + layout.box_height +
                           (layout.exchange_height + 8) + (has_optimizer ? line + 4 : 0.0) + (layout.update_height + 10) +
                           (2 * line + 12);
    const double spare = std::clamp(area.bottom() - top - natural, 0.0, 260.0);
    layout.arrow_height += spare * 0.3;
    layout.exchange_height += spare * 0.7;

    const int n = std::max<int>(1, static_cast<int>(step.replicas.size()));
    layout.replicas = n;
    layout.column_width = std::min<double>(kMaxColumnWidth, (area.width() - kColumnGap * (n - 1)) / n);
    layout.column_gap = kColumnGap;
    layout.columns_width = n * layout.column_width + (n - 1) * kColumnGap;
    layout.columns_left = area.center().x() - layout.columns_width / 2;
    return layout;
}

double StepDiagram::drawBatch(QPainter& painter, const Layout& layout, const StepEndEvent& step, double y,
                              std::vector<QPointF>& shard_centres) const {
    // The global batch and its shards.
    const QFontMetrics metrics = fontMetrics();
    const int n = layout.replicas;
    QFont bold = font();
    bold.setBold(true);
    std::int32_t global = 0;
    for (const auto& r : step.replicas) global += r.shard_size;
    const bool splitting = current(StepView::Stage::SplitBatch);
    painter.setFont(bold);
    painter.setPen(ink(QColor(0x20, 0x20, 0x20)));
    painter.drawText(QRectF(layout.columns_left, y, layout.columns_width, layout.line), Qt::AlignLeft | Qt::AlignVCenter,
                     StepView::tr("Global batch: %1 samples, split into %2 shards").arg(global).arg(n));
    painter.setFont(font());
    y += layout.line + 2;
    const QRectF bar(layout.columns_left, y, layout.columns_width, layout.bar_height);
    double x = bar.left();
    for (int i = 0; i < n; ++i) {
        const auto& r = step.replicas[static_cast<std::size_t>(i)];
        const double w = global > 0 ? bar.width() * r.shard_size / global : bar.width() / n;
        const QRectF segment(x, bar.top(), w, bar.height());
        painter.setPen(QPen(splitting ? kAccent : ink(QColor(0x80, 0x80, 0x80)), splitting ? 2 : 1));
        painter.setBrush(ink(kShardColours[static_cast<std::size_t>(i) % kShardColours.size()]));
        painter.drawRect(segment);
        painter.setPen(ink(QColor(0x10, 0x10, 0x10)));
        painter.drawText(segment, Qt::AlignCenter,
                         metrics.elidedText(StepView::tr("%1 samples").arg(r.shard_size), Qt::ElideRight, static_cast<int>(w - 4)));
        shard_centres.emplace_back(segment.center().x(), segment.bottom());
        x += w;
    }
    return y + layout.bar_height;
}

std::vector<QRectF> StepDiagram::drawReplicas(QPainter& painter, const Layout& layout, const StepEndEvent& step, double y) const {
    // One box per replica.
    const double line = layout.line;
    QFont bold = font();
    bold.setBold(true);
    const TrainBeginEvent& begin = view_->runInfo();
    const QString parameters = QString::fromStdString(format_thousands(begin.parameters));
    const bool computing = current(StepView::Stage::LocalGradients);
    const bool copying = current(StepView::Stage::CopyModel);
    std::vector<QRectF> boxes;
    for (int i = 0; i < layout.replicas; ++i) {
        const auto& r = step.replicas[static_cast<std::size_t>(i)];
        const QRectF box(layout.columnX(i), y, layout.column_width, layout.box_height);
        boxes.push_back(box);
        painter.setPen(QPen(computing ? kAccent : lit(StepView::Stage::LocalGradients) ? kAccent.lighter(130) : ink(kIdle), computing ? 2.5 : 1.2));
        painter.setBrush(computing ? ink(QColor(0xee, 0xf3, 0xf9)) : ink(kBox));
        painter.drawRoundedRect(box, 6, 6);
        const double inner_left = box.left() + 8, inner_width = box.width() - 16;
        double ly = box.top() + 6;
        auto text_line = [&](const QString& text, const QColor& colour, bool strong = false) {
            painter.setFont(strong ? bold : font());
            painter.setPen(colour);
            painter.drawText(QRectF(inner_left, ly, inner_width, line), Qt::AlignLeft | Qt::AlignVCenter,
                             QFontMetrics(painter.font()).elidedText(text, Qt::ElideRight, static_cast<int>(inner_width)));
            ly += line;
        };
        const QString device = i < static_cast<int>(begin.devices.size()) ? QString::fromStdString(begin.devices[static_cast<std::size_t>(i)])
                                                                            : QString();
        text_line(StepView::tr("Replica %1").arg(i), ink(QColor(0x10, 0x10, 0x10)), true);
        text_line(device, ink(QColor(0x40, 0x40, 0x40)));
        if (copying) painter.fillRect(QRectF(box.left() + 3, ly, box.width() - 6, line), ink(kAccentLight));
        text_line(StepView::tr("variables: %1 (own copy)").arg(parameters), copying ? ink(kAccent.darker(130)) : ink(QColor(0x30, 0x30, 0x30)));
        text_line(StepView::tr("shard: %1 samples").arg(r.shard_size), ink(QColor(0x30, 0x30, 0x30)));
        text_line(StepView::tr("local loss: %1").arg(number_text(r.local_loss)), ink(QColor(0x30, 0x30, 0x30)));
        text_line(StepView::tr("‖g‖ local: %1").arg(number_text(r.grad_norm_before)), ink(QColor(0x30, 0x30, 0x30)));
        text_line(StepView::tr("‖g‖ after all-reduce: %1").arg(number_text(r.grad_norm_after)),
                  lit(StepView::Stage::AllReduce) ? ink(kExchange.darker(140)) : ink(QColor(0x30, 0x30, 0x30)));
        // A GPU backend times its phases with CUDA events: the device's own time, said so.
        const QString phases = r.device_timed
                                   ? StepView::tr("GPU time: forward %1 · backward %2").arg(ms_text(r.forward_ms), ms_text(r.backward_ms))
                                   : StepView::tr("forward %1 · backward %2").arg(ms_text(r.forward_ms), ms_text(r.backward_ms));
        text_line(phases, ink(QColor(0x30, 0x30, 0x30)));
    }
    painter.setFont(font());
    return boxes;
}

double StepDiagram::drawUpdates(QPainter& painter, const Layout& layout, const StepEndEvent& step, double y) const {
    // The update on every replica, and its checksum.
    const QFontMetrics metrics = fontMetrics();
    const double line = layout.line;
    const bool updating = current(StepView::Stage::Update);
    if (!view_->optimizerText().isEmpty()) {
        painter.setPen(updating ? ink(kUpdate.darker(140)) : ink(QColor(0x40, 0x40, 0x40)));
        painter.drawText(QRectF(layout.columns_left, y, layout.columns_width, line), Qt::AlignLeft | Qt::AlignVCenter,
                         metrics.elidedText(view_->optimizerText(), Qt::ElideRight, static_cast<int>(layout.columns_width)));
        y += line + 4;
    }
    QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    mono.setPointSizeF(font().pointSizeF());
    for (int i = 0; i < layout.replicas; ++i) {
        const auto& r = step.replicas[static_cast<std::size_t>(i)];
        const QRectF box(layout.columnX(i), y, layout.column_width, layout.update_height);
        painter.setPen(QPen(stageColour(StepView::Stage::Update, kUpdate), updating ? 2.5 : 1.2));
        painter.setBrush(updating ? ink(QColor(0xe6, 0xf2, 0xe4)) : ink(kBox));
        painter.drawRoundedRect(box, 5, 5);
        painter.setPen(ink(QColor(0x20, 0x20, 0x20)));
        const QRectF first(box.left() + 8, box.top() + 4, box.width() - 16, line);
        painter.drawText(first, Qt::AlignLeft | Qt::AlignVCenter,
                         metrics.elidedText(StepView::tr("update %1").arg(ms_text(r.update_ms)), Qt::ElideRight,
                                            static_cast<int>(first.width())));
        painter.setFont(mono);
        const QRectF second(box.left() + 8, box.top() + 4 + line, box.width() - 16, line);
        const QString sum = r.weights_checksum != 0 ? StepView::tr("checksum %1").arg(checksum_hex(r.weights_checksum))
                                                    : StepView::tr("checksum not reported");
        painter.drawText(second, Qt::AlignLeft | Qt::AlignVCenter,
                         QFontMetrics(mono).elidedText(sum, Qt::ElideRight, static_cast<int>(second.width())));
        painter.setFont(font());
    }
    return y + layout.update_height + 10;
}

void StepDiagram::drawBarrier(QPainter& painter, const Layout& layout, const StepEndEvent& step, double y) const {
    // The barrier: the step ends when the slowest replica is done.
    const double line = layout.line;
    const int n = layout.replicas;
    const bool waiting = current(StepView::Stage::WaitForEveryone);
    painter.setPen(QPen(stageColour(StepView::Stage::WaitForEveryone, kAccent), waiting ? 3 : 1.5, Qt::DashLine));
    painter.drawLine(QPointF(layout.columns_left, y), QPointF(layout.columns_left + layout.columns_width, y));
    double longest = 0.0;
    int longest_replica = 0;
    for (int i = 0; i < n; ++i) {
        const auto& r = step.replicas[static_cast<std::size_t>(i)];
        if (r.barrier_wait_ms + r.finish_wait_ms > longest) {
            longest = r.barrier_wait_ms + r.finish_wait_ms;
            longest_replica = i;
        }
    }
    painter.setPen(ink(QColor(0x30, 0x30, 0x30)));
    const QString barrier = n > 1 ? StepView::tr("Barrier: the step ends when the slowest replica is done (longest wait: "
                                                 "replica %1, %2)")
                                        .arg(longest_replica)
                                        .arg(ms_text(longest))
                                  : StepView::tr("One replica: nobody to wait for.");
    const double badge_width = 230;
    painter.drawText(QRectF(layout.columns_left, y + 4, layout.columns_width - badge_width - 8, 2 * line),
                     Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, barrier);

    // The checksum badge.
    const QRectF badge(layout.columns_left + layout.columns_width - badge_width, y + 4, badge_width, line + 8);
    const auto sums = view_->checksums();
    const bool known = !sums.empty() && sums.front() != 0;
    const QColor badge_colour = !known ? ink(kIdle) : view_->checksumsIdentical() ? kGood : kBad;
    painter.setPen(Qt::NoPen);
    painter.setBrush(badge_colour);
    painter.drawRoundedRect(badge, (line + 8) / 2, (line + 8) / 2);
    painter.setPen(Qt::white);
    QFont bold = font();
    bold.setBold(true);
    painter.setFont(bold);
    painter.drawText(badge, Qt::AlignCenter, view_->checksumBadgeText());
}

}  // namespace mirrorlab::ui
