#pragma once
// Choosing the devices to train on: every physical device the registry knows (the CPU, and the
// GPUs a provider registered), each either one logical device, split into N memory-limited
// virtual devices, or growing on demand; a to-scale drawing of the carving; the configuration
// validated by the engine on every change (the message says what is wrong and how to fix it);
// and the strategy and all-reduce that will run. All of it is the engine's StrategyPlan: the
// panel derives no device name, limit or all-reduce of its own.
// Nothing is locked after a run: the engine is rebuilt from config() at every start.
#include <QString>
#include <QStringList>
#include <QWidget>

#include <memory>
#include <vector>

#include "core/device/device.h"
#include "core/distribute/cross_device_ops.h"
#include "core/distribute/strategy_plan.h"

class QComboBox;
class QGroupBox;
class QLabel;
class QPushButton;
class QSettings;
class QVBoxLayout;

namespace mirrorlab::ui {

class DeviceCarvingView;

class DevicesPanel : public QWidget {
    Q_OBJECT
public:
    explicit DevicesPanel(std::shared_ptr<DeviceRegistry> registry, QWidget* parent = nullptr);
    ~DevicesPanel() override;

    DeviceConfig config() const;
    // Shows `config`; choices naming a device this machine lacks are kept (validation explains).
    void setConfig(const DeviceConfig& config);
    int replicaCount() const;  // of config(), whether or not it is valid
    // What the panel says about the strategy: a sentence, then strategyLog() line by line.
    QString strategyDescription() const;
    // The engine's lines about the all-reduce, exactly as it logs them when the run starts: its
    // warnings, "All-reduce: <algorithm> (<why>)" and, but for NCCL, how the gradients travel.
    // Empty for one device or an invalid configuration.
    QStringList strategyLog() const;
    QString allReduceSentence() const;  // the "All-reduce: ..." line; empty without an all-reduce
    // The plan of config() with allReduce(), which everything the panel shows comes from.
    const StrategyPlan& plan() const { return plan_; }
    QString validationError() const;  // empty when the configuration is valid
    // A valid configuration whose virtual devices' limits add up to more than a device has free
    // now (other programs hold the rest): a run may run out of memory before the limits. Empty if not.
    QString memoryCaution() const;
    AllReduceAlgorithm allReduce() const;
    void setAllReduce(AllReduceAlgorithm algorithm);

    // Keys "devices/spec" (DeviceConfig::to_spec()) and "devices/allReduce".
    void saveSettings(QSettings& settings) const;
    void restoreSettings(const QSettings& settings);

    // Re-reads the registry's devices (a GPU provider registered after the panel was built),
    // keeping the configuration.
    void reloadDevices();

signals:
    void configChanged();

private:
    struct Editor;

    void buildEditors();
    void buildWholeRow(Editor& editor);
    void buildVirtualRow(Editor& editor);
    void buildLimitTable(Editor& editor);
    QGroupBox* buildStrategyBox(QWidget* parent);
    DeviceConfig tutorialConfig() const;
    Editor* addEditor(const PhysicalDevice& device);
    DeviceChoice choiceFor(const Editor& editor) const;
    void showChoice(Editor& editor, const DeviceChoice* choice);
    void syncLimitTable(Editor& editor);
    QString cautionFor(const DeviceConfig& config, const StrategyPlan& plan) const;
    void edited();
    void refresh();  // everything below, from the editors' state and the engine's plan
    void refreshEditor(Editor& editor);
    void showLogicalNames();
    void showMissingDevices();
    void showValidation(const DeviceConfig& current);
    void showStrategy();
    void showCarving(const DeviceConfig& current);

    std::shared_ptr<DeviceRegistry> registry_;
    std::vector<std::unique_ptr<Editor>> editors_;
    std::vector<DeviceChoice> missing_;  // chosen, but not a device this panel shows
    bool updating_ = false;
    QString error_;
    QString caution_;
    QString strategy_;
    QStringList strategy_log_;
    StrategyPlan plan_;

    QLabel* gpu_status_ = nullptr;
    QVBoxLayout* device_list_ = nullptr;
    QLabel* missing_label_ = nullptr;
    QPushButton* remove_missing_ = nullptr;
    DeviceCarvingView* carving_ = nullptr;
    QComboBox* all_reduce_ = nullptr;
    QLabel* strategy_label_ = nullptr;
    QLabel* validation_label_ = nullptr;
};

}  // namespace mirrorlab::ui
