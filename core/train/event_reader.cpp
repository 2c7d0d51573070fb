#include "core/train/event_reader.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/util/json.h"

namespace mirrorlab {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A number field; `fallback` when missing, null (a NaN written by event_to_json) or not a number.
double real(const json::Value& object, std::string_view key, double fallback = kNaN) {
    const json::Value* value = object.find(key);
    return value != nullptr && value->is_number() ? value->as_double() : fallback;
}

std::int64_t integer(const json::Value& object, std::string_view key) {
    const json::Value* value = object.find(key);
    if (value == nullptr || !value->is_number()) return 0;
    if (value->is_integer()) return value->as_int64();
    const double d = value->as_double();
    return std::isfinite(d) && std::abs(d) < 9.0e18 ? static_cast<std::int64_t>(d) : 0;
}

int small_integer(const json::Value& object, std::string_view key) {
    const std::int64_t value = integer(object, key);
    return value > std::numeric_limits<int>::max() || value < std::numeric_limits<int>::min() ? 0 : static_cast<int>(value);
}

std::string text(const json::Value& object, std::string_view key) {
    const json::Value* value = object.find(key);
    return value != nullptr && value->is_string() ? value->as_string() : std::string();
}

Metrics metrics(const json::Value& object, const std::string& prefix) {
    return Metrics{real(object, prefix + "loss"), real(object, prefix + "accuracy"), real(object, prefix + "top5")};
}

PhaseTimings phase_timings(const json::Value& t) {
    PhaseTimings r;
    r.shard_size = static_cast<std::int32_t>(small_integer(t, "shard_size"));
    r.data_wait_ms = real(t, "data_wait_ms", 0.0);
    r.forward_ms = real(t, "forward_ms", 0.0);
    r.backward_ms = real(t, "backward_ms", 0.0);
    r.allreduce_ms = real(t, "allreduce_ms", 0.0);
    r.update_ms = real(t, "update_ms", 0.0);
    r.local_loss = real(t, "local_loss", 0.0);
    r.split_ms = real(t, "split_ms", 0.0);
    r.barrier_wait_ms = real(t, "barrier_wait_ms", 0.0);
    r.allreduce_begin_ms = real(t, "allreduce_begin_ms", 0.0);
    r.update_begin_ms = real(t, "update_begin_ms", 0.0);
    r.finish_wait_ms = real(t, "finish_wait_ms", 0.0);
    r.copy_model_ms = real(t, "copy_model_ms", 0.0);
    r.device_timed = text(t, "timing") == "device_events";
    r.grad_norm_before = real(t, "grad_norm_before");
    r.grad_norm_after = real(t, "grad_norm_after");
    // Written as 16 hex digits (a double cannot hold 64 bits).
    const std::string checksum = text(t, "weights_checksum");
    if (checksum.size() == 16) {
        char* end = nullptr;
        const unsigned long long value = std::strtoull(checksum.c_str(), &end, 16);
        if (end == checksum.c_str() + checksum.size()) r.weights_checksum = value;
    }
    return r;
}

StepEndEvent step_end(const json::Value& o) {
    StepEndEvent e;
    e.epoch = small_integer(o, "epoch");
    e.step = integer(o, "step");
    e.steps = integer(o, "steps");
    e.global_step = integer(o, "global_step");
    e.running = metrics(o, "");
    e.step_time_ms = real(o, "step_time_ms", 0.0);
    e.samples_per_second = real(o, "samples_per_second", 0.0);
    e.allreduce_bytes_per_replica = integer(o, "allreduce_bytes_per_replica");
    e.all_reduce = text(o, "all_reduce");
    e.allreduce_bytes_total = integer(o, "allreduce_bytes_total");
    e.gradient_bytes = integer(o, "gradient_bytes");
    e.allreduce_buffer_bytes = integer(o, "allreduce_buffer_bytes");
    if (const json::Value* replicas = o.find("replicas"); replicas != nullptr && replicas->is_array()) {
        for (const json::Value& t : replicas->as_array()) {
            if (t.is_object()) e.replicas.push_back(phase_timings(t));
        }
    }
    return e;
}

TrainBeginEvent train_begin(const json::Value& o) {
    TrainBeginEvent e;
    e.epochs = small_integer(o, "epochs");
    e.initial_epoch = small_integer(o, "initial_epoch");
    e.steps_per_epoch = integer(o, "steps_per_epoch");
    e.validation_steps = integer(o, "validation_steps");
    e.replicas = small_integer(o, "replicas");
    e.global_batch = static_cast<std::int32_t>(small_integer(o, "global_batch"));
    if (const json::Value* devices = o.find("devices"); devices != nullptr && devices->is_array()) {
        for (const json::Value& d : devices->as_array()) {
            if (d.is_string()) e.devices.push_back(d.as_string());
        }
    }
    e.strategy = text(o, "strategy");
    e.all_reduce = text(o, "all_reduce");
    e.parameters = integer(o, "parameters");
    return e;
}

EpochEndEvent epoch_end(const json::Value& o) {
    EpochEndEvent e;
    e.epoch = small_integer(o, "epoch");
    e.epochs = small_integer(o, "epochs");
    e.steps = integer(o, "steps");
    e.train = metrics(o, "");
    e.has_validation = o.contains("val_loss");
    if (e.has_validation) e.validation = metrics(o, "val_");
    e.epoch_seconds = real(o, "epoch_seconds", 0.0);
    e.ms_per_step = real(o, "ms_per_step", 0.0);
    return e;
}

MemoryEvent memory(const json::Value& o) {
    MemoryEvent e;
    if (const json::Value* devices = o.find("devices"); devices != nullptr && devices->is_array()) {
        for (const json::Value& m : devices->as_array()) {
            if (!m.is_object()) continue;
            e.devices.push_back(DeviceMemory{text(m, "device"), integer(m, "bytes_in_use"), integer(m, "peak_bytes"),
                                             integer(m, "limit_bytes"), integer(m, "physical_free_bytes")});
        }
    }
    return e;
}

StopPoint stop_point(const json::Value& o) {
    StopPoint stop;
    const std::string phase = text(o, "phase");
    for (StopPhase known : {StopPhase::Training, StopPhase::Validation, StopPhase::BetweenEpochs}) {
        if (stop_phase_name(known) == phase) stop.phase = known;
    }
    stop.epoch = small_integer(o, "epoch");
    stop.step = integer(o, "step");
    stop.steps = integer(o, "steps");
    stop.validation_step = integer(o, "validation_step");
    stop.validation_steps = integer(o, "validation_steps");
    return stop;
}

FinishedEvent finished(const json::Value& o) {
    FinishedEvent e;
    const std::string reason = text(o, "reason");
    e.reason = FinishReason::Invalid;
    for (FinishReason known : {FinishReason::Completed, FinishReason::EarlyStopping, FinishReason::StoppedByUser}) {
        if (finish_reason_name(known) == reason) e.reason = known;
    }
    e.epochs_completed = small_integer(o, "epochs_completed");
    e.best_epoch = small_integer(o, "best_epoch");
    e.restored_epoch = small_integer(o, "restored_epoch");
    if (const json::Value* stop = o.find("stop"); stop != nullptr && stop->is_object()) e.stop = stop_point(*stop);
    e.text = text(o, "text");
    return e;
}

}  // namespace

std::optional<Event> event_from_json(const json::Value& o) {
    if (!o.is_object()) return std::nullopt;
    const std::string type = text(o, "type");
    if (type == "log") {
        const std::string level = text(o, "level");
        return LogEvent{level == "warning" ? LogLevel::Warning : level == "error" ? LogLevel::Error : LogLevel::Info,
                        text(o, "text")};
    }
    if (type == "train_begin") return train_begin(o);
    if (type == "epoch_begin") return EpochBeginEvent{small_integer(o, "epoch"), small_integer(o, "epochs"), integer(o, "steps")};
    if (type == "step_end") return step_end(o);
    if (type == "validation_begin") return ValidationBeginEvent{small_integer(o, "epoch"), integer(o, "steps")};
    if (type == "epoch_end") return epoch_end(o);
    if (type == "memory") return memory(o);
    if (type == "warning") {
        return WarningEvent{text(o, "code"), text(o, "text"), small_integer(o, "epoch"), small_integer(o, "best_epoch")};
    }
    if (type == "finished") return finished(o);
    if (type == "failed") return FailedEvent{text(o, "kind"), text(o, "reason"), small_integer(o, "epoch"), integer(o, "step")};
    return std::nullopt;
}

std::vector<Event> EventLineReader::feed(std::string_view bytes) {
    std::vector<Event> out;
    std::size_t start = 0;
    for (std::size_t newline = bytes.find('\n'); newline != std::string_view::npos; newline = bytes.find('\n', start)) {
        partial_.append(bytes.substr(start, newline - start));
        read_line(partial_, out);
        partial_.clear();
        start = newline + 1;
    }
    partial_.append(bytes.substr(start));
    return out;
}

std::vector<Event> EventLineReader::finish() {
    std::vector<Event> out;
    if (!partial_.empty()) read_line(partial_, out);
    partial_.clear();
    return out;
}

void EventLineReader::read_line(std::string_view line, std::vector<Event>& out) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;
    if (line.front() == '{') {
        try {
            const json::Value object = json::parse(line, "event");
            if (std::optional<Event> event = event_from_json(object)) {
                out.push_back(std::move(*event));
            } else {
                ++unknown_events_;
            }
            return;
        } catch (const Error&) {
            // Not JSON after all: kept as text below.
        }
    }
    ++text_lines_;
    out.push_back(LogEvent{LogLevel::Info, std::string(line)});
}

}  // namespace mirrorlab
