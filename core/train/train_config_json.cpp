#include "core/train/train_config_json.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

#include "core/train/callbacks.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {

// NaN and infinities are written as null (JSON has no spelling for them) and read back as NaN.
json::Value number(double value) { return std::isfinite(value) ? json::Value(value) : json::Value(nullptr); }

double number_at(const json::Value& object, std::string_view key, double fallback) {
    const json::Value* found = object.find(key);
    if (!found) return fallback;
    if (found->is_null()) return std::nan("");
    return found->as_double();
}

// An integer field within [lowest, highest], the bounds mirrorlab-cli's options have: a value cast
// to the engine's int would otherwise wrap (4294967297 epochs trained 1) or pass a check the
// option makes (a patience of -1).
std::int64_t integer_at(const json::Value& object, std::string_view key, std::int64_t fallback, std::int64_t lowest,
                        std::int64_t highest) {
    const json::Value* found = object.find(key);
    if (!found) return fallback;
    const std::int64_t value = found->as_int64();
    if (value < lowest || value > highest) {
        throw ModelError("'" + std::string(key) + "' is " + std::to_string(value) + ", outside " + std::to_string(lowest) +
                         ".." + std::to_string(highest));
    }
    return value;
}

// Every key of `object` must be one the writer writes (`written`, what it writes for the defaults):
// a misspelt one ("batchsize") would otherwise be ignored and the default trained without a word.
void refuse_unknown_keys(const json::Value& object, const json::Value& written, std::string_view where, UnknownKeys unknown_keys) {
    if (unknown_keys == UnknownKeys::Ignore) return;
    for (const auto& [key, value] : object.as_object()) {
        if (written.contains(key)) continue;
        std::string names;
        for (const auto& [name, default_value] : written.as_object()) names += (names.empty() ? "" : ", ") + name;
        throw ModelError("unknown key '" + key + "'" + std::string(where) + " (the keys are " + names + ")");
    }
}

bool bool_at(const json::Value& object, std::string_view key, bool fallback) {
    const json::Value* found = object.find(key);
    return found ? found->as_bool() : fallback;
}

std::string string_at(const json::Value& object, std::string_view key, std::string fallback) {
    const json::Value* found = object.find(key);
    return found ? found->as_string() : fallback;
}

json::Value optimizer_to_json(const OptimizerConfig& optimizer) {
    json::Value o = json::Value::object();
    o.set("class_name", std::string(optimizer_name(optimizer.kind)));
    o.set("learning_rate", optimizer.learning_rate);
    o.set("beta_1", optimizer.beta_1);
    o.set("beta_2", optimizer.beta_2);
    o.set("epsilon", optimizer.epsilon);
    o.set("momentum", optimizer.momentum);
    o.set("nesterov", optimizer.nesterov);
    o.set("rho", optimizer.rho);
    o.set("nadam_schedule_decay", optimizer.nadam_schedule_decay);
    o.set("embedding_update", std::string(embedding_update_name(optimizer.embedding_update)));
    return o;
}

OptimizerConfig optimizer_from_json(const json::Value& o, UnknownKeys unknown_keys) {
    refuse_unknown_keys(o, optimizer_to_json(OptimizerConfig::defaults(OptimizerKind::Nadam)), " in 'optimizer'", unknown_keys);
    OptimizerConfig optimizer = OptimizerConfig::defaults(optimizer_kind_from_name(o.at("class_name").as_string()));
    optimizer.learning_rate = number_at(o, "learning_rate", optimizer.learning_rate);
    optimizer.beta_1 = number_at(o, "beta_1", optimizer.beta_1);
    optimizer.beta_2 = number_at(o, "beta_2", optimizer.beta_2);
    optimizer.epsilon = number_at(o, "epsilon", optimizer.epsilon);
    optimizer.momentum = number_at(o, "momentum", optimizer.momentum);
    optimizer.nesterov = bool_at(o, "nesterov", optimizer.nesterov);
    optimizer.rho = number_at(o, "rho", optimizer.rho);
    optimizer.nadam_schedule_decay = number_at(o, "nadam_schedule_decay", optimizer.nadam_schedule_decay);
    if (const json::Value* update = o.find("embedding_update")) {
        optimizer.embedding_update = embedding_update_from_name(update->as_string());
    }
    return optimizer;
}

json::Value metrics_to_json(json::Value& into, const Metrics& metrics, const char* prefix) {
    into.set(std::string(prefix) + "loss", number(metrics.loss));
    into.set(std::string(prefix) + "accuracy", number(metrics.accuracy));
    into.set(std::string(prefix) + "top5", number(metrics.top5));
    return into;
}

Metrics metrics_from_json(const json::Value& from, const char* prefix) {
    Metrics metrics;
    metrics.loss = number_at(from, std::string(prefix) + "loss", metrics.loss);
    metrics.accuracy = number_at(from, std::string(prefix) + "accuracy", metrics.accuracy);
    metrics.top5 = number_at(from, std::string(prefix) + "top5", metrics.top5);
    return metrics;
}

}  // namespace

json::Value train_config_to_json(const TrainConfig& config) {
    json::Value o = json::Value::object();
    o.set("epochs", config.epochs);
    o.set("batch_size", config.batch_size);
    o.set("seed", static_cast<std::int64_t>(config.seed));  // read back bit for bit by the cast below
    o.set("optimizer", optimizer_to_json(config.optimizer));
    o.set("from_logits", config.from_logits);
    json::Value early = json::Value::object();
    early.set("enabled", config.early_stopping.enabled);
    early.set("monitor", config.early_stopping.monitor);
    early.set("min_delta", config.early_stopping.min_delta);
    early.set("patience", config.early_stopping.patience);
    early.set("restore_best_weights", config.early_stopping.restore_best_weights);
    early.set("start_from_epoch", config.early_stopping.start_from_epoch);
    o.set("early_stopping", std::move(early));
    o.set("overfitting_monitor", config.overfitting_monitor);
    o.set("all_reduce", std::string(all_reduce_name(config.all_reduce)));
    o.set("shuffle", config.shuffle);
    o.set("prefetch_batches", config.prefetch_batches);
    o.set("max_steps_per_epoch", config.max_steps_per_epoch);
    return o;
}

TrainConfig train_config_from_json(const json::Value& given, UnknownKeys unknown_keys) {
    try {
        // A whole run as `runs show ID --json` prints it: its "settings", which are a run's settings
        // as the store keeps them, holding the "train_config".
        const json::Value* run_settings = given.is_object() && given.contains("id") ? given.find("settings") : nullptr;
        const json::Value& settings = run_settings != nullptr && run_settings->is_object() ? *run_settings : given;
        const json::Value* stored = settings.is_object() ? settings.find("train_config") : nullptr;
        const json::Value& o = stored != nullptr && stored->is_object() ? *stored : settings;
        const json::Value written = train_config_to_json(TrainConfig{});
        refuse_unknown_keys(o, written, "", unknown_keys);
        constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();
        TrainConfig config;
        // A person's file, as --epochs; MirrorLab's own (a GUI resume asks for done + the form's
        // epochs) within the engine's int.
        config.epochs = static_cast<int>(
            integer_at(o, "epochs", config.epochs, 1, unknown_keys == UnknownKeys::Refuse ? 1'000'000 : kInt32Max));
        config.batch_size = static_cast<std::int32_t>(integer_at(o, "batch_size", config.batch_size, 1, 1 << 24));
        // Written from the unsigned seed with a cast, so every int64 reads back bit for bit.
        config.seed = static_cast<std::uint64_t>(integer_at(o, "seed", static_cast<std::int64_t>(config.seed),
                                                            std::numeric_limits<std::int64_t>::min(),
                                                            std::numeric_limits<std::int64_t>::max()));
        if (const json::Value* optimizer = o.find("optimizer")) config.optimizer = optimizer_from_json(*optimizer, unknown_keys);
        config.from_logits = bool_at(o, "from_logits", config.from_logits);
        if (const json::Value* early = o.find("early_stopping")) {
            EarlyStoppingConfig& e = config.early_stopping;
            refuse_unknown_keys(*early, written.at("early_stopping"), " in 'early_stopping'", unknown_keys);
            e.enabled = bool_at(*early, "enabled", e.enabled);
            e.monitor = string_at(*early, "monitor", e.monitor);
            if (canonical_monitor(e.monitor).empty()) {
                throw ModelError("early_stopping's monitor '" + e.monitor +
                                 "' is none of loss, accuracy, top5, val_loss, val_accuracy, val_top5 (Keras' "
                                 "sparse_categorical_accuracy and sparse_top_k_categorical_accuracy are read as accuracy and top5)");
            }
            e.min_delta = number_at(*early, "min_delta", e.min_delta);
            e.patience = static_cast<int>(integer_at(*early, "patience", e.patience, 0, 1'000'000));
            e.restore_best_weights = bool_at(*early, "restore_best_weights", e.restore_best_weights);
            e.start_from_epoch = static_cast<int>(integer_at(*early, "start_from_epoch", e.start_from_epoch, 0, kInt32Max));
        }
        config.overfitting_monitor = bool_at(o, "overfitting_monitor", config.overfitting_monitor);
        const std::string all_reduce = string_at(o, "all_reduce", "auto");
        config.all_reduce = all_reduce_from_name(all_reduce);
        if (config.all_reduce == AllReduceAlgorithm::Invalid) {
            throw ModelError("all_reduce '" + all_reduce + "' is not one of auto, reduce_to_one_device, ring, nccl");
        }
        config.shuffle = bool_at(o, "shuffle", config.shuffle);
        // A few batches ahead is all prefetching needs; a billion would ask for a billion buffers.
        config.prefetch_batches = static_cast<std::int32_t>(integer_at(o, "prefetch_batches", config.prefetch_batches, 0, 64));
        config.max_steps_per_epoch = integer_at(o, "max_steps_per_epoch", config.max_steps_per_epoch, 0,
                                                std::numeric_limits<std::int64_t>::max());
        return config;
    } catch (const ModelError&) {
        throw;
    } catch (const Error& e) {
        throw ModelError(std::string("the training settings are not valid: ") + e.what());
    }
}

json::Value history_to_json(const History& history) {
    json::Value epochs = json::Value::array();
    for (const EpochRecord& record : history.epochs) {
        json::Value o = json::Value::object();
        o.set("epoch", record.epoch);
        metrics_to_json(o, record.train, "");
        if (record.has_validation) metrics_to_json(o, record.validation, "val_");
        o.set("seconds", record.epoch_seconds);
        epochs.push_back(std::move(o));
    }
    return epochs;
}

History history_from_json(const json::Value& value) {
    History history;
    for (const json::Value& o : value.as_array()) {
        EpochRecord record;
        record.epoch = static_cast<int>(o.at("epoch").as_int64());
        record.train = metrics_from_json(o, "");
        record.has_validation = o.contains("val_loss");
        if (record.has_validation) record.validation = metrics_from_json(o, "val_");
        record.epoch_seconds = number_at(o, "seconds", 0.0);
        history.epochs.push_back(record);
    }
    return history;
}

}  // namespace mirrorlab
