#pragma once
// Reading back what `mirrorlab-cli train --json` prints: one event per line, as event_to_json()
// writes it. This is how a front end follows a run in another process — rank 0 of a multi-worker
// job started by `mpirun`, or a job started from a terminal — as if it trained in-process.
//
// Tolerant by design, since the text comes from another program (maybe of another version) mixed
// with whatever else shares its output (Open MPI's messages): a line that is not a JSON object
// becomes a LogEvent with its text, an unknown event type is skipped and counted, a missing or
// mistyped field keeps its default. Nothing here throws for the text it is given.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/train/events.h"

namespace mirrorlab {

// The event an event_to_json() object describes; nullopt for a type this version does not know.
std::optional<Event> event_from_json(const json::Value& object);

// Splits a byte stream into lines (bytes may arrive in any pieces) and each line into an event.
class EventLineReader {
public:
    // The events of every line completed by `bytes` (a line ends at '\n'; "\r\n" too).
    std::vector<Event> feed(std::string_view bytes);
    // The last line when the stream ended without a newline (nothing when it ended on one).
    std::vector<Event> finish();

    std::size_t unknown_events() const { return unknown_events_; }  // JSON objects of a type skipped
    std::size_t text_lines() const { return text_lines_; }           // lines that were not events

private:
    void read_line(std::string_view line, std::vector<Event>& out);

    std::string partial_;
    std::size_t unknown_events_ = 0;
    std::size_t text_lines_ = 0;
};

}  // namespace mirrorlab
