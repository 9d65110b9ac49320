package wc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/source"
	"github.com/jobgraph/jobgraph/taskexecutor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeEnv is a taskexecutor.Environment over in-memory gates and recording writers.
type fakeEnv struct {
	info    taskexecutor.TaskInfo
	inputs  []*sliceGate
	outputs []*recordingWriter
	accs    *taskexecutor.AccumulatorRegistry

	// coord is the source vertex's coordinator (nil: the vertex has none); events the
	// coordinator sent this task wait in events until its Yield, which records the IDs of the
	// splits it got in splits.
	coord   *byHandCoordinator
	events  chan []byte
	handler taskexecutor.OperatorEventHandler
	splits  []string
}

// byHandCoordinator runs a vertex's operator coordinator for tasks on several goroutines, one
// call at a time, as the JobMaster's loop would.
type byHandCoordinator struct {
	mu sync.Mutex
	c  coordination.OperatorCoordinator
}

// coordContext is the coordination.Context of a by-hand coordinator.
type coordContext struct {
	v *jobgraph.JobVertex
}

func (c coordContext) JobID() jobgraph.JobID          { return jobgraph.JobID{} }
func (c coordContext) VertexID() jobgraph.JobVertexID { return c.v.ID }
func (c coordContext) Config() []byte                 { return c.v.OperatorCoordinatorConfig }
func (c coordContext) CurrentParallelism() int        { return c.v.Parallelism }
func (c coordContext) RunInMainThread(fn func())      { panic("the static enumerator runs nothing later") }
func (c coordContext) FailJob(cause error)            { panic(cause) }

// newByHandCoordinator creates and starts v's coordinator (the SplitListProvider of FileSplits, as
// RegisterCoordinator registers it).
func newByHandCoordinator(t *testing.T, v *jobgraph.JobVertex) *byHandCoordinator {
	t.Helper()
	reg := coordination.NewRegistry()
	require.NoError(t, RegisterCoordinator(reg))
	c, err := reg.Create(v.OperatorCoordinator, coordContext{v})
	require.NoError(t, err)
	require.NoError(t, c.Start())
	return &byHandCoordinator{c: c}
}

// connect makes env subtask's task of the coordinator's vertex: its attempt 0 is ready.
func (b *byHandCoordinator) connect(t *testing.T, env *fakeEnv) {
	t.Helper()
	env.coord = b
	env.events = make(chan []byte, 4) // a reader has one request, so one answer, outstanding
	b.mu.Lock()
	defer b.mu.Unlock()
	require.NoError(t, b.c.ExecutionAttemptReady(env.info.SubtaskIndex, 0, envGateway{env}))
}

// envGateway is the coordinator's gateway to a fakeEnv.
type envGateway struct{ e *fakeEnv }

func (g envGateway) Subtask() int { return g.e.info.SubtaskIndex }
func (g envGateway) Attempt() int { return 0 }
func (g envGateway) SendEvent(event []byte, ack func(error)) {
	g.e.events <- event
	if ack != nil {
		ack(nil)
	}
}

func (e *fakeEnv) SetOperatorEventHandler(h taskexecutor.OperatorEventHandler) { e.handler = h }

func (e *fakeEnv) SendEventToCoordinator(event []byte) error {
	if e.coord == nil {
		return taskexecutor.ErrNoOperatorCoordinator
	}
	e.coord.mu.Lock()
	defer e.coord.mu.Unlock()
	return e.coord.c.HandleEventFromOperator(e.info.SubtaskIndex, 0, event)
}

func (e *fakeEnv) Yield(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case ev := <-e.events:
		var add struct {
			Splits []struct{ ID string }
		}
		if err := json.Unmarshal(ev, &add); err != nil {
			return err
		}
		for _, s := range add.Splits {
			e.splits = append(e.splits, s.ID)
		}
		return e.handler(ev)
	}
}

func (e *fakeEnv) AccumulatorRegistry() *taskexecutor.AccumulatorRegistry {
	if e.accs == nil {
		e.accs = taskexecutor.NewAccumulatorRegistry()
	}
	return e.accs
}

func (e *fakeEnv) SetCheckpointHandler(taskexecutor.CheckpointHandler) {}

func (e *fakeEnv) RestoredState() (checkpoint.CheckpointID, checkpoint.StateHandle, bool) {
	return 0, checkpoint.StateHandle{}, false
}

func (e *fakeEnv) Info() taskexecutor.TaskInfo                     { return e.info }
func (e *fakeEnv) NumInputs() int                                  { return len(e.inputs) }
func (e *fakeEnv) Input(i int) taskexecutor.InputGate              { return e.inputs[i] }
func (e *fakeEnv) NumOutputs() int                                 { return len(e.outputs) }
func (e *fakeEnv) Output(i int) taskexecutor.ResultPartitionWriter { return e.outputs[i] }

// sliceGate returns its records in order, then err if set, else io.EOF.
type sliceGate struct {
	records []any
	err     error
}

func (g *sliceGate) Next(ctx context.Context) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(g.records) == 0 {
		if g.err != nil {
			return nil, g.err
		}
		return nil, io.EOF
	}
	r := g.records[0]
	g.records = g.records[1:]
	return r, nil
}

type emitted struct {
	sub    int
	record any
}

// recordingWriter records every Emit; it fails with errFull once limit records are in (limit > 0).
type recordingWriter struct {
	n       int
	limit   int
	emitted []emitted
}

var errFull = errors.New("writer full")

func (w *recordingWriter) NumSubpartitions() int { return w.n }
func (w *recordingWriter) Emit(ctx context.Context, s int, record any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s < 0 || s >= w.n {
		return fmt.Errorf("subpartition %d out of [0, %d)", s, w.n)
	}
	if w.limit > 0 && len(w.emitted) == w.limit {
		return errFull
	}
	w.emitted = append(w.emitted, emitted{s, record})
	return nil
}
func (w *recordingWriter) Broadcast(ctx context.Context, record any) error {
	for s := range w.n {
		if err := w.Emit(ctx, s, record); err != nil {
			return err
		}
	}
	return nil
}

// subpartition returns the records emitted to s, in order.
func (w *recordingWriter) subpartition(s int) []any {
	var out []any
	for _, e := range w.emitted {
		if e.sub == s {
			out = append(out, e.record)
		}
	}
	return out
}

func taskInfo(g *jobgraph.JobGraph, v *jobgraph.JobVertex, subtask int) taskexecutor.TaskInfo {
	return taskexecutor.TaskInfo{
		JobID: g.JobID,
		ExecutionAttemptID: jobgraph.ExecutionAttemptID{
			ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: v.ID, Subtask: subtask},
		},
		TaskName:       fmt.Sprintf("%s (%d/%d)", v.Name, subtask+1, v.Parallelism),
		VertexName:     v.Name,
		SubtaskIndex:   subtask,
		Parallelism:    v.Parallelism,
		MaxParallelism: v.EffectiveMaxParallelism(),
		Config:         v.Config,
	}
}

// runByHand runs the job's tasks as a BLOCKING batch schedule would: the sources at once, each
// on its own goroutine, with their coordinator, then the counts and the sink one after another,
// routing every record by the subpartition its producer chose. It returns the source and count
// writers, the IDs of the splits each source got (files' paths), and the tasks' accumulators
// merged as the JobMaster merges them.
func runByHand(t *testing.T, g *jobgraph.JobGraph) (sources, counts []*recordingWriter, splits [][]string, accs map[string]jobgraph.SerializedAccumulator) {
	t.Helper()
	ctx := t.Context()
	var snaps []map[string]jobgraph.SerializedAccumulator
	src, cnt, sink := g.VertexByName(SourceVertex), g.VertexByName(CountVertex), g.VertexByName(SinkVertex)
	coord := newByHandCoordinator(t, src)
	envs := make([]*fakeEnv, src.Parallelism)
	errs := make([]error, src.Parallelism)
	var wg sync.WaitGroup
	for i := range src.Parallelism {
		w := &recordingWriter{n: cnt.Parallelism}
		envs[i] = &fakeEnv{info: taskInfo(g, src, i), outputs: []*recordingWriter{w}}
		coord.connect(t, envs[i])
		sources = append(sources, w)
		wg.Go(func() { errs[i] = RunSource(ctx, envs[i]) })
	}
	wg.Wait()
	for i, env := range envs {
		require.NoError(t, errs[i])
		splits = append(splits, env.splits)
		snaps = append(snaps, env.AccumulatorRegistry().Snapshot())
	}
	for j := range cnt.Parallelism {
		// An ALL_TO_ALL gate reads subpartition j of every producer's partition.
		gate := &sliceGate{}
		for _, w := range sources {
			gate.records = append(gate.records, w.subpartition(j)...)
		}
		w := &recordingWriter{n: sink.Parallelism}
		require.NoError(t, RunCount(ctx, &fakeEnv{info: taskInfo(g, cnt, j), inputs: []*sliceGate{gate}, outputs: []*recordingWriter{w}}))
		counts = append(counts, w)
	}
	gate := &sliceGate{}
	for _, w := range counts {
		gate.records = append(gate.records, w.subpartition(0)...)
	}
	env := &fakeEnv{info: taskInfo(g, sink, 0), inputs: []*sliceGate{gate}}
	require.NoError(t, RunSink(ctx, env))
	snaps = append(snaps, env.AccumulatorRegistry().Snapshot())
	return sources, counts, splits, jobgraph.MergeAccumulators(snaps...)
}

// accValue is the value of accumulator name in accs.
func accValue[T any](t *testing.T, accs map[string]jobgraph.SerializedAccumulator, name string) T {
	t.Helper()
	v, err := jobgraph.AccumulatorValue[T](accs, name)
	require.NoError(t, err)
	return v
}

// emittedWord is one word a task emitted, and the subpartition its Chunk went to.
type emittedWord struct {
	WordCount
	sub int
}

// chunkWords returns the words of every Chunk w recorded, in order, checking that each record is a
// non-empty Chunk of at most ChunkSize words from producer, and that the words of each
// subpartition form a run: strictly increasing.
func chunkWords(t *testing.T, w *recordingWriter, producer int) []emittedWord {
	t.Helper()
	var out []emittedWord
	last := map[int]string{}
	for _, e := range w.emitted {
		ch, ok := e.record.(Chunk)
		require.True(t, ok, "record of type %T", e.record)
		assert.Equal(t, producer, ch.Producer)
		assert.NotEmpty(t, ch.Words)
		assert.LessOrEqual(t, len(ch.Words), ChunkSize)
		for _, wc := range ch.Words {
			if prev, ok := last[e.sub]; ok {
				assert.Less(t, prev, wc.Word, "subpartition %d: increasing words", e.sub)
			}
			last[e.sub] = wc.Word
			out = append(out, emittedWord{wc, e.sub})
		}
	}
	return out
}

var (
	vocabulary = []string{"package", "func", "return", "héllo", "日本語", "_", "x1", "42", "Ω", "naïve",
		"Go", "go", "GO", "__init__", "٣٤", "a", "zz_top", "テスト", "if", "err", "nil"}
	separators = []string{" ", "\n", "\t", ", ", "(", ")", ".", "\xff", "\xe6\x97", "\u00a0", "—", "😀", "²", " // "}
)

// generateInput writes numFiles files of up to maxWords random words each, from vocab, joined by
// separators, below a new temporary directory, together with files that are no input. It returns
// the directory and how often it wrote each word.
func generateInput(t *testing.T, numFiles, maxWords int, vocab []string) (string, map[string]int) {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(42, 7))
	want := map[string]int{}
	for i := range numFiles {
		var b strings.Builder
		for range rng.IntN(maxWords) {
			w := vocab[rng.IntN(len(vocab))]
			want[w]++
			b.WriteString(w)
			b.WriteString(separators[rng.IntN(len(separators))])
		}
		writeFile(t, filepath.Join(dir, fmt.Sprintf("d%d", i%3), fmt.Sprintf("f%02d.go", i)), b.String())
	}
	writeFile(t, filepath.Join(dir, "notes.txt"), "skipped skipped")
	require.NoError(t, os.Symlink(filepath.Join(dir, "d0", "f00.go"), filepath.Join(dir, "link.go")))
	return dir, want
}

// manyWords is a vocabulary of 3·ChunkSize words, so that the tasks' output spans several Chunks.
var manyWords = func() []string {
	words := make([]string, 3*ChunkSize)
	for k := range words {
		words[k] = fmt.Sprintf("w%d_%c", k, 'a'+k%26)
	}
	return words
}()

func TestJobByHand(t *testing.T) {
	t.Run("few words", func(t *testing.T) { testJobByHand(t, 20, 400, vocabulary) })
	t.Run("many words", func(t *testing.T) { testJobByHand(t, 20, 4*ChunkSize, manyWords) })
}

func testJobByHand(t *testing.T, numFiles, maxWords int, vocab []string) {
	dir, want := generateInput(t, numFiles, maxWords, vocab)
	files, err := ListInputFiles(dir)
	require.NoError(t, err)
	require.Len(t, files, numFiles)
	seq, err := SequentialCount(files)
	require.NoError(t, err)
	require.Equal(t, want, seq, "SequentialCount counts exactly what was written")

	for _, p := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("parallelism %d", p), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "wc.tsv")
			g, err := BuildJobWith(files, JobOptions{Parallelism: p, OutPath: out, Top: 3, SplitBytes: 1})
			require.NoError(t, err)
			sources, counts, splits, accs := runByHand(t, g)

			// The totals the tasks report in accumulators.
			var bytes int64
			for _, f := range files {
				bytes += f.Size
			}
			words := 0
			for _, n := range want {
				words += n
			}
			assert.Equal(t, len(files), accValue[int](t, accs, AccFiles))
			assert.Equal(t, bytes, accValue[int64](t, accs, AccBytes))
			assert.Equal(t, int64(words), accValue[int64](t, accs, AccWords))
			assert.Equal(t, len(want), accValue[int](t, accs, AccDistinctWords))
			assert.Equal(t, TopN(want, 3), accValue[[]WordCount](t, accs, AccTopWords))
			perSource := accValue[map[int]int](t, accs, AccFilesPerSource)
			assert.Len(t, accs, 6)

			// The coordinator handed every file to exactly one source subtask.
			byPath := map[string]InputFile{}
			for _, f := range files {
				byPath[f.Path] = f
			}
			var all []string
			for i, s := range splits {
				all = append(all, s...)
				if len(s) > 0 {
					assert.Equal(t, len(s), perSource[i], "source %d", i)
				}
			}
			assert.ElementsMatch(t, slices.Collect(maps.Keys(byPath)), all)

			// Each source subtask read exactly the files it got, and combined them locally: one
			// record per distinct word, in the subpartition Partition chose.
			for i, w := range sources {
				var share []InputFile
				for _, path := range splits[i] {
					share = append(share, byPath[path])
				}
				shareCounts, err := SequentialCount(share)
				require.NoError(t, err)
				got := map[string]int{}
				for _, e := range chunkWords(t, w, i) {
					assert.Equal(t, Partition(e.Word, p), e.sub, "word %q", e.Word)
					_, dup := got[e.Word]
					assert.False(t, dup, "combined: one record per word, %q is not", e.Word)
					got[e.Word] = e.Count
				}
				assert.Equal(t, shareCounts, got, "source %d", i)
			}
			// Each count subtask summed exactly the words of its hash partition.
			seen := map[string]int{}
			for j, w := range counts {
				for _, e := range chunkWords(t, w, j) {
					assert.Equal(t, 0, e.sub)
					assert.Equal(t, j, Partition(e.Word, p), "word %q at count %d", e.Word, j)
					_, dup := seen[e.Word]
					assert.False(t, dup, "word %q twice", e.Word)
					seen[e.Word] = e.Count
				}
			}
			assert.Equal(t, want, seen)

			result, ok := TakeResult(g.JobID)
			require.True(t, ok)
			assert.Equal(t, SortedCounts(want), result)
			_, ok = TakeResult(g.JobID)
			assert.False(t, ok, "taken")

			var tsv strings.Builder
			require.NoError(t, WriteCounts(&tsv, SortedCounts(want)))
			data, err := os.ReadFile(out)
			require.NoError(t, err)
			assert.Equal(t, tsv.String(), string(data))
			entries, err := os.ReadDir(filepath.Dir(out))
			require.NoError(t, err)
			assert.Len(t, entries, 1, "no temporary file left")

			// A sink that keeps no result takes the same totals from its runs unmerged.
			gTotals, err := BuildJobWith(files, JobOptions{Parallelism: p, SkipResult: true, Top: 3, SplitBytes: 1})
			require.NoError(t, err)
			_, _, _, accsTotals := runByHand(t, gTotals)
			assert.Equal(t, len(want), accValue[int](t, accsTotals, AccDistinctWords))
			assert.Equal(t, TopN(want, 3), accValue[[]WordCount](t, accsTotals, AccTopWords))
			assert.Equal(t, int64(words), accValue[int64](t, accsTotals, AccWords))
			_, ok = TakeResult(gTotals.JobID)
			assert.False(t, ok, "SkipResult stores nothing")
		})
	}
}

func TestJobByHandExactResult(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.go"), "package a\n// héllo wörld\nfunc A() { return }\n")
	writeFile(t, filepath.Join(dir, "b", "b.go"), "package b\xffhéllo 日本語 A_1 A")
	files, err := ListInputFiles(dir)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "wc.tsv")
	g, err := BuildJobWith(files, JobOptions{Parallelism: 2, OutPath: out, SkipResult: true, Top: 2})
	require.NoError(t, err)
	_, _, _, accs := runByHand(t, g)
	assert.Equal(t, 2, accValue[int](t, accs, AccFiles))
	assert.Equal(t, int64(13), accValue[int64](t, accs, AccWords))
	assert.Equal(t, 10, accValue[int](t, accs, AccDistinctWords))
	assert.Equal(t, []WordCount{{"A", 2}, {"héllo", 2}}, accValue[[]WordCount](t, accs, AccTopWords))
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "A\t2\nA_1\t1\na\t1\nb\t1\nfunc\t1\nhéllo\t2\npackage\t2\nreturn\t1\nwörld\t1\n日本語\t1\n", string(data))
	_, ok := TakeResult(g.JobID)
	assert.False(t, ok, "SkipResult stores nothing")
}

func TestBuildJob(t *testing.T) {
	files := []InputFile{{"a.go", 3}, {"b.go", 5}, {"c.go", 1}}
	g, err := BuildJob(files, 2)
	require.NoError(t, err)
	require.NoError(t, g.Validate())
	assert.Equal(t, "wordcount", g.Name)
	assert.Equal(t, jobgraph.Batch, g.Type)
	assert.False(t, g.JobID.IsZero())
	require.Len(t, g.Vertices, 3)
	src, cnt, sink := g.Vertices[0], g.Vertices[1], g.Vertices[2]

	assert.Equal(t, []string{"source", "count", "sink"}, []string{src.Name, cnt.Name, sink.Name})
	assert.Equal(t, []string{"wordcount-source", "wordcount-count", "wordcount-sink"}, []string{src.Invokable, cnt.Invokable, sink.Invokable})
	assert.Equal(t, []int{2, 2, 1}, []int{src.Parallelism, cnt.Parallelism, sink.Parallelism})

	assert.Empty(t, src.Inputs)
	require.Len(t, src.Results, 1)
	assert.Equal(t, jobgraph.Blocking, src.Results[0].ResultType)
	require.Len(t, cnt.Inputs, 1)
	assert.Equal(t, src.Results[0].ID, cnt.Inputs[0].Source)
	assert.Equal(t, jobgraph.AllToAll, cnt.Inputs[0].DistributionPattern)
	assert.Equal(t, "HASH", cnt.Inputs[0].ShipStrategy)
	require.Len(t, cnt.Results, 1)
	assert.Equal(t, jobgraph.Blocking, cnt.Results[0].ResultType)
	require.Len(t, sink.Inputs, 1)
	assert.Equal(t, cnt.Results[0].ID, sink.Inputs[0].Source)
	assert.Equal(t, jobgraph.AllToAll, sink.Inputs[0].DistributionPattern)
	assert.Empty(t, sink.Results)

	// The config JSON of every vertex; the files are the source coordinator's splits: all three
	// in one of the default 1 MiB.
	assert.JSONEq(t, `{}`, string(src.Config))
	assert.Equal(t, "wordcount-files", src.OperatorCoordinator)
	assert.Equal(t, "a.go\x00b.go\x00c.go", string(src.OperatorCoordinatorConfig))
	// Splits of 4 bytes: a and b (3 + 5 ≥ 4), then c.
	g6, err := BuildJobWith(files, JobOptions{Parallelism: 2, SplitBytes: 4})
	require.NoError(t, err)
	assert.Equal(t, "a.go\x00b.go\x00\x00c.go", string(g6.VertexByName(SourceVertex).OperatorCoordinatorConfig))
	splits, err := decodeFileSplits(g6.VertexByName(SourceVertex).OperatorCoordinatorConfig)
	require.NoError(t, err)
	assert.Equal(t, []source.Split{{ID: "a.go", Payload: []byte("a.go\x00b.go")}, {ID: "c.go", Payload: []byte("c.go")}}, splits)
	_, err = decodeFileSplits([]byte("a.go\x00\x00\x00b.go"))
	assert.EqualError(t, err, "wc: the source's coordinator config has an empty path")
	_, err = BuildJobWith(files, JobOptions{Parallelism: 2, SplitBytes: -1})
	assert.EqualError(t, err, "wc: split size -1 is below 1 byte")
	assert.Empty(t, cnt.OperatorCoordinator)
	assert.JSONEq(t, `{}`, string(cnt.Config))
	assert.JSONEq(t, `{}`, string(sink.Config))

	g2, err := BuildJobWith(files, JobOptions{Parallelism: 1, OutPath: "/tmp/wc.tsv", SkipResult: true})
	require.NoError(t, err)
	assert.JSONEq(t, `{"outPath":"/tmp/wc.tsv","skipResult":true}`, string(g2.VertexByName(SinkVertex).Config))
	assert.Equal(t, src.OperatorCoordinatorConfig, g2.VertexByName(SourceVertex).OperatorCoordinatorConfig)
	g5, err := BuildJobWith(files, JobOptions{Parallelism: 2, FailOnce: SourceVertex, SlowSubtask: 1, SlowDelay: time.Millisecond})
	require.NoError(t, err)
	assert.JSONEq(t, `{"failOnce":true,"slowSubtask":1,"slowDelay":1000000}`, string(g5.VertexByName(SourceVertex).Config))
	_, err = BuildJobWith(files, JobOptions{Parallelism: 2, SlowSubtask: 2, SlowDelay: time.Millisecond})
	assert.EqualError(t, err, "wc: slow source subtask 2 with delay 1ms: the subtask must be in [0, 2) and the delay at least 0")
	_, err = BuildJobWith([]InputFile{{"a\x00.go", 1}}, JobOptions{Parallelism: 1})
	assert.EqualError(t, err, `wc: file path "a\x00.go" holds a NUL byte`)
	_, err = BuildJobWith([]InputFile{{"", 1}}, JobOptions{Parallelism: 1})
	assert.EqualError(t, err, "wc: a file path is empty")
	_, err = BuildJobWith([]InputFile{{"a.go", 1}, {"a.go", 1}}, JobOptions{Parallelism: 1, SplitBytes: 1})
	assert.EqualError(t, err, `wc: the source's splits: split ID "a.go" appears twice`)

	// The job survives the JSON codec the Dispatcher persists it with.
	data, err := json.Marshal(g)
	require.NoError(t, err)
	back, err := jobgraph.Decode(data)
	require.NoError(t, err)
	require.NoError(t, back.Validate())
	assert.Equal(t, g, back)

	_, err = BuildJob(files, 0)
	assert.ErrorContains(t, err, "parallelism 0 is below 1")
	_, err = BuildJobWith(files, JobOptions{Parallelism: 1, Top: -1})
	assert.EqualError(t, err, "wc: top -1 is below 0")
	g4, err := BuildJobWith(files, JobOptions{Parallelism: 1, Top: 5})
	require.NoError(t, err)
	assert.JSONEq(t, `{"top":5}`, string(g4.VertexByName(SinkVertex).Config))
	g3, err := BuildJob(nil, 2)
	require.NoError(t, err, "no input is an empty word count, not an error")
	assert.Empty(t, g3.Vertices[0].OperatorCoordinatorConfig)
}

func TestRegister(t *testing.T) {
	reg := taskexecutor.NewRegistry()
	Register(reg)
	assert.Equal(t, []string{"wordcount-count", "wordcount-sink", "wordcount-source"}, reg.Names())
	for _, name := range reg.Names() {
		fn, ok := reg.Lookup(name)
		assert.True(t, ok)
		assert.NotNil(t, fn)
	}
	assert.Panics(t, func() { Register(reg) }, "registered twice")
}

func TestPartition(t *testing.T) {
	// FNV-1a 32: "" hashes to the offset basis 2166136261, "a" to 0xe40c292c.
	assert.Equal(t, int(uint32(2166136261)%7), Partition("", 7))
	assert.Equal(t, int(uint32(0xe40c292c)%1000), Partition("a", 1000))
	assert.Equal(t, 0, Partition("anything", 1))
	counts := make([]int, 4)
	for i := range 10000 {
		s := Partition(fmt.Sprintf("w%d", i), 4)
		require.True(t, s >= 0 && s < 4)
		counts[s]++
	}
	for _, c := range counts {
		assert.InDelta(t, 2500, c, 250)
	}
}

// A source subtask reads every split the coordinator hands it, asking until there are none left:
// alone (its sibling never asks), subtask 1 of 2 reads all five, a file a split.
func TestSourceSubtaskReadsTheFilesItIsHanded(t *testing.T) {
	dir := t.TempDir()
	var files []InputFile
	for i, content := range []string{"zero", "one", "two", "three", "four"} {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("%d.go", i)), content)
		files = append(files, InputFile{filepath.Join(dir, fmt.Sprintf("%d.go", i)), int64(len(content))})
	}
	g, err := BuildJobWith(files, JobOptions{Parallelism: 2, SplitBytes: 1})
	require.NoError(t, err)
	src := g.VertexByName(SourceVertex)
	src.Config = []byte(`{"futureOption":true}`)
	coord := newByHandCoordinator(t, src)
	w := &recordingWriter{n: 1}
	env := &fakeEnv{info: taskInfo(g, src, 1), outputs: []*recordingWriter{w}}
	coord.connect(t, env)
	require.NoError(t, RunSource(t.Context(), env))
	assert.Equal(t, []any{Chunk{1, []WordCount{{"four", 1}, {"one", 1}, {"three", 1}, {"two", 1}, {"zero", 1}}}}, w.subpartition(0))
	assert.Equal(t, []string{files[0].Path, files[1].Path, files[2].Path, files[3].Path, files[4].Path}, env.splits)
	assert.Equal(t, map[int]int{1: 5}, accValue[map[int]int](t, env.AccumulatorRegistry().Snapshot(), AccFilesPerSource))
}

func TestTaskErrors(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.go"), "a b c")
	info := func(cfg string, p int) taskexecutor.TaskInfo {
		return taskexecutor.TaskInfo{TaskName: "t (1/1)", Parallelism: p, Config: []byte(cfg)}
	}
	// sourceEnv is a source task of parallelism 1 whose coordinator hands out files.
	sourceEnv := func(t *testing.T, cfg string, w *recordingWriter, files ...InputFile) *fakeEnv {
		splits, err := FileSplits(files, 1)
		require.NoError(t, err)
		env := &fakeEnv{info: info(cfg, 1)}
		if w != nil {
			env.outputs = []*recordingWriter{w}
		}
		newByHandCoordinator(t, &jobgraph.JobVertex{Parallelism: 1, OperatorCoordinator: SourceCoordinator, OperatorCoordinatorConfig: splits}).connect(t, env)
		return env
	}
	a := InputFile{filepath.Join(dir, "a.go"), 5}

	t.Run("source: bad config", func(t *testing.T) {
		err := RunSource(ctx, sourceEnv(t, `{"failOnce":`, &recordingWriter{n: 1}, a))
		assert.ErrorContains(t, err, "t (1/1): decoding the vertex config")
	})
	t.Run("source: missing file", func(t *testing.T) {
		w := &recordingWriter{n: 1}
		err := RunSource(ctx, sourceEnv(t, "{}", w, a, InputFile{filepath.Join(dir, "gone.go"), 1}))
		assert.ErrorIs(t, err, os.ErrNotExist)
		assert.ErrorContains(t, err, `wc: source: t (1/1): reading split "`+filepath.Join(dir, "gone.go")+`": wc: open `)
		assert.Empty(t, w.emitted)
	})
	t.Run("source: no coordinator", func(t *testing.T) {
		err := RunSource(ctx, &fakeEnv{info: info("{}", 1), outputs: []*recordingWriter{{n: 1}}})
		assert.ErrorIs(t, err, taskexecutor.ErrNoOperatorCoordinator)
		assert.ErrorContains(t, err, "wc: source: t (1/1): requesting a split: ")
	})
	t.Run("source: no output", func(t *testing.T) {
		assert.ErrorContains(t, RunSource(ctx, sourceEnv(t, "{}", nil, a)), "the source has no output")
	})
	t.Run("source: canceled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		err := RunSource(cctx, sourceEnv(t, "{}", &recordingWriter{n: 1}, a))
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("source: emit fails", func(t *testing.T) {
		// 2.5 chunks of distinct words: the third Emit fails.
		var text strings.Builder
		for k := range ChunkSize * 5 / 2 {
			fmt.Fprintf(&text, "w%d ", k)
		}
		writeFile(t, filepath.Join(dir, "many.go"), text.String())
		w := &recordingWriter{n: 1, limit: 2}
		assert.ErrorIs(t, RunSource(ctx, sourceEnv(t, "{}", w, InputFile{filepath.Join(dir, "many.go"), 1})), errFull)
		assert.Len(t, w.emitted, 2)
	})
	t.Run("source: bad subtask", func(t *testing.T) {
		env := sourceEnv(t, "{}", &recordingWriter{n: 1}, a)
		env.info.SubtaskIndex = 1
		assert.ErrorContains(t, RunSource(ctx, env), "subtask 1 of parallelism 1")
	})
	t.Run("count: wrong record type", func(t *testing.T) {
		gate := &sliceGate{records: []any{Chunk{0, []WordCount{{"a", 1}}}, WordCount{"a", 1}}}
		err := RunCount(ctx, &fakeEnv{info: info("{}", 1), inputs: []*sliceGate{gate}, outputs: []*recordingWriter{{n: 1}}})
		assert.ErrorContains(t, err, "input 0: record of type wc.WordCount, want wc.Chunk")
	})
	t.Run("count: input fails", func(t *testing.T) {
		errLost := errors.New("partition lost")
		gate := &sliceGate{records: []any{Chunk{0, []WordCount{{"a", 1}}}}, err: errLost}
		w := &recordingWriter{n: 1}
		err := RunCount(ctx, &fakeEnv{info: info("{}", 1), inputs: []*sliceGate{gate}, outputs: []*recordingWriter{w}})
		assert.ErrorIs(t, err, errLost)
		assert.Empty(t, w.emitted, "nothing is emitted before every input ended")
	})
	t.Run("count: pointers and several inputs", func(t *testing.T) {
		g1 := &sliceGate{records: []any{&Chunk{1, []WordCount{{"b", 2}}}, Chunk{0, []WordCount{{"a", 1}}}}}
		g2 := &sliceGate{records: []any{Chunk{0, []WordCount{{"a", 4}, {"c", 1}}}}}
		w := &recordingWriter{n: 1}
		require.NoError(t, RunCount(ctx, &fakeEnv{info: info("", 1), inputs: []*sliceGate{g1, g2}, outputs: []*recordingWriter{w}}))
		assert.Equal(t, []any{Chunk{0, []WordCount{{"a", 5}, {"b", 2}, {"c", 1}}}}, w.subpartition(0))
	})
	t.Run("count: nil pointer", func(t *testing.T) {
		gate := &sliceGate{records: []any{(*Chunk)(nil)}}
		err := RunCount(ctx, &fakeEnv{info: info("", 1), inputs: []*sliceGate{gate}, outputs: []*recordingWriter{{n: 1}}})
		assert.ErrorContains(t, err, "nil *Chunk record")
	})
	t.Run("count: negative producer", func(t *testing.T) {
		gate := &sliceGate{records: []any{Chunk{-1, []WordCount{{"a", 1}}}}}
		err := RunCount(ctx, &fakeEnv{info: info("", 1), inputs: []*sliceGate{gate}, outputs: []*recordingWriter{{n: 1}}})
		assert.ErrorContains(t, err, "input 0: chunk from producer -1")
	})
	t.Run("count: merges runs split into chunks and interleaved", func(t *testing.T) {
		gate := &sliceGate{records: []any{
			Chunk{2, []WordCount{{"b", 1}}},
			Chunk{0, []WordCount{{"a", 1}, {"c", 2}}},
			Chunk{2, []WordCount{{"d", 3}, {"e", 1}}},
			Chunk{0, []WordCount{{"e", 10}}},
			Chunk{1, []WordCount{{"c", 100}, {"é", 7}}},
			Chunk{0, []WordCount{}},
		}}
		w := &recordingWriter{n: 2}
		i := info("", 2)
		i.SubtaskIndex = 1
		require.NoError(t, RunCount(ctx, &fakeEnv{info: i, inputs: []*sliceGate{gate}, outputs: []*recordingWriter{w}}))
		merged := []WordCount{{"a", 1}, {"b", 1}, {"c", 102}, {"d", 3}, {"e", 11}, {"é", 7}}
		for s := range 2 {
			var want []WordCount
			for _, wc := range merged {
				if Partition(wc.Word, 2) == s {
					want = append(want, wc)
				}
			}
			require.NotEmpty(t, want)
			assert.Equal(t, []any{Chunk{1, want}}, w.subpartition(s), "subpartition %d", s)
		}
	})
	t.Run("count: run out of order", func(t *testing.T) {
		gate := &sliceGate{records: []any{Chunk{0, []WordCount{{"a", 1}, {"c", 1}}}, Chunk{1, []WordCount{{"a", 1}}}, Chunk{0, []WordCount{{"b", 1}}}}}
		w := &recordingWriter{n: 1}
		err := RunCount(ctx, &fakeEnv{info: info("", 1), inputs: []*sliceGate{gate}, outputs: []*recordingWriter{w}})
		assert.ErrorContains(t, err, `t (1/1): the words from input 0, producer 0 are out of order: "c" before "b"`)
		assert.Empty(t, w.emitted)
	})
	t.Run("count: word twice in a run", func(t *testing.T) {
		gate := &sliceGate{records: []any{Chunk{0, []WordCount{{"a", 1}}}, Chunk{0, []WordCount{{"a", 2}}}}}
		err := RunCount(ctx, &fakeEnv{info: info("", 1), inputs: []*sliceGate{gate}, outputs: []*recordingWriter{{n: 1}}})
		assert.ErrorContains(t, err, `word "a" arrived twice from input 0, producer 0 (counts 1 and 2)`)
	})
	t.Run("count: producer too large", func(t *testing.T) {
		gate := &sliceGate{records: []any{Chunk{1 << 15, []WordCount{{"a", 1}}}}}
		err := RunCount(ctx, &fakeEnv{info: info("", 1), inputs: []*sliceGate{gate}, outputs: []*recordingWriter{{n: 1}}})
		assert.ErrorContains(t, err, "input 0: chunk from producer 32768")
	})
	t.Run("sink: merges runs", func(t *testing.T) {
		g1 := &sliceGate{records: []any{Chunk{1, []WordCount{{"b", 2}, {"x", 1}}}, &Chunk{0, []WordCount{{"a", 1}, {"c", 3}}}, Chunk{1, []WordCount{{"y", 5}}}}}
		g2 := &sliceGate{records: []any{Chunk{0, []WordCount{{"d", 4}}}}}
		jobID := jobgraph.NewJobID()
		i := info("{}", 1)
		i.JobID = jobID
		require.NoError(t, RunSink(ctx, &fakeEnv{info: i, inputs: []*sliceGate{g1, g2}}))
		res, ok := TakeResult(jobID)
		require.True(t, ok)
		assert.Equal(t, []WordCount{{"a", 1}, {"b", 2}, {"c", 3}, {"d", 4}, {"x", 1}, {"y", 5}}, res)
	})
	t.Run("sink: word twice", func(t *testing.T) {
		gate := &sliceGate{records: []any{Chunk{0, []WordCount{{"a", 1}, {"b", 1}}}, Chunk{1, []WordCount{{"a", 3}}}}}
		jobID := jobgraph.NewJobID()
		i := info("{}", 1)
		i.JobID = jobID
		err := RunSink(ctx, &fakeEnv{info: i, inputs: []*sliceGate{gate}})
		assert.ErrorContains(t, err, `t (1/1): word "a" arrived twice (counts 1 and 3): every word must reach exactly one count subtask`)
		_, ok := TakeResult(jobID)
		assert.False(t, ok)
	})
	t.Run("sink: totals without merging", func(t *testing.T) {
		gate := &sliceGate{records: []any{
			Chunk{1, []WordCount{{"b", 2}, {"x", 9}}},
			Chunk{0, []WordCount{{"a", 1}, {"c", 3}}},
			Chunk{1, []WordCount{{"y", 5}}},
			Chunk{2, []WordCount{{"d", 9}}},
		}}
		jobID := jobgraph.NewJobID()
		i := info(`{"skipResult":true,"top":3}`, 1)
		i.JobID = jobID
		env := &fakeEnv{info: i, inputs: []*sliceGate{gate}}
		require.NoError(t, RunSink(ctx, env))
		accs := env.AccumulatorRegistry().Snapshot()
		assert.Equal(t, 6, accValue[int](t, accs, AccDistinctWords))
		assert.Equal(t, []WordCount{{"d", 9}, {"x", 9}, {"y", 5}}, accValue[[]WordCount](t, accs, AccTopWords))
		_, ok := TakeResult(jobID)
		assert.False(t, ok)

		// A word in two runs is refused as the merge refuses it, whichever runs hold it.
		for _, dup := range []string{"a", "c", "y"} {
			gate := &sliceGate{records: []any{
				Chunk{0, []WordCount{{"a", 1}, {"c", 3}}},
				Chunk{1, []WordCount{{"b", 2}, {"x", 9}, {"y", 5}}},
				Chunk{2, []WordCount{{dup, 7}}},
			}}
			err := RunSink(ctx, &fakeEnv{info: info(`{"skipResult":true}`, 1), inputs: []*sliceGate{gate}})
			assert.ErrorContains(t, err, `t (1/1): word "`+dup+`" arrived twice`)
			assert.ErrorContains(t, err, `: every word must reach exactly one count subtask`)
		}
	})
	t.Run("sink: word twice in a run", func(t *testing.T) {
		gate := &sliceGate{records: []any{Chunk{0, []WordCount{{"a", 1}, {"a", 3}}}}}
		err := RunSink(ctx, &fakeEnv{info: info("{}", 1), inputs: []*sliceGate{gate}})
		assert.ErrorContains(t, err, `word "a" arrived twice from input 0, producer 0 (counts 1 and 3)`)
	})
	t.Run("sink: parallelism 2", func(t *testing.T) {
		err := RunSink(ctx, &fakeEnv{info: info("{}", 2), inputs: []*sliceGate{{}}})
		assert.ErrorContains(t, err, "the sink needs parallelism 1, has 2")
	})
	t.Run("sink: canceled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		err := RunSink(cctx, &fakeEnv{info: info("{}", 1), inputs: []*sliceGate{{records: []any{Chunk{0, []WordCount{{"a", 1}}}}}}})
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("sink: out dir missing", func(t *testing.T) {
		cfg := `{"outPath":"` + filepath.Join(dir, "missing", "out.tsv") + `"}`
		jobID := jobgraph.NewJobID()
		i := info(cfg, 1)
		i.JobID = jobID
		err := RunSink(ctx, &fakeEnv{info: i, inputs: []*sliceGate{{}}})
		assert.ErrorIs(t, err, os.ErrNotExist)
		_, ok := TakeResult(jobID)
		assert.False(t, ok, "a failed sink stores nothing")
	})
	t.Run("sink: empty input", func(t *testing.T) {
		jobID := jobgraph.NewJobID()
		i := info("", 1)
		i.JobID = jobID
		require.NoError(t, RunSink(ctx, &fakeEnv{info: i, inputs: []*sliceGate{{}}}))
		res, ok := TakeResult(jobID)
		assert.True(t, ok)
		assert.Empty(t, res)
	})
}
