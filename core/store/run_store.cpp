#include "core/store/run_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>

#include "core/util/time_text.h"

namespace mirrorlab {

namespace {

constexpr int kSchemaVersion = 1;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  note TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL,
  status_text TEXT NOT NULL DEFAULT '',
  started_at TEXT NOT NULL,
  ended_at TEXT NOT NULL DEFAULT '',
  settings TEXT NOT NULL,
  model TEXT NOT NULL,
  devices TEXT NOT NULL,
  data_name TEXT NOT NULL,
  parameters INTEGER NOT NULL DEFAULT 0,
  replicas INTEGER NOT NULL DEFAULT 0,
  epochs_planned INTEGER NOT NULL DEFAULT 0,
  epochs_completed INTEGER NOT NULL DEFAULT 0,
  best_epoch INTEGER NOT NULL DEFAULT 0,
  pid INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS epochs(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch INTEGER NOT NULL,
  loss REAL, accuracy REAL, top5 REAL,
  val_loss REAL, val_accuracy REAL, val_top5 REAL,
  seconds REAL NOT NULL DEFAULT 0,
  PRIMARY KEY(run_id, epoch));
CREATE TABLE IF NOT EXISTS steps(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  global_step INTEGER NOT NULL,
  epoch INTEGER NOT NULL,
  step INTEGER NOT NULL,
  loss REAL, accuracy REAL, top5 REAL,
  step_time_ms REAL NOT NULL DEFAULT 0,
  PRIMARY KEY(run_id, global_step)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS checkpoints(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  path TEXT NOT NULL,
  epoch INTEGER NOT NULL,
  global_step INTEGER NOT NULL,
  monitor_value REAL,
  PRIMARY KEY(run_id, kind));
)sql";

constexpr const char* kRunColumns =
    "id, name, note, status, status_text, started_at, ended_at, settings, model, devices, data_name, parameters, replicas, "
    "epochs_planned, epochs_completed, best_epoch, (SELECT COUNT(*) FROM steps WHERE steps.run_id = runs.id)";

std::string utc_now() { return now_text("%Y-%m-%dT%H:%M:%SZ", TimeZone::Utc); }

std::string lower(std::string text) {
    for (char& c : text) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return text;
}

}  // namespace

// One prepared statement; binds by position (1-based) and steps. Errors go through the store.
class RunStore::Statement {
public:
    Statement(const RunStore& store, const char* sql) : store_(store) {
        if (sqlite3_prepare_v2(store.db_, sql, -1, &statement_, nullptr) != SQLITE_OK) store.fail("preparing a query");
    }
    ~Statement() { sqlite3_finalize(statement_); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    Statement& bind(int index, std::int64_t value) {
        sqlite3_bind_int64(statement_, index, value);
        return *this;
    }
    Statement& bind(int index, double value) {
        if (std::isnan(value)) sqlite3_bind_null(statement_, index);
        else sqlite3_bind_double(statement_, index, value);
        return *this;
    }
    Statement& bind(int index, const std::string& text) {
        sqlite3_bind_text(statement_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
        return *this;
    }
    // True while a row is there; false when done. Throws on an error (a lock held too long, ...).
    bool step(const char* doing) {
        const int result = sqlite3_step(statement_);
        if (result == SQLITE_ROW) return true;
        if (result == SQLITE_DONE) return false;
        store_.fail(doing);
    }
    void run(const char* doing) {
        while (step(doing)) {
        }
        sqlite3_reset(statement_);
        sqlite3_clear_bindings(statement_);
    }
    std::int64_t integer(int column) const { return sqlite3_column_int64(statement_, column); }
    double real(int column) const {
        return sqlite3_column_type(statement_, column) == SQLITE_NULL ? std::nan("") : sqlite3_column_double(statement_, column);
    }
    std::string text(int column) const {
        const auto* data = sqlite3_column_text(statement_, column);
        return data ? std::string(reinterpret_cast<const char*>(data), static_cast<std::size_t>(sqlite3_column_bytes(statement_, column)))
                    : std::string();
    }

private:
    const RunStore& store_;
    sqlite3_stmt* statement_ = nullptr;
};

std::string_view run_status_name(RunStatus status) {
    switch (status) {
        case RunStatus::Running: return "running";
        case RunStatus::Finished: return "finished";
        case RunStatus::Stopped: return "stopped";
        case RunStatus::Failed: return "failed";
        case RunStatus::Interrupted: return "interrupted";
        case RunStatus::Invalid: break;
    }
    return "invalid";
}

RunStatus run_status_from_name(std::string_view name) {
    for (RunStatus status : {RunStatus::Running, RunStatus::Finished, RunStatus::Stopped, RunStatus::Failed, RunStatus::Interrupted}) {
        if (run_status_name(status) == name) return status;
    }
    return RunStatus::Invalid;
}

std::string RunStore::default_folder() {
    if (const char* explicit_folder = std::getenv("MIRRORLAB_DATA_DIR"); explicit_folder && *explicit_folder) return explicit_folder;
    if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg == '/') return std::string(xdg) + "/MirrorLab";
    const char* home = std::getenv("HOME");
    return std::string(home && *home ? home : ".") + "/.local/share/MirrorLab";
}

namespace {

// Why the database at `database_path` in `folder` cannot be opened or written, where that is
// something a person can fix; empty when the file system does not say (SQLite's reason stands).
// SQLite itself says only "unable to open database file" or "attempt to write a readonly database".
std::string why_the_store_cannot_open(const std::string& folder, const std::string& database_path) {
    const std::string elsewhere = "; or choose another store with --store DIR (MIRRORLAB_DATA_DIR in the window)";
    std::error_code error;
    const auto status = std::filesystem::status(database_path, error);
    if (error && error != std::errc::no_such_file_or_directory) {
        return "the run store's database '" + database_path + "' cannot be opened: " + error.message() +
               " (a symbolic link that leads nowhere?); move it away" + elsewhere;
    }
    if (std::filesystem::is_symlink(std::filesystem::symlink_status(database_path, error)) && !std::filesystem::exists(status)) {
        return "the run store's database '" + database_path + "' is a symbolic link to a file that is not there; move it away" +
               elsewhere;
    }
    if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
        return "the run store's database '" + database_path + "' is a folder or another kind of file, not a database; move it away" +
               elsewhere;
    }
    if (::access(folder.c_str(), W_OK) != 0) {
        return "the run store's folder '" + folder + "' cannot be written (" + std::strerror(errno) +
               "): the store records runs there even when it only reads them; make it writable" + elsewhere;
    }
    return {};
}

}  // namespace

RunStore::RunStore(std::string folder, int busy_timeout_ms) : folder_(std::move(folder)), busy_timeout_ms_(busy_timeout_ms) {
    std::error_code error;
    std::filesystem::create_directories(folder_ + "/runs", error);
    if (error) throw StoreError("cannot create the run store's folder '" + folder_ + "/runs': " + error.message() +
                                "; choose another store with --store DIR (MIRRORLAB_DATA_DIR in the window)");
    folder_ = std::filesystem::absolute(folder_).lexically_normal().string();
    if (folder_.size() > 1 && folder_.back() == '/') folder_.pop_back();
    database_path_ = folder_ + "/runs.sqlite";
    if (sqlite3_open_v2(database_path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) !=
        SQLITE_OK) {
        const std::string reason = db_ ? sqlite3_errmsg(db_) : "out of memory";
        sqlite3_close(db_);
        db_ = nullptr;
        const std::string why = why_the_store_cannot_open(folder_, database_path_);
        throw StoreError(!why.empty() ? why : "cannot open the run store '" + database_path_ + "': " + reason);
    }
    sqlite3_busy_timeout(db_, busy_timeout_ms);
    try {
        execute("PRAGMA journal_mode=WAL");
        // NORMAL in WAL mode: a power loss may drop the last commits, never corrupt the database.
        execute("PRAGMA synchronous=NORMAL");
        execute("PRAGMA foreign_keys=ON");
        execute(kSchema);
        Statement version(*this, "SELECT value FROM meta WHERE key = 'schema_version'");
        if (version.step("reading the schema version")) {
            const int found = std::atoi(version.text(0).c_str());
            if (found > kSchemaVersion) {
                throw StoreError("the run store '" + database_path_ + "' was written by a newer MirrorLab (schema " +
                                 std::to_string(found) + ", this one reads " + std::to_string(kSchemaVersion) +
                                 "); use that MirrorLab or another folder (MIRRORLAB_DATA_DIR)");
            }
        } else {
            execute("INSERT INTO meta(key, value) VALUES('schema_version', '1')");
        }
        mark_interrupted_runs();
        set_ids_aside_for_run_folders();
    } catch (const StoreError&) {
        sqlite3_close(db_);
        db_ = nullptr;
        const std::string why = why_the_store_cannot_open(folder_, database_path_);
        if (!why.empty()) throw StoreError(why);
        throw;
    } catch (...) {
        sqlite3_close(db_);
        db_ = nullptr;
        throw;
    }
}

RunStore::~RunStore() {
    for (const auto& [id, fd] : held_locks_) ::close(fd);
    sqlite3_close(db_);
}

namespace {

std::string seconds_text(int milliseconds) {
    const int tenths = (milliseconds + 50) / 100;
    return std::to_string(tenths / 10) + (tenths % 10 ? "." + std::to_string(tenths % 10) : std::string()) + " s";
}

}  // namespace

void RunStore::fail(const std::string& doing) const {
    const int code = sqlite3_errcode(db_);
    std::string text = "the run store '" + database_path_ + "' failed while " + doing + ": " + sqlite3_errmsg(db_);
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED) {
        throw StoreLockedError("the run store '" + database_path_ + "' is locked by another MirrorLab (waited " + seconds_text(busy_timeout_ms_) + " while " + doing +
                               "); close the other MirrorLab or let it finish, then try again");
    } else if (code == SQLITE_FULL) {
        text += " (the disk is full; free some space)";
    } else if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) {
        text += " (the database is damaged; move it away to start a new store, its run folders stay readable)";
    }
    throw StoreError(text);
}

void RunStore::in_transaction(const std::function<void()>& work) {
    execute("BEGIN IMMEDIATE", "starting to write");
    try {
        work();
        execute("COMMIT", "committing what it wrote");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

void RunStore::execute(const char* sql, const char* doing) const {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
        sqlite3_free(message);
        fail(doing);
    }
}

void RunStore::lock_run(std::int64_t id, const std::string& run_folder) {
    const std::string path = run_folder + "/.running";
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int error = errno;
        if (fd >= 0) ::close(fd);
        throw StoreError("cannot lock run " + std::to_string(id) + " ('" + path + "'): " +
                         (error == EWOULDBLOCK ? std::string("another MirrorLab is training it") : std::strerror(error)));
    }
    held_locks_.emplace_back(id, fd);
}

void RunStore::unlock_run(std::int64_t id) {
    for (auto it = held_locks_.begin(); it != held_locks_.end(); ++it) {
        if (it->first == id) {
            ::close(it->second);  // releases the flock
            held_locks_.erase(it);
            return;
        }
    }
}

void RunStore::mark_interrupted_runs() {
    std::vector<std::int64_t> running;
    {
        Statement query(*this, "SELECT id FROM runs WHERE status = 'running'");
        while (query.step("listing running runs")) running.push_back(query.integer(0));
    }
    for (std::int64_t id : running) {
        const std::string path = folder_ + "/runs/" + std::to_string(id) + "/.running";
        const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) continue;
        if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {  // still training in another process
            ::close(fd);
            continue;
        }
        // Held until the files below are gone: a resume taking the run in the meantime would be
        // writing a checkpoint of its own.
        struct Unlock {
            int fd;
            ~Unlock() { ::close(fd); }
        } unlock{fd};
        Statement update(*this,
                         "UPDATE runs SET status = 'interrupted', ended_at = ?2, "
                         "status_text = 'The process training it ended without finishing (killed or crashed); the metrics up "
                         "to its last recorded step are kept.' WHERE id = ?1 AND status = 'running'");
        update.bind(1, id).bind(2, utc_now()).run("marking an interrupted run");
        if (sqlite3_changes(db_) == 0) continue;  // another store marked it first
        // A checkpoint the killed process was writing when it died (write_file_atomically's
        // "last.mlckpt.partial-PID"): never to be finished, a few MB each, seen by whoever lists the folder.
        std::error_code error;
        const std::filesystem::path run_folder = folder_ + "/runs/" + std::to_string(id);
        for (std::filesystem::directory_iterator it(run_folder, error), end; !error && it != end; it.increment(error)) {
            if (it->path().filename().string().find(".partial-") != std::string::npos) {
                std::error_code ignored;  // a file left is harmless; the run is marked either way
                std::filesystem::remove(it->path(), ignored);
            }
        }
    }
}

RunInfo RunStore::begin_run(RunInfo run) {
    run.started_at = utc_now();
    run.status = RunStatus::Running;
    // SQLite answers "database or disk is full" when AUTOINCREMENT has no id left.
    if (const std::int64_t highest = last_id(); highest == std::numeric_limits<std::int64_t>::max()) {
        throw StoreError("the run store '" + database_path_ + "' has no run id left: its highest is " + std::to_string(highest) +
                         " (a folder of that name in '" + folder_ + "/runs', or an edited database, set it, and "
                         "ids are never given twice); keep new runs in another store (--store DIR, MIRRORLAB_DATA_DIR in "
                         "the window)");
    }
    Statement insert(*this,
                     "INSERT INTO runs(name, note, status, started_at, settings, model, devices, data_name, parameters, replicas, "
                     "epochs_planned, pid) VALUES(?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    insert.bind(1, run.name).bind(2, run.note).bind(3, run.started_at).bind(4, run.settings_json).bind(5, run.model_json);
    insert.bind(6, run.devices).bind(7, run.data_name).bind(8, run.parameters).bind(9, std::int64_t{run.replicas});
    insert.bind(10, std::int64_t{run.epochs_planned}).bind(11, std::int64_t{::getpid()});
    insert.run("adding a run");
    run.id = sqlite3_last_insert_rowid(db_);
    if (run.name.empty()) {
        run.name = "Run " + std::to_string(run.id);
        rename(run.id, run.name);
    }
    run.folder = folder_ + "/runs/" + std::to_string(run.id);
    std::error_code error;
    std::filesystem::create_directories(run.folder, error);
    if (error) throw StoreError("cannot create the run's folder '" + run.folder + "': " + error.message());
    lock_run(run.id, run.folder);
    return run;
}

void RunStore::reopen_run(std::int64_t id, int keep_epochs, std::int64_t keep_global_step, int epochs_planned, const std::string& devices,
                          int replicas) {
    const RunInfo run = get(id);
    if (run.status == RunStatus::Running) {
        throw StoreError("run " + std::to_string(id) + " is still running in another MirrorLab; stop it there first");
    }
    lock_run(id, run.folder);
    try {
        in_transaction([&] {
            Statement(*this, "DELETE FROM steps WHERE run_id = ?1 AND global_step > ?2").bind(1, id).bind(2, keep_global_step).run("resuming");
            Statement(*this, "DELETE FROM epochs WHERE run_id = ?1 AND epoch > ?2").bind(1, id).bind(2, std::int64_t{keep_epochs}).run("resuming");
            Statement(*this,
                      "UPDATE runs SET status = 'running', ended_at = '', status_text = '', pid = ?2, epochs_planned = ?3, "
                      "epochs_completed = ?4, devices = ?5, replicas = ?6 WHERE id = ?1")
                .bind(1, id)
                .bind(2, std::int64_t{::getpid()})
                .bind(3, std::int64_t{epochs_planned})
                .bind(4, std::int64_t{keep_epochs})
                .bind(5, devices)
                .bind(6, std::int64_t{replicas})
                .run("resuming");
        });
    } catch (...) {
        unlock_run(id);
        throw;
    }
}

void RunStore::set_devices(std::int64_t id, const std::string& devices, int replicas) {
    Statement(*this, "UPDATE runs SET devices = ?2, replicas = ?3 WHERE id = ?1")
        .bind(1, id)
        .bind(2, devices)
        .bind(3, std::int64_t{replicas})
        .run("setting a run's devices");
}

void RunStore::append_steps(std::int64_t id, const std::vector<StepRow>& steps) {
    if (steps.empty()) return;
    in_transaction([&] {
        Statement insert(*this,
                         "INSERT OR REPLACE INTO steps(run_id, global_step, epoch, step, loss, accuracy, top5, step_time_ms) "
                         "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
        for (const StepRow& row : steps) {
            insert.bind(1, id).bind(2, row.global_step).bind(3, std::int64_t{row.epoch}).bind(4, row.step);
            insert.bind(5, row.running.loss).bind(6, row.running.accuracy).bind(7, row.running.top5).bind(8, row.step_time_ms);
            insert.run("recording steps");
        }
    });
}

void RunStore::append_epoch(std::int64_t id, const EpochRow& row) { append_epochs(id, {row}); }

void RunStore::append_epochs(std::int64_t id, const std::vector<EpochRow>& rows) {
    if (rows.empty()) return;
    const double nan = std::nan("");
    in_transaction([&] {
        Statement insert(*this,
                         "INSERT OR REPLACE INTO epochs(run_id, epoch, loss, accuracy, top5, val_loss, val_accuracy, val_top5, seconds) "
                         "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
        for (const EpochRow& row : rows) {
            insert.bind(1, id).bind(2, std::int64_t{row.epoch}).bind(3, row.train.loss).bind(4, row.train.accuracy).bind(5, row.train.top5);
            insert.bind(6, row.has_validation ? row.validation.loss : nan).bind(7, row.has_validation ? row.validation.accuracy : nan);
            insert.bind(8, row.has_validation ? row.validation.top5 : nan).bind(9, row.seconds);
            insert.run("recording an epoch");
        }
        // Counted once for all the rows: a resumed file's 200,000 epochs were counted after each.
        Statement(*this, "UPDATE runs SET epochs_completed = (SELECT COUNT(*) FROM epochs WHERE run_id = ?1) WHERE id = ?1")
            .bind(1, id)
            .run("recording an epoch");
    });
}

void RunStore::record_checkpoint(std::int64_t id, const CheckpointRow& row) {
    Statement insert(*this,
                     "INSERT OR REPLACE INTO checkpoints(run_id, kind, path, epoch, global_step, monitor_value) "
                     "VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
    insert.bind(1, id).bind(2, row.kind).bind(3, row.path).bind(4, std::int64_t{row.epoch}).bind(5, row.global_step);
    insert.bind(6, row.monitor_value).run("recording a checkpoint");
    // The best epoch so far, as its checkpoint is kept: a run killed later still lists it.
    if (row.kind == "best") {
        Statement(*this, "UPDATE runs SET best_epoch = ?2 WHERE id = ?1").bind(1, id).bind(2, std::int64_t{row.epoch}).run("recording a checkpoint");
    }
}

void RunStore::finish_run(std::int64_t id, RunStatus status, const std::string& text, int epochs_completed, int best_epoch,
                          int epochs_planned) {
    Statement update(*this,
                     "UPDATE runs SET status = ?2, status_text = ?3, ended_at = ?4, epochs_completed = ?5, "
                     "best_epoch = CASE WHEN ?6 >= 0 THEN ?6 ELSE best_epoch END, "
                     "epochs_planned = CASE WHEN ?7 > 0 THEN ?7 ELSE epochs_planned END WHERE id = ?1");
    update.bind(1, id).bind(2, std::string(run_status_name(status))).bind(3, text).bind(4, utc_now());
    update.bind(5, std::int64_t{epochs_completed}).bind(6, std::int64_t{best_epoch}).bind(7, std::int64_t{epochs_planned});
    update.run("finishing a run");
    unlock_run(id);
}

namespace {

RunInfo run_from_row(const auto& row, const std::string& folder) {
    RunInfo run;
    run.id = row.integer(0);
    run.name = row.text(1);
    run.note = row.text(2);
    run.status = run_status_from_name(row.text(3));
    run.status_text = row.text(4);
    run.started_at = row.text(5);
    run.ended_at = row.text(6);
    run.settings_json = row.text(7);
    run.model_json = row.text(8);
    run.devices = row.text(9);
    run.data_name = row.text(10);
    run.parameters = row.integer(11);
    run.replicas = static_cast<int>(row.integer(12));
    run.epochs_planned = static_cast<int>(row.integer(13));
    run.epochs_completed = static_cast<int>(row.integer(14));
    run.best_epoch = static_cast<int>(row.integer(15));
    run.steps_recorded = row.integer(16);
    run.folder = folder + "/runs/" + std::to_string(run.id);
    return run;
}

}  // namespace

std::vector<RunInfo> RunStore::list(const RunFilter& filter) const {
    const std::string sql = std::string("SELECT ") + kRunColumns + " FROM runs ORDER BY id DESC";
    Statement query(*this, sql.c_str());
    std::vector<RunInfo> runs;
    const std::string needle = lower(filter.text);
    while (query.step("listing runs")) {
        RunInfo run = run_from_row(query, folder_);
        if (filter.status && run.status != *filter.status) continue;
        if (!needle.empty() && lower(run.name + "\n" + run.note + "\n" + run.data_name + "\n" + run.devices).find(needle) == std::string::npos)
            continue;
        runs.push_back(std::move(run));
    }
    return runs;
}

std::optional<RunInfo> RunStore::find(std::int64_t id) const {
    const std::string sql = std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?1";
    Statement query(*this, sql.c_str());
    query.bind(1, id);
    if (!query.step("reading a run")) return std::nullopt;
    return run_from_row(query, folder_);
}

// AUTOINCREMENT keeps the highest id given in sqlite_sequence, and never gives one at or below it.
std::int64_t RunStore::last_id() const {
    Statement query(*this, "SELECT seq FROM sqlite_sequence WHERE name = 'runs'");
    return query.step("reading the last run id") ? query.integer(0) : 0;
}

void RunStore::set_ids_aside_through(std::int64_t id) {
    in_transaction([&] {
        Statement(*this, "INSERT INTO sqlite_sequence(name, seq) SELECT 'runs', 0 WHERE NOT EXISTS "
                         "(SELECT 1 FROM sqlite_sequence WHERE name = 'runs')")
            .run("setting run ids aside");
        Statement(*this, "UPDATE sqlite_sequence SET seq = max(seq, ?1) WHERE name = 'runs'").bind(1, id).run("setting run ids aside");
    });
}

void RunStore::set_ids_aside_for_run_folders() {
    std::int64_t highest = 0;
    std::error_code error;
    for (std::filesystem::directory_iterator it(folder_ + "/runs", error), end; !error && it != end; it.increment(error)) {
        const std::string name = it->path().filename().string();
        std::int64_t id = 0;
        const auto [rest, parsed] = std::from_chars(name.data(), name.data() + name.size(), id);
        if (parsed == std::errc() && rest == name.data() + name.size() && id > highest) highest = id;
    }
    if (highest > last_id()) set_ids_aside_through(highest);
}

RunInfo RunStore::get(std::int64_t id) const {
    std::optional<RunInfo> run = find(id);
    if (!run) throw StoreError("there is no run " + std::to_string(id) + " in " + database_path_ + " (`mirrorlab-cli runs` lists them)");
    return *run;
}

std::vector<EpochRow> RunStore::epochs(std::int64_t id) const {
    Statement query(*this,
                    "SELECT epoch, loss, accuracy, top5, val_loss, val_accuracy, val_top5, seconds FROM epochs WHERE run_id = ?1 "
                    "ORDER BY epoch");
    query.bind(1, id);
    std::vector<EpochRow> rows;
    while (query.step("reading epochs")) {
        EpochRow row;
        row.epoch = static_cast<int>(query.integer(0));
        row.train = {query.real(1), query.real(2), query.real(3)};
        row.validation = {query.real(4), query.real(5), query.real(6)};
        row.has_validation = !std::isnan(row.validation.loss);
        row.seconds = query.real(7);
        rows.push_back(row);
    }
    return rows;
}

std::vector<StepRow> RunStore::steps(std::int64_t id) const {
    Statement query(*this,
                    "SELECT global_step, epoch, step, loss, accuracy, top5, step_time_ms FROM steps WHERE run_id = ?1 "
                    "ORDER BY global_step");
    query.bind(1, id);
    std::vector<StepRow> rows;
    while (query.step("reading steps")) {
        rows.push_back(StepRow{query.integer(0), static_cast<int>(query.integer(1)), query.integer(2),
                               Metrics{query.real(3), query.real(4), query.real(5)}, query.real(6)});
    }
    return rows;
}

std::vector<CheckpointRow> RunStore::checkpoints(std::int64_t id) const {
    Statement query(*this,
                    "SELECT kind, path, epoch, global_step, monitor_value FROM checkpoints WHERE run_id = ?1 ORDER BY kind DESC");
    query.bind(1, id);
    std::vector<CheckpointRow> rows;
    while (query.step("reading checkpoints")) {
        // The file in this store's run folder: a store copied or moved elsewhere named the files of
        // the original (its rows keep the path they were written at).
        const std::string file = std::filesystem::path(query.text(1)).filename().string();
        rows.push_back(CheckpointRow{query.text(0), folder_ + "/runs/" + std::to_string(id) + "/" + file,
                                     static_cast<int>(query.integer(2)), query.integer(3), query.real(4)});
    }
    return rows;
}

void RunStore::rename(std::int64_t id, const std::string& name) {
    // No name is the default one, as a new run gets: a blank name would leave the run unnamed in lists.
    const bool blank = name.find_first_not_of(" \t\n\r") == std::string::npos;
    Statement(*this, "UPDATE runs SET name = ?2 WHERE id = ?1")
        .bind(1, id)
        .bind(2, blank ? "Run " + std::to_string(id) : name)
        .run("renaming a run");
}

void RunStore::annotate(std::int64_t id, const std::string& note) {
    Statement(*this, "UPDATE runs SET note = ?2 WHERE id = ?1").bind(1, id).bind(2, note).run("annotating a run");
}

void RunStore::remove(std::int64_t id) {
    const RunInfo run = get(id);
    if (run.status == RunStatus::Running) {
        throw StoreError("run " + std::to_string(id) + " is training now; stop it before deleting it");
    }
    Statement(*this, "DELETE FROM runs WHERE id = ?1").bind(1, id).run("deleting a run");
    std::error_code error;
    std::filesystem::remove_all(run.folder, error);
    if (error) throw StoreError("run " + std::to_string(id) + " was deleted but its folder '" + run.folder + "' stays: " + error.message());
}

}  // namespace mirrorlab
