#include "core/export/tensorboard.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>

#include <unistd.h>

#include "core/export/tensorboard.pb.h"
#include "core/store/run_store.h"
#include "core/train/progress.h"
#include "core/train/train_config_json.h"
#include "core/util/crc32c.h"
#include "core/util/little_endian.h"
#include "core/util/file.h"
#include "core/util/json.h"

namespace mirrorlab {

namespace pb = mirrorlab::tensorboard;

namespace {

constexpr const char* kFileVersion = "brain.Event:2";
constexpr const char* kWriter = "mirrorlab";
// TFRecord framing: 8 bytes of length, 4 of its CRC, the data, 4 of the data's CRC.
constexpr std::size_t kHeaderBytes = 12;
constexpr std::size_t kFooterBytes = 4;
// No scalar event comes near this; a larger length is a damaged file, not a reason to allocate.
constexpr std::uint64_t kMaxRecordBytes = std::uint64_t{64} << 20;
constexpr std::uint64_t kMaxEventFileBytes = std::uint64_t{1} << 30;

// TensorFlow numbers the event files a process writes, so that two writers started in the same
// second never pick the same name.
std::atomic<int> g_file_counter{0};

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
    return name;
}

void put_u32(std::string& out, std::uint32_t value) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFFu));
}

std::uint64_t get_le(std::string_view bytes, std::size_t offset, std::size_t count) {
    return load_little_endian(reinterpret_cast<const unsigned char*>(bytes.data() + offset), count);
}

std::uint32_t masked_crc(const void* data, std::size_t size) { return crc32c_mask(crc32c(data, size)); }

std::string framed(const std::string& data) {
    std::string record;
    record.reserve(kHeaderBytes + data.size() + kFooterBytes);
    const std::uint64_t length = data.size();
    for (int i = 0; i < 8; ++i) record.push_back(static_cast<char>((length >> (8 * i)) & 0xFFu));
    put_u32(record, masked_crc(record.data(), 8));
    record += data;
    put_u32(record, masked_crc(data.data(), data.size()));
    return record;
}

// A tensor's first element: from tensor_content (how TensorFlow writes a summary), else from its
// typed list (float_val, double_val); NaN when it has neither.
template <typename T, typename List>
double first_value(const std::string& content, const List& values) {
    T value{};
    if (content.size() >= sizeof value) {
        std::memcpy(&value, content.data(), sizeof value);
        return value;
    }
    return values.empty() ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(values.Get(0));
}

TensorBoardValue value_of(const pb::Summary::Value& value) {
    TensorBoardValue out;
    out.tag = value.tag();
    if (value.has_metadata()) out.plugin_name = value.metadata().plugin_data().plugin_name();
    if (value.value_case() == pb::Summary::Value::kSimpleValue) {
        out.simple_value = true;
        out.value = value.simple_value();
        return out;
    }
    if (value.value_case() != pb::Summary::Value::kTensor) return out;
    const pb::TensorProto& tensor = value.tensor();
    out.dtype = tensor.dtype();
    out.has_shape = tensor.has_tensor_shape();
    for (const auto& dim : tensor.tensor_shape().dim()) out.shape.push_back(dim.size());
    const std::string& content = tensor.tensor_content();
    out.in_tensor_content = !content.empty();
    if (tensor.dtype() == pb::DT_FLOAT) out.value = first_value<float>(content, tensor.float_val());
    if (tensor.dtype() == pb::DT_DOUBLE) out.value = first_value<double>(content, tensor.double_val());
    return out;
}

std::string system_reason(int error) { return std::strerror(error); }

}  // namespace

// --- Reading ---------------------------------------------------------------------------------

std::vector<TensorBoardEvent> parse_tensorboard_events(std::string_view bytes, const std::string& name) {
    std::vector<TensorBoardEvent> events;
    std::size_t offset = 0;
    while (offset < bytes.size()) {
        const std::string where =
            "event file '" + name + "', record " + std::to_string(events.size() + 1) + " at byte " + std::to_string(offset);
        if (bytes.size() - offset < kHeaderBytes) throw TensorBoardError(where + ": truncated (the length is cut off)");
        const std::uint64_t length = get_le(bytes, offset, 8);
        if (masked_crc(bytes.data() + offset, 8) != get_le(bytes, offset + 8, 4)) {
            throw TensorBoardError(where + ": the CRC of the record's length does not match (the file is damaged)");
        }
        if (length > kMaxRecordBytes || bytes.size() - offset - kHeaderBytes < length + kFooterBytes) {
            throw TensorBoardError(where + ": truncated (" + std::to_string(length) + " bytes of data announced, " +
                                   std::to_string(bytes.size() - offset - kHeaderBytes) + " left)");
        }
        const char* data = bytes.data() + offset + kHeaderBytes;
        if (masked_crc(data, length) != get_le(bytes, offset + kHeaderBytes + length, 4)) {
            throw TensorBoardError(where + ": the CRC of the record's data does not match (the file is damaged)");
        }
        pb::Event message;
        if (!message.ParseFromArray(data, static_cast<int>(length))) {
            throw TensorBoardError(where + ": the data is not a TensorFlow Event message");
        }
        TensorBoardEvent event;
        event.wall_time = message.wall_time();
        event.step = message.step();
        event.file_version = message.file_version();
        event.source_writer = message.source_metadata().writer();
        for (const auto& value : message.summary().value()) event.values.push_back(value_of(value));
        events.push_back(std::move(event));
        offset += kHeaderBytes + length + kFooterBytes;
    }
    return events;
}

std::vector<TensorBoardEvent> read_tensorboard_events(const std::string& path) {
    std::vector<std::uint8_t> bytes;
    try {
        bytes = read_file_binary(path, kMaxEventFileBytes, "event file '" + path + "'", "event files");
    } catch (const DataError& e) {
        throw TensorBoardError(e.what());
    }
    return parse_tensorboard_events(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
}

// --- One event file ----------------------------------------------------------------------------

EventFileWriter::EventFileWriter(std::string folder) : folder_(std::move(folder)) {}

EventFileWriter::~EventFileWriter() {
    if (file_) std::fclose(file_);
}

void EventFileWriter::open(double wall_time) {
    if (file_) return;
    std::error_code error;
    std::filesystem::create_directories(folder_, error);
    if (error) {
        throw TensorBoardError("cannot write TensorBoard event files in '" + folder_ + "': " + error.message());
    }
    // TensorFlow's name: events.out.tfevents.<seconds, 10 digits>.<host>.<pid>.<n>.v2
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%010lld", static_cast<long long>(wall_time));
    const std::string name = std::string("events.out.tfevents.") + seconds + "." + host_name() + "." +
                             std::to_string(::getpid()) + "." + std::to_string(g_file_counter++) + ".v2";
    const std::string path = (std::filesystem::path(folder_) / name).string();
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_) throw TensorBoardError("cannot write TensorBoard event files in '" + folder_ + "': " + system_reason(errno));
    path_ = path;
    pb::Event version;
    version.set_wall_time(wall_time);
    version.set_file_version(kFileVersion);
    version.mutable_source_metadata()->set_writer(kWriter);
    write_record(version.SerializeAsString());
    flush();  // a TensorBoard watching the folder sees the run from its start
}

void EventFileWriter::write_scalar(const std::string& tag, double value, std::int64_t step, double wall_time) {
    open(wall_time);
    pb::Event event;
    event.set_wall_time(wall_time);
    event.set_step(step);
    pb::Summary::Value* summary = event.mutable_summary()->add_value();
    summary->set_tag(tag);
    pb::TensorProto* tensor = summary->mutable_tensor();
    tensor->set_dtype(pb::DT_FLOAT);
    tensor->mutable_tensor_shape();  // present and empty: a scalar
    const float f = static_cast<float>(value);
    tensor->set_tensor_content(&f, sizeof f);  // little-endian on every machine MirrorLab runs on
    summary->mutable_metadata()->mutable_plugin_data()->set_plugin_name("scalars");
    write_record(event.SerializeAsString());
}

void EventFileWriter::write_record(const std::string& bytes) {
    const std::string record = framed(bytes);
    if (std::fwrite(record.data(), 1, record.size(), file_) != record.size()) {
        throw TensorBoardError("cannot write TensorBoard event file '" + path_ + "': " + system_reason(errno));
    }
}

void EventFileWriter::flush() {
    if (file_ && std::fflush(file_) != 0) {
        throw TensorBoardError("cannot write TensorBoard event file '" + path_ + "': " + system_reason(errno));
    }
}

void EventFileWriter::close() {
    if (!file_) return;
    std::FILE* file = file_;
    file_ = nullptr;
    if (std::fclose(file) != 0) {
        throw TensorBoardError("cannot write TensorBoard event file '" + path_ + "': " + system_reason(errno));
    }
}

// --- Keras' callback ---------------------------------------------------------------------------

double wall_time_of_utc(const std::string& iso8601) {
    std::tm tm{};
    char zone = '\0';
    if (std::sscanf(iso8601.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                    &tm.tm_sec, &zone) != 7 ||
        zone != 'Z') {
        return std::numeric_limits<double>::quiet_NaN();
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return static_cast<double>(::timegm(&tm));
}

TensorBoardLogger::TensorBoardLogger(TensorBoardOptions options, WarningSink warn)
    : options_(std::move(options)),
      warn_(std::move(warn)),
      train_((std::filesystem::path(options_.log_dir) / "train").string()),
      validation_((std::filesystem::path(options_.log_dir) / "validation").string()) {}

TensorBoardLogger::~TensorBoardLogger() {
    try {
        close();
    } catch (const TensorBoardError& e) {
        fail(e);
    }
}

void TensorBoardLogger::write_step(std::int64_t global_step, const Metrics& running, double wall_time) {
    last_global_step_ = global_step;
    if (!options_.batches) return;
    for (const auto& [name, value] : keras_named_metrics(running)) {
        train_.write_scalar(std::string("batch_") + name, value, global_step, wall_time);
    }
}

void TensorBoardLogger::write_epoch(int epoch, const Metrics& train, const Metrics* validation, std::int64_t iterations,
                                    double wall_time) {
    const std::int64_t keras_epoch = epoch - 1;
    for (const auto& [name, value] : keras_named_metrics(train)) {
        train_.write_scalar(std::string("epoch_") + name, value, keras_epoch, wall_time);
    }
    if (!std::isnan(options_.learning_rate)) train_.write_scalar("epoch_learning_rate", options_.learning_rate, keras_epoch, wall_time);
    if (validation) {
        // Keras' on_test_end writes the validation pass against the optimizer's iterations first.
        for (const auto& [name, value] : keras_named_metrics(*validation)) {
            validation_.write_scalar(std::string("evaluation_") + name + "_vs_iterations", value, iterations, wall_time);
        }
        for (const auto& [name, value] : keras_named_metrics(*validation)) {
            validation_.write_scalar(std::string("epoch_") + name, value, keras_epoch, wall_time);
        }
    }
    flush();
}

void TensorBoardLogger::open(double wall_time) { train_.open(wall_time); }

std::vector<std::string> TensorBoardLogger::files() const {
    std::vector<std::string> files;
    for (const EventFileWriter* writer : {&train_, &validation_}) {
        if (!writer->path().empty()) files.push_back(writer->path());
    }
    return files;
}

void TensorBoardLogger::flush() {
    train_.flush();
    validation_.flush();
}

void TensorBoardLogger::close() {
    train_.close();
    validation_.close();
}

void TensorBoardLogger::fail(const std::exception& error) {
    if (failed_) return;
    failed_ = true;
    if (warn_) warn_(std::string(error.what()) + "; training goes on without TensorBoard event files");
}

void TensorBoardLogger::consume(const Event& event) {
    if (failed_) return;
    try {
        if (const auto* begin = std::get_if<TrainBeginEvent>(&event)) {
            last_global_step_ = begin->initial_epoch * begin->steps_per_epoch;
            open(now_seconds());
        } else if (const auto* step = std::get_if<StepEndEvent>(&event)) {
            write_step(step->global_step, step->running, now_seconds());
        } else if (const auto* end = std::get_if<EpochEndEvent>(&event)) {
            write_epoch(end->epoch, end->train, end->has_validation ? &end->validation : nullptr, last_global_step_, now_seconds());
        } else if (std::holds_alternative<FinishedEvent>(event) || std::holds_alternative<FailedEvent>(event)) {
            close();
        }
    } catch (const std::exception& e) {
        fail(e);
    }
}

// --- A stored run ------------------------------------------------------------------------------

std::vector<std::string> export_run_to_tensorboard(const RunStore& store, std::int64_t run_id, const std::string& log_dir,
                                                   bool batches) {
    const RunInfo run = store.get(run_id);
    TensorBoardOptions options;
    options.log_dir = log_dir;
    options.batches = batches;
    try {
        const json::Value settings = json::parse(run.settings_json, "settings");
        if (settings.is_object() && settings.contains("train_config")) {
            options.learning_rate = train_config_from_json(settings.at("train_config")).optimizer.learning_rate;
        }
    } catch (const Error&) {
        // A run without readable settings still has its metrics; only epoch_learning_rate is lost.
    }
    const std::vector<EpochRow> epochs = store.epochs(run_id);
    const std::vector<StepRow> steps = store.steps(run_id);
    // The last global step of every epoch: the optimizer's iterations when its validation ran.
    std::map<int, std::int64_t> iterations;
    for (const StepRow& row : steps) iterations[row.epoch] = std::max(iterations[row.epoch], row.global_step);

    TensorBoardLogger logger(options);
    double wall_time = wall_time_of_utc(run.started_at);
    if (std::isnan(wall_time)) wall_time = now_seconds();
    logger.open(wall_time);
    std::size_t next_step = 0;
    std::int64_t iterations_so_far = 0;
    for (const EpochRow& epoch : epochs) {
        double step_wall_time = wall_time;
        for (; next_step < steps.size() && steps[next_step].epoch <= epoch.epoch; ++next_step) {
            const StepRow& row = steps[next_step];
            if (row.epoch < epoch.epoch) continue;  // steps of an epoch that never ended
            step_wall_time += row.step_time_ms / 1000.0;
            logger.write_step(row.global_step, row.running, step_wall_time);
        }
        if (auto found = iterations.find(epoch.epoch); found != iterations.end()) iterations_so_far = found->second;
        wall_time += epoch.seconds;
        logger.write_epoch(epoch.epoch, epoch.train, epoch.has_validation ? &epoch.validation : nullptr, iterations_so_far,
                           wall_time);
    }
    // The steps of an epoch cut short (a stopped or interrupted run): Keras wrote those batches too.
    for (; next_step < steps.size(); ++next_step) {
        wall_time += steps[next_step].step_time_ms / 1000.0;
        logger.write_step(steps[next_step].global_step, steps[next_step].running, wall_time);
    }
    logger.close();
    return logger.files();
}

}  // namespace mirrorlab
