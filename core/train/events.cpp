#include "core/train/events.h"

#include <cmath>
#include <cstdio>

#include "core/util/json.h"

namespace mirrorlab {

std::string_view finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::Completed: return "completed";
        case FinishReason::EarlyStopping: return "early_stopping";
        case FinishReason::StoppedByUser: return "stopped";
        case FinishReason::Invalid: break;
    }
    return "invalid";
}

std::string_view stop_phase_name(StopPhase phase) {
    switch (phase) {
        case StopPhase::Training: return "training";
        case StopPhase::Validation: return "validation";
        case StopPhase::BetweenEpochs: return "between_epochs";
        case StopPhase::Invalid: break;
    }
    return "invalid";
}

void put_stop_point(json::Value& object, const StopPoint& stop) {
    object.set("phase", std::string(stop_phase_name(stop.phase)));
    object.set("epoch", stop.epoch);
    object.set("step", stop.step);
    object.set("steps", stop.steps);
    if (stop.phase == StopPhase::Validation) {
        object.set("validation_step", stop.validation_step);
        object.set("validation_steps", stop.validation_steps);
    }
}

namespace {

json::Value number(double value) { return std::isfinite(value) ? json::Value(value) : json::Value(nullptr); }

void put_metrics(json::Value& object, const Metrics& metrics, const std::string& prefix) {
    object.set(prefix + "loss", number(metrics.loss));
    object.set(prefix + "accuracy", number(metrics.accuracy));
    object.set(prefix + "top5", number(metrics.top5));
}

struct ToJson {
    json::Value operator()(const LogEvent& e) const {
        json::Value o = json::Value::object();
        o.set("type", "log");
        o.set("level", e.level == LogLevel::Warning ? "warning" : e.level == LogLevel::Error ? "error" : "info");
        o.set("text", e.text);
        return o;
    }
    json::Value operator()(const TrainBeginEvent& e) const {
        json::Value o = json::Value::object();
        o.set("type", "train_begin");
        o.set("epochs", e.epochs);
        if (e.initial_epoch > 0) o.set("initial_epoch", e.initial_epoch);
        o.set("steps_per_epoch", e.steps_per_epoch);
        o.set("validation_steps", e.validation_steps);
        o.set("replicas", e.replicas);
        o.set("global_batch", e.global_batch);
        json::Value devices = json::Value::array();
        for (const auto& d : e.devices) devices.push_back(d);
        o.set("devices", std::move(devices));
        o.set("strategy", e.strategy);
        o.set("all_reduce", e.all_reduce);
        o.set("parameters", e.parameters);
        return o;
    }
    json::Value operator()(const EpochBeginEvent& e) const {
        json::Value o = json::Value::object();
        o.set("type", "epoch_begin");
        o.set("epoch", e.epoch);
        o.set("epochs", e.epochs);
        o.set("steps", e.steps);
        return o;
    }
    json::Value operator()(const StepEndEvent& e) const {
        json::Value o = json::Value::object();
        o.set("type", "step_end");
        o.set("epoch", e.epoch);
        o.set("step", e.step);
        o.set("steps", e.steps);
        o.set("global_step", e.global_step);
        put_metrics(o, e.running, "");
        o.set("step_time_ms", number(e.step_time_ms));
        o.set("samples_per_second", number(e.samples_per_second));
        o.set("allreduce_bytes_per_replica", e.allreduce_bytes_per_replica);
        o.set("all_reduce", e.all_reduce);
        o.set("allreduce_bytes_total", e.allreduce_bytes_total);
        o.set("gradient_bytes", e.gradient_bytes);
        o.set("allreduce_buffer_bytes", e.allreduce_buffer_bytes);
        json::Value replicas = json::Value::array();
        for (const auto& r : e.replicas) {
            json::Value t = json::Value::object();
            t.set("shard_size", r.shard_size);
            t.set("data_wait_ms", number(r.data_wait_ms));
            t.set("forward_ms", number(r.forward_ms));
            t.set("backward_ms", number(r.backward_ms));
            t.set("allreduce_ms", number(r.allreduce_ms));
            t.set("update_ms", number(r.update_ms));
            t.set("local_loss", number(r.local_loss));
            t.set("split_ms", number(r.split_ms));
            t.set("barrier_wait_ms", number(r.barrier_wait_ms));
            t.set("allreduce_begin_ms", number(r.allreduce_begin_ms));
            t.set("update_begin_ms", number(r.update_begin_ms));
            t.set("finish_wait_ms", number(r.finish_wait_ms));
            t.set("copy_model_ms", number(r.copy_model_ms));
            t.set("timing", r.device_timed ? "device_events" : "wall_clock");
            t.set("grad_norm_before", number(r.grad_norm_before));
            t.set("grad_norm_after", number(r.grad_norm_after));
            // A hex string: JSON numbers (doubles) cannot hold 64 bits exactly.
            if (r.weights_checksum != 0) {
                char hex[24];
                std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(r.weights_checksum));
                t.set("weights_checksum", std::string(hex));
            } else {
                t.set("weights_checksum", nullptr);
            }
            replicas.push_back(std::move(t));
        }
        o.set("replicas", std::move(replicas));
        return o;
    }
    json::Value operator()(const ValidationBeginEvent& e) const {
        json::Value o = json::Value::object();
        o.set("type", "validation_begin");
        o.set("epoch", e.epoch);
        o.set("steps", e.steps);
        return o;
    }
    json::Value operator()(const EpochEndEvent& e) const {
        json::Value o = json::Value::object();
        o.set("type", "epoch_end");
        o.set("epoch", e.epoch);
        o.set("epochs", e.epochs);
        o.set("steps", e.steps);
        put_metrics(o, e.train, "");
        if (e.has_validation) put_metrics(o, e.validation, "val_");
        o.set("epoch_seconds", number(e.epoch_seconds));
        o.set("ms_per_step", number(e.ms_per_step));
        return o;
    }
    json::Value operator()(const MemoryEvent& e) const {
        json::Value o = json::Value::object();
        o.set("type", "memory");
        json::Value devices = json::Value::array();
        for (const auto& d : e.devices) {
            json::Value m = json::Value::object();
            m.set("device", d.device);
            m.set("bytes_in_use", d.bytes_in_use);
            m.set("peak_bytes", d.peak_bytes);
            m.set("limit_bytes", d.limit_bytes);
            if (d.physical_free_bytes > 0) m.set("physical_free_bytes", d.physical_free_bytes);
            devices.push_back(std::move(m));
        }
        o.set("devices", std::move(devices));
        return o;
    }
    json::Value operator()(const WarningEvent& e) const {
        json::Value o = json::Value::object();
        o.set("type", "warning");
        o.set("code", e.code);
        o.set("text", e.text);
        o.set("epoch", e.epoch);
        if (e.best_epoch > 0) o.set("best_epoch", e.best_epoch);
        return o;
    }
    json::Value operator()(const FinishedEvent& e) const {
        json::Value o = json::Value::object();
        o.set("type", "finished");
        o.set("reason", std::string(finish_reason_name(e.reason)));
        o.set("epochs_completed", e.epochs_completed);
        o.set("best_epoch", e.best_epoch);
        o.set("restored_epoch", e.restored_epoch);
        if (e.reason == FinishReason::StoppedByUser) {
            json::Value stop = json::Value::object();
            put_stop_point(stop, e.stop);
            o.set("stop", std::move(stop));
        }
        o.set("text", e.text);
        return o;
    }
    json::Value operator()(const FailedEvent& e) const {
        json::Value o = json::Value::object();
        o.set("type", "failed");
        o.set("kind", e.kind);
        o.set("reason", e.reason);
        o.set("epoch", e.epoch);
        o.set("step", e.step);
        return o;
    }
};

}  // namespace

// Events quote paths and file contents as they were found (a Latin-1 CSV, a file name in another
// encoding); the report must still go out, so bad bytes become U+FFFD instead of an exception.
std::string event_to_json(const Event& event) {
    return json::dump(std::visit(ToJson{}, event), -1, json::InvalidUtf8::Replace);
}

}  // namespace mirrorlab
