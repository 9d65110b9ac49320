package checkpoint

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/internal/durable"
)

// MetadataFileName is the name of a savepoint's metadata file inside its directory. Flink:
// AbstractFsCheckpointStorageAccess.METADATA_FILE_NAME.
const MetadataFileName = "_metadata"

// SavepointDirectoryPrefix starts the name of every savepoint directory:
// "savepoint-<first 6 hex digits of the JobID>-<12 random hex digits>", as Flink names them.
const SavepointDirectoryPrefix = "savepoint-"

// maxLocationAttempts is how many random names InitializeLocationForSavepoint tries before it
// gives up (Flink's 10).
const maxLocationAttempts = 10

// ErrInvalidSavepoint is matched (errors.Is) by LoadSavepoint's error for a path that holds no
// savepoint: a directory without a _metadata file, or a file that does not decode as checkpoint
// metadata. The message names the path and what is wrong.
var ErrInvalidSavepoint = errors.New("checkpoint: not a savepoint")

func init() {
	jobgraph.RegisterErrorCode("checkpoint.invalid-savepoint", ErrInvalidSavepoint)
}

// SavepointStorage is where the coordinator puts savepoints: it creates a savepoint's location
// when the savepoint is triggered, writes its metadata once every task acknowledged, and removes
// the location of a savepoint that failed (declined, expired, aborted, or not stored). Flink:
// CheckpointStorageCoordinatorView.initializeLocationForSavepoint and the
// CheckpointStorageLocation's metadata stream and disposeOnFailure.
//
// The coordinator calls it through its IOExecutor, off its owner's loop: implementations may do
// I/O and must be safe for concurrent use (a discard may run while another savepoint is
// initialized; the coordinator initializes one savepoint at a time). FileSavepointStorage is the
// default.
type SavepointStorage interface {
	// InitializeLocationForSavepoint creates a new, empty location for a savepoint of job under
	// targetDirectory and returns its external pointer: the path the savepoint is known by (the
	// CompletedCheckpoint's ExternalPointer, what TriggerSavepoint's caller gets).
	InitializeLocationForSavepoint(job jobgraph.JobID, targetDirectory string) (pointer string, err error)
	// StoreMetadata writes cp as the savepoint's metadata at pointer, durably: once it returns
	// nil, LoadSavepoint(pointer) returns cp.
	StoreMetadata(pointer string, cp CompletedCheckpoint) error
	// DiscardLocation removes everything at pointer (a failed savepoint).
	DiscardLocation(pointer string) error
}

// FileSavepointStorage writes savepoints to the local file system, as Flink's file-system
// checkpoint storage does: each savepoint is a directory
// "<targetDirectory>/savepoint-<first 6 hex digits of the JobID>-<12 random hex digits>" holding a
// "_metadata" file, which is the CompletedCheckpoint as JSON, written atomically (temp file in
// the directory, fsync, rename, fsync the directory). The zero value is ready to use.
//
// Where we differ: Flink writes a binary metadata format (SavepointFormatType CANONICAL or
// NATIVE); ours is one JSON format, the state handles inline, readable by LoadSavepoint only.
type FileSavepointStorage struct {
	// Random supplies the 6 random bytes of each directory name; nil means crypto/rand. Tests
	// pass a fixed source to get known names. Read only by InitializeLocationForSavepoint.
	Random io.Reader
}

var _ SavepointStorage = FileSavepointStorage{}

// InitializeLocationForSavepoint implements SavepointStorage: it creates targetDirectory if
// needed (made absolute against the working directory) and a new savepoint directory in it, and
// returns that directory's absolute path. A name that is taken is drawn again, up to 10 times.
// Errors name the directory: an empty targetDirectory (ErrInvalidConfig), or the I/O error.
func (s FileSavepointStorage) InitializeLocationForSavepoint(job jobgraph.JobID, targetDirectory string) (string, error) {
	if targetDirectory == "" {
		return "", errorsJoin(ErrInvalidConfig, "savepoint target directory is empty")
	}
	base, err := filepath.Abs(targetDirectory)
	if err != nil {
		return "", fmt.Errorf("checkpoint: savepoint target directory %s: %w", targetDirectory, err)
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: creating savepoint target directory %s: %w", base, err)
	}
	random := s.Random
	if random == nil {
		random = rand.Reader
	}
	prefix := SavepointDirectoryPrefix + job.String()[:6] + "-"
	var last error
	for range maxLocationAttempts {
		var b [6]byte
		if _, err := io.ReadFull(random, b[:]); err != nil {
			return "", fmt.Errorf("checkpoint: drawing a savepoint directory name in %s: %w", base, err)
		}
		dir := filepath.Join(base, prefix+hex.EncodeToString(b[:]))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			if err := durable.SyncDir(base); err != nil {
				_ = os.Remove(dir)
				return "", fmt.Errorf("checkpoint: creating savepoint directory %s: %w", dir, err)
			}
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("checkpoint: creating savepoint directory %s: %w", dir, err)
		}
		last = err
	}
	return "", fmt.Errorf("checkpoint: no free savepoint directory name in %s after %d attempts: %w", base, maxLocationAttempts, last)
}

// StoreMetadata implements SavepointStorage: StoreCheckpointMetadata(pointer, cp).
func (FileSavepointStorage) StoreMetadata(pointer string, cp CompletedCheckpoint) error {
	return StoreCheckpointMetadata(pointer, cp)
}

// DiscardLocation implements SavepointStorage: it removes the savepoint directory pointer and
// everything in it. It refuses (ErrInvalidConfig) a path whose last element does not start
// with "savepoint-", so a wrong pointer never removes anything else. A missing directory is not
// an error.
func (FileSavepointStorage) DiscardLocation(pointer string) error {
	if !strings.HasPrefix(filepath.Base(pointer), SavepointDirectoryPrefix) {
		return errorsJoin(ErrInvalidConfig, "%s is not a savepoint directory (its name does not start with %q)", pointer, SavepointDirectoryPrefix)
	}
	if err := os.RemoveAll(pointer); err != nil {
		return fmt.Errorf("checkpoint: discarding savepoint %s: %w", pointer, err)
	}
	return nil
}

// StoreCheckpointMetadata writes cp as JSON to the file "_metadata" in dir, atomically (temp
// file in dir, fsync, rename, fsync dir): a reader sees the whole metadata or none. dir must
// exist. Errors name the file. Flink: Checkpoints.storeCheckpointMetadata.
func StoreCheckpointMetadata(dir string, cp CompletedCheckpoint) error {
	path := filepath.Join(dir, MetadataFileName)
	data, err := json.Marshal(cp)
	if err != nil {
		return fmt.Errorf("checkpoint: encoding the metadata of checkpoint %d for %s: %w", cp.CheckpointID, path, err)
	}
	if err := durable.WriteFile(path, data); err != nil {
		return fmt.Errorf("checkpoint: writing savepoint metadata %s: %w", path, err)
	}
	return nil
}

// LoadSavepoint reads the savepoint (or retained checkpoint) at path: a savepoint directory, or
// the metadata file itself (a savepoint's _metadata, or a FileCompletedCheckpointStore's
// checkpoint-<id>.json). For a _metadata file the returned ExternalPointer is the directory it
// was found in, so a savepoint directory that was moved loads with its new path. Flink:
// AbstractFsCheckpointStorageAccess.resolveCheckpointPointer with
// Checkpoints.loadCheckpointMetadata.
//
// Errors, each naming the path: nothing at path (matching fs.ErrNotExist); a directory without a
// _metadata file, or a file that is not checkpoint metadata — not JSON, an unknown field, no
// JobID, a checkpoint ID that is not positive (matching ErrInvalidSavepoint); the I/O error.
// It may be called from any goroutine; it does I/O, so never on a main loop.
func LoadSavepoint(path string) (CompletedCheckpoint, error) {
	if path == "" {
		return CompletedCheckpoint{}, fmt.Errorf("%w: the savepoint path is empty", ErrInvalidSavepoint)
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return CompletedCheckpoint{}, fmt.Errorf("checkpoint: cannot find a savepoint or checkpoint at %s: %w", path, fs.ErrNotExist)
	case err != nil:
		return CompletedCheckpoint{}, fmt.Errorf("checkpoint: savepoint %s: %w", path, err)
	}
	file := path
	if info.IsDir() {
		file = filepath.Join(path, MetadataFileName)
		if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
			return CompletedCheckpoint{}, fmt.Errorf("%w: directory %s holds no %s file (%w)", ErrInvalidSavepoint, path, MetadataFileName, fs.ErrNotExist)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return CompletedCheckpoint{}, fmt.Errorf("checkpoint: reading savepoint metadata %s: %w", file, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var cp CompletedCheckpoint
	if err := dec.Decode(&cp); err != nil {
		return CompletedCheckpoint{}, fmt.Errorf("%w: %s does not decode as checkpoint metadata: %w", ErrInvalidSavepoint, file, err)
	}
	if dec.More() {
		return CompletedCheckpoint{}, fmt.Errorf("%w: %s has data after the checkpoint metadata", ErrInvalidSavepoint, file)
	}
	switch {
	case cp.JobID.IsZero():
		return CompletedCheckpoint{}, fmt.Errorf("%w: %s names no job (jobId missing)", ErrInvalidSavepoint, file)
	case cp.CheckpointID <= 0:
		return CompletedCheckpoint{}, fmt.Errorf("%w: %s has checkpoint ID %d, not positive", ErrInvalidSavepoint, file, cp.CheckpointID)
	}
	if filepath.Base(file) == MetadataFileName {
		if abs, err := filepath.Abs(filepath.Dir(file)); err == nil {
			cp.ExternalPointer = abs
		}
	}
	return cp, nil
}
