// libFuzzer target: the trainer's inputs end to end. A model JSON and a tiny data set go the way
// `mirrorlab-cli train` takes them (Model::from_json_text, load_dataset("csv:FILE") or a
// TextDataset, make_train_data, Trainer::run), for one training step on one memory-limited CPU
// device, then validation, with every event written as the CLI's --json line.
//
// Input layout:
//   byte 0      options
//     bit 0       data: 0 = a CSV file (label,text; read through load_dataset("csv:...")),
//                       1 = token sequences (below)
//     bits 1-2    optimizer: Nadam, Adam, SGD, RMSprop (Keras defaults)
//     bit 3       from_logits
//     bit 4       ids beyond the Embedding's input_dim: 0 = map to OOV, 1 = error (--oov)
//     bits 5-6    global batch size - 1 (1..4)
//     bit 7       detailed step statistics (the GUI's step view)
//   then        the model JSON, up to the first NUL byte (JSON text never holds a raw NUL)
//   then        the data:
//     CSV         the file's bytes
//     sequences   byte num_classes, 2 bytes vocabulary_size (little-endian), then samples:
//                 byte label, byte (bit 7: validation sample; bits 0-4: length), length x 2-byte
//                 token ids (little-endian); at most 16 training and 16 validation samples
//
// Expected outcomes: success, mirrorlab::Error from loading (ModelError, DataError,
// json::ParseError, DeviceConfigError), and a FailedEvent of kind out_of_memory, nan_loss, model,
// data or device_config. A bug: a crash or sanitizer report, any other exception, a FailedEvent of
// kind "internal" (an exception the trainer did not expect, e.g. std::bad_alloc or OpError), a
// result that is neither finished nor failed, or an event the CLI cannot write as JSON.
//
// Models that would make one execution slow (long sequences, many parameters, big layers) are
// skipped after they load: loading and validating them is still fuzzed, training them is not.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/data/dataset.h"
#include "core/data/source.h"
#include "core/device/device.h"
#include "core/model/model.h"
#include "core/optim/optimizer.h"
#include "core/train/events.h"
#include "core/train/trainer.h"
#include "core/util/error.h"
#include "fuzz_common.h"

using namespace mirrorlab;

namespace {

constexpr std::int32_t kMaxInputLength = 64;
constexpr std::int64_t kMaxParams = std::int64_t{1} << 17;
constexpr std::int64_t kMaxWorkPerSample = std::int64_t{1} << 18;  // multiply-adds, forward
constexpr std::size_t kMaxSamplesPerSplit = 16;

std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
    std::int64_t product = 0;
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &product)) return INT64_MAX;
    return product;
}

std::int64_t elements(const Shape& shape) {
    std::int64_t n = 1;
    for (std::int64_t d : shape.dims()) n = saturating_mul(n, d);
    return n;
}

// Roughly the forward multiply-adds of one sample, saturating (the model may be absurd).
std::int64_t work_per_sample(const Model& model) {
    std::int64_t total = 0;
    for (const LayerInfo& layer : model.layers()) {
        const std::int64_t in = elements(layer.input_shape), out = elements(layer.output_shape);
        std::int64_t work = saturating_mul(2, std::max(in, out));
        if (layer.config.kind == LayerKind::Conv1D) {
            const std::int64_t channels = layer.input_shape.rank() > 0 ? layer.input_shape[layer.input_shape.rank() - 1] : 1;
            work = saturating_mul(saturating_mul(out, layer.config.kernel_size), channels);
        } else if (layer.config.kind == LayerKind::Dense) {
            work = saturating_mul(in, layer.config.units);
        }
        total = work > INT64_MAX - total ? INT64_MAX : total + work;
    }
    return total;
}

struct Reader {
    const uint8_t* data;
    size_t size;
    size_t at = 0;
    bool has(size_t n) const { return size - at >= n; }
    uint8_t byte() { return data[at++]; }
    uint16_t u16() {
        const uint16_t v = static_cast<uint16_t>(data[at] | (data[at + 1] << 8));
        at += 2;
        return v;
    }
};

DatasetSplit sequences_split(const uint8_t* data, size_t size) {
    Reader in{data, size};
    DatasetSplit split;
    if (!in.has(3)) throw DataError("fuzz: no data header");
    const int32_t num_classes = in.byte();
    const int32_t vocabulary = in.u16();
    for (TextDataset* part : {&split.train, &split.validation}) {
        part->name = "fuzz";
        part->num_classes = num_classes;
        part->vocabulary_size = vocabulary;
    }
    while (in.has(2)) {
        const int32_t label = in.byte();
        const uint8_t how = in.byte();
        TextDataset& part = (how & 0x80) ? split.validation : split.train;
        std::vector<int32_t> ids;
        for (int k = 0; k < (how & 31) && in.has(2); ++k) ids.push_back(in.u16());
        if (part.sequences.size() >= kMaxSamplesPerSplit) continue;
        part.sequences.push_back(std::move(ids));
        part.labels.push_back(label);
    }
    return split;
}

// MIRRORLAB_FUZZ_VERBOSE=1: one line per input saying how it ended (for seeds and regressions).
void say(const std::string& outcome) {
    static const bool verbose = std::getenv("MIRRORLAB_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "fuzz_trainer: %s\n", outcome.c_str());
}

bool expected_failure(const std::string& kind) {
    return kind == "out_of_memory" || kind == "nan_loss" || kind == "model" || kind == "data" ||
           kind == "device_config";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    const uint8_t flags = data[0];
    const auto* json_begin = data + 1;
    const auto* json_end = static_cast<const uint8_t*>(std::memchr(json_begin, 0, size - 1));
    if (json_end == nullptr) json_end = data + size;
    const std::string_view model_json(reinterpret_cast<const char*>(json_begin),
                                      static_cast<size_t>(json_end - json_begin));
    const uint8_t* rest = json_end < data + size ? json_end + 1 : data + size;
    const size_t rest_size = static_cast<size_t>(data + size - rest);

    // One registry for every execution: the CPU only (no GPU plugin is looked for).
    static const auto registry = std::make_shared<DeviceRegistry>();

    TrainData train_data;
    std::unique_ptr<Model> model;
    try {
        model = std::make_unique<Model>(Model::from_json_text(model_json, "fuzz.json"));
        if (model->input_length() > kMaxInputLength || model->total_params() > kMaxParams ||
            work_per_sample(*model) > kMaxWorkPerSample) {
            say("skipped: the model is too big to train here");
            return 0;
        }
        DatasetSplit split;
        if (flags & 1) {
            split = sequences_split(rest, rest_size);
        } else {
            const auto path = fuzz::temp_dir() / "fuzz.csv";
            fuzz::write_file(path, rest, rest_size);
            split = load_dataset("csv:" + path.string());
            if (split.train.size() > kMaxSamplesPerSplit || split.validation.size() > kMaxSamplesPerSplit) {
                say("skipped: too many CSV rows");
                return 0;
            }
        }
        const OovPolicy policy = (flags & 0x10) ? OovPolicy::Error : OovPolicy::MapToOov;
        train_data = make_train_data(split, model->input_length(), model->vocabulary_size(), policy);
    } catch (const Error& e) {
        say(std::string("rejected while loading: ") + e.what());
        return 0;
    }

    static const OptimizerKind kOptimizers[] = {OptimizerKind::Nadam, OptimizerKind::Adam, OptimizerKind::SGD,
                                                OptimizerKind::RMSprop};
    TrainConfig config;
    config.epochs = 1;
    config.batch_size = 1 + ((flags >> 5) & 3);
    config.seed = 1;
    config.optimizer = OptimizerConfig::defaults(kOptimizers[(flags >> 1) & 3]);
    config.from_logits = (flags & 8) != 0;
    config.max_steps_per_epoch = 1;
    config.detailed_step_stats = (flags & 0x80) != 0;
    // 64 MB: a model that needs more fails with OutOfMemoryError, as on a small virtual device.
    Trainer trainer(*model, DeviceConfig::parse("cpu:1x64MB"), config, std::move(train_data), registry);
    trainer.set_event_sink([](const Event& event) {
        try {
            (void)event_to_json(event);
        } catch (const std::exception& e) {
            fuzz::invariant_failed("event_to_json threw (mirrorlab-cli --json would stop)", e.what());
        }
    });
    const FitResult result = trainer.run();
    say(result.ok ? "trained" : "failed (" + result.failed->kind + "): " + result.failed->reason);
    if (result.ok == result.failed.has_value()) fuzz::invariant_failed("FitResult is neither finished nor failed");
    if (result.failed && !expected_failure(result.failed->kind))
        fuzz::invariant_failed(("training failed with kind '" + result.failed->kind + "'").c_str(),
                               result.failed->reason);
    return 0;
}
