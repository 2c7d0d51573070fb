// The Sequential model: JSON in Keras' vocabulary, shape inference, parameter counts, the Keras
// summary table, initialisers, and the messages a person sees for a model that cannot work.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "core/layers/layer_type.h"
#include "core/model/model.h"
#include "core/model/replica.h"
#include "core/util/error.h"
#include "core/util/json.h"

using namespace mirrorlab;

namespace {

// What the tutorial prints (../shared/ARCHITECTURE.md), line for line.
const char* const kTutorialSummary =
    "Model: \"sequential\"\n"
    "_________________________________________________________________\n"
    "Layer (type)                 Output Shape              Param #\n"
    "=================================================================\n"
    "embedding (Embedding)        (None, 300, 7)            216874\n"
    "_________________________________________________________________\n"
    "conv1d (Conv1D)              (None, 296, 64)           2304\n"
    "_________________________________________________________________\n"
    "max_pooling1d (MaxPooling1D) (None, 148, 64)           0\n"
    "_________________________________________________________________\n"
    "conv1d_1 (Conv1D)            (None, 146, 32)           6176\n"
    "_________________________________________________________________\n"
    "max_pooling1d_1 (MaxPooling1 (None, 73, 32)            0\n"
    "_________________________________________________________________\n"
    "flatten (Flatten)            (None, 2336)              0\n"
    "_________________________________________________________________\n"
    "dense (Dense)                (None, 46)                107502\n"
    "=================================================================\n"
    "Total params: 332,856\n"
    "Trainable params: 332,856\n"
    "Non-trainable params: 0\n"
    "_________________________________________________________________\n";

QString model_error(const std::string& text) {
    try {
        Model::from_json_text(text, "test.json");
    } catch (const ModelError& error) {
        return QString::fromStdString(error.what());
    }
    return {};
}

std::string with_layers(const std::string& layers, int input_length = 20) {
    return "{\"input_length\": " + std::to_string(input_length) + ", \"layers\": [" + layers + "]}";
}

const char* const kEmbedding = "{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": 100, \"output_dim\": 4}}";

}  // namespace

class TestModel : public QObject {
    Q_OBJECT
private slots:
    void tutorialModelMatchesKerasSummary() {
        const Model model = Model::reference();
        QCOMPARE(QString::fromStdString(model.summary()), QString::fromLatin1(kTutorialSummary));
        QCOMPARE(model.total_params(), std::int64_t{332856});
        QCOMPARE(model.layers().front().param_count, std::int64_t{216874});
        QCOMPARE(model.num_classes(), 46);
        QCOMPARE(model.input_length(), 300);
        QCOMPARE(model.vocabulary_size(), std::int64_t{30982});
        QCOMPARE(model.output_activation(), ActivationKind::Softmax);
    }

    void presetFileIsTheBuiltInModel() {
        const Model from_file = Model::from_json_file(std::string(MIRRORLAB_SOURCE_DIR) + "/resources/presets/reuters_tutorial.json");
        QCOMPARE(QString::fromStdString(from_file.to_json_text()), QString::fromStdString(Model::reference().to_json_text()));
    }

    void jsonRoundTripKeepsEverything() {
        const std::string text = with_layers(
            std::string(kEmbedding) +
            ",{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 8, \"kernel_size\": 4, \"padding\": \"same\", \"activation\": \"tanh\", \"use_bias\": false}}"
            ",{\"class_name\": \"MaxPooling1D\", \"config\": {\"pool_size\": 3, \"strides\": 2, \"padding\": \"same\"}}"
            ",{\"class_name\": \"Dropout\", \"config\": {\"rate\": 0.25}}"
            ",{\"class_name\": \"GlobalMaxPooling1D\"}"
            ",{\"class_name\": \"Dense\", \"config\": {\"units\": 16, \"activation\": \"relu\"}}"
            ",{\"class_name\": \"Dense\", \"config\": {\"units\": 3, \"activation\": \"softmax\"}}");
        const Model model = Model::from_json_text(text);
        const Model again = Model::from_json_text(model.to_json_text());
        QCOMPARE(QString::fromStdString(again.to_json_text()), QString::fromStdString(model.to_json_text()));
        QCOMPARE(QString::fromStdString(again.summary()), QString::fromStdString(model.summary()));
        // same padding keeps the length; pooling 'same' with stride 2 gives ceil(20 / 2).
        QCOMPARE(model.layers()[1].output_shape, (Shape{20, 8}));
        QCOMPARE(model.layers()[1].param_count, std::int64_t{4 * 4 * 8});  // no bias
        QCOMPARE(model.layers()[2].output_shape, (Shape{10, 8}));
        QCOMPARE(model.layers()[4].output_shape, (Shape{8}));
        QCOMPARE(model.total_params(), std::int64_t{400 + 128 + (8 * 16 + 16) + (16 * 3 + 3)});
    }

    void kerasNamesAreGeneratedLikeKeras() {
        const Model model = Model::from_json_text(with_layers(
            std::string(kEmbedding) +
            ",{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 4, \"kernel_size\": 3}}"
            ",{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 4, \"kernel_size\": 3}}"
            ",{\"class_name\": \"MaxPool1D\"}"
            ",{\"class_name\": \"Flatten\"}"
            ",{\"class_name\": \"Dense\", \"config\": {\"units\": 2, \"activation\": \"softmax\"}}"));
        QStringList names;
        for (const auto& layer : model.layers()) names << QString::fromStdString(layer.config.name);
        QCOMPARE(names, (QStringList{"embedding", "conv1d", "conv1d_1", "max_pooling1d", "flatten", "dense"}));
        QCOMPARE(QString::fromStdString(model.variables()[1].name), QString("conv1d/kernel"));
    }

    void acceptsKerasModelToJson() {
        // Trimmed output of Keras' model.to_json() for a Sequential model (Keras 2 layout).
        const std::string keras =
            "{\"class_name\": \"Sequential\", \"config\": {\"name\": \"sequential\", \"layers\": ["
            "{\"class_name\": \"InputLayer\", \"config\": {\"batch_input_shape\": [null, 300], \"dtype\": \"float32\"}},"
            "{\"class_name\": \"Embedding\", \"config\": {\"name\": \"embedding\", \"input_dim\": 30982, \"output_dim\": 7}},"
            "{\"class_name\": \"Conv1D\", \"config\": {\"name\": \"conv1d\", \"filters\": 64, \"kernel_size\": [5], \"strides\": [1], \"padding\": \"valid\", \"activation\": \"relu\", \"use_bias\": true}},"
            "{\"class_name\": \"MaxPooling1D\", \"config\": {\"name\": \"max_pooling1d\", \"pool_size\": [2], \"strides\": [2], \"padding\": \"valid\"}},"
            "{\"class_name\": \"Conv1D\", \"config\": {\"name\": \"conv1d_1\", \"filters\": 32, \"kernel_size\": [3], \"activation\": \"relu\"}},"
            "{\"class_name\": \"MaxPooling1D\", \"config\": {\"name\": \"max_pooling1d_1\", \"pool_size\": [2]}},"
            "{\"class_name\": \"Flatten\", \"config\": {\"name\": \"flatten\"}},"
            "{\"class_name\": \"Dense\", \"config\": {\"name\": \"dense\", \"units\": 46, \"activation\": \"softmax\"}}]}}";
        const Model model = Model::from_json_text(keras);
        QCOMPARE(model.total_params(), std::int64_t{332856});
        QCOMPARE(QString::fromStdString(model.summary()), QString::fromLatin1(kTutorialSummary));
    }

    void withInputLengthReinfersShapes() {
        const Model shorter = Model::reference().with_input_length(100);
        QCOMPARE(shorter.layers()[5].output_shape, (Shape{(((100 - 4) / 2 - 2) / 2) * 32}));
        QVERIFY(shorter.total_params() < Model::reference().total_params());
        QVERIFY_THROWS_EXCEPTION(ModelError, Model::reference().with_input_length(8));
    }

    void impossibleModelsNameTheLayerAndTheFix_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QStringList>("expected");
        auto conv = [](int k) {
            return ",{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 4, \"kernel_size\": " + std::to_string(k) + "}}";
        };
        const std::string dense = ",{\"class_name\": \"Dense\", \"config\": {\"units\": 3, \"activation\": \"softmax\"}}";
        const std::string flatten = ",{\"class_name\": \"Flatten\"}";
        QTest::newRow("malformed json") << "{\"layers\": [" << QStringList{"test.json:1:13", "cannot read the model"};
        QTest::newRow("not an object") << "[1, 2]" << QStringList{"test.json", "must be a JSON object"};
        QTest::newRow("no layers") << "{\"input_length\": 5}" << QStringList{"\"layers\" list"};
        QTest::newRow("empty layers") << QString::fromStdString(with_layers("")) << QStringList{"no layers", "Embedding"};
        QTest::newRow("unknown layer") << QString::fromStdString(with_layers(std::string(kEmbedding) + ",{\"class_name\": \"Conv3D\"}"))
                                       << QStringList{"layer 2", "Conv3D", "not supported", "Conv1D"};
        QTest::newRow("kernel longer than input")
            << QString::fromStdString(with_layers(std::string(kEmbedding) + conv(50) + flatten + dense, 10))
            << QStringList{"conv1d", "kernel_size 50", "only 10 steps", "padding 'same'"};
        QTest::newRow("dense on a sequence") << QString::fromStdString(with_layers(std::string(kEmbedding) + dense))
                                             << QStringList{"dense", "(None, 20, 4)", "Flatten, GlobalMaxPooling1D or GlobalAveragePooling1D"};
        QTest::newRow("no embedding first")
            << QString::fromStdString(with_layers("{\"class_name\": \"Dense\", \"config\": {\"units\": 3}}"))
            << QStringList{"must start with an Embedding"};
        QTest::newRow("negative filters")
            << QString::fromStdString(with_layers(std::string(kEmbedding) + ",{\"class_name\": \"Conv1D\", \"config\": {\"filters\": -4, \"kernel_size\": 3}}"))
            << QStringList{"'filters' must be a positive integer", "-4"};
        QTest::newRow("missing units")
            << QString::fromStdString(with_layers(std::string(kEmbedding) + flatten + ",{\"class_name\": \"Dense\", \"config\": {}}"))
            << QStringList{"missing 'units'"};
        QTest::newRow("bad activation")
            << QString::fromStdString(with_layers(std::string(kEmbedding) + flatten +
                                                  ",{\"class_name\": \"Dense\", \"config\": {\"units\": 3, \"activation\": \"swish\"}}"))
            << QStringList{"swish", "relu"};
        QTest::newRow("softmax in the middle")
            << QString::fromStdString(with_layers(std::string(kEmbedding) + flatten +
                                                  ",{\"class_name\": \"Dense\", \"config\": {\"units\": 8, \"activation\": \"softmax\"}}" + dense))
            << QStringList{"softmax", "last layer"};
        QTest::newRow("one class")
            << QString::fromStdString(with_layers(std::string(kEmbedding) + flatten +
                                                  ",{\"class_name\": \"Dense\", \"config\": {\"units\": 1, \"activation\": \"softmax\"}}"))
            << QStringList{"1 unit", "one unit per class"};
        QTest::newRow("duplicate names")
            << QString::fromStdString(with_layers(std::string(kEmbedding) +
                                                  ",{\"class_name\": \"Flatten\", \"config\": {\"name\": \"embedding\"}}" + dense))
            << QStringList{"two layers are named 'embedding'"};
        QTest::newRow("dropout rate") << QString::fromStdString(with_layers(std::string(kEmbedding) +
                                                                           ",{\"class_name\": \"Dropout\", \"config\": {\"rate\": 1.5}}"))
                                      << QStringList{"'rate' must be in [0, 1)"};
        QTest::newRow("no input length")
            << QString::fromStdString("{\"layers\": [" + std::string(kEmbedding) + "]}")
            << QStringList{"sequence length is unknown", "input_length"};
        QTest::newRow("strided conv")
            << QString::fromStdString(with_layers(std::string(kEmbedding) +
                                                  ",{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 4, \"kernel_size\": 3, \"strides\": 2}}"))
            << QStringList{"strides other than 1"};

        // Sizes from a file never wrap (the audit's Embedding(2^62 + 1, 4) summed to 4 parameters
        // and trained out of bounds; 2^32 + 64 filters trained as 64).
        auto embedding = [](const std::string& input_dim, const std::string& output_dim) {
            return "{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": " + input_dim +
                   ", \"output_dim\": " + output_dim + "}}";
        };
        QTest::newRow("input_dim past int64 wrap")
            << QString::fromStdString(with_layers(embedding("4611686018427387905", "4") + flatten + dense))
            << QStringList{"'input_dim' is 4611686018427387905", "largest supported is 2147483647"};
        QTest::newRow("filters past int32")
            << QString::fromStdString(with_layers(std::string(kEmbedding) +
                                                  ",{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 4294967360, \"kernel_size\": 3}}"))
            << QStringList{"'filters' is 4294967360", "largest supported is 2147483647"};
        QTest::newRow("parameters past the cap")
            << QString::fromStdString(with_layers(embedding("2147483647", "2147483647") + flatten + dense))
            << QStringList{"layer 'embedding'", "more than 1,099,511,627,776 parameters"};
        QTest::newRow("kernel elements overflow")
            << QString::fromStdString(with_layers(embedding("100", "2147483647") +
                                                  ",{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 2147483647, \"kernel_size\": 2147483647, \"padding\": \"same\"}}"))
            << QStringList{"layer 'conv1d'", "more parameters than can be counted"};
        QTest::newRow("batch_input_shape past int32")
            << QString::fromStdString("{\"layers\": [{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": 100, "
                                      "\"output_dim\": 4, \"batch_input_shape\": [null, 4294967596]}}" + flatten + dense + "]}")
            << QStringList{"\"batch_input_shape\" must give a sequence length between 1 and 16777216", "4294967596"};
        QTest::newRow("keras input_length past int32")
            << QString::fromStdString("{\"layers\": [{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": 100, "
                                      "\"output_dim\": 4, \"input_length\": 4294967597}}" + flatten + dense + "]}")
            << QStringList{"\"input_length\" must give a sequence length", "4294967597"};
    }

    void impossibleModelsNameTheLayerAndTheFix() {
        QFETCH(QString, json);
        QFETCH(QStringList, expected);
        const QString message = model_error(json.toStdString());
        QVERIFY2(!message.isEmpty(), "the model was accepted");
        for (const QString& part : expected) {
            QVERIFY2(message.contains(part), qPrintable("missing '" + part + "' in: " + message));
        }
    }

    // The JSON the engine writes, to the letter, for every layer type and the arguments each
    // omits at Keras' default (use_bias, 'valid' pooling, the default strides): the registry's
    // generic writer must keep the files people already have and diff.
    void toJsonWritesEveryLayerTypeAsBefore() {
        const std::string text = with_layers(
            std::string(kEmbedding) +
            ",{\"class_name\": \"Convolution1D\", \"config\": {\"filters\": 8, \"kernel_size\": [4], \"strides\": [1], \"use_bias\": false}}"
            ",{\"class_name\": \"MaxPool1D\", \"config\": {\"pool_size\": [2], \"strides\": [2]}}"
            ",{\"class_name\": \"MaxPooling1D\", \"config\": {\"pool_size\": 2, \"strides\": 1, \"padding\": \"same\"}}"
            ",{\"class_name\": \"Dropout\"}"
            ",{\"class_name\": \"ReLU\"}"
            ",{\"class_name\": \"GlobalMaxPool1D\"}"
            ",{\"class_name\": \"Activation\", \"config\": {\"activation\": \"tanh\"}}"
            ",{\"class_name\": \"Dense\", \"config\": {\"units\": 3, \"activation\": \"softmax\"}}");
        const Model model = Model::from_json_text(text);
        QCOMPARE(model.layers()[2].config.strides, 0);  // Keras' explicit default is kept as "the pool size"
        QCOMPARE(model.layers()[4].config.rate, 0.5);   // our Dropout default
        QCOMPARE(model.layers()[5].config.activation, ActivationKind::ReLU);
        const char* const expected = R"({
  "name": "sequential",
  "input_length": 20,
  "layers": [
    {
      "class_name": "Embedding",
      "config": {
        "name": "embedding",
        "input_dim": 100,
        "output_dim": 4
      }
    },
    {
      "class_name": "Conv1D",
      "config": {
        "name": "conv1d",
        "filters": 8,
        "kernel_size": 4,
        "padding": "valid",
        "activation": "linear",
        "use_bias": false
      }
    },
    {
      "class_name": "MaxPooling1D",
      "config": {
        "name": "max_pooling1d",
        "pool_size": 2
      }
    },
    {
      "class_name": "MaxPooling1D",
      "config": {
        "name": "max_pooling1d_1",
        "pool_size": 2,
        "strides": 1,
        "padding": "same"
      }
    },
    {
      "class_name": "Dropout",
      "config": {
        "name": "dropout",
        "rate": 0.5
      }
    },
    {
      "class_name": "Activation",
      "config": {
        "name": "activation",
        "activation": "relu"
      }
    },
    {
      "class_name": "GlobalMaxPooling1D",
      "config": {
        "name": "global_max_pooling1d"
      }
    },
    {
      "class_name": "Activation",
      "config": {
        "name": "activation_1",
        "activation": "tanh"
      }
    },
    {
      "class_name": "Dense",
      "config": {
        "name": "dense",
        "units": 3,
        "activation": "softmax"
      }
    }
  ]
}
)";
        QCOMPARE(QString::fromStdString(model.to_json_text()), QString::fromLatin1(expected));
    }

    // GlobalAveragePooling1D as tf.keras 2.15's model.to_json() writes it: the mean over the steps,
    // no parameters, Keras' automatic name, and Keras' other forms refused by name.
    void globalAveragePooling1DFromKerasJson() {
        const std::string gap =
            ",{\"module\": \"keras.layers\", \"class_name\": \"GlobalAveragePooling1D\", \"config\": {\"name\": "
            "\"global_average_pooling1d\", \"trainable\": true, \"dtype\": \"float32\", \"data_format\": \"channels_last\", "
            "\"keepdims\": false}, \"registered_name\": null, \"build_config\": {\"input_shape\": [null, 18, 8]}}";
        const std::string conv = ",{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 8, \"kernel_size\": 3}}";
        const std::string dense = ",{\"class_name\": \"Dense\", \"config\": {\"units\": 3, \"activation\": \"softmax\"}}";
        const Model model = Model::from_json_text(with_layers(std::string(kEmbedding) + conv + gap + dense));
        QCOMPARE(model.layers()[2].config.kind, LayerKind::GlobalAveragePooling1D);
        QCOMPARE(model.layers()[2].output_shape, (Shape{8}));
        QCOMPARE(model.layers()[2].param_count, std::int64_t{0});
        QCOMPARE(model.total_params(), std::int64_t{400 + 104 + 27});  // as Keras counts it
        // Keras 2's summary cuts the first column at 28 characters, as for max_pooling1d_1.
        QVERIFY2(QString::fromStdString(model.summary())
                     .contains("global_average_pooling1d (Gl (None, 8)                 0\n"),
                 model.summary().c_str());
        const Model again = Model::from_json_text(model.to_json_text());
        QCOMPARE(QString::fromStdString(again.to_json_text()), QString::fromStdString(model.to_json_text()));
        QVERIFY(model.to_json_text().find("\"class_name\": \"GlobalAveragePooling1D\"") != std::string::npos);
        // Automatic names and the short spelling.
        const Model named = Model::from_json_text(with_layers(std::string(kEmbedding) + conv +
                                                              ",{\"class_name\": \"GlobalAvgPool1D\"}" + dense));
        QCOMPARE(QString::fromStdString(named.layers()[2].config.name), QString("global_average_pooling1d"));

        QVERIFY(model_error(with_layers(std::string(kEmbedding) + conv +
                                        ",{\"class_name\": \"GlobalAveragePooling1D\", \"config\": {\"keepdims\": true}}" + dense))
                    .contains("keepdims=True is not supported"));
        QVERIFY(model_error(with_layers(std::string(kEmbedding) + conv +
                                        ",{\"class_name\": \"GlobalAveragePooling1D\", \"config\": {\"data_format\": \"channels_first\"}}" +
                                        dense))
                    .contains("data_format 'channels_first' is not supported; use 'channels_last'"));
        const QString vector_input = model_error(with_layers(std::string(kEmbedding) + ",{\"class_name\": \"Flatten\"}" +
                                                             ",{\"class_name\": \"GlobalAveragePooling1D\"}" + dense));
        QVERIFY2(vector_input.contains("layer 'global_average_pooling1d' (GlobalAveragePooling1D) needs a sequence input"),
                 qPrintable(vector_input));
    }

    // SpatialDropout1D as tf.keras 2.15 writes it (noise_shape and seed null): shape-preserving, no
    // parameters, the rate required as in Keras, and only after a sequence.
    void spatialDropout1DFromKerasJson() {
        const std::string spatial =
            ",{\"class_name\": \"SpatialDropout1D\", \"config\": {\"name\": \"spatial_dropout1d\", \"trainable\": true, "
            "\"dtype\": \"float32\", \"rate\": 0.3, \"noise_shape\": null, \"seed\": null}}";
        const std::string tail = ",{\"class_name\": \"GlobalAveragePooling1D\"},{\"class_name\": \"Dense\", \"config\": "
                                 "{\"units\": 3, \"activation\": \"softmax\"}}";
        const Model model = Model::from_json_text(with_layers(std::string(kEmbedding) + spatial + tail));
        QCOMPARE(model.layers()[1].config.kind, LayerKind::SpatialDropout1D);
        QCOMPARE(model.layers()[1].config.rate, 0.3);
        QCOMPARE(model.layers()[1].output_shape, (Shape{20, 4}));
        QCOMPARE(model.total_params(), std::int64_t{400 + 15});  // as Keras counts it
        QVERIFY2(QString::fromStdString(model.summary()).contains("spatial_dropout1d (SpatialDr (None, 20, 4)             0\n"),
                 model.summary().c_str());
        QVERIFY(model.to_json_text().find("\"rate\": 0.3") != std::string::npos);
        QCOMPARE(QString::fromStdString(Model::from_json_text(model.to_json_text()).to_json_text()),
                 QString::fromStdString(model.to_json_text()));
        // Identity at inference, so a softmax behind it still counts as the output's activation.
        QCOMPARE(model.output_activation(), ActivationKind::Softmax);

        QVERIFY(model_error(with_layers(std::string(kEmbedding) + ",{\"class_name\": \"SpatialDropout1D\"}" + tail))
                    .contains("(SpatialDropout1D) is missing 'rate' (a number in [0, 1))"));
        QVERIFY(model_error(with_layers(std::string(kEmbedding) +
                                        ",{\"class_name\": \"SpatialDropout1D\", \"config\": {\"rate\": 1}}" + tail))
                    .contains("'rate' must be in [0, 1)"));
        const QString vector_input = model_error(
            with_layers(std::string(kEmbedding) + ",{\"class_name\": \"GlobalAveragePooling1D\"}" +
                        ",{\"class_name\": \"SpatialDropout1D\", \"config\": {\"rate\": 0.2}}" +
                        ",{\"class_name\": \"Dense\", \"config\": {\"units\": 3, \"activation\": \"softmax\"}}"));
        QVERIFY2(vector_input.contains("layer 'spatial_dropout1d' (SpatialDropout1D) needs a sequence input (steps, channels), "
                                       "got (None, 4)"),
                 qPrintable(vector_input));
    }

    // Every descriptor is filed under its own kind, names a class and stem no other type has, and
    // takes only arguments the form has a widget for.
    void registryIsConsistent() {
        QStringList classes, stems;
        for (const LayerType* type : layer_types()) {
            QVERIFY(type->kind != LayerKind::Invalid);
            QCOMPARE(&layer_type(type->kind), type);
            QVERIFY2(type->infer != nullptr && type->forward != nullptr && type->backward != nullptr,
                     type->class_name.data());
            QCOMPARE(find_layer_type(type->class_name), type);
            for (const LayerAlias& alias : type->aliases) QCOMPARE(find_layer_type(alias.class_name), type);
            classes << QString::fromLatin1(type->class_name.data(), static_cast<int>(type->class_name.size()));
            stems << QString::fromLatin1(type->name_stem.data(), static_cast<int>(type->name_stem.size()));
            for (const LayerArgument& argument : type->arguments) {
                const auto specs = argument_specs();
                QVERIFY2(std::find(specs.begin(), specs.end(), argument.spec) != specs.end(), argument.spec->key.data());
            }
            for (const OpDef* op : type->ops) {
                QCOMPARE(find_op(op->name), op);
                QVERIFY(op->reference != nullptr);
            }
        }
        QCOMPARE(classes.removeDuplicates(), 0);
        QCOMPARE(stems.removeDuplicates(), 0);
        QVERIFY(find_layer_type("Conv3D") == nullptr);
        QVERIFY(QString::fromStdString(supported_layers_text())
                    .startsWith("Embedding, Conv1D, MaxPooling1D, GlobalMaxPooling1D, "));
        QVERIFY(QString::fromStdString(supported_layers_text()).contains("Activation, ReLU"));
    }

    void missingModelFileNamesThePath() {
        try {
            Model::from_json_file("/nonexistent/model.json");
            QFAIL("no error");
        } catch (const ModelError& error) {
            QVERIFY(QString(error.what()).contains("/nonexistent/model.json"));
            QVERIFY(QString(error.what()).contains("No such file"));
        }
    }

    void initialWeightsFollowKerasDefaults() {
        const Model model = Model::reference();
        const std::vector<float> weights = initial_weights(model, 42);
        QCOMPARE(static_cast<std::int64_t>(weights.size()), model.total_params());
        std::size_t offset = 0;
        for (const auto& variable : model.variables()) {
            const auto count = static_cast<std::size_t>(variable.shape.numel());
            const auto begin = weights.begin() + static_cast<std::ptrdiff_t>(offset);
            const auto [low, high] = std::minmax_element(begin, begin + static_cast<std::ptrdiff_t>(count));
            double sum = 0.0;
            for (std::size_t i = 0; i < count; ++i) sum += weights[offset + i];
            const double mean = sum / static_cast<double>(count);
            if (variable.initializer == Initializer::Zeros) {
                QCOMPARE(*low, 0.0f);
                QCOMPARE(*high, 0.0f);
            } else {
                const double limit = variable.initializer == Initializer::EmbeddingUniform
                                         ? 0.05
                                         : std::sqrt(6.0 / static_cast<double>(variable.fan_in + variable.fan_out));
                QVERIFY2(*low >= -limit && *high <= limit, variable.name.c_str());
                // A uniform sample spans nearly the whole range and is centred.
                QVERIFY2(*high > 0.95 * limit && *low < -0.95 * limit, variable.name.c_str());
                QVERIFY2(std::abs(mean) < 0.05 * limit, variable.name.c_str());
            }
            offset += count;
        }
        // Glorot for conv1d's kernel [5, 7, 64]: fan_in 35, fan_out 320.
        QCOMPARE(model.variables()[1].fan_in + model.variables()[1].fan_out, std::int64_t{35 + 320});
        QVERIFY(initial_weights(model, 42) == weights);
        QVERIFY(initial_weights(model, 43) != weights);
    }
};

QTEST_APPLESS_MAIN(TestModel)
#include "test_model.moc"
