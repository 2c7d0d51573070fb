#include "core/store/checkpoint.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/model/model.h"
#include "core/train/train_config_json.h"
#include "core/util/crc32c.h"
#include "core/util/file.h"

namespace mirrorlab {

static_assert(std::endian::native == std::endian::little, "checkpoints store little-endian floats as they are in memory");

namespace {

// A checkpoint of the tutorial model is ~4 MB (weights and two Adam/Nadam slots); this bounds what
// a damaged length field can make the reader allocate.
constexpr std::uint64_t kMaxCheckpointBytes = std::uint64_t{16} << 30;
constexpr std::size_t kHeaderBytes = sizeof kCheckpointMagic + 4 + 4;

void put_u32(std::string& out, std::uint32_t value) {
    char bytes[4];
    std::memcpy(bytes, &value, 4);
    out.append(bytes, 4);
}

std::uint32_t get_u32(const std::string& bytes, std::size_t offset) {
    std::uint32_t value = 0;
    std::memcpy(&value, bytes.data() + offset, 4);
    return value;
}

std::string hex64(std::uint64_t value) {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
    return text;
}

std::uint64_t fnv1a(const void* data, std::size_t size, std::uint64_t hash) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 0x100000001B3ull;
    return hash;
}

struct TensorOut {
    std::string name;
    const std::vector<float>* values;
};

json::Value callbacks_to_json(const std::map<std::string, CallbackState>& callbacks, std::vector<TensorOut>& tensors) {
    json::Value o = json::Value::object();
    for (const auto& [name, state] : callbacks) {
        json::Value c = json::Value::object();
        json::Value numbers = json::Value::object();
        // Non-finite numbers (a best value still at +inf) are left out: each callback's default.
        for (const auto& [key, value] : state.numbers) {
            if (std::isfinite(value)) numbers.set(key, value);
        }
        c.set("numbers", std::move(numbers));
        if (!state.weights.empty()) {
            const std::string tensor = "callbacks/" + name + "/weights";
            c.set("weights", tensor);
            tensors.push_back({tensor, &state.weights});
        }
        o.set(name, std::move(c));
    }
    return o;
}

json::Value fingerprint_to_json(const DataFingerprint& data) {
    json::Value o = json::Value::object();
    o.set("name", data.name);
    o.set("train_samples", data.train_samples);
    o.set("validation_samples", data.validation_samples);
    o.set("sequence_length", data.sequence_length);
    o.set("num_classes", data.num_classes);
    o.set("digest", data.digest);
    return o;
}

DataFingerprint fingerprint_from_json(const json::Value& o) {
    DataFingerprint data;
    data.name = o.at("name").as_string();
    data.train_samples = o.at("train_samples").as_int64();
    data.validation_samples = o.at("validation_samples").as_int64();
    data.sequence_length = static_cast<std::int32_t>(o.at("sequence_length").as_int64());
    data.num_classes = static_cast<std::int32_t>(o.at("num_classes").as_int64());
    data.digest = o.at("digest").as_string();
    return data;
}

// Reads the manifest and the tensors of a file whose framing has been checked.
Checkpoint read_manifest(const json::Value& manifest, const std::string& bytes, std::size_t data_offset, const std::string& what) {
    Checkpoint checkpoint;
    checkpoint.model_json = json::dump(manifest.at("model"));
    checkpoint.config = train_config_from_json(manifest.at("train_config"));
    checkpoint.device_spec = manifest.at("devices").as_string();
    checkpoint.data = fingerprint_from_json(manifest.at("data"));
    checkpoint.settings = manifest.at("settings");
    checkpoint.run_id = manifest.at("run_id").as_int64();
    TrainingState& state = checkpoint.state;
    state.epochs_done = static_cast<int>(manifest.at("epoch").as_int64());
    state.global_step = manifest.at("global_step").as_int64();
    if (const json::Value* steps = manifest.find("steps_into_epoch")) {
        state.steps_into_epoch = steps->as_int64();
        const json::Value& running = manifest.at("running");
        state.running.loss_sum = running.at("loss_sum").as_double();
        state.running.correct = running.at("correct").as_int64();
        state.running.top_k_correct = running.at("top_k_correct").as_int64();
        state.running.samples = running.at("samples").as_int64();
    }
    state.replicas = static_cast<int>(manifest.at("replicas").as_int64());
    state.history = history_from_json(manifest.at("history"));
    const json::Value& optimizer = manifest.at("optimizer_state");
    state.optimizer_state.iterations = optimizer.at("iterations").as_int64();
    state.optimizer_state.nadam_u_product = optimizer.at("nadam_u_product").as_double();

    std::map<std::string, std::vector<float>> tensors;
    std::size_t offset = data_offset;
    for (const json::Value& tensor : manifest.at("tensors").as_array()) {
        const std::int64_t count = tensor.at("count").as_int64();
        if (count < 0 || static_cast<std::uint64_t>(count) * 4 > bytes.size() - offset) {
            throw CheckpointError(what + " is damaged: tensor '" + tensor.at("name").as_string() + "' runs past the end of the file");
        }
        std::vector<float> values(static_cast<std::size_t>(count));
        std::memcpy(values.data(), bytes.data() + offset, values.size() * 4);
        offset += values.size() * 4;
        tensors[tensor.at("name").as_string()] = std::move(values);
    }
    auto take = [&](const std::string& name) {
        auto found = tensors.find(name);
        if (found == tensors.end()) throw CheckpointError(what + " is damaged: it has no tensor '" + name + "'");
        return std::move(found->second);
    };
    state.weights = take("weights");
    state.optimizer_slots = take("optimizer_slots");
    for (const auto& [name, c] : manifest.at("callbacks").as_object()) {
        CallbackState callback;
        for (const auto& [key, value] : c.at("numbers").as_object()) callback.numbers[key] = value.as_double();
        if (const json::Value* weights = c.find("weights")) callback.weights = take(weights->as_string());
        state.callbacks[name] = std::move(callback);
    }
    return checkpoint;
}

}  // namespace

DataFingerprint fingerprint_of(const TrainData& data) {
    DataFingerprint fingerprint;
    fingerprint.name = data.name;
    fingerprint.num_classes = data.num_classes;
    std::uint64_t hash = 0xCBF29CE484222325ull;
    if (data.train_ids) {
        fingerprint.train_samples = data.train_ids->count;
        fingerprint.sequence_length = data.train_ids->length;
        hash = fnv1a(data.train_ids->ids.data(), data.train_ids->ids.size() * sizeof(std::int32_t), hash);
    }
    if (data.train_labels) hash = fnv1a(data.train_labels->data(), data.train_labels->size() * sizeof(std::int32_t), hash);
    if (data.validation_ids) fingerprint.validation_samples = data.validation_ids->count;
    fingerprint.digest = hex64(hash);
    return fingerprint;
}

std::string serialize_checkpoint(const Checkpoint& checkpoint) { return serialize_checkpoint(checkpoint, checkpoint.state); }

std::string serialize_checkpoint(const Checkpoint& checkpoint, const TrainingState& state) {
    std::vector<TensorOut> tensors = {{"weights", &state.weights}, {"optimizer_slots", &state.optimizer_slots}};
    json::Value manifest = json::Value::object();
    manifest.set("format", "mirrorlab-checkpoint");
    manifest.set("version", static_cast<std::int64_t>(kCheckpointVersion));
    manifest.set("mirrorlab_version", MIRRORLAB_VERSION);
    manifest.set("run_id", checkpoint.run_id);
    manifest.set("epoch", state.epochs_done);
    manifest.set("global_step", state.global_step);
    if (state.steps_into_epoch > 0) {
        json::Value running = json::Value::object();
        running.set("loss_sum", state.running.loss_sum);
        running.set("correct", state.running.correct);
        running.set("top_k_correct", state.running.top_k_correct);
        running.set("samples", state.running.samples);
        manifest.set("steps_into_epoch", state.steps_into_epoch);
        manifest.set("running", std::move(running));
    }
    manifest.set("replicas", state.replicas);
    manifest.set("model", json::parse(checkpoint.model_json, "model"));
    manifest.set("train_config", train_config_to_json(checkpoint.config));
    manifest.set("devices", checkpoint.device_spec);
    manifest.set("data", fingerprint_to_json(checkpoint.data));
    manifest.set("settings", checkpoint.settings);
    json::Value optimizer = json::Value::object();
    optimizer.set("iterations", state.optimizer_state.iterations);
    optimizer.set("nadam_u_product", state.optimizer_state.nadam_u_product);
    manifest.set("optimizer_state", std::move(optimizer));
    manifest.set("history", history_to_json(state.history));
    manifest.set("callbacks", callbacks_to_json(state.callbacks, tensors));
    json::Value listed = json::Value::array();
    for (const TensorOut& tensor : tensors) {
        json::Value t = json::Value::object();
        t.set("name", tensor.name);
        t.set("dtype", "float32");
        t.set("count", static_cast<std::int64_t>(tensor.values->size()));
        listed.push_back(std::move(t));
    }
    manifest.set("tensors", std::move(listed));

    const std::string text = json::dump(manifest, 1, json::InvalidUtf8::Replace);
    // Sized once: growing by doubling held up to twice the checkpoint (8 MB for the tutorial
    // model) at the moment of saving, the peak of a training process's memory.
    std::size_t total_bytes = sizeof kCheckpointMagic + 4 + 4 + text.size() + 4;
    for (const TensorOut& tensor : tensors) total_bytes += tensor.values->size() * sizeof(float);
    std::string out;
    out.reserve(total_bytes);
    out.append(kCheckpointMagic, sizeof kCheckpointMagic);
    put_u32(out, kCheckpointVersion);
    put_u32(out, static_cast<std::uint32_t>(text.size()));
    out += text;
    for (const TensorOut& tensor : tensors) {
        out.append(reinterpret_cast<const char*>(tensor.values->data()), tensor.values->size() * sizeof(float));
    }
    put_u32(out, crc32c(out.data(), out.size()));
    return out;
}

Checkpoint parse_checkpoint(const std::string& bytes, const std::string& what) {
    if (bytes.size() < sizeof kCheckpointMagic || std::memcmp(bytes.data(), kCheckpointMagic, sizeof kCheckpointMagic) != 0) {
        throw CheckpointError(what + " is not a MirrorLab checkpoint (it does not start with the checkpoint signature)");
    }
    if (bytes.size() < kHeaderBytes + 4) {
        throw CheckpointError(what + " is truncated: it holds only " + std::to_string(bytes.size()) + " bytes");
    }
    const std::uint32_t version = get_u32(bytes, sizeof kCheckpointMagic);
    if (version != kCheckpointVersion) {
        throw CheckpointError(what + " is a version " + std::to_string(version) + " checkpoint; this MirrorLab reads version " +
                              std::to_string(kCheckpointVersion) + " (use the MirrorLab that wrote it)");
    }
    const std::uint32_t manifest_bytes = get_u32(bytes, sizeof kCheckpointMagic + 4);
    if (manifest_bytes > bytes.size() - kHeaderBytes - 4) {
        throw CheckpointError(what + " is truncated: its manifest needs " + std::to_string(manifest_bytes) + " bytes, " +
                              std::to_string(bytes.size() - kHeaderBytes - 4) + " follow");
    }
    const std::uint32_t stored_crc = get_u32(bytes, bytes.size() - 4);
    json::Value manifest;
    std::uint64_t tensor_bytes = 0;
    try {
        manifest = json::parse(std::string_view(bytes).substr(kHeaderBytes, manifest_bytes), what);
        for (const json::Value& tensor : manifest.at("tensors").as_array()) {
            tensor_bytes += static_cast<std::uint64_t>(tensor.at("count").as_int64()) * 4;
        }
    } catch (const Error& e) {
        throw CheckpointError(what + " is damaged: its manifest cannot be read (" + e.what() + ")");
    }
    const std::uint64_t expected = kHeaderBytes + manifest_bytes + tensor_bytes + 4;
    if (bytes.size() < expected) {
        throw CheckpointError(what + " is truncated: it holds " + std::to_string(bytes.size()) + " bytes of the " +
                              std::to_string(expected) + " its manifest describes (was it copied or written completely?)");
    }
    if (bytes.size() > expected || crc32c(bytes.data(), bytes.size() - 4) != stored_crc) {
        throw CheckpointError(what + " is damaged: its checksum does not match its contents");
    }
    try {
        return read_manifest(manifest, bytes, kHeaderBytes + manifest_bytes, what);
    } catch (const CheckpointError&) {
        throw;
    } catch (const Error& e) {
        throw CheckpointError(what + " is damaged: " + e.what());
    }
}

void save_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
    write_file_atomically(path, serialize_checkpoint(checkpoint), "checkpoint");
}

void save_checkpoint(const std::string& path, const Checkpoint& checkpoint, const TrainingState& state) {
    write_file_atomically(path, serialize_checkpoint(checkpoint, state), "checkpoint");
}

Checkpoint load_checkpoint(const std::string& path) {
    const std::string what = "checkpoint '" + path + "'";
    // The signature first: a large file of another kind is refused before it is read whole.
    if (regular_file_starts_with(path, std::string_view(kCheckpointMagic, sizeof kCheckpointMagic)) == false) {
        throw CheckpointError(what + " is not a MirrorLab checkpoint (it does not start with the checkpoint signature)");
    }
    return parse_checkpoint(read_file_text(path, kMaxCheckpointBytes, what, "checkpoints"), what);
}

void check_checkpoint_fits(const Checkpoint& checkpoint, const Model& model, const DataFingerprint& data, const std::string& what) {
    const Model saved = Model::from_json_text(checkpoint.model_json, what);
    const std::vector<VariableInfo> theirs = saved.variables();
    const std::vector<VariableInfo> ours = model.variables();
    if (saved.input_length() != model.input_length()) {
        throw CheckpointError(what + " was trained on sequences of " + std::to_string(saved.input_length()) +
                              " tokens; this model takes " + std::to_string(model.input_length()) +
                              "; set the sequence length to " + std::to_string(saved.input_length()));
    }
    for (std::size_t i = 0; i < std::max(theirs.size(), ours.size()); ++i) {
        if (i >= theirs.size() || i >= ours.size()) {
            throw CheckpointError(what + " holds another model: " + std::to_string(theirs.size()) + " variables there, " +
                                  std::to_string(ours.size()) + " in this model (" + std::to_string(saved.total_params()) +
                                  " vs " + std::to_string(model.total_params()) + " parameters)");
        }
        if (!(theirs[i].shape == ours[i].shape)) {
            throw CheckpointError(what + " holds another model: its variable '" + theirs[i].name + "' has shape " +
                                  theirs[i].shape.to_string() + ", this model's '" + ours[i].name + "' " +
                                  ours[i].shape.to_string() + "; load the model it was trained with");
        }
    }
    const DataFingerprint& saved_data = checkpoint.data;
    if (saved_data.train_samples != data.train_samples || saved_data.num_classes != data.num_classes ||
        saved_data.sequence_length != data.sequence_length || saved_data.digest != data.digest) {
        throw CheckpointError(what + " was trained on other data: '" + saved_data.name + "' (" +
                              std::to_string(saved_data.train_samples) + " training samples, " +
                              std::to_string(saved_data.num_classes) + " classes, padded to " +
                              std::to_string(saved_data.sequence_length) + ") where this run has '" + data.name + "' (" +
                              std::to_string(data.train_samples) + ", " + std::to_string(data.num_classes) + ", " +
                              std::to_string(data.sequence_length) + (saved_data.digest != data.digest &&
                                                                              saved_data.train_samples == data.train_samples
                                                                          ? "; same sizes, other contents"
                                                                          : "") +
                              "); resume with the data set it was trained on");
    }
}

}  // namespace mirrorlab
