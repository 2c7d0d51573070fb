#include "core/store/checkpoint.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/model/model.h"
#include "core/optim/optimizer.h"
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

// A number the manifest holds, within what a checkpoint MirrorLab wrote can hold: a damaged one is
// named instead of wrapping when it narrows (an epoch of 2^40 read as 0).
std::int64_t bounded(const json::Value& o, const char* key, std::int64_t low, std::int64_t high) {
    const std::int64_t value = o.at(key).as_int64();
    if (value < low || value > high) {
        throw Error("its '" + std::string(key) + "' is " + std::to_string(value) + ", outside " + std::to_string(low) +
                              ".." + std::to_string(high));
    }
    return value;
}

constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

DataFingerprint fingerprint_from_json(const json::Value& o) {
    DataFingerprint data;
    data.name = o.at("name").as_string();
    data.train_samples = bounded(o, "train_samples", 0, kInt64Max);
    data.validation_samples = bounded(o, "validation_samples", 0, kInt64Max);
    data.sequence_length = static_cast<std::int32_t>(bounded(o, "sequence_length", 0, kInt32Max));
    data.num_classes = static_cast<std::int32_t>(bounded(o, "num_classes", 0, kInt32Max));
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
    state.epochs_done = static_cast<int>(bounded(manifest, "epoch", 0, kInt32Max));
    state.global_step = bounded(manifest, "global_step", 0, kInt64Max);
    if (manifest.contains("steps_into_epoch")) {
        state.steps_into_epoch = bounded(manifest, "steps_into_epoch", 0, kInt64Max);
        const json::Value& running = manifest.at("running");
        state.running.loss_sum = running.at("loss_sum").as_double();
        state.running.correct = bounded(running, "correct", 0, kInt64Max);
        state.running.top_k_correct = bounded(running, "top_k_correct", 0, kInt64Max);
        state.running.samples = bounded(running, "samples", 0, kInt64Max);
    }
    state.replicas = static_cast<int>(bounded(manifest, "replicas", 1, kInt32Max));
    state.history = history_from_json(manifest.at("history"));
    // Every epoch done has its line in the history: an epoch count beyond it (2^31 - 1) is damage,
    // and resuming sized the window's epoch list by it (out of memory).
    if (static_cast<std::size_t>(state.epochs_done) > state.history.epochs.size() + 1) {
        throw CheckpointError(what + " is damaged: it says " + std::to_string(state.epochs_done) + " epochs are done, but its history holds " +
                              std::to_string(state.history.epochs.size()));
    }
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
    // The tensors fit the model and the optimizer the manifest names, and the optimizer's state is
    // one it can be in: otherwise evaluate, export and resume each failed later, without the file's
    // name (and a resume had already dropped the run's later epochs).
    const std::int64_t parameters = Model::from_json_text(checkpoint.model_json, what).total_params();
    if (static_cast<std::int64_t>(state.weights.size()) != parameters) {
        throw CheckpointError(what + " is damaged: it holds " + std::to_string(state.weights.size()) +
                              " weights for a model of " + std::to_string(parameters) + " parameters");
    }
    OptimizerSchedule schedule(checkpoint.config.optimizer);
    schedule.restore(state.optimizer_state);
    const std::int64_t slots = parameters * schedule.slot_count();
    // An optimizer that keeps no slots (SGD without momentum) writes one unused number, and the replica
    // takes back exactly one: its slot tensor is never empty.
    const auto held = static_cast<std::int64_t>(state.optimizer_slots.size());
    if (held != slots && !(slots == 0 && held == 1)) {
        throw CheckpointError(what + " is damaged: its optimizer state holds " + std::to_string(state.optimizer_slots.size()) +
                              " numbers where " + checkpoint.config.optimizer.describe() + " keeps " + std::to_string(slots) +
                              " (" + std::to_string(schedule.slot_count()) + " for each of the " + std::to_string(parameters) +
                              " parameters)");
    }
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

namespace {

// What the header and the manifest say about the file: checked on the file's first bytes, so
// that load_checkpoint() can refuse a file of the wrong size before reading it whole.
struct Framing {
    json::Value manifest;
    std::size_t manifest_bytes = 0;
    std::uint64_t expected_bytes = 0;  // header, manifest, tensors and the checksum
};

// `head`: the file's first bytes, at least the header and the manifest (else "truncated");
// `file_bytes`: its whole size.
Framing read_framing(const std::string& head, std::uint64_t file_bytes, const std::string& what) {
    if (head.size() < sizeof kCheckpointMagic || std::memcmp(head.data(), kCheckpointMagic, sizeof kCheckpointMagic) != 0) {
        if (head.rfind("PK\x03\x04", 0) == 0) {  // what `export --keras` writes, given back
            throw CheckpointError(what + " is a zip archive (a Keras .keras file?), not a MirrorLab checkpoint; "
                                         "`mirrorlab-cli import FILE --evaluate` evaluates a .keras file");
        }
        throw CheckpointError(what + " is not a MirrorLab checkpoint (it does not start with the checkpoint signature)");
    }
    if (file_bytes < kHeaderBytes + 4 || head.size() < kHeaderBytes) {
        throw CheckpointError(what + " is truncated: it holds only " + std::to_string(file_bytes) + " bytes");
    }
    const std::uint32_t version = get_u32(head, sizeof kCheckpointMagic);
    if (version != kCheckpointVersion) {
        throw CheckpointError(what + " is a version " + std::to_string(version) + " checkpoint; this MirrorLab reads version " +
                              std::to_string(kCheckpointVersion) + " (use the MirrorLab that wrote it)");
    }
    Framing framing;
    framing.manifest_bytes = get_u32(head, sizeof kCheckpointMagic + 4);
    if (framing.manifest_bytes > file_bytes - kHeaderBytes - 4 || framing.manifest_bytes > head.size() - kHeaderBytes) {
        throw CheckpointError(what + " is truncated: its manifest needs " + std::to_string(framing.manifest_bytes) + " bytes, " +
                              std::to_string(file_bytes - kHeaderBytes - 4) + " follow");
    }
    std::uint64_t tensor_bytes = 0;
    try {
        framing.manifest = json::parse(std::string_view(head).substr(kHeaderBytes, framing.manifest_bytes), what);
        for (const json::Value& tensor : framing.manifest.at("tensors").as_array()) {
            // Bounded before it is multiplied: a count of 2^62 wrapped to a small size.
            const std::int64_t count = tensor.at("count").as_int64();
            if (count < 0 || static_cast<std::uint64_t>(count) > kMaxCheckpointBytes / 4) {
                throw Error("tensor '" + tensor.at("name").as_string() + "' has an impossible size (" +
                                      std::to_string(count) + " numbers)");
            }
            tensor_bytes += static_cast<std::uint64_t>(count) * 4;
        }
    } catch (const Error& e) {
        throw CheckpointError(what + " is damaged: its manifest cannot be read (" + e.what() + ")");
    }
    framing.expected_bytes = kHeaderBytes + framing.manifest_bytes + tensor_bytes + 4;
    if (file_bytes < framing.expected_bytes) {
        throw CheckpointError(what + " is truncated: it holds " + std::to_string(file_bytes) + " bytes of the " +
                              std::to_string(framing.expected_bytes) + " its manifest describes (was it copied or written completely?)");
    }
    if (file_bytes > framing.expected_bytes) {
        throw CheckpointError(what + " is damaged: it holds " + std::to_string(file_bytes) + " bytes, more than the " +
                              std::to_string(framing.expected_bytes) + " its manifest describes (bytes were added to it)");
    }
    return framing;
}

}  // namespace

Checkpoint parse_checkpoint(const std::string& bytes, const std::string& what) {
    const Framing framing = read_framing(bytes, bytes.size(), what);
    if (crc32c(bytes.data(), bytes.size() - 4) != get_u32(bytes, bytes.size() - 4)) {
        throw CheckpointError(what + " is damaged: its checksum does not match its contents");
    }
    try {
        return read_manifest(framing.manifest, bytes, kHeaderBytes + framing.manifest_bytes, what);
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
    // The header and the manifest first: a file of another kind, or not the size its manifest
    // describes (grown to 10 GB, cut short), is refused before it is read whole. What cannot be
    // read at all is read_file_text's to explain.
    std::optional<FileHead> head = regular_file_head(path, kHeaderBytes);
    if (head && head->bytes.size() == kHeaderBytes) {
        const std::uint64_t manifest_bytes = get_u32(head->bytes, sizeof kCheckpointMagic + 4);
        if (manifest_bytes <= head->file_bytes - kHeaderBytes) head = regular_file_head(path, kHeaderBytes + manifest_bytes);
    }
    if (head) (void)read_framing(head->bytes, head->file_bytes, what);
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
                              "); use the data set it was trained on (it may have changed since)");
    }
}

}  // namespace mirrorlab
