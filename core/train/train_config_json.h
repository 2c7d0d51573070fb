#pragma once
// TrainConfig as JSON: what a run store row and a checkpoint keep of a run's settings, so that
// "train again" and resume rebuild exactly the configuration that ran. Every field is written;
// reading fills fields that are missing from the defaults (older files) and throws ModelError for
// a value of the wrong type or an unknown name ("optimizer 'adamw' is not one of ...").
#include "core/train/trainer.h"
#include "core/util/json.h"

namespace mirrorlab {

json::Value train_config_to_json(const TrainConfig& config);
// Keys: a person's --config file is read strictly (a misspelt key is refused, with the keys there
// are); MirrorLab's own files (checkpoints, the run store's settings) are read leniently, so that a
// field a later version adds does not make them unreadable. Numbers are range-checked either way.
enum class UnknownKeys { Refuse, Ignore };
TrainConfig train_config_from_json(const json::Value& value, UnknownKeys unknown_keys = UnknownKeys::Ignore);

// History as a JSON array of Keras-named epoch objects ({"epoch":1,"loss":..,"val_loss":..}).
json::Value history_to_json(const History& history);
History history_from_json(const json::Value& value);

}  // namespace mirrorlab
