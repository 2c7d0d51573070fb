#pragma once
// MirrorLab checkpoints: one file that holds everything a run needs to continue — the model, the
// training settings, the weights, the optimizer's slots and iteration count, the epoch and step,
// the history and the callbacks' state — plus a fingerprint of the data it was trained on, so a
// checkpoint is never resumed on another model or data set by mistake. The layout is documented
// in docs/CHECKPOINTS.md. Files are written atomically (core/util/file.h) and checked with
// CRC-32C when read: a truncated or damaged file is refused with a message, never half-loaded.
#include <cstdint>
#include <string>
#include <vector>

#include "core/train/fit_state.h"
#include "core/train/trainer.h"
#include "core/util/error.h"
#include "core/util/json.h"

namespace mirrorlab {

// A checkpoint that cannot be read or does not fit what it is asked to continue.
class CheckpointError : public Error {
public:
    using Error::Error;
};

// What a checkpoint remembers of the data: enough to say "this is another data set" in words.
struct DataFingerprint {
    std::string name;
    std::int64_t train_samples = 0;
    std::int64_t validation_samples = 0;
    std::int32_t sequence_length = 0;
    std::int32_t num_classes = 0;
    std::string digest;  // FNV-1a 64 over the training ids and labels, 16 hex digits
    bool operator==(const DataFingerprint&) const = default;
};
DataFingerprint fingerprint_of(const TrainData& data);

struct Checkpoint {
    std::string model_json;  // Model::to_json_text()
    TrainConfig config;
    std::string device_spec;  // DeviceConfig::to_spec() of the devices it was trained on
    DataFingerprint data;
    // Settings of the program that started the run (the data source and its options, ...), kept
    // verbatim so that resuming from the file alone can rebuild them. An object; may be empty.
    json::Value settings = json::Value::object();
    std::int64_t run_id = 0;  // the run store's id of the run, 0 when none
    TrainingState state;
};

inline constexpr char kCheckpointMagic[8] = {'\x89', 'M', 'L', 'C', 'K', 'P', 'T', '\n'};
inline constexpr std::uint32_t kCheckpointVersion = 1;

std::string serialize_checkpoint(const Checkpoint& checkpoint);
// The same with the training state given apart from the rest (whose own `state` is ignored), so
// that saving a snapshot does not copy its weights and slots once more.
std::string serialize_checkpoint(const Checkpoint& checkpoint, const TrainingState& state);
// `what` names the file in errors. Throws CheckpointError.
Checkpoint parse_checkpoint(const std::string& bytes, const std::string& what);

// Atomic: the old file at `path` stays until the new one is complete on the disk. Throws
// DataError (disk full, no permission), naming the file.
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint, const TrainingState& state);
// Throws CheckpointError ("'x.mlckpt' is truncated: ...", "... is damaged: ...") or DataError
// when the file cannot be read.
Checkpoint load_checkpoint(const std::string& path);

// Throws CheckpointError naming the first difference between the checkpoint and what it is asked
// to continue with: another model (layer by layer), another data set (name, sizes, contents).
void check_checkpoint_fits(const Checkpoint& checkpoint, const Model& model, const DataFingerprint& data,
                           const std::string& what);

}  // namespace mirrorlab
