package keyedsum

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// PartFile is the path of sink subtask's output file in dir: dir/part-<subtask>.
func PartFile(dir string, subtask int) string {
	return filepath.Join(dir, "part-"+strconv.Itoa(subtask))
}

// CommitMarker is what a part file's marker (MarkerFile) holds: the highest checkpoint whose
// transaction the file holds, and the file's length in bytes once it was appended. A commit
// truncates the file to Length (dropping what a commit that failed half-way wrote), appends the
// transactions of the checkpoints above CheckpointID, then replaces the marker (written to a
// temporary file and renamed): so committing a transaction twice appends it once, and a commit
// that fails leaves the file as the marker says. Not durable across a machine crash: nothing is
// synced to disk.
type CommitMarker struct {
	CheckpointID int64 `json:"checkpointId"`
	Length       int64 `json:"length"`
}

// MarkerFile is the commit marker of part file path: .<name>.committed next to it.
func MarkerFile(path string) string {
	dir, name := filepath.Split(path)
	return filepath.Join(dir, "."+name+".committed")
}

// ReadCommitMarker reads the marker of part file path; the zero marker when there is none.
func ReadCommitMarker(path string) (CommitMarker, error) {
	var m CommitMarker
	b, err := os.ReadFile(MarkerFile(path))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("commit marker %s: %w", MarkerFile(path), err)
	}
	return m, nil
}

func writeCommitMarker(path string, m CommitMarker) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	marker := MarkerFile(path)
	tmp := marker + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, marker)
}

// transaction is the lines a sink received between two snapshots; ID is the checkpoint whose
// snapshot closed it. framed, when set, is the transaction already encoded as a whole list-state
// element of one transaction (encodePending's bytes), which Lines is the tail of.
type transaction struct {
	ID     int64
	Lines  []byte
	framed []byte
}

// pendingFile is one part file's transactions not known to be committed: the sink's list-state
// element (encodePending).
type pendingFile struct {
	Path string
	Txns []transaction
}

// txnHeader is the size of a transaction's header in the state: its ID and the length of its
// lines, 8 bytes each, big-endian.
const txnHeader = 16

// pathHeader is the start of a list-state element: the varint length and the bytes of the path.
func pathHeader(path string) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(path))), path...)
}

// encodePending is a list-state element: pathHeader, then per transaction its txnHeader and its
// lines.
func encodePending(p pendingFile) []byte {
	n := len(p.Path) + binary.MaxVarintLen64
	for _, t := range p.Txns {
		n += txnHeader + len(t.Lines)
	}
	b := append(make([]byte, 0, n), pathHeader(p.Path)...)
	for _, t := range p.Txns {
		b = binary.BigEndian.AppendUint64(b, uint64(t.ID))
		b = binary.BigEndian.AppendUint64(b, uint64(len(t.Lines)))
		b = append(b, t.Lines...)
	}
	return b
}

func decodePending(b []byte) (pendingFile, error) {
	var p pendingFile
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return p, errors.New("keyedsum: sink state: bad path")
	}
	p.Path, b = string(b[k:k+int(n)]), b[k+int(n):]
	for len(b) > 0 {
		if len(b) < txnHeader {
			return p, fmt.Errorf("keyedsum: sink state of %s: a transaction header of %d bytes", p.Path, len(b))
		}
		id, n := int64(binary.BigEndian.Uint64(b)), binary.BigEndian.Uint64(b[8:])
		b = b[txnHeader:]
		if uint64(len(b)) < n {
			return p, fmt.Errorf("keyedsum: sink state of %s: transaction %d has %d bytes of its %d", p.Path, id, len(b), n)
		}
		p.Txns = append(p.Txns, transaction{ID: id, Lines: b[:n]})
		b = b[n:]
	}
	return p, nil
}

// commitTransactions appends to part file path the transactions above the marker m, in ID order,
// and returns the new marker (see CommitMarker).
func commitTransactions(path string, m CommitMarker, txns []transaction) (CommitMarker, error) {
	txns = slices.Clone(txns)
	slices.SortFunc(txns, func(a, b transaction) int { return cmp.Compare(a.ID, b.ID) })
	var todo []transaction
	for _, t := range txns {
		if t.ID > m.CheckpointID {
			todo = append(todo, t)
		}
	}
	if len(todo) == 0 {
		return m, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return m, err
	}
	next, err := appendAt(f, m, todo)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return m, fmt.Errorf("committing %d transactions to %s: %w", len(todo), path, err)
	}
	if err := writeCommitMarker(path, next); err != nil {
		return m, err
	}
	return next, nil
}

func appendAt(f *os.File, m CommitMarker, todo []transaction) (CommitMarker, error) {
	fi, err := f.Stat()
	if err != nil {
		return m, err
	}
	if fi.Size() < m.Length {
		return m, fmt.Errorf("the file has %d bytes, its commit marker says %d were committed", fi.Size(), m.Length)
	}
	if err := f.Truncate(m.Length); err != nil {
		return m, err
	}
	off := m.Length
	for _, t := range todo {
		n, err := f.WriteAt(t.Lines, off)
		off += int64(n)
		if err != nil {
			return m, err
		}
		m.CheckpointID = t.ID
	}
	m.Length = off
	return m, nil
}

// AppendLine appends the sink's line for u: "key\tsum\ti\n".
func AppendLine(b []byte, u Update) []byte {
	b = strconv.AppendInt(b, u.Key, 10)
	b = append(b, '\t')
	b = strconv.AppendInt(b, u.Sum, 10)
	b = append(b, '\t')
	b = strconv.AppendInt(b, u.I, 10)
	return append(b, '\n')
}

// sinkState is the two-phase-commit sink's CheckpointHandler.
//
// cur starts with a frame, the pathHeader and room for a txnHeader, so that a snapshot with one
// pending transaction hands cur over as the state element as it is: the lines are not copied.
type sinkState struct {
	path    string
	marker  CommitMarker  // of path
	frame   int           // len(pathHeader(path)) + txnHeader
	cur     []byte        // the frame, then the lines since the last snapshot
	pending []transaction // pre-committed, in ID order
}

func newSinkState(path string) *sinkState {
	h := pathHeader(path)
	s := &sinkState{path: path, frame: len(h) + txnHeader}
	s.cur = append(append(make([]byte, 0, 1<<16), h...), make([]byte, txnHeader)...)
	return s
}

// lines is what the sink received since the last snapshot.
func (s *sinkState) lines() []byte { return s.cur[s.frame:] }

func (s *sinkState) SnapshotState(_ context.Context, id checkpoint.CheckpointID) (checkpoint.StateHandle, error) {
	if len(s.cur) > s.frame {
		h := s.cur[s.frame-txnHeader : s.frame]
		binary.BigEndian.PutUint64(h, uint64(id))
		binary.BigEndian.PutUint64(h[8:], uint64(len(s.cur)-s.frame))
		s.pending = append(s.pending, transaction{ID: int64(id), Lines: s.cur[s.frame:], framed: s.cur})
		// A new buffer: the old one is the state now, which the runtime keeps.
		s.cur = append(make([]byte, 0, cap(s.cur)), s.cur[:s.frame]...)
	}
	if len(s.pending) == 0 {
		return checkpoint.StateHandle{}, nil
	}
	elem := s.pending[0].framed
	if len(s.pending) > 1 || elem == nil {
		elem = encodePending(pendingFile{Path: s.path, Txns: s.pending})
	}
	return checkpoint.StateHandle{
		OperatorState: keygroup.OperatorState[[]byte]{PendingState: {Mode: keygroup.SplitDistribute, Elements: [][]byte{elem}}},
		Size:          int64(len(elem)),
	}, nil
}

// NotifyCheckpointComplete commits the transactions up to id (a confirmation covers the
// earlier checkpoints too).
func (s *sinkState) NotifyCheckpointComplete(_ context.Context, id checkpoint.CheckpointID) error {
	k := 0
	for k < len(s.pending) && s.pending[k].ID <= int64(id) {
		k++
	}
	if k == 0 {
		return nil
	}
	m, err := commitTransactions(s.path, s.marker, s.pending[:k])
	if err != nil {
		return fmt.Errorf("keyedsum: sink: checkpoint %d: %w", id, err)
	}
	s.marker = m
	s.pending = slices.Delete(s.pending, 0, k)
	return nil
}

// NotifyCheckpointAborted keeps the transactions: the next completed checkpoint commits them.
func (*sinkState) NotifyCheckpointAborted(context.Context, checkpoint.CheckpointID) {}

// recoverSink commits the transactions the restored state holds (each part file's above its
// marker, so again only what was not committed yet) and sets up the subtask's own part file:
// truncated to its marker's length when restored (what a failed attempt committed stays, what it
// had not committed is gone), emptied on a fresh start.
func recoverSink(env taskexecutor.Environment, s *sinkState) error {
	info := env.Info()
	id, st, restored := env.RestoredState()
	if restored {
		ls := st.OperatorState[PendingState]
		for _, b := range ls.Elements {
			p, err := decodePending(b)
			if err != nil {
				return fmt.Errorf("keyedsum: %s: %w", info.TaskName, err)
			}
			txns := slices.DeleteFunc(p.Txns, func(t transaction) bool { return t.ID > int64(id) })
			m, err := ReadCommitMarker(p.Path)
			if err != nil {
				return fmt.Errorf("keyedsum: %s: %w", info.TaskName, err)
			}
			if _, err := commitTransactions(p.Path, m, txns); err != nil {
				return fmt.Errorf("keyedsum: %s: restoring checkpoint %d: %w", info.TaskName, id, err)
			}
		}
	}
	m, err := ReadCommitMarker(s.path)
	if err != nil {
		return fmt.Errorf("keyedsum: %s: %w", info.TaskName, err)
	}
	if !restored {
		m = CommitMarker{}
		if err := os.Remove(MarkerFile(s.path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("keyedsum: %s: %w", info.TaskName, err)
		}
	}
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("keyedsum: %s: %w", info.TaskName, err)
	}
	_, err = appendAt(f, m, nil)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("keyedsum: %s: %s: %w", info.TaskName, s.path, err)
	}
	s.marker = m
	return nil
}

// RunSink is the sink: it writes every Update of input 0 as AppendLine's line to
// Config.OutDir/part-<subtask>. With checkpoints (TaskInfo.CheckpointingEnabled) it is a
// two-phase-commit sink (see the package doc and CommitMarker); its input ending while lines are
// not committed fails it (the final checkpoint should have committed them, FLIP-147). Without
// checkpoints it writes the lines as they come. It returns nil when its input ended or a
// stop-with-savepoint stopped it (after committing the savepoint's lines).
func RunSink(ctx context.Context, env taskexecutor.Environment) error {
	info := env.Info()
	cfg, err := decodeConfig(info)
	if err != nil {
		return err
	}
	if env.NumInputs() != 1 {
		return fmt.Errorf("keyedsum: %s: the sink needs 1 input, has %d", info.TaskName, env.NumInputs())
	}
	if cfg.OutDir == "" {
		return fmt.Errorf("keyedsum: %s: no output directory", info.TaskName)
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return fmt.Errorf("keyedsum: %s: %w", info.TaskName, err)
	}
	st := newSinkState(PartFile(cfg.OutDir, info.SubtaskIndex))
	if err := recoverSink(env, st); err != nil {
		return err
	}
	var direct *os.File // without checkpoints: lines go straight to the file
	if !info.CheckpointingEnabled {
		if direct, err = os.OpenFile(st.path, os.O_WRONLY|os.O_TRUNC, 0o644); err != nil {
			return fmt.Errorf("keyedsum: %s: %w", info.TaskName, err)
		}
		defer direct.Close()
	}
	setCheckpointHandler(env, cfg, st)
	failAt := failAfter(info, cfg)
	in := env.Input(0)
	var n int64
	for {
		rec, err := in.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return stopped(err)
		}
		u, ok := rec.(Update)
		if !ok {
			return fmt.Errorf("keyedsum: %s: record of type %T, want keyedsum.Update", info.TaskName, rec)
		}
		if n == failAt {
			return injected(info, n)
		}
		n++
		st.cur = AppendLine(st.cur, u)
		if direct != nil && len(st.cur) >= directFlush {
			if _, err := direct.Write(st.lines()); err != nil {
				return fmt.Errorf("keyedsum: %s: %w", info.TaskName, err)
			}
			st.cur = st.cur[:st.frame]
		}
	}
	if direct != nil {
		if _, err := direct.Write(st.lines()); err != nil {
			return fmt.Errorf("keyedsum: %s: %w", info.TaskName, err)
		}
		return direct.Close()
	}
	if n := len(st.lines()) + pendingBytes(st.pending); n > 0 {
		return fmt.Errorf("keyedsum: %s: the input ended with %d bytes of lines no completed checkpoint committed (last committed checkpoint %d)",
			info.TaskName, n, st.marker.CheckpointID)
	}
	return nil
}

// directFlush is how many bytes of lines a sink without checkpoints gathers per write.
const directFlush = 1 << 16

func pendingBytes(txns []transaction) int {
	n := 0
	for _, t := range txns {
		n += len(t.Lines)
	}
	return n
}
