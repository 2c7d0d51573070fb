#pragma once
// TensorBoard event files, written as Keras 3's keras.callbacks.TensorBoard writes them during
// model.fit with validation data (checked against files Keras wrote: tests/data/tensorboard/):
//
//   DIR/train/events.out.tfevents.<seconds>.<host>.<pid>.<n>.v2
//     epoch_loss, epoch_sparse_categorical_accuracy, epoch_sparse_top_k_categorical_accuracy,
//     epoch_learning_rate                                   step: the epoch, 0-based
//     batch_<the same three> (update_freq="batch" only)     step: the global batch, 1-based
//   DIR/validation/events.out.tfevents.<...>.v2
//     evaluation_<metric>_vs_iterations                     step: the optimizer's iterations so far
//     epoch_loss, epoch_sparse_categorical_accuracy, ...    step: the epoch, 0-based
//
// Each file is a sequence of TFRecords (length, masked CRC-32C of the length, an Event message,
// masked CRC-32C of the message). The first Event holds file_version "brain.Event:2"; then one
// Event per scalar, a TF2 summary: a float32 scalar tensor (tensor_content) with plugin "scalars".
// Protocol buffers stay inside tensorboard.cpp.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/train/events.h"
#include "core/util/error.h"

namespace mirrorlab {

class RunStore;

// A folder or file that cannot be written, or an event file that cannot be read. The message
// names the path: "cannot write TensorBoard event files in '/x/train': Permission denied".
class TensorBoardError : public Error {
public:
    using Error::Error;
};

// --- Reading (tests, and anyone who wants to check a file) ---------------------------------

// One value of a summary as the file encodes it.
struct TensorBoardValue {
    std::string tag;
    double value = std::numeric_limits<double>::quiet_NaN();
    std::string plugin_name;           // "scalars"
    int dtype = 0;                     // TensorFlow's DataType: 1 float32, 2 float64; 0 simple_value
    std::vector<std::int64_t> shape;   // {} for a scalar
    bool has_shape = false;            // the tensor names its shape (an empty one for a scalar)
    bool in_tensor_content = false;    // the value's bytes are in tensor_content (as TensorFlow writes)
    bool simple_value = false;         // TF1's Summary.Value.simple_value
};

// One Event record.
struct TensorBoardEvent {
    double wall_time = 0.0;
    std::int64_t step = 0;
    std::string file_version;   // "brain.Event:2" in the first record, else empty
    std::string source_writer;  // SourceMetadata.writer, where given
    std::vector<TensorBoardValue> values;
};

// Every record of an event file, each checked: a truncated record, a CRC that does not match (of
// the length or of the data) or a message that does not parse throws TensorBoardError naming the
// file (`name`), the record's number and its offset.
std::vector<TensorBoardEvent> parse_tensorboard_events(std::string_view bytes, const std::string& name);
std::vector<TensorBoardEvent> read_tensorboard_events(const std::string& path);

// --- Writing ---------------------------------------------------------------------------------

// One events.out.tfevents.* file in `folder`. Nothing is created until the first write (as
// TensorFlow's writer); then the folder is created and the file starts with its version record.
class EventFileWriter {
public:
    explicit EventFileWriter(std::string folder);
    ~EventFileWriter();
    EventFileWriter(const EventFileWriter&) = delete;
    EventFileWriter& operator=(const EventFileWriter&) = delete;

    // Creates the folder and the file now. Throws TensorBoardError.
    void open(double wall_time);
    // A float32 scalar summary as tf.summary.scalar writes it. Throws TensorBoardError.
    void write_scalar(const std::string& tag, double value, std::int64_t step, double wall_time);
    // Hands what was written to the OS, so that a TensorBoard reading the folder sees it.
    void flush();
    void close();

    const std::string& folder() const { return folder_; }
    const std::string& path() const { return path_; }  // empty until opened

private:
    void write_record(const std::string& bytes);

    std::string folder_;
    std::string path_;
    std::FILE* file_ = nullptr;
};

struct TensorBoardOptions {
    std::string log_dir;
    // Keras' update_freq="batch": every training step's running metrics as batch_* scalars.
    bool batches = false;
    // epoch_learning_rate, written each epoch when it is a number (Keras writes the optimizer's).
    double learning_rate = std::numeric_limits<double>::quiet_NaN();
};

// The seconds since the epoch of a run store time ("2026-12-02T03:04:05Z"); NaN if it is not one.
double wall_time_of_utc(const std::string& iso8601);

// Keras' TensorBoard callback for MirrorLab's trainer: feed it the trainer's events (consume) or
// write epochs and steps directly (export of a stored run). Both files are flushed at the end of
// every epoch, so a TensorBoard watching DIR shows the run as it trains.
class TensorBoardLogger {
public:
    using WarningSink = std::function<void(const std::string&)>;

    // `warn` hears of the first write that failed (consume only); logging then stops and
    // training goes on.
    explicit TensorBoardLogger(TensorBoardOptions options, WarningSink warn = {});
    ~TensorBoardLogger();
    TensorBoardLogger(const TensorBoardLogger&) = delete;
    TensorBoardLogger& operator=(const TensorBoardLogger&) = delete;

    // Never throws. TrainBeginEvent opens the train file (so an unwritable DIR is reported before
    // the first epoch), StepEndEvent writes batch_* scalars when asked, EpochEndEvent the epoch's,
    // FinishedEvent / FailedEvent close the files.
    void consume(const Event& event);
    bool failed() const { return failed_; }

    // These throw TensorBoardError. `epoch` is 1-based (MirrorLab's); the files get Keras' 0-based
    // step. `iterations`: training steps done by the end of this epoch (the optimizer's count).
    void write_step(std::int64_t global_step, const Metrics& running, double wall_time);
    void write_epoch(int epoch, const Metrics& train, const Metrics* validation, std::int64_t iterations, double wall_time);
    void open(double wall_time);  // the train file (before the first epoch, as Keras' on_train_begin)
    void flush();
    void close();

    const TensorBoardOptions& options() const { return options_; }
    std::vector<std::string> files() const;  // the event files opened so far

private:
    void fail(const std::exception& error);

    TensorBoardOptions options_;
    WarningSink warn_;
    EventFileWriter train_;
    EventFileWriter validation_;
    std::int64_t last_global_step_ = 0;
    bool failed_ = false;
};

// A stored run's epochs (and with `batches` its recorded steps) written into `log_dir` as the
// logger would have written them while the run trained; wall times follow the run's start and its
// epochs' seconds. Returns the folder's event files. Throws StoreError or TensorBoardError.
std::vector<std::string> export_run_to_tensorboard(const RunStore& store, std::int64_t run_id, const std::string& log_dir,
                                                   bool batches);

}  // namespace mirrorlab
