#include "ui/devices/devices_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <exception>

#include "core/distribute/strategy_plan.h"
#include "ui/common/format.h"
#include "ui/devices/device_carving_view.h"

namespace mirrorlab::ui {

namespace {

constexpr int kMaxVirtualDevices = 16;
// Far beyond any machine, so that a limit that is too large reaches validate(), which explains.
constexpr int kMaxLimitMb = 16 * 1024 * 1024;
constexpr int kVisibleLimitRows = 6;

const QString kSpecKey = QStringLiteral("devices/spec");
const QString kAllReduceKey = QStringLiteral("devices/allReduce");

// The planned names of the logical devices of `config.devices[choice]`.
QStringList names_of_choice(const StrategyPlan& plan, std::size_t choice) {
    QStringList names;
    for (const LogicalDevicePlan& device : plan.devices) {
        if (device.choice == choice) names << QString::fromStdString(device.name);
    }
    return names;
}

// Rich text for a label that keeps device names ("/device:CPU:0", "GPU:1") on one line: a word
// joiner (U+2060, invisible) after each '/' and ':' of a name forbids the breaks Qt would take there.
QString keep_names_whole(const QString& plain) {
    static const QRegularExpression name(QStringLiteral("(?:/device:)?(?:CPU|GPU):\\d+"));
    static const QString joiner(QChar(0x2060));
    QString html;
    qsizetype done = 0;
    for (auto it = name.globalMatch(plain); it.hasNext();) {
        const QRegularExpressionMatch match = it.next();
        html += plain.mid(done, match.capturedStart() - done).toHtmlEscaped();
        QString whole = match.captured();
        whole.replace(QLatin1Char('/'), QLatin1Char('/') + joiner).replace(QLatin1Char(':'), QLatin1Char(':') + joiner);
        html += whole;
        done = match.capturedEnd();
    }
    return html + plain.mid(done).toHtmlEscaped();
}

QString engine_message(const std::string& error) {
    QString text = QString::fromStdString(error);
    const QString prefix = QStringLiteral("device configuration: ");
    if (text.startsWith(prefix)) text.remove(0, prefix.size());
    // The engine's advice names mirrorlab-cli's option; here the same fix is made in this panel.
    const QString cli_advice = QStringLiteral("; use --devices cpu or cpu:2 to train on the CPU");
    if (text.endsWith(cli_advice)) {
        text.chop(cli_advice.size());
        text += DevicesPanel::tr("; press Remove beside the missing devices and tick the CPU to train on it");
    }
    text.replace(QStringLiteral("train on the CPU (--devices cpu)"), DevicesPanel::tr("train on the CPU (tick it above)"));
    return text;
}

// Gives an editor's widget its object name: the device's prefix ("cpu", "gpu0") and what it is.
QWidget* named(QWidget* widget, const QString& prefix, const char* suffix) {
    widget->setObjectName(prefix + QLatin1String(suffix));
    return widget;
}

// "16 cores · 31.2 GiB memory (20.1 GiB free)", or a GPU's memory, compute capability and bus.
QString device_facts(const PhysicalDevice& device) {
    const QString memory = device.total_memory_bytes > 0 ? bytes_text(device.total_memory_bytes) : DevicesPanel::tr("unknown");
    if (device.type == DeviceType::CPU) {
        return DevicesPanel::tr("%1 cores · %2 memory (%3 free)")
            .arg(device.cores)
            .arg(memory, bytes_text(device.free_memory_bytes));
    }
    QString facts = DevicesPanel::tr("%1 memory · compute capability %2 · bus %3")
                        .arg(memory,
                             device.compute_capability.empty() ? DevicesPanel::tr("unknown")
                                                               : QString::fromStdString(device.compute_capability),
                             device.bus_id.empty() ? DevicesPanel::tr("unknown") : QString::fromStdString(device.bus_id));
    if (device.cores > 0) facts += DevicesPanel::tr(" · %1 multiprocessors").arg(device.cores);
    return facts;
}

}  // namespace

struct DevicesPanel::Editor {
    PhysicalDevice device;
    QString prefix;  // objectName prefix: "cpu", "gpu0", ...
    QGroupBox* box = nullptr;
    QLabel* facts = nullptr;
    QCheckBox* use = nullptr;
    QComboBox* mode = nullptr;
    QWidget* whole_row = nullptr;
    QSpinBox* replicas = nullptr;
    QLabel* replicas_hint = nullptr;
    QWidget* virtual_row = nullptr;
    QSpinBox* count = nullptr;
    QSpinBox* limit_mb = nullptr;
    QCheckBox* each = nullptr;
    QTableWidget* table = nullptr;
    QLabel* hint = nullptr;

    MemoryMode currentMode() const { return static_cast<MemoryMode>(mode->currentData().toInt()); }
};

DevicesPanel::DevicesPanel(std::shared_ptr<DeviceRegistry> registry, QWidget* parent)
    : QWidget(parent), registry_(registry ? std::move(registry) : std::make_shared<DeviceRegistry>()) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);

    auto* scroll = new QScrollArea(this);
    scroll->setObjectName(QStringLiteral("devicesScroll"));
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    auto* content = new QWidget(scroll);
    auto* layout = new QVBoxLayout(content);

    gpu_status_ = new QLabel(content);
    gpu_status_->setObjectName(QStringLiteral("gpuStatus"));
    gpu_status_->setWordWrap(true);
    layout->addWidget(gpu_status_);

    device_list_ = new QVBoxLayout;
    layout->addLayout(device_list_);

    auto* missing_row = new QHBoxLayout;
    missing_label_ = new QLabel(content);
    missing_label_->setObjectName(QStringLiteral("missingDevices"));
    missing_label_->setWordWrap(true);
    remove_missing_ = new QPushButton(tr("Remove"), content);
    remove_missing_->setObjectName(QStringLiteral("removeMissing"));
    remove_missing_->setToolTip(tr("Forget the saved devices this computer does not have"));
    missing_row->addWidget(missing_label_, 1);
    missing_row->addWidget(remove_missing_);
    layout->addLayout(missing_row);
    connect(remove_missing_, &QPushButton::clicked, this, [this] {
        missing_.clear();
        edited();
    });

    auto* carving_box = new QGroupBox(tr("Logical devices (to scale)"), content);
    auto* carving_layout = new QVBoxLayout(carving_box);
    carving_ = new DeviceCarvingView(carving_box);
    carving_layout->addWidget(carving_);
    layout->addWidget(carving_box);

    layout->addWidget(buildStrategyBox(content));
    layout->addStretch(1);
    connect(all_reduce_, &QComboBox::currentIndexChanged, this, [this] { edited(); });

    scroll->setWidget(content);
    outer->addWidget(scroll, 1);

    // Outside the scroll area: what stands between the person and Start is always in view.
    validation_label_ = new QLabel(this);
    validation_label_->setObjectName(QStringLiteral("validationLabel"));
    validation_label_->setWordWrap(true);
    validation_label_->setTextFormat(Qt::RichText);
    validation_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    validation_label_->setContentsMargins(8, 4, 8, 6);
    outer->addWidget(validation_label_);

    buildEditors();
    setConfig(tutorialConfig());
}

QGroupBox* DevicesPanel::buildStrategyBox(QWidget* parent) {
    auto* strategy_box = new QGroupBox(tr("Strategy"), parent);
    auto* strategy_layout = new QVBoxLayout(strategy_box);
    auto* all_reduce_row = new QHBoxLayout;
    auto* all_reduce_label = new QLabel(tr("All-reduce:"), strategy_box);
    all_reduce_ = new QComboBox(strategy_box);
    all_reduce_->setObjectName(QStringLiteral("allReduce"));
    all_reduce_->addItem(tr("Auto"), static_cast<int>(AllReduceAlgorithm::Auto));
    all_reduce_->addItem(tr("Reduce to one device"), static_cast<int>(AllReduceAlgorithm::ReduceToOneDevice));
    all_reduce_->addItem(tr("Ring"), static_cast<int>(AllReduceAlgorithm::Ring));
    all_reduce_->setToolTip(
        tr("Auto picks what the engine would: reduce to one device and broadcast when replicas share a physical "
           "device (as TensorFlow does for virtual GPUs), NCCL between separate GPUs where the CUDA backend has it, "
           "otherwise a ring."));
    all_reduce_label->setBuddy(all_reduce_);
    all_reduce_row->addWidget(all_reduce_label);
    all_reduce_row->addWidget(all_reduce_, 1);
    strategy_layout->addLayout(all_reduce_row);
    strategy_label_ = new QLabel(strategy_box);
    strategy_label_->setObjectName(QStringLiteral("strategyLabel"));
    strategy_label_->setWordWrap(true);
    strategy_label_->setTextFormat(Qt::RichText);
    strategy_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    strategy_label_->setToolTip(tr("Under the first line: what the engine logs about the all-reduce when the run "
                                   "starts, word for word."));
    strategy_layout->addWidget(strategy_label_);
    return strategy_box;
}

// The tutorial's setup: two virtual devices of 1024 MB, carved from the first GPU as in the
// tutorial where there is one, else from the CPU.
DeviceConfig DevicesPanel::tutorialConfig() const {
    auto tutorial = [](DeviceType type, int index) {
        DeviceConfig config;
        config.devices.push_back({type, index, MemoryMode::Virtual, 1, {1024, 1024}});
        return config;
    };
    DeviceConfig initial = tutorial(DeviceType::CPU, 0);
    const auto physical = registry_->physical_devices();
    const auto first_gpu = std::find_if(physical.begin(), physical.end(),
                                        [](const PhysicalDevice& device) { return device.type == DeviceType::GPU; });
    if (first_gpu != physical.end()) {
        try {
            DeviceConfig on_gpu = tutorial(DeviceType::GPU, first_gpu->index);
            on_gpu.validate(*registry_);  // a GPU too small for two 1024 MB devices keeps the CPU
            initial = on_gpu;
        } catch (const std::exception&) {
        }
    }
    return initial;
}

DevicesPanel::~DevicesPanel() = default;

void DevicesPanel::buildEditors() {
    for (auto& editor : editors_) delete editor->box;
    editors_.clear();
    const auto devices = registry_->physical_devices();
    int gpus = 0;
    for (const auto& device : devices) {
        addEditor(device);
        gpus += device.type == DeviceType::GPU ? 1 : 0;
    }
    const QString status = QString::fromStdString(registry_->gpu_status());
    gpu_status_->setText(gpus == 0 ? tr("No GPU found (%1). Virtual devices, memory limits and mirrored training "
                                        "all work on the CPU too.")
                                         .arg(status)
                                   : tr("GPU backend: %1").arg(status));
}

DevicesPanel::Editor* DevicesPanel::addEditor(const PhysicalDevice& device) {
    auto owned = std::make_unique<Editor>();
    Editor& e = *owned;
    e.device = device;
    const bool cpu = device.type == DeviceType::CPU;
    e.prefix = cpu ? QStringLiteral("cpu") : QStringLiteral("gpu%1").arg(device.index);

    const QString id = QString::fromStdString(device.id());
    e.box = new QGroupBox(tr("%1 · %2").arg(id, QString::fromStdString(device.name)));
    named(e.box, e.prefix, "Box");
    auto* box_layout = new QVBoxLayout(e.box);

    e.facts = new QLabel(e.box);
    named(e.facts, e.prefix, "Facts");
    e.facts->setWordWrap(true);
    e.facts->setTextInteractionFlags(Qt::TextSelectableByMouse);
    e.facts->setText(device_facts(device));
    box_layout->addWidget(e.facts);

    auto* mode_row = new QHBoxLayout;
    e.use = new QCheckBox(tr("Use"), e.box);
    named(e.use, e.prefix, "Use");
    e.use->setToolTip(tr("Train on %1").arg(id));
    e.mode = new QComboBox(e.box);
    named(e.mode, e.prefix, "Mode");
    e.mode->setAccessibleName(tr("How to use %1").arg(id));
    e.mode->setToolTip(tr("One logical device, several virtual devices with a memory limit each, or memory growth"));
    e.mode->addItem(tr("One logical device"), static_cast<int>(MemoryMode::Whole));
    e.mode->addItem(tr("Split into N virtual devices"), static_cast<int>(MemoryMode::Virtual));
    e.mode->addItem(tr("Memory growth"), static_cast<int>(MemoryMode::Growth));
    mode_row->addWidget(e.use);
    mode_row->addWidget(e.mode, 1);
    box_layout->addLayout(mode_row);

    buildWholeRow(e);
    box_layout->addWidget(e.whole_row);
    buildVirtualRow(e);
    box_layout->addWidget(e.virtual_row);

    buildLimitTable(e);
    box_layout->addWidget(e.table);

    e.hint = new QLabel(e.box);
    named(e.hint, e.prefix, "Hint");
    e.hint->setWordWrap(true);
    QPalette hint_palette = e.hint->palette();
    hint_palette.setColor(QPalette::WindowText, hint_palette.color(QPalette::PlaceholderText));
    e.hint->setPalette(hint_palette);
    box_layout->addWidget(e.hint);

    connect(e.use, &QCheckBox::toggled, this, [this] { edited(); });
    connect(e.mode, &QComboBox::currentIndexChanged, this, [this] { edited(); });
    connect(e.replicas, &QSpinBox::valueChanged, this, [this] { edited(); });
    connect(e.count, &QSpinBox::valueChanged, this, [this] { edited(); });
    connect(e.limit_mb, &QSpinBox::valueChanged, this, [this] { edited(); });
    connect(e.each, &QCheckBox::toggled, this, [this] { edited(); });

    device_list_->addWidget(e.box);
    editors_.push_back(std::move(owned));
    return editors_.back().get();
}

// Replicas sharing one logical device (One logical device mode).
void DevicesPanel::buildWholeRow(Editor& e) {
    e.whole_row = new QWidget(e.box);
    auto* whole_layout = new QHBoxLayout(e.whole_row);
    whole_layout->setContentsMargins(0, 0, 0, 0);
    auto* replicas_label = new QLabel(tr("Replicas:"), e.whole_row);
    e.replicas = new QSpinBox(e.whole_row);
    named(e.replicas, e.prefix, "Replicas");
    e.replicas->setRange(1, kMaxReplicas);
    e.replicas->setToolTip(tr("Several replicas on one device each get their own thread and share its cores"));
    replicas_label->setBuddy(e.replicas);
    e.replicas_hint = new QLabel(e.whole_row);
    e.replicas_hint->setWordWrap(true);
    whole_layout->addWidget(replicas_label);
    whole_layout->addWidget(e.replicas);
    whole_layout->addWidget(e.replicas_hint, 1);
}

// The virtual devices' count and memory limit (Split into N virtual devices mode).
void DevicesPanel::buildVirtualRow(Editor& e) {
    const QString id = QString::fromStdString(e.device.id());
    e.virtual_row = new QWidget(e.box);
    auto* grid = new QGridLayout(e.virtual_row);
    grid->setContentsMargins(0, 0, 0, 0);
    auto* count_label = new QLabel(tr("Virtual devices:"), e.virtual_row);
    e.count = new QSpinBox(e.virtual_row);
    named(e.count, e.prefix, "VirtualCount");
    e.count->setRange(1, kMaxVirtualDevices);
    e.count->setValue(2);
    count_label->setBuddy(e.count);
    e.count->setToolTip(tr("Logical devices carved out of %1, one replica each").arg(id));
    auto* limit_label = new QLabel(tr("Memory limit each:"), e.virtual_row);
    e.limit_mb = new QSpinBox(e.virtual_row);
    named(e.limit_mb, e.prefix, "MemoryLimitMb");
    e.limit_mb->setRange(1, kMaxLimitMb);
    e.limit_mb->setValue(1024);
    e.limit_mb->setSuffix(tr(" MB"));
    e.limit_mb->setToolTip(tr("Memory limit of every virtual device in MB (MiB, as TensorFlow's memory_limit)"));
    limit_label->setBuddy(e.limit_mb);
    e.each = new QCheckBox(tr("Set each limit separately"), e.virtual_row);
    named(e.each, e.prefix, "EditEachLimit");
    e.each->setToolTip(tr("Give every virtual device its own memory limit in the table below"));
    grid->addWidget(count_label, 0, 0);
    grid->addWidget(e.count, 0, 1);
    grid->addWidget(limit_label, 1, 0);
    grid->addWidget(e.limit_mb, 1, 1);
    grid->addWidget(e.each, 2, 0, 1, 2);
    grid->setColumnStretch(2, 1);
}

// One memory limit per virtual device, when each is set separately.
void DevicesPanel::buildLimitTable(Editor& e) {
    e.table = new QTableWidget(0, 2, e.box);
    named(e.table, e.prefix, "LimitTable");
    e.table->setAccessibleName(tr("Memory limit of each virtual device"));
    e.table->setToolTip(e.table->accessibleName());
    e.table->setHorizontalHeaderLabels({tr("Logical device"), tr("Memory limit")});
    e.table->verticalHeader()->hide();
    e.table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    e.table->horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    e.table->setSelectionMode(QAbstractItemView::NoSelection);
    e.table->setEditTriggers(QAbstractItemView::NoEditTriggers);
}

void DevicesPanel::syncLimitTable(Editor& e) {
    const int rows = e.count->value();
    QTableWidget* table = e.table;
    while (table->rowCount() > rows) table->removeRow(table->rowCount() - 1);
    while (table->rowCount() < rows) {
        const int row = table->rowCount();
        table->insertRow(row);
        auto* name = new QTableWidgetItem;
        name->setFlags(Qt::ItemIsEnabled);
        table->setItem(row, 0, name);
        auto* spin = new QSpinBox(table);
        spin->setObjectName(e.prefix + QStringLiteral("Limit%1").arg(row));
        spin->setAccessibleName(tr("Memory limit of virtual device %1").arg(row));
        spin->setToolTip(spin->accessibleName());
        spin->setRange(1, kMaxLimitMb);
        spin->setSuffix(tr(" MB"));
        spin->setFrame(false);
        spin->setValue(e.limit_mb->value());
        connect(spin, &QSpinBox::valueChanged, this, [this] { edited(); });
        table->setCellWidget(row, 1, spin);
    }
    // Until the person edits limits one by one, every row follows the shared limit.
    if (!e.each->isChecked()) {
        for (int row = 0; row < rows; ++row) {
            auto* spin = static_cast<QSpinBox*>(table->cellWidget(row, 1));
            const QSignalBlocker blocker(spin);
            spin->setValue(e.limit_mb->value());
        }
    }
    const int visible = std::clamp(rows, 1, kVisibleLimitRows);
    table->setFixedHeight(table->horizontalHeader()->sizeHint().height() +
                          visible * table->verticalHeader()->defaultSectionSize() + 2 * table->frameWidth());
}

DeviceChoice DevicesPanel::choiceFor(const Editor& e) const {
    DeviceChoice choice;
    choice.type = e.device.type;
    choice.index = e.device.index;
    choice.mode = e.currentMode();
    choice.replicas = choice.mode == MemoryMode::Whole ? e.replicas->value() : 1;
    if (choice.mode == MemoryMode::Virtual) {
        const int count = e.count->value();
        if (e.each->isChecked() && e.table->rowCount() == count) {
            for (int row = 0; row < count; ++row) {
                choice.memory_limits_mb.push_back(static_cast<QSpinBox*>(e.table->cellWidget(row, 1))->value());
            }
        } else {
            choice.memory_limits_mb.assign(static_cast<std::size_t>(count), e.limit_mb->value());
        }
    }
    return choice;
}

void DevicesPanel::showChoice(Editor& e, const DeviceChoice* choice) {
    e.use->setChecked(choice != nullptr);
    if (choice == nullptr) return;
    e.mode->setCurrentIndex(std::max(0, e.mode->findData(static_cast<int>(choice->mode))));
    e.replicas->setValue(choice->mode == MemoryMode::Whole ? choice->replicas : 1);
    if (choice->mode != MemoryMode::Virtual || choice->memory_limits_mb.empty()) return;
    const auto& limits = choice->memory_limits_mb;
    const int count = static_cast<int>(limits.size());
    e.count->setMaximum(std::max(kMaxVirtualDevices, count));
    e.count->setValue(count);
    const bool uniform = std::all_of(limits.begin(), limits.end(), [&](auto v) { return v == limits.front(); });
    e.limit_mb->setValue(static_cast<int>(std::min<std::int64_t>(limits.front(), kMaxLimitMb)));
    e.each->setChecked(!uniform);
    syncLimitTable(e);
    for (int row = 0; row < count; ++row) {
        auto* spin = static_cast<QSpinBox*>(e.table->cellWidget(row, 1));
        spin->setValue(static_cast<int>(std::min<std::int64_t>(limits[static_cast<std::size_t>(row)], kMaxLimitMb)));
    }
}

DeviceConfig DevicesPanel::config() const {
    DeviceConfig config;
    for (const auto& editor : editors_) {
        if (editor->use->isChecked()) config.devices.push_back(choiceFor(*editor));
    }
    config.devices.insert(config.devices.end(), missing_.begin(), missing_.end());
    return config;
}

void DevicesPanel::setConfig(const DeviceConfig& config) {
    updating_ = true;
    std::vector<bool> shown(config.devices.size(), false);
    for (auto& editor : editors_) {
        const DeviceChoice* match = nullptr;
        for (std::size_t i = 0; i < config.devices.size(); ++i) {
            const auto& choice = config.devices[i];
            if (!shown[i] && choice.type == editor->device.type && choice.index == editor->device.index) {
                match = &choice;
                shown[i] = true;
                break;
            }
        }
        showChoice(*editor, match);
    }
    missing_.clear();
    for (std::size_t i = 0; i < config.devices.size(); ++i) {
        if (!shown[i]) missing_.push_back(config.devices[i]);
    }
    updating_ = false;
    edited();
}

int DevicesPanel::replicaCount() const { return config().replica_count(); }

QString DevicesPanel::strategyDescription() const { return strategy_; }

QStringList DevicesPanel::strategyLog() const { return strategy_log_; }

QString DevicesPanel::allReduceSentence() const { return QString::fromStdString(plan_.all_reduce_line()); }

QString DevicesPanel::validationError() const { return error_; }

QString DevicesPanel::memoryCaution() const { return caution_; }

QString DevicesPanel::cautionFor(const DeviceConfig& config, const StrategyPlan& plan) const {
    QStringList cautions;
    const DeviceProvider* gpus = registry_->provider(DeviceType::GPU);
    // GPUs only: a GPU's free memory is exact and shared with other programs, while a CPU's "free"
    // leaves out the page cache the system would hand back.
    for (std::size_t c = 0; c < config.devices.size(); ++c) {
        const DeviceChoice& choice = config.devices[c];
        if (choice.mode != MemoryMode::Virtual || choice.type != DeviceType::GPU || gpus == nullptr) continue;
        const PhysicalDevice* device = registry_->find(choice.type, choice.index);
        if (device == nullptr) continue;
        // Free memory now (other programs come and go), else what discovery saw.
        std::int64_t free_bytes = gpus->free_memory_bytes(choice.index);
        if (free_bytes <= 0) free_bytes = device->free_memory_bytes;
        std::int64_t asked_bytes = 0;
        for (const LogicalDevicePlan& logical : plan.devices) {
            if (logical.choice == c) asked_bytes += logical.memory_limit_bytes;
        }
        if (free_bytes <= 0 || asked_bytes <= free_bytes) continue;
        cautions << tr("%1 has %2 free, but its virtual devices ask for %3 in all: other programs hold the rest, so "
                       "a run may run out of memory before reaching the limits.")
                        .arg(QString::fromStdString(device->id()), bytes_text(free_bytes), bytes_text(asked_bytes));
    }
    return cautions.join(QLatin1Char(' '));
}

AllReduceAlgorithm DevicesPanel::allReduce() const {
    return static_cast<AllReduceAlgorithm>(all_reduce_->currentData().toInt());
}

void DevicesPanel::setAllReduce(AllReduceAlgorithm algorithm) {
    const int index = all_reduce_->findData(static_cast<int>(algorithm));
    all_reduce_->setCurrentIndex(index >= 0 ? index : 0);
}

void DevicesPanel::saveSettings(QSettings& settings) const {
    settings.setValue(kSpecKey, QString::fromStdString(config().to_spec()));
    settings.setValue(kAllReduceKey, QString::fromUtf8(all_reduce_name(allReduce()).data()));
}

void DevicesPanel::restoreSettings(const QSettings& settings) {
    if (settings.contains(kAllReduceKey)) {
        const auto algorithm = all_reduce_from_name(settings.value(kAllReduceKey).toString().toStdString());
        if (algorithm != AllReduceAlgorithm::Invalid) setAllReduce(algorithm);
    }
    if (!settings.contains(kSpecKey)) return;
    const QString spec = settings.value(kSpecKey).toString().trimmed();
    if (spec.isEmpty()) {  // saved with every device unchecked
        setConfig(DeviceConfig{});
        return;
    }
    try {
        setConfig(DeviceConfig::parse(spec.toStdString()));
    } catch (const std::exception&) {
        // A spec this version cannot read: keep the current configuration.
    }
}

void DevicesPanel::reloadDevices() {
    const DeviceConfig current = config();
    updating_ = true;
    buildEditors();
    updating_ = false;
    setConfig(current);
}

void DevicesPanel::edited() {
    if (updating_) return;
    refresh();
    emit configChanged();
}

void DevicesPanel::refresh() {
    // Per-device editors: show what the mode needs; the limit tables first follow the count, so
    // that config() reads every row.
    for (auto& editor : editors_) refreshEditor(*editor);

    // Everything below is the engine's plan: names, limits, the check Start makes, the strategy.
    const DeviceConfig current = config();
    plan_ = plan_strategy(current, *registry_, allReduce());
    showLogicalNames();
    showMissingDevices();
    showValidation(current);
    showStrategy();
    showCarving(current);
}

void DevicesPanel::refreshEditor(Editor& e) {
    const bool used = e.use->isChecked();
    const MemoryMode mode = e.currentMode();
    const bool cpu = e.device.type == DeviceType::CPU;
    e.mode->setEnabled(used);
    e.whole_row->setVisible(mode == MemoryMode::Whole && (cpu || e.replicas->value() != 1));
    e.whole_row->setEnabled(used);
    e.virtual_row->setVisible(mode == MemoryMode::Virtual);
    e.virtual_row->setEnabled(used);
    e.limit_mb->setEnabled(!e.each->isChecked());
    syncLimitTable(e);
    e.table->setVisible(mode == MemoryMode::Virtual && e.each->isChecked());
    e.table->setEnabled(used);

    const int n = e.replicas->value();
    e.replicas_hint->setText(n == 1 ? tr("uses all %1 cores").arg(e.device.cores)
                                    : tr("%1 replicas share the %2 cores").arg(n).arg(e.device.cores));
    switch (mode) {
        case MemoryMode::Whole:
            e.hint->setText(n == 1 ? tr("One logical device, no memory limit.")
                                   : tr("%1 logical devices, each with its own thread; they share the memory "
                                        "with no limit.")
                                         .arg(n));
            break;
        case MemoryMode::Virtual:
            e.hint->setText(tr("Each virtual device is a logical device with its own memory limit (as "
                               "tf.config.set_logical_device_configuration); a replica that needs more fails "
                               "with out of memory."));
            break;
        case MemoryMode::Growth:
            e.hint->setText(tr("One logical device that takes memory as it needs it (as "
                               "tf.config.experimental.set_memory_growth); no limit, cannot be combined with "
                               "virtual devices."));
            break;
        case MemoryMode::Invalid: e.hint->clear(); break;
    }
}

// The virtual devices' rows carry the names the engine gives them.
void DevicesPanel::showLogicalNames() {
    std::size_t choice_index = 0;
    for (auto& editor : editors_) {
        const bool used = editor->use->isChecked();
        const QStringList mine = used ? names_of_choice(plan_, choice_index++) : QStringList();
        for (int row = 0; row < editor->table->rowCount(); ++row) {
            editor->table->item(row, 0)->setText(row < mine.size() ? mine.at(row)
                                                                   : tr("virtual device %1").arg(row + 1));
        }
    }
}

// Devices in the configuration that no editor shows.
void DevicesPanel::showMissingDevices() {
    QStringList missing;
    for (const auto& choice : missing_) {
        missing << QStringLiteral("%1:%2").arg(QString::fromUtf8(device_type_name(choice.type).data())).arg(choice.index);
    }
    missing_label_->setText(tr("The configuration also names %1, which this machine does not have (or which is "
                               "listed twice).")
                                .arg(missing.join(QStringLiteral(", "))));
    missing_label_->setVisible(!missing_.empty());
    remove_missing_->setVisible(!missing_.empty());
}

// The engine's own check, so the message is exactly what Start would report.
void DevicesPanel::showValidation(const DeviceConfig& current) {
    const int replicas = plan_.replica_count();
    error_ = plan_.ok() ? QString() : engine_message(plan_.error);
    caution_ = error_.isEmpty() ? cautionFor(current, plan_) : QString();
    if (error_.isEmpty()) {
        validation_label_->setStyleSheet(QStringLiteral("color: #1b7a1b; font-weight: bold;"));
        const QString ready = replicas == 1 ? tr("Ready: 1 replica") : tr("Ready: %1 replicas").arg(replicas);
        QString text = ready.toHtmlEscaped();
        if (!caution_.isEmpty()) {
            text += QStringLiteral("<br><span style=\"color: #8a5300; font-weight: normal;\">%1</span>")
                        .arg(keep_names_whole(caution_));
        }
        validation_label_->setText(text);
    } else {
        validation_label_->setStyleSheet(QStringLiteral("color: #b00020;"));
        validation_label_->setText(keep_names_whole(tr("Cannot start: %1").arg(error_)));
    }
}

// The strategy in a sentence, then the engine's own lines about it, word for word.
void DevicesPanel::showStrategy() {
    const int replicas = plan_.replica_count();
    QStringList all_names;
    for (const std::string& name : plan_.device_names()) all_names << QString::fromStdString(name);
    strategy_log_.clear();
    if (!error_.isEmpty()) {
        strategy_ = tr("No strategy yet: the device configuration is not valid.");
    } else if (replicas == 1) {
        strategy_ = tr("One device: %1 (no all-reduce)").arg(all_names.value(0));
    } else {
        strategy_ = replicas <= 4
                        ? tr("Mirrored over %1 devices (%2)").arg(replicas).arg(all_names.join(QStringLiteral(", ")))
                        : tr("Mirrored over %1 devices").arg(replicas);
        for (const std::string& warning : plan_.warnings) strategy_log_ << QString::fromStdString(warning);
        strategy_log_ << QString::fromStdString(plan_.all_reduce_line());
        if (!plan_.exchange_line().empty()) strategy_log_ << QString::fromStdString(plan_.exchange_line());
    }
    QString html = keep_names_whole(strategy_);
    for (qsizetype i = 0; i < strategy_log_.size(); ++i) {
        const bool warning = i < static_cast<qsizetype>(plan_.warnings.size());
        html += QStringLiteral("<br>") + (warning ? QStringLiteral("<span style=\"color: #8a5300;\">%1</span>")
                                                  : QStringLiteral("<span style=\"color: #404040;\">%1</span>"))
                                             .arg(keep_names_whole(strategy_log_.at(i)));
        strategy_ += QLatin1Char('\n') + strategy_log_.at(i);
    }
    strategy_label_->setText(html);
}

// The drawing: every physical device, used or not.
void DevicesPanel::showCarving(const DeviceConfig& current) {
    std::vector<CarvedDevice> carved;
    std::size_t choice_index = 0;
    for (const auto& editor : editors_) {
        CarvedDevice device;
        device.id = QString::fromStdString(editor->device.id());
        device.name = QString::fromStdString(editor->device.name);
        device.total_bytes = editor->device.total_memory_bytes;
        device.used = editor->use->isChecked();
        if (device.used) {
            const DeviceChoice& choice = current.devices[choice_index];
            device.mode = choice.mode;
            for (const LogicalDevicePlan& logical : plan_.devices) {
                if (logical.choice != choice_index) continue;
                device.logical_names << QString::fromStdString(logical.name);
                if (choice.mode == MemoryMode::Virtual) device.limit_bytes.push_back(logical.memory_limit_bytes);
            }
            ++choice_index;
        }
        carved.push_back(std::move(device));
    }
    carving_->setDevices(std::move(carved));
}

}  // namespace mirrorlab::ui
