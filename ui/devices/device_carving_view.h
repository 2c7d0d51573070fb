#pragma once
// A drawing of how the chosen configuration carves each physical device into logical devices:
// one bar per physical device, to scale against its memory, with a segment per virtual device
// (width = its memory limit), the unallocated rest hatched, and a legend under the bar naming
// every logical device (segments of small limits on a large device are too thin for text).
#include <QString>
#include <QStringList>
#include <QWidget>

#include <cstdint>
#include <vector>

#include "core/device/device.h"

class QPainter;

namespace mirrorlab::ui {

struct CarvedDevice {
    QString id;    // "CPU:0"
    QString name;  // "AMD EPYC 9654"
    std::int64_t total_bytes = 0;  // 0: unknown
    bool used = false;
    MemoryMode mode = MemoryMode::Whole;
    QStringList logical_names;              // "/device:CPU:0", ... in replica order
    std::vector<std::int64_t> limit_bytes;  // Virtual: one per logical device
};

class DeviceCarvingView : public QWidget {
    Q_OBJECT
public:
    explicit DeviceCarvingView(QWidget* parent = nullptr);
    ~DeviceCarvingView() override;

    void setDevices(std::vector<CarvedDevice> devices);
    const std::vector<CarvedDevice>& devices() const { return devices_; }

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    struct Layout;
    struct LayoutRow;
    struct LegendItem;
    Layout layoutFor(int width) const;
    void carveVirtual(const CarvedDevice& device, LayoutRow& row, std::vector<LegendItem>& items) const;
    int flowLegend(std::vector<LegendItem>& items, int left, int right, int top) const;
    void drawBar(QPainter& painter, const LayoutRow& row) const;
    void drawLegend(QPainter& painter, const LayoutRow& row) const;

    std::vector<CarvedDevice> devices_;
};

}  // namespace mirrorlab::ui
